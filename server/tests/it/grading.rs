//! Grading a class that mixes valid and invalid designs: every student gets a result in every
//! format (JSON, Gradescope's `results.json`, CSV), on SQLite and on PostgreSQL; and error
//! paths and words that point into what was sent.

use axum::http::StatusCode;
use serde_json::{json, Value};
use server::error::ErrorCode;
use server::{Config, Store};

use crate::autograde::assert_gradescope_result;
use crate::common::{
    failing_design, passing_design, spawn_app, spawn_app_on, As, TempDir, TestApp,
};
use crate::postgres;

/// Five students: one passes, one fails, and three cannot be graded (an unknown kind, an
/// unknown scenario, an item without a design). A name with a comma and a quote tests the
/// CSV's quoting.
fn mixed_class() -> Value {
    json!([
        {"scenario": "safe-retry", "student": "ada", "design": passing_design("safe-retry")},
        {"scenario": "safe-retry", "student": "bob \"the builder\", jr", "design": failing_design()},
        {"scenario": "safe-retry", "student": "cy", "design": {"nodes": [{"id": "x", "kind": "bogus"}]}},
        {"scenario": "no-such", "student": "dee", "design": passing_design("safe-retry")},
        {"scenario": "safe-retry", "student": "eve"},
    ])
}

/// RFC 4180 records: quoted fields may hold commas, CRLFs and doubled quotes.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\r') if chars.peek() == Some(&'\n') => {
                chars.next();
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(
        field.is_empty() && record.is_empty(),
        "the CSV ends with CRLF: {text:?}"
    );
    records
}

const HEADER: [&str; 9] = [
    "student",
    "scenario",
    "score",
    "max_score",
    "passed",
    "missed",
    "submission_id",
    "submitted_at",
    "error",
];

async fn every_student_gets_a_csv_row(app: &TestApp) {
    let token = app.grader_token("ta").await;
    let grader = As::grader(&token);
    let answer = app
        .post("/api/grade?format=csv", &grader, &mixed_class())
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert_eq!(
        answer.header("content-type"),
        Some("text/csv; charset=utf-8")
    );
    let records = parse_csv(&answer.text);
    assert_eq!(records[0], HEADER);
    let rows = &records[1..];
    assert_eq!(rows.len(), 5, "one row per item: {}", answer.text);
    for row in rows {
        assert_eq!(row.len(), HEADER.len(), "{row:?}");
    }
    let all_missed = "revenue-correct;orders-unique;one-revenue-row-per-day";
    assert_eq!(rows[0][..6], ["ada", "safe-retry", "3", "3", "true", ""]);
    assert!(!rows[0][6].is_empty() && rows[0][7].ends_with('Z'));
    assert_eq!(
        rows[1][..6],
        [
            "bob \"the builder\", jr",
            "safe-retry",
            "0",
            "3",
            "false",
            all_missed
        ]
    );
    assert!(answer.text.contains("\"bob \"\"the builder\"\", jr\""));
    // Not graded: no record, and why.
    assert_eq!(
        rows[2][..6],
        ["cy", "safe-retry", "0", "3", "false", all_missed]
    );
    assert_eq!(rows[2][6..8], ["", ""]);
    assert!(
        rows[2][8].contains("$.design.nodes[0].kind") && rows[2][8].contains("bogus"),
        "{:?}",
        rows[2][8]
    );
    assert_eq!(rows[3][..6], ["dee", "no-such", "0", "", "false", ""]);
    assert!(rows[3][8].contains("no-such"), "{:?}", rows[3][8]);
    assert_eq!(rows[4][0], "eve");
    assert!(rows[4][8].contains("design"), "{:?}", rows[4][8]);

    // The recorded attempts, read back as CSV: the same rows for the graded items.
    let listed = app
        .get("/api/submissions?scenario=safe-retry&format=csv", &grader)
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    assert_eq!(
        listed.header("content-type"),
        Some("text/csv; charset=utf-8")
    );
    let records = parse_csv(&listed.text);
    assert_eq!(records[0], HEADER);
    let mut listed_rows = records[1..].to_vec();
    listed_rows.sort();
    let mut graded_rows = rows[..2].to_vec();
    graded_rows.sort();
    assert_eq!(listed_rows, graded_rows);

    let bad = app.get("/api/submissions?format=gradescope", &grader).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(bad.code(), ErrorCode::InvalidRequest);
    assert_eq!(bad.body["error"]["path"], "?format");
}

#[tokio::test]
async fn every_student_gets_a_csv_row_on_sqlite() {
    every_student_gets_a_csv_row(&spawn_app().await).await;
}

