//! Build automation for Pipeline Builder, in Rust so that a local green run means a green CI.
//!
//! - `cargo xtask dist`: builds the browser app (WASM) into `web/dist`.
//! - `cargo xtask run`: builds everything and serves the app and the API.
//! - `cargo xtask test`: runs every test: the Rust tests, the conformance run against real
//!   databases, then the browser tests in Chromium.
//! - `cargo xtask conformance`: replays every schedule on SQLite and PostgreSQL.
//! - `cargo xtask autograder --scenario ID`: the Gradescope autograder zip, its binary linked
//!   statically for musl so that it starts on every Gradescope image.
//! - `cargo xtask bench [--quick | --smoke]`: measures the check, the simulator against
//!   SQLite, the server's throughput, submissions under load on SQLite and PostgreSQL, the
//!   app's size and how the check scales.
//!
//! It downloads no tool from outside the package registries: the WASM bindings are generated
//! by `wasm-bindgen-cli-support` used as a library, pinned to the same version as the
//! `wasm-bindgen` the app links, so the two can never drift apart.

mod autograder;
mod contract;
mod install;
mod lint;
mod modules;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const WASM_TARGET: &str = "wasm32-unknown-unknown";
/// The budget for the student's WASM (`web_bg.wasm`, loaded by every page a student opens),
/// gzipped. See docs/performance.md, "The app's size".
const WASM_GZIP_BYTES_MAX: u64 = 384 * 1024;
/// The budget for the staff module (`staff_bg.wasm`, the instructor's pages and the author
/// page), gzipped.
const STAFF_WASM_GZIP_BYTES_MAX: u64 = 496 * 1024;
/// The budget for the preview's engine (`engine_bg.wasm`, the simulator a scenario page loads
/// once it is interactive), gzipped.
const ENGINE_WASM_GZIP_BYTES_MAX: u64 = 240 * 1024;
const SERVER_START_SECONDS_MAX: u64 = 60;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("dist") => dist().map(|_| ()),
        Some("run") => run(&args[1..]),
        Some("test") => test(&args[1..]),
        Some("browser") => browser_tests(&args[1..]),
        Some("conformance") => conformance(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("lint") => lint::lint(),
        Some("deps") => lint::deps(),
        Some("contract") => contract::contract(),
        Some("autograder") => autograder::autograder(&args[1..]),
        _ => {
            eprintln!("usage: cargo xtask <dist|run|test|browser|lint|deps|contract|conformance|bench|autograder>\n  dist         build the browser app into web/dist\n  run          build everything and serve it (extra arguments go to the server)\n  test         run every test, the lint gate first (--no-browser skips the browser tests)\n  browser      only the browser tests (names of files in tests/browser pick some)\n  lint         cargo fmt --check, clippy -D warnings (host and wasm32), no circle of module imports\n  deps         print every crate's module graph and its circles\n  contract     check the running server against its OpenAPI document (schemathesis)\n  conformance  replay every schedule on SQLite and PostgreSQL (--sqlite, --postgres)\n  bench        measure the check, the simulator against SQLite, the server and the app\n               (--quick: under two minutes; --smoke: tiny sizes, for CI; --max-messages N)\n  autograder   the Gradescope zip of one assignment, its binary statically linked\n               (--scenario ID, required; --out FILE, default build/autograder.zip; --profile release|dev)");
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

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root().join(dir),
        None => root().join("target"),
    }
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

fn status(cmd: &mut Command) -> Result<(), String> {
    let s = cmd
        .status()
        .map_err(|e| format!("could not start {cmd:?}: {e}"))?;
    if s.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {s}"))
    }
}

fn step(what: &str) {
    eprintln!("\n==> {what}");
}

// ---------------------------------------------------------------------------------------------
// dist
// ---------------------------------------------------------------------------------------------

fn ensure_wasm_target() -> Result<(), String> {
    ensure_target(WASM_TARGET)
}

