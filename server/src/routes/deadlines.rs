//! `/api/classes/{id}/deadlines` and extensions: a class's due dates (the whole class's, each
//! scenario's), its late policy, and later due dates for one student.
//!
//! Any role reads them; the owner sets the due dates and the policy; a TA or the owner grants
//! and takes back extensions. Every change goes to the audit log.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::IntoParams;

use super::classes::class_for;
use super::members::member_of;
use super::time;
use crate::auth::{Grader, Need};
use crate::catalogue::Catalogue;
use crate::error::{AppError, ErrorBody, ErrorCode, JsonBody};
use crate::store::{DueDates, Store};

pub use shared::wire::classes::{
    Deadlines, DeadlinesUpdate, Extension, ExtensionRequest, LatePolicy, ScenarioDue,
};

/// An RFC 3339 moment as a body gives it, or 422 `invalid_request` at `at`.
fn moment(text: &str, at: &str) -> Result<DateTime<Utc>, AppError> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            AppError::invalid_request(
                "a due date is an RFC 3339 moment with its zone, such as 2026-12-10T17:00:00Z",
            )
            .at(at)
        })
}

/// The deadlines of a class as the API answers them, members' names included.
async fn deadlines_body(store: &Store, class: &str, due: DueDates) -> Result<Deadlines, AppError> {
    let names: BTreeMap<String, String> = store
        .members(class)
        .await?
        .into_iter()
        .map(|m| (m.student, m.display_name))
        .collect();
    Ok(Deadlines {
        due_at: due.due_at.map(time),
        late_policy: due.late_policy,
        scenarios: due
            .scenarios
            .into_iter()
            .map(|d| ScenarioDue {
                scenario: d.scenario,
                due_at: time(d.due_at),
                source: d.source,
            })
            .collect(),
        extensions: due
            .extensions
            .into_iter()
            .map(|e| Extension {
                display_name: names.get(&e.student).cloned().unwrap_or_default(),
                student: e.student,
                scenario: (!e.scenario.is_empty()).then_some(e.scenario),
                due_at: time(e.due_at),
                set_by: e.set_by,
                set_at: time(e.set_at),
            })
            .collect(),
    })
}

#[utoipa::path(get, path = "/api/classes/{id}/deadlines", tag = "classes",
    description = "The class's due dates: the whole class's (`due_at`), each scenario's own (staff's, or the learning \
        platform's line item's `endDateTime`), the late policy, and the students' extensions. A student's due date for \
        a scenario is, first found: their extension for it, their extension for every scenario, the scenario's, the \
        class's. Any role in the class may read them.",
    params(("id" = String, Path, description = "The class id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = Deadlines),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody)))]
pub async fn get_deadlines(
    State(store): State<Store>,
    grader: Grader,
    Path(id): Path<String>,
) -> Result<Json<Deadlines>, AppError> {
    class_for(&store, &grader, &id, Need::Read).await?;
    let due = store.due_dates(&id).await?;
    Ok(Json(deadlines_body(&store, &id, due).await?))
}

#[utoipa::path(put, path = "/api/classes/{id}/deadlines", tag = "classes", request_body = DeadlinesUpdate,
    description = "Sets the class's due dates and late policy: `due_at` for every scenario without one of its own (null: \
        none), `scenarios` each scenario's own (they replace every due date staff set before; one the learning platform \
        gave stays unless staff set one), and `late_policy`: `accept` records a late attempt and marks it (grade passback \
        sends the best on-time score), `refuse` answers it 409 `past_due` and records nothing. Only the owner may; the \
        audit log records it.",
    params(("id" = String, Path, description = "The class id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = Deadlines),
        (status = 403, description = "forbidden: not the class's owner, or a read-only token; or cross_site_request", body = ErrorBody),
        (status = 422, description = "invalid_request: a date that is not RFC 3339 with its zone, a scenario the catalogue does not have, or a late policy other than accept or refuse", body = ErrorBody)))]
pub async fn set_deadlines(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<DeadlinesUpdate>,
) -> Result<Json<Deadlines>, AppError> {
    class_for(&store, &grader, &id, Need::Own).await?;
    let due_at = body
        .due_at
        .as_deref()
        .map(|d| moment(d, "$.due_at"))
        .transpose()?;
    let mut scenarios = BTreeMap::new();
    for (scenario, due) in &body.scenarios {
        let at = format!("$.scenarios.{scenario}");
        if catalogue.get(scenario).is_none() {
            return Err(AppError::unknown_scenario(scenario).at(at));
        }
        scenarios.insert(scenario.clone(), moment(due, &at)?);
    }
    let mut said: Vec<String> = vec![match due_at {
        Some(d) => format!("class due {}", time(d)),
        None => "no class due date".to_string(),
    }];
    said.extend(
        scenarios
            .iter()
            .map(|(s, d)| format!("{s} due {}", time(*d))),
    );
    said.push(format!("late attempts: {}", body.late_policy.as_str()));
    store
        .set_due_dates(
            &id,
            due_at,
            body.late_policy,
            &scenarios,
            &grader.actor(),
            &said.join("; "),
        )
        .await?;
    let due = store.due_dates(&id).await?;
    Ok(Json(deadlines_body(&store, &id, due).await?))
}

#[utoipa::path(put, path = "/api/classes/{id}/students/{student}/extension", tag = "classes", request_body = ExtensionRequest,
    description = "Gives a member a due date of their own, for one scenario or (without `scenario`) every one, replacing \
        the extension given there before. A TA or the owner may; the audit log records it.",
    params(("id" = String, Path, description = "The class id"), ("student" = String, Path, description = "The student id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = Extension),
        (status = 403, description = "forbidden: the account is not a TA or owner of the class, or the token is read-only; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class, unknown_student (not a member) or unknown_scenario", body = ErrorBody),
        (status = 422, description = "invalid_request: a date that is not RFC 3339 with its zone", body = ErrorBody)))]
