//! Which browser a launch signs in. Over HTTPS a login (`/lti/login`) leaves a cookie in the
//! browser that started it, and only a launch that carries that cookie back signs that
//! browser in. Any other launch leaves the browser's session as it is: another site's form
//! posting someone's own `id_token` and `state`, a frame that keeps no cookie of this site, or
//! any launch over plain HTTP. Such a launch is handed over through the resume page instead:
//! `GET /lti/resume?code=…` names who will be signed in, and only that page's own form,
//! `POST /lti/resume`, signs in — never over the session of another student whose work is in
//! this browser.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Form, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use chrono::Utc;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::page::{self, escape, internal, see_other, Refusal};
use super::store::Login;
use crate::auth;
use crate::config::Config;
use crate::error::ErrorCode;
use crate::store::Store;

/// How long a login may wait for its launch, and so how long its cookie lasts.
pub const LOGIN_TTL: Duration = Duration::from_secs(10 * 60);
/// How long a handoff code may wait for its new window.
pub const HANDOFF_TTL: Duration = Duration::from_secs(10 * 60);

// The login's cookie.

/// The name of the cookie that binds the login of `state` to its browser. Each login has its
/// own, so that two activities of one course page logging in at once keep theirs apart.
pub fn login_cookie_name(state: &str) -> String {
    format!("__Host-pb_lti_{}", &auth::hash_token(state)[..16])
}

/// The `Set-Cookie` value of a login's cookie: sent back by the platform's cross-site form post
/// (`SameSite=None`, which browsers take only with `Secure`), kept inside a platform's frame
/// where browsers allow a partitioned cookie, and gone once the login is too old to launch.
pub fn login_cookie(state: &str, secret: &str) -> String {
    format!(
        "{}={secret}; Path=/; HttpOnly; Secure; SameSite=None; Partitioned; Max-Age={}",
        login_cookie_name(state),
        LOGIN_TTL.as_secs()
    )
}

/// The `Set-Cookie` value that removes the login's cookie once its launch is done.
pub fn expire_login_cookie(state: &str) -> String {
    format!(
        "{}=; Path=/; HttpOnly; Secure; SameSite=None; Partitioned; Max-Age=0",
        login_cookie_name(state)
    )
}

/// The value of the one cookie `name` a request carries, if exactly one.
fn cookie_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut found = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(n, _)| n.trim() == name)
        .map(|(_, value)| value.trim());
    match (found.next(), found.next()) {
        (Some(value), None) => Some(value),
        _ => None,
    }
}

/// Which browser sent a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Browser {
    /// The browser that started the login: it carries the login's cookie.
    Started,
    /// Any other, or one whose cookie did not survive the trip (a frame that keeps no cookie
    /// of this site, plain HTTP).
    Other,
}

/// The browser of a launch with `state`, against what its login kept.
pub fn browser_of(headers: &HeaderMap, state: &str, login: &Login) -> Browser {
    let (Some(kept), Some(secret)) = (
        login.browser_hash.as_deref(),
        cookie_value(headers, &login_cookie_name(state)),
    ) else {
        return Browser::Other;
    };
    if bool::from(auth::hash_token(secret).as_bytes().ct_eq(kept.as_bytes())) {
        Browser::Started
    } else {
        Browser::Other
    }
}

/// The session cookie a launch sets. Over HTTPS it is `SameSite=None; Secure; Partitioned`,
/// so that a platform's frame keeps it (partitioned by the platform's site, as browsers that
/// block third-party cookies still allow); over plain HTTP (a developer's machine) it is the
/// ordinary session cookie, and a frame falls back to a new window.
pub fn launch_cookie(headers: &HeaderMap, config: &Config, secret: &str) -> String {
    let plain = auth::session_cookie(headers, config, secret);
    if auth::over_https(headers, config) {
        plain.replace("SameSite=Lax", "SameSite=None") + "; Partitioned"
    } else {
        plain
    }
}

// The resume page.

#[derive(Debug, Deserialize)]
pub struct ResumeParams {
    code: Option<String>,
}

/// Who this browser is signed in as, beside the student a handoff names.
enum Current {
    /// No session, or one of a student who holds nothing: signing in loses nothing.
    Free,
    /// The handoff's own student.
    Same,
    /// Another student whose work is in this browser (their display name, if any).
    Other(Option<String>),
}

async fn current(store: &Store, headers: &HeaderMap, launched: &str) -> Result<Current, Refusal> {
    let student = match auth::session_student(headers, store).await {
        Ok(student) => student,
        Err(e) if e.code == ErrorCode::AmbiguousSession => {
            return Err(Refusal::bad(
                "this browser sends two session cookies of this site: clear this site's cookies, then open the activity from the course again",
            ))
        }
        Err(e) => return Err(internal(e.message)),
    };
    match student {
        None => Ok(Current::Free),
        Some(s) if s.id == launched => Ok(Current::Same),
        Some(s) => match store.holds_work(&s.id).await.map_err(internal)? {
            true => Ok(Current::Other(s.display_name)),
            false => Ok(Current::Free),
        },
    }
}

fn no_code() -> Refusal {
    Refusal::bad("the link has no code: open the activity from the course again")
}

fn spent() -> Refusal {
    Refusal::forbidden(
        "this link was used already or is too old: open the activity from the course again",
    )
}

fn since() -> chrono::DateTime<Utc> {
    Utc::now() - chrono::Duration::from_std(HANDOFF_TTL).unwrap_or_default()
}

