//! The conformance runner: proof that the simulator's model of SQL is what real databases do.
//!
//! For every shipped scenario, every reference, wrong and starting design in it, and every
//! failure schedule the simulator explores for that design, the runner executes the SQL the
//! simulator rendered — in the database's own dialect — over a real connection. A crash is a
//! real one: the writer's connection is dropped, so the database itself rolls back what was
//! not committed. After every step that the simulator says changed what readers see, and at
//! the end, a separate reader connection reads every warehouse table and the runner compares
//! it, row for row, with the simulator's tables.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use rust_decimal::Decimal;
use shared::check::Schedule;
use shared::design::{Pipeline, Stage};
use shared::scenario::{Scenario, TableDef};
use shared::sql::Dialect;
use shared::value::{format_time, parse_timestamp, ColumnType};
use shared::verdict::TableView;
use shared::Compiled;
use sqlx::AnyConnection;
use sqlx::{Connection, Row};

/// A real database to replay on.
#[derive(Clone, Debug)]
pub enum Database {
    /// A fresh SQLite file at this path (created, and replaced if it exists).
    Sqlite(PathBuf),
    /// A PostgreSQL server; the runner creates its own database there and drops it after.
    /// The URL names a database the runner can connect to in order to create its own.
    Postgres(String),
}

impl Database {
    pub fn name(&self) -> &'static str {
        match self {
            Database::Sqlite(_) => "sqlite",
            Database::Postgres(_) => "postgres",
        }
    }
    fn dialect(&self) -> Dialect {
        match self {
            Database::Sqlite(_) => Dialect::Sqlite,
            Database::Postgres(_) => Dialect::Postgres,
        }
    }
}

/// A difference between the simulator and the real database.
#[derive(Clone, Debug)]
pub struct Mismatch {
    pub scenario: String,
    pub design: String,
    pub faults: Vec<(u32, String)>,
    /// The trace step after which the difference was seen (0: before any step).
    pub step: u32,
    pub action: String,
    pub problem: String,
    pub expected: String,
    pub actual: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|(p, k)| format!("{k}@{p}"))
            .collect();
        writeln!(
            f,
            "MISMATCH in {} / {} / schedule [{}] at step {} ({})",
            self.scenario,
            self.design,
            faults.join(", "),
            self.step,
            self.action
        )?;
        writeln!(f, "  {}", self.problem)?;
        writeln!(f, "  simulator: {}", self.expected)?;
        write!(f, "  database:  {}", self.actual)
    }
}

#[derive(Clone, Debug, Default)]
pub struct Report {
    pub schedules: u64,
    /// Each scenario's schedules, in the order they were replayed.
    pub per_scenario: Vec<(String, u64)>,
    pub mismatches: Vec<Mismatch>,
}

impl Report {
    /// The line scripts read.
    pub fn summary(&self, database: &str) -> String {
        format!(
            "conformance ({database}): {} schedules compared, {} mismatches",
            self.schedules,
            self.mismatches.len()
        )
    }
}

/// What one design needs in the database: the tables of the scenario, unique indexes for the
/// keys the design writes by, and the consumer's offset table.
pub struct Setup {
    tables: Vec<TableDef>,
    sinks: Vec<usize>,
    /// Creates the tables and indexes (once per design).
    create: Vec<String>,
    /// Puts the starting rows back (before every schedule).
    reset: Vec<String>,
}

fn column_sql(ty: ColumnType, dialect: Dialect) -> &'static str {
    match (dialect, ty) {
        (Dialect::Sqlite, ColumnType::Integer) => "INTEGER",
        (Dialect::Sqlite, ColumnType::Decimal) => "NUMERIC",
        (Dialect::Sqlite, _) => "TEXT",
        (_, ty) => ty.sql_name(),
    }
}

