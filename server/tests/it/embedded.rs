//! One-file deployment: the binary started from an empty folder, with nothing but
//! `--scenarios`, serves the web app built into it, with the same types, caching and security
//! headers as the same files served from `--static-dir`.
//!
//! Whether the app is built into the binary depends on the build: `server/build.rs` embeds
//! `web/dist` only when `cargo xtask dist` made it before the server was compiled. This test
//! checks whichever binary it was given: with the app built in, every file and header; without
//! it (a fresh clone, `cargo test` alone), the page that says how to build the app, and the 404
//! of the app's files. `cargo xtask test` runs the browser tests against the release binary
//! started from an empty folder without `--static-dir`, so the embedded app is proven in a
//! browser there.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{scenarios_dir, TempDir};
use crate::processes::{ServerProcess, BIN};

const CSP_WITHOUT_APP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'";

const SECURITY_HEADERS: [&str; 4] = [
    "content-security-policy",
    "x-content-type-options",
    "x-frame-options",
    "referrer-policy",
];

/// A `pipeline-builder serve` started in `folder` with only `--scenarios` (an absolute path)
/// and `extra`; the address comes from `BIND`, so nothing else is on its command line.
fn serve_in(folder: &Path, extra: &[&str]) -> ServerProcess {
    let scenarios = scenarios_dir()
        .canonicalize()
        .expect("the scenarios folder");
    let mut command = Command::new(BIN);
    command
        .arg("serve")
        .arg("--scenarios")
        .arg(&scenarios)
        .args(extra)
        .current_dir(folder)
        .env("BIND", "127.0.0.1:0")
        .env("RUST_LOG", "warn")
        .env_remove("DATABASE_URL")
        .env_remove("STATIC_DIR")
        .stderr(Stdio::inherit());
    ServerProcess::spawn(command)
}

struct Got {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

impl Got {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

async fn get(base: &str, path: &str, headers: &[(&str, &str)]) -> Got {
    let mut request = reqwest::Client::new().get(format!("{base}{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("the server answers");
    Got {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.bytes().await.expect("a body").to_vec(),
    }
}

#[tokio::test]
async fn the_binary_serves_the_app_built_into_it_from_an_empty_folder() {
    let empty = TempDir::new("one-file");
    let server = serve_in(empty.path(), &[]);
    // The database is made in the folder it was started from: nothing else was needed.
    let ready = get(&server.base, "/readyz", &[]).await;
    assert_eq!(ready.status, 200);
    assert!(empty.path().join("data/pipeline-builder.db").is_file());

    if !server::embedded::is_built() {
        // This build had no web/dist: the binary says how to build the app.
        for path in ["/", "/scenarios/safe-retry"] {
            let page = get(&server.base, path, &[]).await;
            let text = String::from_utf8_lossy(&page.body);
            assert_eq!(page.status, 200, "{path}");
            assert!(
                page.header("content-type").starts_with("text/html"),
                "{path}"
            );
            assert!(text.contains("The app was not built"), "{path}: {text}");
            assert!(text.contains("cargo xtask dist"), "{path}: {text}");
            assert_eq!(page.header("content-security-policy"), CSP_WITHOUT_APP);
            assert_eq!(page.header("x-content-type-options"), "nosniff");
            assert_eq!(page.header("x-frame-options"), "DENY");
            assert_eq!(page.header("referrer-policy"), "no-referrer");
        }
        for path in ["/web.js", "/web_bg.wasm"] {
            let missing = get(&server.base, path, &[]).await;
            assert_eq!(missing.status, 404, "{path}");
            assert!(
                missing
                    .header("content-type")
                    .starts_with("application/json"),
                "{path}"
            );
            assert_eq!(missing.header("content-security-policy"), CSP_WITHOUT_APP);
        }
        eprintln!(
            "the web app is not built into this binary (no web/dist when it was compiled): \
             checked the page that says how to build it; cargo xtask test checks the built app"
        );
        return;
    }

    // The app built in: its files, with their types, validators and security headers.
    let index = get(&server.base, "/", &[]).await;
    assert_eq!(index.status, 200);
    assert!(index.header("content-type").starts_with("text/html"));
    assert_eq!(
        String::from_utf8_lossy(&index.body),
        server::embedded::index_html().unwrap()
    );
    let csp = index.header("content-security-policy").to_string();
    assert!(
        csp.contains("'sha256-"),
        "the inline script is allowed: {csp}"
    );
    let client_route = get(&server.base, "/scenarios/safe-retry", &[]).await;
    assert_eq!(client_route.status, 200);
    assert_eq!(client_route.body, index.body);
    // The instructor's and the author's pages load the staff module, under the same policy.
    let staff = get(&server.base, "/instructor/classes/c1", &[]).await;
    assert_eq!(staff.status, 200);
    assert_eq!(staff.body, get(&server.base, "/staff.html", &[]).await.body);
    assert!(String::from_utf8_lossy(&staff.body).contains("/staff_bg.wasm"));
    assert_eq!(staff.header("content-security-policy"), csp);
    for hash in server::headers::inline_script_hashes(&String::from_utf8_lossy(&staff.body)) {
        assert!(csp.contains(&format!("'{hash}'")), "{csp}");
    }
    let staff_wasm = get(&server.base, "/staff_bg.wasm", &[]).await;
    assert_eq!(staff_wasm.status, 200);
    assert_eq!(staff_wasm.header("content-type"), "application/wasm");
    let js = get(&server.base, "/web.js", &[]).await;
    assert_eq!(js.status, 200);
    assert_eq!(js.header("content-type"), "text/javascript");
    let wasm = get(&server.base, "/web_bg.wasm", &[]).await;
    assert_eq!(wasm.status, 200);
    assert_eq!(wasm.header("content-type"), "application/wasm");
    assert!(wasm.body.starts_with(b"\0asm"));
    let etag = wasm.header("etag").to_string();
    assert!(etag.starts_with('"'), "{etag}");
    let again = get(&server.base, "/web_bg.wasm", &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), etag);

    // The same files from --static-dir: the same types and security headers.
    let copy = TempDir::new("one-file-static");
    let dist = copy.path().join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::write(dist.join("index.html"), &index.body).unwrap();
    std::fs::write(dist.join("web.js"), &js.body).unwrap();
    std::fs::write(dist.join("web_bg.wasm"), &wasm.body).unwrap();
    std::fs::write(dist.join("staff.html"), &staff.body).unwrap();
    std::fs::write(dist.join("staff_bg.wasm"), &staff_wasm.body).unwrap();
    let from_disk = serve_in(copy.path(), &["--static-dir", dist.to_str().unwrap()]);
    for path in [
        "/",
        "/scenarios/safe-retry",
        "/instructor/classes/c1",
        "/author",
        "/web.js",
        "/web_bg.wasm",
        "/staff_bg.wasm",
    ] {
        let embedded = get(&server.base, path, &[]).await;
        let on_disk = get(&from_disk.base, path, &[]).await;
        assert_eq!(embedded.status, on_disk.status, "{path}");
        assert_eq!(embedded.body, on_disk.body, "{path}");
        for name in SECURITY_HEADERS.iter().chain(&["content-type"]) {
            assert_eq!(
                embedded.header(name),
                on_disk.header(name),
                "{path}: {name}"
            );
            assert!(!embedded.header(name).is_empty(), "{path}: {name}");
        }
        assert!(!embedded.header("etag").is_empty(), "{path}");
    }
}
