//! Persistence: students, drafts, attempts, grader tokens, idempotency records, classes and
//! their members, and regraded verdicts.
//!
//! Two real backends sit behind one type: SQLite, the embedded default, and PostgreSQL, for
//! a course that runs several servers behind a load balancer. Each has its own migrations
//! (`migrations/sqlite`, `migrations/postgres`) because the column types differ (JSONB and
//! TIMESTAMPTZ on PostgreSQL). The SQL of the queries is the same text for both: both accept
//! `$1` placeholders, `ON CONFLICT` and `RETURNING`, so each method is written once and
//! expanded for each pool by `with_pool!`.
//!
//! Rationale: `sqlx::Any` supports only basic types and would lose JSONB and TIMESTAMPTZ; a
//! trait object with two hand-written copies of every query would let them drift apart.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value as Json;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::types::Json as SqlJson;
use sqlx::Row;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::group_commit;

/// How long a request waits for a PostgreSQL connection before it is answered 503
/// `database_unavailable`. Short, so that an outage is told to clients at once instead of
/// holding their requests; queries take milliseconds, so a healthy pool never waits this long.
pub const POSTGRES_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// The database URL used when none is given.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/pipeline-builder.db";

#[derive(Clone, Debug)]
pub enum Store {
    /// The pool, its write gate and the group-commit writer. SQLite has one writer at a time,
    /// so writers take turns at the gate, in the process, instead of each holding a pooled
    /// connection while SQLite's busy handler sleeps; readers always find a connection, and
    /// the lock never sits idle. The writer holds the gate for each of its batches.
    Sqlite(SqlitePool, Arc<Semaphore>, HotWrites),
    /// The pool and the group-commit writer.
    Postgres(PgPool, HotWrites),
}

/// Runs the same body against whichever pool the store has.
macro_rules! with_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match $store {
            Store::Sqlite($pool, ..) => $body,
            Store::Postgres($pool, ..) => $body,
        }
    };
}
/// For the stores of other modules (`crate::lti::store`).
pub(crate) use with_pool;

pub type StoreResult<T> = Result<T, sqlx::Error>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Student {
    pub id: String,
    pub display_name: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Draft {
    pub scenario: String,
    pub design: Json,
    pub updated_at: DateTime<Utc>,
}

/// One recorded attempt: a design checked for a student.
#[derive(Clone, Debug, PartialEq)]
pub struct Attempt {
    pub id: String,
    pub student: String,
    pub scenario: String,
    pub scenario_hash: String,
    pub design: Json,
    pub verdict: Json,
    pub score: i32,
    pub max_score: i32,
    pub passed: bool,
    pub created_at: DateTime<Utc>,
    /// The class the attempt was made for; `None` for self-study and for graders' records.
    pub class: Option<String>,
}

/// An attempt without its design and verdict, for lists.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptSummary {
    pub id: String,
    pub student: String,
    pub scenario: String,
    pub scenario_hash: String,
    pub score: i32,
    pub max_score: i32,
    pub passed: bool,
    pub created_at: DateTime<Utc>,
}

/// Which attempts a page of a list holds: those of `student` and `scenario` when given,
/// older than the attempt `before` names (the last of the page before), at most `limit`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AttemptsQuery<'a> {
    pub student: Option<&'a str>,
    pub scenario: Option<&'a str>,
    pub before: Option<&'a str>,
    pub limit: u32,
}

/// An attempt as an export lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportedAttempt {
    pub summary: AttemptSummary,
    /// Empty when the student gave no name.
    pub display_name: String,
    pub verdict: Json,
}

const ATTEMPTS_PAGE_COLUMNS: &str =
    "a.id, a.student, a.scenario, a.scenario_hash, a.score, a.max_score, a.passed, a.created_at";

/// The rest of a page's query, after its columns: `$1` the student, `$2` the scenario, `$3`
/// the attempt the page starts after, `$4` the limit. The order, newest first with the id
/// breaking ties, is the one a page's cursor continues.
macro_rules! attempts_page_where {
    () => {
        "WHERE ($1 IS NULL OR a.student = $1) AND ($2 IS NULL OR a.scenario = $2) \
     AND ($3 IS NULL OR (a.created_at, a.id) < (SELECT b.created_at, b.id FROM attempts AS b WHERE b.id = $3)) \
     ORDER BY a.created_at DESC, a.id DESC LIMIT $4"
    };
}

const ATTEMPTS_PAGE: &str = concat!("FROM attempts AS a ", attempts_page_where!());
const ATTEMPTS_PAGE_JOINED: &str = concat!(
    "FROM attempts AS a JOIN students AS s ON s.id = a.student \
     LEFT JOIN memberships AS m ON m.class_id = a.class_id AND m.student = a.student ",
    attempts_page_where!()
);

/// An [`AttemptSummary`] from a row of either backend (a macro, since the two rows' types
/// differ and [`with_pool`] writes each query once for both).
macro_rules! attempt_summary {
    ($r:expr) => {
        Ok::<_, sqlx::Error>(AttemptSummary {
            id: $r.try_get("id")?,
            student: $r.try_get("student")?,
            scenario: $r.try_get("scenario")?,
            scenario_hash: $r.try_get("scenario_hash")?,
            score: $r.try_get("score")?,
            max_score: $r.try_get("max_score")?,
            passed: $r.try_get("passed")?,
            created_at: $r.try_get("created_at")?,
        })
    };
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenInfo {
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// What a student has done with a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Progress {
    pub tried: bool,
    pub passed: bool,
}

/// The outcome of claiming an idempotency key.
#[derive(Clone, Debug, PartialEq)]
pub enum Claim {
    /// The key is new (or its first holder was abandoned): this request runs.
    Started,
    /// The key was used with the same request, which finished: answer what it answered.
    Replay { status: u16, body: Json },
    /// The key was used with another request.
    Mismatch,
    /// The first request with this key is still running.
    InFlight,
}

/// The stored answer of an idempotent request, written with the attempt in one transaction.
#[derive(Clone, Debug)]
pub struct IdempotentAnswer<'a> {
    pub caller: &'a str,
    pub key: &'a str,
    /// The holder of the claim ([`Store::claim_idempotency_key_as`]): the answer is stored
    /// only while it still holds it.
    pub owner: &'a str,
    pub status: u16,
    pub body: &'a Json,
}

/// An idempotency record as read back.
struct StoredKey {
    fingerprint: String,
    state: String,
    status: Option<i32>,
    response: Option<String>,
    renewed_at: DateTime<Utc>,
}

impl StoredKey {
    /// The answer to replay when the key's request finished, `None` while it is in flight.
    /// A state, status or answer the server cannot have written is refused, never replayed
    /// as a default.
    fn replay(&self) -> StoreResult<Option<Claim>> {
        match self.state.as_str() {
            "in_flight" => return Ok(None),
            "done" => {}
            other => {
                return Err(unknown_stored(format!(
                    "an idempotency key's state {other:?}"
                )))
            }
        }
        let status = self
            .status
            .and_then(|s| u16::try_from(s).ok())
            .filter(|s| axum::http::StatusCode::from_u16(*s).is_ok())
            .ok_or_else(|| {
                unknown_stored(format!(
                    "a finished idempotency key's status {:?}",
                    self.status
                ))
            })?;
        let text = self
            .response
            .as_deref()
            .ok_or_else(|| unknown_stored("a finished idempotency key without its answer"))?;
        let body = serde_json::from_str(text).map_err(|e| {
            unknown_stored(format!(
                "a finished idempotency key's answer that is not JSON ({e})"
            ))
        })?;
        Ok(Some(Claim::Replay { status, body }))
    }
}

#[derive(Debug)]
pub enum ConnectError {
    BadUrl(String),
    Io(String),
    Database(sqlx::Error),
    Migrate(sqlx::migrate::MigrateError),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::BadUrl(m) => write!(f, "bad database URL: {m}"),
            ConnectError::Io(m) => write!(f, "{m}"),
            ConnectError::Database(e) => write!(f, "could not connect to the database: {e}"),
            ConnectError::Migrate(e) => write!(f, "could not apply the database migrations: {e}"),
        }
    }
}

impl std::error::Error for ConnectError {}

