//! `pipeline-builder check`: one design's verdict, offline.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::args::ScenariosDir;
use crate::{catalogue, report};

#[derive(Args)]
pub struct CheckArgs {
    /// The scenario id, for example safe-retry.
    #[arg(long)]
    scenario: String,
    #[command(flatten)]
    scenarios: ScenariosDir,
    /// The design's JSON file.
    design: PathBuf,
    /// Print the verdict as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(args: CheckArgs) -> ExitCode {
    let bad_input = |message: String| {
        eprintln!("{message}");
        ExitCode::from(2)
    };
    let scenario = match catalogue::find(&args.scenarios.dir, &args.scenario) {
        Ok(s) => s,
        Err(e) => return bad_input(e),
    };
    let text = match std::fs::read_to_string(&args.design) {
        Ok(t) => t,
        Err(e) => {
            return bad_input(format!(
                "{}: cannot read the design: {e}",
                args.design.display()
            ))
        }
    };
    let design: serde_json::Value = match serde_json::from_str(&text) {
        Ok(d) => d,
        Err(e) => {
            return bad_input(format!(
                "{}: $: the design is not valid JSON: {e}",
                args.design.display()
            ))
        }
    };
    match shared::check_json(&scenario, &design) {
        Ok(verdict) => {
            if args.json {
                match serde_json::to_string_pretty(&verdict) {
                    Ok(text) => println!("{text}"),
                    Err(e) => return bad_input(format!("cannot write the verdict: {e}")),
                }
            } else {
                print!("{}", report::verdict_text(scenario.scenario(), &verdict));
            }
            if verdict.passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(shared::CheckError::Design(errors)) => {
            for e in &errors {
                eprintln!("{}: {}: {}", args.design.display(), e.path, e.message);
            }
            ExitCode::from(2)
        }
        Err(e) => bad_input(format!("{}: {e}", display(&args.design))),
    }
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
