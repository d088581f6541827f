//! The shipped scenarios are the test corpus: every file under `scenarios/` must validate
//! (its reference designs pass, its wrong designs miss what they name), and every broken
//! fixture under `tests/fixtures/broken-scenarios/` must produce the diagnostic written in its
//! sibling `.expected` file.

use std::path::{Path, PathBuf};

use shared::authoring::{check_catalogue, validate_catalogue, validate_scenario_text, warnings};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("shared sits in the workspace")
        .to_path_buf()
}

/// The `.json` files of a folder, sorted, as (file name relative to the workspace, text).
fn json_files(folder: &Path) -> Vec<(String, String)> {
    conformance::scenario_texts(folder)
        .unwrap_or_else(|e| panic!("cannot read {e}"))
        .into_iter()
        .map(|(p, text)| {
            let name = p
                .strip_prefix(workspace())
                .unwrap_or(&p)
                .to_string_lossy()
                .into_owned();
            (name, text)
        })
        .collect()
}

#[test]
fn every_shipped_scenario_validates() {
    let files = json_files(&workspace().join("scenarios"));
    let report = check_catalogue(&files);
    let (scenarios, diagnostics) = (report.scenarios, report.problems);
    let shown: Vec<String> = diagnostics
        .iter()
        .chain(&report.warnings)
        .map(ToString::to_string)
        .collect();
    assert!(
        shown.is_empty(),
        "the shipped scenarios have problems or warnings:\n{}",
        shown.join("\n")
    );
    let ids: Vec<&str> = scenarios.iter().map(|s| s.scenario().id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "safe-retry",
            "safe-rerun",
            "logical-date",
            "delivery-promise",
            "dedupe-by-key",
            "idempotency-key",
            "offset-commit",
            "exactly-once",
            "late-correction",
            "out-of-order",
            "whole-path"
        ],
        "the course ships its eleven scenarios, in course order"
    );
    for (i, s) in scenarios.iter().map(shared::Compiled::scenario).enumerate() {
        assert_eq!(s.order as usize, i + 1, "{} has order {}", s.id, s.order);
        assert_eq!(
            s.schema.as_deref(),
            Some("./scenario.schema.json"),
            "{} names the committed schema",
            s.id
        );
    }
}

#[test]
fn every_broken_fixture_gives_its_diagnostic() {
    let folder = workspace().join("tests/fixtures/broken-scenarios");
    let fixtures = json_files(&folder);
    assert!(
        fixtures.len() >= 8,
        "the broken-scenario fixtures are missing from {}",
        folder.display()
    );
    let mut failures = Vec::new();
    for (file, text) in &fixtures {
        let expected_path = workspace().join(file).with_extension("expected");
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|e| panic!("{file} needs a sibling {}: {e}", expected_path.display()));
        let shown = match validate_scenario_text(file, text) {
            Ok(s) => {
                let warned: Vec<String> = warnings(file, s.scenario())
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                if warned.is_empty() {
                    String::from("(no diagnostics: the file validated)")
                } else {
                    warned.join("\n")
                }
            }
            Err(diagnostics) => diagnostics
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
        };
        for line in expected.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if !shown.contains(line) {
                failures.push(format!(
                    "{file}: expected a diagnostic containing\n    {line}\n  got\n    {}",
                    shown.replace('\n', "\n    ")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn ids_and_orders_are_unique_across_the_catalogue() {
    let text = std::fs::read_to_string(workspace().join("scenarios/offset-commit.json"))
        .expect("offset-commit ships");
    let files = vec![
        ("scenarios/offset-commit.json".to_string(), text.clone()),
        ("scenarios/copy.json".to_string(), text),
    ];
    let (scenarios, diagnostics) = validate_catalogue(&files);
    let shown: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    assert!(scenarios.is_empty(), "both are refused: {shown:?}");
    // Whichever file is the new one, it is told which file it clashes with, and so is the
    // other: the files' order does not pick the culprit.
    for (file, other) in [
        ("scenarios/copy.json", "scenarios/offset-commit.json"),
        ("scenarios/offset-commit.json", "scenarios/copy.json"),
    ] {
        assert!(
            shown.iter().any(|d| d.starts_with(&format!(
                "{file}: $.id: the id \"offset-commit\" is also used by {other}"
            ))),
            "{shown:?}"
        );
        assert!(
            shown.iter().any(|d| d.starts_with(&format!(
                "{file}: $.order: order 7 is also taken by {other}"
            ))),
            "{shown:?}"
        );
    }
}

#[test]
fn a_new_file_that_sorts_first_is_told_about_the_shipped_one() {
    let text = std::fs::read_to_string(workspace().join("scenarios/offset-commit.json"))
        .expect("offset-commit ships");
    let new = text.replace("\"id\": \"offset-commit\"", "\"id\": \"a-new-one\"");
    let files = vec![
        ("scenarios/a-new-one.json".to_string(), new),
        ("scenarios/offset-commit.json".to_string(), text),
    ];
    let (_, diagnostics) = validate_catalogue(&files);
    let shown: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    assert!(shown.contains(&"scenarios/a-new-one.json: $.order: order 7 is also taken by scenarios/offset-commit.json; give each scenario its own place in the course".to_string()), "{shown:?}");
}
