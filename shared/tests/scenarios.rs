//! The shipped scenarios are the test corpus: every file under `scenarios/` must validate
//! (its reference designs pass, its wrong designs miss what they name), and every broken
//! fixture under `tests/fixtures/broken-scenarios/` must produce the diagnostic written in its
//! sibling `.expected` file.

use std::path::{Path, PathBuf};

use shared::authoring::{validate_catalogue, validate_scenario_text};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("shared sits in the workspace")
        .to_path_buf()
}

/// The `.json` files of a folder, sorted, as (file name relative to the workspace, text).
fn json_files(folder: &Path) -> Vec<(String, String)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", folder.display()))
        .map(|entry| entry.expect("a readable folder entry").path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p.to_string_lossy().ends_with(".schema.json")
        })
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
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
    let (scenarios, diagnostics) = validate_catalogue(&files);
    let shown: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    assert!(
        diagnostics.is_empty(),
        "the shipped scenarios have problems:\n{}",
        shown.join("\n")
    );
    let ids: Vec<&str> = scenarios.iter().map(|s| s.id.as_str()).collect();
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
            "exactly-once"
        ],
        "the course ships its eight scenarios, in course order"
    );
    for (i, s) in scenarios.iter().enumerate() {
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
            Ok(_) => String::from("(no diagnostics: the file validated)"),
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
    assert_eq!(scenarios.len(), 1, "the copy is refused: {shown:?}");
    assert!(shown.iter().any(|d| d.starts_with("scenarios/copy.json: $.id: the id \"offset-commit\" is already used by scenarios/offset-commit.json")), "{shown:?}");
    assert!(shown.iter().any(|d| d.starts_with("scenarios/copy.json: $.order: order 7 is already taken by scenarios/offset-commit.json")), "{shown:?}");
}