impl Store {
    /// Connects to `url` (`sqlite://…` or `postgres://…`), creating a SQLite file and its
    /// folder when missing, and applies the migrations.
    pub async fn connect(url: &str) -> Result<Store, ConnectError> {
        let store = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let options =
                PgConnectOptions::from_str(url).map_err(|e| ConnectError::BadUrl(e.to_string()))?;
            let pool = PgPoolOptions::new()
                .max_connections(10)
                .acquire_timeout(POSTGRES_ACQUIRE_TIMEOUT)
                .connect_with(options)
                .await
                .map_err(ConnectError::Database)?;
            let writes = HotWrites::start(HotDb::Postgres(pool.clone()), None);
            Store::Postgres(pool, writes)
        } else if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .map_err(|e| ConnectError::BadUrl(e.to_string()))?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .foreign_keys(true)
                // Every commit is durable when it returns, power loss included: in WAL mode
                // NORMAL would only sync at checkpoints, losing the last commits (answered
                // submissions among them) to a power cut. Group commit makes FULL cheap: one
                // sync per batch of submissions.
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(Duration::from_secs(5));
            let memory = url.contains(":memory:") || url.contains("mode=memory");
            if !memory {
                if let Some(parent) = Path::new(options.get_filename()).parent() {
                    if !parent.as_os_str().is_empty() {
                        std::fs::create_dir_all(parent).map_err(|e| {
                            ConnectError::Io(format!("could not create {}: {e}", parent.display()))
                        })?;
                    }
                }
            }
            // An in-memory database lives only as long as its one connection.
            let max = if memory { 1 } else { 8 };
            let pool = SqlitePoolOptions::new()
                .max_connections(max)
                .acquire_timeout(Duration::from_secs(5))
                .idle_timeout(if memory {
                    None
                } else {
                    Some(Duration::from_secs(600))
                })
                .max_lifetime(if memory {
                    None
                } else {
                    Some(Duration::from_secs(3600))
                })
                .connect_with(options)
                .await
                .map_err(ConnectError::Database)?;
            let gate = Arc::new(Semaphore::new(1));
            let writes = HotWrites::start(HotDb::Sqlite(pool.clone()), Some(Arc::clone(&gate)));
            Store::Sqlite(pool, gate, writes)
        } else {
            return Err(ConnectError::BadUrl(format!(
                "\"{url}\" is neither sqlite://… nor postgres://…"
            )));
        };
        store.migrate().await?;
        Ok(store)
    }

    async fn migrate(&self) -> Result<(), ConnectError> {
        use crate::lti::merge::{merge_old_keys, Db};
        // After the migrations, the data migration that SQL alone cannot do: learning
        // platforms' users and courses moved to their issuer's keys (once; then it finds
        // nothing to do).
        match self {
            Store::Sqlite(pool, ..) => {
                sqlx::migrate!("../migrations/sqlite")
                    .run(pool)
                    .await
                    .map_err(ConnectError::Migrate)?;
                merge_old_keys(Db::Sqlite(pool)).await
            }
            Store::Postgres(pool, _) => {
                sqlx::migrate!("../migrations/postgres")
                    .run(pool)
                    .await
                    .map_err(ConnectError::Migrate)?;
                merge_old_keys(Db::Postgres(pool)).await
            }
        }
        .map(|_| ())
        .map_err(ConnectError::Database)
    }

    pub fn backend(&self) -> &'static str {
        match self {
            Store::Sqlite(..) => "sqlite",
            Store::Postgres(..) => "postgres",
        }
    }

    /// A turn to write, on SQLite; held for the whole write (a transaction included).
    pub(crate) async fn write_turn(&self) -> Option<SemaphorePermit<'_>> {
        match self {
            // The gate is never closed, so `acquire` cannot fail.
            Store::Sqlite(_, gate, _) => gate.acquire().await.ok(),
            Store::Postgres(..) => None,
        }
    }

    /// Succeeds when the database answers.
    pub async fn ping(&self) -> StoreResult<()> {
        with_pool!(self, pool => sqlx::query("SELECT 1").execute(pool).await.map(|_| ()))
    }

    /// Closes every connection; later queries fail. Tests use it to break the database.
    pub async fn close(&self) {
        with_pool!(self, pool => pool.close().await)
    }

    // Students.

    /// Makes a new student for a browser session, and the session: `secret_hash` is the
    /// sha256 of the cookie's secret, which is never stored itself.
    pub async fn create_session(&self, id: &str, secret_hash: &str) -> StoreResult<Student> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            sqlx::query("INSERT INTO students (id, display_name, origin, created_at, legacy_cookie) VALUES ($1, NULL, 'session', $2, FALSE)")
                .bind(id).bind(now).execute(&mut *tx).await?;
            sqlx::query("INSERT INTO sessions (secret_hash, student, created_at) VALUES ($1, $2, $3)")
                .bind(secret_hash).bind(id).bind(now).execute(&mut *tx).await?;
            tx.commit().await
        })?;
        Ok(Student {
            id: id.to_string(),
            display_name: None,
        })
    }

    /// The student of the session whose secret hashes to `secret_hash`.
    pub async fn session_by_secret(&self, secret_hash: &str) -> StoreResult<Option<Student>> {
        with_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT s.id, s.display_name FROM sessions AS k JOIN students AS s ON s.id = k.student \
                 WHERE k.secret_hash = $1 AND s.origin = 'session'")
                .bind(secret_hash).fetch_optional(pool).await?;
            row.map(|r| Ok(Student { id: r.try_get("id")?, display_name: r.try_get("display_name")? })).transpose()
        })
    }

    /// Exchanges the id of a student made before sessions had their own secret (the old
    /// `pb_student` cookie) for a session whose secret hashes to `secret_hash`. Works once per
    /// student: the student is marked in the same transaction, so the old id is never
    /// accepted again. `None` when `old_id` names no such student or was already exchanged.
    pub async fn redeem_legacy_student(
        &self,
        old_id: &str,
        secret_hash: &str,
    ) -> StoreResult<Option<Student>> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let marked = sqlx::query(
                "UPDATE students SET legacy_cookie = FALSE WHERE id = $1 AND origin = 'session' AND legacy_cookie = TRUE")
                .bind(old_id).execute(&mut *tx).await?.rows_affected();
            if marked != 1 {
                tx.rollback().await?;
                return Ok(None);
            }
            sqlx::query("INSERT INTO sessions (secret_hash, student, created_at) VALUES ($1, $2, $3)")
                .bind(secret_hash).bind(old_id).bind(now).execute(&mut *tx).await?;
            let row = sqlx::query("SELECT id, display_name FROM students WHERE id = $1")
                .bind(old_id).fetch_one(&mut *tx).await?;
            let student = Student { id: row.try_get("id")?, display_name: row.try_get("display_name")? };
            tx.commit().await?;
            Ok(Some(student))
        })
    }

    pub async fn set_display_name(&self, id: &str, display_name: Option<&str>) -> StoreResult<()> {
        let _turn = self.write_turn().await;
        with_pool!(self, pool => sqlx::query("UPDATE students SET display_name = $2 WHERE id = $1")
            .bind(id).bind(display_name).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(())
    }

    // Drafts.

    pub async fn get_draft(&self, student: &str, scenario: &str) -> StoreResult<Option<Draft>> {
        with_pool!(self, pool => {
            let row = sqlx::query("SELECT scenario, design, updated_at FROM drafts WHERE student = $1 AND scenario = $2")
                .bind(student).bind(scenario).fetch_optional(pool).await?;
            row.map(|r| {
                let design: SqlJson<Json> = r.try_get("design")?;
                Ok(Draft { scenario: r.try_get("scenario")?, design: design.0, updated_at: r.try_get("updated_at")? })
            }).transpose()
        })
    }

    pub async fn put_draft(
        &self,
        student: &str,
        scenario: &str,
        design: &Json,
    ) -> StoreResult<Draft> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        with_pool!(self, pool => sqlx::query(
            "INSERT INTO drafts (student, scenario, design, updated_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (student, scenario) DO UPDATE SET design = excluded.design, updated_at = excluded.updated_at")
            .bind(student).bind(scenario).bind(SqlJson(design)).bind(now).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(Draft {
            scenario: scenario.to_string(),
            design: design.clone(),
            updated_at: now,
        })
    }

    // Attempts.

    pub async fn get_attempt(&self, id: &str) -> StoreResult<Option<Attempt>> {
        with_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT id, student, scenario, scenario_hash, design, verdict, score, max_score, passed, created_at, class_id \
                 FROM attempts WHERE id = $1")
                .bind(id).fetch_optional(pool).await?;
            row.map(|r| {
                let design: SqlJson<Json> = r.try_get("design")?;
                let verdict: SqlJson<Json> = r.try_get("verdict")?;
                Ok(Attempt {
                    id: r.try_get("id")?,
                    student: r.try_get("student")?,
                    scenario: r.try_get("scenario")?,
                    scenario_hash: r.try_get("scenario_hash")?,
                    design: design.0,
                    verdict: verdict.0,
                    score: r.try_get("score")?,
                    max_score: r.try_get("max_score")?,
                    passed: r.try_get("passed")?,
                    created_at: r.try_get("created_at")?,
                    class: r.try_get("class_id")?,
                })
            }).transpose()
        })
    }

    /// Attempts, newest first, filtered by student and scenario when given.
    pub async fn list_attempts(
        &self,
        student: Option<&str>,
        scenario: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<AttemptSummary>> {
        self.attempts_page(&AttemptsQuery {
            student,
            scenario,
            before: None,
            limit,
        })
        .await
    }

    /// A page of attempts, newest first: those `query` filters, after the attempt it names.
    pub async fn attempts_page(
        &self,
        query: &AttemptsQuery<'_>,
    ) -> StoreResult<Vec<AttemptSummary>> {
        let sql = format!("SELECT {ATTEMPTS_PAGE_COLUMNS} {ATTEMPTS_PAGE}");
        with_pool!(self, pool => {
            let rows = sqlx::query(&sql)
                .bind(query.student).bind(query.scenario).bind(query.before).bind(i64::from(query.limit))
                .fetch_all(pool).await?;
            rows.iter().map(|r| attempt_summary!(r)).collect()
        })
    }

    /// As [`Store::attempts_page`], each attempt with its verdict (for exports that name the
    /// requirements missed) and the student's display name: the one they gave the attempt's
    /// class, else the one of their session or platform, else none.
    pub async fn attempts_page_for_export(
        &self,
        query: &AttemptsQuery<'_>,
    ) -> StoreResult<Vec<ExportedAttempt>> {
        let sql = format!(
            "SELECT {ATTEMPTS_PAGE_COLUMNS}, a.verdict, COALESCE(m.display_name, s.display_name) AS display_name \
             {ATTEMPTS_PAGE_JOINED}"
        );
        with_pool!(self, pool => {
            let rows = sqlx::query(&sql)
                .bind(query.student).bind(query.scenario).bind(query.before).bind(i64::from(query.limit))
                .fetch_all(pool).await?;
            rows.iter().map(|r| {
                let verdict: SqlJson<Json> = r.try_get("verdict")?;
                Ok(ExportedAttempt {
                    summary: attempt_summary!(r)?,
                    display_name: r.try_get::<Option<String>, _>("display_name")?.unwrap_or_default(),
                    verdict: verdict.0,
                })
            }).collect()
        })
    }

    /// The name a student goes by: the one of their session or platform, else the one they
    /// gave the class they joined last; `None` for a student with neither (or none at all).
    pub async fn display_name(&self, student: &str) -> StoreResult<Option<String>> {
        with_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT COALESCE(s.display_name, \
                 (SELECT m.display_name FROM memberships AS m WHERE m.student = s.id ORDER BY m.joined_at DESC LIMIT 1)) AS name \
                 FROM students AS s WHERE s.id = $1")
                .bind(student).fetch_optional(pool).await?;
            Ok(row.map(|r| r.try_get::<Option<String>, _>("name")).transpose()?.flatten())
        })
    }

    /// Per scenario, whether the student has tried it (made a Check: an attempt is recorded)
    /// and passed it. A draft alone is not a try: it may be an edit never checked.
    pub async fn progress(&self, student: &str) -> StoreResult<BTreeMap<String, Progress>> {
        let mut progress: BTreeMap<String, Progress> = BTreeMap::new();
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT scenario, MAX(CASE WHEN passed THEN 1 ELSE 0 END) AS passed FROM attempts WHERE student = $1 GROUP BY scenario")
                .bind(student).fetch_all(pool).await?;
            for r in rows {
                let scenario: String = r.try_get("scenario")?;
                let passed: i32 = r.try_get("passed")?;
                progress.insert(scenario, Progress { tried: true, passed: passed == 1 });
            }
        });
        Ok(progress)
    }

    /// Records an attempt and, when the request carried an idempotency key, its stored
    /// answer, in one transaction: either both are committed or neither. With an answer, the
    /// write happens only while `answer.owner` still holds the key's claim: a holder whose
    /// claim was taken over (it stalled past its lease) records nothing and gets `Ok(false)`.
    ///
    /// The write goes through the store's group commit ([`crate::group_commit`]): it joins
    /// the writes waiting at the same moment in one transaction, in a savepoint of its own,
    /// and this returns once that transaction committed.
    pub async fn record(
        &self,
        attempt: Option<&Attempt>,
        answer: Option<&IdempotentAnswer<'_>>,
    ) -> StoreResult<bool> {
        let job = HotWrite::Record {
            attempt: attempt.map(NewAttempt::of).transpose()?,
            answer: answer.map(|a| StoredAnswer {
                caller: a.caller.to_string(),
                key: a.key.to_string(),
                owner: a.owner.to_string(),
                status: a.status,
                response: a.body.to_string(),
            }),
        };
        match self.hot_writes().run(job).await? {
            Written::Recorded(done) => Ok(done),
            Written::Claimed(_) => Err(mismatched_answer()),
        }
    }

    // Idempotency keys.

    /// Claims `key` for `caller` with a request whose fingerprint is `fingerprint`. A claim is
    /// a lease: its holder renews it ([`Store::renew_idempotency_key`]) while it works, so an
    /// in-flight claim not renewed for `lease` belongs to a server that died (`kill -9`, a
    /// lost machine) and is taken over. The state lives in the database, so several servers
    /// agree.
    ///
    /// The claim's holder is a fresh random id, which the caller does not learn: this is how
    /// another server's claim looks. A holder that writes to its claim uses
    /// [`Store::claim_idempotency_key_as`].
    pub async fn claim_idempotency_key(
        &self,
        caller: &str,
        key: &str,
        fingerprint: &str,
        lease: Duration,
    ) -> StoreResult<Claim> {
        let owner = new_claim_owner();
        self.claim_idempotency_key_as(&owner, caller, key, fingerprint, lease)
            .await
    }

    /// Claims `key` for `caller` as the holder `owner` (a random id, [`new_claim_owner`]).
    /// Renewing, recording and abandoning the claim name the holder, and a takeover gives the
    /// claim a new one, so a holder that stalled past its lease can no longer write to it.
    ///
    /// Like [`Store::record`], the claim goes through the store's group commit: it is
    /// committed, in a savepoint of its own, before this returns, so a `Started` claim is
    /// in the database before its request does any work.
    pub async fn claim_idempotency_key_as(
        &self,
        owner: &str,
        caller: &str,
        key: &str,
        fingerprint: &str,
        lease: Duration,
    ) -> StoreResult<Claim> {
        let job = HotWrite::Claim {
            owner: owner.to_string(),
            caller: caller.to_string(),
            key: key.to_string(),
            fingerprint: fingerprint.to_string(),
            lease,
        };
        match self.hot_writes().run(job).await? {
            Written::Claimed(claim) => Ok(claim),
            Written::Recorded(_) => Err(mismatched_answer()),
        }
    }

    /// What the group-commit writer of this store has done (batches, writes; `/metrics`).
    pub fn group_commit_stats(&self) -> group_commit::Stats {
        self.hot_writes().stats()
    }

    /// Holds the group-commit writer until the permit is dropped: the batch it runs finishes,
    /// then the writes sent meanwhile wait and gather into the next batch. On SQLite this is
    /// the write turn itself, so every other write waits too. Tests use it to make a batch of
    /// known members.
    pub async fn hold_group_commit(&self) -> tokio::sync::OwnedSemaphorePermit {
        self.hot_writes().hold().await
    }

    fn hot_writes(&self) -> &group_commit::Writer<HotWrite, Written> {
        match self {
            Store::Sqlite(_, _, writes) | Store::Postgres(_, writes) => &writes.0,
        }
    }

    /// Renews the lease of an in-flight claim; its holder `owner` calls it while it works.
    /// `Ok(false)` when the claim is no longer the holder's.
    pub async fn renew_idempotency_key(
        &self,
        caller: &str,
        key: &str,
        owner: &str,
    ) -> StoreResult<bool> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        let renewed = with_pool!(self, pool => sqlx::query("UPDATE idempotency_keys SET updated_at = $3 WHERE caller = $1 AND key = $2 AND owner = $4 AND state = 'in_flight'")
            .bind(caller).bind(key).bind(now).bind(owner).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(renewed == 1)
    }

    /// Gives up a claim whose request failed on our side, so that a retry can run. Only its
    /// holder `owner` can: `Ok(false)` when the claim was taken over meanwhile.
    pub async fn abandon_idempotency_key(
        &self,
        caller: &str,
        key: &str,
        owner: &str,
    ) -> StoreResult<bool> {
        let _turn = self.write_turn().await;
        let done = with_pool!(self, pool => sqlx::query("DELETE FROM idempotency_keys WHERE caller = $1 AND key = $2 AND owner = $3 AND state = 'in_flight'")
            .bind(caller).bind(key).bind(owner).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(done == 1)
    }

    // Grader tokens.

    /// Stores a token's hash under `name`. A revoked name may be used again; an active one
    /// may not (`Ok(false)`).
    pub async fn create_token(&self, name: &str, token_hash: &str) -> StoreResult<bool> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        let done = with_pool!(self, pool => sqlx::query(
            "INSERT INTO grader_tokens (name, token_hash, created_at, revoked_at) VALUES ($1, $2, $3, NULL) \
             ON CONFLICT (name) DO UPDATE SET token_hash = excluded.token_hash, created_at = excluded.created_at, revoked_at = NULL \
             WHERE grader_tokens.revoked_at IS NOT NULL")
            .bind(name).bind(token_hash).bind(now).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(done == 1)
    }

    pub async fn list_tokens(&self) -> StoreResult<Vec<TokenInfo>> {
        with_pool!(self, pool => {
            let rows = sqlx::query("SELECT name, created_at, revoked_at FROM grader_tokens ORDER BY name").fetch_all(pool).await?;
            rows.iter().map(|r| Ok(TokenInfo { name: r.try_get("name")?, created_at: r.try_get("created_at")?, revoked_at: r.try_get("revoked_at")? })).collect()
        })
    }

    /// Revokes the active token called `name`; `Ok(false)` when there is none.
    pub async fn revoke_token(&self, name: &str) -> StoreResult<bool> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        let done = with_pool!(self, pool => sqlx::query("UPDATE grader_tokens SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL")
            .bind(name).bind(now).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(done == 1)
    }

    /// The names and hashes of the tokens that are not revoked. The hash identifies a token:
    /// a name revoked and given to a new token gets a new hash.
    pub async fn active_tokens(&self) -> StoreResult<Vec<(String, String)>> {
        with_pool!(self, pool => {
            let rows = sqlx::query("SELECT name, token_hash FROM grader_tokens WHERE revoked_at IS NULL ORDER BY name").fetch_all(pool).await?;
            rows.iter().map(|r| Ok((r.try_get("name")?, r.try_get("token_hash")?))).collect()
        })
    }
    // Expiry.

    /// The bytes of the drafts `student` keeps, except the one of `except_scenario` (which a
    /// write is about to replace): counted as characters of the stored JSON text.
    pub async fn draft_bytes(&self, student: &str, except_scenario: &str) -> StoreResult<u64> {
        let total: i64 = with_pool!(self, pool => sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(LENGTH(CAST(design AS TEXT))), 0) AS BIGINT) FROM drafts WHERE student = $1 AND scenario <> $2")
            .bind(student).bind(except_scenario).fetch_one(pool).await)?;
        Ok(u64::try_from(total).unwrap_or(0))
    }

    /// Removes the idempotency records first used before `cutoff` (a claim still in flight
    /// and renewed since is kept), a batch at a time so that requests get their turns to
    /// write between batches. Returns how many were removed.
    pub async fn sweep_idempotency_keys(&self, cutoff: DateTime<Utc>) -> StoreResult<u64> {
        let mut removed = 0;
        loop {
            let _turn = self.write_turn().await;
            let n = with_pool!(self, pool => sqlx::query(
                "DELETE FROM idempotency_keys WHERE (caller, key) IN (SELECT caller, key FROM idempotency_keys \
                 WHERE created_at < $1 AND (state = 'done' OR updated_at < $1) LIMIT $2)")
                .bind(cutoff).bind(SWEEP_BATCH).execute(pool).await.map(|r| r.rows_affected()))?;
            removed += n;
            if n < SWEEP_BATCH as u64 {
                return Ok(removed);
            }
        }
    }

    /// Removes the students made for a session before `cutoff` that have no attempt, no
    /// draft and no class membership, with every row that refers to them
    /// ([`WORKLESS_SESSION_SWEEP`]), a batch at a time, each batch in one transaction. Returns
    /// how many students were removed.
    pub async fn sweep_workless_sessions(&self, cutoff: DateTime<Utc>) -> StoreResult<u64> {
        let batch = format!(
            "SELECT id FROM students WHERE origin = 'session' AND created_at < $1 \
             AND NOT EXISTS (SELECT 1 FROM attempts WHERE attempts.student = students.id) \
             AND NOT EXISTS (SELECT 1 FROM drafts WHERE drafts.student = students.id) \
             AND NOT EXISTS (SELECT 1 FROM memberships WHERE memberships.student = students.id) \
             ORDER BY id LIMIT {SWEEP_BATCH}"
        );
        let statements: Vec<String> = WORKLESS_SESSION_SWEEP
            .iter()
            .map(|s| s.replace("{students}", &batch))
            .collect();
        let mut removed = 0;
        loop {
            let _turn = self.write_turn().await;
            let n = with_pool!(self, pool => {
                let mut tx = pool.begin().await?;
                let mut last = 0;
                for statement in &statements {
                    last = sqlx::query(statement).bind(cutoff).execute(&mut *tx).await?.rows_affected();
                }
                tx.commit().await?;
                last
            });
            removed += n;
            if n < SWEEP_BATCH as u64 {
                return Ok(removed);
            }
        }
    }
}

