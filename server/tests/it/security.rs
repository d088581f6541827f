//! Access and security: each student reaches only their own drafts and attempts, grader
//! tokens are stored hashed and can be revoked, the session cookie's attributes, the security
//! headers on every answer, and the per-client rate limits. Each rule with its refusals.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use server::config::RateLimit;
use server::Config;
use sqlx::Row;

use crate::common::{failing_design, spawn_app, spawn_app_with, As, TempDir, TestApp};
use server::error::ErrorCode;

const CSP_WITHOUT_APP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'";

fn assert_security_headers(answer: &crate::common::Answer, what: &str) {
    assert_eq!(
        answer.header("x-content-type-options"),
        Some("nosniff"),
        "{what}"
    );
    assert_eq!(answer.header("x-frame-options"), Some("DENY"), "{what}");
    assert_eq!(
        answer.header("referrer-policy"),
        Some("no-referrer"),
        "{what}"
    );
    let csp = answer
        .header("content-security-policy")
        .unwrap_or_else(|| panic!("{what}: no Content-Security-Policy"));
    assert!(
        csp.starts_with("default-src 'self'; script-src 'self' 'wasm-unsafe-eval'"),
        "{what}: {csp}"
    );
    assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
    let script_src = csp
        .split(';')
        .map(str::trim)
        .find(|d| d.starts_with("script-src"))
        .unwrap_or("");
    assert!(
        !script_src.contains("'unsafe-inline'"),
        "{what}: inline scripts are allowed by hash only: {csp}"
    );
}

#[tokio::test]
async fn every_answer_carries_the_security_headers() {
    let app = spawn_app_with(Config {
        body_limit_bytes: 1024,
        ..Config::default()
    })
    .await;
    let (cookie, _) = app.new_student().await;
    let answers = [
        ("GET /healthz", app.get("/healthz", &As::nobody()).await),
        (
            "GET /api/scenarios",
            app.get("/api/scenarios", &As::nobody()).await,
        ),
        (
            "POST check",
            app.post(
                "/api/scenarios/safe-retry/check",
                &As::nobody(),
                &failing_design(),
            )
            .await,
        ),
        ("404", app.get("/api/nope", &As::nobody()).await),
        ("404 page", app.get("/nope", &As::nobody()).await),
        (
            "405",
            app.send(Method::DELETE, "/api/scenarios", &As::nobody(), &[], None)
                .await,
        ),
        (
            "413",
            app.send(
                Method::POST,
                "/api/scenarios/safe-retry/check",
                &As::nobody(),
                &[],
                Some(vec![b' '; 4096]),
            )
            .await,
        ),
        (
            "400",
            app.send(
                Method::POST,
                "/api/scenarios/safe-retry/check",
                &As::nobody(),
                &[],
                Some(b"{".to_vec()),
            )
            .await,
        ),
        (
            "401",
            app.get("/api/submissions", &As::grader("nope")).await,
        ),
        (
            "403",
            app.get(
                "/api/submissions?student=someone-else",
                &As::student(&cookie),
            )
            .await,
        ),
        ("metrics", app.get("/metrics", &As::nobody()).await),
        ("openapi", app.get("/api/openapi.json", &As::nobody()).await),
    ];
    for (what, answer) in &answers {
        assert_security_headers(answer, what);
        assert_eq!(
            answer.header("content-security-policy"),
            Some(CSP_WITHOUT_APP),
            "{what}"
        );
    }
}

