//! The README's grading recipes, run as written: the shell blocks of "Grading a folder of
//! designs", "A spreadsheet" and "Gradescope", with bash, against a real server process, on a
//! folder of designs that includes an invalid design and a file that is not JSON. Every
//! student must get a row (and a `results.json`).
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

#[test]
fn the_grading_recipes_give_every_student_a_row() {
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

    let designs = dir.path().join("designs");
    std::fs::create_dir_all(&designs).unwrap();
    let write = |name: &str, text: String| std::fs::write(designs.join(name), text).unwrap();
    write("ada.json", passing_design("safe-retry").to_string());
    write("bob.json", failing_design().to_string());
    write(
        "cy.json",
        scenario("safe-retry").wrong_designs[1].design.to_string(),
    );
    let mut bogus = failing_design();
    bogus["nodes"][1]["kind"] = "bogus".into();
    write("dee.json", bogus.to_string());
    write("eve.json", "{\"nodes\": [\n".to_string());

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

    // The JSON recipe: one line per student, in order, the invalid ones with their error.
    let rows: Vec<Value> = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let students: Vec<&str> = rows
        .iter()
        .map(|r| r["student"].as_str().unwrap())
        .collect();
    assert_eq!(students, ["ada", "bob", "cy", "dee", "eve"], "{said}");
    assert_eq!(rows[0]["passed"], true);
    assert_eq!(rows[1]["score"], 0);
    assert_eq!(rows[2]["score"], 1);
    assert!(
        rows[3]["error"].as_str().unwrap().contains("bogus"),
        "{said}"
    );
    assert_eq!(rows[4]["score"], 0);
    assert!(rows[4]["error"].is_string(), "{said}");

    // The CSV recipe: a header and a row per student.
    let grades = std::fs::read_to_string(dir.path().join("grades.csv")).unwrap();
    let lines: Vec<&str> = grades.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert!(lines[0].starts_with("student,scenario,score,max_score,passed,missed"));
    let csv_students: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(csv_students, ["ada", "bob", "cy", "dee", "eve"], "{grades}");
    let attempts = std::fs::read_to_string(dir.path().join("attempts.csv")).unwrap();
    assert!(attempts.starts_with("student,scenario,"), "{attempts}");

    // The Gradescope recipe: a valid results.json per student.
    for student in ["ada", "bob", "cy", "dee", "eve"] {
        let file = dir.path().join(format!("results/{student}.json"));
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("no {}: {e}\n{said}", file.display()));
        let result: Value = serde_json::from_str(&text).unwrap();
        assert_gradescope_result(student, &result);
        assert_eq!(result["extra_data"]["student"], student);
    }
}
