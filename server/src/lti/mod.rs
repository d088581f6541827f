//! LTI 1.3 core launch: a learning platform starts a login (`/lti/login`), the browser is sent
//! to the platform's authorization endpoint with a `state` and a `nonce` the tool keeps, and the
//! platform posts back an `id_token` (`/lti/launch`) that is verified before anyone is signed
//! in. The tool's public keys are at `/lti/jwks`; `/lti/config` lists every URL a platform's
//! administrator registers.
//!
//! A platform's user is their issuer's `sub`, and a course the issuer's context within a
//! deployment, whichever of the issuer's registrations (client ids) a launch comes through.
//!
//! Nothing cryptographic is written here: `jsonwebtoken` (on `ring`) verifies and signs, and
//! the `rsa` crate only generates the tool's keys. Every refusal is a page with a 4xx status
//! that says what was wrong, is logged, and creates nothing: the login is spent, and the
//! student and session made, only after every check has passed.

pub mod browser;
pub mod cli;
pub mod grades;
pub mod keys;
pub mod merge;
pub mod outbound;
pub mod page;
pub mod store;

use std::sync::Arc;

use axum::extract::{Form, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::Utc;
use jsonwebtoken::{Algorithm, Validation};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json_;

use crate::auth;
use crate::catalogue::Catalogue;
use crate::config::Config;
use crate::routes::classes;
use crate::store::{StaffRole, Store};
use browser::Browser;
pub use browser::{HANDOFF_TTL, LOGIN_TTL};
pub use outbound::Outbound;
use page::{escape, internal, public_url, see_other, Refusal};
use store::Platform;

/// The claims' namespace.
const LTI: &str = "https://purl.imsglobal.org/spec/lti/claim/";
/// How far a token's times may be off the tool's clock.
pub const LEEWAY_SECONDS: u64 = 60;

/// The request's URI as the request log shows it: without the query on the LTI routes, whose
/// queries carry one-time handoff codes and the platform's login hints.
pub fn logged_uri(uri: &axum::http::Uri) -> String {
    let path = uri.path();
    if path == "/lti" || path.starts_with("/lti/") {
        path.to_string()
    } else {
        uri.to_string()
    }
}

// The login.

/// The parameters of a third-party login initiation, by query (GET) or form (POST).
#[derive(Debug, Default, Deserialize)]
pub struct LoginParams {
    iss: Option<String>,
    login_hint: Option<String>,
    target_link_uri: Option<String>,
    lti_message_hint: Option<String>,
    client_id: Option<String>,
    lti_deployment_id: Option<String>,
}

pub async fn login_get(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    headers: HeaderMap,
    Query(params): Query<LoginParams>,
) -> Result<Response, Refusal> {
    login(&store, &config, &headers, params).await
}

pub async fn login_post(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    headers: HeaderMap,
    Form(params): Form<LoginParams>,
) -> Result<Response, Refusal> {
    login(&store, &config, &headers, params).await
}

async fn login(
    store: &Store,
    config: &Config,
    headers: &HeaderMap,
    p: LoginParams,
) -> Result<Response, Refusal> {
    let base = public_url(config)?;
    let (Some(iss), Some(login_hint), Some(target)) = (p.iss, p.login_hint, p.target_link_uri)
    else {
        return Err(Refusal::bad(
            "a login needs iss, login_hint and target_link_uri",
        ));
    };
    // The tool's own URL, or a page under it: `https://tool.example.edu.evil.example` is not.
    if target != base && !target.starts_with(&format!("{base}/")) {
        return Err(Refusal::bad(format!(
            "target_link_uri {target} is not a page of this tool ({base})"
        )));
    }
    let platforms = store.lti_platforms().await.map_err(internal)?;
    let matching: Vec<&Platform> = platforms
        .iter()
        .filter(|x| x.issuer == iss && p.client_id.as_ref().is_none_or(|c| *c == x.client_id))
        .collect();
    let platform = match matching.as_slice() {
        [one] => *one,
        [] => {
            return Err(Refusal::forbidden(format!(
                "no platform with issuer {iss}{} is registered with this tool",
                p.client_id
                    .as_ref()
                    .map(|c| format!(" and client id {c}"))
                    .unwrap_or_default()
            )))
        }
        _ => {
            return Err(Refusal::bad(format!(
                "several registrations of {iss}: the login must name its client_id"
            )))
        }
    };
    if let Some(d) = &p.lti_deployment_id {
        if !platform.deployments.contains(d) {
            return Err(Refusal::forbidden(format!(
                "deployment {d} of {iss} is not registered with this tool"
            )));
        }
    }
    let (state, nonce) = (random().map_err(internal)?, random().map_err(internal)?);
    // Over HTTPS the login leaves a cookie in this browser, by which the launch tells it from
    // any other; over plain HTTP no cookie makes the trip back through the platform's
    // cross-site form post, and every launch is handed over through the resume page.
    let binding = match auth::over_https(headers, config) {
        true => Some(auth::new_session_secret().map_err(internal)?),
        false => None,
    };
    let binding_hash = binding.as_deref().map(auth::hash_token);
    store
        .start_lti_login(&state, &nonce, &platform.id, binding_hash.as_deref())
        .await
        .map_err(internal)?;
    let mut url = reqwest::Url::parse(&platform.auth_url).map_err(internal)?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("scope", "openid")
            .append_pair("response_type", "id_token")
            .append_pair("response_mode", "form_post")
            .append_pair("prompt", "none")
            .append_pair("client_id", &platform.client_id)
            .append_pair("redirect_uri", &format!("{base}/lti/launch"))
            .append_pair("login_hint", &login_hint)
            .append_pair("state", &state)
            .append_pair("nonce", &nonce);
        if let Some(hint) = &p.lti_message_hint {
            q.append_pair("lti_message_hint", hint);
        }
    }
    let mut response = (
        StatusCode::FOUND,
        [
            (header::LOCATION, url.to_string()),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
    )
        .into_response();
    if let Some(secret) = &binding {
        response.headers_mut().append(
            header::SET_COOKIE,
            HeaderValue::from_str(&browser::login_cookie(&state, secret)).map_err(internal)?,
        );
    }
    Ok(response)
}

/// 32 random bytes, base64url.
fn random() -> Result<String, getrandom::Error> {
    use base64::Engine;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

// The launch.

#[derive(Debug, Deserialize)]
pub struct LaunchForm {
    id_token: Option<String>,
    state: Option<String>,
}

/// `aud` is a string or an array of strings.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: Option<String>,
    aud: Audience,
    azp: Option<String>,
    iat: i64,
    nonce: Option<String>,
    name: Option<String>,
    given_name: Option<String>,
    family_name: Option<String>,
    #[serde(flatten)]
    rest: serde_json::Map<String, Json_>,
}

impl Claims {
    fn lti(&self, name: &str) -> Option<&Json_> {
        self.rest.get(&format!("{LTI}{name}"))
    }
    fn lti_str(&self, name: &str) -> Option<&str> {
        self.lti(name).and_then(Json_::as_str)
    }
}

/// Who launched, and where they go.
#[derive(Debug)]
pub struct Launch {
    /// The registration (issuer and client id) the launch came through.
    pub platform: String,
    pub issuer: String,
    pub deployment: String,
    pub sub: String,
    /// The platform's name for the user, made to follow the rules of a display name.
    pub name: Option<String>,
    pub instructor: bool,
    /// The staff role the launch asks for in the course's class: owner for the platform's
    /// Instructor (given only while the class has no owner; a TA otherwise), TA for a
    /// TeachingAssistant or a ContentDeveloper; none for a learner.
    pub staff: Option<StaffRole>,
    pub scenario: Option<String>,
    /// An instructor placing an activity (`LtiDeepLinkingRequest`): where to send the choice.
    pub deep_linking: Option<DeepLinking>,
    /// The line item the resource link's scores go to, when the platform lets the tool post
    /// scores there (on one of the platform's own origins).
    pub lineitem: Option<String>,
    /// True when the platform lets the tool read its line items (their `endDateTime`).
    pub lineitem_readable: bool,
    /// The platform's course (its id and title), which is a class here.
    pub context: Option<(String, String)>,
    /// Where the tool may make a line item, when the launch named none.
    pub lineitems: Option<String>,
    /// The resource link launched.
    pub resource_link: Option<String>,
    /// Whether the browser that started the login sent the launch.
    pub browser: Browser,
}

/// What a deep linking request asks the tool to answer.
#[derive(Debug)]
pub struct DeepLinking {
    pub return_url: String,
    /// Opaque to the tool; sent back as it came.
    pub data: Option<String>,
    pub client_id: String,
    pub issuer: String,
    pub deployment_id: String,
}

pub async fn launch(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    State(catalogue): State<Arc<Catalogue>>,
    State(outbound): State<Arc<Outbound>>,
    headers: HeaderMap,
    Form(form): Form<LaunchForm>,
) -> Result<Response, Refusal> {
    let launch = verify_launch(&store, &outbound, &form, &headers).await?;
    // Every check passed: now the login is spent (once), and the student signed in.
    let state = form.state.as_deref().unwrap_or_default();
    if !store.use_lti_login(state).await.map_err(internal)? {
        return Err(Refusal::forbidden(
            "this login was used already: a launch is accepted once",
        ));
    }
    let student = launched_student(&store, &launch).await?;
    // The platform's course is a class: made at its first launch; a learner is a member.
    let class = match &launch.context {
        Some((id, title)) => Some(course_class(&store, &launch, id, title).await?),
        None => None,
    };
    // Staff of the course get their role in its class, and their session signs them in.
    if let (Some(class), Some(wanted)) = (&class, launch.staff) {
        let (account, role) = store
            .launched_staff(&student, class, wanted)
            .await
            .map_err(internal)?;
        tracing::info!(class = %class, account = %account, role = role.as_str(), "a launch with a staff role");
    }
    if let (Some(class), false) = (&class, launch.instructor) {
        let shown = launch.name.as_deref().unwrap_or("Learner");
        let shown = classes::free_name(&store, class, shown, &student)
            .await
            .map_err(|e| internal(e.message))?;
        if let crate::store::Joined::Closed = store
            .join_class(class, &student, &shown)
            .await
            .map_err(internal)?
        {
            tracing::info!(class = %class, student = %student, "a launch into a closed class: not made a member");
        }
    }
    // Only the browser that started the login is signed in: any other keeps its session.
    let secret = match launch.browser {
        Browser::Started => {
            let secret = auth::new_session_secret().map_err(internal)?;
            store
                .add_session(&student, &auth::hash_token(&secret))
                .await
                .map_err(internal)?;
            Some(secret)
        }
        Browser::Other => None,
    };
    if let Some(deep) = &launch.deep_linking {
        let mut response = deep_linking_page(&store, &catalogue, deep).await?;
        if let Some(secret) = &secret {
            for cookie in [
                auth::session_cookie(&headers, &config, secret),
                browser::expire_login_cookie(state),
            ] {
                response.headers_mut().append(
                    header::SET_COOKIE,
                    HeaderValue::from_str(&cookie).map_err(internal)?,
                );
            }
        }
        return Ok(response);
    }
    record_grade_target(&store, &outbound, &catalogue, &launch, &student).await?;
    if let Some(class) = &class {
        platform_due_date(&store, &outbound, &catalogue, &launch, class).await;
    }
    let target = match (&launch.scenario, &class) {
        (_, Some(class)) if launch.instructor => format!("/instructor/classes/{class}"),
        (Some(id), _) if !launch.instructor && catalogue.get(id).is_some() => {
            format!("/scenarios/{id}")
        }
        _ => "/".to_string(),
    };
    tracing::info!(student = %student, platform = %launch.platform, instructor = launch.instructor, signed_in = secret.is_some(), "LTI launch");
    let code = random().map_err(internal)?;
    store
        .add_lti_handoff(&auth::hash_token(&code), &student, &target)
        .await
        .map_err(internal)?;
    match secret {
        // A frame that keeps no cookie of this site can still hand the student over to a new
        // window: the launched page gets a one-time code in its URL's fragment (never sent to
        // a server by the browser), which the resume page exchanges for a session.
        Some(secret) => see_other(
            &format!("{target}#lti-handoff={code}"),
            &[
                browser::launch_cookie(&headers, &config, &secret),
                browser::expire_login_cookie(state),
            ],
        ),
        // A browser that did not start the login is signed in by nobody but itself: the
        // resume page names whom the launch was for and asks first.
        None => see_other(&format!("/lti/resume?code={code}"), &[]),
    }
}

/// The student a launch's user is: found by their issuer and `sub`, or made now, with the
/// platform's name for them as display name.
async fn launched_student(store: &Store, launch: &Launch) -> Result<String, Refusal> {
    let student = match store
        .lti_student(&launch.issuer, &launch.sub)
        .await
        .map_err(internal)?
    {
        Some(student) => student,
        None => {
            let id = auth::new_student_id();
            store.add_lti_student(&id).await.map_err(internal)?;
            store
                .link_lti_user(&launch.issuer, &launch.sub, &id)
                .await
                .map_err(internal)?
        }
    };
    if let Some(name) = &launch.name {
        store
            .set_display_name(&student, Some(name))
            .await
            .map_err(internal)?;
    }
    Ok(student)
}

/// The scores of the scenario a resource link opens go to its line item: the launch's, or
/// the one made for the resource link (once) when the launch named none. A platform that
/// cannot make one now does not stop the launch; the next launch tries again.
/// The due date the launch's line item gives its scenario in the course's class
/// (`endDateTime`), when the platform lets the tool read it; a due date staff set wins. A
/// failure to read it is logged and the launch goes on.
async fn platform_due_date(
    store: &Store,
    outbound: &Outbound,
    catalogue: &Catalogue,
    launch: &Launch,
    class: &str,
) {
    let (Some(lineitem), true) = (&launch.lineitem, launch.lineitem_readable) else {
        return;
    };
    let Some(entry) = launch.scenario.as_deref().and_then(|id| catalogue.get(id)) else {
        return;
    };
    let platforms = match store.lti_platforms().await {
        Ok(p) => p,
        Err(e) => return tracing::warn!("the platforms could not be read: {e}"),
    };
    let Some(platform) = platforms.iter().find(|p| p.id == launch.platform) else {
        return;
    };
    match grades::line_item_end(store, outbound, platform, lineitem).await {
        Ok(Some(end)) => match store
            .set_platform_due(class, &entry.scenario().id, end)
            .await
        {
            Ok(true) => {
                tracing::info!(class, scenario = %entry.scenario().id, due = %end, "a due date from the platform's line item")
            }
            Ok(false) => {}
            Err(e) => tracing::warn!("the line item's due date could not be kept: {e}"),
        },
        Ok(None) => {}
        Err(e) => tracing::warn!(platform = %platform.id, "the line item could not be read: {e}"),
    }
}

async fn record_grade_target(
    store: &Store,
    outbound: &Outbound,
    catalogue: &Catalogue,
    launch: &Launch,
    student: &str,
) -> Result<(), Refusal> {
    let Some(entry) = launch.scenario.as_deref().and_then(|id| catalogue.get(id)) else {
        return Ok(());
    };
    let lineitem = match (&launch.lineitem, &launch.lineitems, &launch.resource_link) {
        (Some(l), _, _) => Some(l.clone()),
        (None, Some(container), Some(link)) => {
            let platforms = store.lti_platforms().await.map_err(internal)?;
            match platforms.iter().find(|p| p.id == launch.platform) {
                Some(p) => {
                    match grades::line_item_for(
                        store,
                        outbound,
                        p,
                        container,
                        link,
                        entry.scenario(),
                    )
                    .await
                    {
                        Ok(l) => Some(l),
                        Err(e) => {
                            tracing::warn!(platform = %launch.platform, "no line item for the resource link yet: {e}");
                            None
                        }
                    }
                }
                None => None,
            }
        }
        _ => None,
    };
    if let (Some(lineitem), false) = (lineitem, launch.instructor) {
        store
            .set_grade_target(
                student,
                &entry.scenario().id,
                &launch.platform,
                &launch.sub,
                &lineitem,
            )
            .await
            .map_err(internal)?;
    }
    Ok(())
}

/// The class of a platform's course, made (with the course's title) at its first launch
/// through any of the issuer's registrations.
async fn course_class(
    store: &Store,
    launch: &Launch,
    context: &str,
    title: &str,
) -> Result<String, Refusal> {
    let (issuer, deployment) = (&launch.issuer, &launch.deployment);
    if let Some(class) = store
        .lti_course_class(issuer, deployment, context)
        .await
        .map_err(internal)?
    {
        return Ok(class);
    }
    let name: String = title
        .chars()
        .filter(|c| !c.is_control())
        .take(100)
        .collect();
    let name = if name.trim().is_empty() {
        format!("Course {context}")
    } else {
        name.trim().to_string()
    };
    for _ in 0..8 {
        let code = classes::new_join_code().map_err(internal)?;
        let id = classes::new_class_id();
        if store
            .create_class(&id, &name, &code, &format!("lti:{}", launch.platform))
            .await
            .map_err(internal)?
            .is_some()
        {
            tracing::info!(class = %id, platform = %launch.platform, context, "a class made for a platform's course");
            return store
                .link_lti_course(issuer, deployment, context, &id)
                .await
                .map_err(internal);
        }
    }
    Err(internal("no free join code after 8 draws"))
}

/// The staff role a launch's LTI roles ask for: the platform's Instructor asks to own the
/// course's class; a TeachingAssistant (`membership/Instructor#TeachingAssistant`, even
/// beside Instructor) or a ContentDeveloper is a TA; anyone else (a Learner) none.
pub fn staff_role(roles: &[&str]) -> Option<StaffRole> {
    // The sub-role decides: a platform may send a TA's principal role Instructor beside it.
    let ta = |r: &&str| {
        r.ends_with("membership/Instructor#TeachingAssistant")
            || r.ends_with("membership#ContentDeveloper")
    };
    if roles.iter().any(ta) {
        Some(StaffRole::Ta)
    } else if roles.iter().any(|r| r.ends_with("membership#Instructor")) {
        Some(StaffRole::Owner)
    } else {
        None
    }
}

/// The platform's name for a user, made to follow the rules of a name a student types
/// (`routes::classes::member_name`): control characters (line breaks among them) become
/// spaces, runs of spaces one space, and it is cut to the rule's length. `None` when nothing
/// is left.
pub fn platform_name(claim: &str) -> Option<String> {
    let spaced: String = claim
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let joined = spaced.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = joined
        .chars()
        .take(classes::MEMBER_NAME_CHARS_MAX)
        .collect();
    classes::member_name(&cut).map(str::to_string)
}

/// Every check of a launch, in order; creates nothing.
async fn verify_launch(
    store: &Store,
    outbound: &Outbound,
    form: &LaunchForm,
    headers: &HeaderMap,
) -> Result<Launch, Refusal> {
    let (Some(token), Some(state)) = (form.id_token.as_deref(), form.state.as_deref()) else {
        return Err(Refusal::bad("a launch needs id_token and state"));
    };
    let login = store
        .lti_login(state)
        .await
        .map_err(internal)?
        .ok_or_else(|| {
            Refusal::forbidden("the state is not one this tool set, or its login was used already")
        })?;
    let age = Utc::now().signed_duration_since(login.created_at);
    if age.to_std().is_ok_and(|a| a > LOGIN_TTL) {
        return Err(Refusal::forbidden(
            "the login is too old: open the activity from the course again",
        ));
    }
    let platforms = store.lti_platforms().await.map_err(internal)?;
    let platform = platforms
        .into_iter()
        .find(|p| p.id == login.platform)
        .ok_or_else(|| Refusal::forbidden("the platform of this login is no longer registered"))?;
    let claims = verified_claims(outbound, token, &platform, &login.nonce).await?;
    read_launch(
        platform,
        &claims,
        browser::browser_of(headers, state, &login),
    )
}

/// The id_token's claims, once its signature, issuer, audience, times and nonce are checked.
async fn verified_claims(
    outbound: &Outbound,
    token: &str,
    platform: &Platform,
    nonce: &str,
) -> Result<Claims, Refusal> {
    let header = jsonwebtoken::decode_header(token)
        .map_err(|e| Refusal::bad(format!("the id_token is not a JWT: {e}")))?;
    if header.alg != Algorithm::RS256 {
        return Err(Refusal::bad(format!(
            "the id_token is signed with {:?}; LTI uses RS256",
            header.alg
        )));
    }
    let kid = header
        .kid
        .ok_or_else(|| Refusal::bad("the id_token's header names no key (kid)"))?;
    let key = outbound.platform_key(&platform.jwks_url, &kid).await?;
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[&platform.issuer]);
    validation.set_audience(&[&platform.client_id]);
    validation.leeway = LEEWAY_SECONDS;
    validation.set_required_spec_claims(&["exp", "iat", "iss", "aud"]);
    let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation)
        .map_err(|e| Refusal::forbidden(format!("the id_token was refused: {}", token_error(&e))))?
        .claims;
    let now = Utc::now().timestamp();
    if claims.iat > now + LEEWAY_SECONDS as i64 {
        return Err(Refusal::forbidden("the id_token was issued in the future"));
    }
    let audiences = match &claims.aud {
        Audience::One(a) => vec![a.clone()],
        Audience::Many(a) => a.clone(),
    };
    match &claims.azp {
        Some(azp) if *azp != platform.client_id => {
            return Err(Refusal::forbidden(format!(
                "the id_token's azp is {azp}, not this tool's client id"
            )))
        }
        None if audiences.len() > 1 => {
            return Err(Refusal::forbidden(
                "the id_token has several audiences and no azp",
            ))
        }
        _ => {}
    }
    if claims.nonce.as_deref() != Some(nonce) {
        return Err(Refusal::forbidden(
            "the id_token's nonce is not the one this login sent",
        ));
    }
    Ok(claims)
}

