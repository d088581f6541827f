//! Properties of the simulator over generated designs: no panic, deterministic verdicts,
//! and JSON round trips.

use crate::Lesson;
use proptest::prelude::*;
use serde_json::json;

use crate::scenario_file;

fn batch_option() -> impl Strategy<Value = serde_json::Value> {
    (
        prop::sample::select(vec!["none", "per_run"]),
        prop::sample::select(vec!["append", "delete_insert", "merge", "insert_ignore"]),
        prop::sample::select(vec!["append", "delete_insert", "merge", "insert_ignore"]),
        any::<bool>(),
    )
        .prop_map(|(tx, w1, w2, positions)| {
            let mut d = crate::batch_design(tx, w1, w2);
            if positions {
                d["nodes"][0]["position"] = json!({"x": 12.5, "y": -3.0});
            }
            d
        })
}

fn stream_option() -> impl Strategy<Value = serde_json::Value> {
    (
        prop::sample::select(vec!["before_write", "after_write", "with_write"]),
        prop::sample::select(vec!["append", "merge", "insert_ignore"]),
        prop::sample::select(vec!["none", "in_memory"]),
        1u32..5,
    )
        .prop_map(|(commit, write, dedupe, window)| {
            let mut d = crate::chapter::stream_design(commit, write);
            d["nodes"][1]["options"]["dedupe"] = json!(dedupe);
            d["nodes"][1]["options"]["dedupe_window"] = json!(window);
            d
        })
}

/// Arbitrary JSON, to throw at the validator.
fn any_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        prop::sample::select(vec![
            "src",
            "job",
            "table",
            "batch_job",
            "stream",
            "orders",
            "append",
            "nodes",
            "edges",
            "kind",
            "id",
            ""
        ])
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "nodes", "edges", "id", "kind", "options", "from", "to", "table", "write",
                    "position", "x"
                ])
                .prop_map(String::from),
                inner,
                0..5
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replaces the `at`-th value (counted depth first, modulo their number) of `design` with
/// `graft`, so that most of a valid design is kept and its check half runs.
fn grafted(
    mut design: serde_json::Value,
    at: usize,
    graft: serde_json::Value,
) -> serde_json::Value {
    fn count(v: &serde_json::Value) -> usize {
        1 + match v {
            serde_json::Value::Array(a) => a.iter().map(count).sum(),
            serde_json::Value::Object(o) => o.values().map(count).sum(),
            _ => 0,
        }
    }
    fn put(v: &mut serde_json::Value, at: &mut usize, graft: &serde_json::Value) -> bool {
        if *at == 0 {
            *v = graft.clone();
            return true;
        }
        *at -= 1;
        match v {
            serde_json::Value::Array(a) => a.iter_mut().any(|c| put(c, at, graft)),
            serde_json::Value::Object(o) => o.values_mut().any(|c| put(c, at, graft)),
            _ => false,
        }
    }
    // The root itself is never replaced: that case is `any_json` alone.
    let mut at = 1 + at % (count(&design) - 1).max(1);
    put(&mut design, &mut at, &graft);
    design
}

/// Arbitrary JSON, valid designs, and valid designs with one part replaced by arbitrary JSON.
fn design_like() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        1 => any_json(),
        1 => batch_option(),
        3 => (batch_option(), any::<usize>(), any_json()).prop_map(|(d, at, j)| grafted(d, at, j)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_valid_batch_design_gets_a_deterministic_verdict(design in batch_option()) {
        let s = scenario_file("safe-retry");
        let a = shared::check_json(&s.compiled(), &design).unwrap();
        let b = shared::check_json(&s.compiled(), &design).unwrap();
        prop_assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
        let back: shared::Verdict = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        prop_assert_eq!(back, a);
    }

    #[test]
    fn any_valid_stream_design_gets_a_deterministic_verdict(design in stream_option()) {
        let s = crate::chapter::offset_commit_scenario();
        let a = shared::check_json(&s.compiled(), &design).unwrap();
        let b = shared::check_json(&s.compiled(), &design).unwrap();
        prop_assert_eq!(&a, &b);
        prop_assert!(a.schedules_explored >= 1);
    }

    #[test]
    fn designs_round_trip_through_json(design in batch_option()) {
        let parsed = shared::design::design_from_json(&design).unwrap();
        let text = serde_json::to_string(&parsed).unwrap();
        let again = shared::design::parse_design(&text).unwrap();
        prop_assert_eq!(parsed, again);
    }

    #[test]
    fn arbitrary_json_never_panics_the_validator_or_the_check(json in design_like()) {
        let s = scenario_file("safe-retry");
        if let Ok(v) = shared::validate_json(&s.compiled(), &json) {
            // A design that validates gets a verdict, and the verdict round-trips through JSON.
            let verdict = shared::check(&s.compiled(), &v);
            if let Ok(verdict) = verdict {
                let text = serde_json::to_string(&verdict).unwrap();
                let back: shared::Verdict = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(back, verdict);
            }
        }
    }
}
