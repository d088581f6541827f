//! `/api/drafts/{scenario}`: the design a student is working on, kept across reloads and
//! browsers. A draft may be unfinished or invalid; it is never checked.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::Json;

use super::{refuse_nul, time};
use crate::auth::Session;
use crate::catalogue::Catalogue;
use crate::config::Config;
use crate::error::{AppError, ErrorBody, ErrorCode, JsonBody};
use crate::store::Store;

pub use shared::wire::submissions::{DraftAnswer, DraftBody};

fn no_draft(scenario: &str) -> AppError {
    AppError::of(
        ErrorCode::NoDraft,
        format!("there is no draft for \"{scenario}\" yet"),
    )
}

#[utoipa::path(get, path = "/api/drafts/{scenario}", tag = "students",
    description = "The student's draft of a scenario.",
    params(("scenario" = String, Path, description = "The scenario id")),
    security(("student_cookie" = [])),
    responses((status = 200, body = DraftAnswer), (status = 401, description = "no_session", body = ErrorBody),
        (status = 404, description = "unknown_scenario or no_draft", body = ErrorBody)))]
pub async fn get_draft(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    Session(student): Session,
    Path(scenario): Path<String>,
) -> Result<Json<DraftAnswer>, AppError> {
    if catalogue.get(&scenario).is_none() {
        return Err(AppError::unknown_scenario_in_url(
            &scenario,
            format!("/api/drafts/{scenario}"),
        ));
    }
    let draft = store
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
    responses((status = 200, body = DraftAnswer), (status = 400, description = "malformed_json or ambiguous_session", body = ErrorBody),
        (status = 401, description = "no_session", body = ErrorBody),
        (status = 403, description = "cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_scenario", body = ErrorBody), (status = 413, description = "body_too_large: the body, or the student's drafts in all, are too large", body = ErrorBody),
        (status = 422, description = "invalid_request: the design is not a JSON object", body = ErrorBody)))]
pub async fn put_draft(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    State(config): State<Arc<Config>>,
    Session(student): Session,
    Path(scenario): Path<String>,
    JsonBody(body): JsonBody<DraftBody>,
) -> Result<Json<DraftAnswer>, AppError> {
    if catalogue.get(&scenario).is_none() {
        return Err(AppError::unknown_scenario_in_url(
            &scenario,
            format!("/api/drafts/{scenario}"),
        ));
    }
    if !body.design.is_object() {
        return Err(
            AppError::invalid_request("a draft's design must be a JSON object").at("$.design"),
        );
    }
    refuse_nul(&body.design, "$.design")?;
    // A student's drafts together stay within the cap (one per scenario, each within the
    // body limit, and all of them within `draft_bytes_per_student`).
    let size = serde_json::to_string(&body.design).map_or(0, |t| t.chars().count()) as u64;
    let others = store.draft_bytes(&student.id, &scenario).await?;
    let cap = config.draft_bytes_per_student as u64;
    if others.saturating_add(size) > cap {
        return Err(AppError::of(ErrorCode::BodyTooLarge,
            format!("a student's drafts may hold {cap} bytes in all; this one ({size} bytes) would bring them to {}", others + size),
        )
        .at("$.design"));
    }
    let draft = store
        .put_draft(&student.id, &scenario, &body.design)
        .await?;
    Ok(Json(DraftAnswer {
        scenario: draft.scenario,
        design: draft.design,
        updated_at: time(draft.updated_at),
    }))
}
