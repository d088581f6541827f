//! The search shares prefixes and merges states; the plain enumeration runs every schedule from
//! the start. Their verdicts must be the same, byte for byte, for every design.

use crate::Lesson;
use proptest::prelude::*;
use serde_json::{json, Value};

fn scenario_files() -> Vec<(String, Value)> {
    conformance::scenario_texts(&conformance::shipped_dir())
        .unwrap()
        .into_iter()
        .map(|(p, text)| {
            (
                p.display().to_string(),
                serde_json::from_str(&text).unwrap(),
            )
        })
        .collect()
}

/// Both verdicts as JSON, or both errors as text.
fn both(scenario: &shared::Scenario, design: &Value, limits: shared::Limits) -> (String, String) {
    let show = |r: Result<shared::Verdict, shared::CheckError>| match r {
        Ok(v) => serde_json::to_string(&v).unwrap(),
        Err(shared::CheckError::TooLarge { .. }) => "too large".to_string(),
        Err(e) => e.to_string(),
    };
    match shared::validate_json(&scenario.compiled(), design) {
        Ok(valid) => (
            show(shared::check_with(&scenario.compiled(), &valid, limits)),
            show(shared::check::check_every_schedule(
                &scenario.compiled(),
                &valid,
                limits,
            )),
        ),
        Err(e) => (format!("{e:?}"), format!("{e:?}")),
    }
}

#[test]
fn every_shipped_design_gets_the_plain_enumerations_verdict() {
    let mut compared = 0;
    for (file, json) in scenario_files() {
        let scenario = shared::Scenario::from_json(&json.to_string()).unwrap();
        let designs = scenario
            .starting_design
            .iter()
            .chain(scenario.reference_designs.iter().map(|d| &d.design))
            .chain(scenario.wrong_designs.iter().map(|d| &d.design));
        for design in designs {
            let (search, plain) = both(&scenario, design, shared::Limits::default());
            assert_eq!(search, plain, "{file}: {design}");
            compared += 1;
        }
    }
    assert!(compared >= 40, "{compared} designs");
}

#[test]
fn merged_states_still_count_every_schedule() {
    // One consumer that writes by key and commits after the write: after a crash the state
    // soon equals the one without it, so the search merges almost every schedule, and must
    // still count each one the plain enumeration runs.
    let messages: Vec<_> = (0..40)
        .map(|i| json!({"order_id": i, "amount": "1.00"}))
        .collect();
    let (scenario, design) = stream_case(
        &messages,
        2,
        false,
        "after_write",
        "insert_ignore",
        "none",
        2,
    );
    let valid = shared::validate_json(&scenario.compiled(), &design).unwrap();
    let search = shared::check(&scenario.compiled(), &valid).unwrap();
    let plain = shared::check::check_every_schedule(
        &scenario.compiled(),
        &valid,
        shared::Limits::default(),
    )
    .unwrap();
    // At least: no crash, one at any of 3 points per message, two at any two of them.
    let points = 3 * 40;
    assert!(search.schedules_explored > 1 + points + points * (points - 1) / 2);
    assert_eq!(search.schedules_explored, plain.schedules_explored);
    assert_eq!(search, plain);
    assert!(search.passed);
}

