//! Who is calling: an anonymous student whose browser holds a session cookie, or a grader who
//! shows a bearer token; and the guard that refuses requests other sites make.
//!
//! A session is a random secret (256 bits from the operating system, base64url) in the cookie
//! `__Host-pb_session` (`pb_session` on plain HTTP to a host other than a loopback address,
//! where browsers refuse `Secure` cookies). The database keeps only the secret's sha256; the
//! student's id is public (graders see it) and never opens a session. Sessions are made only
//! by `POST /api/session`; every other route that needs one answers 401 `no_session` without
//! it, and never sets a cookie. A request with two session cookies (a sibling subdomain
//! tossing its own) is refused with `ambiguous_session` rather than guessed.
//!
//! Grader tokens are stored as sha256 hashes and compared in constant time.
//!
//! The extractors need only the [`Store`] and the [`Config`]: they work with any router state
//! that hands them out through axum's `FromRef`.

use std::sync::Arc;

use axum::body::HttpBody;
use axum::extract::{FromRef, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::Config;
use crate::error::{AppError, ErrorCode};
use crate::store::{ActiveToken, StaffRole, Store, Student};

/// The session cookie where browsers accept `Secure` cookies: over HTTPS, and on loopback.
pub const COOKIE: &str = "__Host-pb_session";
/// The session cookie on plain HTTP to another host, where `Secure` would be refused.
pub const PLAIN_COOKIE: &str = "pb_session";
/// The cookie of old, which held the student id itself; exchanged once by `POST /api/session`.
pub const LEGACY_COOKIE: &str = "pb_student";

/// The cookie of an instructor signed in with a grader token (`/instructor`): HttpOnly,
/// Secure, SameSite=Strict, holding the token itself; where browsers accept `Secure`.
pub const GRADER_COOKIE: &str = "__Host-pb_grader";
/// The grader cookie on plain HTTP to another host.
pub const PLAIN_GRADER_COOKIE: &str = "pb_grader";
/// How long an instructor's sign-in lasts: 12 hours.
pub const GRADER_COOKIE_SECONDS: u64 = 12 * 3600;

/// HSTS for answers served over HTTPS: a year.
const HSTS: &str = "max-age=31536000";

/// The student of this browser's session. Without a valid session the request is refused
/// with 401 `no_session`; a session is never made here.
#[derive(Clone, Debug)]
pub struct Session(pub Student);

/// The student of the session, if there is a valid one; never refuses, never makes one.
#[derive(Clone, Debug)]
pub struct MaybeSession(pub Option<Student>);

/// A grader who showed a valid, unrevoked token: a server administrator's (no account), or
/// one that acts for a staff account and may do in each class what the account's role there
/// allows.
#[derive(Clone, Debug)]
pub struct Grader {
    pub name: String,
    /// The sha256 of the token: what identifies it. A name revoked and given to a new token
    /// gets a new hash.
    pub token_hash: String,
    /// The staff account the token acts for; `None` for a server administrator's token.
    pub account: Option<String>,
    /// True when the token may only read, whatever its account's roles.
    pub read_only: bool,
}

/// What a route does to a class, and so the least role it needs there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Reading the class, its dashboard, attempts and exports: a viewer.
    Read,
    /// Regrading its attempts: a TA.
    Work,
    /// Changing its settings, closing and reopening it, and its staff: an owner.
    Own,
    /// Reading what only an owner reads (the audit log): an owner, with a read-only token too.
    OwnerRead,
}

impl Need {
    fn least(self) -> StaffRole {
        match self {
            Need::Read => StaffRole::Viewer,
            Need::Work => StaffRole::Ta,
            Need::Own | Need::OwnerRead => StaffRole::Owner,
        }
    }

    fn writes(self) -> bool {
        matches!(self, Need::Work | Need::Own)
    }
}

impl Grader {
    /// True for a server administrator's token.
    pub fn administrator(&self) -> bool {
        self.account.is_none()
    }

    /// Who the audit log says made a change: the account, or `admin:` and the token's name.
    pub fn actor(&self) -> String {
        match &self.account {
            Some(account) => account.clone(),
            None => format!("admin:{}", self.name),
        }
    }

    /// Refuses a write (403 `forbidden`) by a read-only token.
    pub fn may_write(&self) -> Result<(), AppError> {
        if self.read_only {
            return Err(AppError::forbidden(format!(
                "the token \"{}\" may only read",
                self.name
            )));
        }
        Ok(())
    }

