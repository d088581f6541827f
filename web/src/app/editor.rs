//! The scenario page: the task, the requirements with the instant preview, the palette, the
//! canvas, the inspector, Check, and the draft that saves itself.

use std::time::Duration;

use leptos::prelude::*;
use serde_json::Value as Json;
use shared::design::{design_from_json, Design, NodeKind, OptionValues};
use shared::verdict::Verdict;
use shared::{DesignError, Scenario};
use wasm_bindgen::JsCast;

use super::api::{self, ApiError};
use super::results::{ReplayPanel, ResultsPanel};
use super::{event_element, Link};
use crate::canvas::{
    self, allowed_values, hit_test, Editor, Hit, Point, View, NODE_H, NODE_W, PORT_R,
};
use crate::markdown::{self, Block, Inline};
use crate::replay::{self, Frame};
use crate::words;

/// What is selected on the canvas.
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    Node(String),
    Edge(String, String),
}

/// A replay of one requirement's counterexample.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    pub requirement: usize,
    pub index: usize,
    pub playing: bool,
}

/// What the browser's own simulator says about the design, before any Check.
#[derive(Clone, Debug, PartialEq)]
pub enum Preview {
    Pending,
    Invalid(Vec<DesignError>),
    Verdict(Verdict),
    TooLarge,
    Failed(String),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DraftState {
    Unchanged,
    Saving,
    Saved,
    Local,
}

/// The page's state: every piece is a signal, so the struct is `Copy` and shared by context.
#[derive(Clone, Copy)]
pub struct Page {
    pub scenario: StoredValue<std::sync::Arc<Scenario>>,
    pub start: StoredValue<Design>,
    pub editor: RwSignal<Editor>,
    pub selected: RwSignal<Option<Selection>>,
    pub connecting: RwSignal<Option<String>>,
    pub notice: RwSignal<Option<(String, bool)>>,
    notice_generation: StoredValue<u64>,
    pub view: RwSignal<View>,
    pub wire: RwSignal<Option<(Point, Point)>>,
    pub preview: RwSignal<Preview>,
    pub verdict: RwSignal<Option<Verdict>>,
    pub checked_design: RwSignal<Option<Design>>,
    pub checking: RwSignal<bool>,
    pub check_error: RwSignal<Option<ApiError>>,
    pub replay: RwSignal<Option<Replay>>,
    pub saved: RwSignal<DraftState>,
    pub tab: RwSignal<&'static str>,
}

impl Page {
    /// A message over the drawing; `refusal` draws it as a refused action.
    /// It fades after a while, except while a connection waits for its target.
    pub fn say(&self, text: impl Into<String>, refusal: bool) {
        self.notice.set(Some((text.into(), refusal)));
        self.notice_generation.update_value(|g| *g += 1);
        let mine = self.notice_generation.get_value();
        let page = *self;
        set_timeout(
            move || {
                if page.notice_generation.try_get_value() == Some(mine)
                    && page.connecting.try_get_untracked().flatten().is_none()
                {
                    page.notice.try_set(None);
                }
            },
            Duration::from_secs(8),
        );
    }

    pub fn connect(&self, source: &str, target: &str) {
        let result = self
            .editor
            .try_update(|e| e.connect(source, target))
            .unwrap_or(Ok(()));
        self.connecting.set(None);
        match result {
            Ok(()) => self.say(format!("Connected \"{source}\" → \"{target}\"."), false),
            Err(why) => self.say(
                format!("Cannot connect \"{source}\" to \"{target}\": {why}."),
                true,
            ),
        }
    }

    pub fn start_connecting(&self, source: &str) {
        self.connecting.set(Some(source.to_string()));
        self.say(format!("Connecting from \"{source}\": choose the node it feeds (Tab to it and press Enter, or tap it). Esc cancels."), false);
    }

    pub fn delete_selection(&self) {
        match self.selected.get_untracked() {
            Some(Selection::Node(id)) => {
                self.editor.update(|e| {
                    e.delete_node(&id);
                });
                self.say(format!("Deleted \"{id}\"."), false);
            }
            Some(Selection::Edge(a, b)) => {
                self.editor.update(|e| {
                    e.delete_edge(&a, &b);
                });
                self.say(format!("Deleted the connection \"{a}\" → \"{b}\"."), false);
            }
            None => return,
        }
        self.selected.set(None);
        focus(".canvas");
    }

    pub fn undo(&self) {
        if self.editor.try_update(|e| e.undo()).unwrap_or(false) {
            self.say("Undone.", false);
        }
    }

    pub fn redo(&self) {
        if self.editor.try_update(|e| e.redo()).unwrap_or(false) {
            self.say("Redone.", false);
        }
    }

    /// Fits the drawing to the canvas when a node lies outside what the canvas shows.
    pub fn reveal(&self, id: &str) {
        let Some(wrap) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.query_selector(".canvas-wrap").ok().flatten())
        else {
            return;
        };
        let (w, h) = (
            f64::from(wrap.client_width()),
            f64::from(wrap.client_height()),
        );
        let view = self.view.get_untracked();
        let outside = self.editor.with_untracked(|e| {
            e.node(id).is_some_and(|n| {
                let p = canvas::position(n);
                let (x0, y0) = (p.x * view.zoom + view.pan_x, p.y * view.zoom + view.pan_y);
                let (x1, y1) = (x0 + NODE_W * view.zoom, y0 + NODE_H * view.zoom);
                x0 < 0.0 || y0 < 0.0 || x1 > w || y1 > h
            })
        });
        if outside {
            self.view.set(
                self.editor
                    .with_untracked(|e| canvas::fit(e.design(), w, h)),
            );
        }
    }

