//! `pipeline-builder-bench [--quick | --smoke] [--url URL --server-bin PATH] [--wasm-gzip-bytes N]
//! [--max-messages N] [--scenarios DIR]`, normally run by `cargo xtask bench`, which builds the
//! app and the server and starts the server with `--floor-route --rate-limit-per-second 0`.
//!
//! It prints a table per section, then one `name: value` line per figure for scripts:
//!
//! 1. the exhaustive check of every reference and wrong design of every shipped scenario
//!    (schedules, median time) → `engine_check_ms_median_max`;
//! 2. every schedule of the shipped designs executed untraced as a check executes them, the
//!    same schedules run one by one through the simulator (traced, with SQLite's SQL), and
//!    replayed on a SQLite file by the conformance runner → `model_vs_sqlite_speedup` (the
//!    check's execution), `model_traced_vs_sqlite_speedup`;
//! 3. `POST /api/scenarios/{id}/check` against `POST /api/floor?bytes=N` (an answer of the
//!    same size that does no work), 64 connections each, one after the other →
//!    `check_vs_floor_throughput_ratio`, `check_p99_ms`;
//! 4. the app's WASM gzipped → `wasm_gzip_bytes` (the student's module), and
//!    `engine_wasm_gzip_bytes` (the preview's engine, loaded after the page) when it is built;
//! 5. one stream consumer over 10 to 100,000 messages with one crash and 10 to 10,000 with
//!    two → `scaling:`, with the peak heap each check held (`peak_kib`);
//! 6. where one uncached check's time goes, stage by stage, for safe-retry's reference design
//!    and the slowest shipped design → `stages:`;
//! 7. the instructions the machine executes to check every shipped design once (coverage and
//!    advisories included), counted by valgrind's callgrind: a figure that does not move with
//!    the machine's noise → `engine_instructions_total`;
//! 8. submissions under load: a server of its own on a fresh SQLite file, then one on a fresh
//!    PostgreSQL database (created and dropped here), each under `pipeline-builder load` with
//!    the default mix (check=6, submit=2, catalogue=2) at 256 clients →
//!    `submissions_per_second_sqlite`, `submit_p50_ms_sqlite`, `submit_p99_ms_sqlite`,
//!    `submit_errors_sqlite` and the same for `_postgres`;
//! 9. each scenario's verdict table: the time to build it and its bytes, and the check of each
//!    design its palette allows answered from the table (validation, the lookup, the verdict
//!    read back, as the server does it) → `table_build_ms_<scenario>`, `table_bytes_<scenario>`,
//!    `table_check_ms_max_<scenario>`, `table_check_ms_median_max` (the shipped designs, as
//!    `engine_check_ms_median_max` for the search), `table_build_ms_total`;
//!
//! and last `bench_seconds`.

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use bench::{
    line, median_ms, parse_load_kind, parse_load_summary, stream_scenario, time_ms, LoadRun,
    ScalingCase,
};
use shared::sql::Dialect;
use shared::Compiled;

/// The engine's target: a full exhaustive check of any shipped design, coverage and
/// advisories included (median).
const ENGINE_TARGET_MS: f64 = 0.25;
/// The check route against the no-work route, as shipped (verdicts cached) and with the
/// verdict cache off (every check runs the simulator).
const THROUGHPUT_RATIO_TARGET: f64 = 0.70;
const UNCACHED_THROUGHPUT_RATIO_TARGET: f64 = 0.60;
/// The simulator's traced replay of every schedule against SQLite's.
const SIMULATOR_SPEEDUP_TARGET: f64 = 150.0;
/// The largest scaling cases (100,000 messages with one crash, 10,000 with two).
const SCALING_LARGE_TARGET_MS: f64 = 500.0;
/// The student's module, gzipped: the target (the budget `cargo xtask dist` enforces is
/// `WASM_GZIP_BYTES_MAX`).
const WASM_GZIP_BYTES_TARGET: u64 = 300 * 1000;
const CHECK_P99_TARGET_MS: f64 = 20.0;
const CONNECTIONS: usize = 64;
/// The scenario and design whose check the throughput section puts under load.
const LOAD_SCENARIO: &str = "safe-retry";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Full,
    Quick,
    Smoke,
}

/// How much each section does in a mode.
struct Plan {
    /// Runs of each timed check (the median is kept).
    runs: usize,
    /// How many scenarios (in course order) the SQLite replay covers; `None`: all.
    sqlite_scenarios: Option<usize>,
    warm_up_seconds: u64,
    load_seconds: u64,
    /// (crashes, messages)
    scaling: Vec<(u32, usize)>,
    /// The cases left out by --max-messages.
    scaling_left_out: Vec<(u32, usize)>,
    /// The clients and seconds of the submissions' load, on each database.
    submit_clients: usize,
    submit_seconds: u64,
}

impl Plan {
    fn new(mode: Mode, max_messages: Option<usize>) -> Plan {
        let (runs, sqlite_scenarios, warm_up_seconds, load_seconds, scaling) = match mode {
            Mode::Full => (
                21,
                None,
                3,
                20,
                vec![
                    (1, 10),
                    (1, 100),
                    (1, 1000),
                    (1, 10_000),
                    (1, 100_000),
                    (2, 10),
                    (2, 100),
                    (2, 1000),
                    (2, 10_000),
                ],
            ),
            Mode::Quick => (
                5,
                None,
                1,
                5,
                vec![
                    (1, 10),
                    (1, 100),
                    (1, 1000),
                    (1, 10_000),
                    (1, 100_000),
                    (2, 10),
                    (2, 100),
                    (2, 1000),
                    (2, 10_000),
                ],
            ),
            Mode::Smoke => (3, Some(2), 1, 1, vec![(1, 10), (1, 100), (2, 10), (2, 100)]),
        };
        let (scaling, scaling_left_out) = scaling
            .into_iter()
            .partition(|&(_, n)| max_messages.is_none_or(|max| n <= max));
        let (submit_clients, submit_seconds) = match mode {
            Mode::Full => (256, 20),
            Mode::Quick => (256, 5),
            Mode::Smoke => (16, 1),
        };
        Plan {
            runs,
            sqlite_scenarios,
            warm_up_seconds,
            load_seconds,
            scaling,
            scaling_left_out,
            submit_clients,
            submit_seconds,
        }
    }
}

struct Options {
    mode: Mode,
    scenarios: PathBuf,
    url: Option<String>,
    uncached_url: Option<String>,
    server_bin: Option<PathBuf>,
    wasm_gzip_bytes: Option<u64>,
    max_messages: Option<usize>,
    /// Run only the instructions' workload (true) or its baseline (false), for callgrind.
    workload: Option<bool>,
}

const USAGE: &str = "usage: pipeline-builder-bench [--quick | --smoke] [--url URL --server-bin PATH] [--wasm-gzip-bytes N] [--max-messages N] [--scenarios DIR]\n  (cargo xtask bench builds everything, starts the server and runs this)";