/// How many rows one step of a sweep removes.
const SWEEP_BATCH: i64 = 500;

/// What removing a batch of students with no work deletes, in order, in one transaction: each
/// statement gets the cutoff as `$1`, and `{students}` becomes the query of the batch's ids. A
/// table that refers to students (a table of session secrets, say) gets its `DELETE … WHERE
/// student IN ({students})` before the last one, which removes the students and is counted.
const WORKLESS_SESSION_SWEEP: &[&str] = &[
    "DELETE FROM sessions WHERE student IN ({students})",
    "DELETE FROM students WHERE id IN ({students})",
];

/// A new holder id for a claim of an idempotency key: 128 random bits in hex.
pub fn new_claim_owner() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// What `pipeline-builder student delete ID` removes, in order, in one transaction: what each
/// statement removes (as the command reports it) and the statement, which gets the student's
/// id as `$1`. A table that refers to students (class memberships, session secrets) gets its
/// `DELETE … WHERE student = $1` here, before the last one, which removes the student.
pub const STUDENT_DELETE: &[(&str, &str)] = &[
    (
        "regraded verdicts",
        "DELETE FROM regrades WHERE attempt IN (SELECT id FROM attempts WHERE student = $1)",
    ),
    ("attempts", "DELETE FROM attempts WHERE student = $1"),
    ("drafts", "DELETE FROM drafts WHERE student = $1"),
    ("sessions", "DELETE FROM sessions WHERE student = $1"),
    (
        "class memberships",
        "DELETE FROM memberships WHERE student = $1",
    ),
    (
        "learning platform links",
        "DELETE FROM lti_identities WHERE student = $1",
    ),
    (
        "grade passback records",
        "DELETE FROM lti_grade_targets WHERE student = $1",
    ),
    (
        "idempotency records",
        "DELETE FROM idempotency_keys WHERE caller = 'student:' || $1",
    ),
    ("students", "DELETE FROM students WHERE id = $1"),
];

