//! The table diff of a counterexample, on every shipped design: present exactly for the
//! requirements that compare a whole table, and never all `same` when one is missed.

use crate::Lesson;
use shared::scenario::Check;
use shared::verdict::{Counterexample, RowStatus};
use shared::Scenario;

use crate::golden::shipped_scenarios;

fn compares_a_whole_table(scenario: &Scenario, id: &str) -> bool {
    let req = scenario
        .requirements
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("no requirement {id}"));
    matches!(
        req.check,
        Check::RerunNoop { .. } | Check::SameAsCleanRun { .. }
    )
}

fn assert_diff(scenario: &Scenario, id: &str, ce: &Counterexample, label: &str) {
    match &ce.diff {
        Some(diff) => {
            assert!(
                compares_a_whole_table(scenario, id),
                "{label}: {id} has a diff but compares no whole table"
            );
            assert!(
                !diff.is_same(),
                "{label}: {id} is missed but its diff is all same"
            );
            assert!(
                ce.tables.contains_key(&diff.table),
                "{label}: {id} diffs {}, not among the counterexample's tables",
                diff.table
            );
        }
        None => assert!(
            !compares_a_whole_table(scenario, id),
            "{label}: {id} compares a whole table and has no diff"
        ),
    }
}

#[test]
fn every_missed_whole_table_requirement_of_a_shipped_design_has_a_diff() {
    let mut diffs = 0;
    for (name, scenario) in shipped_scenarios() {
        let designs = scenario
            .starting_design
            .iter()
            .chain(scenario.reference_designs.iter().map(|d| &d.design))
            .chain(scenario.wrong_designs.iter().map(|d| &d.design));
        for design in designs {
            let Ok(verdict) = shared::check_json(&scenario.compiled(), design) else {
                continue;
            };
            for r in &verdict.requirements {
                if let Some(ce) = &r.counterexample {
                    assert_diff(&scenario, &r.id, ce, &name);
                    diffs += usize::from(ce.diff.is_some());
                }
            }
            for a in &verdict.advisories.missed {
                assert_diff(&scenario, &a.id, &a.counterexample, &name);
            }
        }
    }
    assert!(diffs >= 5, "only {diffs} diffs among the shipped designs");
}

#[test]
fn the_rerun_that_stamps_the_clock_differs_only_in_loaded_at() {
    let scenario = crate::scenario_file("logical-date");
    let wrong = scenario
        .wrong_designs
        .iter()
        .find(|d| d.name.contains("NOW()"))
        .expect("logical-date has a design that stamps NOW()");
    let v = crate::verdict(&scenario, wrong.design.clone());
    let ce = crate::requirement(&v, "rerun-keeps-revenue")
        .counterexample
        .as_ref()
        .expect("the rerun changes daily_revenue");
    let diff = ce.diff.as_ref().expect("rerun_noop has a diff");
    assert_eq!(diff.table, "daily_revenue");
    assert_eq!(diff.key, ["order_date"]);
    let loaded_at = diff.columns.iter().position(|c| c == "loaded_at").unwrap() as u32;
    let differing: Vec<_> = diff
        .expected
        .iter()
        .filter(|r| r.status == RowStatus::Differing)
        .collect();
    assert_eq!(differing.len(), 1);
    let row = differing[0];
    assert_eq!(row.differs, [loaded_at]);
    assert_eq!(row.cells[0], "2026-01-10");
    assert_eq!(row.cells[loaded_at as usize], "2026-01-11T23:55:00Z");
    let partner = &diff.actual[row.pair.unwrap() as usize];
    assert_eq!(partner.status, RowStatus::Differing);
    assert_eq!(partner.cells[loaded_at as usize], "2026-01-15T09:00:00Z");
    // No row is missing or extra: the rerun rewrote the same day.
    assert!(diff
        .expected
        .iter()
        .chain(&diff.actual)
        .all(|r| matches!(r.status, RowStatus::Same | RowStatus::Differing)));
}
