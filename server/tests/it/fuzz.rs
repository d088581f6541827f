//! Property-based fuzzing of everything a client or an author can send: the design parser
//! and validator, the scenario parser and validator, and the HTTP API. Inputs are random
//! JSON, mutations of the shipped designs and scenarios (values replaced, keys removed or
//! added, bytes flipped), deeply nested and oversized bodies, hostile paths, query strings
//! and headers. The properties: nothing panics, nothing answers 5xx, and every refusal is a
//! JSON error with a code and a message (and, from the parsers, a path).
//!
//! `FUZZ_CASES` sets the number of cases of each test (default 64, so `cargo test` stays
//! fast); the long run of docs/reliability.md is
//! `FUZZ_CASES=330000 cargo test --release -p server fuzz -- --nocapture`.

use std::io::Write;
use std::sync::OnceLock;
use std::time::Instant;

use axum::http::{Method, StatusCode};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use serde_json::{json, Map, Value};
use server::Config;
use shared::Scenario;

use crate::common::{scenarios, spawn_app_with, TestApp};

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(ProptestConfig {
        cases: cases.max(1),
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    })
}

fn report(name: &str, inputs: u64, started: Instant) {
    let seconds = started.elapsed().as_secs_f64();
    let _ = writeln!(
        std::io::stderr(),
        "fuzz {name}: {inputs} inputs in {seconds:.1} s ({:.0}/s)",
        inputs as f64 / seconds.max(1e-9)
    );
}

/// Every design the shipped scenarios carry (starting, reference and wrong), with its
/// scenario's index.
fn shipped_designs() -> &'static [(usize, Value)] {
    static DESIGNS: OnceLock<Vec<(usize, Value)>> = OnceLock::new();
    DESIGNS.get_or_init(|| {
        let mut all = Vec::new();
        for (i, s) in scenarios().iter().enumerate() {
            all.extend(s.scenario().starting_design.iter().map(|d| (i, d.clone())));
            all.extend(
                s.scenario()
                    .reference_designs
                    .iter()
                    .map(|d| (i, d.design.clone())),
            );
            all.extend(
                s.scenario()
                    .wrong_designs
                    .iter()
                    .map(|d| (i, d.design.clone())),
            );
        }
        all
    })
}

fn shipped_scenario_texts() -> &'static [String] {
    static TEXTS: OnceLock<Vec<String>> = OnceLock::new();
    TEXTS.get_or_init(|| {
        let (files, problems) = server::catalogue::read_files(&[crate::common::scenarios_dir()]);
        assert!(problems.is_empty(), "{problems:?}");
        files.into_iter().map(|(_, text)| text).collect()
    })
}

/// Words the parsers know, so that random JSON often gets past the first check.
const WORDS: &[&str] = &[
    "nodes",
    "edges",
    "id",
    "kind",
    "options",
    "position",
    "from",
    "to",
    "x",
    "y",
    "table",
    "topic",
    "write",
    "key",
    "source_table",
    "stream",
    "sender",
    "batch_job",
    "stream_consumer",
    "append",
    "delete_insert",
    "merge",
    "insert_ignore",
    "date_filter",
    "logical_date",
    "current_date_minus_1",
    "transaction",
    "per_run",
    "none",
    "loaded_at",
    "now",
    "offset_commit",
    "before_write",
    "after_write",
    "with_write",
    "dedupe",
    "in_memory",
    "dedupe_window",
    "on_timeout",
    "resend",
    "give_up",
    "idempotency_key",
    "per_attempt",
    "per_action",
    "src",
    "job",
    "orders",
    "daily_revenue",
    "source_orders",
    "paid_orders",
    "orders_paid",
    "order_id",
    "order_date",
    "scenario",
    "student",
    "design",
    "safe-retry",
    "bound",
    "failures",
    "requirements",
    "check",
    "expected",
    "",
    "\u{0}",
    "\u{202e}",
    "\u{fffd}",
    "'; DROP TABLE attempts; --",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "%00",
    "$",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(WORDS).prop_map(str::to_string),
        2 => any::<String>(),
        1 => "[a-z_]{1,12}",
        1 => (1usize..5000).prop_map(|n| "x".repeat(n)),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-5i64..70).prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
    ]
}