fn options() -> Result<Options, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench lives in the workspace")
        .to_path_buf();
    let mut o = Options {
        mode: Mode::Full,
        scenarios: root.join("scenarios"),
        url: None,
        uncached_url: None,
        server_bin: None,
        wasm_gzip_bytes: None,
        workload: None,
        max_messages: std::env::var("BENCH_MAX_MESSAGES")
            .ok()
            .and_then(|v| v.parse().ok()),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == WORKLOAD || arg == BASELINE {
            o.workload = Some(arg == WORKLOAD);
            continue;
        }
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--quick" => o.mode = Mode::Quick,
            "--smoke" => o.mode = Mode::Smoke,
            "--scenarios" => o.scenarios = value("--scenarios")?.into(),
            "--url" => o.url = Some(value("--url")?),
            "--uncached-url" => o.uncached_url = Some(value("--uncached-url")?),
            "--server-bin" => o.server_bin = Some(value("--server-bin")?.into()),
            "--wasm-gzip-bytes" => {
                o.wasm_gzip_bytes = Some(
                    value("--wasm-gzip-bytes")?
                        .parse()
                        .map_err(|_| "--wasm-gzip-bytes takes a number of bytes")?,
                )
            }
            "--max-messages" => {
                o.max_messages = Some(
                    value("--max-messages")?
                        .parse()
                        .map_err(|_| "--max-messages takes a number")?,
                )
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(o)
}

/// Under callgrind: check every shipped design once, then exit.
const WORKLOAD: &str = "--instructions-workload";
/// Under callgrind: load the scenarios and their designs as the workload does, and check none.
const BASELINE: &str = "--instructions-baseline";

/// The largest palette smoke mode solves: the smoke run stays a few seconds in a debug build.
const SMOKE_SOLVE_DESIGNS_MAX: u64 = 40;

/// Each scenario's design count (valid designs; `refused` the drawings the wiring rules refuse,
/// `drawings` both together) and the time to solve it (`scenarios solve`), once; the slowest
/// solve's milliseconds, or `None` when none was solved.
fn solve_times(scenarios: &[shared::Compiled], mode: Mode) -> Option<f64> {
    println!("solve: shared::solve::solve, every design the palette allows checked, then again without each failure kind");
    let mut slowest: Option<f64> = None;
    for s in scenarios {
        let id = &s.scenario().id;
        let designs = shared::solve::design_count(s);
        if matches!(mode, Mode::Smoke) && designs > SMOKE_SOLVE_DESIGNS_MAX {
            println!("  solve: {id} drawings={designs} skipped in smoke mode");
            continue;
        }
        let started = Instant::now();
        match shared::solve::solve(s) {
            Ok(solution) => {
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                println!(
                    "  solve: {id} designs={} refused={} passing={} ms={ms:.1}",
                    solution.designs.len(),
                    solution.refused,
                    solution.passing().len()
                );
                slowest = Some(slowest.map_or(ms, |m: f64| m.max(ms)));
            }
            Err(e) => println!("  solve: {id} drawings={designs} not solved: {e}"),
        }
    }
    slowest
}

fn main() -> ExitCode {
    let started = Instant::now();
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Some(check) = o.workload {
        return instructions_workload(&o.scenarios, check);
    }
    let plan = Plan::new(o.mode, o.max_messages);
    let scenarios = match conformance::load_scenarios(&o.scenarios) {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => {
            eprintln!("no scenario under {}", o.scenarios.display());
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "Pipeline Builder benchmarks ({} mode) on {}",
        format!("{:?}", o.mode).to_lowercase(),
        machine()
    );
    let mut lines: Vec<String> = Vec::new();
    let mut problems: Vec<String> = Vec::new();

    let engine = engine(&scenarios, &plan);
    lines.push(line(
        "engine_check_ms_median_max",
        format!(
            "{:.3}",
            engine.iter().map(|d| d.median_ms).fold(0.0, f64::max)
        ),
    ));

    lines.extend(tables(&scenarios, &plan, &engine));

    if let Some(ms) = solve_times(&scenarios, o.mode) {
        lines.push(line("solve_ms_max", format!("{ms:.1}")));
    }

    match simulator_vs_sqlite(&scenarios, &plan, &engine) {
        Ok((speedup, traced)) => {
            lines.push(line("model_vs_sqlite_speedup", format!("{speedup:.1}")));
            lines.push(line(
                "model_traced_vs_sqlite_speedup",
                format!("{traced:.1}"),
            ));
        }
        Err(e) => problems.push(format!("simulator vs SQLite: {e}")),
    }

    match (&o.url, &o.server_bin) {
        (Some(url), Some(server_bin)) => {
            let servers = [
                (
                    "",
                    "as shipped: a design checked before is answered from the verdict cache",
                    Some(url),
                ),
                (
                    "_uncached",
                    "with --verdict-cache-mb 0: every check runs the simulator",
                    o.uncached_url.as_ref(),
                ),
            ];
            for (suffix, what, url) in servers {
                let Some(url) = url else {
                    problems.push(format!("throughput{suffix}: skipped, it needs --uncached-url (cargo xtask bench passes it)"));
                    continue;
                };
                match throughput(&scenarios, &plan, url, server_bin, what, suffix.is_empty()) {
                    Ok((ratio, p99)) => {
                        lines.push(line(
                            &format!("check{suffix}_vs_floor_throughput_ratio"),
                            format!("{ratio:.2}"),
                        ));
                        lines.push(line(&format!("check{suffix}_p99_ms"), format!("{p99:.2}")));
                    }
                    Err(e) => problems.push(format!("throughput{suffix}: {e}")),
                }
            }
        }
        _ => problems.push(
            "throughput: skipped, it needs --url and --server-bin (cargo xtask bench passes them)"
                .into(),
        ),
    }

    match &o.server_bin {
        Some(server_bin) => match submissions(&plan, server_bin, &o.scenarios) {
            Ok(runs) => {
                for (backend, run) in runs {
                    let acknowledged = run.requests.saturating_sub(run.errors) as f64;
                    lines.push(line(
                        &format!("submissions_per_second_{backend}"),
                        format!("{:.0}", acknowledged / run.seconds.max(f64::EPSILON)),
                    ));
                    lines.push(line(
                        &format!("submit_p50_ms_{backend}"),
                        format!("{:.2}", run.p50_ms),
                    ));
                    lines.push(line(
                        &format!("submit_p99_ms_{backend}"),
                        format!("{:.2}", run.p99_ms),
                    ));
                    lines.push(line(&format!("submit_errors_{backend}"), run.errors));
                }
            }
            Err(e) => problems.push(format!("submissions: {e}")),
        },
        None => problems.push(
            "submissions: skipped, it needs --server-bin (cargo xtask bench passes it)".into(),
        ),
    }

    app_size(o.wasm_gzip_bytes, &mut lines, &mut problems);

    match scaling(&plan) {
        Ok(cases) => lines.extend(cases.iter().map(ScalingCase::line)),
        Err(e) => problems.push(format!("scaling: {e}")),
    }

    lines.extend(stages(&scenarios, &plan, &engine));

    match instructions(&o.scenarios) {
        Ok(n) => lines.push(line("engine_instructions_total", n)),
        Err(e) => lines.push(line(
            "engine_instructions_total",
            format!("unavailable ({e})"),
        )),
    }

    lines.push(line(
        "bench_seconds",
        format!("{:.1}", started.elapsed().as_secs_f64()),
    ));
    println!();
    for l in &lines {
        println!("{l}");
    }
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        for p in &problems {
            eprintln!("bench: {p}");
        }
        ExitCode::FAILURE
    }
}

/// The cores, and the load average when the run starts (other work on the machine skews
/// every figure).
fn machine() -> String {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get().to_string())
        .unwrap_or_else(|_| "?".into());
    match std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
    {
        Some(load) => format!("{cores} cores, load average {load} at the start"),
        None => format!("{cores} cores"),
    }
}

