//! `/api/session`: the anonymous student of this browser and their display name.
//!
//! `POST /api/session` is the only route that makes a session or sets its cookie; the web
//! app calls it once when it starts.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::auth::{self, Presented, Session};
use crate::config::Config;
use crate::error::{AppError, ErrorBody, JsonBody};
use crate::store::{Store, Student};

pub use shared::wire::session::{SessionBody, SessionUpdate};

fn view(student: Student) -> Json<SessionBody> {
    Json(SessionBody {
        student: student.id,
        display_name: student.display_name,
    })
}

#[utoipa::path(get, path = "/api/session", tag = "students",
    description = "The student of this browser's session. Never makes one: without a session → 401 `no_session`.",
    security(("student_cookie" = [])),
    responses((status = 200, body = SessionBody),
        (status = 400, description = "ambiguous_session: two session cookies", body = ErrorBody),
        (status = 401, description = "no_session", body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn get_session(Session(student): Session) -> Json<SessionBody> {
    view(student)
}

#[utoipa::path(post, path = "/api/session", tag = "students",
    description = "Starts this browser's session, or answers the one it has. Without a valid session, makes one \
        and sets its cookie: `__Host-pb_session` (HttpOnly, Secure, SameSite=Lax, Path=/) over HTTPS and on a \
        loopback host, `pb_session` without Secure on plain HTTP to another host. The only route that sets the \
        session cookie. An old `pb_student` cookie is exchanged once for a session of the same student, and expired. \
        Refused when another site makes the request (403 `cross_site_request`).",
    responses((status = 200, description = "The session the browser has", body = SessionBody),
        (status = 201, description = "A new session; Set-Cookie carries it", body = SessionBody),
        (status = 400, description = "ambiguous_session: two session cookies", body = ErrorBody),
        (status = 403, description = "cross_site_request", body = ErrorBody),
        (status = 415, description = "unsupported_media_type: a body that is not application/json", body = ErrorBody),
        (status = 503, body = ErrorBody)))]
pub async fn post_session(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    if matches!(auth::presented_session(&headers), Presented::Ambiguous) {
        return Err(auth::ambiguous_session());
    }
    if let Some(student) = auth::session_student(&headers, &store).await? {
        return Ok(view(student).into_response());
    }
    let secret = auth::new_session_secret().map_err(AppError::internal)?;
    let secret_hash = auth::hash_token(&secret);
    let legacy = auth::legacy_cookie(&headers);
    let redeemed = match &legacy {
        Some(old) => store.redeem_legacy_student(old, &secret_hash).await?,
        None => None,
    };
    let student = match redeemed {
        Some(student) => {
            tracing::debug!(student = %student.id, "an old session cookie exchanged for a new session");
            student
        }
        None => {
            let student = store
                .create_session(&auth::new_student_id(), &secret_hash)
                .await?;
            tracing::debug!(student = %student.id, "new student session");
            student
        }
    };
    let mut response = (StatusCode::CREATED, view(student)).into_response();
    let cookie = HeaderValue::from_str(&auth::session_cookie(&headers, &config, &secret))
        .map_err(AppError::internal)?;
    response.headers_mut().append(header::SET_COOKIE, cookie);
    if legacy.is_some() {
        response.headers_mut().append(
            header::SET_COOKIE,
            HeaderValue::from_static(auth::EXPIRE_LEGACY_COOKIE),
        );
    }
    // A stale unprefixed cookie (say, from before the server was put behind TLS) would make
    // every later request carry two session cookies: expire it.
    if auth::cookie_name(&headers, &config) == auth::COOKIE
        && matches!(auth::presented_session(&headers), Presented::One(_))
    {
        response.headers_mut().append(
            header::SET_COOKIE,
            HeaderValue::from_static(auth::EXPIRE_PLAIN_COOKIE),
        );
    }
    Ok(response)
}

#[utoipa::path(put, path = "/api/session", tag = "students", request_body = SessionUpdate,
    description = "Sets or removes the student's display name.",
    security(("student_cookie" = [])),
    responses((status = 200, body = SessionBody),
        (status = 401, description = "no_session", body = ErrorBody),
        (status = 403, description = "cross_site_request", body = ErrorBody),
        (status = 422, description = "invalid_request", body = ErrorBody)))]
pub async fn put_session(
    State(store): State<Store>,
    Session(student): Session,
    JsonBody(update): JsonBody<SessionUpdate>,
) -> Result<Json<SessionBody>, AppError> {
    // The name is judged as it was sent, as the document states it, and stored trimmed.
    if let Some(n) = &update.display_name {
        if n.chars().count() > 80 || n.chars().any(char::is_control) {
            return Err(AppError::invalid_request(
                "a display name has at most 80 characters and no control characters",
            )
            .at("$.display_name"));
        }
    }
    let name = update
        .display_name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty());
    store.set_display_name(&student.id, name.as_deref()).await?;
    Ok(Json(SessionBody {
        student: student.id,
        display_name: name,
    }))
}