pub async fn grant_extension(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path((id, student)): Path<(String, String)>,
    JsonBody(body): JsonBody<ExtensionRequest>,
) -> Result<Json<Extension>, AppError> {
    class_for(&store, &grader, &id, Need::Work).await?;
    let display_name = member_of(&store, &id, &student).await?.display_name;
    let scenario = body.scenario.clone().unwrap_or_default();
    if !scenario.is_empty() && catalogue.get(&scenario).is_none() {
        return Err(AppError::unknown_scenario(&scenario).at("$.scenario"));
    }
    let due_at = moment(&body.due_at, "$.due_at")?;
    let set_by = grader.actor();
    let set_at = store
        .set_extension(&id, &student, &scenario, due_at, &set_by)
        .await?;
    Ok(Json(Extension {
        student,
        display_name,
        scenario: body.scenario,
        due_at: time(due_at),
        set_by,
        set_at: time(set_at),
    }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExtensionQuery {
    /// The scenario whose extension to take back; left out, the one for every scenario.
    pub scenario: Option<String>,
}

#[utoipa::path(delete, path = "/api/classes/{id}/students/{student}/extension", tag = "classes",
    description = "Takes a member's extension back (for `?scenario=`, or the one for every scenario): the class's due \
        dates apply again. A TA or the owner may; the audit log records it.",
    params(("id" = String, Path, description = "The class id"), ("student" = String, Path, description = "The student id"), ExtensionQuery),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 204, description = "Taken back"),
        (status = 400, description = "bad_request: an unreadable query string", body = ErrorBody),
        (status = 403, description = "forbidden: the account is not a TA or owner of the class, or the token is read-only; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class, unknown_student, or not_found: no such extension", body = ErrorBody)))]
pub async fn remove_extension(
    State(store): State<Store>,
    grader: Grader,
    Path((id, student)): Path<(String, String)>,
    Query(query): Query<ExtensionQuery>,
) -> Result<Response, AppError> {
    class_for(&store, &grader, &id, Need::Work).await?;
    member_of(&store, &id, &student).await?;
    let scenario = query.scenario.unwrap_or_default();
    if !store
        .remove_extension(&id, &student, &scenario, &grader.actor())
        .await?
    {
        return Err(AppError::of(
            ErrorCode::NotFound,
            "the member has no such extension",
        ));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
