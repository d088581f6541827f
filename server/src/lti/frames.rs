//! Frames: the app's pages shown inside a learning platform.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::Response;

use crate::config::Config;
use crate::store::Store;

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
