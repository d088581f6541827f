//! Routing inside the app: the pages, the URL they come from, and links that change page
//! without reloading it.

use leptos::prelude::*;

/// The pages of the app; the URL is the source of truth.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    Catalogue,
    Scenario(String),
    /// The author page (`serve --author`).
    Author,
    AuthorScenario(String),
    /// A student joins a class by its code.
    Join(String),
    /// The instructor's sign-in and classes.
    Instructor,
    InstructorClass(String),
    /// A class and one of its students.
    InstructorStudent(String, String),
    /// A class and one of its attempts.
    InstructorAttempt(String, String),
    NotFound,
}

impl Route {
    /// Whether the page is one only instructors and authors open: those load the staff
    /// module (`staff.html`), every other page the student's (`index.html`). The server
    /// picks the page by the same rule: a path under `/instructor` or `/author`.
    pub fn is_staff(&self) -> bool {
        matches!(
            self,
            Route::Author
                | Route::AuthorScenario(_)
                | Route::Instructor
                | Route::InstructorClass(_)
                | Route::InstructorStudent(..)
                | Route::InstructorAttempt(..)
        )
    }
}

pub fn parse_route(path: &str) -> Route {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [] => Route::Catalogue,
        ["scenarios", id] => Route::Scenario((*id).to_string()),
        ["author"] => Route::Author,
        ["author", id] => Route::AuthorScenario((*id).to_string()),
        ["join", code] => Route::Join((*code).to_string()),
        ["instructor"] => Route::Instructor,
        ["instructor", "classes", id] => Route::InstructorClass((*id).to_string()),
        ["instructor", "classes", id, "students", student] => {
            Route::InstructorStudent((*id).to_string(), (*student).to_string())
        }
        ["instructor", "classes", id, "attempts", attempt] => {
            Route::InstructorAttempt((*id).to_string(), (*attempt).to_string())
        }
        _ => Route::NotFound,
    }
}

pub fn current_path() -> String {
    web_sys::window()
        .and_then(|w| w.location().pathname().ok())
        .unwrap_or_else(|| "/".into())
}

/// Navigates inside the app without reloading the page; a page of the other module (a
/// student's page from a staff page, or the reverse) is loaded as a new document.
#[derive(Clone, Copy)]
pub struct Navigator {
    pub route: RwSignal<Route>,
    /// Whether this is the staff module.
    pub staff: bool,
}

impl Navigator {
    pub fn go(self, path: &str) {
        let route = parse_route(path);
        if route != Route::NotFound && route.is_staff() != self.staff {
            if let Some(w) = web_sys::window() {
                let _ = w.location().assign(path);
            }
            return;
        }
        if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
            let _ = history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(path));
        }
        self.route.set(route);
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