/// Adds a compilation target with rustup when the toolchain lacks it.
fn ensure_target(target: &str) -> Result<(), String> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    match installed {
        Ok(out)
            if String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim() == target) =>
        {
            Ok(())
        }
        Ok(_) => {
            step(&format!("adding the {target} target"));
            status(Command::new("rustup").args(["target", "add", target]))
        }
        // Without rustup the toolchain may still have the target (a distro toolchain); let
        // the build say so if it does not.
        Err(_) => Ok(()),
    }
}

/// The app's three WASM modules: the files `wasm-bindgen` writes (`{name}.js`,
/// `{name}_bg.wasm`), what builds the module, the page that loads it, and its budget gzipped.
struct Module {
    name: &'static str,
    /// A binary of `web`, or (`None`) the library of the package of that name.
    bin: bool,
    page: Option<&'static str>,
    budget: u64,
}

const MODULES: [Module; 3] = [
    Module {
        name: "web",
        bin: true,
        page: Some("index.html"),
        budget: WASM_GZIP_BYTES_MAX,
    },
    Module {
        name: "staff",
        bin: true,
        page: Some("staff.html"),
        budget: STAFF_WASM_GZIP_BYTES_MAX,
    },
    // No page loads it: a scenario page imports it after it is interactive.
    Module {
        name: "engine",
        bin: false,
        page: None,
        budget: ENGINE_WASM_GZIP_BYTES_MAX,
    },
];

/// Builds the app into `web/dist` and returns the size of the student's WASM, gzipped.
fn dist() -> Result<u64, String> {
    ensure_wasm_target()?;
    step("building the browser app's three modules (wasm32, profile wasm-release)");
    let mut build = cargo();
    build.args(["build", "-p", "web"]);
    for module in MODULES.iter().filter(|m| m.bin) {
        build.args(["--bin", module.name]);
    }
    status(build.args(["--target", WASM_TARGET, "--profile", "wasm-release"]))?;
    for module in MODULES.iter().filter(|m| !m.bin) {
        status(cargo().args(["build", "-p", module.name, "--lib"]).args([
            "--target",
            WASM_TARGET,
            "--profile",
            "wasm-release",
        ]))?;
    }
    let dist = root().join("web").join("dist");
    if dist.exists() {
        std::fs::remove_dir_all(&dist)
            .map_err(|e| format!("could not clear {}: {e}", dist.display()))?;
    }
    std::fs::create_dir_all(&dist)
        .map_err(|e| format!("could not create {}: {e}", dist.display()))?;
    let mut sizes = Vec::new();
    for module in &MODULES {
        sizes.push(bindgen(module, &dist)?);
    }
    for file in ["style.css"]
        .into_iter()
        .chain(MODULES.iter().filter_map(|m| m.page))
    {
        let from = root().join("web").join(file);
        std::fs::copy(&from, dist.join(file))
            .map_err(|e| format!("could not copy {}: {e}", from.display()))?;
    }
    let mut over = Vec::new();
    for (module, (raw, gzipped)) in MODULES.iter().zip(&sizes) {
        let file = format!("web/dist/{}_bg.wasm", module.name);
        match gzipped {
            Some(g) => {
                eprintln!(
                    "{file}: {} KB, {g} bytes = {} KB gzipped (budget {} KB)",
                    raw / 1024,
                    g / 1024,
                    module.budget / 1024
                );
                if *g > module.budget {
                    over.push(format!(
                        "{file} is {} KB gzipped, over its budget of {} KB",
                        g / 1024,
                        module.budget / 1024
                    ));
                }
            }
            None => eprintln!(
                "{file}: {} KB (gzip not found, gzipped size unknown)",
                raw / 1024
            ),
        }
    }
    if !over.is_empty() {
        return Err(over.join("; "));
    }
    eprintln!("built {}", dist.display());
    let (raw, gzipped) = sizes[0];
    Ok(gzipped.unwrap_or(raw))
}

