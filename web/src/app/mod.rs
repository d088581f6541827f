//! The browser side: components, routing, and the calls to the server. Exists only on wasm32.

mod api;
mod catalogue;
mod editor;
mod results;

use leptos::prelude::*;
use wasm_bindgen::JsCast;

pub fn mount() {
    // A panic is a bug of ours: say it in the console rather than fail silently.
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&info.to_string().into())
    }));
    mount_to_body(App);
}

/// The pages of the app; the URL is the source of truth.
#[derive(Clone, Debug, PartialEq)]
enum Route {
    Catalogue,
    Scenario(String),
    NotFound,
}

fn parse_route(path: &str) -> Route {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [] => Route::Catalogue,
        ["scenarios", id] => Route::Scenario((*id).to_string()),
        _ => Route::NotFound,
    }
}

fn current_path() -> String {
    web_sys::window()
        .and_then(|w| w.location().pathname().ok())
        .unwrap_or_else(|| "/".into())
}

/// Navigates inside the app without reloading the page.
#[derive(Clone, Copy)]
pub struct Navigator(RwSignal<Route>);

impl Navigator {
    pub fn go(self, path: &str) {
        if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
            let _ = history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(path));
        }
        self.0.set(parse_route(path));
        if let Some(w) = web_sys::window() {
            w.scroll_to_with_x_and_y(0.0, 0.0);
        }
    }
}

/// A link that navigates inside the app (a plain link for a new tab or a modified click).
#[component]
pub fn Link(
    href: String,
    #[prop(optional, into)] class: String,
    children: Children,
) -> impl IntoView {
    let nav = expect_context::<Navigator>();
    let target = href.clone();
    view! {
        <a href=href class=class on:click=move |ev: leptos::ev::MouseEvent| {
            if ev.button() == 0 && !ev.ctrl_key() && !ev.meta_key() && !ev.shift_key() {
                ev.prevent_default();
                nav.go(&target);
            }
        }>{children()}</a>
    }
}

#[component]
fn App() -> impl IntoView {
    let route = RwSignal::new(parse_route(&current_path()));
    provide_context(Navigator(route));
    let handle = window_event_listener(leptos::ev::popstate, move |_| {
        route.set(parse_route(&current_path()))
    });
    on_cleanup(move || handle.remove());
    // The session comes first, so that every later request carries the student's cookie.
    let student = RwSignal::new(String::new());
    let ready = RwSignal::new(false);
    leptos::task::spawn_local(async move {
        if let Ok(session) = api::session().await {
            student.set(session.display_name.unwrap_or_default());
        }
        ready.set(true);
    });
    Effect::new(move |_| {
        let title = match route.get() {
            Route::Catalogue => "Pipeline Builder".to_string(),
            Route::Scenario(id) => format!("{id} · Pipeline Builder"),
            Route::NotFound => "Not found · Pipeline Builder".to_string(),
        };
        if let Some(doc) = web_sys::window().and_then(|w| w.document()) {
            doc.set_title(&title);
        }
    });
    view! {
        <header class="topbar">
            <Link href="/".to_string() class="brand">
                <span class="brand-mark" aria-hidden="true">"⛁"</span>" Pipeline Builder"
            </Link>
            <span class="topbar-course">"Idempotency, retries & exactly-once"</span>
            <span class="student" aria-label="Signed in as">{move || student.get()}</span>
        </header>
        <main id="main">
            {move || if !ready.get() { view! { <p class="page muted" role="status">"Loading…"</p> }.into_any() } else { match route.get() {
                Route::Catalogue => view! { <catalogue::Catalogue /> }.into_any(),
                Route::Scenario(id) => view! { <editor::ScenarioPage id=id /> }.into_any(),
                Route::NotFound => view! {
                    <section class="page narrow"><h1>"Nothing here"</h1><p><Link href="/".to_string()>"Back to the scenarios"</Link></p></section>
                }.into_any(),
            }}}
        </main>
    }
}

/// Runs a future once and holds its answer (`None` until it arrives). A plain task and a
/// signal, lighter than a resource: nothing here is refetched.
pub(crate) fn load_once<T: 'static>(
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
pub(crate) fn event_element(ev: &web_sys::Event) -> Option<web_sys::Element> {
    ev.current_target()?.dyn_into::<web_sys::Element>().ok()
}
