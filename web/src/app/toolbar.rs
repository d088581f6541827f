//! The toolbar above the canvas: the palette that adds nodes, undo, redo and reset, the design
//! file (download it, open one), where the draft stands, and the Check that asks the server
//! for the graded verdict.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::api;
use super::dom::{self, bring_into_view, icon, REDO, UNDO};
use super::page::{CurrentClass, DraftState, Mode, Page, Selection, TryOn};
use crate::canvas::{self, Editor};
use crate::design_file::{self, Refused};
use crate::words;

/// The largest file opened as a design, as the autograder reads it: a design is a few
/// kilobytes.
const MAX_FILE_BYTES: f64 = 1024.0 * 1024.0;

/// Downloads the design as the file Gradescope's autograder takes. The scenario's hash is the
/// one the server gave with the last verdict; without a verdict the file has none.
fn download_design(page: Page) {
    let id = page.scenario.with_value(|s| s.scenario().id.clone());
    let hash = page
        .verdict
        .with_untracked(|v| v.as_ref().map(|v| v.scenario_hash.clone()))
        .or_else(|| {
            let (_, answer) = api::local::last_verdict(&id)?;
            Some(api::verdict_of(&answer)?.scenario_hash)
        });
    let text = page
        .editor
        .with_untracked(|e| design_file::export(&id, hash.as_deref(), e.design()));
    let name = design_file::file_name(&id);
    if dom::download(&name, &text) {
        page.say(
            format!("Downloaded {name}: this is the file to upload for grading."),
            false,
        );
    } else {
        page.say("The browser did not let the design be downloaded.", true);
    }
}

/// Opens the file chosen in the input: its design replaces the canvas's, as one edit that Undo
/// takes back; a file that is no design for this scenario is refused with the reason.
fn open_design(page: Page, input: web_sys::HtmlInputElement) {
    let chosen = dom::chosen_file(&input);
    // Choosing the same file again must be a change too.
    input.set_value("");
    let Some(file) = chosen else {
        return;
    };
    let name = file.name();
    if file.size() > MAX_FILE_BYTES {
        page.say(
            format!("{name} is too large to be a design (a design is a few kilobytes)."),
            true,
        );
        return;
    }
    let id = page.scenario.with_value(|s| s.scenario().id.clone());
    leptos::task::spawn_local(async move {
        let text = wasm_bindgen_futures::JsFuture::from(file.text())
            .await
            .ok()
            .and_then(|t| t.as_string());
        let Some(text) = text else {
            page.say(format!("{name} could not be read."), true);
            return;
        };
        match design_file::open(&text, &id) {
            Ok(design) => {
                let same = page
                    .editor
                    .with_untracked(|e| canvas::same_meaning(e.design(), &design));
                page.editor.update(|e| e.replace(design));
                page.selected.set(None);
                page.say(
                    if same {
                        format!("{name} holds the design already on the canvas.")
                    } else {
                        format!("Opened {name} (Undo brings back the design you had).")
                    },
                    false,
                );
            }
            Err(Refused::OtherScenario(other)) => {
                // The file names its scenario by id; the student knows it by its title.
                let title = api::catalogue()
                    .await
                    .ok()
                    .and_then(|list| list.into_iter().find(|s| s.id == other))
                    .map_or(other, |s| s.title);
                page.say(design_file::other_scenario(&title), true);
            }
            Err(Refused::Unreadable(why)) => page.say(why, true),
        }
    });
}