impl Store {
    /// Removes the student `id` and everything that is theirs ([`STUDENT_DELETE`]) in one
    /// transaction. Returns how many rows of each kind were removed, in the list's order, or
    /// `None` when there is no such student (and nothing was removed).
    pub async fn delete_student(&self, id: &str) -> StoreResult<Option<Vec<(&'static str, u64)>>> {
        let _turn = self.write_turn().await;
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let found: Option<String> = sqlx::query_scalar("SELECT id FROM students WHERE id = $1")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            if found.is_none() {
                tx.rollback().await?;
                return Ok(None);
            }
            let mut removed = Vec::with_capacity(STUDENT_DELETE.len());
            for (what, statement) in STUDENT_DELETE {
                let n = sqlx::query(statement).bind(id).execute(&mut *tx).await?.rows_affected();
                removed.push((*what, n));
            }
            tx.commit().await?;
            Ok(Some(removed))
        })
    }

    /// Writes a consistent copy of a SQLite database to `file` with `VACUUM INTO`, while the
    /// server keeps running (readers and writers go on; the copy is one snapshot). Refuses a
    /// `file` that exists. On PostgreSQL it does nothing and returns [`BackupError::Postgres`]:
    /// `pg_dump` makes that backup.
    pub async fn backup_sqlite(&self, file: &Path) -> Result<(), BackupError> {
        let Store::Sqlite(pool, ..) = self else {
            return Err(BackupError::Postgres);
        };
        if file.exists() {
            return Err(BackupError::Exists);
        }
        let Some(target) = file.to_str() else {
            return Err(BackupError::Path);
        };
        // VACUUM INTO takes a file name, not a bound parameter: quote it as an SQL string.
        let statement = format!("VACUUM INTO '{}'", target.replace('\'', "''"));
        sqlx::query(&statement)
            .execute(pool)
            .await
            .map(|_| ())
            .map_err(BackupError::Database)
    }
}

/// Why a backup was not made.
#[derive(Debug)]
pub enum BackupError {
    /// The target file exists already; a backup never overwrites one.
    Exists,
    /// The target's path is not valid UTF-8.
    Path,
    /// The database is PostgreSQL: use `pg_dump`.
    Postgres,
    Database(sqlx::Error),
}

impl std::fmt::Display for BackupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackupError::Exists => {
                write!(f, "the file exists already; a backup never overwrites one")
            }
            BackupError::Path => write!(f, "the file's path is not valid UTF-8"),
            BackupError::Postgres => {
                write!(f, "the database is PostgreSQL: back it up with pg_dump")
            }
            BackupError::Database(e) => write!(f, "the backup failed: {e}"),
        }
    }
}

impl std::error::Error for BackupError {}

// Classes.

/// A class as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    pub id: String,
    pub name: String,
    pub join_code: String,
    pub open: bool,
    pub preview: Preview,
    /// The name of the grader token that made it.
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// How many students have joined.
    pub members: i64,
}

/// What [`Store::create_class_within`] came to.
#[derive(Debug)]
pub enum ClassMade {
    Made(Class),
    /// Another class has the join code: draw another.
    CodeTaken,
    /// The maker has made as many classes as it may.
    LimitReached,
}

/// A student's place in a class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Membership {
    pub class: String,
    pub student: String,
    pub display_name: String,
    pub joined_at: DateTime<Utc>,
}

/// What joining a class came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Joined {
    /// A new member.
    New(Membership),
    /// The student was a member already; nothing changed.
    Already(Membership),
    /// The class is closed and the student is not a member.
    Closed,
}

/// An attempt of a class, with what the dashboard reads of it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassAttempt {
    pub summary: AttemptSummary,
    pub verdict: Json,
}

/// The verdict of a stored attempt checked again against another version of its scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Regrade {
    pub attempt: String,
    pub scenario_hash: String,
    /// `None` when the design is not valid for that version; `error` says why.
    pub verdict: Option<Json>,
    pub error: Option<String>,
    pub score: i32,
    pub max_score: i32,
    pub passed: bool,
    pub created_at: DateTime<Utc>,
}

