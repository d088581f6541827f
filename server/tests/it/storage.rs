//! The store, the same checks on SQLite and on PostgreSQL over a real connection.

use std::time::Duration;

use chrono::Utc;
use serde_json::json;
use server::store::{Attempt, Claim, ClaimId, IdempotentAnswer, Progress, Store};

use crate::common::TempDir;
use crate::postgres;

fn attempt(id: &str, student: &str, scenario: &str, passed: bool) -> Attempt {
    Attempt {
        id: id.to_string(),
        student: student.to_string(),
        scenario: scenario.to_string(),
        scenario_hash: "sha256:abc".into(),
        design: json!({"nodes": [], "edges": []}),
        verdict: json!({"scenario": scenario, "passed": passed, "requirements": [{"id": "r", "text": "t", "passed": passed}]}),
        score: if passed { 3 } else { 1 },
        max_score: 3,
        passed,
        created_at: Utc::now(),
        class: None,
    }
}

/// Everything the server asks of a store.
async fn exercise(store: Store) {
    store.ping().await.expect("ping");

    // Students.
    let alice = store
        .create_session(
            "s-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "hash-of-alices-secret",
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .session_by_secret("hash-of-alices-secret")
            .await
            .unwrap(),
        Some(alice.clone())
    );
    assert_eq!(store.session_by_secret(&alice.id).await.unwrap(), None);
    assert_eq!(store.session_by_secret("s-unknown").await.unwrap(), None);
    store
        .set_display_name(&alice.id, Some("Ada"))
        .await
        .unwrap();
    assert_eq!(
        store
            .session_by_secret("hash-of-alices-secret")
            .await
            .unwrap()
            .unwrap()
            .display_name
            .as_deref(),
        Some("Ada")
    );

    // Drafts: unfinished designs, replaced on save.
    assert_eq!(
        store.get_draft(&alice.id, "safe-retry").await.unwrap(),
        None
    );
    let draft = json!({"nodes": [{"id": "x", "kind": "nonsense"}], "note": "ünïcode ✓"});
    store
        .put_draft(&alice.id, "safe-retry", &draft)
        .await
        .unwrap();
    assert_eq!(
        store
            .get_draft(&alice.id, "safe-retry")
            .await
            .unwrap()
            .unwrap()
            .design,
        draft
    );
    store
        .put_draft(&alice.id, "safe-retry", &json!({}))
        .await
        .unwrap();
    assert_eq!(
        store
            .get_draft(&alice.id, "safe-retry")
            .await
            .unwrap()
            .unwrap()
            .design,
        json!({})
    );

    // Attempts: a grader-named student is made on the way; lists filter and come newest first.
    let first = attempt("a1", &alice.id, "safe-retry", false);
    store.record(Some(&first), None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    store
        .record(Some(&attempt("a2", &alice.id, "safe-retry", true)), None)
        .await
        .unwrap();
    store
        .record(Some(&attempt("a3", "lms-7", "safe-rerun", false)), None)
        .await
        .unwrap();
    assert_eq!(
        store
            .redeem_legacy_student("lms-7", "hash-of-a-thief")
            .await
            .unwrap(),
        None,
        "a grader-named student has no session"
    );
    let read = store.get_attempt("a1").await.unwrap().unwrap();
    assert_eq!(read.verdict, first.verdict);
    assert_eq!(read.design, first.design);
    assert_eq!((read.score, read.max_score, read.passed), (1, 3, false));
    assert_eq!(
        read.created_at.timestamp_millis(),
        first.created_at.timestamp_millis()
    );
    assert_eq!(store.get_attempt("nope").await.unwrap(), None);
    let mine: Vec<String> = store
        .list_attempts(Some(&alice.id), None, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(mine, ["a2", "a1"]);
    assert_eq!(
        store
            .list_attempts(None, Some("safe-rerun"), 100)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(store.list_attempts(None, None, 100).await.unwrap().len(), 3);
    assert_eq!(store.list_attempts(None, None, 1).await.unwrap().len(), 1);

    let progress = store.progress(&alice.id).await.unwrap();
    assert_eq!(
        progress.get("safe-retry"),
        Some(&Progress {
            tried: true,
            passed: true
        })
    );
    store
        .put_draft(&alice.id, "logical-date", &json!({}))
        .await
        .unwrap();
    // A draft alone is not a try: "tried" means a Check was made.
    assert_eq!(
        store.progress(&alice.id).await.unwrap().get("logical-date"),
        None
    );

    // Idempotency keys: claim, replay, mismatch, in flight, abandon.
    let stale = Duration::from_secs(600);
    assert_eq!(
        store
            .claim_idempotency_key_as(
                &ClaimId::held_by("grader:ta", "k1", "holder-1"),
                "fp1",
                stale
            )
            .await
            .unwrap(),
        Claim::Started
    );
    assert_eq!(
        store
            .claim_idempotency_key("grader:ta", "k1", "fp1", stale)
            .await
            .unwrap(),
        Claim::InFlight
    );
    assert_eq!(
        store
            .claim_idempotency_key("grader:ta", "k1", "fp2", stale)
            .await
            .unwrap(),
        Claim::Mismatch
    );
    assert_eq!(
        store
            .claim_idempotency_key_as(
                &ClaimId::held_by("grader:other", "k1", "holder-2"),
                "fp2",
                stale
            )
            .await
            .unwrap(),
        Claim::Started,
        "keys are per caller"
    );
    let body = json!({"id": "a4", "score": 3});
    let a4 = attempt("a4", "lms-8", "safe-retry", true);
    store
        .record(
            Some(&a4),
            Some(&IdempotentAnswer {
                claim: &ClaimId::held_by("grader:ta", "k1", "holder-1"),
                status: 201,
                body: &body,
            }),
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .claim_idempotency_key("grader:ta", "k1", "fp1", stale)
            .await
            .unwrap(),
        Claim::Replay {
            status: 201,
            body: body.clone()
        }
    );
    assert_eq!(
        store
            .claim_idempotency_key("grader:ta", "k1", "fp2", stale)
            .await
            .unwrap(),
        Claim::Mismatch
    );
    store
        .abandon_idempotency_key(&ClaimId::held_by("grader:other", "k1", "holder-2"))
        .await
        .unwrap();
    assert_eq!(
        store
            .claim_idempotency_key("grader:other", "k1", "fp3", stale)
            .await
            .unwrap(),
        Claim::Started,
        "an abandoned key is free"
    );
    assert_eq!(
        store
            .claim_idempotency_key("grader:other", "k1", "fp3", Duration::ZERO)
            .await
            .unwrap(),
        Claim::Started,
        "a stale claim is taken over"
    );

    // A failed transaction records neither the attempt nor the answer.
    assert_eq!(
        store
            .claim_idempotency_key_as(
                &ClaimId::held_by("grader:ta", "k2", "holder-3"),
                "fp",
                stale
            )
            .await
            .unwrap(),
        Claim::Started
    );
    let duplicate = attempt("a4", "lms-8", "safe-retry", true);
    let err_body = json!({});
    assert!(store
        .record(
            Some(&duplicate),
            Some(&IdempotentAnswer {
                claim: &ClaimId::held_by("grader:ta", "k2", "holder-3"),
                status: 201,
                body: &err_body
            })
        )
        .await
        .is_err());
    assert_eq!(
        store
            .claim_idempotency_key("grader:ta", "k2", "fp", stale)
            .await
            .unwrap(),
        Claim::InFlight,
        "the rolled-back answer was not stored"
    );

    // Grader tokens: only hashes, revocation, reuse of a revoked name.
    assert!(store.create_token("ta", "hash-1").await.unwrap());
    assert!(
        !store.create_token("ta", "hash-2").await.unwrap(),
        "an active name is not replaced"
    );
    assert_eq!(
        store.active_tokens().await.unwrap(),
        vec![("ta".to_string(), "hash-1".to_string())]
    );
    assert!(store.revoke_token("ta").await.unwrap());
    assert!(!store.revoke_token("ta").await.unwrap());
    assert!(store.active_tokens().await.unwrap().is_empty());
    let listed = store.list_tokens().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].revoked_at.is_some());
    assert!(
        store.create_token("ta", "hash-3").await.unwrap(),
        "a revoked name may be used again"
    );
    assert_eq!(
        store.active_tokens().await.unwrap(),
        vec![("ta".to_string(), "hash-3".to_string())]
    );

    // A closed store fails instead of hanging.
    store.close().await;
    assert!(store.ping().await.is_err());
}

crate::on_both_databases!(the_store_works, |db| {
    let store = db.store().await;
    assert_eq!(
        store.backend(),
        if db.is_postgres() {
            "postgres"
        } else {
            "sqlite"
        }
    );
    exercise(store).await;
    // Migrations run again on an existing database without harm, and the data stays.
    let again = db.store().await;
    assert_eq!(again.list_attempts(None, None, 10).await.unwrap().len(), 4);
    if let Store::Sqlite(pool, ..) = &again {
        assert!(db.dir.path().join("db/test.db").is_file());
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(pool)
            .await
            .unwrap();
        assert_eq!(mode, "wal");
        // FULL (2): every commit is synced before it returns, so an answered submission survives a
        // power cut, not only a crash of the process.
        let synchronous: i64 = sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(pool)
            .await
            .unwrap();
        assert_eq!(synchronous, 2, "PRAGMA synchronous is FULL");
    }
    again.close().await;
});

#[tokio::test]
async fn concurrent_claims_of_one_key_start_exactly_one_request() {
    let dir = TempDir::new("race");
    let mut stores = vec![Store::connect(&dir.sqlite_url()).await.unwrap()];
    let pg = postgres::database("concurrent_claims_of_one_key_start_exactly_one_request").await;
    if let Some(db) = &pg {
        stores.push(Store::connect(&db.url).await.unwrap());
    }
    for store in stores {
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store
                    .claim_idempotency_key("grader:ta", "race", "fp", Duration::from_secs(600))
                    .await
                    .unwrap()
            }));
        }
        let mut started = 0;
        for t in tasks {
            if t.await.unwrap() == Claim::Started {
                started += 1;
            }
        }
        assert_eq!(
            started,
            1,
            "{}: exactly one claim may start",
            store.backend()
        );
        store.close().await;
    }
}

