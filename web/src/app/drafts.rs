//! The student's draft: brought back when a scenario opens, and saved as it changes.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use leptos::prelude::*;
use shared::design::{design_from_json, Design};
use shared::Verdict;

use crate::student_view::StudentScenario;

use super::api;
use super::debounce::Debounce;
use super::page::{DraftState, Page};
use crate::canvas::{same_meaning, History};

/// A scenario as opened: the design on the canvas is the draft that came back, if any.
pub struct Loaded {
    pub scenario: Arc<StudentScenario>,
    pub start: Design,
    pub design: Design,
    pub restored: Option<&'static str>,
    /// The last verdict of this scenario and the design it was for, when the design has not
    /// changed in meaning since.
    pub verdict: Option<(Verdict, Design)>,
}

fn empty_design() -> Design {
    Design {
        nodes: Vec::new(),
        edges: Vec::new(),
    }
}

/// Fetches the scenario and brings back the student's draft. The browser keeps every edit at
/// once; a draft it kept that the server may not have (the student left before the save, or
/// the server was out of reach) is the newest, and goes to the server now. Otherwise the
/// server's draft is asked for only when this browser knows one was saved, so a first visit
/// makes no request that must fail.
pub async fn load(id: String) -> Result<Rc<Loaded>, String> {
    let scenario = api::scenario(&id).await.map_err(|e| e.message)?;
    let start = scenario
        .scenario()
        .starting_design
        .as_ref()
        .and_then(|j| design_from_json(j).ok())
        .unwrap_or_else(empty_design);
    let local = api::local::load(&id)
        .and_then(|(json, synced)| Some((design_from_json(&json).ok()?, synced)));
    let (design, restored) = match local {
        None => (None, ""),
        Some((design, false)) => {
            let words = if api::save_draft(&id, &design).await {
                api::local::store(&id, &design, true);
                "Your draft is back (kept in this browser, and now on the server too)."
            } else {
                "Your draft is back (kept in this browser while the server is out of reach)."
            };
            (Some(design), words)
        }
        Some((design, true)) => match api::draft(&id).await {
            Ok(saved) => (
                saved
                    .and_then(|j| design_from_json(&j).ok())
                    .or(Some(design)),
                "Your saved draft is back. Reset returns to the starting design.",
            ),
            Err(_) => (
                Some(design),
                "The server is out of reach; this is the draft kept in this browser.",
            ),
        },
    };
    let restored = design.is_some().then_some(restored);
    let design = design.unwrap_or_else(|| start.clone());
    let verdict = api::local::last_verdict(&id).and_then(|(json, answer)| {
        let checked = design_from_json(&json).ok()?;
        same_meaning(&checked, &design)
            .then(|| Some((api::verdict_of(&answer)?, checked)))
            .flatten()
    });
    Ok(Rc::new(Loaded {
        verdict,
        design,
        scenario: Arc::new(scenario),
        start,
        restored,
    }))
}

/// Keeps the draft: in this browser at every edit, at once; on the server a moment after the
/// last edit; and, when the student leaves (another page of the app, a reload, a closed or
/// hidden tab) before that moment, with a request that outlives the page and that nothing
/// waits for.
pub fn autosave(page: Page, id: String) {
    let save = Debounce::new(Duration::from_millis(400));
    // The edit the server may not have yet. Plain Rust, so it outlives the page's signals for
    // the last send when the page goes away.
    let pending: Rc<RefCell<Option<Design>>> = Rc::default();
    // The design the page opens with is already saved; only edits need saving.
    let first = StoredValue::new(true);
    let (id2, pending2) = (id.clone(), pending.clone());
    Effect::new(move |_| {
        let design = page.editor.with(|e| e.design().clone());
        if first.get_value() {
            first.set_value(false);
            return;
        }
        api::local::store(&id2, &design, false);
        *pending2.borrow_mut() = Some(design.clone());
        page.saved.set(DraftState::Saving);
        let (id, pending) = (id2.clone(), pending2.clone());
        save.run(move |ticket| {
            leptos::task::spawn_local(async move {
                let ok = api::save_draft(&id, &design).await;
                // A later edit has its own save under way, which will say how it went.
                if ticket.is_current() {
                    if ok {
                        api::local::store(&id, &design, true);
                        pending.borrow_mut().take();
                    }
                    page.saved.set(if ok {
                        DraftState::Saved
                    } else {
                        DraftState::Local
                    });
                }
            });
        });
    });
    let flush = Rc::new(move || {
        let Some(design) = pending.borrow_mut().take() else {
            return;
        };
        save.cancel();
        let Some(sent) = api::save_draft_keepalive(&id, &design) else {
            return;
        };
        let id = id.clone();
        leptos::task::spawn_local(async move {
            if api::answered_ok(sent).await {
                // Marked as on the server only if no later edit replaced it meanwhile.
                let same = api::local::load(&id)
                    .and_then(|(json, _)| design_from_json(&json).ok())
                    .is_some_and(|kept| kept == design);
                if same {
                    api::local::store(&id, &design, true);
                }
                page.saved.try_set(DraftState::Saved);
            }
        });
    });
    let (on_hide, on_hidden) = (flush.clone(), flush.clone());
    let hide = window_event_listener(leptos::ev::pagehide, move |_| on_hide());
    let hidden = window_event_listener(leptos::ev::visibilitychange, move |_| {
        if document().hidden() {
            on_hidden();
        }
    });
    // Leaving the scenario for another page of the app disposes the page: the last send.
    // The browser has one thread, so the wrapper's check never fails.
    let flush = leptos::__reexports::send_wrapper::SendWrapper::new(flush);
    on_cleanup(move || {
        hide.remove();
        hidden.remove();
        flush();
    });
}

/// Keeps the undo history for the tab's session: it comes back when the scenario opens again
/// on the design it led to, and is written a moment after each edit and when the page goes.
pub fn keep_history(page: Page, id: String) {
    if let Some(kept) = api::history::load(&id) {
        // Positions may differ by a move made just before the page went; the meaning may not.
        if page
            .editor
            .with_untracked(|e| same_meaning(e.design(), &kept.design))
        {
            page.editor.update_untracked(|e| {
                e.restore_history(History::from_parts(kept.past, kept.future))
            });
        }
    }
    let write = {
        let id = id.clone();
        move || {
            page.editor.try_with_untracked(|e| {
                let (past, future) = e.history().parts();
                api::history::store(&id, e.design(), past, future);
            });
        }
    };
    // An edit, an undo or a redo is written at once; the steps of a move a moment after.
    let soon = Debounce::new(Duration::from_millis(250));
    let later = write.clone();
    Effect::new(move |was: Option<(usize, usize)>| {
        let lengths = page.editor.with(|e| {
            let (past, future) = e.history().parts();
            (past.len(), future.len())
        });
        if was.is_some_and(|was| was != lengths) {
            soon.cancel();
            later();
        } else if was.is_some() {
            let write = later.clone();
            soon.run(move |_| write());
        }
        lengths
    });
    let on_hide = write.clone();
    let hide = window_event_listener(leptos::ev::pagehide, move |_| on_hide());
    let write = leptos::__reexports::send_wrapper::SendWrapper::new(write);
    on_cleanup(move || {
        hide.remove();
        soon.cancel();
        write();
    });
}
