//! The handlers of the REST API, grouped by resource. They are thin: they parse at the edge,
//! call the simulator in `shared` or the store, and shape the answer.

use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json_};
use sha2::{Digest, Sha256};
use shared::{CheckError, DesignError, DesignErrorCode, Verdict};
use utoipa::{IntoParams, ToSchema};

use crate::app::AppState;
use crate::auth::{Caller, Grader, MaybeSession, Session};
use crate::catalogue::Entry;
use crate::error::{json_response, parse_json, read_body, AppError, ErrorBody, JsonBody};
use crate::report;
use crate::store::{Attempt, AttemptSummary, Claim, IdempotentAnswer};
use crate::verdicts::{Checked, VerdictCache};

// Bodies and answers.

/// The student of this browser.
#[derive(Serialize, ToSchema)]
pub struct SessionBody {
    /// The anonymous student id, also in the `pb_student` cookie.
    #[schema(example = "s-0f8e3c2a9b7d4e61a5c3b2d1e0f9a8b7")]
    pub student: String,
    pub display_name: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionUpdate {
    /// Up to 80 characters; null or empty removes it.
    pub display_name: Option<String>,
}

#[derive(Serialize, ToSchema, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub enum ProgressState {
    NotTried,
    Tried,
    Passed,
}

/// One scenario of the catalogue.
#[derive(Serialize, ToSchema)]
pub struct ScenarioSummary {
    #[schema(example = "safe-retry")]
    pub id: String,
    pub title: String,
    /// Position in the course, from 1.
    pub order: u32,
    pub concepts: Vec<String>,
    /// The calling student's progress; `not_tried` without a session.
    pub progress: ProgressState,
}

/// A design to check and record for a student.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmissionRequest {
    #[schema(example = "safe-retry")]
    pub scenario: String,
    /// Required with a grader token; with a student session it may only name the session's
    /// own student.
    pub student: Option<String>,
    /// The design, as SPEC §1 defines it.
    #[schema(value_type = crate::openapi::DesignDoc)]
    pub design: Json_,
}

/// A recorded attempt and its verdict.
#[derive(Serialize, ToSchema)]
pub struct Submission {
    pub id: String,
    pub scenario: String,
    pub student: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub score: u32,
    pub max_score: u32,
    pub passed: bool,
    #[schema(value_type = crate::openapi::VerdictDoc)]
    pub verdict: Json_,
    /// The design that was checked (only when one attempt is asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub design: Option<Json_>,
}

