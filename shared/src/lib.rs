//! Pipeline Builder's domain model and exhaustive failure simulator.
//!
//! This crate is pure: no IO, no clock, no randomness, no axum, sqlx or web-sys. It compiles
//! for the server and for `wasm32-unknown-unknown`, so the browser runs the same engine as the
//! server. Every iteration order is deterministic, so the same design and scenario always give
//! the same verdict, byte for byte.
//!
//! - [`scenario`]: the scenario file format that course authors write.
//! - [`design`]: the graph a student draws, and its validation against a scenario.
//! - [`check`]: the exhaustive check that answers with a [`verdict::Verdict`].
//! - [`sql`]: the SQL a design amounts to.

pub mod authoring;
pub mod check;
pub mod design;
mod dialect;
mod fingerprint;
mod model;
mod run;
pub mod scenario;
pub mod sql;
pub mod value;
pub mod verdict;
pub mod warehouse;

pub use check::{check, check_json, check_with, scenario_hash, CheckError, Limits};
pub use design::{validate, validate_json, Design, DesignError, DesignErrorCode, ValidDesign};
pub use scenario::Scenario;
pub use verdict::Verdict;

impl Scenario {
    /// Parses a scenario file's text.
    pub fn from_json(text: &str) -> Result<Scenario, serde_json::Error> {
        serde_json::from_str(text)
    }
}