fn section(title: &str) {
    println!("\n== {title}");
}

fn mark(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "MISSED"
    }
}

// ---------------------------------------------------------------------------------------------
// 1. The exhaustive check of every shipped design
// ---------------------------------------------------------------------------------------------

struct DesignCheck {
    scenario: usize,
    kind: &'static str,
    name: String,
    design: serde_json::Value,
    schedules: u64,
    median_ms: f64,
}

/// Every reference and wrong design of a scenario, in the file's order.
fn designs_of(s: &Compiled) -> Vec<(&'static str, String, serde_json::Value)> {
    let reference = s
        .scenario()
        .reference_designs
        .iter()
        .map(|d| ("reference", d.name.clone(), d.design.clone()));
    reference
        .chain(
            s.scenario()
                .wrong_designs
                .iter()
                .map(|d| ("wrong", d.name.clone(), d.design.clone())),
        )
        .collect()
}

fn engine(scenarios: &[Compiled], plan: &Plan) -> Vec<DesignCheck> {
    section(&format!("Exhaustive check of every reference and wrong design (shared::check_json, median of {} runs)", plan.runs));
    println!(
        "{:<17} {:<9} {:<62} {:>6} {:>10} {:>10}",
        "scenario", "kind", "design", "score", "schedules", "median ms"
    );
    let mut out = Vec::new();
    for (index, s) in scenarios.iter().enumerate() {
        for (kind, name, design) in designs_of(s) {
            let (schedules, score) = match shared::check_json(s, &design) {
                Ok(v) => (v.schedules_explored, format!("{}/{}", v.score, v.max_score)),
                Err(e) => (0, format!("error: {e}")),
            };
            let ms = median_ms(plan.runs, || {
                drop(black_box(shared::check_json(s, &design)))
            });
            println!(
                "{:<17} {:<9} {:<62} {:>6} {:>10} {:>10.3}",
                s.scenario().id,
                kind,
                clip(&name, 62),
                score,
                schedules,
                ms
            );
            out.push(DesignCheck {
                scenario: index,
                kind,
                name,
                design,
                schedules,
                median_ms: ms,
            });
        }
    }
    let worst = out
        .iter()
        .max_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
    if let Some(w) = worst {
        println!(
            "slowest: {} / {} ({}): {:.3} ms for {} schedules; target ≤ {ENGINE_TARGET_MS} ms: {}",
            scenarios[w.scenario].scenario().id,
            w.name,
            w.kind,
            w.median_ms,
            w.schedules,
            mark(w.median_ms <= ENGINE_TARGET_MS)
        );
    }
    out
}

// ---------------------------------------------------------------------------------------------
// 9. The verdict tables
// ---------------------------------------------------------------------------------------------

/// A check answered from the scenario's table, as the server answers it: the design
/// validated, looked up, and its verdict read back from the JSON.
fn table_check(
    s: &Compiled,
    table: &shared::verdict_table::VerdictTable,
    design: &serde_json::Value,
) -> Option<(shared::Verdict, String)> {
    let valid = shared::validate_json(s, design).ok()?;
    let json = table.json(s, &valid)?;
    let verdict = serde_json::from_str(&json).ok()?;
    Some((verdict, json))
}

fn tables(scenarios: &[Compiled], plan: &Plan, engine: &[DesignCheck]) -> Vec<String> {
    section(&format!("Verdict tables: each built once (shared::verdict_table), then every design the palette allows checked from it (validate, look up, read the verdict back; median of {} runs per design)", plan.runs));
    println!(
        "{:<17} {:>8} {:>10} {:>12} {:>13} {:>13}",
        "scenario", "designs", "build ms", "bytes", "check ms med", "check ms max"
    );
    let mut lines = Vec::new();
    let mut built = Vec::new();
    let mut total_ms = 0.0;
    for s in scenarios {
        let id = &s.scenario().id;
        let hash = shared::scenario_hash(s.scenario());
        let mut table = None;
        let ms = time_ms(|| {
            table = Some(shared::verdict_table::VerdictTable::build(
                s,
                &hash,
                shared::Limits::default(),
                shared::solve::MAX_DESIGNS,
                &mut |_, _| true,
            ));
        });
        let table = match table.expect("the build ran") {
            Ok(t) => t,
            Err(e) => {
                println!("{id:<17} no table: {e}");
                built.push(None);
                continue;
            }
        };
        total_ms += ms;
        let space =
            shared::solve::designs(s, shared::solve::SolveLimits::default()).unwrap_or_default();
        let mut times = Vec::new();
        for design in &space {
            let json = serde_json::to_value(design).expect("a design serialises");
            if table_check(s, &table, &json).is_none() {
                continue;
            }
            times.push(median_ms(plan.runs, || {
                drop(black_box(table_check(s, &table, &json)))
            }));
        }
        let max = times.iter().copied().fold(0.0, f64::max);
        let median = bench::median(times.clone());
        println!(
            "{:<17} {:>8} {:>10.1} {:>12} {:>13.4} {:>13.4}",
            id,
            table.len(),
            ms,
            table.bytes(),
            median,
            max
        );
        let name = id.replace('-', "_");
        lines.push(line(&format!("table_build_ms_{name}"), format!("{ms:.1}")));
        lines.push(line(&format!("table_bytes_{name}"), table.bytes()));
        lines.push(line(
            &format!("table_check_ms_max_{name}"),
            format!("{max:.4}"),
        ));
        built.push(Some(table));
    }
    // The shipped designs, as the engine's section times them with the search.
    let mut worst: f64 = 0.0;
    for d in engine {
        let s = &scenarios[d.scenario];
        let Some(table) = &built[d.scenario] else {
            continue;
        };
        let Some((verdict, _)) = table_check(s, table, &d.design) else {
            println!("{} / {}: not in the table", s.scenario().id, d.name);
            continue;
        };
        let searched = shared::check_json(s, &d.design).ok();
        if searched.as_ref() != Some(&verdict) {
            println!(
                "{} / {}: the table's verdict is not the search's",
                s.scenario().id,
                d.name
            );
            continue;
        }
        worst = worst.max(median_ms(plan.runs, || {
            drop(black_box(table_check(s, table, &d.design)))
        }));
    }
    println!(
        "shipped designs from their tables: slowest {worst:.4} ms (the search: {:.3} ms); target ≤ {ENGINE_TARGET_MS} ms: {}",
        engine.iter().map(|d| d.median_ms).fold(0.0, f64::max),
        mark(worst <= ENGINE_TARGET_MS)
    );
    lines.push(line("table_check_ms_median_max", format!("{worst:.4}")));
    lines.push(line("table_build_ms_total", format!("{total_ms:.1}")));
    lines
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(width - 1).collect();
        s.push('…');
        s
    }
}

