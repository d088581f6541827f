//! Answers as CSV, for a gradebook: the rows of graded items and recorded attempts, and the
//! one answer that carries every CSV export (`/api/grade`, `/api/submissions`, a class's
//! matrix and attempts). Every field goes through `crate::report::csv_field`, which writes a
//! field that starts like a formula as text.

use axum::http::header;
use axum::response::{IntoResponse, Response};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::report::{self, CsvRow};
use crate::store::Attempt;

/// The header and an example row of the CSV answers, for the OpenAPI document.
pub const CSV_EXAMPLE: &str = "student,display_name,scenario,score,max_score,passed,missed,submission_id,submitted_at,error,note\r\n\
    bob,Bob B.,safe-retry,0,3,false,revenue-correct;orders-unique;one-revenue-row-per-day,7a187f72-645a-42ca-b2a7-4025696955c9,2026-01-12T09:30:00.000Z,,\r\n\
    dee,,safe-retry,0,3,false,,,,\"not graded: the design is invalid: $.design.nodes[0].kind: unknown node kind \"\"bogus\"\"\",\r\n";

/// What the `bom` query parameter of every CSV answer says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bom {
    /// The text starts with U+FEFF, which tells Excel that the file is UTF-8, so that accents
    /// and other non-ASCII letters in names open intact.
    Start,
    /// Plain UTF-8, as RFC 4180 has it (the default).
    None,
}

impl Bom {
    /// `?bom=true` asks for one.
    pub fn asked(bom: Option<bool>) -> Bom {
        if bom == Some(true) {
            Bom::Start
        } else {
            Bom::None
        }
    }
}

/// The description of the `bom` parameter, the same on every CSV export.
pub const BOM_DESCRIPTION: &str =
    "With `format=csv`: `true` starts the file with a UTF-8 byte order mark \
    (U+FEFF), so that Excel opens accents intact; `false` (the default) leaves it out.";

/// A CSV answer of `text`, with a byte order mark when asked for.
pub fn csv_answer(text: String, bom: Bom) -> Response {
    let text = match bom {
        Bom::Start => format!("\u{feff}{text}"),
        Bom::None => text,
    };
    ([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], text).into_response()
}

/// A CSV answer of grading rows.
pub fn csv_response(rows: &[CsvRow], bom: Bom) -> Response {
    csv_answer(report::csv(rows), bom)
}

/// The CSV row of a recorded attempt, its student named `display_name`.
pub fn csv_row(attempt: &Attempt, display_name: String) -> CsvRow {
    CsvRow {
        student: attempt.student.clone(),
        display_name,
        scenario: attempt.scenario.clone(),
        score: Some(u32::try_from(attempt.score).unwrap_or(0)),
        max_score: Some(u32::try_from(attempt.max_score).unwrap_or(0)),
        passed: attempt.passed,
        missed: CsvRow::missed_of(&attempt.verdict),
        submission_id: attempt.id.clone(),
        submitted_at: super::time(attempt.created_at),
        ..CsvRow::default()
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