/// Generates one module's JS bindings into `dist`, strips its custom sections (keeping a copy
/// with names for `twiggy`) and returns its size, raw and gzipped.
fn bindgen(module: &Module, dist: &Path) -> Result<(u64, Option<u64>), String> {
    step(&format!("generating the JS bindings of {}", module.name));
    let wasm = target_dir()
        .join(WASM_TARGET)
        .join("wasm-release")
        .join(format!("{}.wasm", module.name));
    wasm_bindgen_cli_support::Bindgen::new()
        .input_path(&wasm)
        .web(true)
        .map_err(|e| e.to_string())?
        // The page loads the module by its own path; the default path is written in.
        .omit_default_module_path(false)
        .debug(false)
        .generate(dist)
        .map_err(|e| format!("wasm-bindgen: {e}"))?;
    let out_wasm = dist.join(format!("{}_bg.wasm", module.name));
    // A copy that keeps its function names, for `twiggy` (see docs/performance.md).
    let named = wasm.with_file_name(format!("{}_bg.named.wasm", module.name));
    std::fs::copy(&out_wasm, &named)
        .map_err(|e| format!("could not copy {}: {e}", out_wasm.display()))?;
    strip_custom_sections(&out_wasm)?;
    optimize(&out_wasm);
    let raw = std::fs::metadata(&out_wasm).map(|m| m.len()).unwrap_or(0);
    Ok((raw, gzip_size(&out_wasm)))
}

/// Drops the module's custom sections (function names, producers). The name section alone is
/// larger than the code, and a browser runs the module without any of them. (Cargo's
/// `strip = true` would also remove the `target_features` section that wasm-bindgen reads.)
fn strip_custom_sections(path: &Path) -> Result<(), String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("could not read {}: {e}", path.display()))?;
    let stripped = without_custom_sections(&bytes)
        .ok_or_else(|| format!("{} is not a wasm module", path.display()))?;
    std::fs::write(path, stripped).map_err(|e| format!("could not write {}: {e}", path.display()))
}

fn read_leb128(bytes: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let mut value: u64 = 0;
    // A u32 takes at most five bytes of LEB128.
    for shift in (0..35).step_by(7) {
        let byte = *bytes.get(at)?;
        at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some((usize::try_from(value).ok()?, at));
        }
    }
    None
}

fn without_custom_sections(bytes: &[u8]) -> Option<Vec<u8>> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return None;
    }
    let mut out = bytes[..8].to_vec();
    let mut at = 8;
    while at < bytes.len() {
        let id = bytes[at];
        let (size, body) = read_leb128(bytes, at + 1)?;
        let end = body.checked_add(size).filter(|&e| e <= bytes.len())?;
        if id != 0 {
            out.extend_from_slice(&bytes[at..end]);
        }
        at = end;
    }
    Some(out)
}

/// Runs `wasm-opt -Oz` when a version that is known to work (116 or newer, as in the npm
/// package `binaryen`) is on PATH. Debian's wasm-opt 108 produces a module that fails at
/// page load, so older versions are skipped.
fn optimize(wasm: &Path) {
    let Ok(out) = Command::new("wasm-opt").arg("--version").output() else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let version: Option<u32> = text.split_whitespace().find_map(|w| w.parse().ok());
    match version {
        Some(v) if v >= 116 => {
            step(&format!("wasm-opt {v}: optimizing for size"));
            let optimized = wasm.with_extension("opt.wasm");
            let ok = Command::new("wasm-opt")
                .args([
                    "-Oz",
                    "--enable-bulk-memory",
                    "--enable-nontrapping-float-to-int",
                    "--enable-sign-ext",
                    "--enable-mutable-globals",
                    "--enable-reference-types",
                    "--enable-multivalue",
                ])
                .arg(wasm)
                .arg("-o")
                .arg(&optimized)
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                let _ = std::fs::rename(&optimized, wasm);
            } else {
                eprintln!("wasm-opt failed; keeping the unoptimized module");
                let _ = std::fs::remove_file(&optimized);
            }
        }
        _ => eprintln!(
            "(wasm-opt {} skipped: only version 116 or newer is used)",
            version.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
        ),
    }
}

