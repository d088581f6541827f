//! The command line: `scenarios validate`, `check`, `token` and a refused `serve`.

use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{failing_design, passing_design, scenarios_dir, TempDir};
use crate::processes::BIN;

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("the binary runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn the_shipped_scenarios_validate() {
    let dir = scenarios_dir();
    let output = run(&["scenarios", "validate", dir.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.trim().ends_with("scenarios valid") || stdout.trim().ends_with("scenario valid"),
        "{stdout}"
    );
}

#[test]
fn a_broken_folder_is_refused_with_file_path_and_message() {
    let dir = TempDir::new("broken");
    let shipped = std::fs::read_to_string(scenarios_dir().join("safe-retry.json")).unwrap();
    std::fs::write(dir.path().join("good.json"), &shipped).unwrap();
    std::fs::write(dir.path().join("broken.json"), "{ \"id\": ").unwrap();
    std::fs::write(
        dir.path().join("scenario.schema.json"),
        "not even json, and ignored",
    )
    .unwrap();
    let mut wrong: Value = serde_json::from_str(&shipped).unwrap();
    wrong["id"] = "safe-retry-copy".into();
    wrong["order"] = 99.into();
    wrong["reference_designs"][0]["design"] = failing_design();
    std::fs::write(
        dir.path().join("wrong-reference.json"),
        serde_json::to_string_pretty(&wrong).unwrap(),
    )
    .unwrap();

    let output = run(&["scenarios", "validate", dir.path().to_str().unwrap()]);
    assert!(!output.status.success());
    let all = text(&output);
    assert!(all.contains("broken.json: $:"), "{all}");
    assert!(
        all.contains("wrong-reference.json: $.reference_designs[0]"),
        "{all}"
    );
    assert!(!all.contains("good.json"), "{all}");
    assert!(!all.contains("scenario.schema.json"), "{all}");

    // The server refuses to start on the same folder, printing the same problems.
    let served = run(&[
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--database-url",
        &dir.sqlite_url(),
        "--scenarios",
        dir.path().to_str().unwrap(),
    ]);
    assert!(!served.status.success());
    let all = text(&served);
    assert!(
        all.contains("broken.json: $:") && all.contains("refusing to start"),
        "{all}"
    );

    // Naming one file validates just that file.
    let one = run(&[
        "scenarios",
        "validate",
        dir.path().join("good.json").to_str().unwrap(),
    ]);
    assert!(one.status.success(), "{}", text(&one));
    assert_eq!(
        String::from_utf8_lossy(&one.stdout).trim(),
        "1 scenario valid"
    );
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

    let json = run(&[
        "check",
        "--scenario",
        "safe-retry",
        "--scenarios",
        scenarios,
        &good,
        "--json",
    ]);
    assert_eq!(json.status.code(), Some(0), "{}", text(&json));
    let verdict: Value =
        serde_json::from_slice(&json.stdout).expect("--json prints the verdict as JSON");
    assert_eq!(verdict["passed"], true);
    assert_eq!(verdict["scenario"], "safe-retry");

    let missed = run(&[
        "check",
        "--scenario",
        "safe-retry",
        "--scenarios",
        scenarios,
        &bad,
    ]);
    assert_eq!(missed.status.code(), Some(1));
    let words = String::from_utf8_lossy(&missed.stdout);
    assert!(words.contains("✗ revenue-correct"), "{words}");
    assert!(
        words.contains("expected: 25.00") && words.contains("actual:   50.00"),
        "{words}"
    );
    assert!(words.contains("trace:") && words.contains(" — "), "{words}");
    assert!(words.contains("score 0/3"), "{words}");
    let passed = run(&[
        "check",
        "--scenario",
        "safe-retry",
        "--scenarios",
        scenarios,
        &good,
    ]);
    assert!(String::from_utf8_lossy(&passed.stdout).contains("✓ revenue-correct"));

    let unknown = run(&[
        "check",
        "--scenario",
        "no-such",
        "--scenarios",
        scenarios,
        &good,
    ]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown).contains("no-such"));
    let malformed = dir.path().join("malformed.json");
    std::fs::write(&malformed, "{").unwrap();
    let malformed = run(&[
        "check",
        "--scenario",
        "safe-retry",
        "--scenarios",
        scenarios,
        malformed.to_str().unwrap(),
    ]);
    assert_eq!(malformed.status.code(), Some(2));
    let invalid = design_file(
        &dir,
        "invalid.json",
        &serde_json::json!({"nodes": [{"id": "x", "kind": "bogus"}]}),
    );
    let invalid = run(&[
        "check",
        "--scenario",
        "safe-retry",
        "--scenarios",
        scenarios,
        &invalid,
    ]);
    assert_eq!(invalid.status.code(), Some(2));
    assert!(
        text(&invalid).contains("$.nodes[0].kind"),
        "{}",
        text(&invalid)
    );
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
    assert!(
        !again.status.success(),
        "an active name cannot be made twice"
    );

    let list = run(&["token", "list", "--database-url", &url]);
    let listed = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(
        listed.contains("ta\t") && listed.contains("active"),
        "{listed}"
    );
    assert!(
        !listed.contains(&token),
        "the token itself is never shown again"
    );

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
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle),
            "the token is in the database file"
        );
    }
}

