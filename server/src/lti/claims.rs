//! Verifying a launch's `id_token` and reading its claims into a [`Launch`]; nothing here
//! writes.

use axum::http::HeaderMap;
use chrono::Utc;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use serde_json::Value as Json_;

use super::browser::{self, Browser, LOGIN_TTL};
use super::grades;
use super::outbound::Outbound;
use super::page::{internal, Refusal};
use super::store::Platform;
use crate::routes::classes;
use crate::store::{StaffRole, Store};

/// The claims' namespace.
const LTI: &str = "https://purl.imsglobal.org/spec/lti/claim/";
/// How far a token's times may be off the tool's clock.
pub const LEEWAY_SECONDS: u64 = 60;

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

/// Every check of a launch, in order; creates nothing.
pub(super) async fn verify_launch(
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

#[derive(Debug, Deserialize)]
pub struct LaunchForm {
    pub(super) id_token: Option<String>,
    pub(super) state: Option<String>,
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
