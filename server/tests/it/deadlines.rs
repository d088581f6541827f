//! Due dates on SQLite and PostgreSQL: an attempt after the due date is recorded and marked
//! late under the policy `accept` (the dashboard, the attempts CSV and the gradebook say so,
//! and its score does not count), refused with `past_due` under `refuse` (nothing recorded);
//! an extension lets one student in; the student sees their own due dates; the audit log
//! records each change.

use axum::http::{Method, StatusCode};
use chrono::{Duration, SecondsFormat, Utc};
use serde_json::{json, Value};
use server::error::ErrorCode;

use crate::common::{failing_design, passing_design, As, TestApp};

fn moment(offset: Duration) -> String {
    (Utc::now() + offset).to_rfc3339_opts(SecondsFormat::Millis, true)
}

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

async fn submit(app: &TestApp, cookie: &str, design: Value, class: &str) -> crate::common::Answer {
    app.post(
        "/api/submissions",
        &As::student(cookie),
        &json!({"scenario": "safe-retry", "design": design, "class": class}),
    )
    .await
}

async fn attempts_of(app: &TestApp, cookie: &str) -> usize {
    app.get("/api/submissions", &As::student(cookie))
        .await
        .body
        .as_array()
        .unwrap()
        .len()
}

async fn late_attempts_are_marked_or_refused(app: TestApp) {
    let token = app.grader_token("teacher").await;
    let grader = As::grader(&token);
    let made = app
        .post("/api/classes", &grader, &json!({"name": "Data 101"}))
        .await;
    let class = made.body["id"].as_str().unwrap().to_string();
    let code = made.body["join_code"].as_str().unwrap().to_string();
    let (ada_cookie, ada) = join(&app, &code, "Ada").await;
    let (bob_cookie, bob) = join(&app, &code, "Bob").await;
    let deadlines = format!("/api/classes/{class}/deadlines");

    // Ada fails on time; then the class's due date passes and her passing attempt is late.
    assert_eq!(
        submit(&app, &ada_cookie, failing_design(), &class)
            .await
            .status,
        StatusCode::CREATED
    );
    let set = app
        .put(
            &deadlines,
            &grader,
            &json!({"due_at": moment(Duration::zero()), "late_policy": "accept"}),
        )
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert_eq!(set.body["late_policy"], "accept");
    let late = submit(&app, &ada_cookie, passing_design("safe-retry"), &class).await;
    assert_eq!(late.status, StatusCode::CREATED, "{}", late.text);
    assert_eq!(late.body["late"], true, "the answer says it is late");
    assert_eq!(late.body["passed"], true);

    // The dashboard, the attempts CSV and the gradebook mark it; its score does not count.
    let attempts = app
        .get(
            &format!("/api/classes/{class}/students/{ada}/attempts"),
            &grader,
        )
        .await;
    let lates: Vec<bool> = attempts.body["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["late"] == true)
        .collect();
    assert_eq!(lates, [false, true]);
    let matrix = app
        .get(&format!("/api/classes/{class}/matrix"), &grader)
        .await;
    let row = matrix.body["students"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["student"] == ada.as_str())
        .unwrap()
        .clone();
    let cell = row["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["scenario"] == "safe-retry")
        .unwrap()
        .clone();
    assert_eq!(cell["late_attempts"], 1);
    let matrix_csv = app
        .get(&format!("/api/classes/{class}/matrix?format=csv"), &grader)
        .await;
    let mut reader = ::csv::ReaderBuilder::new().from_reader(matrix_csv.text.as_bytes());
    let late_column = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "late_attempts")
        .unwrap();
    let ada_retry = reader
        .records()
        .map(Result::unwrap)
        .find(|r| &r[0] == ada.as_str() && &r[2] == "safe-retry")
        .unwrap();
    assert_eq!(&ada_retry[late_column], "1");
    let csv = app
        .get(
            &format!("/api/classes/{class}/attempts?format=csv"),
            &grader,
        )
        .await;
    let mut reader = ::csv::ReaderBuilder::new().from_reader(csv.text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    let note = header.iter().position(|h| h == "note").unwrap();
    let notes: Vec<String> = reader
        .records()
        .map(|r| r.unwrap()[note].to_string())
        .collect();
    assert_eq!(notes.len(), 2);
    assert_eq!(notes[0], "");
    assert!(notes[1].starts_with("late: due "), "{notes:?}");
    let book = app
        .get(&format!("/api/classes/{class}/gradebook"), &grader)
        .await;
    let ada_row = book.body["students"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["student"] == ada.as_str())
        .unwrap()
        .clone();
    let retry = book.body["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .position(|s| s["scenario"] == "safe-retry")
        .unwrap();
    let failed = ada_row["grades"][retry]["computed"].as_u64().unwrap();
    assert!(failed < 3);
    assert_eq!(
        ada_row["grades"][retry]["late"], 3,
        "the late attempt's score, shown beside"
    );
    assert_eq!(
        ada_row["grades"][retry]["score"], failed,
        "the on-time best counts"
    );

    // Under `refuse`, a late attempt is refused and nothing is recorded.
    let set = app
        .put(&deadlines, &grader, &json!({"scenarios": {"safe-retry": moment(-Duration::minutes(5))}, "late_policy": "refuse"}))
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    assert_eq!(set.body["scenarios"][0]["source"], "staff");
    assert!(
        set.body.get("due_at").is_none(),
        "the class's own due date is gone: {}",
        set.text
    );
    let refused = submit(&app, &bob_cookie, passing_design("safe-retry"), &class).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text);
    assert_eq!(refused.code(), ErrorCode::PastDue);
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("extension"),
        "{}",
        refused.text
    );
    assert_eq!(attempts_of(&app, &bob_cookie).await, 0);

    // An extension lets Bob in, and him alone.
    let until = moment(Duration::hours(2));
    let extension = format!("/api/classes/{class}/students/{bob}/extension");
    let given = app
        .put(
            &extension,
            &grader,
            &json!({"scenario": "safe-retry", "due_at": until}),
        )
        .await;
    assert_eq!(given.status, StatusCode::OK, "{}", given.text);
    assert_eq!(given.body["display_name"], "Bob");
    let on_time = submit(&app, &bob_cookie, passing_design("safe-retry"), &class).await;
    assert_eq!(on_time.status, StatusCode::CREATED, "{}", on_time.text);
    assert!(on_time.body.get("late").is_none(), "{}", on_time.text);
    let still = submit(&app, &ada_cookie, passing_design("safe-retry"), &class).await;
    assert_eq!(still.status, StatusCode::CONFLICT, "{}", still.text);

    // Each student sees their own due date and the policy.
    let mine = app
        .get("/api/session/classes", &As::student(&bob_cookie))
        .await;
    let due =
        chrono::DateTime::parse_from_rfc3339(mine.body[0]["due"]["safe-retry"].as_str().unwrap())
            .unwrap();
    assert_eq!(due, chrono::DateTime::parse_from_rfc3339(&until).unwrap());
    assert_eq!(mine.body[0]["late_policy"], "refuse");
    let hers = app
        .get("/api/session/classes", &As::student(&ada_cookie))
        .await;
    assert_ne!(
        hers.body[0]["due"]["safe-retry"],
        mine.body[0]["due"]["safe-retry"]
    );

    // Bad dates and unknown scenarios are refused where they are.
    let bad = app
        .put(&deadlines, &grader, &json!({"due_at": "next friday"}))
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(bad.body["error"]["path"], "$.due_at", "{}", bad.text);
    let unknown = app
        .put(
            &deadlines,
            &grader,
            &json!({"scenarios": {"no-such": moment(Duration::hours(1))}}),
        )
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.text);

    // The extension is taken back; the audit log has every change.
    let back = app
        .send(
            Method::DELETE,
            &format!("{extension}?scenario=safe-retry"),
            &grader,
            &[],
            None,
        )
        .await;
    assert_eq!(back.status, StatusCode::NO_CONTENT, "{}", back.text);
    let again = app
        .send(
            Method::DELETE,
            &format!("{extension}?scenario=safe-retry"),
            &grader,
            &[],
            None,
        )
        .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "{}", again.text);
    let listed = app.get(&deadlines, &grader).await;
    assert_eq!(listed.body["extensions"], json!([]));
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
        actions,
        [
            "class_made",
            "deadlines_changed",
            "deadlines_changed",
            "extension_granted",
            "extension_removed"
        ]
    );
}

crate::on_both_databases!(late_attempts_are_marked_or_refused, |db| {
    late_attempts_are_marked_or_refused(db.app().await).await;
});
