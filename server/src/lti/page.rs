//! What the LTI routes answer a browser with: pages (a refusal that says what was wrong, and
//! the others), redirects that set cookies, and the tool's own URL they are built on.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::config::Config;
use crate::error::{AppError, CodeStatus, ErrorCode};

/// A refused login or launch: one of the API's error codes (its status comes from the code)
/// and what was wrong in words. A browser sent there by its platform expects a page, so the
/// LTI routes answer it as one that names the code; the JSON routes answer it as every other
/// error (`AppError`).
#[derive(Debug)]
pub struct Refusal {
    pub code: ErrorCode,
    pub why: String,
}

impl Refusal {
    pub fn of(code: ErrorCode, why: impl Into<String>) -> Refusal {
        Refusal {
            code,
            why: why.into(),
        }
    }
    /// 400 `bad_request`: the platform's request is not what LTI says.
    pub fn bad(why: impl Into<String>) -> Refusal {
        Refusal::of(ErrorCode::BadRequest, why)
    }
    /// 403 `forbidden`: a check of the launch failed.
    pub fn forbidden(why: impl Into<String>) -> Refusal {
        Refusal::of(ErrorCode::Forbidden, why)
    }
    /// 503 `not_configured`: the server lacks a setting LTI needs.
    pub fn not_configured(why: impl Into<String>) -> Refusal {
        Refusal::of(ErrorCode::NotConfigured, why)
    }

    pub fn status(&self) -> StatusCode {
        self.code.status()
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        tracing::warn!(status = self.status().as_u16(), code = %self.code, why = %self.why, "LTI request refused");
        html(
            self.status(),
            "The launch was refused",
            &format!(
                "<p>{}</p><p>Go back to your course and open the activity again. If this keeps happening, tell your instructor what this page says.</p><p>Error code: <code>{}</code></p>",
                escape(&self.why),
                self.code
            ),
        )
    }
}

impl From<Refusal> for AppError {
    fn from(refusal: Refusal) -> AppError {
        AppError::of(refusal.code, refusal.why)
    }
}

/// A page of the tool's own: `title` is its heading too, `body` its markup (escaped by the
/// caller). Never kept by a cache.
pub fn html(status: StatusCode, title: &str, body: &str) -> Response {
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} · Pipeline Builder</title></head>\
         <body><main><h1>{title}</h1>{body}</main></body></html>",
        title = escape(title),
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        page,
    )
        .into_response()
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn internal(e: impl std::fmt::Display) -> Refusal {
    tracing::error!(%e, "LTI: internal error");
    Refusal::of(
        ErrorCode::Internal,
        "the tool could not finish the launch; try again in a moment",
    )
}

/// The tool's own URL, which platforms call back: `--public-url`.
pub fn public_url(config: &Config) -> Result<&str, Refusal> {
    config
        .public_url
        .as_deref()
        .map(|u| u.trim_end_matches('/'))
        .ok_or_else(|| {
            Refusal::not_configured(
                "this server was started without --public-url, which LTI launches need",
            )
        })
}

/// A 303 to `location` that sets each of `cookies`.
pub fn see_other(location: &str, cookies: &[String]) -> Result<Response, Refusal> {
    let mut response = (
        StatusCode::SEE_OTHER,
        [
            (
                header::LOCATION,
                HeaderValue::from_str(location).map_err(internal)?,
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
    )
        .into_response();
    for cookie in cookies {
        response.headers_mut().append(
            header::SET_COOKIE,
            HeaderValue::from_str(cookie).map_err(internal)?,
        );
    }
    Ok(response)
}