// ---------------------------------------------------------------------------------------------
// 2. The simulator against SQLite, schedule by schedule
// ---------------------------------------------------------------------------------------------

/// Every schedule of the designs, run once each through the simulator (traced, with the SQL
/// in SQLite's dialect) as the conformance runner receives them; the median of `runs`.
fn simulator_ms(
    s: &Compiled,
    design: &serde_json::Value,
    runs: usize,
) -> Result<(u64, f64), String> {
    let mut schedules = 0;
    let mut failed = None;
    let ms = median_ms(runs, || {
        let result = shared::validate_json(s, design)
            .map_err(|e| shared::CheckError::Design(e).to_string())
            .and_then(|valid| {
                shared::check::for_each_schedule(
                    s,
                    &valid,
                    Dialect::Sqlite,
                    shared::Limits::default(),
                    &mut |schedule| drop(black_box(schedule)),
                )
                .map_err(|e| e.to_string())
            });
        match result {
            Ok(n) => schedules = n,
            Err(e) => failed = Some(e),
        }
    });
    match failed {
        Some(e) => Err(e),
        None => Ok((schedules, ms)),
    }
}

/// The graded search of the design (`shared::check::check_graded`): every schedule the check
/// explores, executed untraced as a check executes them; the median of `runs`.
fn search_ms(s: &Compiled, design: &serde_json::Value, runs: usize) -> Result<f64, String> {
    let valid =
        shared::validate_json(s, design).map_err(|e| shared::CheckError::Design(e).to_string())?;
    let mut failed = None;
    let ms = median_ms(runs, || {
        if let Err(e) = shared::check::check_graded(s, "", &valid, shared::Limits::default()) {
            failed = Some(e.to_string());
        }
    });
    failed.map_or(Ok(ms), Err)
}

struct ScenarioReplay {
    id: String,
    designs: usize,
    schedules: u64,
    search_ms: f64,
    simulator_ms: f64,
    sqlite_ms: f64,
    check_ms: f64,
    mismatches: usize,
}

