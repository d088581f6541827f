//! `/api/session`: the anonymous student of this browser and their display name.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Session;
use crate::error::{AppError, ErrorBody, JsonBody};
use crate::store::Store;

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
    State(store): State<Store>,
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
    store.set_display_name(&student.id, name.as_deref()).await?;
    Ok(Json(SessionBody {
        student: student.id,
        display_name: name,
    }))
}
