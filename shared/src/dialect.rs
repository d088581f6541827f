//! The SQL dialects the crate renders.
//!
//! It sits below both the value module (a value renders itself as a literal of a dialect) and
//! the SQL module (which renders whole statements), so that the lower of the two never has to
//! reach into the higher. The SQL module re-exports it as `sql::Dialect`, its public name.

/// Which SQL to render.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// PostgreSQL as a student reads it: a job that asks the clock shows `CURRENT_DATE - 1`.
    #[default]
    Display,
    /// PostgreSQL to execute: the day the clock gave is a literal.
    Postgres,
    /// SQLite to execute: ISO text for dates, and `INSERT … ON CONFLICT DO UPDATE` for `MERGE`.
    Sqlite,
}

impl Dialect {
    /// The dialect of a literal: a literal is always executable SQL, so the display dialect
    /// renders it as PostgreSQL does.
    pub(crate) fn lit(self) -> Dialect {
        if self == Dialect::Display {
            Dialect::Postgres
        } else {
            self
        }
    }
}