    /// The replay frame the drawing shows, if a replay is on.
    pub fn frame(&self) -> Option<Frame> {
        let replay = self.replay.get()?;
        self.verdict.with(|v| {
            let ce = v
                .as_ref()?
                .requirements
                .get(replay.requirement)?
                .counterexample
                .as_ref()?;
            let initial = self.scenario.with_value(|s| replay::initial_tables(s));
            replay::frame(ce, &initial, replay.index)
        })
    }
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

struct Loaded {
    scenario: std::sync::Arc<Scenario>,
    start: Design,
    design: Design,
    restored: Option<&'static str>,
}

fn empty_design() -> Design {
    Design {
        nodes: Vec::new(),
        edges: Vec::new(),
    }
}

async fn load(id: String) -> Result<std::rc::Rc<Loaded>, String> {
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
    Ok(std::rc::Rc::new(Loaded {
        design: design.unwrap_or_else(|| start.clone()),
        scenario: std::sync::Arc::new(scenario),
        start,
        restored,
    }))
}

#[component]
pub fn ScenarioPage(id: String) -> impl IntoView {
    let key = id.clone();
    let loaded = super::load_once(load(key));
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
            Some(Ok(loaded)) => view! { <Workspace loaded=loaded /> }.into_any(),
        }}
    }
}

#[component]
fn Workspace(loaded: std::rc::Rc<Loaded>) -> impl IntoView {
    let id = loaded.scenario.id.clone();
    let page = Page {
        scenario: StoredValue::new(loaded.scenario.clone()),
        start: StoredValue::new(loaded.start.clone()),
        editor: RwSignal::new(Editor::new(loaded.design.clone())),
        selected: RwSignal::new(None),
        connecting: RwSignal::new(None),
        notice: RwSignal::new(loaded.restored.map(|words| (words.to_string(), false))),
        notice_generation: StoredValue::new(0),
        view: RwSignal::new(View::default()),
        wire: RwSignal::new(None),
        preview: RwSignal::new(Preview::Pending),
        verdict: RwSignal::new(None),
        checked_design: RwSignal::new(None),
        checking: RwSignal::new(false),
        check_error: RwSignal::new(None),
        replay: RwSignal::new(None),
        saved: RwSignal::new(if loaded.restored.is_some() {
            DraftState::Saved
        } else {
            DraftState::Unchanged
        }),
        tab: RwSignal::new("results"),
    };
    provide_context(page);

    // The instant preview follows the design at once (a few milliseconds after a burst of
    // edits); the draft is saved a moment after the last edit.
    let preview_generation = StoredValue::new(0u64);
    Effect::new(move |_| {
        let design = page.editor.with(|e| e.design().clone());
        preview_generation.update_value(|g| *g += 1);
        let mine = preview_generation.get_value();
        set_timeout(
            move || {
                if preview_generation.get_value() == mine {
                    page.preview
                        .set(page.scenario.with_value(|s| preview(s, &design)));
                }
            },
            Duration::from_millis(40),
        );
    });
    let generation = StoredValue::new(0u64);
    let first = StoredValue::new(true);
    let draft_id = id.clone();
    Effect::new(move |_| {
        let design = page.editor.with(|e| e.design().clone());
        if first.get_value() {
            first.set_value(false);
            return;
        }
        generation.update_value(|g| *g += 1);
        let mine = generation.get_value();
        page.saved.set(DraftState::Saving);
        let draft_id = draft_id.clone();
        set_timeout(
            move || {
                if generation.get_value() != mine {
                    return;
                }
                api::local::store(&draft_id, &design, false);
                leptos::task::spawn_local(async move {
                    let ok = api::save_draft(&draft_id, &design).await.is_ok();
                    if ok {
                        api::local::store(&draft_id, &design, true);
                    }
                    if generation.get_value() == mine {
                        page.saved.set(if ok {
                            DraftState::Saved
                        } else {
                            DraftState::Local
                        });
                    }
                });
            },
            Duration::from_millis(400),
        );
    });

    // Undo and redo work wherever the focus is on this page.
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
            _ => {}
        }
    });
    on_cleanup(move || keys.remove());

    let scenario = loaded.scenario.clone();
    let title = scenario.title.clone();
    let blocks = markdown::parse(&scenario.task);
    view! {
        <div class="workspace">
            <aside class="brief" aria-label="The task">
                <p class="crumbs"><Link href="/".to_string()>"← All scenarios"</Link></p>
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
                    {move || if page.tab.get() == "sql" { view! { <SqlView /> }.into_any() } else { view! { <ResultsPanel /> }.into_any() }}
                </div>
            </section>
            <aside class="side" aria-label="Inspector">
                {move || if page.replay.with(Option::is_some) { view! { <ReplayPanel /> }.into_any() } else { view! { <Inspector /> }.into_any() }}
            </aside>
        </div>
    }
}