/// A folder with one hostile scenario file beside a good one.
fn hostile_folder(label: &str, name: &str, text: &[u8]) -> TempDir {
    let dir = TempDir::new(label);
    std::fs::copy(
        scenarios_dir().join("offset-commit.json"),
        dir.path().join("good.json"),
    )
    .unwrap();
    std::fs::write(dir.path().join(name), text).unwrap();
    dir
}

/// `scenarios validate` and `serve` both refuse the folder, quickly, naming the file, the
/// path and what is wrong.
fn refused_quickly(dir: &TempDir, expected: &[&str]) {
    let started = std::time::Instant::now();
    let output = run(&["scenarios", "validate", dir.path().to_str().unwrap()]);
    assert!(!output.status.success());
    let all = text(&output);
    for e in expected {
        assert!(all.contains(e), "{e} missing in: {all}");
    }
    assert!(!all.contains("good.json"), "{all}");
    let served = run(&[
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--database-url",
        &dir.sqlite_url(),
        "--scenarios",
        dir.path().to_str().unwrap(),
    ]);
    assert!(!served.status.success());
    let all = text(&served);
    assert!(all.contains("refusing to start"), "{all}");
    for e in expected {
        assert!(all.contains(e), "{e} missing in: {all}");
    }
    // Both runs, in a debug build, on a shared machine.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_huge_scenario_file_is_refused_before_it_is_read() {
    let mut huge = br#"{"id": "huge", "title": ""#.to_vec();
    huge.extend(std::iter::repeat_n(b'x', 2 * 1024 * 1024));
    huge.extend(br#""}"#);
    let dir = hostile_folder("huge", "huge.json", &huge);
    refused_quickly(
        &dir,
        &["huge.json: $: the file has 2097", "at most 1048576"],
    );
}

#[test]
fn a_deeply_nested_scenario_file_is_refused_before_it_is_parsed() {
    let deep = format!(
        "{{\"id\": \"deep\", \"task\": {}1{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let dir = hostile_folder("deep", "deep.json", deep.as_bytes());
    refused_quickly(
        &dir,
        &[
            "deep.json: $: the file nests arrays and objects 100001 deep",
            "at most 32",
        ],
    );
    // Brackets inside strings are text, not nesting.
    assert_eq!(
        server::catalogue::nesting_depth(r#"{"a": "[[[[{{{{\"]]"}"#),
        1
    );
}

#[test]
fn a_failure_bound_that_explodes_the_schedule_count_is_refused_without_hanging() {
    let mut scenario: Value = serde_json::from_str(
        &std::fs::read_to_string(scenarios_dir().join("dedupe-by-key.json")).unwrap(),
    )
    .unwrap();
    scenario["id"] = "exploding".into();
    scenario["order"] = 99.into();
    scenario["failures"]["bound"] = 12.into();
    let dir = hostile_folder(
        "exploding",
        "exploding.json",
        serde_json::to_string_pretty(&scenario).unwrap().as_bytes(),
    );
    refused_quickly(
        &dir,
        &[
            "exploding.json: $.reference_designs[0].design: checking this design stopped after ",
            "(the limit of 100000 schedules)",
            "lower $.failures.bound (now 12)",
        ],
    );
}

#[test]
fn a_scenario_whose_reference_design_is_cyclic_or_wrong_typed_is_refused() {
    let mut scenario: Value = serde_json::from_str(
        &std::fs::read_to_string(scenarios_dir().join("safe-retry.json")).unwrap(),
    )
    .unwrap();
    scenario["id"] = "cyclic".into();
    scenario["order"] = 98.into();
    let edges = scenario["reference_designs"][0]["design"]["edges"]
        .as_array_mut()
        .unwrap();
    let first = edges[0].clone();
    edges.push(serde_json::json!({"from": first["to"], "to": first["from"]}));
    scenario["failures"]["bound"] = "two".into();
    let dir = hostile_folder(
        "cyclic",
        "cyclic.json",
        serde_json::to_string_pretty(&scenario).unwrap().as_bytes(),
    );
    refused_quickly(&dir, &["cyclic.json: $.failures.bound"]);
    scenario["failures"]["bound"] = 2.into();
    let dir = hostile_folder(
        "cyclic2",
        "cyclic.json",
        serde_json::to_string_pretty(&scenario).unwrap().as_bytes(),
    );
    refused_quickly(&dir, &["cyclic.json: $.reference_designs[0]"]);
}

/// One command's output and how long it took.
fn timed(args: &[&str]) -> (Output, std::time::Duration) {
    let started = std::time::Instant::now();
    let output = run(args);
    (output, started.elapsed())
}

#[test]
fn a_stream_scenarios_bound_past_its_failure_points_is_refused_at_once_naming_the_bound() {
    for id in ["dedupe-by-key", "exactly-once", "offset-commit"] {
        let source = std::fs::read_to_string(scenarios_dir().join(format!("{id}.json"))).unwrap();
        let mut scenario: Value = serde_json::from_str(&source).unwrap();
        let points =
            shared::authoring::failure_points(&shared::Scenario::from_json(&source).unwrap());
        assert!(
            !points.exact,
            "{id}: a consumer can crash again where it crashed"
        );
        scenario["id"] = "big-bound".into();
        scenario["order"] = 99.into();
        for bound in [points.total + 1, 1000, 1001, 8574, 100_000, 4_294_967_295] {
            scenario["failures"]["bound"] = bound.into();
            let dir = hostile_folder(
                "bound",
                "big-bound.json",
                serde_json::to_string_pretty(&scenario).unwrap().as_bytes(),
            );
            let file = dir.path().join("big-bound.json");
            let expected = format!("{}: $.failures.bound: bound is {bound}", file.display());
            let (validated, took) = timed(&["scenarios", "validate", dir.path().to_str().unwrap()]);
            let all = text(&validated);
            assert_eq!(
                validated.status.code(),
                Some(1),
                "{id} bound {bound}: {all}"
            );
            assert!(all.contains(&expected), "{id} bound {bound}: {all}");
            assert!(!all.contains("good.json"), "{all}");
            assert!(
                took < std::time::Duration::from_secs(1),
                "{id} bound {bound}: {took:?}"
            );
            let (served, took) = timed(&[
                "serve",
                "--bind",
                "127.0.0.1:0",
                "--database-url",
                &dir.sqlite_url(),
                "--scenarios",
                dir.path().to_str().unwrap(),
            ]);
            let all = text(&served);
            assert_eq!(served.status.code(), Some(1), "{id} bound {bound}: {all}");
            assert!(
                all.contains(&expected) && all.contains("refusing to start"),
                "{id} bound {bound}: {all}"
            );
            assert!(
                took < std::time::Duration::from_secs(1),
                "{id} bound {bound}: {took:?}"
            );
        }
    }
}

#[test]
fn a_bound_no_schedule_can_reach_is_a_warning_not_a_refusal() {
    let mut scenario: Value = serde_json::from_str(
        &std::fs::read_to_string(scenarios_dir().join("safe-retry.json")).unwrap(),
    )
    .unwrap();
    scenario["id"] = "unreachable".into();
    scenario["order"] = 99.into();
    scenario["failures"]["bound"] = 1000.into();
    let dir = hostile_folder(
        "unreachable",
        "unreachable.json",
        serde_json::to_string_pretty(&scenario).unwrap().as_bytes(),
    );
    let (output, took) = timed(&["scenarios", "validate", dir.path().to_str().unwrap()]);
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    assert!(
        all.contains("unreachable.json: $.failures.bound: warning: bound is 1000, but no schedule of this scenario can have more than 2 failures"),
        "{all}"
    );
    assert!(all.contains("2 scenarios valid"), "{all}");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
}

#[test]
fn scenarios_new_writes_a_scenario_that_validates_and_never_overwrites() {
    let dir = TempDir::new("new");
    let folder = dir.path().to_str().unwrap();
    for shipped in ["offset-commit.json", "safe-retry.json"] {
        std::fs::copy(scenarios_dir().join(shipped), dir.path().join(shipped)).unwrap();
    }

    let made = run(&["scenarios", "new", "late-orders", "--scenarios", folder]);
    assert!(made.status.success(), "{}", text(&made));
    let path = dir.path().join("late-orders.json");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written["id"], "late-orders");
    assert_eq!(
        written["order"], 8,
        "after the last order in the folder (7)"
    );
    let checked = run(&["scenarios", "validate", folder]);
    assert!(checked.status.success(), "{}", text(&checked));
    assert!(
        text(&checked).contains("3 scenarios valid"),
        "{}",
        text(&checked)
    );

    // Never over a file: the author's work stays as it is.
    std::fs::write(&path, "my work").unwrap();
    let again = run(&["scenarios", "new", "late-orders", "--scenarios", folder]);
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again).contains("exists already"), "{}", text(&again));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "my work");
    std::fs::remove_file(&path).unwrap();

    // A copy keeps everything but its id, order and title, formatting included.
    let copied = run(&[
        "scenarios",
        "new",
        "commit-again",
        "--from",
        "offset-commit",
        "--scenarios",
        folder,
    ]);
    assert!(copied.status.success(), "{}", text(&copied));
    let copy = std::fs::read_to_string(dir.path().join("commit-again.json")).unwrap();
    let original = std::fs::read_to_string(dir.path().join("offset-commit.json")).unwrap();
    assert_eq!(copy.lines().count(), original.lines().count());
    let copy: Value = serde_json::from_str(&copy).unwrap();
    let mut original: Value = serde_json::from_str(&original).unwrap();
    assert_eq!(copy["id"], "commit-again");
    assert_eq!(copy["order"], 8);
    assert_eq!(copy["title"], "Bookmark first, or write first? (copy)");
    for field in ["id", "order", "title"] {
        original[field] = copy[field].clone();
    }
    assert_eq!(copy, original);
    let checked = run(&["scenarios", "validate", folder]);
    assert!(checked.status.success(), "{}", text(&checked));

    let unknown = run(&[
        "scenarios",
        "new",
        "x",
        "--from",
        "nope",
        "--scenarios",
        folder,
    ]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown).contains("known: "), "{}", text(&unknown));
    let bad_id = run(&["scenarios", "new", "Late Orders", "--scenarios", folder]);
    assert_eq!(bad_id.status.code(), Some(2));
    assert!(text(&bad_id).contains("lowercase letters, digits and dashes"));
}

