//! The README's grading recipes, run as written: the shell blocks of "Grading a folder of
//! designs", "A spreadsheet" and "Gradescope", with bash, against a real server process, on a
//! folder of what students upload: the canvas's **Download design** files (one of another
//! version of the scenario, one of another scenario), a bare design, an invalid design and a
//! file that is not JSON. Every student must get a row (and a `results.json`), every correct
//! student full marks in every format, and the class is recorded once however many formats
//! the recipes ask for.
//!
//! Two things differ from a reader's machine, and only these: `cargo run … -- ARGS` is a
//! stand-in on `PATH` that runs the binary under test with ARGS (same database, via
//! `DATABASE_URL`), and the server's address replaces `http://127.0.0.1:3000`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::autograde::assert_gradescope_result;
use crate::common::{failing_design, passing_design, scenario, TempDir};
use crate::processes::{ServerProcess, BIN};

/// The ```sh blocks between two headings of the README.
fn shell_blocks(from: &str, to: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let start = readme
        .find(from)
        .unwrap_or_else(|| panic!("the README has no {from:?}"));
    let end = start
        + readme[start..]
            .find(to)
            .unwrap_or_else(|| panic!("the README has no {to:?} after {from:?}"));
    let mut script = String::new();
    let mut inside = false;
    for line in readme[start..end].lines() {
        if line == "```sh" {
            inside = true;
        } else if inside && line == "```" {
            inside = false;
            script.push('\n');
        } else if inside {
            script.push_str(line);
            script.push('\n');
        }
    }
    assert!(!script.is_empty(), "no shell block under {from:?}");
    script
}

fn tool_missing(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
}

/// The canvas's **Download design** file of `design`, from `scenario_id` at version `hash`.
fn canvas_export(scenario_id: &str, hash: &str, design: &Value) -> String {
    let file =
        serde_json::json!({"scenario": scenario_id, "scenario_hash": hash, "design": design});
    // As the canvas writes it: pretty, with a final line break.
    format!("{}\n", serde_json::to_string_pretty(&file).unwrap())
}

/// The students of the folder, in order, and whether each one's design is correct.
const CLASS: [(&str, bool); 8] = [
    ("ada", true),
    ("bob", false),
    ("cy", false),
    ("dee", false),
    ("eve", false),
    ("fay", true),
    ("gus", true),
    ("hal", false),
];

/// One file per student, as they uploaded it.
fn write_uploads(designs: &Path) {
    std::fs::create_dir_all(designs).unwrap();
    let write = |name: &str, text: String| std::fs::write(designs.join(name), text).unwrap();
    let safe_retry = scenario("safe-retry");
    let hash = shared::scenario_hash(safe_retry.scenario());
    write(
        "ada.json",
        canvas_export("safe-retry", &hash, &passing_design("safe-retry")),
    );
    write(
        "bob.json",
        canvas_export("safe-retry", &hash, &failing_design()),
    );
    write(
        "cy.json",
        canvas_export(
            "safe-retry",
            &hash,
            &safe_retry.scenario().wrong_designs[1].design,
        ),
    );
    let mut bogus = failing_design();
    bogus["nodes"][1]["kind"] = "bogus".into();
    write("dee.json", canvas_export("safe-retry", &hash, &bogus));
    write("eve.json", "{\"nodes\": [\n".to_string());
    // A bare design, as an older canvas saved it.
    write(
        "fay.json",
        safe_retry.scenario().reference_designs[1]
            .design
            .to_string(),
    );
    // Exported before the scenario's file last changed: graded against the current one.
    write(
        "gus.json",
        canvas_export("safe-retry", "sha256:0ld", &passing_design("safe-retry")),
    );
    let other = scenario("offset-commit");
    write(
        "hal.json",
        canvas_export(
            "offset-commit",
            &shared::scenario_hash(other.scenario()),
            &passing_design("offset-commit"),
        ),
    );
}

