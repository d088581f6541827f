//! The catalogue: the scenarios in course order with the student's progress.

use leptos::prelude::*;
use shared::wire::catalogue::ProgressState;

use super::api;
use super::dom::load_once;
use super::router::Link;

fn progress_words(progress: ProgressState) -> (&'static str, &'static str) {
    match progress {
        ProgressState::Passed => ("passed", "✓ Passed"),
        ProgressState::Tried => ("tried", "◐ Tried"),
        ProgressState::NotTried => ("not-tried", "○ Not tried"),
    }
}

#[component]
pub fn Catalogue() -> impl IntoView {
    let entries = load_once(api::catalogue());
    view! {
        <section class="page catalogue">
            <h1>"Practice scenarios"</h1>
            <p class="lede">"Each scenario is a small pipeline that breaks when something fails. Draw a design, press Check, and the simulator runs it under every failure the scenario allows."</p>
            {move || match entries.get() {
                None => view! { <p class="muted" role="status">"Loading the scenarios…"</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error" role="alert">{format!("The scenarios could not be loaded: {}", e.message)}</p> }.into_any(),
                Some(Ok(list)) => {
                    let passed = list.iter().filter(|e| e.progress == ProgressState::Passed).count();
                    let total = list.len();
                    view! {
                        <p class="progress-summary">{format!("{passed} of {total} passed")}</p>
                        <ol class="cards">
                            {list.into_iter().map(|e| {
                                let (class, words) = progress_words(e.progress);
                                let href = format!("/scenarios/{}", e.id);
                                let id = e.id.clone();
                                view! {
                                    <li class="card" data-scenario=e.id.clone()>
                                        <Link href=href class="card-link">
                                            <span class="card-order">{e.order}</span>
                                            <span class="card-body">
                                                <span class="card-title">{e.title.clone()}</span>
                                                <span class="card-id">{id}</span>
                                                <span class="concepts">
                                                    {e.concepts.iter().map(|c| view! { <span class="chip">{c.clone()}</span> }).collect_view()}
                                                </span>
                                            </span>
                                            <span class=format!("badge {class}")>{words}</span>
                                        </Link>
                                    </li>
                                }
                            }).collect_view()}
                        </ol>
                    }.into_any()
                }
            }}
        </section>
    }
}
