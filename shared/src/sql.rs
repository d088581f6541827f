//! The SQL a design amounts to: the statements the trace quotes and the canvas shows.
//!
//! PostgreSQL is the dialect; `Dialect::Sqlite` renders SQLite's real equivalents where the
//! two differ (SQLite has no `MERGE`).

use chrono::{NaiveDate, NaiveDateTime};

use crate::compiled::{ChangeInfo, Compiled};
use crate::design::{DateFilter, LoadedAt, OffsetCommit, Transaction, ValidDesign, WriteMode};
pub use crate::dialect::Dialect;
use crate::model::{CStep, ConsumerModel, JobModel, Model, Sink, StageModel, StepKind};
use crate::value::{ColumnType, Value};
use crate::warehouse::{Row, Table};

pub(crate) struct Ctx<'a> {
    pub tables: &'a [Table],
    pub types: &'a [Vec<ColumnType>],
    pub day: NaiveDate,
    pub stamp: Option<NaiveDateTime>,
    /// The job asks the clock for its day (`CURRENT_DATE - 1`).
    pub clock: bool,
    pub dialect: Dialect,
}

impl Ctx<'_> {
    fn day_sql(&self) -> String {
        let literal = Value::Date(self.day).literal(self.dialect.lit());
        if self.clock && self.dialect == Dialect::Display {
            format!("CURRENT_DATE - 1 /* {} at this attempt */", self.day)
        } else {
            literal
        }
    }
}

pub(crate) fn delete_partition(ctx: &Ctx, step: &CStep) -> String {
    let t = &ctx.tables[step.sink.table];
    let p = step
        .sink
        .partition
        .map(|p| t.columns[p].as_str())
        .unwrap_or("?");
    format!("DELETE FROM {} WHERE {p} = {};", t.name, ctx.day_sql())
}

fn stamp_sql(ctx: &Ctx, sink: &Sink) -> Option<(String, String)> {
    let (c, ty) = sink.loaded_at?;
    let t = &ctx.tables[sink.table];
    let value = match ctx.stamp {
        None => "NULL".to_string(),
        Some(s) if ty == ColumnType::Date => Value::Date(s.date()).literal(ctx.dialect.lit()),
        Some(s) => Value::Timestamp(s).literal(ctx.dialect.lit()),
    };
    Some((t.columns[c].clone(), value))
}

