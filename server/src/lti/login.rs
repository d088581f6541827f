//! The third-party login that starts a launch: the browser goes on to the platform's
//! authorization endpoint with a `state` and a `nonce` the tool keeps.

use std::sync::Arc;

use axum::extract::{Form, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::browser;
use super::codes::random;
use super::page::{internal, public_url, Refusal};
use super::store::Platform;
use crate::auth;
use crate::config::Config;
use crate::store::Store;

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