/// A value read from the database that the server does not know (a row written by hand, or
/// by a newer version): an error, answered 500 and logged, never read as a default.
#[derive(Debug)]
pub struct UnknownStoredValue(pub String);

impl std::fmt::Display for UnknownStoredValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the database holds a value the server does not know: {}",
            self.0
        )
    }
}

impl std::error::Error for UnknownStoredValue {}

/// The error of reading [`UnknownStoredValue`] `what`.
pub fn unknown_stored(what: impl Into<String>) -> sqlx::Error {
    sqlx::Error::Decode(Box::new(UnknownStoredValue(what.into())))
}

/// What the student's app shows before a check.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Preview {
    /// The live preview of every requirement, met or not (the default, and self-study's).
    Everything,
    /// Only the requirements the design still lacks.
    Lacks,
    /// No live preview: only Check tells.
    Nothing,
}

impl Preview {
    pub fn as_str(self) -> &'static str {
        match self {
            Preview::Everything => "everything",
            Preview::Lacks => "lacks",
            Preview::Nothing => "nothing",
        }
    }

    /// The setting a class's stored `preview` names; any other value is refused.
    pub fn from_stored(stored: &str) -> StoreResult<Preview> {
        match stored {
            "everything" => Ok(Preview::Everything),
            "lacks" => Ok(Preview::Lacks),
            "nothing" => Ok(Preview::Nothing),
            other => Err(unknown_stored(format!("a class's preview {other:?}"))),
        }
    }
}

/// A stored attempt that a regrade checks again.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredDesign {
    pub attempt: String,
    pub design: Json,
}

const CLASS_COLUMNS: &str =
    "c.id, c.name, c.join_code, c.open, c.preview, c.created_by, c.created_at, \
     (SELECT COUNT(*) FROM memberships AS m WHERE m.class_id = c.id) AS members";

fn class_of(r: &impl ClassRow) -> StoreResult<Class> {
    r.class()
}

/// Reads a [`Class`] from a row of either backend.
trait ClassRow {
    fn class(&self) -> StoreResult<Class>;
}

macro_rules! class_row {
    ($row:ty) => {
        impl ClassRow for $row {
            fn class(&self) -> StoreResult<Class> {
                Ok(Class {
                    id: self.try_get("id")?,
                    name: self.try_get("name")?,
                    join_code: self.try_get("join_code")?,
                    open: self.try_get("open")?,
                    preview: Preview::from_stored(&self.try_get::<String, _>("preview")?)?,
                    created_by: self.try_get("created_by")?,
                    created_at: self.try_get("created_at")?,
                    members: self.try_get("members")?,
                })
            }
        }
    };
}
class_row!(sqlx::sqlite::SqliteRow);
class_row!(sqlx::postgres::PgRow);

impl Store {
    /// Makes a class. `Ok(None)` when `join_code` is taken (the caller draws another).
    pub async fn create_class(
        &self,
        id: &str,
        name: &str,
        join_code: &str,
        created_by: &str,
    ) -> StoreResult<Option<Class>> {
        match self
            .create_class_within(id, name, join_code, created_by, u32::MAX)
            .await?
        {
            ClassMade::Made(class) => Ok(Some(class)),
            ClassMade::CodeTaken | ClassMade::LimitReached => Ok(None),
        }
    }

