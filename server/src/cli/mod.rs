//! The `pipeline-builder` command line: [`Cli`] lists the commands, and each command's
//! arguments and body live in a module of their own.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod args;
pub mod autograde;
pub mod backup;
pub mod check;
pub mod load;
pub mod lti;
pub mod regrade;
pub mod scenarios;
pub mod serve;
pub mod staff;
pub mod student;
pub mod sweep;
pub mod token;

use autograde::AutogradeArgs;
use backup::BackupArgs;
use check::CheckArgs;
use load::LoadArgs;
use regrade::RegradeArgs;
use scenarios::ScenariosCommand;
use serve::ServeArgs;
use student::StudentCommand;
use sweep::SweepArgs;
use token::TokenCommand;

#[derive(Parser)]
#[command(
    name = "pipeline-builder",
    version,
    about = "Pipeline Builder: the practice canvas of the idempotency chapter"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve the web app and the REST API.
    Serve(ServeArgs),
    /// Work with scenario files.
    #[command(subcommand)]
    Scenarios(ScenariosCommand),
    /// Check a design offline and print its verdict (exit 0 passed, 1 missed, 2 bad input).
    Check(CheckArgs),
    /// Manage grader tokens: a server administrator's, or one that acts for a staff account.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Staff accounts and their roles in classes.
    #[command(subcommand)]
    Staff(staff::StaffCommand),
    /// Put a running server under load and print what it held (a table, then a JSON line).
    Load(LoadArgs),
    /// Remove expired idempotency records and sessions with no work, once, and print how
    /// many (a running server does this by itself every --sweep-period-seconds).
    Sweep(SweepArgs),
    /// Grade one Gradescope submission offline and write its results.json (exit 0 whenever
    /// a result was written: a design that fails or is invalid is a grade, not an error).
    Autograde(AutogradeArgs),
    /// Copy a SQLite database to FILE while the server runs (one consistent snapshot; an
    /// existing FILE is never overwritten). On PostgreSQL, print the pg_dump line and exit 1.
    Backup(BackupArgs),
    /// Manage students.
    #[command(subcommand)]
    Student(StudentCommand),
    /// LTI 1.3: the learning platforms that launch this tool, and its signing key.
    #[command(subcommand)]
    Lti(lti::LtiCommand),
    /// Check again the stored attempts at a scenario made against an older version of its
    /// file, record the new verdicts beside the old, print progress and how many results
    /// changed per requirement. Resumable: a second run regrades only what is left.
    Regrade(RegradeArgs),
}

/// Parses the command line and runs the command; its exit code is the process's.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match cli.command {
        Command::Serve(args) => runtime().block_on(serve::run(args)),
        Command::Scenarios(command) => scenarios::run(command),
        Command::Check(args) => check::run(args),
        Command::Token(command) => runtime().block_on(token::run(command)),
        Command::Staff(command) => runtime().block_on(staff::run(command)),
        Command::Load(args) => runtime().block_on(load::run(args)),
        Command::Sweep(args) => runtime().block_on(sweep::run(args)),
        Command::Autograde(args) => autograde::run(args),
        Command::Backup(args) => runtime().block_on(backup::run(args)),
        Command::Lti(command) => runtime().block_on(lti::run(command)),
        Command::Student(command) => runtime().block_on(student::run(command)),
        Command::Regrade(args) => runtime().block_on(regrade::run(args)),
    }
}

/// Logs go to stderr, filtered by `RUST_LOG`; `LOG_FORMAT=json` writes one JSON object per
/// line for a log collector.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if std::env::var("LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json")) {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the async runtime starts")
}
