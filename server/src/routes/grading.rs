//! `/api/grade`: a whole class at once, for graders. Each item is checked and recorded on its
//! own; a bad item gets its own error entry and never fails the batch.
//!
//! The answer's shapes below (`GradeEntry` and Gradescope's `results.json`) are the server's
//! own; `crate::report` builds the Gradescope one.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use shared::Verdict;
use utoipa::{IntoParams, ToSchema};

use super::scenario_entry;
use super::submissions::{check_attempt, submission_body, valid_student_id, Submission};
use crate::auth::Grader;
use crate::catalogue::Catalogue;
use crate::checker::Checker;
use crate::config::Config;
use crate::error::{from_value, AppError, ErrorBody, ErrorDetail, JsonBody};
use crate::report::{self, CsvRow, NotGraded};
use crate::store::{Attempt, Store};

/// One item of a grading batch.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GradeItem {
    pub scenario: String,
    pub student: String,
    /// The design, in the format docs/design-format.md describes.
    #[schema(value_type = shared::Design)]
    pub design: Value,
}

/// What `/api/grade` answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum GradeFormat {
    /// One JSON entry per item: the recorded submission, or `{"index", "student", "error"}`.
    Json,
    /// One Gradescope `results.json` per item, an item that could not be graded included.
    Gradescope,
    /// A CSV table, one row per item (`text/csv`).
    Csv,
}

impl GradeFormat {
    /// The `format` query parameter; `verdict`, the old name of `json`, is still read.
    fn parse(format: Option<&str>) -> Result<GradeFormat, AppError> {
        match format {
            None | Some("json") | Some("verdict") => Ok(GradeFormat::Json),
            Some("gradescope") => Ok(GradeFormat::Gradescope),
            Some("csv") => Ok(GradeFormat::Csv),
            Some(other) => Err(AppError::invalid_request(format!(
                "unknown format \"{}\"; use json (the default), gradescope or csv",
                other.escape_default()
            ))
            .at("?format")),
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GradeQuery {
    /// `json` (the default), `gradescope` (each result in Gradescope's `results.json` shape)
    /// or `csv` (one row per item). Another value → 422 `invalid_request` at `?format`.
    #[param(value_type = Option<GradeFormat>)]
    pub format: Option<String>,
}

/// One result of a grading batch: the recorded submission and its index in the batch, or
/// `{"index", "student", "error"}` for an item that could not be graded.
#[derive(Serialize, ToSchema)]
pub struct GradeResult {
    pub index: usize,
    #[serde(flatten)]
    pub submission: Submission,
}

#[utoipa::path(post, path = "/api/grade", tag = "grading",
    description = "Grades a whole class: checks and records every item, and answers one result per item, in order. \
        A bad item never fails the batch: with `format=json` (the default) it gets its own `{\"index\", \"student\", \"error\"}` entry, \
        whose paths start at the batch (`$[4].design.nodes[0].kind`). \
        With `?format=gradescope` every result is Gradescope's `results.json` shape (`autograder/results.schema.json`): one test per requirement \
        (`name`, `score` and `max_score` in the requirement's points, `status`, `output` in Markdown with the counterexample, `output_format: \"md\"`), \
        with the submission in `extra_data`; an item that could not be graded gets score 0, the reason with its paths (starting at the item) \
        in `output`, every requirement as a failed test, and `index`, `student` and `error` in `extra_data`. \
        With `?format=csv` the answer is `text/csv; charset=utf-8` (RFC 4180, CRLF line ends): a header, then one row per item with \
        `student`, `scenario`, `score`, `max_score`, `passed`, `missed` (requirement ids, `;`-separated), `submission_id`, `submitted_at` \
        (both empty for an item that was not recorded) and `error` (why an item was not graded). \
        Gradescope's own autograder runs offline instead: `pipeline-builder autograde` (docs/gradescope.md), not this route.",
    params(GradeQuery),
    request_body(content = Vec<Value>, description = "An array of items, each meant to be a `GradeItem` (`scenario`, `student`, `design`). \
        The server takes any array: an item that is not a `GradeItem` is not refused with the batch, it gets its own error entry."),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, description = "One result per item, in order", content(
            ([GradeEntry] = "application/json"),
            (String = "text/csv", example = json!(super::csv::CSV_EXAMPLE)))),
        (status = 400, description = "malformed_json", body = ErrorBody),
        (status = 401, description = "unauthorized: no token, or a bad or revoked one", body = ErrorBody),
        (status = 403, description = "cross_site_request: another site sent it (with the grader cookie)", body = ErrorBody),
        (status = 413, description = "body_too_large", body = ErrorBody),
        (status = 415, description = "unsupported_media_type: with the grader cookie, a body that is not application/json", body = ErrorBody),
        (status = 422, description = "invalid_request: not an array, too many items, or a `format` other than json, gradescope or csv (path `?format`)", body = ErrorBody)))]
