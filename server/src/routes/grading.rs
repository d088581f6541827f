//! `/api/grade`: a whole class at once, for graders. Each item is checked and recorded on its
//! own; a bad item gets its own error entry and never fails the batch.
//!
//! An item's design is what the student uploaded: a bare design or the canvas's export file,
//! read by [`crate::design_file`] as `pipeline-builder autograde` reads it. Grading the same
//! design of the same student and scenario version again with the same token records nothing
//! new (its idempotency record names the attempt), so asking for the same class in three
//! formats records it once.
//!
//! The answer's shapes below (`GradeEntry` and Gradescope's `results.json`) are the server's
//! own; `crate::report` builds the Gradescope one.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use shared::Verdict;
use utoipa::{IntoParams, ToSchema};

use super::csv::Bom;
use super::scenario_entry;
use super::submissions::{
    checked_attempt, fingerprint, submission_body, valid_student_id, Submission,
};
use crate::auth::{Caller, Grader};
use crate::catalogue::{Catalogue, Entry};
use crate::checker::Checker;
use crate::config::Config;
use crate::design_file;
use crate::error::{from_value, AppError, ErrorBody, ErrorCode, ErrorDetail, JsonBody};
use crate::idempotency::{Claimed, KeyClaim};
use crate::report::{self, CsvRow, NotGraded};
use crate::store::{Attempt, NewAttempt, Store};

/// One item of a grading batch.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GradeItem {
    /// The scenario to grade against. Left out, the URL's `scenario` is; without either, the
    /// one the export names.
    #[schema(example = "safe-retry")]
    pub scenario: Option<String>,
    pub student: String,
    /// What the student uploaded: a bare design (docs/design-format.md) or the canvas's
    /// export file, `{"scenario", "scenario_hash", "design"}`.
    #[schema(value_type = Object)]
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
    /// The scenario of every item that names none (an item's own `scenario` wins). An id of
    /// no scenario → 404 `unknown_scenario` at `?scenario`.
    #[param(example = "safe-retry")]
    pub scenario: Option<String>,
    /// With `format=csv`: `true` starts the file with a UTF-8 byte order mark (U+FEFF), so
    /// that Excel opens accents intact; `false` (the default) leaves it out.
    pub bom: Option<bool>,
}

/// One result of a grading batch: the recorded submission and its index in the batch, or
/// `{"index", "student", "error"}` for an item that could not be graded.
#[derive(Serialize, ToSchema)]
pub struct GradeResult {
    pub index: usize,
    #[serde(flatten)]
    pub submission: Submission,
    /// Only for an export of another version of the scenario: that version's hash. The
    /// design is graded against the current version.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub exported_scenario_hash: Option<String>,
    /// Only for an export of another version of the scenario: that, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub note: Option<String>,
}

