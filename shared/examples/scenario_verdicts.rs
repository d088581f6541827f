//! Prints, for every shipped scenario, what each of its designs passes and misses, and how
//! many schedules the check explored: `cargo run -p shared --example scenario_verdicts`.
//! (The diagnostics of broken files: `pipeline-builder scenarios validate PATH…`.)

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the scenarios folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p.to_string_lossy().ends_with(".schema.json")
        })
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a readable scenario file");
        let scenario = match shared::Scenario::from_json(&text) {
            Ok(s) => s,
            Err(e) => {
                println!("{}: {e}", file.display());
                continue;
            }
        };
        println!("== {} ({})", scenario.id, file.display());
        let compiled = match shared::Compiled::new(scenario.clone()) {
            Ok(c) => c,
            Err(errors) => {
                for e in errors {
                    println!("  {}: {}", e.path, e.message);
                }
                continue;
            }
        };
        let designs = scenario
            .starting_design
            .iter()
            .map(|d| ("starting design".to_string(), d))
            .chain(
                scenario
                    .reference_designs
                    .iter()
                    .map(|d| (format!("reference: {}", d.name), &d.design)),
            )
            .chain(scenario.wrong_designs.iter().map(|d| {
                (
                    format!("wrong: {} (misses {})", d.name, d.misses.join(", ")),
                    &d.design,
                )
            }));
        for (name, design) in designs {
            match shared::check_json(&compiled, design) {
                Err(e) => println!("  {name}: {e}"),
                Ok(v) => {
                    println!(
                        "  {name}: {}/{} in {} schedules",
                        v.score, v.max_score, v.schedules_explored
                    );
                    for r in v.requirements.iter().filter(|r| !r.passed) {
                        let c = r
                            .counterexample
                            .as_ref()
                            .expect("a missed requirement has a counterexample");
                        println!(
                            "    misses {}: expected {}, got {} — {}",
                            r.id,
                            c.expected,
                            c.actual,
                            c.failures.join("; ")
                        );
                    }
                }
            }
        }
    }
}
