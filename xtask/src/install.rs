//! What the test command needs from the machine, installed when it can be: Chromium for the
//! browser tests, Node.js and npm for their driver, a running PostgreSQL for the tests that
//! use one, and the musl C compiler for the autograder's static binary. Where the machine allows it (root on Debian), a missing piece is installed
//! with apt, saying so; elsewhere the error names the one command to run.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{status, step};

fn is_root_on_debian() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    root && Path::new("/etc/debian_version").exists()
}

/// Installs Debian packages with apt-get, refreshing the package lists first.
fn apt_install(packages: &[&str], why: &str) -> Result<(), String> {
    step(&format!(
        "installing {} with apt-get ({why})",
        packages.join(" ")
    ));
    status(Command::new("apt-get").args(["update", "-qq"]))?;
    status(
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Chromium for the browser tests: found, or installed from Debian's packages.
pub fn chromium() -> Result<PathBuf, String> {
    if let Some(path) = find_chromium() {
        return Ok(path);
    }
    if is_root_on_debian() {
        apt_install(&["chromium"], "the browser tests drive it")?;
        if let Some(path) = find_chromium() {
            return Ok(path);
        }
    }
    Err("the browser tests need Chromium and none was found at /usr/bin/chromium.\n       Install Debian's with: sudo apt-get update && sudo apt-get install -y chromium\n       (or set CHROMIUM=/path/to/chromium; `cargo xtask test --no-browser` skips these tests)".into())
}

/// Node.js and npm, which run the browser tests' driver (playwright-core).
pub fn node() -> Result<(), String> {
    let has = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if has("node") && has("npm") {
        return Ok(());
    }
    if is_root_on_debian() {
        return apt_install(&["nodejs", "npm"], "the browser tests' driver runs on them");
    }
    Err("the browser tests need Node.js and npm.\n       Install them with: sudo apt-get install -y nodejs npm".into())
}

/// `musl-gcc`, the C compiler of the autograder's static build (the bundled SQLite, ring and
/// mimalloc are C): found, or installed from Debian's `musl-tools`.
pub fn musl_gcc() -> Result<(), String> {
    let found = || {
        Command::new("musl-gcc")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if found() {
        return Ok(());
    }
    if is_root_on_debian() {
        apt_install(
            &["musl-tools"],
            "the autograder's static binary compiles its C with musl-gcc",
        )?;
        if found() {
            return Ok(());
        }
    }
    Err("the autograder's static build needs musl-gcc.\n       Install it with: sudo apt-get update && sudo apt-get install -y musl-tools".into())
}

fn postgres_ready() -> bool {
    Command::new("pg_isready")
        .args(["-h", "127.0.0.1", "-p", "5432", "-q"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Starts the machine's PostgreSQL clusters when one is installed but not running, so the
/// tests that compare with PostgreSQL can run. A machine without PostgreSQL is left alone:
/// those tests say so themselves (and fail when `CONFORMANCE_REQUIRE_POSTGRES=1`).
pub fn postgres() {
    if postgres_ready() {
        return;
    }
    let Ok(versions) = std::fs::read_dir("/etc/postgresql") else {
        return;
    };
    if !is_root_on_debian() {
        eprintln!("PostgreSQL is installed but not running on 127.0.0.1:5432; start it with: sudo pg_ctlcluster <version> main start");
        return;
    }
    step("starting PostgreSQL (installed, not running)");
    for version in versions.flatten() {
        let version = version.file_name().to_string_lossy().into_owned();
        let _ = Command::new("pg_ctlcluster")
            .args(["--skip-systemctl-redirect", &version, "main", "start"])
            .status();
    }
    for _ in 0..30 {
        if postgres_ready() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    eprintln!("PostgreSQL did not come up on 127.0.0.1:5432 within 30 s");
}
