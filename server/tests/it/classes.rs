//! Classes on SQLite and PostgreSQL: a grader makes a class, three students join it (three
//! cookie jars) and submit; the matrix, the most-missed requirements and the CSV exports say
//! exactly what was submitted; a closed class refuses a join and an attempt; a student never
//! reaches an instructor's route; the instructor's sign-in cookie; and regrading against a
//! changed scenario, old and new verdicts kept side by side.

use std::process::Command;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use server::error::ErrorCode;
use server::store::Regrade;
use server::{AppState, Catalogue, Config, Store};

use crate::common::{
    failing_design, passing_design, scenarios, scenarios_dir, spawn_app_on, As, TempDir, TestApp,
};
use crate::postgres;
use crate::processes::BIN;

async fn on_sqlite(label: &str) -> (TestApp, String) {
    let dir = TempDir::new(label);
    let url = dir.sqlite_url();
    let store = Store::connect(&url).await.expect("a fresh SQLite database");
    (spawn_app_on(store, Config::default(), dir), url)
}

/// A class made by `token`: its id and join code.
async fn new_class(app: &TestApp, token: &str, name: &str) -> (String, String) {
    let made = app
        .post("/api/classes", &As::grader(token), &json!({"name": name}))
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    (
        made.body["id"].as_str().unwrap().to_string(),
        made.body["join_code"].as_str().unwrap().to_string(),
    )
}

async fn join(app: &TestApp, cookie: &str, code: &str, name: &str) -> StatusCode {
    let answer = app
        .post(
            "/api/classes/join",
            &As::student(cookie),
            &json!({"code": code, "display_name": name}),
        )
        .await;
    assert!(answer.status.is_success(), "{}", answer.text);
    answer.status
}

/// Submits `design` for the session's student, for `class` when given; the answer.
async fn submit(
    app: &TestApp,
    cookie: &str,
    scenario: &str,
    design: Value,
    class: Option<&str>,
) -> crate::common::Answer {
    let mut body = json!({"scenario": scenario, "design": design});
    if let Some(c) = class {
        body["class"] = json!(c);
    }
    app.post("/api/submissions", &As::student(cookie), &body)
        .await
}

async fn submitted(
    app: &TestApp,
    cookie: &str,
    scenario: &str,
    design: Value,
    class: Option<&str>,
) -> String {
    let answer = submit(app, cookie, scenario, design, class).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);
    answer.body["id"].as_str().unwrap().to_string()
}

fn cell<'a>(matrix: &'a Value, student: &str, scenario: &str) -> &'a Value {
    let row = matrix["students"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["student"] == student)
        .unwrap_or_else(|| panic!("no row for {student}: {matrix}"));
    row["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scenario"] == scenario)
        .unwrap_or_else(|| panic!("no cell for {scenario}"))
}

fn column<'a>(matrix: &'a Value, scenario: &str) -> &'a Value {
    matrix["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scenario"] == scenario)
        .unwrap_or_else(|| panic!("no column for {scenario}"))
}

