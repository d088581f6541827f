//! `pipeline-builder autograde` as Gradescope runs it: a folder laid out as Gradescope lays it
//! out (`submission/`, `results/`), the binary run on it, and every `results.json` it writes
//! validated against the committed schema of Gradescope's format
//! (`autograder/results.schema.json`). A result is always written and the exit is 0, whatever
//! the student uploaded.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::common::{failing_design, passing_design, scenario, scenarios_dir, TempDir};
use crate::processes::BIN;

/// Gradescope's `results.json` format, as the repository ships it.
pub fn results_schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../autograder/results.schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).expect("the schema is JSON")
}

/// Fails the test unless `result` is a valid Gradescope `results.json`.
pub fn assert_gradescope_result(what: &str, result: &Value) {
    let schema = results_schema();
    let validator = jsonschema::draft202012::new(&schema).expect("the schema compiles");
    let violations: Vec<String> = validator
        .iter_errors(result)
        .map(|e| format!("at {}: {e}", e.instance_path()))
        .collect();
    assert!(
        violations.is_empty(),
        "{what}: not a valid results.json:\n{}\n{result:#}",
        violations.join("\n")
    );
}

/// `/autograder` as Gradescope lays it out, with the student's files in `submission/`.
struct Autograder {
    dir: TempDir,
}

impl Autograder {
    fn new(files: &[(&str, String)]) -> Autograder {
        let dir = TempDir::new("autograde");
        std::fs::create_dir_all(dir.path().join("submission")).unwrap();
        std::fs::create_dir_all(dir.path().join("results")).unwrap();
        for (name, text) in files {
            let path = dir.path().join("submission").join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Autograder { dir }
    }

    fn results_file(&self) -> PathBuf {
        self.dir.path().join("results/results.json")
    }

    /// Runs the autograder; returns its output and the result, validated.
    fn run(&self, scenario: Option<&str>) -> (Output, Value) {
        let mut command = Command::new(BIN);
        command
            .arg("autograde")
            .arg("--submission")
            .arg(self.dir.path().join("submission"))
            .arg("--results")
            .arg(self.results_file())
            .arg("--scenarios")
            .arg(scenarios_dir())
            .env("RUST_LOG", "warn");
        if let Some(id) = scenario {
            command.args(["--scenario", id]);
        }
        let output = command.output().expect("the binary runs");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            output.status.success(),
            "autograde exits 0 when it wrote a result: {said}"
        );
        let text = std::fs::read_to_string(self.results_file())
            .unwrap_or_else(|e| panic!("no results.json ({e}): {said}"));
        let result: Value = serde_json::from_str(&text).expect("results.json is JSON");
        assert_gradescope_result(&said, &result);
        (output, result)
    }
}

fn export(scenario_id: &str, design: &Value) -> String {
    let hash = shared::scenario_hash(scenario(scenario_id).scenario());
    json!({"scenario": scenario_id, "scenario_hash": hash, "design": design}).to_string()
}