/// What a verified token launches: its deployment is registered, its message type one the
/// tool takes, its version 1.3.0, and it names a user.
fn read_launch(platform: Platform, claims: &Claims, browser: Browser) -> Result<Launch, Refusal> {
    let deployment = claims
        .lti_str("deployment_id")
        .ok_or_else(|| Refusal::bad("the id_token has no deployment_id"))?;
    if !platform.deployments.iter().any(|d| d == deployment) {
        return Err(Refusal::forbidden(format!(
            "deployment {deployment} is not registered with this tool"
        )));
    }
    let deep = match claims.lti_str("message_type") {
        Some("LtiResourceLinkRequest") => false,
        Some("LtiDeepLinkingRequest") => true,
        Some(other) => {
            return Err(Refusal::bad(format!(
                "message type {other} is not one this tool takes (LtiResourceLinkRequest, LtiDeepLinkingRequest)"
            )))
        }
        None => return Err(Refusal::bad("the id_token has no message_type")),
    };
    if claims.lti_str("version") != Some("1.3.0") {
        return Err(Refusal::bad("the id_token's LTI version is not 1.3.0"));
    }
    let sub = claims
        .sub
        .clone()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Refusal::bad("the id_token names no user (sub)"))?;
    let roles: Vec<&str> = claims
        .lti("roles")
        .and_then(Json_::as_array)
        .map(|a| a.iter().filter_map(Json_::as_str).collect())
        .unwrap_or_default();
    let staff = staff_role(&roles);
    let instructor = staff.is_some();
    let name = claims
        .name
        .clone()
        .or_else(|| {
            let parts: Vec<&str> = [&claims.given_name, &claims.family_name]
                .into_iter()
                .flatten()
                .map(String::as_str)
                .collect();
            (!parts.is_empty()).then(|| parts.join(" "))
        })
        .as_deref()
        .and_then(platform_name);
    let deep_linking = match deep {
        true if !instructor => {
            return Err(Refusal::forbidden(
                "only an instructor places an activity (deep linking)",
            ))
        }
        true => Some(deep_linking_of(claims, &platform, deployment)?),
        false => None,
    };
    let (lineitem, lineitems) = service_urls(claims, &platform);
    let lineitem_readable = lineitem_readable(claims);
    let context = claims.lti("context").and_then(|c| {
        let id = c.get("id").and_then(Json_::as_str)?.to_string();
        let title = ["title", "label"]
            .iter()
            .find_map(|k| c.get(*k).and_then(Json_::as_str))
            .map(str::to_string)
            .unwrap_or_else(|| format!("Course {id}"));
        Some((id, title))
    });
    Ok(Launch {
        deployment: deployment.to_string(),
        issuer: platform.issuer.clone(),
        platform: platform.id,
        sub,
        name,
        instructor,
        staff,
        scenario: claims
            .lti("custom")
            .and_then(|c| c.get("scenario"))
            .and_then(Json_::as_str)
            .map(str::to_string),
        deep_linking,
        lineitem,
        lineitem_readable,
        context,
        lineitems,
        resource_link: claims
            .lti("resource_link")
            .and_then(|r| r.get("id"))
            .and_then(Json_::as_str)
            .map(str::to_string),
        browser,
    })
}

