//! One test over a real socket: the app as a browser and a grader's script meet it.

use serde_json::{json, Value};

use crate::common::{failing_design, passing_design, spawn_app};

#[tokio::test]
async fn the_app_answers_over_a_real_socket() {
    let app = spawn_app().await;
    let token = app.grader_token("ta").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(server::app::serve(listener, app.state.clone()));
    let base = format!("http://{address}");
    let http = reqwest::Client::new();

    let health = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);

    // A browser: the cookie comes back and names the same student.
    let session = http
        .post(format!("{base}/api/session"))
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
    let me: Value = session.json().await.unwrap();
    let created = http
        .post(format!("{base}/api/submissions"))
        .header("cookie", &cookie)
        .header("idempotency-key", "socket-1")
        .json(&json!({"scenario": "safe-retry", "design": passing_design("safe-retry")}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["student"], me["student"]);

    // A grader's script, with gzip asked for: compression is on.
    let graded = http
        .post(format!("{base}/api/grade?format=gradescope"))
        .bearer_auth(&token)
        .header("accept-encoding", "gzip")
        .json(&json!([{"scenario": "safe-retry", "student": "lms-1", "design": failing_design()}]))
        .send()
        .await
        .unwrap();
    assert_eq!(graded.status(), 200);
    assert_eq!(
        graded
            .headers()
            .get("content-encoding")
            .map(|v| v.to_str().unwrap()),
        Some("gzip")
    );

    let plain = http
        .post(format!("{base}/api/scenarios/safe-retry/check"))
        .json(&failing_design())
        .send()
        .await
        .unwrap();
    let verdict: Value = plain.json().await.unwrap();
    assert_eq!(verdict["passed"], false);

    server.abort();
}
