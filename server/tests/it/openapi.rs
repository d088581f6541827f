//! The published OpenAPI document against real answers: every verdict of every shipped
//! scenario's reference and wrong designs, and an error body of every code a request can
//! provoke, must validate against the schema the document gives for that route and status.
//!
//! OpenAPI 3.1's schemas are JSON Schema 2020-12. A schema of the document is validated inside
//! a wrapper that carries the document's `components`, so that its
//! `#/components/schemas/...` references resolve as they do for a client.

use std::collections::BTreeSet;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use server::error::ErrorCode;
use server::Config;

use crate::common::{
    failing_design, passing_design, scenarios, spawn_app, spawn_app_with, As, TestApp,
};

/// The document as the server serves it.
struct Document(Value);

impl Document {
    async fn of(app: &TestApp) -> Document {
        let answer = app.get("/api/openapi.json", &As::nobody()).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert!(
            answer.body["openapi"].as_str().unwrap().starts_with("3.1"),
            "the schemas are read as JSON Schema 2020-12, which OpenAPI 3.1 uses"
        );
        Document(answer.body)
    }

    /// The schema the document gives for the JSON answer of `method path` with `status`,
    /// if it documents one.
    fn response(&self, method: &str, path: &str, status: StatusCode) -> Option<Value> {
        self.0["paths"][path][method]["responses"][status.as_str()]["content"]["application/json"]
            ["schema"]
            .as_object()
            .map(|s| Value::Object(s.clone()))
    }

    /// The schema the document gives for the JSON body of `method path`.
    fn request(&self, method: &str, path: &str) -> Value {
        self.0["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
            .as_object()
            .map(|s| Value::Object(s.clone()))
            .unwrap_or_else(|| panic!("{method} {path} documents no JSON body"))
    }

    fn component(&self, name: &str) -> Value {
        assert!(
            self.0["components"]["schemas"][name].is_object(),
            "the document has no schema {name}"
        );
        json!({"$ref": format!("#/components/schemas/{name}")})
    }

    /// Every way `instance` breaks `schema`, each with where in the instance.
    fn violations(&self, schema: &Value, instance: &Value) -> Vec<String> {
        let mut wrapper = schema.clone();
        wrapper["components"] = self.0["components"].clone();
        let validator = jsonschema::draft202012::new(&wrapper)
            .unwrap_or_else(|e| panic!("the document's schema {schema} does not compile: {e}"));
        validator
            .iter_errors(instance)
            .map(|e| format!("at {}: {e}", e.instance_path()))
            .collect()
    }

    fn assert_valid(&self, what: &str, schema: &Value, instance: &Value) {
        let violations = self.violations(schema, instance);
        assert!(
            violations.is_empty(),
            "{what}: the answer does not match the published schema {schema}:\n{}\nanswer: {instance}",
            violations.join("\n")
        );
    }

    /// Checks an answer against its route's documented schema for its status.
    fn assert_answer(&self, method: &str, path: &str, status: StatusCode, body: &Value) {
        let schema = self.response(method, path, status).unwrap_or_else(|| {
            panic!("{method} {path} does not document a JSON answer with {status}")
        });
        self.assert_valid(&format!("{method} {path} → {status}"), &schema, body);
    }
}

#[tokio::test]
async fn every_verdict_of_the_shipped_designs_matches_the_published_schema() {
    // Every shipped design is checked as fast as the test can, from one client: the rate
    // limit, which charges a check by its time, would refuse some (tests/it/limits.rs tests
    // that); this test is about the verdicts' shape.
    let app = spawn_app_with(Config {
        rate_limit: None,
        ..Config::default()
    })
    .await;
    let doc = Document::of(&app).await;
    let (mut passed, mut missed, mut with_rows) = (0, 0, 0);
    for scenario in scenarios() {
        let designs = scenario
            .scenario()
            .reference_designs
            .iter()
            .map(|d| ("reference", &d.design))
            .chain(
                scenario
                    .scenario()
                    .wrong_designs
                    .iter()
                    .map(|d| ("wrong", &d.design)),
            );
        for (kind, design) in designs {
            // What the check accepts matches what the document says it accepts.
            doc.assert_valid(
                &format!("{} {kind} design", scenario.scenario().id),
                &doc.request("post", "/api/scenarios/{id}/check"),
                design,
            );
            let uri = format!("/api/scenarios/{}/check", scenario.scenario().id);
            let answer = app.post(&uri, &As::nobody(), design).await;
            assert_eq!(
                answer.status,
                StatusCode::OK,
                "{} {kind}: {}",
                scenario.scenario().id,
                answer.text
            );
            doc.assert_answer(
                "post",
                "/api/scenarios/{id}/check",
                StatusCode::OK,
                &answer.body,
            );
            if answer.body["passed"] == true {
                passed += 1;
            } else {
                missed += 1;
            }
            if answer.text.contains("\"rows\":[[") {
                with_rows += 1;
            }
        }
    }
    assert!(passed > 0 && missed > 0, "{passed} passed, {missed} missed");
    assert!(
        with_rows > 0,
        "no counterexample showed a table with rows, so their cells went unchecked"
    );
}

/// Every reference in the document names a schema it defines.
#[tokio::test]
async fn every_reference_of_the_document_resolves() {
    fn refs<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    found.push(r);
                }
                map.values().for_each(|v| refs(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
            _ => {}
        }
    }
    let app = spawn_app().await;
    let doc = Document::of(&app).await;
    let mut found = Vec::new();
    refs(&doc.0, &mut found);
    assert!(!found.is_empty());
    for r in found {
        let pointer = r
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{r} points outside the document"));
        assert!(doc.0.pointer(pointer).is_some(), "{r} names nothing");
    }
}