/// The page that keeps another student's session: nothing is signed in over it.
fn kept(signed_in: Option<String>, launched: Option<String>) -> Response {
    let signed_in = signed_in.map_or("another student".to_string(), |n| escape(&n));
    let launched = launched.map_or("the student your course launched".to_string(), |n| {
        escape(&n)
    });
    tracing::info!("an LTI handoff met another student's session, which was kept");
    page::html(
        StatusCode::CONFLICT,
        "This browser is signed in as someone else",
        &format!(
            "<p>This browser is signed in to Pipeline Builder as <strong>{signed_in}</strong>, whose work is kept here. \
             Pipeline Builder does not sign <strong>{launched}</strong> in over it.</p>\
             <p>To work as {launched}, open the activity from your course in a private window or in another browser.</p>"
        ),
    )
}

/// `GET /lti/resume?code=…`: the page that names the student a launch signs in and asks
/// before doing it. Spends nothing and sets no cookie. In a frame (which keeps no session of
/// this site) its form opens a new window.
pub async fn resume_page(
    State(store): State<Store>,
    headers: HeaderMap,
    Query(params): Query<ResumeParams>,
) -> Result<Response, Refusal> {
    let code = params.code.filter(|c| !c.is_empty()).ok_or_else(no_code)?;
    let (student, target) = store
        .lti_handoff(&auth::hash_token(&code), since())
        .await
        .map_err(internal)?
        .ok_or_else(spent)?;
    let name = store.lti_student_name(&student).await.map_err(internal)?;
    match current(&store, &headers, &student).await? {
        Current::Same => return see_other(&target, &[]),
        Current::Other(signed_in) => return Ok(kept(signed_in, name)),
        Current::Free => {}
    }
    // A top-level page continues in place; anywhere else (a frame, or a browser that does
    // not say) the session could be lost, so the form opens a new window.
    let top_level = headers
        .get("sec-fetch-dest")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|d| d.trim().eq_ignore_ascii_case("document"));
    let shown = name.map_or("the student your course launched".to_string(), |n| {
        escape(&n)
    });
    let (target_attribute, button, why) = if top_level {
        ("", format!("Continue as {shown}"), "")
    } else {
        (
            " target=\"_blank\"",
            "Open it in a new window".to_string(),
            " This page cannot keep you signed in where it is shown, so the activity opens in a new window.",
        )
    };
    Ok(page::html(
        StatusCode::OK,
        "Continue from your course",
        &format!(
            "<p>Your course opened this activity for <strong>{shown}</strong>.{why}</p>\
             <form method=\"post\" action=\"/lti/resume\"{target_attribute}><input type=\"hidden\" name=\"code\" value=\"{code}\">\
             <button type=\"submit\">{button}</button></form>\
             <p>If you are not {shown}, close this page: nothing changes.</p>",
            code = escape(&code),
        ),
    ))
}

/// A sign-in by form post must come from this tool's own page: a form of another site, or of
/// a sibling subdomain, is refused, as the cross-site guard refuses writes to the API.
fn same_origin(headers: &HeaderMap, config: &Config) -> Result<(), Refusal> {
    let refused = || {
        Refusal::forbidden(
            "this sign-in was sent by another site; only Pipeline Builder's own page signs you in",
        )
    };
    let site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase());
    match site.as_deref() {
        Some("cross-site" | "same-site") => return Err(refused()),
        // The browser says the form is this tool's own page. Its `Origin` is `null` then,
        // as the pages' `Referrer-Policy: no-referrer` makes a form's post send it.
        Some("same-origin") => return Ok(()),
        _ => {}
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("").trim().to_ascii_lowercase();
    let public = page::public_url(config)
        .ok()
        .and_then(|u| reqwest::Url::parse(u).ok())
        .map(|u| u.origin().ascii_serialization());
    if Some(&origin) == public.as_ref()
        || Some(&origin) == auth::origin_of(headers, config).as_ref()
    {
        Ok(())
    } else {
        Err(refused())
    }
}

/// `POST /lti/resume` (the resume page's form, `code=…`): signs this browser in as the
/// handoff's student, once per code and within ten minutes, and sends it on. A session of
/// another student whose work is here is kept, and nothing is spent.
pub async fn resume(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    headers: HeaderMap,
    Form(params): Form<ResumeParams>,
) -> Result<Response, Refusal> {
    same_origin(&headers, &config)?;
    let code = params.code.filter(|c| !c.is_empty()).ok_or_else(no_code)?;
    let code_hash = auth::hash_token(&code);
    let (student, _) = store
        .lti_handoff(&code_hash, since())
        .await
        .map_err(internal)?
        .ok_or_else(spent)?;
    let current = current(&store, &headers, &student).await?;
    if let Current::Other(signed_in) = current {
        let name = store.lti_student_name(&student).await.map_err(internal)?;
        return Ok(kept(signed_in, name));
    }
    let (student, target) = store
        .use_lti_handoff(&code_hash, since())
        .await
        .map_err(internal)?
        .ok_or_else(spent)?;
    if let Current::Same = current {
        return see_other(&target, &[]);
    }
    let secret = auth::new_session_secret().map_err(internal)?;
    store
        .add_session(&student, &auth::hash_token(&secret))
        .await
        .map_err(internal)?;
    see_other(&target, &[auth::session_cookie(&headers, &config, &secret)])
}
