//! The cost of the verdict's coverage and advisories: the check of every shipped design with
//! them (`shared::check`) and without them (`shared::check::check_graded`), median of runs.
//!
//! `cargo run --release -p shared --example coverage_cost`

use std::time::Instant;

use shared::{Compiled, Limits};

fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(|a, b| a.total_cmp(b));
    times[runs / 2]
}

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("scenarios/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && !n.ends_with(".schema.json"))
        .collect();
    names.sort();
    let (mut total_with, mut total_without) = (0.0, 0.0);
    println!("| design | without (ms) | with (ms) | ratio |");
    println!("|---|---:|---:|---:|");
    for name in names {
        let text = std::fs::read_to_string(dir.join(&name)).expect("a scenario file");
        let s = Compiled::parse(&text).expect("a scenario");
        let file = s.scenario();
        let designs = file
            .reference_designs
            .iter()
            .map(|d| (format!("reference: {}", d.name), &d.design))
            .chain(
                file.wrong_designs
                    .iter()
                    .map(|d| (format!("wrong: {}", d.name), &d.design)),
            );
        for (label, design) in designs {
            let valid = shared::validate_json(&s, design).expect("a valid design");
            let runs = 9;
            let without = median_ms(runs, || {
                std::hint::black_box(shared::check::check_graded(
                    &s,
                    &shared::scenario_hash(file),
                    &valid,
                    Limits::default(),
                ))
                .unwrap();
            });
            let with = median_ms(runs, || {
                std::hint::black_box(shared::check(&s, &valid)).unwrap();
            });
            total_with += with;
            total_without += without;
            println!(
                "| {} {label} | {without:.2} | {with:.2} | {:.1}× |",
                file.id,
                with / without
            );
        }
    }
    println!(
        "| all | {total_without:.2} | {total_with:.2} | {:.1}× |",
        total_with / total_without
    );
}
