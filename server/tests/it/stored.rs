//! A value in the database that the server cannot have written (a row changed by hand, or by
//! a newer version) is refused: the request is answered 500 `internal` and the log says what,
//! never a default read in its place.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use server::error::ErrorCode;

use crate::common::{failing_design, spawn_app, As, TestApp};

/// Runs `statement` on the app's SQLite database with its CHECK constraints off, as a hand
/// edit or another program could.
async fn write_by_hand(app: &TestApp, statement: &str) {
    let server::Store::Sqlite(pool, ..) = app.state.store() else {
        panic!("the test app runs on SQLite");
    };
    let mut conn = pool.acquire().await.unwrap();
    sqlx::query("PRAGMA ignore_check_constraints = ON")
        .execute(&mut *conn)
        .await
        .unwrap();
    let changed = sqlx::query(statement).execute(&mut *conn).await.unwrap();
    assert_eq!(changed.rows_affected(), 1, "{statement}");
    sqlx::query("PRAGMA ignore_check_constraints = OFF")
        .execute(&mut *conn)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_class_whose_stored_preview_is_unknown_is_answered_500_not_a_default() {
    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    let made = app
        .post(
            "/api/classes",
            &As::grader(&token),
            &json!({"name": "Week 1"}),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let id = made.body["id"].as_str().unwrap().to_string();
    let url = format!("/api/classes/{id}");
    let before = app.get(&url, &As::grader(&token)).await;
    assert_eq!(before.status, StatusCode::OK, "{}", before.text);
    assert_eq!(before.body["preview"], "everything");

    write_by_hand(
        &app,
        &format!("UPDATE classes SET preview = 'sometimes' WHERE id = '{id}'"),
    )
    .await;
    let refused = app.get(&url, &As::grader(&token)).await;
    assert_eq!(
        refused.status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "{}",
        refused.text
    );
    assert_eq!(refused.code(), ErrorCode::Internal);
    assert!(!refused.text.contains("sometimes"), "{}", refused.text);
}

async fn submit_with_key(app: &TestApp, who: &As, body: &Value) -> crate::common::Answer {
    app.send(
        Method::POST,
        "/api/submissions",
        who,
        &[("idempotency-key", "key-1")],
        Some(serde_json::to_vec(body).unwrap()),
    )
    .await
}

/// A grader's submission with an Idempotency-Key: the grader, the body and the answer (201).
async fn first_submission(app: &TestApp) -> (As, Value, crate::common::Answer) {
    let token = app.grader_token("ta").await;
    let grader = As::grader(&token);
    let body = json!({"scenario": "safe-retry", "student": "lms-1", "design": failing_design()});
    let first = submit_with_key(app, &grader, &body).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
    (grader, body, first)
}

#[tokio::test]
async fn a_stored_answer_that_is_not_one_the_server_writes_is_never_replayed() {
    let app = spawn_app().await;
    let (grader, body, _) = first_submission(&app).await;
    let replayed = submit_with_key(&app, &grader, &body).await;
    assert_eq!(replayed.status, StatusCode::CREATED);
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));

    for (what, statement) in [
        (
            "a status no HTTP answer has",
            "UPDATE idempotency_keys SET status_code = 1000",
        ),
        (
            "no status",
            "UPDATE idempotency_keys SET status_code = NULL",
        ),
        (
            "an answer that is not JSON",
            "UPDATE idempotency_keys SET status_code = 201, response = 'created, probably'",
        ),
        ("no answer", "UPDATE idempotency_keys SET response = NULL"),
        (
            "a state the server does not write",
            "UPDATE idempotency_keys SET state = 'paused'",
        ),
    ] {
        write_by_hand(&app, statement).await;
        let refused = submit_with_key(&app, &grader, &body).await;
        assert_eq!(
            refused.status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "{what}: {}",
            refused.text
        );
        assert_eq!(refused.code(), ErrorCode::Internal, "{what}");
        assert!(refused.header("idempotent-replayed").is_none(), "{what}");
    }
    // Nothing was recorded twice meanwhile.
    let listed = app
        .state
        .store()
        .list_attempts(None, None, 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
}

#[tokio::test]
async fn a_submission_keeps_its_verdict_once_and_its_replay_gives_the_same_bytes() {
    let app = spawn_app().await;
    let (grader, body, first) = first_submission(&app).await;
    let answered: Value = serde_json::from_str(&first.text).unwrap();
    assert!(answered["verdict"].is_object(), "{}", first.text);

    // The stored answer names the attempt and leaves its verdict to it.
    let server::Store::Sqlite(pool, ..) = app.state.store() else {
        panic!("the test app runs on SQLite");
    };
    let stored: String = sqlx::query_scalar("SELECT response FROM idempotency_keys")
        .fetch_one(pool)
        .await
        .unwrap();
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(stored["id"], answered["id"]);
    assert!(stored.get("verdict").is_none(), "{stored}");

    // The replay puts it back: the same bytes as the first answer.
    let replayed = submit_with_key(&app, &grader, &body).await;
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));
    assert_eq!(replayed.text, first.text);

    // An attempt erased since is replayed without its verdict, never recorded again.
    write_by_hand(&app, "DELETE FROM attempts").await;
    let replayed = submit_with_key(&app, &grader, &body).await;
    assert_eq!(replayed.status, StatusCode::CREATED);
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));
    let without: Value = serde_json::from_str(&replayed.text).unwrap();
    assert_eq!(without["id"], answered["id"]);
    assert!(without.get("verdict").is_none(), "{}", replayed.text);
    let listed = app
        .state
        .store()
        .list_attempts(None, None, 10)
        .await
        .unwrap();
    assert!(listed.is_empty());
}
