//! The verdict's `coverage` and `advisories`: present, deterministic, never graded, and true
//! to what the scenarios put to the test.

use crate::Lesson;
use serde_json::json;
use shared::coverage::TEACHES;
use shared::verdict::Verdict;
use shared::{Limits, Scenario};

const SCENARIOS: [&str; 8] = [
    "safe-retry",
    "safe-rerun",
    "logical-date",
    "delivery-promise",
    "dedupe-by-key",
    "idempotency-key",
    "offset-commit",
    "exactly-once",
];

/// Every reference and wrong design of a shipped scenario, with its name.
fn designs(s: &Scenario) -> Vec<(String, serde_json::Value)> {
    let refs = s
        .reference_designs
        .iter()
        .map(|d| (format!("reference {}", d.name), d.design.clone()));
    let wrongs = s
        .wrong_designs
        .iter()
        .map(|d| (format!("wrong {}", d.name), d.design.clone()));
    refs.chain(wrongs).collect()
}

fn graded(s: &Scenario, design: &serde_json::Value) -> Verdict {
    let valid = shared::validate_json(&s.compiled(), design).expect("a shipped design is valid");
    shared::check::check_graded(
        &s.compiled(),
        &shared::scenario_hash(s),
        &valid,
        Limits::default(),
    )
    .unwrap()
}

#[test]
fn coverage_and_advisories_are_deterministic_and_never_graded() {
    for name in SCENARIOS {
        let s = crate::scenario_file(name);
        for (label, design) in designs(&s) {
            let a = crate::verdict(&s, design.clone());
            let b = crate::verdict(&s, design.clone());
            let (ja, jb) = (
                serde_json::to_string(&a).unwrap(),
                serde_json::to_string(&b).unwrap(),
            );
            assert_eq!(ja, jb, "{name}: {label}: two checks differ");
            let value: serde_json::Value = serde_json::from_str(&ja).unwrap();
            assert!(value.get("coverage").is_some(), "{name}: {label}");
            assert!(value.get("advisories").is_some(), "{name}: {label}");
            assert_eq!(
                a.coverage
                    .failures
                    .iter()
                    .map(|f| f.kind.as_str())
                    .collect::<Vec<_>>(),
                shared::coverage::kinds_of(&s.failures),
                "{name}: {label}: the kinds explored"
            );

            let without = graded(&s, &design);
            assert_eq!(a.passed, without.passed, "{name}: {label}: passed");
            assert_eq!(a.score, without.score, "{name}: {label}: score");
            assert_eq!(a.max_score, without.max_score, "{name}: {label}: max_score");
            assert_eq!(a.requirements, without.requirements, "{name}: {label}");
            assert_eq!(a.schedules_explored, without.schedules_explored);
            // An advisory is only for a requirement the scenario's own failures pass.
            for adv in &a.advisories.missed {
                let r = crate::requirement(&a, &adv.id);
                assert!(
                    r.passed,
                    "{name}: {label}: advisory on a missed requirement"
                );
                assert!(!adv.counterexample.faults.is_empty());
            }
        }
    }
}

#[test]
fn a_verdict_stored_before_coverage_still_reads() {
    let old = json!({
        "scenario": "offset-commit",
        "scenario_hash": "sha256:00",
        "passed": true,
        "score": 3,
        "max_score": 3,
        "schedules_explored": 4,
        "requirements": []
    });
    let v: Verdict = serde_json::from_value(old).unwrap();
    assert!(v.coverage.untested.is_empty() && v.advisories.missed.is_empty());
}

#[test]
fn every_failure_kind_is_taught_by_a_shipped_scenario_that_explores_it() {
    for kind in shared::coverage::KINDS {
        let (_, id) = TEACHES.iter().find(|(k, _)| *k == kind).expect(kind);
        let s = crate::scenario_file(id);
        assert!(
            shared::coverage::kinds_of(&s.failures).contains(&kind),
            "{id} does not explore {kind}"
        );
    }
}

/// delivery-promise's palette only offers a consumer that acks (commits) before it writes,
/// and the scenario never crashes the consumer: coverage says the commit is not tested, and
/// the advisory finds the order a consumer crash loses between the ack and the write, and
/// names offset-commit, which teaches it.
#[test]
fn delivery_promise_reference_design_gets_an_advisory_for_a_consumer_crash() {
    let s = crate::scenario_file("delivery-promise");
    for d in &s.reference_designs {
        let v = crate::verdict(&s, d.design.clone());
        assert!(v.passed);
        let u = v
            .coverage
            .untested
            .iter()
            .find(|u| u.node == "consumer" && u.option == "offset_commit")
            .unwrap_or_else(|| panic!("{}: {:?}", d.name, v.coverage));
        assert_eq!(u.value, "before_write");
        assert_eq!(
            u.others,
            ["after_write"],
            "a sender's consumer has no offset to save with the row"
        );
        assert_eq!(
            u.why,
            "In the stream consumer “consumer”: the only choice here, and committing the offset after the write would give the same result: this scenario never crashes the consumer between the commit and the write. In real life, a consumer that commits before it writes loses the message when it crashes in between."
        );
        assert_eq!(u.learn_in, ["offset-commit"]);
        assert_eq!(
            v.advisories.failures,
            ["consumer_crash", "message_lost", "ack_lost"]
        );
        let lost = v
            .advisories
            .missed
            .iter()
            .find(|a| a.id == "every-order-arrives")
            .unwrap_or_else(|| panic!("{}: {:?}", d.name, v.advisories));
        assert_eq!(lost.learn_in, ["offset-commit"]);
        assert!(
            lost.counterexample
                .failures
                .iter()
                .any(|f| f.contains("crashes while it handles message")
                    && f.contains("after it acked, before it wrote the row")),
            "{:?}",
            lost.counterexample.failures
        );
    }
}

