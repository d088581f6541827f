//! `pipeline-builder autograde`: one Gradescope submission graded offline.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::args::ScenariosDir;

#[derive(Args)]
pub struct AutogradeArgs {
    /// The folder of the student's upload: one design file, bare or as the canvas exports it.
    #[arg(long, default_value = crate::autograde::SUBMISSION_DIR)]
    submission: PathBuf,
    /// Where to write the result.
    #[arg(long, default_value = crate::autograde::RESULTS_FILE)]
    results: PathBuf,
    /// The scenario the assignment grades; without it, the one the exported file names.
    #[arg(long)]
    scenario: Option<String>,
    #[command(flatten)]
    scenarios: ScenariosDir,
    /// When students see the result: hidden, after_due_date, after_published or visible.
    #[arg(long, default_value = "visible", value_parser = crate::autograde::VISIBILITIES)]
    visibility: String,
    /// When students see the autograder's printed output (the same values).
    #[arg(long, default_value = "hidden", value_parser = crate::autograde::VISIBILITIES)]
    stdout_visibility: String,
}

/// Runs the command.
pub fn run(args: AutogradeArgs) -> ExitCode {
    let graded = crate::autograde::grade(&crate::autograde::Options {
        submission: args.submission,
        scenarios: args.scenarios.dir,
        scenario: args.scenario,
        visibility: args.visibility,
        stdout_visibility: args.stdout_visibility,
    });
    // Gradescope shows stdout to the course staff, not to students (unless told to).
    println!("{}", graded.log.trim_end());
    if graded.setup_problem {
        eprintln!("the autograder is not set up right: the student got score 0 for it");
    }
    match crate::autograde::write(&graded.results, &args.results) {
        Ok(()) => {
            println!("wrote {}", args.results.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}: cannot write the result: {e}", args.results.display());
            ExitCode::from(2)
        }
    }
}