/// Where a deep linking request's answer goes.
fn deep_linking_of(
    claims: &Claims,
    platform: &Platform,
    deployment: &str,
) -> Result<DeepLinking, Refusal> {
    let settings = claims
        .rest
        .get("https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings")
        .ok_or_else(|| Refusal::bad("a deep linking request has no deep_linking_settings"))?;
    let return_url = settings
        .get("deep_link_return_url")
        .and_then(Json_::as_str)
        .ok_or_else(|| Refusal::bad("the deep linking settings have no deep_link_return_url"))?;
    Ok(DeepLinking {
        return_url: return_url.to_string(),
        data: settings
            .get("data")
            .and_then(Json_::as_str)
            .map(str::to_string),
        client_id: platform.client_id.clone(),
        issuer: platform.issuer.clone(),
        deployment_id: deployment.to_string(),
    })
}

/// True when the launch's Assignment and Grade Services scopes let the tool read line items.
fn lineitem_readable(claims: &Claims) -> bool {
    claims
        .rest
        .get("https://purl.imsglobal.org/spec/lti-ags/claim/endpoint")
        .and_then(|e| e.get("scope"))
        .and_then(Json_::as_array)
        .is_some_and(|s| {
            s.iter().any(|x| {
                x.as_str() == Some(grades::LINEITEM_SCOPE)
                    || x.as_str() == Some(grades::LINEITEM_READONLY_SCOPE)
            })
        })
}