/// A graded-as-invalid result: score 0, every requirement failed and not checked.
fn assert_not_graded(result: &Value, expected_in_output: &[&str]) {
    assert_eq!(result["score"], 0, "{result:#}");
    let output = result["output"].as_str().unwrap();
    assert!(output.starts_with("**Not graded"), "{output}");
    for expected in expected_in_output {
        assert!(
            output.contains(expected),
            "{expected:?} missing in {output}"
        );
    }
    let tests = result["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 3, "every requirement of safe-retry is listed");
    for t in tests {
        assert_eq!(t["status"], "failed");
        assert_eq!(t["score"], 0);
        assert_eq!(t["max_score"], 1);
        assert!(
            t["output"]
                .as_str()
                .unwrap()
                .starts_with("Not checked: the design is invalid"),
            "{t}"
        );
    }
}

#[test]
fn a_passing_design_gets_every_point() {
    let grader = Autograder::new(&[(
        "safe-retry.json",
        export("safe-retry", &passing_design("safe-retry")),
    )]);
    let (_, result) = grader.run(Some("safe-retry"));
    assert_eq!(result["score"], 3);
    assert_eq!(result["output_format"], "md");
    assert_eq!(result["visibility"], "visible");
    assert_eq!(result["stdout_visibility"], "hidden");
    assert!(result["execution_time"].is_u64());
    let extra = &result["extra_data"];
    assert_eq!(extra["scenario"], "safe-retry");
    assert_eq!(
        extra["scenario_hash"],
        shared::scenario_hash(scenario("safe-retry").scenario())
    );
    assert!(extra["schedules_explored"].as_u64().unwrap() > 1);
    let tests = result["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 3);
    for (i, t) in tests.iter().enumerate() {
        assert_eq!(t["status"], "passed");
        assert_eq!(t["score"], 1);
        assert_eq!(t["max_score"], 1);
        assert_eq!(t["number"], (i + 1).to_string());
        assert!(t["output"].as_str().unwrap().starts_with("**Passed.**"));
    }
}

#[test]
fn a_failing_bare_design_gets_its_counterexamples() {
    let grader = Autograder::new(&[("design.json", failing_design().to_string())]);
    let (output, result) = grader.run(Some("safe-retry"));
    assert_eq!(result["score"], 0);
    let tests = result["tests"].as_array().unwrap();
    assert_eq!(tests[0]["status"], "failed");
    assert_eq!(tests[0]["output_format"], "md");
    let first = tests[0]["output"].as_str().unwrap();
    assert!(
        first.contains("**Expected** `25.00`, **actual** `50.00`"),
        "{first}"
    );
    assert!(first.contains("**Hint:**"), "{first}");
    assert!(result["output"]
        .as_str()
        .unwrap()
        .contains("missed: `revenue-correct`"));
    // The course staff's log says the same.
    assert!(String::from_utf8_lossy(&output.stdout).contains("missed: score 0/3"));
}

#[test]
fn a_missed_whole_table_requirement_shows_its_table_diff() {
    // logical-date's design that stamps rows with NOW(): the rerun changes only loaded_at.
    let logical_date = scenario("logical-date");
    let wrong = logical_date
        .scenario()
        .wrong_designs
        .iter()
        .find(|d| d.name.contains("NOW()"))
        .expect("logical-date has a design that stamps NOW()");
    let grader = Autograder::new(&[("design.json", export("logical-date", &wrong.design))]);
    let (_, result) = grader.run(Some("logical-date"));
    let tests = result["tests"].as_array().unwrap();
    let revenue = tests
        .iter()
        .find(|t| {
            t["name"]
                .as_str()
                .unwrap()
                .starts_with("rerun-keeps-revenue")
        })
        .expect("a test per requirement");
    assert_eq!(revenue["status"], "failed");
    let md = revenue["output"].as_str().unwrap();
    assert!(
        md.contains(
            "In daily_revenue: 1 row differs in the marked cells. Rows are paired by order_date."
        ),
        "{md}"
    );
    // A table per side, the row's mark in words, the differing cell bold between marks.
    assert!(md.contains("**Expected `daily_revenue`:**"), "{md}");
    assert!(md.contains("**Actual `daily_revenue`:**"), "{md}");
    assert!(
        md.contains("| row | order\\_date | paid\\_revenue | loaded\\_at |\n|---|---|---|---|\n"),
        "{md}"
    );
    assert!(
        md.contains("| = same | 2026-01-03 | 40.00 | 2026-01-03T00:00:00Z |"),
        "{md}"
    );
    assert!(
        md.contains("| **≠ differs** | 2026-01-10 | 25.00 | **≠ 2026-01-11T23:55:00Z ≠** |"),
        "{md}"
    );
    assert!(
        md.contains("| **≠ differs** | 2026-01-10 | 25.00 | **≠ 2026-01-15T09:00:00Z ≠** |"),
        "{md}"
    );
    // A requirement on one value has no table diff.
    let value = tests
        .iter()
        .find(|t| t["name"].as_str().unwrap().starts_with("revenue-correct"))
        .unwrap();
    assert!(!value["output"].as_str().unwrap().contains("| row |"));
}

#[test]
fn duplicates_are_extra_rows_in_the_diff() {
    // The chapter's append-only job writes the day again on the rerun.
    let logical_date = scenario("logical-date");
    let wrong = logical_date
        .scenario()
        .wrong_designs
        .iter()
        .find(|d| d.name.contains("append-only"))
        .expect("logical-date has the append-only job");
    let grader = Autograder::new(&[("design.json", export("logical-date", &wrong.design))]);
    let (_, result) = grader.run(Some("logical-date"));
    let orders = result["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["name"]
                .as_str()
                .unwrap()
                .starts_with("rerun-keeps-orders")
        })
        .unwrap();
    let md = orders["output"].as_str().unwrap();
    assert!(md.contains("3 extra rows"), "{md}");
    assert_eq!(md.matches("| **+ extra** | 10").count(), 3, "{md}");
    assert!(!md.contains("− missing"), "{md}");
}

#[test]
fn an_export_names_its_scenario_when_the_autograder_names_none() {
    let grader = Autograder::new(&[("d.json", export("safe-retry", &failing_design()))]);
    let (_, result) = grader.run(None);
    assert_eq!(result["extra_data"]["scenario"], "safe-retry");
    assert_eq!(result["tests"].as_array().unwrap().len(), 3);
}

#[test]
fn an_invalid_design_is_graded_zero_with_the_path_into_the_file() {
    let mut design = failing_design();
    design["nodes"][1]["kind"] = json!("bogus");
    let grader = Autograder::new(&[("design.json", export("safe-retry", &design))]);
    let (_, result) = grader.run(Some("safe-retry"));
    assert_not_graded(
        &result,
        &["the design is invalid", "`$.design.nodes[1].kind`", "bogus"],
    );
    // A bare design's paths start at the file, too.
    let grader = Autograder::new(&[("design.json", design.to_string())]);
    let (_, result) = grader.run(Some("safe-retry"));
    assert_not_graded(&result, &["`$.nodes[1].kind`"]);
}

#[test]
fn malformed_json_is_graded_zero() {
    let grader = Autograder::new(&[("design.json", "{\"nodes\": [".to_string())]);
    let (_, result) = grader.run(Some("safe-retry"));
    assert_not_graded(&result, &["not valid JSON", "line 1"]);
}

#[test]
fn a_missing_file_is_graded_zero() {
    // Hidden files (a Mac's .DS_Store) are not the student's upload.
    let grader = Autograder::new(&[(".DS_Store", "x".to_string())]);
    let (_, result) = grader.run(Some("safe-retry"));
    assert_not_graded(&result, &["no design file"]);
    assert!(result["extra_data"]["error"].is_string());
}

#[test]
fn two_files_are_graded_zero_and_named() {
    let grader = Autograder::new(&[
        ("a.json", failing_design().to_string()),
        ("more/b.json", passing_design("safe-retry").to_string()),
    ]);
    let (_, result) = grader.run(Some("safe-retry"));
    assert_not_graded(&result, &["more than one file", "a.json", "more/b.json"]);
}

#[test]
fn an_export_for_another_scenario_is_graded_zero() {
    let grader = Autograder::new(&[(
        "design.json",
        export("offset-commit", &passing_design("offset-commit")),
    )]);
    let (_, result) = grader.run(Some("safe-retry"));
    assert_not_graded(
        &result,
        &["another scenario", "\"offset-commit\"", "`$.scenario`"],
    );
}

#[test]
fn an_export_of_another_version_of_the_scenario_is_graded_with_a_note() {
    let exported = json!({"scenario": "safe-retry", "scenario_hash": "sha256:0000", "design": passing_design("safe-retry")});
    let grader = Autograder::new(&[("design.json", exported.to_string())]);
    let (_, result) = grader.run(Some("safe-retry"));
    assert_eq!(result["score"], 3);
    let output = result["output"].as_str().unwrap();
    assert!(
        output.starts_with("**Note:**") && output.contains("sha256:0000"),
        "{output}"
    );
    assert_eq!(
        result["extra_data"]["exported_scenario_hash"],
        "sha256:0000"
    );
}

#[test]
fn a_misconfigured_autograder_still_writes_a_result_and_says_why() {
    let grader = Autograder::new(&[("design.json", failing_design().to_string())]);
    let (output, result) = grader.run(Some("no-such-scenario"));
    assert_eq!(result["score"], 0);
    assert!(result["output"]
        .as_str()
        .unwrap()
        .contains("not set up right"));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not set up right"));
    // A bare design and no --scenario: nothing says which scenario to grade.
    let (_, result) = grader.run(None);
    assert!(result["output"].as_str().unwrap().contains("--scenario"));
}

#[test]
fn requirement_points_become_the_tests_max_scores() {
    // A scenario folder with safe-retry's first requirement worth 5 points.
    let dir = TempDir::new("autograde-points");
    let mut s: Value = serde_json::from_str(
        &std::fs::read_to_string(scenarios_dir().join("safe-retry.json")).unwrap(),
    )
    .unwrap();
    s["requirements"][0]["points"] = json!(5);
    std::fs::write(dir.path().join("safe-retry.json"), s.to_string()).unwrap();
    let grader = Autograder::new(&[("design.json", failing_design().to_string())]);
    let output = Command::new(BIN)
        .arg("autograde")
        .arg("--submission")
        .arg(grader.dir.path().join("submission"))
        .arg("--results")
        .arg(grader.results_file())
        .arg("--scenarios")
        .arg(dir.path())
        .args(["--scenario", "safe-retry"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(grader.results_file()).unwrap()).unwrap();
    assert_gradescope_result("points", &result);
    assert_eq!(result["tests"][0]["max_score"], 5);
    assert_eq!(result["tests"][1]["max_score"], 1);
    assert_eq!(result["extra_data"]["max_score"], 7);
}

/// The repository's `autograder/` scripts, laid out under a root of their own as Gradescope
/// lays out its zip (`source/` with the binary under test and the scenarios, `submission/`
/// with `files`, `results/`), grading `scenario`.
struct Zip {
    root: TempDir,
}

impl Zip {
    fn new(scenario: &str, files: &[(&str, String)]) -> Zip {
        let root = TempDir::new("zip");
        let source = root.path().join("source");
        std::fs::create_dir_all(source.join("scenarios")).unwrap();
        std::fs::create_dir_all(root.path().join("submission")).unwrap();
        std::fs::create_dir_all(root.path().join("results")).unwrap();
        let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../autograder");
        std::fs::copy(scripts.join("setup.sh"), source.join("setup.sh")).unwrap();
        let run = std::fs::read_to_string(scripts.join("run_autograder")).unwrap();
        let run = run.replace(
            "SCENARIO=\"safe-retry\"",
            &format!("SCENARIO=\"{scenario}\""),
        );
        std::fs::write(source.join("run_autograder"), run).unwrap();
        for entry in std::fs::read_dir(scenarios_dir()).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                std::fs::copy(
                    &path,
                    source.join("scenarios").join(path.file_name().unwrap()),
                )
                .unwrap();
            }
        }
        std::os::unix::fs::symlink(BIN, source.join("pipeline-builder")).unwrap();
        for (name, text) in files {
            std::fs::write(root.path().join("submission").join(name), text).unwrap();
        }
        Zip { root }
    }

    /// Runs one of the scripts as Gradescope does, with bash.
    fn run(&self, script: &str) -> Output {
        Command::new("bash")
            .arg(self.root.path().join("source").join(script))
            .env("AUTOGRADER_ROOT", self.root.path())
            .env("RUST_LOG", "warn")
            .output()
            .expect("bash runs")
    }
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn the_shipped_scripts_set_up_and_grade_a_submission() {
    let zip = Zip::new(
        "safe-retry",
        &[(
            "safe-retry-design.json",
            export("safe-retry", &passing_design("safe-retry")),
        )],
    );
    let setup = zip.run("setup.sh");
    assert!(setup.status.success(), "{}", said(&setup));
    assert!(said(&setup).contains("scenarios valid"), "{}", said(&setup));
    let run = zip.run("run_autograder");
    assert!(run.status.success(), "{}", said(&run));
    let text = std::fs::read_to_string(zip.root.path().join("results/results.json")).unwrap();
    let result: Value = serde_json::from_str(&text).unwrap();
    assert_gradescope_result("run_autograder", &result);
    assert_eq!(result["score"], 3, "{result:#}");

    let setup = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../autograder/setup.sh"),
    )
    .unwrap();
    for fetch in [
        "curl ", "wget ", "apt-get ", "apt ", "pip ", "pip3 ", "cargo ", "rustup ",
    ] {
        assert!(
            !setup.contains(fetch),
            "setup.sh installs nothing from the internet ({fetch})"
        );
    }
}

