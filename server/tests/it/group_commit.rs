//! Group commit of submissions, on SQLite and on PostgreSQL: many submissions at once are each
//! recorded once and answered 201, and they share commits; a record whose claim was taken over
//! is answered `false` while the others in its batch are recorded; a commit that fails answers
//! every member of its batch with the error and records none of them; a closed store answers
//! an error at once.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use chrono::Utc;
use serde_json::json;
use server::store::{Attempt, Claim, ClaimId, IdempotentAnswer, Store};
use server::Config;

use crate::common::{failing_design, spawn_app_on, As, TempDir};
use crate::postgres;

/// A fresh SQLite store, and a fresh PostgreSQL one unless PostgreSQL is knowingly skipped.
async fn stores(label: &str) -> Vec<(Store, TempDir, Option<postgres::PgDatabase>)> {
    let dir = TempDir::new(label);
    let sqlite = Store::connect(&dir.sqlite_url()).await.expect("SQLite");
    let mut stores = vec![(sqlite, dir, None)];
    if let Some(db) = postgres::database(label).await {
        let store = Store::connect(&db.url).await.expect("PostgreSQL");
        stores.push((store, TempDir::new(label), Some(db)));
    }
    stores
}

fn attempt(id: &str, student: &str) -> Attempt {
    Attempt {
        id: id.to_string(),
        student: student.to_string(),
        scenario: "safe-retry".into(),
        scenario_hash: "sha256:abc".into(),
        design: json!({"nodes": [], "edges": []}),
        verdict: json!({"scenario": "safe-retry", "passed": false}),
        score: 0,
        max_score: 3,
        passed: false,
        created_at: Utc::now(),
        class: None,
    }
}

const LEASE: Duration = Duration::from_secs(600);

