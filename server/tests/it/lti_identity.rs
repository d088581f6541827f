//! Identity from a learning platform as LTI 1.3 defines it: a user is their issuer's `sub`
//! and a course their issuer's context within a deployment, whichever registration (client
//! id) of the issuer a launch comes through. One course's two activities, each registered
//! with its own client id (as Open edX does), are one class with one roster; a database made
//! when users and courses were keyed by registration is merged at start-up, attempts kept.
//! Each on SQLite and PostgreSQL.

use axum::http::StatusCode;
use serde_json::json;
use server::lti::merge::{merge_old_keys, Db, Merged, CLASS_MERGE, STUDENT_MERGE};
use server::Store;

use crate::common::{spawn_app_on, As, TempDir, TestApp};
use crate::lti::{
    launch, login_for, registered, session_cookie, TestPlatform, CLIENT, CLIENT_2, DEPLOYMENT, KID,
    LTI,
};

/// A launch of the activity registered with `client`, by `sub` in `role`.
async fn launch_activity(
    app: &TestApp,
    platform: &TestPlatform,
    client: &str,
    sub: &str,
    role: &str,
) -> crate::common::Answer {
    let started = login_for(app, platform, client).await;
    let mut claims = platform.claims(&started.nonce, sub);
    claims["aud"] = json!(client);
    claims[format!("{LTI}resource_link")] = json!({"id": format!("activity-of-{client}")});
    claims[format!("{LTI}roles")] = json!([format!(
        "http://purl.imsglobal.org/vocab/lis/v2/membership#{role}"
    )]);
    let answer = launch(app, &platform.sign(&claims, KID, &platform.key), &started).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text);
    answer
}

async fn student_of(app: &TestApp, answer: &crate::common::Answer) -> String {
    let me = app
        .get("/api/session", &As::student(&session_cookie(answer)))
        .await;
    me.body["student"].as_str().expect("a student").to_string()
}

async fn two_activities_of_one_course_are_one_class_with_one_roster(store: Store) {
    let (platform, app) = registered(&store).await;
    assert!(store
        .add_lti_platform(&platform.registration_of("test-platform-2", CLIENT_2))
        .await
        .unwrap());
    // One learner opens both activities of the course; another opens only the second.
    let first = launch_activity(&app, &platform, CLIENT, "learner-1", "Learner").await;
    let second = launch_activity(&app, &platform, CLIENT_2, "learner-1", "Learner").await;
    let learner = student_of(&app, &first).await;
    assert_eq!(
        student_of(&app, &second).await,
        learner,
        "one learner is one student"
    );
    let other = launch_activity(&app, &platform, CLIENT_2, "learner-2", "Learner").await;
    let other = student_of(&app, &other).await;
    // The instructor opens the first activity and lands on the one class, with both.
    let teacher = launch_activity(&app, &platform, CLIENT, "teacher-1", "Instructor").await;
    let class = store
        .lti_course_class(&platform.issuer, DEPLOYMENT, "course-1")
        .await
        .unwrap()
        .expect("the course's class");
    assert!(
        teacher
            .header("location")
            .unwrap()
            .starts_with(&format!("/instructor/classes/{class}#")),
        "{:?}",
        teacher.header("location")
    );
    let mut members: Vec<String> = store
        .members(&class)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.student)
        .collect();
    members.sort();
    let mut expected = vec![learner, other];
    expected.sort();
    assert_eq!(members, expected, "both activities' students");
    let named = store
        .list_classes()
        .await
        .unwrap()
        .into_iter()
        .filter(|c| c.name == "Data Engineering 101")
        .count();
    assert_eq!(named, 1, "one class for the course");
}

crate::on_both_databases!(
    one_learner_launching_two_activities_of_a_course_is_one_student_in_one_class,
    |db| {
        two_activities_of_one_course_are_one_class_with_one_roster(db.store().await).await;
    }
);

// A database made the old way.

/// The first migration that keys users by issuer: the old database stops before it.
const IDENTITY_MIGRATION: i64 = 20261202020000;

/// A pool on the old database, of either kind.
enum Raw {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

macro_rules! on_raw {
    ($raw:expr, $pool:ident => $body:expr) => {
        match $raw {
            Raw::Sqlite($pool) => $body,
            Raw::Postgres($pool) => $body,
        }
    };
}

impl Raw {
    async fn execute(&self, script: &str) {
        on_raw!(self, pool => sqlx::raw_sql(script).execute(pool).await.map(|_| ())).unwrap();
    }