/// An attempt in a list, without its design and verdict.
#[derive(Serialize, ToSchema)]
pub struct SubmissionSummary {
    pub id: String,
    pub scenario: String,
    pub scenario_hash: String,
    pub student: String,
    pub created_at: String,
    pub score: u32,
    pub max_score: u32,
    pub passed: bool,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SubmissionQuery {
    /// Only this student's attempts (a student may name only themself).
    pub student: Option<String>,
    /// Only attempts at this scenario.
    pub scenario: Option<String>,
    /// The most attempts to list, newest first (default 100, at most 1000).
    pub limit: Option<u32>,
}

/// One item of a grading batch.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GradeItem {
    pub scenario: String,
    pub student: String,
    #[schema(value_type = crate::openapi::DesignDoc)]
    pub design: Json_,
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

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DraftBody {
    /// Any JSON object: a draft may be unfinished or invalid.
    #[schema(value_type = Object)]
    pub design: Json_,
}

/// The design a student is working on, kept across reloads and browsers.
#[derive(Serialize, ToSchema)]
pub struct DraftAnswer {
    pub scenario: String,
    #[schema(value_type = Object)]
    pub design: Json_,
    pub updated_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct Health {
    #[schema(example = "ok")]
    pub status: String,
}

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn count(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

/// True when some string or key of `value` holds the NUL character. PostgreSQL cannot store
/// it in text or JSONB, so it is refused at the edge instead of becoming a database error.
/// The recursion is bounded by serde_json's nesting limit of 128.
fn has_nul(value: &Json_) -> bool {
    match value {
        Json_::String(s) => s.contains('\0'),
        Json_::Array(items) => items.iter().any(has_nul),
        Json_::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
}

fn refuse_nul(value: &Json_, path: &str) -> Result<(), AppError> {
    if has_nul(value) {
        return Err(AppError::invalid_request(
            "text in the body may not contain the NUL character (\\u0000)",
        )
        .at(path));
    }
    Ok(())
}

fn scenario_entry(state: &AppState, id: &str) -> Result<Arc<Entry>, AppError> {
    state
        .catalogue()
        .get(id)
        .ok_or_else(|| AppError::unknown_scenario(id))
}

// The check.

/// Runs the exhaustive check off the async threads, at most one per core at a time, unless
/// the same design of the same scenario was checked before (`crate::verdicts`).
pub async fn run_check(
    state: &AppState,
    entry: Arc<Entry>,
    design: Json_,
) -> Result<Arc<Checked>, AppError> {
    let key = VerdictCache::key(&entry.hash, &design);
    if let Some(known) = cached_check(state, &entry, &key) {
        return Ok(known);
    }
    check_anew(state, entry, key, design).await
}

/// The verdict given before for this key, if any.
fn cached_check(state: &AppState, entry: &Entry, key: &[u8]) -> Option<Arc<Checked>> {
    let known = state.verdicts().get(key)?;
    state.metrics().observe_cached_check(
        &entry.scenario.id,
        if known.verdict.passed {
            "passed"
        } else {
            "missed"
        },
    );
    Some(known)
}

/// Runs the simulator and keeps the verdict under `key`. A check first runs where the request
/// is, within `Config::inline_check_limits`; one that goes past them starts again off the
/// async threads, at most one per core at a time, within the server's limits.
async fn check_anew(
    state: &AppState,
    entry: Arc<Entry>,
    key: Vec<u8>,
    design: Json_,
) -> Result<Arc<Checked>, AppError> {
    let scenario_id = entry.scenario.id.clone();
    let limits = state.config().check_limits;
    let small = state.config().inline_check_limits;
    let inline = shared::Limits {
        max_schedules: limits.max_schedules.min(small.max_schedules),
        max_steps: limits.max_steps.min(small.max_steps),
    };
    fn check(entry: &Entry, design: &Json_, limits: shared::Limits) -> Result<Verdict, CheckError> {
        let valid = shared::validate_json(&entry.scenario, design).map_err(CheckError::Design)?;
        shared::check::check_hashed(&entry.scenario, &entry.hash, &valid, limits)
    }
    let result = match check(&entry, &design, inline) {
        Err(CheckError::TooLarge { .. })
            if (inline.max_schedules, inline.max_steps)
                != (limits.max_schedules, limits.max_steps) =>
        {
            let permit = state.check_permit().await;
            tokio::task::spawn_blocking(move || {
                let _permit = permit;
                check(&entry, &design, limits)
            })
            .await
        }
        done => Ok(done),
    };
    let metrics = state.metrics();
    match result {
        Ok(Ok(verdict)) => {
            metrics.observe_check(
                &scenario_id,
                if verdict.passed { "passed" } else { "missed" },
                verdict.schedules_explored,
            );
            let checked = Arc::new(Checked::new(verdict).map_err(AppError::internal)?);
            state.verdicts().insert(key, Arc::clone(&checked));
            Ok(checked)
        }
        Ok(Err(e)) => {
            let (outcome, schedules) = match &e {
                CheckError::Design(_) => ("invalid", 0),
                CheckError::TooLarge { schedules, .. } => ("too_large", *schedules),
                CheckError::Scenario(_) => ("broken_scenario", 0),
            };
            metrics.observe_check(&scenario_id, outcome, schedules);
            Err(check_error(&scenario_id, e))
        }
        Err(join) => Err(AppError::internal(format!(
            "the check of {scenario_id} stopped: {join}"
        ))),
    }
}

/// The answer to a check that gave no verdict.
pub fn check_error(scenario_id: &str, error: CheckError) -> AppError {
    match error {
        CheckError::Design(errors) => design_error(errors),
        CheckError::TooLarge { schedules, limit } => AppError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "check_too_large",
            format!("the check stopped after {schedules} failure schedules: it exceeds {limit}; simplify the design"),
        ),
        // The catalogue was validated at start, so this is our bug, not the client's.
        e @ CheckError::Scenario(_) => AppError::internal(format!("scenario {scenario_id} is broken: {e}")),
    }
}

/// A design the validator refused: `graph_too_large` when it has too many nodes or edges,
/// otherwise `invalid_design` with every problem in `details`.
pub fn design_error(errors: Vec<DesignError>) -> AppError {
    if let Some(big) = errors.iter().find(|e| {
        matches!(
            e.code,
            DesignErrorCode::TooManyNodes | DesignErrorCode::TooManyEdges
        )
    }) {
        return AppError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "graph_too_large",
            big.message.clone(),
        )
        .at(big.path.clone());
    }
    let first = errors.first().cloned().unwrap_or(DesignError {
        path: "$".into(),
        code: DesignErrorCode::Invalid,
        message: "the design is not valid".into(),
    });
    let message = if errors.len() > 1 {
        format!(
            "the design has {} problems; the first: {}",
            errors.len(),
            first.message
        )
    } else {
        first.message.clone()
    };
    let mut error =
        AppError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_design", message).at(first.path);
    error.details = Some(errors);
    error
}

// Session.

#[utoipa::path(get, path = "/api/session", tag = "students",
    description = "The student of this browser. Sets the `pb_student` cookie (HttpOnly, SameSite=Lax) when there is none.",
    responses((status = 200, body = SessionBody), (status = 503, body = ErrorBody)))]
