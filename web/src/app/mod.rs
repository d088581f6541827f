//! The browser side: components, routing, and the calls to the server. Exists only on wasm32.
//!
//! Two WASM modules mount it: the student's (`mount_student`: the catalogue, the scenario
//! pages, the join page) and the staff module (`mount_staff`: the instructor's pages and the
//! author page). Each renders its own routes through the same frame, so the linker leaves the
//! staff pages out of the module every student loads.
//!
//! One concern per module, and imports only go down, so that a view can be read, changed or
//! moved without the others:
//! - `page` holds the scenario page's state and the operations on it;
//! - the views (`canvas_view`, `inspector`, `toolbar`, `preview`, `results`, `beyond`) and
//!   the draft's upkeep (`drafts`) build on `page` and never on one another;
//! - `editor` composes them into the scenario page, as `catalogue` is the list of scenarios;
//! - `author` is the author page: the files' problems, and a scenario's designs shown on the
//!   scenario page's workspace, read-only, or tried without recording an attempt;
//!   `instructor` composes the canvas and the results into the instructor's pages (the classes,
//!   a class's dashboard, a student's attempts, one attempt read-only), and `join` is the page
//!   where a student joins a class;
//! - underneath everything: `api` (every HTTP call), `engine_module` (the preview's engine,
//!   loaded on first use), `router` (routes and links), `dom` (small DOM helpers),
//!   `debounce` (work that waits for a quiet moment) and `diff_view` (a counterexample's
//!   table diff, which needs no page).

mod api;
mod author;
mod beyond;
mod canvas_view;
mod catalogue;
mod debounce;
mod diff_view;
mod dom;
mod drafts;
mod editor;
mod engine_module;
mod inspector;
mod instructor;
mod join;
mod page;
mod preview;
mod results;
mod router;
mod toolbar;

use leptos::prelude::*;

use page::CurrentClass;
use router::{current_path, parse_route, Link, Navigator, Route};

/// Mounts the student's module: the catalogue, the scenario pages and the join page.
pub fn mount_student() {
    mount(false, student_page);
}

/// Mounts the staff module: the instructor's pages and the author page, which students never
/// open. It is a WASM module of its own, so the student's module carries none of their code.
pub fn mount_staff() {
    mount(true, staff_page);
}

fn mount(staff: bool, page: fn(Route) -> AnyView) {
    // A panic is a bug of ours: say it in the console rather than fail silently.
    std::panic::set_hook(Box::new(|info| {
        web_sys::console::error_1(&info.to_string().into())
    }));
    mount_to_body(move || view! { <App staff=staff page=page /> });
}

/// The pages of the student's module; a staff page is never shown by it (the server gives
/// those paths the staff module, and a link to one loads it).
fn student_page(route: Route) -> AnyView {
    match route {
        Route::Catalogue => view! { <catalogue::Catalogue /> }.into_any(),
        Route::Scenario(id) => view! { <editor::ScenarioPage id=id /> }.into_any(),
        Route::Join(code) => view! { <join::JoinPage code=code /> }.into_any(),
        _ => not_found(),
    }
}

/// The pages of the staff module; a student's page is loaded by the student's module.
fn staff_page(route: Route) -> AnyView {
    match route {
        Route::Author => view! { <author::AuthorHome /> }.into_any(),
        Route::AuthorScenario(id) => view! { <author::AuthorScenario id=id /> }.into_any(),
        Route::Instructor => view! { <instructor::InstructorHome /> }.into_any(),
        Route::InstructorClass(id) => view! { <instructor::ClassPage id=id /> }.into_any(),
        Route::InstructorStudent(class, student) => {
            view! { <instructor::StudentPage class=class student=student /> }.into_any()
        }
        Route::InstructorAttempt(class, attempt) => {
            view! { <instructor::AttemptPage class=class attempt=attempt /> }.into_any()
        }
        _ => not_found(),
    }
}

fn not_found() -> AnyView {
    view! {
        <section class="page narrow"><h1>"Nothing here"</h1><p><Link href="/".to_string()>"Back to the scenarios"</Link></p></section>
    }
    .into_any()
}

