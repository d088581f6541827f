//! The sender, the in-memory dedupe window, and exhaustiveness: exact schedule counts.

use crate::Lesson;
use serde_json::json;

use crate::{requirement, scenario, verdict};

fn sender_scenario(bound: u32) -> shared::Scenario {
    scenario(json!({
        "id": "sender-test", "order": 1, "title": "t", "task": "t",
        "tables": [{"name": "charges", "role": "sink", "columns": [{"name": "idempotency_key", "type": "text"}, {"name": "order_id", "type": "integer"}, {"name": "amount", "type": "decimal"}], "keys": [["idempotency_key"], ["order_id"]]}],
        "senders": [{"name": "shop", "key_field": "order_id", "fields": [{"name": "order_id", "type": "integer"}, {"name": "amount", "type": "decimal"}],
                     "messages": [{"order_id": 101, "amount": "40.00"}, {"order_id": 102, "amount": "25.00"}, {"order_id": 103, "amount": "15.50"}]}],
        "failures": {"bound": bound, "message_lost": {}, "ack_lost": {}},
        "palette": {"sender": {}, "stream_consumer": {}, "table": {}},
        "requirements": [
            {"id": "total", "text": "-", "hint": "-", "check": {"kind": "sum", "table": "charges", "column": "amount", "expected": "80.50"}},
            {"id": "complete", "text": "-", "hint": "-", "check": {"kind": "complete", "table": "charges", "column": "order_id", "source": "shop", "source_column": "order_id"}},
            {"id": "three", "text": "-", "hint": "-", "check": {"kind": "row_count", "table": "charges", "expected": 3}}
        ],
        "reference_designs": [], "wrong_designs": []
    }))
}

fn sender_design(
    on_timeout: &str,
    idempotency_key: &str,
    write: &str,
    key: &str,
) -> serde_json::Value {
    json!({
        "nodes": [
            {"id": "shop", "kind": "sender", "options": {"on_timeout": on_timeout, "idempotency_key": idempotency_key}},
            {"id": "consumer", "kind": "stream_consumer"},
            {"id": "charges", "kind": "table", "options": {"table": "charges", "write": write, "key": [key]}}
        ],
        "edges": [{"from": "shop", "to": "consumer"}, {"from": "consumer", "to": "charges"}]
    })
}

#[test]
fn at_most_once_loses_an_order_and_at_least_once_repeats_one() {
    let s = sender_scenario(1);
    let v = verdict(
        &s,
        sender_design("give_up", "none", "insert_ignore", "order_id"),
    );
    let c = requirement(&v, "complete").counterexample.as_ref().unwrap();
    assert_eq!(
        c.actual, "order_id 101 missing",
        "the earliest lost message is the first one"
    );
    assert!(
        c.failures[0].starts_with("message 0 (order_id 101, amount 40.00) is lost on the way"),
        "{:?}",
        c.failures
    );
    // A lost ack is silence too: giving up then loses nothing, the consumer already wrote it.
    assert!(requirement(&v, "three")
        .counterexample
        .as_ref()
        .unwrap()
        .failures[0]
        .contains("is lost on the way"));

    let v = verdict(&s, sender_design("resend", "none", "append", "order_id"));
    assert!(requirement(&v, "complete").passed);
    let c = requirement(&v, "total").counterexample.as_ref().unwrap();
    assert_eq!(
        c.actual, "120.50",
        "a lost ack makes the resend bill order 101 twice"
    );
    assert!(
        c.failures[0].starts_with("the ack for message 0"),
        "{:?}",
        c.failures
    );

    let v = verdict(
        &s,
        sender_design("resend", "none", "insert_ignore", "order_id"),
    );
    assert!(v.passed, "at-least-once, written by key: {v:#?}");
    // Clean run, then a loss or an ack loss at each of the three messages' first attempts.
    assert_eq!(v.schedules_explored, 7);
}

#[test]
fn an_idempotency_key_made_per_attempt_is_no_key_at_all() {
    let s = sender_scenario(2);
    let per_attempt = verdict(
        &s,
        sender_design("resend", "per_attempt", "insert_ignore", "idempotency_key"),
    );
    let c = requirement(&per_attempt, "three")
        .counterexample
        .as_ref()
        .unwrap();
    assert_eq!(c.actual, "4 rows");
    let keys: Vec<&serde_json::Value> = c.tables["charges"].rows.iter().map(|r| &r[0]).collect();
    assert!(
        keys.contains(&&json!("key-1-1")) && keys.contains(&&json!("key-1-2")),
        "{keys:?}"
    );
    let none = verdict(
        &s,
        sender_design("resend", "none", "insert_ignore", "idempotency_key"),
    );
    assert_eq!(
        requirement(&none, "three")
            .counterexample
            .as_ref()
            .unwrap()
            .actual,
        "4 rows",
        "NULL keys never conflict"
    );
    let per_action = verdict(
        &s,
        sender_design("resend", "per_action", "insert_ignore", "idempotency_key"),
    );
    assert!(per_action.passed, "{per_action:#?}");
}

