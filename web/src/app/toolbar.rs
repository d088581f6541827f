//! The toolbar above the canvas: the palette that adds nodes, undo, redo and reset, where the
//! draft stands, and the Check that asks the server for the graded verdict.

use leptos::prelude::*;

use super::api;
use super::dom::{icon, scroll_into_view, REDO, UNDO};
use super::page::{DraftState, Page, Selection};
use crate::canvas::{self, Editor};
use crate::words;

/// The palette, undo and redo, reset, where the draft stands, and Check.
#[component]
pub fn Toolbar() -> impl IntoView {
    let page = expect_context::<Page>();
    let kinds = page.scenario.with_value(|s| canvas::palette_kinds(s));
    let check = move |_| {
        if page.checking.get_untracked() {
            return;
        }
        let id = page.scenario.with_value(|s| s.id.clone());
        let design = page.editor.with_untracked(|e| e.design().clone());
        page.checking.set(true);
        page.check_error.set(None);
        page.tab.set("results");
        // The server's verdict is the graded one; a new verdict ends the replay of the old.
        leptos::task::spawn_local(async move {
            match api::submit(&id, &design).await {
                Ok((verdict, answer)) => {
                    api::local::store_verdict(&id, &design, &answer);
                    page.replay.set(None);
                    page.verdict.set(Some(verdict));
                    page.checked_design.set(Some(design));
                    // On a phone the verdict is below the drawing: bring it into view.
                    request_animation_frame(|| scroll_into_view(".verdict-summary"));
                }
                Err(e) => page.check_error.set(Some(e)),
            }
            page.checking.set(false);
        });
    };
    view! {
        <div class="toolbar">
            <div class="palette" role="group" aria-label="Palette: add a node">
                {kinds.into_iter().map(|kind| {
                    let title = words::kind_title(kind);
                    view! {
                        <button class=format!("palette-item kind-{}", kind.name()) draggable="true" title=words::kind_line(kind)
                            aria-label=format!("Add {}", title.to_lowercase())
                            on:dragstart=move |ev: leptos::ev::DragEvent| {
                                if let Some(dt) = ev.data_transfer() {
                                    let _ = dt.set_data("application/x-pipeline-kind", kind.name());
                                    let _ = dt.set_data("text/plain", kind.name());
                                }
                            }
                            on:click=move |_| {
                                let id = page.scenario.with_value(|s| page.editor.try_update(|e| e.add_node(s, kind, None))).unwrap_or_default();
                                page.selected.set(Some(Selection::Node(id.clone())));
                                page.reveal(&id);
                                page.say(format!("Added {} \"{id}\". Tab to it to move or connect it.", kind.describe()), false);
                            }>
                            <span class="plus" aria-hidden="true">"+"</span>{title}
                        </button>
                    }
                }).collect_view()}
            </div>
            <div class="actions">
                <button class="icon" aria-label="Undo (Ctrl+Z)" title="Undo (Ctrl+Z)" disabled=move || !page.editor.with(Editor::can_undo) on:click=move |_| page.undo()>{icon(UNDO)}</button>
                <button class="icon" aria-label="Redo (Ctrl+Shift+Z)" title="Redo (Ctrl+Shift+Z or Ctrl+Y)" disabled=move || !page.editor.with(Editor::can_redo) on:click=move |_| page.redo()>{icon(REDO)}</button>
                <button class="secondary" aria-label="Reset to the starting design" title="Reset to the starting design" on:click=move |_| {
                    let start = page.start.get_value();
                    page.editor.update(|e| e.replace(start));
                    page.selected.set(None);
                    page.say("Back to the starting design (Undo brings your design back).", false);
                }>"Reset"</button>
                <span class="saved" role="status" aria-live="polite">{move || match page.saved.get() {
                    DraftState::Unchanged => "",
                    DraftState::Saving => "Saving…",
                    DraftState::Saved => "Draft saved",
                    DraftState::Local => "Saved in this browser (offline)",
                }}</span>
                <button class="primary check" on:click=check disabled=move || page.checking.get()>
                    {move || if page.checking.get() { "Checking…" } else { "Check" }}
                </button>
            </div>
        </div>
    }
}
