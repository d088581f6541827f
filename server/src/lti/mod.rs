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
mod claims;
mod codes;
mod deep_linking;
mod frames;
pub mod grades;
pub mod keys;
mod launch;
mod login;
pub mod merge;
pub mod outbound;
pub mod page;
pub mod store;

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::Value as Json_;

use crate::config::Config;
use crate::error::AppError;
use crate::store::Store;
pub use browser::{HANDOFF_TTL, LOGIN_TTL};
pub use claims::{platform_name, staff_role, DeepLinking, Launch, LaunchForm, LEEWAY_SECONDS};
pub use deep_linking::content_item;
pub use frames::frame_policy;
pub use launch::launch;
pub use login::{login_get, login_post, LoginParams};
pub use outbound::Outbound;
use page::public_url;

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

// The tool's keys and configuration.

/// `GET /lti/jwks`: the tool's public keys, which platforms verify its messages with.
pub async fn jwks(State(store): State<Store>) -> Result<Response, AppError> {
    let set = keys::published(&store).await.map_err(AppError::internal)?;
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

pub async fn config(State(config): State<Arc<Config>>) -> Result<Json<ToolConfig>, AppError> {
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