/// Random JSON, up to 6 levels and 64 values, with object keys the parsers know.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        word().prop_map(Value::String)
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::btree_map(word(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

#[derive(Clone, Debug)]
enum Mutation {
    Replace(u64, Value),
    Remove(u64),
    Insert(u64, String, Value),
    Duplicate(u64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<u64>(), json_value()).prop_map(|(at, v)| Mutation::Replace(at, v)),
        2 => any::<u64>().prop_map(Mutation::Remove),
        2 => (any::<u64>(), word(), json_value()).prop_map(|(at, k, v)| Mutation::Insert(at, k, v)),
        1 => any::<u64>().prop_map(Mutation::Duplicate),
    ]
}

/// Every place in `value`, as a list of steps (object key or array index), in document order.
fn places(value: &Value, here: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(here.clone());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                here.push(Step::Key(k.clone()));
                places(v, here, out);
                here.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                here.push(Step::Index(i));
                places(v, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn at_mut<'a>(value: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |v, step| match step {
        Step::Key(k) => v.get_mut(k.as_str()),
        Step::Index(i) => v.get_mut(*i),
    })
}

fn mutate(mut value: Value, mutations: &[Mutation]) -> Value {
    for m in mutations {
        let mut all = Vec::new();
        places(&value, &mut Vec::new(), &mut all);
        let pick = |at: &u64| all[(*at % all.len() as u64) as usize].clone();
        match m {
            Mutation::Replace(at, v) => {
                if let Some(target) = at_mut(&mut value, &pick(at)) {
                    *target = v.clone();
                }
            }
            Mutation::Remove(at) => {
                let path = pick(at);
                if let Some((last, parent)) = path.split_last() {
                    match (at_mut(&mut value, parent), last) {
                        (Some(Value::Object(map)), Step::Key(k)) => {
                            map.remove(k);
                        }
                        (Some(Value::Array(items)), Step::Index(i)) if *i < items.len() => {
                            items.remove(*i);
                        }
                        _ => {}
                    }
                }
            }
            Mutation::Insert(at, key, v) => match at_mut(&mut value, &pick(at)) {
                Some(Value::Object(map)) => {
                    map.insert(key.clone(), v.clone());
                }
                Some(Value::Array(items)) => items.push(v.clone()),
                _ => {}
            },
            Mutation::Duplicate(at) => {
                let path = pick(at);
                if let Some((_, parent)) = path.split_last() {
                    let copy = at_mut(&mut value, &path).cloned();
                    if let (Some(Value::Array(items)), Some(copy)) =
                        (at_mut(&mut value, parent), copy)
                    {
                        items.push(copy);
                    }
                }
            }
        }
    }
    value
}

/// A design to feed a parser: a mutated shipped design, random JSON, or a deeply nested one.
fn design_input() -> impl Strategy<Value = (usize, Value)> {
    let shipped = shipped_designs().len();
    prop_oneof![
        1 => (0..shipped).prop_map(|i| shipped_designs()[i].clone()),
        6 => (0..shipped, proptest::collection::vec(mutation(), 1..5)).prop_map(|(i, ms)| {
            let (scenario, design) = &shipped_designs()[i];
            (*scenario, mutate(design.clone(), &ms))
        }),
        2 => (0..scenarios().len(), json_value()),
        1 => (0..scenarios().len(), (0..scenarios().len()), 1usize..100).prop_map(|(s, _, depth)| {
            let mut v = json!({"nodes": [], "edges": []});
            for _ in 0..depth {
                v = json!({"nodes": [v]});
            }
            (s, v)
        }),
    ]
}

fn assert_design_errors(errors: &[shared::DesignError], input: &Value) {
    assert!(
        !errors.is_empty(),
        "a refusal names at least one problem: {input}"
    );
    for e in errors {
        assert!(
            e.path.starts_with('$'),
            "every problem has a JSON path: {e:?}"
        );
        assert!(
            !e.message.trim().is_empty() && !e.code.as_str().is_empty(),
            "every problem says what is wrong: {e:?}"
        );
    }
}

#[test]
fn fuzz_the_design_parser_and_validator() {
    let cases = cases();
    let started = Instant::now();
    let all = scenarios();
    runner(cases)
        .run(&design_input(), |(scenario, design)| {
            match shared::design::design_from_json(&design) {
                Ok(_) => {}
                Err(errors) => assert_design_errors(&errors, &design),
            }
            if let Err(errors) = shared::validate_json(&all[scenario], &design) {
                assert_design_errors(&errors, &design);
            }
            Ok(())
        })
        .unwrap();
    report("design parser and validator", u64::from(cases), started);
}