pub async fn get_session(Session(student): Session) -> Json<SessionBody> {
    Json(SessionBody {
        student: student.id,
        display_name: student.display_name,
    })
}

#[utoipa::path(put, path = "/api/session", tag = "students", request_body = SessionUpdate,
    description = "Sets or removes the student's display name.",
    responses((status = 200, body = SessionBody), (status = 400, description = "malformed_json", body = ErrorBody),
        (status = 422, description = "invalid_request", body = ErrorBody)))]
pub async fn put_session(
    State(state): State<AppState>,
    Session(student): Session,
    JsonBody(update): JsonBody<SessionUpdate>,
) -> Result<Json<SessionBody>, AppError> {
    let name = update
        .display_name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty());
    if let Some(n) = &name {
        if n.chars().count() > 80 || n.chars().any(char::is_control) {
            return Err(AppError::invalid_request(
                "a display name has at most 80 characters and no control characters",
            )
            .at("$.display_name"));
        }
    }
    state
        .store()
        .set_display_name(&student.id, name.as_deref())
        .await?;
    Ok(Json(SessionBody {
        student: student.id,
        display_name: name,
    }))
}

// Scenarios.

#[utoipa::path(get, path = "/api/scenarios", tag = "scenarios",
    description = "The catalogue in course order, with the calling student's progress.",
    responses((status = 200, body = [ScenarioSummary])))]
pub async fn list_scenarios(
    State(state): State<AppState>,
    MaybeSession(student): MaybeSession,
) -> Result<Json<Vec<ScenarioSummary>>, AppError> {
    let progress = match &student {
        // During a database outage the catalogue is still served (it lives in memory, and
        // checking designs still works), only without the student's progress.
        Some(s) => match state.store().progress(&s.id).await {
            Ok(p) => p,
            Err(e) if crate::error::is_connection_error(&e) => {
                tracing::warn!(error = %e, "the catalogue is served without progress: the database is unavailable");
                Default::default()
            }
            Err(e) => return Err(e.into()),
        },
        None => Default::default(),
    };
    let list = state
        .catalogue()
        .entries()
        .iter()
        .map(|e| {
            let p = progress.get(&e.scenario.id).copied().unwrap_or_default();
            ScenarioSummary {
                id: e.scenario.id.clone(),
                title: e.scenario.title.clone(),
                order: e.scenario.order,
                concepts: e.scenario.concepts.clone(),
                progress: if p.passed {
                    ProgressState::Passed
                } else if p.tried {
                    ProgressState::Tried
                } else {
                    ProgressState::NotTried
                },
            }
        })
        .collect();
    Ok(Json(list))
}

#[utoipa::path(get, path = "/api/scenarios/{id}", tag = "scenarios",
    description = "One scenario as a student sees it: every field of the scenario file except `reference_designs`, `wrong_designs` and `$schema`.",
    params(("id" = String, Path, description = "The scenario id, for example safe-retry")),
    responses((status = 200, description = "The scenario", body = Object), (status = 404, description = "unknown_scenario", body = ErrorBody)))]
