//! `pipeline-builder load`: a running server put under load.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

#[derive(Args)]
pub struct LoadArgs {
    /// The server, for example http://127.0.0.1:3000
    #[arg(long)]
    url: String,
    /// How many clients, each with its own session, make requests at once.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// The weighted mix of requests, for example check=6,submit=2,catalogue=2 (the default
    /// when no --route is given).
    #[arg(long, conflicts_with = "route")]
    mix: Option<String>,
    /// One route instead of the mix, for example --route POST /api/floor?bytes=256
    #[arg(long, num_args = 2, value_names = ["METHOD", "PATH"])]
    route: Option<Vec<String>>,
    /// The request body of --route, read from a file.
    #[arg(long, requires = "route")]
    body: Option<PathBuf>,
}

/// Runs the command.
pub async fn run(args: LoadArgs) -> ExitCode {
    let workload = match (&args.route, &args.mix) {
        (Some(route), _) => {
            let method = match reqwest::Method::from_bytes(route[0].to_ascii_uppercase().as_bytes())
            {
                Ok(m) => m,
                Err(_) => {
                    eprintln!("\"{}\" is not an HTTP method", route[0]);
                    return ExitCode::from(2);
                }
            };
            let body = match &args.body {
                Some(file) => match std::fs::read(file) {
                    Ok(b) => Some(b),
                    Err(e) => {
                        eprintln!("{}: cannot read the body: {e}", file.display());
                        return ExitCode::from(2);
                    }
                },
                None => None,
            };
            crate::load::Workload::Route {
                method,
                path: route[1].clone(),
                body,
            }
        }
        (None, mix) => match crate::load::Workload::parse_mix(
            mix.as_deref().unwrap_or("check=6,submit=2,catalogue=2"),
        ) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("--mix: {e}");
                return ExitCode::from(2);
            }
        },
    };
    if args.clients == 0 || args.seconds == 0 {
        eprintln!("--clients and --seconds must be 1 or more");
        return ExitCode::from(2);
    }
    let config = crate::load::LoadConfig {
        url: args.url,
        clients: args.clients,
        duration: Duration::from_secs(args.seconds),
        workload,
    };
    match crate::load::run(config).await {
        Ok(summary) => {
            print!("{}", crate::load::table(&summary));
            match serde_json::to_string(&summary) {
                Ok(json) => println!("{json}"),
                Err(e) => eprintln!("cannot write the summary: {e}"),
            }
            if summary.errors == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("the load could not run: {e}");
            ExitCode::FAILURE
        }
    }
}