    /// Makes a class as [`Store::create_class`] does, unless `created_by` has made `max`
    /// classes already. The count and the insert are one transaction, and on PostgreSQL the
    /// maker's classes are locked for it (an advisory lock on the name), so that two makes at
    /// once cannot both take the last place. (SQLite's writes take their turns already.)
    pub async fn create_class_within(
        &self,
        id: &str,
        name: &str,
        join_code: &str,
        created_by: &str,
        max: u32,
    ) -> StoreResult<ClassMade> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        let postgres = matches!(self, Store::Postgres(..));
        let made = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            if postgres {
                sqlx::query("SELECT pg_advisory_xact_lock(hashtext('classes:' || $1))")
                    .bind(created_by).execute(&mut *tx).await?;
            }
            let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM classes WHERE created_by = $1")
                .bind(created_by).fetch_one(&mut *tx).await?;
            if count >= i64::from(max) {
                tx.rollback().await?;
                return Ok(ClassMade::LimitReached);
            }
            let made = sqlx::query(
                "INSERT INTO classes (id, name, join_code, open, preview, created_by, created_at) \
                 VALUES ($1, $2, $3, TRUE, 'everything', $4, $5) ON CONFLICT DO NOTHING")
                .bind(id).bind(name).bind(join_code).bind(created_by).bind(now)
                .execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            made
        });
        if made != 1 {
            return Ok(ClassMade::CodeTaken);
        }
        Ok(ClassMade::Made(Class {
            id: id.to_string(),
            name: name.to_string(),
            join_code: join_code.to_string(),
            open: true,
            preview: Preview::Everything,
            created_by: created_by.to_string(),
            created_at: now,
            members: 0,
        }))
    }

    /// Every class, newest first.
    pub async fn list_classes(&self) -> StoreResult<Vec<Class>> {
        let query =
            format!("SELECT {CLASS_COLUMNS} FROM classes AS c ORDER BY c.created_at DESC, c.id");
        with_pool!(self, pool => {
            let rows = sqlx::query(&query).fetch_all(pool).await?;
            rows.iter().map(class_of).collect()
        })
    }

    /// At most `limit` classes, newest first (the order of [`Store::list_classes`]), after
    /// the class `after` names by its creation time and id (the last one of the page before).
    pub async fn list_classes_page(
        &self,
        limit: u32,
        after: Option<&(DateTime<Utc>, String)>,
    ) -> StoreResult<Vec<Class>> {
        let limit = i64::from(limit);
        with_pool!(self, pool => {
            let rows = match after {
                Some((at, id)) => {
                    let query = format!(
                        "SELECT {CLASS_COLUMNS} FROM classes AS c \
                         WHERE c.created_at < $1 OR (c.created_at = $1 AND c.id > $2) \
                         ORDER BY c.created_at DESC, c.id LIMIT $3");
                    sqlx::query(&query).bind(*at).bind(id.as_str()).bind(limit).fetch_all(pool).await?
                }
                None => {
                    let query = format!(
                        "SELECT {CLASS_COLUMNS} FROM classes AS c ORDER BY c.created_at DESC, c.id LIMIT $1");
                    sqlx::query(&query).bind(limit).fetch_all(pool).await?
                }
            };
            rows.iter().map(class_of).collect()
        })
    }

    pub async fn get_class(&self, id: &str) -> StoreResult<Option<Class>> {
        let query = format!("SELECT {CLASS_COLUMNS} FROM classes AS c WHERE c.id = $1");
        with_pool!(self, pool => {
            let row = sqlx::query(&query).bind(id).fetch_optional(pool).await?;
            row.as_ref().map(class_of).transpose()
        })
    }

    pub async fn class_by_code(&self, join_code: &str) -> StoreResult<Option<Class>> {
        let query = format!("SELECT {CLASS_COLUMNS} FROM classes AS c WHERE c.join_code = $1");
        with_pool!(self, pool => {
            let row = sqlx::query(&query).bind(join_code).fetch_optional(pool).await?;
            row.as_ref().map(class_of).transpose()
        })
    }

    /// Changes what is given of a class: its name, whether it is open, its preview setting.
    /// `Ok(None)` when there is no such class.
    pub async fn update_class(
        &self,
        id: &str,
        name: Option<&str>,
        open: Option<bool>,
        preview: Option<Preview>,
    ) -> StoreResult<Option<Class>> {
        let preview = preview.map(Preview::as_str);
        {
            let _turn = self.write_turn().await;
            let changed = with_pool!(self, pool => sqlx::query(
                "UPDATE classes SET name = COALESCE($2, name), open = COALESCE($3, open), preview = COALESCE($4, preview) WHERE id = $1")
                .bind(id).bind(name).bind(open).bind(preview).execute(pool).await.map(|r| r.rows_affected()))?;
            if changed != 1 {
                return Ok(None);
            }
        }
        self.get_class(id).await
    }

    /// Makes `student` a member of the open class `class` under `display_name`; a member
    /// already keeps the name given first.
    pub async fn join_class(
        &self,
        class: &str,
        student: &str,
        display_name: &str,
    ) -> StoreResult<Joined> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        let inserted = with_pool!(self, pool => sqlx::query(
            "INSERT INTO memberships (class_id, student, display_name, joined_at) \
             SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM classes WHERE id = $1 AND open = TRUE) \
             ON CONFLICT (class_id, student) DO NOTHING")
            .bind(class).bind(student).bind(display_name).bind(now)
            .execute(pool).await.map(|r| r.rows_affected()))?;
        drop(_turn);
        match self.membership(class, student).await? {
            Some(m) if inserted == 1 => Ok(Joined::New(m)),
            Some(m) => Ok(Joined::Already(m)),
            None => Ok(Joined::Closed),
        }
    }

    pub async fn membership(&self, class: &str, student: &str) -> StoreResult<Option<Membership>> {
        with_pool!(self, pool => {
            let row = sqlx::query("SELECT class_id, student, display_name, joined_at FROM memberships WHERE class_id = $1 AND student = $2")
                .bind(class).bind(student).fetch_optional(pool).await?;
            row.map(|r| Ok(Membership {
                class: r.try_get("class_id")?,
                student: r.try_get("student")?,
                display_name: r.try_get("display_name")?,
                joined_at: r.try_get("joined_at")?,
            })).transpose()
        })
    }

    /// The members of a class, by display name.
    pub async fn members(&self, class: &str) -> StoreResult<Vec<Membership>> {
        with_pool!(self, pool => {
            let rows = sqlx::query("SELECT class_id, student, display_name, joined_at FROM memberships WHERE class_id = $1 ORDER BY display_name, student")
                .bind(class).fetch_all(pool).await?;
            rows.iter().map(|r| Ok(Membership {
                class: r.try_get("class_id")?,
                student: r.try_get("student")?,
                display_name: r.try_get("display_name")?,
                joined_at: r.try_get("joined_at")?,
            })).collect()
        })
    }

    /// The classes `student` belongs to, each with the membership, in the order joined.
    pub async fn student_classes(&self, student: &str) -> StoreResult<Vec<(Class, Membership)>> {
        let query = format!(
            "SELECT {CLASS_COLUMNS}, m.display_name AS member_name, m.joined_at FROM memberships AS m \
             JOIN classes AS c ON c.id = m.class_id WHERE m.student = $1 ORDER BY m.joined_at, c.id"
        );
        with_pool!(self, pool => {
            let rows = sqlx::query(&query).bind(student).fetch_all(pool).await?;
            rows.iter().map(|r| {
                let class = class_of(r)?;
                let membership = Membership {
                    class: class.id.clone(),
                    student: student.to_string(),
                    display_name: r.try_get("member_name")?,
                    joined_at: r.try_get("joined_at")?,
                };
                Ok((class, membership))
            }).collect()
        })
    }

    /// The attempts made for a class, oldest first, each with its verdict; only `student`'s
    /// when given.
    pub async fn class_attempts(
        &self,
        class: &str,
        student: Option<&str>,
    ) -> StoreResult<Vec<ClassAttempt>> {
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT id, student, scenario, scenario_hash, score, max_score, passed, created_at, verdict FROM attempts \
                 WHERE class_id = $1 AND ($2 IS NULL OR student = $2) ORDER BY created_at, id")
                .bind(class).bind(student).fetch_all(pool).await?;
            rows.iter().map(|r| {
                let verdict: SqlJson<Json> = r.try_get("verdict")?;
                Ok(ClassAttempt {
                    summary: AttemptSummary {
                        id: r.try_get("id")?,
                        student: r.try_get("student")?,
                        scenario: r.try_get("scenario")?,
                        scenario_hash: r.try_get("scenario_hash")?,
                        score: r.try_get("score")?,
                        max_score: r.try_get("max_score")?,
                        passed: r.try_get("passed")?,
                        created_at: r.try_get("created_at")?,
                    },
                    verdict: verdict.0,
                })
            }).collect()
        })
    }

    // Regrades.

    /// The regraded verdicts of a class's attempts (every class's when `class` is `None`) at
    /// `scenario`, or at every scenario when it is `None`.
    pub async fn regrades(
        &self,
        class: Option<&str>,
        scenario: Option<&str>,
    ) -> StoreResult<Vec<Regrade>> {
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT g.attempt, g.scenario_hash, g.verdict, g.error, g.score, g.max_score, g.passed, g.created_at \
                 FROM regrades AS g JOIN attempts AS a ON a.id = g.attempt \
                 WHERE ($1 IS NULL OR a.class_id = $1) AND ($2 IS NULL OR a.scenario = $2) ORDER BY g.attempt, g.created_at")
                .bind(class).bind(scenario).fetch_all(pool).await?;
            rows.iter().map(|r| {
                let verdict: Option<SqlJson<Json>> = r.try_get("verdict")?;
                Ok(Regrade {
                    attempt: r.try_get("attempt")?,
                    scenario_hash: r.try_get("scenario_hash")?,
                    verdict: verdict.map(|v| v.0),
                    error: r.try_get("error")?,
                    score: r.try_get("score")?,
                    max_score: r.try_get("max_score")?,
                    passed: r.try_get("passed")?,
                    created_at: r.try_get("created_at")?,
                })
            }).collect()
        })
    }

    /// Up to `limit` attempts at `scenario` (of `class`, when given) made against another
    /// version than `current_hash` and not yet regraded against it, oldest first.
    pub async fn attempts_to_regrade(
        &self,
        scenario: &str,
        class: Option<&str>,
        current_hash: &str,
        limit: u32,
    ) -> StoreResult<Vec<StoredDesign>> {
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT a.id, a.design FROM attempts AS a WHERE a.scenario = $1 AND a.scenario_hash <> $2 \
                 AND ($3 IS NULL OR a.class_id = $3) \
                 AND NOT EXISTS (SELECT 1 FROM regrades AS g WHERE g.attempt = a.id AND g.scenario_hash = $2) \
                 ORDER BY a.created_at, a.id LIMIT $4")
                .bind(scenario).bind(current_hash).bind(class).bind(i64::from(limit)).fetch_all(pool).await?;
            rows.iter().map(|r| {
                let design: SqlJson<Json> = r.try_get("design")?;
                Ok(StoredDesign { attempt: r.try_get("id")?, design: design.0 })
            }).collect()
        })
    }

    /// How many attempts at `scenario` (of `class`) were made against another version than
    /// `current_hash`.
    pub async fn count_outdated(
        &self,
        scenario: &str,
        class: Option<&str>,
        current_hash: &str,
    ) -> StoreResult<u64> {
        let n: i64 = with_pool!(self, pool => sqlx::query_scalar(
            "SELECT COUNT(*) FROM attempts WHERE scenario = $1 AND scenario_hash <> $2 AND ($3 IS NULL OR class_id = $3)")
            .bind(scenario).bind(current_hash).bind(class).fetch_one(pool).await)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Records a batch of regraded verdicts in one transaction: all of them or none. One that
    /// is there already (a run that stopped after its commit) is left as it is.
    pub async fn record_regrades(&self, batch: &[Regrade]) -> StoreResult<u64> {
        let _turn = self.write_turn().await;
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let mut added = 0;
            for g in batch {
                added += sqlx::query(
                    "INSERT INTO regrades (attempt, scenario_hash, verdict, error, score, max_score, passed, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (attempt, scenario_hash) DO NOTHING")
                    .bind(&g.attempt).bind(&g.scenario_hash).bind(g.verdict.as_ref().map(SqlJson))
                    .bind(g.error.as_deref()).bind(g.score).bind(g.max_score).bind(g.passed).bind(g.created_at)
                    .execute(&mut *tx).await?.rows_affected();
            }
            tx.commit().await?;
            Ok(added)
        })
    }

    /// The attempts at `scenario` (of `class`) regraded against `hash`: each attempt's own
    /// verdict beside the regraded one.
    pub async fn regraded_pairs(
        &self,
        scenario: &str,
        class: Option<&str>,
        hash: &str,
    ) -> StoreResult<Vec<(Json, Option<Json>)>> {
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT a.verdict AS old, g.verdict AS new FROM regrades AS g JOIN attempts AS a ON a.id = g.attempt \
                 WHERE a.scenario = $1 AND ($2 IS NULL OR a.class_id = $2) AND g.scenario_hash = $3 ORDER BY a.created_at, a.id")
                .bind(scenario).bind(class).bind(hash).fetch_all(pool).await?;
            rows.iter().map(|r| {
                let old: SqlJson<Json> = r.try_get("old")?;
                let new: Option<SqlJson<Json>> = r.try_get("new")?;
                Ok((old.0, new.map(|v| v.0)))
            }).collect()
        })
    }
}

// Group commit of the hot writes.
//
// The two writes every submission makes — claiming its idempotency key and recording its
// attempt with the stored answer — go through one writer task per store
// (`crate::group_commit`), which runs the writes waiting at the same moment in one transaction.
// Here is what a batch does in that transaction; the module says what the writer guarantees.

/// The group-commit writer of a store's hot writes (`crate::group_commit`), started with the
/// store. The writer task holds only the pool ([`HotDb`]), never the store, so it stops when
/// the last handle of its store is dropped.
#[derive(Clone, Debug)]
pub struct HotWrites(group_commit::Writer<HotWrite, Written>);

/// How many batches run at once on PostgreSQL: each on a connection of its own (of the pool's
/// ten), so that one batch gathers while others wait for their commit. SQLite has one writer.
const POSTGRES_WRITERS: usize = 3;

impl HotWrites {
    /// One writer on SQLite, holding the store's write gate for each batch; a few on
    /// PostgreSQL, with a gate of their own.
    fn start(db: HotDb, sqlite_gate: Option<Arc<Semaphore>>) -> HotWrites {
        let (gate, writers) = match sqlite_gate {
            Some(gate) => (gate, 1),
            None => (Arc::new(Semaphore::new(POSTGRES_WRITERS)), POSTGRES_WRITERS),
        };
        HotWrites(group_commit::Writer::start(
            gate,
            writers,
            group_commit::DEFAULT_MAX_BATCH,
            move |jobs| write_batch(db.clone(), jobs),
        ))
    }
}