#[utoipa::path(post, path = "/api/grade", tag = "grading",
    description = "Grades a whole class: checks and records every item, and answers one result per item, in order. \
        At most 1000 items per call, in a body of at most 64 times the server's body limit (16 MiB by default). \
        An item's `design` is what the student uploaded: a bare design or the canvas's export file (`{\"scenario\", \"scenario_hash\", \"design\"}`), \
        read as `pipeline-builder autograde` reads it: the scenario the item (or else the URL's `scenario`) names is graded; \
        an export for another scenario is not graded (`scenario_mismatch` at `$[i].design.scenario`); an export of another version \
        of the scenario is graded against the current one, with `exported_scenario_hash` and a `note`. \
        Grading is idempotent per token: an item whose student, scenario version and design this token graded before \
        (in this call or in another one within the idempotency records' lifetime, 24 h by default) records nothing new \
        and answers the attempt recorded then, so asking for the same class as JSON, Gradescope and CSV records it once. \
        A bad item never fails the batch: with `format=json` (the default) it gets its own `{\"index\", \"student\", \"error\"}` entry, \
        whose paths start at the batch (`$[4].design.nodes[0].kind`). \
        With `?format=gradescope` every result is Gradescope's `results.json` shape (`autograder/results.schema.json`): one test per requirement \
        (`name`, `score` and `max_score` in the requirement's points, `status`, `output` in Markdown with the counterexample, `output_format: \"md\"`), \
        with the submission in `extra_data`; an item that could not be graded gets score 0, the reason with its paths (starting at the item) \
        in `output`, every requirement as a failed test, and `index`, `student` and `error` in `extra_data`. \
        With `?format=csv` the answer is `text/csv; charset=utf-8` (RFC 4180, CRLF line ends): a header, then one row per item with \
        `student`, `display_name` (the name the student goes by here, if any), `scenario`, `score`, `max_score`, `passed`, \
        `missed` (requirement ids, `;`-separated; empty for an item that was not checked), `submission_id`, `submitted_at` \
        (both empty for an item that was not recorded), `error` (why an item was not graded) and `note`; a field that starts with \
        `=`, `+`, `-`, `@`, a tab or a CR is written as text (a `'` before it, quoted), and `bom=true` starts the file with a UTF-8 byte order mark. \
        Gradescope's own autograder runs offline instead: `pipeline-builder autograde` (docs/gradescope.md), not this route.",
    params(GradeQuery),
    request_body(content = Vec<Value>, description = "An array of at most 1000 items, each meant to be a `GradeItem` (`scenario`, `student`, `design`). \
        The server takes any array: an item that is not a `GradeItem` is not refused with the batch, it gets its own error entry."),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, description = "One result per item, in order", content(
            ([GradeEntry] = "application/json"),
            (String = "text/csv", example = json!(super::csv::CSV_EXAMPLE)))),
        (status = 400, description = "malformed_json, or bad_request: a `bom` other than true or false", body = ErrorBody),
        (status = 401, description = "unauthorized: no token, or a bad or revoked one", body = ErrorBody),
        (status = 403, description = "cross_site_request: another site sent it (with the grader cookie); or forbidden: the token is a staff account's or read-only, not a server administrator's", body = ErrorBody),
        (status = 404, description = "unknown_scenario: the URL's `scenario` names no scenario (path `?scenario`)", body = ErrorBody),
        (status = 413, description = "body_too_large: more than 64 times the server's body limit (16 MiB by default)", body = ErrorBody),
        (status = 415, description = "unsupported_media_type: with the grader cookie, a body that is not application/json", body = ErrorBody),
        (status = 422, description = "invalid_request: not an array, more than 1000 items, or a `format` other than json, gradescope or csv (path `?format`)", body = ErrorBody)))]
pub async fn grade(
    State(catalogue): State<Arc<Catalogue>>,
    State(checker): State<Checker>,
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    grader: Grader,
    Query(query): Query<GradeQuery>,
    JsonBody(items): JsonBody<Value>,
) -> Result<Response, AppError> {
    grader.must_administer(
        "grade by API (a staff account's token reads its classes' attempts instead)",
    )?;
    let format = GradeFormat::parse(query.format.as_deref())?;
    if let Some(id) = &query.scenario {
        if catalogue.get(id).is_none() {
            return Err(AppError::unknown_scenario(id).at("?scenario"));
        }
    }
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
    let grading = Grading {
        catalogue: &catalogue,
        checker: &checker,
        store: &store,
        scope: Caller::Grader(grader.clone()).scope(),
        lease: config.idempotency_lease,
        scenario: query.scenario.as_deref(),
    };
    let mut results = Vec::with_capacity(items.len());
    let mut rows = Vec::new();
    for (index, item) in items.into_iter().enumerate() {
        // Who and what the item names, even when it is not a valid item, so that every
        // student gets a result.
        let named = Named::of(&item, grading.scenario);
        let entry = named.scenario.as_deref().and_then(|id| catalogue.get(id));
        let graded = grading.grade_one(item).await;
        match format {
            GradeFormat::Json => results.push(json_entry(graded, index, &named)?),
            GradeFormat::Gradescope => results.push(gradescope_entry(
                &catalogue,
                graded,
                index,
                &named,
                entry.as_deref(),
            )?),
            GradeFormat::Csv => {
                let display_name = match &named.student {
                    Some(id) if id.len() <= 128 => store.display_name(id).await?,
                    _ => None,
                };
                rows.push(csv_entry(graded, named, entry.as_deref(), display_name))
            }
        }
    }
    if format == GradeFormat::Csv {
        return Ok(super::csv::csv_response(&rows, Bom::asked(query.bom)));
    }
    Ok(Json(results).into_response())
}

