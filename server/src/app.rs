//! The application: its router with tower-http's layers, and serving it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, DefaultBodyLimit, FromRef, MatchedPath, Request, State};
use axum::handler::Handler;
use axum::http::{header, HeaderName, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, get_service, post};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::sync::Semaphore;
use tower::{ServiceBuilder, ServiceExt};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

use crate::api::{class_routes, grade_routes, open_routes, student_routes};
use crate::auth;
use crate::error::{body_too_large, AppError, BodyTimedOut, ErrorCode};
use crate::headers;
use crate::limit;
use crate::metrics::Metrics;
use crate::openapi;
use crate::routes::author;
use crate::routes::operations::{self, ApiDocument};
use crate::state::AppState;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The routes the document leaves out: the document itself, the learning platforms' launch
/// (a cross-site form post by design, protected by its state and nonce, so outside the
/// routes the cross-site guard covers) and the answers to unknown `/api` paths.
fn undocumented_routes(document: ApiDocument) -> Router<AppState> {
    Router::new()
        .route(
            "/api/openapi.json",
            get_service(operations::openapi.with_state(document)),
        )
        .route(
            "/lti/login",
            get(crate::lti::login_get).post(crate::lti::login_post),
        )
        .route("/lti/launch", post(crate::lti::launch))
        .route("/lti/jwks", get(crate::lti::jwks))
        .route(
            "/lti/resume",
            get(crate::lti::browser::resume_page).post(crate::lti::browser::resume),
        )
        .route("/lti/config", get(crate::lti::config))
        .route("/api/{*rest}", any(operations::api_not_found))
        .route("/api", any(operations::api_not_found))
}

/// The author page's routes (`serve --author`). The files change under an author's hands, so
/// nothing is cached; and they show the answers, so only a page opened by a loopback name
/// reaches them.
fn author_routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/api/author/status", get(author::status))
        .route("/api/author/scenarios/{id}", get(author::scenario))
        .route("/api/author/scenarios/{id}/solve", get(author::solve))
        .route("/api/author/files/{name}", get(author::file))
        .route("/api/author/files/{name}/check", post(author::check_file))
        .route_layer(middleware::from_fn(auth::no_store))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::refuse_unexpected_host,
        ))
}

/// The app's pages and files behind the routes: from `--static-dir` when it holds a built
/// app, else the app built into the binary (then `true`), else a 404. Client-side routes such
/// as /scenarios/safe-retry get their page with status 200: staff.html under /instructor and
/// /author, index.html everywhere else.
fn with_app_pages(
    app: Router<AppState>,
    config: &crate::config::Config,
) -> (Router<AppState>, bool) {
    let static_dir = config
        .static_dir
        .as_ref()
        .filter(|d| d.join("index.html").is_file());
    let embedded = static_dir.is_none() && config.embedded_app;
    let app = match static_dir {
        Some(dir) => app.fallback_service(ServeDir::new(dir).fallback(app_page(dir))),
        None if embedded => app.fallback(crate::embedded::serve),
        None => app.fallback(operations::not_found),
    };
    (app, embedded)
}

