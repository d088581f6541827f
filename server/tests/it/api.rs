//! The REST API through the router, without a socket: every route, every error code, each
//! Idempotency-Key case and the access rules.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use server::Config;

use crate::common::{
    failing_design, passing_design, spawn_app, spawn_app_with, As, TempDir, TestApp,
};
use server::error::ErrorCode;

// Sessions.

#[tokio::test]
async fn a_session_is_made_once_and_kept_in_an_http_only_cookie() {
    let app = spawn_app().await;
    let first = app
        .send(Method::POST, "/api/session", &As::nobody(), &[], None)
        .await;
    assert_eq!(first.status, StatusCode::CREATED);
    let set_cookie = first
        .header("set-cookie")
        .expect("a new session sets its cookie")
        .to_string();
    // Plain HTTP to a host that is not loopback: the unprefixed cookie, without Secure.
    assert!(set_cookie.starts_with("pb_session="), "{set_cookie}");
    assert!(
        first.body["student"].as_str().unwrap().starts_with("s-"),
        "{}",
        first.text
    );
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(
            set_cookie.contains(attribute),
            "{attribute} missing in {set_cookie}"
        );
    }
    assert!(
        !set_cookie.contains("Secure"),
        "plain HTTP must not get a Secure cookie: {set_cookie}"
    );
    assert_eq!(first.body["display_name"], Value::Null);

    let cookie = first.cookie().unwrap();
    let again = app.get("/api/session", &As::student(&cookie)).await;
    assert_eq!(again.body["student"], first.body["student"]);
    assert!(
        again.header("set-cookie").is_none(),
        "a known session is not set again"
    );
    let started_again = app
        .send(
            Method::POST,
            "/api/session",
            &As::student(&cookie),
            &[],
            None,
        )
        .await;
    assert_eq!(started_again.status, StatusCode::OK);
    assert_eq!(started_again.body["student"], first.body["student"]);
    assert!(
        started_again.header("set-cookie").is_none(),
        "starting a session the browser has keeps it"
    );
}

#[tokio::test]
async fn the_cookie_is_secure_behind_a_tls_proxy() {
    let app = spawn_app().await;
    let answer = app
        .send(
            Method::POST,
            "/api/session",
            &As::nobody(),
            &[("x-forwarded-proto", "https")],
            None,
        )
        .await;
    let cookie = answer.header("set-cookie").unwrap();
    assert!(cookie.starts_with("__Host-pb_session="), "{cookie}");
    assert!(cookie.contains("Secure"), "{cookie}");
}

#[tokio::test]
async fn a_display_name_can_be_set_and_removed() {
    let app = spawn_app().await;
    let (cookie, id) = app.new_student().await;
    let who = As::student(&cookie);
    let set = app
        .put("/api/session", &who, &json!({"display_name": "  Ada  "}))
        .await;
    assert_eq!(set.status, StatusCode::OK);
    assert_eq!(set.body, json!({"student": id, "display_name": "Ada"}));
    assert_eq!(
        app.get("/api/session", &who).await.body["display_name"],
        "Ada"
    );
    let too_long = app
        .put(
            "/api/session",
            &who,
            &json!({"display_name": "x".repeat(81)}),
        )
        .await;
    assert_eq!(too_long.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(too_long.code(), ErrorCode::InvalidRequest);
    assert_eq!(too_long.body["error"]["path"], "$.display_name");
    let removed = app
        .put("/api/session", &who, &json!({"display_name": null}))
        .await;
    assert_eq!(removed.body["display_name"], Value::Null);
}

#[tokio::test]
async fn a_cookie_naming_a_student_the_server_did_not_make_is_ignored() {
    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    // A grader names a student whose id has the shape of a session id.
    let forged = "s-00000000000000000000000000000001";
    let made = app.post("/api/submissions", &As::grader(&token), &json!({"scenario": "safe-retry", "student": forged, "design": passing_design("safe-retry")})).await;
    assert_eq!(made.status, StatusCode::CREATED);
    let answer = app
        .send(
            Method::POST,
            "/api/session",
            &As::student(&format!("pb_student={forged}")),
            &[],
            None,
        )
        .await;
    assert_eq!(answer.status, StatusCode::CREATED);
    assert_ne!(
        answer.body["student"], forged,
        "a hand-set cookie must not take over a grader-named student"
    );
    assert!(answer.header("set-cookie").is_some());
    for cookie in [
        format!("pb_student={forged}"),
        format!("pb_session={forged}"),
    ] {
        let list = app.get("/api/submissions", &As::student(&cookie)).await;
        assert_eq!(list.status, StatusCode::UNAUTHORIZED, "{}", list.text);
        assert_eq!(list.code(), ErrorCode::NoSession);
    }
}

// Scenarios.

#[tokio::test]
async fn the_catalogue_is_in_course_order_with_progress() {
    let app = spawn_app().await;
    let anonymous = app.get("/api/scenarios", &As::nobody()).await;
    assert_eq!(anonymous.status, StatusCode::OK);
    assert!(
        anonymous.header("set-cookie").is_none(),
        "reading the catalogue makes no session"
    );
    let list = anonymous.body.as_array().expect("an array").clone();
    assert!(!list.is_empty());
    assert_eq!(list[0]["id"], "safe-retry");
    let orders: Vec<u64> = list.iter().map(|s| s["order"].as_u64().unwrap()).collect();
    assert!(
        orders.windows(2).all(|w| w[0] < w[1]),
        "course order: {orders:?}"
    );
    for item in &list {
        assert_eq!(item["progress"], "not_tried");
        assert!(item["title"].is_string() && item["concepts"].is_array());
        let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 5, "{keys:?}");
    }

    let (cookie, _) = app.new_student().await;
    let who = As::student(&cookie);
    let second = list[1]["id"].as_str().unwrap().to_string();
    let third = list[2]["id"].as_str().unwrap().to_string();
    // An edit kept as a draft is not a try; a Check, passed or missed, is.
    app.put(
        &format!("/api/drafts/{third}"),
        &who,
        &json!({"design": {"nodes": []}}),
    )
    .await;
    let missed = app
        .post(
            "/api/submissions",
            &who,
            &json!({"scenario": second, "design": crate::common::scenario(&second).scenario().starting_design.clone()}),
        )
        .await;
    assert_eq!(missed.status, StatusCode::CREATED);
    let submitted = app
        .post(
            "/api/submissions",
            &who,
            &json!({"scenario": "safe-retry", "design": passing_design("safe-retry")}),
        )
        .await;
    assert_eq!(submitted.status, StatusCode::CREATED);
    let mine = app.get("/api/scenarios", &who).await.body;
    assert_eq!(mine[0]["progress"], "passed");
    assert_eq!(mine[1]["progress"], "tried");
    assert_eq!(mine[2]["progress"], "not_tried");
}

