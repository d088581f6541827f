//! Pipeline Builder's domain model and exhaustive failure simulator.
//!
//! This crate is pure: no IO, no clock, no randomness, no axum, sqlx or web-sys. It compiles
//! for the server and for `wasm32-unknown-unknown`, so the browser runs the same engine as the
//! server. Every iteration order is deterministic, so the same design and scenario always give
//! the same verdict, byte for byte.
//!
//! The modules are listed from the bottom up: each one uses only modules above it, so the
//! crate has no circle of imports.
//!
//! - [`verdict`]: the verdict of a check, plain data that graders, the canvas and the CLI read.
//! - `dialect`: the SQL dialects, public as [`sql::Dialect`].
//! - [`value`]: typed values, their SQL comparison and literals, and the simulated clock's
//!   time format.
//! - `fingerprint`: 128-bit fingerprints of tables and simulator states, for the search.
//! - [`warehouse`]: the simulated database: tables, transactions and the SQL writes.
//! - [`diff`]: the rows a table should hold beside the rows it holds, for a counterexample.
//! - [`scenario`]: the scenario file format that course authors write.
//! - [`compiled`]: a scenario checked and compiled once, which everything below reads.
//! - [`design`]: the graph a student draws, and its validation against a scenario.
//! - [`words`]: the labels of kinds, options and values, in the chapter's words, for every
//!   place that shows them.
//! - `model`: a compiled scenario and a design put together into what the simulator runs.
//! - [`sql`]: the SQL a design amounts to, for the trace and the canvas.
//! - `run`: the run of one failure schedule on a compiled model, with its trace.
//! - `notes`: the sentences of the untested options, in the chapter's words.
//! - [`coverage`]: what a scenario puts to the test in a design, and what the design would
//!   miss under the chapter's other failures; the check hands it the search to run.
//! - [`check`]: the exhaustive check over every schedule, which answers with a
//!   [`verdict::Verdict`].
//! - [`solve`]: every design a scenario's palette allows, each checked, and what that says
//!   about the scenario as a lesson.
//! - [`verdict_table`]: the verdict of every design a scenario allows, computed once, so that
//!   a check of one of them is a lookup.
//! - [`authoring`]: the checks on scenario files for course authors.
//! - [`wire`]: the JSON the server answers and the browser sends, stated once for both.

// The blank lines between the declarations keep rustfmt from sorting them by name, so that
// they stay in the order of the layers above.
pub mod verdict;

mod dialect;
pub mod value;

mod fingerprint;
pub mod warehouse;

pub mod diff;

pub mod scenario;

pub mod compiled;

pub mod design;

pub mod words;

mod model;

pub mod sql;

mod run;

mod notes;

pub mod coverage;

pub mod check;

pub mod solve;

pub mod verdict_table;

pub mod authoring;

pub mod wire;

pub use check::{check, check_json, check_with, scenario_hash, CheckError, Limits};
pub use compiled::{Compiled, ScenarioError};
pub use design::{validate, validate_json, Design, DesignError, DesignErrorCode, ValidDesign};
pub use notes::{lesson_of, untested_line, Lesson, LESSONS};
pub use scenario::Scenario;
pub use verdict::Verdict;

impl Scenario {
    /// Parses a scenario file's text.
    pub fn from_json(text: &str) -> Result<Scenario, serde_json::Error> {
        serde_json::from_str(text)
    }
}