/// The whole application. Tests call it without a socket.
pub fn router(state: AppState) -> Router {
    let config = state.config().clone();
    // The routes a student's cookie authenticates: never kept by a cache.
    let personal = student_routes()
        .merge(class_routes())
        .route_layer(middleware::from_fn(auth::no_store))
        .layer(RequestBodyLimitLayer::new(config.body_limit_bytes));
    let grade = grade_routes()
        .route_layer(middleware::from_fn(auth::no_store))
        .layer(RequestBodyLimitLayer::new(config.grade_body_limit_bytes));
    // Every route a browser's cookie authenticates (a student's session, an instructor's
    // sign-in) sits behind the one cross-site guard: a state-changing request another site
    // makes is refused before its handler runs. A route that authenticates by cookie goes
    // here and nowhere else (`tests/it/security.rs` walks the OpenAPI document to hold it).
    let credentialed = personal
        .merge(grade)
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::refuse_cross_site,
        ));
    let open = open_routes().layer(RequestBodyLimitLayer::new(config.body_limit_bytes));
    let (documented, paths) = credentialed.merge(open).split_for_parts();
    let document = ApiDocument::of(&openapi::with_paths(paths));
    let mut small = undocumented_routes(document);
    if config.floor_route {
        small = small.route("/api/floor", post(operations::floor));
    }
    if config.author {
        small = small.merge(author_routes(&state));
    }
    let small = small.layer(RequestBodyLimitLayer::new(config.body_limit_bytes));
    let (app, embedded) = with_app_pages(
        documented.merge(small).layer(DefaultBodyLimit::disable()),
        &config,
    );

    // The first layer listed is the outermost.
    let layers = ServiceBuilder::new()
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request| {
                    let id = request.headers().get(&REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("");
                    let method = crate::metrics::method_label(request.method().as_str());
                    tracing::info_span!("request", method = %method, uri = %crate::bounds::clip(&crate::lti::logged_uri(request.uri()), 512), request_id = %id)
                })
                .on_response(DefaultOnResponse::new().level(Level::INFO)),
        )
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(middleware::from_fn_with_state(config.body_timeout, body_deadline))
        .layer(middleware::from_fn_with_state(state.clone(), track_metrics))
        .layer(middleware::from_fn_with_state(state.clone(), limit::rate_limit))
        .layer(CompressionLayer::new())
        .layer(middleware::from_fn(json_errors))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, config.request_timeout))
        .layer(middleware::from_fn_with_state(state.clone(), auth::https_layer));
    let mut app = app.layer(layers);
    // Outermost, so that every answer carries them: pages, errors, panics and timeouts.
    let csp = if embedded {
        headers::content_security_policy_of(&crate::embedded::pages())
    } else {
        headers::content_security_policy(config.static_dir.as_deref())
    };
    for (name, value) in headers::security_headers(&csp) {
        // A page with a policy of its own keeps it (the LTI deep linking page, which posts to
        // the platform and is shown in its frame); every other answer gets the app's.
        app = if name == header::CONTENT_SECURITY_POLICY {
            app.layer(SetResponseHeaderLayer::if_not_present(name, value))
        } else {
            app.layer(SetResponseHeaderLayer::overriding(name, value))
        };
    }
    // Outermost, so that it sees the headers above: pages a learning platform may frame.
    app = app.layer(middleware::from_fn_with_state(
        state.clone(),
        crate::lti::frame_policy,
    ));
    app.with_state(state)
}

