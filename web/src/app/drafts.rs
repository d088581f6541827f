//! The student's draft: brought back when a scenario opens, and saved as it changes.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use leptos::prelude::*;
use shared::design::{design_from_json, Design};
use shared::Scenario;

use super::api;
use super::debounce::Debounce;
use super::page::{DraftState, Page};

/// A scenario as opened: the design on the canvas is the draft that came back, if any.
pub struct Loaded {
    pub scenario: Arc<Scenario>,
    pub start: Design,
    pub design: Design,
    pub restored: Option<&'static str>,
}

fn empty_design() -> Design {
    Design {
        nodes: Vec::new(),
        edges: Vec::new(),
    }
}

/// Fetches the scenario and brings back the student's draft: the one kept in this browser if
/// the server never received it, else the server's, else the browser's when the server is out
/// of reach.
pub async fn load(id: String) -> Result<Rc<Loaded>, String> {
    let scenario = api::scenario(&id).await.map_err(|e| e.message)?;
    let start = scenario
        .starting_design
        .as_ref()
        .and_then(|j| design_from_json(j).ok())
        .unwrap_or_else(empty_design);
    let local = api::local::load(&id)
        .and_then(|(json, synced)| Some((design_from_json(&json).ok()?, synced)));
    let (design, restored) = match local {
        // A local draft the server never received is the newest.
        Some((design, false)) => {
            if api::save_draft(&id, &design).await.is_ok() {
                api::local::store(&id, &design, true);
            }
            (
                Some(design),
                "Your draft is back (kept in this browser while the server was out of reach).",
            )
        }
        local => match api::draft(&id).await {
            Ok(saved) => (
                saved.and_then(|j| design_from_json(&j).ok()),
                "Your saved draft is back. Reset returns to the starting design.",
            ),
            Err(_) => (
                local.map(|(d, _)| d),
                "The server is out of reach; this is the draft kept in this browser.",
            ),
        },
    };
    let restored = design.is_some().then_some(restored);
    Ok(Rc::new(Loaded {
        design: design.unwrap_or_else(|| start.clone()),
        scenario: Arc::new(scenario),
        start,
        restored,
    }))
}

/// Saves the draft a moment after the last edit: first in this browser, so that nothing is
/// lost while the server is out of reach, then on the server.
pub fn autosave(page: Page, id: String) {
    let save = Debounce::new(Duration::from_millis(400));
    // The design the page opens with is already saved; only edits need saving.
    let first = StoredValue::new(true);
    Effect::new(move |_| {
        let design = page.editor.with(|e| e.design().clone());
        if first.get_value() {
            first.set_value(false);
            return;
        }
        page.saved.set(DraftState::Saving);
        let id = id.clone();
        save.run(move |ticket| {
            api::local::store(&id, &design, false);
            leptos::task::spawn_local(async move {
                let ok = api::save_draft(&id, &design).await.is_ok();
                if ok {
                    api::local::store(&id, &design, true);
                }
                // A later edit has its own save under way, which will say how it went.
                if ticket.is_current() {
                    page.saved.set(if ok {
                        DraftState::Saved
                    } else {
                        DraftState::Local
                    });
                }
            });
        });
    });
}