pub async fn get_scenario(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Json_>, AppError> {
    Ok(Json(scenario_entry(&state, &id)?.student_view.clone()))
}

#[utoipa::path(post, path = "/api/scenarios/{id}/check", tag = "scenarios",
    description = "Checks a design under every failure schedule the scenario allows. Pure: nothing is stored, no login needed.",
    params(("id" = String, Path, description = "The scenario id")),
    request_body(content = crate::openapi::DesignDoc, description = "A design"),
    responses((status = 200, body = crate::openapi::VerdictDoc),
        (status = 400, description = "malformed_json", body = ErrorBody),
        (status = 404, description = "unknown_scenario", body = ErrorBody),
        (status = 413, description = "body_too_large", body = ErrorBody),
        (status = 422, description = "invalid_design, graph_too_large or check_too_large", body = ErrorBody)))]
pub async fn check(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Result<Response, AppError> {
    let body = read_body(request, &()).await?;
    let Some(entry) = state.catalogue().get(&id) else {
        // A body that is not JSON is answered as such first, as for every route.
        parse_json::<Json_>(&body)?;
        return Err(AppError::unknown_scenario(&id));
    };
    // A body checked before is answered before its JSON is even parsed.
    let key = VerdictCache::key_of_text(&entry.hash, &body);
    let checked = match cached_check(&state, &entry, &key) {
        Some(known) => known,
        None => {
            let design: Json_ = parse_json(&body)?;
            check_anew(&state, entry, key, design).await?
        }
    };
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        checked.json.clone(),
    )
        .into_response())
}

// Submissions.

const MAX_STUDENT_ID_CHARS: usize = 128;

fn valid_student_id(id: &str) -> Result<(), AppError> {
    if id.is_empty()
        || id.chars().count() > MAX_STUDENT_ID_CHARS
        || id.chars().any(char::is_control)
    {
        return Err(AppError::invalid_request(format!(
            "a student id has 1 to {MAX_STUDENT_ID_CHARS} characters and no control characters"
        ))
        .at("$.student"));
    }
    Ok(())
}

fn submission_body(a: &Attempt, with_design: bool) -> Submission {
    Submission {
        id: a.id.clone(),
        scenario: a.scenario.clone(),
        student: a.student.clone(),
        created_at: time(a.created_at),
        score: count(a.score),
        max_score: count(a.max_score),
        passed: a.passed,
        verdict: a.verdict.clone(),
        design: with_design.then(|| a.design.clone()),
    }
}

/// Checks a design for `student` and builds the attempt to record.
async fn check_attempt(
    state: &AppState,
    scenario: &str,
    student: String,
    design: Json_,
) -> Result<Attempt, AppError> {
    let entry = scenario_entry(state, scenario)?;
    refuse_nul(&design, "$.design")?;
    let checked = run_check(state, Arc::clone(&entry), design.clone()).await?;
    let verdict = &checked.verdict;
    Ok(Attempt {
        id: uuid::Uuid::new_v4().to_string(),
        student,
        scenario: entry.scenario.id.clone(),
        scenario_hash: verdict.scenario_hash.clone(),
        design,
        score: i32::try_from(verdict.score).unwrap_or(i32::MAX),
        max_score: i32::try_from(verdict.max_score).unwrap_or(i32::MAX),
        passed: verdict.passed,
        verdict: serde_json::to_value(verdict).map_err(AppError::internal)?,
        created_at: Utc::now(),
    })
}

async fn submit(state: &AppState, caller: &Caller, bytes: &[u8]) -> Result<Attempt, AppError> {
    let request: SubmissionRequest = parse_json(bytes)?;
    let student = match (caller, request.student) {
        (Caller::Student(s), Some(named)) if named != s.id => {
            return Err(AppError::forbidden(
                "a student may submit only for themself; leave \"student\" out",
            )
            .at("$.student"))
        }
        (Caller::Student(s), _) => s.id.clone(),
        (Caller::Grader(_), Some(named)) => {
            valid_student_id(&named)?;
            named
        }
        (Caller::Grader(_), None) => {
            return Err(AppError::invalid_request(
                "a grader must name the \"student\" the design is for",
            )
            .at("$.student"))
        }
    };
    check_attempt(state, &request.scenario, student, request.design).await
}

