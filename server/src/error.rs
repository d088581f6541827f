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
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use shared::DesignError;
use utoipa::ToSchema;

use crate::bounds;

/// What went wrong, for machines: the `code` of every error body. The names are stable (clients
/// and graders' scripts match on them), so a variant is never renamed, only added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// 400: the body is not JSON, or could not be read.
    MalformedJson,
    /// 422: the body is JSON of the wrong shape, or a value in it is refused.
    InvalidRequest,
    /// 422: the design breaks the design format's rules; `details` lists every problem.
    InvalidDesign,
    /// 422: the design has more nodes or edges than a check accepts.
    GraphTooLarge,
    /// 422: the check would explore more failure schedules or steps than the server allows.
    CheckTooLarge,
    /// 413: the body is larger than the route accepts.
    BodyTooLarge,
    /// 404: no scenario has this id.
    UnknownScenario,
    /// 404: no submission has this id.
    UnknownSubmission,
    /// 404: the student has kept no draft of this scenario.
    NoDraft,
    /// 401: no grader token, or one that is malformed, unknown or revoked.
    Unauthorized,
    /// 403: the caller may not see or do this (another student's attempt).
    Forbidden,
    /// 422: an `Idempotency-Key` already used with another body.
    IdempotencyKeyReused,
    /// 409: the request that first used this `Idempotency-Key` is still running.
    IdempotencyKeyInFlight,
    /// 400: an `Idempotency-Key` that is empty, too long or not visible ASCII.
    InvalidIdempotencyKey,
    /// 404: no route or file at this path.
    NotFound,
    /// 405: the route does not accept this method.
    MethodNotAllowed,
    /// 415: a body that must be JSON was sent as something else.
    UnsupportedMediaType,
    /// 400: an unreadable query string or path.
    BadRequest,
    /// 408: the request took longer than the server allows.
    Timeout,
    /// 429: the client made too many requests; `Retry-After` says when to retry.
    RateLimited,
    /// 503: the database cannot be reached; `Retry-After` says when to retry.
    DatabaseUnavailable,
    /// 500: a failure on the server's side; the log says what.
    Internal,
    /// 401: the route needs a student session and the request has none (or an unknown
    /// one); `POST /api/session` makes one.
    NoSession,
    /// 400: the request carries more than one session cookie, so whose it is is unclear.
    AmbiguousSession,
    /// 403: a state-changing request that another site made (its `Origin` or
    /// `Sec-Fetch-Site` says so).
    CrossSiteRequest,
    /// 404: no class has this id or join code.
    UnknownClass,
    /// 409: the class is closed: it takes no new members and no attempts.
    ClassClosed,
    /// 403: the student is not a member of the class the request names.
    NotAMember,
    /// 404: the class has no member with this student id.
    UnknownStudent,
    /// 422: the uploaded file is the canvas's export of another scenario than the one graded.
    ScenarioMismatch,
    /// 421: the request's `Host` is not a name this server answers to for the route (the
    /// author's routes answer only to a loopback name or the public URL's host).
    UnexpectedHost,
    /// 409: the grader token has made as many classes as one token may.
    ClassLimitReached,
    /// 409: the scenario file being edited does not read as a scenario yet, so no design can
    /// be tried on it; the file's problems say why.
    FileNotTryable,
}

impl ErrorCode {
    /// Every code, in the order of the enum.
    pub const ALL: [ErrorCode; 33] = [
        ErrorCode::MalformedJson,
        ErrorCode::InvalidRequest,
        ErrorCode::InvalidDesign,
        ErrorCode::GraphTooLarge,
        ErrorCode::CheckTooLarge,
        ErrorCode::BodyTooLarge,
        ErrorCode::UnknownScenario,
        ErrorCode::UnknownSubmission,
        ErrorCode::NoDraft,
        ErrorCode::Unauthorized,
        ErrorCode::Forbidden,
        ErrorCode::IdempotencyKeyReused,
        ErrorCode::IdempotencyKeyInFlight,
        ErrorCode::InvalidIdempotencyKey,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::BadRequest,
        ErrorCode::Timeout,
        ErrorCode::RateLimited,
        ErrorCode::DatabaseUnavailable,
        ErrorCode::Internal,
        ErrorCode::NoSession,
        ErrorCode::AmbiguousSession,
        ErrorCode::CrossSiteRequest,
        ErrorCode::UnknownClass,
        ErrorCode::ClassClosed,
        ErrorCode::NotAMember,
        ErrorCode::UnknownStudent,
        ErrorCode::ScenarioMismatch,
        ErrorCode::UnexpectedHost,
        ErrorCode::ClassLimitReached,
        ErrorCode::FileNotTryable,
    ];

    /// The code as it is written in an error body.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::MalformedJson => "malformed_json",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::InvalidDesign => "invalid_design",
            ErrorCode::GraphTooLarge => "graph_too_large",
            ErrorCode::CheckTooLarge => "check_too_large",
            ErrorCode::BodyTooLarge => "body_too_large",
            ErrorCode::UnknownScenario => "unknown_scenario",
            ErrorCode::UnknownSubmission => "unknown_submission",
            ErrorCode::NoDraft => "no_draft",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::IdempotencyKeyReused => "idempotency_key_reused",
            ErrorCode::IdempotencyKeyInFlight => "idempotency_key_in_flight",
            ErrorCode::InvalidIdempotencyKey => "invalid_idempotency_key",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::Timeout => "timeout",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::DatabaseUnavailable => "database_unavailable",
            ErrorCode::Internal => "internal",
            ErrorCode::NoSession => "no_session",
            ErrorCode::AmbiguousSession => "ambiguous_session",
            ErrorCode::CrossSiteRequest => "cross_site_request",
            ErrorCode::UnknownClass => "unknown_class",
            ErrorCode::ClassClosed => "class_closed",
            ErrorCode::NotAMember => "not_a_member",
            ErrorCode::UnknownStudent => "unknown_student",
            ErrorCode::ScenarioMismatch => "scenario_mismatch",
            ErrorCode::UnexpectedHost => "unexpected_host",
            ErrorCode::ClassLimitReached => "class_limit_reached",
            ErrorCode::FileNotTryable => "file_not_tryable",
        }
    }

    /// The HTTP status every answer with this code has: a code is answered with one status,
    /// always.
    pub const fn status(self) -> StatusCode {
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
            | ErrorCode::FileNotTryable => StatusCode::CONFLICT,
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
            ErrorCode::DatabaseUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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

/// The body of every error answer.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Machine-readable and stable; clients match on it.
    pub code: ErrorCode,
    /// A sentence a person can act on.
    pub message: String,
    /// What the error is about, when it is one thing: a JSON path in the request body
    /// (`$.design.nodes[1].kind`; `$[4].design…` in a batch), a query parameter (`?format`), or
    /// the URL's path when the URL names something unknown (`/api/scenarios/no-such/check`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub path: Option<String>,
    /// For `invalid_design`: every problem of the design, each with its path.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub details: Option<Vec<DesignError>>,
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
    let bytes = serde_json::to_vec(body).unwrap_or_else(|_| b"null".to_vec());
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