async fn a_class_from_join_to_dashboard(app: &TestApp) {
    let token = app.grader_token("teacher").await;
    let grader = As::grader(&token);

    // Made, with a readable random code and its join page.
    let made = app
        .send(
            Method::POST,
            "/api/classes",
            &grader,
            &[
                ("host", "pipelines.example.edu"),
                ("x-forwarded-proto", "https"),
            ],
            Some(serde_json::to_vec(&json!({"name": "  Data 101  "})).unwrap()),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let class = made.body["id"].as_str().unwrap().to_string();
    let code = made.body["join_code"].as_str().unwrap().to_string();
    assert_eq!(made.body["name"], "Data 101");
    assert_eq!(made.body["open"], true);
    assert_eq!(made.body["preview"], "everything");
    assert_eq!(code.len(), 8);
    assert!(
        code.bytes()
            .all(|b| b"23456789ABCDEFGHJKMNPQRSTUVWXYZ".contains(&b)),
        "{code}"
    );
    assert!(
        made.body["join_url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("pipelines.example.edu/join/{code}")),
        "{}",
        made.text
    );
    let (other_class, other_code) = new_class(app, &token, "Data 102").await;
    assert_ne!(code, other_code);
    let list = app.get("/api/classes", &grader).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.body.as_array().unwrap().len(), 2);
    for bad in [json!({"name": "   "}), json!({"name": "x".repeat(101)})] {
        let refused = app.post("/api/classes", &grader, &bad).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(refused.code(), ErrorCode::InvalidRequest);
        assert_eq!(refused.body["error"]["path"], "$.name");
    }

    // Three students, three cookie jars.
    let (ada_cookie, ada) = app.new_student().await;
    let (bob_cookie, bob) = app.new_student().await;
    let (cy_cookie, cy) = app.new_student().await;

    // The display name is asked for, and refused clearly when it is not one.
    for bad in [
        json!({"code": code}),
        json!({"code": code, "display_name": "  "}),
        json!({"code": code, "display_name": "x".repeat(61)}),
        json!({"code": code, "display_name": "tab\there"}),
    ] {
        let refused = app
            .post("/api/classes/join", &As::student(&ada_cookie), &bad)
            .await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert_eq!(refused.code(), ErrorCode::InvalidRequest);
        assert_eq!(refused.body["error"]["path"], "$.display_name");
        assert!(refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1 to 60 characters"));
    }
    let unknown = app
        .post(
            "/api/classes/join",
            &As::student(&ada_cookie),
            &json!({"code": "ZZZZZZZZ", "display_name": "Ada"}),
        )
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.code(), ErrorCode::UnknownClass);
    // Typed in lower case with a dash, trimmed: the same code.
    let typed = format!("{}-{}", &code[..4], &code[4..]).to_lowercase();
    assert_eq!(
        join(app, &ada_cookie, &typed, "  Ada L.  ").await,
        StatusCode::CREATED
    );
    assert_eq!(
        join(app, &bob_cookie, &code, "Bob").await,
        StatusCode::CREATED
    );
    assert_eq!(
        join(app, &cy_cookie, &code, "Cy").await,
        StatusCode::CREATED
    );
    // Asked once: joining again keeps the first name.
    let again = app
        .post(
            "/api/classes/join",
            &As::student(&ada_cookie),
            &json!({"code": code}),
        )
        .await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.text);
    assert_eq!(again.body["display_name"], "Ada L.");
    // A student may be in several classes.
    assert_eq!(
        join(app, &ada_cookie, &other_code, "Ada").await,
        StatusCode::CREATED
    );
    let mine = app
        .get("/api/session/classes", &As::student(&ada_cookie))
        .await;
    assert_eq!(mine.status, StatusCode::OK, "{}", mine.text);
    let ids: Vec<&str> = mine
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![class.as_str(), other_class.as_str()]);

    // Attempts: Ada misses, then passes; Bob misses; Cy passes another scenario at once.
    let ada_first = submitted(
        app,
        &ada_cookie,
        "safe-retry",
        failing_design(),
        Some(&class),
    )
    .await;
    let ada_second = submitted(
        app,
        &ada_cookie,
        "safe-retry",
        passing_design("safe-retry"),
        Some(&class),
    )
    .await;
    submitted(
        app,
        &bob_cookie,
        "safe-retry",
        failing_design(),
        Some(&class),
    )
    .await;
    submitted(
        app,
        &cy_cookie,
        "idempotency-key",
        passing_design("idempotency-key"),
        Some(&class),
    )
    .await;
    // Self-study keeps working exactly as before, and counts for no class.
    let own = submit(
        app,
        &bob_cookie,
        "safe-retry",
        passing_design("safe-retry"),
        None,
    )
    .await;
    assert_eq!(own.status, StatusCode::CREATED, "{}", own.text);
    assert!(own.body.get("class").is_none(), "{}", own.text);
    // Not a member of the other class; no such class.
    let outsider = submit(
        app,
        &cy_cookie,
        "safe-retry",
        failing_design(),
        Some(&other_class),
    )
    .await;
    assert_eq!(outsider.status, StatusCode::FORBIDDEN, "{}", outsider.text);
    assert_eq!(outsider.code(), ErrorCode::NotAMember);
    let nowhere = submit(
        app,
        &cy_cookie,
        "safe-retry",
        failing_design(),
        Some("c-nope"),
    )
    .await;
    assert_eq!(nowhere.status, StatusCode::NOT_FOUND, "{}", nowhere.text);
    assert_eq!(nowhere.code(), ErrorCode::UnknownClass);

    // The matrix says exactly that.
    let matrix = app
        .get(&format!("/api/classes/{class}/matrix"), &grader)
        .await;
    assert_eq!(matrix.status, StatusCode::OK, "{}", matrix.text);
    let m = &matrix.body;
    assert_eq!(m["members"], 3);
    let names: Vec<&str> = m["students"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["display_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["Ada L.", "Bob", "Cy"]);
    let c = cell(m, &ada, "safe-retry");
    assert_eq!(c["state"], "passed");
    assert_eq!(c["attempts"], 2);
    assert_eq!(c["attempts_before_first_pass"], 1);
    assert_eq!(c["outdated_attempts"], 0);
    assert!(c["last_attempt_at"].is_string());
    let c = cell(m, &bob, "safe-retry");
    assert_eq!(c["state"], "tried");
    // Bob's self-study attempt (which passed) is not the class's.
    assert_eq!(c["attempts"], 1);
    assert!(c.get("attempts_before_first_pass").is_none());
    let c = cell(m, &cy, "safe-retry");
    assert_eq!(c["state"], "not_tried");
    assert_eq!(c["attempts"], 0);
    assert!(c.get("last_attempt_at").is_none());
    let c = cell(m, &cy, "idempotency-key");
    assert_eq!(c["state"], "passed");
    assert_eq!(c["attempts_before_first_pass"], 0);
    let p = column(m, "safe-retry");
    assert_eq!(
        (&p["passed"], &p["tried"], &p["not_tried"]),
        (&json!(1), &json!(1), &json!(1))
    );
    let p = column(m, "idempotency-key");
    assert_eq!(
        (&p["passed"], &p["tried"], &p["not_tried"]),
        (&json!(1), &json!(0), &json!(2))
    );
    let row = |who: &str| {
        m["students"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["student"] == who)
            .unwrap()["passed"]
            .clone()
    };
    assert_eq!(
        (row(&ada), row(&bob), row(&cy)),
        (json!(1), json!(0), json!(1))
    );

    // A draft alone is not a try: only a Check for the class makes the scenario tried, as in
    // the student's own catalogue.
    let draft = app
        .put(
            "/api/drafts/safe-retry",
            &As::student(&cy_cookie),
            &json!({"design": failing_design()}),
        )
        .await;
    assert!(draft.status.is_success(), "{}", draft.text);
    let m2 = app
        .get(&format!("/api/classes/{class}/matrix"), &grader)
        .await
        .body;
    assert_eq!(cell(&m2, &cy, "safe-retry")["state"], "not_tried");
    assert_eq!(cell(&m2, &cy, "safe-retry")["attempts"], 0);
    assert_eq!(column(&m2, "safe-retry")["not_tried"], 1);

    // The requirements missed most: the append-only job misses all three of safe-retry's;
    // Ada and Bob missed each, Bob still does.
    let missed = app
        .get(&format!("/api/classes/{class}/missed"), &grader)
        .await;
    assert_eq!(missed.status, StatusCode::OK, "{}", missed.text);
    let safe = missed
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scenario"] == "safe-retry")
        .unwrap();
    assert_eq!(safe["students_tried"], 2);
    let requirements = safe["requirements"].as_array().unwrap();
    let ids: Vec<&str> = requirements
        .iter()
        .map(|r| r["requirement"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![
            "revenue-correct",
            "orders-unique",
            "one-revenue-row-per-day"
        ]
    );
    for r in requirements {
        assert_eq!(r["students"], 2, "{r}");
        assert_eq!(r["share"], 1.0, "{r}");
        assert_eq!(r["still_missing"], 1, "{r}");
        assert_eq!(
            r["missed_by"],
            json!([
                {"student": ada, "display_name": "Ada L.", "still_missing": false},
                {"student": bob, "display_name": "Bob", "still_missing": true},
            ])
        );
    }
    let ik = missed
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scenario"] == "idempotency-key")
        .unwrap();
    assert_eq!(ik["students_tried"], 1);
    assert_eq!(ik["requirements"], json!([]));

    // One student's attempts, in order, with their verdicts; one attempt with its design.
    let attempts = app
        .get(
            &format!("/api/classes/{class}/students/{ada}/attempts"),
            &grader,
        )
        .await;
    assert_eq!(attempts.status, StatusCode::OK, "{}", attempts.text);
    assert_eq!(attempts.body["display_name"], "Ada L.");
    let list = attempts.body["attempts"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["id"], ada_first.as_str());
    assert_eq!(list[0]["passed"], false);
    assert_eq!(
        list[0]["missed"],
        json!([
            "revenue-correct",
            "orders-unique",
            "one-revenue-row-per-day"
        ])
    );
    assert_eq!(list[0]["verdict"]["passed"], false);
    assert_eq!(list[1]["id"], ada_second.as_str());
    assert_eq!(list[1]["passed"], true);
    assert_eq!(list[1]["outdated"], false);
    let one = app
        .get(
            &format!("/api/classes/{class}/attempts/{ada_first}"),
            &grader,
        )
        .await;
    assert_eq!(one.status, StatusCode::OK, "{}", one.text);
    assert_eq!(one.body["design"], failing_design());
    assert_eq!(one.body["student"], ada.as_str());
    let not_here = app
        .get(
            &format!("/api/classes/{other_class}/attempts/{ada_first}"),
            &grader,
        )
        .await;
    assert_eq!(not_here.code(), ErrorCode::UnknownSubmission);
    let stranger = app
        .get(
            &format!("/api/classes/{other_class}/students/{bob}/attempts"),
            &grader,
        )
        .await;
    assert_eq!(stranger.status, StatusCode::NOT_FOUND);
    assert_eq!(stranger.code(), ErrorCode::UnknownStudent);

    // The CSV of the matrix: a row per student and scenario.
    let csv = app
        .get(&format!("/api/classes/{class}/matrix?format=csv"), &grader)
        .await;
    assert_eq!(csv.status, StatusCode::OK);
    assert_eq!(csv.header("content-type"), Some("text/csv; charset=utf-8"));
    let lines: Vec<&str> = csv.text.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0],
        "student,display_name,scenario,state,attempts,last_attempt_at,attempts_before_first_pass,outdated_attempts,late_attempts"
    );
    assert_eq!(lines.len(), 1 + 3 * scenarios().len());
    let ada_row = lines
        .iter()
        .find(|l| l.starts_with(&format!("{ada},Ada L.,safe-retry,")))
        .expect("Ada's safe-retry row");
    let fields: Vec<&str> = ada_row.split(',').collect();
    assert_eq!(fields[3..5], ["passed", "2"]);
    assert_eq!(fields[6..8], ["1", "0"]);
    assert!(lines.contains(&format!("{cy},Cy,logical-date,not_tried,0,,,0,0").as_str()));
    // The CSV of every attempt: as /api/submissions?format=csv writes them.
    let csv = app
        .get(
            &format!("/api/classes/{class}/attempts?format=csv"),
            &grader,
        )
        .await;
    assert_eq!(csv.status, StatusCode::OK);
    let lines: Vec<&str> = csv.text.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0],
        "student,display_name,scenario,score,max_score,passed,missed,submission_id,submitted_at,error,note"
    );
    assert_eq!(lines.len(), 5, "{}", csv.text);
    assert!(lines[1].starts_with(&format!(
        "{ada},Ada L.,safe-retry,0,3,false,revenue-correct;orders-unique;one-revenue-row-per-day,{ada_first},"
    )));
    assert!(lines[2].starts_with(&format!("{ada},Ada L.,safe-retry,3,3,true,,{ada_second},")));
    assert!(lines[3].starts_with(&format!("{bob},Bob,safe-retry,0,3,false,")));
    assert!(lines[4].starts_with(&format!("{cy},Cy,idempotency-key,")));
    let json_list = app
        .get(&format!("/api/classes/{class}/attempts"), &grader)
        .await;
    assert_eq!(json_list.body.as_array().unwrap().len(), 4);
    let bad = app
        .get(&format!("/api/classes/{class}/matrix?format=xml"), &grader)
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(bad.body["error"]["path"], "?format");

    // The preview setting: the student's list carries it.
    let set = app
        .send(
            Method::PATCH,
            &format!("/api/classes/{class}"),
            &grader,
            &[],
            Some(serde_json::to_vec(&json!({"preview": "lacks"})).unwrap()),
        )
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    assert_eq!(set.body["preview"], "lacks");
    let mine = app
        .get("/api/session/classes", &As::student(&bob_cookie))
        .await;
    assert_eq!(mine.body[0]["preview"], "lacks");
    let refused = app
        .send(
            Method::PATCH,
            &format!("/api/classes/{class}"),
            &grader,
            &[],
            Some(serde_json::to_vec(&json!({"preview": "some"})).unwrap()),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);

    // Closed: no join, no attempt; the members and their work stay. Reopened: both again.
    let closed = app
        .post(
            &format!("/api/classes/{class}/close"),
            &grader,
            &json!(null),
        )
        .await;
    assert_eq!(closed.status, StatusCode::OK, "{}", closed.text);
    assert_eq!(closed.body["open"], false);
    let (dee_cookie, _) = app.new_student().await;
    let late = app
        .post(
            "/api/classes/join",
            &As::student(&dee_cookie),
            &json!({"code": code, "display_name": "Dee"}),
        )
        .await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{}", late.text);
    assert_eq!(late.code(), ErrorCode::ClassClosed);
    let refused = submit(
        app,
        &bob_cookie,
        "safe-retry",
        passing_design("safe-retry"),
        Some(&class),
    )
    .await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text);
    assert_eq!(refused.code(), ErrorCode::ClassClosed);
    let matrix = app
        .get(&format!("/api/classes/{class}/matrix"), &grader)
        .await;
    assert_eq!(matrix.body["members"], 3);
    assert_eq!(cell(&matrix.body, &bob, "safe-retry")["attempts"], 1);
    let reopened = app
        .post(
            &format!("/api/classes/{class}/reopen"),
            &grader,
            &json!(null),
        )
        .await;
    assert_eq!(reopened.body["open"], true);
    assert_eq!(
        join(app, &dee_cookie, &code, "Dee").await,
        StatusCode::CREATED
    );
    submitted(
        app,
        &bob_cookie,
        "safe-retry",
        passing_design("safe-retry"),
        Some(&class),
    )
    .await;
    let matrix = app
        .get(&format!("/api/classes/{class}/matrix"), &grader)
        .await;
    assert_eq!(matrix.body["members"], 4);
    let c = cell(&matrix.body, &bob, "safe-retry");
    assert_eq!(
        (
            &c["state"],
            &c["attempts"],
            &c["attempts_before_first_pass"]
        ),
        (&json!("passed"), &json!(2), &json!(1))
    );

    // Unknown classes are said so.
    let unknown = app.get("/api/classes/c-none/matrix", &grader).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.code(), ErrorCode::UnknownClass);
}

