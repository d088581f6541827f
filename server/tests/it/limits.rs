//! Limits that hold against hostile clients: what one address can make the server store,
//! how much of its input an answer repeats, rate limits that made-up credentials and
//! forwarded addresses cannot escape, `/metrics` that stays small and can be guarded, and
//! connections that are cut when they stall.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Map, Value};
use server::config::RateLimit;
use server::Config;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower::ServiceExt;

use crate::common::{scenarios, spawn_app_with, As, TempDir, TestApp};

/// A design with `keys` unknown top-level keys of `key_chars` characters each: every one of
/// them is a problem the validator reports, naming the key.
fn design_with_unknown_keys(keys: usize, key_chars: usize) -> Value {
    let mut design = Map::new();
    design.insert("nodes".into(), json!([]));
    design.insert("edges".into(), json!([]));
    for i in 0..keys {
        let key = format!("{i:06}{}", "k".repeat(key_chars.saturating_sub(6)));
        design.insert(key, json!(1));
    }
    Value::Object(design)
}

/// The size of the SQLite database file once its write-ahead log is folded into it.
async fn database_bytes(app: &TestApp) -> u64 {
    let server::Store::Sqlite(pool, ..) = app.state.store() else {
        panic!("the test app runs on SQLite");
    };
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(pool)
        .await
        .expect("a checkpoint");
    let db = app._dir.path().join("db/test.db");
    let wal = app._dir.path().join("db/test.db-wal");
    std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0)
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    let server::Store::Sqlite(pool, ..) = app.state.store() else {
        panic!("the test app runs on SQLite");
    };
    sqlx::query_scalar(sql)
        .fetch_one(pool)
        .await
        .expect("a count")
}

/// The students made for a session that have no attempt and no draft.
const WORKLESS: &str = "SELECT COUNT(*) FROM students WHERE origin = 'session' \
    AND NOT EXISTS (SELECT 1 FROM attempts WHERE attempts.student = students.id) \
    AND NOT EXISTS (SELECT 1 FROM drafts WHERE drafts.student = students.id)";

#[tokio::test]
async fn hostile_traffic_from_one_address_stores_a_bounded_amount_and_is_swept() {
    let config = Config {
        idempotency_ttl: Duration::from_secs(1),
        workless_session_ttl: Duration::from_secs(1),
        ..Config::default()
    };
    let app = spawn_app_with(config.clone()).await;
    let before = database_bytes(&app).await;
    let (cookie, _) = app.new_student().await;
    let student = As::student(&cookie);

    // 40 submissions of a 241 KB invalid design, each with its own Idempotency-Key.
    let design = design_with_unknown_keys(1_900, 120);
    let body = serde_json::to_vec(&json!({"scenario": "safe-retry", "design": design})).unwrap();
    assert!(
        body.len() > 230_000 && body.len() < 256 * 1024,
        "{}",
        body.len()
    );
    let mut largest_answer = 0;
    for i in 0..40 {
        let key = format!("hostile-{i}");
        let answer = app
            .send(
                Method::POST,
                "/api/submissions",
                &student,
                &[("idempotency-key", &key)],
                Some(body.clone()),
            )
            .await;
        assert_eq!(
            answer.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            answer.text
        );
        largest_answer = largest_answer.max(answer.text.len());
    }
    // Replayed from what was stored: the same short answer.
    let replay = app
        .send(
            Method::POST,
            "/api/submissions",
            &student,
            &[("idempotency-key", "hostile-0")],
            Some(body.clone()),
        )
        .await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert!(replay.text.len() <= largest_answer);
    // Requests without a cookie to the routes that use a session.
    for _ in 0..100 {
        app.get("/api/session", &As::nobody()).await;
        app.get("/api/drafts/safe-retry", &As::nobody()).await;
    }
    // Sessions that then did nothing.
    for _ in 0..5 {
        app.new_student().await;
    }
    // The largest draft of every scenario.
    let big_draft = json!({"design": {"nodes": [], "note": "d".repeat(250_000)}});
    let mut kept = 0;
    for s in scenarios() {
        let answer = app
            .put(
                &format!("/api/drafts/{}", s.scenario().id),
                &student,
                &big_draft,
            )
            .await;
        match answer.status {
            StatusCode::OK => kept += 1,
            StatusCode::PAYLOAD_TOO_LARGE => {
                assert_eq!(answer.code(), server::error::ErrorCode::BodyTooLarge)
            }
            other => panic!("{other}: {}", answer.text),
        }
    }
    assert!(
        (1..=4).contains(&kept),
        "the drafts' cap (1 MiB) holds: {kept} kept"
    );

    let grown = database_bytes(&app).await.saturating_sub(before);
    eprintln!(
        "hostile traffic: the database grew by {grown} bytes; the largest answer was {largest_answer} bytes"
    );
    assert!(largest_answer < 16 * 1024, "{largest_answer}");
    // 40 × 241 KB of requests; the drafts' cap alone is 1 MiB.
    assert!(
        grown < 3 * 1024 * 1024,
        "the database grew by {grown} bytes"
    );

    // Past the expiry, a sweep removes the idempotency records and the workless sessions.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let keys = count(&app, "SELECT COUNT(*) FROM idempotency_keys").await;
    let workless = count(&app, WORKLESS).await;
    assert_eq!(keys, 40);
    assert!(workless >= 5, "{workless}");
    let swept = server::sweep::sweep_once(app.state.store(), &config, app.state.metrics())
        .await
        .expect("the sweep runs");
    assert_eq!(swept.idempotency, 40);
    assert_eq!(swept.sessions, u64::try_from(workless).unwrap());
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM idempotency_keys").await,
        0
    );
    assert_eq!(count(&app, WORKLESS).await, 0);
    // The student with drafts stays, and so do its drafts.
    assert_eq!(
        app.get("/api/drafts/safe-retry", &student).await.status,
        StatusCode::OK
    );
    let metrics = app.get("/metrics", &As::nobody()).await.text;
    assert!(
        metrics.contains("pipeline_builder_swept_total{kind=\"idempotency\"} 40"),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!(
            "pipeline_builder_swept_total{{kind=\"session\"}} {workless}"
        )),
        "{metrics}"
    );
    // Nothing more to sweep.
    let again = server::sweep::sweep_once(app.state.store(), &config, app.state.metrics())
        .await
        .unwrap();
    assert_eq!((again.idempotency, again.sessions), (0, 0));
}