    /// Refuses (403 `forbidden`) what only a server administrator's token may do.
    pub fn must_administer(&self, what: &str) -> Result<(), AppError> {
        self.may_write()?;
        self.administrator_reads(what)
    }

    /// Refuses (403 `forbidden`) what only a server administrator's token may read, a
    /// read-only one included.
    pub fn administrator_reads(&self, what: &str) -> Result<(), AppError> {
        if !self.administrator() {
            return Err(AppError::forbidden(format!(
                "only a server administrator's token may {what}"
            )));
        }
        Ok(())
    }

    /// The caller's role in `class` when it may do `need` there (`None` for an
    /// administrator, who may do everything); 403 `forbidden` otherwise. The class must
    /// exist: the caller looks it up first, so an unknown class is a 404 for everyone.
    pub async fn may(
        &self,
        store: &Store,
        class: &str,
        need: Need,
    ) -> Result<Option<StaffRole>, AppError> {
        if need.writes() {
            self.may_write()?;
        }
        let Some(account) = &self.account else {
            return Ok(None);
        };
        match store.staff_role(class, account).await? {
            Some(role) if role >= need.least() => Ok(Some(role)),
            Some(role) => Err(AppError::forbidden(format!(
                "{account} is {} of this class; this needs the role {} or more",
                role.as_str(),
                need.least().as_str()
            ))),
            None => Err(AppError::forbidden(format!(
                "{account} has no role in this class; its owner can add you"
            ))),
        }
    }
}

/// Either kind of caller: a bearer token makes a grader (and must be valid); without one,
/// the caller is the session's student.
#[derive(Clone, Debug)]
pub enum Caller {
    Grader(Grader),
    Student(Student),
}

impl Caller {
    /// The scope of idempotency keys: two callers never share one, and a grader's is the
    /// token's identity, not its name, so a re-created name replays nothing of the old one.
    pub fn scope(&self) -> String {
        match self {
            Caller::Grader(g) => format!("grader:{}", g.token_hash),
            Caller::Student(s) => format!("student:{}", s.id),
        }
    }
}

/// Every `name=value` pair of the request's Cookie headers.
fn cookie_pairs(headers: &HeaderMap) -> impl Iterator<Item = (&str, &str)> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .map(|(name, value)| (name.trim(), value.trim()))
}

/// The session cookie a request carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Presented {
    None,
    /// The secret of the one session cookie.
    One(String),
    /// Two or more session cookies (of one name or of both).
    Ambiguous,
}

/// The session cookie of a request, whichever of the two names it has.
pub fn presented_session(headers: &HeaderMap) -> Presented {
    let mut found = cookie_pairs(headers)
        .filter(|(name, _)| *name == COOKIE || *name == PLAIN_COOKIE)
        .map(|(_, value)| value);
    match (found.next(), found.next()) {
        (None, _) => Presented::None,
        (Some(secret), None) => Presented::One(secret.to_string()),
        (Some(_), Some(_)) => Presented::Ambiguous,
    }
}

/// A key for the session cookie a request carries (the sha256 of its secret), when it
/// carries exactly one; the rate limiter's key for a student. Needs no database.
pub fn cookie_student(headers: &HeaderMap) -> Option<String> {
    match presented_session(headers) {
        Presented::One(secret) if is_secret_shape(&secret) => Some(hash_token(&secret)),
        _ => None,
    }
}

/// The shape of the secrets we make: 43 base64url characters (32 bytes).
fn is_secret_shape(value: &str) -> bool {
    value.len() == 43
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The old `pb_student` cookie, when the request carries exactly one of the shape the server
/// made: `s-` and 32 hex digits.
pub fn legacy_cookie(headers: &HeaderMap) -> Option<String> {
    let mut found = cookie_pairs(headers)
        .filter(|(name, _)| *name == LEGACY_COOKIE)
        .map(|(_, value)| value);
    match (found.next(), found.next()) {
        (Some(id), None)
            if id.len() == 34
                && id.starts_with("s-")
                && id[2..].bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            Some(id.to_string())
        }
        _ => None,
    }
}

/// True when the request reached us over TLS: the configuration says every request does, or
/// a trusted proxy says so with `X-Forwarded-Proto: https`.
pub fn over_https(headers: &HeaderMap, config: &Config) -> bool {
    config.https
        || (config.trust_forwarded_proto
            && headers
                .get("x-forwarded-proto")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(',').next())
                .is_some_and(|p| p.trim().eq_ignore_ascii_case("https")))
}