/// Waits until `n` writes wait for the held writer.
async fn until_waiting(store: &Store, n: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while store.group_commit_stats().waiting < n {
        assert!(
            std::time::Instant::now() < deadline,
            "{}: {n} writes never reached the writer ({:?})",
            store.backend(),
            store.group_commit_stats()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Records `count` attempts, each with the answer of its claimed key, sent while the writer is
/// held so that they form one batch; `owner_of(i)` names the holder that records `i`.
/// Returns each record's outcome, in order.
async fn record_together(
    store: &Store,
    prefix: &str,
    count: usize,
    student_of: impl Fn(usize) -> String,
    owner_of: impl Fn(usize) -> String,
) -> Vec<Result<bool, String>> {
    let held = store.hold_group_commit().await;
    let mut tasks = Vec::new();
    for i in 0..count {
        let store = store.clone();
        let (student, owner) = (student_of(i), owner_of(i));
        let id = format!("{prefix}-{i}");
        tasks.push(tokio::spawn(async move {
            let body = json!({"id": id});
            let answer = IdempotentAnswer {
                claim: &ClaimId::held_by("grader:ta", &id, &owner),
                status: 201,
                body: &body,
            };
            store
                .record(Some(&attempt(&id, &student)), Some(&answer))
                .await
                .map_err(|e| e.to_string())
        }));
    }
    until_waiting(store, count as u64).await;
    drop(held);
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await.expect("the task ran"));
    }
    outcomes
}

async fn recorded_ids(store: &Store) -> BTreeSet<String> {
    store
        .list_attempts(None, None, 1000)
        .await
        .expect("list")
        .into_iter()
        .map(|a| a.id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_submissions_at_once_are_each_recorded_once_answered_201_and_share_commits() {
    const N: usize = 48;
    for (store, dir, _db) in stores("group-commit-many").await {
        let backend = store.backend();
        // All N come from one address and wait together: the per-address cap on waiting
        // checks must not turn any of them away.
        let config = Config {
            checks_waiting_per_address: 2 * N,
            ..Config::default()
        };
        let app = Arc::new(spawn_app_on(store.clone(), config, dir));
        let token = app.grader_token("ta").await;
        let before = store.group_commit_stats();
        // The writes of all N submissions (each claims its key and records its attempt in
        // one) wait for the held writer, so that they are committed together.
        let held = store.hold_group_commit().await;
        let mut tasks = Vec::new();
        for i in 0..N {
            let app = Arc::clone(&app);
            let token = token.clone();
            tasks.push(tokio::spawn(async move {
                let body = json!({"scenario": "safe-retry", "student": format!("s-{i}"), "design": failing_design()});
                let key = format!("many-{i}");
                app.send(
                    Method::POST,
                    "/api/submissions",
                    &As::grader(&token),
                    &[("idempotency-key", &key)],
                    Some(serde_json::to_vec(&body).unwrap()),
                )
                .await
            }));
        }
        until_waiting(&store, before.waiting + N as u64).await;
        drop(held);
        let mut ids = BTreeSet::new();
        for t in tasks {
            let answer = t.await.unwrap();
            assert_eq!(
                answer.status,
                StatusCode::CREATED,
                "{backend}: {}",
                answer.text
            );
            ids.insert(answer.body["id"].as_str().unwrap().to_string());
        }
        assert_eq!(
            ids.len(),
            N,
            "{backend}: every answer names its own attempt"
        );
        assert_eq!(
            recorded_ids(&store).await,
            ids,
            "{backend}: each recorded once"
        );
        let after = store.group_commit_stats();
        let (batches, jobs) = (after.batches - before.batches, after.jobs - before.jobs);
        assert_eq!(
            jobs, N as u64,
            "{backend}: one write each, its claim and its record"
        );
        assert!(
            batches < jobs,
            "{backend}: {jobs} writes in {batches} batches: they share commits"
        );
        assert!(after.largest_batch >= N as u64, "{backend}: {after:?}");
        // The metrics say so too.
        let metrics = app.get("/metrics", &As::nobody()).await;
        let line = |name: &str| {
            metrics
                .text
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name} ")))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("{backend}: no {name} in {}", metrics.text))
        };
        assert_eq!(
            line("pipeline_builder_group_commit_writes_total"),
            after.jobs
        );
        assert_eq!(
            line("pipeline_builder_group_commit_batches_total"),
            after.batches
        );
        // A retry of each is a replay: nothing new is recorded.
        let again = app
            .send(
                Method::POST,
                "/api/submissions",
                &As::grader(&token),
                &[("idempotency-key", "many-0")],
                Some(
                    serde_json::to_vec(&json!({"scenario": "safe-retry", "student": "s-0", "design": failing_design()}))
                        .unwrap(),
                ),
            )
            .await;
        assert_eq!(
            again.status,
            StatusCode::CREATED,
            "{backend}: {}",
            again.text
        );
        assert_eq!(again.header("idempotent-replayed"), Some("true"));
        assert_eq!(recorded_ids(&store).await.len(), N, "{backend}");
        store.close().await;
    }
}

#[tokio::test]
async fn a_record_whose_claim_was_taken_over_is_refused_alone_and_its_batch_commits() {
    const N: usize = 6;
    const LOST: usize = 2;
    for (store, _dir, _db) in stores("group-commit-lost-claim").await {
        let backend = store.backend();
        // Each key claimed by its holder; key LOST then taken over by another holder (a lease
        // of zero: its first holder counts as stalled).
        for i in 0..N {
            let claim = store
                .claim_idempotency_key_as(
                    &ClaimId::held_by("grader:ta", &format!("lost-{i}"), &format!("owner-{i}")),
                    "fp",
                    LEASE,
                )
                .await
                .unwrap();
            assert_eq!(claim, Claim::Started, "{backend}");
        }
        let taken = store
            .claim_idempotency_key_as(
                &ClaimId::held_by("grader:ta", &format!("lost-{LOST}"), "successor"),
                "fp",
                Duration::ZERO,
            )
            .await
            .unwrap();
        assert_eq!(taken, Claim::Started, "{backend}: the takeover");
        let before = store.group_commit_stats();
        let outcomes = record_together(
            &store,
            "lost",
            N,
            |i| format!("student-{i}"),
            |i| format!("owner-{i}"),
        )
        .await;
        let after = store.group_commit_stats();
        assert_eq!(
            (after.batches - before.batches, after.jobs - before.jobs),
            (1, N as u64),
            "{backend}: the records were one batch"
        );
        for (i, outcome) in outcomes.iter().enumerate() {
            let expected = i != LOST;
            assert_eq!(outcome, &Ok(expected), "{backend}: record {i}");
        }
        let ids = recorded_ids(&store).await;
        let expected: BTreeSet<String> = (0..N)
            .filter(|&i| i != LOST)
            .map(|i| format!("lost-{i}"))
            .collect();
        assert_eq!(ids, expected, "{backend}: the lost one recorded nothing");
        // The others' answers are stored; the lost key is still its successor's, in flight.
        assert!(matches!(
            store
                .claim_idempotency_key("grader:ta", "lost-0", "fp", LEASE)
                .await
                .unwrap(),
            Claim::Replay { status: 201, .. }
        ));
        assert_eq!(
            store
                .claim_idempotency_key("grader:ta", &format!("lost-{LOST}"), "fp", LEASE)
                .await
                .unwrap(),
            Claim::InFlight,
            "{backend}"
        );
        // Its successor can still record.
        let body = json!({"id": "successor"});
        let key = format!("lost-{LOST}");
        let answer = IdempotentAnswer {
            claim: &ClaimId::held_by("grader:ta", &key, "successor"),
            status: 201,
            body: &body,
        };
        assert!(store
            .record(Some(&attempt("successor", "student-x")), Some(&answer))
            .await
            .unwrap());
        store.close().await;
    }
}

/// Makes the commit of any transaction that records an attempt of `student` fail: the attempt's
/// insert adds a row whose foreign key is checked only at commit (a deferred constraint), and
/// it points nowhere.
async fn fail_commits_of(store: &Store, student: &str) {
    match store {
        Store::Sqlite(pool, ..) => {
            for statement in [
                "CREATE TABLE commit_guard (id TEXT PRIMARY KEY)".to_string(),
                "CREATE TABLE commit_guarded (guard TEXT REFERENCES commit_guard (id) DEFERRABLE INITIALLY DEFERRED)".to_string(),
                format!("CREATE TRIGGER fail_at_commit AFTER INSERT ON attempts WHEN NEW.student = '{student}' \
                         BEGIN INSERT INTO commit_guarded (guard) VALUES ('nowhere'); END"),
            ] {
                sqlx::query(&statement).execute(pool).await.expect("the guard");
            }
        }
        Store::Postgres(pool, ..) => {
            for statement in [
                "CREATE TABLE commit_guard (id TEXT PRIMARY KEY)".to_string(),
                "CREATE TABLE commit_guarded (guard TEXT REFERENCES commit_guard (id) DEFERRABLE INITIALLY DEFERRED)".to_string(),
                format!("CREATE FUNCTION fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
                         IF NEW.student = '{student}' THEN INSERT INTO commit_guarded (guard) VALUES ('nowhere'); END IF; \
                         RETURN NEW; END $$"),
                "CREATE TRIGGER fail_at_commit AFTER INSERT ON attempts FOR EACH ROW EXECUTE FUNCTION fail_at_commit()".to_string(),
            ] {
                sqlx::query(&statement).execute(pool).await.expect("the guard");
            }
        }
    }
}

#[tokio::test]
async fn a_commit_that_fails_answers_every_member_with_the_error_and_records_none() {
    const N: usize = 5;
    for (store, _dir, _db) in stores("group-commit-failed-commit").await {
        let backend = store.backend();
        fail_commits_of(&store, "fails-at-commit").await;
        for i in 0..N {
            assert_eq!(
                store
                    .claim_idempotency_key_as(
                        &ClaimId::held_by(
                            "grader:ta",
                            &format!("failed-{i}"),
                            &format!("owner-{i}")
                        ),
                        "fp",
                        LEASE
                    )
                    .await
                    .unwrap(),
                Claim::Started
            );
        }
        let before = store.group_commit_stats();
        // One member's attempt breaks the commit; each item alone would pass its savepoint.
        let outcomes = record_together(
            &store,
            "failed",
            N,
            |i| {
                if i == 3 {
                    "fails-at-commit".to_string()
                } else {
                    format!("student-{i}")
                }
            },
            |i| format!("owner-{i}"),
        )
        .await;
        let after = store.group_commit_stats();
        assert_eq!(
            (
                after.batches - before.batches,
                after.failed_batches - before.failed_batches
            ),
            (1, 1),
            "{backend}: one batch, failed"
        );
        for (i, outcome) in outcomes.iter().enumerate() {
            let e = outcome.as_ref().expect_err("every member gets the error");
            assert!(
                e.to_lowercase().contains("foreign key"),
                "{backend}: record {i} got {e}"
            );
        }
        assert!(
            recorded_ids(&store).await.is_empty(),
            "{backend}: none recorded"
        );
        // No answer was stored: each key is still in flight with its holder, which can
        // record again (the writer went on).
        for i in 0..N {
            assert_eq!(
                store
                    .claim_idempotency_key("grader:ta", &format!("failed-{i}"), "fp", LEASE)
                    .await
                    .unwrap(),
                Claim::InFlight,
                "{backend}: key {i}"
            );
        }
        let body = json!({"id": "failed-0"});
        let answer = IdempotentAnswer {
            claim: &ClaimId::held_by("grader:ta", "failed-0", "owner-0"),
            status: 201,
            body: &body,
        };
        assert!(store
            .record(Some(&attempt("failed-0", "student-0")), Some(&answer))
            .await
            .unwrap());
        assert_eq!(recorded_ids(&store).await.len(), 1, "{backend}");
        store.close().await;
    }
}

#[tokio::test]
async fn a_closed_store_answers_its_writes_with_an_error_at_once() {
    for (store, _dir, _db) in stores("group-commit-closed").await {
        let backend = store.backend();
        store.close().await;
        let claim = tokio::time::timeout(
            Duration::from_secs(10),
            store.claim_idempotency_key("grader:ta", "closed", "fp", LEASE),
        )
        .await
        .expect("an answer, not a hang");
        assert!(
            matches!(claim, Err(sqlx::Error::PoolClosed)),
            "{backend}: {claim:?}"
        );
        let record = tokio::time::timeout(
            Duration::from_secs(10),
            store.record(Some(&attempt("closed", "s")), None),
        )
        .await
        .expect("an answer, not a hang");
        assert!(
            matches!(record, Err(sqlx::Error::PoolClosed)),
            "{backend}: {record:?}"
        );
    }
}

#[tokio::test]
async fn a_write_that_fails_in_a_batch_gets_its_error_alone_and_the_others_commit() {
    const N: usize = 5;
    const BAD: usize = 1;
    for (store, _dir, _db) in stores("group-commit-one-fails").await {
        let backend = store.backend();
        // An attempt whose id the bad record will use again: its insert breaks the primary key.
        assert!(store
            .record(Some(&attempt("taken", "student-x")), None)
            .await
            .unwrap());
        for i in 0..N {
            assert_eq!(
                store
                    .claim_idempotency_key_as(
                        &ClaimId::held_by("grader:ta", &format!("one-{i}"), &format!("owner-{i}")),
                        "fp",
                        LEASE
                    )
                    .await
                    .unwrap(),
                Claim::Started
            );
        }
        let held = store.hold_group_commit().await;
        let mut tasks = Vec::new();
        for i in 0..N {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let key = format!("one-{i}");
                let id = if i == BAD {
                    "taken".to_string()
                } else {
                    key.clone()
                };
                let body = json!({"id": id});
                let owner = format!("owner-{i}");
                let answer = IdempotentAnswer {
                    claim: &ClaimId::held_by("grader:ta", &key, &owner),
                    status: 201,
                    body: &body,
                };
                store
                    .record(Some(&attempt(&id, &format!("student-{i}"))), Some(&answer))
                    .await
            }));
        }
        until_waiting(&store, N as u64).await;
        let before = store.group_commit_stats();
        drop(held);
        let mut outcomes = Vec::new();
        for t in tasks {
            outcomes.push(t.await.unwrap());
        }
        let after = store.group_commit_stats();
        assert_eq!(after.batches - before.batches, 1, "{backend}: one batch");
        assert_eq!(after.failed_batches, before.failed_batches, "{backend}");
        for (i, outcome) in outcomes.iter().enumerate() {
            if i == BAD {
                let e = outcome.as_ref().expect_err("the bad record fails");
                assert!(
                    matches!(e, sqlx::Error::Database(db) if db.kind() == sqlx::error::ErrorKind::UniqueViolation),
                    "{backend}: {e}"
                );
            } else {
                assert!(
                    matches!(outcome, Ok(true)),
                    "{backend}: record {i}: {outcome:?}"
                );
            }
        }
        let expected: BTreeSet<String> = std::iter::once("taken".to_string())
            .chain((0..N).filter(|&i| i != BAD).map(|i| format!("one-{i}")))
            .collect();
        assert_eq!(recorded_ids(&store).await, expected, "{backend}");
        // The bad record's answer went with it: its key is still in flight.
        assert_eq!(
            store
                .claim_idempotency_key("grader:ta", &format!("one-{BAD}"), "fp", LEASE)
                .await
                .unwrap(),
            Claim::InFlight,
            "{backend}"
        );
        assert!(matches!(
            store
                .claim_idempotency_key("grader:ta", "one-0", "fp", LEASE)
                .await
                .unwrap(),
            Claim::Replay { status: 201, .. }
        ));
        store.close().await;
    }
}