/// The same check of a verdict must fail when the document says another type than the answer
/// has: here the cells of a table's rows, described as objects, as they once were.
#[tokio::test]
async fn a_schema_that_disagrees_with_the_answer_is_caught() {
    let app = spawn_app().await;
    let mut doc = Document::of(&app).await;
    let wrong = scenarios()
        .into_iter()
        .find(|s| s.scenario().id == "safe-retry")
        .unwrap()
        .into_scenario()
        .wrong_designs
        .into_iter()
        .map(|d| d.design)
        .chain([failing_design()]);
    let mut verdicts = Vec::new();
    for design in wrong {
        let answer = app
            .post("/api/scenarios/safe-retry/check", &As::nobody(), &design)
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
        if answer.text.contains("\"rows\":[[") {
            verdicts.push(answer.body);
        }
    }
    assert!(!verdicts.is_empty(), "no verdict with rows to check");
    let verdict = doc.component("Verdict");
    for v in &verdicts {
        doc.assert_valid("safe-retry", &verdict, v);
    }
    doc.0["components"]["schemas"]["TableView"]["properties"]["rows"] =
        json!({"type": "array", "items": {"type": "array", "items": {"type": "object"}}});
    for v in &verdicts {
        assert!(
            !doc.violations(&verdict, v).is_empty(),
            "rows of objects were accepted for {v}"
        );
    }
}

/// One error answer, and where it came from.
struct Provoked {
    method: &'static str,
    /// The route as the document names it.
    route: &'static str,
    answer: crate::common::Answer,
}

