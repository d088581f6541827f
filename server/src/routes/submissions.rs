//! `/api/submissions`: recording a checked attempt, honouring `Idempotency-Key` so that a
//! retried submission counts once, and reading attempts back.
//!
//! Building an attempt (check, then record) is shared with grading.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::Utc;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use sha2::{Digest, Sha256};
use utoipa::IntoParams;

use super::csv::ListFormat;
use super::{count, refuse_nul, scenario_entry, time};
use crate::auth::Caller;
use crate::catalogue::Catalogue;
use crate::checker::Checker;
use crate::config::Config;
use crate::error::{
    json_response, json_text_response, parse_json, read_body, AppError, ErrorBody, ErrorCode,
};
use crate::idempotency::Claimed;
use crate::report::CsvRow;
use crate::store::{
    Attempt, AttemptSummary, AttemptsQuery, Claim, ClaimId, ExportedAttempt, NewAttempt, Store,
};
pub use shared::wire::submissions::{Submission, SubmissionRequest, SubmissionSummary};

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SubmissionQuery {
    /// Only this student's attempts (a student may name only themself).
    pub student: Option<String>,
    /// Only attempts at this scenario.
    pub scenario: Option<String>,
    /// The most attempts to list, newest first: 1 to 1000 (default 100). Another number →
    /// 422 `invalid_request` at `?limit`.
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// The page after the one that ended with this attempt: the `Link` header of a page that
    /// has more after it names the next page with it. An id of no attempt → 422
    /// `invalid_request` at `?before`.
    pub before: Option<String>,
    /// `json` (the default) or `csv`: one row per attempt, as `POST /api/grade?format=csv`
    /// writes them. Another value → 422 `invalid_request` at `?format`.
    #[param(value_type = Option<ListFormat>)]
    pub format: Option<String>,
    /// With `format=csv`: `true` starts the file with a UTF-8 byte order mark (U+FEFF), so
    /// that Excel opens accents intact; `false` (the default) leaves it out.
    pub bom: Option<bool>,
}

/// The most attempts one page of `GET /api/submissions` lists, and how many it lists unless
/// asked.
pub const LIST_LIMIT_MAX: u32 = 1000;
pub const LIST_LIMIT_DEFAULT: u32 = 100;

/// The longest student id a grader may name; ids come from graders' rosters, not from us.
const MAX_STUDENT_ID_CHARS: usize = 128;