#[test]
fn the_grading_recipes_give_every_correct_student_full_marks() {
    for tool in ["bash", "jq", "curl"] {
        assert!(
            !tool_missing(tool),
            "the README's recipes need {tool}, and so does this test"
        );
    }
    let dir = TempDir::new("readme");
    let database_url = dir.sqlite_url();
    std::fs::create_dir_all(dir.path().join("db")).unwrap();
    let server = ServerProcess::start(&database_url);
    write_uploads(&dir.path().join("designs"));

    // `cargo run … -- ARGS` runs the binary under test with ARGS.
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cargo = bin.join("cargo");
    std::fs::write(
        &cargo,
        "#!/usr/bin/env bash\nwhile [ $# -gt 0 ] && [ \"$1\" != \"--\" ]; do shift; done\nshift\nexec \"$PIPELINE_BUILDER_BIN\" \"$@\"\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    let script = shell_blocks(
        "### Grading a folder of designs",
        "### One submission at a time",
    )
    .replace("http://127.0.0.1:3000", &server.base);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", &script])
        .current_dir(dir.path())
        .env("PATH", path)
        .env("PIPELINE_BUILDER_BIN", BIN)
        .env("DATABASE_URL", &database_url)
        .env("RUST_LOG", "warn")
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let said = format!(
        "script:\n{script}\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "the recipes failed:\n{said}");
    let students: Vec<&str> = CLASS.iter().map(|(s, _)| *s).collect();

    // The JSON recipe: one line per student, in order, the correct ones with full marks and
    // the others with their real diagnosis.
    let rows: Vec<Value> = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let named: Vec<&str> = rows
        .iter()
        .map(|r| r["student"].as_str().unwrap())
        .collect();
    assert_eq!(named, students, "{said}");
    for ((student, correct), row) in CLASS.iter().zip(&rows) {
        if *correct {
            assert_eq!(row["score"], 3, "{student}: {row}\n{said}");
            assert_eq!(row["max_score"], 3, "{student}: {row}");
            assert_eq!(row["passed"], true, "{student}: {row}");
        } else {
            assert_ne!(row["passed"], true, "{student}: {row}");
        }
    }
    assert_eq!(rows[1]["score"], 0);
    assert_eq!(rows[2]["score"], 1);
    assert!(
        rows[3]["error"].as_str().unwrap().contains("bogus"),
        "{said}"
    );
    assert!(rows[4]["error"].is_string(), "{said}");
    assert!(
        rows[6]["note"].as_str().unwrap().contains("sha256:0ld"),
        "{said}"
    );
    assert!(
        rows[7]["error"].as_str().unwrap().contains("offset-commit"),
        "the export of another scenario says so: {said}"
    );

    // The CSV recipe: a header and a row per student, full marks for the correct ones.
    let grades = std::fs::read_to_string(dir.path().join("grades.csv")).unwrap();
    let lines: Vec<&str> = grades.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert!(lines[0].starts_with("student,display_name,scenario,score,max_score,passed,missed"));
    for ((student, correct), line) in CLASS.iter().zip(&lines[1..]) {
        assert!(line.starts_with(&format!("{student},")), "{grades}");
        if *correct {
            assert!(line.contains(",safe-retry,3,3,true,"), "{student}: {line}");
        }
    }
    assert_eq!(lines.len(), 1 + CLASS.len(), "{grades}");
    // Graded three times (JSON, CSV, Gradescope), each graded student is recorded once.
    let attempts = std::fs::read_to_string(dir.path().join("attempts.csv")).unwrap();
    assert!(
        attempts.starts_with("student,display_name,scenario,"),
        "{attempts}"
    );
    let mut recorded: Vec<&str> = attempts
        .split("\r\n")
        .skip(1)
        .filter(|l| !l.is_empty())
        .map(|l| l.split(',').next().unwrap())
        .collect();
    recorded.sort();
    assert_eq!(recorded, ["ada", "bob", "cy", "fay", "gus"], "{attempts}");

    // The Gradescope recipe: a valid results.json per student, full marks for the correct.
    for (student, correct) in CLASS {
        let file = dir.path().join(format!("results/{student}.json"));
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("no {}: {e}\n{said}", file.display()));
        let result: Value = serde_json::from_str(&text).unwrap();
        assert_gradescope_result(student, &result);
        assert_eq!(result["extra_data"]["student"], student);
        if correct {
            assert_eq!(result["score"], 3, "{student}: {result:#}");
        } else {
            assert_ne!(result["score"], 3, "{student}: {result:#}");
        }
    }
}