#[tokio::test]
async fn every_error_code_a_request_can_provoke_matches_the_published_schema() {
    let app = spawn_app().await;
    let doc = Document::of(&app).await;
    let (cookie, student) = app.new_student().await;
    let who = As::student(&cookie);
    let token = app.grader_token("schema").await;
    let mut provoked: Vec<Provoked> = Vec::new();
    macro_rules! got {
        ($method:expr, $route:expr, $answer:expr) => {
            provoked.push(Provoked {
                method: $method,
                route: $route,
                answer: $answer,
            })
        };
    }
    let check = "/api/scenarios/safe-retry/check";
    let raw = |body: &str| Some(body.as_bytes().to_vec());

    got!(
        "post",
        "/api/scenarios/{id}/check",
        app.send(Method::POST, check, &As::nobody(), &[], raw("{"))
            .await
    );
    got!(
        "put",
        "/api/session",
        app.put(
            "/api/session",
            &who,
            &json!({"display_name": "x".repeat(81)})
        )
        .await
    );
    got!(
        "post",
        "/api/scenarios/{id}/check",
        app.post(
            check,
            &As::nobody(),
            &json!({"nodes": [{"id": "a", "kind": "nonsense"}], "edges": [{"from": "a", "to": "b"}]})
        )
        .await
    );
    let nodes: Vec<Value> = (0..65)
        .map(|i| json!({"id": format!("n{i}"), "kind": "table"}))
        .collect();
    got!(
        "post",
        "/api/scenarios/{id}/check",
        app.post(check, &As::nobody(), &json!({"nodes": nodes}))
            .await
    );
    got!(
        "post",
        "/api/scenarios/{id}/check",
        app.send(
            Method::POST,
            check,
            &As::nobody(),
            &[],
            Some(vec![b' '; 300 * 1024])
        )
        .await
    );
    got!(
        "post",
        "/api/scenarios/{id}/check",
        app.post(
            "/api/scenarios/no-such-scenario/check",
            &As::nobody(),
            &passing_design("safe-retry")
        )
        .await
    );
    got!(
        "get",
        "/api/submissions/{id}",
        app.get("/api/submissions/no-such-submission", &who).await
    );
    got!(
        "get",
        "/api/drafts/{scenario}",
        app.get("/api/drafts/safe-retry", &who).await
    );
    got!(
        "post",
        "/api/grade",
        app.post("/api/grade", &As::nobody(), &json!([])).await
    );
    got!(
        "get",
        "/api/submissions",
        app.get("/api/submissions?student=somebody-else", &who)
            .await
    );
    let submit = |key: String, body: Value| {
        let who = who.clone();
        let app = &app;
        async move {
            app.send(
                Method::POST,
                "/api/submissions",
                &who,
                &[("idempotency-key", key.as_str())],
                Some(serde_json::to_vec(&body).unwrap()),
            )
            .await
        }
    };
    let first = submit(
        "once".into(),
        json!({"scenario": "safe-retry", "design": failing_design()}),
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
    got!(
        "post",
        "/api/submissions",
        submit(
            "once".into(),
            json!({"scenario": "safe-retry", "design": passing_design("safe-retry")}),
        )
        .await
    );
    let busy = json!({"scenario": "safe-retry", "design": passing_design("safe-retry")});
    app.state
        .store()
        .claim_idempotency_key(
            &format!("student:{student}"),
            "busy",
            &server::routes::submissions::fingerprint(
                "POST /api/submissions",
                &serde_json::to_vec(&busy).unwrap(),
            ),
            std::time::Duration::from_secs(600),
        )
        .await
        .unwrap();
    got!(
        "post",
        "/api/submissions",
        submit("busy".into(), busy).await
    );
    got!(
        "post",
        "/api/submissions",
        submit(
            "k".repeat(256),
            json!({"scenario": "safe-retry", "design": failing_design()})
        )
        .await
    );
    got!(
        "get",
        "/api/{*rest}",
        app.get("/api/no-such-thing", &As::nobody()).await
    );
    got!(
        "delete",
        "/api/scenarios",
        app.send(Method::DELETE, "/api/scenarios", &As::nobody(), &[], None)
            .await
    );
    got!(
        "get",
        "/api/submissions",
        app.get("/api/submissions?limit=many", &As::grader(&token))
            .await
    );

    // Answers that need a server in another state: too small a check limit, too short a
    // timeout, too strict a rate limit, a broken table, a closed database.
    let small = spawn_app_with(Config {
        check_limits: shared::Limits {
            max_schedules: 2,
            ..shared::Limits::default()
        },
        ..Config::default()
    })
    .await;
    got!(
        "post",
        "/api/scenarios/{id}/check",
        small
            .post(check, &As::nobody(), &passing_design("safe-retry"))
            .await
    );
    let slow = spawn_app_with(Config {
        request_timeout: std::time::Duration::from_millis(200),
        inline_check_limits: shared::Limits {
            max_schedules: 0,
            max_steps: 0,
        },
        ..Config::default()
    })
    .await;
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let mut turns = Vec::new();
    for _ in 0..cores {
        turns.push(slow.state.check_permit().await);
    }
    got!(
        "post",
        "/api/scenarios/{id}/check",
        slow.post(check, &As::nobody(), &passing_design("safe-retry"))
            .await
    );
    drop(turns);
    let strict = spawn_app_with(Config {
        // A client known only by its address gets ten times the limit: one request at once.
        rate_limit: Some(server::config::RateLimit {
            per_second: 0.0001,
            burst: 0.1,
        }),
        ..Config::default()
    })
    .await;
    strict.get("/api/scenarios", &As::nobody()).await;
    got!(
        "get",
        "/api/scenarios",
        strict.get("/api/scenarios", &As::nobody()).await
    );
    let broken = spawn_app().await;
    let (broken_cookie, _) = broken.new_student().await;
    let server::Store::Sqlite(pool, ..) = broken.state.store() else {
        panic!("the test app is on SQLite")
    };
    sqlx::query("DROP TABLE drafts")
        .execute(pool)
        .await
        .unwrap();
    got!(
        "get",
        "/api/drafts/{scenario}",
        broken
            .get("/api/drafts/safe-retry", &As::student(&broken_cookie))
            .await
    );
    let closed = spawn_app().await;
    closed.state.store().close().await;
    got!("get", "/readyz", closed.get("/readyz", &As::nobody()).await);
    got!(
        "post",
        "/api/session",
        closed
            .send(Method::POST, "/api/session", &As::nobody(), &[], None)
            .await
    );
    got!(
        "get",
        "/api/session",
        app.get("/api/session", &As::nobody()).await
    );
    got!(
        "get",
        "/api/session",
        app.get("/api/session", &As::student(&format!("{cookie}; {cookie}")))
            .await
    );
    got!(
        "post",
        "/api/submissions",
        app.send(
            Method::POST,
            "/api/submissions",
            &who,
            &[("origin", "https://evil.example")],
            Some(
                serde_json::to_vec(&json!({"scenario": "safe-retry", "design": failing_design()}))
                    .unwrap()
            ),
        )
        .await
    );
    got!(
        "put",
        "/api/session",
        app.send(
            Method::PUT,
            "/api/session",
            &who,
            &[("content-type", "text/plain")],
            raw("{\"display_name\": \"Eve\"}"),
        )
        .await
    );

    // Classes: an unknown one, a closed one, a class the student is not in, a stranger.
    let grader = As::grader(&token);
    let class = app
        .post("/api/classes", &grader, &json!({"name": "Data 101"}))
        .await;
    let class_id = class.body["id"].as_str().unwrap().to_string();
    let code = class.body["join_code"].as_str().unwrap().to_string();
    got!(
        "get",
        "/api/classes/{id}/matrix",
        app.get("/api/classes/c-none/matrix", &grader).await
    );
    got!(
        "get",
        "/api/classes/{id}/students/{student}/attempts",
        app.get(
            &format!("/api/classes/{class_id}/students/{student}/attempts"),
            &grader
        )
        .await
    );
    got!(
        "post",
        "/api/submissions",
        app.post(
            "/api/submissions",
            &who,
            &json!({"scenario": "safe-retry", "design": failing_design(), "class": class_id})
        )
        .await
    );
    app.post(
        &format!("/api/classes/{class_id}/close"),
        &grader,
        &json!(null),
    )
    .await;
    got!(
        "post",
        "/api/classes/join",
        app.post(
            "/api/classes/join",
            &who,
            &json!({"code": code, "display_name": "Ada"})
        )
        .await
    );

    // A class that refuses attempts after its due date, which has passed.
    let due = app
        .post("/api/classes", &grader, &json!({"name": "Data 102"}))
        .await;
    let due_id = due.body["id"].as_str().unwrap().to_string();
    let due_code = due.body["join_code"].as_str().unwrap().to_string();
    app.post(
        "/api/classes/join",
        &who,
        &json!({"code": due_code, "display_name": "Ada"}),
    )
    .await;
    app.put(
        &format!("/api/classes/{due_id}/deadlines"),
        &grader,
        &json!({"due_at": "2020-01-01T00:00:00Z", "late_policy": "refuse"}),
    )
    .await;
    got!(
        "post",
        "/api/submissions",
        app.post(
            "/api/submissions",
            &who,
            &json!({"scenario": "safe-retry", "design": failing_design(), "class": due_id})
        )
        .await
    );

    // An export for another scenario than the one graded is an item's error inside a batch,
    // never a whole answer's: its entry is an error body too.
    let batch = app
        .post(
            "/api/grade",
            &As::grader(&token),
            &json!([{"scenario": "safe-retry", "student": "ada",
                     "design": {"scenario": "offset-commit", "design": failing_design()}}]),
        )
        .await;
    let entry = batch.body[0].clone();
    got!(
        "post",
        "/api/grade",
        crate::common::Answer {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            headers: Default::default(),
            text: entry.to_string(),
            body: entry,
        }
    );
    // The author's routes asked by another name than the server's own (DNS rebinding), and a
    // token that has made as many classes as it may.
    let author = spawn_app_with(Config {
        author: true,
        ..Config::default()
    })
    .await;
    got!(
        "get",
        "/api/author/status",
        author
            .send(
                Method::GET,
                "/api/author/status",
                &As::nobody(),
                &[("host", "rebind.attacker.example")],
                None
            )
            .await
    );
    let capped = spawn_app_with(Config {
        classes_per_token_max: 0,
        ..Config::default()
    })
    .await;
    let capped_token = capped.grader_token("capped").await;
    got!(
        "post",
        "/api/classes",
        capped
            .post(
                "/api/classes",
                &As::grader(&capped_token),
                &json!({"name": "One too many"})
            )
            .await
    );

    // A design tried on an edited scenario file that does not read as a scenario yet.
    let (untryable, _folder) = app_with_a_half_written_file().await;
    got!(
        "post",
        "/api/author/files/half.json/check",
        untryable
            .post(
                "/api/author/files/half.json/check",
                &As::nobody(),
                &failing_design()
            )
            .await
    );

    // LTI on a server started without --public-url: its configuration says what it lacks.
    let bare = spawn_app_with(Config::default()).await;
    got!(
        "get",
        "/lti/config",
        bare.get("/lti/config", &As::nobody()).await
    );

    let error_body = doc.component("ErrorBody");
    let mut seen = BTreeSet::new();
    // A launch whose platform's key set cannot be fetched is refused with a page (a browser
    // brought it), which names its code.
    let Err(unreachable) = server::lti::Outbound::new()
        .platform_key("http://127.0.0.1:9/jwks", "k1")
        .await
    else {
        panic!("a key set was fetched from a closed port");
    };
    assert_eq!(unreachable.code, ErrorCode::PlatformUnavailable);
    let page = axum::response::IntoResponse::into_response(unreachable);
    assert_eq!(page.status(), StatusCode::SERVICE_UNAVAILABLE);
    let page = axum::body::to_bytes(page.into_body(), usize::MAX)
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&page).contains("<code>platform_unavailable</code>"));
    seen.insert(ErrorCode::PlatformUnavailable.as_str());
    for Provoked {
        method,
        route,
        answer,
    } in &provoked
    {
        let code = answer.code();
        seen.insert(code.as_str());
        let what = format!("{method} {route} → {} {code}", answer.status);
        doc.assert_valid(&what, &error_body, &answer.body);
        // Where the route documents this status, the answer matches what it documents.
        if let Some(schema) = doc.response(method, route, answer.status) {
            doc.assert_valid(&what, &schema, &answer.body);
        }
    }
    for code in ErrorCode::ALL {
        assert!(seen.contains(code.as_str()), "no request provoked {code}");
    }
    // The document lists every code, and no other.
    let listed: BTreeSet<&str> = doc.0["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .expect("ErrorCode is an enum of strings")
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let codes: BTreeSet<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(listed, codes);
}

