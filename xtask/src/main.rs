//! Build automation for Pipeline Builder, in Rust so that a local green run means a green CI.
//!
//! - `cargo xtask run`: builds everything and serves the app and the API.
//! - `cargo xtask test`: runs every test.

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("test") => test(),
        _ => {
            eprintln!("usage: cargo xtask <run|test>");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn status(cmd: &mut Command) -> Result<(), String> {
    let s = cmd.status().map_err(|e| format!("could not start {cmd:?}: {e}"))?;
    if s.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {s}"))
    }
}

fn run(extra: &[String]) -> Result<(), String> {
    status(cargo().args(["run", "--release", "-p", "server", "--bin", "pipeline-builder", "--", "serve"]).args(extra))
}

fn test() -> Result<(), String> {
    status(cargo().args(["test", "--workspace", "--exclude", "web"]))
}
