//! A consistent copy of a SQLite database while the server runs.

use std::path::Path;

use crate::store::db::Store;

impl Store {
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