/// An author's server whose only scenario file, `half.json`, stops halfway: it is listed
/// with its problems, and no design can be tried on it.
async fn app_with_a_half_written_file() -> (TestApp, crate::common::TempDir) {
    let folder = crate::common::TempDir::new("half-written");
    let file = folder.path().join("half.json");
    std::fs::write(&file, "{ \"id\": ").unwrap();
    let live = server::watch::LiveCatalogue::broken(vec![shared::authoring::Diagnostic {
        file: file.display().to_string(),
        path: "$".into(),
        message: "the file does not read as a scenario".into(),
    }]);
    let dir = crate::common::TempDir::new("half-written-db");
    let store = server::Store::connect(&dir.sqlite_url()).await.unwrap();
    let config = Config {
        author: true,
        ..Config::default()
    };
    let state = server::AppState::live(store, std::sync::Arc::new(live), config);
    let app = TestApp {
        router: server::router(state.clone()),
        state,
        _dir: dir,
        _postgres: None,
    };
    (app, folder)
}

/// The other answers of the API, each against what its route documents.
#[tokio::test]
async fn the_other_answers_match_the_published_schema() {
    let app = spawn_app().await;
    let doc = Document::of(&app).await;
    let token = app.grader_token("schema").await;
    let grader = As::grader(&token);
    let session = app
        .send(Method::POST, "/api/session", &As::nobody(), &[], None)
        .await;
    doc.assert_answer("post", "/api/session", StatusCode::CREATED, &session.body);
    let who = As::student(&session.cookie().expect("a new session sets a cookie"));
    let read = app.get("/api/session", &who).await;
    doc.assert_answer("get", "/api/session", StatusCode::OK, &read.body);
    let named = app
        .put("/api/session", &who, &json!({"display_name": "Ada"}))
        .await;
    doc.assert_answer("put", "/api/session", StatusCode::OK, &named.body);
    let catalogue = app.get("/api/scenarios", &who).await;
    doc.assert_answer("get", "/api/scenarios", StatusCode::OK, &catalogue.body);
    let one = app.get("/api/scenarios/safe-retry", &who).await;
    doc.assert_answer("get", "/api/scenarios/{id}", StatusCode::OK, &one.body);

    let submission = json!({"scenario": "safe-retry", "design": failing_design()});
    doc.assert_valid(
        "a submission",
        &doc.request("post", "/api/submissions"),
        &submission,
    );
    let created = app.post("/api/submissions", &who, &submission).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    doc.assert_answer(
        "post",
        "/api/submissions",
        StatusCode::CREATED,
        &created.body,
    );
    let id = created.body["id"].as_str().unwrap();
    let fetched = app.get(&format!("/api/submissions/{id}"), &who).await;
    doc.assert_answer(
        "get",
        "/api/submissions/{id}",
        StatusCode::OK,
        &fetched.body,
    );
    let listed = app.get("/api/submissions", &grader).await;
    doc.assert_answer("get", "/api/submissions", StatusCode::OK, &listed.body);

    let batch = json!([
        {"scenario": "safe-retry", "student": "ada", "design": passing_design("safe-retry")},
        {"scenario": "safe-retry", "student": "bob", "design": failing_design()},
        {"scenario": "no-such-scenario", "student": "cy", "design": failing_design()},
        {"scenario": "safe-retry", "student": "dee", "design": {"nodes": [{"id": "x", "kind": "nonsense"}]}},
    ]);
    for format in ["", "?format=gradescope"] {
        let graded = app
            .post(&format!("/api/grade{format}"), &grader, &batch)
            .await;
        assert_eq!(graded.status, StatusCode::OK, "{}", graded.text);
        doc.assert_answer("post", "/api/grade", StatusCode::OK, &graded.body);
    }

    let draft = app
        .put(
            "/api/drafts/safe-retry",
            &who,
            &json!({"design": {"nodes": [], "unfinished": true}}),
        )
        .await;
    doc.assert_answer("put", "/api/drafts/{scenario}", StatusCode::OK, &draft.body);
    let kept = app.get("/api/drafts/safe-retry", &who).await;
    doc.assert_answer("get", "/api/drafts/{scenario}", StatusCode::OK, &kept.body);
    for probe in ["/healthz", "/readyz"] {
        let answer = app.get(probe, &As::nobody()).await;
        doc.assert_answer("get", probe, StatusCode::OK, &answer.body);
    }

    // Classes and the dashboard.
    let made = app
        .post("/api/classes", &grader, &json!({"name": "Data 101"}))
        .await;
    doc.assert_answer("post", "/api/classes", StatusCode::CREATED, &made.body);
    let class = made.body["id"].as_str().unwrap().to_string();
    let code = made.body["join_code"].as_str().unwrap().to_string();
    let joined = app
        .post(
            "/api/classes/join",
            &who,
            &json!({"code": code, "display_name": "Ada"}),
        )
        .await;
    doc.assert_answer(
        "post",
        "/api/classes/join",
        StatusCode::CREATED,
        &joined.body,
    );
    let again = app
        .post("/api/classes/join", &who, &json!({"code": code}))
        .await;
    doc.assert_answer("post", "/api/classes/join", StatusCode::OK, &again.body);
    let mine = app.get("/api/session/classes", &who).await;
    doc.assert_answer("get", "/api/session/classes", StatusCode::OK, &mine.body);
    let submitted = app
        .post(
            "/api/submissions",
            &who,
            &json!({"scenario": "safe-retry", "design": failing_design(), "class": class}),
        )
        .await;
    doc.assert_answer(
        "post",
        "/api/submissions",
        StatusCode::CREATED,
        &submitted.body,
    );
    let attempt = submitted.body["id"].as_str().unwrap().to_string();
    let student = read.body["student"].as_str().unwrap().to_string();
    for (path, uri) in [
        ("/api/classes", "/api/classes".to_string()),
        ("/api/classes/{id}", format!("/api/classes/{class}")),
        (
            "/api/classes/{id}/matrix",
            format!("/api/classes/{class}/matrix"),
        ),
        (
            "/api/classes/{id}/missed",
            format!("/api/classes/{class}/missed"),
        ),
        (
            "/api/classes/{id}/attempts",
            format!("/api/classes/{class}/attempts"),
        ),
        (
            "/api/classes/{id}/attempts/{attempt}",
            format!("/api/classes/{class}/attempts/{attempt}"),
        ),
        (
            "/api/classes/{id}/students/{student}/attempts",
            format!("/api/classes/{class}/students/{student}/attempts"),
        ),
        (
            "/api/instructor/session",
            "/api/instructor/session".to_string(),
        ),
    ] {
        let answer = app.get(&uri, &grader).await;
        assert_eq!(answer.status, StatusCode::OK, "{uri}: {}", answer.text);
        doc.assert_answer("get", path, StatusCode::OK, &answer.body);
    }
    let patched = app
        .send(
            Method::PATCH,
            &format!("/api/classes/{class}"),
            &grader,
            &[],
            Some(serde_json::to_vec(&json!({"preview": "lacks", "name": "Data 102"})).unwrap()),
        )
        .await;
    doc.assert_answer("patch", "/api/classes/{id}", StatusCode::OK, &patched.body);
    for action in ["close", "reopen"] {
        let answer = app
            .post(
                &format!("/api/classes/{class}/{action}"),
                &grader,
                &json!(null),
            )
            .await;
        doc.assert_answer(
            "post",
            &format!("/api/classes/{{id}}/{action}"),
            StatusCode::OK,
            &answer.body,
        );
    }
    let regraded = app
        .post(
            "/api/regrade",
            &grader,
            &json!({"scenario": "safe-retry", "class": class}),
        )
        .await;
    doc.assert_answer("post", "/api/regrade", StatusCode::OK, &regraded.body);
    let signed = app
        .post(
            "/api/instructor/session",
            &As::nobody(),
            &json!({"token": token}),
        )
        .await;
    doc.assert_answer(
        "post",
        "/api/instructor/session",
        StatusCode::OK,
        &signed.body,
    );
}