#[test]
fn setup_refuses_a_scenario_that_is_not_in_the_zip() {
    let zip = Zip::new("safe_retry", &[]);
    let setup = zip.run("setup.sh");
    assert!(
        !setup.status.success(),
        "a typo must fail the image's build: {}",
        said(&setup)
    );
    let stderr = String::from_utf8_lossy(&setup.stderr);
    assert!(
        stderr.contains("no scenario has the id \"safe_retry\"") && stderr.contains("safe-retry"),
        "{stderr}"
    );
    // Left empty, the export decides, and there is nothing to check.
    let zip = Zip::new("", &[]);
    let setup = zip.run("setup.sh");
    assert!(setup.status.success(), "{}", said(&setup));
}

#[test]
fn the_schema_refuses_what_gradescope_would_not_read() {
    let schema = results_schema();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    for bad in [
        json!({"tests": [{"name": "no score anywhere"}]}),
        json!({"score": 1, "tests": [{"score": 1, "status": "ok"}]}),
        json!({"score": 1, "visibility": "sometimes"}),
        json!({"score": 1, "output_format": "markdown"}),
        json!({"score": "1"}),
        json!({"score": 1, "max_score": 3}),
    ] {
        assert!(!validator.is_valid(&bad), "{bad} should be refused");
    }
    assert!(validator.is_valid(&json!({"tests": [{"score": 1, "max_score": 1}]})));
}
