//! The scenario page's state: the design being edited, what is selected, the notice over the
//! drawing, the preview, the server's verdict and the replay, with the operations on them.
//!
//! Every view of the page reads and changes this state through the [`Page`] it finds in the
//! context; no view talks to another directly.

use std::sync::Arc;
use std::time::Duration;

use leptos::prelude::*;
use shared::design::Design;
use shared::verdict::Verdict;
use shared::DesignError;

use shared::wire::classes::StudentClass;

use super::api::ApiError;
use super::debounce::Debounce;
use super::dom::focus;
use crate::canvas::{self, Editor, Point, Ports, View};
use crate::replay::{self, Frame};
use crate::stage_sql::StageSql;
use crate::student_view::StudentScenario;

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

/// What the SQL view shows: the design's statements by stage once the preview's engine has
/// answered, or what keeps the design from having any.
#[derive(Clone, Debug, PartialEq)]
pub enum Sql {
    Pending,
    Stages(Vec<StageSql>),
    Invalid(Vec<DesignError>),
    Failed(String),
}

/// Where the draft stands, shown beside the toolbar's actions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DraftState {
    /// Nothing to say: the design is the starting one and has not been edited.
    Unchanged,
    /// An edit is waiting for its save or being saved.
    Saving,
    /// The server has the draft.
    Saved,
    /// Only this browser has the draft; it reaches the server when the scenario opens again.
    Local,
}

/// Whose page this is, which decides what Check does and what is kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// A student's: Check records a graded attempt, and the draft is kept.
    #[default]
    Student,
    /// An author trying a design: Check asks for the verdict without recording anything, and
    /// no draft is kept.
    Try,
    /// A design shown, not edited: no edit, no Check, no draft; its verdict and replay only.
    ReadOnly,
}

/// On an author's page, the scenario file with problems a tried design is checked on (its
/// name in the folder), instead of the scenario being served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TryOn(pub String);

/// The class the student works in, if any: attempts are made for it, and the live preview
/// shows what its setting allows. The app provides it; without it, self-study.
#[derive(Clone, Copy)]
pub struct CurrentClass(pub RwSignal<Option<StudentClass>>);

impl CurrentClass {
    /// What the live preview may show: `everything` (self-study's), `lacks` or `nothing`.
    pub fn preview(&self) -> String {
        self.0
            .with(|c| c.as_ref().map(|c| c.preview.as_str().to_string()))
            .unwrap_or_else(|| "everything".to_string())
    }

    /// The class id an attempt is for: the student's class, open or closed. A closed class
    /// refuses the attempt with the reason, which Check shows, rather than the attempt being
    /// recorded as self-study that the class never sees.
    pub fn for_attempt(&self) -> Option<String> {
        self.0.with_untracked(|c| c.as_ref().map(|c| c.id.clone()))
    }
}

/// What the live preview may show, from the context's class (`everything` without one).
pub fn preview_setting() -> String {
    use_context::<CurrentClass>()
        .map(|c| c.preview())
        .unwrap_or_else(|| "everything".to_string())
}

/// The page's state: every piece is a signal, so the struct is `Copy` and shared by context.
#[derive(Clone, Copy)]
pub struct Page {
    pub mode: Mode,
    /// The scenario, read once when the page opened: the canvas, the inspector and the
    /// problems' words read it, and the preview's engine compiles its text.
    pub scenario: StoredValue<Arc<StudentScenario>>,
    pub start: StoredValue<Design>,
    pub editor: RwSignal<Editor>,
    pub selected: RwSignal<Option<Selection>>,
    pub connecting: RwSignal<Option<String>>,
    pub notice: RwSignal<Option<(String, bool)>>,
    notice_fade: Debounce,
    pub view: RwSignal<View>,
    pub wire: RwSignal<Option<(Point, Point)>>,
    pub preview: RwSignal<Preview>,
    /// The SQL view: what the preview's engine last said the design amounts to.
    pub sql: RwSignal<Sql>,
    /// The design changed since the preview's engine last answered.
    pub preview_busy: RwSignal<bool>,
    pub verdict: RwSignal<Option<Verdict>>,
    pub checked_design: RwSignal<Option<Design>>,
    pub checking: RwSignal<bool>,
    pub check_error: RwSignal<Option<ApiError>>,
    pub replay: RwSignal<Option<Replay>>,
    pub saved: RwSignal<DraftState>,
    pub tab: RwSignal<&'static str>,
    /// On a phone, the options sheet folded to a bar, leaving the whole page to read.
    pub sheet_folded: RwSignal<bool>,
}