fn gzip_size(path: &Path) -> Option<u64> {
    let out = Command::new("gzip")
        .args(["-9", "-c"])
        .arg(path)
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout.len() as u64)
}

// ---------------------------------------------------------------------------------------------
// run
// ---------------------------------------------------------------------------------------------

/// Builds the app first, then the release server, which embeds it (`server/build.rs`), and
/// serves the app built into the binary, as a deployment does.
fn run(extra: &[String]) -> Result<(), String> {
    dist()?;
    step("serving the app and the API");
    status(
        cargo()
            .args([
                "run",
                "--release",
                "-p",
                "server",
                "--bin",
                "pipeline-builder",
                "--",
                "serve",
            ])
            .args(extra),
    )
}

// ---------------------------------------------------------------------------------------------
// test
// ---------------------------------------------------------------------------------------------

/// Replays every schedule of every shipped design on SQLite and (when reachable, or always
/// with `CONFORMANCE_REQUIRE_POSTGRES=1`) PostgreSQL; see docs/conformance.md.
fn conformance(extra: &[String]) -> Result<(), String> {
    step("conformance: the simulator against real databases");
    status(
        cargo()
            .args(["run", "--release", "-p", "conformance", "--"])
            .args(extra),
    )
}

fn test(args: &[String]) -> Result<(), String> {
    lint::lint()?;
    install::postgres();
    step("Rust tests (server, shared, conformance, xtask, and the canvas logic of web)");
    status(cargo().args(["test", "--workspace"]))?;
    conformance(&[])?;
    contract::contract()?;
    if args.iter().any(|a| a == "--no-browser") {
        return Ok(());
    }
    browser_tests(&[])
}

fn ensure_node_modules(dir: &Path) -> Result<(), String> {
    // Every package the tests import: a checkout that has older node_modules installs anew.
    let packages = ["playwright-core", "axe-core"];
    if packages
        .iter()
        .all(|p| dir.join("node_modules").join(p).exists())
    {
        return Ok(());
    }
    step("installing the browser tests' npm packages (playwright-core, axe-core)");
    let sub = if dir.join("package-lock.json").exists() {
        "ci"
    } else {
        "install"
    };
    status(
        Command::new("npm")
            .args([sub, "--no-audit", "--no-fund"])
            .current_dir(dir),
    )
    .map_err(|e| {
        format!("{e}\n       (the browser tests need node and npm: apt-get install -y nodejs npm)")
    })
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// Stops the server when the tests end, however they end.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.0 200")
}

/// Starts the release server on a free port with a fresh SQLite database in `scratch` (its
/// log goes to `scratch/server.log`) and waits until it answers /healthz.
fn start_server(binary: &Path, scratch: &Path, extra: &[&str]) -> Result<(Server, u16), String> {
    start_server_in(binary, scratch, &root(), extra)
}

