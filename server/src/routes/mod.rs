//! The handlers of the REST API, one module per resource. They are thin: they parse at the
//! edge, call the simulator (through [`crate::checker`]) or the store, and shape the answer.
//!
//! Each handler takes only the parts of the state it uses (`State<Store>`,
//! `State<Arc<Catalogue>>`, `State<Checker>`, …), so no handler depends on the whole app;
//! [`crate::app`] mounts them on the router.

use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value as Json;

use crate::catalogue::{Catalogue, Entry};
use crate::error::AppError;

pub mod author;
pub mod classes;
pub mod csv;
pub mod dashboard;
pub mod deadlines;
pub mod drafts;
pub mod gradebook;
pub mod grading;
pub mod instructor;
pub mod joining;
pub mod members;
pub mod operations;
pub mod regrading;
pub mod scenarios;
pub mod session;
pub mod staff;
pub mod submissions;

/// A moment as the API writes it: RFC 3339 in UTC, to the millisecond.
fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A count the database keeps as `i32`; a negative one, which the store never writes, reads
/// as 0 rather than failing the answer.
fn count(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

/// True when some string or key of `value` holds the NUL character. PostgreSQL cannot store
/// it in text or JSONB, so it is refused at the edge instead of becoming a database error.
/// The recursion is bounded by serde_json's nesting limit of 128.
fn has_nul(value: &Json) -> bool {
    match value {
        Json::String(s) => s.contains('\0'),
        Json::Array(items) => items.iter().any(has_nul),
        Json::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
}

fn refuse_nul(value: &Json, path: &str) -> Result<(), AppError> {
    if has_nul(value) {
        return Err(AppError::invalid_request(
            "text in the body may not contain the NUL character (\\u0000)",
        )
        .at(path));
    }
    Ok(())
}

/// The scenario `id` of the catalogue, or `unknown_scenario`.
fn scenario_entry(catalogue: &Catalogue, id: &str) -> Result<Arc<Entry>, AppError> {
    catalogue
        .get(id)
        .ok_or_else(|| AppError::unknown_scenario(id))
}
