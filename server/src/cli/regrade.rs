//! `pipeline-builder regrade`: stored attempts checked again against a changed scenario.

use std::process::ExitCode;

use clap::Args;

use super::args::{DatabaseArg, ScenariosDir};
use crate::catalogue;
use crate::config::Config;

#[derive(Args)]
pub struct RegradeArgs {
    /// The scenario whose attempts to regrade.
    #[arg(long)]
    scenario: String,
    /// Only the attempts made for this class.
    #[arg(long)]
    class: Option<String>,
    #[command(flatten)]
    scenarios: ScenariosDir,
    #[command(flatten)]
    database: DatabaseArg,
}

/// Runs the command.
pub async fn run(args: RegradeArgs) -> ExitCode {
    let catalogue = match catalogue::load(&args.scenarios.dir) {
        Ok(c) => c,
        Err(problems) => {
            for p in &problems {
                eprintln!("{p}");
            }
            return ExitCode::from(2);
        }
    };
    let Some(entry) = catalogue.get(&args.scenario) else {
        eprintln!(
            "there is no scenario \"{}\" in {}",
            args.scenario,
            args.scenarios.dir.display()
        );
        return ExitCode::from(2);
    };
    let Some(store) = args.database.connect().await else {
        return ExitCode::FAILURE;
    };
    if let Some(class) = &args.class {
        match store.get_class(class).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                eprintln!("there is no class {class}");
                store.close().await;
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("database error: {e}");
                store.close().await;
                return ExitCode::FAILURE;
            }
        }
    }
    let result = crate::regrade::regrade(
        &store,
        entry,
        args.class.as_deref(),
        Config::default().check_limits,
        |done, total| println!("regraded {done} of {total}"),
    )
    .await;
    store.close().await;
    match result {
        Ok(report) => {
            print!("{}", crate::regrade::report_text(&report));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}; the verdicts recorded so far are kept, and running the command again goes on from there");
            ExitCode::FAILURE
        }
    }
}