/// The `Idempotency-Key` header, if sent: 1 to 255 visible ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, AppError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|k| !k.is_empty() && k.len() <= 255 && k.bytes().all(|b| b.is_ascii_graphic()));
    match key {
        Some(k) => Ok(Some(k.to_string())),
        None => Err(AppError::new(
            StatusCode::BAD_REQUEST,
            "invalid_idempotency_key",
            "an Idempotency-Key has 1 to 255 visible ASCII characters",
        )),
    }
}

/// What identifies a request for an idempotency key: the route and the body, with JSON
/// compared by meaning (key order and spacing do not matter).
pub fn fingerprint(route: &str, bytes: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(route.as_bytes());
    hasher.update(b"\n");
    match serde_json::from_slice::<Json_>(bytes) {
        Ok(v) => hasher.update(serde_json::to_vec(&v).unwrap_or_default()),
        Err(_) => hasher.update(bytes),
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[utoipa::path(post, path = "/api/submissions", tag = "submissions", request_body = SubmissionRequest,
    description = "Checks a design and records the attempt; the record is committed before the answer. \
        Honours an `Idempotency-Key` header: the same key with the same body answers the stored answer \
        (even an error) with `Idempotent-Replayed: true` and records nothing new; with another body → 422 \
        `idempotency_key_reused`; while the first request runs → 409 `idempotency_key_in_flight`. Keys are scoped per caller.",
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes a retried submission count once")),
    security(("grader_token" = []), ("student_cookie" = [])),
    responses((status = 201, body = Submission),
        (status = 400, description = "malformed_json or invalid_idempotency_key", body = ErrorBody),
        (status = 401, description = "unauthorized: a bad or revoked token", body = ErrorBody),
        (status = 403, description = "forbidden: a student naming another student", body = ErrorBody),
        (status = 404, description = "unknown_scenario", body = ErrorBody),
        (status = 409, description = "idempotency_key_in_flight", body = ErrorBody),
        (status = 413, description = "body_too_large", body = ErrorBody),
        (status = 422, description = "invalid_request, invalid_design, graph_too_large, check_too_large or idempotency_key_reused", body = ErrorBody)))]
pub async fn create_submission(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    request: Request,
) -> Response {
    let bytes = match read_body(request, &state).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let key = match idempotency_key(&headers) {
        Ok(k) => k,
        Err(e) => return e.into_response(),
    };
    // The work runs in its own task so that a client who hangs up cannot leave a half-done
    // submission: the record and the stored answer are committed either way.
    let task =
        tokio::spawn(async move { submit_idempotently(state, caller, key, bytes.to_vec()).await });
    match task.await {
        Ok(response) => response,
        Err(e) => AppError::internal(format!("the submission task stopped: {e}")).into_response(),
    }
}

async fn submit_idempotently(
    state: AppState,
    caller: Caller,
    key: Option<String>,
    bytes: Vec<u8>,
) -> Response {
    let scope = caller.scope();
    let store = state.store();
    if let Some(key) = &key {
        let claim = store
            .claim_idempotency_key(
                &scope,
                key,
                &fingerprint("POST /api/submissions", &bytes),
                state.config().idempotency_lease,
            )
            .await;
        match claim {
            Err(e) => return AppError::from(e).into_response(),
            Ok(Claim::Started) => {}
            Ok(Claim::Replay { status, body }) => {
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
                let mut response = json_response(status, &body);
                response.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
                if let Some(id) = body.get("id").and_then(|v| v.as_str()) {
                    if let Ok(v) = HeaderValue::from_str(&format!("/api/submissions/{id}")) {
                        response.headers_mut().insert(header::LOCATION, v);
                    }
                }
                return response;
            }
            Ok(Claim::Mismatch) => {
                return AppError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "idempotency_key_reused",
                    "this Idempotency-Key was already used with another request body; use a new key for a new submission",
                )
                .into_response()
            }
            Ok(Claim::InFlight) => {
                let mut response = AppError::new(
                    StatusCode::CONFLICT,
                    "idempotency_key_in_flight",
                    "a request with this Idempotency-Key is still running; retry in a moment to get its answer",
                )
                .into_response();
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                return response;
            }
        }
    }
    // While the work runs, the claim's lease is renewed, so that other servers (and this one
    // after a restart) can tell a slow request from one whose server died.
    let renewal = key.clone().map(|key| {
        let store = store.clone();
        let scope = scope.clone();
        let every =
            (state.config().idempotency_lease / 4).max(std::time::Duration::from_millis(10));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                ticks.tick().await;
                if let Err(e) = store.renew_idempotency_key(&scope, &key).await {
                    tracing::warn!(error = %e, "could not renew an idempotency key's lease");
                }
            }
        })
    });
    let outcome = submit(&state, &caller, &bytes).await;
    if let Some(renewal) = renewal {
        renewal.abort();
    }
    let (attempt, status, body) = match &outcome {
        Ok(attempt) => {
            let body = serde_json::to_value(submission_body(attempt, false)).unwrap_or(Json_::Null);
            (Some(attempt), StatusCode::CREATED, body)
        }
        Err(e) => (None, e.status, e.body()),
    };
    if status.is_server_error() {
        // Our failure: give the key back so that a retry can run.
        if let Some(key) = &key {
            if let Err(e) = store.abandon_idempotency_key(&scope, key).await {
                tracing::error!(error = %e, "could not release an idempotency key");
            }
        }
        return match outcome {
            Err(e) => e.into_response(),
            Ok(_) => json_response(status, &body),
        };
    }
    let answer = key.as_deref().map(|key| IdempotentAnswer {
        caller: &scope,
        key,
        status: status.as_u16(),
        body: &body,
    });
    if attempt.is_some() || answer.is_some() {
        if let Err(e) = store.record(attempt, answer.as_ref()).await {
            if let Some(key) = &key {
                let _ = store.abandon_idempotency_key(&scope, key).await;
            }
            return AppError::from(e).into_response();
        }
    }
    let mut response = json_response(status, &body);
    if let Some(a) = attempt {
        if let Ok(v) = HeaderValue::from_str(&format!("/api/submissions/{}", a.id)) {
            response.headers_mut().insert(header::LOCATION, v);
        }
    }
    response
}

