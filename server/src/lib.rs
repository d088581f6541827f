//! Pipeline Builder's server: the REST API that the canvas and graders share, persistence
//! in SQLite or PostgreSQL, grading, and the `pipeline-builder` command line.
//!
//! The server never decides a verdict itself: every verdict comes from `shared`'s check, run
//! by [`checker`] on the request's thread when it is small and on the blocking pool when it
//! is not. It must never answer a client's mistake with a 5xx or a panic.
//!
//! - [`api`]: the documented routes, each registered once for the router and the document.
//! - [`app`]: the router with its tower-http layers, serving and shutdown.
//! - [`state`]: what requests share, handed out part by part through axum's `FromRef`.
//! - [`config`]: the limits the server starts with, and their defaults.
//! - [`routes`]: the handlers, one module per resource.
//! - [`checker`]: where and when a check runs, and its verdict cache ([`verdicts`]).
//! - [`error`]: the error codes and the one error shape of every answer.
//! - [`openapi`]: the OpenAPI document, from the handlers and the types themselves.
//! - [`auth`]: student sessions (a cookie) and grader tokens.
//! - [`store`]: the database, one type over a SQLite and a PostgreSQL pool.
//! - [`group_commit`]: the writer task that commits a store's hot writes in batches.
//! - [`catalogue`]: loading and validating the scenario files; [`watch`]: the catalogue being
//!   served, and `serve --watch`, which replaces it when the files change.
//! - [`report`]: verdicts in words, in Gradescope's shape and as CSV rows.
//! - [`autograde`]: `pipeline-builder autograde`, Gradescope's autograder contract, offline.
//! - [`limit`]: per-client rate limits; [`share`]: what one address's checks may take of the
//!   cores; [`headers`]: the security headers of every answer.
//! - [`load`]: the load generator behind `pipeline-builder load`.
//! - [`bounds`]: how much of a client's input answers repeat and the store keeps.
//! - [`lti`]: LTI 1.3 launches from a learning platform: login, launch, the tool's keys.
//! - [`sweep`]: removing expired idempotency records and sessions with no work.
//! - [`dashboard`]: a class's matrix, most-missed requirements and a student's attempts.
//! - [`regrade`]: checking stored attempts again against a changed scenario.
//! - [`progress`]: a progress bar on the terminal for long commands.

pub mod api;
pub mod app;
pub mod auth;
pub mod autograde;
pub mod bounds;
pub mod catalogue;
pub mod checker;
pub mod cli;
pub mod config;
pub mod dashboard;
pub mod design_file;
pub mod embedded;
pub mod error;
pub mod gradebook;
pub mod group_commit;
pub mod headers;
pub mod idempotency;
pub mod limit;
pub mod load;
pub mod lti;
pub mod metrics;
pub mod net;
pub mod openapi;
pub mod progress;
pub mod regrade;
pub mod report;
pub mod routes;
pub mod share;
pub mod state;
pub mod store;
pub mod sweep;
pub mod tables;
pub mod verdicts;
pub mod watch;

pub use app::router;
pub use catalogue::Catalogue;
pub use config::Config;
pub use state::AppState;
pub use store::Store;
