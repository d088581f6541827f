//! Builds the web app into the binary when it has been built.
//!
//! `cargo xtask dist` builds the browser app (WASM) into `web/dist`. When `web/dist/index.html`
//! is there, this script sets the `embedded_app` cfg and points `PIPELINE_BUILDER_WEB_DIST`
//! at the folder, and `src/embedded.rs` embeds every file of it; when it is not (a fresh
//! clone, `cargo test`, clippy), nothing is embedded and the server says how to build it.
//!
//! Rationale for what is watched: a path that does not exist would make cargo rerun this
//! script (and rebuild the server) on every build, so without `web/dist` the folder it will
//! appear in, `web`, is watched instead; with it, `web/dist` itself, so that `cargo xtask
//! dist` followed by `cargo build --release -p server` embeds the new app.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(embedded_app)");
    // `sqlx::migrate!` embeds the migrations; a new file must rebuild the server.
    println!("cargo::rerun-if-changed=../migrations");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let web = manifest.join("..").join("web");
    let web = web.canonicalize().unwrap_or(web);
    let dist = web.join("dist");
    if dist.join("index.html").is_file() {
        println!("cargo::rerun-if-changed={}", dist.display());
        println!("cargo::rustc-cfg=embedded_app");
        println!(
            "cargo::rustc-env=PIPELINE_BUILDER_WEB_DIST={}",
            dist.display()
        );
    } else {
        println!("cargo::rerun-if-changed={}", web.display());
    }
}
