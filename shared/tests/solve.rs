//! The solver over the shipped scenarios: every reference design is among the passing designs
//! it finds, and its verdict on every design is the check's, design by design.

use std::path::Path;

use shared::solve::solve;
use shared::{check, validate, validate_json, Compiled};

fn shipped() -> Vec<Compiled> {
    let all = conformance::shipped();
    assert!(all.len() >= 11, "the shipped scenarios are found");
    all
}

#[test]
fn every_reference_design_is_among_the_passing_designs() {
    for scenario in shipped() {
        let id = &scenario.scenario().id;
        let solution = solve(&scenario).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert!(!solution.passing().is_empty(), "{id}: nothing passes");
        for reference in &scenario.scenario().reference_designs {
            let json = serde_json::to_value(&reference.design).unwrap();
            let valid = validate_json(&scenario, &json).expect("a reference design is valid");
            let found = solution
                .find(&valid)
                .unwrap_or_else(|| panic!("{id}: \"{}\" is not among the designs", reference.name));
            assert!(found.passed, "{id}: \"{}\" does not pass", reference.name);
        }
        for wrong in &scenario.scenario().wrong_designs {
            let json = serde_json::to_value(&wrong.design).unwrap();
            let valid = validate_json(&scenario, &json).expect("a wrong design is valid");
            let found = solution
                .find(&valid)
                .unwrap_or_else(|| panic!("{id}: \"{}\" is not among the designs", wrong.name));
            for missed in &wrong.misses {
                assert!(
                    found.misses.iter().any(|m| &m.requirement == missed),
                    "{id}: \"{}\" should miss {missed}",
                    wrong.name
                );
            }
        }
    }
}

#[test]
fn the_solve_agrees_with_the_check_design_by_design() {
    for scenario in shipped() {
        let id = &scenario.scenario().id;
        let solution = solve(&scenario).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(
            solution.designs.len() as u64 + solution.refused,
            solution.candidates
        );
        for solved in &solution.designs {
            let valid =
                validate(&scenario, solved.design.clone()).expect("a solved design is valid");
            let verdict = check(&scenario, &valid).expect("the check runs");
            let missed: Vec<&str> = verdict
                .requirements
                .iter()
                .filter(|r| !r.passed)
                .map(|r| r.id.as_str())
                .collect();
            let solved_missed: Vec<&str> = solved
                .misses
                .iter()
                .map(|m| m.requirement.as_str())
                .collect();
            assert_eq!(missed, solved_missed, "{id}: design #{}", solved.number);
            assert_eq!(
                verdict.passed, solved.passed,
                "{id}: design #{}",
                solved.number
            );
            assert_eq!(
                verdict.score, solved.score,
                "{id}: design #{}",
                solved.number
            );
        }
    }
}

fn fixture(name: &str) -> (String, String) {
    let file = format!("tests/fixtures/scenarios/{name}.json");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(&file);
    (file, std::fs::read_to_string(path).expect("the fixture"))
}

fn messages(list: &[shared::authoring::Diagnostic]) -> String {
    list.iter().map(|d| format!("{d}\n")).collect()
}

#[test]
fn no_passing_design_is_an_error_naming_the_closest() {
    let (file, text) = fixture("solve-no-passing-design");
    let found = shared::authoring::solve_findings(&file, &text);
    let [problem] = found.problems.as_slice() else {
        panic!("one problem: {}", messages(&found.problems));
    };
    assert_eq!(problem.path, "$.palette");
    assert!(problem.message.starts_with("no design the palette allows passes every requirement (4 designs checked); the closest: #"), "{problem}");
    // The closest meet all but the impossible total.
    assert!(
        problem.message.contains("(misses total-correct)"),
        "{problem}"
    );
    // The validator also says the reference design misses; the solve does not hide it.
    let errors = shared::authoring::validate_scenario_text(&file, &text).unwrap_err();
    assert!(
        errors
            .iter()
            .any(|e| e.message.contains("reference design")),
        "{}",
        messages(&errors)
    );
}

#[test]
fn a_requirement_no_design_misses_is_a_warning() {
    let (file, text) = fixture("solve-never-missed");
    let found = shared::authoring::solve_findings(&file, &text);
    assert!(found.problems.is_empty(), "{}", messages(&found.problems));
    let never: Vec<_> = found
        .warnings
        .iter()
        .filter(|w| w.message.contains("misses requirement"))
        .collect();
    assert_eq!(never.len(), 1, "{}", messages(&found.warnings));
    assert_eq!(never[0].path, "$.requirements[1]");
    assert!(never[0].message.starts_with("warning: no design the palette allows misses requirement \"nothing-lost\": all 2 pass it"), "{}", never[0]);
}

#[test]
fn a_failure_kind_that_changes_no_verdict_is_a_warning() {
    let (file, text) = fixture("solve-decorative-failure");
    shared::authoring::validate_scenario_text(&file, &text).expect("the fixture validates");
    let found = shared::authoring::solve_findings(&file, &text);
    assert!(found.problems.is_empty(), "{}", messages(&found.problems));
    let w = found
        .warnings
        .iter()
        .find(|w| w.path == "$.failures.consumer_crash")
        .unwrap_or_else(|| panic!("{}", messages(&found.warnings)));
    assert!(
        w.message.contains("consumer_crash changes no verdict here"),
        "{w}"
    );
}

#[test]
fn wrong_designs_that_miss_with_no_failure_are_a_warning() {
    let (file, text) = fixture("solve-misses-without-failures");
    shared::authoring::validate_scenario_text(&file, &text).expect("the fixture validates");
    let found = shared::authoring::solve_findings(&file, &text);
    assert!(found.problems.is_empty(), "{}", messages(&found.problems));
    let paths: Vec<&str> = found.warnings.iter().map(|w| w.path.as_str()).collect();
    // The crash matters to the designs that commit first, so it is not decorative.
    assert_eq!(paths, ["$.wrong_designs"], "{}", messages(&found.warnings));
    assert!(found.warnings[0]
        .message
        .contains("even in a run with no failure"));
}

#[test]
fn the_shipped_scenarios_have_no_solve_problem() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    for scenario in shipped() {
        let id = &scenario.scenario().id;
        let file = folder.join(format!("{id}.json"));
        let text = std::fs::read_to_string(&file).expect("the scenario's file is named by its id");
        let found = shared::authoring::solve_findings(id, &text);
        assert!(found.problems.is_empty(), "{}", messages(&found.problems));
        assert!(found.solution.is_some(), "{id}");
        for w in &found.warnings {
            println!("{w}");
        }
    }
}
