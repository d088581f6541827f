//! Verdict tables over the shipped scenarios: every design each scenario's palette allows gets
//! from its scenario's table the verdict the search gives, byte for byte, however its nodes are
//! called, placed and ordered.

use shared::check::check_hashed;
use shared::design::{Design, Position};
use shared::solve::{designs, SolveLimits};
use shared::verdict_table::{key_of, VerdictTable};
use shared::{scenario_hash, validate, Compiled, Limits, ValidDesign};

fn shipped() -> Vec<Compiled> {
    let all = conformance::shipped();
    assert!(all.len() >= 11, "the shipped scenarios are found");
    all
}

/// The design drawn again: its nodes listed in the opposite order, each renamed (with
/// characters JSON must escape) and moved; with `edges_reversed`, its edges listed in the
/// opposite order too.
fn redrawn(design: &Design, edges_reversed: bool) -> Design {
    let rename = |id: &str| format!("n\"{}\\ {}", id.len(), id.to_uppercase());
    let mut out = design.clone();
    for (i, node) in out.nodes.iter_mut().enumerate() {
        node.id = rename(&node.id);
        node.position = Some(Position {
            x: 1000.0 - 37.5 * i as f64,
            y: 3.25 * i as f64,
        });
    }
    for edge in &mut out.edges {
        edge.from = rename(&edge.from);
        edge.to = rename(&edge.to);
    }
    out.nodes.reverse();
    if edges_reversed {
        out.edges.reverse();
    }
    out
}

/// The search's verdict as JSON, as the check answers it.
fn searched(scenario: &Compiled, hash: &str, design: &ValidDesign) -> String {
    let verdict = check_hashed(scenario, hash, design, Limits::default())
        .unwrap_or_else(|e| panic!("{}: {e}", scenario.scenario().id));
    serde_json::to_string(&verdict).expect("a verdict serialises")
}

#[test]
fn every_design_of_every_shipped_scenario_gets_the_searchs_verdict_from_the_table() {
    let mut compared = 0;
    for scenario in shipped() {
        let id = scenario.scenario().id.clone();
        let hash = scenario_hash(scenario.scenario());
        let mut reported = 0;
        let table = VerdictTable::build(
            &scenario,
            &hash,
            Limits::default(),
            10_000,
            &mut |done, _| {
                reported = done;
                true
            },
        )
        .unwrap_or_else(|e| panic!("{id}: {e}"));
        let space = designs(&scenario, SolveLimits::default()).expect("a shipped palette is small");
        assert_eq!(
            reported,
            space.len() as u64,
            "{id}: progress is told of every design"
        );
        assert_eq!(table.left_out(), 0, "{id}: the table holds every design");
        let mut held = 0;
        for design in space {
            let Ok(valid) = validate(&scenario, design.clone()) else {
                continue;
            };
            held += 1;
            let answer = table
                .json(&scenario, &valid)
                .unwrap_or_else(|| panic!("{id}: the table holds {design:?}"));
            assert_eq!(
                answer,
                searched(&scenario, &hash, &valid),
                "{id}: {design:?}"
            );
            let read = table
                .verdict(&scenario, &valid)
                .expect("the table's verdict reads back");
            let search = check_hashed(&scenario, &hash, &valid, Limits::default()).unwrap();
            assert_eq!(read, search, "{id}: the verdict read back is the search's");
            let (_, summary) = table.lookup(&scenario, &valid).unwrap();
            assert_eq!(
                summary,
                shared::verdict_table::Summary::of(&search),
                "{id}: the summary is the search's"
            );

            // The same design drawn with other ids, positions and order of nodes: the same
            // key, and the search's verdict for that drawing.
            let other =
                validate(&scenario, redrawn(&design, false)).expect("a redrawn design is valid");
            assert_eq!(
                key_of(&scenario, &other).map(|k| k.0),
                key_of(&scenario, &valid).map(|k| k.0),
                "{id}: the key ignores ids, positions and node order"
            );
            let answer = table
                .json(&scenario, &other)
                .unwrap_or_else(|| panic!("{id}: the table holds the redrawn {design:?}"));
            assert_eq!(
                answer,
                searched(&scenario, &hash, &other),
                "{id}: redrawn {design:?}"
            );

            // With the edges in the opposite order too: a node with three edges or more is
            // looked up by the order drawn at it, so the table holds the drawing exactly when
            // its key is the same, and then gives the search's verdict.
            let reversed =
                validate(&scenario, redrawn(&design, true)).expect("a redrawn design is valid");
            let same_key =
                key_of(&scenario, &reversed).map(|k| k.0) == key_of(&scenario, &valid).map(|k| k.0);
            match table.json(&scenario, &reversed) {
                Some(answer) => {
                    assert!(same_key, "{id}: only the same key is found");
                    assert_eq!(
                        answer,
                        searched(&scenario, &hash, &reversed),
                        "{id}: reversed {design:?}"
                    );
                }
                None => assert!(!same_key, "{id}: the same key is found"),
            }
            compared += 1;
        }
        // The designs the scenario ships, drawn by hand (options left at their defaults left
        // out), are found too.
        let file = scenario.scenario();
        let shipped = file
            .starting_design
            .iter()
            .chain(file.reference_designs.iter().map(|d| &d.design))
            .chain(file.wrong_designs.iter().map(|d| &d.design));
        for json in shipped {
            let Ok(valid) = shared::validate_json(&scenario, json) else {
                continue;
            };
            let design = valid.design().clone();
            for valid in [validate(&scenario, redrawn(&design, false)).unwrap(), valid] {
                let answer = table
                    .json(&scenario, &valid)
                    .unwrap_or_else(|| panic!("{id}: the table holds the shipped {design:?}"));
                assert_eq!(
                    answer,
                    searched(&scenario, &hash, &valid),
                    "{id}: {design:?}"
                );
            }
        }
        // Two designs of the palette never share a key.
        assert_eq!(
            held,
            table.len(),
            "{id}: the table holds every valid design once"
        );
    }
    assert!(
        compared >= 500,
        "every shipped scenario's designs are compared: {compared}"
    );
}

#[test]
fn a_palette_past_the_limit_has_no_table() {
    let scenario = shipped()
        .into_iter()
        .find(|s| s.scenario().id == "whole-path")
        .expect("whole-path ships");
    let hash = scenario_hash(scenario.scenario());
    let built = VerdictTable::build(&scenario, &hash, Limits::default(), 10, &mut |_, _| true);
    assert!(matches!(
        built,
        Err(shared::verdict_table::TableError::TooManyDesigns { limit: 10, .. })
    ));
    let mut told = 0;
    let stopped = VerdictTable::build(&scenario, &hash, Limits::default(), 10_000, &mut |_, _| {
        told += 1;
        false
    });
    assert!(matches!(
        stopped,
        Err(shared::verdict_table::TableError::Stopped)
    ));
    assert_eq!(told, 1, "a build stops when its caller says so");
}