    /// The rows of `query`, each column read as text.
    async fn rows(&self, query: &str) -> Vec<Vec<String>> {
        use sqlx::Row;
        on_raw!(self, pool => {
            let rows = sqlx::query(query).fetch_all(pool).await.unwrap();
            rows.iter()
                .map(|r| (0..r.len()).map(|i| r.try_get::<String, _>(i).unwrap()).collect())
                .collect()
        })
    }

    async fn merge(&self) -> Merged {
        match self {
            Raw::Sqlite(pool) => merge_old_keys(Db::Sqlite(pool)).await.unwrap(),
            Raw::Postgres(pool) => merge_old_keys(Db::Postgres(pool)).await.unwrap(),
        }
    }
}

/// A session secret of the shape the server makes (43 base64url characters), named by `who`.
fn secret(who: &str) -> String {
    format!("{who:_<43}")
}

/// The data the old keys made: one issuer with two registrations (one course's two
/// activities), through which learner-1 became two students and the course two classes;
/// learner-2 came through the second only; another issuer has a learner-1 of its own.
fn old_rows() -> String {
    let hash = server::auth::hash_token;
    format!(
        "INSERT INTO lti_platforms (id, issuer, client_id, auth_url, token_url, jwks_url, created_at) VALUES \
           ('reg-a', 'https://lms.example', 'client-a', 'https://lms.example/auth', 'https://lms.example/token', 'https://lms.example/jwks', '2026-11-01T09:00:00Z'), \
           ('reg-b', 'https://lms.example', 'client-b', 'https://lms.example/auth', 'https://lms.example/token', 'https://lms.example/jwks', '2026-11-01T09:00:00Z'), \
           ('reg-c', 'https://other.example', 'client-c', 'https://other.example/auth', 'https://other.example/token', 'https://other.example/jwks', '2026-11-01T09:00:00Z'); \
         INSERT INTO lti_deployments (platform, deployment_id) VALUES ('reg-a', '1'), ('reg-b', '1'), ('reg-c', '1'); \
         INSERT INTO students (id, display_name, origin, created_at, legacy_cookie) VALUES \
           ('s-ada-a', 'Ada', 'session', '2026-11-02T09:00:00Z', FALSE), \
           ('s-ada-b', NULL, 'session', '2026-11-03T09:00:00Z', FALSE), \
           ('s-bob-b', 'Bob', 'session', '2026-11-03T10:00:00Z', FALSE), \
           ('s-ada-c', 'Ada elsewhere', 'session', '2026-11-01T08:00:00Z', FALSE); \
         INSERT INTO sessions (secret_hash, student, created_at) VALUES \
           ('{}', 's-ada-a', '2026-11-02T09:00:00Z'), ('{}', 's-ada-b', '2026-11-03T09:00:00Z'); \
         INSERT INTO lti_users (platform, sub, student) VALUES \
           ('reg-a', 'learner-1', 's-ada-a'), ('reg-b', 'learner-1', 's-ada-b'), \
           ('reg-b', 'learner-2', 's-bob-b'), ('reg-c', 'learner-1', 's-ada-c'); \
         INSERT INTO classes (id, name, join_code, open, preview, created_by, created_at) VALUES \
           ('c-a', 'Data Engineering 101', 'AAAAAAAA', TRUE, 'everything', 'lti:reg-a', '2026-11-02T09:00:00Z'), \
           ('c-b', 'Data Engineering 101', 'BBBBBBBB', TRUE, 'everything', 'lti:reg-b', '2026-11-03T09:00:00Z'); \
         INSERT INTO lti_contexts (platform, context_id, class_id) VALUES ('reg-a', 'course-1', 'c-a'), ('reg-b', 'course-1', 'c-b'); \
         INSERT INTO memberships (class_id, student, display_name, joined_at) VALUES \
           ('c-a', 's-ada-a', 'Ada', '2026-11-02T09:00:00Z'), ('c-b', 's-ada-b', 'Ada B', '2026-11-03T09:00:00Z'), \
           ('c-b', 's-bob-b', 'Bob', '2026-11-03T10:00:00Z'); \
         INSERT INTO attempts (id, student, scenario, scenario_hash, design, verdict, score, max_score, passed, created_at, class_id) VALUES \
           ('a-1', 's-ada-a', 'safe-retry', 'h', '{{}}', '{{}}', 3, 10, FALSE, '2026-11-02T10:00:00Z', 'c-a'), \
           ('a-2', 's-ada-b', 'safe-retry', 'h', '{{}}', '{{}}', 10, 10, TRUE, '2026-11-03T10:00:00Z', 'c-b'), \
           ('a-3', 's-ada-b', 'dedupe-by-key', 'h', '{{}}', '{{}}', 5, 10, FALSE, '2026-11-03T11:00:00Z', 'c-b'), \
           ('a-4', 's-bob-b', 'safe-retry', 'h', '{{}}', '{{}}', 0, 10, FALSE, '2026-11-03T12:00:00Z', 'c-b'); \
         INSERT INTO drafts (student, scenario, design, updated_at) VALUES \
           ('s-ada-a', 'safe-retry', '{{\"kept\": \"older\"}}', '2026-11-02T11:00:00Z'), \
           ('s-ada-b', 'safe-retry', '{{\"kept\": \"newer\"}}', '2026-11-03T11:00:00Z'); \
         INSERT INTO lti_grade_targets (student, scenario, platform, sub, lineitem, sent_score, sent_through, sent_timestamp, tries) VALUES \
           ('s-ada-a', 'safe-retry', 'reg-a', 'learner-1', 'https://lms.example/items/a', 3, '2026-11-02T10:00:00Z', '2026-11-02T10:00:01Z', 0), \
           ('s-ada-b', 'safe-retry', 'reg-b', 'learner-1', 'https://lms.example/items/b', 10, '2026-11-03T10:00:00Z', '2026-11-03T10:00:01Z', 0); \
         INSERT INTO idempotency_keys (caller, key, fingerprint, state, status_code, response, created_at, updated_at, owner) VALUES \
           ('student:s-ada-b', 'k-1', 'f', 'done', 201, '{{}}', '2026-11-03T10:00:00Z', '2026-11-03T10:00:00Z', 'o');",
        hash(&secret("ada-a")),
        hash(&secret("ada-b")),
    )
}

/// Runs the migrations before the identity migration on `raw`, and writes the old rows.
async fn make_old_database(raw: &Raw) {
    macro_rules! old_migrations {
        ($dir:literal, $pool:expr) => {{
            let mut migrator = sqlx::migrate!($dir);
            let old: Vec<_> = migrator
                .migrations
                .iter()
                .filter(|m| m.version < IDENTITY_MIGRATION)
                .cloned()
                .collect();
            migrator.migrations = std::borrow::Cow::Owned(old);
            migrator.run($pool).await.unwrap();
        }};
    }
    match raw {
        Raw::Sqlite(pool) => old_migrations!("../migrations/sqlite", pool),
        Raw::Postgres(pool) => old_migrations!("../migrations/postgres", pool),
    }
    raw.execute(&old_rows()).await;
}

/// What the merge must have made of the old rows, read from the database and through the
/// app.
async fn the_old_rows_are_merged(raw: &Raw, store: &Store, app: &TestApp) {
    let student = |issuer: &'static str, sub: &'static str| async move {
        store.lti_student(issuer, sub).await.unwrap()
    };
    assert_eq!(
        student("https://lms.example", "learner-1").await.as_deref(),
        Some("s-ada-a"),
        "the student made first stays"
    );
    assert_eq!(
        student("https://lms.example", "learner-2").await.as_deref(),
        Some("s-bob-b")
    );
    assert_eq!(
        student("https://other.example", "learner-1")
            .await
            .as_deref(),
        Some("s-ada-c"),
        "another issuer's user is another person"
    );
    assert_eq!(
        raw.rows("SELECT id, student, class_id FROM attempts ORDER BY id")
            .await,
        [
            ["a-1", "s-ada-a", "c-a"],
            ["a-2", "s-ada-a", "c-a"],
            ["a-3", "s-ada-a", "c-a"],
            ["a-4", "s-bob-b", "c-a"],
        ],
        "every attempt kept, in the one class"
    );
    assert_eq!(
        raw.rows("SELECT id FROM students ORDER BY id").await,
        [["s-ada-a"], ["s-ada-c"], ["s-bob-b"]]
    );
    assert_eq!(
        store
            .lti_course_class("https://lms.example", "1", "course-1")
            .await
            .unwrap()
            .as_deref(),
        Some("c-a")
    );
    assert_eq!(
        raw.rows("SELECT class_id, student, display_name FROM memberships ORDER BY student")
            .await,
        [["c-a", "s-ada-a", "Ada"], ["c-a", "s-bob-b", "Bob"]],
        "one roster"
    );
    assert_eq!(
        raw.rows("SELECT id FROM classes").await,
        [["c-a"]],
        "one class"
    );
    let drafts = raw
        .rows("SELECT student, CAST(design AS TEXT) FROM drafts")
        .await;
    assert_eq!(drafts.len(), 1, "{drafts:?}");
    assert!(
        drafts[0][1].contains("newer"),
        "the newer draft: {drafts:?}"
    );
    assert_eq!(
        raw.rows("SELECT caller FROM idempotency_keys").await,
        [["student:s-ada-a"]]
    );
    // Both browsers of the person are signed in as the one student.
    for who in ["ada-a", "ada-b"] {
        let cookie = format!("__Host-pb_session={}", secret(who));
        let me = app.get("/api/session", &As::student(&cookie)).await;
        assert_eq!(me.status, StatusCode::OK, "{who}: {}", me.text);
        assert_eq!(me.body["student"], "s-ada-a", "{who}");
        assert_eq!(me.body["display_name"], "Ada", "{who}");
    }
    // Each activity's gradebook gets the person's best score again.
    let due = store.due_grades(chrono::Utc::now()).await.unwrap();
    let mut sent: Vec<(String, String, i32)> = due
        .into_iter()
        .map(|d| (d.student, d.lineitem, d.score))
        .collect();
    sent.sort();
    assert_eq!(
        sent,
        [
            ("s-ada-a".into(), "https://lms.example/items/a".into(), 10),
            ("s-ada-a".into(), "https://lms.example/items/b".into(), 10),
        ]
    );
    for old in ["lti_users", "lti_contexts"] {
        assert_eq!(
            raw.rows(&format!("SELECT CAST(COUNT(*) AS TEXT) FROM {old}"))
                .await,
            [["0"]],
            "{old} is emptied"
        );
    }
}

async fn old_keys_are_merged_at_start_up(raw: Raw, url: &str, dir: TempDir) {
    make_old_database(&raw).await;
    let store = Store::connect(url)
        .await
        .expect("the migrations and the merge");
    let app = spawn_app_on(store.clone(), server::config::Config::default(), dir);
    the_old_rows_are_merged(&raw, &store, &app).await;
    // Once done, it is done: another start, and another merge, change nothing.
    store.close().await;
    let again = Store::connect(url).await.unwrap();
    assert_eq!(raw.merge().await, Merged::default());
    let app = spawn_app_on(
        again.clone(),
        server::config::Config::default(),
        TempDir::new("lti-merge-again"),
    );
    the_old_rows_are_merged(&raw, &again, &app).await;
}

crate::on_both_databases!(
    users_and_courses_keyed_by_registration_are_merged_at_start_up_with_every_attempt,
    |db| {
        // The tables as the older server left them: made by hand, not by the store.
        let raw = if db.is_postgres() {
            Raw::Postgres(sqlx::PgPool::connect(&db.url).await.unwrap())
        } else {
            std::fs::create_dir_all(db.dir.path().join("db")).unwrap();
            let options: sqlx::sqlite::SqliteConnectOptions = db.url.parse().unwrap();
            Raw::Sqlite(
                sqlx::SqlitePool::connect_with(options.create_if_missing(true))
                    .await
                    .unwrap(),
            )
        };
        old_keys_are_merged_at_start_up(raw, &db.url, TempDir::new("lti-merge")).await;
    }
);

#[tokio::test]
async fn every_table_that_refers_to_a_student_or_a_class_is_moved_by_the_merge() {
    let dir = TempDir::new("lti-merge-schema");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    store.close().await;
    let options: sqlx::sqlite::SqliteConnectOptions = dir.sqlite_url().parse().unwrap();
    let raw = Raw::Sqlite(sqlx::SqlitePool::connect_with(options).await.unwrap());
    let tables = raw
        .rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%'")
        .await;
    let mut referring = Vec::new();
    for table in tables.iter().map(|r| r[0].clone()) {
        for target in raw
            .rows(&format!(
                "SELECT \"table\" FROM pragma_foreign_key_list('{table}')"
            ))
            .await
        {
            referring.push((table.clone(), target[0].clone()));
        }
    }
    assert!(referring.iter().any(|(_, t)| t == "students"));
    for (table, target) in referring {
        let moved_by = match target.as_str() {
            "students" => STUDENT_MERGE,
            "classes" => CLASS_MERGE,
            _ => continue,
        };
        assert!(
            moved_by.iter().any(|s| s.contains(&format!(" {table} "))),
            "{table} refers to {target} but the merge does not move it"
        );
    }
}
