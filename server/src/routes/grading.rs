//! `/api/grade`: a whole class at once, for graders. Each item is checked and recorded on its
//! own; a bad item gets its own error entry and never fails the batch.
//!
//! The answer's shapes below (`GradeEntry` and Gradescope's `results.json`) are the server's
//! own; `crate::report` builds the Gradescope one.

use std::sync::Arc;

use axum::extract::{Query, State};
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
use crate::report;
use crate::store::Store;

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

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GradeQuery {
    /// `gradescope` answers each result in Gradescope's `results.json` shape.
    pub format: Option<String>,
}

/// One result of a grading batch: the recorded submission and its index in the batch, or
/// `{"index", "error"}` for an item that could not be graded.
#[derive(Serialize, ToSchema)]
pub struct GradeResult {
    pub index: usize,
    #[serde(flatten)]
    pub submission: Submission,
}

#[utoipa::path(post, path = "/api/grade", tag = "grading",
    description = "Grades a whole class: checks and records every item, and answers one result per item, in order. \
        A bad item gets its own `{\"index\", \"error\"}` entry and never fails the batch. \
        With `?format=gradescope` each result is Gradescope's `results.json` shape: one test per requirement \
        (`name`, `score`, `max_score`, `status`, `output` in Markdown with the counterexample, `output_format: \"md\"`), \
        with the submission in `extra_data`.",
    params(GradeQuery),
    request_body = [GradeItem],
    security(("grader_token" = [])),
    responses((status = 200, description = "One result per item, in order", body = [GradeEntry]),
        (status = 400, description = "malformed_json", body = ErrorBody),
        (status = 401, description = "unauthorized: no token, or a bad or revoked one", body = ErrorBody),
        (status = 413, description = "body_too_large", body = ErrorBody),
        (status = 422, description = "invalid_request: not an array, too many items or an unknown format", body = ErrorBody)))]
pub async fn grade(
    State(catalogue): State<Arc<Catalogue>>,
    State(checker): State<Checker>,
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    grader: Grader,
    Query(query): Query<GradeQuery>,
    JsonBody(items): JsonBody<Value>,
) -> Result<Json<Vec<Value>>, AppError> {
    let gradescope = match query.format.as_deref() {
        None | Some("verdict") => false,
        Some("gradescope") => true,
        Some(other) => {
            return Err(AppError::invalid_request(format!(
                "unknown format \"{other}\"; use format=gradescope or leave it out"
            )))
        }
    };
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
    tracing::info!(grader = %grader.name, items = items.len(), gradescope, "grading a batch");
    let mut results = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let result = grade_one(&catalogue, &checker, &store, item, index, gradescope).await;
        results.push(match result {
            Ok(graded) => graded,
            Err(mut error) => {
                // Paths name the place in the whole batch, not in the item.
                let prefix = format!("$[{index}]");
                if let Some(path) = &error.path {
                    error.path = Some(path.replacen('$', &prefix, 1));
                }
                for detail in error.details.iter_mut().flatten() {
                    detail.path = detail.path.replacen('$', &prefix, 1);
                }
                let mut body = error.body();
                if let Value::Object(map) = &mut body {
                    map.insert("index".into(), json!(index));
                }
                body
            }
        });
    }
    Ok(Json(results))
}

/// Grades and records one item, and shapes its result; any failure is this item's alone.
async fn grade_one(
    catalogue: &Catalogue,
    checker: &Checker,
    store: &Store,
    item: Value,
    index: usize,
    gradescope: bool,
) -> Result<Value, AppError> {
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
    if !gradescope {
        return serde_json::to_value(GradeResult {
            index,
            submission: submission_body(&attempt, false),
        })
        .map_err(AppError::internal);
    }
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
    /// With `format=gradescope`: Gradescope's `results.json`.
    Gradescope(GradescopeResult),
    /// An item that could not be graded.
    Failed(GradeError),
}

/// An item of a batch that could not be graded; the batch goes on.
#[derive(Serialize, ToSchema)]
pub struct GradeError {
    pub index: usize,
    /// Paths start at the batch: `$[3].nodes[0].kind`.
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
