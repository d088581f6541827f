//! The instructor's dashboard of a class: the matrix, the requirements missed most and
//! a student's attempts, as JSON or CSV.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::time;
use crate::auth::{Grader, Need};
use crate::catalogue::Catalogue;
use crate::dashboard::{self, AttemptRow, ClassData, Matrix, MissedScenario};
use crate::error::{AppError, ErrorBody, ErrorCode};
use crate::report::CsvRow;
use crate::store::{DueDates, Membership, Store};

use super::classes::{class_for, FormatQuery};
use super::members::member_of;
pub use shared::wire::classes::{
    ClassAttemptBody, ClassBody, ClassUpdate, JoinRequest, MemberUpdate, NewClass, Preview,
    RegradeRequest, StudentAttempts, StudentClass,
};
pub use shared::wire::session::{Instructor, SignIn};

/// Everything the dashboard reads of a class.
pub(super) struct Loaded {
    members: Vec<Membership>,
    attempts: Vec<crate::store::ClassAttempt>,
    regrades: Vec<crate::store::Regrade>,
    due: DueDates,
}

impl Loaded {
    pub(super) async fn of(
        store: &Store,
        class: &str,
        student: Option<&str>,
    ) -> Result<Loaded, AppError> {
        Ok(Loaded {
            members: store.members(class).await?,
            attempts: store.class_attempts(class, student).await?,
            regrades: store.regrades(Some(class), None).await?,
            due: store.due_dates(class).await?,
        })
    }

    pub(super) fn data<'a>(&'a self, class: &'a str, catalogue: &'a Catalogue) -> ClassData<'a> {
        ClassData {
            class,
            catalogue,
            members: &self.members,
            attempts: &self.attempts,
            regrades: &self.regrades,
            due: &self.due,
        }
    }
}

/// The CSV's note of a late attempt: when it was due.
fn late_note(due: &DueDates, a: &crate::store::AttemptSummary) -> String {
    match due.due(&a.student, &a.scenario) {
        Some(at) if a.created_at > at => format!("late: due {}", time(at)),
        _ => String::new(),
    }
}

pub(super) fn wants_csv(format: Option<&str>) -> Result<bool, AppError> {
    match format {
        None | Some("json") => Ok(false),
        Some("csv") => Ok(true),
        Some(other) => Err(AppError::invalid_request(format!(
            "unknown format \"{}\"; use json (the default) or csv",
            other.escape_default()
        ))
        .at("?format")),
    }
}

/// The header and an example row of the matrix's CSV, for the OpenAPI document.
pub const MATRIX_CSV_EXAMPLE: &str = "student,display_name,scenario,state,attempts,last_attempt_at,attempts_before_first_pass,outdated_attempts,late_attempts\r\n\
    s-0f8e3c2a9b7d4e61a5c3b2d1e0f9a8b7,Ada L.,safe-retry,passed,3,2026-01-12T09:30:00.000Z,2,0,1\r\n";

#[utoipa::path(get, path = "/api/classes/{id}/matrix", tag = "classes",
    description = "Students × scenarios: per student and scenario `not_tried`, `tried` or `passed`, the attempts, \
        the last attempt's time, the attempts before the first pass, the attempts whose result is from an older \
        version of the scenario, and the attempts made after the student's due date; per scenario, the class's progress. With `?format=csv`, one row per student and scenario; \
        a field that starts with `=`, `+`, `-`, `@`, a tab or a CR is written as text (a `'` before it, quoted), and \
        `bom=true` starts the file with a UTF-8 byte order mark.",
    params(("id" = String, Path, description = "The class id"), FormatQuery),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, content(
            (Matrix = "application/json"),
            (String = "text/csv", example = json!(MATRIX_CSV_EXAMPLE)))),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody)))]
pub async fn matrix(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path(id): Path<String>,
    Query(query): Query<FormatQuery>,
) -> Result<Response, AppError> {
    let csv = wants_csv(query.format.as_deref())?;
    class_for(&store, &grader, &id, Need::Read).await?;
    let loaded = Loaded::of(&store, &id, None).await?;
    let matrix = dashboard::matrix(&loaded.data(&id, &catalogue));
    if csv {
        return Ok(super::csv::csv_answer(
            dashboard::matrix_csv(&matrix),
            super::csv::Bom::asked(query.bom),
        ));
    }
    Ok(Json(matrix).into_response())
}

