//! The connection to either database, the one type behind both, and the errors of reading
//! what they hold.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::store::errors::StoreResult;
use crate::store::hot::{HotDb, HotWrites};

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

/// Runs the same body against whichever pool the store has: reads on the store itself,
/// writes on its [`Writer`] (`with_pool!(writer, |pool| …)`).
macro_rules! with_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match ($store).pools() {
            $crate::store::PoolRef::Sqlite($pool) => $body,
            $crate::store::PoolRef::Postgres($pool) => $body,
        }
    };
}
/// For the stores of other modules (`crate::lti::store`).
pub(crate) use with_pool;

/// Whichever pool a store has.
pub(crate) enum PoolRef<'a> {
    Sqlite(&'a SqlitePool),
    Postgres(&'a PgPool),
}

/// A write on the store, had only from [`Store::writer`]: on SQLite it holds the write turn
/// for as long as it lives, and the store's writes take their pool from it
/// (`with_pool!(writer, |pool| …)`), not from the store.
pub(crate) struct Writer<'a> {
    store: &'a Store,
    _turn: Option<SemaphorePermit<'a>>,
}

impl Writer<'_> {
    /// The pool to write to, while the turn is held.
    pub(crate) fn pools(&self) -> PoolRef<'_> {
        self.store.pools()
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

    /// The handle a write runs through: on SQLite it waits for the write turn and keeps it
    /// while it lives (a transaction included), so writers take turns at the gate.
    pub(crate) async fn writer(&self) -> Writer<'_> {
        let turn = match self {
            // The gate is never closed, so `acquire` cannot fail.
            Store::Sqlite(_, gate, _) => gate.acquire().await.ok(),
            Store::Postgres(..) => None,
        };
        Writer {
            store: self,
            _turn: turn,
        }
    }

    /// The pool, for a read (a write takes it from its [`Writer`]).
    pub(crate) fn pools(&self) -> PoolRef<'_> {
        match self {
            Store::Sqlite(pool, ..) => PoolRef::Sqlite(pool),
            Store::Postgres(pool, ..) => PoolRef::Postgres(pool),
        }
    }

    /// Succeeds when the database answers.
    pub async fn ping(&self) -> StoreResult<()> {
        with_pool!(self, |pool| sqlx::query("SELECT 1")
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// Closes every connection; later queries fail. Tests use it to break the database.
    pub async fn close(&self) {
        with_pool!(self, |pool| pool.close().await)
    }
}
