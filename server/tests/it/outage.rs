//! A database outage: a real server process reaches PostgreSQL through a small TCP proxy that
//! the test can cut and restore. While cut, what needs the database answers 503
//! `database_unavailable` with `Retry-After`, checking designs keeps working and `/readyz`
//! says 503; once restored the server recovers by itself and `/readyz` says 200.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::common::{failing_design, passing_design};
use crate::processes::ServerProcess;
use server::error::ErrorCode;

/// A TCP proxy on 127.0.0.1 in front of `upstream`. Cutting it closes every open connection
/// and drops new ones as soon as they are accepted, as when the database's machine goes
/// away; refusing closes its port as well, as when PostgreSQL is stopped; restoring lets
/// connections through again, on the same port.
pub struct Proxy {
    pub address: std::net::SocketAddr,
    upstream: String,
    cut: Arc<AtomicBool>,
    generation: watch::Sender<u64>,
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Proxy {
    pub async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the proxy listens");
        let address = listener.local_addr().unwrap();
        let (generation, _) = watch::channel(0u64);
        let proxy = Proxy {
            address,
            upstream,
            cut: Arc::new(AtomicBool::new(false)),
            generation,
            task: std::sync::Mutex::new(None),
        };
        proxy.serve(listener);
        proxy
    }

    fn serve(&self, listener: TcpListener) {
        let (cut, generations, upstream) = (
            Arc::clone(&self.cut),
            self.generation.clone(),
            self.upstream.clone(),
        );
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    continue;
                };
                if cut.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let upstream = upstream.clone();
                let mut changed = generations.subscribe();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        // A cut: both sides are dropped, so both see their connection close.
                        _ = changed.changed() => {}
                    }
                });
            }
        });
        *self.task.lock().unwrap() = Some(task);
    }

    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        self.generation.send_modify(|g| *g += 1);
    }

    /// Cuts, and closes the port: new connections are refused.
    pub async fn refuse(&self) {
        self.cut();
        let task = self.task.lock().unwrap().take();
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
        }
    }

    pub async fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
        if self.task.lock().unwrap().is_none() {
            let listener = TcpListener::bind(self.address)
                .await
                .expect("the proxy listens on its port again");
            self.serve(listener);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(task) = self.task.lock().unwrap().take() {
            task.abort();
        }
    }
}

/// `postgres://user@host:port/db` → (`host:port`, the URL through `proxy`).
fn through(url: &str, proxy: std::net::SocketAddr) -> (String, String) {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (user, rest) = rest
        .rsplit_once('@')
        .map(|(u, r)| (format!("{u}@"), r))
        .unwrap_or((String::new(), rest));
    let (authority, path) = rest.split_once('/').expect("a database in the URL");
    (
        authority.to_string(),
        format!("{scheme}://{user}{proxy}/{path}"),
    )
}

struct Client {
    http: reqwest::Client,
    base: String,
    cookie: String,
}

impl Client {
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Option<String>, Value, Duration) {
        let began = Instant::now();
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("cookie", &self.cookie);
        if let Some(b) = body {
            request = request.json(&b);
        }
        let response = request
            .send()
            .await
            .expect("the server answers during an outage");
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        let body: Value = response.json().await.expect("every answer is JSON");
        (status, retry_after, body, began.elapsed())
    }
}

