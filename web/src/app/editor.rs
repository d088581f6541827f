//! The scenario page: it opens the scenario and the student's draft, then composes the task,
//! the requirements with the instant preview, the toolbar, the canvas, the inspector, and the
//! results, around the page's state in `page`.

use std::rc::Rc;

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::beyond::BeyondThisScenario;
use super::canvas_view::CanvasView;
use super::dom::load_once;
use super::drafts::{self, Loaded};
use super::inspector::Inspector;
use super::page::{Mode, Page};
use super::preview::{self, Requirements, SqlView};
use super::results::{ReplayPanel, ResultsPanel};
use super::router::Link;
use super::toolbar::Toolbar;
use crate::markdown::{self, Block, Inline};

/// The scenario page, from loading to the open workspace.
#[component]
pub fn ScenarioPage(id: String) -> impl IntoView {
    let key = id.clone();
    let loaded = load_once(drafts::load(key));
    view! {
        {move || match loaded.get() {
            None => view! { <section class="page narrow"><p class="muted" role="status">"Loading the scenario…"</p></section> }.into_any(),
            Some(Err(message)) => view! {
                <section class="page narrow">
                    <h1>"This scenario could not be opened"</h1>
                    <p class="error" role="alert">{message}</p>
                    <p><Link href="/".to_string()>"Back to the scenarios"</Link></p>
                </section>
            }.into_any(),
            Some(Ok(loaded)) => view! { <Workspace loaded=loaded mode=Mode::Student back=("/".to_string(), "← All scenarios") /> }.into_any(),
        }}
    }
}

/// The page once the scenario is open: the task and requirements, the toolbar and canvas, the
/// results and SQL tabs, and the inspector or the replay beside them. `back` is the link above
/// the title and its words.
#[component]
pub fn Workspace(loaded: Rc<Loaded>, mode: Mode, back: (String, &'static str)) -> impl IntoView {
    let id = loaded.scenario.scenario().id.clone();
    let page = Page::new(
        loaded.scenario.clone(),
        loaded.start.clone(),
        loaded.design.clone(),
        loaded.restored,
        mode,
    );
    if let Some((verdict, checked)) = loaded.verdict.clone() {
        page.verdict.set(Some(verdict));
        page.checked_design.set(Some(checked));
    }
    provide_context(page);
    // On a phone the options open as a sheet over the lower part of the screen: bring the
    // drawing to the top, so that the selected node stays in sight above the sheet.
    Effect::new(move |was: Option<bool>| {
        let open = page.selected.with(Option::is_some);
        let narrow = window()
            .inner_width()
            .ok()
            .and_then(|w| w.as_f64())
            .is_some_and(|w| w <= 600.0);
        if open && was == Some(false) {
            page.sheet_folded.set(false);
        }
        if open && was == Some(false) && narrow {
            if let Some(canvas) = document().query_selector(".canvas-wrap").ok().flatten() {
                canvas.scroll_into_view();
            }
        }
        open
    });
    preview::follow_design(page);
    if mode == Mode::Student {
        drafts::keep_history(page, id.clone());
        drafts::autosave(page, id);
    }

    // Undo, redo and Check work wherever the focus is on this page.
    let keys = window_event_listener(leptos::ev::keydown, move |ev: leptos::ev::KeyboardEvent| {
        if !(ev.ctrl_key() || ev.meta_key()) {
            return;
        }
        match ev.key().to_ascii_lowercase().as_str() {
            "z" if ev.shift_key() => {
                ev.prevent_default();
                page.redo();
            }
            "z" => {
                ev.prevent_default();
                page.undo();
            }
            "y" => {
                ev.prevent_default();
                page.redo();
            }
            // Check, from anywhere on the page: the button says so.
            "enter" => {
                ev.prevent_default();
                if let Some(button) = document()
                    .query_selector("button.check")
                    .ok()
                    .flatten()
                    .and_then(|b| b.dyn_into::<web_sys::HtmlElement>().ok())
                {
                    button.click();
                }
            }
            _ => {}
        }
    });
    on_cleanup(move || keys.remove());

    let scenario = loaded.scenario.scenario();
    let title = scenario.title.clone();
    let blocks = markdown::parse(&scenario.task);
    view! {
        <div class="workspace">
            <aside class="brief" aria-label="The task">
                <p class="crumbs"><Link href=back.0>{back.1}</Link></p>
                <h1>{title}</h1>
                <p class="scenario-id"><code>{scenario.id.clone()}</code></p>
                <div class="task">{render_markdown(blocks)}</div>
                <Requirements />
            </aside>
            <section class="stage" aria-label="Your design">
                <Toolbar />
                <CanvasView />
                <div class="panel-tabs" role="tablist" aria-label="Results and SQL">
                    <button role="tab" id="tab-results" aria-selected=move || (page.tab.get() == "results").to_string()
                        on:click=move |_| page.tab.set("results")>"Results"</button>
                    <button role="tab" id="tab-sql" aria-selected=move || (page.tab.get() == "sql").to_string()
                        on:click=move |_| page.tab.set("sql")>"SQL"</button>
                </div>
                <div class="panel" role="tabpanel">
                    {move || if page.tab.get() == "sql" { view! { <SqlView /> }.into_any() } else { view! { <ResultsPanel /><BeyondThisScenario /> }.into_any() }}
                </div>
            </section>
            // On a phone the inspector is a sheet over the drawing, open while something is
            // selected or replayed.
            <aside class="side" aria-label="Inspector"
                class:sheet-open=move || page.selected.with(Option::is_some) || page.replay.with(Option::is_some)
                class:replaying=move || page.replay.with(Option::is_some)
                class:folded=move || page.sheet_folded.get() && page.replay.with(Option::is_none)>
                {move || if page.replay.with(Option::is_some) { view! { <ReplayPanel /> }.into_any() } else { view! { <Inspector /> }.into_any() }}
            </aside>
        </div>
    }
}

fn render_inlines(inlines: Vec<Inline>) -> impl IntoView {
    inlines
        .into_iter()
        .map(|i| match i {
            Inline::Text(t) => view! { <span>{t}</span> }.into_any(),
            Inline::Strong(t) => view! { <strong>{t}</strong> }.into_any(),
            Inline::Emphasis(t) => view! { <em>{t}</em> }.into_any(),
            Inline::Code(t) => view! { <code>{t}</code> }.into_any(),
        })
        .collect_view()
}

/// The task's Markdown, as the few elements it may use.
fn render_markdown(blocks: Vec<Block>) -> impl IntoView {
    blocks
        .into_iter()
        .map(|b| match b {
            Block::Heading(i) => view! { <h3>{render_inlines(i)}</h3> }.into_any(),
            Block::Paragraph(i) => view! { <p>{render_inlines(i)}</p> }.into_any(),
            Block::List(items) => view! { <ul>{items.into_iter().map(|i| view! { <li>{render_inlines(i)}</li> }).collect_view()}</ul> }.into_any(),
        })
        .collect_view()
}
