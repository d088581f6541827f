//! The application: its state, its router with tower-http's layers, and serving it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{header, HeaderName, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

use crate::api;
use crate::auth;
use crate::catalogue::Catalogue;
use crate::error::{body_too_large, AppError};
use crate::headers;
use crate::limit::{self, RateLimit, RateLimiter};
use crate::metrics::Metrics;
use crate::store::Store;

/// Limits and places the server is started with.
#[derive(Clone, Debug)]
pub struct Config {
    /// The largest request body of every route but `/api/grade`.
    pub body_limit_bytes: usize,
    /// The largest body of `/api/grade`, which carries a whole class.
    pub grade_body_limit_bytes: usize,
    /// The most items one `/api/grade` call may carry.
    pub grade_items_max: usize,
    /// The longest a request may take before it is answered with `timeout`.
    pub request_timeout: Duration,
    /// The lease of an in-flight idempotency key: its holder renews it every quarter of this
    /// while it works; a claim not renewed for this long belongs to a server that died, and a
    /// retry takes it over.
    pub idempotency_lease: Duration,
    /// The built web app, served for every path that is not the API.
    pub static_dir: Option<PathBuf>,
    /// How far one check may go before it is answered with `check_too_large`.
    pub check_limits: shared::Limits,
    /// How far a check may go on the request's own thread before it is handed to the blocking
    /// pool: a millisecond or two of simulation by default. Every check of a shipped design
    /// fits (the largest simulates about 6,000 steps), and so skips the handoff.
    pub inline_check_limits: shared::Limits,
    /// Per-client request limits; `None` turns them off.
    pub rate_limit: Option<RateLimit>,
    /// Mounts `POST /api/floor`, an answer with no work, for benchmarks to compare against.
    pub floor_route: bool,
    /// The memory for verdicts already given (`crate::verdicts`); 0 checks every design anew.
    pub verdict_cache_bytes: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            body_limit_bytes: 256 * 1024,
            grade_body_limit_bytes: 16 * 1024 * 1024,
            grade_items_max: 1000,
            request_timeout: Duration::from_secs(300),
            idempotency_lease: Duration::from_secs(10),
            static_dir: None,
            check_limits: shared::Limits::default(),
            inline_check_limits: shared::Limits {
                max_schedules: 10_000,
                max_steps: 10_000,
            },
            rate_limit: Some(RateLimit::default()),
            floor_route: false,
            verdict_cache_bytes: 64 * 1024 * 1024,
        }
    }
}

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

struct Inner {
    store: Store,
    catalogue: Catalogue,
    metrics: Metrics,
    config: Config,
    /// Checks are CPU-bound: at most one per core runs at a time, the rest wait their turn.
    checks: Arc<tokio::sync::Semaphore>,
    rate_limiter: Option<RateLimiter>,
    verdicts: crate::verdicts::VerdictCache,
}