/// Counts every answer by route and status, and times it.
async fn track_metrics(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    // A standard method or `other`; a route template, `unmatched` or `static`: the labels
    // stay few whatever clients send.
    let method = crate::metrics::method_label(request.method().as_str());
    let route = match request.extensions().get::<MatchedPath>() {
        Some(p) => p.as_str().to_string(),
        None if request.uri().path().starts_with("/api") => "unmatched".to_string(),
        None => "static".to_string(),
    };
    let response = next.run(request).await;
    metrics.observe_request(
        method,
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
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/html"));
    // A page that explains itself (an LTI launch refused in the learner's browser) stays one.
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
        StatusCode::REQUEST_TIMEOUT => AppError::of(
            ErrorCode::Timeout,
            "the request took too long and was stopped",
        ),
        StatusCode::METHOD_NOT_ALLOWED => AppError::of(
            ErrorCode::MethodNotAllowed,
            "this route does not accept that method; GET /api/openapi.json lists the routes",
        ),
        StatusCode::NOT_FOUND => AppError::of(ErrorCode::NotFound, "there is nothing at this path"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => AppError::of(
            ErrorCode::UnsupportedMediaType,
            "send the body as application/json",
        ),
        s if s.is_server_error() => AppError::of(
            ErrorCode::Internal,
            "something went wrong on the server; the log says what",
        ),
        // A form or query that parsed but holds a refused value (axum's `Form` rejection).
        StatusCode::UNPROCESSABLE_ENTITY => AppError::of(
            ErrorCode::InvalidRequest,
            said.unwrap_or_else(|| "a value in the request is refused".to_string()),
        ),
        s => AppError::of(
            ErrorCode::BadRequest,
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

/// The page a client route of an app served from `dir` loads, with status 200: the staff
/// module's (`staff.html`) under `/instructor` and `/author`, the student's (`index.html`)
/// everywhere else, as `crate::embedded` serves the app built into the binary. A folder with
/// no `staff.html` serves `index.html` for every route.
fn app_page(
    dir: &std::path::Path,
) -> impl tower::Service<
    Request,
    Response = Response<tower_http::services::fs::ServeFileSystemResponseBody>,
    Error = std::convert::Infallible,
    Future = impl Send,
> + Clone
       + Send
       + 'static {
    let index = ServeFile::new(dir.join("index.html"));
    let staff = dir
        .join("staff.html")
        .is_file()
        .then(|| ServeFile::new(dir.join("staff.html")));
    tower::service_fn(move |request: Request| {
        let page = match &staff {
            Some(staff) if crate::embedded::page_for(request.uri().path()) == "staff.html" => {
                staff.clone()
            }
            _ => index.clone(),
        };
        page.oneshot(request)
    })
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

/// Middleware: a deadline on reading the request's body, `timeout` from when its headers
/// arrived. A body still arriving then is cut, and the request is answered 408 `timeout`
/// (`crate::error::read_body`), however slowly it trickles in.
async fn body_deadline(State(timeout): State<Duration>, request: Request, next: Next) -> Response {
    if request.body().is_end_stream() {
        // No body to wait for (most GETs): no timer.
        return next.run(request).await;
    }
    let request = request.map(|body| {
        Body::new(DeadlineBody {
            inner: body,
            deadline: Box::pin(tokio::time::sleep(timeout)),
        })
    });
    next.run(request).await
}

/// A body that fails with [`BodyTimedOut`] once its deadline passes.
struct DeadlineBody {
    inner: Body,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        match this.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(axum::Error::new(BodyTimedOut)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The most bytes of a request's line and headers; past it hyper answers 431. (hyper's own
/// default is about 400 KiB; a browser's request is a few KiB.)
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Serves `state` on `listener` until ctrl-c or SIGTERM.
pub async fn serve(listener: tokio::net::TcpListener, state: AppState) -> std::io::Result<()> {
    serve_until(listener, state, shutdown_signal()).await
}

/// Serves `state` on `listener` until `shutdown` resolves, then stops accepting and lets the
/// requests in flight finish (idle connections are closed at once).
///
/// Rationale: `axum::serve` has no header-read or idle timeout and no cap on connections, so
/// the accept loop is written here over hyper's HTTP/1 connection: a connection must send a
/// request's headers within `Config::header_timeout`, and a kept-alive one is closed when no
/// next request starts within it; at most `Config::max_connections` are open at once, and
/// past that new connections wait, unaccepted, in the listen queue until one closes. The
/// sweeper (`crate::sweep`) runs alongside, every `Config::sweep_period`.
pub async fn serve_until(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let config = state.config().clone();
    let sweeper = config.sweep_period.map(|period| {
        crate::sweep::spawn(
            state.store().clone(),
            Arc::<crate::config::Config>::from_ref(&state),
            Arc::<Metrics>::from_ref(&state),
            period,
        )
    });
    let app = router(state);
    let connections = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        .max_buf_size(MAX_HEADER_BYTES)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&connections).acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    if !is_connection_error(&e) {
                        // Out of file descriptors, say: wait for some to close.
                        tracing::error!(error = %e, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        // The peer address is the rate limit's key (`crate::limit`).
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            app.clone().oneshot(request.map(Body::new))
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, %peer, "a connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    if let Some(sweeper) = sweeper {
        sweeper.abort();
    }
    graceful.shutdown().await;
    Ok(())
}

/// Errors of one connection that do not stop the accept loop from accepting the next.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}
