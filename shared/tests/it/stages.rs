//! Pipelines of several stages: a consumer lands rows that a batch job reads, jobs and
//! consumers take turns on one timeline, and a counterexample names the stage that failed.

use serde_json::json;
use shared::authoring::validate_scenario_text;
use shared::{Compiled, DesignErrorCode};

use crate::{requirement, verdict, Lesson};

fn fixture(name: &str) -> Compiled {
    let file = format!("tests/fixtures/scenarios/{name}.json");
    let path = format!("{}/../{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    validate_scenario_text(&file, &text).unwrap_or_else(|problems| {
        panic!(
            "{file} validates: {}",
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        )
    })
}

fn wrong_design(s: &Compiled, name: &str) -> serde_json::Value {
    s.scenario()
        .wrong_designs
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no wrong design {name}"))
        .design
        .clone()
}

#[test]
fn a_two_stage_pipeline_is_one_scenario_and_its_verdict_names_the_stage_that_failed() {
    let s = fixture("two-stage-payments");
    let v = verdict(&s, wrong_design(&s, "the raw table is a plain INSERT"));
    let c = requirement(&v, "revenue-correct")
        .counterexample
        .as_ref()
        .expect("a repeated payment doubles the money");
    assert!(
        c.failures
            .iter()
            .any(|f| f.starts_with("the consumer of payments crashes")),
        "{:?}",
        c.failures
    );
    assert_eq!(
        c.actual, "120.50",
        "payment 101 was landed twice and summed twice"
    );

    let v = verdict(&s, wrong_design(&s, "the revenue appended"));
    let c = requirement(&v, "revenue-correct")
        .counterexample
        .as_ref()
        .expect("a retried job appends a second revenue row");
    assert!(
        c.failures
            .iter()
            .any(|f| f.starts_with("the nightly job crashes")),
        "{:?}",
        c.failures
    );
    assert!(
        c.failures
            .iter()
            .any(|f| f.starts_with("the scheduler retries the nightly job")),
        "{:?}",
        c.failures
    );
}

/// With a bound of 2, a consumer crash and a job crash meet in one schedule.
#[test]
fn a_failure_in_one_stage_and_a_retry_in_the_next_meet_in_one_schedule() {
    let s = fixture("two-stage-payments");
    let design = &s.scenario().reference_designs[0].design;
    let valid = shared::validate_json(&s, design).unwrap();
    let mut both = 0;
    let mut times_ordered = true;
    shared::check::for_each_schedule(
        &s,
        &valid,
        shared::sql::Dialect::Display,
        shared::Limits::default(),
        &mut |schedule| {
            let kinds: Vec<&str> = schedule.faults.iter().map(|(_, k)| k.as_str()).collect();
            if kinds.contains(&"consumer_crash") && kinds.contains(&"job_crash") {
                both += 1;
            }
            times_ordered &= schedule.trace.windows(2).all(|w| w[0].time <= w[1].time);
        },
    )
    .unwrap();
    assert!(
        both > 0,
        "some schedule crashes both the consumer and the job"
    );
    assert!(times_ordered, "every trace goes forward in time");
}

/// The consumer's stage comes first on the timeline: the job reads what it landed.
#[test]
fn the_job_reads_what_the_consumer_landed_before_it_ran() {
    let s = fixture("two-stage-payments");
    let design = &s.scenario().reference_designs[0].design;
    let trace = shared::check::replay(&s, design, &[]).unwrap();
    let landed = trace
        .iter()
        .rposition(|t| t.actor == "consumer" && t.action.starts_with("writes"))
        .unwrap();
    let summed = trace
        .iter()
        .position(|t| t.actor == "job" && t.action.starts_with("step 1"))
        .unwrap();
    assert!(landed < summed, "{trace:#?}");
    assert_eq!(trace[summed].node.as_deref(), Some("nightly"));
}

fn refusals(s: &Compiled, design: serde_json::Value) -> Vec<(String, DesignErrorCode, String)> {
    let list = shared::validate_json(s, &design).expect_err("the design is refused");
    let from_check = match shared::check_json(s, &design) {
        Err(shared::CheckError::Design(errors)) => errors,
        other => panic!("the check refuses it too: {other:?}"),
    };
    assert_eq!(
        list, from_check,
        "the check refuses a design as validation does"
    );
    list.into_iter()
        .map(|e| (e.path, e.code, e.message))
        .collect()
}