crate::on_both_databases!(a_class_from_join_to_dashboard, |db| {
    a_class_from_join_to_dashboard(&db.app().await).await;
});

/// Every instructor route, with the body a grader would send.
fn instructor_routes(class: &str, student: &str) -> Vec<(Method, String, Option<Value>)> {
    vec![
        (Method::GET, "/api/classes".into(), None),
        (
            Method::POST,
            "/api/classes".into(),
            Some(json!({"name": "Mine now"})),
        ),
        (Method::GET, format!("/api/classes/{class}"), None),
        (
            Method::PATCH,
            format!("/api/classes/{class}"),
            Some(json!({"preview": "nothing"})),
        ),
        (Method::POST, format!("/api/classes/{class}/close"), None),
        (Method::POST, format!("/api/classes/{class}/reopen"), None),
        (Method::GET, format!("/api/classes/{class}/matrix"), None),
        (
            Method::GET,
            format!("/api/classes/{class}/matrix?format=csv"),
            None,
        ),
        (Method::GET, format!("/api/classes/{class}/missed"), None),
        (Method::GET, format!("/api/classes/{class}/attempts"), None),
        (
            Method::GET,
            format!("/api/classes/{class}/attempts?format=csv"),
            None,
        ),
        (
            Method::GET,
            format!("/api/classes/{class}/students/{student}/attempts"),
            None,
        ),
        (
            Method::POST,
            "/api/regrade".into(),
            Some(json!({"scenario": "safe-retry"})),
        ),
        (Method::GET, "/api/instructor/session".into(), None),
    ]
}

