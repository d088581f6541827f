//! `cargo xtask autograder --scenario ID`: the Gradescope autograder zip of one assignment.
//!
//! Gradescope runs the zip on an Ubuntu image of the course's choice, whose C library may be
//! older than the one of the machine that builds it. So the binary is built for
//! `x86_64-unknown-linux-musl` and linked statically, with no interpreter and no dynamic
//! section: it needs nothing of the image, and starts on every one. The bundled SQLite and
//! ring's C need a musl C compiler, `musl-gcc` from Debian's `musl-tools`. The zip holds, at
//! its root, the binary, `setup.sh`, `run_autograder` with `SCENARIO` set, and `scenarios/`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};

use crate::{cargo, install, root, status, step, target_dir};

/// The target whose binaries need no C library of the image.
pub const MUSL_TARGET: &str = "x86_64-unknown-linux-musl";

/// The flags of the musl build: the C runtime linked in, and code at fixed addresses, so that
/// the linker writes a plain static executable (a static PIE would keep a dynamic section to
/// relocate itself).
const STATIC_RUSTFLAGS: &str = "-C target-feature=+crt-static -C relocation-model=static";

/// Which of cargo's profiles builds the binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// What a course ships: optimised.
    Release,
    /// Quick to build, without debug information: what the test of the zip builds, where
    /// only how the binary is linked matters.
    Dev,
}

impl Profile {
    fn folder(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Dev => "debug",
        }
    }
}

/// `cargo xtask autograder --scenario ID [--out FILE] [--profile release|dev]`.
pub fn autograder(args: &[String]) -> Result<(), String> {
    let mut scenario = None;
    let mut out = None;
    let mut profile = Profile::Release;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .cloned()
                .ok_or_else(|| format!("{arg} needs a value"))
        };
        match arg.as_str() {
            "--scenario" => scenario = Some(value()?),
            "--out" => out = Some(PathBuf::from(value()?)),
            "--profile" => {
                profile = match value()?.as_str() {
                    "release" => Profile::Release,
                    "dev" => Profile::Dev,
                    other => return Err(format!("--profile is release or dev, not {other}")),
                }
            }
            other => return Err(format!("unknown argument {other}; usage: cargo xtask autograder --scenario ID [--out FILE] [--profile release|dev]")),
        }
    }
    let scenario = scenario
        .ok_or("which scenario does the assignment grade? cargo xtask autograder --scenario ID")?;
    let out = out.unwrap_or_else(|| root().join("build").join("autograder.zip"));
    build_zip(&scenario, profile, &out)?;
    println!("wrote {} for scenario {scenario}", out.display());
    Ok(())
}

/// Builds the zip at `out` for `scenario`, with the binary built by `profile`; returns the
/// binary's path. Fails before building anything when `scenario` is not a shipped scenario.
pub fn build_zip(scenario: &str, profile: Profile, out: &Path) -> Result<PathBuf, String> {
    let scenarios = root().join("scenarios");
    let ids = scenario_ids(&scenarios)?;
    if !ids.iter().any(|id| id == scenario) {
        return Err(format!(
            "no scenario has the id \"{scenario}\"; the ids are {}",
            ids.join(", ")
        ));
    }
    let binary = build_static(profile)?;
    static_executable(&std::fs::read(&binary).map_err(|e| format!("{}: {e}", binary.display()))?)
        .map_err(|why| format!("{}: {why}", binary.display()))?;
    // The binary runs here as it will on the image, and knows the assignment's scenario.
    status(
        Command::new(&binary)
            .args(["scenarios", "validate"])
            .arg(&scenarios)
            .args(["--scenario", scenario]),
    )?;
    step(&format!("writing {}", out.display()));
    write_zip(out, &binary, &scenarios, scenario)?;
    Ok(binary)
}

/// The ids of the scenario files in `dir` (every `*.json` with an `"id"`; the JSON Schema
/// beside them has none).
fn scenario_ids(dir: &Path) -> Result<Vec<String>, String> {
    let mut ids = Vec::new();
    for path in json_files(dir)? {
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(id) = json.get("id").and_then(|v| v.as_str()) {
            ids.push(id.to_string());
        }
    }
    ids.sort();
    Ok(ids)
}