fn whole_path_nodes() -> Vec<serde_json::Value> {
    vec![
        json!({"id": "checkout", "kind": "sender", "options": {"on_timeout": "resend", "idempotency_key": "per_action"}}),
        json!({"id": "consumer", "kind": "stream_consumer", "options": {"offset_commit": "after_write"}}),
        json!({"id": "raw", "kind": "table", "options": {"table": "raw_payments", "write": "insert_ignore"}}),
        json!({"id": "nightly", "kind": "batch_job", "options": {"transaction": "per_run"}}),
        json!({"id": "revenue", "kind": "table", "options": {"table": "daily_revenue", "write": "delete_insert"}}),
    ]
}

#[test]
fn a_table_read_before_any_stage_writes_it_is_refused_with_its_path() {
    let s = crate::scenario_file("whole-path").compiled();
    let list = refusals(
        &s,
        json!({"nodes": whole_path_nodes(), "edges": [
            {"from": "checkout", "to": "consumer"},
            {"from": "raw", "to": "nightly"}, {"from": "nightly", "to": "revenue"}
        ]}),
    );
    assert!(
        list.iter().any(|(p, c, m)| p == "$.nodes[2]"
            && *c == DesignErrorCode::NoWriter
            && m.contains("nothing writes raw_payments before \"nightly\" reads it")),
        "{list:?}"
    );
    assert!(
        list.iter()
            .any(|(p, c, _)| p == "$.nodes[1]" && *c == DesignErrorCode::Incomplete),
        "the consumer writes nowhere: {list:?}"
    );
}

#[test]
fn a_processor_with_no_input_is_refused_with_its_path() {
    let s = crate::scenario_file("whole-path").compiled();
    let list = refusals(
        &s,
        json!({"nodes": whole_path_nodes(), "edges": [
            {"from": "consumer", "to": "raw"}, {"from": "raw", "to": "nightly"}, {"from": "nightly", "to": "revenue"}
        ]}),
    );
    assert!(
        list.iter().any(|(p, c, m)| p == "$.nodes[1]"
            && *c == DesignErrorCode::Incomplete
            && m.contains("has no input")),
        "{list:?}"
    );
}

#[test]
fn two_stages_writing_one_table_are_refused() {
    let s = crate::scenario_file("whole-path").compiled();
    let mut nodes = whole_path_nodes();
    nodes.push(json!({"id": "second", "kind": "batch_job"}));
    let list = refusals(
        &s,
        json!({"nodes": nodes, "edges": [
            {"from": "checkout", "to": "consumer"}, {"from": "consumer", "to": "raw"},
            {"from": "raw", "to": "nightly"}, {"from": "nightly", "to": "revenue"},
            {"from": "raw", "to": "second"}, {"from": "second", "to": "revenue"}
        ]}),
    );
    assert!(
        list.iter().any(|(p, c, m)| p == "$.nodes[4]"
            && *c == DesignErrorCode::TwoWriters
            && m.contains("both write daily_revenue")),
        "{list:?}"
    );
}

#[test]
fn a_cycle_through_a_table_is_refused() {
    let s = crate::scenario_file("whole-path").compiled();
    let list = refusals(
        &s,
        json!({"nodes": whole_path_nodes(), "edges": [
            {"from": "checkout", "to": "consumer"}, {"from": "consumer", "to": "raw"},
            {"from": "raw", "to": "nightly"}, {"from": "nightly", "to": "revenue"},
            {"from": "nightly", "to": "raw"}
        ]}),
    );
    assert!(
        list.iter()
            .any(|(p, c, _)| p == "$.edges" && *c == DesignErrorCode::Cycle),
        "{list:?}"
    );
}

#[test]
fn a_design_that_leaves_out_a_stage_of_the_scenario_is_refused() {
    let s = crate::scenario_file("whole-path").compiled();
    let nodes: Vec<_> = whole_path_nodes().into_iter().take(3).collect();
    let list = refusals(
        &s,
        json!({"nodes": nodes, "edges": [{"from": "checkout", "to": "consumer"}, {"from": "consumer", "to": "raw"}]}),
    );
    assert!(
        list.iter().any(|(p, c, m)| p == "$.nodes"
            && *c == DesignErrorCode::Incomplete
            && m.contains("no batch job that reads raw_payments")),
        "{list:?}"
    );
}