impl Setup {
    pub fn new(
        scenario: &Scenario,
        pipeline: &Pipeline,
        dialect: Dialect,
    ) -> Result<Setup, String> {
        let mut statements = vec!["DROP TABLE IF EXISTS consumer_offsets".to_string()];
        let mut reset = vec!["DELETE FROM consumer_offsets".to_string()];
        // The simulator names the one consumer of a pipeline `consumer`, and the consumers of
        // a pipeline of several by what each reads.
        let consumers: Vec<&str> = pipeline
            .stages
            .iter()
            .filter_map(|s| match s {
                Stage::Consumer(c) => Some(c.input.name()),
                Stage::Job(_) => None,
            })
            .collect();
        let names: Vec<&str> = if consumers.len() > 1 {
            consumers
        } else {
            vec!["consumer"]
        };
        for name in names {
            reset.push(format!("INSERT INTO consumer_offsets VALUES ('{name}', 0)"));
        }
        for t in &scenario.tables {
            statements.push(format!("DROP TABLE IF EXISTS {}", t.name));
        }
        for t in &scenario.tables {
            let cols: Vec<String> = t
                .columns
                .iter()
                .map(|c| format!("{} {}", c.name, column_sql(c.ty, dialect)))
                .collect();
            statements.push(format!("CREATE TABLE {} ({})", t.name, cols.join(", ")));
            reset.push(format!("DELETE FROM {}", t.name));
            let rows = shared::scenario::typed_rows(t)
                .map_err(|(p, m)| format!("{}: {p}: {m}", t.name))?;
            for row in rows {
                let values: Vec<String> = row.iter().map(|v| v.literal(dialect)).collect();
                reset.push(format!(
                    "INSERT INTO {} VALUES ({})",
                    t.name,
                    values.join(", ")
                ));
            }
        }
        for sink in pipeline.sinks() {
            // `ON CONFLICT` (and SQLite's stand-in for MERGE) needs a unique index on the key;
            // a table written by plain INSERT (`append`) has none, since it uses no unique
            // constraint.
            if sink.write.by_key() && !sink.key.is_empty() {
                statements.push(format!(
                    "CREATE UNIQUE INDEX {}_key ON {} ({})",
                    sink.table,
                    sink.table,
                    sink.key.join(", ")
                ));
            }
        }
        statements.push("CREATE TABLE consumer_offsets (consumer TEXT PRIMARY KEY, next_offset BIGINT NOT NULL)".into());
        let sinks = scenario
            .tables
            .iter()
            .enumerate()
            .filter(|(_, t)| t.role == shared::scenario::TableRole::Sink)
            .map(|(i, _)| i)
            .collect();
        Ok(Setup {
            tables: scenario.tables.clone(),
            sinks,
            create: statements,
            reset,
        })
    }
}

/// Rows as comparable text, one normalised string per cell (NULL as `None`), sorted.
type Rows = Vec<Vec<Option<String>>>;

fn normalise(ty: ColumnType, text: Option<String>) -> Option<String> {
    let text = text?;
    Some(match ty {
        ColumnType::Integer => text.parse::<i64>().map(|i| i.to_string()).unwrap_or(text),
        // SQLite keeps NUMERIC as integer or real: compare the numbers, not their scale.
        ColumnType::Decimal => text
            .parse::<Decimal>()
            .map(|d| d.normalize().to_string())
            .unwrap_or(text),
        ColumnType::Date => text.chars().take(10).collect(),
        ColumnType::Timestamp => parse_timestamp(&text).map(format_time).unwrap_or(text),
        ColumnType::Text => text,
    })
}

fn expected_rows(def: &TableDef, view: &TableView) -> Rows {
    let mut rows: Rows = view
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .zip(&def.columns)
                .map(|(v, c)| {
                    let text = match v {
                        serde_json::Value::Null => None,
                        serde_json::Value::String(s) => Some(s.clone()),
                        other => Some(other.to_string()),
                    };
                    normalise(c.ty, text)
                })
                .collect()
        })
        .collect();
    rows.sort();
    rows
}