/// [`start_server`] with the server's working folder `cwd`.
fn start_server_in(
    binary: &Path,
    scratch: &Path,
    cwd: &Path,
    extra: &[&str],
) -> Result<(Server, u16), String> {
    let port = free_port()?;
    std::fs::create_dir_all(scratch)
        .map_err(|e| format!("could not create {}: {e}", scratch.display()))?;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(scratch.join(format!("server.db{suffix}")));
    }
    let database = format!("sqlite://{}", scratch.join("server.db").display());
    step(&format!(
        "starting the server on 127.0.0.1:{port} with a fresh database"
    ));
    let log = std::fs::File::create(scratch.join("server.log")).map_err(|e| e.to_string())?;
    // `{port}` in an argument is the port chosen here (for --public-url).
    let extra: Vec<String> = extra
        .iter()
        .map(|a| a.replace("{port}", &port.to_string()))
        .collect();
    let child = Command::new(binary)
        .current_dir(cwd)
        .arg("serve")
        .args(&extra)
        .arg("--bind")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--database-url")
        .arg(&database)
        .stdout(Stdio::from(log.try_clone().map_err(|e| e.to_string())?))
        .stderr(Stdio::from(log))
        .spawn()
        .map_err(|e| format!("could not start {}: {e}", binary.display()))?;
    let mut server = Server(child);
    let started = Instant::now();
    while !healthy(port) {
        if let Ok(Some(exit)) = server.0.try_wait() {
            let log = std::fs::read_to_string(scratch.join("server.log")).unwrap_or_default();
            return Err(format!("the server stopped at start ({exit}):\n{log}"));
        }
        if started.elapsed() > Duration::from_secs(SERVER_START_SECONDS_MAX) {
            return Err(format!(
                "the server did not answer /healthz within {SERVER_START_SECONDS_MAX} s"
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok((server, port))
}

/// Builds the release server and answers the path of its binary.
fn release_server() -> Result<PathBuf, String> {
    step("building the server (release)");
    status(cargo().args([
        "build",
        "--release",
        "-p",
        "server",
        "--bin",
        "pipeline-builder",
    ]))?;
    Ok(target_dir().join("release").join("pipeline-builder"))
}

/// The browser tests in Chromium against the release binary; `only` names test files to run
/// (all of them when empty).
fn browser_tests(only: &[String]) -> Result<(), String> {
    let chromium = install::chromium()?;
    install::node()?;
    let tests = root().join("tests").join("browser");
    ensure_node_modules(&tests)?;
    dist()?;
    let binary = release_server()?;

    let scratch =
        std::env::temp_dir().join(format!("pipeline-builder-browser-{}", std::process::id()));
    // One-file deployment: the release binary, started from an empty folder with no
    // --static-dir, serves the app built into it; the browser tests use that app.
    let empty = scratch.join("empty");
    std::fs::create_dir_all(&empty)
        .map_err(|e| format!("could not create {}: {e}", empty.display()))?;
    let scenarios = root().join("scenarios");
    let scenarios = scenarios
        .to_str()
        .ok_or("the checkout's path is not UTF-8")?;
    let (server, port) = start_server_in(
        &binary,
        &scratch,
        &empty,
        &[
            "--scenarios",
            scenarios,
            "--public-url",
            "http://localhost:{port}",
        ],
    )?;
    embedded_app_is_served(port)?;
    // The LTI test's platform (started by the test itself, on this port) is registered with
    // the server, as an administrator would.
    let platform_port = free_port()?;
    let platform = format!("http://127.0.0.1:{platform_port}");
    status(
        Command::new(&binary)
            .args(["lti", "platform", "add", "--issuer", &platform])
            .args([
                "--client-id",
                "browser-tool",
                "--deployment-id",
                "browser-deployment",
            ])
            .args(["--auth-url", &format!("{platform}/auth")])
            .args(["--token-url", &format!("{platform}/token")])
            .args(["--jwks-url", &format!("{platform}/jwks")])
            .arg("--database-url")
            .arg(format!("sqlite://{}", scratch.join("server.db").display()))
            .stdout(Stdio::null()),
    )?;
    // The author page's server watches a copy of the scenarios, which its test edits.
    let authoring = scratch.join("author");
    let watched = authoring.join("scenarios");
    copy_scenarios(&root().join("scenarios"), &watched)?;
    let watched_text = watched.to_str().ok_or("the scratch path is not UTF-8")?;
    let (author_server, author_port) = start_server_in(
        &binary,
        &authoring,
        &empty,
        &["--scenarios", watched_text, "--watch", "--author"],
    )?;
    // The instructor's pages sign in with a grader token of the server's database.
    let database = format!("sqlite://{}", scratch.join("server.db").display());
    let token = contract::token(&binary, &database, "browser-tests")?;
    // Staff accounts for the test of roles: two owners and a TA.
    let staff: Vec<(&str, String)> = ["owner-a", "owner-b", "ta-a"]
        .into_iter()
        .map(|account| Ok((account, contract::staff_token(&binary, &database, account)?)))
        .collect::<Result<_, String>>()?;

    step("browser tests (Chromium)");
    let output = root().join("test-output").join("browser");
    std::fs::create_dir_all(&output).map_err(|e| e.to_string())?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&tests)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "js" || x == "mjs")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(".test."))
                && (only.is_empty()
                    || only.iter().any(|o| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy() == o.as_str())
                    }))
        })
        .collect();
    if files.is_empty() {
        return Err(format!("no browser test file matches {}", only.join(", ")));
    }
    files.sort();
    let result = status(
        Command::new("node")
            .arg("--test")
            .arg("--test-concurrency=1")
            .args(&files)
            .current_dir(&tests)
            .env("BASE_URL", format!("http://127.0.0.1:{port}"))
            .env("AUTHOR_BASE_URL", format!("http://127.0.0.1:{author_port}"))
            .env("AUTHOR_SCENARIOS", &watched)
            .env("LTI_PLATFORM_PORT", platform_port.to_string())
            .env("TOOL_URL", format!("http://localhost:{port}"))
            .env("CHROMIUM", &chromium)
            .env("SCREENSHOT_DIR", &output)
            .env("PB_GRADER_TOKEN", &token)
            .envs(staff.iter().map(|(account, token)| {
                (
                    format!("PB_TOKEN_{}", account.replace('-', "_").to_uppercase()),
                    token,
                )
            })),
    );
    drop(server);
    drop(author_server);
    if result.is_err() {
        let log = std::fs::read_to_string(scratch.join("server.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        eprintln!(
            "server log (last lines):\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    } else {
        let _ = std::fs::remove_dir_all(&scratch);
        eprintln!("screenshots in {}", output.display());
    }
    result
}

/// Copies the scenario files of `from` into a fresh folder `to`.
fn copy_scenarios(from: &Path, to: &Path) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).map_err(|e| format!("could not create {}: {e}", to.display()))?;
    for entry in std::fs::read_dir(from).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|x| x == "json") {
            let name = path.file_name().ok_or("a file without a name")?;
            std::fs::copy(&path, to.join(name)).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The release server's `/` is the built app, not the page a binary without it answers.
fn embedded_app_is_served(port: u16) -> Result<(), String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    if !reply.starts_with("HTTP/1.1 200") || reply.contains("The app was not built") {
        return Err(format!(
            "the release server does not serve the app built into it:\n{}",
            reply.lines().take(20).collect::<Vec<_>>().join("\n")
        ));
    }
    step("the release binary serves the app built into it (no --static-dir)");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// bench
// ---------------------------------------------------------------------------------------------

/// The `name: value` lines a bench run must end with (besides one or more `scaling:` lines).
const BENCH_METRICS: [&str; 18] = [
    "engine_check_ms_median_max",
    "table_check_ms_median_max",
    "table_build_ms_total",
    "model_vs_sqlite_speedup",
    "check_vs_floor_throughput_ratio",
    "check_p99_ms",
    "check_uncached_vs_floor_throughput_ratio",
    "check_uncached_p99_ms",
    "submissions_per_second_sqlite",
    "submit_p50_ms_sqlite",
    "submit_p99_ms_sqlite",
    "submit_errors_sqlite",
    "submissions_per_second_postgres",
    "submit_p50_ms_postgres",
    "submit_p99_ms_postgres",
    "submit_errors_postgres",
    "wasm_gzip_bytes",
    "bench_seconds",
];

/// The newest modification time of the files under `path`.
fn newest(path: &Path) -> Option<std::time::SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    std::fs::read_dir(path)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| newest(&e.path()))
        .max()
}