/// Who and what an item names, read loosely, for the result of an item that is not valid.
struct Named {
    student: Option<String>,
    /// The item's scenario, else the URL's, else the one its export names.
    scenario: Option<String>,
}

impl Named {
    fn of(item: &Value, url_scenario: Option<&str>) -> Named {
        let named = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        let exported = item.get("design").and_then(|d| named(d, "scenario"));
        Named {
            student: named(item, "student"),
            scenario: named(item, "scenario")
                .or(url_scenario.map(str::to_string))
                .or(exported),
        }
    }
}

/// A graded item: the attempt recorded for it (now or by an earlier grading), and what the
/// grader should know about the file it came from.
struct Graded {
    attempt: Attempt,
    /// For an export of another version of the scenario: that version's hash and a note.
    stale: Option<(String, String)>,
}

/// What grading a batch works with.
struct Grading<'a> {
    catalogue: &'a Catalogue,
    checker: &'a Checker,
    store: &'a Store,
    /// The grader's idempotency scope: its token's identity.
    scope: String,
    lease: Duration,
    /// The URL's `scenario`.
    scenario: Option<&'a str>,
}

impl Grading<'_> {
    /// Grades one item and records it once; any failure is this item's alone.
    async fn grade_one(&self, item: Value) -> Result<Graded, AppError> {
        let item: GradeItem = from_value(item)?;
        valid_student_id(&item.student)?;
        let upload = design_file::read(&item.design).map_err(|damaged| {
            AppError::invalid_request(damaged.message).at(report::rebase(&damaged.path, "$.design"))
        })?;
        let named = item.scenario.as_deref().or(self.scenario);
        let entry = self.scenario_of(named, &upload)?;
        let stale = design_file::stale_note(&upload, &entry.scenario().id, &entry.hash)
            .zip(upload.scenario_hash)
            .map(|(note, hash)| (hash.to_string(), note));
        // The checker's paths start at the design: `$.design` in the item, `$.design.design`
        // when the item holds an export.
        let at = report::rebase(upload.at, "$.design");
        let attempt = checked_attempt(
            self.catalogue,
            self.checker,
            &entry.scenario().id,
            item.student,
            upload.design.clone(),
            &at,
        )
        .await?
        .into_attempt()?;
        let attempt = self.record_once(attempt).await?;
        Ok(Graded { attempt, stale })
    }

    /// The scenario an item is graded against ([`design_file::scenario_to_grade`]).
    fn scenario_of(
        &self,
        named: Option<&str>,
        upload: &design_file::Upload<'_>,
    ) -> Result<Arc<Entry>, AppError> {
        match design_file::scenario_to_grade(named, upload) {
            Ok(Some(id)) => scenario_entry(self.catalogue, id).map_err(|e| {
                if named.is_some() {
                    e
                } else {
                    e.at("$.design.scenario")
                }
            }),
            Ok(None) => Err(AppError::invalid_request(
                "the item names no scenario: give \"scenario\" in the item or in the URL (?scenario=ID), \
                 or grade the canvas's export file, which names its own",
            )
            .at("$.scenario")),
            Err(exported) => {
                let entry = scenario_entry(self.catalogue, named.unwrap_or_default())?;
                Err(AppError::of(ErrorCode::ScenarioMismatch,
                    design_file::other_scenario(exported, &entry.scenario().id, &entry.scenario().title),
                )
                .at("$.design.scenario"))
            }
        }
    }

    /// Records a graded attempt unless this token graded the same student, scenario version
    /// and design before, whose attempt it answers instead. The grading's idempotency record
    /// (the same records `Idempotency-Key` uses, scoped to the token) is committed with the
    /// attempt, so two gradings never both record.
    async fn record_once(&self, attempt: Attempt) -> Result<Attempt, AppError> {
        let key = grading_key(&attempt);
        let claim = KeyClaim::take(
            self.store,
            &self.scope,
            &key,
            &fingerprint("POST /api/grade", key.as_bytes()),
            self.lease,
        )
        .await?;
        let in_flight = || {
            AppError::of(ErrorCode::IdempotencyKeyInFlight,
                "another call is grading the same design of this student right now; grade again in a moment",
            )
        };
        match claim {
            Claimed::Held(claim) => {
                let body = json!({"id": attempt.id});
                match claim
                    .finish(
                        Some(NewAttempt::of(&attempt)?),
                        StatusCode::CREATED.as_u16(),
                        &body,
                    )
                    .await?
                {
                    true => Ok(attempt),
                    false => Err(in_flight()),
                }
            }
            Claimed::Replay { body, .. } => {
                let id = body["id"].as_str().unwrap_or_default();
                self.store.get_attempt(id).await?.ok_or_else(|| {
                    AppError::of(ErrorCode::UnknownSubmission,
                        "this design was graded before, and the attempt recorded then has been deleted",
                    )
                })
            }
            Claimed::InFlight => Err(in_flight()),
            Claimed::Mismatch => Err(AppError::of(
                ErrorCode::IdempotencyKeyReused,
                "this token used the grading's idempotency key for another request",
            )),
        }
    }
}