/// Refuses a student id a grader names that is empty, too long or holds control characters.
pub(super) fn valid_student_id(id: &str) -> Result<(), AppError> {
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

/// An attempt as the API answers it; its design only when one attempt is asked for, so that
/// lists and batches stay small.
pub(super) fn submission_body(a: &Attempt, with_design: bool) -> Submission {
    Submission {
        verdict: a.verdict.clone(),
        ..submission_fields(a, with_design)
    }
}

/// An attempt's fields as an answer gives them, but for its verdict (left null).
fn submission_fields(a: &Attempt, with_design: bool) -> Submission {
    Submission {
        id: a.id.clone(),
        scenario: a.scenario.clone(),
        student: a.student.clone(),
        created_at: time(a.created_at),
        score: count(a.score),
        max_score: count(a.max_score),
        passed: a.passed,
        class: a.class.clone(),
        late: false,
        verdict: Value::Null,
        design: with_design.then(|| a.design.clone()),
    }
}

/// An attempt checked and not yet recorded, with its verdict as the text the attempt stores
/// ([`crate::verdicts::Checked::stored`]; `attempt.verdict` is left null): a submission writes
/// that text into its answer as it is, and the same text compressed into the store
/// ([`crate::verdicts::Checked::deflated`]), without reading it into a value.
pub(super) struct CheckedAttempt {
    attempt: Attempt,
    verdict: Box<RawValue>,
    deflated: Arc<[u8]>,
}

impl CheckedAttempt {
    /// The attempt with its verdict read into it.
    pub(super) fn into_attempt(self) -> Result<Attempt, AppError> {
        let verdict = serde_json::from_str(self.verdict.get()).map_err(AppError::internal)?;
        Ok(Attempt {
            verdict,
            ..self.attempt
        })
    }
}

/// Checks a design for `student` and builds the attempt to record; `at` is where the design
/// sits in the body (`$.design`), which the errors' paths start at.
pub(super) async fn checked_attempt(
    catalogue: &Catalogue,
    checker: &Checker,
    scenario: &str,
    student: String,
    design: Value,
    at: &str,
) -> Result<CheckedAttempt, AppError> {
    let entry = scenario_entry(catalogue, scenario)?;
    refuse_nul(&design, at)?;
    // The checker's paths start at the design.
    let checked = checker
        .check(Arc::clone(&entry), design.clone())
        .await
        .map_err(|e| e.under(at))?;
    let verdict = &checked.outline.summary;
    let attempt = Attempt {
        // Time-ordered (UUID version 7): attempts are inserted at the end of their key's index
        // rather than at a random place in it, so a batch of them changes a few of its pages.
        id: uuid::Uuid::now_v7().to_string(),
        student,
        scenario: entry.scenario().id.clone(),
        scenario_hash: checked.outline.scenario_hash.clone(),
        design,
        score: i32::try_from(verdict.score).unwrap_or(i32::MAX),
        max_score: i32::try_from(verdict.max_score).unwrap_or(i32::MAX),
        passed: verdict.passed,
        verdict: Value::Null,
        created_at: Utc::now(),
        class: None,
    };
    Ok(CheckedAttempt {
        attempt,
        verdict: checked.stored().map_err(AppError::internal)?.to_owned(),
        deflated: checked.deflated().map_err(AppError::internal)?,
    })
}

/// What a submission works with: the catalogue, the checker, the store and the lease of its
/// idempotency key. Owned, because the work runs in its own task.
struct Submitting {
    catalogue: Arc<Catalogue>,
    checker: Checker,
    store: Store,
    lease: Duration,
    /// The largest answer stored for replay (`crate::bounds::answer_for_replay`).
    answer_max_bytes: usize,
}

/// Reads a submission, decides whose attempt it is (a student submits only for themself, a
/// grader must name the student), and checks it.
async fn submit(
    parts: &Submitting,
    caller: &Caller,
    bytes: &[u8],
) -> Result<(CheckedAttempt, bool), AppError> {
    let request: SubmissionRequest = parse_json(bytes)?;
    let student = match (caller, request.student) {
        (Caller::Student(s), Some(named)) if named != s.id => {
            return Err(AppError::forbidden(
                "submitting for a named student needs a grader token: send Authorization: Bearer <token> \
                 (pipeline-builder token create --name NAME makes one); a student submits only for themself, \
                 with \"student\" left out",
            )
            .at("$.student"))
        }
        (Caller::Student(s), _) => s.id.clone(),
        (Caller::Grader(g), Some(named)) => {
            valid_student_id(&named)?;
            // A staff account records only for a class it is a TA or owner of.
            match &request.class {
                Some(class) => {
                    g.may(&parts.store, class, crate::auth::Need::Work)
                        .await
                        .map_err(|e| e.at("$.class"))?;
                }
                None => g.must_administer(
                    "record an attempt outside a class; a staff account names one of its classes",
                )?,
            }
            named
        }
        (Caller::Grader(_), None) => {
            return Err(AppError::invalid_request(
                "a grader must name the \"student\" the design is for",
            )
            .at("$.student"))
        }
    };
    let late = match &request.class {
        Some(class) => {
            super::classes::may_record_for(&parts.store, class, &student, &request.scenario).await?
        }
        None => false,
    };
    let mut checked = checked_attempt(
        &parts.catalogue,
        &parts.checker,
        &request.scenario,
        student,
        request.design,
        "$.design",
    )
    .await?;
    checked.attempt.class = request.class;
    Ok((checked, late))
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
        None => Err(AppError::of(
            ErrorCode::InvalidIdempotencyKey,
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
    match serde_json::from_slice::<Value>(bytes) {
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
        `idempotency_key_reused`; while another request holds the key (a grading, or a server that stopped, until the key's lease runs out) → 409 `idempotency_key_in_flight`. The key is claimed \
        in the write that records the attempt, so the same request sent again while the first is being checked gets the \
        first one's answer. Keys are scoped per caller.",
    params(("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[!-~]+$",
        description = "Makes a retried submission count once: 1 to 255 visible ASCII characters (else 400 `invalid_idempotency_key`)")),
    security(("grader_token" = []), ("student_cookie" = [])),
    responses((status = 201, body = Submission),
        (status = 400, description = "malformed_json, invalid_idempotency_key or ambiguous_session", body = ErrorBody),
        (status = 401, description = "unauthorized: a bad or revoked token; no_session: neither a token nor a session", body = ErrorBody),
        (status = 403, description = "forbidden: a student session naming another student (submitting for a named student needs a grader token), or a staff account's token naming no class or a class it is not a TA or owner of; cross_site_request: another site sent it; not_a_member: the student is not a member of `class`", body = ErrorBody),
        (status = 404, description = "unknown_scenario, or unknown_class: `class` names no class", body = ErrorBody),
        (status = 409, description = "idempotency_key_in_flight; class_closed: `class` is closed; or past_due: `class` refuses attempts after the student's due date, which has passed", body = ErrorBody),
        (status = 415, description = "unsupported_media_type: a student's body that is not application/json", body = ErrorBody),
        (status = 422, description = "invalid_request, invalid_design, graph_too_large, check_too_large or idempotency_key_reused", body = ErrorBody)))]
pub async fn create_submission(
    State(catalogue): State<Arc<Catalogue>>,
    State(checker): State<Checker>,
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    caller: Caller,
    headers: HeaderMap,
    request: Request,
) -> Response {
    let bytes = match read_body(request, &()).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let key = match idempotency_key(&headers) {
        Ok(k) => k,
        Err(e) => return e.into_response(),
    };
    // The work runs in its own task so that a client who hangs up cannot leave a half-done
    // submission: the record and the stored answer are committed either way. Its check is
    // held to the request's share of the cores like any other.
    let parts = Submitting {
        catalogue,
        checker,
        store,
        lease: config.idempotency_lease,
        answer_max_bytes: config.idempotency_answer_max_bytes,
    };
    let task = tokio::spawn(crate::share::carry(async move {
        submit_idempotently(parts, caller, key, bytes.to_vec()).await
    }));
    match task.await {
        Ok(response) => response,
        Err(e) => AppError::internal(format!("the submission task stopped: {e}")).into_response(),
    }
}

async fn submit_idempotently(
    parts: Submitting,
    caller: Caller,
    key: Option<String>,
    bytes: Vec<u8>,
) -> Response {
    let store = &parts.store;
    let outcome = submit(&parts, &caller, &bytes)
        .await
        .and_then(|(checked, late)| answered(checked, late));
    let (new, status, body, response) = match outcome {
        Ok((new, body, response)) => (Some(new), StatusCode::CREATED, body, response),
        // Our failure: nothing was written, so a retry with the same key runs.
        Err(e) if e.status.is_server_error() => return e.into_response(),
        Err(e) => {
            let body = e.body();
            let response = json_response(e.status, &body);
            (None, e.status, body, response)
        }
    };
    let Some(key) = key else {
        // A refusal without a key records nothing.
        if new.is_none() {
            return response;
        }
        return match store.record_new(new, None).await {
            Ok(_) => response,
            Err(e) => AppError::from(e).into_response(),
        };
    };
    // The key is claimed and answered in the one write that records the attempt: a check is
    // pure, so a request with the same key sent meanwhile is checked too, and the first to
    // commit is the answer both get.
    let claim = ClaimId::new(&caller.scope(), &key);
    let fingerprint = fingerprint("POST /api/submissions", &bytes);
    let kept = crate::bounds::answer_for_replay(&stored_answer(&body), parts.answer_max_bytes);
    let recorded = store
        .record_once(
            &claim,
            &fingerprint,
            parts.lease,
            new,
            (status.as_u16(), &kept),
        )
        .await;
    match recorded {
        Ok(Claim::Started) => response,
        Ok(Claim::Replay { status, body }) => replay(store, status, body).await,
        Ok(Claim::Mismatch) => answer_without_work(store, Claimed::Mismatch).await,
        Ok(Claim::InFlight) => answer_without_work(store, Claimed::InFlight).await,
        Err(e) => AppError::from(e).into_response(),
    }
}

/// A checked submission's answer and what it records: the attempt to insert (its verdict as
/// the text the check kept), the answer's fields as a value (its verdict null; what the key
/// stores, without the verdict, [`stored_answer`]), and the answer with the verdict written in.
fn answered(
    checked: CheckedAttempt,
    late: bool,
) -> Result<(NewAttempt, Value, Response), AppError> {
    let answer = Submission {
        late,
        ..submission_fields(&checked.attempt, false)
    };
    let body = serde_json::to_value(answer).unwrap_or(Value::Null);
    let mut response =
        json_text_response(StatusCode::CREATED, answer_text(&body, &checked.verdict));
    insert_location(&mut response, &checked.attempt.id);
    let new = NewAttempt::with_verdict(&checked.attempt, checked.deflated)?;
    Ok((new, body, response))
}

/// `body`, an answer's fields, as JSON text with `verdict` written as it is in place of its
/// `verdict` field: the same text as writing out `body` with the verdict read into it, since
/// `verdict` is written as a value writes it.
fn answer_text(body: &Value, verdict: &RawValue) -> Vec<u8> {
    struct WithVerdict<'a>(&'a serde_json::Map<String, Value>, &'a RawValue);
    impl serde::Serialize for WithVerdict<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = s.serialize_map(Some(self.0.len()))?;
            for (name, value) in self.0 {
                if name == "verdict" {
                    map.serialize_entry(name, self.1)?;
                } else {
                    map.serialize_entry(name, value)?;
                }
            }
            map.end()
        }
    }
    match body.as_object() {
        Some(fields) => serde_json::to_vec(&WithVerdict(fields, verdict)),
        None => serde_json::to_vec(body),
    }
    .unwrap_or_else(|_| b"null".to_vec())
}

/// What a submission's key keeps to replay its answer: the answer without its verdict,
/// which the attempt it names (`id`) holds; [`replay`] puts it back. An error is kept whole.
fn stored_answer(body: &Value) -> Value {
    match body.as_object() {
        Some(fields) if fields.contains_key("id") => Value::Object(
            fields
                .iter()
                .filter(|(name, _)| name.as_str() != "verdict")
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect(),
        ),
        _ => body.clone(),
    }
}

/// The stored answer of a request whose key was claimed before, with the verdict of the
/// attempt it names put back (see [`stored_answer`]). An attempt deleted since (a student's
/// data erased) leaves the answer without its verdict.
async fn replay(store: &Store, status: u16, mut body: Value) -> Response {
    let status = match StatusCode::from_u16(status) {
        Ok(status) => status,
        Err(e) => return AppError::internal(e).into_response(),
    };
    let attempt = match body.get("id").and_then(Value::as_str) {
        Some(id) if status == StatusCode::CREATED && body.get("verdict").is_none() => {
            match store.get_attempt(id).await {
                Ok(attempt) => attempt,
                Err(e) => return AppError::from(e).into_response(),
            }
        }
        _ => None,
    };
    if let (Some(attempt), Some(fields)) = (attempt, body.as_object_mut()) {
        fields.insert("verdict".to_string(), attempt.verdict);
    }
    let mut response = json_response(status, &body);
    response
        .headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    if let Some(id) = body.get("id").and_then(|v| v.as_str()) {
        insert_location(&mut response, id);
    }
    response
}

/// The answer to a request whose key was claimed before: the stored answer replayed, or a
/// refusal (another body with this key, or its first request still running).
async fn answer_without_work(store: &Store, claimed: Claimed) -> Response {
    match claimed {
        Claimed::Replay { status, body } => replay(store, status, body).await,
        Claimed::Mismatch => AppError::of(ErrorCode::IdempotencyKeyReused,
            "this Idempotency-Key was already used with another request body; use a new key for a new submission",
        )
        .into_response(),
        Claimed::InFlight | Claimed::Held(_) => {
            let mut response = AppError::of(ErrorCode::IdempotencyKeyInFlight,
                "a request with this Idempotency-Key is still running; retry in a moment to get its answer",
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
    }
}

fn insert_location(response: &mut Response, id: &str) {
    if let Ok(v) = HeaderValue::from_str(&format!("/api/submissions/{id}")) {
        response.headers_mut().insert(header::LOCATION, v);
    }
}

#[utoipa::path(get, path = "/api/submissions/{id}", tag = "submissions",
    description = "One attempt, with its design and verdict. A student sees only their own.",
    params(("id" = String, Path, description = "The submission id")),
    security(("grader_token" = []), ("student_cookie" = [])),
    responses((status = 200, body = Submission), (status = 401, description = "unauthorized or no_session", body = ErrorBody),
        (status = 403, description = "forbidden: another student's attempt, or, for a staff account's token, an attempt outside its classes", body = ErrorBody),
        (status = 404, description = "unknown_submission", body = ErrorBody)))]
pub async fn get_submission(
    State(store): State<Store>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Submission>, AppError> {
    let unknown = || {
        AppError::of(
            ErrorCode::UnknownSubmission,
            format!("there is no submission \"{}\"", id.escape_default()),
        )
    };
    // Ids are UUIDs; anything else cannot name a submission.
    if id.len() > 64 || id.chars().any(char::is_control) {
        return Err(unknown());
    }
    let attempt = store.get_attempt(&id).await?.ok_or_else(unknown)?;
    match &caller {
        Caller::Student(s) if s.id != attempt.student => {
            return Err(AppError::forbidden(
                "this submission belongs to another student",
            ));
        }
        // A staff account reads the attempts of its classes only.
        Caller::Grader(g) if !g.administrator() => match &attempt.class {
            Some(class) => {
                g.may(&store, class, crate::auth::Need::Read).await?;
            }
            None => g.administrator_reads("read an attempt made outside a class")?,
        },
        _ => {}
    }
    Ok(Json(submission_body(&attempt, true)))
}

#[utoipa::path(get, path = "/api/submissions", tag = "submissions",
    description = "Attempts, newest first, a page at a time (`limit`, 100 unless asked, at most 1000). A student sees only their own; \
        a grader sees all. When more attempts follow the page, the answer has a `Link` header naming the next page \
        (`<…&before=ID>; rel=\"next\"`); a page without one is the last. \
        With `?format=csv` the answer is `text/csv; charset=utf-8` (RFC 4180): a header, then one row per attempt with \
        `student`, `display_name` (the name the student gave the attempt's class, else their own), `scenario`, `score`, `max_score`, \
        `passed`, `missed` (requirement ids, `;`-separated), `submission_id`, `submitted_at`, `error` and `note` (both always empty here); \
        a field that starts with `=`, `+`, `-`, `@`, a tab or a CR is written as text (a `'` before it, quoted). \
        `bom=true` starts the CSV with a UTF-8 byte order mark.",
    params(SubmissionQuery),
    security(("grader_token" = []), ("student_cookie" = [])),
    responses((status = 200, content(
            ([SubmissionSummary] = "application/json"),
            (String = "text/csv", example = json!(super::csv::CSV_EXAMPLE))),
            headers(("Link" = String, description = "Only when more attempts follow this page: `</api/submissions?…&before=ID>; rel=\"next\"`, the next page"))),
        (status = 400, description = "bad_request: a query string that cannot be read (a `limit` that is not a number, or too large for one, a `bom` other than true or false); ambiguous_session", body = ErrorBody),
        (status = 401, description = "unauthorized or no_session", body = ErrorBody),
        (status = 403, description = "forbidden: a student asking for another student's attempts (that needs a grader token), or a staff account's token (it reads its classes' attempts at `/api/classes/{id}/attempts`)", body = ErrorBody),
        (status = 422, description = "invalid_request: a `format` other than json or csv (path `?format`), a `limit` outside 1 to 1000 (path `?limit`), a `before` that names no attempt (path `?before`), or a control character in `student` or `scenario`", body = ErrorBody)))]
pub async fn list_submissions(
    State(store): State<Store>,
    caller: Caller,
    Query(query): Query<SubmissionQuery>,
) -> Result<Response, AppError> {
    for (name, value) in [
        ("student", &query.student),
        ("scenario", &query.scenario),
        ("before", &query.before),
    ] {
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
                    "listing another student's submissions needs a grader token: send Authorization: Bearer <token>; \
                     a student lists only their own",
                )
                .at("?student"));
            }
            Some(s.id.clone())
        }
        Caller::Grader(g) => {
            g.administrator_reads(
                "list every student's attempts; a staff account reads its classes' at /api/classes/{id}/attempts",
            )?;
            query.student.clone()
        }
    };
    let limit = query.limit.unwrap_or(LIST_LIMIT_DEFAULT);
    if !(1..=LIST_LIMIT_MAX).contains(&limit) {
        return Err(AppError::invalid_request(format!(
            "limit is a whole number from 1 to {LIST_LIMIT_MAX}"
        ))
        .at("?limit"));
    }
    let csv = match query.format.as_deref() {
        None | Some("json") => false,
        Some("csv") => true,
        Some(other) => {
            return Err(AppError::invalid_request(format!(
                "unknown format \"{}\"; use json (the default) or csv",
                other.escape_default()
            ))
            .at("?format"))
        }
    };
    if let Some(before) = &query.before {
        let known = before.len() <= 64 && store.get_attempt(before).await?.is_some();
        if !known {
            return Err(AppError::invalid_request(
                "\"before\" names no attempt: use the next page's link of the page before",
            )
            .at("?before"));
        }
    }
    // One attempt more than the page holds tells whether another page follows.
    let page = AttemptsQuery {
        student: student.as_deref(),
        scenario: query.scenario.as_deref(),
        before: query.before.as_deref(),
        limit: limit + 1,
    };
    let (mut response, last) = if csv {
        let mut list = store.attempts_page_for_export(&page).await?;
        let more = list.len() > limit as usize;
        list.truncate(limit as usize);
        let last = list.last().map(|a| a.summary.id.clone()).filter(|_| more);
        let rows: Vec<CsvRow> = list.into_iter().map(export_row).collect();
        (
            super::csv::csv_response(&rows, super::csv::Bom::asked(query.bom)),
            last,
        )
    } else {
        let mut list = store.attempts_page(&page).await?;
        let more = list.len() > limit as usize;
        list.truncate(limit as usize);
        let last = list.last().map(|a| a.id.clone()).filter(|_| more);
        let body: Vec<SubmissionSummary> = list.into_iter().map(summary_body).collect();
        (Json(body).into_response(), last)
    };
    if let Some(last) = last {
        if let Ok(link) = HeaderValue::from_str(&next_page_link(&query, &last)) {
            response.headers_mut().insert(header::LINK, link);
        }
    }
    Ok(response)
}