fn show(def: &TableDef, rows: &Rows) -> String {
    let shown: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "({})",
                r.iter()
                    .map(|v| v.clone().unwrap_or_else(|| "NULL".into()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    format!("{}: {} rows {}", def.name, rows.len(), shown.join(" "))
}

/// Connections to one real database: a reader that looks at committed state, and a writer
/// that plays the job or the consumer and is dropped on a crash.
pub struct Runner {
    database: Database,
    url: String,
    /// The PostgreSQL database the runner created (dropped by `finish`).
    created: Option<(String, String)>,
    reader: AnyConnection,
    writer: Option<AnyConnection>,
}

async fn connect(url: &str, sqlite: bool) -> Result<AnyConnection, String> {
    let mut conn = AnyConnection::connect(url)
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    // Durability settings only; they change nothing a reader can see.
    let settings = if sqlite {
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF; PRAGMA busy_timeout = 5000;"
    } else {
        "SET synchronous_commit TO off;"
    };
    sqlx::raw_sql(settings)
        .execute(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    Ok(conn)
}

impl Runner {
    pub async fn open(database: Database) -> Result<Runner, String> {
        sqlx::any::install_default_drivers();
        let (url, created) = match &database {
            Database::Sqlite(path) => {
                let _ = std::fs::remove_file(path);
                (format!("sqlite://{}?mode=rwc", path.display()), None)
            }
            Database::Postgres(admin_url) => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0);
                let name = format!(
                    "pb_conformance_{}_{}",
                    std::process::id(),
                    nanos % 1_000_000_000
                );
                let mut admin = connect(admin_url, false).await?;
                sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
                    .execute(&mut admin)
                    .await
                    .map_err(|e| format!("cannot create database {name}: {e}"))?;
                let base = admin_url
                    .rsplit_once('/')
                    .map(|(b, _)| b)
                    .unwrap_or(admin_url);
                (format!("{base}/{name}"), Some((admin_url.clone(), name)))
            }
        };
        let sqlite = matches!(database, Database::Sqlite(_));
        let reader = connect(&url, sqlite).await?;
        Ok(Runner {
            database,
            url,
            created,
            reader,
            writer: None,
        })
    }

    /// Drops the database the runner created.
    pub async fn finish(self) -> Result<(), String> {
        let Runner {
            reader,
            writer,
            created,
            database,
            ..
        } = self;
        drop(writer);
        let _ = reader.close().await;
        if let Some((admin_url, name)) = created {
            let mut admin = connect(&admin_url, false).await?;
            sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut admin)
                .await
                .map_err(|e| e.to_string())?;
        }
        if let Database::Sqlite(path) = database {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
        Ok(())
    }

    /// Creates the tables and indexes a design needs (dropping those of the previous one).
    pub async fn create(&mut self, setup: &Setup) -> Result<(), String> {
        self.writer = None;
        let script = setup.create.join(";\n");
        sqlx::raw_sql(&script)
            .execute(&mut self.reader)
            .await
            .map_err(|e| format!("creating tables: {e}"))?;
        Ok(())
    }

    pub fn dialect(&self) -> Dialect {
        self.database.dialect()
    }

    async fn writer(&mut self) -> Result<&mut AnyConnection, String> {
        if self.writer.is_none() {
            self.writer =
                Some(connect(&self.url, matches!(self.database, Database::Sqlite(_))).await?);
        }
        Ok(self.writer.as_mut().expect("the writer was just opened"))
    }

    async fn read(&mut self, def: &TableDef) -> Result<Rows, String> {
        let cols: Vec<String> = def
            .columns
            .iter()
            .map(|c| format!("CAST({} AS TEXT)", c.name))
            .collect();
        let rows = sqlx::query(&format!("SELECT {} FROM {}", cols.join(", "), def.name))
            .fetch_all(&mut self.reader)
            .await
            .map_err(|e| format!("reading {}: {e}", def.name))?;
        let mut out: Rows = Vec::with_capacity(rows.len());
        for row in rows {
            let mut cells = Vec::with_capacity(def.columns.len());
            for (i, c) in def.columns.iter().enumerate() {
                let text: Option<String> = row
                    .try_get(i)
                    .map_err(|e| format!("reading {}.{}: {e}", def.name, c.name))?;
                cells.push(normalise(c.ty, text));
            }
            out.push(cells);
        }
        out.sort();
        Ok(out)
    }

    /// Replays one schedule and appends every difference to `mismatches`.
    pub async fn replay(
        &mut self,
        scenario: &Scenario,
        design: &str,
        setup: &Setup,
        schedule: &Schedule,
        mismatches: &mut Vec<Mismatch>,
    ) -> Result<(), String> {
        // The starting rows for every schedule, in one transaction.
        self.writer = None;
        let script = format!("BEGIN;\n{};\nCOMMIT;", setup.reset.join(";\n"));
        sqlx::raw_sql(&script)
            .execute(&mut self.reader)
            .await
            .map_err(|e| format!("resetting {}: {e}", scenario.id))?;
        let mut found =
            |step: u32, action: &str, problem: String, expected: String, actual: String| {
                mismatches.push(Mismatch {
                    scenario: scenario.id.clone(),
                    design: design.to_string(),
                    faults: schedule.faults.clone(),
                    step,
                    action: action.to_string(),
                    problem,
                    expected,
                    actual,
                });
            };
        let mut after_crash = false;
        let mut last_tables: Option<&std::collections::BTreeMap<String, TableView>> = None;
        for entry in &schedule.trace {
            if entry.failure && entry.action.starts_with("crashes") {
                // A real crash: the connection goes away with whatever it had not committed.
                self.writer = None;
                after_crash = true;
            } else if let Some(sql) = &entry.sql {
                let rollback_of_crash = entry.actor == "database" && after_crash;
                if !rollback_of_crash {
                    let expect_error = entry.outcome.starts_with("error:");
                    let result = sqlx::raw_sql(sql).execute(self.writer().await?).await;
                    match (&result, expect_error) {
                        (Err(e), false) => found(
                            entry.step,
                            &entry.action,
                            format!("the database refused: {sql}"),
                            entry.outcome.clone(),
                            e.to_string(),
                        ),
                        (Ok(_), true) => found(
                            entry.step,
                            &entry.action,
                            format!("the database accepted: {sql}"),
                            entry.outcome.clone(),
                            "no error".into(),
                        ),
                        _ => {}
                    }
                }
                after_crash = false;
            }
            if let Some(tables) = &entry.tables {
                last_tables = Some(tables);
                self.compare(setup, tables, entry.step, &entry.action, &mut found)
                    .await?;
            }
        }
        // At the end, what readers see must still be the simulator's last committed state.
        if let Some(tables) = last_tables {
            self.compare(
                setup,
                tables,
                schedule.trace.len() as u32,
                "end of the run",
                &mut found,
            )
            .await?;
        }
        Ok(())
    }

    async fn compare(
        &mut self,
        setup: &Setup,
        tables: &std::collections::BTreeMap<String, TableView>,
        step: u32,
        action: &str,
        found: &mut impl FnMut(u32, &str, String, String, String),
    ) -> Result<(), String> {
        for &t in &setup.sinks {
            let def = &setup.tables[t];
            let Some(view) = tables.get(&def.name) else {
                continue;
            };
            let expected = expected_rows(def, view);
            let actual = self.read(def).await?;
            if expected != actual {
                found(
                    step,
                    action,
                    format!("{} differs from the simulator", def.name),
                    show(def, &expected),
                    show(def, &actual),
                );
            }
        }
        Ok(())
    }
}

/// Every design a scenario carries, with a name for reports.
pub fn designs(scenario: &Scenario) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    if let Some(d) = &scenario.starting_design {
        out.push(("starting design".to_string(), d.clone()));
    }
    for d in &scenario.reference_designs {
        out.push((format!("reference: {}", d.name), d.design.clone()));
    }
    for d in &scenario.wrong_designs {
        out.push((format!("wrong: {}", d.name), d.design.clone()));
    }
    // The same design listed twice is replayed once.
    let mut seen = BTreeSet::new();
    out.retain(|(_, d)| seen.insert(d.to_string()));
    out
}

