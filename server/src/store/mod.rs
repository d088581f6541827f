//! Persistence: students, drafts, attempts, grader tokens, idempotency records, classes and
//! their members, staff accounts and their roles, the audit log, and regraded verdicts.
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

mod attempts;
mod backups;
mod classes;
mod db;
mod deadlines;
mod drafts;
mod errors;
mod hot;
mod idempotency;
mod overrides;
mod regrades;
mod staff;
pub(crate) mod stored_verdict;
mod students;
mod sweeps;
mod tokens;
mod writes;

pub use attempts::*;
pub use backups::*;
pub use classes::*;
pub use db::*;
pub use deadlines::*;
pub use drafts::*;
pub use errors::*;
pub use hot::*;
pub use idempotency::*;
pub use overrides::*;
pub use regrades::*;
pub use staff::*;
pub use students::*;
pub use tokens::*;
