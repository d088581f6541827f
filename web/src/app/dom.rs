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

/// Brings the first element that matches well into view: unless it is whole on screen with
/// `margin` pixels to spare above and below, it is scrolled to the middle of the window, so
/// that a shift of what is around it (a toolbar that wraps again, a line drawn above) leaves
/// it on screen.
pub fn bring_into_view(selector: &str, margin: f64) {
    let Some(window) = web_sys::window() else {
        return;
    };
    if let Some(element) = window
        .document()
        .and_then(|d| d.query_selector(selector).ok().flatten())
    {
        let rect = element.get_bounding_client_rect();
        let height = window
            .inner_height()
            .ok()
            .and_then(|h| h.as_f64())
            .unwrap_or(0.0);
        if rect.top() >= margin && rect.bottom() <= height - margin {
            return;
        }
        let options = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&options, &"block".into(), &"center".into());
        let _ = js_sys::Reflect::get(&element, &"scrollIntoView".into())
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
            .map(|f| f.call1(&element, &options));
    }
}

/// The paths of the app's icons, drawn in a 16 × 16 box with the text's colour.
pub const CLOSE: &str = "M4 4l8 8M12 4l-8 8";
pub const PLAY: &str = "M4.5 2.5v11l9-5.5z";
pub const PAUSE: &str = "M5 3v10M11 3v10";
pub const BACK: &str = "M13 8H3M7 4 3 8l4 4";
pub const NEXT: &str = "M3 8h10M9 4l4 4-4 4";
pub const UNDO: &str = "M5 2 2 5l3 3M2 5h8a4 4 0 0 1 0 8H6";
pub const REDO: &str = "M11 2l3 3-3 3M14 5H6a4 4 0 0 0 0 8h4";
pub const MINUS: &str = "M3 8h10";
pub const PLUS: &str = "M3 8h10M8 3v10";

/// An icon as inline SVG, hidden from assistive technology (its button has the name).
pub fn icon(path: &'static str) -> impl IntoView {
    view! {
        <svg class="ico" viewBox="0 0 16 16" aria-hidden="true" focusable="false"><path d=path /></svg>
    }
}

/// Saves `text` as a file called `name`, as the browser saves a download: a Blob behind an
/// object URL, and a temporary `<a download>` clicked. False if the browser refused.
pub fn download(name: &str, text: &str) -> bool {
    let saved = (|| {
        let options = web_sys::BlobPropertyBag::new();
        options.set_type("application/json");
        let parts = js_sys::Array::of1(&text.into());
        let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options).ok()?;
        let url = web_sys::Url::create_object_url_with_blob(&blob).ok()?;
        let document = web_sys::window()?.document()?;
        let link = document.create_element("a").ok()?;
        link.set_attribute("href", &url).ok()?;
        link.set_attribute("download", name).ok()?;
        document.body()?.append_child(&link).ok()?;
        link.dyn_ref::<web_sys::HtmlElement>()?.click();
        link.remove();
        // The download has started from the URL by now; give it a moment before letting go.
        set_timeout(
            move || {
                let _ = web_sys::Url::revoke_object_url(&url);
            },
            std::time::Duration::from_secs(10),
        );
        Some(())
    })();
    saved.is_some()
}

/// The first file chosen in a file input.
pub fn chosen_file(input: &web_sys::HtmlInputElement) -> Option<web_sys::File> {
    input.files()?.get(0)
}

/// The value of `name=` in the URL's fragment, removed from the address bar (so that a reload,
/// a bookmark or a shared link never carries it).
pub fn take_fragment_value(name: &str) -> Option<String> {
    let window = web_sys::window()?;
    let location = window.location();
    let hash = location.hash().ok()?;
    let value = hash
        .trim_start_matches('#')
        .split('&')
        .find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
        .map(str::to_string)?;
    let clean = format!(
        "{}{}",
        location.pathname().unwrap_or_default(),
        location.search().unwrap_or_default()
    );
    if let Ok(history) = window.history() {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&clean));
    }
    Some(value)
}

/// Whether the app is shown inside another page's frame.
pub fn in_frame() -> bool {
    let Some(window) = web_sys::window() else {
        return false;
    };
    match window.top() {
        Ok(Some(top)) => !js_sys::Object::is(&top, &window),
        _ => false,
    }
}