async fn students_never_reach_instructor_routes(app: &TestApp) {
    let token = app.grader_token("teacher").await;
    let (class, code) = new_class(app, &token, "Data 101").await;
    let (cookie, student) = app.new_student().await;
    join(app, &cookie, &code, "Ada").await;
    let revoked = app.grader_token("gone").await;
    assert!(app.state.store().revoke_token("gone").await.unwrap());
    for (method, uri, body) in instructor_routes(&class, &student) {
        let bytes = body.as_ref().map(|b| serde_json::to_vec(b).unwrap());
        for who in [As::student(&cookie), As::nobody(), As::grader(&revoked)] {
            let answer = app
                .send(method.clone(), &uri, &who, &[], bytes.clone())
                .await;
            assert_eq!(
                answer.status,
                StatusCode::UNAUTHORIZED,
                "{method} {uri} as {who:?}: {}",
                answer.text
            );
            assert_eq!(answer.code(), ErrorCode::Unauthorized);
        }
        // A student's cookie beside a grader cookie that is not a token is no better.
        let forged = As::student(&format!("{cookie}; pb_grader={student}"));
        let answer = app
            .send(method.clone(), &uri, &forged, &[], bytes.clone())
            .await;
        assert_eq!(
            answer.status,
            StatusCode::UNAUTHORIZED,
            "{method} {uri}: {}",
            answer.text
        );
        // And the grader is let in.
        let answer = app
            .send(method.clone(), &uri, &As::grader(&token), &[], bytes)
            .await;
        assert!(
            answer.status.is_success(),
            "{method} {uri}: {}",
            answer.text
        );
    }
    // Any valid token sees every class, whichever token made it, with its members.
    let assistant = app.grader_token("assistant").await;
    let seen = app
        .get(
            &format!("/api/classes/{class}/matrix"),
            &As::grader(&assistant),
        )
        .await;
    assert_eq!(seen.status, StatusCode::OK, "{}", seen.text);
    assert_eq!(seen.body["students"][0]["student"], student.as_str());
    let listed = app.get("/api/classes", &As::grader(&assistant)).await;
    assert!(listed
        .body
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["id"] == class.as_str() && c["created_by"] == "teacher"));
    // Nothing the student tried changed the class: the grader's own PATCH set `nothing`.
    let class_now = app
        .get(&format!("/api/classes/{class}"), &As::grader(&token))
        .await;
    assert_eq!(class_now.body["preview"], "nothing");
    assert_eq!(class_now.body["open"], true);
}

