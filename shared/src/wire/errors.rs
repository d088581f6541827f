//! The body of every error answer: `{"error": {"code", "message", "path"?, "details"?}}`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::design::DesignError;

/// What went wrong, for machines: the `code` of every error body. The names are stable (clients
/// and graders' scripts match on them), so a variant is never renamed, only added.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// 409: the class refuses attempts after the student's due date (its late policy), and
    /// it has passed.
    PastDue,
    /// 503: the server was started without a setting the route needs (LTI without
    /// `--public-url`); the message names it.
    NotConfigured,
    /// 503: the learning platform a launch came from could not be reached, or answered
    /// what LTI does not allow (its key set); a later launch may succeed.
    PlatformUnavailable,
}

impl ErrorCode {
    /// Every code, in the order of the enum.
    pub const ALL: [ErrorCode; 36] = [
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
        ErrorCode::PastDue,
        ErrorCode::NotConfigured,
        ErrorCode::PlatformUnavailable,
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
            ErrorCode::PastDue => "past_due",
            ErrorCode::NotConfigured => "not_configured",
            ErrorCode::PlatformUnavailable => "platform_unavailable",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The body of every error answer.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// Machine-readable and stable; clients match on it.
    pub code: ErrorCode,
    /// A sentence a person can act on.
    pub message: String,
    /// What the error is about, when it is one thing: a JSON path in the request body
    /// (`$.design.nodes[1].kind`; `$[4].design…` in a batch), a query parameter (`?format`), or
    /// the URL's path when the URL names something unknown (`/api/scenarios/no-such/check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub path: Option<String>,
    /// For `invalid_design`: every problem of the design, each with its path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub details: Option<Vec<DesignError>>,
}
