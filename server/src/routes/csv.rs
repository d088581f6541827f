//! Answers as CSV, for a gradebook: the rows of graded items and recorded attempts, and the
//! answer that carries them. Both `/api/grade` and `/api/submissions` answer in it.

use axum::http::header;
use axum::response::{IntoResponse, Response};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::report::{self, CsvRow};
use crate::store::Attempt;

/// The header and an example row of the CSV answers, for the OpenAPI document.
pub const CSV_EXAMPLE: &str = "student,scenario,score,max_score,passed,missed,submission_id,submitted_at,error\r\n\
    bob,safe-retry,0,3,false,revenue-correct;orders-unique;one-revenue-row-per-day,7a187f72-645a-42ca-b2a7-4025696955c9,2026-01-12T09:30:00.000Z,\r\n\
    dee,safe-retry,0,3,false,revenue-correct;orders-unique;one-revenue-row-per-day,,,\"not graded: the design is invalid: $.design.nodes[0].kind: unknown node kind \"\"bogus\"\"\"\r\n";

/// A CSV answer.
pub fn csv_response(rows: &[CsvRow]) -> Response {
    (
        [(header::CONTENT_TYPE, "text/csv; charset=utf-8")],
        report::csv(rows),
    )
        .into_response()
}

/// The CSV row of a recorded attempt.
pub fn csv_row(attempt: &Attempt) -> CsvRow {
    CsvRow {
        student: attempt.student.clone(),
        scenario: attempt.scenario.clone(),
        score: Some(u32::try_from(attempt.score).unwrap_or(0)),
        max_score: Some(u32::try_from(attempt.max_score).unwrap_or(0)),
        passed: attempt.passed,
        missed: CsvRow::missed_of(&attempt.verdict),
        submission_id: attempt.id.clone(),
        submitted_at: super::time(attempt.created_at),
        error: String::new(),
    }
}

/// What the lists that offer CSV answer with (`GET /api/submissions`, a class's matrix and
/// attempts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListFormat {
    Json,
    /// `text/csv; charset=utf-8`.
    Csv,
}
