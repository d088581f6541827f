//! The instructor's sign-in: a cookie that carries a grader token for the pages.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::auth::{self, Grader};
use crate::config::Config;
use crate::error::{AppError, ErrorBody, JsonBody};
use crate::store::Store;

pub use shared::wire::classes::{
    ClassAttemptBody, ClassBody, ClassUpdate, JoinRequest, MemberUpdate, NewClass, Preview,
    RegradeRequest, StudentAttempts, StudentClass,
};
pub use shared::wire::session::{Instructor, SignIn};

#[utoipa::path(post, path = "/api/instructor/session", tag = "classes", request_body = SignIn,
    description = "Signs an instructor in with a grader token: sets the cookie `__Host-pb_grader` (HttpOnly, Secure, \
        SameSite=Strict, Path=/, 12 hours; `pb_grader` without Secure on plain HTTP to a host other than loopback), \
        which the grader routes accept as they accept the bearer token. The token is never put in a URL.",
    responses((status = 200, description = "Signed in; Set-Cookie carries it", body = Instructor),
        (status = 401, description = "unauthorized: the token is unknown or revoked", body = ErrorBody),
        (status = 403, description = "cross_site_request", body = ErrorBody),
        // No cookie authenticates the sign-in, but it sits behind the cross-site guard.
        (status = 415, description = "unsupported_media_type", body = ErrorBody),
        (status = 422, description = "invalid_request", body = ErrorBody)))]
pub async fn sign_in(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<SignIn>,
) -> Result<Response, AppError> {
    let token = body.token.trim();
    let shaped = !token.is_empty()
        && token.len() <= 256
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let found = if shaped {
        auth::verify_token(&store, token).await?
    } else {
        None
    };
    let Some(found) = found else {
        return Err(AppError::unauthorized("the grader token is unknown or revoked").at("$.token"));
    };
    let mut response = Json(Instructor {
        administrator: found.account.is_none(),
        name: found.name,
        account: found.account,
        read_only: found.read_only,
    })
    .into_response();
    let set = auth::grader_cookie(&headers, &config, token);
    let prefixed = set.starts_with(auth::GRADER_COOKIE);
    let cookie = HeaderValue::from_str(&set).map_err(AppError::internal)?;
    response.headers_mut().append(header::SET_COOKIE, cookie);
    if prefixed {
        // An unprefixed cookie this host set before is removed; it would not count anyway.
        response.headers_mut().append(
            header::SET_COOKIE,
            HeaderValue::from_static(auth::EXPIRE_PLAIN_GRADER_COOKIE),
        );
    }
    Ok(response)
}

#[utoipa::path(get, path = "/api/instructor/session", tag = "classes",
    description = "Who is signed in: the grader token's name, the staff account it acts for (absent for a server \
        administrator's token), and whether it may only read.",
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = Instructor)))]
pub async fn whoami(grader: Grader) -> Json<Instructor> {
    Json(Instructor {
        administrator: grader.administrator(),
        name: grader.name,
        account: grader.account,
        read_only: grader.read_only,
    })
}

#[utoipa::path(delete, path = "/api/instructor/session", tag = "classes",
    description = "Signs the instructor out: expires the grader cookie.",
    responses((status = 204, description = "Signed out"),
        (status = 403, description = "cross_site_request", body = ErrorBody),
        (status = 415, description = "unsupported_media_type: a body that is not application/json", body = ErrorBody)))]
pub async fn sign_out(State(config): State<Arc<Config>>, headers: HeaderMap) -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    if let Ok(v) = HeaderValue::from_str(&auth::expire_grader_cookie(&headers, &config)) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
}
