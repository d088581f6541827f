//! Pins every verdict of every shipped design, byte for byte.
//!
//! For each scenario in `scenarios/`, its starting design, its reference designs and its wrong
//! designs are checked with the default limits, and the verdicts (or the errors) are compared
//! with the files under `tests/golden/verdicts/`. A refactor of the simulator must leave those
//! files untouched: a changed verdict would teach a student a different lesson. When a change
//! of verdict is intended, run the tests with `UPDATE_GOLDEN=1` to rewrite the files, and
//! review the difference like any other change.
//!
//! The SQL view of each valid design is pinned the same way under `tests/golden/sql/`, since
//! the simulator and the SQL rendering share the compiled model.

use crate::Lesson;
use serde::Serialize;
use shared::{check_json, Scenario, Verdict};

/// One checked design: its place in the scenario file and what the check answered.
#[derive(Serialize)]
struct Entry {
    design: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict: Option<Verdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn entry(scenario: &Scenario, label: String, design: &serde_json::Value) -> Entry {
    let (verdict, error) = match check_json(&scenario.compiled(), design) {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e.to_string())),
    };
    Entry {
        design: label,
        verdict,
        error,
    }
}

/// Every shipped scenario file, by name, sorted so that the test reads them in a fixed order.
pub(crate) fn shipped_scenarios() -> Vec<(String, Scenario)> {
    conformance::scenario_paths(&conformance::shipped_dir())
        .unwrap()
        .into_iter()
        .map(|p| {
            let n = p.file_stem().unwrap().to_string_lossy().into_owned();
            let s = crate::scenario_file(&n);
            (n, s)
        })
        .collect()
}

fn verdicts_of(scenario: &Scenario) -> String {
    let mut entries = Vec::new();
    if let Some(start) = &scenario.starting_design {
        entries.push(entry(scenario, "starting_design".to_string(), start));
    }
    for (i, d) in scenario.reference_designs.iter().enumerate() {
        let label = format!("reference_designs[{i}]: {}", d.name);
        entries.push(entry(scenario, label, &d.design));
    }
    for (i, d) in scenario.wrong_designs.iter().enumerate() {
        let label = format!("wrong_designs[{i}]: {}", d.name);
        entries.push(entry(scenario, label, &d.design));
    }
    let mut text = serde_json::to_string_pretty(&entries).expect("verdicts serialise");
    text.push('\n');
    text
}

/// The SQL view of every shipped design of a scenario, or the validation errors.
fn sql_of(scenario: &Scenario) -> String {
    let designs = scenario
        .starting_design
        .iter()
        .map(|d| ("starting_design".to_string(), d))
        .chain(
            (scenario.reference_designs.iter().enumerate())
                .map(|(i, d)| (format!("reference_designs[{i}]: {}", d.name), &d.design)),
        )
        .chain(
            (scenario.wrong_designs.iter().enumerate())
                .map(|(i, d)| (format!("wrong_designs[{i}]: {}", d.name), &d.design)),
        );
    let entries: Vec<serde_json::Value> = designs
        .map(
            |(label, design)| match shared::validate_json(&scenario.compiled(), design) {
                Ok(valid) => serde_json::json!({
                    "design": label,
                    "sql": shared::sql::design_sql(&scenario.compiled(), &valid),
                }),
                Err(e) => serde_json::json!({"design": label, "error": format!("{e:?}")}),
            },
        )
        .collect();
    let mut text = serde_json::to_string_pretty(&entries).expect("SQL serialises");
    text.push('\n');
    text
}

#[test]
fn every_shipped_design_keeps_its_verdict() {
    compare_with_golden("verdicts", verdicts_of);
}

#[test]
fn every_shipped_design_keeps_its_sql() {
    compare_with_golden("sql", sql_of);
}

/// Compares `render` of every shipped scenario with `tests/golden/<kind>/<scenario>.json`, or
/// rewrites those files when `UPDATE_GOLDEN=1`.
fn compare_with_golden(kind: &str, render: fn(&Scenario) -> String) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(kind);
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let mut differ = Vec::new();
    let scenarios = shipped_scenarios();
    assert!(!scenarios.is_empty(), "no scenario found");
    for (name, scenario) in &scenarios {
        let path = dir.join(format!("{name}.json"));
        let now = render(scenario);
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &now).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            continue;
        }
        let before = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run the tests with UPDATE_GOLDEN=1 to write it",
                path.display()
            )
        });
        if before != now {
            let line = before
                .lines()
                .zip(now.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| before.lines().count().min(now.lines().count()));
            differ.push(format!(
                "{}: first difference at line {}\n  golden: {}\n  now:    {}",
                path.display(),
                line + 1,
                before.lines().nth(line).unwrap_or("<end of file>"),
                now.lines().nth(line).unwrap_or("<end of file>"),
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{kind} changed; if the change is intended, rerun with UPDATE_GOLDEN=1 and review \
         the difference:\n{}",
        differ.join("\n")
    );
}