/// A stream consumer that commits before it writes passes when nothing crashes it; the
/// advisory finds the lost order under a consumer crash and names offset-commit.
#[test]
fn a_consumer_committing_before_it_writes_gets_an_advisory_under_a_crash() {
    let mut s = crate::scenario_file("dedupe-by-key");
    s.failures.consumer_crash = None;
    s.failures.bound = 1;
    let design = json!({
        "nodes": [
            {"id": "stream", "kind": "stream", "options": {"topic": "orders_paid"}},
            {"id": "consumer", "kind": "stream_consumer", "options": {"offset_commit": "before_write"}},
            {"id": "paid", "kind": "table", "options": {"table": "paid_orders", "write": "insert_ignore", "key": ["order_id"]}}
        ],
        "edges": [{"from": "stream", "to": "consumer"}, {"from": "consumer", "to": "paid"}]
    });
    let v = crate::verdict(&s, design.clone());
    assert!(v.passed, "{v:?}");
    assert!(v
        .coverage
        .untested
        .iter()
        .any(|u| u.option == "offset_commit"
            && u.why.starts_with(
                "“Commit after write” gives the same result here: this scenario never crashes the consumer"
            )));
    let lost = v
        .advisories
        .missed
        .iter()
        .find(|a| {
            a.counterexample
                .faults
                .iter()
                .any(|f| f.kind == "consumer_crash")
        })
        .unwrap_or_else(|| panic!("{:?}", v.advisories));
    assert_eq!(lost.learn_in, ["offset-commit"]);
    assert_eq!(lost.counterexample.faults.len(), 1);
    assert!(lost.counterexample.failures[0]
        .contains("after it committed the offset, before it wrote the row"));
    // Never graded.
    let without = graded(&s, &design);
    assert_eq!((v.passed, v.score), (without.passed, without.score));
}

/// safe-retry's merge-by-key design passes without a transaction: every crash and retry the
/// scenario explores gives the same result in one, so coverage says so; the advisory's
/// failures (job crashes, two per schedule) are the scenario's own, so there is none.
#[test]
fn safe_retry_without_a_transaction_is_reported_as_untested() {
    let s = crate::scenario_file("safe-retry");
    let d = s
        .reference_designs
        .iter()
        .find(|d| d.design["nodes"][1]["options"]["transaction"] != "per_run")
        .expect("a reference design without a transaction");
    let v = crate::verdict(&s, d.design.clone());
    assert!(v.passed);
    let u = v
        .coverage
        .untested
        .iter()
        .find(|u| u.option == "transaction")
        .unwrap_or_else(|| panic!("{:?}", v.coverage));
    assert_eq!(
        (u.value.as_str(), u.others.clone()),
        ("none", vec!["per_run".to_string()])
    );
    assert_eq!(v.advisories.failures, ["job_crash"]);
    assert!(v.advisories.missed.is_empty());
}

/// A variant beyond the limits is skipped with a note; the graded verdict is unchanged.
#[test]
fn a_variant_beyond_the_limits_is_skipped_with_a_note() {
    let s = crate::scenario_file("exactly-once");
    let design = s.reference_designs[0].design.clone();
    let valid = shared::validate_json(&s.compiled(), &design).unwrap();
    let full = shared::check(&s.compiled(), &valid).unwrap();
    let limits = Limits {
        max_schedules: full.schedules_explored,
        ..Limits::default()
    };
    let v = shared::check_with(&s.compiled(), &valid, limits).unwrap();
    assert_eq!(v.requirements, full.requirements);
    assert!(v.advisories.missed.is_empty());
    assert!(
        v.advisories.note.as_deref().unwrap_or("").contains("limit"),
        "{:?}",
        v.advisories
    );
}

/// The scenario with one failure kind switched off.
fn without_kind(s: &Scenario, kind: &str) -> Scenario {
    let mut v = s.clone();
    let f = &mut v.failures;
    match kind {
        "job_crash" => f.job_crash = None,
        "consumer_crash" => f.consumer_crash = None,
        "message_lost" => f.message_lost = None,
        "ack_lost" => f.ack_lost = None,
        "redelivery" => f.redelivery = None,
        other => panic!("no failure kind {other}"),
    }
    v
}

/// The schedules the coverage gives each failure kind, which the check counts during its
/// own search, are all of the check's schedules but those of the scenario with that kind
/// switched off, searched on their own.
#[test]
fn each_kinds_schedules_are_those_a_search_without_it_leaves_out() {
    let mut compared = 0;
    for name in SCENARIOS {
        let s = crate::scenario_file(name);
        let kinds = shared::coverage::kinds_of(&s.failures);
        if kinds.len() < 2 || s.failures.bound == 0 {
            continue;
        }
        for (label, design) in designs(&s) {
            let v = crate::verdict(&s, design.clone());
            for kind in &kinds {
                let without = graded(&without_kind(&s, kind), &design).schedules_explored;
                let counted = v
                    .coverage
                    .failures
                    .iter()
                    .find(|f| f.kind == *kind)
                    .unwrap_or_else(|| panic!("{name}: {label}: no coverage for {kind}"));
                assert_eq!(
                    counted.schedules,
                    v.schedules_explored - without,
                    "{name}: {label}: the schedules with {kind}"
                );
                compared += 1;
            }
        }
    }
    assert!(compared >= 10, "only {compared} kinds compared");
}
