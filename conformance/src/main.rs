//! `conformance [--sqlite] [--postgres] [--scenarios DIR]`: replays every schedule of every
//! shipped design on real databases and prints `conformance (DB): N schedules compared, M
//! mismatches`. With neither flag it runs SQLite and, when reachable, PostgreSQL; set
//! `CONFORMANCE_REQUIRE_POSTGRES=1` to fail when PostgreSQL is not reachable.

use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut dir = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios"));
    if let Some(i) = args.iter().position(|a| a == "--scenarios") {
        if let Some(d) = args.get(i + 1) {
            dir = d.into();
        }
    }
    let only_sqlite = args.iter().any(|a| a == "--sqlite");
    let only_postgres = args.iter().any(|a| a == "--postgres");
    let verbose = args.iter().any(|a| a == "--verbose");
    let scenarios = match conformance::load_scenarios(&dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let mut databases = Vec::new();
    if !only_postgres {
        databases.push(conformance::Database::Sqlite(
            std::env::temp_dir().join(format!("pb-conformance-{}.db", std::process::id())),
        ));
    }
    if !only_sqlite {
        let url = conformance::postgres_url();
        if conformance::postgres_reachable(&url).await {
            databases.push(conformance::Database::Postgres(url));
        } else if only_postgres
            || std::env::var("CONFORMANCE_REQUIRE_POSTGRES").is_ok_and(|v| v == "1")
        {
            eprintln!("conformance: PostgreSQL is not reachable at {url}");
            return ExitCode::FAILURE;
        } else {
            eprintln!("!!! conformance: PostgreSQL is NOT reachable at {url}: ONLY SQLite was compared !!!");
        }
    }
    let mut failed = false;
    let mut lines = Vec::new();
    for db in databases {
        let name = db.name();
        let started = std::time::Instant::now();
        match conformance::run(db, &scenarios, &mut |line| {
            if verbose {
                eprintln!("  {name}: {line}");
            }
        })
        .await
        {
            Ok(report) => {
                for m in report.mismatches.iter().take(20) {
                    eprintln!("{m}");
                }
                failed |= !report.mismatches.is_empty();
                for (id, count) in &report.per_scenario {
                    println!("conformance ({name}): {id}: {count} schedules");
                }
                eprintln!("  {name}: {:.1} s", started.elapsed().as_secs_f64());
                lines.push(report.summary(name));
            }
            Err(e) => {
                eprintln!("conformance ({name}): {e}");
                failed = true;
            }
        }
    }
    for line in lines {
        println!("{line}");
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
