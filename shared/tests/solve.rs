//! The solver over the shipped scenarios: every reference design is among the passing designs
//! it finds, and its verdict on every design is the check's, design by design.

use std::path::Path;

use shared::solve::solve;
use shared::{check, validate, validate_json, Compiled};

fn shipped() -> Vec<Compiled> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut paths: Vec<_> = std::fs::read_dir(&folder)
        .expect("the scenarios folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p.to_string_lossy().ends_with(".schema.json")
        })
        .collect();
    paths.sort();
    assert!(paths.len() >= 11, "the shipped scenarios are found");
    paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("a readable scenario");
            Compiled::parse(&text).unwrap_or_else(|e| panic!("{}: {e:?}", p.display()))
        })
        .collect()
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