#[tokio::test]
async fn every_student_gets_a_csv_row_on_postgres() {
    let Some(db) = postgres::database("every_student_gets_a_csv_row_on_postgres").await else {
        return;
    };
    let store = Store::connect(&db.url).await.expect("PostgreSQL connects");
    let app = spawn_app_on(store, Config::default(), TempDir::new("grading-pg"));
    every_student_gets_a_csv_row(&app).await;
}

#[tokio::test]
async fn every_item_of_a_gradescope_batch_is_a_valid_results_json() {
    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    let answer = app
        .post(
            "/api/grade?format=gradescope",
            &As::grader(&token),
            &mixed_class(),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let results = answer.body.as_array().unwrap();
    assert_eq!(results.len(), 5);
    for (i, r) in results.iter().enumerate() {
        assert_gradescope_result(&format!("item {i}"), r);
        assert_eq!(r["extra_data"]["index"], i);
    }
    assert_eq!(results[0]["score"], 3);
    assert_eq!(
        results[1]["extra_data"]["student"],
        "bob \"the builder\", jr"
    );

    let invalid = &results[2];
    assert_eq!(invalid["score"], 0);
    assert_eq!(invalid["extra_data"]["student"], "cy");
    assert_eq!(invalid["extra_data"]["error"]["code"], "invalid_design");
    let output = invalid["output"].as_str().unwrap();
    assert!(
        output.contains("Not graded: the design is invalid")
            && output.contains("`$.design.nodes[0].kind`"),
        "{output}"
    );
    let tests = invalid["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 3);
    for t in tests {
        assert_eq!(t["status"], "failed");
        assert_eq!(t["output"], "Not checked: the design is invalid.");
    }
    // An unknown scenario has no requirements to list; the result still says why.
    assert_eq!(results[3]["extra_data"]["student"], "dee");
    assert!(results[3]["output"].as_str().unwrap().contains("no-such"));
    assert_eq!(results[4]["extra_data"]["student"], "eve");
    assert_eq!(results[4]["tests"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn design_error_paths_point_into_the_body_that_was_sent() {
    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    let bad =
        json!({"nodes": [{"id": "src", "kind": "source_table"}, {"id": "x", "kind": "bogus"}]});
    let submitted = app
        .post(
            "/api/submissions",
            &As::grader(&token),
            &json!({"scenario": "safe-retry", "student": "ada", "design": bad}),
        )
        .await;
    assert_eq!(submitted.code(), ErrorCode::InvalidDesign);
    assert_eq!(submitted.body["error"]["path"], "$.design.nodes[1].kind");
    for d in submitted.body["error"]["details"].as_array().unwrap() {
        assert!(d["path"].as_str().unwrap().starts_with("$.design."), "{d}");
    }
    // The check route's body is the design itself.
    let checked = app
        .post("/api/scenarios/safe-retry/check", &As::nobody(), &bad)
        .await;
    assert_eq!(checked.body["error"]["path"], "$.nodes[1].kind");
    // A scenario the URL names is reported at the URL.
    let unknown = app
        .post("/api/scenarios/no-such/check", &As::nobody(), &bad)
        .await;
    assert_eq!(unknown.code(), ErrorCode::UnknownScenario);
    assert_eq!(
        unknown.body["error"]["path"],
        "/api/scenarios/no-such/check"
    );
    let unknown = app.get("/api/scenarios/no-such", &As::nobody()).await;
    assert_eq!(unknown.body["error"]["path"], "/api/scenarios/no-such");
    // A scenario the body names is reported in the body.
    let unknown = app
        .post(
            "/api/submissions",
            &As::grader(&token),
            &json!({"scenario": "no-such", "student": "ada", "design": bad}),
        )
        .await;
    assert_eq!(unknown.body["error"]["path"], "$.scenario");
}

#[tokio::test]
async fn submitting_for_a_named_student_without_a_token_says_a_token_is_needed() {
    let app = spawn_app().await;
    let (cookie, _) = app.new_student().await;
    let answer = app
        .post(
            "/api/submissions",
            &As::student(&cookie),
            &json!({"scenario": "safe-retry", "student": "someone-else", "design": failing_design()}),
        )
        .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    let message = answer.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("needs a grader token"), "{message}");
    assert_eq!(answer.body["error"]["path"], "$.student");
    let listed = app
        .get(
            "/api/submissions?student=someone-else",
            &As::student(&cookie),
        )
        .await;
    assert_eq!(listed.status, StatusCode::FORBIDDEN);
    assert!(listed.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("needs a grader token"));
}