impl Page {
    /// The state of a freshly opened scenario. `restored` is what to tell the student when
    /// the design on the canvas is a draft that came back rather than the starting design.
    pub fn new(
        scenario: Arc<StudentScenario>,
        start: Design,
        design: Design,
        restored: Option<&'static str>,
        mode: Mode,
    ) -> Self {
        let ports = Ports::of(scenario.scenario());
        Page {
            mode,
            scenario: StoredValue::new(scenario),
            start: StoredValue::new(start),
            editor: RwSignal::new(if mode == Mode::ReadOnly {
                Editor::read_only(design, ports)
            } else {
                Editor::new(design, ports)
            }),
            selected: RwSignal::new(None),
            connecting: RwSignal::new(None),
            notice: RwSignal::new(restored.map(|words| (words.to_string(), false))),
            // A notice stays long enough to be read, then gets out of the way.
            notice_fade: Debounce::new(Duration::from_secs(8)),
            view: RwSignal::new(View::default()),
            wire: RwSignal::new(None),
            preview: RwSignal::new(Preview::Pending),
            sql: RwSignal::new(Sql::Pending),
            preview_busy: RwSignal::new(true),
            verdict: RwSignal::new(None),
            checked_design: RwSignal::new(None),
            checking: RwSignal::new(false),
            check_error: RwSignal::new(None),
            replay: RwSignal::new(None),
            saved: RwSignal::new(if restored.is_some() {
                DraftState::Saved
            } else {
                DraftState::Unchanged
            }),
            tab: RwSignal::new("results"),
            sheet_folded: RwSignal::new(false),
        }
    }

    /// A recorded attempt, shown read-only with its verdict.
    pub fn viewer(scenario: Arc<StudentScenario>, design: Design, verdict: Verdict) -> Self {
        let page = Page::new(
            scenario,
            design.clone(),
            design.clone(),
            None,
            Mode::ReadOnly,
        );
        page.verdict.set(Some(verdict));
        page.checked_design.set(Some(design));
        page
    }

    /// A message over the drawing; `refusal` draws it as a refused action.
    /// It fades after a while, except while a connection waits for its target.
    pub fn say(&self, text: impl Into<String>, refusal: bool) {
        self.notice.set(Some((text.into(), refusal)));
        let page = *self;
        page.notice_fade.run(move |_| {
            if page.connecting.try_get_untracked().flatten().is_none() {
                page.notice.try_set(None);
            }
        });
    }

    /// Connects two nodes, or says why the connection is refused; either way the connection
    /// that was waiting for its target is over.
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

    /// Starts a connection that the next chosen node finishes, for keyboards and taps.
    pub fn start_connecting(&self, source: &str) {
        if self.read_only() {
            self.say("This design is shown read-only.", true);
            return;
        }
        self.connecting.set(Some(source.to_string()));
        self.say(format!("Connecting from \"{source}\": choose the node it feeds (Tab to it and press Enter, or tap it). Esc cancels."), false);
    }

    /// Deletes what is selected. The focus goes back to the canvas, because the deleted node
    /// may have held it and the keyboard must not be left on nothing.
    pub fn delete_selection(&self) {
        if self.read_only() {
            self.say("This design is shown read-only.", true);
            return;
        }
        match self.selected.get_untracked() {
            Some(Selection::Node(id)) => {
                self.editor.update(|e| {
                    e.delete_node(&id);
                });
                self.say(format!("Deleted \"{id}\"."), false);
            }
            Some(Selection::Edge(a, b)) => {
                self.remove_connection(&a, &b);
                return;
            }
            None => return,
        }
        self.selected.set(None);
        focus(".canvas");
    }

    /// Removes a connection; the focus goes to the node it came from, where the keyboard was.
    pub fn remove_connection(&self, source: &str, target: &str) {
        self.editor.update(|e| {
            e.delete_edge(source, target);
        });
        self.say(
            format!("Deleted the connection \"{source}\" → \"{target}\"."),
            false,
        );
        self.selected.set(Some(Selection::Node(source.to_string())));
        self.focus_node(source);
    }

    /// Moves the focus to a node of the drawing.
    pub fn focus_node(&self, id: &str) {
        focus(&format!("g.node[data-node=\"{id}\"]"));
    }

    /// Undoes the last edit, and says so only when there was one.
    pub fn undo(&self) {
        if self.editor.try_update(|e| e.undo()).unwrap_or(false) {
            self.say("Undone.", false);
        }
    }

    /// Redoes the last undone edit, and says so only when there was one.
    pub fn redo(&self) {
        if self.editor.try_update(|e| e.redo()).unwrap_or(false) {
            self.say("Redone.", false);
        }
    }

    /// Pans the drawing as little as needed to show a node whole.
    pub fn reveal(&self, id: &str) {
        let Some(wrap) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.query_selector(".canvas-wrap svg.canvas").ok().flatten())
        else {
            return;
        };
        let (w, h) = (
            f64::from(wrap.client_width()),
            f64::from(wrap.client_height()),
        );
        let view = self.view.get_untracked();
        let shown = self
            .editor
            .with_untracked(|e| e.node(id).map(|n| canvas::pan_to_show(view, n, w, h)));
        if let Some(shown) = shown.filter(|v| *v != view) {
            self.view.set(shown);
        }
    }

    pub fn read_only(&self) -> bool {
        self.mode == Mode::ReadOnly
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
            let initial = self
                .scenario
                .with_value(|s| replay::initial_tables(s.scenario()));
            replay::frame(ce, &initial, replay.index)
        })
    }
}
