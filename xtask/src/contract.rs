//! `cargo xtask contract`: the API contract. schemathesis (from PyPI, in a virtual
//! environment under the target folder) generates requests from the OpenAPI document the
//! server serves, with every check it has and a bounded number of examples per operation,
//! and fails on any answer the document does not allow.
//!
//! *Rationale:* the document is derived from the types, and the types can still disagree
//! with what a handler does (a status it never declared, a rule the schema does not state);
//! only requests against the running server show that.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::{release_server, root, start_server, status, step, target_dir};

/// The schemathesis release the contract run is pinned to.
const SCHEMATHESIS: &str = "schemathesis==4.32.5";
/// Examples per operation and phase: enough to reach every route's refusals, bounded so the
/// run takes well under a minute.
const MAX_EXAMPLES: &str = "25";

/// The `st` command of a virtual environment made for it, installed when missing.
fn schemathesis() -> Result<PathBuf, String> {
    let venv = target_dir().join("schemathesis-venv");
    let st = venv.join("bin").join("st");
    if st.exists() {
        return Ok(st);
    }
    step(&format!(
        "installing {SCHEMATHESIS} from PyPI into {}",
        venv.display()
    ));
    status(Command::new("python3").args(["-m", "venv"]).arg(&venv)).map_err(|e| {
        format!("{e}\n       (the contract run needs Python 3 with venv: apt-get install -y python3-venv)")
    })?;
    status(Command::new(venv.join("bin").join("pip")).args([
        "install",
        "--quiet",
        "--disable-pip-version-check",
        SCHEMATHESIS,
    ]))?;
    Ok(st)
}

/// A new grader token called `name` in the server's database, as `token create` prints it.
pub fn token(binary: &Path, database: &str, name: &str) -> Result<String, String> {
    token_with(binary, database, name, &[])
}

/// A new staff account `account` in the server's database and a token that acts for it.
pub fn staff_token(binary: &Path, database: &str, account: &str) -> Result<String, String> {
    let out = Command::new(binary)
        .current_dir(root())
        .args(["staff", "add", account, "--database-url", database])
        .output()
        .map_err(|e| format!("could not run {}: {e}", binary.display()))?;
    if !out.status.success() {
        return Err(format!(
            "staff add failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    token_with(
        binary,
        database,
        &format!("{account}-token"),
        &["--staff", account],
    )
}

fn token_with(binary: &Path, database: &str, name: &str, more: &[&str]) -> Result<String, String> {
    let out = Command::new(binary)
        .current_dir(root())
        .args([
            "token",
            "create",
            "--name",
            name,
            "--database-url",
            database,
        ])
        .args(more)
        .output()
        .map_err(|e| format!("could not run {}: {e}", binary.display()))?;
    if !out.status.success() {
        return Err(format!(
            "token create failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(str::to_string)
        .ok_or_else(|| "token create printed no token".to_string())
}

/// A student session on the server, made the way the app makes one (`POST /api/session`):
/// the secret its `Set-Cookie` carries.
fn session(port: u16) -> Result<String, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    stream
        .write_all(
            b"POST /api/session HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )
        .map_err(|e| e.to_string())?;
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply
        .lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(name, _)| name.eq_ignore_ascii_case("set-cookie"))
        .filter_map(|(_, value)| value.trim().split(';').next()?.split_once('='))
        .map(|(_, secret)| secret.to_string())
        .next()
        .ok_or_else(|| format!("POST /api/session set no cookie:\n{reply}"))
}

pub fn contract() -> Result<(), String> {
    let st = schemathesis()?;
    let binary = release_server()?;
    let scratch =
        std::env::temp_dir().join(format!("pipeline-builder-contract-{}", std::process::id()));
    // Rate limits off: the run sends hundreds of requests from one address on purpose.
    let (server, port) = start_server(&binary, &scratch, &["--rate-limit-per-second", "0"])?;
    let database = format!("sqlite://{}", scratch.join("server.db").display());
    let token = token(&binary, &database, "contract")?;
    let session = session(port)?;
    step("API contract (schemathesis, every check)");
    let result = status(
        Command::new(&st)
            .arg("--config-file")
            .arg(
                root()
                    .join("tests")
                    .join("schemathesis")
                    .join("schemathesis.toml"),
            )
            .arg("run")
            .arg(format!("http://127.0.0.1:{port}/api/openapi.json"))
            .args([
                "--checks",
                "all",
                "--max-examples",
                MAX_EXAMPLES,
                "--workers",
                "1",
            ])
            .args(["--phases", "examples,coverage,fuzzing,stateful"])
            .args(["--seed", "1"])
            // The document's two security schemes, so that schemathesis can also leave each
            // out and expect the refusal (schemathesis.toml names the variables).
            .env("PB_GRADER_TOKEN", &token)
            .env("PB_SESSION", &session)
            .current_dir(&scratch),
    );
    drop(server);
    if result.is_ok() {
        let _ = std::fs::remove_dir_all(&scratch);
    } else {
        eprintln!("server log: {}", scratch.join("server.log").display());
    }
    result
}
