//! The one error type of the HTTP boundary, and the JSON body extractor that turns a bad body
//! into the same error shape.
//!
//! Every error is `{"error": {"code", "message", "path"?}}`. A 5xx never carries internal
//! detail: the log says what happened, the body says only that it happened.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value as Json;
use shared::DesignError;
use utoipa::ToSchema;

/// An error answered to a client.
#[derive(Clone, Debug, PartialEq)]
pub struct AppError {
    pub status: StatusCode,
    pub code: &'static str,
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
    /// Machine-readable, stable: `malformed_json`, `invalid_request`, `invalid_design`,
    /// `graph_too_large`, `check_too_large`, `body_too_large`, `unknown_scenario`,
    /// `unknown_submission`, `no_draft`, `unauthorized`, `forbidden`, `idempotency_key_reused`,
    /// `idempotency_key_in_flight`, `invalid_idempotency_key`, `not_found`,
    /// `method_not_allowed`, `bad_request` (an unreadable query or path), `timeout`,
    /// `rate_limited` (429, with `Retry-After`), `database_unavailable` (503, with
    /// `Retry-After`), `internal`.
    #[schema(example = "unknown_scenario")]
    pub code: String,
    /// A sentence a person can act on.
    pub message: String,
    /// The JSON path in the request body the error is about, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// For `invalid_design`: every problem of the design, each with its path.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<crate::openapi::DesignErrorDoc>>)]
    pub details: Option<Vec<DesignError>>,
}

impl AppError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> AppError {
        AppError {
            status,
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
        AppError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message)
    }

    pub fn unknown_scenario(id: &str) -> AppError {
        AppError::new(
            StatusCode::NOT_FOUND,
            "unknown_scenario",
            format!("there is no scenario \"{id}\"; GET /api/scenarios lists them"),
        )
        .at("$.scenario")
    }

    pub fn unauthorized(message: impl Into<String>) -> AppError {
        AppError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(message: impl Into<String>) -> AppError {
        AppError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// A failure on our side. The cause goes to the log, never to the client.
    pub fn internal(cause: impl std::fmt::Display) -> AppError {
        tracing::error!(%cause, "internal error");
        AppError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "something went wrong on the server; the log says what",
        )
    }

    /// The database cannot be reached. The route needs it; a retry after a few seconds may
    /// succeed, and `POST /api/scenarios/{id}/check` keeps working meanwhile.
    pub fn unavailable(cause: impl std::fmt::Display) -> AppError {
        tracing::error!(%cause, "database unavailable");
        AppError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "database_unavailable",
            "the database is not reachable; try again in a few seconds (checking a design still works)",
        )
        .retry_after(DATABASE_RETRY_AFTER_SECONDS)
    }

    pub fn body(&self) -> Json {
        serde_json::to_value(ErrorBody {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message.clone(),
                path: self.path.clone(),
                details: self.details.clone(),
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
/// it), mapping every failure to an [`AppError`]: an oversized body to `body_too_large`,
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
        } else {
            AppError::new(
                StatusCode::BAD_REQUEST,
                "malformed_json",
                format!("the request body could not be read: {rejection}"),
            )
        }
    })
}

pub fn body_too_large() -> AppError {
    AppError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        "the request body is larger than this server accepts",
    )
}

/// Parses JSON text into `T` with the error codes of [`JsonBody`].
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, AppError> {
    let value: Json = serde_json::from_slice(bytes).map_err(|e| {
        AppError::new(
            StatusCode::BAD_REQUEST,
            "malformed_json",
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