/// A stream scenario with the given messages, and a design for it.
fn stream_case(
    messages: &[Value],
    bound: u32,
    redelivery: bool,
    commit: &str,
    write: &str,
    dedupe: &str,
    window: u32,
) -> (shared::Scenario, Value) {
    let mut failures = json!({"bound": bound, "consumer_crash": {}});
    if redelivery {
        failures["redelivery"] = json!({"after_min": 1, "after_max": 3});
    }
    let scenario = json!({
        "id": "generated", "order": 1, "title": "generated", "task": "-",
        "tables": [
            {"name": "paid_orders", "role": "sink", "columns": [{"name": "order_id", "type": "integer"}, {"name": "amount", "type": "decimal"}], "keys": [["order_id"]]}
        ],
        "streams": [{"name": "orders_paid", "key_field": "order_id", "fields": [{"name": "order_id", "type": "integer"}, {"name": "amount", "type": "decimal"}], "messages": messages}],
        "failures": failures,
        "palette": {"stream": {}, "stream_consumer": {}, "table": {}},
        "requirements": [
            {"id": "total", "text": "-", "hint": "-", "check": {"kind": "sum", "table": "paid_orders", "column": "amount"}},
            {"id": "complete", "text": "-", "hint": "-", "check": {"kind": "complete", "table": "paid_orders", "column": "order_id", "source": "orders_paid", "source_column": "order_id"}},
            {"id": "unique", "text": "-", "hint": "-", "check": {"kind": "unique", "table": "paid_orders", "columns": ["order_id"]}},
            {"id": "rows", "text": "-", "hint": "-", "check": {"kind": "row_count", "table": "paid_orders"}},
            {"id": "finishes", "text": "-", "hint": "-", "check": {"kind": "finishes"}}
        ],
        "reference_designs": [], "wrong_designs": []
    });
    let scenario =
        shared::Scenario::from_json(&scenario.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let mut sink = json!({"table": "paid_orders", "write": write});
    if write != "append" {
        sink["key"] = json!(["order_id"]);
    }
    let design = json!({
        "nodes": [
            {"id": "stream", "kind": "stream", "options": {"topic": "orders_paid"}},
            {"id": "consumer", "kind": "stream_consumer", "options": {"offset_commit": commit, "dedupe": dedupe, "dedupe_window": window}},
            {"id": "sink", "kind": "table", "options": sink}
        ],
        "edges": [{"from": "stream", "to": "consumer"}, {"from": "consumer", "to": "sink"}]
    });
    (scenario, design)
}

/// A shipped scenario with another bound, and one of its designs with options drawn from
/// its palette.
fn shipped_variant() -> impl Strategy<Value = (shared::Scenario, Value)> {
    let files = scenario_files();
    (0..files.len(), 1u32..=3, any::<u64>(), any::<u64>()).prop_map(
        move |(f, bound, pick, options)| {
            let mut json = files[f].1.clone();
            json["failures"]["bound"] = json!(bound);
            let designs: Vec<Value> = json["reference_designs"]
                .as_array()
                .unwrap()
                .iter()
                .chain(json["wrong_designs"].as_array().unwrap())
                .map(|d| d["design"].clone())
                .collect();
            let mut design = designs[(pick % designs.len() as u64) as usize].clone();
            let mut bits = options;
            for node in design["nodes"].as_array_mut().unwrap() {
                let kind = node["kind"].as_str().unwrap().to_string();
                let Some(palette) = json["palette"][&kind].as_object() else {
                    continue;
                };
                for (option, offered) in palette {
                    let offered = offered.as_array().unwrap();
                    if offered.is_empty() {
                        continue;
                    }
                    let value = &offered[(bits % offered.len() as u64) as usize];
                    bits = bits.rotate_right(7) ^ 0x9e37_79b9;
                    node["options"][option] =
                        match value.as_str().and_then(|s| s.parse::<u64>().ok()) {
                            Some(n) if option == "dedupe_window" => json!(n),
                            _ => value.clone(),
                        };
                }
                if kind == "table" && node["options"]["key"].is_null() {
                    let table = node["options"]["table"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let keys = json["tables"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|t| t["name"] == table.as_str())
                        .map(|t| t["keys"][0].clone());
                    if let Some(key) = keys.filter(|k| k.is_array()) {
                        node["options"]["key"] = key;
                    }
                }
            }
            (
                shared::Scenario::from_json(&json.to_string()).unwrap(),
                design,
            )
        },
    )
}

fn stream_variant() -> impl Strategy<Value = (shared::Scenario, Value)> {
    (
        prop::collection::vec(
            (
                0i64..6,
                prop::sample::select(vec!["1.00", "2.50", "10.00", "10.0"]),
            ),
            1..9,
        ),
        1u32..=3,
        any::<bool>(),
        prop::sample::select(vec!["before_write", "after_write", "with_write"]),
        prop::sample::select(vec!["append", "merge", "insert_ignore"]),
        prop::sample::select(vec!["none", "in_memory"]),
        1u32..4,
    )
        .prop_map(
            |(messages, bound, redelivery, commit, write, dedupe, window)| {
                let messages: Vec<Value> = messages
                    .into_iter()
                    .map(|(id, amount)| json!({"order_id": id, "amount": amount}))
                    .collect();
                stream_case(&messages, bound, redelivery, commit, write, dedupe, window)
            },
        )
}

/// A generated pipeline of several stages: a stream or a sender whose consumer lands payments
/// in a raw table, a nightly job that sums the raw table into revenue, and sometimes a second
/// job that counts the revenue rows; a message may arrive after the nightly run, a rerun may
/// follow, and the failures are drawn from those the stages have.
#[allow(clippy::too_many_arguments)]
fn stages_case(
    amounts: &[&str],
    sender: bool,
    late: bool,
    rerun: bool,
    second_job: bool,
    failures: (bool, bool, bool, u32),
    options: (&str, &str, &str, &str, &str),
) -> (shared::Scenario, Value) {
    let (consumer_crash, job_crash, transport, bound) = failures;
    let (commit, raw_write, revenue_write, transaction, sender_mode) = options;
    let messages: Vec<Value> = amounts
        .iter()
        .enumerate()
        .map(|(i, amount)| json!({"payment_id": 100 + i, "amount": amount, "pay_date": "2026-01-10"}))
        .collect();
    let lates = if late {
        json!([{"message": amounts.len() - 1, "at": "2026-01-11T02:30:00Z"}])
    } else {
        json!([])
    };
    let fields = json!([{"name": "payment_id", "type": "integer"}, {"name": "amount", "type": "decimal"}, {"name": "pay_date", "type": "date"}]);
    let input = json!({"name": "payments", "key_field": "payment_id", "fields": fields, "messages": messages,
                       "start": "2026-01-11T01:59:00Z", "late": lates});
    let mut runs = vec![
        json!({"id": "nightly", "logical_date": "2026-01-10", "start": "2026-01-11T02:00:00Z"}),
    ];
    if rerun {
        runs.push(json!({"id": "again", "logical_date": "2026-01-10", "start": "2026-01-11T03:00:00Z", "kind": "manual"}));
    }
    if second_job {
        runs.push(json!({"id": "count", "logical_date": "2026-01-10", "start": "2026-01-11T02:01:00Z", "job": "counter"}));
    }
    let mut failures = json!({"bound": bound});
    if consumer_crash {
        failures["consumer_crash"] = json!({});
    }
    if job_crash {
        failures["job_crash"] = json!({"max_per_run": 1});
    }
    if transport {
        if sender {
            failures["message_lost"] = json!({});
            failures["ack_lost"] = json!({});
        } else {
            failures["redelivery"] = json!({"after_min": 1, "after_max": 2});
        }
    }
    if !(consumer_crash || job_crash || transport) {
        failures["consumer_crash"] = json!({});
    }
    let mut scenario = json!({
        "id": "stages", "order": 1, "title": "t", "task": "t",
        "tables": [
            {"name": "raw", "role": "sink", "columns": fields, "keys": [["payment_id"]], "partition": "pay_date"},
            {"name": "revenue", "role": "sink", "columns": [{"name": "pay_date", "type": "date"}, {"name": "revenue", "type": "decimal"}], "keys": [["pay_date"]], "partition": "pay_date"},
            {"name": "day_counts", "role": "sink", "columns": [{"name": "pay_date", "type": "date"}, {"name": "days", "type": "integer"}], "keys": [["pay_date"]], "partition": "pay_date"}
        ],
        "job": {"source": "raw", "steps": [{"kind": "sum", "id": "sum", "title": "sum the day", "from": "raw", "target": "revenue", "group_by": "pay_date", "sum": "amount", "into": "revenue"}]},
        "runs": runs,
        "failures": failures,
        "palette": {"stream": {}, "sender": {}, "stream_consumer": {}, "batch_job": {}, "table": {}},
        "requirements": [
            {"id": "total", "text": "-", "hint": "-", "check": {"kind": "sum", "table": "revenue", "column": "revenue"}},
            {"id": "unique", "text": "-", "hint": "-", "check": {"kind": "unique", "table": "raw", "columns": ["payment_id"]}},
            {"id": "complete", "text": "-", "hint": "-", "check": {"kind": "complete", "table": "raw", "column": "payment_id", "source": "payments", "source_column": "payment_id"}},
            {"id": "never-drops", "text": "-", "hint": "-", "check": {"kind": "never_drops", "table": "revenue", "column": "revenue"}},
            {"id": "one-row", "text": "-", "hint": "-", "check": {"kind": "never_seen", "table": "revenue", "rows": 1}},
            {"id": "one-row-once-there", "text": "-", "hint": "-", "check": {"kind": "never_seen", "table": "revenue", "rows": 1, "from_first_row": true}},
            {"id": "finishes", "text": "-", "hint": "-", "check": {"kind": "finishes"}}
        ],
        "reference_designs": [], "wrong_designs": []
    });
    if sender {
        scenario["senders"] = json!([input]);
    } else {
        scenario["streams"] = json!([input]);
    }
    let mut nodes = vec![
        json!({"id": "consumer", "kind": "stream_consumer", "options": {"offset_commit": commit}}),
        json!({"id": "raw", "kind": "table", "options": {"table": "raw", "write": raw_write}}),
        json!({"id": "job", "kind": "batch_job", "options": {"date_filter": "logical_date", "transaction": transaction}}),
        json!({"id": "revenue", "kind": "table", "options": {"table": "revenue", "write": revenue_write}}),
    ];
    let mut edges = vec![
        json!({"from": "in", "to": "consumer"}),
        json!({"from": "consumer", "to": "raw"}),
        json!({"from": "raw", "to": "job"}),
        json!({"from": "job", "to": "revenue"}),
    ];
    nodes.push(if sender {
        let (on_timeout, key) = sender_mode.split_once('/').unwrap();
        json!({"id": "in", "kind": "sender", "options": {"on_timeout": on_timeout, "idempotency_key": key}})
    } else {
        json!({"id": "in", "kind": "stream", "options": {"topic": "payments"}})
    });
    if second_job {
        scenario["jobs"] = json!([{"id": "counter", "title": "the counting job", "source": "revenue", "steps": [
            {"kind": "count", "id": "count", "title": "count the day's revenue rows", "from": "revenue", "target": "day_counts", "group_by": "pay_date", "into": "days"}]}]);
        nodes.push(json!({"id": "counter", "kind": "batch_job", "options": {"date_filter": "logical_date"}}));
        nodes.push(json!({"id": "counts", "kind": "table", "options": {"table": "day_counts", "write": "delete_insert"}}));
        edges.push(json!({"from": "revenue", "to": "counter"}));
        edges.push(json!({"from": "counter", "to": "counts"}));
    }
    (
        serde_json::from_value(scenario).unwrap(),
        json!({"nodes": nodes, "edges": edges}),
    )
}

fn stages_variant() -> impl Strategy<Value = (shared::Scenario, Value)> {
    (
        prop::collection::vec(prop::sample::select(vec!["1.00", "2.50", "10.00"]), 1..4),
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
        (any::<bool>(), any::<bool>(), any::<bool>(), 1u32..=2),
        (
            prop::sample::select(vec!["before_write", "after_write", "with_write"]),
            prop::sample::select(vec!["append", "merge", "insert_ignore"]),
            prop::sample::select(vec!["append", "delete_insert", "merge", "insert_ignore"]),
            prop::sample::select(vec!["none", "per_run"]),
            prop::sample::select(vec![
                "give_up/none",
                "resend/none",
                "resend/per_action",
                "resend/per_attempt",
            ]),
        ),
    )
        .prop_map(
            |(amounts, (sender, late, rerun, second_job), failures, options)| {
                // A sender's consumer acks before or after its write; it has no offset to save.
                let mut options = options;
                if sender && options.0 == "with_write" {
                    options.0 = "after_write";
                }
                stages_case(&amounts, sender, late, rerun, second_job, failures, options)
            },
        )
}

/// `SEARCH_CASES` sets the number of generated cases (96 by default).
fn cases() -> u32 {
    std::env::var("SEARCH_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(96)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn a_shipped_scenario_at_any_bound_gets_the_plain_enumerations_verdict((scenario, design) in shipped_variant()) {
        let limits = shared::Limits { max_schedules: 200_000, max_steps: 50_000_000 };
        let (search, plain) = both(&scenario, &design, limits);
        prop_assert_eq!(search, plain);
    }

    #[test]
    fn a_generated_pipeline_of_several_stages_gets_the_plain_enumerations_verdict((scenario, design) in stages_variant()) {
        let limits = shared::Limits { max_schedules: 200_000, max_steps: 50_000_000 };
        let (search, plain) = both(&scenario, &design, limits);
        prop_assert!(!search.starts_with('['), "the generated design is valid: {search}");
        prop_assert_eq!(search, plain);
    }

    #[test]
    fn a_generated_stream_gets_the_plain_enumerations_verdict((scenario, design) in stream_variant()) {
        let limits = shared::Limits { max_schedules: 200_000, max_steps: 50_000_000 };
        let (search, plain) = both(&scenario, &design, limits);
        prop_assert_eq!(search, plain);
    }
}

/// A bound far deeper than a thread's stack could follow: the search and the plain
/// enumeration both descend one level per failure on their own stacks, and stop at their
/// limits with an answer, never with a stack overflow.
#[test]
fn a_huge_bound_ends_at_a_limit_not_in_a_stack_overflow() {
    for (file, mut json) in scenario_files() {
        // A consumer that crashes can crash again on every offset it reads again, so its
        // schedules never run out; late copies alone do (each message has at most one).
        if json["streams"].as_array().is_none_or(Vec::is_empty)
            || json["failures"]["consumer_crash"].is_null()
        {
            continue;
        }
        json["failures"]["bound"] = 1_000_000.into();
        let scenario = shared::Scenario::from_json(&json.to_string()).unwrap();
        let design = &scenario.reference_designs[0].design;
        let valid = shared::validate_json(&scenario.compiled(), design).unwrap();
        let limits = shared::Limits {
            max_schedules: 30_000,
            max_steps: 5_000_000,
        };
        for result in [
            shared::check_with(&scenario.compiled(), &valid, limits),
            shared::check::check_every_schedule(&scenario.compiled(), &valid, limits),
        ] {
            assert!(
                matches!(result, Err(shared::CheckError::TooLarge { .. })),
                "{file}: {result:?}"
            );
        }
    }
}

/// A late copy after more messages than the stream has is never offered, so a huge after_max
/// gets the verdict of the stream's length, at once and without a huge allocation.
#[test]
fn a_huge_after_max_is_the_streams_length() {
    let (_, json) = scenario_files()
        .into_iter()
        .find(|(file, _)| file.ends_with("dedupe-by-key.json"))
        .expect("dedupe-by-key ships");
    let with = |after_max: u32| {
        let mut json = json.clone();
        json["failures"]["redelivery"]["after_max"] = after_max.into();
        let scenario = shared::Scenario::from_json(&json.to_string()).unwrap();
        let design = scenario.reference_designs[0].design.clone();
        serde_json::to_value(shared::check_json(&scenario.compiled(), &design).unwrap()).unwrap()
    };
    let mut huge = with(u32::MAX);
    let mut length = with(6);
    for v in [&mut huge, &mut length] {
        v["scenario_hash"] = Value::Null;
    }
    assert_eq!(huge, length);
}
