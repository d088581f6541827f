//! `pipeline-builder`: serve the app and the API, validate scenario files, check a design
//! offline, and manage grader tokens (the commands are in `server::cli`).

use std::process::ExitCode;

/// The allocator of the whole binary (see `Cargo.toml`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    server::cli::main()
}
