//! `pipeline-builder load` against a real server process: the mix, one route, and what it
//! reports when the server refuses requests.

use std::process::Command;

use serde_json::Value;

use crate::common::TempDir;
use crate::processes::{ServerProcess, BIN};

fn load(args: &[&str]) -> (bool, String, Value) {
    let output = Command::new(BIN)
        .arg("load")
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("the load generator runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let summary = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "no JSON summary: {stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    (output.status.success(), stdout, summary)
}

#[test]
fn the_load_generator_mixes_requests_and_reports_latencies() {
    let dir = TempDir::new("load");
    // Off, as for a benchmark: a few clients as fast as they can go would meet the limit.
    let server = ServerProcess::start_with(
        &dir.sqlite_url(),
        &["--floor-route", "--rate-limit-per-second", "0"],
    );
    let (ok, table, summary) = load(&[
        "--url",
        &server.base,
        "--clients",
        "4",
        "--seconds",
        "1",
        "--mix",
        "check=2,submit=1,catalogue=1",
    ]);
    assert!(ok, "{table}");
    assert!(
        table.contains("requests/s") && table.contains("p99 ms"),
        "{table}"
    );
    assert_eq!(summary["errors"], 0, "{summary}");
    assert_eq!(summary["clients"], 4);
    assert!(summary["requests"].as_u64().unwrap() > 0);
    for kind in ["check", "submit", "catalogue"] {
        assert!(
            summary["by_kind"][kind]["requests"].as_u64().unwrap() > 0,
            "{kind}: {summary}"
        );
    }
    let latency = &summary["latency_ms"];
    assert!(
        latency["p50"].as_f64().unwrap() <= latency["p90"].as_f64().unwrap()
            && latency["p90"].as_f64().unwrap() <= latency["p99"].as_f64().unwrap()
    );

    // One route: the floor, with a body from a file.
    let body = dir.path().join("body.json");
    std::fs::write(&body, "{}").unwrap();
    let (ok, table, summary) = load(&[
        "--url",
        &server.base,
        "--clients",
        "2",
        "--seconds",
        "1",
        "--route",
        "POST",
        "/api/floor?bytes=128",
        "--body",
        body.to_str().unwrap(),
    ]);
    assert!(ok, "{table}");
    assert!(
        summary["by_kind"]["route"]["requests"].as_u64().unwrap() > 0,
        "{summary}"
    );
}

#[test]
fn the_load_generator_counts_refusals_by_status() {
    let dir = TempDir::new("load-refused");
    let server = ServerProcess::start_with(
        &dir.sqlite_url(),
        &["--rate-limit-per-second", "1", "--rate-limit-burst", "2"],
    );
    let (ok, table, summary) = load(&[
        "--url",
        &server.base,
        // Four requests at once from one address overrun a burst of two however slowly a
        // busy machine (the other tests run beside this one) answers them.
        "--clients",
        "4",
        // The run's clock starts before the clients open their sessions, which the same
        // limit slows: long enough that requests are still made after them.
        "--seconds",
        "6",
        "--route",
        "GET",
        "/api/scenarios",
    ]);
    assert!(!ok, "a run with errors exits non-zero: {table}");
    assert!(
        summary["errors_by_status"]["429"].as_u64().unwrap() > 0,
        "{summary}"
    );
    assert!(table.contains("errors by status: 429"), "{table}");
    let (ok, _, summary) = load(&[
        "--url",
        &server.base,
        "--clients",
        "1",
        // Long enough that a busy machine (the other tests run beside this one) still
        // answers some requests within the run.
        "--seconds",
        "3",
        "--route",
        "GET",
        "/api/nope",
    ]);
    assert!(!ok);
    assert!(
        summary["errors_by_status"]["404"].as_u64().unwrap() > 0
            || summary["errors_by_status"]["429"].as_u64().unwrap() > 0,
        "{summary}"
    );
}