fn preview(scenario: &Scenario, design: &Design) -> Preview {
    match shared::validate(scenario, design.clone()) {
        Err(errors) => Preview::Invalid(errors),
        Ok(valid) => {
            // The preview must stay instant: a check that would take long is left to the server.
            let limits = shared::Limits {
                max_schedules: 20_000,
                max_steps: 20_000_000,
            };
            match shared::check_with(scenario, &valid, limits) {
                Ok(verdict) => Preview::Verdict(verdict),
                Err(shared::CheckError::TooLarge { .. }) => Preview::TooLarge,
                Err(e) => Preview::Failed(e.to_string()),
            }
        }
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

/// The requirements, each with what the preview says about it, and its hint on request.
#[component]
fn Requirements() -> impl IntoView {
    let page = expect_context::<Page>();
    let requirements: Vec<(String, String, String)> = page.scenario.with_value(|s| {
        s.requirements
            .iter()
            .map(|r| (r.id.clone(), r.text.clone(), r.hint.clone()))
            .collect()
    });
    view! {
        <section class="requirements" aria-labelledby="req-heading">
            <h2 id="req-heading">"Requirements"</h2>
            <p class="preview-status" role="status">{move || page.preview.with(|p| match p {
                Preview::Pending => "Preview: working…".to_string(),
                Preview::Invalid(_) => "Preview: the design is not complete yet.".to_string(),
                Preview::Verdict(v) => format!("Preview: {} of {} would pass ({} failure schedules tried in your browser). Check for the graded result.", v.score, v.max_score, v.schedules_explored),
                Preview::TooLarge => "Preview: too many schedules to try here; press Check.".to_string(),
                Preview::Failed(e) => format!("Preview unavailable: {e}"),
            })}</p>
            <ul class="req-list">
                {requirements.into_iter().map(|(id, text, hint)| {
                    let rid = id.clone();
                    let state = Memo::new(move |_| page.preview.with(|p| match p {
                        Preview::Verdict(v) => v.requirements.iter().find(|r| r.id == rid).map(|r| if r.passed { "pass" } else { "miss" }).unwrap_or("unknown"),
                        _ => "unknown",
                    }));
                    let show = RwSignal::new(false);
                    let has_hint = !hint.is_empty();
                    view! {
                        <li class=move || format!("req preview-{}", state.get()) data-requirement=id.clone()>
                            <span class="req-mark" aria-label=move || match state.get() { "pass" => "would pass", "miss" => "would miss", _ => "not known yet" }>
                                {move || match state.get() { "pass" => "✓", "miss" => "✗", _ => "·" }}
                            </span>
                            <span class="req-text">{text}</span>
                            {has_hint.then(|| view! {
                                <button class="link-button hint-button" aria-expanded=move || show.get().to_string() on:click=move |_| show.update(|s| *s = !*s)>
                                    {move || if show.get() { "Hide hint" } else { "Hint" }}
                                </button>
                            })}
                            <Show when=move || show.get()><p class="hint">{hint.clone()}</p></Show>
                        </li>
                    }
                }).collect_view()}
            </ul>
            {move || page.preview.with(|p| match p {
                Preview::Invalid(errors) => Some(view! {
                    <div class="design-problems">
                        <h3>"To finish the design"</h3>
                        <ul>{errors.iter().take(6).map(|e| view! { <li>{e.message.clone()}</li> }).collect_view()}</ul>
                    </div>
                }),
                _ => None,
            })}
        </section>
    }
}

#[component]
fn Toolbar() -> impl IntoView {
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
        leptos::task::spawn_local(async move {
            match api::submit(&id, &design).await {
                Ok(verdict) => {
                    page.replay.set(None);
                    page.verdict.set(Some(verdict));
                    page.checked_design.set(Some(design));
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
                <button class="icon" aria-label="Undo (Ctrl+Z)" title="Undo (Ctrl+Z)" disabled=move || !page.editor.with(Editor::can_undo) on:click=move |_| page.undo()>"↶"</button>
                <button class="icon" aria-label="Redo (Ctrl+Shift+Z)" title="Redo (Ctrl+Shift+Z or Ctrl+Y)" disabled=move || !page.editor.with(Editor::can_redo) on:click=move |_| page.redo()>"↷"</button>
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

#[component]
fn Notice() -> impl IntoView {
    let page = expect_context::<Page>();
    view! {
        <p class=move || page.notice.with(|n| match n { Some((_, true)) => "notice refusal", Some(_) => "notice", None => "notice empty" })
            role="status" aria-live="polite">
            {move || page.notice.with(|n| n.as_ref().map(|(t, _)| t.clone()).unwrap_or_default())}
        </p>
    }
}

/// What a pointer is doing on the canvas between down and up.
#[derive(Clone, Debug)]
enum Drag {
    Move {
        id: String,
        before: Design,
        grab: Point,
        start: Point,
        moved: bool,
    },
    Wire {
        from: String,
        start: Point,
    },
    Tap {
        target: String,
    },
    Pan {
        start: Point,
        view: View,
    },
}

fn local_point(ev: &web_sys::MouseEvent) -> Option<Point> {
    let svg = event_element(ev)?;
    let rect = svg.get_bounding_client_rect();
    Some(Point::new(
        f64::from(ev.client_x()) - rect.left(),
        f64::from(ev.client_y()) - rect.top(),
    ))
}

#[component]
fn CanvasView() -> impl IntoView {
    let page = expect_context::<Page>();
    let drag: StoredValue<Option<Drag>> = StoredValue::new(None);
    let wrap = NodeRef::<leptos::html::Div>::new();
    let fit = move || {
        if let Some(div) = wrap.get_untracked() {
            let (w, h) = (
                f64::from(div.client_width()),
                f64::from(div.client_height()),
            );
            page.view.set(
                page.editor
                    .with_untracked(|e| canvas::fit(e.design(), w, h)),
            );
        }
    };
    request_animation_frame(fit);

    let on_down = move |ev: leptos::ev::PointerEvent| {
        if ev.button() != 0 {
            return;
        }
        let Some(screen) = local_point(&ev) else {
            return;
        };
        let world = page.view.get_untracked().to_world(screen);
        let hit = page.editor.with_untracked(|e| hit_test(e.design(), world));
        let next = match hit {
            Hit::OutPort(from) => {
                let port = page
                    .editor
                    .with_untracked(|e| e.node(&from).map(canvas::out_port))
                    .unwrap_or(world);
                page.wire.set(Some((port, world)));
                Some(Drag::Wire {
                    from,
                    start: screen,
                })
            }
            Hit::InPort(target) => Some(Drag::Tap { target }),
            Hit::Node(id) => {
                let p = page
                    .editor
                    .with_untracked(|e| e.node(&id).map(canvas::position))
                    .unwrap_or(world);
                if page.selected.get_untracked() != Some(Selection::Node(id.clone())) {
                    page.selected.set(Some(Selection::Node(id.clone())));
                }
                let before = page.editor.with_untracked(|e| e.design().clone());
                Some(Drag::Move {
                    id,
                    before,
                    grab: Point::new(world.x - p.x, world.y - p.y),
                    start: screen,
                    moved: false,
                })
            }
            Hit::Empty => {
                page.selected.set(None);
                Some(Drag::Pan {
                    start: screen,
                    view: page.view.get_untracked(),
                })
            }
        };
        drag.set_value(next);
        if let Some(el) = event_element(&ev) {
            let _ = el.set_pointer_capture(ev.pointer_id());
        }
    };
    let on_move = move |ev: leptos::ev::PointerEvent| {
        let Some(screen) = local_point(&ev) else {
            return;
        };
        let view = page.view.get_untracked();
        let world = view.to_world(screen);
        drag.update_value(|d| match d {
            Some(Drag::Move {
                id,
                grab,
                start,
                moved,
                ..
            }) => {
                if !*moved && (screen.x - start.x).abs() + (screen.y - start.y).abs() < 4.0 {
                    return;
                }
                *moved = true;
                let to = Point::new(world.x - grab.x, world.y - grab.y);
                let current = page
                    .editor
                    .with_untracked(|e| e.node(id).map(canvas::position));
                if current != Some(canvas::snap_point(to)) {
                    page.editor.update(|e| e.place(id, to));
                }
            }
            Some(Drag::Wire { .. }) => page.wire.update(|w| {
                if let Some((_, end)) = w {
                    *end = world;
                }
            }),
            Some(Drag::Pan { start, view: v0 }) => {
                page.view.set(View {
                    pan_x: v0.pan_x + screen.x - start.x,
                    pan_y: v0.pan_y + screen.y - start.y,
                    zoom: v0.zoom,
                });
            }
            _ => {}
        });
    };
    let on_up = move |ev: leptos::ev::PointerEvent| {
        let Some(screen) = local_point(&ev) else {
            return;
        };
        let world = page.view.get_untracked().to_world(screen);
        let Some(d) = drag.try_update_value(Option::take).flatten() else {
            return;
        };
        match d {
            Drag::Move {
                id, before, moved, ..
            } => {
                if moved {
                    page.editor.update(|e| e.finish_gesture(before));
                } else if let Some(source) = page.connecting.get_untracked().filter(|s| *s != id) {
                    page.connect(&source, &id);
                }
            }
            Drag::Wire { from, start } => {
                page.wire.set(None);
                let moved = (screen.x - start.x).abs() + (screen.y - start.y).abs() >= 6.0;
                let target = match page.editor.with_untracked(|e| hit_test(e.design(), world)) {
                    Hit::InPort(t) | Hit::Node(t) => Some(t),
                    _ => None,
                };
                match (moved, target) {
                    (true, Some(t)) if t != from => page.connect(&from, &t),
                    (true, _) => page.say(
                        "Drop the connection on another node's input port (its left side).",
                        false,
                    ),
                    // A tap on an output port starts a connection that a second tap finishes.
                    (false, _) => page.start_connecting(&from),
                }
            }
            Drag::Tap { target } => {
                if let Some(source) = page.connecting.get_untracked() {
                    page.connect(&source, &target);
                } else {
                    page.selected.set(Some(Selection::Node(target)));
                }
            }
            Drag::Pan { .. } => {}
        }
    };
    let on_wheel = move |ev: leptos::ev::WheelEvent| {
        ev.prevent_default();
        let Some(screen) = local_point(&ev) else {
            return;
        };
        let factor = if ev.delta_y() < 0.0 { 1.1 } else { 1.0 / 1.1 };
        page.view.update(|v| *v = v.zoom_at(screen, factor));
    };
    let on_drop = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        let Some(kind) = ev
            .data_transfer()
            .and_then(|dt| dt.get_data("application/x-pipeline-kind").ok())
            .and_then(|k| NodeKind::parse(&k))
        else {
            return;
        };
        let Some(screen) = local_point(&ev) else {
            return;
        };
        let world = page.view.get_untracked().to_world(screen);
        let at = Point::new(world.x - NODE_W / 2.0, world.y - NODE_H / 2.0);
        let id = page
            .scenario
            .with_value(|s| page.editor.try_update(|e| e.add_node(s, kind, Some(at))))
            .unwrap_or_default();
        page.selected.set(Some(Selection::Node(id.clone())));
        page.say(format!("Added {} \"{id}\".", kind.describe()), false);
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        if ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
            return;
        }
        let selected = page.selected.get_untracked();
        let node = match &selected {
            Some(Selection::Node(id)) => Some(id.clone()),
            _ => None,
        };
        let step = if ev.shift_key() { 5 } else { 1 };
        let nudge = |dx: i32, dy: i32| {
            if let Some(id) = &node {
                page.editor.update(|e| e.nudge(id, dx * step, dy * step));
            }
        };
        match ev.key().as_str() {
            "Delete" | "Backspace" if selected.is_some() => {
                ev.prevent_default();
                page.delete_selection();
            }
            "ArrowLeft" if node.is_some() => {
                ev.prevent_default();
                nudge(-1, 0)
            }
            "ArrowRight" if node.is_some() => {
                ev.prevent_default();
                nudge(1, 0)
            }
            "ArrowUp" if node.is_some() => {
                ev.prevent_default();
                nudge(0, -1)
            }
            "ArrowDown" if node.is_some() => {
                ev.prevent_default();
                nudge(0, 1)
            }
            "Enter" | " " if node.is_some() => {
                ev.prevent_default();
                let id = node.unwrap_or_default();
                match page.connecting.get_untracked() {
                    Some(source) if source != id => page.connect(&source, &id),
                    _ => {
                        if !focus(".inspector input:checked") {
                            focus(".inspector input");
                        }
                    }
                }
            }
            "c" | "C" if node.is_some() => {
                let id = node.unwrap_or_default();
                let can = page
                    .editor
                    .with_untracked(|e| e.node(&id).map(|n| canvas::has_output(n.kind)))
                    .unwrap_or(false);
                if can {
                    page.start_connecting(&id);
                } else {
                    page.say(
                        format!(
                            "\"{id}\" is where data ends; connect into it from a job or consumer."
                        ),
                        true,
                    );
                }
            }
            "Escape" => {
                page.connecting.set(None);
                page.wire.set(None);
                page.notice.set(None);
            }
            "+" | "=" => page
                .view
                .update(|v| *v = v.zoom_at(Point::new(200.0, 150.0), 1.2)),
            "-" => page
                .view
                .update(|v| *v = v.zoom_at(Point::new(200.0, 150.0), 1.0 / 1.2)),
            _ => {}
        }
    };

    let frame = Memo::new(move |_| page.frame());
    let node_ids = move || {
        page.editor.with(|e| {
            e.design()
                .nodes
                .iter()
                .map(|n| n.id.clone())
                .collect::<Vec<_>>()
        })
    };
    let edge_ids = move || {
        page.editor.with(|e| {
            e.design()
                .edges
                .iter()
                .map(|e| (e.from.clone(), e.to.clone()))
                .collect::<Vec<_>>()
        })
    };
    let count = move || page.editor.with(|e| e.design().nodes.len());

    view! {
        <div class="canvas-wrap" node_ref=wrap>
            <Notice />
            <svg class=move || if page.connecting.with(Option::is_some) { "canvas connecting" } else { "canvas" }
                tabindex="0" role="group"
                aria-label=move || format!("Canvas with {} nodes. Tab moves through the nodes; arrow keys move one; C starts a connection; Enter opens its options or finishes a connection; Delete removes it.", count())
                on:pointerdown=on_down on:pointermove=on_move on:pointerup=on_up on:wheel=on_wheel
                on:dragover=move |ev: leptos::ev::DragEvent| ev.prevent_default() on:drop=on_drop on:keydown=on_key>
                <defs>
                    <pattern id="grid" width="20" height="20" patternUnits="userSpaceOnUse">
                        <circle cx="1" cy="1" r="1" class="grid-dot" />
                    </pattern>
                    <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
                        <path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" />
                    </marker>
                </defs>
                <g class="layer" transform=move || page.view.get().transform()>
                    <rect x="-4000" y="-4000" width="12000" height="12000" fill="url(#grid)" class="grid" />
                    <For each=edge_ids key=|e| e.clone() let:edge>
                        <EdgeView source=edge.0 target=edge.1 frame=frame />
                    </For>
                    {move || page.wire.get().map(|(a, b)| view! { <path class="wire" d=canvas::edge_path(a, b) /> })}
                    <For each=node_ids key=|id| id.clone() let:id>
                        <NodeView id=id frame=frame />
                    </For>
                </g>
            </svg>
            <Show when=move || count() == 0>
                <p class="canvas-empty">"Empty canvas. Add nodes from the palette above (click, or drag them here), then drag from a node's right port to another node's left port."</p>
            </Show>
            <div class="zoom" role="group" aria-label="Zoom">
                <button class="icon" aria-label="Zoom out" on:click=move |_| page.view.update(|v| *v = v.zoom_at(Point::new(200.0, 150.0), 1.0 / 1.2))>"−"</button>
                <span class="zoom-level">{move || format!("{}%", canvas::num((page.view.get().zoom * 100.0).round()))}</span>
                <button class="icon" aria-label="Zoom in" on:click=move |_| page.view.update(|v| *v = v.zoom_at(Point::new(200.0, 150.0), 1.2))>"+"</button>
                <button class="secondary small" aria-label="Fit the design in view" on:click=move |_| fit()>"Fit"</button>
            </div>
        </div>
    }
}

#[component]
fn EdgeView(source: String, target: String, frame: Memo<Option<Frame>>) -> impl IntoView {
    let page = expect_context::<Page>();
    let (s, t) = (source.clone(), target.clone());
    let d = move || {
        page.editor.with(|e| match (e.node(&s), e.node(&t)) {
            (Some(a), Some(b)) => canvas::edge_path(canvas::out_port(a), canvas::in_port(b)),
            _ => String::new(),
        })
    };
    let key = Selection::Edge(source.clone(), target.clone());
    let (fs, ft) = (source.clone(), target.clone());
    let class = move || {
        let mut c = String::from("edge");
        if page.selected.with(|s| s.as_ref() == Some(&key)) {
            c.push_str(" selected");
        }
        if frame.with(|f| {
            f.as_ref()
                .and_then(|f| f.edge.as_ref())
                .is_some_and(|(a, b)| *a == fs && *b == ft)
        }) {
            c.push_str(" acting");
        }
        c
    };
    let (ss, st) = (source.clone(), target.clone());
    view! {
        <g class=class data-edge=format!("{source}->{target}")>
            <path class="edge-line" d=d.clone() marker-end="url(#arrow)" />
            <path class="edge-hit" d=d aria-label=format!("Connection from {source} to {target}")
                on:pointerdown=move |ev: leptos::ev::PointerEvent| {
                    ev.stop_propagation();
                    page.selected.set(Some(Selection::Edge(ss.clone(), st.clone())));
                    page.say(format!("Selected the connection \"{ss}\" → \"{st}\". Delete removes it."), false);
                    focus(".canvas");
                } />
        </g>
    }
}

#[component]
fn NodeView(id: String, frame: Memo<Option<Frame>>) -> impl IntoView {
    let page = expect_context::<Page>();
    let node = {
        let id = id.clone();
        Memo::new(move |_| page.editor.with(|e| e.node(&id).cloned()))
    };
    let kind = page
        .editor
        .with_untracked(|e| e.node(&id).map(|n| n.kind))
        .unwrap_or(NodeKind::Table);
    let title = words::kind_title(kind);
    let (sid, aid, fid, cid) = (id.clone(), id.clone(), id.clone(), id.clone());
    let selected = Memo::new(move |_| {
        page.selected
            .with(|s| matches!(s, Some(Selection::Node(n)) if *n == sid))
    });
    let acting = move || {
        frame.with(|f| {
            f.as_ref()
                .is_some_and(|f| f.node.as_deref() == Some(aid.as_str()))
        })
    };
    let crashed = {
        let id = id.clone();
        move || {
            frame.with(|f| {
                f.as_ref()
                    .is_some_and(|f| f.failure && f.node.as_deref() == Some(id.as_str()))
            })
        }
    };
    let class = {
        let crashed = crashed.clone();
        move || {
            let mut c = format!("node kind-{}", kind.name());
            if selected.get() {
                c.push_str(" selected");
            }
            if acting() {
                c.push_str(" acting");
            }
            if crashed() {
                c.push_str(" crashed");
            }
            if page.connecting.with(|s| s.as_deref() == Some(cid.as_str())) {
                c.push_str(" source");
            }
            c
        }
    };
    let transform = move || {
        node.with(|n| {
            n.as_ref()
                .map(|n| {
                    let p = canvas::position(n);
                    format!("translate({} {})", canvas::num(p.x), canvas::num(p.y))
                })
                .unwrap_or_default()
        })
    };
    let summary = move || node.with(|n| n.as_ref().map(words::node_summary).unwrap_or_default());
    let label = {
        let id = id.clone();
        move || format!("{title} {id}: {}", summary())
    };
    view! {
        <g class=class transform=transform tabindex="0" role="button" aria-label=label data-node=id.clone()
            aria-pressed=move || selected.get().to_string()
            on:focus=move |_| {
                if page.selected.get_untracked() != Some(Selection::Node(fid.clone())) {
                    page.selected.set(Some(Selection::Node(fid.clone())));
                }
            }>
            <rect class="node-body" width=canvas::num(NODE_W) height=canvas::num(NODE_H) rx="10" />
            <rect class="node-stripe" width="6" height=canvas::num(NODE_H) rx="3" />
            <text class="node-kind" x="16" y="19">{title}</text>
            <text class="node-id" x="16" y="37">{id.clone()}</text>
            <text class="node-summary" x="16" y="56">{summary}</text>
            {canvas::has_input(kind).then(|| view! { <circle class="port in" cx="0" cy=canvas::num(NODE_H / 2.0) r=canvas::num(PORT_R) /> })}
            {canvas::has_output(kind).then(|| view! { <circle class="port out" cx=canvas::num(NODE_W) cy=canvas::num(NODE_H / 2.0) r=canvas::num(PORT_R) /> })}
            <Show when=crashed.clone()>
                <g class="crash-mark" transform=format!("translate({} -10)", canvas::num(NODE_W - 18.0))>
                    <circle r="12" cx="0" cy="0" />
                    <text x="0" y="5" text-anchor="middle">"✕"</text>
                </g>
            </Show>
        </g>
    }
}

/// The selected node's options as labelled choices, each with one line in the chapter's words.
#[component]
fn Inspector() -> impl IntoView {
    let page = expect_context::<Page>();
    // Re-drawn only when what is selected changes, so focus stays on a choice while it changes.
    let target = Memo::new(move |_| match page.selected.get() {
        Some(Selection::Node(id)) => page
            .editor
            .with(|e| e.node(&id).map(|n| (Some((id.clone(), n.kind)), None)))
            .unwrap_or((None, None)),
        Some(Selection::Edge(a, b)) => {
            let exists = page
                .editor
                .with(|e| e.design().edges.iter().any(|x| x.from == a && x.to == b));
            (None, exists.then_some((a, b)))
        }
        None => (None, None),
    });
    view! {
        <section class="inspector" aria-labelledby="inspector-heading">
            {move || match target.get() {
                (Some((id, kind)), _) => view! { <NodeOptions id=id kind=kind /> }.into_any(),
                (None, Some((a, b))) => {
                    let label = format!("Delete the connection {a} → {b}");
                    view! {
                        <h2 id="inspector-heading">"Connection"</h2>
                        <p><code>{a.clone()}</code>" → "<code>{b.clone()}</code></p>
                        <button class="danger" aria-label=label on:click=move |_| page.delete_selection()>"Delete connection"</button>
                    }.into_any()
                }
                _ => view! {
                    <h2 id="inspector-heading">"Inspector"</h2>
                    <p class="muted">"Select a node to see its options."</p>
                    <h3>"Quick keys"</h3>
                    <dl class="keys">
                        <dt><kbd>"Tab"</kbd></dt><dd>"next node"</dd>
                        <dt><kbd>"←↑→↓"</kbd></dt><dd>"move the node (Shift: faster)"</dd>
                        <dt><kbd>"Enter"</kbd></dt><dd>"open its options"</dd>
                        <dt><kbd>"C"</kbd>", then "<kbd>"Enter"</kbd></dt><dd>"connect: pick a source, then its target"</dd>
                        <dt><kbd>"Delete"</kbd></dt><dd>"remove it"</dd>
                        <dt><kbd>"Ctrl+Z"</kbd>" / "<kbd>"Ctrl+Y"</kbd></dt><dd>"undo / redo"</dd>
                    </dl>
                    <p class="muted small">"With a mouse or finger: drag from a node's right port to another's left port, or tap one port and then the other. Drag the background to pan; scroll to zoom."</p>
                }.into_any(),
            }}
        </section>
    }
}

#[component]
fn NodeOptions(id: String, kind: NodeKind) -> impl IntoView {
    let page = expect_context::<Page>();
    let scenario = page.scenario.get_value();
    let current = {
        let id = id.clone();
        move |option: &'static str| {
            page.editor
                .with(|e| e.node(&id).and_then(|n| n.options.get(option).cloned()))
        }
    };
    let options = kind.options().iter().map(|spec| {
        let name = spec.name;
        let legend = words::option_title(name);
        let id = id.clone();
        let group = format!("opt-{id}-{name}");
        let current = current.clone();
        match spec.values {
            OptionValues::Count { default, max } => {
                // The window matters only while the consumer remembers keys.
                let shown = {
                    let current = current.clone();
                    move || current("dedupe").and_then(|v| v.as_str().map(|s| s == "in_memory")).unwrap_or(false)
                };
                let value = move || current(name).and_then(|v| v.as_u64()).unwrap_or(u64::from(default)).to_string();
                view! {
                    <div class="option" class:hidden=move || !shown()>
                        <label class="option-title" for=group.clone()>{legend}</label>
                        <input type="number" id=group min="1" max=max.to_string() prop:value=value
                            on:change=move |ev| {
                                let text = event_target_value(&ev);
                                match text.parse::<u32>() {
                                    Ok(n) if (1..=max).contains(&n) => page.editor.update(|e| e.set_option(&id, name, Json::from(n))),
                                    _ => page.say(format!("{legend} is a whole number from 1 to {max}."), true),
                                }
                            } />
                        <p class="choice-line">"how many recent keys the consumer remembers"</p>
                    </div>
                }.into_any()
            }
            OptionValues::Key => {
                // The keys the chosen table offers; none means the table has no natural key.
                let keys = {
                    let current = current.clone();
                    move || {
                    let table = current("table").and_then(|v| v.as_str().map(str::to_string));
                    page.scenario.with_value(|s| table.and_then(|t| s.table(&t).map(|t| t.keys.clone())).unwrap_or_default())
                }};
                let id2 = id.clone();
                // A key matters only to the writes that match rows by it.
                let shown = {
                    let current = current.clone();
                    move || current("write").and_then(|v| v.as_str().map(|w| w == "merge" || w == "insert_ignore")).unwrap_or(false)
                };
                view! {
                    <fieldset class="option" class:hidden=move || !shown()>
                        <legend class="option-title">{legend}</legend>
                        {move || {
                            let keys = keys();
                            if keys.is_empty() {
                                return view! { <p class="choice-line">"this table has no natural key"</p> }.into_any();
                            }
                            let chosen: Vec<String> = current(name).map(|v| match v {
                                Json::Array(items) => items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect(),
                                Json::String(s) => vec![s],
                                _ => Vec::new(),
                            }).unwrap_or_else(|| keys[0].clone());
                            keys.into_iter().map(|key| {
                                let checked = key == chosen;
                                let label = format!("by {}", key.join(", "));
                                let id = id2.clone();
                                let value = Json::from(key.clone());
                                view! {
                                    <label class="choice">
                                        <input type="radio" name=group.clone() prop:checked=checked
                                            on:change=move |_| page.editor.update(|e| e.set_option(&id, name, value.clone())) />
                                        <span class="choice-label">{label}</span>
                                        <span class="choice-line">"MERGE and ON CONFLICT match rows on this key"</span>
                                    </label>
                                }
                            }).collect_view().into_any()
                        }}
                    </fieldset>
                }.into_any()
            }
            _ => {
                let values = allowed_values(&scenario, kind, name);
                let default = values.first().cloned().unwrap_or_default();
                view! {
                    <fieldset class="option">
                        <legend class="option-title">{legend}</legend>
                        {values.into_iter().map(|value| {
                            let (label, line) = words::value_words(name, &value);
                            // Names (tables, streams) are their own label; choices show their JSON value too.
                            let code = (!label.is_empty()).then(|| value.clone());
                            let label = if label.is_empty() { value.clone() } else { label.to_string() };
                            let v = value.clone();
                            let d = default.clone();
                            let current = current.clone();
                            let checked = move || current(name).and_then(|j| j.as_str().map(str::to_string)).unwrap_or_else(|| d.clone()) == v;
                            let id = id.clone();
                            let json = Json::from(value.clone());
                            view! {
                                <label class="choice">
                                    <input type="radio" name=group.clone() value=value.clone() prop:checked=checked
                                        on:change=move |_| page.editor.update(|e| e.set_option(&id, name, json.clone())) />
                                    <span class="choice-label">{label}" "{code.map(|c| view! { <code class="choice-value">{c}</code> })}</span>
                                    <span class="choice-line">{line}</span>
                                </label>
                            }
                        }).collect_view()}
                    </fieldset>
                }.into_any()
            }
        }
    }).collect_view();
    let (cid, did) = (id.clone(), id.clone());
    let connectable = canvas::has_output(kind);
    let eid = id.clone();
    let connections = move || {
        page.editor.with(|e| {
            e.design()
                .edges
                .iter()
                .filter(|x| x.from == eid || x.to == eid)
                .map(|x| (x.from.clone(), x.to.clone()))
                .collect::<Vec<_>>()
        })
    };
    view! {
        <h2 id="inspector-heading">{words::kind_title(kind)}" "<code>{id.clone()}</code></h2>
        <p class="kind-line">{words::kind_line(kind)}</p>
        <div class="options">{options}</div>
        <div class="connections">
            <h3>"Connections"</h3>
            {move || {
                let list = connections();
                if list.is_empty() {
                    return view! { <p class="muted small">"None yet."</p> }.into_any();
                }
                view! {
                    <ul>{list.into_iter().map(|(a, b)| {
                        let label = format!("Remove the connection {a} → {b}");
                        let (ra, rb) = (a.clone(), b.clone());
                        view! {
                            <li><code>{a}</code>" → "<code>{b}</code>
                                <button class="link-button" aria-label=label on:click=move |_| {
                                    page.editor.update(|e| { e.delete_edge(&ra, &rb); });
                                    page.say(format!("Deleted the connection \"{ra}\" → \"{rb}\"."), false);
                                }>"Remove"</button>
                            </li>
                        }
                    }).collect_view()}</ul>
                }.into_any()
            }}
        </div>
        <div class="inspector-actions">
            {connectable.then(|| view! {
                <button class="secondary" on:click=move |_| { page.start_connecting(&cid); focus(&format!("g.node[data-node=\"{cid}\"]")); }>"Connect from here"</button>
            })}
            <button class="danger" aria-label=format!("Delete node {id}") on:click=move |_| {
                page.selected.set(Some(Selection::Node(did.clone())));
                page.delete_selection();
            }>"Delete node"</button>
        </div>
    }
}

/// The SQL the design amounts to, updated as options change.
#[component]
fn SqlView() -> impl IntoView {
    let page = expect_context::<Page>();
    let blocks = Memo::new(move |_| {
        let design = page.editor.with(|e| e.design().clone());
        page.scenario
            .with_value(|s| match shared::validate(s, design) {
                Ok(valid) => Ok(shared::sql::design_sql(s, &valid)),
                Err(errors) => Err(errors.into_iter().map(|e| e.message).collect::<Vec<_>>()),
            })
    });
    view! {
        <div class="sql-view">
            {move || match blocks.get() {
                Ok(blocks) => view! {
                    <p class="muted small">"What your design runs, in PostgreSQL. It changes as you change the options."</p>
                    {blocks.into_iter().map(|b| view! {
                        <h4>{b.title}</h4>
                        <pre class="sql"><code>{b.sql}</code></pre>
                    }).collect_view()}
                }.into_any(),
                Err(errors) => view! {
                    <p class="muted">"The SQL appears when the design is complete:"</p>
                    <ul>{errors.into_iter().take(5).map(|e| view! { <li>{e}</li> }).collect_view()}</ul>
                }.into_any(),
            }}
        </div>
    }
}
