//! `cargo bench -p shared`: the time of a full exhaustive check for each shipped scenario (its
//! design with the most schedules), and how the cost grows with the length of a stream.
//!
//! Before divan's table, a summary prints schedules explored and time per schedule-message.

use std::time::Instant;

use serde_json::json;
use shared::Scenario;

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

fn load(id: &str) -> Option<Scenario> {
    let path = format!("{}/../scenarios/{id}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).ok()?;
    Scenario::from_json(&text).ok()
}

/// The scenario's design (reference or wrong) whose check explores the most schedules.
fn heaviest(s: &Scenario) -> (String, serde_json::Value, u64) {
    let designs = s.reference_designs.iter().map(|d| (d.name.clone(), d.design.clone())).chain(s.wrong_designs.iter().map(|d| (d.name.clone(), d.design.clone())));
    designs
        .filter_map(|(name, d)| shared::check_json(s, &d).ok().map(|v| (name, d, v.schedules_explored)))
        .max_by_key(|x| x.2)
        .expect("a scenario has designs")
}

/// One stream consumer over `n` messages, with one crash at any point of its loop.
fn stream_scenario(n: usize, crashes: u32) -> (Scenario, serde_json::Value) {
    let messages: Vec<_> = (0..n).map(|i| json!({"order_id": 1000 + i, "amount": format!("{}.25", i % 90 + 1)})).collect();
    let scenario = serde_json::from_value(json!({
        "id": format!("stream-{n}"), "order": 1, "title": "scaling", "task": "-",
        "tables": [{"name": "paid_orders", "role": "sink", "columns": [{"name": "order_id", "type": "integer"}, {"name": "amount", "type": "decimal"}], "keys": [["order_id"]]}],
        "streams": [{"name": "orders_paid", "key_field": "order_id", "fields": [{"name": "order_id", "type": "integer"}, {"name": "amount", "type": "decimal"}], "messages": messages}],
        "failures": {"bound": crashes, "consumer_crash": {}},
        "palette": {"stream": {}, "stream_consumer": {}, "table": {}},
        "requirements": [
            {"id": "total", "text": "-", "hint": "-", "check": {"kind": "sum", "table": "paid_orders", "column": "amount"}},
            {"id": "complete", "text": "-", "hint": "-", "check": {"kind": "complete", "table": "paid_orders", "column": "order_id", "source": "orders_paid", "source_column": "order_id"}},
            {"id": "unique", "text": "-", "hint": "-", "check": {"kind": "unique", "table": "paid_orders", "columns": ["order_id"]}}
        ],
        "reference_designs": [], "wrong_designs": []
    }))
    .expect("the scaling scenario parses");
    let design = json!({
        "nodes": [
            {"id": "stream", "kind": "stream", "options": {"topic": "orders_paid"}},
            {"id": "consumer", "kind": "stream_consumer", "options": {"offset_commit": "after_write"}},
            {"id": "sink", "kind": "table", "options": {"table": "paid_orders", "write": "insert_ignore"}}
        ],
        "edges": [{"from": "stream", "to": "consumer"}, {"from": "consumer", "to": "sink"}]
    });
    (scenario, design)
}

fn median_ms(mut f: impl FnMut(), runs: usize) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(|a, b| a.total_cmp(b));
    times[times.len() / 2]
}

fn summary() {
    println!("{:<18} {:<48} {:>10} {:>12}", "scenario", "heaviest design", "schedules", "median ms");
    for id in SCENARIOS {
        let Some(s) = load(id) else {
            println!("{id:<18} (no scenario file)");
            continue;
        };
        let (name, design, schedules) = heaviest(&s);
        let ms = median_ms(|| drop(shared::check_json(&s, &design)), 21);
        println!("{id:<18} {name:<48} {schedules:>10} {ms:>12.3}");
    }
    println!();
    println!("{:<26} {:>10} {:>12} {:>24}", "stream consumer", "schedules", "median ms", "ns per schedule-message");
    for (n, crashes) in [(10, 1), (100, 1), (1000, 1), (10_000, 1), (10, 2), (100, 2), (1000, 2)] {
        let (s, d) = stream_scenario(n, crashes);
        let v = shared::check_json(&s, &d).expect("the scaling design checks");
        let runs = if n >= 1000 { 5 } else { 21 };
        let ms = median_ms(|| drop(shared::check_json(&s, &d)), runs);
        let per = ms * 1e6 / (v.schedules_explored as f64 * n as f64);
        println!("{:<26} {:>10} {:>12.3} {:>24.1}", format!("{n} messages, {crashes} crash(es)"), v.schedules_explored, ms, per);
    }
    println!();
}

fn main() {
    summary();
    divan::main();
}

#[divan::bench(args = SCENARIOS)]
fn scenario_check(bencher: divan::Bencher, id: &str) {
    let Some(s) = load(id) else { return };
    let (_, design, _) = heaviest(&s);
    bencher.bench_local(|| shared::check_json(&s, &design));
}

#[divan::bench(args = [10, 100, 1000, 10_000], sample_count = 5)]
fn stream_one_crash(bencher: divan::Bencher, n: usize) {
    let (s, d) = stream_scenario(n, 1);
    bencher.bench_local(|| shared::check_json(&s, &d));
}