/// The launch's line item and line items container (Assignment and Grade Services), each
/// when its scope is granted and it is on one of the platform's own origins: the tool sends
/// the platform's access token there, so a URL elsewhere (an internal host, say) is dropped.
fn service_urls(claims: &Claims, platform: &Platform) -> (Option<String>, Option<String>) {
    let endpoint = claims
        .rest
        .get("https://purl.imsglobal.org/spec/lti-ags/claim/endpoint");
    let allows = |scope: &str| {
        endpoint
            .and_then(|e| e.get("scope"))
            .and_then(Json_::as_array)
            .is_some_and(|s| s.iter().any(|x| x.as_str() == Some(scope)))
    };
    let own = |name: &str| {
        let url = endpoint.and_then(|e| e.get(name)).and_then(Json_::as_str)?;
        if grades::on_platform(platform, url) {
            Some(url.to_string())
        } else {
            tracing::warn!(platform = %platform.id, url, "a launch's {name} is not on one of the platform's origins: ignored");
            None
        }
    };
    let lineitem = own("lineitem").filter(|_| allows(grades::SCORE_SCOPE));
    let lineitems =
        own("lineitems").filter(|_| allows(grades::LINEITEM_SCOPE) && allows(grades::SCORE_SCOPE));
    (lineitem, lineitems)
}