impl AppState {
    pub fn new(store: Store, catalogue: Catalogue, config: Config) -> AppState {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let checks = Arc::new(tokio::sync::Semaphore::new(cores));
        let rate_limiter = config.rate_limit.map(RateLimiter::new);
        let verdicts = crate::verdicts::VerdictCache::new(config.verdict_cache_bytes);
        AppState(Arc::new(Inner {
            store,
            catalogue,
            metrics: Metrics::default(),
            config,
            checks,
            rate_limiter,
            verdicts,
        }))
    }
    pub fn verdicts(&self) -> &crate::verdicts::VerdictCache {
        &self.0.verdicts
    }
    pub fn rate_limiter(&self) -> Option<&RateLimiter> {
        self.0.rate_limiter.as_ref()
    }
    /// Waits for a turn to run a check.
    pub async fn check_permit(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        // The semaphore is never closed, so an error cannot happen; without a permit the
        // check runs anyway rather than failing the request.
        Arc::clone(&self.0.checks).acquire_owned().await.ok()
    }
    pub fn store(&self) -> &Store {
        &self.0.store
    }
    pub fn catalogue(&self) -> &Catalogue {
        &self.0.catalogue
    }
    pub fn metrics(&self) -> &Metrics {
        &self.0.metrics
    }
    pub fn config(&self) -> &Config {
        &self.0.config
    }
}

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The whole application. Tests call it without a socket.
pub fn router(state: AppState) -> Router {
    let config = state.config().clone();
    let mut small = Router::new()
        .route("/api/session", get(api::get_session).put(api::put_session))
        .route("/api/scenarios", get(api::list_scenarios))
        .route("/api/scenarios/{id}", get(api::get_scenario))
        .route("/api/scenarios/{id}/check", post(api::check))
        .route(
            "/api/submissions",
            post(api::create_submission).get(api::list_submissions),
        )
        .route("/api/submissions/{id}", get(api::get_submission))
        .route(
            "/api/drafts/{scenario}",
            get(api::get_draft).put(api::put_draft),
        )
        .route("/api/openapi.json", get(api::openapi))
        .route("/healthz", get(api::healthz))
        .route("/readyz", get(api::readyz))
        .route("/metrics", get(api::metrics))
        .route("/api/{*rest}", any(api::api_not_found))
        .route("/api", any(api::api_not_found));
    if config.floor_route {
        small = small.route("/api/floor", post(api::floor));
    }
    let small = small.layer(RequestBodyLimitLayer::new(config.body_limit_bytes));
    let grade = Router::new()
        .route("/api/grade", post(api::grade))
        .layer(RequestBodyLimitLayer::new(config.grade_body_limit_bytes));
    let mut app = small.merge(grade).layer(DefaultBodyLimit::disable());

    app = match config
        .static_dir
        .as_ref()
        .filter(|d| d.join("index.html").is_file())
    {
        // Client-side routes such as /scenarios/safe-retry get index.html with status 200.
        Some(dir) => app
            .fallback_service(ServeDir::new(dir).fallback(ServeFile::new(dir.join("index.html")))),
        None => app.fallback(api::not_found),
    };

    // The first layer listed is the outermost.
    let layers = ServiceBuilder::new()
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request| {
                    let id = request.headers().get(&REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("");
                    tracing::info_span!("request", method = %request.method(), uri = %request.uri(), request_id = %id)
                })
                .on_response(DefaultOnResponse::new().level(Level::INFO)),
        )
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(middleware::from_fn_with_state(state.clone(), track_metrics))
        .layer(middleware::from_fn_with_state(state.clone(), limit::rate_limit))
        .layer(CompressionLayer::new())
        .layer(middleware::from_fn(json_errors))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, config.request_timeout))
        .layer(middleware::from_fn(auth::set_cookie_layer));
    let mut app = app.layer(layers);
    // Outermost, so that every answer carries them: pages, errors, panics and timeouts.
    let csp = headers::content_security_policy(config.static_dir.as_deref());
    for (name, value) in headers::security_headers(&csp) {
        app = app.layer(SetResponseHeaderLayer::overriding(name, value));
    }
    app.with_state(state)
}

/// Counts every answer by route and status, and times it.
async fn track_metrics(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_string();
    let route = match request.extensions().get::<MatchedPath>() {
        Some(p) => p.as_str().to_string(),
        None if request.uri().path().starts_with("/api") => "unmatched".to_string(),
        None => "static".to_string(),
    };
    let response = next.run(request).await;
    state.metrics().observe_request(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// Gives the answers that tower-http and axum make themselves (413 from the body limit, 408
/// from the timeout, 405 for a wrong method) the same JSON error shape as ours.
async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    // axum's own rejections explain themselves in a line of text; keep it as the message.
    let said = axum::body::to_bytes(body, 2048)
        .await
        .ok()
        .and_then(|b| String::from_utf8(b.to_vec()).ok())
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    let error = match status {
        StatusCode::PAYLOAD_TOO_LARGE => body_too_large(),
        StatusCode::REQUEST_TIMEOUT => AppError::new(
            status,
            "timeout",
            "the request took too long and was stopped",
        ),
        StatusCode::METHOD_NOT_ALLOWED => AppError::new(
            status,
            "method_not_allowed",
            "this route does not accept that method; GET /api/openapi.json lists the routes",
        ),
        StatusCode::NOT_FOUND => {
            AppError::new(status, "not_found", "there is nothing at this path")
        }
        StatusCode::UNSUPPORTED_MEDIA_TYPE => AppError::new(
            status,
            "unsupported_media_type",
            "send the body as application/json",
        ),
        s if s.is_server_error() => AppError::new(
            s,
            "internal",
            "something went wrong on the server; the log says what",
        ),
        s => AppError::new(
            s,
            "bad_request",
            said.unwrap_or_else(|| {
                s.canonical_reason()
                    .unwrap_or("the request was refused")
                    .to_string()
            }),
        ),
    };
    let mut fresh = error.into_response();
    // Keep the headers that matter to clients (Allow, request id).
    for name in [header::ALLOW, REQUEST_ID] {
        if let Some(v) = parts.headers.get(&name) {
            fresh.headers_mut().insert(name, v.clone());
        }
    }
    fresh
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response<Body> {
    AppError::internal("a handler panicked").into_response()
}

/// Resolves on ctrl-c or SIGTERM, so that requests in flight finish before the server stops.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down: finishing the requests in flight");
}

/// Serves `state` on `listener` until ctrl-c or SIGTERM.
pub async fn serve(listener: tokio::net::TcpListener, state: AppState) -> std::io::Result<()> {
    // The peer address is the rate limit's key for a client with neither token nor session.
    axum::serve(
        listener,
        router(state).into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown_signal())
    .await
}