crate::on_both_databases!(students_never_reach_instructor_routes, |db| {
    students_never_reach_instructor_routes(&db.app().await).await;
});

#[tokio::test]
async fn an_instructor_signs_in_with_a_cookie_that_holds_the_token() {
    let (app, _) = on_sqlite("classes-sign-in").await;
    let token = app.grader_token("teacher").await;
    let localhost = [("host", "localhost:8080")];
    let wrong = app
        .send(
            Method::POST,
            "/api/instructor/session",
            &As::nobody(),
            &localhost,
            Some(serde_json::to_vec(&json!({"token": "pbt_nope"})).unwrap()),
        )
        .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.header("set-cookie").is_none());
    let signed = app
        .send(
            Method::POST,
            "/api/instructor/session",
            &As::nobody(),
            &localhost,
            Some(serde_json::to_vec(&json!({"token": token})).unwrap()),
        )
        .await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.text);
    assert_eq!(signed.body["name"], "teacher");
    let set = signed.header("set-cookie").unwrap().to_string();
    assert!(set.starts_with("__Host-pb_grader="), "{set}");
    for part in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(part), "{set} lacks {part}");
    }
    assert!(!signed.text.contains(&token), "the token is not echoed");
    let cookie = signed.cookie().unwrap();
    let who = As::student(&cookie);
    let me = app.get("/api/instructor/session", &who).await;
    assert_eq!(me.body["name"], "teacher");
    // Writes with the cookie: this site's own pages may; another site may not.
    let made = app
        .send(
            Method::POST,
            "/api/classes",
            &who,
            &[
                ("origin", "http://localhost:8080"),
                ("host", "localhost:8080"),
            ],
            Some(serde_json::to_vec(&json!({"name": "By cookie"})).unwrap()),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let forged = app
        .send(
            Method::POST,
            "/api/classes",
            &who,
            &[
                ("origin", "https://evil.example"),
                ("sec-fetch-site", "cross-site"),
            ],
            Some(serde_json::to_vec(&json!({"name": "Forged"})).unwrap()),
        )
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    assert_eq!(forged.code(), ErrorCode::CrossSiteRequest);
    let form = app
        .send(
            Method::POST,
            "/api/classes",
            &who,
            &[("content-type", "text/plain")],
            Some(b"{\"name\": \"Form\"}".to_vec()),
        )
        .await;
    assert_eq!(form.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let list = app.get("/api/classes", &As::grader(&token)).await;
    assert_eq!(list.body.as_array().unwrap().len(), 1);
    // A revoked token's cookie opens nothing; signing out expires the cookie.
    let out = app
        .send(
            Method::DELETE,
            "/api/instructor/session",
            &who,
            &localhost,
            None,
        )
        .await;
    assert_eq!(out.status, StatusCode::NO_CONTENT);
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    assert!(app.state.store().revoke_token("teacher").await.unwrap());
    let after = app.get("/api/classes", &who).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED);
}