/// Claims `key` and records the attempt `id` with its answer in one write
/// ([`Store::record_once`]), as a submission does.
async fn record_once(
    store: &Store,
    key: &str,
    fingerprint: &str,
    lease: Duration,
    id: &str,
) -> Result<Claim, String> {
    let body = json!({"id": id});
    store
        .record_once(
            &ClaimId::new("grader:ta", key),
            fingerprint,
            lease,
            Some(server::store::NewAttempt::of(&attempt(id, "s-once")).map_err(|e| e.to_string())?),
            (201, &body),
        )
        .await
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_write_claims_and_records_and_a_used_key_is_decided_alone_in_its_batch() {
    for (store, _dir, _db) in stores("group-commit-once").await {
        let backend = store.backend();
        // Before the batch: a key answered, a key held by a request still running, and a
        // key whose holder stopped renewing it.
        let first = record_once(&store, "done", "fp", LEASE, "done-1").await;
        assert_eq!(first, Ok(Claim::Started), "{backend}");
        for key in ["busy", "stale"] {
            let claim = store
                .claim_idempotency_key("grader:ta", key, "fp", LEASE)
                .await;
            assert_eq!(claim.unwrap(), Claim::Started, "{backend}");
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
        // One batch of every case.
        let cases: Vec<(&str, &str, Duration, &str)> = vec![
            ("fresh-a", "fp", LEASE, "fresh-a"),
            ("fresh-b", "fp", LEASE, "fresh-b"),
            ("done", "fp", LEASE, "done-2"),
            ("done", "other", LEASE, "done-3"),
            ("busy", "fp", LEASE, "busy-1"),
            ("stale", "fp", Duration::from_millis(10), "stale-1"),
            ("twin", "fp", LEASE, "twin-1"),
            ("twin", "fp", LEASE, "twin-2"),
        ];
        let held = store.hold_group_commit().await;
        let before = store.group_commit_stats();
        let mut tasks = Vec::new();
        for (key, fingerprint, lease, id) in cases.iter().copied() {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                record_once(&store, key, fingerprint, lease, id).await
            }));
        }
        until_waiting(&store, before.waiting + cases.len() as u64).await;
        drop(held);
        let mut outcomes = Vec::new();
        for t in tasks {
            outcomes.push(t.await.expect("the task ran").expect("the write"));
        }
        let replay = Claim::Replay {
            status: 201,
            body: json!({"id": "done-1"}),
        };
        assert_eq!(outcomes[0], Claim::Started, "{backend}");
        assert_eq!(outcomes[1], Claim::Started, "{backend}");
        assert_eq!(outcomes[2], replay, "{backend}: the same request again");
        assert_eq!(outcomes[3], Claim::Mismatch, "{backend}: another request");
        assert_eq!(outcomes[4], Claim::InFlight, "{backend}: still held");
        assert_eq!(outcomes[5], Claim::Started, "{backend}: taken over");
        let twins = [&outcomes[6], &outcomes[7]];
        let started = twins.iter().filter(|o| ***o == Claim::Started).count();
        assert_eq!(started, 1, "{backend}: one of the twins counts: {twins:?}");
        let ids = recorded_ids(&store).await;
        let twin = if outcomes[6] == Claim::Started {
            "twin-1"
        } else {
            "twin-2"
        };
        let other_twin = if twin == "twin-1" { "twin-2" } else { "twin-1" };
        assert!(
            twins.contains(&&Claim::Replay {
                status: 201,
                body: json!({"id": twin}),
            }),
            "{backend}: the other twin replays the first: {twins:?}"
        );
        let expected: BTreeSet<String> = ["done-1", "fresh-a", "fresh-b", "stale-1", twin]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            ids, expected,
            "{backend}: only the writes that count are recorded"
        );
        assert!(!ids.contains(other_twin));
    }
}