// Several threads: the proxy keeps serving while the test waits for the server to start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_is_503_with_retry_after_and_the_server_recovers_by_itself() {
    let Some(db) =
        crate::postgres::database("a_database_outage_is_503_and_the_server_recovers").await
    else {
        return;
    };
    let (upstream, _) = through(&db.url, "127.0.0.1:1".parse().unwrap());
    let proxy = Proxy::start(upstream).await;
    let (_, url) = through(&db.url, proxy.address);
    let server = ServerProcess::start_with(&url, &["--rate-limit-per-second", "0"]);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let session = http
        .post(format!("{}/api/session", server.base))
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
    let client = Client {
        http: http.clone(),
        base: server.base.clone(),
        cookie,
    };
    use reqwest::Method;
    let submission = || json!({"scenario": "safe-retry", "design": failing_design()});

    assert_eq!(client.send(Method::GET, "/readyz", None).await.0, 200);
    assert_eq!(
        client
            .send(Method::POST, "/api/submissions", Some(submission()))
            .await
            .0,
        201
    );

    proxy.cut();
    // Everything that needs the database: 503 database_unavailable, Retry-After, quickly.
    let needs_database: Vec<(Method, &str, Option<Value>)> = vec![
        (Method::GET, "/readyz", None),
        (Method::GET, "/api/session", None),
        (Method::POST, "/api/submissions", Some(submission())),
        (Method::GET, "/api/submissions", None),
        (
            Method::PUT,
            "/api/drafts/safe-retry",
            Some(json!({"design": {"nodes": []}})),
        ),
        (Method::GET, "/api/drafts/safe-retry", None),
    ];
    for round in 0..2 {
        for (method, path, body) in &needs_database {
            let (status, retry_after, answer, took) =
                client.send(method.clone(), path, body.clone()).await;
            assert_eq!(status, 503, "round {round}: {method} {path}: {answer}");
            assert_eq!(
                answer["error"]["code"],
                ErrorCode::DatabaseUnavailable.as_str(),
                "{method} {path}: {answer}"
            );
            assert!(
                answer["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("try again"),
                "{answer}"
            );
            assert_eq!(retry_after.as_deref(), Some("2"), "{method} {path}");
            assert!(
                took < Duration::from_secs(5),
                "{method} {path} took {took:?}"
            );
        }
    }
    // Checking designs needs no database and keeps working; so do the catalogue and a scenario.
    for design in [failing_design(), passing_design("safe-retry")] {
        let (status, _, verdict, _) = client
            .send(
                Method::POST,
                "/api/scenarios/safe-retry/check",
                Some(design),
            )
            .await;
        assert_eq!(status, 200, "{verdict}");
        assert!(verdict["requirements"].is_array());
    }
    let (status, _, catalogue, _) = client.send(Method::GET, "/api/scenarios", None).await;
    assert_eq!(status, 200, "{catalogue}");
    assert_eq!(
        catalogue.as_array().unwrap().len(),
        crate::common::scenarios().len()
    );
    assert_eq!(
        client
            .send(Method::GET, "/api/scenarios/safe-retry", None)
            .await
            .0,
        200
    );
    assert_eq!(
        client.send(Method::GET, "/healthz", None).await.0,
        200,
        "liveness does not depend on the database"
    );

    // Restored: the server recovers by itself; /readyz tells when.
    proxy.restore().await;
    let restored = Instant::now();
    let recovery = loop {
        if client.send(Method::GET, "/readyz", None).await.0 == 200 {
            break restored.elapsed();
        }
        assert!(
            restored.elapsed() < Duration::from_secs(30),
            "the server did not recover within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (status, _, answer, _) = client
        .send(Method::POST, "/api/submissions", Some(submission()))
        .await;
    assert_eq!(status, 201, "{answer}");
    let (status, _, listed, _) = client.send(Method::GET, "/api/submissions", None).await;
    assert_eq!(status, 200);
    assert_eq!(
        listed.as_array().unwrap().len(),
        2,
        "what was stored before the outage is still there: {listed}"
    );
    assert_eq!(client.send(Method::GET, "/api/session", None).await.0, 200);

    // A second outage, recovered from the same way.
    proxy.cut();
    assert_eq!(client.send(Method::GET, "/readyz", None).await.0, 503);
    proxy.restore().await;
    let again = Instant::now();
    while client.send(Method::GET, "/readyz", None).await.0 != 200 {
        assert!(again.elapsed() < Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = again.elapsed();

    // PostgreSQL stopped: its port refuses connections. A request waits for the pool's
    // acquire timeout (3 s), then gets its 503; /readyz gives up after 2 s.
    proxy.refuse().await;
    let (status, retry_after, answer, took) = client
        .send(Method::POST, "/api/submissions", Some(submission()))
        .await;
    assert_eq!(
        (status, retry_after.as_deref()),
        (503, Some("2")),
        "{answer}"
    );
    assert_eq!(
        answer["error"]["code"],
        ErrorCode::DatabaseUnavailable.as_str()
    );
    assert!(took < Duration::from_secs(6), "{took:?}");
    let refused_wait = took;
    let (status, _, _, took) = client.send(Method::GET, "/readyz", None).await;
    assert_eq!(status, 503);
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert_eq!(
        client
            .send(
                Method::POST,
                "/api/scenarios/safe-retry/check",
                Some(failing_design())
            )
            .await
            .0,
        200
    );
    proxy.restore().await;
    let third = Instant::now();
    while client.send(Method::GET, "/readyz", None).await.0 != 200 {
        assert!(third.elapsed() < Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        client
            .send(Method::POST, "/api/submissions", Some(submission()))
            .await
            .0,
        201
    );
    {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "database outage: recovered {} ms after the connection was restored (second outage: {} ms); \
             with the port refusing, a submission got its 503 after {} ms, and the server recovered {} ms after the port reopened",
            recovery.as_millis(),
            second.as_millis(),
            refused_wait.as_millis(),
            third.elapsed().as_millis()
        );
    }
    assert!(server.terminate().success());
}
