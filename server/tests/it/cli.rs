//! The command line: `scenarios validate`, `check`, `token` and a refused `serve`.

use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{failing_design, passing_design, scenarios_dir, TempDir};
use crate::processes::BIN;

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env("RUST_LOG", "warn").output().expect("the binary runs")
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn the_shipped_scenarios_validate() {
    let dir = scenarios_dir();
    let output = run(&["scenarios", "validate", dir.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.trim().ends_with("scenarios valid") || stdout.trim().ends_with("scenario valid"), "{stdout}");
}

#[test]
fn a_broken_folder_is_refused_with_file_path_and_message() {
    let dir = TempDir::new("broken");
    let shipped = std::fs::read_to_string(scenarios_dir().join("safe-retry.json")).unwrap();
    std::fs::write(dir.path().join("good.json"), &shipped).unwrap();
    std::fs::write(dir.path().join("broken.json"), "{ \"id\": ").unwrap();
    std::fs::write(dir.path().join("scenario.schema.json"), "not even json, and ignored").unwrap();
    let mut wrong: Value = serde_json::from_str(&shipped).unwrap();
    wrong["id"] = "safe-retry-copy".into();
    wrong["order"] = 99.into();
    wrong["reference_designs"][0]["design"] = failing_design();
    std::fs::write(dir.path().join("wrong-reference.json"), serde_json::to_string_pretty(&wrong).unwrap()).unwrap();

    let output = run(&["scenarios", "validate", dir.path().to_str().unwrap()]);
    assert!(!output.status.success());
    let all = text(&output);
    assert!(all.contains("broken.json: $:"), "{all}");
    assert!(all.contains("wrong-reference.json: $.reference_designs[0]"), "{all}");
    assert!(!all.contains("good.json"), "{all}");
    assert!(!all.contains("scenario.schema.json"), "{all}");

    // The server refuses to start on the same folder, printing the same problems.
    let served = run(&["serve", "--bind", "127.0.0.1:0", "--database-url", &dir.sqlite_url(), "--scenarios", dir.path().to_str().unwrap()]);
    assert!(!served.status.success());
    let all = text(&served);
    assert!(all.contains("broken.json: $:") && all.contains("refusing to start"), "{all}");

    // Naming one file validates just that file.
    let one = run(&["scenarios", "validate", dir.path().join("good.json").to_str().unwrap()]);
    assert!(one.status.success(), "{}", text(&one));
    assert_eq!(String::from_utf8_lossy(&one.stdout).trim(), "1 scenario valid");
}

fn design_file(dir: &TempDir, name: &str, design: &Value) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, serde_json::to_string(design).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn check_prints_the_verdict_with_exit_codes() {
    let dir = TempDir::new("check");
    let scenarios = scenarios_dir();
    let scenarios = scenarios.to_str().unwrap();
    let good = design_file(&dir, "good.json", &passing_design("safe-retry"));
    let bad = design_file(&dir, "bad.json", &failing_design());

    let json = run(&["check", "--scenario", "safe-retry", "--scenarios", scenarios, &good, "--json"]);
    assert_eq!(json.status.code(), Some(0), "{}", text(&json));
    let verdict: Value = serde_json::from_slice(&json.stdout).expect("--json prints the verdict as JSON");
    assert_eq!(verdict["passed"], true);
    assert_eq!(verdict["scenario"], "safe-retry");

    let missed = run(&["check", "--scenario", "safe-retry", "--scenarios", scenarios, &bad]);
    assert_eq!(missed.status.code(), Some(1));
    let words = String::from_utf8_lossy(&missed.stdout);
    assert!(words.contains("✗ revenue-correct"), "{words}");
    assert!(words.contains("expected: 25.00") && words.contains("actual:   50.00"), "{words}");
    assert!(words.contains("trace:") && words.contains(" — "), "{words}");
    assert!(words.contains("score 0/3"), "{words}");
    let passed = run(&["check", "--scenario", "safe-retry", "--scenarios", scenarios, &good]);
    assert!(String::from_utf8_lossy(&passed.stdout).contains("✓ revenue-correct"));

    let unknown = run(&["check", "--scenario", "no-such", "--scenarios", scenarios, &good]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown).contains("no-such"));
    let malformed = dir.path().join("malformed.json");
    std::fs::write(&malformed, "{").unwrap();
    let malformed = run(&["check", "--scenario", "safe-retry", "--scenarios", scenarios, malformed.to_str().unwrap()]);
    assert_eq!(malformed.status.code(), Some(2));
    let invalid = design_file(&dir, "invalid.json", &serde_json::json!({"nodes": [{"id": "x", "kind": "bogus"}]}));
    let invalid = run(&["check", "--scenario", "safe-retry", "--scenarios", scenarios, &invalid]);
    assert_eq!(invalid.status.code(), Some(2));
    assert!(text(&invalid).contains("$.nodes[0].kind"), "{}", text(&invalid));
}

#[test]
fn tokens_are_created_listed_and_revoked() {
    let dir = TempDir::new("tokens");
    let url = dir.sqlite_url();
    let created = run(&["token", "create", "--name", "ta", "--database-url", &url]);
    assert!(created.status.success(), "{}", text(&created));
    let token = String::from_utf8_lossy(&created.stdout).trim().to_string();
    assert!(token.starts_with("pbt_") && token.len() == 68, "{token}");

    let again = run(&["token", "create", "--name", "ta", "--database-url", &url]);
    assert!(!again.status.success(), "an active name cannot be made twice");

    let list = run(&["token", "list", "--database-url", &url]);
    let listed = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(listed.contains("ta\t") && listed.contains("active"), "{listed}");
    assert!(!listed.contains(&token), "the token itself is never shown again");

    let revoked = run(&["token", "revoke", "ta", "--database-url", &url]);
    assert!(revoked.status.success(), "{}", text(&revoked));
    let list = run(&["token", "list", "--database-url", &url]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("revoked"));
    let unknown = run(&["token", "revoke", "nobody", "--database-url", &url]);
    assert!(!unknown.status.success());

    // Only the hash is stored.
    let db = std::fs::read(dir.path().join("db/test.db")).unwrap();
    let wal = std::fs::read(dir.path().join("db/test.db-wal")).unwrap_or_default();
    let needle = token.as_bytes();
    for bytes in [&db, &wal] {
        assert!(!bytes.windows(needle.len()).any(|w| w == needle), "the token is in the database file");
    }
}
