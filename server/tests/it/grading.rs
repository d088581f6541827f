//! Grading a class that mixes valid and invalid designs: every student gets a result in every
//! format (JSON, Gradescope's `results.json`, CSV), on SQLite and on PostgreSQL; and error
//! paths and words that point into what was sent.

use axum::http::StatusCode;
use serde_json::{json, Value};
use server::error::ErrorCode;

use crate::autograde::assert_gradescope_result;
use crate::common::{failing_design, passing_design, spawn_app, As, TestApp};

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
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
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

const HEADER: [&str; 11] = [
    "student",
    "display_name",
    "scenario",
    "score",
    "max_score",
    "passed",
    "missed",
    "submission_id",
    "submitted_at",
    "error",
    "note",
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
    assert_eq!(
        rows[0][..7],
        ["ada", "", "safe-retry", "3", "3", "true", ""]
    );
    assert!(!rows[0][7].is_empty() && rows[0][8].ends_with('Z'));
    assert_eq!(
        rows[1][..7],
        [
            "bob \"the builder\", jr",
            "",
            "safe-retry",
            "0",
            "3",
            "false",
            all_missed
        ]
    );
    assert!(answer.text.contains("\"bob \"\"the builder\"\", jr\""));
    // Not graded: nothing was checked, so nothing is missed; no record, and why.
    assert_eq!(
        rows[2][..7],
        ["cy", "", "safe-retry", "0", "3", "false", ""]
    );
    assert_eq!(rows[2][7..9], ["", ""]);
    assert!(
        rows[2][9].contains("$.design.nodes[0].kind") && rows[2][9].contains("bogus"),
        "{:?}",
        rows[2][9]
    );
    assert_eq!(rows[3][..7], ["dee", "", "no-such", "0", "", "false", ""]);
    assert!(rows[3][9].contains("no-such"), "{:?}", rows[3][9]);
    assert_eq!(rows[4][0], "eve");
    assert!(rows[4][9].contains("design"), "{:?}", rows[4][9]);

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

crate::on_both_databases!(every_student_gets_a_csv_row, |db| {
    every_student_gets_a_csv_row(&db.app().await).await;
});

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

/// The canvas's **Download design** file for `design`, exported from `scenario_id` at the
/// scenario version `hash`.
fn export(scenario_id: &str, hash: &str, design: Value) -> Value {
    json!({"scenario": scenario_id, "scenario_hash": hash, "design": design})
}

fn current_hash(id: &str) -> String {
    shared::scenario_hash(crate::common::scenario(id).scenario())
}

#[tokio::test]
async fn the_canvas_export_is_graded_as_the_autograder_grades_it() {
    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    let grader = As::grader(&token);
    let hash = current_hash("safe-retry");
    let mut bogus = failing_design();
    bogus["nodes"][1]["kind"] = "bogus".into();
    let batch = json!([
        {"scenario": "safe-retry", "student": "ada", "design": export("safe-retry", &hash, passing_design("safe-retry"))},
        {"scenario": "safe-retry", "student": "bob", "design": export("offset-commit", &current_hash("offset-commit"), passing_design("offset-commit"))},
        {"scenario": "safe-retry", "student": "cy", "design": export("safe-retry", "sha256:an-older-version", passing_design("safe-retry"))},
        {"scenario": "safe-retry", "student": "dee", "design": export("safe-retry", &hash, bogus)},
        // No scenario in the item: the URL's is graded.
        {"student": "eve", "design": passing_design("safe-retry")},
    ]);
    let answer = app
        .post("/api/grade?scenario=safe-retry", &grader, &batch)
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let results = answer.body.as_array().unwrap();
    assert_eq!(results[0]["score"], 3, "{}", results[0]);
    assert_eq!(results[0]["passed"], true);
    assert!(results[0].get("note").is_none());
    // The graded design is the export's design, not the file around it.
    let id = results[0]["id"].as_str().unwrap();
    let stored = app.get(&format!("/api/submissions/{id}"), &grader).await;
    assert_eq!(stored.body["design"], passing_design("safe-retry"));

    assert_eq!(
        results[1]["error"]["code"], "scenario_mismatch",
        "{}",
        results[1]
    );
    assert_eq!(results[1]["error"]["path"], "$[1].design.scenario");
    assert!(results[1]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("exported from scenario \"offset-commit\""));

    assert_eq!(results[2]["score"], 3, "{}", results[2]);
    assert_eq!(
        results[2]["exported_scenario_hash"],
        "sha256:an-older-version"
    );
    assert!(results[2]["note"].as_str().unwrap().contains(&hash));

    assert_eq!(results[3]["error"]["code"], "invalid_design");
    assert_eq!(
        results[3]["error"]["path"],
        "$[3].design.design.nodes[1].kind"
    );
    assert_eq!(results[4]["score"], 3, "{}", results[4]);
    assert_eq!(results[4]["scenario"], "safe-retry");

    // Gradescope's shape says the same as the autograder.
    let gradescope = app
        .post(
            "/api/grade?format=gradescope&scenario=safe-retry",
            &grader,
            &batch,
        )
        .await;
    let results = gradescope.body.as_array().unwrap();
    for (i, r) in results.iter().enumerate() {
        crate::autograde::assert_gradescope_result(&format!("item {i}"), r);
    }
    assert_eq!(results[0]["score"], 3);
    let mismatch = results[1]["output"].as_str().unwrap();
    assert!(
        mismatch.starts_with("**Not graded: the export is for another scenario.**"),
        "{mismatch}"
    );
    assert_eq!(results[1]["tests"].as_array().unwrap().len(), 3);
    assert!(results[2]["output"]
        .as_str()
        .unwrap()
        .starts_with("**Note:** your file was exported from another version"));
    assert_eq!(
        results[2]["extra_data"]["exported_scenario_hash"],
        "sha256:an-older-version"
    );
    assert!(results[3]["output"]
        .as_str()
        .unwrap()
        .contains("`$.design.design.nodes[1].kind`"));

    // Without a scenario anywhere but in the export, the export's is graded; a bare design
    // that names none is refused with the reason.
    let unnamed = app
        .post(
            "/api/grade",
            &grader,
            &json!([
                {"student": "ada", "design": export("safe-retry", &hash, passing_design("safe-retry"))},
                {"student": "bob", "design": passing_design("safe-retry")},
            ]),
        )
        .await;
    assert_eq!(unnamed.body[0]["score"], 3, "{}", unnamed.text);
    assert_eq!(unnamed.body[1]["error"]["path"], "$[1].scenario");
    let unknown = app
        .post("/api/grade?scenario=no-such", &grader, &json!([]))
        .await;
    assert_eq!(unknown.code(), ErrorCode::UnknownScenario);
    assert_eq!(unknown.body["error"]["path"], "?scenario");
}

/// How many attempts the store holds.
async fn attempts_recorded(app: &TestApp) -> usize {
    app.state
        .store()
        .list_attempts(None, None, 1000)
        .await
        .unwrap()
        .len()
}

async fn grading_in_three_formats_records_once(app: &TestApp) {
    let token = app.grader_token("ta").await;
    let grader = As::grader(&token);
    let class = mixed_class();
    let json_answer = app.post("/api/grade", &grader, &class).await;
    assert_eq!(json_answer.status, StatusCode::OK, "{}", json_answer.text);
    let graded_ids: Vec<&str> = json_answer
        .body
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert_eq!(graded_ids.len(), 2, "ada and bob are graded");
    assert_eq!(attempts_recorded(app).await, 2);

    let gradescope = app
        .post("/api/grade?format=gradescope", &grader, &class)
        .await;
    assert_eq!(gradescope.status, StatusCode::OK);
    let csv = app.post("/api/grade?format=csv", &grader, &class).await;
    assert_eq!(csv.status, StatusCode::OK);
    assert_eq!(
        attempts_recorded(app).await,
        2,
        "the same class, asked again, records nothing"
    );
    // Every format names the attempts recorded the first time.
    for (i, id) in graded_ids.iter().enumerate() {
        assert_eq!(gradescope.body[i]["extra_data"]["submission_id"], *id);
        assert_eq!(parse_csv(&csv.text)[i + 1][7], *id);
    }

    // The same item twice in one call is one attempt.
    let twice = json!([
        {"scenario": "safe-retry", "student": "fay", "design": failing_design()},
        {"scenario": "safe-retry", "student": "fay", "design": failing_design()},
    ]);
    let answer = app.post("/api/grade", &grader, &twice).await;
    assert_eq!(answer.body[0]["id"], answer.body[1]["id"]);
    assert_eq!(attempts_recorded(app).await, 3);
    // Another design of the same student is a new attempt; so is another token's grading.
    let changed = json!([{"scenario": "safe-retry", "student": "fay", "design": passing_design("safe-retry")}]);
    app.post("/api/grade", &grader, &changed).await;
    assert_eq!(attempts_recorded(app).await, 4);
    let other = app.grader_token("another-ta").await;
    app.post("/api/grade", &As::grader(&other), &changed).await;
    assert_eq!(attempts_recorded(app).await, 5);
}

crate::on_both_databases!(grading_in_three_formats_records_once, |db| {
    grading_in_three_formats_records_once(&db.app().await).await;
});