#[tokio::test]
async fn pages_carry_a_policy_that_allows_their_inline_script_by_hash() {
    let web = TempDir::new("csp");
    let dist = web.path().join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    let script =
        "\n    import init from \"/web.js\";\n    init({ module_or_path: \"/web_bg.wasm\" });\n  ";
    let page = format!("<!doctype html><title>Pipeline Builder</title><script type=\"module\" src=\"/other.js\"></script><script type=\"module\">{script}</script>");
    std::fs::write(dist.join("index.html"), &page).unwrap();
    std::fs::write(dist.join("web.js"), "export default function init() {}").unwrap();
    let app = spawn_app_with(Config {
        static_dir: Some(dist.clone()),
        ..Config::default()
    })
    .await;

    // The hash a browser computes for the inline script, worked out here independently:
    // base64 of the sha256 of the script's text.
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf '%s' '{}' | openssl dgst -sha256 -binary | base64",
            script.replace('\'', "'\\''")
        ))
        .output();
    let expected = match output {
        Ok(o) if o.status.success() => {
            format!("'sha256-{}'", String::from_utf8_lossy(&o.stdout).trim())
        }
        _ => {
            use base64::Engine;
            use sha2::Digest;
            format!(
                "'sha256-{}'",
                base64::engine::general_purpose::STANDARD
                    .encode(sha2::Sha256::digest(script.as_bytes()))
            )
        }
    };
    for path in ["/", "/scenarios/safe-retry", "/web.js", "/api/scenarios"] {
        let answer = app.get(path, &As::nobody()).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}");
        assert_security_headers(&answer, path);
        let csp = answer.header("content-security-policy").unwrap();
        let script_src = csp
            .split(';')
            .map(str::trim)
            .find(|d| d.starts_with("script-src"))
            .unwrap();
        assert_eq!(
            script_src,
            format!("script-src 'self' 'wasm-unsafe-eval' {expected}"),
            "{path}"
        );
    }
}

#[tokio::test]
async fn the_shipped_pages_are_allowed_by_the_policy_they_are_served_with() {
    // The real web/index.html and web/staff.html (and web/dist when it is built): their
    // inline scripts are allowed.
    let web = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../web");
    let policy = server::headers::content_security_policy(Some(&web.join("dist")));
    for name in server::embedded::PAGES {
        let page = std::fs::read_to_string(web.join(name)).unwrap();
        let hashes = server::headers::inline_script_hashes(&page);
        assert!(!hashes.is_empty(), "{name}");
        for hash in hashes {
            assert!(policy.contains(&format!("'{hash}'")), "{name}: {policy}");
        }
    }
    assert!(!policy.contains("script-src 'self' 'unsafe-inline'"));
}

#[tokio::test]
async fn the_policy_of_the_app_built_into_the_binary_allows_both_pages() {
    let student = "<script type=\"module\">import init from \"/web.js\"; init();</script>";
    let staff = "<script type=\"module\">import init from \"/staff.js\"; init();</script>";
    let policy = server::headers::content_security_policy_of(&[student, staff]);
    for page in [student, staff] {
        let [hash] = server::headers::inline_script_hashes(page)
            .try_into()
            .unwrap();
        assert!(policy.contains(&format!("'{hash}'")), "{policy}");
    }
}

#[tokio::test]
async fn the_session_cookie_is_http_only_same_site_and_secure_only_behind_tls() {
    let app = spawn_app().await;
    let plain = app
        .send(Method::POST, "/api/session", &As::nobody(), &[], None)
        .await;
    let cookie = plain.header("set-cookie").unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    assert!(!cookie.contains("Secure"), "{cookie}");
    for proto in ["https", "HTTPS", "https, http"] {
        let tls = app
            .send(
                Method::POST,
                "/api/session",
                &As::nobody(),
                &[("x-forwarded-proto", proto)],
                None,
            )
            .await;
        let cookie = tls.header("set-cookie").unwrap();
        assert!(
            cookie.contains("; Secure")
                && cookie.contains("HttpOnly")
                && cookie.contains("SameSite=Lax"),
            "{proto}: {cookie}"
        );
    }
    let http = app
        .send(
            Method::POST,
            "/api/session",
            &As::nobody(),
            &[("x-forwarded-proto", "http")],
            None,
        )
        .await;
    assert!(!http.header("set-cookie").unwrap().contains("Secure"));
}