/// The shipped scenarios with safe-retry's `revenue-correct` expecting `expected`, read back
/// from a copy of its file in `dir`.
pub(crate) fn changed_catalogue(dir: &TempDir, expected: &str) -> Catalogue {
    let text = std::fs::read_to_string(scenarios_dir().join("safe-retry.json")).unwrap();
    let mut file: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(file["requirements"][0]["id"], "revenue-correct");
    assert_eq!(file["requirements"][0]["check"]["expected"], "25.00");
    file["requirements"][0]["check"]["expected"] = json!(expected);
    let copy = dir.path().join("safe-retry.json");
    std::fs::write(&copy, serde_json::to_vec_pretty(&file).unwrap()).unwrap();
    let changed = shared::Compiled::parse(&std::fs::read_to_string(&copy).unwrap()).unwrap();
    let all = scenarios()
        .into_iter()
        .map(|s| {
            if s.scenario().id == "safe-retry" {
                changed.clone()
            } else {
                s
            }
        })
        .collect();
    Catalogue::new(all)
}

async fn regrading_keeps_old_and_new_verdicts(app: &TestApp) {
    let token = app.grader_token("teacher").await;
    let grader = As::grader(&token);
    let (class, code) = new_class(app, &token, "Data 101").await;
    let (ada_cookie, ada) = app.new_student().await;
    let (bob_cookie, bob) = app.new_student().await;
    let (cy_cookie, _) = app.new_student().await;
    join(app, &ada_cookie, &code, "Ada").await;
    join(app, &bob_cookie, &code, "Bob").await;
    let ada_pass = submitted(
        app,
        &ada_cookie,
        "safe-retry",
        passing_design("safe-retry"),
        Some(&class),
    )
    .await;
    submitted(
        app,
        &bob_cookie,
        "safe-retry",
        failing_design(),
        Some(&class),
    )
    .await;
    // Self-study, outside the class.
    submitted(
        app,
        &cy_cookie,
        "safe-retry",
        passing_design("safe-retry"),
        None,
    )
    .await;

    // The file changes: revenue-correct now expects 50.00, which the passing design misses.
    let dir = TempDir::new("regrade-scenario");
    let state = AppState::new(
        app.state.store().clone(),
        changed_catalogue(&dir, "50.00"),
        Config::default(),
    );
    let changed = TestApp {
        router: server::router(state.clone()),
        state,
        _dir: dir,
        _postgres: None,
    };
    // Before the regrade, the matrix says the results are from an older version.
    let m = changed
        .get(&format!("/api/classes/{class}/matrix"), &grader)
        .await
        .body;
    assert_eq!(cell(&m, &ada, "safe-retry")["outdated_attempts"], 1);
    assert_eq!(cell(&m, &ada, "safe-retry")["state"], "passed");
    assert_eq!(column(&m, "safe-retry")["outdated_attempts"], 2);

    let report = changed
        .post(
            "/api/regrade",
            &grader,
            &json!({"scenario": "safe-retry", "class": class}),
        )
        .await;
    assert_eq!(report.status, StatusCode::OK, "{}", report.text);
    let expected_changes = json!([
        {"requirement": "revenue-correct", "changed": 1, "now_met": 0, "now_missed": 1},
        {"requirement": "orders-unique", "changed": 0, "now_met": 0, "now_missed": 0},
        {"requirement": "one-revenue-row-per-day", "changed": 0, "now_met": 0, "now_missed": 0},
    ]);
    assert_eq!(report.body["outdated"], 2, "{}", report.text);
    assert_eq!(report.body["regraded_now"], 2);
    assert_eq!(report.body["regraded"], 2);
    assert_eq!(report.body["passed_changed"], 1);
    assert_eq!(report.body["invalid"], 0);
    assert_eq!(report.body["requirements"], expected_changes);

    // The old verdict is kept as it was; the new one is beside it.
    let old = changed
        .get(&format!("/api/submissions/{ada_pass}"), &grader)
        .await;
    assert_eq!(old.body["passed"], true);
    assert_eq!(old.body["verdict"]["passed"], true);
    let attempts = changed
        .get(
            &format!("/api/classes/{class}/students/{ada}/attempts"),
            &grader,
        )
        .await;
    let a = &attempts.body["attempts"][0];
    assert_eq!(a["passed"], true);
    assert_eq!(a["outdated"], false);
    assert_eq!(a["regrades"].as_array().unwrap().len(), 1);
    assert_eq!(a["regrades"][0]["current"], true);
    assert_eq!(a["regrades"][0]["passed"], false);
    assert_eq!(a["regrades"][0]["missed"], json!(["revenue-correct"]));
    let m = changed
        .get(&format!("/api/classes/{class}/matrix"), &grader)
        .await
        .body;
    assert_eq!(cell(&m, &ada, "safe-retry")["state"], "tried");
    assert_eq!(cell(&m, &ada, "safe-retry")["outdated_attempts"], 0);
    assert_eq!(cell(&m, &bob, "safe-retry")["state"], "tried");
    let missed = changed
        .get(&format!("/api/classes/{class}/missed"), &grader)
        .await;
    let safe = &missed
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scenario"] == "safe-retry")
        .unwrap()["requirements"];
    assert_eq!(safe[0]["requirement"], "revenue-correct");
    assert_eq!(safe[0]["students"], 2);

    // Again: nothing left to do, the same report.
    let again = changed
        .post(
            "/api/regrade",
            &grader,
            &json!({"scenario": "safe-retry", "class": class}),
        )
        .await;
    assert_eq!(again.body["regraded_now"], 0);
    assert_eq!(again.body["regraded"], 2);
    assert_eq!(again.body["requirements"], expected_changes);
    // Without a class: the self-study attempt too, and only it is new.
    let all = changed
        .post("/api/regrade", &grader, &json!({"scenario": "safe-retry"}))
        .await;
    assert_eq!(all.body["outdated"], 3, "{}", all.text);
    assert_eq!(all.body["regraded_now"], 1);
    assert_eq!(all.body["passed_changed"], 2);
    assert_eq!(all.body["requirements"][0]["changed"], 2);

    // A batch either commits whole or not at all: one bad row, and the good one is not kept.
    let store = app.state.store();
    let before = store.regrades(None, None).await.unwrap().len();
    let row = |attempt: &str| Regrade {
        attempt: attempt.to_string(),
        scenario_hash: "sha256:another".into(),
        verdict: None,
        error: Some("test".into()),
        score: 0,
        max_score: 3,
        passed: false,
        created_at: chrono::Utc::now(),
    };
    assert!(store
        .record_regrades(&[row(&ada_pass), row("no-such-attempt")])
        .await
        .is_err());
    assert_eq!(store.regrades(None, None).await.unwrap().len(), before);
    // The shipped file again: every result is current, nothing to regrade.
    let shipped = app
        .post("/api/regrade", &grader, &json!({"scenario": "safe-retry"}))
        .await;
    assert_eq!(shipped.body["outdated"], 0);
    assert_eq!(shipped.body["regraded_now"], 0);
    let unknown = app
        .post(
            "/api/regrade",
            &grader,
            &json!({"scenario": "safe-retry", "class": "c-none"}),
        )
        .await;
    assert_eq!(unknown.code(), ErrorCode::UnknownClass);
}