/// The grading formats: `format` is an enum of what the routes accept, the CSV answers are
/// documented as `text/csv` and answered so, a bad `format` is the documented 422, and every
/// item of a mixed batch (invalid ones included) matches the documented JSON and Gradescope
/// answers.
#[tokio::test]
async fn the_grading_formats_are_what_the_document_says() {
    let app = spawn_app().await;
    let doc = Document::of(&app).await;
    let token = app.grader_token("schema").await;
    let grader = As::grader(&token);
    for (method, path, schema, values) in [
        (
            "post",
            "/api/grade",
            "GradeFormat",
            &["json", "gradescope", "csv"][..],
        ),
        (
            "get",
            "/api/submissions",
            "ListFormat",
            &["json", "csv"][..],
        ),
    ] {
        let params = doc.0["paths"][path][method]["parameters"]
            .as_array()
            .unwrap();
        let format = params.iter().find(|p| p["name"] == "format").unwrap();
        assert_eq!(format["in"], "query");
        assert_eq!(
            format["schema"]["$ref"],
            format!("#/components/schemas/{schema}")
        );
        assert_eq!(
            doc.0["components"]["schemas"][schema]["enum"],
            json!(values)
        );
        let csv = &doc.0["paths"][path][method]["responses"]["200"]["content"]["text/csv"];
        assert_eq!(
            csv["schema"]["type"], "string",
            "{path} documents its CSV answer"
        );
        assert!(doc.0["paths"][path][method]["responses"]["422"].is_object());
    }

    let batch = json!([
        {"scenario": "safe-retry", "student": "ada", "design": passing_design("safe-retry")},
        {"scenario": "safe-retry", "student": "bob", "design": failing_design()},
        {"scenario": "safe-retry", "student": "cy", "design": {"nodes": [{"id": "x", "kind": "nonsense"}]}},
        {"scenario": "no-such-scenario", "student": "dee", "design": failing_design()},
        {"student": "eve"},
        "not an item",
    ]);
    for format in ["?format=json", "?format=gradescope"] {
        let graded = app
            .post(&format!("/api/grade{format}"), &grader, &batch)
            .await;
        assert_eq!(graded.status, StatusCode::OK, "{}", graded.text);
        assert_eq!(graded.body.as_array().unwrap().len(), 6);
        doc.assert_answer("post", "/api/grade", StatusCode::OK, &graded.body);
    }
    for (route, body) in [
        ("/api/grade?format=csv", Some(&batch)),
        ("/api/submissions?format=csv", None),
    ] {
        let answer = match body {
            Some(b) => app.post(route, &grader, b).await,
            None => app.get(route, &grader).await,
        };
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
        let content_type = answer.header("content-type").unwrap();
        assert_eq!(content_type, "text/csv; charset=utf-8");
        assert!(answer.text.starts_with("student,display_name,scenario,"));
    }
    for (method, route, path) in [
        (Method::POST, "/api/grade?format=xml", "/api/grade"),
        (
            Method::GET,
            "/api/submissions?format=gradescope",
            "/api/submissions",
        ),
    ] {
        let answer = app
            .send(
                method.clone(),
                route,
                &grader,
                &[],
                Some(serde_json::to_vec(&batch).unwrap()),
            )
            .await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{route}");
        assert_eq!(answer.code(), ErrorCode::InvalidRequest);
        assert_eq!(answer.body["error"]["path"], "?format");
        doc.assert_answer(
            &method.as_str().to_lowercase(),
            path,
            StatusCode::UNPROCESSABLE_ENTITY,
            &answer.body,
        );
    }
    // What the server does not do is said too: Gradescope's own autograder is a command.
    let description = doc.0["paths"]["/api/grade"]["post"]["description"]
        .as_str()
        .unwrap();
    assert!(
        description.contains("pipeline-builder autograde"),
        "{description}"
    );
}