#[utoipa::path(get, path = "/api/classes/{id}/missed", tag = "classes",
    description = "Per scenario, the requirements the class missed, most missed first: how many students missed each \
        (in any attempt), their share of the students who tried the scenario, how many still miss it in their latest \
        attempt, and who.",
    params(("id" = String, Path, description = "The class id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = [MissedScenario]),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody)))]
pub async fn missed(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path(id): Path<String>,
) -> Result<Json<Vec<MissedScenario>>, AppError> {
    class_for(&store, &grader, &id, Need::Read).await?;
    let loaded = Loaded::of(&store, &id, None).await?;
    Ok(Json(dashboard::missed(&loaded.data(&id, &catalogue))))
}

#[utoipa::path(get, path = "/api/classes/{id}/students/{student}/attempts", tag = "classes",
    description = "A member's attempts for the class, oldest first, each with its verdict and any regraded ones.",
    params(("id" = String, Path, description = "The class id"), ("student" = String, Path, description = "The student id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = StudentAttempts),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody),
        (status = 404, description = "unknown_class, or unknown_student: not a member of the class", body = ErrorBody)))]
pub async fn student_attempts(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path((id, student)): Path<(String, String)>,
) -> Result<Json<StudentAttempts>, AppError> {
    class_for(&store, &grader, &id, Need::Read).await?;
    let member = member_of(&store, &id, &student).await?;
    let loaded = Loaded::of(&store, &id, Some(&student)).await?;
    let attempts = dashboard::student_attempts(&loaded.data(&id, &catalogue), &student);
    Ok(Json(StudentAttempts {
        class: id,
        student: member.student,
        display_name: member.display_name,
        joined_at: time(member.joined_at),
        attempts,
    }))
}

#[utoipa::path(get, path = "/api/classes/{id}/attempts/{attempt}", tag = "classes",
    description = "One attempt of the class with its design, its verdict (with the replay of each missed requirement) \
        and any regraded verdicts.",
    params(("id" = String, Path, description = "The class id"), ("attempt" = String, Path, description = "The submission id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = ClassAttemptBody),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody),
        (status = 404, description = "unknown_class, or unknown_submission: no attempt of this class has this id", body = ErrorBody)))]
pub async fn class_attempt(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path((id, attempt)): Path<(String, String)>,
) -> Result<Json<ClassAttemptBody>, AppError> {
    class_for(&store, &grader, &id, Need::Read).await?;
    let unknown = || {
        AppError::of(
            ErrorCode::UnknownSubmission,
            format!("the class has no attempt \"{}\"", attempt.escape_default()),
        )
    };
    let found = if attempt.len() > 64 {
        None
    } else {
        store.get_attempt(&attempt).await?
    };
    let found = found
        .filter(|a| a.class.as_deref() == Some(id.as_str()))
        .ok_or_else(unknown)?;
    let loaded = Loaded::of(&store, &id, Some(&found.student)).await?;
    let row = dashboard::student_attempts(&loaded.data(&id, &catalogue), &found.student)
        .into_iter()
        .find(|r| r.id == found.id)
        .ok_or_else(unknown)?;
    let display_name = store
        .membership(&id, &found.student)
        .await?
        .map(|m| m.display_name)
        .unwrap_or_default();
    Ok(Json(ClassAttemptBody {
        row,
        student: found.student,
        display_name,
        design: found.design,
    }))
}

#[utoipa::path(get, path = "/api/classes/{id}/attempts", tag = "classes",
    description = "Every attempt of the class's members, oldest first, each with its verdict and any regraded ones. \
        With `?format=csv`, one row per attempt with `student`, `display_name` (the name the student gave the class), `scenario`, \
        `score`, `max_score`, `passed`, `missed`, `submission_id`, `submitted_at`, `error` (always empty) and `note` (`late: due …` for an attempt after the student's due date, else empty), \
        as `GET /api/submissions?format=csv` writes them; a field that starts with `=`, `+`, `-`, `@`, a tab or a CR is written \
        as text (a `'` before it, quoted). `bom=true` starts the file with a UTF-8 byte order mark.",
    params(("id" = String, Path, description = "The class id"), FormatQuery),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, content(
            ([AttemptRow] = "application/json"),
            (String = "text/csv", example = json!(super::csv::CSV_EXAMPLE)))),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody)))]
pub async fn class_attempts(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path(id): Path<String>,
    Query(query): Query<FormatQuery>,
) -> Result<Response, AppError> {
    let csv = wants_csv(query.format.as_deref())?;
    class_for(&store, &grader, &id, Need::Read).await?;
    let attempts = store.class_attempts(&id, None).await?;
    let due = store.due_dates(&id).await?;
    if csv {
        // The class's name for each student: the CSV names them as the matrix does.
        let names: std::collections::BTreeMap<String, String> = store
            .members(&id)
            .await?
            .into_iter()
            .map(|m| (m.student, m.display_name))
            .collect();
        let rows: Vec<CsvRow> = attempts
            .iter()
            .map(|a| CsvRow {
                student: a.summary.student.clone(),
                display_name: names.get(&a.summary.student).cloned().unwrap_or_default(),
                scenario: a.summary.scenario.clone(),
                score: Some(super::count(a.summary.score)),
                max_score: Some(super::count(a.summary.max_score)),
                passed: a.summary.passed,
                missed: CsvRow::missed_of(&a.verdict),
                submission_id: a.summary.id.clone(),
                submitted_at: time(a.summary.created_at),
                note: late_note(&due, &a.summary),
                ..CsvRow::default()
            })
            .collect();
        return Ok(super::csv::csv_response(
            &rows,
            super::csv::Bom::asked(query.bom),
        ));
    }
    let loaded = Loaded {
        members: store.members(&id).await?,
        attempts,
        regrades: store.regrades(Some(&id), None).await?,
        due,
    };
    let data = loaded.data(&id, &catalogue);
    let mut rows = Vec::new();
    for m in &loaded.members {
        rows.extend(dashboard::student_attempts(&data, &m.student));
    }
    rows.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    Ok(Json(rows).into_response())
}