/// The gzipped size of `web/dist`'s WASM when it is newer than every source it is built from.
fn fresh_dist() -> Option<u64> {
    let wasm = root().join("web").join("dist").join("web_bg.wasm");
    let built = std::fs::metadata(&wasm).and_then(|m| m.modified()).ok()?;
    let sources = [
        "web/src",
        "web/Cargo.toml",
        "web/index.html",
        "web/staff.html",
        "web/style.css",
        "shared/src",
        "shared/Cargo.toml",
        "Cargo.toml",
        "Cargo.lock",
    ];
    let newest_source = sources
        .iter()
        .filter_map(|s| newest(&root().join(s)))
        .max()?;
    if built <= newest_source {
        return None;
    }
    gzip_size(&wasm)
}

/// `cargo xtask bench [--quick | --smoke] [--max-messages N]`: builds the app (for its size),
/// the server and the benchmarks, starts the server with the floor route and no rate limit,
/// and runs `pipeline-builder-bench`, whose output it checks. The bench starts the servers of
/// its submissions section itself (a fresh SQLite file, a fresh PostgreSQL database).
fn bench(args: &[String]) -> Result<(), String> {
    let short = args.iter().any(|a| a == "--quick" || a == "--smoke");
    let wasm_gzip_bytes = match fresh_dist().filter(|_| short) {
        Some(bytes) => {
            step("the browser app in web/dist is newer than its sources: not rebuilt");
            bytes
        }
        None => dist()?,
    };
    step("building the server and the benchmarks (release)");
    // Two builds, so that the server is compiled with the same features as by `cargo xtask
    // test` and `run`, and neither rebuild undoes the other.
    status(cargo().args([
        "build",
        "--release",
        "-p",
        "server",
        "--bin",
        "pipeline-builder",
    ]))?;
    status(cargo().args([
        "build",
        "--release",
        "-p",
        "bench",
        "--bin",
        "pipeline-builder-bench",
    ]))?;
    let server_bin = target_dir().join("release").join("pipeline-builder");
    let bench_bin = target_dir().join("release").join("pipeline-builder-bench");

    let scratch = std::env::temp_dir().join(format!(
        "pipeline-builder-bench-server-{}",
        std::process::id()
    ));
    let (server, port) = start_server(
        &server_bin,
        &scratch,
        &["--floor-route", "--rate-limit-per-second", "0"],
    )?;
    // The same server with no verdict cache: every check runs the simulator.
    let (uncached, uncached_port) = start_server(
        &server_bin,
        &scratch.join("uncached"),
        &[
            "--floor-route",
            "--rate-limit-per-second",
            "0",
            "--verdict-cache-mb",
            "0",
        ],
    )?;
    step("benchmarks");
    let mut child = Command::new(&bench_bin)
        .current_dir(root())
        .args(args)
        .arg("--url")
        .arg(format!("http://127.0.0.1:{port}"))
        .arg("--uncached-url")
        .arg(format!("http://127.0.0.1:{uncached_port}"))
        .arg("--server-bin")
        .arg(&server_bin)
        .arg("--wasm-gzip-bytes")
        .arg(wasm_gzip_bytes.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start {}: {e}", bench_bin.display()))?;
    let mut output = String::new();
    if let Some(stdout) = child.stdout.take() {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.map_err(|e| format!("reading the benchmarks' output: {e}"))?;
            println!("{line}");
            output.push_str(&line);
            output.push('\n');
        }
    }
    let exit = child.wait().map_err(|e| e.to_string())?;
    drop(server);
    drop(uncached);
    if !exit.success() {
        eprintln!(
            "(the server's log is in {})",
            scratch.join("server.log").display()
        );
        return Err(format!("the benchmarks failed ({exit})"));
    }
    let _ = std::fs::remove_dir_all(&scratch);
    check_bench_output(&output)
}