#[tokio::test]
async fn a_scenario_is_shown_without_its_answers() {
    let app = spawn_app().await;
    let answer = app.get("/api/scenarios/safe-retry", &As::nobody()).await;
    assert_eq!(answer.status, StatusCode::OK);
    let body = answer.body.as_object().unwrap();
    for hidden in ["reference_designs", "wrong_designs", "$schema"] {
        assert!(!body.contains_key(hidden), "{hidden} must not be shown");
    }
    for shown in [
        "id",
        "order",
        "title",
        "task",
        "concepts",
        "tables",
        "job",
        "runs",
        "failures",
        "palette",
        "starting_design",
        "requirements",
    ] {
        assert!(body.contains_key(shown), "{shown} missing");
    }
    for r in body["requirements"].as_array().unwrap() {
        for key in ["id", "text", "hint", "check"] {
            assert!(r.get(key).is_some(), "requirement without {key}: {r}");
        }
    }
}

#[tokio::test]
async fn an_unknown_scenario_is_404_everywhere() {
    let app = spawn_app().await;
    let (cookie, _) = app.new_student().await;
    let who = As::student(&cookie);
    for answer in [
        app.get("/api/scenarios/no-such", &As::nobody()).await,
        app.post(
            "/api/scenarios/no-such/check",
            &As::nobody(),
            &passing_design("safe-retry"),
        )
        .await,
        app.post(
            "/api/submissions",
            &who,
            &json!({"scenario": "no-such", "design": passing_design("safe-retry")}),
        )
        .await,
        app.get("/api/drafts/no-such", &who).await,
        app.put("/api/drafts/no-such", &who, &json!({"design": {}}))
            .await,
    ] {
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.text);
        assert_eq!(answer.code(), ErrorCode::UnknownScenario);
        assert!(answer.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no-such"));
    }
}

// The check.