fn simulator_vs_sqlite(
    scenarios: &[Compiled],
    plan: &Plan,
    engine: &[DesignCheck],
) -> Result<(f64, f64), String> {
    let covered = plan
        .sqlite_scenarios
        .unwrap_or(scenarios.len())
        .min(scenarios.len());
    let subset = if covered < scenarios.len() {
        format!(
            ", the first {covered} of {} scenarios only",
            scenarios.len()
        )
    } else {
        String::new()
    };
    section(&format!(
        "Simulator against SQLite: every schedule of every reference and wrong design{subset}"
    ));
    println!("search: shared::check::check_graded, the schedules executed untraced as a check executes them (median of {} runs)", plan.runs);
    println!("traced: shared::check::for_each_schedule, each schedule replayed from the start and traced with SQLite's SQL (median of {} runs)", plan.runs);
    println!("SQLite: the conformance runner replaying those schedules on a SQLite file, tables created per design (1 run)");
    println!(
        "{:<17} {:>7} {:>10} {:>10} {:>10} {:>12} {:>9} {:>9} {:>15} {:>10}",
        "scenario",
        "designs",
        "schedules",
        "search ms",
        "traced ms",
        "SQLite ms",
        "speedup",
        "traced",
        "check ms (sum)",
        "mismatches"
    );
    let path =
        std::env::temp_dir().join(format!("pipeline-builder-bench-{}.db", std::process::id()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let rows = runtime.block_on(async {
        let mut runner = conformance::Runner::open(conformance::Database::Sqlite(path)).await?;
        let mut rows = Vec::new();
        for (index, s) in scenarios.iter().enumerate().take(covered) {
            let mut row = ScenarioReplay { id: s.scenario().id.clone(), designs: 0, schedules: 0, search_ms: 0.0, simulator_ms: 0.0, sqlite_ms: 0.0, check_ms: 0.0, mismatches: 0 };
            for (_, name, design) in designs_of(s) {
                let (schedules, sim) = simulator_ms(s, &design, plan.runs)?;
                row.search_ms += search_ms(s, &design, plan.runs)?;
                let (setup, all) = conformance::schedules(s, &design, Dialect::Sqlite, shared::check::Mutation::None)?;
                if all.len() as u64 != schedules {
                    return Err(format!("{} / {name}: the conformance runner got {} schedules, the simulator {schedules}", s.scenario().id, all.len()));
                }
                let mut mismatches = Vec::new();
                let started = Instant::now();
                runner.create(&setup).await?;
                for schedule in &all {
                    runner.replay(s.scenario(), &name, &setup, schedule, &mut mismatches).await?;
                }
                row.sqlite_ms += started.elapsed().as_secs_f64() * 1000.0;
                row.simulator_ms += sim;
                row.schedules += schedules;
                row.designs += 1;
                row.mismatches += mismatches.len();
                row.check_ms += engine.iter().filter(|d| d.scenario == index && d.name == name && d.design == design).map(|d| d.median_ms).sum::<f64>();
            }
            print_replay_row(&row);
            rows.push(row);
        }
        runner.finish().await?;
        Ok::<_, String>(rows)
    })?;
    let sum = |f: fn(&ScenarioReplay) -> f64| rows.iter().map(f).sum::<f64>();
    let all = ScenarioReplay {
        id: "all".into(),
        designs: rows.iter().map(|r| r.designs).sum(),
        schedules: rows.iter().map(|r| r.schedules).sum(),
        search_ms: sum(|r| r.search_ms),
        simulator_ms: sum(|r| r.simulator_ms),
        sqlite_ms: sum(|r| r.sqlite_ms),
        check_ms: sum(|r| r.check_ms),
        mismatches: rows.iter().map(|r| r.mismatches).sum(),
    };
    print_replay_row(&all);
    let (search, traced) = (
        ratio(all.sqlite_ms, all.search_ms),
        ratio(all.sqlite_ms, all.simulator_ms),
    );
    println!(
        "speedup, SQLite replay / the check's untraced execution of the same schedules: {search:.1}x (target ≥ {SIMULATOR_SPEEDUP_TARGET:.0}x: {})",
        mark(search >= SIMULATOR_SPEEDUP_TARGET)
    );
    println!("speedup, SQLite replay / the simulator's traced replay of the same schedules: {traced:.1}x");
    println!("SQLite replay / full checks of the same designs, coverage and advisories included (sum of medians {:.3} ms): {:.1}x", all.check_ms, ratio(all.sqlite_ms, all.check_ms));
    if all.mismatches > 0 {
        eprintln!("warning: SQLite disagreed with the simulator {} time(s); `cargo xtask conformance` shows where", all.mismatches);
    }
    if all.search_ms <= 0.0 || all.simulator_ms <= 0.0 {
        return Err("the simulator's time is zero".into());
    }
    Ok((search, traced))
}

fn print_replay_row(row: &ScenarioReplay) {
    println!(
        "{:<17} {:>7} {:>10} {:>10.3} {:>10.3} {:>12.1} {:>8.1}x {:>8.1}x {:>15.3} {:>10}",
        row.id,
        row.designs,
        row.schedules,
        row.search_ms,
        row.simulator_ms,
        row.sqlite_ms,
        ratio(row.sqlite_ms, row.search_ms),
        ratio(row.sqlite_ms, row.simulator_ms),
        row.check_ms,
        row.mismatches
    );
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

// ---------------------------------------------------------------------------------------------
// 3. The check route against the floor route
// ---------------------------------------------------------------------------------------------

/// Host and port of `http://HOST:PORT`.
fn authority(url: &str) -> Result<String, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: only http:// URLs"))?;
    Ok(rest.trim_end_matches('/').to_string())
}

/// One POST on a fresh connection, as a browser would send it; the status and the body.
fn post(url: &str, path: &str, body: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let host = authority(url)?;
    let mut stream = TcpStream::connect(&host).map_err(|e| format!("{host}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let head = format!("POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    stream
        .write_all(head.as_bytes())
        .and_then(|_| stream.write_all(body))
        .map_err(|e| format!("POST {path}: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("POST {path}: {e}"))?;
    bench::http_answer(&raw).map_err(|e| format!("POST {path}: {e}"))
}

/// `pipeline-builder load` on one route.
fn load(
    server_bin: &Path,
    url: &str,
    path: &str,
    body: &Path,
    seconds: u64,
) -> Result<LoadRun, String> {
    let out = Command::new(server_bin)
        .args([
            "load",
            "--url",
            url,
            "--clients",
            &CONNECTIONS.to_string(),
            "--seconds",
            &seconds.to_string(),
            "--route",
            "POST",
            path,
            "--body",
        ])
        .arg(body)
        .env("RUST_LOG", "warn")
        .output()
        .map_err(|e| format!("could not start {}: {e}", server_bin.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    parse_load_summary(&stdout)
        .map_err(|e| format!("{path}: {e}\n{}", String::from_utf8_lossy(&out.stderr)))
}

/// Waits until `/readyz` says the server's verdict tables are complete (it answers before
/// then, each check searching), so that the checks measured are answered as a server that
/// has been up a while answers them. Returns the seconds waited.
fn wait_for_tables(url: &str) -> Result<f64, String> {
    let started = Instant::now();
    loop {
        let (status, body) = get(url, "/readyz")?;
        let ready: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        if status == 200 && ready["verdict_tables"]["complete"] == true {
            return Ok(started.elapsed().as_secs_f64());
        }
        if started.elapsed() > Duration::from_secs(300) {
            return Err(format!(
                "the server's verdict tables were not built within 300 s: {}",
                String::from_utf8_lossy(&body)
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `cached`: the server as shipped, with its verdict cache; else with the cache off.
fn throughput(
    scenarios: &[Compiled],
    plan: &Plan,
    url: &str,
    server_bin: &Path,
    what: &str,
    cached: bool,
) -> Result<(f64, f64), String> {
    let s = scenarios
        .iter()
        .find(|s| s.scenario().id == LOAD_SCENARIO)
        .or(scenarios.first())
        .ok_or("no scenario")?;
    let design = s
        .scenario()
        .reference_designs
        .first()
        .ok_or_else(|| format!("{} has no reference design", s.scenario().id))?;
    let body = serde_json::to_vec(&design.design).map_err(|e| e.to_string())?;
    let waited = wait_for_tables(url)?;
    println!("the server's verdict tables were built {waited:.1} s after its first probe");
    let check_path = format!("/api/scenarios/{}/check", s.scenario().id);
    let (status, answer) = post(url, &check_path, &body)?;
    if status != 200 {
        return Err(format!(
            "POST {check_path} answered {status}: {}",
            String::from_utf8_lossy(&answer)
        ));
    }
    let floor_path = format!("/api/floor?bytes={}", answer.len());
    let (status, floor_answer) = post(url, &floor_path, &body)?;
    if status != 200 || floor_answer.len() != answer.len() {
        return Err(format!("POST {floor_path} answered {status} with {} bytes (is the server started with --floor-route?)", floor_answer.len()));
    }
    let scratch =
        std::env::temp_dir().join(format!("pipeline-builder-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let body_file = scratch.join("design.json");
    std::fs::write(&body_file, &body).map_err(|e| format!("{}: {e}", body_file.display()))?;

    section(&format!("Throughput, the server {what}: {CONNECTIONS} connections, {} s per route, one route after the other (warm-up {} s each first)", plan.load_seconds, plan.warm_up_seconds));
    println!("check: {} / reference \"{}\": request {} bytes, answer {} bytes; the floor answers as many bytes and does no work (same request body)", s.scenario().id, design.name, body.len(), answer.len());
    let result = (|| {
        load(
            server_bin,
            url,
            &check_path,
            &body_file,
            plan.warm_up_seconds,
        )?;
        load(
            server_bin,
            url,
            &floor_path,
            &body_file,
            plan.warm_up_seconds,
        )?;
        let check = load(server_bin, url, &check_path, &body_file, plan.load_seconds)?;
        let floor = load(server_bin, url, &floor_path, &body_file, plan.load_seconds)?;
        Ok::<_, String>((check, floor))
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    let (check, floor) = result?;
    println!(
        "{:<36} {:>8} {:>10} {:>8} {:>12} {:>10} {:>10}",
        "route", "seconds", "requests", "errors", "requests/s", "p50 ms", "p99 ms"
    );
    for (route, run) in [
        (format!("POST {check_path}"), &check),
        (format!("POST {floor_path}"), &floor),
    ] {
        println!(
            "{:<36} {:>8.1} {:>10} {:>8} {:>12.0} {:>10.2} {:>10.2}",
            route,
            run.seconds,
            run.requests,
            run.errors,
            run.requests_per_second,
            run.p50_ms,
            run.p99_ms
        );
    }
    let r = ratio(check.requests_per_second, floor.requests_per_second);
    let target = if cached {
        THROUGHPUT_RATIO_TARGET
    } else {
        UNCACHED_THROUGHPUT_RATIO_TARGET
    };
    println!(
        "check / floor requests per second: {r:.2} (target ≥ {target:.2}: {})",
        mark(r >= target)
    );
    println!(
        "check p99: {:.2} ms (target ≤ {CHECK_P99_TARGET_MS:.0} ms: {})",
        check.p99_ms,
        mark(check.p99_ms <= CHECK_P99_TARGET_MS)
    );
    if check.errors > 0 || floor.errors > 0 {
        return Err(format!(
            "requests failed (check {}, floor {}); the figures count them",
            check.errors, floor.errors
        ));
    }
    if floor.requests_per_second <= 0.0 {
        return Err("the floor route answered nothing".into());
    }
    Ok((r, check.p99_ms))
}

// ---------------------------------------------------------------------------------------------
// 8. Submissions under load
// ---------------------------------------------------------------------------------------------

/// The submissions' targets on SQLite, at 256 clients on the bench's machine.
const SUBMISSIONS_PER_SECOND_TARGET: f64 = 2000.0;
const SUBMIT_P99_TARGET_MS: f64 = 100.0;

/// A server process of the bench's own, killed when dropped.
struct ServerProcess(std::process::Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `pipeline-builder serve` on a free port with `database` and no rate limit, and waits
/// until it answers `/healthz`; its log goes to `log`.
fn start_server(
    server_bin: &Path,
    scenarios: &Path,
    database: &str,
    log: &Path,
) -> Result<(ServerProcess, String), String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let log_file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let child = Command::new(server_bin)
        .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
        .arg("--database-url")
        .arg(database)
        .arg("--scenarios")
        .arg(scenarios)
        .args(["--rate-limit-per-second", "0"])
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(log_file)
        .spawn()
        .map_err(|e| format!("could not start {}: {e}", server_bin.display()))?;
    let mut server = ServerProcess(child);
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    loop {
        if let Ok((200, _)) = get(&url, "/healthz") {
            return Ok((server, url));
        }
        if let Ok(Some(exit)) = server.0.try_wait() {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            return Err(format!("the server stopped at start ({exit}):\n{log}"));
        }
        if started.elapsed() > Duration::from_secs(60) {
            return Err("the server did not answer /healthz within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One GET on a fresh connection: the status and the body.
fn get(url: &str, path: &str) -> Result<(u16, Vec<u8>), String> {
    let host = authority(url)?;
    let mut stream = TcpStream::connect(&host).map_err(|e| format!("{host}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    let head = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(head.as_bytes())
        .map_err(|e| format!("GET {path}: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("GET {path}: {e}"))?;
    bench::http_answer(&raw).map_err(|e| format!("GET {path}: {e}"))
}

/// `pipeline-builder load` with the default mix; what its submissions did.
fn submission_load(server_bin: &Path, url: &str, plan: &Plan) -> Result<LoadRun, String> {
    let out = Command::new(server_bin)
        .args(["load", "--url", url])
        .args(["--clients", &plan.submit_clients.to_string()])
        .args(["--seconds", &plan.submit_seconds.to_string()])
        .env("RUST_LOG", "warn")
        .output()
        .map_err(|e| format!("could not start {}: {e}", server_bin.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    parse_load_kind(&stdout, "submit")
        .map_err(|e| format!("{e}\n{}", String::from_utf8_lossy(&out.stderr)))
}

/// A PostgreSQL database of the bench's own on the server at `admin_url`, dropped when done.
struct PgDatabase {
    runtime: tokio::runtime::Runtime,
    admin_url: String,
    name: String,
}

impl PgDatabase {
    fn create(admin_url: &str) -> Result<(PgDatabase, String), String> {
        use sqlx::{Connection, Executor};
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let name = format!("pb_bench_submissions_{}", std::process::id());
        runtime.block_on(async {
            let mut admin = tokio::time::timeout(
                Duration::from_secs(5),
                sqlx::PgConnection::connect(admin_url),
            )
            .await
            .map_err(|_| format!("{admin_url}: timed out"))?
            .map_err(|e| format!("{admin_url}: {e}"))?;
            admin
                .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                .await
                .map_err(|e| e.to_string())?;
            admin
                .execute(format!("CREATE DATABASE {name}").as_str())
                .await
                .map_err(|e| format!("cannot create database {name}: {e}"))?;
            let _ = admin.close().await;
            Ok::<_, String>(())
        })?;
        let base = admin_url
            .rsplit_once('/')
            .map(|(b, _)| b)
            .unwrap_or(admin_url);
        let url = format!("{base}/{name}");
        Ok((
            PgDatabase {
                runtime,
                admin_url: admin_url.to_string(),
                name,
            },
            url,
        ))
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        use sqlx::{Connection, Executor};
        let (admin_url, name) = (&self.admin_url, &self.name);
        self.runtime.block_on(async {
            if let Ok(mut admin) = sqlx::PgConnection::connect(admin_url).await {
                if let Err(e) = admin
                    .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                    .await
                {
                    eprintln!("could not drop the bench's database {name}: {e}");
                }
                let _ = admin.close().await;
            }
        });
    }
}

/// The submissions of the default mix at `plan.submit_clients` clients, on a fresh SQLite
/// file and on a fresh PostgreSQL database, each with a server of its own (as shipped, no rate
/// limit).
fn submissions(
    plan: &Plan,
    server_bin: &Path,
    scenarios: &Path,
) -> Result<Vec<(&'static str, LoadRun)>, String> {
    section(&format!(
        "Submissions under load: the default mix (check=6, submit=2, catalogue=2), {} clients, {} s, a fresh database each; every submission is committed before its answer",
        plan.submit_clients, plan.submit_seconds
    ));
    let scratch = std::env::temp_dir().join(format!(
        "pipeline-builder-bench-submissions-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let result = (|| {
        let mut runs = Vec::new();
        let sqlite = format!("sqlite://{}", scratch.join("submissions.db").display());
        let (server, url) =
            start_server(server_bin, scenarios, &sqlite, &scratch.join("sqlite.log"))?;
        runs.push(("sqlite", submission_load(server_bin, &url, plan)?));
        drop(server);
        let admin_url = conformance::postgres_url();
        let (database, postgres) = PgDatabase::create(&admin_url)
            .map_err(|e| format!("PostgreSQL is needed for the submissions on PostgreSQL: {e}"))?;
        let (server, url) = start_server(
            server_bin,
            scenarios,
            &postgres,
            &scratch.join("postgres.log"),
        )?;
        let run = submission_load(server_bin, &url, plan);
        drop(server);
        drop(database);
        runs.push(("postgres", run?));
        Ok::<_, String>(runs)
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    let runs = result?;
    println!(
        "{:<10} {:>8} {:>12} {:>8} {:>14} {:>10} {:>10}",
        "database", "seconds", "submissions", "errors", "acknowledged/s", "p50 ms", "p99 ms"
    );
    for (backend, run) in &runs {
        let acknowledged = run.requests.saturating_sub(run.errors) as f64 / run.seconds;
        println!(
            "{:<10} {:>8.1} {:>12} {:>8} {:>14.0} {:>10.2} {:>10.2}",
            backend, run.seconds, run.requests, run.errors, acknowledged, run.p50_ms, run.p99_ms
        );
    }
    if let Some((_, sqlite)) = runs.iter().find(|(b, _)| *b == "sqlite") {
        let acknowledged = sqlite.requests.saturating_sub(sqlite.errors) as f64 / sqlite.seconds;
        println!(
            "SQLite at {} clients: {acknowledged:.0} submissions/s (target ≥ {SUBMISSIONS_PER_SECOND_TARGET:.0}: {}), p99 {:.2} ms (target ≤ {SUBMIT_P99_TARGET_MS:.0} ms: {}){}",
            plan.submit_clients,
            mark(acknowledged >= SUBMISSIONS_PER_SECOND_TARGET),
            sqlite.p99_ms,
            mark(sqlite.p99_ms <= SUBMIT_P99_TARGET_MS),
            if plan.submit_clients == 256 { "" } else { " — fewer clients in this mode, so not comparable" }
        );
    }
    Ok(runs)
}

// ---------------------------------------------------------------------------------------------
// 4. The app's size
// ---------------------------------------------------------------------------------------------

/// The budget of the student's module gzipped, as `cargo xtask dist` enforces it.
const WASM_GZIP_BYTES_MAX: u64 = 384 * 1024;

fn wasm(given: Option<u64>) -> Result<u64, String> {
    section("The browser app");
    let bytes = match given {
        Some(b) => b,
        None => {
            let wasm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/dist/web_bg.wasm");
            let out = Command::new("gzip")
                .args(["-9", "-c"])
                .arg(&wasm)
                .output()
                .map_err(|e| format!("gzip: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "no {} (cargo xtask bench builds it and passes --wasm-gzip-bytes)",
                    wasm.display()
                ));
            }
            out.stdout.len() as u64
        }
    };
    println!(
        "web/dist/web_bg.wasm (the student's module) gzipped: {bytes} bytes ({:.1} KiB; budget {} KiB: {}; target ≤ {} KB: {})",
        bytes as f64 / 1024.0,
        WASM_GZIP_BYTES_MAX / 1024,
        mark(bytes <= WASM_GZIP_BYTES_MAX),
        WASM_GZIP_BYTES_TARGET / 1000,
        mark(bytes <= WASM_GZIP_BYTES_TARGET)
    );
    Ok(bytes)
}

/// The app's modules gzipped: the student's (`wasm_gzip_bytes`), and the preview's engine
/// (`engine_wasm_gzip_bytes`) when it is built.
fn app_size(given: Option<u64>, lines: &mut Vec<String>, problems: &mut Vec<String>) {
    match wasm(given) {
        Ok(bytes) => lines.push(line("wasm_gzip_bytes", bytes)),
        Err(e) => problems.push(format!("wasm: {e}")),
    }
    if let Some(bytes) = engine_wasm() {
        lines.push(line("engine_wasm_gzip_bytes", bytes));
    }
}

/// The preview's engine (`web/dist/engine_bg.wasm`) gzipped, when the app is built: the
/// module a scenario page loads after it is interactive, printed beside the student's.
fn engine_wasm() -> Option<u64> {
    let wasm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/dist/engine_bg.wasm");
    let out = Command::new("gzip")
        .args(["-9", "-c"])
        .arg(&wasm)
        .output()
        .ok()
        .filter(|out| out.status.success())?;
    let bytes = out.stdout.len() as u64;
    println!(
        "web/dist/engine_bg.wasm (the preview's engine, loaded after the page is interactive) gzipped: {bytes} bytes ({:.1} KiB)",
        bytes as f64 / 1024.0
    );
    Some(bytes)
}

// ---------------------------------------------------------------------------------------------
// 5. How the check scales with the length of a stream
// ---------------------------------------------------------------------------------------------

/// Below this, a case is timed `plan.runs` times and the median kept; above, at most
/// [`SCALING_LARGE_RUNS`] times, so that one slow run of a shared machine is not the figure.
const SCALING_REPEAT_BELOW_MS: f64 = 200.0;
const SCALING_LARGE_RUNS: usize = 3;

/// One scaling case's check timed: its first run's result and peak heap (bytes above what was
/// held before it), then as many runs as the plan and [`SCALING_REPEAT_BELOW_MS`] say.
/// Answers the result, the runs and their median in ms, and the peak.
fn timed_case<T>(plan: &Plan, mut check: impl FnMut() -> T) -> (T, usize, f64, u64) {
    let mut result = None;
    heap::reset_peak();
    let first = time_ms(|| result = Some(check()));
    let peak_bytes = heap::peak() as u64;
    let runs = if first < SCALING_REPEAT_BELOW_MS {
        plan.runs
    } else {
        plan.runs.min(SCALING_LARGE_RUNS)
    };
    let mut times = vec![first];
    times.extend((1..runs).map(|_| time_ms(|| drop(black_box(check())))));
    let result = result.expect("the check ran");
    (result, times.len(), bench::median(times), peak_bytes)
}

/// The plain enumeration is timed where it replays at most this many schedule-messages.
const PLAIN_MAX_SCHEDULE_MESSAGES: f64 = 5e6;

/// The plain enumeration's check of `valid` timed, in ms; an error when its verdict is not the
/// search's (`verdict`, graded part only).
fn plain_check_ms(
    scenario: &Compiled,
    valid: &shared::design::ValidDesign,
    limits: shared::Limits,
    verdict: &shared::Verdict,
) -> Result<f64, String> {
    let mut plain = None;
    let ms = time_ms(|| plain = Some(shared::check::check_every_schedule(scenario, valid, limits)));
    let mut plain = plain.expect("the check ran").map_err(|e| e.to_string())?;
    plain.coverage = Default::default();
    plain.advisories = Default::default();
    if plain != *verdict {
        return Err("the plain enumeration's verdict differs from the search's".into());
    }
    Ok(ms)
}

fn scaling(plan: &Plan) -> Result<Vec<ScalingCase>, String> {
    section("Scaling: one stream consumer, a full check (no limits) over N messages with one or two crashes");
    println!("search: shared prefixes and merged states (the check); plain: every schedule run from the start (shared::check::check_every_schedule), timed where it replays at most {PLAIN_MAX_SCHEDULE_MESSAGES:e} schedule-messages");
    println!(
        "{:<12} {:>9} {:>11} {:>5} {:>11} {:>11} {:>9} {:>11} {:>10} {:>12} {:>10} {:>10}",
        "crashes",
        "messages",
        "schedules",
        "runs",
        "search ms",
        "ns/sch-msg",
        "steps",
        "merged",
        "ns/step",
        "us/message",
        "plain ms",
        "peak KiB"
    );
    let limits = shared::Limits {
        max_schedules: u64::MAX,
        max_steps: u64::MAX,
    };
    let mut cases = Vec::new();
    for &(crashes, messages) in &plan.scaling {
        let (scenario, design) = stream_scenario(messages, crashes);
        let valid = shared::validate_json(&scenario, &design)
            .map_err(|e| shared::CheckError::Design(e).to_string())?;
        // The scaling measures the search, so the check here is the graded part alone:
        // coverage and advisories (bounded per variant) are measured with the shipped designs.
        let hash = shared::scenario_hash(scenario.scenario());
        let graded = || shared::check::check_graded(&scenario, &hash, &valid, limits);
        let (verdict, runs, ms, peak_bytes) = timed_case(plan, graded);
        let verdict =
            verdict.map_err(|e| format!("{messages} messages, {crashes} crash(es): {e}"))?;
        if !verdict.passed {
            return Err(format!(
                "{messages} messages, {crashes} crash(es): the scaling design missed a requirement"
            ));
        }
        let stats =
            shared::check::search_stats(&scenario, &valid, limits).map_err(|e| e.to_string())?;
        let plain_ms =
            if verdict.schedules_explored as f64 * messages as f64 <= PLAIN_MAX_SCHEDULE_MESSAGES {
                Some(
                    plain_check_ms(&scenario, &valid, limits, &verdict)
                        .map_err(|e| format!("{messages} messages, {crashes} crash(es): {e}"))?,
                )
            } else {
                None
            };
        let case = ScalingCase {
            crashes,
            messages,
            schedules: verdict.schedules_explored,
            runs,
            ms,
            steps: stats.steps_simulated,
            merged: stats.states_merged,
            plain_ms,
            peak_bytes: Some(peak_bytes),
        };
        println!(
            "{:<12} {:>9} {:>11} {:>5} {:>11.3} {:>11.2} {:>9} {:>11} {:>10.1} {:>12.2} {:>10} {:>10.1}",
            case.label(),
            messages,
            case.schedules,
            runs,
            ms,
            case.ns_per_schedule_message(),
            case.steps,
            case.merged,
            case.ns_per_step(),
            case.us_per_message(),
            plain_ms
                .map(|p| format!("{p:.1}"))
                .unwrap_or_else(|| "-".into()),
            peak_bytes as f64 / 1024.0
        );
        cases.push(case);
    }
    for case in cases.iter().filter(|c| {
        (c.crashes, c.messages) == (1, 100_000) || (c.crashes, c.messages) == (2, 10_000)
    }) {
        println!(
            "{} messages, {} crash(es): {:.0} ms, peak heap {:.1} MiB (target ≤ {SCALING_LARGE_TARGET_MS:.0} ms: {})",
            case.messages,
            case.crashes,
            case.ms,
            case.peak_bytes.unwrap_or(0) as f64 / (1024.0 * 1024.0),
            mark(case.ms <= SCALING_LARGE_TARGET_MS)
        );
    }
    for (crashes, messages) in &plan.scaling_left_out {
        println!(
            "{:<12} {messages:>9}   (left out by --max-messages)",
            if *crashes == 1 {
                "one_crash"
            } else {
                "two_crashes"
            }
        );
    }
    Ok(cases)
}

/// The workload whose instructions are counted: every reference and wrong design of every
/// scenario checked once (`check` false: only loaded, for the baseline).
fn instructions_workload(dir: &Path, check: bool) -> ExitCode {
    let Ok(scenarios) = conformance::load_scenarios(dir) else {
        return ExitCode::FAILURE;
    };
    let mut checked = 0usize;
    for s in &scenarios {
        for (_, _, design) in designs_of(s) {
            if check {
                drop(black_box(shared::check_json(s, black_box(&design))));
                checked += 1;
            } else {
                black_box(&design);
            }
        }
    }
    black_box(checked);
    ExitCode::SUCCESS
}

/// The instructions of checking every shipped design once: the workload under callgrind,
/// less the same run that only loads the scenarios.
fn instructions(dir: &Path) -> Result<u64, String> {
    section("Instructions to check every shipped design once (valgrind --tool=callgrind)");
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let count = |mode: &str| -> Result<u64, String> {
        let output = Command::new("valgrind")
            .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
            .arg(&me)
            .arg(mode)
            .arg("--scenarios")
            .arg(dir)
            .output()
            .map_err(|e| {
                format!("valgrind cannot run: {e}; install it with apt-get install valgrind")
            })?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(format!(
                "valgrind failed: {}",
                stderr.lines().last().unwrap_or("")
            ));
        }
        stderr
            .lines()
            .find_map(|l| l.split("Collected :").nth(1))
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| "callgrind printed no count".to_string())
    };
    let all = count(WORKLOAD)?;
    let baseline = count(BASELINE)?;
    let engine = all.saturating_sub(baseline);
    println!("workload {all} instructions, of which loading the scenarios {baseline}: the checks {engine}");
    Ok(engine)
}

/// The heap the benchmark holds, counted around the server's allocator (mimalloc, so that a
/// check here allocates as the server's does): the most held above what was held at the last
/// reset, for the peak memory of a check.
mod heap {
    use peakmem_alloc::{PeakMemAlloc, PeakMemAllocTrait};

    #[global_allocator]
    static ALLOCATOR: PeakMemAlloc<mimalloc::MiMalloc> = PeakMemAlloc::new(mimalloc::MiMalloc);

    /// Starts counting a new peak from what is held now.
    pub fn reset_peak() {
        ALLOCATOR.reset_peak_memory();
    }

    /// The most held above what was held at the last reset, in bytes.
    pub fn peak() -> usize {
        ALLOCATOR.get_peak_memory()
    }
}

/// One uncached check of a design, stage by stage, as the server runs it: the body parsed,
/// the design validated, the search (the model compiled, the clean run, the schedules), the
/// counterexamples traced, coverage and advisories, and the verdict serialised. Each stage's
/// median over the plan's runs, in microseconds; the search and the traces are told apart by
/// timing the search alone.
fn stages(scenarios: &[Compiled], plan: &Plan, engine: &[DesignCheck]) -> Vec<String> {
    section("One uncached check, stage by stage (median µs)");
    let slowest = engine
        .iter()
        .max_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
    let first = scenarios
        .iter()
        .position(|s| s.scenario().id == LOAD_SCENARIO)
        .and_then(|i| {
            engine
                .iter()
                .find(|d| d.scenario == i && d.kind == "reference")
        });
    let mut picked: Vec<&DesignCheck> = first.into_iter().chain(slowest).collect();
    picked.dedup_by(|a, b| a.scenario == b.scenario && a.name == b.name);
    println!(
        "{:<17} {:<40} {:>8} {:>9} {:>9} {:>9} {:>10} {:>10} {:>9}",
        "scenario",
        "design",
        "parse",
        "validate",
        "search",
        "traces",
        "coverage",
        "serialise",
        "total"
    );
    let limits = shared::Limits::default();
    let runs = plan.runs.max(5);
    let mut lines = Vec::new();
    for d in picked {
        let s = &scenarios[d.scenario];
        let hash = shared::scenario_hash(s.scenario());
        let body = d.design.to_string();
        let us = |f: &mut dyn FnMut()| median_ms(runs, f) * 1000.0;
        let parse = us(&mut || drop(black_box(serde_json::from_str::<serde_json::Value>(&body))));
        let Ok(valid) = shared::validate_json(s, &d.design) else {
            continue;
        };
        let validate = us(&mut || drop(black_box(shared::validate_json(s, &d.design))));
        let search = us(&mut || drop(black_box(shared::check::search_stats(s, &valid, limits))));
        let graded = us(&mut || {
            drop(black_box(shared::check::check_graded(
                s, &hash, &valid, limits,
            )))
        });
        let full = us(&mut || {
            drop(black_box(shared::check::check_hashed(
                s, &hash, &valid, limits,
            )))
        });
        let Ok(verdict) = shared::check::check_hashed(s, &hash, &valid, limits) else {
            continue;
        };
        let serialise = us(&mut || drop(black_box(serde_json::to_vec(&verdict))));
        let traces = (graded - search).max(0.0);
        let coverage = (full - graded).max(0.0);
        let total = parse + validate + full + serialise;
        println!(
            "{:<17} {:<40} {:>8.1} {:>9.1} {:>9.1} {:>9.1} {:>10.1} {:>10.1} {:>9.1}",
            s.scenario().id,
            clip(&d.name, 40),
            parse,
            validate,
            search,
            traces,
            coverage,
            serialise,
            total
        );
        lines.push(line(
            "stages",
            format!(
                "{} kind={} parse_us={parse:.1} validate_us={validate:.1} search_us={search:.1} traces_us={traces:.1} coverage_us={coverage:.1} serialise_us={serialise:.1} total_us={total:.1}",
                s.scenario().id, d.kind
            ),
        ));
    }
    lines
}