/// A verification error in words.
fn token_error(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::InvalidSignature => "its signature does not verify with the platform's key".into(),
        K::ExpiredSignature => "it has expired".into(),
        K::InvalidAudience => "its audience is not this tool's client id".into(),
        K::InvalidIssuer => "its issuer is not the platform that started the login".into(),
        K::ImmatureSignature => "it is not valid yet".into(),
        K::MissingRequiredClaim(c) => format!("it has no {c} claim"),
        other => format!("{other:?}"),
    }
}

// Deep linking.

/// The claims of a deep linking response.
#[derive(Serialize)]
struct DeepLinkingResponse<'a> {
    iss: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
    nonce: String,
    #[serde(rename = "https://purl.imsglobal.org/spec/lti/claim/message_type")]
    message_type: &'static str,
    #[serde(rename = "https://purl.imsglobal.org/spec/lti/claim/version")]
    version: &'static str,
    #[serde(rename = "https://purl.imsglobal.org/spec/lti/claim/deployment_id")]
    deployment_id: &'a str,
    #[serde(rename = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items")]
    content_items: Vec<Json_>,
    #[serde(
        rename = "https://purl.imsglobal.org/spec/lti-dl/claim/data",
        skip_serializing_if = "Option::is_none"
    )]
    data: Option<&'a str>,
}