#[test]
fn validate_verbose_prints_what_each_design_passes_and_misses() {
    let file = scenarios_dir().join("offset-commit.json");
    let output = run(&["scenarios", "validate", "--verbose", file.to_str().unwrap()]);
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    assert!(all.contains("offset-commit (order 7, bound 1):"), "{all}");
    assert!(
        all.contains("  reference \"write, then commit; insert and ignore repeats by order_id\"\n    passes: total-correct, nothing-lost, no-order-twice\n    misses: none\n    4 schedules explored in "),
        "{all}"
    );
    assert!(
        all.contains("  wrong \"commit, then write (at-most-once)\"\n    passes: no-order-twice\n    misses: total-correct, nothing-lost (must miss: total-correct, nothing-lost)\n    4 schedules explored in "),
        "{all}"
    );
    assert!(all.trim_end().ends_with("1 scenario valid"), "{all}");
}

#[test]
fn scenarios_solve_prints_a_summary_and_every_design_as_json() {
    let dir = scenarios_dir();
    let dir = dir.to_str().unwrap();
    let output = run(&["scenarios", "solve", "offset-commit", "--scenarios", dir]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", text(&output));
    assert!(stdout.starts_with("offset-commit: "), "{stdout}");
    assert!(
        stdout.contains("Passing designs, simplest first:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Designs that miss each requirement:"),
        "{stdout}"
    );
    assert!(stdout.contains("without consumer_crash: "), "{stdout}");
    // Not a terminal: no progress bar.
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains('['),
        "{}",
        text(&output)
    );

    let output = run(&[
        "scenarios",
        "solve",
        "offset-commit",
        "--scenarios",
        dir,
        "--json",
    ]);
    assert!(output.status.success(), "{}", text(&output));
    let json: Value = serde_json::from_slice(&output.stdout).expect("the solve is JSON");
    let designs = json["designs"].as_array().expect("every design");
    // offset-commit offers two commits and three writes; merge and insert_ignore each have
    // the one key order_id.
    assert_eq!(designs.len(), 6, "{json}");
    for d in designs {
        assert!(
            d["design"]["nodes"]
                .as_array()
                .is_some_and(|n| n.len() == 3),
            "{d}"
        );
        assert!(d["misses"].is_array(), "{d}");
    }
    let passing = json["passing"].as_array().unwrap();
    assert!(!passing.is_empty());
    let first = &designs[passing[0].as_u64().unwrap() as usize - 1];
    assert_eq!(first["passed"], true);
    let options = |node: &str| {
        first["design"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == node)
            .unwrap()["options"]
            .clone()
    };
    assert_eq!(
        options("consumer")["offset_commit"],
        "after_write",
        "{first}"
    );

    let output = run(&["scenarios", "solve", "no-such", "--scenarios", dir]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output).contains("there is no scenario \"no-such\""),
        "{}",
        text(&output)
    );

    let output = run(&[
        "scenarios",
        "solve",
        "offset-commit",
        "--scenarios",
        dir,
        "--max-designs",
        "4",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output).contains("the palette allows 6 designs, more than the 4 a solve checks"),
        "{}",
        text(&output)
    );
}

#[test]
fn validate_refuses_a_scenario_no_design_passes_and_warns_of_a_decorative_failure() {
    let fixtures = scenarios_dir().join("../tests/fixtures/scenarios");
    let none = fixtures.join("solve-no-passing-design.json");
    let output = run(&["scenarios", "validate", none.to_str().unwrap()]);
    assert!(!output.status.success(), "{}", text(&output));
    assert!(
        text(&output).contains("$.palette: no design the palette allows passes every requirement (4 designs checked); the closest: #"),
        "{}",
        text(&output)
    );
    let decorative = fixtures.join("solve-decorative-failure.json");
    let output = run(&[
        "scenarios",
        "validate",
        "--verbose",
        decorative.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("$.failures.consumer_crash: warning: without consumer_crash"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "  solve:\n    solve-decorative-failure: 2 designs the palette allows, 1 passes"
        ),
        "{stdout}"
    );
}