/// The pool a group commit writes to.
#[derive(Clone)]
enum HotDb {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// One hot write, owned so that it can wait in the writer's queue.
#[derive(Debug)]
pub enum HotWrite {
    /// [`Store::claim_idempotency_key_as`].
    Claim {
        owner: String,
        caller: String,
        key: String,
        fingerprint: String,
        lease: Duration,
    },
    /// [`Store::record`].
    Record {
        attempt: Option<NewAttempt>,
        answer: Option<StoredAnswer>,
    },
}

impl HotWrite {
    /// The idempotency record the write locks, if any. A batch runs its writes in this order,
    /// so that on PostgreSQL two servers' batches lock the records they share in the same
    /// order and cannot deadlock on them.
    fn record_locked(&self) -> Option<(&str, &str)> {
        match self {
            HotWrite::Claim { caller, key, .. } => Some((caller, key)),
            HotWrite::Record { answer, .. } => answer.as_ref().map(|a| (&*a.caller, &*a.key)),
        }
    }
}

/// An [`Attempt`] to insert, its design and verdict already JSON text: the request turns them
/// into text, so the writer only sends them on.
#[derive(Debug)]
pub struct NewAttempt {
    id: String,
    student: String,
    scenario: String,
    scenario_hash: String,
    design: Box<serde_json::value::RawValue>,
    verdict: Box<serde_json::value::RawValue>,
    score: i32,
    max_score: i32,
    passed: bool,
    created_at: DateTime<Utc>,
    class: Option<String>,
}

impl NewAttempt {
    fn of(a: &Attempt) -> StoreResult<NewAttempt> {
        let text = |v: &Json| {
            serde_json::value::to_raw_value(v).map_err(|e| sqlx::Error::Encode(Box::new(e)))
        };
        Ok(NewAttempt {
            id: a.id.clone(),
            student: a.student.clone(),
            scenario: a.scenario.clone(),
            scenario_hash: a.scenario_hash.clone(),
            design: text(&a.design)?,
            verdict: text(&a.verdict)?,
            score: a.score,
            max_score: a.max_score,
            passed: a.passed,
            created_at: a.created_at,
            class: a.class.clone(),
        })
    }
}

/// [`IdempotentAnswer`], owned, its body already JSON text.
#[derive(Debug)]
pub struct StoredAnswer {
    caller: String,
    key: String,
    owner: String,
    status: u16,
    response: String,
}

/// The outcome of a hot write.
#[derive(Debug)]
pub enum Written {
    Claimed(Claim),
    Recorded(bool),
}

/// What a write did inside its savepoint: keep it, or undo it (it changed nothing that
/// should stay) — with its outcome either way.
enum Step {
    Keep(Written),
    Undo(Written),
}

/// A writer that answered the other kind of write (never happens; an error, not a panic).
fn mismatched_answer() -> sqlx::Error {
    sqlx::Error::Protocol("the group commit answered a write with another write's outcome".into())
}

/// How a batch's set-based run ended when it did not commit.
enum Bulk {
    /// A statement failed: which write caused it is unknown, so the batch runs again write by
    /// write (nothing of the first run stays: its transaction was rolled back).
    Statement(sqlx::Error),
    /// The transaction itself failed (begin, commit, the connection): the batch's error.
    Transaction(sqlx::Error),
}

/// Runs a batch of hot writes in one transaction and commits it; answers `Ok` only once it
/// committed, and any failure of the transaction itself (begin, commit, the connection) is the
/// whole batch's error, with nothing of it committed.
///
/// First the batch runs set-based, a few statements for all its writes (see [`bulk_on`]),
/// which is what makes a batch cheap. A write that changes nothing — a record whose claim was
/// taken over, a claim of a key that exists — gets its own outcome there. When a statement
/// fails, the transaction is rolled back and the batch runs again one write at a time, each in
/// a savepoint of its own ([`one_by_one_on`]): a write that fails is rolled back to its
/// savepoint alone and answered its error, while the others commit.
async fn write_batch(db: HotDb, jobs: Vec<HotWrite>) -> group_commit::BatchResult<Written> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| jobs[i].record_locked());
    let bulk = match &db {
        HotDb::Sqlite(pool) => bulk_sqlite(pool, &jobs, &order).await,
        HotDb::Postgres(pool) => bulk_postgres(pool, &jobs, &order).await,
    };
    match bulk {
        Ok(results) => return Ok(results),
        Err(Bulk::Transaction(e)) => return Err(e),
        Err(Bulk::Statement(e)) => {
            tracing::debug!(error = %e, jobs = jobs.len(), "a group commit runs again write by write");
        }
    }
    match &db {
        HotDb::Sqlite(pool) => one_by_one_sqlite(pool, &jobs, &order).await,
        HotDb::Postgres(pool) => one_by_one_postgres(pool, &jobs, &order).await,
    }
}