/// The palette, undo and redo, reset, where the draft stands, and Check.
#[component]
pub fn Toolbar() -> impl IntoView {
    let page = expect_context::<Page>();
    let kinds = page
        .scenario
        .with_value(|s| canvas::palette_kinds(s.scenario()));
    let current = use_context::<CurrentClass>();
    let try_on = use_context::<TryOn>();
    let check = move |_| {
        if page.checking.get_untracked() {
            return;
        }
        let id = page.scenario.with_value(|s| s.scenario().id.clone());
        let design = page.editor.with_untracked(|e| e.design().clone());
        let class = current.and_then(|c| c.for_attempt());
        let try_on = try_on.clone();
        page.checking.set(true);
        page.check_error.set(None);
        page.tab.set("results");
        // The server's verdict is the graded one; a new verdict ends the replay of the old.
        // An author's try is checked without recording an attempt.
        leptos::task::spawn_local(async move {
            let answer = if page.mode == Mode::Try {
                match try_on {
                    Some(TryOn(file)) => api::author::check_file(&file, &design).await,
                    None => api::check(&id, &design).await,
                }
            } else {
                api::submit(&id, &design, class.as_deref())
                    .await
                    .map(|(verdict, answer)| {
                        api::local::store_verdict(&id, &design, &answer);
                        if api::answer_is_late(&answer) {
                            page.say(
                                "Recorded as late: it came after your due date, so your class counts your best on-time attempt.",
                                false,
                            );
                        }
                        verdict
                    })
            };
            let checked = answer.is_ok();
            match answer {
                Ok(verdict) => {
                    page.replay.set(None);
                    page.verdict.set(Some(verdict));
                    page.checked_design.set(Some(design));
                }
                Err(e) => page.check_error.set(Some(e)),
            }
            page.checking.set(false);
            if checked {
                // On a phone the verdict is below the drawing: bring it into view once the
                // page has laid out what the check changed (two frames on), and again in the
                // next moments, while what the verdict draws around it settles (the toolbar
                // wraps back to its lines once Check reads "Check" again).
                const MARGIN: f64 = 24.0;
                request_animation_frame(|| {
                    request_animation_frame(|| bring_into_view(".verdict-summary", MARGIN))
                });
                for ms in [300, 800, 1500] {
                    set_timeout(
                        || bring_into_view(".verdict-summary", MARGIN),
                        std::time::Duration::from_millis(ms),
                    );
                }
            }
        });
    };
    let file_input = NodeRef::<leptos::html::Input>::new();
    if page.read_only() {
        return view! {
            <div class="toolbar">
                <p class="read-only-note" role="note">"Shown read-only, as the file has it: select a node to see its options, or replay a missed requirement."</p>
            </div>
        }
        .into_any();
    }
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
                                let id = page.scenario.with_value(|s| page.editor.try_update(|e| e.add_node(s.scenario(), kind, None))).unwrap_or_default();
                                page.selected.set(Some(Selection::Node(id.clone())));
                                page.reveal(&id);
                                // The new node takes the focus, so that the keys act on it
                                // (Delete removes it, the arrows move it) once it is drawn.
                                let selector = format!("g.node[data-node=\"{id}\"]");
                                request_animation_frame(move || {
                                    dom::focus(&selector);
                                });
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
                <button class="secondary download-design" title="Save this design as a file, the one to upload for grading" on:click=move |_| download_design(page)>"Download design"</button>
                <button class="secondary open-design" title="Open a design file you downloaded" on:click=move |_| {
                    if let Some(input) = file_input.get() {
                        input.click();
                    }
                }>"Open design"</button>
                <input type="file" class="file-input" accept=".json,application/json" hidden aria-label="Design file to open" node_ref=file_input
                    on:change=move |ev| {
                        if let Some(input) = dom::event_element(&ev).and_then(|e| e.dyn_into().ok()) {
                            open_design(page, input);
                        }
                    } />
                <span class="saved" role="status" aria-live="polite">{move || match page.saved.get() {
                    DraftState::Unchanged => "",
                    DraftState::Saving => "Saving…",
                    DraftState::Saved => "Draft saved",
                    DraftState::Local => "Saved in this browser (offline)",
                }}</span>
                <button class="primary check" on:click=check disabled=move || page.checking.get()
                    aria-keyshortcuts="Control+Enter Meta+Enter" title="Check (Ctrl+Enter, or ⌘+Enter on a Mac)">
                    {move || if page.checking.get() { "Checking…" } else { "Check" }}
                    <kbd class="shortcut" aria-hidden="true">"Ctrl+↵"</kbd>
                </button>
            </div>
        </div>
    }
    .into_any()
}
