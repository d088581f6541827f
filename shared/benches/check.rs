//! `cargo bench -p shared`: the time of a full exhaustive check for each shipped scenario (its
//! design with the most schedules). Before divan's table, a summary prints schedules explored
//! and the median. How the cost grows with the length of a stream, and every other figure,
//! is in `cargo xtask bench` (`bench/`).

use std::time::Instant;

use shared::Compiled;

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

fn load(id: &str) -> Option<Compiled> {
    let path = format!("{}/../scenarios/{id}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).ok()?;
    Compiled::parse(&text).ok()
}

/// The scenario's design (reference or wrong) whose check explores the most schedules.
fn heaviest(s: &Compiled) -> (String, serde_json::Value, u64) {
    let file = s.scenario();
    let designs = file
        .reference_designs
        .iter()
        .map(|d| (d.name.clone(), d.design.clone()))
        .chain(
            file.wrong_designs
                .iter()
                .map(|d| (d.name.clone(), d.design.clone())),
        );
    designs
        .filter_map(|(name, d)| {
            shared::check_json(s, &d)
                .ok()
                .map(|v| (name, d, v.schedules_explored))
        })
        .max_by_key(|x| x.2)
        .expect("a scenario has designs")
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
    println!(
        "{:<18} {:<48} {:>10} {:>12}",
        "scenario", "heaviest design", "schedules", "median ms"
    );
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