#[test]
fn fuzz_the_check_of_mutated_designs() {
    let cases = (cases() / 10).max(8);
    let started = Instant::now();
    let all = scenarios();
    // Small limits: the property is "no panic, a verdict or a clear error", not speed.
    let limits = shared::Limits {
        max_schedules: 5_000,
        max_steps: 2_000_000,
    };
    runner(cases)
        .run(&design_input(), |(scenario, design)| {
            if let Ok(valid) = shared::validate_json(&all[scenario], &design) {
                match shared::check_with(&all[scenario], &valid, limits) {
                    Ok(verdict) => {
                        assert_eq!(
                            verdict.requirements.len(),
                            all[scenario].scenario().requirements.len()
                        )
                    }
                    Err(shared::CheckError::TooLarge { .. }) => {}
                    Err(e) => panic!("a valid design of a valid scenario gave {e}"),
                }
            }
            Ok(())
        })
        .unwrap();
    report("check of mutated designs", u64::from(cases), started);
}

#[derive(Clone, Debug)]
enum TextEdit {
    Flip(u64, u8),
    Delete(u64, u8),
    Insert(u64, String),
}

/// A scenario file's text: a shipped one with its JSON mutated, or with its bytes edited.
fn scenario_text() -> impl Strategy<Value = String> {
    let n = shipped_scenario_texts().len();
    let edit = prop_oneof![
        (any::<u64>(), any::<u8>()).prop_map(|(a, b)| TextEdit::Flip(a, b)),
        (any::<u64>(), 1u8..40).prop_map(|(a, b)| TextEdit::Delete(a, b)),
        (
            any::<u64>(),
            prop_oneof![
                word(),
                Just("[".repeat(200)),
                Just("{\"a\":".to_string()),
                Just("\\u0000".to_string())
            ]
        )
            .prop_map(|(a, s)| TextEdit::Insert(a, s)),
    ];
    prop_oneof![
        3 => (0..n, proptest::collection::vec(mutation(), 1..4)).prop_map(|(i, ms)| {
            let value: Value = serde_json::from_str(&shipped_scenario_texts()[i]).unwrap();
            serde_json::to_string(&mutate(value, &ms)).unwrap()
        }),
        2 => (0..n, proptest::collection::vec(edit, 1..6)).prop_map(|(i, edits)| {
            let mut bytes = shipped_scenario_texts()[i].clone().into_bytes();
            for e in edits {
                let at = |a: u64, len: usize| (a % (len as u64 + 1)) as usize;
                match e {
                    TextEdit::Flip(a, b) => {
                        if !bytes.is_empty() {
                            let i = (a % bytes.len() as u64) as usize;
                            bytes[i] = b;
                        }
                    }
                    TextEdit::Delete(a, n) => {
                        let i = at(a, bytes.len());
                        let end = (i + n as usize).min(bytes.len());
                        bytes.drain(i..end);
                    }
                    TextEdit::Insert(a, s) => {
                        let i = at(a, bytes.len());
                        bytes.splice(i..i, s.into_bytes());
                    }
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }),
        1 => json_value().prop_map(|v| v.to_string()),
    ]
}

#[test]
fn fuzz_the_scenario_parser() {
    let cases = cases();
    let started = Instant::now();
    runner(cases)
        .run(&scenario_text(), |text| {
            let _ = server::catalogue::nesting_depth(&text);
            if let Ok(scenario) = Scenario::from_json(&text) {
                // What parses serialises back to a text that parses to the same scenario, and
                // the hash is defined.
                let written = serde_json::to_string(&scenario).map_err(|e| {
                    TestCaseError::fail(format!("a parsed scenario does not serialise: {e}"))
                })?;
                let again = Scenario::from_json(&written).map_err(|e| {
                    TestCaseError::fail(format!(
                        "a serialised scenario does not parse again: {e:?}"
                    ))
                })?;
                prop_assert_eq!(
                    serde_json::to_value(&again).ok(),
                    serde_json::to_value(&scenario).ok()
                );
                let _ = shared::scenario_hash(&scenario);
                let _ = server::catalogue::student_view(&scenario);
            }
            Ok(())
        })
        .unwrap();
    report("scenario parser", u64::from(cases), started);
}

#[test]
fn fuzz_the_scenario_validator() {
    let cases = (cases() / 100).max(8);
    let started = Instant::now();
    runner(cases)
        .run(&scenario_text(), |text| {
            // The server's order: the bounded pre-check, then the authors' full validation.
            let problems = server::catalogue::precheck("fuzzed.json", &text);
            let outcome = if problems.is_empty() {
                shared::authoring::validate_scenario_text("fuzzed.json", &text).map(|_| ())
            } else {
                Err(problems)
            };
            if let Err(problems) = outcome {
                assert!(!problems.is_empty());
                for p in problems {
                    assert!(
                        p.path.starts_with('$') && !p.message.trim().is_empty(),
                        "{p:?}"
                    );
                }
            }
            Ok(())
        })
        .unwrap();
    report("scenario validator", u64::from(cases), started);
}

// Scenario files with their numbers at the extremes.

/// A number at an edge: none, one, the format's limits and past them, and far past them.
const EXTREMES: &[i64] = &[
    0,
    1,
    2,
    3,
    1000,
    1001,
    8574,
    1_000_000_000,
    4_294_967_295,
    4_294_967_296,
    -1,
];

/// How many items a resized list gets.
const SIZES: &[usize] = &[0, 1, 2, 7, 12];

/// One structure-aware change to a shipped scenario.
#[derive(Clone, Debug)]
enum Extreme {
    /// A number field (by JSON pointer, when its parent exists) set to an extreme.
    Number(&'static str, i64),
    /// A list resized by repeating its items (ids made unique where they must be).
    Resize(&'static str, usize),
    /// The dedupe window: offered in the palette (as text) and set in every consumer node.
    Window(i64),
    /// Crash offsets set to one extreme.
    Offset(i64),
}

const NUMBER_FIELDS: &[&str] = &[
    "/failures/bound",
    "/order",
    "/job/max_attempts",
    "/failures/job_crash/max_per_run",
    "/failures/job_crash/retry_delay_minutes",
    "/failures/redelivery/after_min",
    "/failures/redelivery/after_max",
    "/requirements/0/check/expected",
    "/requirements/1/check/rows",
];

const LIST_FIELDS: &[&str] = &[
    "/streams/0/messages",
    "/senders/0/messages",
    "/runs",
    "/tables/0/rows",
    "/job/steps",
    "/requirements",
];

fn extreme() -> impl Strategy<Value = Extreme> {
    let number = prop::sample::select(EXTREMES);
    prop_oneof![
        4 => (prop::sample::select(NUMBER_FIELDS), number.clone())
            .prop_map(|(f, n)| Extreme::Number(f, n)),
        3 => (prop::sample::select(LIST_FIELDS), prop::sample::select(SIZES))
            .prop_map(|(f, n)| Extreme::Resize(f, n)),
        1 => number.clone().prop_map(Extreme::Window),
        1 => number.prop_map(Extreme::Offset),
    ]
}

fn apply(scenario: &mut Value, change: &Extreme) {
    match change {
        Extreme::Number(pointer, n) => {
            let (parent, key) = pointer.rsplit_once('/').expect("a pointer has a parent");
            if let Some(Value::Object(map)) = scenario.pointer_mut(parent) {
                map.insert(key.to_string(), json!(n));
            }
        }
        Extreme::Resize(pointer, n) => {
            let Some(Value::Array(items)) = scenario.pointer_mut(pointer) else {
                return;
            };
            if items.is_empty() {
                return;
            }
            let mut resized: Vec<Value> = items.iter().cycle().take(*n).cloned().collect();
            for (i, item) in resized.iter_mut().enumerate().skip(items.len()) {
                if let Some(Value::String(id)) = item.get_mut("id") {
                    id.push_str(&format!("-{i}"));
                }
            }
            *items = resized;
        }
        Extreme::Window(n) => {
            if let Some(Value::Object(palette)) = scenario.pointer_mut("/palette/stream_consumer") {
                palette.insert("dedupe_window".into(), json!([n.to_string()]));
            }
            for list in ["reference_designs", "wrong_designs"] {
                let Some(Value::Array(designs)) = scenario.get_mut(list) else {
                    continue;
                };
                for design in designs {
                    let Some(Value::Array(nodes)) = design.pointer_mut("/design/nodes") else {
                        continue;
                    };
                    for node in nodes.iter_mut().filter(|n| n["kind"] == "stream_consumer") {
                        node["options"]["dedupe"] = "in_memory".into();
                        node["options"]["dedupe_window"] = json!(n);
                    }
                }
            }
        }
        Extreme::Offset(n) => {
            if let Some(Value::Object(crash)) = scenario.pointer_mut("/failures/consumer_crash") {
                crash.insert("offsets".into(), json!([n]));
            }
        }
    }
}

/// Shipped scenarios with their bounds, message counts, runs, windows and other numbers at
/// their extremes: the validator answers each with diagnostics or a scenario, in bounded
/// time, and never panics or overflows its stack.
#[test]
fn fuzz_scenario_numbers_at_their_extremes() {
    // Each case validates a whole scenario, designs simulated: a tenth as many, at least 64.
    let cases = (cases() / 10).max(64);
    let texts = shipped_scenario_texts();
    let started = Instant::now();
    let input = (0..texts.len(), prop::collection::vec(extreme(), 1..4));
    runner(cases)
        .run(&input, |(index, changes)| {
            let mut scenario: Value = serde_json::from_str(&texts[index]).unwrap();
            for change in &changes {
                apply(&mut scenario, change);
            }
            let text = serde_json::to_string_pretty(&scenario).unwrap();
            let one = std::time::Instant::now();
            let problems = server::catalogue::precheck("extreme.json", &text);
            let outcome = if problems.is_empty() {
                shared::authoring::validate_scenario_text("extreme.json", &text).map(|_| ())
            } else {
                Err(problems)
            };
            if let Err(problems) = &outcome {
                prop_assert!(!problems.is_empty());
                for p in problems {
                    prop_assert!(
                        p.path.starts_with('$') && !p.message.trim().is_empty(),
                        "{p:?}"
                    );
                }
            }
            // A bound the format refuses is said at its place, whatever else is wrong.
            let bound = scenario.pointer("/failures/bound").and_then(Value::as_i64);
            if bound.is_some_and(|b| b > i64::from(shared::authoring::MAX_BOUND)) {
                let problems = outcome.as_ref().err().cloned().unwrap_or_default();
                prop_assert!(
                    problems.iter().any(|p| p.path == "$.failures.bound"),
                    "{changes:?}: {problems:?}"
                );
            }
            prop_assert!(
                one.elapsed() < std::time::Duration::from_secs(20),
                "{changes:?} took {:?}",
                one.elapsed()
            );
            Ok(())
        })
        .unwrap();
    report(
        "scenario numbers at their extremes",
        u64::from(cases),
        started,
    );
}

// The HTTP API.

#[derive(Clone, Debug)]
struct FuzzRequest {
    method: Method,
    uri: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Option<Vec<u8>>,
}

/// A path segment: a known id or random text, percent-encoded as a client would send it.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(vec!["safe-retry", "exactly-once", "nope", "", "..", ".", "%", "%00", "%FF%FE", "s-00000000000000000000000000000000"]).prop_map(str::to_string),
        3 => word().prop_map(|w| encode(w.as_bytes())),
        1 => proptest::collection::vec(any::<u8>(), 0..40).prop_map(|b| encode(&b)),
        1 => (1usize..3000).prop_map(|n| "a".repeat(n)),
    ]
}

fn encode(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(b) {
                (*b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn path() -> impl Strategy<Value = String> {
    let templates = prop_oneof![
        4 => proptest::sample::select(vec!["/api/scenarios/safe-retry/check", "/api/scenarios/offset-commit/check", "/api/submissions", "/api/grade", "/api/drafts/safe-retry", "/api/session"]),
        3 => proptest::sample::select(vec![
            "/api/scenarios", "/api/scenarios/{}", "/api/scenarios/{}/check", "/api/submissions", "/api/submissions/{}", "/api/drafts/{}",
            "/api/grade", "/api/session", "/healthz", "/readyz", "/metrics", "/api/openapi.json", "/{}/{}", "/api/{}", "/api/floor", "/",
        ]),
    ];
    (templates, segment(), segment())
        .prop_map(|(t, a, b)| t.replacen("{}", &a, 1).replacen("{}", &b, 1))
}

fn query() -> impl Strategy<Value = String> {
    let pair = (
        proptest::sample::select(vec![
            "student", "scenario", "limit", "format", "bytes", "x", "",
        ]),
        prop_oneof![
            segment(),
            (-3i64..3000).prop_map(|n| n.to_string()),
            Just("gradescope".to_string())
        ],
    );
    prop_oneof![
        2 => Just(String::new()),
        3 => proptest::collection::vec(pair, 1..4).prop_map(|pairs| format!("?{}", pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&"))),
        1 => proptest::collection::vec(any::<u8>(), 0..30).prop_map(|b| format!("?{}", encode(&b).replace("%3D", "=").replace("%26", "&"))),
    ]
}

fn header() -> impl Strategy<Value = (String, Vec<u8>)> {
    let names = vec![
        "authorization",
        "cookie",
        "idempotency-key",
        "content-type",
        "x-forwarded-proto",
        "accept-encoding",
        "x-request-id",
        "accept",
        "x-anything",
    ];
    let value = prop_oneof![
        word().prop_map(String::into_bytes),
        "[ -~]{0,80}".prop_map(String::into_bytes),
        "[0-9a-f]{32}".prop_map(|h| format!("pb_student=s-{h}").into_bytes()),
        "[ -~]{0,70}".prop_map(|t| format!("Bearer {t}").into_bytes()),
        Just(b"gzip, br, deflate".to_vec()),
        Just(b"application/json; charset=utf-16".to_vec()),
        (1usize..600).prop_map(|n| vec![b'k'; n]),
    ];
    (
        proptest::sample::select(names).prop_map(str::to_string),
        value,
    )
}

fn body() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        2 => Just(None),
        3 => design_input().prop_map(|(_, d)| Some(serde_json::to_vec(&d).unwrap())),
        3 => (design_input(), proptest::option::of(word()), proptest::sample::select(vec!["", "safe-retry", "offset-commit", "nope"])).prop_map(|((own, d), student, scenario)| {
            // Half the time the design's own scenario, so that some submissions are recorded.
            let scenario = if scenario.is_empty() { scenarios()[own].scenario().id.clone() } else { scenario.to_string() };
            let mut b = json!({"scenario": scenario, "design": d});
            if let Some(s) = student {
                b["student"] = s.into();
            }
            Some(serde_json::to_vec(&b).unwrap())
        }),
        1 => proptest::collection::vec(design_input(), 0..4).prop_map(|items| {
            let items: Vec<Value> = items.into_iter().enumerate().map(|(i, (_, d))| json!({"scenario": "safe-retry", "student": format!("fuzz-{i}"), "design": d})).collect();
            Some(serde_json::to_vec(&items).unwrap())
        }),
        1 => json_value().prop_map(|d| Some(serde_json::to_vec(&json!({"design": d, "display_name": d})).unwrap())),
        1 => proptest::collection::vec(any::<u8>(), 0..512).prop_map(Some),
        1 => (1usize..20_000).prop_map(|n| Some(format!("{}{}", "[".repeat(n), "]".repeat(n)).into_bytes())),
        1 => (1usize..4).prop_map(|n| Some(vec![b' '; n * 200 * 1024])),
    ]
}

fn request() -> impl Strategy<Value = FuzzRequest> {
    let any_method = proptest::sample::select(vec![
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::HEAD,
    ]);
    // Mostly the method each route takes, so that most requests reach a handler.
    let matching = |p: &str| -> Method {
        if p.ends_with("/check")
            || p.starts_with("/api/grade")
            || p.starts_with("/api/floor")
            || p == "/api/submissions"
        {
            Method::POST
        } else if p.starts_with("/api/drafts") || p == "/api/session" {
            Method::PUT
        } else {
            Method::GET
        }
    };
    let route = prop_oneof![
        3 => path().prop_map(move |p| (matching(&p), p)),
        1 => (any_method, path()),
    ];
    (
        route,
        query(),
        proptest::collection::vec(header(), 0..4),
        body(),
    )
        .prop_map(|((method, path), query, headers, body)| FuzzRequest {
            method,
            uri: format!("{path}{query}"),
            headers,
            body,
        })
}

async fn send(
    app: &TestApp,
    r: &FuzzRequest,
) -> Option<(StatusCode, axum::http::HeaderMap, Vec<u8>)> {
    use tower::ServiceExt;
    let mut builder = axum::http::Request::builder()
        .method(r.method.clone())
        .uri(&r.uri);
    for (name, value) in &r.headers {
        let Ok(value) = axum::http::HeaderValue::from_bytes(value) else {
            continue;
        };
        builder = builder.header(name.as_str(), value);
    }
    // A request a client cannot put on the wire (an invalid URI) is not a test of the server.
    let request = builder
        .body(
            r.body
                .clone()
                .map(axum::body::Body::from)
                .unwrap_or_else(axum::body::Body::empty),
        )
        .ok()?;
    let response = app
        .router
        .clone()
        .oneshot(request)
        .await
        .expect("the router always answers");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("a body");
    Some((status, headers, bytes.to_vec()))
}

fn decompressed(headers: &axum::http::HeaderMap, bytes: Vec<u8>) -> Vec<u8> {
    if headers.get("content-encoding").is_some_and(|v| v == "gzip") {
        let mut out = Vec::new();
        let mut decoder = flate2_read(&bytes);
        let _ = std::io::Read::read_to_end(&mut decoder, &mut out);
        out
    } else {
        bytes
    }
}

/// gzip answers are rare here (only with a fuzzed Accept-Encoding on a large answer); they
/// are decoded with the system's gzip rather than a new dependency.
fn flate2_read(bytes: &[u8]) -> std::io::Cursor<Vec<u8>> {
    let mut child = std::process::Command::new("gzip")
        .arg("-dc")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip runs");
    let mut stdin = child.stdin.take().unwrap();
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().expect("gzip answers");
    let _ = writer.join();
    std::io::Cursor::new(output.stdout)
}

#[test]
fn fuzz_the_http_api() {
    let cases = cases();
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (app, token) = runtime.block_on(async {
        // No rate limit: the fuzzer is one client sending as fast as it can.
        let app = spawn_app_with(Config {
            rate_limit: None,
            floor_route: true,
            ..Config::default()
        })
        .await;
        let token = app.grader_token("fuzz").await;
        (app, token)
    });
    let (cookie, _) = runtime.block_on(app.new_student());
    let statuses = std::cell::RefCell::new(std::collections::BTreeMap::<u16, u64>::new());
    let strategy = (request(), 0u8..4).prop_map(move |(mut r, who)| {
        // A quarter each: as nobody, as a student, as a grader, as whatever the headers say.
        match who {
            1 => r
                .headers
                .push(("cookie".into(), cookie.clone().into_bytes())),
            2 => r.headers.push((
                "authorization".into(),
                format!("Bearer {token}").into_bytes(),
            )),
            _ => {}
        }
        r
    });
    let skipped = std::cell::Cell::new(0u64);
    runner(cases)
        .run(&strategy, |r| {
            let Some((status, headers, bytes)) = runtime.block_on(send(&app, &r)) else {
                skipped.set(skipped.get() + 1);
                return Ok(());
            };
            *statuses.borrow_mut().entry(status.as_u16()).or_default() += 1;
            let what = format!(
                "{} {} {:?}",
                r.method,
                r.uri,
                r.headers.iter().map(|(n, _)| n).collect::<Vec<_>>()
            );
            assert!(
                !status.is_server_error(),
                "{what}: answered {status}: {}",
                String::from_utf8_lossy(&bytes)
            );
            assert!(
                headers.contains_key("content-security-policy")
                    && headers.contains_key("x-content-type-options"),
                "{what}: no security headers"
            );
            if status.is_client_error() && r.method != Method::HEAD {
                let bytes = decompressed(&headers, bytes);
                let error: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                    panic!(
                        "{what}: {status} is not JSON ({e}): {}",
                        String::from_utf8_lossy(&bytes)
                    )
                });
                let code = error["error"]["code"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{what}: {status} has no code: {error}"));
                let message = error["error"]["message"].as_str().unwrap_or_default();
                assert!(
                    !code.is_empty() && !message.trim().is_empty(),
                    "{what}: {error}"
                );
            }
            Ok(())
        })
        .unwrap();
    let skipped = skipped.get();
    report("HTTP API", u64::from(cases) - skipped, started);
    let _ = writeln!(
        std::io::stderr(),
        "fuzz HTTP API: answers by status {:?}; {skipped} requests could not be put on the wire",
        statuses.borrow()
    );
}
