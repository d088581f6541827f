//! `cargo xtask lint`: the formatter, clippy on the host and on wasm32, and the module graph.
//! `cargo xtask deps`: the module graph of every crate, and its circles.
//!
//! *Rationale:* the formatter and the linter decide style, so a review never has to; the
//! module check keeps every crate readable from its imports (see `modules.rs`).

use crate::modules::{Graph, CRATES};
use crate::{cargo, ensure_wasm_target, root, status, step, WASM_TARGET};

/// Adds rustfmt and clippy to the toolchain when they are missing (a minimal rustup profile
/// has neither).
fn ensure_components() -> Result<(), String> {
    for (tool, component) in [("fmt", "rustfmt"), ("clippy", "clippy")] {
        let present = cargo()
            .args([tool, "--version"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !present {
            step(&format!("adding the {component} component"));
            status(std::process::Command::new("rustup").args(["component", "add", component]))?;
        }
    }
    Ok(())
}

pub fn lint() -> Result<(), String> {
    ensure_components()?;
    step("cargo fmt --check");
    status(cargo().args(["fmt", "--all", "--", "--check"]))
        .map_err(|e| format!("{e}\n       (`cargo fmt --all` rewrites the files)"))?;
    step("clippy -D warnings (host crates)");
    status(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    ensure_wasm_target()?;
    step("clippy -D warnings (web and its engine on wasm32)");
    status(cargo().args([
        "clippy",
        "-p",
        "web",
        "-p",
        "engine",
        "--target",
        WASM_TARGET,
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    step("module graph: no circle of imports");
    let circles = circles()?;
    if circles.is_empty() {
        eprintln!(
            "no module imports itself through others in {}",
            CRATES.join(", ")
        );
        Ok(())
    } else {
        Err(format!(
            "modules import each other in a circle:\n{}",
            circles.join("\n")
        ))
    }
}

/// Prints every crate's modules with what each uses, then the circles; fails on a circle.
pub fn deps() -> Result<(), String> {
    for krate in CRATES {
        let graph = Graph::read(&root().join(krate).join("src"))?;
        println!("{krate}");
        for (module, uses) in &graph.uses {
            let list: Vec<&str> = uses.iter().map(String::as_str).collect();
            println!(
                "  {module} -> {}",
                if list.is_empty() {
                    "(nothing)".to_string()
                } else {
                    list.join(", ")
                }
            );
        }
    }
    let circles = circles()?;
    if circles.is_empty() {
        println!("no circles");
        Ok(())
    } else {
        Err(format!(
            "modules import each other in a circle:\n{}",
            circles.join("\n")
        ))
    }
}

fn circles() -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    for krate in CRATES {
        let graph = Graph::read(&root().join(krate).join("src"))?;
        for circle in graph.circles() {
            found.push(format!("  {krate}: {}", circle.join(" ⇄ ")));
        }
    }
    Ok(found)
}
