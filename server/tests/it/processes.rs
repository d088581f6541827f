//! Two real `pipeline-builder serve` processes on one PostgreSQL database, as behind a load
//! balancer: what one records the other lists, and an Idempotency-Key used on one is
//! honoured by the other.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{failing_design, passing_design, scenarios_dir};
use crate::postgres;
use server::error::ErrorCode;

pub const BIN: &str = env!("CARGO_BIN_EXE_pipeline-builder");

pub struct ServerProcess {
    pub child: Child,
    pub base: String,
}

impl ServerProcess {
    pub fn start(database_url: &str) -> ServerProcess {
        ServerProcess::start_with(database_url, &[])
    }

    /// Starts `pipeline-builder serve` with more flags and waits until it listens.
    pub fn start_with(database_url: &str, extra: &[&str]) -> ServerProcess {
        let mut command = Command::new(BIN);
        command
            .args([
                "serve",
                "--bind",
                "127.0.0.1:0",
                "--database-url",
                database_url,
                "--static-dir",
                "/nonexistent",
            ])
            .args(extra)
            .arg("--scenarios")
            .arg(scenarios_dir())
            .env("RUST_LOG", "warn")
            .stderr(Stdio::inherit());
        ServerProcess::spawn(command)
    }

    /// Runs `command` (a `pipeline-builder serve` with whatever it needs) and waits until the
    /// server says where it listens; its standard output is read to the end, so that it never
    /// writes into a closed pipe. Every test that starts a server process starts it here.
    pub fn spawn(mut command: Command) -> ServerProcess {
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .expect("the server binary starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(address) = line.strip_prefix("pipeline-builder listening on ") {
                    let _ = sender.send(address.to_string());
                }
            }
        });
        let base = match receiver.recv_timeout(Duration::from_secs(120)) {
            Ok(base) => base,
            Err(_) => {
                let _ = child.kill();
                panic!("the server did not say where it listens within 120 s");
            }
        };
        ServerProcess { child, base }
    }

    /// Kills the process with SIGKILL (`kill -9`): no request in flight is finished, nothing
    /// is flushed, no destructor runs.
    pub fn kill9(mut self) {
        let pid = self.child.id().to_string();
        let killed = Command::new("kill")
            .args(["-9", &pid])
            .status()
            .expect("kill runs");
        assert!(killed.success(), "kill -9 {pid} failed");
        let status = self.child.wait().expect("the server stops");
        assert!(
            !status.success(),
            "a killed server does not exit cleanly: {status}"
        );
        std::mem::forget(self);
    }

    /// Asks for a graceful stop (SIGTERM) and waits for it.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        let status = self.child.wait().expect("the server stops");
        std::mem::forget(self);
        status
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn two_servers_share_one_postgres_database() {
    let Some(db) = postgres::database("two_servers_share_one_postgres_database").await else {
        return;
    };
    // The token is made with the command line, as a grader would.
    let made = Command::new(BIN)
        .args(["token", "create", "--name", "ta", "--database-url", &db.url])
        .output()
        .expect("token create runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let token = String::from_utf8(made.stdout).unwrap().trim().to_string();

    let a = ServerProcess::start(&db.url);
    let b = ServerProcess::start(&db.url);
    let http = reqwest::Client::new();
    let body = json!({"scenario": "safe-retry", "student": "lms-1", "design": failing_design()});

    let first = http
        .post(format!("{}/api/submissions", a.base))
        .bearer_auth(&token)
        .header("idempotency-key", "shared-key")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 201);
    let first_text = first.text().await.unwrap();
    let first: Value = serde_json::from_str(&first_text).unwrap();
    let id = first["id"].as_str().unwrap().to_string();

    // Listed through the other server.
    let listed: Value = http
        .get(format!("{}/api/submissions?student=lms-1", b.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], id.as_str());
    let one = http
        .get(format!("{}/api/submissions/{id}", b.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(one.status(), 200);

    // The key is honoured by the other server: the stored answer, nothing new recorded.
    let replay = http
        .post(format!("{}/api/submissions", b.base))
        .bearer_auth(&token)
        .header("idempotency-key", "shared-key")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 201);
    assert_eq!(
        replay
            .headers()
            .get("idempotent-replayed")
            .map(|v| v.to_str().unwrap()),
        Some("true")
    );
    assert_eq!(
        replay.text().await.unwrap(),
        first_text,
        "the replay is the first answer, byte for byte"
    );
    let other_body = json!({"scenario": "safe-retry", "student": "lms-1", "design": passing_design("safe-retry")});
    let reused = http
        .post(format!("{}/api/submissions", b.base))
        .bearer_auth(&token)
        .header("idempotency-key", "shared-key")
        .json(&other_body)
        .send()
        .await
        .unwrap();
    assert_eq!(reused.status(), 422);
    let reused: Value = reused.json().await.unwrap();
    assert_eq!(
        reused["error"]["code"],
        ErrorCode::IdempotencyKeyReused.as_str()
    );
    let listed: Value = http
        .get(format!("{}/api/submissions", a.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        listed.as_array().unwrap().len(),
        1,
        "the replay recorded nothing new"
    );

    // A key in flight on one server (claimed in the shared database) is 409 on the other.
    let store = server::Store::connect(&db.url).await.unwrap();
    let fingerprint = server::routes::submissions::fingerprint(
        "POST /api/submissions",
        &serde_json::to_vec(&other_body).unwrap(),
    );
    store
        .claim_idempotency_key(
            // A grader's keys are scoped by the token's identity (its hash), not its name.
            &format!("grader:{}", server::auth::hash_token(&token)),
            "busy-key",
            &fingerprint,
            Duration::from_secs(600),
        )
        .await
        .unwrap();
    let busy = http
        .post(format!("{}/api/submissions", b.base))
        .bearer_auth(&token)
        .header("idempotency-key", "busy-key")
        .json(&other_body)
        .send()
        .await
        .unwrap();
    assert_eq!(busy.status(), 409);
    store.close().await;

    // A browser's session made on one server works on the other.
    let session = http
        .post(format!("{}/api/session", a.base))
        .send()
        .await
        .unwrap();
    let cookie = session.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let saved = http
        .put(format!("{}/api/drafts/safe-retry", a.base))
        .header("cookie", &cookie)
        .json(&json!({"design": {"nodes": []}}))
        .send()
        .await
        .unwrap();
    assert_eq!(saved.status(), 200);
    let read = http
        .get(format!("{}/api/drafts/safe-retry", b.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    assert!(read.headers().get("set-cookie").is_none());

    // Both stop gracefully on SIGTERM.
    assert!(a.terminate().success());
    assert!(b.terminate().success());
}