#[utoipa::path(get, path = "/api/submissions/{id}", tag = "submissions",
    description = "One attempt, with its design and verdict. A student sees only their own.",
    params(("id" = String, Path, description = "The submission id")),
    security(("grader_token" = []), ("student_cookie" = [])),
    responses((status = 200, body = Submission), (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: another student's attempt", body = ErrorBody),
        (status = 404, description = "unknown_submission", body = ErrorBody)))]
pub async fn get_submission(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Submission>, AppError> {
    let unknown = || {
        AppError::new(
            StatusCode::NOT_FOUND,
            "unknown_submission",
            format!("there is no submission \"{}\"", id.escape_default()),
        )
    };
    // Ids are UUIDs; anything else cannot name a submission.
    if id.len() > 64 || id.chars().any(char::is_control) {
        return Err(unknown());
    }
    let attempt = state.store().get_attempt(&id).await?.ok_or_else(unknown)?;
    if let Caller::Student(s) = &caller {
        if s.id != attempt.student {
            return Err(AppError::forbidden(
                "this submission belongs to another student",
            ));
        }
    }
    Ok(Json(submission_body(&attempt, true)))
}

#[utoipa::path(get, path = "/api/submissions", tag = "submissions",
    description = "Attempts, newest first. A student sees only their own; a grader sees all.",
    params(SubmissionQuery),
    security(("grader_token" = []), ("student_cookie" = [])),
    responses((status = 200, body = [SubmissionSummary]), (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: a student asking for another student's attempts", body = ErrorBody)))]
pub async fn list_submissions(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<SubmissionQuery>,
) -> Result<Json<Vec<SubmissionSummary>>, AppError> {
    for (name, value) in [("student", &query.student), ("scenario", &query.scenario)] {
        if value
            .as_deref()
            .is_some_and(|v| v.chars().any(char::is_control))
        {
            return Err(AppError::invalid_request(format!(
                "\"{name}\" may not contain control characters"
            ))
            .at(format!("?{name}")));
        }
    }
    let student = match &caller {
        Caller::Student(s) => {
            if query.student.as_deref().is_some_and(|named| named != s.id) {
                return Err(AppError::forbidden(
                    "a student may list only their own submissions",
                ));
            }
            Some(s.id.clone())
        }
        Caller::Grader(_) => query.student.clone(),
    };
    let limit = query.limit.unwrap_or(100).clamp(1, 1000);
    let list = state
        .store()
        .list_attempts(student.as_deref(), query.scenario.as_deref(), limit)
        .await?;
    Ok(Json(list.into_iter().map(summary_body).collect()))
}

fn summary_body(a: AttemptSummary) -> SubmissionSummary {
    SubmissionSummary {
        id: a.id,
        scenario: a.scenario,
        scenario_hash: a.scenario_hash,
        student: a.student,
        created_at: time(a.created_at),
        score: count(a.score),
        max_score: count(a.max_score),
        passed: a.passed,
    }
}

// Grading.

#[utoipa::path(post, path = "/api/grade", tag = "grading",
    description = "Grades a whole class: checks and records every item, and answers one result per item, in order. \
        A bad item gets its own `{\"index\", \"error\"}` entry and never fails the batch. \
        With `?format=gradescope` each result is Gradescope's `results.json` shape: one test per requirement \
        (`name`, `score`, `max_score`, `status`, `output` in Markdown with the counterexample, `output_format: \"md\"`), \
        with the submission in `extra_data`.",
    params(GradeQuery),
    request_body = [GradeItem],
    security(("grader_token" = [])),
    responses((status = 200, description = "One result per item, in order", body = [crate::openapi::GradeEntryDoc]),
        (status = 400, description = "malformed_json", body = ErrorBody),
        (status = 401, description = "unauthorized: no token, or a bad or revoked one", body = ErrorBody),
        (status = 413, description = "body_too_large", body = ErrorBody),
        (status = 422, description = "invalid_request: not an array, too many items or an unknown format", body = ErrorBody)))]
pub async fn grade(
    State(state): State<AppState>,
    grader: Grader,
    Query(query): Query<GradeQuery>,
    JsonBody(items): JsonBody<Json_>,
) -> Result<Json<Vec<Json_>>, AppError> {
    let gradescope = match query.format.as_deref() {
        None | Some("verdict") => false,
        Some("gradescope") => true,
        Some(other) => {
            return Err(AppError::invalid_request(format!(
                "unknown format \"{other}\"; use format=gradescope or leave it out"
            )))
        }
    };
    let Json_::Array(items) = items else {
        return Err(AppError::invalid_request(
            "the body must be a JSON array of {\"scenario\", \"student\", \"design\"}",
        )
        .at("$"));
    };
    let max = state.config().grade_items_max;
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
        let result = grade_one(&state, item, index, gradescope).await;
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
                if let Json_::Object(map) = &mut body {
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
    state: &AppState,
    item: Json_,
    index: usize,
    gradescope: bool,
) -> Result<Json_, AppError> {
    let item: GradeItem = crate::error::from_value(item)?;
    valid_student_id(&item.student)?;
    let attempt = check_attempt(state, &item.scenario, item.student, item.design).await?;
    state.store().record(Some(&attempt), None).await?;
    if !gradescope {
        return serde_json::to_value(GradeResult {
            index,
            submission: submission_body(&attempt, false),
        })
        .map_err(AppError::internal);
    }
    let entry = scenario_entry(state, &attempt.scenario)?;
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

// Drafts.

fn no_draft(scenario: &str) -> AppError {
    AppError::new(
        StatusCode::NOT_FOUND,
        "no_draft",
        format!("there is no draft for \"{scenario}\" yet"),
    )
}

#[utoipa::path(get, path = "/api/drafts/{scenario}", tag = "students",
    description = "The student's draft of a scenario.",
    params(("scenario" = String, Path, description = "The scenario id")),
    security(("student_cookie" = [])),
    responses((status = 200, body = DraftAnswer), (status = 404, description = "unknown_scenario or no_draft", body = ErrorBody)))]
pub async fn get_draft(
    State(state): State<AppState>,
    Session(student): Session,
    Path(scenario): Path<String>,
) -> Result<Json<DraftAnswer>, AppError> {
    scenario_entry(&state, &scenario)?;
    let draft = state
        .store()
        .get_draft(&student.id, &scenario)
        .await?
        .ok_or_else(|| no_draft(&scenario))?;
    Ok(Json(DraftAnswer {
        scenario: draft.scenario,
        design: draft.design,
        updated_at: time(draft.updated_at),
    }))
}

#[utoipa::path(put, path = "/api/drafts/{scenario}", tag = "students", request_body = DraftBody,
    description = "Keeps the student's draft of a scenario; it may be unfinished or invalid.",
    params(("scenario" = String, Path, description = "The scenario id")),
    security(("student_cookie" = [])),
    responses((status = 200, body = DraftAnswer), (status = 400, description = "malformed_json", body = ErrorBody),
        (status = 404, description = "unknown_scenario", body = ErrorBody), (status = 413, description = "body_too_large", body = ErrorBody),
        (status = 422, description = "invalid_request: the design is not a JSON object", body = ErrorBody)))]