/// The host the request was sent to, from its Host header.
fn request_host(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|h| !h.is_empty())
}

/// The name of a `Host` value without its port (and an IPv6 address without its brackets).
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    }
}

/// True when `name` is `localhost` or a loopback address (`127.x.x.x`, `::1`).
fn is_loopback_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// True when the Host is a loopback address (`localhost`, `127.x.x.x`, `[::1]`), where
/// browsers accept `Secure` cookies over plain HTTP.
fn loopback_host(headers: &HeaderMap) -> bool {
    request_host(headers).is_some_and(|host| is_loopback_name(host_name(host)))
}

/// The name of the session cookie this request's answer sets: the `__Host-` one wherever
/// browsers accept it.
pub fn cookie_name(headers: &HeaderMap, config: &Config) -> &'static str {
    if over_https(headers, config) || loopback_host(headers) {
        COOKIE
    } else {
        PLAIN_COOKIE
    }
}

/// The `Set-Cookie` value of a new session.
pub fn session_cookie(headers: &HeaderMap, config: &Config, secret: &str) -> String {
    let name = cookie_name(headers, config);
    let secure = if name == COOKIE { "; Secure" } else { "" };
    // A year: progress is kept as long as the browser keeps the cookie.
    format!("{name}={secret}; Path=/; HttpOnly; SameSite=Lax; Max-Age=31536000{secure}")
}

/// The `Set-Cookie` value that removes the old `pb_student` cookie.
pub const EXPIRE_LEGACY_COOKIE: &str = "pb_student=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0";

/// The `Set-Cookie` value that removes an unprefixed session cookie this host set.
pub const EXPIRE_PLAIN_COOKIE: &str = "pb_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0";

/// A new session secret: 32 random bytes, base64url without padding.
pub fn new_session_secret() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// A new public student id: `s-` and 32 hex digits. It is no secret.
pub fn new_student_id() -> String {
    format!("s-{}", uuid::Uuid::new_v4().simple())
}

fn no_session() -> AppError {
    AppError::of(
        ErrorCode::NoSession,
        "this route needs a student session: POST /api/session makes one",
    )
}

pub fn ambiguous_session() -> AppError {
    AppError::of(
        ErrorCode::AmbiguousSession,
        "the request carries more than one session cookie; clear this site's cookies and reload",
    )
}

/// The student of the request's session cookie: `Ok(None)` without one (or with one the
/// server does not know), `ambiguous_session` with two.
pub async fn session_student(
    headers: &HeaderMap,
    store: &Store,
) -> Result<Option<Student>, AppError> {
    match presented_session(headers) {
        Presented::None => Ok(None),
        Presented::Ambiguous => Err(ambiguous_session()),
        Presented::One(secret) if !is_secret_shape(&secret) => Ok(None),
        Presented::One(secret) => Ok(store.session_by_secret(&hash_token(&secret)).await?),
    }
}

impl<S> FromRequestParts<S> for MaybeSession
where
    Store: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match session_student(&parts.headers, &Store::from_ref(state)).await {
            Ok(student) => Ok(MaybeSession(student)),
            // Who is asking is optional here, so a database outage or two cookies make an
            // anonymous caller, not a failed request.
            Err(e)
                if e.code == ErrorCode::DatabaseUnavailable
                    || e.code == ErrorCode::AmbiguousSession =>
            {
                Ok(MaybeSession(None))
            }
            Err(e) => Err(e),
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
        match session_student(&parts.headers, &Store::from_ref(state)).await? {
            Some(student) => Ok(Session(student)),
            None => Err(no_session()),
        }
    }
}

impl<S> FromRequestParts<S> for Grader
where
    Store: FromRef<S>,
    Arc<Config>: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = AppError;

    /// The bearer token when the request has an Authorization header, else the grader
    /// cookie of an instructor signed in at `/instructor`.
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let token = match parts.headers.get(header::AUTHORIZATION) {
            Some(value) => value
                .to_str()
                .ok()
                .and_then(|v| v.split_once(' '))
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map(|(_, token)| token.trim().to_string())
                .ok_or_else(|| {
                    AppError::unauthorized("the Authorization header must be \"Bearer <token>\"")
                })?,
            None => match presented_grader(&parts.headers, &Arc::<Config>::from_ref(state)) {
                Some(token) => token,
                None => return launched_staff(&parts.headers, &Store::from_ref(state)).await,
            },
        };
        match verify_token(&Store::from_ref(state), &token).await? {
            Some(found) => Ok(Grader {
                name: found.name,
                token_hash: found.token_hash,
                account: found.account,
                read_only: found.read_only,
            }),
            None => Err(AppError::unauthorized(
                "the grader token is unknown or revoked",
            )),
        }
    }
}