/// How long a signed choice may wait for the instructor's click.
const DEEP_LINK_TTL_SECONDS: i64 = 30 * 60;

/// The resource link that opens `scenario`, with its line item (the scenario's points).
pub fn content_item(scenario: &shared::Scenario) -> Json_ {
    let points: u32 = scenario.requirements.iter().map(|r| r.points).sum();
    serde_json::json!({
        "type": "ltiResourceLink",
        "title": scenario.title,
        "custom": { "scenario": scenario.id },
        "lineItem": {
            "scoreMaximum": points,
            "label": scenario.title,
            "resourceId": scenario.id,
        },
    })
}

/// The page an instructor picks a scenario on: one form per scenario, each posting its own
/// signed `LtiDeepLinkingResponse` to the platform.
async fn deep_linking_page(
    store: &Store,
    catalogue: &Catalogue,
    deep: &DeepLinking,
) -> Result<Response, Refusal> {
    let key = keys::current(store).await.map_err(internal)?;
    let signing =
        jsonwebtoken::EncodingKey::from_rsa_pem(key.private_pem.as_bytes()).map_err(internal)?;
    let mut header = jsonwebtoken::Header::new(Algorithm::RS256);
    header.kid = Some(key.kid.clone());
    let now = Utc::now().timestamp();
    let mut items = String::new();
    for entry in catalogue.entries() {
        let s = &entry.scenario();
        let claims = DeepLinkingResponse {
            iss: &deep.client_id,
            aud: &deep.issuer,
            iat: now,
            exp: now + DEEP_LINK_TTL_SECONDS,
            nonce: random().map_err(internal)?,
            message_type: "LtiDeepLinkingResponse",
            version: "1.3.0",
            deployment_id: &deep.deployment_id,
            content_items: vec![content_item(s)],
            data: deep.data.as_deref(),
        };
        let jwt = jsonwebtoken::encode(&header, &claims, &signing).map_err(internal)?;
        let points: u32 = s.requirements.iter().map(|r| r.points).sum();
        items.push_str(&format!(
            "<li><form method=\"post\" action=\"{action}\"><input type=\"hidden\" name=\"JWT\" value=\"{jwt}\">\
             <button type=\"submit\" data-scenario=\"{id}\">{title}</button> <span>{points} points · <code>{id}</code></span></form></li>",
            action = escape(&deep.return_url),
            id = escape(&s.id),
            title = escape(&s.title),
        ));
    }
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Choose a scenario · Pipeline Builder</title></head>\
         <body><main><h1>Choose the scenario this activity opens</h1><p>Students who open the activity land on it, signed in; their score goes to the course's gradebook.</p><ol>{items}</ol></main></body></html>"
    );
    // The page's forms post to the platform, and the platform shows the page in its frame:
    // the policy names the platform's origins, and allows nothing else.
    let origin_of = |url: &str| {
        reqwest::Url::parse(url)
            .ok()
            .map(|u| u.origin().ascii_serialization())
            .filter(|o| o != "null")
    };
    let return_origin = origin_of(&deep.return_url)
        .ok_or_else(|| Refusal::bad("the deep_link_return_url is not an http(s) URL"))?;
    let frame_origin = origin_of(&deep.issuer).unwrap_or_else(|| return_origin.clone());
    let policy = format!(
        "default-src 'none'; style-src 'unsafe-inline'; form-action {return_origin}; frame-ancestors {frame_origin} {return_origin}; base-uri 'none'"
    );
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8".to_string()),
            (header::CACHE_CONTROL, "no-store".to_string()),
            (header::CONTENT_SECURITY_POLICY, policy),
        ],
        page,
    )
        .into_response())
}