#[tokio::test]
async fn records_younger_than_their_expiry_are_kept() {
    let app = spawn_app_with(Config::default()).await;
    let (cookie, _) = app.new_student().await;
    let answer = app
        .send(
            Method::POST,
            "/api/submissions",
            &As::student(&cookie),
            &[("idempotency-key", "young")],
            Some(
                serde_json::to_vec(
                    &json!({"scenario": "safe-retry", "design": crate::common::failing_design()}),
                )
                .unwrap(),
            ),
        )
        .await;
    assert_eq!(answer.status, StatusCode::CREATED);
    app.new_student().await;
    let swept =
        server::sweep::sweep_once(app.state.store(), app.state.config(), app.state.metrics())
            .await
            .unwrap();
    assert_eq!((swept.idempotency, swept.sessions), (0, 0));
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM idempotency_keys").await,
        1
    );
}

#[tokio::test]
async fn an_error_body_echoes_at_most_a_clipped_piece_of_the_input() {
    let app = spawn_app_with(Config::default()).await;
    // One unknown key of 200 KB.
    let design = design_with_unknown_keys(1, 200_000);
    let answer = app
        .post("/api/scenarios/safe-retry/check", &As::nobody(), &design)
        .await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer.code(), server::error::ErrorCode::InvalidDesign);
    assert!(answer.text.len() < 2048, "{} bytes", answer.text.len());
    let message = answer.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains('…') && message.contains("unknown field"),
        "{message}"
    );
    // Thousands of problems: all counted, twenty listed.
    let many = design_with_unknown_keys(2_000, 100);
    let answer = app
        .post("/api/scenarios/safe-retry/check", &As::nobody(), &many)
        .await;
    assert!(answer.text.len() < 16 * 1024, "{} bytes", answer.text.len());
    assert_eq!(
        answer.body["error"]["details"].as_array().unwrap().len(),
        20
    );
    assert!(
        answer.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2000 problems"),
        "{}",
        answer.text
    );
    // A request of the wrong shape with a 200 KB field name.
    let mut request = Map::new();
    request.insert("scenario".into(), json!("safe-retry"));
    request.insert("design".into(), json!({"nodes": [], "edges": []}));
    request.insert("x".repeat(200_000), json!(1));
    let (cookie, _) = app.new_student().await;
    let answer = app
        .post(
            "/api/submissions",
            &As::student(&cookie),
            &Value::Object(request),
        )
        .await;
    assert_eq!(
        answer.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        &answer.text[..200.min(answer.text.len())]
    );
    assert!(answer.text.len() < 2048, "{} bytes", answer.text.len());
}