/// The staff member of a request without a token: the student of its session, when a
/// learning platform launched them with a staff role (their account is linked to the
/// session's student). Anyone else is refused with 401 `unauthorized`.
async fn launched_staff(headers: &HeaderMap, store: &Store) -> Result<Grader, AppError> {
    let refused = || {
        AppError::unauthorized("this route needs a grader token: send Authorization: Bearer <token> (pipeline-builder token create --name NAME makes one), or sign in at /instructor")
    };
    let student = match session_student(headers, store).await {
        Ok(Some(student)) => student,
        Err(e) if e.code != ErrorCode::AmbiguousSession => return Err(e),
        _ => return Err(refused()),
    };
    match store.account_of_student(&student.id).await? {
        Some(account) => Ok(Grader {
            name: account.clone(),
            token_hash: format!("session:{}", student.id),
            account: Some(account),
            read_only: false,
        }),
        None => Err(refused()),
    }
}

/// The name of the grader cookie this request may carry: `__Host-pb_grader`, except on plain
/// HTTP to a host other than loopback, where browsers refuse `Secure` cookies and only
/// `pb_grader` can be. (A request without a Host header is no browser's: the prefixed name.)
fn grader_cookie_name(headers: &HeaderMap, config: &Config) -> &'static str {
    let plain =
        !over_https(headers, config) && request_host(headers).is_some() && !loopback_host(headers);
    if plain {
        PLAIN_GRADER_COOKIE
    } else {
        GRADER_COOKIE
    }
}

/// The token of the grader cookie a request carries, if exactly one of the name this request
/// may carry ([`grader_cookie_name`]). The other name is ignored: where the server sets
/// `__Host-pb_grader`, a `pb_grader` can only have been planted (by a sibling subdomain, say),
/// and it must not lock the instructor out.
pub fn presented_grader(headers: &HeaderMap, config: &Config) -> Option<String> {
    let name = grader_cookie_name(headers, config);
    let mut found = cookie_pairs(headers)
        .filter(|(n, _)| *n == name)
        .map(|(_, value)| value);
    match (found.next(), found.next()) {
        (Some(token), None) if !token.is_empty() => Some(token.to_string()),
        _ => None,
    }
}

/// The `Set-Cookie` value that signs an instructor in with `token`.
pub fn grader_cookie(headers: &HeaderMap, config: &Config, token: &str) -> String {
    let name = grader_cookie_name(headers, config);
    let secure = if name == GRADER_COOKIE {
        "; Secure"
    } else {
        ""
    };
    format!("{name}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={GRADER_COOKIE_SECONDS}{secure}")
}

/// The `Set-Cookie` value that signs an instructor out.
pub fn expire_grader_cookie(headers: &HeaderMap, config: &Config) -> String {
    let name = grader_cookie_name(headers, config);
    let secure = if name == GRADER_COOKIE {
        "; Secure"
    } else {
        ""
    };
    format!("{name}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}")
}

/// The `Set-Cookie` value that removes an unprefixed grader cookie set by this host, sent
/// beside the `__Host-` one at sign-in. (One planted for a parent domain it cannot remove;
/// that one is ignored, see [`presented_grader`].)
pub const EXPIRE_PLAIN_GRADER_COOKIE: &str =
    "pb_grader=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0";

/// The origin the request was sent to (`https://host`), from its Host header; `None` without one.
pub fn origin_of(headers: &HeaderMap, config: &Config) -> Option<String> {
    let scheme = if over_https(headers, config) {
        "https"
    } else {
        "http"
    };
    request_host(headers).map(|host| format!("{scheme}://{}", host.to_ascii_lowercase()))
}

impl<S> FromRequestParts<S> for Caller
where
    Store: FromRef<S>,
    Arc<Config>: FromRef<S>,
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

/// sha256 of a token or a session secret, in hex: what the database keeps.
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

/// The active token `token` is, if any. Every active hash is compared, each in constant time,
/// so the answer's timing does not tell how much of a guess was right.
pub async fn verify_token(store: &Store, token: &str) -> Result<Option<ActiveToken>, AppError> {
    let presented = hash_token(token);
    let mut found = None;
    for active in store.active_grants().await? {
        if bool::from(active.token_hash.as_bytes().ct_eq(presented.as_bytes())) {
            found = Some(active);
        }
    }
    Ok(found)
}