// Frames.

/// Lets the app's pages be shown in a learning platform's frame: an HTML answer whose policy
/// forbids every frame (`frame-ancestors 'none'`, and `X-Frame-Options: DENY`) allows the
/// origins of `--frame-ancestor` and of the registered platforms (their issuer and
/// authorization URL) instead, when there are any. Every other answer is left as it is.
pub async fn frame_policy(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut response = next.run(request).await;
    let html = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    let forbids = response
        .headers()
        .get(header::CONTENT_SECURITY_POLICY)
        .and_then(|v| v.to_str().ok())
        .filter(|p| p.contains("frame-ancestors 'none'"))
        .map(str::to_string);
    let (true, Some(policy)) = (html, forbids) else {
        return response;
    };
    let mut origins: Vec<String> = config.frame_ancestors.clone();
    match store.lti_platforms().await {
        Ok(platforms) => {
            for p in platforms {
                for url in [&p.issuer, &p.auth_url] {
                    if let Some(o) = reqwest::Url::parse(url)
                        .ok()
                        .map(|u| u.origin().ascii_serialization())
                        .filter(|o| o != "null")
                    {
                        origins.push(o);
                    }
                }
            }
        }
        Err(e) => tracing::warn!("the platforms that may frame the app: {e}"),
    }
    origins.sort();
    origins.dedup();
    if origins.is_empty() {
        return response;
    }
    let allowed = format!("frame-ancestors 'self' {}", origins.join(" "));
    if let Ok(value) = HeaderValue::from_str(&policy.replace("frame-ancestors 'none'", &allowed)) {
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
        headers.remove(header::X_FRAME_OPTIONS);
    }
    response
}