/// A request from `peer`, as the server's accept loop hands it to the router.
async fn send_from(app: &TestApp, peer: &str, uri: &str, headers: &[(&str, String)]) -> StatusCode {
    let peer: SocketAddr = peer.parse().unwrap();
    let mut builder = Request::builder().method(Method::GET).uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, value);
    }
    let request = builder
        .extension(ConnectInfo(peer))
        .body(Body::empty())
        .unwrap();
    app.router.clone().oneshot(request).await.unwrap().status()
}

fn random_hex() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn tight() -> Config {
    // One client: 5 at once, 1 a second; one address: 50 at once, 10 a second.
    Config {
        rate_limit: Some(RateLimit {
            per_second: 1.0,
            burst: 5.0,
        }),
        ..Config::default()
    }
}

#[tokio::test]
async fn made_up_credentials_do_not_escape_the_rate_limit() {
    let app = spawn_app_with(tight()).await;
    for (what, header) in [("bearer", "authorization"), ("cookie", "cookie")] {
        let peer = if what == "bearer" {
            "203.0.113.1:4000"
        } else {
            "203.0.113.2:4000"
        };
        let mut limited = 0;
        for _ in 0..400 {
            let value = match what {
                "bearer" => format!("Bearer pbt_{}", random_hex()),
                _ => format!("{}=s-{}", server::auth::COOKIE, random_hex()),
            };
            if send_from(&app, peer, "/api/scenarios", &[(header, value)]).await
                == StatusCode::TOO_MANY_REQUESTS
            {
                limited += 1;
            }
        }
        eprintln!("{what}: {limited} of 400 requests with made-up credentials were limited");
        assert!(limited >= 300, "{what}: only {limited} of 400 limited");
    }
    // Another address is still served.
    assert_eq!(
        send_from(&app, "198.51.100.1:4000", "/api/scenarios", &[]).await,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_verified_client_spends_from_its_own_bucket_and_its_address() {
    let app = spawn_app_with(tight()).await;
    let token = app.grader_token("ta").await;
    let auth = [("authorization", format!("Bearer {token}"))];
    let peer = "192.0.2.10:5000";
    let mut statuses = Vec::new();
    for _ in 0..10 {
        statuses.push(send_from(&app, peer, "/api/submissions", &auth).await);
    }
    assert!(
        statuses[..5].iter().all(|s| *s == StatusCode::OK),
        "{statuses:?}"
    );
    assert!(
        statuses[6..]
            .iter()
            .all(|s| *s == StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    // The same address without the token still has most of its own bucket.
    assert_eq!(
        send_from(&app, peer, "/api/scenarios", &[]).await,
        StatusCode::OK
    );
}

#[tokio::test]
async fn forwarded_for_is_honoured_only_from_a_trusted_proxy() {
    let mut config = tight();
    config.trusted_proxies = vec!["10.0.0.0/8".parse().unwrap()];
    let app = spawn_app_with(config).await;
    // From an untrusted peer, a different X-Forwarded-For each time buys nothing.
    let mut limited = 0;
    for i in 0..120 {
        let xff = vec![("x-forwarded-for", format!("198.51.100.{i}"))];
        if send_from(&app, "203.0.113.50:1234", "/api/scenarios", &xff).await
            == StatusCode::TOO_MANY_REQUESTS
        {
            limited += 1;
        }
    }
    assert!(limited >= 40, "untrusted: {limited} of 120 limited");
    // Through the trusted proxy, each forwarded client has its own address bucket.
    for i in 0..80 {
        let xff = vec![("x-forwarded-for", format!("192.0.2.{i}"))];
        assert_eq!(
            send_from(&app, "10.1.2.3:1234", "/api/scenarios", &xff).await,
            StatusCode::OK,
            "client {i}"
        );
    }
    // And one forwarded client is limited like any address, whatever it puts to the left.
    let mut limited = 0;
    for i in 0..120 {
        let xff = vec![("x-forwarded-for", format!("7.7.7.{i}, 192.0.2.200"))];
        if send_from(&app, "10.1.2.3:1234", "/api/scenarios", &xff).await
            == StatusCode::TOO_MANY_REQUESTS
        {
            limited += 1;
        }
    }
    assert!(
        limited >= 40,
        "one forwarded client: {limited} of 120 limited"
    );
}

#[tokio::test]
async fn pages_have_a_limit_of_their_own() {
    let config = Config {
        page_rate_limit: Some(RateLimit {
            per_second: 1.0,
            burst: 10.0,
        }),
        ..Config::default()
    };
    let app = spawn_app_with(config).await;
    let mut statuses = Vec::new();
    for _ in 0..30 {
        statuses.push(send_from(&app, "203.0.113.7:80", "/scenarios/safe-retry", &[]).await);
    }
    assert!(
        statuses
            .iter()
            .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
            .count()
            >= 15,
        "{statuses:?}"
    );
    // The API's bucket is another, and liveness is never limited.
    assert_eq!(
        send_from(&app, "203.0.113.7:80", "/api/scenarios", &[]).await,
        StatusCode::OK
    );
    for _ in 0..20 {
        assert_eq!(
            send_from(&app, "203.0.113.7:80", "/healthz", &[]).await,
            StatusCode::OK
        );
    }
}

#[tokio::test]
async fn metrics_stay_bounded_under_odd_methods() {
    let app = spawn_app_with(Config {
        rate_limit: None,
        ..Config::default()
    })
    .await;
    app.get("/api/scenarios", &As::nobody()).await;
    let before = app.get("/metrics", &As::nobody()).await.text.len();
    for i in 0..300 {
        let method = Method::from_bytes(format!("M{i}{}", "X".repeat(2048)).as_bytes()).unwrap();
        app.send(method, "/api/scenarios", &As::nobody(), &[], None)
            .await;
    }
    let huge = Method::from_bytes("Y".repeat(200_000).as_bytes()).unwrap();
    let answer = app
        .send(huge, "/api/scenarios", &As::nobody(), &[], None)
        .await;
    assert!(answer.status.is_client_error(), "{}", answer.status);
    assert!(answer.text.len() < 2048);
    let after = app.get("/metrics", &As::nobody()).await.text;
    eprintln!(
        "/metrics: {before} bytes before, {} after 301 requests with odd methods",
        after.len()
    );
    assert!(after.len() < before + 8 * 1024, "{} bytes", after.len());
    assert!(after.contains("method=\"other\""), "{after}");
    assert!(!after.contains("XXXX") && !after.contains("YYYY"));
}

#[tokio::test]
async fn the_metrics_token_guards_metrics() {
    let app = spawn_app_with(Config {
        metrics_token: Some("scrape-me".into()),
        ..Config::default()
    })
    .await;
    let missing = app.get("/metrics", &As::nobody()).await;
    assert_eq!(missing.status, StatusCode::UNAUTHORIZED);
    assert_eq!(missing.code(), server::error::ErrorCode::Unauthorized);
    for wrong in ["scrape-m", "scrape-me2", ""] {
        let answer = app.get("/metrics", &As::grader(wrong)).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{wrong:?}");
    }
    let right = app.get("/metrics", &As::grader("scrape-me")).await;
    assert_eq!(right.status, StatusCode::OK);
    assert!(right.text.contains("pipeline_builder_http_requests_total"));
    // Without the option, /metrics is open as before.
    let open = spawn_app_with(Config::default()).await;
    assert_eq!(
        open.get("/metrics", &As::nobody()).await.status,
        StatusCode::OK
    );
}

/// A server on a real socket with `config`; stopped when the handle is dropped.
struct Running {
    address: SocketAddr,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    _dir: TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn running(config: Config) -> Running {
    let dir = TempDir::new("limits-socket");
    let store = server::Store::connect(&dir.sqlite_url()).await.unwrap();
    let state = server::AppState::new(store, server::Catalogue::new(scenarios()), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let task = tokio::spawn(server::app::serve(listener, state));
    Running {
        address,
        task,
        _dir: dir,
    }
}

/// Reads until the peer closes; returns what was read and when it closed.
async fn read_until_closed(
    stream: &mut TcpStream,
    within: Duration,
) -> (Vec<u8>, Option<Duration>) {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let left = within.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (got, Some(started.elapsed())),
            Ok(Ok(n)) => got.extend_from_slice(&buffer[..n]),
            Err(_) => return (got, None),
        }
    }
}

#[tokio::test]
async fn a_silent_or_stalled_connection_is_closed_within_the_header_timeout() {
    let server = running(Config {
        header_timeout: Duration::from_secs(1),
        ..Config::default()
    })
    .await;
    // Nothing sent at all.
    let mut silent = TcpStream::connect(server.address).await.unwrap();
    let (_, closed) = read_until_closed(&mut silent, Duration::from_secs(5)).await;
    let closed = closed.expect("a silent connection is closed");
    assert!(
        closed >= Duration::from_millis(900) && closed < Duration::from_millis(2_500),
        "{closed:?}"
    );
    // Half a request line.
    let mut half = TcpStream::connect(server.address).await.unwrap();
    half.write_all(b"GET /heal").await.unwrap();
    let (_, closed) = read_until_closed(&mut half, Duration::from_secs(5)).await;
    assert!(closed.expect("a stalled request line is cut") < Duration::from_millis(2_500));
    // Idle after a request, on a kept-alive connection.
    let mut idle = TcpStream::connect(server.address).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let (answer, closed) = read_until_closed(&mut idle, Duration::from_secs(5)).await;
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"));
    assert!(closed.expect("an idle connection is closed") < Duration::from_millis(2_500));
}

#[tokio::test]
async fn a_huge_request_head_is_refused_before_the_router() {
    let server = running(Config::default()).await;
    let mut huge = TcpStream::connect(server.address).await.unwrap();
    let mut head = "Y".repeat(200_000).into_bytes();
    head.extend_from_slice(b" /api/scenarios HTTP/1.1\r\nHost: x\r\n\r\n");
    // The server may stop reading before the whole head is written.
    let _ = huge.write_all(&head).await;
    let (answer, closed) = read_until_closed(&mut huge, Duration::from_secs(5)).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(closed.is_some(), "the connection is closed");
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 431"),
        "{text}"
    );
    let metrics = reqwest::get(format!("http://{}/metrics", server.address))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !metrics.contains("YYYY") && metrics.len() < 16 * 1024,
        "{} bytes",
        metrics.len()
    );
}

#[tokio::test]
async fn a_slow_body_is_cut_by_the_body_timeout() {
    let server = running(Config {
        body_timeout: Duration::from_secs(1),
        ..Config::default()
    })
    .await;
    let mut slow = TcpStream::connect(server.address).await.unwrap();
    slow.write_all(
        b"POST /api/scenarios/safe-retry/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
    )
    .await
    .unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    // One byte every 200 ms: never idle long, but far too slow.
    while started.elapsed() < Duration::from_secs(5) {
        match tokio::time::timeout(Duration::from_millis(200), slow.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => {
                answer.extend_from_slice(&buffer[..n]);
                if answer.windows(4).any(|w| w == b"\r\n\r\n") && answer.ends_with(b"}}") {
                    break;
                }
            }
            Err(_) => {
                if slow.write_all(b" ").await.is_err() {
                    break;
                }
            }
        }
    }
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"timeout\""), "{text}");
    assert!(took < Duration::from_millis(2_500), "{took:?}");
}

