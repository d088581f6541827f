//! The wire types read back exactly the JSON they write, with the field names, the left-out
//! fields and the enum spellings the API documents.

use serde_json::{json, Value};
use shared::wire::author::Status;
use shared::wire::classes::{
    AttemptRow, Cell, CellState, ClassAttemptBody, ClassUpdate, Preview, RegradeRow,
};
use shared::wire::errors::{ErrorBody, ErrorCode};
use shared::wire::submissions::SubmissionRequest;

/// `value` written as JSON is `expected`, and `expected` reads back as `value`.
fn check<T>(value: &T, expected: Value)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    assert_eq!(serde_json::to_value(value).unwrap(), expected);
    let read: T = serde_json::from_value(expected).unwrap();
    assert_eq!(&read, value);
}

#[test]
fn a_cell_without_attempts_leaves_out_its_times() {
    let cell = Cell {
        scenario: "safe-retry".into(),
        state: CellState::NotTried,
        attempts: 0,
        last_attempt_at: None,
        attempts_before_first_pass: None,
        outdated_attempts: 0,
        late_attempts: 0,
    };
    check(
        &cell,
        json!({"scenario": "safe-retry", "state": "not_tried", "attempts": 0, "outdated_attempts": 0}),
    );
}

#[test]
fn an_attempt_of_a_class_has_the_row_fields_beside_the_student_and_the_design() {
    let body = ClassAttemptBody {
        row: AttemptRow {
            id: "a-1".into(),
            scenario: "safe-retry".into(),
            scenario_hash: "h1".into(),
            created_at: "2026-12-05T10:00:00Z".into(),
            score: 1,
            max_score: 3,
            passed: false,
            missed: vec!["no-duplicates".into()],
            outdated: true,
            late: false,
            verdict: json!({"passed": false}),
            regrades: vec![RegradeRow {
                scenario_hash: "h2".into(),
                current: true,
                score: 3,
                max_score: 3,
                passed: true,
                missed: vec![],
                error: None,
                created_at: "2026-12-05T11:00:00Z".into(),
            }],
        },
        student: "s-1".into(),
        display_name: String::new(),
        design: json!({"nodes": [], "edges": []}),
    };
    check(
        &body,
        json!({
            "id": "a-1", "scenario": "safe-retry", "scenario_hash": "h1",
            "created_at": "2026-12-05T10:00:00Z", "score": 1, "max_score": 3, "passed": false,
            "missed": ["no-duplicates"], "outdated": true, "verdict": {"passed": false},
            "regrades": [{"scenario_hash": "h2", "current": true, "score": 3, "max_score": 3,
                "passed": true, "missed": [], "created_at": "2026-12-05T11:00:00Z"}],
            "student": "s-1", "design": {"nodes": [], "edges": []},
        }),
    );
}

#[test]
fn the_requests_the_app_sends_leave_out_what_it_does_not_set() {
    check(
        &ClassUpdate {
            preview: Preview::named("lacks"),
            ..ClassUpdate::default()
        },
        json!({"preview": "lacks"}),
    );
    check(
        &SubmissionRequest {
            scenario: "safe-retry".into(),
            student: None,
            design: json!({}),
            class: Some("c-1".into()),
        },
        json!({"scenario": "safe-retry", "design": {}, "class": "c-1"}),
    );
    assert_eq!(Preview::named("all"), None);
    for preview in Preview::ALL {
        assert_eq!(
            serde_json::to_value(preview).unwrap(),
            Value::from(preview.as_str())
        );
    }
}

#[test]
fn every_error_code_is_written_as_it_is_named() {
    for code in ErrorCode::ALL {
        assert_eq!(
            serde_json::to_value(code).unwrap(),
            Value::from(code.as_str())
        );
    }
    let body: ErrorBody = serde_json::from_value(
        json!({"error": {"code": "class_closed", "message": "the class is closed"}}),
    )
    .unwrap();
    assert_eq!(body.error.code, ErrorCode::ClassClosed);
    assert_eq!(body.error.details, None);
}

#[test]
fn the_author_status_reads_its_flattened_fields() {
    let status: Status = serde_json::from_value(json!({
        "generation": 2, "reads": 3, "read_at": "2026-12-05T10:00:00Z",
        "problems": [], "warnings": [],
        "scenarios": [{"id": "safe-retry", "title": "Safe retry", "order": 1, "hash": "h",
            "reference_designs": 1, "wrong_designs": 2}],
        "broken": [{"name": "half.json", "id": null, "title": null, "problems": 1, "tryable": false}],
    }))
    .unwrap();
    assert_eq!(status.files.generation, 2);
    assert!(status.files.stale.is_empty());
    assert_eq!(status.broken_file("half").map(|b| b.problems), Some(1));
    assert_eq!(status.broken_file("other"), None);
}