pub async fn put_draft(
    State(state): State<AppState>,
    Session(student): Session,
    Path(scenario): Path<String>,
    JsonBody(body): JsonBody<DraftBody>,
) -> Result<Json<DraftAnswer>, AppError> {
    scenario_entry(&state, &scenario)?;
    if !body.design.is_object() {
        return Err(
            AppError::invalid_request("a draft's design must be a JSON object").at("$.design"),
        );
    }
    refuse_nul(&body.design, "$.design")?;
    let draft = state
        .store()
        .put_draft(&student.id, &scenario, &body.design)
        .await?;
    Ok(Json(DraftAnswer {
        scenario: draft.scenario,
        design: draft.design,
        updated_at: time(draft.updated_at),
    }))
}

// Operations.

#[utoipa::path(get, path = "/api/openapi.json", tag = "operations", description = "This document.",
    responses((status = 200, description = "OpenAPI 3", body = Object)))]
pub async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(crate::openapi::document())
}

#[utoipa::path(get, path = "/healthz", tag = "operations", description = "Liveness: the process answers.",
    responses((status = 200, body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
    })
}

#[utoipa::path(get, path = "/readyz", tag = "operations", description = "Readiness: the database answers.",
    responses((status = 200, body = Health), (status = 503, description = "unavailable", body = ErrorBody)))]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Health>, AppError> {
    match tokio::time::timeout(std::time::Duration::from_secs(2), state.store().ping()).await {
        Ok(Ok(())) => Ok(Json(Health {
            status: "ready".into(),
        })),
        Ok(Err(e)) => Err(AppError::unavailable(e)),
        Err(_) => Err(AppError::unavailable(
            "the database did not answer within 2 s",
        )),
    }
}

