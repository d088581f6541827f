//! The one error type of the HTTP boundary, and the JSON body extractor that turns a bad body
//! into the same error shape.
//!
//! Every error is `{"error": {"code", "message", "path"?}}`. A 5xx never carries internal
//! detail: the log says what happened, the body says only that it happened.

use std::fmt;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::Value as Json;
use shared::DesignError;

use crate::bounds;

pub use shared::wire::errors::{ErrorBody, ErrorCode, ErrorDetail};

/// The HTTP status of an error code, which only the server needs.
pub trait CodeStatus {
    /// The HTTP status every answer with this code has: a code is answered with one status,
    /// always.
    fn status(self) -> StatusCode;
}

impl CodeStatus for ErrorCode {
    fn status(self) -> StatusCode {
        match self {
            ErrorCode::MalformedJson
            | ErrorCode::InvalidIdempotencyKey
            | ErrorCode::BadRequest
            | ErrorCode::AmbiguousSession => StatusCode::BAD_REQUEST,
            ErrorCode::Unauthorized | ErrorCode::NoSession => StatusCode::UNAUTHORIZED,
            ErrorCode::Forbidden | ErrorCode::CrossSiteRequest | ErrorCode::NotAMember => {
                StatusCode::FORBIDDEN
            }
            ErrorCode::UnknownScenario
            | ErrorCode::UnknownSubmission
            | ErrorCode::NoDraft
            | ErrorCode::NotFound
            | ErrorCode::UnknownClass
            | ErrorCode::UnknownStudent => StatusCode::NOT_FOUND,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::Timeout => StatusCode::REQUEST_TIMEOUT,
            ErrorCode::IdempotencyKeyInFlight
            | ErrorCode::ClassClosed
            | ErrorCode::ClassLimitReached
            | ErrorCode::FileNotTryable
            | ErrorCode::PastDue => StatusCode::CONFLICT,
            ErrorCode::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::UnexpectedHost => StatusCode::MISDIRECTED_REQUEST,
            ErrorCode::InvalidRequest
            | ErrorCode::InvalidDesign
            | ErrorCode::GraphTooLarge
            | ErrorCode::CheckTooLarge
            | ErrorCode::IdempotencyKeyReused
            | ErrorCode::ScenarioMismatch => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::DatabaseUnavailable
            | ErrorCode::NotConfigured
            | ErrorCode::PlatformUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// An error answered to a client.
#[derive(Clone, Debug, PartialEq)]
pub struct AppError {
    pub status: StatusCode,
    pub code: ErrorCode,
    pub message: String,
    pub path: Option<String>,
    pub details: Option<Vec<DesignError>>,
    /// Seconds after which a retry may succeed; sent as `Retry-After`.
    pub retry_after_seconds: Option<u64>,
}

impl AppError {
    /// An error with `code`, answered with the code's status ([`ErrorCode::status`]).
    pub fn of(code: ErrorCode, message: impl Into<String>) -> AppError {
        AppError {
            status: code.status(),
            code,
            message: message.into(),
            path: None,
            details: None,
            retry_after_seconds: None,
        }
    }

    /// Tells the client when a retry may succeed.
    pub fn retry_after(mut self, seconds: u64) -> AppError {
        self.retry_after_seconds = Some(seconds);
        self
    }

    pub fn at(mut self, path: impl Into<String>) -> AppError {
        self.path = Some(path.into());
        self
    }

    pub fn invalid_request(message: impl Into<String>) -> AppError {
        AppError::of(ErrorCode::InvalidRequest, message)
    }

    pub fn unknown_scenario(id: &str) -> AppError {
        AppError::of(
            ErrorCode::UnknownScenario,
            format!("there is no scenario \"{id}\"; GET /api/scenarios lists them"),
        )
        .at("$.scenario")
    }

    /// An unknown scenario named by the URL (`/api/scenarios/{id}/check`): the error's path is
    /// the URL's path, since the body does not name it.
    pub fn unknown_scenario_in_url(id: &str, url: impl Into<String>) -> AppError {
        AppError::of(
            ErrorCode::UnknownScenario,
            format!(
                "there is no scenario \"{id}\" (the URL names it); GET /api/scenarios lists them"
            ),
        )
        .at(url)
    }

    /// The same error with its paths (and its details' paths) moved under `prefix`: `$.nodes`
    /// under `$.design` is `$.design.nodes`. Paths that are not JSON paths (a URL, `?format`)
    /// stay as they are.
    pub fn under(mut self, prefix: &str) -> AppError {
        let rebase = |path: &str| match path.strip_prefix('$') {
            Some(rest) => format!("{prefix}{rest}"),
            None => path.to_string(),
        };
        if let Some(path) = &self.path {
            self.path = Some(rebase(path));
        }
        for detail in self.details.iter_mut().flatten() {
            detail.path = rebase(&detail.path);
        }
        self
    }

    pub fn unauthorized(message: impl Into<String>) -> AppError {
        AppError::of(ErrorCode::Unauthorized, message)
    }

    pub fn forbidden(message: impl Into<String>) -> AppError {
        AppError::of(ErrorCode::Forbidden, message)
    }

    /// A failure on our side. The cause goes to the log, never to the client.
    pub fn internal(cause: impl std::fmt::Display) -> AppError {
        tracing::error!(%cause, "internal error");
        AppError::of(
            ErrorCode::Internal,
            "something went wrong on the server; the log says what",
        )
    }

    /// The database cannot be reached. The route needs it; a retry after a few seconds may
    /// succeed, and `POST /api/scenarios/{id}/check` keeps working meanwhile.
    pub fn unavailable(cause: impl std::fmt::Display) -> AppError {
        tracing::error!(%cause, "database unavailable");
        AppError::of(ErrorCode::DatabaseUnavailable,
            "the database is not reachable; try again in a few seconds (checking a design still works)",
        )
        .retry_after(DATABASE_RETRY_AFTER_SECONDS)
    }

    /// The error's body. What it echoes of the client's input is clipped
    /// ([`crate::bounds`]): a hostile body cannot make a large answer, nor a large stored one.
    pub fn body(&self) -> Json {
        serde_json::to_value(ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: bounds::clip_message(&self.message),
                path: self.path.as_deref().map(bounds::clip_path),
                details: self.details.as_deref().map(bounds::clip_details),
            },
        })
        .unwrap_or(Json::Null)
    }
}

/// What a client is told to wait before retrying a route that needs the database.
pub const DATABASE_RETRY_AFTER_SECONDS: u64 = 2;

/// True when `e` says the database cannot be reached (as opposed to a query that is wrong):
/// no connection to be had, a connection that broke, or a server that is shutting down or
/// refusing connections. These are answered 503 with `Retry-After`, never 500.
pub fn is_connection_error(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            // SQLSTATE classes 08 (connection exception), 53 (insufficient resources), 57P
            // (operator intervention: shutdown, crash, cannot connect now).
            code.starts_with("08") || code.starts_with("53") || code.starts_with("57P")
        }),
        _ => false,
    }
}

impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> AppError {
        if is_connection_error(&e) {
            AppError::unavailable(e)
        } else {
            AppError::internal(e)
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let mut response = json_response(self.status, &self.body());
        if let Some(seconds) = self.retry_after_seconds {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// A JSON answer with the given status.
pub fn json_response(status: StatusCode, body: &Json) -> Response {
    json_text_response(
        status,
        serde_json::to_vec(body).unwrap_or_else(|_| b"null".to_vec()),
    )
}

/// [`json_response`] of a body written out already.
pub fn json_text_response(status: StatusCode, bytes: Vec<u8>) -> Response {
    let mut response = (status, bytes).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Reads the request body as JSON, whatever its content type (graders' scripts often forget
/// it; the routes a browser's cookie authenticates insist on `application/json` before this
/// runs, see `crate::auth::refuse_cross_site`), mapping every failure to an [`AppError`]: an oversized body to `body_too_large`,
/// bad syntax to `malformed_json`, the wrong shape to `invalid_request`.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read_body(req, state).await?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// Reads the whole body; the size limit is tower-http's `RequestBodyLimitLayer`.
pub async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, AppError> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            body_too_large()
        } else if is_body_timeout(&rejection) {
            body_timeout()
        } else {
            AppError::of(
                ErrorCode::MalformedJson,
                format!("the request body could not be read: {rejection}"),
            )
        }
    })
}

/// Why a request body stopped: it took longer than the server's body-read timeout
/// (`crate::app`'s deadline on every request body).
#[derive(Debug)]
pub struct BodyTimedOut;

impl fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the request body took too long to arrive")
    }
}

impl std::error::Error for BodyTimedOut {}

/// True when reading the body failed because of [`BodyTimedOut`].
fn is_body_timeout(rejection: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(rejection);
    while let Some(e) = cause {
        if e.is::<BodyTimedOut>() || e.to_string().contains(&BodyTimedOut.to_string()) {
            return true;
        }
        cause = e.source();
    }
    false
}

/// 408: the body did not arrive within the body-read timeout.
pub fn body_timeout() -> AppError {
    AppError::of(
        ErrorCode::Timeout,
        "the request body took too long to arrive and was refused",
    )
}

pub fn body_too_large() -> AppError {
    AppError::of(
        ErrorCode::BodyTooLarge,
        "the request body is larger than this server accepts",
    )
}

/// Parses JSON text into `T` with the error codes of [`JsonBody`].
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AppError> {
    let value: Json = serde_json::from_slice(bytes).map_err(|e| {
        AppError::of(
            ErrorCode::MalformedJson,
            format!("the request body is not valid JSON: {e}"),
        )
        .at("$")
    })?;
    from_value(value)
}

/// Converts parsed JSON into `T`, naming what is wrong with its shape.
pub fn from_value<T: DeserializeOwned>(value: Json) -> Result<T, AppError> {
    serde_json::from_value(value).map_err(|e| {
        AppError::invalid_request(format!("the request body has the wrong shape: {e}")).at("$")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_written_as_its_snake_case_name() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert_eq!(
                serde_json::to_value(code).unwrap(),
                Json::String(code.as_str().to_string())
            );
            assert_eq!(
                serde_json::from_value::<ErrorCode>(Json::String(code.to_string())).unwrap(),
                code
            );
            assert!(seen.insert(code.as_str()), "{code} is listed twice");
        }
    }
}