#[tokio::test]
async fn students_reach_only_their_own_drafts_and_attempts() {
    let app = spawn_app().await;
    let (alice, alice_id) = app.new_student().await;
    let (bob, bob_id) = app.new_student().await;
    let draft = json!({"nodes": [{"id": "mine", "kind": "batch_job"}]});
    assert_eq!(
        app.put(
            "/api/drafts/safe-retry",
            &As::student(&alice),
            &json!({"design": draft})
        )
        .await
        .status,
        StatusCode::OK
    );
    let submitted = app
        .post(
            "/api/submissions",
            &As::student(&alice),
            &json!({"scenario": "safe-retry", "design": failing_design()}),
        )
        .await;
    assert_eq!(submitted.status, StatusCode::CREATED);
    let id = submitted.body["id"].as_str().unwrap();

    // Bob sees neither Alice's draft nor her attempt, by id or in a list.
    assert_eq!(
        app.get("/api/drafts/safe-retry", &As::student(&bob))
            .await
            .code(),
        ErrorCode::NoDraft
    );
    let other = app
        .get(&format!("/api/submissions/{id}"), &As::student(&bob))
        .await;
    assert_eq!(other.status, StatusCode::FORBIDDEN);
    assert_eq!(other.code(), ErrorCode::Forbidden);
    assert!(!other.text.contains(&alice_id));
    assert_eq!(
        app.get(
            &format!("/api/submissions?student={alice_id}"),
            &As::student(&bob)
        )
        .await
        .status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        app.get("/api/submissions", &As::student(&bob)).await.body,
        json!([])
    );
    // Bob cannot submit as Alice, nor write her draft: his PUT writes his own.
    let as_alice = app
        .post(
            "/api/submissions",
            &As::student(&bob),
            &json!({"scenario": "safe-retry", "student": alice_id, "design": failing_design()}),
        )
        .await;
    assert_eq!(as_alice.status, StatusCode::FORBIDDEN);
    app.put(
        "/api/drafts/safe-retry",
        &As::student(&bob),
        &json!({"design": {"nodes": []}}),
    )
    .await;
    assert_eq!(
        app.get("/api/drafts/safe-retry", &As::student(&alice))
            .await
            .body["design"],
        draft
    );
    // A forged cookie (right shape, never handed out) is no session, not someone else's.
    let forged = format!("pb_student=s-{}", "0".repeat(32));
    let session = app
        .send(
            Method::POST,
            "/api/session",
            &As::student(&forged),
            &[],
            None,
        )
        .await;
    assert_ne!(session.body["student"], alice_id.as_str());
    assert_ne!(session.body["student"], bob_id.as_str());
    // Nor is a student's public id, in the old cookie or the new one.
    for cookie in [
        format!("pb_student={alice_id}"),
        format!("pb_session={alice_id}"),
    ] {
        let session = app
            .send(
                Method::POST,
                "/api/session",
                &As::student(&cookie),
                &[],
                None,
            )
            .await;
        assert_ne!(session.body["student"], alice_id.as_str());
    }
    // Without a session there is nothing to read; grading needs a token.
    assert_eq!(
        app.get(&format!("/api/submissions/{id}"), &As::nobody())
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    let grade = app
        .post("/api/grade", &As::student(&alice), &json!([]))
        .await;
    assert_eq!(grade.status, StatusCode::UNAUTHORIZED);
    // Alice herself reads hers.
    assert_eq!(
        app.get(&format!("/api/submissions/{id}"), &As::student(&alice))
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn grader_tokens_are_stored_hashed_and_revocable() {
    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    let server::Store::Sqlite(pool, ..) = app.state.store() else {
        panic!("the test app is on SQLite")
    };
    let rows = sqlx::query("SELECT name, token_hash FROM grader_tokens")
        .fetch_all(pool)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let stored: String = rows[0].try_get("token_hash").unwrap();
    assert_ne!(stored, token, "the token itself is never stored");
    assert!(
        !stored.contains(&token[4..]),
        "no part of the token is stored"
    );
    assert_eq!(stored, server::auth::hash_token(&token));
    assert_eq!(stored.len(), 64, "a sha256 in hex");

    assert_eq!(
        app.get("/api/submissions", &As::grader(&token))
            .await
            .status,
        StatusCode::OK
    );
    // A token that differs in one character, or is a prefix, or is the stored hash itself,
    // is refused.
    let mut wrong = token.clone().into_bytes();
    let last = wrong.len() - 1;
    wrong[last] = if wrong[last] == b'0' { b'1' } else { b'0' };
    for guess in [
        String::from_utf8(wrong).unwrap(),
        token[..token.len() - 1].to_string(),
        stored.clone(),
        String::new(),
    ] {
        let answer = app.get("/api/submissions", &As::grader(&guess)).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{guess}");
        assert_eq!(answer.code(), ErrorCode::Unauthorized);
    }
    assert!(app.state.store().revoke_token("ta").await.unwrap());
    let revoked = app.get("/api/submissions", &As::grader(&token)).await;
    assert_eq!(revoked.status, StatusCode::UNAUTHORIZED);
    assert!(revoked.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("revoked"));
}

async fn flood(app: &TestApp, who: &As, n: usize) -> Vec<crate::common::Answer> {
    let mut answers = Vec::new();
    for _ in 0..n {
        answers.push(app.get("/api/scenarios", who).await);
    }
    answers
}

#[tokio::test]
async fn a_flooding_client_gets_429_while_another_is_still_served() {
    let app = spawn_app_with(Config {
        rate_limit: Some(RateLimit {
            per_second: 2.0,
            burst: 5.0,
        }),
        ..Config::default()
    })
    .await;
    let (flooder, _) = app.new_student().await;
    let (other, _) = app.new_student().await;
    let flooded = flood(&app, &As::student(&flooder), 20).await;
    let limited: Vec<_> = flooded
        .iter()
        .filter(|a| a.status == StatusCode::TOO_MANY_REQUESTS)
        .collect();
    assert!(
        limited.len() >= 14,
        "at most the burst (and a little refill) gets through: {} limited",
        limited.len()
    );
    assert!(
        flooded[..4].iter().all(|a| a.status == StatusCode::OK),
        "the burst is served"
    );
    let refused = limited[0];
    assert_eq!(refused.code(), ErrorCode::RateLimited);
    assert!(refused.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("too many requests"));
    let retry: u64 = refused
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    assert_security_headers(refused, "429");

    // Another student, a grader and a client with neither are each still served.
    assert_eq!(
        app.get("/api/scenarios", &As::student(&other)).await.status,
        StatusCode::OK
    );
    let token = app.grader_token("ta").await;
    assert_eq!(
        app.get("/api/submissions", &As::grader(&token))
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        app.get("/api/scenarios", &As::nobody()).await.status,
        StatusCode::OK
    );
    // The probes and the page are never limited.
    for _ in 0..10 {
        assert_eq!(
            app.send(Method::GET, "/healthz", &As::student(&flooder), &[], None)
                .await
                .status,
            StatusCode::OK
        );
    }
    // After the wait, the flooder is served again.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(
        app.get("/api/scenarios", &As::student(&flooder))
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_flooding_grader_token_is_limited_on_its_own() {
    let app = spawn_app_with(Config {
        rate_limit: Some(RateLimit {
            per_second: 1.0,
            burst: 3.0,
        }),
        ..Config::default()
    })
    .await;
    let a = app.grader_token("a").await;
    let b = app.grader_token("b").await;
    let flooded = flood(&app, &As::grader(&a), 8).await;
    assert!(
        flooded
            .iter()
            .filter(|x| x.status == StatusCode::TOO_MANY_REQUESTS)
            .count()
            >= 4
    );
    assert_eq!(
        app.get("/api/submissions", &As::grader(&b)).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn the_rate_limit_holds_over_a_real_socket_by_peer_address() {
    // Over a socket, clients with neither token nor cookie are told apart by address.
    let dir = TempDir::new("rate-socket");
    let store = server::Store::connect(&dir.sqlite_url()).await.unwrap();
    // Clients with neither are one client between them per address: 2 at once, 1 in 10 s.
    let config = Config {
        rate_limit: Some(RateLimit {
            per_second: 0.1,
            burst: 2.0,
        }),
        ..Config::default()
    };
    let state = server::AppState::new(
        store,
        server::Catalogue::new(crate::common::scenarios()),
        config,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(server::app::serve(listener, state));
    let http = reqwest::Client::new();
    let mut statuses = Vec::new();
    for _ in 0..24 {
        statuses.push(
            http.get(format!("http://{address}/api/scenarios"))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16(),
        );
    }
    assert!(statuses[..2].iter().all(|s| *s == 200), "{statuses:?}");
    assert!(statuses[2..].iter().all(|s| *s == 429), "{statuses:?}");
    server.abort();
}

#[tokio::test]
async fn the_floor_route_is_mounted_only_when_asked_for() {
    let off = spawn_app().await;
    assert_eq!(
        off.send(
            Method::POST,
            "/api/floor?bytes=100",
            &As::nobody(),
            &[],
            None
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );
    let on = spawn_app_with(Config {
        floor_route: true,
        ..Config::default()
    })
    .await;
    for (asked, got) in [(100, 100), (4096, 4096), (1, 12), (0, 12)] {
        let answer = on
            .send(
                Method::POST,
                &format!("/api/floor?bytes={asked}"),
                &As::nobody(),
                &[],
                Some(b"ignored".to_vec()),
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.text.len(), got, "bytes={asked}");
        assert!(answer.body.is_object(), "{}", answer.text);
    }
    let bad = on
        .send(
            Method::POST,
            "/api/floor?bytes=lots",
            &As::nobody(),
            &[],
            None,
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.body["error"]["code"].is_string());
    let _: Value = bad.body;
}

#[tokio::test]
async fn the_openapi_document_tells_of_rate_limits_and_outages() {
    let app = spawn_app().await;
    let doc = app.get("/api/openapi.json", &As::nobody()).await.body;
    let responses = |path: &str, method: &str| doc["paths"][path][method]["responses"].clone();
    for (path, method) in [
        ("/api/submissions", "post"),
        ("/api/grade", "post"),
        ("/api/drafts/{scenario}", "put"),
        ("/api/session", "get"),
    ] {
        let r = responses(path, method);
        assert!(
            r["429"].is_object() && r["503"].is_object(),
            "{method} {path}: {r}"
        );
        assert!(
            r["503"]["headers"]["Retry-After"].is_object(),
            "{method} {path}: {r}"
        );
    }
    let check = responses("/api/scenarios/{id}/check", "post");
    assert!(check["429"].is_object(), "{check}");
    assert!(
        check["503"].is_null(),
        "checking needs no database: {check}"
    );
    assert!(
        responses("/healthz", "get")["429"].is_null(),
        "probes are not limited"
    );
}

// The cross-site guard, the author routes' Host, and the grader cookie.

/// An instructor signed in at `/instructor` on `localhost:3000`: the `Cookie` value of their
/// grader cookie, and the token it holds.
async fn signed_in_instructor(app: &TestApp) -> (String, String) {
    let token = app.grader_token("teacher").await;
    let signed = app
        .send(
            Method::POST,
            "/api/instructor/session",
            &As::nobody(),
            &[("host", "localhost:3000")],
            Some(serde_json::to_vec(&json!({"token": token})).unwrap()),
        )
        .await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.text);
    let cookie = signed.cookie().expect("the sign-in sets the grader cookie");
    assert!(cookie.starts_with("__Host-pb_grader="), "{cookie}");
    (cookie, token)
}

/// A page of a sibling subdomain posts a passing design for another student to `/api/grade`
/// with the instructor's cookie, as a form can (`text/plain`): refused, and nothing is
/// recorded. The instructor's own page may grade with the same cookie.
async fn same_site_grade_forgery_is_refused(app: &TestApp) {
    let (cookie, token) = signed_in_instructor(app).await;
    let (_, victim) = app.new_student().await;
    let batch = serde_json::to_vec(&json!([{
        "scenario": "safe-retry",
        "student": victim,
        "design": crate::common::passing_design("safe-retry"),
    }]))
    .unwrap();
    let instructor = As::student(&cookie);
    for headers in [
        vec![
            ("host", "localhost:3000"),
            ("sec-fetch-site", "same-site"),
            ("origin", "http://evil.localhost:3000"),
            ("content-type", "text/plain"),
        ],
        vec![
            ("host", "localhost:3000"),
            ("origin", "http://evil.example"),
            ("content-type", "application/json"),
        ],
    ] {
        let forged = app
            .send(
                Method::POST,
                "/api/grade",
                &instructor,
                &headers,
                Some(batch.clone()),
            )
            .await;
        assert_eq!(
            forged.status,
            StatusCode::FORBIDDEN,
            "{headers:?}: {}",
            forged.text
        );
        assert_eq!(forged.code(), ErrorCode::CrossSiteRequest);
    }
    let recorded = app
        .get(
            &format!("/api/submissions?student={victim}"),
            &As::grader(&token),
        )
        .await;
    assert_eq!(recorded.status, StatusCode::OK, "{}", recorded.text);
    assert_eq!(recorded.body, json!([]), "the forgery recorded nothing");
    // The instructor's own page, with the same cookie, grades.
    let own = app
        .send(
            Method::POST,
            "/api/grade",
            &instructor,
            &[
                ("host", "localhost:3000"),
                ("sec-fetch-site", "same-origin"),
                ("origin", "http://localhost:3000"),
            ],
            Some(batch),
        )
        .await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.text);
    let recorded = app
        .get(
            &format!("/api/submissions?student={victim}"),
            &As::grader(&token),
        )
        .await;
    assert_eq!(recorded.body.as_array().map(Vec::len), Some(1));
}

crate::on_both_databases!(
    a_same_site_page_cannot_grade_with_the_instructors_cookie,
    |db| {
        same_site_grade_forgery_is_refused(&db.app().await).await;
    }
);

/// The writes open to anyone, which no cookie authenticates; every other write in the OpenAPI
/// document must be behind the cross-site guard.
const OPEN_WRITES: [&str; 1] = ["post /api/scenarios/{id}/check"];

#[tokio::test]
async fn every_write_a_cookie_authenticates_is_behind_the_cross_site_guard() {
    let app = spawn_app().await;
    let (grader_cookie, _) = signed_in_instructor(&app).await;
    let (session_cookie, _) = app.new_student().await;
    let both = As::student(&format!("{session_cookie}; {grader_cookie}"));
    let document = app.get("/api/openapi.json", &As::nobody()).await.body;
    let paths = document["paths"]
        .as_object()
        .expect("the document has paths");
    let mut walked = Vec::new();
    let mut passed = Vec::new();
    for (path, operations) in paths {
        let operations = operations.as_object().expect("a path item");
        for method in ["post", "put", "patch", "delete"] {
            let Some(operation) = operations.get(method) else {
                continue;
            };
            let uri = path
                .replace("{id}", "safe-retry")
                .replace("{scenario}", "safe-retry")
                .replace("{student}", "s-0")
                .replace("{attempt}", "a-0")
                .replace("{account}", "nobody");
            assert!(
                !uri.contains('{'),
                "{path}: a parameter the walk does not fill"
            );
            let answer = app
                .send(
                    method.to_uppercase().parse().unwrap(),
                    &uri,
                    &both,
                    &[
                        ("host", "localhost:3000"),
                        ("sec-fetch-site", "same-site"),
                        ("origin", "http://evil.localhost:3000"),
                        ("content-type", "text/plain"),
                    ],
                    Some(b"{}".to_vec()),
                )
                .await;
            let what = format!("{method} {path}");
            if answer.status == StatusCode::FORBIDDEN
                && answer.code() == ErrorCode::CrossSiteRequest
            {
                assert!(answer.header("set-cookie").is_none(), "{what} set a cookie");
            } else {
                // A route outside the guard must be one that no cookie authenticates.
                assert!(
                    operation.get("security").is_none(),
                    "{what} is authenticated but answered {}: {}",
                    answer.status,
                    answer.text
                );
                passed.push(what.clone());
            }
            walked.push(what);
        }
    }
    assert!(
        walked.len() >= 12,
        "the walk found the document's writes: {walked:?}"
    );
    assert_eq!(passed, OPEN_WRITES, "the writes open to anyone");
}

#[tokio::test]
async fn a_planted_unprefixed_grader_cookie_does_not_lock_the_instructor_out() {
    let app = spawn_app().await;
    let (cookie, token) = signed_in_instructor(&app).await;
    let localhost = [("host", "localhost:3000")];
    let whoami = |cookie: String| {
        let app = &app;
        async move {
            app.send(
                Method::GET,
                "/api/instructor/session",
                &As::student(&cookie),
                &localhost,
                None,
            )
            .await
        }
    };
    // A sibling subdomain tosses `pb_grader` for the parent domain, before and after ours.
    for planted in [
        format!("pb_grader=pbt_planted; {cookie}"),
        format!("{cookie}; pb_grader=pbt_planted"),
    ] {
        let me = whoami(planted).await;
        assert_eq!(me.status, StatusCode::OK, "{}", me.text);
        assert_eq!(me.body["name"], "teacher");
    }
    // Alone, the unprefixed cookie counts for nothing here, even holding a real token.
    let alone = whoami(format!("pb_grader={token}")).await;
    assert_eq!(alone.status, StatusCode::UNAUTHORIZED, "{}", alone.text);
    // Signing in again with the planted cookie present works, and removes an unprefixed
    // cookie this host set.
    let again = app
        .send(
            Method::POST,
            "/api/instructor/session",
            &As::student("pb_grader=pbt_planted"),
            &localhost,
            Some(serde_json::to_vec(&json!({"token": token})).unwrap()),
        )
        .await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.text);
    let set: Vec<&str> = again
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert!(set[0].starts_with("__Host-pb_grader="), "{set:?}");
    assert!(
        set.iter()
            .any(|c| c.starts_with("pb_grader=;") && c.contains("Max-Age=0")),
        "{set:?}"
    );
    let fresh = again.cookie().unwrap();
    let me = whoami(format!("{fresh}; pb_grader=pbt_planted")).await;
    assert_eq!(me.status, StatusCode::OK, "{}", me.text);
    // On plain HTTP to a LAN address, where browsers refuse `__Host-`, the unprefixed cookie
    // is the one that counts.
    let lan = [("host", "192.168.1.20:3000")];
    let signed = app
        .send(
            Method::POST,
            "/api/instructor/session",
            &As::nobody(),
            &lan,
            Some(serde_json::to_vec(&json!({"token": token})).unwrap()),
        )
        .await;
    let plain = signed.cookie().unwrap();
    assert!(plain.starts_with("pb_grader="), "{plain}");
    let me = app
        .send(
            Method::GET,
            "/api/instructor/session",
            &As::student(&plain),
            &lan,
            None,
        )
        .await;
    assert_eq!(me.status, StatusCode::OK, "{}", me.text);
}

#[tokio::test]
async fn the_author_routes_refuse_a_host_that_is_not_the_servers_own() {
    let app = spawn_app_with(Config {
        author: true,
        public_url: Some("https://pipelines.example.edu".into()),
        ..Config::default()
    })
    .await;
    for uri in ["/api/author/status", "/api/author/scenarios/safe-retry"] {
        for host in ["rebind.attacker.example", "rebind.attacker.example:3000"] {
            let refused = app
                .send(Method::GET, uri, &As::nobody(), &[("host", host)], None)
                .await;
            assert_eq!(
                refused.status,
                StatusCode::MISDIRECTED_REQUEST,
                "{uri} {host}: {}",
                refused.text
            );
            assert_eq!(refused.code(), ErrorCode::UnexpectedHost);
            assert!(
                !refused.text.contains("reference_designs"),
                "{uri}: no answer leaks"
            );
        }
        for host in [
            "127.0.0.1:3000",
            "localhost:3000",
            "LOCALHOST",
            "[::1]:3000",
            "pipelines.example.edu",
        ] {
            let served = app
                .send(Method::GET, uri, &As::nobody(), &[("host", host)], None)
                .await;
            assert_eq!(
                served.status,
                StatusCode::OK,
                "{uri} {host}: {}",
                served.text
            );
        }
    }
    // The rest of the API answers to any name, as before.
    let open = app
        .send(
            Method::GET,
            "/api/scenarios",
            &As::nobody(),
            &[("host", "rebind.attacker.example")],
            None,
        )
        .await;
    assert_eq!(open.status, StatusCode::OK);
}