/// Every schedule of one design, traced in the runner's dialect.
pub fn schedules(
    scenario: &Compiled,
    design: &serde_json::Value,
    dialect: Dialect,
    mutation: shared::check::Mutation,
) -> Result<(Setup, Vec<Schedule>), String> {
    let valid = shared::validate_json(scenario, design)
        .map_err(|e| shared::CheckError::Design(e).to_string())?;
    let setup = Setup::new(scenario.scenario(), valid.pipeline(), dialect)?;
    let mut all = Vec::new();
    shared::check::for_each_schedule_of(
        scenario,
        &valid,
        dialect,
        shared::Limits::default(),
        mutation,
        &mut |s| all.push(s),
    )
    .map_err(|e| e.to_string())?;
    Ok((setup, all))
}

/// Replays every schedule of every design of every scenario on one database. `progress` is
/// told of each design's schedules, and of each scenario's count when it is done.
pub async fn run(
    database: Database,
    scenarios: &[Compiled],
    progress: &mut dyn FnMut(&str),
) -> Result<Report, String> {
    let mut runner = Runner::open(database).await?;
    let mut report = Report::default();
    for compiled in scenarios {
        let scenario = compiled.scenario();
        let before = report.schedules;
        for (name, design) in designs(scenario) {
            let (setup, all) = schedules(
                compiled,
                &design,
                runner.dialect(),
                shared::check::Mutation::None,
            )?;
            runner.create(&setup).await?;
            for schedule in &all {
                runner
                    .replay(scenario, &name, &setup, schedule, &mut report.mismatches)
                    .await?;
                report.schedules += 1;
            }
            progress(&format!(
                "{} / {}: {} schedules",
                scenario.id,
                name,
                all.len()
            ));
        }
        report
            .per_scenario
            .push((scenario.id.clone(), report.schedules - before));
    }
    runner.finish().await?;
    Ok(report)
}

