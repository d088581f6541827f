//! Runs one scenario's heaviest check in a loop, for a profiler:
//! `cargo run --release -p shared --example profile_check -- dedupe-by-key 200`.

fn main() {
    let mut args = std::env::args().skip(1);
    let id = args.next().unwrap_or_else(|| "dedupe-by-key".into());
    let times: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(200);
    let path = format!("{}/../scenarios/{id}.json", env!("CARGO_MANIFEST_DIR"));
    let s = shared::Compiled::parse(&std::fs::read_to_string(path).expect("scenario file"))
        .expect("scenario parses");
    let file = s.scenario();
    let designs: Vec<_> = file
        .reference_designs
        .iter()
        .map(|d| &d.design)
        .chain(file.wrong_designs.iter().map(|d| &d.design))
        .collect();
    let mut explored = 0;
    for _ in 0..times {
        for d in &designs {
            explored += shared::check_json(&s, d)
                .map(|v| v.schedules_explored)
                .unwrap_or(0);
        }
    }
    println!("{explored} schedules");
}
