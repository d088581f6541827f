//! `/api/classes/{id}/gradebook` and scores set by hand: each member's best current score
//! per scenario and a total, as JSON or as a wide CSV; staff (a TA or the owner) override a
//! member's score at a scenario with a reason, kept beside the computed one and used by grade
//! passback.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::classes::{class_for, FormatQuery};
use super::dashboard::wants_csv;
use super::dashboard::Loaded;
use super::members::member_of;
use super::time;
use crate::auth::{Grader, Need};
use crate::catalogue::Catalogue;
use crate::error::{AppError, ErrorBody, ErrorCode, JsonBody};
use crate::gradebook::{self, Gradebook};
use crate::store::Store;

pub use shared::wire::classes::{OverrideRequest, ScoreOverride};

/// The header and an example of the gradebook's CSV, for the OpenAPI document.
pub const GRADEBOOK_CSV_EXAMPLE: &str = "student,display_name,lti_issuer,lti_subject,safe-retry,safe-rerun,total,max_total,overrides\r\n\
    ,(most points),,,3,3,6,6,\r\n\
    s-0f8e3c2a9b7d4e61a5c3b2d1e0f9a8b7,Ada L.,https://lms.example.edu,u-1842,3,2,5,6,safe-rerun: 2 set by lea (computed 1): late upload accepted\r\n";

#[utoipa::path(get, path = "/api/classes/{id}/gradebook", tag = "classes",
    description = "The class's gradebook: per member (by display name) their identity on the learning platform when they came \
        by a launch, per scenario the best score of their attempts for the class (each counted by its current result: \
        a regraded verdict where there is one), the score staff set by hand beside it, the score that counts, and a total. \
        With `?format=csv`, one row per member: `student`, `display_name`, `lti_issuer`, `lti_subject`, one column per \
        scenario (its id) with the score that counts (empty: no attempt), `total`, `max_total`, and `overrides` (which \
        scores were set by hand, from what, by whom and why); the first row under the header gives each scenario's most \
        points. Any role in the class may read it.",
    params(("id" = String, Path, description = "The class id"), FormatQuery),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, content(
            (Gradebook = "application/json"),
            (String = "text/csv", example = json!(GRADEBOOK_CSV_EXAMPLE)))),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody)))]
pub async fn get_gradebook(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path(id): Path<String>,
    Query(query): Query<FormatQuery>,
) -> Result<Response, AppError> {
    let csv = wants_csv(query.format.as_deref())?;
    class_for(&store, &grader, &id, Need::Read).await?;
    let loaded = Loaded::of(&store, &id, None).await?;
    let overrides = store.class_overrides(&id).await?;
    let identities = store.member_identities(&id).await?;
    let book = gradebook::gradebook(&loaded.data(&id, &catalogue), &overrides, &identities);
    if csv {
        return Ok(super::csv::csv_answer(
            gradebook::gradebook_csv(&book),
            super::csv::Bom::asked(query.bom),
        ));
    }
    Ok(Json(book).into_response())
}

/// The member `student` of `class` and the most points of `scenario`, or why not.
async fn member_and_points(
    store: &Store,
    catalogue: &Catalogue,
    class: &str,
    student: &str,
    scenario: &str,
) -> Result<u32, AppError> {
    let entry = super::scenario_entry(catalogue, scenario)?;
    member_of(store, class, student).await?;
    Ok(entry.scenario().requirements.iter().map(|r| r.points).sum())
}

#[utoipa::path(put, path = "/api/classes/{id}/students/{student}/scores/{scenario}", tag = "classes", request_body = OverrideRequest,
    description = "Sets a member's score at a scenario by hand, with a reason, replacing one set before. It is kept beside the \
        computed score (the gradebook shows both), counts in the gradebook's total, and is the score grade passback sends. \
        A TA or the owner may; the audit log records it.",
    params(("id" = String, Path, description = "The class id"), ("student" = String, Path, description = "The student id"),
        ("scenario" = String, Path, description = "The scenario id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = ScoreOverride),
        (status = 403, description = "forbidden: the account is not a TA or owner of the class, or the token is read-only; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class, unknown_student (not a member) or unknown_scenario", body = ErrorBody),
        (status = 422, description = "invalid_request: a score above the scenario's most points, or a reason empty, longer than 500 characters or with control characters", body = ErrorBody)))]
pub async fn set_score(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path((id, student, scenario)): Path<(String, String, String)>,
    JsonBody(body): JsonBody<OverrideRequest>,
) -> Result<Json<ScoreOverride>, AppError> {
    class_for(&store, &grader, &id, Need::Work).await?;
    let most = member_and_points(&store, &catalogue, &id, &student, &scenario).await?;
    if body.score > most {
        return Err(AppError::invalid_request(format!(
            "{scenario} is worth at most {most} points"
        ))
        .at("$.score"));
    }
    let reason = body.reason.trim();
    if reason.is_empty() || reason.chars().count() > 500 || reason.chars().any(char::is_control) {
        return Err(
            AppError::invalid_request("say why in 1 to 500 characters, on one line").at("$.reason"),
        );
    }
    let by = grader.actor();
    let score = i32::try_from(body.score).unwrap_or(i32::MAX);
    let most = i32::try_from(most).unwrap_or(i32::MAX);
    let at = store
        .set_override(&id, &student, &scenario, score, most, reason, &by)
        .await?;
    Ok(Json(ScoreOverride {
        score: body.score,
        reason: reason.to_string(),
        by,
        at: time(at),
    }))
}

#[utoipa::path(delete, path = "/api/classes/{id}/students/{student}/scores/{scenario}", tag = "classes",
    description = "Removes the score set by hand for a member at a scenario: the computed one counts again (and grade passback \
        sends it). A TA or the owner may; the audit log records it.",
    params(("id" = String, Path, description = "The class id"), ("student" = String, Path, description = "The student id"),
        ("scenario" = String, Path, description = "The scenario id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 204, description = "Removed"),
        (status = 403, description = "forbidden: the account is not a TA or owner of the class, or the token is read-only; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class, unknown_student, unknown_scenario, or not_found: no score was set by hand there", body = ErrorBody)))]
pub async fn remove_score(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path((id, student, scenario)): Path<(String, String, String)>,
) -> Result<Response, AppError> {
    class_for(&store, &grader, &id, Need::Work).await?;
    member_and_points(&store, &catalogue, &id, &student, &scenario).await?;
    if !store
        .remove_override(&id, &student, &scenario, &grader.actor())
        .await?
    {
        return Err(AppError::of(
            ErrorCode::NotFound,
            "no score was set by hand for this member at this scenario",
        ));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
