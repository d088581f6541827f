//! The operations' routes: liveness, readiness, Prometheus metrics, the OpenAPI document, the
//! fallbacks for paths with nothing behind them, and the benchmarks' floor.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::catalogue::Catalogue;
use crate::config::Config;
use crate::error::{AppError, ErrorBody, ErrorCode};
use crate::metrics::Metrics;
use crate::store::Store;
use crate::tables::TablesStatus;

/// The answer of the probes: `ok` from `/healthz`, `ready` from `/readyz`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    #[schema(example = "ok")]
    pub status: String,
    /// `/readyz` only: where the scenarios' verdict tables stand. The server is ready while
    /// they are built; until a scenario's table is there, its checks search.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub verdict_tables: Option<TablesStatus>,
}

#[utoipa::path(get, path = "/api/openapi.json", tag = "operations", description = "This document.",
    responses((status = 200, description = "OpenAPI 3.1", body = Object)))]
pub async fn openapi(State(document): State<ApiDocument>) -> Response {
    match document.0 {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(why) => AppError::internal(why).into_response(),
    }
}

/// The OpenAPI document as JSON, written once when the router is made (`crate::app` builds
/// it from `crate::openapi`, which in turn names these handlers). A document that could not
/// be written is answered 500, never as an empty body.
#[derive(Clone)]
pub struct ApiDocument(pub Result<Bytes, String>);

impl ApiDocument {
    pub fn of(document: &impl Serialize) -> ApiDocument {
        ApiDocument(
            serde_json::to_vec(document)
                .map(Bytes::from)
                .map_err(|e| format!("the OpenAPI document could not be written: {e}")),
        )
    }
}

#[utoipa::path(get, path = "/healthz", tag = "operations", description = "Liveness: the process answers.",
    responses((status = 200, body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        verdict_tables: None,
    })
}

#[utoipa::path(get, path = "/readyz", tag = "operations", description = "Readiness: the database answers. The body says whether the scenarios' verdict tables are built (checks are answered meanwhile, by the search).",
    responses((status = 200, body = Health), (status = 503, description = "unavailable", body = ErrorBody)))]
pub async fn readyz(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
) -> Result<Json<Health>, AppError> {
    match tokio::time::timeout(Duration::from_secs(2), store.ping()).await {
        Ok(Ok(())) => Ok(Json(Health {
            status: "ready".into(),
            verdict_tables: Some(TablesStatus::of(&catalogue)),
        })),
        Ok(Err(e)) => Err(AppError::unavailable(e)),
        Err(_) => Err(AppError::unavailable(
            "the database did not answer within 2 s",
        )),
    }
}

#[utoipa::path(get, path = "/metrics", tag = "operations",
    description = "Prometheus text: requests by route and status, a latency histogram, checks run, schedules explored, rows swept and the group commit's batches of writes. \
        When the server is started with `--metrics-token`, it needs `Authorization: Bearer <that token>`.",
    responses((status = 200, description = "Prometheus text format 0.0.4", content_type = "text/plain", body = String),
        (status = 401, description = "unauthorized: a metrics token is set and was not shown", body = ErrorBody)))]
pub async fn metrics(
    State(metrics): State<Arc<Metrics>>,
    State(config): State<Arc<Config>>,
    State(store): State<Store>,
    headers: HeaderMap,
) -> Response {
    if let Some(expected) = &config.metrics_token {
        if !shows_token(&headers, expected) {
            let mut refused = AppError::unauthorized(
                "/metrics needs the metrics token: send Authorization: Bearer <token>",
            )
            .into_response();
            refused.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
            return refused;
        }
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics.render(&store.group_commit_stats()),
    )
        .into_response()
}

/// True when `headers` carry `Authorization: Bearer <expected>`. The two are compared as
/// sha256 digests in constant time, so neither the timing nor the length tells a guess apart.
fn shows_token(headers: &HeaderMap, expected: &str) -> bool {
    let Some(shown) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
    else {
        return false;
    };
    let (shown, expected) = (
        Sha256::digest(shown.as_bytes()),
        Sha256::digest(expected.as_bytes()),
    );
    bool::from(shown.as_slice().ct_eq(expected.as_slice()))
}

#[derive(Deserialize)]
pub struct FloorQuery {
    /// The size of the answer, in bytes (default 64, at most 1 MiB).
    pub bytes: Option<usize>,
}

/// `POST /api/floor?bytes=N` (only with `serve --floor-route`): a fixed JSON answer of N
/// bytes that does no work and reads no body, so that a benchmark can compare the check's
/// throughput with what the server stack alone can do.
pub async fn floor(Query(query): Query<FloorQuery>) -> Response {
    const EMPTY: &str = "{\"floor\":\"\"}";
    let bytes = query.bytes.unwrap_or(64).clamp(EMPTY.len(), 1024 * 1024);
    let mut body = String::with_capacity(bytes);
    body.push_str("{\"floor\":\"");
    body.extend(std::iter::repeat_n('x', bytes - EMPTY.len()));
    body.push_str("\"}");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Any `/api/…` path that names no route.
pub async fn api_not_found() -> AppError {
    AppError::of(
        ErrorCode::NotFound,
        "there is no such API route; GET /api/openapi.json lists them",
    )
}

/// Any other path, when there is no built web app to serve it.
pub async fn not_found() -> AppError {
    AppError::of(
        ErrorCode::NotFound,
        "there is nothing at this path (the web app is not built; cargo xtask run builds it)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_document_that_could_not_be_written_is_answered_500_internal_not_empty() {
        // JSON object keys must be strings: a map keyed by pairs cannot be written.
        let unwritable: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let document = ApiDocument::of(&unwritable);
        assert!(document.0.is_err());
        let answer = openapi(State(document)).await;
        assert_eq!(
            answer.status(),
            axum::http::StatusCode::INTERNAL_SERVER_ERROR
        );
        let body = axum::body::to_bytes(answer.into_body(), 4096)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], "internal");

        let written = ApiDocument::of(&serde_json::json!({"openapi": "3.1.0"}));
        let answer = openapi(State(written)).await;
        assert_eq!(answer.status(), axum::http::StatusCode::OK);
    }
}