/// The SELECT of a step and the target columns it fills.
fn step_select(ctx: &Ctx, step: &CStep) -> (Vec<String>, String) {
    let from = &ctx.tables[step.from];
    let target = &ctx.tables[step.sink.table];
    let mut conds = vec![format!(
        "{} = {}",
        from.columns[step.from_day],
        ctx.day_sql()
    )];
    for c in step.def.filter() {
        let ty = ctx.types[step.from]
            .get(
                from.columns
                    .iter()
                    .position(|n| *n == c.column)
                    .unwrap_or(0),
            )
            .copied()
            .unwrap_or(ColumnType::Text);
        let value = match &c.value {
            serde_json::Value::Array(items) => format!(
                "({})",
                items
                    .iter()
                    .map(|v| Value::from_json(ty, v)
                        .map(|v| v.literal(ctx.dialect.lit()))
                        .unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            v => Value::from_json(ty, v)
                .map(|v| v.literal(ctx.dialect.lit()))
                .unwrap_or_default(),
        };
        conds.push(format!("{} {} {value}", c.column, c.op.sql()));
    }
    let stamp = stamp_sql(ctx, &step.sink);
    match &step.kind {
        StepKind::Copy { map, distinct } => {
            let mut cols: Vec<String> = Vec::new();
            let mut exprs: Vec<String> = Vec::new();
            for (i, m) in map.iter().enumerate() {
                if let Some(src) = m {
                    cols.push(target.columns[i].clone());
                    exprs.push(from.columns[*src].clone());
                }
            }
            if let Some((c, v)) = stamp {
                cols.push(c.clone());
                exprs.push(format!("{v} AS {c}"));
            }
            let select = format!(
                "SELECT {}{}\nFROM {}\nWHERE {}",
                if *distinct { "DISTINCT " } else { "" },
                exprs.join(", "),
                from.name,
                conds.join(" AND ")
            );
            (cols, select)
        }
        StepKind::Count {
            group_from,
            group_to,
            into,
        } => {
            let g = &from.columns[*group_from];
            let mut cols = vec![
                target.columns[*group_to].clone(),
                target.columns[*into].clone(),
            ];
            let mut exprs = vec![g.clone(), format!("COUNT(*) AS {}", target.columns[*into])];
            if let Some((c, v)) = stamp {
                cols.push(c.clone());
                exprs.push(format!("{v} AS {c}"));
            }
            let select = format!(
                "SELECT {}\nFROM {}\nWHERE {}\nGROUP BY {g}",
                exprs.join(", "),
                from.name,
                conds.join(" AND ")
            );
            (cols, select)
        }
        StepKind::Sum {
            group_from,
            sum_from,
            group_to,
            into,
        } => {
            let g = &from.columns[*group_from];
            let mut cols = vec![
                target.columns[*group_to].clone(),
                target.columns[*into].clone(),
            ];
            let mut exprs = vec![
                g.clone(),
                format!(
                    "SUM({}) AS {}",
                    from.columns[*sum_from], target.columns[*into]
                ),
            ];
            if let Some((c, v)) = stamp {
                cols.push(c.clone());
                exprs.push(format!("{v} AS {c}"));
            }
            let select = format!(
                "SELECT {}\nFROM {}\nWHERE {}\nGROUP BY {g}",
                exprs.join(", "),
                from.name,
                conds.join(" AND ")
            );
            (cols, select)
        }
    }
}

pub(crate) fn step_write(ctx: &Ctx, step: &CStep) -> String {
    let target = &ctx.tables[step.sink.table];
    let (cols, select) = step_select(ctx, step);
    write_sql(
        &target.name,
        &cols,
        &select,
        &step.sink,
        target,
        ctx.dialect,
    )
}

fn write_sql(
    table: &str,
    cols: &[String],
    select: &str,
    sink: &Sink,
    target: &Table,
    dialect: Dialect,
) -> String {
    let key: Vec<&str> = sink
        .key
        .iter()
        .map(|&k| target.columns[k].as_str())
        .collect();
    match sink.write {
        WriteMode::Append | WriteMode::DeleteInsert => {
            format!("INSERT INTO {table} ({})\n{select};", cols.join(", "))
        }
        WriteMode::InsertIgnore => format!(
            "INSERT INTO {table} ({})\n{select}\nON CONFLICT ({}) DO NOTHING;",
            cols.join(", "),
            key.join(", ")
        ),
        WriteMode::MergeIfNewer => {
            merge_if_newer_sql(table, cols, select, &key, sink, target, dialect)
        }
        WriteMode::Merge if dialect == Dialect::Sqlite => {
            // SQLite has no MERGE: an upsert on the key's unique index does the same for
            // incoming rows with distinct keys (which every step and message produces).
            let set: Vec<String> = cols
                .iter()
                .filter(|c| !key.contains(&c.as_str()))
                .map(|c| format!("{c} = excluded.{c}"))
                .collect();
            let action = if set.is_empty() {
                "NOTHING".to_string()
            } else {
                format!("UPDATE SET {}", set.join(", "))
            };
            format!(
                "INSERT INTO {table} ({})
{select}
ON CONFLICT ({}) DO {action};",
                cols.join(", "),
                key.join(", ")
            )
        }
        WriteMode::Merge => {
            let on: Vec<String> = key.iter().map(|k| format!("t.{k} = s.{k}")).collect();
            let set: Vec<String> = cols
                .iter()
                .filter(|c| !key.contains(&c.as_str()))
                .map(|c| format!("{c} = s.{c}"))
                .collect();
            let values: Vec<String> = cols.iter().map(|c| format!("s.{c}")).collect();
            let matched = if set.is_empty() {
                String::new()
            } else {
                format!("WHEN MATCHED THEN\n  UPDATE SET {}\n", set.join(", "))
            };
            format!(
                "MERGE INTO {table} AS t\nUSING ({}) AS s\nON {}\n{matched}WHEN NOT MATCHED THEN\n  INSERT ({})\n  VALUES ({});",
                select.replace('\n', " "),
                on.join(" AND "),
                cols.join(", "),
                values.join(", ")
            )
        }
    }
}

/// The statement that writes one message's row.
pub(crate) fn message_write(table: &Table, sink: &Sink, row: &Row, dialect: Dialect) -> String {
    let cols: Vec<String> = table.columns.clone();
    let literals: Vec<String> = row.iter().map(|v| v.literal(dialect.lit())).collect();
    message_sql(table, sink, &cols, &literals, dialect)
}

fn message_sql(
    table: &Table,
    sink: &Sink,
    cols: &[String],
    literals: &[String],
    dialect: Dialect,
) -> String {
    match sink.write {
        WriteMode::Merge | WriteMode::MergeIfNewer if dialect != Dialect::Sqlite => {
            let select = format!(
                "SELECT {}",
                cols.iter()
                    .zip(literals)
                    .map(|(c, l)| format!("{l} AS {c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            write_sql(&table.name, cols, &select, sink, table, dialect)
        }
        _ => {
            let values = format!("VALUES ({})", literals.join(", "));
            write_sql(&table.name, cols, &values, sink, table, dialect)
        }
    }
}

/// A merge on the key that updates a matched row only when the incoming version is greater.
/// SQLite has no MERGE: its upsert's `DO UPDATE … WHERE` does the same.
fn merge_if_newer_sql(
    table: &str,
    cols: &[String],
    select: &str,
    key: &[&str],
    sink: &Sink,
    target: &Table,
    dialect: Dialect,
) -> String {
    let version = sink
        .version
        .map_or("version", |v| target.columns[v].as_str());
    let others: Vec<&String> = cols.iter().filter(|c| !key.contains(&c.as_str())).collect();
    if dialect == Dialect::Sqlite {
        let set: Vec<String> = others
            .iter()
            .map(|c| format!("{c} = excluded.{c}"))
            .collect();
        return format!(
            "INSERT INTO {table} ({})\n{select}\nON CONFLICT ({}) DO UPDATE SET {}\nWHERE excluded.{version} > {table}.{version};",
            cols.join(", "),
            key.join(", "),
            set.join(", ")
        );
    }
    let on: Vec<String> = key.iter().map(|k| format!("t.{k} = s.{k}")).collect();
    let set: Vec<String> = others.iter().map(|c| format!("{c} = s.{c}")).collect();
    let values: Vec<String> = cols.iter().map(|c| format!("s.{c}")).collect();
    format!(
        "MERGE INTO {table} AS t\nUSING ({}) AS s\nON {}\nWHEN MATCHED AND s.{version} > t.{version} THEN\n  UPDATE SET {}\nWHEN NOT MATCHED THEN\n  INSERT ({})\n  VALUES ({});",
        select.replace('\n', " "),
        on.join(" AND "),
        set.join(", "),
        cols.join(", "),
        values.join(", ")
    )
}

/// The statement that saves a consumer's next offset with its rows.
pub(crate) fn offset_update(consumer: &str, next: u64) -> String {
    format!("UPDATE consumer_offsets SET next_offset = {next} WHERE consumer = '{consumer}';")
}

/// A condition as SQL.
fn cond_sql(table: &Table, cond: &crate::model::Cond, dialect: Dialect) -> String {
    cond.sql(&table.columns, dialect)
}

/// The statement of a change the shop makes to a source table.
pub(crate) fn change(
    table: &Table,
    _types: &[ColumnType],
    change: &ChangeInfo,
    dialect: Dialect,
) -> String {
    let filter = |conds: &[crate::model::Cond]| {
        if conds.is_empty() {
            String::new()
        } else {
            let parts: Vec<String> = conds.iter().map(|c| cond_sql(table, c, dialect)).collect();
            format!(" WHERE {}", parts.join(" AND "))
        }
    };
    match change {
        ChangeInfo::Insert { rows, .. } => {
            let values: Vec<String> = rows
                .iter()
                .map(|r| {
                    let cells: Vec<String> = r.iter().map(|v| v.literal(dialect)).collect();
                    format!("({})", cells.join(", "))
                })
                .collect();
            format!(
                "INSERT INTO {} ({})\nVALUES {};",
                table.name,
                table.columns.join(", "),
                values.join(", ")
            )
        }
        ChangeInfo::Update { set, filter: f, .. } => {
            let set: Vec<String> = set
                .iter()
                .map(|(c, v)| format!("{} = {}", table.columns[*c], v.literal(dialect)))
                .collect();
            format!("UPDATE {} SET {}{};", table.name, set.join(", "), filter(f))
        }
        ChangeInfo::Delete { filter: f, .. } => {
            format!("DELETE FROM {}{};", table.name, filter(f))
        }
    }
}

/// One block of the SQL view: a title and its statements.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SqlBlock {
    pub title: String,
    pub sql: String,
}

/// The SQL a valid design amounts to, for the canvas's SQL view: each stage's statements, in
/// the stages' order: a job's for its first run, a consumer's for one message (with `:field`
/// placeholders). In a pipeline of several stages each block's title names its stage.
pub fn design_sql(scenario: &Compiled, design: &ValidDesign) -> Vec<SqlBlock> {
    let model = Model::compile(scenario, design);
    let several = model.stages.len() > 1;
    let mut out = Vec::new();
    for stage in &model.stages {
        let (name, blocks) = match stage {
            StageModel::Job(b) => (b.job_node.as_str(), batch_sql(&model, b)),
            StageModel::Stream(s) => (
                s.consumer.node.as_str(),
                vec![consumer_sql(&model, &s.consumer, true)],
            ),
            StageModel::Sender(s) => (
                s.consumer.node.as_str(),
                vec![consumer_sql(&model, &s.consumer, false)],
            ),
        };
        for mut block in blocks {
            if several {
                block.title = format!("{name}: {}", block.title);
            }
            out.push(block);
        }
    }
    out
}

/// A consumer's statements for one message.
fn consumer_sql(model: &Model, consumer: &ConsumerModel, is_stream: bool) -> SqlBlock {
    let sink = &consumer.sink;
    let table = &model.initial.tables[sink.table];
    let cols = table.columns.clone();
    let literals: Vec<String> = cols.iter().map(|c| format!(":{c}")).collect();
    let write = message_sql(table, sink, &cols, &literals, Dialect::Display);
    let name = &consumer.slot_name;
    let sql = match (is_stream, consumer.options.offset_commit) {
        (false, OffsetCommit::BeforeWrite) => format!("-- for each message the sender delivers: ack it, then\n{write}"),
        (false, _) => format!("-- for each message the sender delivers, then ack it\n{write}"),
        (true, OffsetCommit::BeforeWrite) => format!("-- for each message at :offset\n-- 1. commit offset :offset + 1 to the broker (commitSync)\n-- 2. write the row\n{write}"),
        (true, OffsetCommit::AfterWrite) => format!("-- for each message at :offset\n-- 1. write the row\n{write}\n-- 2. commit offset :offset + 1 to the broker (commitSync)"),
        (true, OffsetCommit::WithWrite) => format!(
            "-- for each message at :offset: the row and the offset in one transaction\nBEGIN;\n{write}\nUPDATE consumer_offsets SET next_offset = :offset + 1 WHERE consumer = '{name}';\nCOMMIT;"
        ),
    };
    SqlBlock {
        title: format!("consumer → {}", table.name),
        sql,
    }
}

/// A job's statements for its first run.
fn batch_sql(model: &Model, b: &JobModel) -> Vec<SqlBlock> {
    let Some(run) = b.runs.first() else {
        return Vec::new();
    };
    let (logical, start) = (run.logical_date, run.start);
    let job = &b.job;
    let clock = job.date_filter == DateFilter::CurrentDateMinus1;
    let day = if clock {
        start.date() - chrono::Duration::days(1)
    } else {
        logical
    };
    let stamp = match job.loaded_at {
        LoadedAt::None => None,
        LoadedAt::Now => Some(start),
        LoadedAt::LogicalDate => logical.and_hms_opt(0, 0, 0),
    };
    let ctx = Ctx {
        tables: &model.initial.tables,
        types: &model.column_types,
        day,
        stamp,
        clock,
        dialect: Dialect::Display,
    };
    let mut out = Vec::new();
    let per_run = job.transaction == Transaction::PerRun;
    if per_run {
        out.push(SqlBlock {
            title: "open one transaction".into(),
            sql: "BEGIN;".into(),
        });
    }
    for step in &b.steps {
        let mut sql = String::new();
        if step.sink.write == WriteMode::DeleteInsert {
            sql.push_str(&delete_partition(&ctx, step));
            sql.push('\n');
        }
        sql.push_str(&step_write(&ctx, step));
        out.push(SqlBlock {
            title: format!("step {}: {}", step.number, step.def.title()),
            sql,
        });
    }
    if per_run {
        out.push(SqlBlock {
            title: "commit".into(),
            sql: "COMMIT;".into(),
        });
    }
    out
}