#[tokio::test]
async fn the_check_answers_the_verdict_and_stores_nothing() {
    let app = spawn_app().await;
    let passed = app
        .post(
            "/api/scenarios/safe-retry/check",
            &As::nobody(),
            &passing_design("safe-retry"),
        )
        .await;
    assert_eq!(passed.status, StatusCode::OK);
    assert_eq!(passed.body["passed"], true);
    assert_eq!(passed.body["score"], passed.body["max_score"]);
    assert!(passed.body["scenario_hash"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    assert!(passed.body["schedules_explored"].as_u64().unwrap() > 1);
    assert!(
        passed.header("set-cookie").is_none(),
        "the check needs no session"
    );

    let missed = app
        .post(
            "/api/scenarios/safe-retry/check",
            &As::nobody(),
            &failing_design(),
        )
        .await;
    assert_eq!(missed.status, StatusCode::OK);
    assert_eq!(missed.body["passed"], false);
    let requirement = &missed.body["requirements"][0];
    assert_eq!(requirement["id"], "revenue-correct");
    assert_eq!(requirement["counterexample"]["expected"], "25.00");
    assert_eq!(requirement["counterexample"]["actual"], "50.00");
    assert!(!requirement["counterexample"]["trace"]
        .as_array()
        .unwrap()
        .is_empty());

    // The same design always gets the same verdict, byte for byte.
    let again = app
        .post(
            "/api/scenarios/safe-retry/check",
            &As::nobody(),
            &failing_design(),
        )
        .await;
    assert_eq!(again.text, missed.text);
    assert!(app
        .state
        .store()
        .list_attempts(None, None, 10)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn malformed_json_is_400() {
    let app = spawn_app().await;
    let answer = app
        .send(
            Method::POST,
            "/api/scenarios/safe-retry/check",
            &As::nobody(),
            &[],
            Some(b"{\"nodes\": [".to_vec()),
        )
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.code(), ErrorCode::MalformedJson);
    let empty = app
        .send(
            Method::POST,
            "/api/scenarios/safe-retry/check",
            &As::nobody(),
            &[],
            Some(Vec::new()),
        )
        .await;
    assert_eq!(empty.code(), ErrorCode::MalformedJson);
}

#[tokio::test]
async fn an_invalid_design_names_every_problem_with_its_path() {
    let app = spawn_app().await;
    let mut design = passing_design("safe-retry");
    design["nodes"][2]["options"]["write"] = json!("upsert_maybe");
    design["edges"]
        .as_array_mut()
        .unwrap()
        .push(json!({"from": "job", "to": "ghost"}));
    let answer = app
        .post("/api/scenarios/safe-retry/check", &As::nobody(), &design)
        .await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer.code(), ErrorCode::InvalidDesign);
    let details = answer.body["error"]["details"].as_array().unwrap();
    assert!(details.len() >= 2, "{details:?}");
    assert_eq!(answer.body["error"]["path"], details[0]["path"]);
    for d in details {
        assert!(d["path"].as_str().unwrap().starts_with("$."), "{d}");
        assert!(d["code"].is_string() && d["message"].is_string());
    }
    let not_object = app
        .post(
            "/api/scenarios/safe-retry/check",
            &As::nobody(),
            &json!([1, 2]),
        )
        .await;
    assert_eq!(not_object.code(), ErrorCode::InvalidDesign);
}

#[tokio::test]
async fn a_graph_too_large_is_refused() {
    let app = spawn_app().await;
    let nodes: Vec<Value> = (0..65)
        .map(|i| json!({"id": format!("t{i}"), "kind": "table", "options": {"table": "orders"}}))
        .collect();
    let answer = app
        .post(
            "/api/scenarios/safe-retry/check",
            &As::nobody(),
            &json!({"nodes": nodes, "edges": []}),
        )
        .await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer.code(), ErrorCode::GraphTooLarge);
    assert_eq!(answer.body["error"]["path"], "$.nodes");

    let edges: Vec<Value> = (0..257)
        .map(|_| json!({"from": "src", "to": "job"}))
        .collect();
    let mut design = passing_design("safe-retry");
    design["edges"] = json!(edges);
    let answer = app
        .post("/api/scenarios/safe-retry/check", &As::nobody(), &design)
        .await;
    assert_eq!(answer.code(), ErrorCode::GraphTooLarge);
    assert_eq!(answer.body["error"]["path"], "$.edges");
}

#[tokio::test]
async fn a_body_too_large_is_413() {
    let app = spawn_app().await;
    let big = format!(
        "{{\"nodes\": [], \"padding\": \"{}\"}}",
        "x".repeat(300 * 1024)
    );
    let (cookie, _) = app.new_student().await;
    for (uri, who) in [
        ("/api/scenarios/safe-retry/check", As::nobody()),
        ("/api/submissions", As::student(&cookie)),
    ] {
        let answer = app
            .send(Method::POST, uri, &who, &[], Some(big.clone().into_bytes()))
            .await;
        assert_eq!(
            answer.status,
            StatusCode::PAYLOAD_TOO_LARGE,
            "{uri}: {}",
            answer.text
        );
        assert_eq!(answer.code(), ErrorCode::BodyTooLarge);
    }
    let answer = app
        .send(
            Method::PUT,
            "/api/drafts/safe-retry",
            &As::student(&cookie),
            &[],
            Some(big.into_bytes()),
        )
        .await;
    assert_eq!(answer.code(), ErrorCode::BodyTooLarge);
}

#[tokio::test]
async fn the_body_limit_is_configurable() {
    let app = spawn_app_with(Config {
        body_limit_bytes: 64,
        ..Config::default()
    })
    .await;
    let answer = app
        .post(
            "/api/scenarios/safe-retry/check",
            &As::nobody(),
            &passing_design("safe-retry"),
        )
        .await;
    assert_eq!(answer.code(), ErrorCode::BodyTooLarge);
}

#[tokio::test]
async fn a_design_checked_again_gets_the_same_answer_without_running_the_simulator() {
    let app = spawn_app().await;
    let design = passing_design("safe-retry");
    let first = app
        .post("/api/scenarios/safe-retry/check", &As::nobody(), &design)
        .await;
    let again = app
        .post("/api/scenarios/safe-retry/check", &As::nobody(), &design)
        .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    assert_eq!(again.text, first.text, "the same bytes");
    let metrics = app.get("/metrics", &As::nobody()).await.text;
    assert!(
        metrics.contains("pipeline_builder_checks_cached_total{scenario=\"safe-retry\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "pipeline_builder_checks_total{scenario=\"safe-retry\",outcome=\"passed\"} 2"
        ),
        "{metrics}"
    );
    // Another design is checked anew.
    let mut other = design.clone();
    other["nodes"][0]["position"] = serde_json::json!({"x": 1.0, "y": 2.0});
    let third = app
        .post("/api/scenarios/safe-retry/check", &As::nobody(), &other)
        .await;
    let third_metrics = app.get("/metrics", &As::nobody()).await.text;
    assert_eq!(third.status, StatusCode::OK);
    assert!(
        third_metrics.contains("pipeline_builder_checks_cached_total{scenario=\"safe-retry\"} 1"),
        "{third_metrics}"
    );

    let uncached = spawn_app_with(Config {
        verdict_cache_bytes: 0,
        ..Config::default()
    })
    .await;
    for _ in 0..2 {
        let answer = uncached
            .post("/api/scenarios/safe-retry/check", &As::nobody(), &design)
            .await;
        assert_eq!(answer.text, first.text);
    }
    let metrics = uncached.get("/metrics", &As::nobody()).await.text;
    assert!(
        !metrics.contains("pipeline_builder_checks_cached_total{"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_check_whose_advisories_pass_the_inline_limits_starts_again_with_the_same_verdict() {
    let scenario = shared::Scenario::from_json(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scenarios/exactly-once.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let design = scenario.reference_designs[0].design.clone();
    let whole = spawn_app()
        .await
        .post("/api/scenarios/exactly-once/check", &As::nobody(), &design)
        .await;
    let verdict: shared::Verdict = serde_json::from_str(&whole.text).unwrap();
    assert!(!verdict.advisories.missed.is_empty(), "{}", whole.text);
    // Enough for the graded check, not for the advisory's wider failures.
    let inline_check_limits = shared::Limits {
        max_schedules: verdict.schedules_explored,
        max_steps: u64::MAX,
    };
    let compiled = shared::Compiled::new(scenario.clone()).unwrap();
    let valid = shared::validate_json(&compiled, &design).unwrap();
    let cut = shared::check_with(&compiled, &valid, inline_check_limits).unwrap();
    assert!(cut.cut_short(), "{:?}", cut.advisories);
    let pooled = spawn_app_with(Config {
        inline_check_limits,
        ..Config::default()
    })
    .await;
    let answer = pooled
        .post("/api/scenarios/exactly-once/check", &As::nobody(), &design)
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert_eq!(answer.text, whole.text);
}

#[tokio::test]
async fn a_check_past_the_inline_limits_starts_again_in_the_pool_with_the_same_verdict() {
    let design = passing_design("safe-retry");
    let inline = spawn_app()
        .await
        .post("/api/scenarios/safe-retry/check", &As::nobody(), &design)
        .await;
    let inline_check_limits = shared::Limits {
        max_schedules: 2,
        max_steps: 10,
    };
    let pooled = spawn_app_with(Config {
        inline_check_limits,
        ..Config::default()
    })
    .await;
    let answer = pooled
        .post("/api/scenarios/safe-retry/check", &As::nobody(), &design)
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert_eq!(answer.text, inline.text);
    let metrics = pooled.get("/metrics", &As::nobody()).await.text;
    assert!(
        metrics.contains(
            "pipeline_builder_checks_total{scenario=\"safe-retry\",outcome=\"passed\"} 1"
        ),
        "counted once: {metrics}"
    );
}

#[tokio::test]
async fn a_check_beyond_its_limits_is_check_too_large() {
    let limits = shared::Limits {
        max_schedules: 2,
        ..shared::Limits::default()
    };
    let app = spawn_app_with(Config {
        check_limits: limits,
        ..Config::default()
    })
    .await;
    let answer = app
        .post(
            "/api/scenarios/safe-retry/check",
            &As::nobody(),
            &passing_design("safe-retry"),
        )
        .await;
    assert_eq!(
        answer.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        answer.text
    );
    assert_eq!(answer.code(), ErrorCode::CheckTooLarge);
    let metrics = app.get("/metrics", &As::nobody()).await.text;
    assert!(
        metrics.contains(
            "pipeline_builder_checks_total{scenario=\"safe-retry\",outcome=\"too_large\"} 1"
        ),
        "{metrics}"
    );
}

#[test]
fn a_check_beyond_the_simulators_limits_is_check_too_large() {
    let error = server::checker::check_error(shared::CheckError::TooLarge {
        schedules: 2_000_000,
        limit: "the limit of 2000000 schedules".into(),
    });
    assert_eq!(error.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error.code, ErrorCode::CheckTooLarge);
    assert!(error.message.contains("2000000"));
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_json_errors() {
    let app = spawn_app().await;
    let missing = app.get("/api/no-such-thing", &As::nobody()).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.code(), ErrorCode::NotFound);
    let wrong_method = app
        .send(Method::DELETE, "/api/scenarios", &As::nobody(), &[], None)
        .await;
    assert_eq!(wrong_method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong_method.code(), ErrorCode::MethodNotAllowed);
    assert!(wrong_method.header("allow").is_some());
    let (cookie, _) = app.new_student().await;
    let bad_query = app
        .get("/api/submissions?limit=many", &As::student(&cookie))
        .await;
    assert_eq!(bad_query.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad_query.code(), ErrorCode::BadRequest);
    assert!(
        bad_query.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit"),
        "{}",
        bad_query.text
    );
    let no_app = app.get("/scenarios/safe-retry", &As::nobody()).await;
    assert_eq!(no_app.code(), ErrorCode::NotFound);
}

// Submissions and access rules.

#[tokio::test]
async fn a_student_submits_for_themself_and_reads_only_their_own() {
    let app = spawn_app().await;
    let (alice_cookie, alice) = app.new_student().await;
    let (bob_cookie, bob) = app.new_student().await;
    let as_alice = As::student(&alice_cookie);
    let as_bob = As::student(&bob_cookie);

    let created = app
        .post(
            "/api/submissions",
            &as_alice,
            &json!({"scenario": "safe-retry", "design": failing_design()}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let keys: Vec<&str> = created
        .body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in [
        "id",
        "scenario",
        "student",
        "created_at",
        "score",
        "max_score",
        "passed",
        "verdict",
    ] {
        assert!(keys.contains(&key), "{key} missing in {keys:?}");
    }
    assert_eq!(created.body["student"], alice);
    assert_eq!(created.body["passed"], false);
    assert_eq!(created.body["verdict"]["scenario"], "safe-retry");
    let id = created.body["id"].as_str().unwrap().to_string();
    assert_eq!(
        created.header("location"),
        Some(format!("/api/submissions/{id}").as_str())
    );

    let own = app.get(&format!("/api/submissions/{id}"), &as_alice).await;
    assert_eq!(own.status, StatusCode::OK);
    assert_eq!(own.body["verdict"], created.body["verdict"]);
    assert_eq!(own.body["design"], failing_design());

    let theirs = app.get(&format!("/api/submissions/{id}"), &as_bob).await;
    assert_eq!(theirs.status, StatusCode::FORBIDDEN);
    assert_eq!(theirs.code(), ErrorCode::Forbidden);

    let unknown = app.get("/api/submissions/no-such-id", &as_alice).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.code(), ErrorCode::UnknownSubmission);

    let for_bob = app
        .post(
            "/api/submissions",
            &as_alice,
            &json!({"scenario": "safe-retry", "student": bob, "design": failing_design()}),
        )
        .await;
    assert_eq!(for_bob.status, StatusCode::FORBIDDEN);
    assert_eq!(for_bob.code(), ErrorCode::Forbidden);
    let for_self = app.post("/api/submissions", &as_alice, &json!({"scenario": "safe-retry", "student": alice, "design": passing_design("safe-retry")})).await;
    assert_eq!(for_self.status, StatusCode::CREATED);

    let list = app.get("/api/submissions", &as_alice).await;
    assert_eq!(list.status, StatusCode::OK);
    let list = list.body.as_array().unwrap().clone();
    assert_eq!(list.len(), 2);
    assert!(list.iter().all(|s| s["student"] == alice));
    assert_eq!(list[0]["passed"], true, "newest first");
    assert!(list[0].get("verdict").is_none(), "lists carry no verdicts");

    assert_eq!(app.get("/api/submissions", &as_bob).await.body, json!([]));
    let peek = app
        .get(&format!("/api/submissions?student={alice}"), &as_bob)
        .await;
    assert_eq!(peek.status, StatusCode::FORBIDDEN);
    let filtered = app
        .get("/api/submissions?scenario=safe-rerun", &as_alice)
        .await;
    assert_eq!(filtered.body, json!([]));
}

#[tokio::test]
async fn a_submission_with_a_bad_body_gets_its_own_code() {
    let app = spawn_app().await;
    let (cookie, _) = app.new_student().await;
    let who = As::student(&cookie);
    let missing = app
        .post("/api/submissions", &who, &json!({"scenario": "safe-retry"}))
        .await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(missing.code(), ErrorCode::InvalidRequest);
    let invalid = app
        .post(
            "/api/submissions",
            &who,
            &json!({"scenario": "safe-retry", "design": {"nodes": "no"}}),
        )
        .await;
    assert_eq!(invalid.code(), ErrorCode::InvalidDesign);
    let malformed = app
        .send(
            Method::POST,
            "/api/submissions",
            &who,
            &[],
            Some(b"nope".to_vec()),
        )
        .await;
    assert_eq!(malformed.code(), ErrorCode::MalformedJson);
    assert!(app
        .state
        .store()
        .list_attempts(None, None, 10)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_grader_submits_for_any_student_and_sees_all() {
    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    let grader = As::grader(&token);
    let no_student = app
        .post(
            "/api/submissions",
            &grader,
            &json!({"scenario": "safe-retry", "design": failing_design()}),
        )
        .await;
    assert_eq!(no_student.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(no_student.body["error"]["path"], "$.student");
    let made = app.post("/api/submissions", &grader, &json!({"scenario": "safe-retry", "student": "lms-42", "design": passing_design("safe-retry")})).await;
    assert_eq!(made.status, StatusCode::CREATED);
    assert_eq!(made.body["student"], "lms-42");
    assert_eq!(made.body["score"], made.body["max_score"]);

    let (cookie, _) = app.new_student().await;
    app.post(
        "/api/submissions",
        &As::student(&cookie),
        &json!({"scenario": "safe-retry", "design": failing_design()}),
    )
    .await;
    let all = app.get("/api/submissions", &grader).await;
    assert_eq!(all.body.as_array().unwrap().len(), 2);
    let one = app
        .get(
            "/api/submissions?student=lms-42&scenario=safe-retry",
            &grader,
        )
        .await;
    assert_eq!(one.body.as_array().unwrap().len(), 1);
    let id = made.body["id"].as_str().unwrap();
    assert_eq!(
        app.get(&format!("/api/submissions/{id}"), &grader)
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn bad_missing_and_revoked_tokens_are_401() {
    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    let item = json!([{"scenario": "safe-retry", "student": "s1", "design": passing_design("safe-retry")}]);

    let without = app.post("/api/grade", &As::nobody(), &item).await;
    assert_eq!(without.status, StatusCode::UNAUTHORIZED);
    assert_eq!(without.code(), ErrorCode::Unauthorized);
    let wrong = app
        .post("/api/grade", &As::grader("pbt_not-a-token"), &item)
        .await;
    assert_eq!(wrong.code(), ErrorCode::Unauthorized);
    let basic = app
        .send(
            Method::POST,
            "/api/grade",
            &As::nobody(),
            &[("authorization", "Basic dGE6dGE=")],
            Some(item.to_string().into_bytes()),
        )
        .await;
    assert_eq!(basic.code(), ErrorCode::Unauthorized);
    let bad_submission = app
        .post(
            "/api/submissions",
            &As::grader("pbt_wrong"),
            &json!({"scenario": "safe-retry", "student": "x", "design": {}}),
        )
        .await;
    assert_eq!(bad_submission.status, StatusCode::UNAUTHORIZED);
    let bad_list = app.get("/api/submissions", &As::grader("pbt_wrong")).await;
    assert_eq!(bad_list.status, StatusCode::UNAUTHORIZED);

    assert_eq!(
        app.post("/api/grade", &As::grader(&token), &item)
            .await
            .status,
        StatusCode::OK
    );
    assert!(app.state.store().revoke_token("ta").await.unwrap());
    let revoked = app.post("/api/grade", &As::grader(&token), &item).await;
    assert_eq!(revoked.status, StatusCode::UNAUTHORIZED);
    assert_eq!(revoked.code(), ErrorCode::Unauthorized);

    // A student cookie is no grader token.
    let (cookie, _) = app.new_student().await;
    assert_eq!(
        app.post("/api/grade", &As::student(&cookie), &item)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
}

// Idempotency keys.

async fn submit_with_key(
    app: &TestApp,
    who: &As,
    key: &str,
    body: &Value,
) -> crate::common::Answer {
    app.send(
        Method::POST,
        "/api/submissions",
        who,
        &[("idempotency-key", key)],
        Some(serde_json::to_vec(body).unwrap()),
    )
    .await
}

#[tokio::test]
async fn the_same_key_and_body_answer_the_stored_answer_and_record_once() {
    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    let grader = As::grader(&token);
    let body = json!({"scenario": "safe-retry", "student": "lms-1", "design": failing_design()});
    let first = submit_with_key(&app, &grader, "key-1", &body).await;
    assert_eq!(first.status, StatusCode::CREATED);
    assert!(first.header("idempotent-replayed").is_none());
    // Key order and spacing do not make another request.
    let reordered = serde_json::to_vec_pretty(
        &json!({"design": failing_design(), "student": "lms-1", "scenario": "safe-retry"}),
    )
    .unwrap();
    let second = app
        .send(
            Method::POST,
            "/api/submissions",
            &grader,
            &[("idempotency-key", "key-1")],
            Some(reordered),
        )
        .await;
    assert_eq!(second.status, StatusCode::CREATED);
    assert_eq!(second.header("idempotent-replayed"), Some("true"));
    assert_eq!(second.body, first.body);
    assert_eq!(
        app.state
            .store()
            .list_attempts(None, None, 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn the_same_key_with_another_body_is_422() {
    let app = spawn_app().await;
    let (cookie, _) = app.new_student().await;
    let who = As::student(&cookie);
    let first = submit_with_key(
        &app,
        &who,
        "k",
        &json!({"scenario": "safe-retry", "design": failing_design()}),
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED);
    let other = submit_with_key(
        &app,
        &who,
        "k",
        &json!({"scenario": "safe-retry", "design": passing_design("safe-retry")}),
    )
    .await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(other.code(), ErrorCode::IdempotencyKeyReused);
    assert_eq!(
        app.state
            .store()
            .list_attempts(None, None, 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn the_same_key_while_the_first_request_runs_is_409() {
    let app = spawn_app().await;
    let (cookie, student) = app.new_student().await;
    let who = As::student(&cookie);
    let body = json!({"scenario": "safe-retry", "design": failing_design()});
    // The first request has claimed the key and is still checking.
    let fingerprint_body = serde_json::to_vec(&body).unwrap();
    let claim = app
        .state
        .store()
        .claim_idempotency_key(
            &format!("student:{student}"),
            "busy",
            &server::routes::submissions::fingerprint("POST /api/submissions", &fingerprint_body),
            std::time::Duration::from_secs(600),
        )
        .await
        .unwrap();
    assert_eq!(claim, server::store::Claim::Started);
    let answer = submit_with_key(&app, &who, "busy", &body).await;
    assert_eq!(answer.status, StatusCode::CONFLICT);
    assert_eq!(answer.code(), ErrorCode::IdempotencyKeyInFlight);
    assert_eq!(answer.header("retry-after"), Some("1"));
    assert!(app
        .state
        .store()
        .list_attempts(None, None, 10)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn an_abandoned_in_flight_key_is_taken_over_after_the_stale_window() {
    let app = spawn_app_with(Config {
        idempotency_lease: std::time::Duration::from_millis(50),
        ..Config::default()
    })
    .await;
    let (cookie, student) = app.new_student().await;
    let body = json!({"scenario": "safe-retry", "design": failing_design()});
    let fp = server::routes::submissions::fingerprint(
        "POST /api/submissions",
        &serde_json::to_vec(&body).unwrap(),
    );
    app.state
        .store()
        .claim_idempotency_key(
            &format!("student:{student}"),
            "dead",
            &fp,
            std::time::Duration::from_secs(600),
        )
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(120)).await;
    let answer = submit_with_key(&app, &As::student(&cookie), "dead", &body).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);
}

#[tokio::test]
async fn an_error_answer_is_replayed_too() {
    let app = spawn_app().await;
    let (cookie, _) = app.new_student().await;
    let who = As::student(&cookie);
    let body =
        json!({"scenario": "safe-retry", "design": {"nodes": [{"id": "x", "kind": "bogus"}]}});
    let first = submit_with_key(&app, &who, "err", &body).await;
    assert_eq!(first.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(first.code(), ErrorCode::InvalidDesign);
    let again = submit_with_key(&app, &who, "err", &body).await;
    assert_eq!(again.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.body, first.body);
}

#[tokio::test]
async fn keys_are_scoped_per_caller() {
    let app = spawn_app().await;
    let (a, _) = app.new_student().await;
    let (b, _) = app.new_student().await;
    let body = json!({"scenario": "safe-retry", "design": failing_design()});
    let first = submit_with_key(&app, &As::student(&a), "same", &body).await;
    let second = submit_with_key(&app, &As::student(&b), "same", &body).await;
    assert_eq!(first.status, StatusCode::CREATED);
    assert_eq!(second.status, StatusCode::CREATED);
    assert!(second.header("idempotent-replayed").is_none());
    assert_ne!(first.body["id"], second.body["id"]);
}

#[tokio::test]
async fn a_bad_idempotency_key_is_400() {
    let app = spawn_app().await;
    let (cookie, _) = app.new_student().await;
    let long = "k".repeat(256);
    let answer = submit_with_key(
        &app,
        &As::student(&cookie),
        &long,
        &json!({"scenario": "safe-retry", "design": failing_design()}),
    )
    .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.code(), ErrorCode::InvalidIdempotencyKey);
}

// Grading.

fn class() -> Value {
    json!([
        {"scenario": "safe-retry", "student": "ada", "design": passing_design("safe-retry")},
        {"scenario": "no-such", "student": "bob", "design": passing_design("safe-retry")},
        {"scenario": "safe-retry", "student": "cy", "design": failing_design()},
        {"scenario": "safe-retry", "student": "dee", "design": {"nodes": [{"id": "x", "kind": "bogus"}]}},
        {"student": "eve"},
    ])
}

#[tokio::test]
async fn grading_answers_one_result_per_item_in_order() {
    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    let answer = app.post("/api/grade", &As::grader(&token), &class()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let results = answer.body.as_array().unwrap();
    assert_eq!(results.len(), 5);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["index"], i);
    }
    assert_eq!(results[0]["student"], "ada");
    assert_eq!(results[0]["passed"], true);
    assert!(results[0]["id"].is_string() && results[0]["verdict"].is_object());
    assert_eq!(
        results[1]["error"]["code"],
        ErrorCode::UnknownScenario.as_str()
    );
    assert_eq!(results[2]["student"], "cy");
    assert_eq!(results[2]["score"], 0);
    assert_eq!(results[2]["max_score"], 3);
    assert_eq!(
        results[3]["error"]["code"],
        ErrorCode::InvalidDesign.as_str()
    );
    // Paths point into the body that was sent: the item's design.
    assert_eq!(results[3]["error"]["path"], "$[3].design.nodes[0].kind");
    assert_eq!(
        results[3]["error"]["details"][0]["path"],
        "$[3].design.nodes[0].kind"
    );
    assert_eq!(results[3]["student"], "dee");
    assert_eq!(results[4]["student"], "eve");
    assert_eq!(
        results[4]["error"]["code"],
        ErrorCode::InvalidRequest.as_str()
    );
    // The good items are recorded.
    assert_eq!(
        app.state
            .store()
            .list_attempts(None, None, 10)
            .await
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn grading_in_gradescope_shape_has_one_test_per_requirement() {
    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    let answer = app
        .post(
            "/api/grade?format=gradescope",
            &As::grader(&token),
            &class(),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let results = answer.body.as_array().unwrap();
    assert_eq!(results.len(), 5);
    let passed = &results[0];
    assert_eq!(passed["score"], 3);
    assert_eq!(passed["extra_data"]["max_score"], 3);
    assert_eq!(passed["extra_data"]["student"], "ada");
    let missed = &results[2];
    let tests = missed["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 3);
    for t in tests {
        for key in [
            "name",
            "score",
            "max_score",
            "status",
            "output",
            "output_format",
        ] {
            assert!(t.get(key).is_some(), "{key} missing in {t}");
        }
        assert_eq!(t["output_format"], "md");
        assert_eq!(t["max_score"], 1);
    }
    assert_eq!(tests[0]["status"], "failed");
    assert_eq!(tests[0]["score"], 0);
    let output = tests[0]["output"].as_str().unwrap();
    assert!(
        output.contains("**Expected** `25.00`, **actual** `50.00`"),
        "{output}"
    );
    assert!(output.contains("```text"), "{output}");
    // An item that could not be graded is a result too: score 0 and why.
    assert_eq!(results[1]["score"], 0);
    assert_eq!(
        results[1]["extra_data"]["error"]["code"],
        ErrorCode::UnknownScenario.as_str()
    );
    assert_eq!(results[1]["extra_data"]["index"], 1);
    assert_eq!(results[1]["extra_data"]["student"], "bob");

    let unknown_format = app
        .post("/api/grade?format=xml", &As::grader(&token), &class())
        .await;
    assert_eq!(unknown_format.code(), ErrorCode::InvalidRequest);
    assert_eq!(unknown_format.body["error"]["path"], "?format");
    let not_array = app
        .post(
            "/api/grade",
            &As::grader(&token),
            &json!({"scenario": "safe-retry"}),
        )
        .await;
    assert_eq!(not_array.code(), ErrorCode::InvalidRequest);
}

#[tokio::test]
async fn grading_caps_the_number_of_items() {
    let app = spawn_app_with(Config {
        grade_items_max: 2,
        ..Config::default()
    })
    .await;
    let token = app.grader_token("ta").await;
    let answer = app.post("/api/grade", &As::grader(&token), &class()).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(answer.code(), ErrorCode::InvalidRequest);
}

// Drafts.

#[tokio::test]
async fn a_draft_round_trips_for_its_student_only() {
    let app = spawn_app().await;
    let (cookie, _) = app.new_student().await;
    let who = As::student(&cookie);
    let none = app.get("/api/drafts/safe-retry", &who).await;
    assert_eq!(none.status, StatusCode::NOT_FOUND);
    assert_eq!(none.code(), ErrorCode::NoDraft);

    // A draft may be unfinished and invalid.
    let draft =
        json!({"nodes": [{"id": "job", "kind": "batch_job", "options": {"transaction": "maybe"}}]});
    let saved = app
        .put("/api/drafts/safe-retry", &who, &json!({"design": draft}))
        .await;
    assert_eq!(saved.status, StatusCode::OK);
    assert_eq!(saved.body["scenario"], "safe-retry");
    assert_eq!(saved.body["design"], draft);
    assert!(saved.body["updated_at"].is_string());
    let read = app.get("/api/drafts/safe-retry", &who).await;
    assert_eq!(read.body["design"], draft);

    let newer = json!({"nodes": [], "edges": []});
    app.put("/api/drafts/safe-retry", &who, &json!({"design": newer}))
        .await;
    assert_eq!(
        app.get("/api/drafts/safe-retry", &who).await.body["design"],
        newer
    );

    let (other, _) = app.new_student().await;
    assert_eq!(
        app.get("/api/drafts/safe-retry", &As::student(&other))
            .await
            .code(),
        ErrorCode::NoDraft
    );

    let not_object = app
        .put("/api/drafts/safe-retry", &who, &json!({"design": [1]}))
        .await;
    assert_eq!(not_object.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(not_object.body["error"]["path"], "$.design");

    // A browser without a session has no drafts, and gets no session from asking.
    let fresh = app.get("/api/drafts/safe-retry", &As::nobody()).await;
    assert_eq!(fresh.code(), ErrorCode::NoSession);
    assert!(fresh.header("set-cookie").is_none());
}

// Operations.

#[tokio::test]
async fn the_openapi_document_covers_every_route() {
    let app = spawn_app().await;
    let answer = app.get("/api/openapi.json", &As::nobody()).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.body["openapi"].as_str().unwrap().starts_with("3."));
    let paths = answer.body["paths"].as_object().unwrap();
    for (path, methods) in [
        ("/api/session", &["get", "post", "put"][..]),
        ("/api/scenarios", &["get"]),
        ("/api/scenarios/{id}", &["get"]),
        ("/api/scenarios/{id}/check", &["post"]),
        ("/api/submissions", &["get", "post"]),
        ("/api/submissions/{id}", &["get"]),
        ("/api/grade", &["post"]),
        ("/api/drafts/{scenario}", &["get", "put"]),
        ("/api/openapi.json", &["get"]),
        ("/healthz", &["get"]),
        ("/readyz", &["get"]),
        ("/metrics", &["get"]),
        ("/api/session/classes", &["get"]),
        ("/api/classes", &["get", "post"]),
        ("/api/classes/join", &["post"]),
        ("/api/classes/{id}", &["get", "patch"]),
        ("/api/classes/{id}/close", &["post"]),
        ("/api/classes/{id}/reopen", &["post"]),
        ("/api/classes/{id}/matrix", &["get"]),
        ("/api/classes/{id}/missed", &["get"]),
        ("/api/classes/{id}/attempts", &["get"]),
        ("/api/classes/{id}/attempts/{attempt}", &["get"]),
        ("/api/classes/{id}/students/{student}/attempts", &["get"]),
        ("/api/regrade", &["post"]),
        ("/api/instructor/session", &["get", "post", "delete"]),
        ("/api/classes/{id}/staff", &["get"]),
        ("/api/classes/{id}/staff/{account}", &["put", "delete"]),
        ("/api/classes/{id}/audit", &["get"]),
        ("/api/classes/{id}/gradebook", &["get"]),
        (
            "/api/classes/{id}/students/{student}/scores/{scenario}",
            &["put", "delete"],
        ),
    ] {
        for m in methods {
            assert!(
                paths.get(path).and_then(|p| p.get(*m)).is_some(),
                "{m} {path} missing from the OpenAPI document"
            );
        }
    }
    assert_eq!(
        paths.len(),
        33,
        "a route was added without documenting it, or the other way round"
    );
    let location = |path: &str, method: &str, name: &str| -> String {
        let params = paths[path][method]["parameters"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let found = params
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{method} {path} has no parameter {name}"));
        found["in"].as_str().unwrap().to_string()
    };
    assert_eq!(location("/api/grade", "post", "format"), "query");
    assert_eq!(location("/api/submissions", "get", "student"), "query");
    assert_eq!(
        location("/api/submissions", "post", "Idempotency-Key"),
        "header"
    );
    assert_eq!(location("/api/submissions/{id}", "get", "id"), "path");
    let schemas = answer.body["components"]["schemas"].as_object().unwrap();
    for name in [
        "ErrorBody",
        "Verdict",
        "Submission",
        "GradeItem",
        "GradeEntry",
        "GradescopeResult",
        "ScenarioSummary",
        "DraftAnswer",
    ] {
        assert!(schemas.contains_key(name), "schema {name} missing");
    }
    let text = answer.text;
    for code in [
        ErrorCode::MalformedJson.as_str(),
        ErrorCode::UnknownScenario.as_str(),
        ErrorCode::BodyTooLarge.as_str(),
        ErrorCode::GraphTooLarge.as_str(),
        ErrorCode::CheckTooLarge.as_str(),
        ErrorCode::IdempotencyKeyReused.as_str(),
        ErrorCode::IdempotencyKeyInFlight.as_str(),
        ErrorCode::Unauthorized.as_str(),
        ErrorCode::Forbidden.as_str(),
    ] {
        assert!(text.contains(code), "the document never mentions {code}");
    }
}

#[tokio::test]
async fn health_readiness_and_a_broken_database() {
    let app = spawn_app().await;
    assert_eq!(
        app.get("/healthz", &As::nobody()).await.body,
        json!({"status": "ok"})
    );
    assert_eq!(
        app.get("/readyz", &As::nobody()).await.status,
        StatusCode::OK
    );
    app.state.store().close().await;
    let broken = app.get("/readyz", &As::nobody()).await;
    assert_eq!(broken.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(broken.code(), ErrorCode::DatabaseUnavailable);
    assert_eq!(broken.header("retry-after"), Some("2"));
    assert_eq!(
        app.get("/healthz", &As::nobody()).await.status,
        StatusCode::OK,
        "liveness does not depend on the database"
    );
    let session = app
        .send(Method::POST, "/api/session", &As::nobody(), &[], None)
        .await;
    assert_eq!(session.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        !session.text.contains("pool"),
        "no internal detail in the body: {}",
        session.text
    );
}

#[tokio::test]
async fn metrics_count_requests_checks_and_schedules() {
    let app = spawn_app().await;
    app.post(
        "/api/scenarios/safe-retry/check",
        &As::nobody(),
        &passing_design("safe-retry"),
    )
    .await;
    app.post(
        "/api/scenarios/safe-retry/check",
        &As::nobody(),
        &failing_design(),
    )
    .await;
    app.get("/api/scenarios/nope", &As::nobody()).await;
    let answer = app.get("/metrics", &As::nobody()).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer
        .header("content-type")
        .unwrap()
        .starts_with("text/plain"));
    let text = answer.text;
    for line in [
        "pipeline_builder_http_requests_total{method=\"POST\",route=\"/api/scenarios/{id}/check\",status=\"200\"} 2",
        "pipeline_builder_http_requests_total{method=\"GET\",route=\"/api/scenarios/{id}\",status=\"404\"} 1",
        "pipeline_builder_checks_total{scenario=\"safe-retry\",outcome=\"passed\"} 1",
        "pipeline_builder_checks_total{scenario=\"safe-retry\",outcome=\"missed\"} 1",
        "# TYPE pipeline_builder_http_request_duration_seconds histogram",
        "pipeline_builder_http_request_duration_seconds_bucket{method=\"POST\",route=\"/api/scenarios/{id}/check\",le=\"+Inf\"} 2",
    ] {
        assert!(text.contains(line), "missing: {line}\n{text}");
    }
    assert!(text.contains("pipeline_builder_schedules_explored_total{scenario=\"safe-retry\"}"));
}

#[tokio::test]
async fn the_web_app_is_served_with_index_html_for_client_routes() {
    let web = TempDir::new("web");
    std::fs::write(
        web.path().join("index.html"),
        "<!doctype html><title>Pipeline Builder</title>",
    )
    .unwrap();
    std::fs::write(web.path().join("app.js"), "console.log('hi')").unwrap();
    let app = spawn_app_with(Config {
        static_dir: Some(web.path().to_path_buf()),
        ..Config::default()
    })
    .await;
    let root = app.get("/", &As::nobody()).await;
    assert_eq!(root.status, StatusCode::OK);
    assert!(root.text.contains("Pipeline Builder"));
    let route = app.get("/scenarios/safe-retry", &As::nobody()).await;
    assert_eq!(route.status, StatusCode::OK);
    assert!(route.text.contains("Pipeline Builder"));
    let file = app.get("/app.js", &As::nobody()).await;
    assert_eq!(file.status, StatusCode::OK);
    assert!(file.text.contains("console.log"));
    let api = app.get("/api/nope", &As::nobody()).await;
    assert_eq!(api.status, StatusCode::NOT_FOUND);
    assert_eq!(api.code(), ErrorCode::NotFound);
    // Without a staff page, the instructor's routes load index.html too.
    let instructor = app.get("/instructor", &As::nobody()).await;
    assert_eq!(instructor.status, StatusCode::OK);
    assert!(instructor.text.contains("Pipeline Builder"));
}

#[tokio::test]
async fn the_instructors_and_authors_routes_load_the_staff_page() {
    let web = TempDir::new("web");
    std::fs::write(web.path().join("index.html"), "<title>student</title>").unwrap();
    std::fs::write(web.path().join("staff.html"), "<title>staff</title>").unwrap();
    let app = spawn_app_with(Config {
        static_dir: Some(web.path().to_path_buf()),
        ..Config::default()
    })
    .await;
    for path in [
        "/instructor",
        "/instructor/",
        "/instructor/classes/c1",
        "/instructor/classes/c1/students/s1",
        "/instructor/classes/c1/attempts/a1",
        "/author",
        "/author/safe-retry",
    ] {
        let page = app.get(path, &As::nobody()).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        assert_eq!(page.text, "<title>staff</title>", "{path}");
    }
    for path in [
        "/",
        "/scenarios/safe-retry",
        "/join/ABCD",
        "/instructors",
        "/authority/x",
        "/nothing/here",
    ] {
        let page = app.get(path, &As::nobody()).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        assert_eq!(page.text, "<title>student</title>", "{path}");
    }
    assert_eq!(
        server::embedded::page_for("/instructor/classes/c1"),
        "staff.html"
    );
    assert_eq!(server::embedded::page_for("author"), "staff.html");
    assert_eq!(server::embedded::page_for("/scenarios/x"), "index.html");
}

#[tokio::test]
async fn every_answer_carries_a_request_id() {
    let app = spawn_app().await;
    let answer = app.get("/healthz", &As::nobody()).await;
    assert!(answer.header("x-request-id").is_some());
    let given = app
        .send(
            Method::GET,
            "/healthz",
            &As::nobody(),
            &[("x-request-id", "abc-123")],
            None,
        )
        .await;
    assert_eq!(given.header("x-request-id"), Some("abc-123"));
}

/// Bodies a careless or hostile client might send; none may cause a 5xx, on either database.
async fn hostile_requests_never_cause_a_5xx(app: &TestApp) {
    let (cookie, _) = app.new_student().await;
    let token = app.grader_token("ta").await;
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    // A valid design whose node id holds a NUL: it passes the check, so only the guard at
    // the edge keeps it out of PostgreSQL.
    let with_nul: Value = serde_json::from_str(
        &passing_design("safe-retry")
            .to_string()
            .replace("\"src\"", "\"s\\u0000rc\""),
    )
    .unwrap();
    assert_eq!(
        app.post("/api/scenarios/safe-retry/check", &As::nobody(), &with_nul)
            .await
            .body["passed"],
        true
    );
    let bodies: Vec<Vec<u8>> = vec![
        deep.into_bytes(),
        b"null".to_vec(),
        b"\"text\"".to_vec(),
        vec![0xff, 0xfe, 0x00],
        serde_json::to_vec(&json!({"nodes": [{"id": "", "kind": "table", "options": {"key": [[[]]]}}], "edges": [{"from": 1}]})).unwrap(),
        serde_json::to_vec(&json!({"nodes": [{"id": "a", "kind": "batch_job"}, {"id": "b", "kind": "batch_job"}], "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]})).unwrap(),
        serde_json::to_vec(&json!({"scenario": 5, "design": {"nodes": []}})).unwrap(),
        serde_json::to_vec(&json!({"scenario": "safe-retry", "student": "a\u{0}b", "design": passing_design("safe-retry")})).unwrap(),
        serde_json::to_vec(&json!({"scenario": "safe-retry", "design": {"nodes": [], "x\u{0}": "\u{0}"}})).unwrap(),
        serde_json::to_vec(&json!({"scenario": "safe-retry", "student": "nul", "design": with_nul})).unwrap(),
        serde_json::to_vec(&json!([{"scenario": "safe-retry", "student": "nul", "design": {"nodes": [{"id": "\u{0}", "kind": "table"}]}}])).unwrap(),
    ];
    for body in bodies {
        for (method, uri, who) in [
            (
                Method::POST,
                "/api/scenarios/safe-retry/check",
                As::nobody(),
            ),
            (Method::POST, "/api/submissions", As::student(&cookie)),
            (Method::POST, "/api/submissions", As::grader(&token)),
            (Method::POST, "/api/grade", As::grader(&token)),
            (Method::PUT, "/api/drafts/safe-retry", As::student(&cookie)),
            (Method::PUT, "/api/session", As::student(&cookie)),
        ] {
            let answer = app
                .send(method.clone(), uri, &who, &[], Some(body.clone()))
                .await;
            assert!(
                !answer.status.is_server_error(),
                "{method} {uri}: {} {}",
                answer.status,
                answer.text
            );
            assert!(
                answer.body.is_object() || answer.body.is_array(),
                "{uri}: {}",
                answer.text
            );
        }
    }
    let nul_draft = app
        .put(
            "/api/drafts/safe-retry",
            &As::student(&cookie),
            &json!({"design": {"nodes": "\u{0}"}}),
        )
        .await;
    assert_eq!(nul_draft.code(), ErrorCode::InvalidRequest);
    for uri in [
        "/api/submissions/%00",
        "/api/submissions/%FF%FE",
        "/api/submissions?student=%00",
        "/api/submissions?scenario=%00&limit=5",
        "/api/submissions?limit=-1",
        "/api/scenarios/%00",
        "/api/scenarios/%FF/check",
        "/api/drafts/%00",
    ] {
        for who in [As::student(&cookie), As::grader(&token)] {
            let answer = app.get(uri, &who).await;
            assert!(
                !answer.status.is_server_error(),
                "GET {uri}: {} {}",
                answer.status,
                answer.text
            );
            assert!(
                answer.body.get("error").is_some(),
                "GET {uri}: {}",
                answer.text
            );
        }
    }
}

crate::on_both_databases!(hostile_requests_never_cause_a_5xx, |db| {
    let app = db.app().await;
    hostile_requests_never_cause_a_5xx(&app).await;
    app.state.store().close().await;
});

#[tokio::test]
async fn a_request_that_takes_too_long_is_408_in_json() {
    // No check runs on the request's thread, and every core is busy with other checks, so
    // this one waits past its deadline.
    let inline_check_limits = shared::Limits {
        max_schedules: 0,
        max_steps: 0,
    };
    let app = spawn_app_with(Config {
        request_timeout: std::time::Duration::from_millis(200),
        inline_check_limits,
        ..Config::default()
    })
    .await;
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let mut busy = Vec::new();
    for _ in 0..cores {
        busy.push(app.state.check_permit().await);
    }
    let answer = app
        .post(
            "/api/scenarios/safe-retry/check",
            &As::nobody(),
            &passing_design("safe-retry"),
        )
        .await;
    assert_eq!(answer.status, StatusCode::REQUEST_TIMEOUT);
    assert_eq!(answer.code(), ErrorCode::Timeout);
}

/// Many copies of one request with one key at once: exactly one attempt is recorded, and
/// every other copy is told so (the stored answer) or told to wait (409).
async fn racing_copies_of_one_request_record_once(app: &TestApp) {
    let token = app.grader_token("racer").await;
    let body = serde_json::to_vec(
        &json!({"scenario": "safe-retry", "student": "lms-race", "design": failing_design()}),
    )
    .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..12 {
        let router = app.router.clone();
        let body = body.clone();
        let token = token.clone();
        tasks.push(tokio::spawn(async move {
            use tower::ServiceExt;
            let request = axum::http::Request::post("/api/submissions")
                .header("authorization", format!("Bearer {token}"))
                .header("idempotency-key", "race")
                .body(axum::body::Body::from(body))
                .unwrap();
            let response = router.oneshot(request).await.unwrap();
            let status = response.status();
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .unwrap();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap())
        }));
    }
    let mut ids = std::collections::BTreeSet::new();
    for task in tasks {
        let (status, body) = task.await.unwrap();
        match status {
            StatusCode::CREATED => {
                ids.insert(body["id"].as_str().unwrap().to_string());
            }
            StatusCode::CONFLICT => assert_eq!(
                body["error"]["code"],
                ErrorCode::IdempotencyKeyInFlight.as_str()
            ),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(ids.len(), 1, "every 201 names the same submission");
    assert_eq!(
        app.state
            .store()
            .list_attempts(Some("lms-race"), None, 100)
            .await
            .unwrap()
            .len(),
        1
    );
}

crate::on_both_databases!(racing_copies_record_once, |db| {
    let app = db.app().await;
    racing_copies_of_one_request_record_once(&app).await;
    app.state.store().close().await;
});
