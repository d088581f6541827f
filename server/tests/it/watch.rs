//! `serve --watch` and the author page's API: the catalogue follows the scenario files without
//! a restart, a broken edit never reaches students, verdicts follow the file's new hash, and a
//! check in flight finishes on the catalogue it started with.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{json, Value};
use server::config::Config;
use server::watch::LiveCatalogue;
use server::{catalogue, AppState, Store};

use crate::common::{passing_design, scenarios_dir, As, TempDir, TestApp};

/// How long a reload may take before a test gives up: the folder is validated whole, every
/// design of every file simulated, in a debug build on a busy machine.
const RELOAD_WAIT: Duration = Duration::from_secs(90);

/// A folder with two shipped scenarios, watched, served by an app with these settings.
async fn watched_app(config: Config) -> (TestApp, TempDir) {
    let folder = TempDir::new("watched");
    for id in ["safe-retry", "offset-commit"] {
        let name = format!("{id}.json");
        std::fs::copy(scenarios_dir().join(&name), folder.path().join(&name)).unwrap();
    }
    let loaded = catalogue::load(folder.path()).expect("the copied scenarios validate");
    let live = Arc::new(LiveCatalogue::new(loaded));
    server::watch::spawn(Arc::clone(&live), folder.path().to_path_buf())
        .expect("the folder can be watched");
    let dir = TempDir::new("watch-db");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let state = AppState::live(store, live, config);
    let app = TestApp {
        router: server::router(state.clone()),
        state,
        _dir: dir,
        _postgres: None,
    };
    (app, folder)
}

/// safe-retry's file under another id, title and course order, as an author would start a
/// new scenario from a shipped one.
fn copy_of_safe_retry(title: &str) -> String {
    let text = std::fs::read_to_string(scenarios_dir().join("safe-retry.json")).unwrap();
    let mut json: Value = serde_json::from_str(&text).unwrap();
    json["id"] = json!("safe-retry-again");
    json["title"] = json!(title);
    json["order"] = json!(42);
    serde_json::to_string_pretty(&json).unwrap()
}

/// Writes a file as editors do: a temporary file renamed over the old one.
fn save(folder: &Path, name: &str, text: &str) {
    let temp = folder.join(format!(".{name}.tmp"));
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, folder.join(name)).unwrap();
}

