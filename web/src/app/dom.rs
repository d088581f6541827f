//! Small helpers over the DOM and the reactive runtime that several views share.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// Runs a future once and holds its answer (`None` until it arrives). A plain task and a
/// signal, lighter than a resource: nothing here is refetched.
pub fn load_once<T: 'static>(
    future: impl std::future::Future<Output = T> + 'static,
) -> RwSignal<Option<T>, LocalStorage> {
    let slot = RwSignal::new_local(None);
    leptos::task::spawn_local(async move {
        let value = future.await;
        slot.try_set(Some(value));
    });
    slot
}

/// The element an event happened on, as an `Element`.
pub fn event_element(ev: &web_sys::Event) -> Option<web_sys::Element> {
    ev.current_target()?.dyn_into::<web_sys::Element>().ok()
}

/// Moves the focus to the first element that matches; false if there is none.
pub fn focus(selector: &str) -> bool {
    let Some(element) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.query_selector(selector).ok().flatten())
    else {
        return false;
    };
    // HTML and SVG elements both have focus(), through different interfaces.
    js_sys::Reflect::get(&element, &"focus".into())
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
        .is_some_and(|f| f.call0(&element).is_ok())
}