/// The value of a `name: value` line.
fn bench_value<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.strip_prefix(name)
        .and_then(|rest| rest.strip_prefix(": "))
        .map(str::trim)
}

/// Every metric once with a finite number, and at least one `scaling:` line whose pairs are
/// all numbers.
fn check_bench_output(output: &str) -> Result<(), String> {
    let mut problems = Vec::new();
    for name in BENCH_METRICS {
        let found: Vec<&str> = output
            .lines()
            .filter_map(|l| bench_value(l, name))
            .collect();
        match found.as_slice() {
            [v] if v.parse::<f64>().is_ok_and(f64::is_finite) => {}
            [v] => problems.push(format!("{name}: \"{v}\" is not a number")),
            [] => problems.push(format!("no line \"{name}: …\"")),
            _ => problems.push(format!("{} lines \"{name}: …\"", found.len())),
        }
    }
    let scaling: Vec<&str> = output
        .lines()
        .filter_map(|l| bench_value(l, "scaling"))
        .collect();
    if scaling.is_empty() {
        problems.push("no line \"scaling: …\"".into());
    }
    for v in scaling {
        let pairs: Vec<(&str, &str)> = v
            .split_whitespace()
            .filter_map(|p| p.split_once('='))
            .collect();
        let numbers = pairs
            .iter()
            .all(|(_, n)| n.parse::<f64>().is_ok_and(f64::is_finite));
        if !numbers
            || !["messages", "schedules", "ms", "ns_per_schedule_message"]
                .iter()
                .all(|k| pairs.iter().any(|(p, _)| p == k))
        {
            problems.push(format!("a scaling line without messages, schedules, ms and ns_per_schedule_message as numbers: {v}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the benchmarks' output is incomplete:\n  {}",
            problems.join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_sections_are_dropped_and_the_rest_kept() {
        let mut module = b"\0asm\x01\0\0\0".to_vec();
        module.extend_from_slice(&[1, 2, 0xaa, 0xbb]); // a type section of two bytes
        module.extend_from_slice(&[0, 5, 4, b'n', b'a', b'm', b'e']); // a custom section "name"
        module.extend_from_slice(&[10, 1, 0xcc]); // a code section of one byte
        let stripped = without_custom_sections(&module).unwrap();
        assert_eq!(
            stripped,
            [&module[..8], &[1, 2, 0xaa, 0xbb], &[10, 1, 0xcc]].concat()
        );
        assert!(without_custom_sections(b"not wasm").is_none());
        assert!(
            without_custom_sections(&module[..module.len() - 1]).is_none(),
            "a truncated module is refused"
        );
    }

    #[test]
    fn bench_output_needs_every_metric_once_as_a_number() {
        let good = "table\nengine_check_ms_median_max: 0.961\ntable_check_ms_median_max: 0.0420\ntable_build_ms_total: 1650.2\nmodel_vs_sqlite_speedup: 103.2\ncheck_vs_floor_throughput_ratio: 0.81\ncheck_p99_ms: 7.20\ncheck_uncached_vs_floor_throughput_ratio: 0.31\ncheck_uncached_p99_ms: 12.5\nsubmissions_per_second_sqlite: 2100\nsubmit_p50_ms_sqlite: 20.10\nsubmit_p99_ms_sqlite: 80.00\nsubmit_errors_sqlite: 0\nsubmissions_per_second_postgres: 1900\nsubmit_p50_ms_postgres: 25.00\nsubmit_p99_ms_postgres: 90.00\nsubmit_errors_postgres: 0\nwasm_gzip_bytes: 399000\nscaling: one_crash crashes=1 messages=10 schedules=31 runs=5 ms=0.075 ns_per_schedule_message=242.0\nbench_seconds: 15.6\n";
        assert_eq!(check_bench_output(good), Ok(()));
        let missing = good.replace("check_p99_ms: 7.20\n", "");
        assert!(check_bench_output(&missing)
            .unwrap_err()
            .contains("no line \"check_p99_ms"));
        let not_a_number = good.replace("0.81", "NaN");
        assert!(check_bench_output(&not_a_number)
            .unwrap_err()
            .contains("check_vs_floor_throughput_ratio"));
        let twice = format!("{good}bench_seconds: 1.0\n");
        assert!(check_bench_output(&twice).is_err());
        let bad_scaling = good.replace("ms=0.075", "ms=fast");
        assert!(check_bench_output(&bad_scaling)
            .unwrap_err()
            .contains("scaling"));
        let no_scaling: String = good
            .lines()
            .filter(|l| !l.starts_with("scaling"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(check_bench_output(&no_scaling).is_err());
    }
}
