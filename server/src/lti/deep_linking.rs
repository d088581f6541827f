//! Deep linking: an instructor picks a scenario, and the tool answers the platform with a
//! signed content item.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use jsonwebtoken::Algorithm;
use serde::Serialize;
use serde_json::Value as Json_;

use super::claims::DeepLinking;
use super::codes::random;
use super::keys;
use super::page::{escape, internal, Refusal};
use crate::catalogue::Catalogue;
use crate::store::Store;

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
pub(super) async fn deep_linking_page(
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