// The tool's keys and configuration.

pub async fn jwks(State(store): State<Store>) -> Result<Response, Refusal> {
    let set = keys::published(&store).await.map_err(internal)?;
    Ok(([(header::CACHE_CONTROL, "public, max-age=300")], Json(set)).into_response())
}

/// `GET /lti/config`: what a platform's administrator registers.
#[derive(Serialize)]
pub struct ToolConfig {
    pub title: &'static str,
    pub description: &'static str,
    pub oidc_initiation_url: String,
    pub target_link_uri: String,
    pub redirect_uris: Vec<String>,
    pub public_jwk_url: String,
    pub custom_parameters: serde_json::Map<String, Json_>,
}

pub async fn config(State(config): State<Arc<Config>>) -> Result<Json<ToolConfig>, Refusal> {
    let base = public_url(&config)?;
    let mut custom = serde_json::Map::new();
    custom.insert(
        "scenario".into(),
        Json_::from("the scenario id a resource link opens, for example safe-retry"),
    );
    Ok(Json(ToolConfig {
        title: "Pipeline Builder",
        description: "Design data pipelines that survive retries, crashes and reruns; each design is checked under every failure its scenario allows.",
        oidc_initiation_url: format!("{base}/lti/login"),
        target_link_uri: format!("{base}/lti/launch"),
        redirect_uris: vec![format!("{base}/lti/launch")],
        public_jwk_url: format!("{base}/lti/jwks"),
        custom_parameters: custom,
    }))
}