/// The PostgreSQL URL to use: `CONFORMANCE_POSTGRES_URL`, or the local server's `postgres`
/// database.
pub fn postgres_url() -> String {
    std::env::var("CONFORMANCE_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// Whether a PostgreSQL server answers at `url`.
pub async fn postgres_reachable(url: &str) -> bool {
    sqlx::any::install_default_drivers();
    matches!(
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            AnyConnection::connect(url)
        )
        .await,
        Ok(Ok(_))
    )
}

/// The folder of the scenarios the product ships, wherever in the workspace it is asked from.
pub fn shipped_dir() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// The scenario files of a folder (`.json`, the schema aside), sorted by name.
pub fn scenario_paths(dir: &std::path::Path) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p.to_string_lossy().ends_with(".schema.json")
        })
        .collect();
    files.sort();
    Ok(files)
}

/// The scenario files of a folder, each as its path and its text, sorted by name.
pub fn scenario_texts(dir: &std::path::Path) -> Result<Vec<(PathBuf, String)>, String> {
    scenario_paths(dir)?
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            Ok((p, text))
        })
        .collect()
}

/// Reads every scenario file of a folder (not the schema), compiled, in course order.
pub fn load_scenarios(dir: &std::path::Path) -> Result<Vec<Compiled>, String> {
    let mut out = Vec::new();
    for (f, text) in scenario_texts(dir)? {
        let compiled = Compiled::parse(&text).map_err(|errors| {
            let said: Vec<String> = errors
                .iter()
                .map(|e| format!("{}: {}: {}", f.display(), e.path, e.message))
                .collect();
            said.join("\n")
        })?;
        out.push(compiled);
    }
    out.sort_by_key(|s| s.scenario().order);
    Ok(out)
}

/// The shipped scenarios, compiled, in course order; a test's setup, so it panics when they
/// do not load.
pub fn shipped() -> Vec<Compiled> {
    load_scenarios(&shipped_dir()).unwrap_or_else(|e| panic!("the shipped scenarios: {e}"))
}