/// The rows of a multi-row `VALUES`: `rows` rows of `width` placeholders each, numbered from
/// `first`; `row(n)` writes one row from its first placeholder's number.
fn values_list(rows: usize, first: usize, width: usize, row: impl Fn(usize) -> String) -> String {
    (0..rows)
        .map(|r| row(first + r * width))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Defines the set-based run of a batch on one backend: the SQL is the same text for both.
///
/// In one transaction: one `INSERT … ON CONFLICT DO NOTHING RETURNING` for every claim (a
/// claim whose row went in is `Started`; any other is decided on its own, as
/// [`Store::claim_idempotency_key_as`] always did: replay, mismatch, in flight or takeover);
/// one `UPDATE … FROM (VALUES …) RETURNING` that stores the answers of the records whose
/// holders still hold their claims; then the students and the attempts of those records, one
/// `INSERT` each. A record whose claim was taken over writes nothing and is answered `false`.
macro_rules! bulk_on {
    ($name:ident, $one:ident, $pool:ty) => {
        async fn $name(
            pool: &$pool,
            jobs: &[HotWrite],
            order: &[usize],
        ) -> Result<Vec<StoreResult<Written>>, Bulk> {
            let mut tx = pool.begin().await.map_err(Bulk::Transaction)?;
            let run = async {
                let now = Utc::now();
                let mut results: Vec<Option<StoreResult<Written>>> = jobs.iter().map(|_| None).collect();
                // Claims.
                let claims: Vec<usize> = order.iter().copied().filter(|&i| matches!(jobs[i], HotWrite::Claim { .. })).collect();
                if !claims.is_empty() {
                    let sql = format!(
                        "INSERT INTO idempotency_keys (caller, key, fingerprint, state, created_at, updated_at, owner) VALUES {} \
                         ON CONFLICT (caller, key) DO NOTHING RETURNING caller, key, owner",
                        values_list(claims.len(), 1, 5, |n| format!("(${n}, ${}, ${}, 'in_flight', ${}, ${}, ${})", n + 1, n + 2, n + 3, n + 3, n + 4)));
                    let mut query = sqlx::query(&sql).persistent(false);
                    for &i in &claims {
                        if let HotWrite::Claim { owner, caller, key, fingerprint, .. } = &jobs[i] {
                            query = query.bind(caller).bind(key).bind(fingerprint).bind(now).bind(owner);
                        }
                    }
                    let inserted: std::collections::HashSet<(String, String, String)> = query
                        .fetch_all(&mut *tx).await?
                        .iter()
                        .map(|r| Ok::<_, sqlx::Error>((r.try_get("caller")?, r.try_get("key")?, r.try_get("owner")?)))
                        .collect::<Result<_, _>>()?;
                    for &i in &claims {
                        let HotWrite::Claim { owner, caller, key, .. } = &jobs[i] else { continue };
                        if inserted.contains(&(caller.clone(), key.clone(), owner.clone())) {
                            results[i] = Some(Ok(Written::Claimed(Claim::Started)));
                        } else {
                            // The key was there already: decided on its own, as always.
                            match $one(&mut *tx, &jobs[i]).await? {
                                Step::Keep(written) | Step::Undo(written) => results[i] = Some(Ok(written)),
                            }
                        }
                    }
                }
                // Records: first the answers, which say whose claims still hold.
                let records: Vec<usize> = order.iter().copied().filter(|&i| matches!(jobs[i], HotWrite::Record { .. })).collect();
                let answered: Vec<(usize, &StoredAnswer)> = records.iter().filter_map(|&i| match &jobs[i] {
                    HotWrite::Record { answer: Some(a), .. } => Some((i, a)),
                    _ => None,
                }).collect();
                let mut held: std::collections::HashSet<(String, String)> = std::collections::HashSet::new();
                if !answered.is_empty() {
                    let sql = format!(
                        "UPDATE idempotency_keys SET state = 'done', status_code = v.column4, response = v.column5, updated_at = $1 \
                         FROM (VALUES {}) AS v \
                         WHERE idempotency_keys.caller = v.column1 AND idempotency_keys.key = v.column2 \
                         AND idempotency_keys.owner = v.column3 AND idempotency_keys.state = 'in_flight' \
                         RETURNING caller, key",
                        values_list(answered.len(), 2, 5, |n| format!("(${n}, ${}, ${}, ${}, ${})", n + 1, n + 2, n + 3, n + 4)));
                    let mut query = sqlx::query(&sql).persistent(false).bind(now);
                    for (_, a) in &answered {
                        query = query.bind(&a.caller).bind(&a.key).bind(&a.owner).bind(i32::from(a.status)).bind(&a.response);
                    }
                    for r in query.fetch_all(&mut *tx).await? {
                        held.insert((r.try_get("caller")?, r.try_get("key")?));
                    }
                }
                let mut attempts: Vec<&NewAttempt> = Vec::new();
                for &i in &records {
                    let HotWrite::Record { attempt, answer } = &jobs[i] else { continue };
                    let holds = answer.as_ref().is_none_or(|a| held.contains(&(a.caller.clone(), a.key.clone())));
                    if holds {
                        attempts.extend(attempt.as_ref());
                    }
                    results[i] = Some(Ok(Written::Recorded(holds)));
                }
                if !attempts.is_empty() {
                    let sql = format!(
                        "INSERT INTO students (id, display_name, origin, created_at) VALUES {} ON CONFLICT (id) DO NOTHING",
                        values_list(attempts.len(), 2, 1, |n| format!("(${n}, NULL, 'grader', $1)")));
                    let mut query = sqlx::query(&sql).persistent(false).bind(now);
                    for a in &attempts {
                        query = query.bind(&a.student);
                    }
                    query.execute(&mut *tx).await?;
                    let sql = format!(
                        "INSERT INTO attempts (id, student, scenario, scenario_hash, design, verdict, score, max_score, passed, created_at, class_id) VALUES {}",
                        values_list(attempts.len(), 1, 11, |n| format!(
                            "(${n}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                            n + 1, n + 2, n + 3, n + 4, n + 5, n + 6, n + 7, n + 8, n + 9, n + 10)));
                    let mut query = sqlx::query(&sql).persistent(false);
                    for a in &attempts {
                        query = query.bind(&a.id).bind(&a.student).bind(&a.scenario).bind(&a.scenario_hash)
                            .bind(SqlJson(&a.design)).bind(SqlJson(&a.verdict))
                            .bind(a.score).bind(a.max_score).bind(a.passed).bind(a.created_at).bind(a.class.as_deref());
                    }
                    query.execute(&mut *tx).await?;
                }
                Ok::<_, sqlx::Error>(results)
            };
            let began = std::time::Instant::now();
            let results = match run.await {
                Ok(results) => results,
                Err(e) => {
                    tx.rollback().await.map_err(Bulk::Transaction)?;
                    return Err(Bulk::Statement(e));
                }
            };
            let written = began.elapsed();
            tx.commit().await.map_err(Bulk::Transaction)?;
            tracing::debug!(jobs = jobs.len(), statements_us = written.as_micros() as u64, commit_us = (began.elapsed() - written).as_micros() as u64, "a group commit committed");
            Ok(results
                .into_iter()
                .map(|r| r.unwrap_or_else(|| Err(mismatched_answer())))
                .collect())
        }
    };
}

/// Defines the run of a batch one write at a time on one backend, each write in a savepoint of
/// its own (see [`write_batch`]).
macro_rules! one_by_one_on {
    ($name:ident, $one:ident, $pool:ty) => {
        async fn $name(
            pool: &$pool,
            jobs: &[HotWrite],
            order: &[usize],
        ) -> group_commit::BatchResult<Written> {
            let mut results: Vec<Option<StoreResult<Written>>> =
                jobs.iter().map(|_| None).collect();
            let mut tx = pool.begin().await?;
            for &i in order {
                let mut savepoint = sqlx::Connection::begin(&mut *tx).await?;
                let result = match $one(&mut savepoint, &jobs[i]).await {
                    Ok(Step::Keep(written)) => {
                        savepoint.commit().await?;
                        Ok(written)
                    }
                    Ok(Step::Undo(written)) => {
                        savepoint.rollback().await?;
                        Ok(written)
                    }
                    Err(e) => {
                        savepoint.rollback().await?;
                        Err(e)
                    }
                };
                results[i] = Some(result);
            }
            tx.commit().await?;
            Ok(results
                .into_iter()
                .map(|r| r.unwrap_or_else(|| Err(mismatched_answer())))
                .collect())
        }
    };
}

/// Defines the function that makes one hot write on a connection of one backend: the SQL is
/// the same text for both, written once here.
macro_rules! hot_write_on {
    ($name:ident, $connection:ty) => {
        async fn $name(conn: &mut $connection, job: &HotWrite) -> StoreResult<Step> {
            match job {
                HotWrite::Claim {
                    owner,
                    caller,
                    key,
                    fingerprint,
                    lease,
                } => {
                    // Bounded: a claim can only disappear between the insert and the read
                    // when its holder abandoned it, which each retry observes.
                    for _ in 0..4 {
                        let now = Utc::now();
                        let inserted = sqlx::query(
                            "INSERT INTO idempotency_keys (caller, key, fingerprint, state, created_at, updated_at, owner) \
                             VALUES ($1, $2, $3, 'in_flight', $4, $4, $5) ON CONFLICT (caller, key) DO NOTHING")
                            .bind(caller).bind(key).bind(fingerprint).bind(now).bind(owner)
                            .execute(&mut *conn).await?.rows_affected();
                        if inserted == 1 {
                            return Ok(Step::Keep(Written::Claimed(Claim::Started)));
                        }
                        let row = sqlx::query("SELECT fingerprint, state, status_code, response, updated_at FROM idempotency_keys WHERE caller = $1 AND key = $2")
                            .bind(caller).bind(key).fetch_optional(&mut *conn).await?;
                        let Some(row) = row else {
                            continue;
                        };
                        let stored = StoredKey {
                            fingerprint: row.try_get("fingerprint")?,
                            state: row.try_get("state")?,
                            status: row.try_get("status_code")?,
                            response: row.try_get("response")?,
                            renewed_at: row.try_get("updated_at")?,
                        };
                        if stored.fingerprint != *fingerprint {
                            return Ok(Step::Keep(Written::Claimed(Claim::Mismatch)));
                        }
                        if let Some(replay) = stored.replay()? {
                            return Ok(Step::Keep(Written::Claimed(replay)));
                        }
                        let age = now.signed_duration_since(stored.renewed_at).to_std().unwrap_or_default();
                        if age < *lease {
                            return Ok(Step::Keep(Written::Claimed(Claim::InFlight)));
                        }
                        let taken = sqlx::query(
                            "UPDATE idempotency_keys SET fingerprint = $4, updated_at = $5, owner = $6 \
                             WHERE caller = $1 AND key = $2 AND state = 'in_flight' AND updated_at = $3")
                            .bind(caller).bind(key).bind(stored.renewed_at).bind(fingerprint).bind(now).bind(owner)
                            .execute(&mut *conn).await?.rows_affected();
                        if taken == 1 {
                            tracing::warn!(
                                caller = caller.as_str(),
                                key = key.as_str(),
                                "took over an idempotency key whose holder stopped renewing it"
                            );
                            return Ok(Step::Keep(Written::Claimed(Claim::Started)));
                        }
                    }
                    Ok(Step::Keep(Written::Claimed(Claim::InFlight)))
                }
                HotWrite::Record { attempt, answer } => {
                    let now = Utc::now();
                    if let Some(ans) = answer {
                        let held = sqlx::query(
                            "UPDATE idempotency_keys SET state = 'done', status_code = $3, response = $4, updated_at = $5 \
                             WHERE caller = $1 AND key = $2 AND owner = $6 AND state = 'in_flight'")
                            .bind(&ans.caller).bind(&ans.key).bind(i32::from(ans.status)).bind(&ans.response).bind(now).bind(&ans.owner)
                            .execute(&mut *conn).await?.rows_affected();
                        if held != 1 {
                            return Ok(Step::Undo(Written::Recorded(false)));
                        }
                    }
                    if let Some(a) = attempt {
                        sqlx::query("INSERT INTO students (id, display_name, origin, created_at) VALUES ($1, NULL, 'grader', $2) ON CONFLICT (id) DO NOTHING")
                            .bind(&a.student).bind(now).execute(&mut *conn).await?;
                        sqlx::query(
                            "INSERT INTO attempts (id, student, scenario, scenario_hash, design, verdict, score, max_score, passed, created_at, class_id) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)")
                            .bind(&a.id).bind(&a.student).bind(&a.scenario).bind(&a.scenario_hash)
                            .bind(SqlJson(&a.design)).bind(SqlJson(&a.verdict))
                            .bind(a.score).bind(a.max_score).bind(a.passed).bind(a.created_at).bind(a.class.as_deref())
                            .execute(&mut *conn).await?;
                    }
                    Ok(Step::Keep(Written::Recorded(true)))
                }
            }
        }
    };
}

hot_write_on!(write_sqlite, sqlx::SqliteConnection);
hot_write_on!(write_postgres, sqlx::PgConnection);
bulk_on!(bulk_sqlite, write_sqlite, SqlitePool);
bulk_on!(bulk_postgres, write_postgres, PgPool);
one_by_one_on!(one_by_one_sqlite, write_sqlite, SqlitePool);
one_by_one_on!(one_by_one_postgres, write_postgres, PgPool);
