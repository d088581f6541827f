//! `pipeline-builder sweep`: expired records removed once.

use std::process::ExitCode;

use clap::Args;

use super::args::{DatabaseArg, ExpiryArgs};
use crate::config::Config;

#[derive(Args)]
pub struct SweepArgs {
    #[command(flatten)]
    database: DatabaseArg,
    #[command(flatten)]
    expiry: ExpiryArgs,
}

/// Runs the command.
pub async fn run(args: SweepArgs) -> ExitCode {
    let Some(store) = args.database.connect().await else {
        return ExitCode::FAILURE;
    };
    let config = args.expiry.apply(Config::default());
    let metrics = crate::metrics::Metrics::default();
    let result = crate::sweep::sweep_once(&store, &config, &metrics).await;
    store.close().await;
    match result {
        Ok(swept) => {
            println!(
                "removed {} idempotency record(s) and {} session(s) with no work",
                swept.idempotency, swept.sessions
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("database error: {e}");
            ExitCode::FAILURE
        }
    }
}