/// The frame of every page (the top bar, the session, the page's title) around the pages of
/// one module.
#[component]
fn App(staff: bool, page: fn(Route) -> AnyView) -> impl IntoView {
    let route = RwSignal::new(parse_route(&current_path()));
    provide_context(Navigator { route, staff });
    let handle = window_event_listener(leptos::ev::popstate, move |_| {
        route.set(parse_route(&current_path()))
    });
    on_cleanup(move || handle.remove());
    // The session comes first, so that every later request carries the student's cookie.
    let student = RwSignal::new(String::new());
    let ready = RwSignal::new(false);
    // A launch from a learning platform hands over a one-time code in the URL's fragment; in
    // a frame that keeps no cookie of this site the session is not there, and the code opens
    // it in a new window instead.
    let handoff = dom::take_fragment_value("lti-handoff");
    let frame_lost = RwSignal::new(None::<String>);
    // The class the student works in: the one chosen when joining, while still a member.
    let class = CurrentClass(RwSignal::new(None));
    provide_context(class);
    leptos::task::spawn_local(async move {
        // The instructor's pages make no student session: they only read one a learning
        // platform's launch may have opened (a staff member signed in by it).
        let instructor = matches!(
            route.get_untracked(),
            Route::Instructor
                | Route::InstructorClass(..)
                | Route::InstructorStudent(..)
                | Route::InstructorAttempt(..)
        );
        let started = if instructor {
            api::current_session().await.map(|s| (s, false))
        } else {
            api::session_started().await
        };
        if let Ok((session, made)) = started {
            student.set(session.display_name.unwrap_or_default());
            // In a frame that keeps no session, nothing personal can be asked for: the way
            // out is offered instead.
            let lost = made && dom::in_frame();
            if lost {
                frame_lost.set(handoff);
            }
            let classes = if lost || instructor {
                None
            } else {
                api::my_classes().await.ok()
            };
            if let Some(list) = classes {
                let chosen = api::class_choice::get();
                let current = list
                    .iter()
                    .find(|c| Some(&c.id) == chosen.as_ref())
                    .or(list.last())
                    .cloned();
                class.0.set(current);
            }
        }
        ready.set(true);
    });
    Effect::new(move |_| {
        let title = match route.get() {
            Route::Catalogue => "Pipeline Builder".to_string(),
            Route::Scenario(id) => format!("{id} · Pipeline Builder"),
            Route::Author => "Author page · Pipeline Builder".to_string(),
            Route::AuthorScenario(id) => format!("{id} · Author page · Pipeline Builder"),
            Route::Join(_) => "Join a class · Pipeline Builder".to_string(),
            Route::Instructor => "Classes · Pipeline Builder".to_string(),
            Route::InstructorClass(_) => "A class · Pipeline Builder".to_string(),
            Route::InstructorStudent(..) => "A student's attempts · Pipeline Builder".to_string(),
            Route::InstructorAttempt(..) => "An attempt · Pipeline Builder".to_string(),
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
            <span class="current-class">{move || class.0.with(|c| c.as_ref().map(|c| {
                // On a scenario's page, the student's due date for it.
                let due = match route.get() {
                    Route::Scenario(id) => c.due.get(&id).map(|at| format!(
                        " · due {} UTC{}",
                        at.replace('T', " ").chars().take(16).collect::<String>(),
                        if c.late_policy == shared::wire::classes::LatePolicy::Refuse { ", then closed" } else { "" },
                    )),
                    _ => None,
                };
                format!("Class: {}{}", c.name, due.unwrap_or_default())
            }))}</span>
            <span class="student">{move || {
                let name = student.get();
                (!name.is_empty()).then(|| view! { <span class="visually-hidden">"Signed in as "</span>{name} })
            }}</span>
        </header>
        {move || frame_lost.get().map(|code| view! {
            <p class="frame-note" role="alert">
                "This course page does not let Pipeline Builder keep you signed in inside it. "
                <a href=format!("/lti/resume?code={code}") target="_blank" rel="noopener">"Open it in a new window"</a>
                " to carry on as yourself."
            </p>
        })}
        <main id="main">
            {move || if !ready.get() { view! { <p class="page muted" role="status">"Loading…"</p> }.into_any() } else { page(route.get()) }}
        </main>
    }
}
