//! Pipeline Builder's canvas: the app a student uses in the browser, compiled to WASM.
//!
//! The modules at the top level are plain Rust with no browser in them (canvas geometry, hit
//! tests, connection rules, undo history, replay frames, the task's Markdown, the chapter's
//! words, design problems in those words, the student's view of a scenario, the preview's
//! engine, the design file a student downloads and opens, the SQL view's blocks by stage), so
//! their unit tests run on the host with `cargo test -p web`. Everything that touches the DOM or the network lives in [`app`],
//! which exists only on `wasm32`.
//! The canvas never decides a verdict: the server's is authoritative, and the preview runs
//! the same `shared` simulator, in a module of its own ([`engine`], loaded after the page).

pub mod canvas;
pub mod design_file;
pub mod engine;
pub mod markdown;
pub mod problems;
pub mod replay;
pub mod stage_sql;
pub mod student_view;
pub mod words;

#[cfg(target_arch = "wasm32")]
pub mod app;