fn cross_site() -> Response {
    AppError::of(ErrorCode::CrossSiteRequest,
        "this request came from another site; only this site's own pages may change a student's work",
    )
    .into_response()
}

/// The origin the request reached: its scheme and its Host (or, over HTTP/2, the
/// authority of its URI).
fn own_origin(request: &Request, config: &Config) -> Option<String> {
    let headers = request.headers();
    let scheme = if over_https(headers, config) {
        "https"
    } else {
        "http"
    };
    request_host(headers)
        .or_else(|| request.uri().authority().map(|a| a.as_str()))
        .map(|host| format!("{scheme}://{}", host.to_ascii_lowercase()))
}

/// The cross-site guard, the one middleware of every route a browser's cookie authenticates
/// (a student's session, an instructor's grader cookie; `crate::app` puts each such route
/// behind it): a state-changing request (anything but GET, HEAD and OPTIONS) without a bearer
/// token is refused when another site made it (`Sec-Fetch-Site: cross-site` or `same-site`,
/// or an `Origin` that is not ours: 403 `cross_site_request`), and when its body is not
/// `application/json` (415), which no HTML form can send. A request with neither header
/// (curl, scripts) passes. Nothing runs, so nothing changes and no cookie is set.
pub async fn refuse_cross_site(
    State(config): State<Arc<Config>>,
    request: Request,
    next: Next,
) -> Response {
    let method = request.method();
    let safe = method == Method::GET || method == Method::HEAD || method == Method::OPTIONS;
    let headers = request.headers();
    // A bearer token is not sent by a browser on its own, so such a request is not forged.
    if safe || headers.contains_key(header::AUTHORIZATION) {
        return next.run(request).await;
    }
    let fetch_site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase());
    if matches!(fetch_site.as_deref(), Some("cross-site" | "same-site")) {
        return cross_site();
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("").trim().to_ascii_lowercase();
        if own_origin(&request, &config).as_deref() != Some(origin.as_str()) {
            return cross_site();
        }
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or(""));
    let json = content_type.is_some_and(|v| {
        v.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
    });
    let has_body = request.body().size_hint().lower() > 0
        || headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0");
    if !json && (content_type.is_some() || has_body) {
        return AppError::of(
            ErrorCode::UnsupportedMediaType,
            "send the body as application/json",
        )
        .into_response();
    }
    next.run(request).await
}

/// Middleware of answers about a person (a session, drafts, attempts, grading): no cache,
/// shared or private, keeps them.
pub async fn no_store(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Middleware: HSTS on every answer served over HTTPS.
pub async fn https_layer(
    State(config): State<Arc<Config>>,
    request: Request,
    next: Next,
) -> Response {
    let https = over_https(request.headers(), &config);
    let mut response = next.run(request).await;
    if https {
        response.headers_mut().insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(HSTS),
        );
    }
    response
}

fn unexpected_host() -> Response {
    AppError::of(ErrorCode::UnexpectedHost,
        "this route answers only to a loopback name (localhost, 127.0.0.1, [::1]) or the host of --public-url; open the page by one of those",
    )
    .into_response()
}

/// True when a request's `Host` names this server the way an author's browser reaches it: a
/// loopback address, `localhost`, or the host of `--public-url`. A request without a Host
/// header passes: every browser sends one, so it is no page's request.
pub fn expected_host(headers: &HeaderMap, config: &Config) -> bool {
    let Some(host) = request_host(headers) else {
        return true;
    };
    let name = host_name(host);
    if is_loopback_name(name) {
        return true;
    }
    let public = config
        .public_url
        .as_deref()
        .and_then(|u| reqwest::Url::parse(u).ok())
        .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_string()));
    public.is_some_and(|p| p.eq_ignore_ascii_case(name))
}

/// Middleware of the author's routes, which show every scenario's answers: a request whose
/// `Host` is not an [`expected_host`] is refused with 421 `unexpected_host`. The server under
/// `--author` listens on a loopback address only, but a page of another site can still reach
/// it through a name of its own that it points at 127.0.0.1 (DNS rebinding); its requests then
/// carry that name as their Host, which this refuses.
pub async fn refuse_unexpected_host(
    State(config): State<Arc<Config>>,
    request: Request,
    next: Next,
) -> Response {
    if !expected_host(request.headers(), &config) {
        return unexpected_host();
    }
    next.run(request).await
}