/// What makes two gradings the same: the student, the scenario's version and the design (as
/// JSON), in one key per grader scope.
fn grading_key(attempt: &Attempt) -> String {
    let mut hasher = Sha256::new();
    for part in [&attempt.student, &attempt.scenario, &attempt.scenario_hash] {
        hasher.update(part.as_bytes());
        hasher.update(b"\n");
    }
    hasher.update(serde_json::to_vec(&attempt.design).unwrap_or_default());
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("grade:{hex}")
}

/// An item's entry of the JSON answer.
fn json_entry(
    graded: Result<Graded, AppError>,
    index: usize,
    named: &Named,
) -> Result<Value, AppError> {
    match graded {
        Ok(graded) => {
            let (exported_scenario_hash, note) = graded.stale.unzip();
            serde_json::to_value(GradeResult {
                index,
                submission: submission_body(&graded.attempt, false),
                exported_scenario_hash,
                note,
            })
            .map_err(AppError::internal)
        }
        Err(error) => {
            // Paths name the place in the whole batch, not in the item.
            let mut body = error.under(&format!("$[{index}]")).body();
            if let Value::Object(map) = &mut body {
                map.insert("index".into(), json!(index));
                map.insert("student".into(), json!(named.student));
            }
            Ok(body)
        }
    }
}

/// An item's entry of the Gradescope answer.
fn gradescope_entry(
    catalogue: &Catalogue,
    graded: Result<Graded, AppError>,
    index: usize,
    named: &Named,
    entry: Option<&Entry>,
) -> Result<Value, AppError> {
    match graded {
        Ok(graded) => {
            let mut result = gradescope_result(catalogue, &graded.attempt, index)?;
            if let Some((hash, note)) = graded.stale {
                result["extra_data"]["exported_scenario_hash"] = json!(hash);
                result = report::with_notes(result, &[note]);
            }
            Ok(result)
        }
        Err(error) => {
            let mut extra = json!({
                "index": index,
                "student": named.student,
                "scenario": named.scenario,
                "schedules_explored": 0,
                "error": error.body()["error"],
            });
            if let Some(e) = entry {
                extra["scenario_hash"] = json!(e.hash);
            }
            Ok(report::gradescope_not_graded(
                entry.map(|e| e.scenario()),
                &NotGraded::from_error(&error),
                extra,
            ))
        }
    }
}

/// An item's row of the CSV answer. An item that was not checked misses nothing: its
/// `missed` is empty and its `error` says why.
fn csv_entry(
    graded: Result<Graded, AppError>,
    named: Named,
    entry: Option<&Entry>,
    display_name: Option<String>,
) -> CsvRow {
    let display_name = display_name.unwrap_or_default();
    match graded {
        Ok(graded) => CsvRow {
            note: graded.stale.map(|(_, note)| note).unwrap_or_default(),
            ..super::csv::csv_row(&graded.attempt, display_name)
        },
        Err(error) => CsvRow {
            student: named.student.unwrap_or_default(),
            display_name,
            scenario: named.scenario.unwrap_or_default(),
            score: Some(0),
            max_score: entry.map(|e| e.scenario().requirements.iter().map(|r| r.points).sum()),
            passed: false,
            error: NotGraded::from_error(&error).text(),
            ..CsvRow::default()
        },
    }
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
    Ok(report::gradescope(entry.scenario(), &verdict, extra))
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