#[utoipa::path(get, path = "/metrics", tag = "operations",
    description = "Prometheus text: requests by route and status, a latency histogram, checks run and schedules explored.",
    responses((status = 200, description = "Prometheus text format 0.0.4", content_type = "text/plain", body = String)))]
pub async fn metrics(State(state): State<AppState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics().render(),
    )
        .into_response()
}

#[derive(Deserialize)]
pub struct FloorQuery {
    /// The size of the answer, in bytes (default 64, at most 1 MiB).
    pub bytes: Option<usize>,
}

/// `POST /api/floor?bytes=N` (only with `serve --floor-route`): a fixed JSON answer of N
/// bytes that does no work and reads no body, so that a benchmark can compare the check's
/// throughput with what the server stack alone can do.
pub async fn floor(Query(query): Query<FloorQuery>) -> Response {
    const EMPTY: &str = "{\"floor\":\"\"}";
    let bytes = query.bytes.unwrap_or(64).clamp(EMPTY.len(), 1024 * 1024);
    let mut body = String::with_capacity(bytes);
    body.push_str("{\"floor\":\"");
    body.extend(std::iter::repeat_n('x', bytes - EMPTY.len()));
    body.push_str("\"}");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

pub async fn api_not_found() -> AppError {
    AppError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "there is no such API route; GET /api/openapi.json lists them",
    )
}

pub async fn not_found() -> AppError {
    AppError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "there is nothing at this path (the web app is not built; cargo xtask run builds it)",
    )
}
