//! Replay of a counterexample on the drawing: which node and edge act at each step (in a
//! pipeline of several stages, the acting stage's), whether a failure struck there, what
//! readers could see in the tables at that moment, and which tables the step changed.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as Json;
use shared::scenario::TableRole;
use shared::verdict::{Counterexample, TableView};
use shared::Scenario;

/// What the drawing shows at one step of a replay.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// The trace index (0-based) this frame shows.
    pub index: usize,
    pub node: Option<String>,
    pub edge: Option<(String, String)>,
    pub failure: bool,
    /// The step at which the requirement was seen to be missed.
    pub went_wrong: bool,
    /// The committed tables after this step: the last snapshot at or before it.
    pub tables: BTreeMap<String, TableView>,
    /// The tables whose committed rows this step changed, as readers see them.
    pub changed: BTreeSet<String>,
}

/// The warehouse tables before anything ran: each sink table's starting rows.
pub fn initial_tables(scenario: &Scenario) -> BTreeMap<String, TableView> {
    scenario
        .tables
        .iter()
        .filter(|t| t.role == TableRole::Sink)
        .map(|t| {
            (
                t.name.clone(),
                TableView {
                    columns: t.columns.iter().map(|c| c.name.clone()).collect(),
                    rows: t.rows.clone(),
                },
            )
        })
        .collect()
}

pub fn frame(
    counterexample: &Counterexample,
    initial: &BTreeMap<String, TableView>,
    index: usize,
) -> Option<Frame> {
    let entry = counterexample.trace.get(index)?;
    let mut tables = initial.clone();
    for earlier in &counterexample.trace[..index] {
        if let Some(snapshot) = &earlier.tables {
            for (name, view) in snapshot {
                tables.insert(name.clone(), view.clone());
            }
        }
    }
    let mut changed = BTreeSet::new();
    if let Some(snapshot) = &entry.tables {
        for (name, view) in snapshot {
            if tables.get(name) != Some(view) {
                changed.insert(name.clone());
            }
            tables.insert(name.clone(), view.clone());
        }
    }
    Some(Frame {
        index,
        node: entry.node.clone(),
        edge: entry.edge.clone().map(|[a, b]| (a, b)),
        failure: entry.failure,
        went_wrong: entry.step == counterexample.went_wrong_at,
        tables,
        changed,
    })
}

/// A table cell as a reader sees it: strings without quotes, NULL for null.
pub fn cell_text(value: &Json) -> String {
    match value {
        Json::Null => "NULL".into(),
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// How an outcome is drawn: committed, rolled back, a failure, or neither.
pub fn outcome_class(outcome: &str, failure: bool) -> &'static str {
    let o = outcome.to_ascii_lowercase();
    if failure || o.contains("crash") || o.contains("lost") {
        "failure"
    } else if o.contains("rolled back") || o.contains("rollback") {
        "rolled-back"
    } else if o.contains("commit") {
        "committed"
    } else {
        "neutral"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario_named(name: &str) -> Scenario {
        let text = std::fs::read_to_string(format!(
            "{}/../scenarios/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        Scenario::from_json(&text).unwrap()
    }

    fn scenario() -> Scenario {
        scenario_named("safe-retry")
    }

    fn check(scenario: &Scenario, design: &Json) -> shared::Verdict {
        let compiled = shared::Compiled::new(scenario.clone()).unwrap();
        shared::check_json(&compiled, design).unwrap()
    }

    #[test]
    fn replay_of_the_append_only_job_ends_at_fifty() {
        let scenario = scenario();
        let start = scenario.starting_design.clone().unwrap();
        let verdict = check(&scenario, &start);
        let missed = verdict
            .requirements
            .iter()
            .find(|r| r.id == "revenue-correct")
            .unwrap();
        let ce = missed.counterexample.as_ref().unwrap();
        assert_eq!(
            (ce.expected.as_str(), ce.actual.as_str()),
            ("25.00", "50.00")
        );
        let initial = initial_tables(&scenario);
        assert_eq!(initial["daily_revenue"].rows.len(), 1);
        let frames: Vec<Frame> = (0..ce.trace.len())
            .map(|i| frame(ce, &initial, i).unwrap())
            .collect();
        assert!(frames.iter().any(|f| f.failure), "the crash is marked");
        assert!(
            frames.iter().any(|f| f.node.as_deref() == Some("job")),
            "the job acts"
        );
        assert!(frames.iter().any(|f| f.edge.is_some()), "an edge lights up");
        let last = frames.last().unwrap();
        let revenue = &last.tables["daily_revenue"];
        let day: Vec<Vec<String>> = revenue
            .rows
            .iter()
            .filter(|r| cell_text(&r[0]) == "2026-01-10")
            .map(|r| r.iter().map(cell_text).collect())
            .collect();
        assert_eq!(
            day,
            vec![vec!["2026-01-10".to_string(), "50.00".to_string()]],
            "the doubled revenue is visible at the end"
        );
        assert!(frame(ce, &initial, ce.trace.len()).is_none());
    }

    #[test]
    fn a_replay_of_the_whole_path_lights_both_stages_and_the_tables_each_changed() {
        let scenario = scenario_named("whole-path");
        let start = scenario.starting_design.clone().unwrap();
        let verdict = check(&scenario, &start);
        let missed = verdict
            .requirements
            .iter()
            .find(|r| r.id == "revenue-correct")
            .unwrap();
        let ce = missed.counterexample.as_ref().unwrap();
        let initial = initial_tables(&scenario);
        let frames: Vec<Frame> = (0..ce.trace.len())
            .map(|i| frame(ce, &initial, i).unwrap())
            .collect();
        let acting = |node: &str| {
            frames
                .iter()
                .filter(|f| f.node.as_deref() == Some(node))
                .collect::<Vec<_>>()
        };
        // The consumer's writes change the raw table, the nightly job's the revenue.
        let consumer = acting("consumer");
        let nightly = acting("nightly");
        assert!(!consumer.is_empty() && !nightly.is_empty());
        let changed_by = |frames: &[&Frame]| {
            frames
                .iter()
                .flat_map(|f| f.changed.iter().cloned())
                .collect::<BTreeSet<String>>()
        };
        assert_eq!(
            changed_by(&consumer),
            BTreeSet::from(["raw_payments".to_string()])
        );
        assert_eq!(
            changed_by(&nightly),
            BTreeSet::from(["daily_revenue".to_string()])
        );
        assert!(nightly
            .iter()
            .any(|f| f.edge == Some(("nightly".into(), "revenue".into()))));
        // A step that writes nothing changes no table.
        assert!(frames
            .iter()
            .filter(|f| ce.trace[f.index].tables.is_none())
            .all(|f| f.changed.is_empty()));
    }

    #[test]
    fn outcomes_are_classified() {
        assert_eq!(outcome_class("committed, 3 rows", false), "committed");
        assert_eq!(outcome_class("rolled back", false), "rolled-back");
        assert_eq!(outcome_class("anything", true), "failure");
        assert_eq!(cell_text(&Json::Null), "NULL");
        assert_eq!(cell_text(&Json::from("25.00")), "25.00");
    }
}
