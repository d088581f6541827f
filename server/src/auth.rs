//! Who is calling: an anonymous student named by the `pb_student` cookie, or a grader who
//! shows a bearer token.
//!
//! A student id is made by the server and handed out only in a cookie; a cookie that names a
//! student the server did not make for a session (say, a student id a grader used) is
//! ignored and a new session is made, so nobody can read another student's attempts by
//! setting a cookie by hand. Grader tokens are stored as sha256 hashes and compared in
//! constant time.
//!
//! The extractors need only the [`Store`]: they work with any router state that hands one out
//! through axum's `FromRef`.

use std::sync::{Arc, Mutex};

use axum::extract::{FromRef, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::{AppError, ErrorCode};
use crate::store::{Store, Student};

pub const COOKIE: &str = "pb_student";

/// Where an extractor leaves a `Set-Cookie` value for the response.
#[derive(Clone, Default)]
pub struct CookieSlot(Arc<Mutex<Option<HeaderValue>>>);

/// Middleware: gives each request a [`CookieSlot`] and writes what an extractor put there.
pub async fn set_cookie_layer(mut request: Request, next: Next) -> Response {
    let slot = CookieSlot::default();
    request.extensions_mut().insert(slot.clone());
    let mut response = next.run(request).await;
    let value = slot.0.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(value) = value {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// The student of this browser, made on first use.
#[derive(Clone, Debug)]
pub struct Session(pub Student);

/// The student named by the cookie, if there is a valid one; never makes one.
#[derive(Clone, Debug)]
pub struct MaybeSession(pub Option<Student>);

/// A grader who showed a valid, unrevoked token.
#[derive(Clone, Debug)]
pub struct Grader {
    pub name: String,
}

/// Either kind of caller: a bearer token makes a grader (and must be valid); without one,
/// the caller is the cookie's student.
#[derive(Clone, Debug)]
pub enum Caller {
    Grader(Grader),
    Student(Student),
}

impl Caller {
    /// The scope of idempotency keys: two callers never share one.
    pub fn scope(&self) -> String {
        match self {
            Caller::Grader(g) => format!("grader:{}", g.name),
            Caller::Student(s) => format!("student:{}", s.id),
        }
    }
}

/// The session id the `pb_student` cookie names, when it has the shape of one we make.
pub fn cookie_student(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim().to_string())
        .filter(|v| is_session_id(v))
}

/// The shape of the ids the server makes: `s-` and 32 hex digits.
fn is_session_id(value: &str) -> bool {
    value.len() == 34
        && value.starts_with("s-")
        && value[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// True when the request reached us over TLS, directly or through a proxy that says so.
fn over_tls(parts: &Parts) -> bool {
    parts.uri.scheme_str() == Some("https")
        || parts
            .headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(',')
                    .next()
                    .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"))
            })
}

async fn existing_session(parts: &Parts, store: &Store) -> Result<Option<Student>, AppError> {
    match cookie_student(&parts.headers) {
        Some(id) => Ok(store.session_student(&id).await?),
        None => Ok(None),
    }
}

impl<S> FromRequestParts<S> for MaybeSession
where
    Store: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match existing_session(parts, &Store::from_ref(state)).await {
            // Who is asking is optional here, so a database outage makes an anonymous
            // caller, not a failed request.
            Err(e) if e.code == ErrorCode::DatabaseUnavailable => Ok(MaybeSession(None)),
            other => other.map(MaybeSession),
        }
    }
}

impl<S> FromRequestParts<S> for Session
where
    Store: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let store = Store::from_ref(state);
        if let Some(student) = existing_session(parts, &store).await? {
            return Ok(Session(student));
        }
        let id = format!("s-{}", uuid::Uuid::new_v4().simple());
        let student = store.create_session_student(&id).await?;
        let secure = if over_tls(parts) { "; Secure" } else { "" };
        // A year: progress is kept as long as the browser keeps the cookie.
        let cookie =
            format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Lax; Max-Age=31536000{secure}");
        if let (Some(slot), Ok(value)) = (
            parts.extensions.get::<CookieSlot>(),
            HeaderValue::from_str(&cookie),
        ) {
            *slot.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(value);
        }
        tracing::info!(student = %id, "new student session");
        Ok(Session(student))
    }
}

impl<S> FromRequestParts<S> for Grader
where
    Store: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            return Err(AppError::unauthorized("this route needs a grader token: send Authorization: Bearer <token> (pipeline-builder token create --name NAME makes one)"));
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .ok_or_else(|| {
                AppError::unauthorized("the Authorization header must be \"Bearer <token>\"")
            })?;
        match verify_token(&Store::from_ref(state), token).await? {
            Some(name) => Ok(Grader { name }),
            None => Err(AppError::unauthorized(
                "the grader token is unknown or revoked",
            )),
        }
    }
}

impl<S> FromRequestParts<S> for Caller
where
    Store: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        if parts.headers.contains_key(header::AUTHORIZATION) {
            Grader::from_request_parts(parts, state)
                .await
                .map(Caller::Grader)
        } else {
            Session::from_request_parts(parts, state)
                .await
                .map(|s| Caller::Student(s.0))
        }
    }
}

/// sha256 of a token, in hex: what the database keeps.
pub fn hash_token(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A new token: `pbt_` and 32 random bytes in hex.
pub fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(format!(
        "pbt_{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

/// The name of the active token `token` is, if any. Every active hash is compared, each in
/// constant time, so the answer's timing does not tell how much of a guess was right.
pub async fn verify_token(store: &Store, token: &str) -> Result<Option<String>, AppError> {
    let presented = hash_token(token);
    let mut found = None;
    for (name, stored) in store.active_tokens().await? {
        if bool::from(stored.as_bytes().ct_eq(presented.as_bytes())) {
            found = Some(name);
        }
    }
    Ok(found)
}
