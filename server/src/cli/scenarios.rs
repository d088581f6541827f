//! `pipeline-builder scenarios`: validate, solve and start scenario files.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::args::ScenariosDir;
use crate::{catalogue, config};

#[derive(Subcommand)]
pub enum ScenariosCommand {
    /// Validate scenario files or folders (default: scenarios/); print every problem.
    Validate {
        paths: Vec<PathBuf>,
        /// For every reference and wrong design, print which requirements it passes and
        /// misses, how many schedules were explored and how long its check took; then the
        /// summary of the scenario's solve (`scenarios solve`).
        #[arg(long, short)]
        verbose: bool,
        /// Also fail unless one of the scenarios has this id (the autograder's `setup.sh`
        /// checks the scenario its `run_autograder` grades).
        #[arg(long, value_name = "ID")]
        scenario: Option<String>,
    },
    /// Write a new scenario file, ID.json, that validates, for you to change: a small
    /// template, or a copy of an existing scenario with a new id, order and title.
    New(NewArgs),
    /// Check every design the scenario's palette allows and summarise: which pass (simplest
    /// first), how many miss each requirement, which requirements and failure kinds change
    /// nothing, and the closest designs when none passes (exit 0: a design passes, 1: none
    /// does, 2: bad input or past the limit).
    Solve(SolveArgs),
}

#[derive(Args)]
pub struct SolveArgs {
    /// The scenario's id, for example safe-retry.
    id: String,
    #[command(flatten)]
    scenarios: ScenariosDir,
    /// Print every design with its options and the requirements it misses, as JSON.
    #[arg(long)]
    json: bool,
    /// The most designs the palette may allow.
    #[arg(long, value_name = "N", default_value_t = shared::solve::MAX_DESIGNS)]
    max_designs: u64,
}

#[derive(Args)]
pub struct NewArgs {
    /// The new scenario's id: lowercase letters, digits and dashes, such as late-orders.
    id: String,
    /// Copy this scenario (its id, or the path of its file) instead of the template.
    #[arg(long, value_name = "EXISTING")]
    from: Option<String>,
    #[command(flatten)]
    scenarios: ScenariosDir,
}

/// Runs a `scenarios` command.
pub fn run(command: ScenariosCommand) -> ExitCode {
    match command {
        ScenariosCommand::Validate {
            paths,
            verbose,
            scenario,
        } => validate(paths, verbose, scenario.as_deref()),
        ScenariosCommand::New(args) => new_scenario(args),
        ScenariosCommand::Solve(args) => solve_scenario(args),
    }
}

fn validate(paths: Vec<PathBuf>, verbose: bool, expected: Option<&str>) -> ExitCode {
    let paths = if paths.is_empty() {
        vec![PathBuf::from(config::DEFAULT_SCENARIOS_DIR)]
    } else {
        paths
    };
    let (mut result, mut warnings) = catalogue::validate_paths_with_warnings(&paths);
    let solved = catalogue::solve_paths(&paths);
    let mut solve_problems = Vec::new();
    for found in &solved {
        warnings.extend(found.warnings.iter().cloned());
        solve_problems.extend(found.problems.iter().cloned());
    }
    if !solve_problems.is_empty() {
        let mut problems = result.err().unwrap_or_default();
        problems.append(&mut solve_problems);
        result = Err(problems);
    }
    for w in &warnings {
        println!("{w}");
    }
    match result {
        Ok(scenarios) => {
            if verbose {
                for scenario in &scenarios {
                    print!("{}", design_report(scenario));
                    let id = &scenario.scenario().id;
                    let solution = solved
                        .iter()
                        .filter_map(|f| f.solution.as_ref())
                        .find(|s| &s.scenario == id);
                    if let Some(solution) = solution {
                        println!("  solve:");
                        for line in solution.summary().lines() {
                            println!("    {line}");
                        }
                    }
                }
            }
            let noun = if scenarios.len() == 1 {
                "scenario"
            } else {
                "scenarios"
            };
            println!("{} {noun} valid", scenarios.len());
            match expected {
                Some(id) if !scenarios.iter().any(|s| s.scenario().id == id) => {
                    let ids: Vec<&str> =
                        scenarios.iter().map(|s| s.scenario().id.as_str()).collect();
                    eprintln!(
                        "no scenario has the id \"{id}\"; the ids are {}",
                        ids.join(", ")
                    );
                    ExitCode::FAILURE
                }
                _ => ExitCode::SUCCESS,
            }
        }
        Err(problems) => {
            for p in &problems {
                println!("{p}");
            }
            eprintln!("{} problem(s) found", problems.len());
            ExitCode::FAILURE
        }
    }
}