#[tokio::test]
async fn a_bad_database_url_is_refused_with_a_message() {
    let err = Store::connect("mysql://localhost/x").await.unwrap_err();
    assert!(err.to_string().contains("neither"), "{err}");
}

crate::on_both_databases!(
    a_verdict_is_kept_compressed_and_one_kept_before_still_reads,
    |db| {
        let store = db.store().await;
        let new = attempt("new", "lms-verdicts", "safe-retry", true);
        store.record(Some(&new), None).await.unwrap();
        // The attempt recorded now keeps its verdict compressed, and JSON null beside it; one
        // recorded before the verdict was compressed keeps its JSON and no compressed bytes.
        let legacy = json!({"scenario": "safe-retry", "passed": false, "requirements": [{"id": "r", "text": "ünïcode ✓", "passed": false}]});
        let legacy_sql = "INSERT INTO attempts (id, student, scenario, scenario_hash, design, verdict, score, max_score, passed, created_at, class_id) \
         VALUES ('old', 'lms-verdicts', 'safe-retry', 'sha256:abc', '{\"nodes\": [], \"edges\": []}', $1, 1, 3, FALSE, '2026-01-01T00:00:00Z', NULL)";
        let (kept, deflated): (String, Option<Vec<u8>>) = match &store {
            Store::Sqlite(pool, ..) => {
                sqlx::query(legacy_sql)
                    .bind(legacy.to_string())
                    .execute(pool)
                    .await
                    .unwrap();
                sqlx::query_as("SELECT verdict, verdict_deflate FROM attempts WHERE id = 'new'")
                    .fetch_one(pool)
                    .await
                    .unwrap()
            }
            Store::Postgres(pool, ..) => {
                sqlx::query(&legacy_sql.replace("$1", "$1::jsonb").replace(
                    "'2026-01-01T00:00:00Z'",
                    "'2026-01-01T00:00:00Z'::timestamptz",
                ))
                .bind(legacy.to_string())
                .execute(pool)
                .await
                .unwrap();
                sqlx::query_as(
                    "SELECT verdict::text, verdict_deflate FROM attempts WHERE id = 'new'",
                )
                .fetch_one(pool)
                .await
                .unwrap()
            }
        };
        assert_eq!(kept, "null");
        let deflated = deflated.expect("the new attempt's verdict is compressed");
        assert!(deflated.len() < new.verdict.to_string().len());

        // Both read back as they were recorded, one by one and in an export.
        assert_eq!(
            store.get_attempt("new").await.unwrap().unwrap().verdict,
            new.verdict
        );
        assert_eq!(
            store.get_attempt("old").await.unwrap().unwrap().verdict,
            legacy
        );
        let exported = store
            .attempts_page_for_export(&server::store::AttemptsQuery {
                student: Some("lms-verdicts"),
                scenario: None,
                before: None,
                limit: 10,
            })
            .await
            .unwrap();
        let verdicts: Vec<(&str, &serde_json::Value)> = exported
            .iter()
            .map(|a| (a.summary.id.as_str(), &a.verdict))
            .collect();
        assert_eq!(verdicts, [("new", &new.verdict), ("old", &legacy)]);
        store.close().await;
    }
);
