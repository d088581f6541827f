//! Sessions, cross-site requests and idempotency keys as an attacker sees them: another site
//! that makes a student's browser send requests, a sibling subdomain that sets cookies, a
//! student who knows another's public id, a grader token revoked and re-created, a request
//! that stalls past its lease.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::json;
use server::error::ErrorCode;
use server::store::{Attempt, Claim, ClaimId, IdempotentAnswer};
use server::{Config, Store};

use crate::common::{
    failing_design, passing_design, spawn_app, spawn_app_on, Answer, As, TempDir, TestApp,
};

/// The secret of a session cookie pair (`name=secret`).
fn secret_of(cookie: &str) -> String {
    cookie
        .split_once('=')
        .map(|(_, v)| v.to_string())
        .expect("name=value")
}

async fn post_session(app: &TestApp, who: &As, headers: &[(&str, &str)]) -> Answer {
    app.send(Method::POST, "/api/session", who, headers, None)
        .await
}

async fn attempts(app: &TestApp) -> usize {
    app.state
        .store()
        .list_attempts(None, None, 1000)
        .await
        .unwrap()
        .len()
}

// Cross-site requests.

async fn cross_site_writes_are_refused(app: &TestApp) {
    let (cookie, student) = app.new_student().await;
    let who = As::student(&cookie);
    let body = serde_json::to_vec(
        &json!({"scenario": "safe-retry", "design": passing_design("safe-retry")}),
    )
    .unwrap();
    let refused: Vec<(Vec<(&str, &str)>, StatusCode)> = vec![
        // What an auto-submitted HTML form can send.
        (
            vec![("content-type", "text/plain")],
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            vec![("content-type", "application/x-www-form-urlencoded")],
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            vec![("content-type", "multipart/form-data; boundary=x")],
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        // The same forms as a browser sends them, with the page's origin.
        (
            vec![
                ("content-type", "text/plain"),
                ("origin", "https://evil.example"),
                ("sec-fetch-site", "cross-site"),
            ],
            StatusCode::FORBIDDEN,
        ),
        (
            vec![
                ("content-type", "application/x-www-form-urlencoded"),
                ("origin", "https://evil.example"),
                ("sec-fetch-site", "cross-site"),
            ],
            StatusCode::FORBIDDEN,
        ),
        (
            vec![
                ("content-type", "multipart/form-data; boundary=x"),
                ("origin", "https://evil.example"),
                ("sec-fetch-site", "cross-site"),
            ],
            StatusCode::FORBIDDEN,
        ),
        // JSON, which a page of another site can send with fetch(): refused by where it
        // comes from.
        (
            vec![("origin", "https://evil.example")],
            StatusCode::FORBIDDEN,
        ),
        (
            vec![("sec-fetch-site", "cross-site")],
            StatusCode::FORBIDDEN,
        ),
        (vec![("sec-fetch-site", "same-site")], StatusCode::FORBIDDEN),
        (vec![("origin", "null")], StatusCode::FORBIDDEN),
        (
            vec![
                ("host", "course.example"),
                ("origin", "https://sibling.course.example"),
            ],
            StatusCode::FORBIDDEN,
        ),
    ];
    for (headers, status) in &refused {
        let answer = app
            .send(
                Method::POST,
                "/api/submissions",
                &who,
                headers,
                Some(body.clone()),
            )
            .await;
        assert_eq!(answer.status, *status, "{headers:?}: {}", answer.text);
        let code = if *status == StatusCode::FORBIDDEN {
            ErrorCode::CrossSiteRequest
        } else {
            ErrorCode::UnsupportedMediaType
        };
        assert_eq!(answer.code(), code, "{headers:?}");
        assert!(answer.header("set-cookie").is_none(), "{headers:?}");
    }
    assert_eq!(
        attempts(app).await,
        0,
        "no refused request recorded anything"
    );

    // The other writes of a student, and the session itself.
    let draft = serde_json::to_vec(&json!({"design": {"nodes": []}})).unwrap();
    for (method, uri, body) in [
        (Method::PUT, "/api/drafts/safe-retry", Some(draft.clone())),
        (
            Method::PUT,
            "/api/session",
            Some(br#"{"display_name": "pwned"}"#.to_vec()),
        ),
        (Method::POST, "/api/session", None),
    ] {
        for who in [who.clone(), As::nobody()] {
            let answer = app
                .send(
                    method.clone(),
                    uri,
                    &who,
                    &[("origin", "https://evil.example")],
                    body.clone(),
                )
                .await;
            assert_eq!(answer.status, StatusCode::FORBIDDEN, "{method} {uri}");
            assert_eq!(answer.code(), ErrorCode::CrossSiteRequest);
            assert!(answer.header("set-cookie").is_none(), "{method} {uri}");
        }
    }
    let draft_read = app.get("/api/drafts/safe-retry", &who).await;
    assert_eq!(draft_read.code(), ErrorCode::NoDraft);
    let me = app.get("/api/session", &who).await;
    assert_eq!(me.body, json!({"student": student, "display_name": null}));

    // The app's own pages, scripts and curl pass.
    for headers in [
        vec![
            ("host", "127.0.0.1:3000"),
            ("origin", "http://127.0.0.1:3000"),
            ("sec-fetch-site", "same-origin"),
        ],
        vec![
            ("host", "course.example"),
            ("x-forwarded-proto", "https"),
            ("origin", "https://course.example"),
        ],
        vec![("content-type", "application/json; charset=utf-8")],
        vec![],
    ] {
        let answer = app
            .send(
                Method::POST,
                "/api/submissions",
                &who,
                &headers,
                Some(body.clone()),
            )
            .await;
        assert_eq!(
            answer.status,
            StatusCode::CREATED,
            "{headers:?}: {}",
            answer.text
        );
    }
    assert_eq!(attempts(app).await, 4);
}

crate::on_both_databases!(cross_site_writes_are_refused_and_change_nothing, |db| {
    cross_site_writes_are_refused(&db.app().await).await;
});

// Sessions.

#[tokio::test]
async fn without_a_session_a_route_that_needs_one_is_401_and_only_post_session_sets_a_cookie() {
    let app = spawn_app().await;
    let (cookie, _) = app.new_student().await;
    let submitted = app
        .post(
            "/api/submissions",
            &As::student(&cookie),
            &json!({"scenario": "safe-retry", "design": failing_design()}),
        )
        .await;
    let id = submitted.body["id"].as_str().unwrap().to_string();
    let submission = json!({"scenario": "safe-retry", "design": failing_design()});
    let draft = json!({"design": {"nodes": []}});
    let by_id = format!("/api/submissions/{id}");
    for who in [
        As::nobody(),
        As::student("pb_session=not-a-session"),
        As::student(&format!("pb_session={}", "A".repeat(43))),
        As::student("__Host-pb_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
    ] {
        for (method, uri, body) in [
            (Method::GET, "/api/session", None),
            (
                Method::PUT,
                "/api/session",
                Some(json!({"display_name": "x"})),
            ),
            (Method::GET, "/api/drafts/safe-retry", None),
            (Method::PUT, "/api/drafts/safe-retry", Some(draft.clone())),
            (Method::GET, "/api/submissions", None),
            (Method::POST, "/api/submissions", Some(submission.clone())),
            (Method::GET, by_id.as_str(), None),
        ] {
            let answer = app
                .send(
                    method.clone(),
                    uri,
                    &who,
                    &[],
                    body.map(|b| serde_json::to_vec(&b).unwrap()),
                )
                .await;
            assert_eq!(
                answer.status,
                StatusCode::UNAUTHORIZED,
                "{method} {uri} as {who:?}: {}",
                answer.text
            );
            assert_eq!(answer.code(), ErrorCode::NoSession);
            assert!(
                answer.header("set-cookie").is_none(),
                "{method} {uri} set a cookie"
            );
        }
    }
    assert_eq!(attempts(&app).await, 1);
    // The catalogue, a scenario and the check stay open to anyone, and make no session.
    for (method, uri, body) in [
        (Method::GET, "/api/scenarios", None),
        (Method::GET, "/api/scenarios/safe-retry", None),
        (
            Method::POST,
            "/api/scenarios/safe-retry/check",
            Some(passing_design("safe-retry")),
        ),
    ] {
        let answer = app
            .send(
                method.clone(),
                uri,
                &As::nobody(),
                &[],
                body.map(|b| serde_json::to_vec(&b).unwrap()),
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{uri}: {}", answer.text);
        assert!(answer.header("set-cookie").is_none(), "{uri}");
    }
    // POST /api/session makes one; over HTTPS and on loopback the cookie is __Host- and Secure.
    let made = post_session(&app, &As::nobody(), &[]).await;
    assert_eq!(made.status, StatusCode::CREATED);
    assert!(made
        .header("set-cookie")
        .unwrap()
        .starts_with("pb_session="));
    for headers in [
        vec![("host", "localhost:3000")],
        vec![("host", "127.0.0.1:8080")],
        vec![("host", "[::1]:3000")],
        vec![("host", "course.example"), ("x-forwarded-proto", "https")],
    ] {
        let made = post_session(&app, &As::nobody(), &headers).await;
        let cookie = made.header("set-cookie").unwrap();
        assert!(
            cookie.starts_with("__Host-pb_session=")
                && cookie.contains("; Secure")
                && cookie.contains("; HttpOnly")
                && cookie.contains("; Path=/")
                && cookie.contains("; SameSite=Lax")
                && !cookie.contains("Domain"),
            "{headers:?}: {cookie}"
        );
        // The secret: 256 random bits, base64url.
        let secret = secret_of(cookie.split(';').next().unwrap());
        assert_eq!(secret.len(), 43, "{secret}");
    }
    // A stale unprefixed cookie is expired when the prefixed one is set, so that the browser
    // does not go on to send two.
    let stale = post_session(
        &app,
        &As::student("pb_session=stale"),
        &[("host", "localhost:3000")],
    )
    .await;
    let set: Vec<&str> = stale
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert!(set[0].starts_with("__Host-pb_session="), "{set:?}");
    assert!(
        set.iter()
            .any(|c| c.starts_with("pb_session=;") && c.contains("Max-Age=0")),
        "{set:?}"
    );
}

#[tokio::test]
async fn hsts_is_sent_over_https_only_and_x_forwarded_proto_is_believed_only_when_trusted() {
    let app = spawn_app().await;
    let plain = app.get("/api/scenarios", &As::nobody()).await;
    assert!(plain.header("strict-transport-security").is_none());
    let tls = app
        .send(
            Method::GET,
            "/api/scenarios",
            &As::nobody(),
            &[("x-forwarded-proto", "https")],
            None,
        )
        .await;
    assert_eq!(
        tls.header("strict-transport-security"),
        Some("max-age=31536000")
    );
    let untrusting = crate::common::spawn_app_with(Config {
        trust_forwarded_proto: false,
        ..Config::default()
    })
    .await;
    let spoofed = untrusting
        .send(
            Method::POST,
            "/api/session",
            &As::nobody(),
            &[("x-forwarded-proto", "https")],
            None,
        )
        .await;
    assert!(spoofed.header("strict-transport-security").is_none());
    assert!(spoofed
        .header("set-cookie")
        .unwrap()
        .starts_with("pb_session="));
    let https = crate::common::spawn_app_with(Config {
        https: true,
        ..Config::default()
    })
    .await;
    let made = post_session(&https, &As::nobody(), &[]).await;
    assert!(made
        .header("set-cookie")
        .unwrap()
        .starts_with("__Host-pb_session="));
    assert_eq!(
        made.header("strict-transport-security"),
        Some("max-age=31536000")
    );
}

#[tokio::test]
async fn a_request_with_two_session_cookies_is_refused() {
    let app = spawn_app().await;
    let (victim, victim_id) = app.new_student().await;
    let (attacker, _) = app.new_student().await;
    let victim_secret = secret_of(&victim);
    let attacker_secret = secret_of(&attacker);
    for cookies in [
        format!("{attacker}; {victim}"),
        format!("{victim}; {attacker}"),
        format!("pb_session={attacker_secret}; __Host-pb_session={victim_secret}"),
        format!("__Host-pb_session={victim_secret}; pb_session={attacker_secret}"),
        format!("__Host-pb_session={attacker_secret}; __Host-pb_session={victim_secret}"),
    ] {
        let who = As::student(&cookies);
        let passed = app
            .post(
                "/api/submissions",
                &who,
                &json!({"scenario": "safe-retry", "design": passing_design("safe-retry")}),
            )
            .await;
        assert_eq!(passed.status, StatusCode::BAD_REQUEST, "{cookies}");
        assert_eq!(passed.code(), ErrorCode::AmbiguousSession);
        for answer in [
            app.get("/api/session", &who).await,
            post_session(&app, &who, &[]).await,
            app.get("/api/drafts/safe-retry", &who).await,
        ] {
            assert_eq!(answer.code(), ErrorCode::AmbiguousSession, "{cookies}");
            assert!(answer.header("set-cookie").is_none());
        }
    }
    // Two Cookie headers count as much as one header with two cookies.
    let two_headers = app
        .send(
            Method::GET,
            "/api/session",
            &As::student(&victim),
            &[("cookie", attacker.as_str())],
            None,
        )
        .await;
    assert_eq!(two_headers.code(), ErrorCode::AmbiguousSession);
    assert_eq!(attempts(&app).await, 0);
    assert_eq!(
        app.get("/api/session", &As::student(&victim)).await.body["student"],
        victim_id.as_str()
    );
}

/// A `tracing` writer that keeps what it is given.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

#[tokio::test]
async fn the_session_secret_is_in_no_answer_and_no_log_line() {
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish();
    // The test's runtime runs on this thread, so every event of the requests is captured.
    let _guard = tracing::subscriber::set_default(subscriber);

    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    let made = post_session(&app, &As::nobody(), &[("host", "localhost:3000")]).await;
    let cookie = made.cookie().unwrap();
    let secret = secret_of(&cookie);
    let student = made.body["student"].as_str().unwrap().to_string();
    assert_ne!(secret, student);
    let who = As::student(&cookie);
    let mut bodies: Vec<String> = vec![made.text.clone()];
    let submitted = app
        .post(
            "/api/submissions",
            &who,
            &json!({"scenario": "safe-retry", "design": passing_design("safe-retry")}),
        )
        .await;
    assert_eq!(submitted.status, StatusCode::CREATED);
    let id = submitted.body["id"].as_str().unwrap().to_string();
    bodies.push(submitted.text.clone());
    for answer in [
        app.get("/api/session", &who).await,
        app.put("/api/session", &who, &json!({"display_name": "Ada"}))
            .await,
        app.put(
            "/api/drafts/safe-retry",
            &who,
            &json!({"design": {"nodes": []}}),
        )
        .await,
        app.get("/api/drafts/safe-retry", &who).await,
        app.get("/api/submissions", &who).await,
        app.get(&format!("/api/submissions/{id}"), &who).await,
        app.get("/api/scenarios", &who).await,
        app.get(
            &format!("/api/submissions?student={student}"),
            &As::grader(&token),
        )
        .await,
        app.get("/api/submissions", &As::grader(&token)).await,
        app.post(
            "/api/grade",
            &As::grader(&token),
            &json!([{"scenario": "safe-retry", "student": student, "design": passing_design("safe-retry")}]),
        )
        .await,
        app.post(
            "/api/grade?format=gradescope",
            &As::grader(&token),
            &json!([{"scenario": "safe-retry", "student": student, "design": failing_design()}]),
        )
        .await,
    ] {
        assert!(answer.status.is_success(), "{}", answer.text);
        bodies.push(answer.text.clone());
        for (name, value) in answer.headers.iter() {
            assert!(
                !value.to_str().unwrap_or("").contains(&secret),
                "the secret is in the header {name}"
            );
        }
    }
    // The student's public id is what lists and exports show.
    assert!(bodies.iter().any(|b| b.contains(&student)));
    for body in &bodies {
        assert!(
            !body.contains(&secret),
            "the secret is in an answer: {body}"
        );
    }
    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(!logged.is_empty(), "the log was captured");
    assert!(
        !logged.contains(&secret),
        "the secret is in the log:\n{logged}"
    );
    assert!(
        logged
            .lines()
            .filter(|l| l.contains("new student session"))
            .all(|l| l.contains("DEBUG") && l.contains(&student)),
        "a new session is logged by its public id, at DEBUG:\n{logged}"
    );
}

/// Every text the database holds, as one string: each row of each table, as text.
async fn database_text(store: &Store) -> String {
    let mut all = String::new();
    match store {
        Store::Sqlite(pool, ..) => {
            use sqlx::Row;
            let tables: Vec<String> = sqlx::query(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
            )
            .fetch_all(pool)
            .await
            .unwrap()
            .iter()
            .map(|r| r.get::<String, _>("name"))
            .collect();
            for table in tables {
                let columns: Vec<String> =
                    sqlx::query(&format!("SELECT name FROM pragma_table_info('{table}')"))
                        .fetch_all(pool)
                        .await
                        .unwrap()
                        .iter()
                        .map(|r| r.get::<String, _>("name"))
                        .collect();
                for column in columns {
                    let values = sqlx::query(&format!(
                        "SELECT CAST(\"{column}\" AS TEXT) AS v FROM \"{table}\""
                    ))
                    .fetch_all(pool)
                    .await
                    .unwrap();
                    for v in values {
                        if let Ok(Some(text)) = v.try_get::<Option<String>, _>("v") {
                            all.push_str(&text);
                            all.push('\n');
                        }
                    }
                }
            }
        }
        Store::Postgres(pool, ..) => {
            use sqlx::Row;
            let tables: Vec<String> = sqlx::query(
                "SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = 'public'",
            )
            .fetch_all(pool)
            .await
            .unwrap()
            .iter()
            .map(|r| r.get::<String, _>("name"))
            .collect();
            for table in tables {
                let rows = sqlx::query(&format!("SELECT t::text AS v FROM \"{table}\" AS t"))
                    .fetch_all(pool)
                    .await
                    .unwrap();
                for r in rows {
                    all.push_str(&r.get::<String, _>("v"));
                    all.push('\n');
                }
            }
        }
    }
    all
}

async fn the_secret_is_stored_only_as_its_hash(app: &TestApp, db_files: Option<&std::path::Path>) {
    let (cookie, student) = app.new_student().await;
    let secret = secret_of(&cookie);
    app.put(
        "/api/drafts/safe-retry",
        &As::student(&cookie),
        &json!({"design": {"nodes": []}}),
    )
    .await;
    let text = database_text(app.state.store()).await;
    assert!(text.contains(&student), "the dump holds the students");
    assert!(
        text.contains(&server::auth::hash_token(&secret)),
        "the dump holds the sessions"
    );
    assert!(
        !text.contains(&secret),
        "the secret is stored in plain text"
    );
    // And not in the database's files either, WAL included.
    if let Some(dir) = db_files {
        for entry in std::fs::read_dir(dir).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "the secret is in a database file"
            );
        }
    }
}

crate::on_both_databases!(the_session_secret_is_stored_only_as_its_hash, |db| {
    let postgres = db.is_postgres();
    let app = db.app().await;
    // On SQLite, the database's files are searched for the secret too.
    let dir = app._dir.path().join("db");
    the_secret_is_stored_only_as_its_hash(&app, (!postgres).then_some(dir.as_path())).await;
});

/// A database made by the first migration only, as the server before sessions had their own
/// secret left it, with one student of a browser who has a draft and an attempt.
async fn old_database(dir: &TempDir, old_id: &str) -> String {
    let url = dir.sqlite_url();
    std::fs::create_dir_all(dir.path().join("db")).unwrap();
    let options: sqlx::sqlite::SqliteConnectOptions = url.parse().unwrap();
    let pool = sqlx::SqlitePool::connect_with(options.create_if_missing(true))
        .await
        .unwrap();
    let mut migrator = sqlx::migrate!("../migrations/sqlite");
    migrator.migrations = std::borrow::Cow::Owned(migrator.migrations[..1].to_vec());
    migrator.run(&pool).await.unwrap();
    let now = chrono::Utc::now();
    sqlx::query("INSERT INTO students (id, display_name, origin, created_at) VALUES ($1, 'Ada', 'session', $2)")
        .bind(old_id).bind(now).execute(&pool).await.unwrap();
    sqlx::query("INSERT INTO students (id, display_name, origin, created_at) VALUES ('s-22222222222222222222222222222222', NULL, 'grader', $1)")
        .bind(now).execute(&pool).await.unwrap();
    sqlx::query("INSERT INTO drafts (student, scenario, design, updated_at) VALUES ($1, 'safe-retry', '{\"nodes\": []}', $2)")
        .bind(old_id).bind(now).execute(&pool).await.unwrap();
    pool.close().await;
    url
}

#[tokio::test]
async fn an_old_pb_student_cookie_is_exchanged_once_then_refused() {
    let old_id = "s-0123456789abcdef0123456789abcdef";
    let dir = TempDir::new("legacy");
    let url = old_database(&dir, old_id).await;
    let store = Store::connect(&url)
        .await
        .expect("the new migrations apply");
    let app = spawn_app_on(store, Config::default(), dir);
    let old_cookie = format!("pb_student={old_id}");
    let old = As::student(&old_cookie);
    // The old cookie opens nothing by itself.
    assert_eq!(
        app.get("/api/drafts/safe-retry", &old).await.code(),
        ErrorCode::NoSession
    );

    let exchanged = post_session(&app, &old, &[("host", "localhost:3000")]).await;
    assert_eq!(exchanged.status, StatusCode::CREATED, "{}", exchanged.text);
    assert_eq!(
        exchanged.body,
        json!({"student": old_id, "display_name": "Ada"})
    );
    let set: Vec<&str> = exchanged
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(set.len(), 2, "{set:?}");
    assert!(set[0].starts_with("__Host-pb_session="), "{set:?}");
    assert!(
        set.iter()
            .any(|c| c.starts_with("pb_student=;") && c.contains("Max-Age=0")),
        "the old cookie is expired: {set:?}"
    );
    let cookie = set[0].split(';').next().unwrap().to_string();
    let who = As::student(&cookie);
    assert_eq!(
        app.get("/api/drafts/safe-retry", &who).await.body["design"],
        json!({"nodes": []}),
        "the student keeps their work"
    );

    // Never again: a second exchange makes a new, empty student.
    let again = post_session(&app, &old, &[]).await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert_ne!(again.body["student"], old_id);
    let stranger = As::student(&again.cookie().unwrap());
    assert_eq!(
        app.get("/api/drafts/safe-retry", &stranger).await.code(),
        ErrorCode::NoDraft
    );
    // A grader-named student was never a session, and a student made now never was either.
    for id in [
        "s-22222222222222222222222222222222".to_string(),
        app.new_student().await.1,
    ] {
        let tried = post_session(&app, &As::student(&format!("pb_student={id}")), &[]).await;
        assert_ne!(tried.body["student"], id.as_str());
    }
}

// Idempotency.

async fn a_recreated_token_name_replays_nothing(app: &TestApp) {
    let old = app.grader_token("idem").await;
    let body = json!({"scenario": "safe-retry", "student": "lms-1", "design": passing_design("safe-retry")});
    let send = |token: String| {
        let body = serde_json::to_vec(&body).unwrap();
        async move {
            app.send(
                Method::POST,
                "/api/submissions",
                &As::grader(&token),
                &[("idempotency-key", "K-1")],
                Some(body),
            )
            .await
        }
    };
    let first = send(old.clone()).await;
    assert_eq!(first.status, StatusCode::CREATED);
    let replay = send(old.clone()).await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert!(app.state.store().revoke_token("idem").await.unwrap());
    let new = app.grader_token("idem").await;
    let fresh = send(new).await;
    assert_eq!(fresh.status, StatusCode::CREATED, "{}", fresh.text);
    assert!(fresh.header("idempotent-replayed").is_none());
    assert_ne!(fresh.body["id"], first.body["id"]);
    assert_eq!(attempts(app).await, 2);
}

crate::on_both_databases!(a_revoked_and_recreated_token_name_replays_nothing, |db| {
    a_recreated_token_name_replays_nothing(&db.app().await).await;
});

fn an_attempt(id: &str) -> Attempt {
    Attempt {
        id: id.to_string(),
        student: "lms-1".to_string(),
        scenario: "safe-retry".to_string(),
        scenario_hash: "h".to_string(),
        design: json!({}),
        verdict: json!({}),
        score: 1,
        max_score: 3,
        passed: false,
        created_at: chrono::Utc::now(),
        class: None,
    }
}

async fn a_stalled_holder_cannot_write(store: &Store) {
    let long = Duration::from_secs(600);
    let (caller, key, fp) = ("grader:abc", "K", "fp");
    assert_eq!(
        store
            .claim_idempotency_key_as(&ClaimId::held_by(caller, key, "stalled"), fp, long)
            .await
            .unwrap(),
        Claim::Started
    );
    // The holder stalls past its lease; a retry takes the claim over.
    assert_eq!(
        store
            .claim_idempotency_key_as(&ClaimId::held_by(caller, key, "retry"), fp, Duration::ZERO)
            .await
            .unwrap(),
        Claim::Started
    );
    // The stalled holder wakes up: none of its writes counts.
    let stale_body = json!({"id": "stale"});
    let recorded = store
        .record(
            Some(&an_attempt("stale")),
            Some(&IdempotentAnswer {
                claim: &ClaimId::held_by(caller, key, "stalled"),
                status: 201,
                body: &stale_body,
            }),
        )
        .await
        .unwrap();
    assert!(!recorded, "a stale holder's record is not acknowledged");
    assert_eq!(store.get_attempt("stale").await.unwrap(), None);
    assert!(!store
        .renew_idempotency_key(&ClaimId::held_by(caller, key, "stalled"))
        .await
        .unwrap());
    assert!(!store
        .abandon_idempotency_key(&ClaimId::held_by(caller, key, "stalled"))
        .await
        .unwrap());
    assert_eq!(
        store
            .claim_idempotency_key(caller, key, fp, long)
            .await
            .unwrap(),
        Claim::InFlight,
        "the new holder's claim is still there"
    );
    // The new holder records, and its answer is the one replayed.
    let body = json!({"id": "fresh"});
    assert!(store
        .record(
            Some(&an_attempt("fresh")),
            Some(&IdempotentAnswer {
                claim: &ClaimId::held_by(caller, key, "retry"),
                status: 201,
                body: &body,
            }),
        )
        .await
        .unwrap());
    assert_eq!(
        store
            .claim_idempotency_key(caller, key, fp, long)
            .await
            .unwrap(),
        Claim::Replay { status: 201, body }
    );
    assert!(!store
        .abandon_idempotency_key(&ClaimId::held_by(caller, key, "retry"))
        .await
        .unwrap());
}

crate::on_both_databases!(
    a_stalled_claim_holder_cannot_record_after_a_takeover,
    |db| {
        let store = db.store().await;
        a_stalled_holder_cannot_write(&store).await;
        store.close().await;
    }
);

/// Waits until a renewal task has let go of its watch, or fails.
async fn ended(watch: &std::sync::Weak<()>) {
    for _ in 0..400 {
        if watch.upgrade().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the lease renewal task is still running");
}

#[tokio::test]
async fn the_lease_renewal_stops_when_its_request_ends_however_it_ends() {
    use server::idempotency::LeaseRenewal;
    let app = spawn_app().await;
    let store = app.state.store().clone();
    // Long enough that a busy machine renews in time: renewed every 100 ms.
    let lease = Duration::from_millis(400);
    let (caller, fp) = ("student:s-1", "fp");
    let start = |key: &str, owner: &str| {
        LeaseRenewal::start(store.clone(), ClaimId::held_by(caller, key, owner), lease)
    };

    // While the guard lives, the claim is renewed: no retry takes it over.
    store
        .claim_idempotency_key_as(&ClaimId::held_by(caller, "alive", "a"), fp, lease)
        .await
        .unwrap();
    let renewal = start("alive", "a");
    tokio::time::sleep(lease * 3).await;
    assert_eq!(
        store
            .claim_idempotency_key(caller, "alive", fp, lease)
            .await
            .unwrap(),
        Claim::InFlight
    );
    let watch = renewal.watch();
    drop(renewal);
    ended(&watch).await;
    tokio::time::sleep(lease * 2).await;
    assert_eq!(
        store
            .claim_idempotency_key(caller, "alive", fp, lease)
            .await
            .unwrap(),
        Claim::Started,
        "once the renewal stopped, the lease ran out"
    );

    // A request future dropped mid-way (a client gone, a timeout).
    let renewal = start("dropped", "b");
    let watch = renewal.watch();
    let request = async move {
        let _renewal = renewal;
        std::future::pending::<()>().await;
    };
    assert!(tokio::time::timeout(Duration::from_millis(30), request)
        .await
        .is_err());
    ended(&watch).await;

    // A request that panics.
    let renewal = start("panicked", "c");
    let watch = renewal.watch();
    let panicking = tokio::spawn(async move {
        let _renewal = renewal;
        tokio::time::sleep(Duration::from_millis(20)).await;
        panic!("a submission panicked");
    });
    assert!(panicking.await.unwrap_err().is_panic());
    ended(&watch).await;
}

#[tokio::test]
async fn personal_answers_are_not_cached() {
    let app = spawn_app().await;
    let (cookie, _) = app.new_student().await;
    let who = As::student(&cookie);
    let token = app.grader_token("ta").await;
    let made = post_session(&app, &As::nobody(), &[]).await;
    let answers: Vec<(&str, Answer)> = vec![
        ("POST /api/session", made),
        ("GET /api/session", app.get("/api/session", &who).await),
        (
            "PUT /api/drafts",
            app.put(
                "/api/drafts/safe-retry",
                &who,
                &json!({"design": {"nodes": []}}),
            )
            .await,
        ),
        (
            "GET /api/drafts",
            app.get("/api/drafts/safe-retry", &who).await,
        ),
        (
            "POST /api/submissions",
            app.post(
                "/api/submissions",
                &who,
                &json!({"scenario": "safe-retry", "design": failing_design()}),
            )
            .await,
        ),
        ("GET /api/submissions", app.get("/api/submissions", &who).await),
        (
            "GET /api/submissions as a grader",
            app.get("/api/submissions", &As::grader(&token)).await,
        ),
        (
            "POST /api/grade",
            app.post(
                "/api/grade",
                &As::grader(&token),
                &json!([{"scenario": "safe-retry", "student": "lms-1", "design": failing_design()}]),
            )
            .await,
        ),
        ("GET /api/scenarios", app.get("/api/scenarios", &who).await),
        (
            "an error",
            app.get("/api/session", &As::nobody()).await,
        ),
    ];
    for (what, answer) in answers {
        assert_eq!(answer.header("cache-control"), Some("no-store"), "{what}");
    }
}