fn json_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// Builds `pipeline-builder` for the musl target, statically linked, adding what the machine
/// lacks first (the target, with rustup; `musl-gcc`, with apt-get as root on Debian).
fn build_static(profile: Profile) -> Result<PathBuf, String> {
    install::musl_gcc()?;
    crate::ensure_target(MUSL_TARGET)?;
    step(&format!(
        "building pipeline-builder for {MUSL_TARGET}, statically linked ({} profile)",
        profile.folder()
    ));
    let mut build = cargo();
    build.args([
        "build",
        "-p",
        "server",
        "--bin",
        "pipeline-builder",
        "--target",
        MUSL_TARGET,
    ]);
    let mut flags = STATIC_RUSTFLAGS.to_string();
    match profile {
        Profile::Release => {
            build.arg("--release");
        }
        // Debug information would only make the zip large.
        Profile::Dev => flags.push_str(" -C debuginfo=0"),
    }
    status(
        build
            .env("CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS", flags)
            .env("CC_x86_64_unknown_linux_musl", "musl-gcc"),
    )?;
    Ok(target_dir()
        .join(MUSL_TARGET)
        .join(profile.folder())
        .join("pipeline-builder"))
}

/// Proves that `bytes` is a static x86-64 ELF executable: no interpreter (`PT_INTERP`) and no
/// dynamic section (`PT_DYNAMIC`, which holds any `DT_NEEDED` library), so it loads no
/// shared library of the image it runs on.
pub fn static_executable(bytes: &[u8]) -> Result<(), String> {
    let header = elf::FileHeader64::<object::Endianness>::parse(bytes)
        .map_err(|e| format!("not a 64-bit ELF file: {e}"))?;
    let endian = header
        .endian()
        .map_err(|e| format!("an ELF file of no known byte order: {e}"))?;
    if header.e_machine(endian) != elf::EM_X86_64 {
        return Err("not an x86-64 binary".into());
    }
    let segments = header
        .program_headers(endian, bytes)
        .map_err(|e| format!("unreadable program headers: {e}"))?;
    for segment in segments {
        match segment.p_type(endian) {
            elf::PT_INTERP => {
                return Err("it names a dynamic loader (PT_INTERP): it is dynamically linked".into())
            }
            elf::PT_DYNAMIC => {
                return Err("it has a dynamic section (PT_DYNAMIC): it would load shared libraries or relocate itself at start".into())
            }
            _ => {}
        }
    }
    Ok(())
}

/// Unix permissions of the zip's entries: Gradescope runs the scripts, and `setup.sh` makes
/// the binary executable again in case the unpacking dropped the bits.
const EXECUTABLE: u32 = 0o755;
const READABLE: u32 = 0o644;

/// The zip: the binary, the scripts (`run_autograder` grading `scenario`) and the scenario
/// files, all at its root, as Gradescope looks for them.
fn write_zip(out: &Path, binary: &Path, scenarios: &Path, scenario: &str) -> Result<(), String> {
    let scripts = root().join("autograder");
    let run = std::fs::read_to_string(scripts.join("run_autograder"))
        .map_err(here(&scripts.join("run_autograder")))?;
    let run = with_scenario(&run, scenario)?;
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).map_err(here(parent))?;
    }
    let file = std::fs::File::create(out).map_err(here(out))?;
    let mut zip = zip::ZipWriter::new(file);
    let mut add = |name: &str, bytes: &[u8], mode: u32| -> Result<(), String> {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(mode)
            .large_file(bytes.len() as u64 >= u64::from(u32::MAX));
        zip.start_file(name, options)
            .and_then(|()| zip.write_all(bytes).map_err(Into::into))
            .map_err(|e| format!("{}: {name}: {e}", out.display()))
    };
    let read = |path: &Path| std::fs::read(path).map_err(here(path));
    add("pipeline-builder", &read(binary)?, EXECUTABLE)?;
    add("setup.sh", &read(&scripts.join("setup.sh"))?, EXECUTABLE)?;
    add("run_autograder", run.as_bytes(), EXECUTABLE)?;
    for path in json_files(scenarios)? {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        add(&format!("scenarios/{name}"), &read(&path)?, READABLE)?;
    }
    zip.finish()
        .map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(())
}

/// An IO error, with the path it is about.
fn here(path: &Path) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{}: {e}", path.display())
}