#[tokio::test]
async fn connections_past_the_cap_wait_until_one_closes() {
    let server = running(Config {
        max_connections: 1,
        header_timeout: Duration::from_secs(10),
        ..Config::default()
    })
    .await;
    let first = TcpStream::connect(server.address).await.unwrap();
    // Let the server accept the first.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut second = TcpStream::connect(server.address).await.unwrap();
    second
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let (waiting, _) = read_until_closed(&mut second, Duration::from_millis(700)).await;
    assert!(
        waiting.is_empty(),
        "the second connection waits: {}",
        String::from_utf8_lossy(&waiting)
    );
    drop(first);
    let (answer, closed) = read_until_closed(&mut second, Duration::from_secs(3)).await;
    assert!(
        String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    assert!(closed.is_some());
}

#[tokio::test]
async fn shutting_down_lets_a_request_in_flight_finish() {
    let dir = TempDir::new("limits-shutdown");
    let store = server::Store::connect(&dir.sqlite_url()).await.unwrap();
    let state = server::AppState::new(
        store,
        server::Catalogue::new(scenarios()),
        Config::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server::app::serve_until(listener, state, async {
        let _ = stopped.await;
    }));
    // A request whose body is still arriving when the server is told to stop.
    let mut client = TcpStream::connect(address).await.unwrap();
    let design = serde_json::to_vec(&crate::common::failing_design()).unwrap();
    client
        .write_all(
            format!(
                "POST /api/scenarios/safe-retry/check HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                design.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    client.write_all(&design).await.unwrap();
    let (answer, _) = read_until_closed(&mut client, Duration::from_secs(5)).await;
    assert!(
        String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the server stops once its requests are done")
        .unwrap()
        .unwrap();
    assert!(
        TcpStream::connect(address).await.is_err(),
        "no longer accepting"
    );
}

#[tokio::test]
async fn the_sweep_and_the_drafts_cap_work_on_postgres() {
    let Some(database) = crate::postgres::database("the sweep").await else {
        return;
    };
    let store = server::Store::connect(&database.url).await.unwrap();
    let config = Config {
        idempotency_ttl: Duration::from_secs(1),
        workless_session_ttl: Duration::from_secs(1),
        draft_bytes_per_student: 2_000,
        ..Config::default()
    };
    let app = crate::common::spawn_app_on(store, config.clone(), TempDir::new("limits-pg"));
    let (worker, _) = app.new_student().await;
    let worker = As::student(&worker);
    for _ in 0..3 {
        app.new_student().await;
    }
    let draft = json!({"design": {"nodes": [], "note": "n".repeat(1_200)}});
    assert_eq!(
        app.put("/api/drafts/safe-retry", &worker, &draft)
            .await
            .status,
        StatusCode::OK
    );
    // Replacing a draft counts it once; a second one would pass the cap.
    assert_eq!(
        app.put("/api/drafts/safe-retry", &worker, &draft)
            .await
            .status,
        StatusCode::OK
    );
    let refused = app.put("/api/drafts/safe-rerun", &worker, &draft).await;
    assert_eq!(
        refused.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        refused.text
    );
    for i in 0..3 {
        let answer = app
            .send(
                Method::POST,
                "/api/submissions",
                &worker,
                &[("idempotency-key", &format!("pg-{i}"))],
                Some(serde_json::to_vec(&json!({"scenario": "safe-retry", "design": design_with_unknown_keys(3, 10)})).unwrap()),
            )
            .await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    }
    let early = server::sweep::sweep_once(app.state.store(), &config, app.state.metrics())
        .await
        .unwrap();
    assert_eq!((early.idempotency, early.sessions), (0, 0));
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let swept = server::sweep::sweep_once(app.state.store(), &config, app.state.metrics())
        .await
        .unwrap();
    assert_eq!(swept.idempotency, 3);
    assert_eq!(
        swept.sessions, 3,
        "the three sessions with no work, not the one with a draft"
    );
    assert_eq!(
        app.get("/api/drafts/safe-retry", &worker).await.status,
        StatusCode::OK
    );
}

#[test]
fn the_sweep_command_removes_what_has_expired() {
    let dir = TempDir::new("limits-sweep-cli");
    let output = std::process::Command::new(crate::processes::BIN)
        .args([
            "sweep",
            "--database-url",
            &dir.sqlite_url(),
            "--idempotency-ttl-hours",
            "0",
            "--workless-session-days",
            "0",
        ])
        .env("RUST_LOG", "warn")
        .output()
        .expect("pipeline-builder sweep runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "removed 0 idempotency record(s) and 0 session(s) with no work"
    );
}

// Join codes, IPv6 networks and the cost of checks.

/// A request from `peer` with `method`, the `cookie` and a JSON `body`, as the accept loop
/// hands it to the router: its status and JSON answer.
async fn call_from(
    app: &TestApp,
    peer: &str,
    method: Method,
    uri: &str,
    cookie: Option<&str>,
    body: Option<&Value>,
) -> (StatusCode, Value) {
    let peer: SocketAddr = peer.parse().unwrap();
    let mut builder = Request::builder().method(method).uri(uri);
    if let Some(cookie) = cookie {
        builder = builder.header("cookie", cookie);
    }
    let body = match body {
        Some(b) => {
            builder = builder.header("content-type", "application/json");
            Body::from(serde_json::to_vec(b).unwrap())
        }
        None => Body::empty(),
    };
    let request = builder.extension(ConnectInfo(peer)).body(body).unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A new session made from `peer`: its cookie.
async fn session_from(app: &TestApp, peer: &str) -> String {
    let peer_address: SocketAddr = peer.parse().unwrap();
    let request = Request::builder()
        .method(Method::POST)
        .uri("/api/session")
        .extension(ConnectInfo(peer_address))
        .body(Body::empty())
        .unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED, "{peer}");
    let set = response.headers()["set-cookie"].to_str().unwrap();
    set.split(';').next().unwrap().to_string()
}

/// A guess at a join code from a fresh session of `peer`: the answer's status and code.
async fn guess_from(app: &TestApp, peer: &str, code: &str) -> (StatusCode, String) {
    // Each joiner has a name of their own: two members of a class may not share one.
    static JOINERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = JOINERS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let cookie = session_from(app, peer).await;
    let (status, body) = call_from(
        app,
        peer,
        Method::POST,
        "/api/classes/join",
        Some(&cookie),
        Some(&json!({"code": code, "display_name": format!("Guesser {n}")})),
    )
    .await;
    (
        status,
        body["error"]["code"].as_str().unwrap_or("").to_string(),
    )
}

#[tokio::test]
async fn failed_joins_are_limited_per_address_whatever_the_session() {
    let app = spawn_app_with(Config {
        failed_join_limit: RateLimit {
            per_second: 0.0001,
            burst: 5.0,
        },
        ..Config::default()
    })
    .await;
    let token = app.grader_token("teacher").await;
    let class = app
        .post(
            "/api/classes",
            &As::grader(&token),
            &json!({"name": "Data 101"}),
        )
        .await;
    let code = class.body["join_code"].as_str().unwrap().to_string();
    // A new session for every guess buys nothing: the address's failures are counted.
    let guesser = "203.0.113.77:5000";
    let mut answers = Vec::new();
    for i in 0..8 {
        answers.push(guess_from(&app, guesser, &format!("WRONG{i:03}")).await);
    }
    let codes: Vec<&str> = answers.iter().map(|(_, c)| c.as_str()).collect();
    assert_eq!(codes[..5], ["unknown_class"; 5], "{answers:?}");
    assert_eq!(codes[5..], ["rate_limited"; 3], "{answers:?}");
    // While it is limited the address learns nothing, not even from the right code.
    assert_eq!(
        guess_from(&app, guesser, &code).await,
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited".to_string())
    );
    // Another address joins with the code; joining costs it nothing.
    for _ in 0..7 {
        let (status, _) = guess_from(&app, "198.51.100.8:5000", &code).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    // An IPv6 client is counted by its /64: walking its own network buys no more guesses.
    let mut v6 = Vec::new();
    for i in 1..=8 {
        v6.push(
            guess_from(&app, &format!("[2001:db8:1:2::{i:x}]:5000"), "WRONG999")
                .await
                .1,
        );
    }
    assert_eq!(v6[..5], ["unknown_class"; 5], "{v6:?}");
    assert_eq!(v6[5..], ["rate_limited"; 3], "{v6:?}");
    assert_eq!(
        guess_from(&app, "[2001:db8:1:3::1]:5000", "WRONG999")
            .await
            .1,
        "unknown_class",
        "another /64 has guesses of its own"
    );
}

#[tokio::test]
async fn an_ipv6_client_is_counted_by_its_64_network() {
    let app = spawn_app_with(tight()).await;
    let mut statuses = Vec::new();
    for i in 1..=20 {
        statuses.push(
            send_from(
                &app,
                &format!("[2001:db8:a:b::{i:x}]:80"),
                "/api/scenarios",
                &[],
            )
            .await,
        );
    }
    let limited = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert!(limited >= 10, "one /64 is one address: {statuses:?}");
    assert_eq!(
        send_from(&app, "[2001:db8:a:c::1]:80", "/api/scenarios", &[]).await,
        StatusCode::OK,
        "another /64 is another address"
    );
}

/// The `i`th of many designs of dedupe-by-key that are the same pipeline and different
/// text, so that none is answered from the verdict cache.
fn distinct_design(i: usize) -> Value {
    let design = crate::common::passing_design("dedupe-by-key").to_string();
    serde_json::from_str(&design.replace("\"paid\"", &format!("\"paid{i}\""))).unwrap()
}

#[tokio::test]
async fn anonymous_checks_are_charged_by_their_time_and_an_address_is_one_client() {
    // One client: 40 requests at once, next to no refill; an address: ten times that.
    let app = spawn_app_with(Config {
        rate_limit: Some(RateLimit {
            per_second: 0.001,
            burst: 40.0,
        }),
        ..Config::default()
    })
    .await;
    let flooder = "203.0.113.99:6000";
    let uri = "/api/scenarios/dedupe-by-key/check";
    let mut served = 0;
    for i in 0..100 {
        let (status, body) = call_from(
            &app,
            flooder,
            Method::POST,
            uri,
            None,
            Some(&distinct_design(i)),
        )
        .await;
        if status == StatusCode::TOO_MANY_REQUESTS {
            assert_eq!(body["error"]["code"], "rate_limited");
            break;
        }
        assert_eq!(status, StatusCode::OK, "{body}");
        served += 1;
    }
    // Each check costs its request and its time: fewer than one client's 40 requests.
    eprintln!("{served} distinct checks served before the first 429");
    assert!(served < 40, "{served} checks served");
    // Another address is served, and so is a student with a session of their own at the
    // flooding address (a classroom behind one NAT address).
    let (status, _) = call_from(
        &app,
        "198.51.100.99:6000",
        Method::POST,
        uri,
        None,
        Some(&distinct_design(1000)),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let student = session_from(&app, flooder).await;
    let (status, body) = call_from(
        &app,
        flooder,
        Method::POST,
        uri,
        Some(&student),
        Some(&distinct_design(1001)),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn a_flood_of_checks_from_one_address_waits_its_turn_while_another_is_served() {
    let app = spawn_app_with(Config {
        checks_per_address: 1,
        checks_waiting_per_address: 3,
        ..Config::default()
    })
    .await;
    let flooder: SocketAddr = "203.0.113.5:7000".parse().unwrap();
    // Every turn of the address is taken, as by its own checks running.
    let held = app.state.hold_check_turns(flooder.ip()).await;
    assert_eq!(held.len(), 1);
    let (done, mut answers) = tokio::sync::mpsc::unbounded_channel();
    for i in 0..5 {
        let router = app.router.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let request = Request::builder()
                .method(Method::POST)
                .uri("/api/scenarios/dedupe-by-key/check")
                .header("content-type", "application/json")
                .extension(ConnectInfo(flooder))
                .body(Body::from(distinct_design(i).to_string()))
                .unwrap();
            let status = router.oneshot(request).await.unwrap().status();
            let _ = done.send(status);
        });
    }
    // Three wait their turn; the two past them are refused at once.
    let mut refused = Vec::new();
    while refused.len() < 2 {
        refused.push(answers.recv().await.unwrap());
    }
    assert_eq!(refused, [StatusCode::TOO_MANY_REQUESTS; 2]);
    for _ in 0..1000 {
        if app.state.checks_waiting(flooder.ip()) == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(app.state.checks_waiting(flooder.ip()), 3);
    // Another client is served meanwhile.
    let (status, _) = call_from(
        &app,
        "198.51.100.5:7000",
        Method::POST,
        "/api/scenarios/dedupe-by-key/check",
        None,
        Some(&distinct_design(99)),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(app.state.checks_waiting(flooder.ip()), 3, "still waiting");
    assert!(answers.try_recv().is_err(), "none of the waiting ones ran");
    // Once the address's turn is free, the waiting checks run, one after another.
    drop(held);
    for _ in 0..3 {
        assert_eq!(answers.recv().await.unwrap(), StatusCode::OK);
    }
}

#[tokio::test]
async fn a_submission_with_an_idempotency_key_waits_for_its_address_turn_too() {
    let app = spawn_app_with(Config {
        checks_per_address: 1,
        ..Config::default()
    })
    .await;
    let student: SocketAddr = "203.0.113.6:7000".parse().unwrap();
    let cookie = session_from(&app, "203.0.113.6:7000").await;
    let held = app.state.hold_check_turns(student.ip()).await;
    let router = app.router.clone();
    let submission = tokio::spawn(async move {
        let body = json!({"scenario": "dedupe-by-key", "design": distinct_design(7)});
        let request = Request::builder()
            .method(Method::POST)
            .uri("/api/submissions")
            .header("content-type", "application/json")
            .header("cookie", cookie)
            .header("idempotency-key", "waits-its-turn")
            .extension(ConnectInfo(student))
            .body(Body::from(body.to_string()))
            .unwrap();
        router.oneshot(request).await.unwrap().status()
    });
    // The submission's check runs in a task of its own, and still waits for the address.
    for _ in 0..1000 {
        if app.state.checks_waiting(student.ip()) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(app.state.checks_waiting(student.ip()), 1);
    assert!(!submission.is_finished());
    drop(held);
    assert_eq!(submission.await.unwrap(), StatusCode::CREATED);
}
