//! The preview's engine as a WASM module of its own (`engine.js`, `engine_bg.wasm`): a scenario
//! page loads it once it is interactive, and asks it about the design as it is drawn. The
//! work is `web::engine`; this crate only exports it, so that the module every student loads
//! first links none of it.

use wasm_bindgen::prelude::wasm_bindgen;

/// What the engine says about `design` (JSON) in `scenario` (the fitted text of the student's
/// view): a `web::engine::Answer` as JSON.
#[wasm_bindgen]
pub fn preview(scenario: &str, design: &str) -> String {
    web::engine::answer_json(scenario, design)
}