pub async fn grade(
    State(catalogue): State<Arc<Catalogue>>,
    State(checker): State<Checker>,
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    grader: Grader,
    Query(query): Query<GradeQuery>,
    JsonBody(items): JsonBody<Value>,
) -> Result<Response, AppError> {
    let format = GradeFormat::parse(query.format.as_deref())?;
    let Value::Array(items) = items else {
        return Err(AppError::invalid_request(
            "the body must be a JSON array of {\"scenario\", \"student\", \"design\"}",
        )
        .at("$"));
    };
    let max = config.grade_items_max;
    if items.len() > max {
        return Err(AppError::invalid_request(format!(
            "at most {max} items per call; this one has {}",
            items.len()
        ))
        .at("$"));
    }
    tracing::info!(grader = %grader.name, items = items.len(), ?format, "grading a batch");
    let mut results = Vec::with_capacity(items.len());
    let mut rows = Vec::new();
    for (index, item) in items.into_iter().enumerate() {
        // Who and what the item names, even when it is not a valid item, so that every
        // student gets a result.
        let named = |key: &str| item.get(key).and_then(Value::as_str).map(str::to_string);
        let (student, scenario) = (named("student"), named("scenario"));
        let entry = scenario.as_deref().and_then(|id| catalogue.get(id));
        let graded = grade_one(&catalogue, &checker, &store, item).await;
        match format {
            GradeFormat::Json => results.push(match graded {
                Ok(attempt) => serde_json::to_value(GradeResult {
                    index,
                    submission: submission_body(&attempt, false),
                })
                .map_err(AppError::internal)?,
                Err(error) => {
                    // Paths name the place in the whole batch, not in the item.
                    let mut body = error.under(&format!("$[{index}]")).body();
                    if let Value::Object(map) = &mut body {
                        map.insert("index".into(), json!(index));
                        map.insert("student".into(), json!(student));
                    }
                    body
                }
            }),
            GradeFormat::Gradescope => results.push(match graded {
                Ok(attempt) => gradescope_result(&catalogue, &attempt, index)?,
                Err(error) => {
                    let mut extra = json!({
                        "index": index,
                        "student": student,
                        "scenario": scenario,
                        "schedules_explored": 0,
                        "error": error.body()["error"],
                    });
                    if let Some(e) = &entry {
                        extra["scenario_hash"] = json!(e.hash);
                    }
                    report::gradescope_not_graded(
                        entry.as_deref().map(|e| &e.scenario),
                        &NotGraded::from_error(&error),
                        extra,
                    )
                }
            }),
            GradeFormat::Csv => rows.push(match graded {
                Ok(attempt) => super::csv::csv_row(&attempt),
                Err(error) => CsvRow {
                    student: student.unwrap_or_default(),
                    scenario: scenario.unwrap_or_default(),
                    score: Some(0),
                    max_score: entry
                        .as_deref()
                        .map(|e| e.scenario.requirements.iter().map(|r| r.points).sum()),
                    passed: false,
                    missed: entry
                        .as_deref()
                        .map(|e| {
                            e.scenario
                                .requirements
                                .iter()
                                .map(|r| r.id.clone())
                                .collect()
                        })
                        .unwrap_or_default(),
                    error: NotGraded::from_error(&error).text(),
                    ..CsvRow::default()
                },
            }),
        }
    }
    if format == GradeFormat::Csv {
        return Ok(super::csv::csv_response(&rows));
    }
    Ok(Json(results).into_response())
}

