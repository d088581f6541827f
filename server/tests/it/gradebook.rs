//! The gradebook on SQLite and PostgreSQL: a class with a regraded score, a failed one, a late
//! one, scores set by hand (one for a scenario never tried, one whose reason starts like a
//! formula) and missing ones. Its wide CSV, read by a CSV reader, has one row per member with their name,
//! one column per scenario, the total and the overrides in words; the JSON keeps the computed
//! score beside the one set by hand; removing an override brings the computed score back; the
//! audit log records both.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use server::{AppState, Config};

use crate::classes::changed_catalogue;
use crate::common::{failing_design, passing_design, As, TempDir, TestApp};

async fn join(app: &TestApp, code: &str, name: &str) -> (String, String) {
    let (cookie, id) = app.new_student().await;
    let joined = app
        .post(
            "/api/classes/join",
            &As::student(&cookie),
            &json!({"code": code, "display_name": name}),
        )
        .await;
    assert!(joined.status.is_success(), "{}", joined.text);
    (cookie, id)
}

async fn submit(app: &TestApp, cookie: &str, design: Value, class: &str) -> u64 {
    let answer = app
        .post(
            "/api/submissions",
            &As::student(cookie),
            &json!({"scenario": "safe-retry", "design": design, "class": class}),
        )
        .await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);
    answer.body["score"].as_u64().unwrap()
}

/// The CSV as a CSV reader reads it: the header, then each record.
fn read_csv(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = ::csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let header = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    let rows = reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect();
    (header, rows)
}

