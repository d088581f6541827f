//! Pipeline Builder's server: the REST API that the canvas and graders share, persistence
//! in SQLite or PostgreSQL, grading, and the `pipeline-builder` command line.
//!
//! The server never decides a verdict itself: every check is `shared::check_json`, run off
//! the async threads. It must never answer a client's mistake with a 5xx or a panic.
//!
//! - [`app`]: the state, the router with its tower-http layers, serving and shutdown.
//! - [`api`]: the handlers, grouped by resource.
//! - [`auth`]: student sessions (a cookie) and grader tokens.
//! - [`store`]: the database, one type over a SQLite and a PostgreSQL pool.
//! - [`catalogue`]: loading and validating the scenario files.
//! - [`report`]: verdicts in words and in Gradescope's shape.
//! - [`limit`]: per-client rate limits; [`headers`]: the security headers of every answer.
//! - [`load`]: the load generator behind `pipeline-builder load`.

pub mod api;
pub mod app;
pub mod auth;
pub mod catalogue;
pub mod error;
pub mod headers;
pub mod limit;
pub mod load;
pub mod metrics;
pub mod openapi;
pub mod report;
pub mod store;
pub mod verdicts;

pub use app::{router, AppState, Config};
pub use catalogue::Catalogue;
pub use store::Store;