/// The `Link` header naming the page after the one that ended with the attempt `last`: the
/// same query, starting after it.
fn next_page_link(query: &SubmissionQuery, last: &str) -> String {
    let limit = query.limit.map(|n| n.to_string());
    let bom = query.bom.map(|b| b.to_string());
    let pairs: Vec<(&str, &str)> = [
        ("student", query.student.as_deref()),
        ("scenario", query.scenario.as_deref()),
        ("limit", limit.as_deref()),
        ("format", query.format.as_deref()),
        ("bom", bom.as_deref()),
        ("before", Some(last)),
    ]
    .into_iter()
    .filter_map(|(name, value)| value.map(|v| (name, v)))
    .collect();
    let query = serde_urlencoded::to_string(pairs).unwrap_or_default();
    format!("</api/submissions?{query}>; rel=\"next\"")
}

fn export_row(a: ExportedAttempt) -> CsvRow {
    CsvRow {
        missed: CsvRow::missed_of(&a.verdict),
        student: a.summary.student,
        display_name: a.display_name,
        scenario: a.summary.scenario,
        score: Some(count(a.summary.score)),
        max_score: Some(count(a.summary.max_score)),
        passed: a.summary.passed,
        submission_id: a.summary.id,
        submitted_at: time(a.summary.created_at),
        ..CsvRow::default()
    }
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