async fn the_gradebook_has_each_members_scores(app: TestApp) {
    let token = app.grader_token("teacher").await;
    let grader = As::grader(&token);
    let made = app
        .post("/api/classes", &grader, &json!({"name": "Data 101"}))
        .await;
    let class = made.body["id"].as_str().unwrap().to_string();
    let code = made.body["join_code"].as_str().unwrap().to_string();
    let (ada_cookie, ada) = join(&app, &code, "Ada").await;
    let (bob_cookie, bob) = join(&app, &code, "Bob").await;
    let (cy_cookie, cy) = join(&app, &code, "Cy").await;
    assert_eq!(
        submit(&app, &ada_cookie, passing_design("safe-retry"), &class).await,
        3
    );
    let bob_score = submit(&app, &bob_cookie, failing_design(), &class).await;
    assert!(bob_score < 3);

    // The scenario changes and the class is regraded: Ada's passing design now misses one
    // requirement.
    let dir = TempDir::new("gradebook-changed");
    let state = AppState::new(
        app.state.store().clone(),
        changed_catalogue(&dir, "50.00"),
        Config::default(),
    );
    let app = TestApp {
        router: server::router(state.clone()),
        state,
        _dir: dir,
        _postgres: None,
    };
    let regraded = app
        .post(
            "/api/regrade",
            &grader,
            &json!({"scenario": "safe-retry", "class": class}),
        )
        .await;
    assert_eq!(regraded.status, StatusCode::OK, "{}", regraded.text);

    // Scores set by hand: Bob at safe-rerun (never tried), Cy at safe-retry, with a reason a
    // spreadsheet would run as a formula.
    let set = |student: &str, scenario: &str| {
        format!("/api/classes/{class}/students/{student}/scores/{scenario}")
    };
    let bob_rerun = app
        .put(
            &set(&bob, "safe-rerun"),
            &grader,
            &json!({"score": 2, "reason": "late upload, accepted"}),
        )
        .await;
    assert_eq!(bob_rerun.status, StatusCode::OK, "{}", bob_rerun.text);
    assert_eq!(bob_rerun.body["by"], "admin:teacher");
    let cy_retry = app
        .put(
            &set(&cy, "safe-retry"),
            &grader,
            &json!({"score": 1, "reason": "=1+1 by hand"}),
        )
        .await;
    assert_eq!(cy_retry.status, StatusCode::OK, "{}", cy_retry.text);
    // A score above the scenario's points, an empty reason and a stranger are refused.
    let above = app
        .put(
            &set(&cy, "safe-retry"),
            &grader,
            &json!({"score": 4, "reason": "x"}),
        )
        .await;
    assert_eq!(
        above.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        above.text
    );
    let empty = app
        .put(
            &set(&cy, "safe-retry"),
            &grader,
            &json!({"score": 1, "reason": "  "}),
        )
        .await;
    assert_eq!(
        empty.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        empty.text
    );
    let stranger = app
        .put(
            &set("s-00000000000000000000000000000000", "safe-retry"),
            &grader,
            &json!({"score": 1, "reason": "x"}),
        )
        .await;
    assert_eq!(stranger.status, StatusCode::NOT_FOUND, "{}", stranger.text);

    // The class's due date passes; Cy's attempt after it is late and does not count.
    let due = app
        .put(
            &format!("/api/classes/{class}/deadlines"),
            &grader,
            &json!({"due_at": chrono::Utc::now().to_rfc3339()}),
        )
        .await;
    assert_eq!(due.status, StatusCode::OK, "{}", due.text);
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let late_score = submit(&app, &cy_cookie, passing_design("safe-retry"), &class).await;

    let book = app
        .get(&format!("/api/classes/{class}/gradebook"), &grader)
        .await;
    assert_eq!(book.status, StatusCode::OK, "{}", book.text);
    let scenarios: Vec<&str> = book.body["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["scenario"].as_str().unwrap())
        .collect();
    let column = |id: &str| scenarios.iter().position(|s| *s == id).unwrap();
    let row = |name: &str| {
        book.body["students"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["display_name"] == name)
            .unwrap()
            .clone()
    };
    let (ada_row, bob_row, cy_row) = (row("Ada"), row("Bob"), row("Cy"));
    let retry = column("safe-retry");
    assert_eq!(
        ada_row["grades"][retry]["computed"], 2,
        "the regraded score: {}",
        book.text
    );
    assert_eq!(ada_row["grades"][retry]["score"], 2);
    assert_eq!(bob_row["grades"][retry]["score"], bob_score);
    assert_eq!(
        bob_row["grades"][column("safe-rerun")],
        json!({
            "scenario": "safe-rerun", "computed": null, "score": 2, "attempts": 0,
            "overridden": {"score": 2, "reason": "late upload, accepted", "by": "admin:teacher", "at": bob_rerun.body["at"]},
        })
    );
    assert_eq!(cy_row["grades"][retry]["computed"], Value::Null);
    assert_eq!(cy_row["grades"][retry]["late"], late_score);
    assert_eq!(cy_row["grades"][retry]["score"], 1);
    assert_eq!(cy_row["grades"][column("safe-rerun")]["score"], Value::Null);
    assert_eq!(bob_row["total"], bob_score + 2);

    // The CSV, as a reader sees it.
    let csv_answer = app
        .get(
            &format!("/api/classes/{class}/gradebook?format=csv"),
            &grader,
        )
        .await;
    assert_eq!(
        csv_answer.header("content-type"),
        Some("text/csv; charset=utf-8")
    );
    let (header, rows) = read_csv(&csv_answer.text);
    let mut expected: Vec<String> = ["student", "display_name", "lti_issuer", "lti_subject"]
        .map(String::from)
        .to_vec();
    expected.extend(scenarios.iter().map(|s| s.to_string()));
    expected.extend(["total", "max_total", "overrides"].map(String::from));
    assert_eq!(header, expected);
    assert_eq!(rows.len(), 4, "the most points, then one row per member");
    assert_eq!(rows[0][1], "(most points)");
    assert_eq!(rows[0][4 + retry], "3");
    let names: Vec<&str> = rows[1..].iter().map(|r| r[1].as_str()).collect();
    assert_eq!(names, ["Ada", "Bob", "Cy"]);
    let at = |r: usize, name: &str| rows[r][header.iter().position(|h| h == name).unwrap()].clone();
    assert_eq!(
        (at(1, "student"), at(1, "safe-retry"), at(1, "total")),
        (ada.clone(), "2".into(), "2".into())
    );
    assert_eq!(at(2, "safe-rerun"), "2");
    assert_eq!(
        at(2, "overrides"),
        "safe-rerun: 2 set by admin:teacher (computed no attempt): late upload, accepted"
    );
    assert_eq!(at(3, "safe-retry"), "1");
    assert_eq!(at(3, "safe-rerun"), "", "a missing score is an empty cell");
    assert!(
        at(3, "overrides").ends_with(&format!(
            "; safe-retry: late attempts, best {late_score} (not counted)"
        )),
        "{}",
        at(3, "overrides")
    );
    assert!(
        at(3, "overrides").starts_with("safe-retry: 1 set by"),
        "{}",
        at(3, "overrides")
    );
    let max_total: u64 = book.body["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["max_score"].as_u64().unwrap())
        .sum();
    assert_eq!(at(1, "max_total"), max_total.to_string());

    // Removing Cy's score brings back the computed one (none); the audit log has both.
    let removed = app
        .send(Method::DELETE, &set(&cy, "safe-retry"), &grader, &[], None)
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT, "{}", removed.text);
    let again = app
        .send(Method::DELETE, &set(&cy, "safe-retry"), &grader, &[], None)
        .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "{}", again.text);
    let book = app
        .get(&format!("/api/classes/{class}/gradebook"), &grader)
        .await;
    let cy_row = book.body["students"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["display_name"] == "Cy")
        .unwrap()
        .clone();
    assert_eq!(cy_row["grades"][retry]["score"], Value::Null);
    assert_eq!(cy_row["total"], 0);
    let audit = app
        .get(&format!("/api/classes/{class}/audit"), &grader)
        .await;
    let actions: Vec<&str> = audit
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions.iter().filter(|a| **a == "score_overridden").count(),
        2,
        "{actions:?}"
    );
    assert_eq!(actions.last(), Some(&"override_removed"));
    assert!(actions.contains(&"deadlines_changed"), "{actions:?}");
    assert!(actions.contains(&"regraded"), "{actions:?}");
}

crate::on_both_databases!(the_gradebook_has_each_members_scores, |db| {
    the_gradebook_has_each_members_scores(db.app().await).await;
});
