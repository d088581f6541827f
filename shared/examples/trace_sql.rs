//! Prints the SQL of a design's counterexample trace, one statement per line group:
//! `cargo run -p shared --example trace_sql -- SCENARIO DESIGN.json`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = format!(
        "{}/../scenarios/{}.json",
        env!("CARGO_MANIFEST_DIR"),
        args[0]
    );
    let s =
        shared::Compiled::parse(&std::fs::read_to_string(path).expect("scenario")).expect("parses");
    let design: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&args[1]).expect("design")).expect("json");
    let v = shared::check_json(&s, &design).expect("checks");
    let valid = shared::validate_json(&s, &design).expect("valid");
    for b in shared::sql::design_sql(&s, &valid) {
        println!("-- {}\n{}", b.title, b.sql);
    }
    for r in &v.requirements {
        if let Some(c) = &r.counterexample {
            println!("-- counterexample of {}", r.id);
            for t in &c.trace {
                if let Some(sql) = &t.sql {
                    println!("{sql}");
                }
            }
            break;
        }
    }
}
