//! The operator's commands: `pipeline-builder backup` while the server is under load, and
//! `pipeline-builder student delete` on SQLite and PostgreSQL.

use std::process::{Command, Output};
use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::json;
use server::{Config, Store};

use crate::common::{failing_design, passing_design, spawn_app_on, As, TempDir, TestApp};
use crate::processes::{ServerProcess, BIN};

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "warn")
        .env_remove("DATABASE_URL")
        .output()
        .expect("the binary runs")
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

async fn count(store: &Store, query: &str, bind: Option<&str>) -> i64 {
    match store {
        Store::Sqlite(pool, ..) => {
            let q = sqlx::query_scalar::<_, i64>(query);
            let q = match bind {
                Some(b) => q.bind(b.to_string()),
                None => q,
            };
            q.fetch_one(pool).await.expect("a count")
        }
        Store::Postgres(pool, ..) => {
            let q = sqlx::query_scalar::<_, i64>(query);
            let q = match bind {
                Some(b) => q.bind(b.to_string()),
                None => q,
            };
            q.fetch_one(pool).await.expect("a count")
        }
    }
}

async fn attempts(store: &Store) -> i64 {
    count(store, "SELECT COUNT(*) FROM attempts", None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_under_load_opens_and_holds_every_acknowledged_submission() {
    let dir = TempDir::new("backup");
    let url = dir.sqlite_url();
    let server = ServerProcess::start_with(&url, &["--rate-limit-per-second", "0"]);
    // Submissions only, for long enough that the backup is taken while they are written.
    let load = Command::new(BIN)
        .args([
            "load",
            "--url",
            &server.base,
            "--clients",
            "4",
            "--seconds",
            "4",
            "--mix",
            "submit=1",
        ])
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the load generator starts");
    let reader = Store::connect(&url).await.expect("the server's database");
    // Wait until the load has written something.
    let mut before = 0;
    for _ in 0..100 {
        before = attempts(&reader).await;
        if before >= 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(before > 0, "the load wrote no submission");

    // Every submission counted here was acknowledged before the backup started.
    let backup = dir.path().join("backup.db");
    let made = run(&["backup", backup.to_str().unwrap(), "--database-url", &url]);
    let after_backup = attempts(&reader).await;
    assert!(made.status.success(), "{}", said(&made));
    assert!(said(&made).contains("backed up to"), "{}", said(&made));

    let finished = load.wait_with_output().expect("the load generator ends");
    let summary = String::from_utf8_lossy(&finished.stdout).to_string();
    assert!(finished.status.success(), "{summary}");
    let total = attempts(&reader).await;
    reader.close().await;

    // The copy opens with `serve` and holds every acknowledged submission.
    let backup_url = format!("sqlite://{}", backup.display());
    let copy = Store::connect(&backup_url).await.expect("the backup opens");
    let in_backup = attempts(&copy).await;
    copy.close().await;
    eprintln!(
        "backup under load: {before} submissions before the backup, {in_backup} in the backup, \
         {after_backup} right after it, {total} when the load ended"
    );
    assert!(
        in_backup >= before,
        "the backup lost acknowledged submissions: {in_backup} < {before}"
    );
    assert!(in_backup <= total);
    let restored = ServerProcess::start(&backup_url);
    let ready = reqwest::get(format!("{}/readyz", restored.base))
        .await
        .expect("the restored server answers");
    assert_eq!(ready.status(), 200);
    let listed = reqwest::get(format!("{}/api/scenarios", restored.base))
        .await
        .expect("the restored server answers");
    assert_eq!(listed.status(), 200);
    drop(restored);
    drop(server);

    // An existing file is never overwritten.
    let size = std::fs::metadata(&backup).unwrap().len();
    let again = run(&[
        "backup",
        backup.to_str().unwrap(),
        "--database-url",
        &backup_url,
    ]);
    assert!(!again.status.success());
    assert!(said(&again).contains("exists already"), "{}", said(&again));
    assert_eq!(std::fs::metadata(&backup).unwrap().len(), size);

    // A database that is not there is not made by a backup.
    let missing = dir.path().join("nothing.db");
    let none = run(&[
        "backup",
        dir.path().join("copy.db").to_str().unwrap(),
        "--database-url",
        &format!("sqlite://{}", missing.display()),
    ]);
    assert!(!none.status.success());
    assert!(said(&none).contains("no database"), "{}", said(&none));
    assert!(!missing.exists());
}

#[test]
fn a_backup_of_postgres_names_pg_dump_and_fails() {
    let dir = TempDir::new("backup-pg");
    let file = dir.path().join("pg.dump");
    let output = run(&[
        "backup",
        file.to_str().unwrap(),
        "--database-url",
        "postgres://nobody@127.0.0.1:1/none",
    ]);
    assert!(!output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with("pg_dump --format=custom"),
        "{}",
        said(&output)
    );
    assert!(!file.exists());
}

/// A student with two attempts (one with an Idempotency-Key), a draft, and another student
/// whose work must stay.
async fn students_with_work(app: &TestApp) -> (String, String, String) {
    let (cookie, id) = app.new_student().await;
    let who = As::student(&cookie);
    let draft = app
        .put(
            "/api/drafts/safe-retry",
            &who,
            &json!({"design": failing_design()}),
        )
        .await;
    assert!(draft.status.is_success(), "{}", draft.text);
    let first = app
        .send(
            Method::POST,
            "/api/submissions",
            &who,
            &[("idempotency-key", "first")],
            Some(
                serde_json::to_vec(&json!({"scenario": "safe-retry", "design": failing_design()}))
                    .unwrap(),
            ),
        )
        .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
    // The second attempt is made for a class the student joined.
    let token = app.grader_token("teacher").await;
    let class = app
        .post(
            "/api/classes",
            &As::grader(&token),
            &json!({"name": "Data 101"}),
        )
        .await;
    assert_eq!(class.status, StatusCode::CREATED, "{}", class.text);
    let joined = app
        .post(
            "/api/classes/join",
            &who,
            &json!({"code": class.body["join_code"], "display_name": "Ada"}),
        )
        .await;
    assert_eq!(joined.status, StatusCode::CREATED, "{}", joined.text);
    let second = app
        .post(
            "/api/submissions",
            &who,
            &json!({"scenario": "safe-retry", "design": passing_design("safe-retry"), "class": class.body["id"]}),
        )
        .await;
    assert_eq!(second.status, StatusCode::CREATED, "{}", second.text);

    let (other_cookie, other) = app.new_student().await;
    let kept = app
        .post(
            "/api/submissions",
            &As::student(&other_cookie),
            &json!({"scenario": "safe-retry", "design": failing_design()}),
        )
        .await;
    assert_eq!(kept.status, StatusCode::CREATED, "{}", kept.text);
    (id, cookie, other)
}

async fn student_delete_removes_everything_that_is_theirs(app: TestApp, url: &str) {
    let (id, cookie, other) = students_with_work(&app).await;
    let store = app.state.store().clone();

    let output = run(&["student", "delete", &id, "--database-url", url]);
    assert!(output.status.success(), "{}", said(&output));
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert_eq!(
        stdout.trim(),
        format!(
            "deleted student {id}: removed 0 regraded verdicts, 2 attempts, 1 drafts, 1 sessions, 1 class memberships, 0 learning platform links, 0 grade passback records, 1 idempotency records, 0 extensions, 0 scores set by hand, 0 staff sign-in links, 1 students"
        )
    );
    for (table, column) in [
        ("attempts", "student"),
        ("drafts", "student"),
        ("memberships", "student"),
        ("students", "id"),
    ] {
        let query = format!("SELECT COUNT(*) FROM {table} WHERE {column} = $1");
        assert_eq!(count(&store, &query, Some(&id)).await, 0, "{table}");
    }
    assert_eq!(
        count(
            &store,
            "SELECT COUNT(*) FROM idempotency_keys WHERE caller = $1",
            Some(&format!("student:{id}"))
        )
        .await,
        0
    );
    // The other student's work stays.
    assert_eq!(
        count(
            &store,
            "SELECT COUNT(*) FROM attempts WHERE student = $1",
            Some(&other)
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &store,
            "SELECT COUNT(*) FROM students WHERE id = $1",
            Some(&other)
        )
        .await,
        1
    );

    // Again, or any unknown id: said so, non-zero, nothing removed.
    let again = run(&["student", "delete", &id, "--database-url", url]);
    assert!(!again.status.success());
    assert!(
        said(&again).contains(&format!("there is no student {id}")),
        "{}",
        said(&again)
    );
    let unknown = run(&["student", "delete", "nobody-at-all", "--database-url", url]);
    assert!(!unknown.status.success());
    assert_eq!(attempts(&store).await, 1);

    // The deleted student's session opens nothing any more.
    let fresh = app.get("/api/submissions", &As::student(&cookie)).await;
    assert!(
        fresh.body == json!([]) || fresh.status.is_client_error(),
        "{}",
        fresh.text
    );
}

crate::on_both_databases!(student_delete_removes_a_students_work, |db| {
    let app = spawn_app_on(
        db.store().await,
        Config::default(),
        TempDir::new("student-delete"),
    );
    student_delete_removes_everything_that_is_theirs(app, &db.url).await;
});