fn dedupe_scenario(after_max: u32) -> shared::Scenario {
    let messages: Vec<_> = (0..6)
        .map(|i| json!({"order_id": 101 + i, "amount": "10.00"}))
        .collect();
    scenario(json!({
        "id": "dedupe-test", "order": 1, "title": "t", "task": "t",
        "tables": [{"name": "paid_orders", "role": "sink", "columns": [{"name": "order_id", "type": "integer"}, {"name": "amount", "type": "decimal"}], "keys": [["order_id"]]}],
        "streams": [{"name": "orders_paid", "key_field": "order_id", "fields": [{"name": "order_id", "type": "integer"}, {"name": "amount", "type": "decimal"}], "messages": messages}],
        "failures": {"bound": 1, "redelivery": {"after_min": 1, "after_max": after_max}},
        "palette": {"stream": {}, "stream_consumer": {}, "table": {}},
        "requirements": [{"id": "unique", "text": "-", "hint": "-", "check": {"kind": "unique", "table": "paid_orders", "columns": ["order_id"]}}],
        "reference_designs": [], "wrong_designs": []
    }))
}

fn dedupe_design(window: u32, write: &str) -> serde_json::Value {
    json!({
        "nodes": [
            {"id": "stream", "kind": "stream"},
            {"id": "consumer", "kind": "stream_consumer", "options": {"offset_commit": "after_write", "dedupe": "in_memory", "dedupe_window": window}},
            {"id": "sink", "kind": "table", "options": {"table": "paid_orders", "write": write}}
        ],
        "edges": [{"from": "stream", "to": "consumer"}, {"from": "consumer", "to": "sink"}]
    })
}

#[test]
fn a_memory_of_n_keys_misses_a_copy_that_arrives_after_n_others() {
    // A window of 2 holds the last two keys written: a copy after 1 other is remembered.
    let v = verdict(&dedupe_scenario(1), dedupe_design(2, "append"));
    assert!(v.passed, "{v:#?}");
    // After 101, 102 and 103 it holds [102, 103]: a copy of 101 after 2 others gets through.
    let v = verdict(&dedupe_scenario(2), dedupe_design(2, "append"));
    let c = requirement(&v, "unique").counterexample.as_ref().unwrap();
    assert_eq!(c.actual, "order_id 101 appears 2 times");
    assert!(
        c.failures[0].contains("appears again after 2 other messages"),
        "{:?}",
        c.failures
    );
    // A longer memory only moves the limit.
    assert!(verdict(&dedupe_scenario(3), dedupe_design(4, "append")).passed);
    assert!(!verdict(&dedupe_scenario(4), dedupe_design(4, "append")).passed);
    // Writing by key has no such limit.
    assert!(verdict(&dedupe_scenario(4), dedupe_design(2, "insert_ignore")).passed);
}

#[test]
fn every_schedule_up_to_the_bound_is_explored_exactly_once() {
    // Six messages, a copy of message i after k others (1 ≤ k ≤ 4, i + k ≤ 5): 4+4+3+2+1 = 14
    // single redeliveries, and the clean run.
    assert_eq!(
        verdict(&dedupe_scenario(4), dedupe_design(2, "insert_ignore")).schedules_explored,
        15
    );
    // One consumer crash at any of 3 points of any of 3 messages, bound 1: 1 + 9.
    let mut s = crate::chapter::offset_commit_scenario();
    s.failures.consumer_crash = Some(Default::default());
    assert_eq!(
        verdict(
            &s,
            crate::chapter::stream_design("after_write", "insert_ignore")
        )
        .schedules_explored,
        10
    );
    // Bound 2: after a first crash at point p the run meets the rest of the points again
    // (the restart replays from the committed offset), so the count is the sum over p of
    // 1 + (points met after p). Cross-checked by listing the schedules.
    s.failures.bound = 2;
    let valid = shared::validate_json(
        &s.compiled(),
        &crate::chapter::stream_design("after_write", "insert_ignore"),
    )
    .unwrap();
    let mut plans = std::collections::BTreeSet::new();
    let n = shared::check::for_each_schedule(
        &s.compiled(),
        &valid,
        shared::sql::Dialect::Display,
        shared::Limits::default(),
        &mut |sch| {
            assert!(
                plans.insert(sch.faults.clone()),
                "a schedule is explored once: {:?}",
                sch.faults
            );
            assert!(sch.faults.len() <= 2);
        },
    )
    .unwrap();
    assert_eq!(n as usize, plans.len());
    assert_eq!(
        shared::check(&s.compiled(), &valid)
            .unwrap()
            .schedules_explored,
        n
    );
    assert_eq!(
        plans.iter().filter(|p| p.len() == 1).count(),
        9,
        "every single crash point"
    );
}