/// `run_autograder`'s text with its one `SCENARIO="…"` line set to `scenario`.
fn with_scenario(script: &str, scenario: &str) -> Result<String, String> {
    let mut set = 0;
    let lines: Vec<String> = script
        .lines()
        .map(|line| {
            if line.starts_with("SCENARIO=") {
                set += 1;
                format!("SCENARIO=\"{scenario}\"")
            } else {
                line.to_string()
            }
        })
        .collect();
    if set != 1 {
        return Err(format!(
            "autograder/run_autograder has {set} SCENARIO= lines; it needs exactly one"
        ));
    }
    Ok(lines.join("\n") + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/autograder` as Gradescope lays it out, under a root of the test's own.
    struct Gradescope {
        root: PathBuf,
    }

    impl Gradescope {
        /// Unpacks `zip` into `source/`, as Gradescope does, dropping the files' modes, and
        /// puts `upload` in `submission/`.
        fn unpack(zip: &Path, upload: (&str, &str)) -> Gradescope {
            let root = target_dir().join("autograder-test").join("root");
            let _ = std::fs::remove_dir_all(&root);
            for dir in ["source", "submission", "results"] {
                std::fs::create_dir_all(root.join(dir)).unwrap();
            }
            let mut archive = zip::ZipArchive::new(std::fs::File::open(zip).unwrap()).unwrap();
            for i in 0..archive.len() {
                let mut entry = archive.by_index(i).unwrap();
                let path = root.join("source").join(entry.enclosed_name().unwrap());
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                let mut file = std::fs::File::create(&path).unwrap();
                std::io::copy(&mut entry, &mut file).unwrap();
            }
            std::fs::write(root.join("submission").join(upload.0), upload.1).unwrap();
            Gradescope { root }
        }

        fn run(&self, command: &mut Command) -> String {
            let output = command.env("AUTOGRADER_ROOT", &self.root).output().unwrap();
            let said = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(output.status.success(), "{command:?}: {said}");
            said
        }
    }

    /// A passing design of safe-retry as the canvas's **Download design** saves it.
    fn passing_export() -> String {
        let text =
            std::fs::read_to_string(root().join("scenarios").join("safe-retry.json")).unwrap();
        let scenario: serde_json::Value = serde_json::from_str(&text).unwrap();
        let design = &scenario["reference_designs"][0]["design"];
        serde_json::json!({"scenario": "safe-retry", "design": design}).to_string()
    }

    /// Slow (it builds the server for musl): the one test that builds the zip.
    #[test]
    fn the_autograder_zip_grades_on_a_gradescope_layout_with_a_static_binary() {
        let zip = target_dir().join("autograder-test").join("autograder.zip");
        let binary = build_zip("safe-retry", Profile::Dev, &zip).unwrap_or_else(|e| panic!("{e}"));
        let gradescope = Gradescope::unpack(&zip, ("safe-retry-design.json", &passing_export()));
        let source = gradescope.root.join("source");
        let names: Vec<String> = std::fs::read_dir(&source)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        for name in [
            "pipeline-builder",
            "setup.sh",
            "run_autograder",
            "scenarios",
        ] {
            assert!(
                names.iter().any(|n| n == name),
                "{name} at the zip's root: {names:?}"
            );
        }
        let run = std::fs::read_to_string(source.join("run_autograder")).unwrap();
        assert!(run.contains("\nSCENARIO=\"safe-retry\"\n"), "{run}");

        let setup = gradescope.run(Command::new("bash").arg(source.join("setup.sh")));
        assert!(setup.contains("scenarios valid"), "{setup}");
        // setup.sh made the scripts executable: run_autograder runs as Gradescope runs it.
        gradescope.run(&mut Command::new(source.join("run_autograder")));
        let results =
            std::fs::read_to_string(gradescope.root.join("results/results.json")).unwrap();
        let results: serde_json::Value = serde_json::from_str(&results).unwrap();
        assert_eq!(results["score"], 3, "{results:#}");
        assert_eq!(results["extra_data"]["scenario"], "safe-retry");
        assert_eq!(results["tests"].as_array().unwrap().len(), 3);

        // The binary in the zip is the one built, and has no dynamic section.
        let shipped = std::fs::read(source.join("pipeline-builder")).unwrap();
        assert_eq!(shipped, std::fs::read(&binary).unwrap());
        assert_eq!(static_executable(&shipped), Ok(()));
    }

    #[test]
    fn an_id_that_is_not_a_scenario_fails_before_anything_is_built() {
        let out = target_dir().join("autograder-test").join("typo.zip");
        let error = build_zip("safe_retry", Profile::Dev, &out).unwrap_err();
        assert!(
            error.contains("no scenario has the id \"safe_retry\""),
            "{error}"
        );
        assert!(error.contains("safe-retry"), "the ids are listed: {error}");
        assert!(!out.exists());
    }

    #[test]
    fn a_dynamically_linked_binary_is_refused() {
        // The test binary itself is linked against the host's C library.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let why = static_executable(&me).unwrap_err();
        assert!(
            why.contains("PT_INTERP") || why.contains("PT_DYNAMIC"),
            "{why}"
        );
        assert!(static_executable(b"#!/bin/sh\n").is_err());
    }

    #[test]
    fn the_scenario_line_of_run_autograder_is_set() {
        let script = "#!/usr/bin/env bash\nset -e\nSCENARIO=\"safe-retry\"\nexec x\n";
        assert_eq!(
            with_scenario(script, "offset-commit").unwrap(),
            "#!/usr/bin/env bash\nset -e\nSCENARIO=\"offset-commit\"\nexec x\n"
        );
        assert!(with_scenario("no line\n", "x").is_err());
    }
}