/// Waits until `done` holds of the author status, or fails naming what it waited for.
async fn wait_for(app: &TestApp, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let status = app.get("/api/author/status", &As::nobody()).await;
        assert_eq!(status.status, StatusCode::OK, "{}", status.text);
        if done(&status.body) {
            return status.body;
        }
        assert!(
            start.elapsed() < RELOAD_WAIT,
            "waited {RELOAD_WAIT:?} for {what}; the status says {}",
            status.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn served_ids(status: &Value) -> Vec<String> {
    status["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

fn hash_of(status: &Value, id: &str) -> Option<String> {
    status["scenarios"]
        .as_array()?
        .iter()
        .find(|s| s["id"] == id)
        .map(|s| s["hash"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn the_catalogue_follows_the_files_and_a_broken_edit_never_reaches_students() {
    let (app, folder) = watched_app(Config {
        author: true,
        ..Config::default()
    })
    .await;
    let status = wait_for(&app, "the first status", |_| true).await;
    assert_eq!(status["generation"], 1);
    assert_eq!(served_ids(&status), ["safe-retry", "offset-commit"]);
    let design = passing_design("safe-retry");

    // Add a scenario: students get it without a restart.
    save(
        folder.path(),
        "safe-retry-again.json",
        &copy_of_safe_retry("Once more"),
    );
    let status = wait_for(&app, "the added scenario", |s| {
        served_ids(s).contains(&"safe-retry-again".to_string())
    })
    .await;
    assert_eq!(status["generation"], 2);
    assert_eq!(status["problems"], json!([]));
    // Reading the files is no change: with nothing saved, nothing is read again.
    let reads = status["reads"].as_u64().unwrap();
    tokio::time::sleep(server::watch::SETTLE * 4).await;
    let quiet = app.get("/api/author/status", &As::nobody()).await;
    assert_eq!(quiet.body["reads"].as_u64(), Some(reads), "{}", quiet.text);
    let listed = app
        .get("/api/scenarios/safe-retry-again", &As::nobody())
        .await;
    assert_eq!(listed.status, StatusCode::OK);
    assert_eq!(listed.body["title"], "Once more");
    let first_hash = hash_of(&status, "safe-retry-again").unwrap();
    let before = app
        .post(
            "/api/scenarios/safe-retry-again/check",
            &As::nobody(),
            &design,
        )
        .await;
    assert_eq!(before.status, StatusCode::OK);
    assert_eq!(before.body["scenario_hash"], first_hash.as_str());

    // Change it: the same design sent again gets a verdict under the new hash, never the one
    // remembered for the old file.
    save(
        folder.path(),
        "safe-retry-again.json",
        &copy_of_safe_retry("Once more, changed"),
    );
    let status = wait_for(&app, "the changed scenario", |s| {
        hash_of(s, "safe-retry-again").is_some_and(|h| h != first_hash)
    })
    .await;
    let second_hash = hash_of(&status, "safe-retry-again").unwrap();
    let after = app
        .post(
            "/api/scenarios/safe-retry-again/check",
            &As::nobody(),
            &design,
        )
        .await;
    assert_eq!(after.status, StatusCode::OK);
    assert_eq!(after.body["scenario_hash"], second_hash.as_str());
    assert_eq!(
        app.get("/api/scenarios/safe-retry-again", &As::nobody())
            .await
            .body["title"],
        "Once more, changed"
    );

    // Break it: the problems are reported, and students keep the last good catalogue.
    save(
        folder.path(),
        "safe-retry-again.json",
        "{ \"id\": \"safe-retry-again\", ",
    );
    let status = wait_for(&app, "the broken file's problems", |s| {
        s["problems"].as_array().is_some_and(|p| !p.is_empty())
    })
    .await;
    let generation = status["generation"].as_u64().unwrap();
    assert_eq!(generation, 3, "a broken edit swaps nothing in");
    let problem = &status["problems"][0];
    assert!(
        problem["file"]
            .as_str()
            .unwrap()
            .ends_with("safe-retry-again.json"),
        "{problem}"
    );
    assert_eq!(hash_of(&status, "safe-retry-again").unwrap(), second_hash);
    let still = app
        .get("/api/scenarios/safe-retry-again", &As::nobody())
        .await;
    assert_eq!(still.status, StatusCode::OK);
    assert_eq!(still.body["title"], "Once more, changed");
    let checked = app
        .post(
            "/api/scenarios/safe-retry-again/check",
            &As::nobody(),
            &design,
        )
        .await;
    assert_eq!(checked.body["scenario_hash"], second_hash.as_str());

    // Fix it: served again, the problems gone.
    save(
        folder.path(),
        "safe-retry-again.json",
        &copy_of_safe_retry("Fixed"),
    );
    let status = wait_for(&app, "the fixed file", |s| {
        s["problems"] == json!([]) && s["generation"].as_u64() == Some(generation + 1)
    })
    .await;
    assert_ne!(hash_of(&status, "safe-retry-again").unwrap(), second_hash);
    assert_eq!(
        app.get("/api/scenarios/safe-retry-again", &As::nobody())
            .await
            .body["title"],
        "Fixed"
    );

    // Remove it: gone from the catalogue.
    std::fs::remove_file(folder.path().join("safe-retry-again.json")).unwrap();
    wait_for(&app, "the removed scenario", |s| {
        !served_ids(s).contains(&"safe-retry-again".to_string())
    })
    .await;
    let gone = app
        .get("/api/scenarios/safe-retry-again", &As::nobody())
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_check_in_flight_finishes_on_the_catalogue_it_started_with() {
    // Every check waits for a turn off the request's thread, so the test can hold it there
    // while the file changes.
    let (app, folder) = watched_app(Config {
        author: true,
        inline_check_limits: shared::Limits {
            max_schedules: 0,
            max_steps: 0,
        },
        verdict_cache_bytes: 0,
        ..Config::default()
    })
    .await;
    let old_hash = hash_of(
        &wait_for(&app, "the first status", |_| true).await,
        "safe-retry",
    )
    .unwrap();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let mut turns = Vec::new();
    for _ in 0..cores {
        turns.push(app.state.check_permit().await);
    }
    let router = app.router.clone();
    let body = serde_json::to_vec(&passing_design("safe-retry")).unwrap();
    let in_flight = tokio::spawn(async move {
        use tower::ServiceExt;
        let request = axum::http::Request::post("/api/scenarios/safe-retry/check")
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body))
            .unwrap();
        let response = router.oneshot(request).await.unwrap();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        serde_json::from_slice::<Value>(&bytes).unwrap()
    });
    // The check is waiting for its turn; change its scenario meanwhile.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!in_flight.is_finished(), "the check waits for a turn");
    let text = std::fs::read_to_string(folder.path().join("safe-retry.json")).unwrap();
    let mut json: Value = serde_json::from_str(&text).unwrap();
    json["title"] = json!("Safe retry, edited while a check ran");
    save(
        folder.path(),
        "safe-retry.json",
        &serde_json::to_string_pretty(&json).unwrap(),
    );
    let status = wait_for(&app, "the edited scenario", |s| {
        hash_of(s, "safe-retry").is_some_and(|h| h != old_hash)
    })
    .await;
    let new_hash = hash_of(&status, "safe-retry").unwrap();
    drop(turns);
    let verdict = tokio::time::timeout(RELOAD_WAIT, in_flight)
        .await
        .expect("the check finishes")
        .unwrap();
    assert_eq!(verdict["scenario_hash"], old_hash.as_str(), "{verdict}");
    assert_eq!(verdict["passed"], true);
    // A check that starts now is on the new file.
    let now = app
        .post(
            "/api/scenarios/safe-retry/check",
            &As::nobody(),
            &passing_design("safe-retry"),
        )
        .await;
    assert_eq!(now.body["scenario_hash"], new_hash.as_str());
}

#[tokio::test]
async fn the_author_api_shows_every_design_with_its_verdict_and_only_when_asked_for() {
    let (app, _folder) = watched_app(Config {
        author: true,
        ..Config::default()
    })
    .await;
    let answer = app
        .get("/api/author/scenarios/offset-commit", &As::nobody())
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert_eq!(
        answer.headers.get("cache-control").unwrap(),
        "no-store",
        "an author's files change under the page"
    );
    let scenario = crate::common::scenario("offset-commit");
    let designs = answer.body["designs"].as_array().unwrap();
    assert_eq!(
        designs.len(),
        scenario.scenario().reference_designs.len() + scenario.scenario().wrong_designs.len()
    );
    for d in designs {
        let verdict = &d["verdict"];
        let missed: Vec<&str> = verdict["requirements"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["passed"] == false)
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        match d["kind"].as_str().unwrap() {
            "reference" => assert!(missed.is_empty(), "{}: {missed:?}", d["name"]),
            "wrong" => {
                for m in d["misses"].as_array().unwrap() {
                    assert!(
                        missed.contains(&m.as_str().unwrap()),
                        "{} misses {m}",
                        d["name"]
                    );
                }
                // A missed requirement carries the counterexample the page replays.
                let missed_one = verdict["requirements"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["passed"] == false)
                    .unwrap();
                assert!(missed_one["counterexample"]["trace"].as_array().is_some());
            }
            other => panic!("unknown kind {other}"),
        }
    }
    // The answers are in the scenario the author page gets, and nowhere a student looks.
    assert!(answer.body["scenario"]["reference_designs"].is_array());
    let student = app.get("/api/scenarios/offset-commit", &As::nobody()).await;
    assert!(student.body.get("reference_designs").is_none());
    let unknown = app.get("/api/author/scenarios/nope", &As::nobody()).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);

    // Without --author the routes do not exist.
    let plain = crate::common::spawn_app().await;
    for uri in ["/api/author/status", "/api/author/scenarios/offset-commit"] {
        let answer = plain.get(uri, &As::nobody()).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{uri}");
    }
}

#[test]
fn the_author_page_is_served_on_a_loopback_address_only() {
    let db = TempDir::new("author-bind");
    let output = std::process::Command::new(crate::processes::BIN)
        .args(["serve", "--author", "--bind", "0.0.0.0:0", "--database-url"])
        .arg(db.sqlite_url())
        .arg("--scenarios")
        .arg(scenarios_dir())
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--author") && stderr.contains("loopback"),
        "{stderr}"
    );
}

#[tokio::test]
async fn under_watch_a_broken_folder_starts_the_server_with_its_problems() {
    let folder = TempDir::new("broken-start");
    std::fs::write(folder.path().join("half.json"), "{ \"id\": ").unwrap();
    let db = TempDir::new("broken-start-db");
    // Without --watch the server refuses, naming the file.
    let refused = std::process::Command::new(crate::processes::BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--database-url"])
        .arg(db.sqlite_url())
        .arg("--scenarios")
        .arg(folder.path())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("half.json"));
    // With it, the server starts, serves no scenario, and says what to fix.
    let mut command = std::process::Command::new(crate::processes::BIN);
    command
        .args(["serve", "--watch", "--author", "--bind", "127.0.0.1:0"])
        .arg("--database-url")
        .arg(db.sqlite_url())
        .arg("--scenarios")
        .arg(folder.path())
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::null());
    let server = crate::processes::ServerProcess::spawn(command);
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let status: Value = client
        .get(format!("{base}/api/author/status"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let scenarios: Value = client
        .get(format!("{base}/api/scenarios"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    drop(server);
    assert_eq!(status["generation"], 0, "{status}");
    assert!(
        status["problems"][0]["file"]
            .as_str()
            .unwrap()
            .ends_with("half.json"),
        "{status}"
    );
    assert_eq!(scenarios, json!([]));
}

#[tokio::test]
async fn a_broken_file_stays_at_its_last_good_version_marked_stale_while_another_reloads() {
    let (app, folder) = watched_app(Config {
        author: true,
        ..Config::default()
    })
    .await;
    let status = wait_for(&app, "the first status", |_| true).await;
    let safe_retry_hash = hash_of(&status, "safe-retry").unwrap();
    let offset_hash = hash_of(&status, "offset-commit").unwrap();

    // Break safe-retry: it stays served at its last good version, marked stale.
    save(
        folder.path(),
        "safe-retry.json",
        "{ \"id\": \"safe-retry\", ",
    );
    let status = wait_for(&app, "safe-retry marked stale", |s| {
        s["stale"].as_array().is_some_and(|l| !l.is_empty())
    })
    .await;
    assert_eq!(status["stale"][0]["id"], "safe-retry", "{status}");
    assert!(status["stale"][0]["file"]
        .as_str()
        .unwrap()
        .ends_with("safe-retry.json"));
    assert_eq!(hash_of(&status, "safe-retry").unwrap(), safe_retry_hash);

    // Edit offset-commit while safe-retry is broken: the edit is served.
    let text = std::fs::read_to_string(scenarios_dir().join("offset-commit.json")).unwrap();
    let mut json: Value = serde_json::from_str(&text).unwrap();
    json["title"] = json!("Offsets, edited");
    save(
        folder.path(),
        "offset-commit.json",
        &serde_json::to_string_pretty(&json).unwrap(),
    );
    let status = wait_for(&app, "the edit of offset-commit", |s| {
        hash_of(s, "offset-commit").is_some_and(|h| h != offset_hash)
    })
    .await;
    assert_eq!(
        app.get("/api/scenarios/offset-commit", &As::nobody())
            .await
            .body["title"],
        "Offsets, edited"
    );
    // safe-retry is still its last good version, still stale, its problem shown.
    assert_eq!(hash_of(&status, "safe-retry").unwrap(), safe_retry_hash);
    assert_eq!(status["stale"][0]["id"], "safe-retry", "{status}");
    assert!(status["problems"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["file"].as_str().unwrap().ends_with("safe-retry.json")));
    let checked = app
        .post(
            "/api/scenarios/safe-retry/check",
            &As::nobody(),
            &passing_design("safe-retry"),
        )
        .await;
    assert_eq!(checked.status, StatusCode::OK);
    assert_eq!(checked.body["scenario_hash"], safe_retry_hash.as_str());

    // A file never valid is left out, its problems shown.
    save(folder.path(), "never.json", "{ \"id\": \"never\" }");
    let status = wait_for(&app, "the never-valid file's problems", |s| {
        s["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["file"].as_str().unwrap().ends_with("never.json"))
    })
    .await;
    assert!(!served_ids(&status).contains(&"never".to_string()));
}

#[tokio::test]
async fn the_author_api_solves_a_scenario() {
    let (app, _folder) = watched_app(Config {
        author: true,
        ..Config::default()
    })
    .await;
    let answer = app
        .get("/api/author/scenarios/offset-commit/solve", &As::nobody())
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let designs = answer.body["designs"].as_array().unwrap();
    assert_eq!(designs.len(), 6, "{}", answer.text);
    assert!(answer.body["passing"]
        .as_array()
        .is_some_and(|p| !p.is_empty()));
    let summary = answer.body["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("offset-commit: 6 designs the palette allows"),
        "{summary}"
    );
    let missing = app
        .get("/api/author/scenarios/no-such/solve", &As::nobody())
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text);
}

#[tokio::test]
async fn a_file_that_does_not_validate_opens_with_its_problems_in_place_and_takes_a_design() {
    let (app, folder) = watched_app(Config {
        author: true,
        ..Config::default()
    })
    .await;
    let status = wait_for(&app, "the first status", |_| true).await;
    let served_hash = hash_of(&status, "offset-commit").unwrap();
    assert_eq!(status["broken"], json!([]), "{status}");

    // A reference design that misses: the file does not validate, but its parts fit.
    let text = std::fs::read_to_string(scenarios_dir().join("offset-commit.json")).unwrap();
    let mut json: Value = serde_json::from_str(&text).unwrap();
    json["title"] = json!("Offsets, being edited");
    json["reference_designs"][0]["design"] = json["starting_design"].clone();
    let broken = serde_json::to_string_pretty(&json).unwrap();
    save(folder.path(), "offset-commit.json", &broken);
    let status = wait_for(&app, "offset-commit listed as broken", |s| {
        s["broken"].as_array().is_some_and(|l| !l.is_empty())
    })
    .await;
    let line = &status["broken"][0];
    assert_eq!(line["name"], "offset-commit.json", "{status}");
    assert_eq!(line["id"], "offset-commit");
    assert_eq!(line["title"], "Offsets, being edited");
    assert_eq!(line["tryable"], true);

    let opened = app
        .get("/api/author/files/offset-commit.json", &As::nobody())
        .await;
    assert_eq!(opened.status, StatusCode::OK, "{}", opened.text);
    assert_eq!(opened.body["text"], broken.as_str());
    let problem = &opened.body["problems"][0];
    assert!(
        problem["path"]
            .as_str()
            .unwrap()
            .starts_with("$.reference_designs[0]"),
        "{problem}"
    );
    // The line is the one where the first reference design starts in the file.
    let start = broken.find("\"reference_designs\"").unwrap();
    let first = start + broken[start..].find('{').unwrap();
    let expected_line = broken[..first].matches('\n').count() + 1;
    assert!(
        problem["line"].as_u64().unwrap() >= expected_line as u64,
        "{problem} before line {expected_line}"
    );
    assert_eq!(opened.body["scenario"]["title"], "Offsets, being edited");
    let file_hash = opened.body["hash"].as_str().unwrap().to_string();
    assert_ne!(file_hash, served_hash);

    // A design tried on the file as it is now, not on the version students get.
    let reference =
        serde_json::from_str::<Value>(&text).unwrap()["reference_designs"][0]["design"].clone();
    let tried = app
        .post(
            "/api/author/files/offset-commit.json/check",
            &As::nobody(),
            &reference,
        )
        .await;
    assert_eq!(tried.status, StatusCode::OK, "{}", tried.text);
    assert_eq!(tried.body["scenario_hash"], file_hash.as_str());
    assert_eq!(tried.body["passed"], true, "{}", tried.text);
    let shipped: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        app.get("/api/scenarios/offset-commit", &As::nobody())
            .await
            .body["title"],
        shipped["title"],
        "students keep the last good version"
    );

    // A file that does not read as a scenario opens with its text and says why no design
    // can be tried; a check on it is refused.
    save(
        folder.path(),
        "offset-commit.json",
        "{ \"id\": \"offset-commit\",\n  \"order\": ",
    );
    wait_for(&app, "offset-commit untryable", |s| {
        s["broken"][0]["tryable"] == false
    })
    .await;
    let opened = app
        .get("/api/author/files/offset-commit.json", &As::nobody())
        .await;
    assert_eq!(opened.body["scenario"], Value::Null);
    assert!(opened.body["why_not_tryable"]
        .as_str()
        .unwrap()
        .contains("does not read as a scenario"));
    assert_eq!(opened.body["problems"][0]["line"], 2, "{}", opened.text);
    let refused = app
        .post(
            "/api/author/files/offset-commit.json/check",
            &As::nobody(),
            &reference,
        )
        .await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text);
    assert_eq!(
        refused.body["error"]["code"], "file_not_tryable",
        "{}",
        refused.text
    );
    // A file without problems is not one of them.
    let missing = app
        .get("/api/author/files/safe-retry.json", &As::nobody())
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text);
}