crate::on_both_databases!(regrading_keeps_old_and_new_verdicts, |db| {
    regrading_keeps_old_and_new_verdicts(&db.app().await).await;
});

/// The command: progress, the report, and a second run that finds nothing left. The copy of
/// the scenarios changes a requirement's wording, which changes the file's version but no
/// result (the command only serves files that pass the authors' checks).
#[tokio::test]
async fn the_regrade_command_prints_progress_and_resumes() {
    let (app, url) = on_sqlite("regrade-command").await;
    let (cookie, _) = app.new_student().await;
    submitted(
        &app,
        &cookie,
        "safe-retry",
        passing_design("safe-retry"),
        None,
    )
    .await;
    submitted(&app, &cookie, "safe-retry", failing_design(), None).await;
    let dir = TempDir::new("regrade-command-scenarios");
    for entry in std::fs::read_dir(scenarios_dir()).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    let file = dir.path().join("safe-retry.json");
    let mut scenario: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    scenario["requirements"][1]["text"] = json!("Each order appears in orders exactly once.");
    std::fs::write(&file, serde_json::to_vec_pretty(&scenario).unwrap()).unwrap();
    let run = || {
        Command::new(BIN)
            .args([
                "regrade",
                "--scenario",
                "safe-retry",
                "--database-url",
                &url,
                "--scenarios",
            ])
            .arg(dir.path())
            .env("RUST_LOG", "warn")
            .output()
            .expect("the binary runs")
    };
    let first = run();
    let out = String::from_utf8_lossy(&first.stdout).to_string();
    assert!(
        first.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(out.contains("regraded 2 of 2"), "{out}");
    assert!(
        out.contains(
            "2 attempt(s) made against an older version; 2 regraded by this run, 2 in all"
        ),
        "{out}"
    );
    assert!(
        out.contains("orders-unique: 0 changed (0 now met, 0 now missed)"),
        "{out}"
    );
    let second = run();
    let out = String::from_utf8_lossy(&second.stdout).to_string();
    assert!(second.status.success(), "{out}");
    assert!(out.contains("0 regraded by this run, 2 in all"), "{out}");
    let unknown = Command::new(BIN)
        .args([
            "regrade",
            "--scenario",
            "no-such",
            "--database-url",
            &url,
            "--scenarios",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    drop(app);
}

/// The sweeper removes sessions that did nothing, but never a member of a class: a student
/// who joined is on the instructor's roster even before a first attempt.
#[tokio::test]
async fn the_sweeper_keeps_a_member_who_did_nothing_yet() {
    let (app, _) = on_sqlite("classes-sweep").await;
    let token = app.grader_token("teacher").await;
    let (class, code) = new_class(&app, &token, "Data 101").await;
    let (member_cookie, member) = app.new_student().await;
    let (_, idle) = app.new_student().await;
    join(&app, &member_cookie, &code, "Ada").await;
    let removed = app
        .state
        .store()
        .sweep_workless_sessions(chrono::Utc::now() + chrono::Duration::days(1))
        .await
        .unwrap();
    assert_eq!(removed, 1);
    let matrix = app
        .get(&format!("/api/classes/{class}/matrix"), &As::grader(&token))
        .await;
    assert_eq!(matrix.body["students"][0]["student"], member.as_str());
    let gone = app.get("/api/session", &As::student(&member_cookie)).await;
    assert_eq!(gone.status, StatusCode::OK, "the member's session is kept");
    assert_ne!(member, idle);
}

/// The classes of every page of `GET /api/classes?limit={limit}`, following each page's
/// `Link: <…>; rel="next"` to the end: the ids, page by page.
async fn pages_of_classes(app: &TestApp, who: &As, limit: u32) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut next = Some(format!("/api/classes?limit={limit}"));
    while let Some(uri) = next.take() {
        let page = app.get(&uri, who).await;
        assert_eq!(page.status, StatusCode::OK, "{uri}: {}", page.text);
        let ids: Vec<String> = page
            .body
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect();
        assert!(ids.len() <= limit as usize, "{uri}: {ids:?}");
        pages.push(ids);
        next = page.header("link").map(|link| {
            assert!(link.ends_with("; rel=\"next\""), "{link}");
            link.trim_start_matches('<')
                .split('>')
                .next()
                .unwrap()
                .to_string()
        });
        assert!(pages.len() <= 20, "the pages end");
    }
    pages
}

async fn classes_come_in_pages_and_a_token_makes_at_most_its_share(app: &TestApp) {
    let first = app.grader_token("first").await;
    let second = app.grader_token("second").await;
    for i in 0..5 {
        new_class(app, &first, &format!("Section {i}")).await;
    }
    // The sixth class of one token is refused, and nothing is made.
    let refused = app
        .post(
            "/api/classes",
            &As::grader(&first),
            &json!({"name": "Section 5"}),
        )
        .await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text);
    assert_eq!(refused.code(), ErrorCode::ClassLimitReached);
    assert!(refused.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--classes-per-token-max"));
    // Another token has classes of its own to make.
    for i in 0..2 {
        new_class(app, &second, &format!("Lab {i}")).await;
    }
    let grader = As::grader(&second);
    let all = app.get("/api/classes?limit=1000", &grader).await;
    assert!(all.header("link").is_none(), "one page holds them all");
    let every: Vec<String> = all
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(every.len(), 7, "{every:?}");
    // Pages of three: 3, 3, 1, in the same order, each class once, the last without a Link.
    let pages = pages_of_classes(app, &grader, 3).await;
    let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
    assert_eq!(sizes, [3, 3, 1]);
    assert_eq!(pages.concat(), every);
    // The default page is 100.
    let default = app.get("/api/classes", &grader).await;
    assert_eq!(default.body.as_array().unwrap().len(), 7);
    // A limit out of range or a cursor the server did not give is refused, by name.
    for (uri, path) in [
        ("/api/classes?limit=0", "?limit"),
        ("/api/classes?limit=1001", "?limit"),
        ("/api/classes?cursor=not-a-cursor", "?cursor"),
        ("/api/classes?cursor=bm90fGl0", "?cursor"),
    ] {
        let answer = app.get(uri, &grader).await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}");
        assert_eq!(answer.code(), ErrorCode::InvalidRequest, "{uri}");
        assert_eq!(answer.body["error"]["path"], path, "{uri}");
    }
}

async fn capped(store: Store, label: &str) -> TestApp {
    let config = Config {
        classes_per_token_max: 5,
        ..Config::default()
    };
    spawn_app_on(store, config, TempDir::new(label))
}

crate::on_both_databases!(
    classes_come_in_pages_and_a_token_makes_at_most_its_share,
    |db| {
        let app = capped(db.store().await, "class-pages-app").await;
        classes_come_in_pages_and_a_token_makes_at_most_its_share(&app).await;
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_classes_made_at_once_cannot_both_take_a_tokens_last_place_on_postgres() {
    let Some(db) = postgres::database("class_cap_race").await else {
        return;
    };
    let store = Store::connect(&db.url).await.expect("PostgreSQL connects");
    for round in 0..5 {
        let racers: Vec<_> = (0..8)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    store
                        .create_class_within(
                            &format!("c-{round}-{i}"),
                            "Race",
                            &format!("CODE{round}{i}"),
                            &format!("racer-{round}"),
                            3,
                        )
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut made = Vec::new();
        for racer in racers {
            made.push(racer.await.unwrap());
        }
        let won = made
            .iter()
            .filter(|m| matches!(m, server::store::ClassMade::Made(_)))
            .count();
        assert_eq!(won, 3, "round {round}: {made:?}");
    }
}
