//! `kill -9` in the middle of a burst of submissions, then a restart on the same database:
//! every submission that was answered 2xx is there exactly once, a retry with its
//! Idempotency-Key gets the same answer, and a retry of a request that got no answer is
//! recorded exactly once. On SQLite and on PostgreSQL.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{failing_design, passing_design};
use crate::processes::{ServerProcess, BIN};

/// How many submissions are in the burst.
const BURST: usize = 40;

enum Outcome {
    Answered { status: u16, text: String },
    NoAnswer,
}

fn body(i: usize) -> Value {
    let design = if i.is_multiple_of(2) {
        failing_design()
    } else {
        passing_design("safe-retry")
    };
    json!({"scenario": "safe-retry", "student": format!("crash-{i}"), "design": design})
}

async fn post(http: &reqwest::Client, base: &str, token: &str, i: usize) -> Outcome {
    let sent = http
        .post(format!("{base}/api/submissions"))
        .bearer_auth(token)
        .header("idempotency-key", format!("burst-{i}"))
        .json(&body(i))
        .send()
        .await;
    match sent {
        Ok(response) => {
            let status = response.status().as_u16();
            match response.text().await {
                Ok(text) => Outcome::Answered { status, text },
                Err(_) => Outcome::NoAnswer,
            }
        }
        Err(_) => Outcome::NoAnswer,
    }
}

/// A retry as a careful client makes it: on 409 (the key is still held by the dead server's
/// lease) it waits as `Retry-After` says and tries again.
async fn retry(http: &reqwest::Client, base: &str, token: &str, i: usize) -> (u16, String, bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let response = http
            .post(format!("{base}/api/submissions"))
            .bearer_auth(token)
            .header("idempotency-key", format!("burst-{i}"))
            .json(&body(i))
            .send()
            .await
            .expect("the restarted server answers");
        let status = response.status().as_u16();
        let replayed = response.headers().get("idempotent-replayed").is_some();
        let text = response.text().await.unwrap();
        if status == 409 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        }
        return (status, text, replayed);
    }
}

async fn attempts_of(http: &reqwest::Client, base: &str, token: &str, i: usize) -> Vec<String> {
    let listed: Value = http
        .get(format!("{base}/api/submissions?student=crash-{i}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect()
}

async fn submissions_survive_kill_9(database_url: &str, label: &str) {
    let made = Command::new(BIN)
        .args([
            "token",
            "create",
            "--name",
            "crash",
            "--database-url",
            database_url,
        ])
        .env("RUST_LOG", "warn")
        .output()
        .expect("token create runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let token = String::from_utf8(made.stdout).unwrap().trim().to_string();
    let flags = [
        "--idempotency-lease-seconds",
        "2",
        "--rate-limit-per-second",
        "0",
    ];

    let server = ServerProcess::start_with(database_url, &flags);
    let base = server.base.clone();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let answered = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..BURST {
        let (http, base, token, answered) = (
            http.clone(),
            base.clone(),
            token.clone(),
            Arc::clone(&answered),
        );
        tasks.push(tokio::spawn(async move {
            // The second half starts when the kill is due: the group commit answers a volley's
            // submissions together, so a fast server could answer all of one volley between two
            // looks at the count below, and the kill would land after the burst.
            while i >= BURST / 2
                && answered.load(Ordering::SeqCst) < BURST / 4
                && started.elapsed() < Duration::from_secs(60)
            {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let outcome = post(&http, &base, &token, i).await;
            answered.fetch_add(1, Ordering::SeqCst);
            outcome
        }));
    }
    // Mid-burst: once a quarter of the submissions are answered.
    while answered.load(Ordering::SeqCst) < BURST / 4 && started.elapsed() < Duration::from_secs(60)
    {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    server.kill9();
    let killed_after = started.elapsed();
    let mut outcomes = BTreeMap::new();
    for (i, task) in tasks.into_iter().enumerate() {
        outcomes.insert(i, task.await.unwrap());
    }
    let acknowledged: Vec<usize> = outcomes
        .iter()
        .filter(
            |(_, o)| matches!(o, Outcome::Answered { status, .. } if (200..300).contains(status)),
        )
        .map(|(i, _)| *i)
        .collect();
    let unanswered: Vec<usize> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::NoAnswer))
        .map(|(i, _)| *i)
        .collect();
    for (i, o) in &outcomes {
        if let Outcome::Answered { status, text } = o {
            assert!(
                (200..300).contains(status),
                "submission {i} was answered {status} before the kill: {text}"
            );
        }
    }
    assert!(
        !acknowledged.is_empty(),
        "some submissions were answered before the kill"
    );
    assert!(
        !unanswered.is_empty(),
        "the kill came mid-burst: some submissions got no answer"
    );

    // The restart, on the same database.
    let restarted_at = Instant::now();
    let server = ServerProcess::start_with(database_url, &flags);
    let base = server.base.clone();
    let restart = restarted_at.elapsed();

    // Every acknowledged submission is stored, once, and its key replays the same answer.
    for &i in &acknowledged {
        let Outcome::Answered { status, text } = &outcomes[&i] else {
            unreachable!()
        };
        let first: Value = serde_json::from_str(text).unwrap();
        let id = first["id"].as_str().unwrap();
        assert_eq!(
            attempts_of(&http, &base, &token, i).await,
            vec![id.to_string()],
            "submission {i} is stored exactly once"
        );
        let (again_status, again_text, replayed) = retry(&http, &base, &token, i).await;
        assert_eq!(
            (again_status, replayed),
            (*status, true),
            "submission {i}: {again_text}"
        );
        assert_eq!(
            &again_text, text,
            "submission {i}: the retry gets the same answer, byte for byte"
        );
    }
    // A submission that got no answer may or may not have been recorded; its retry settles
    // it, and it is then stored exactly once.
    let mut recorded_before_kill = 0;
    for &i in &unanswered {
        let before = attempts_of(&http, &base, &token, i).await;
        assert!(
            before.len() <= 1,
            "submission {i} is stored at most once: {before:?}"
        );
        recorded_before_kill += before.len();
        let (status, text, _) = retry(&http, &base, &token, i).await;
        assert_eq!(status, 201, "the retry of submission {i} succeeds: {text}");
        let id = serde_json::from_str::<Value>(&text).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            attempts_of(&http, &base, &token, i).await,
            vec![id.clone()],
            "submission {i} is stored exactly once after its retry"
        );
        if let Some(earlier) = before.first() {
            assert_eq!(
                earlier, &id,
                "submission {i}: the retry answers the submission that was recorded"
            );
        }
        // And a second retry replays it.
        let (status, again, replayed) = retry(&http, &base, &token, i).await;
        assert_eq!((status, replayed, again), (201, true, text));
    }
    let all: Value = http
        .get(format!("{base}/api/submissions?limit=1000"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        all.as_array().unwrap().len(),
        BURST,
        "one attempt per submission, none twice"
    );
    {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "kill -9 on {label}: {BURST} submissions, killed after {} ms with {} acknowledged and {} unanswered \
             ({recorded_before_kill} of those committed just before the kill); restart took {} ms; \
             all {} acknowledged found once with the same answer, every unanswered one recorded once on retry",
            killed_after.as_millis(),
            acknowledged.len(),
            unanswered.len(),
            restart.as_millis(),
            acknowledged.len()
        );
    }
    assert!(server.terminate().success());
}

crate::on_both_databases!(submissions_survive_kill_9, |db| {
    submissions_survive_kill_9(&db.url, db.name).await;
});
