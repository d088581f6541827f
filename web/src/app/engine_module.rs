//! The page's side of the preview's engine (`crate::engine`): the engine's module is loaded
//! the first time a page asks, once, and every question after that is a call into it.
//!
//! A module that fails to load (the network dropped) is asked for again the next time, so a
//! preview that said "unavailable" comes back with the connection.

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::engine::Answer;

#[wasm_bindgen(inline_js = r#"
let loading;
export function preview_engine() {
  if (!loading) {
    loading = import("/engine.js")
      .then(async (m) => { await m.default({ module_or_path: "/engine_bg.wasm" }); return m; })
      .catch((e) => { loading = undefined; throw e; });
  }
  return loading;
}
"#)]
extern "C" {
    /// The engine's module, loaded and started; the same promise for every caller.
    fn preview_engine() -> Promise;
}

/// The engine's answer about `design` (JSON) in `scenario` (the fitted text of its student
/// view), or why it could not be had.
pub async fn answer(scenario: &str, design: &str) -> Result<Answer, String> {
    let module = JsFuture::from(preview_engine())
        .await
        .map_err(|e| format!("its engine could not be loaded ({})", words(&e)))?;
    let preview: Function = Reflect::get(&module, &JsValue::from_str("preview"))
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .ok_or_else(|| "its engine is not the one this page expects".to_string())?;
    let text = preview
        .call2(
            &JsValue::NULL,
            &JsValue::from_str(scenario),
            &JsValue::from_str(design),
        )
        .map_err(|e| format!("its engine stopped ({})", words(&e)))?
        .as_string()
        .ok_or_else(|| "its engine gave no answer".to_string())?;
    serde_json::from_str(&text).map_err(|e| format!("its engine's answer could not be read: {e}"))
}

/// A thrown JavaScript value in words.
fn words(error: &JsValue) -> String {
    error
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| error.as_string())
        .unwrap_or_else(|| "unknown error".to_string())
}