/// What each reference and wrong design of a scenario passes and misses, with the schedules
/// explored and the time its check took.
fn design_report(compiled: &shared::Compiled) -> String {
    use std::fmt::Write;
    let scenario = compiled.scenario();
    let mut out = format!(
        "{} (order {}, bound {}):\n",
        scenario.id, scenario.order, scenario.failures.bound
    );
    let designs = scenario
        .reference_designs
        .iter()
        .map(|d| ("reference", d.name.as_str(), &d.design, &[][..]))
        .chain(
            scenario
                .wrong_designs
                .iter()
                .map(|d| ("wrong", d.name.as_str(), &d.design, d.misses.as_slice())),
        );
    for (what, name, design, misses) in designs {
        let started = std::time::Instant::now();
        let result = shared::check_json(compiled, design);
        let took = started.elapsed();
        let _ = writeln!(out, "  {what} \"{name}\"");
        match result {
            Ok(verdict) => {
                let (passed, missed): (Vec<_>, Vec<_>) =
                    verdict.requirements.iter().partition(|r| r.passed);
                let ids = |list: &[&shared::verdict::RequirementVerdict]| {
                    if list.is_empty() {
                        "none".to_string()
                    } else {
                        list.iter()
                            .map(|r| r.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                };
                let _ = writeln!(out, "    passes: {}", ids(&passed));
                let _ = write!(out, "    misses: {}", ids(&missed));
                if !misses.is_empty() {
                    let _ = write!(out, " (must miss: {})", misses.join(", "));
                }
                let _ = writeln!(
                    out,
                    "\n    {} schedules explored in {:.1} ms",
                    verdict.schedules_explored,
                    took.as_secs_f64() * 1000.0
                );
            }
            Err(e) => {
                let _ = writeln!(out, "    not checked: {e}");
            }
        }
    }
    out
}

/// `scenarios solve ID`: every design of the palette, checked, summarised or as JSON.
fn solve_scenario(args: SolveArgs) -> ExitCode {
    let scenario = match catalogue::find(&args.scenarios.dir, &args.id) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let limits = shared::solve::SolveLimits {
        max_designs: args.max_designs,
        ..Default::default()
    };
    let mut bar = crate::progress::Bar::new(&format!("solving {}", args.id));
    let started = std::time::Instant::now();
    let result = shared::solve::solve_with(&scenario, limits, &mut |p| bar.show(p.done, p.total));
    bar.clear();
    let solution = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", args.id);
            return ExitCode::from(2);
        }
    };
    if args.json {
        match serde_json::to_string_pretty(&solution.to_json()) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("cannot write the solve: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        println!("{}", solution.summary());
        println!("solved in {:.2} s", started.elapsed().as_secs_f64());
    }
    if solution.passing().is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `scenarios new ID [--from EXISTING]`: writes DIR/ID.json, never over a file.
fn new_scenario(args: NewArgs) -> ExitCode {
    use std::io::Write;
    if !shared::authoring::is_valid_id(&args.id) {
        eprintln!(
            "\"{}\" cannot be a scenario id: use lowercase letters, digits and dashes, such as late-orders (it is used in URLs)",
            args.id
        );
        return ExitCode::from(2);
    }
    if !args.scenarios.dir.is_dir() {
        eprintln!(
            "{}: there is no such folder; give the scenarios folder with --scenarios",
            args.scenarios.dir.display()
        );
        return ExitCode::from(2);
    }
    let target = args.scenarios.dir.join(format!("{}.json", args.id));
    if target.exists() {
        eprintln!(
            "{} exists already; it is left as it is. Choose another id, or remove the file first",
            target.display()
        );
        return ExitCode::FAILURE;
    }
    let (files, _) = catalogue::read_files(std::slice::from_ref(&args.scenarios.dir));
    let raw: Vec<(String, serde_json::Value)> = files
        .iter()
        .filter_map(|(file, text)| Some((file.clone(), serde_json::from_str(text).ok()?)))
        .collect();
    if let Some((file, _)) = raw.iter().find(|(_, json)| json["id"] == args.id.as_str()) {
        eprintln!(
            "{file} already has the id \"{}\"; choose another id",
            args.id
        );
        return ExitCode::FAILURE;
    }
    let order = raw
        .iter()
        .filter_map(|(_, json)| json["order"].as_u64())
        .max()
        .unwrap_or(0)
        .saturating_add(1)
        .min(u64::from(u32::MAX)) as u32;
    let text = match &args.from {
        None => shared::authoring::template(&args.id, order),
        Some(from) => match copy_of(from, &args, &files, &raw, order) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        },
    };
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&target)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    match written {
        Ok(()) => {
            println!("{}", target.display());
            eprintln!(
                "wrote {} (order {order}); change it, then run: pipeline-builder scenarios validate {}",
                target.display(),
                target.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            eprintln!(
                "{} exists already; it is left as it is. Choose another id, or remove the file first",
                target.display()
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{}: cannot write it: {e}", target.display());
            ExitCode::FAILURE
        }
    }
}

/// The text of a new scenario copied from `from` (an existing scenario's id, or the path of
/// its file), with the new id, order and title.
fn copy_of(
    from: &str,
    args: &NewArgs,
    files: &[(String, String)],
    raw: &[(String, serde_json::Value)],
    order: u32,
) -> Result<String, String> {
    let by_path = PathBuf::from(from);
    let source = if by_path.is_file() {
        std::fs::read_to_string(&by_path).map_err(|e| format!("{from}: cannot read it: {e}"))?
    } else {
        files
            .iter()
            .zip(raw)
            .find(|(_, (_, json))| json["id"] == from)
            .map(|((_, text), _)| text.clone())
            .ok_or_else(|| {
                let mut known: Vec<&str> =
                    raw.iter().filter_map(|(_, j)| j["id"].as_str()).collect();
                known.sort_unstable();
                format!(
                    "there is no scenario \"{from}\" in {}; known: {}",
                    args.scenarios.dir.display(),
                    known.join(", ")
                )
            })?
    };
    let title = serde_json::from_str::<serde_json::Value>(&source)
        .ok()
        .and_then(|j| j["title"].as_str().map(|t| format!("{t} (copy)")))
        .unwrap_or_else(|| args.id.clone());
    shared::authoring::renamed_copy(&source, &args.id, order, &title)
        .ok_or_else(|| format!("{from}: it has no top-level id, order and title to change"))
}