/// Grades and records one item; any failure is this item's alone.
async fn grade_one(
    catalogue: &Catalogue,
    checker: &Checker,
    store: &Store,
    item: Value,
) -> Result<Attempt, AppError> {
    let item: GradeItem = from_value(item)?;
    valid_student_id(&item.student)?;
    let attempt = check_attempt(
        catalogue,
        checker,
        &item.scenario,
        item.student,
        item.design,
    )
    .await?;
    store.record(Some(&attempt), None).await?;
    Ok(attempt)
}

/// A recorded attempt in Gradescope's `results.json` shape.
fn gradescope_result(
    catalogue: &Catalogue,
    attempt: &Attempt,
    index: usize,
) -> Result<Value, AppError> {
    let entry = scenario_entry(catalogue, &attempt.scenario)?;
    let verdict: Verdict =
        serde_json::from_value(attempt.verdict.clone()).map_err(AppError::internal)?;
    let extra = json!({
        "index": index,
        "submission_id": attempt.id,
        "student": attempt.student,
        "scenario": attempt.scenario,
        "scenario_hash": attempt.scenario_hash,
        "schedules_explored": verdict.schedules_explored,
    });
    Ok(report::gradescope(&entry.scenario, &verdict, extra))
}

/// One entry of a grading batch's answer. This and the types below only describe the answer
/// in the OpenAPI document: `grade` builds it as JSON (with `crate::report` for Gradescope's
/// shape), and a test validates real batches against this description.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum GradeEntry {
    /// Without `format`: the recorded submission.
    Graded(GradeResult),
    /// With `format=gradescope`: Gradescope's `results.json`, for every item.
    Gradescope(GradescopeResult),
    /// Without `format`: an item that could not be graded.
    Failed(GradeError),
}

/// An item of a batch that could not be graded; the batch goes on.
#[derive(Serialize, ToSchema)]
pub struct GradeError {
    pub index: usize,
    /// The student the item names, or null when it names none.
    pub student: Option<String>,
    /// Paths start at the batch: `$[3].design.nodes[0].kind`.
    pub error: ErrorDetail,
}

/// Gradescope's `results.json` (`autograder/results.schema.json` in the repository): one
/// test per requirement, worth the requirement's points.
#[derive(Serialize, ToSchema)]
pub struct GradescopeResult {
    /// The points of the requirements passed; 0 for an item that could not be graded.
    pub score: u32,
    /// A Markdown summary; for an item that could not be graded, why, with each problem's
    /// JSON path in the item.
    pub output: String,
    #[schema(example = "md")]
    pub output_format: String,
    pub tests: Vec<GradescopeTest>,
    /// `index`, `student`, `scenario`, `scenario_hash`, `schedules_explored`, `max_score` (the
    /// points of all the requirements) and, for a graded item, `submission_id`; for an item
    /// that could not be graded, `error` (the error the JSON format answers for it).
    #[schema(value_type = Object)]
    pub extra_data: serde_json::Value,
}

#[derive(Serialize, ToSchema)]
pub struct GradescopeTest {
    /// `<requirement id>: <requirement text>`
    pub name: String,
    pub number: String,
    /// The requirement's points when it passed, else 0.
    pub score: u32,
    /// The requirement's points (1 unless the scenario says otherwise).
    pub max_score: u32,
    /// `passed` or `failed`.
    pub status: String,
    /// Markdown: the failures, expected against actual, the trace and a hint.
    pub output: String,
    #[schema(example = "md")]
    pub output_format: String,
}
