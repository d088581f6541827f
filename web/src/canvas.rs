//! The canvas's logic without a browser: geometry, hit tests, the rules for connecting two
//! nodes, and the edit history. The design being edited is `shared`'s own [`Design`], so what
//! the canvas holds is exactly what a draft, a preview and a Check send.

use serde_json::{Map, Value as Json};
use shared::design::{wiring_refusal, Design, Edge, Node, NodeKind, OptionValues, Position};
use shared::scenario::TableRole;
use shared::Scenario;

/// Node positions snap to this grid, in canvas units.
pub const GRID: f64 = 20.0;
pub const NODE_W: f64 = 190.0;
pub const NODE_H: f64 = 66.0;
/// A port's drawn radius; hits are forgiven a few units beyond it.
pub const PORT_R: f64 = 7.0;
const PORT_HIT_R: f64 = PORT_R + 6.0;
/// Half the smallest touch target (WCAG 2.2, 24 × 24 CSS px): a port takes taps this far from
/// its centre on screen, whatever the zoom.
pub const TOUCH_R: f64 = 12.0;
/// The most a port's hit area grows at a small zoom, so it never swallows the node body.
const PORT_HIT_MAX: f64 = 30.0;
pub const ZOOM_MIN: f64 = 0.4;
/// The smallest zoom a design opens at, so that its words stay readable on a phone; a wider
/// design is panned rather than shrunk.
pub const ZOOM_READABLE: f64 = 0.6;
pub const ZOOM_MAX: f64 = 2.5;
/// The most edits kept for undo; older ones are forgotten.
pub const HISTORY_MAX: usize = 200;
/// The largest coordinate a node may have, so a runaway drag cannot lose a node.
const COORD_MAX: f64 = 4000.0;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

impl Point {
    pub fn new(x: f64, y: f64) -> Point {
        Point { x, y }
    }
    fn distance(self, other: Point) -> f64 {
        ((self.x - other.x).powi(2) + (self.y - other.y).powi(2)).sqrt()
    }
}

pub fn snap(v: f64) -> f64 {
    ((v / GRID).round() * GRID).clamp(0.0, COORD_MAX)
}

pub fn snap_point(p: Point) -> Point {
    Point::new(snap(p.x), snap(p.y))
}

/// Whether something can flow into this kind (sources are where data starts).
pub fn has_input(kind: NodeKind) -> bool {
    !matches!(
        kind,
        NodeKind::SourceTable | NodeKind::Stream | NodeKind::Sender
    )
}

/// Whether this kind can feed anything (a warehouse table is where data ends).
pub fn has_output(kind: NodeKind) -> bool {
    kind != NodeKind::Table
}

/// Which column of the default layout a kind belongs to: sources, processors, tables.
fn column(kind: NodeKind) -> usize {
    match kind {
        NodeKind::SourceTable | NodeKind::Stream | NodeKind::Sender => 0,
        NodeKind::BatchJob | NodeKind::StreamConsumer => 1,
        NodeKind::Table => 2,
    }
}

const COLUMN_X: [f64; 3] = [40.0, 320.0, 600.0];
const ROW_Y0: f64 = 60.0;
const ROW_DY: f64 = 120.0;

pub fn position(node: &Node) -> Point {
    node.position
        .map(|p| Point::new(p.x, p.y))
        .unwrap_or(Point::new(COLUMN_X[column(node.kind)], ROW_Y0))
}

pub fn in_port(node: &Node) -> Point {
    let p = position(node);
    Point::new(p.x, p.y + NODE_H / 2.0)
}

pub fn out_port(node: &Node) -> Point {
    let p = position(node);
    Point::new(p.x + NODE_W, p.y + NODE_H / 2.0)
}

/// A free spot for a new node of this kind: its column, in the first row no node covers.
pub fn free_spot(design: &Design, kind: NodeKind) -> Point {
    let x = COLUMN_X[column(kind)];
    let mut y = ROW_Y0;
    // Bounded: each step passes at least one node, and there are at most MAX_NODES of them.
    for _ in 0..=shared::design::MAX_NODES {
        let taken = design.nodes.iter().any(|n| {
            let p = position(n);
            (p.x - x).abs() < NODE_W && (p.y - y).abs() < NODE_H + GRID
        });
        if !taken {
            break;
        }
        y += ROW_DY;
    }
    Point::new(x, y)
}

/// Gives every node without a position one in the default layout, keeping the others.
pub fn lay_out(design: &mut Design) {
    for i in 0..design.nodes.len() {
        if design.nodes[i].position.is_none() {
            let p = free_spot(design, design.nodes[i].kind);
            design.nodes[i].position = Some(Position { x: p.x, y: p.y });
        }
    }
}

/// What lies under a point of the canvas.
#[derive(Clone, Debug, PartialEq)]
pub enum Hit {
    OutPort(String),
    InPort(String),
    Node(String),
    Empty,
}

/// A port's hit radius in canvas units at a zoom: at least [`TOUCH_R`] CSS pixels on screen.
pub fn port_hit_radius(zoom: f64) -> f64 {
    (TOUCH_R / zoom.max(ZOOM_MIN)).clamp(PORT_HIT_R, PORT_HIT_MAX)
}

/// Ports win over node bodies, and a node drawn later (on top) wins over one below it.
/// Port hits are forgiven as at the default zoom; see [`hit_test_at`].
pub fn hit_test(design: &Design, p: Point) -> Hit {
    hit_test_at(design, p, 1.0)
}

/// [`hit_test`] at a zoom: a port takes taps within [`port_hit_radius`] of its centre.
pub fn hit_test_at(design: &Design, p: Point, zoom: f64) -> Hit {
    let r = port_hit_radius(zoom);
    for node in design.nodes.iter().rev() {
        if has_output(node.kind) && out_port(node).distance(p) <= r {
            return Hit::OutPort(node.id.clone());
        }
        if has_input(node.kind) && in_port(node).distance(p) <= r {
            return Hit::InPort(node.id.clone());
        }
    }
    for node in design.nodes.iter().rev() {
        let q = position(node);
        if p.x >= q.x && p.x <= q.x + NODE_W && p.y >= q.y && p.y <= q.y + NODE_H {
            return Hit::Node(node.id.clone());
        }
    }
    Hit::Empty
}

/// A number for SVG attributes, with at most two decimals. Written by hand so that the app
/// does not carry the standard library's float formatting (a size budget matter).
pub fn num(v: f64) -> String {
    let hundredths = (v * 100.0).round() as i64;
    let sign = if hundredths < 0 { "-" } else { "" };
    let a = hundredths.unsigned_abs();
    match a % 100 {
        0 => format!("{sign}{}", a / 100),
        f if f % 10 == 0 => format!("{sign}{}.{}", a / 100, f / 10),
        f => format!("{sign}{}.{f:02}", a / 100),
    }
}

/// The SVG path of an edge: a horizontal S-curve from an output port to an input port.
pub fn edge_path(source: Point, target: Point) -> String {
    let dx = ((target.x - source.x).abs() / 2.0).max(40.0);
    format!(
        "M {} {} C {} {}, {} {}, {} {}",
        num(source.x),
        num(source.y),
        num(source.x + dx),
        num(source.y),
        num(target.x - dx),
        num(target.y),
        num(target.x),
        num(target.y)
    )
}

/// Pan and zoom of the canvas: screen = world × zoom + pan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    pub pan_x: f64,
    pub pan_y: f64,
    pub zoom: f64,
}

impl Default for View {
    fn default() -> Self {
        View {
            pan_x: 0.0,
            pan_y: 0.0,
            zoom: 1.0,
        }
    }
}

impl View {
    pub fn to_world(self, screen: Point) -> Point {
        Point::new(
            (screen.x - self.pan_x) / self.zoom,
            (screen.y - self.pan_y) / self.zoom,
        )
    }

    /// Zooms by `factor`, keeping the world point under `screen` where it is.
    pub fn zoom_at(self, screen: Point, factor: f64) -> View {
        let zoom = (self.zoom * factor).clamp(ZOOM_MIN, ZOOM_MAX);
        let world = self.to_world(screen);
        View {
            pan_x: screen.x - world.x * zoom,
            pan_y: screen.y - world.y * zoom,
            zoom,
        }
    }

    pub fn transform(self) -> String {
        format!(
            "translate({} {}) scale({})",
            num(self.pan_x),
            num(self.pan_y),
            num(self.zoom)
        )
    }
}

/// The view that shows the whole design inside a `width` × `height` screen, never zoomed in
/// beyond 100 %, with a margin around it.
pub fn fit(design: &Design, width: f64, height: f64) -> View {
    fit_readable(design, width, height, ZOOM_MIN)
}

/// [`fit`], but never zoomed out below `min_zoom`: a design wider than the screen at that
/// zoom starts at its left edge (where data starts) and the rest is panned to.
pub fn fit_readable(design: &Design, width: f64, height: f64, min_zoom: f64) -> View {
    if design.nodes.is_empty() || width <= 0.0 || height <= 0.0 {
        return View::default();
    }
    let margin = if width < 600.0 { 12.0 } else { 24.0 };
    let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    for node in &design.nodes {
        let p = position(node);
        x0 = x0.min(p.x - PORT_R);
        y0 = y0.min(p.y);
        x1 = x1.max(p.x + NODE_W + PORT_R);
        y1 = y1.max(p.y + NODE_H);
    }
    let zoom = ((width - 2.0 * margin) / (x1 - x0))
        .min((height - 2.0 * margin) / (y1 - y0))
        .clamp(min_zoom.clamp(ZOOM_MIN, 1.0), 1.0);
    let centred = |screen: f64, lo: f64, hi: f64| {
        let free = screen - (hi - lo) * zoom;
        (if free < 0.0 { margin } else { free / 2.0 }) - lo * zoom
    };
    // On a narrow screen the drawing starts at the top, clear of a sheet over its lower part.
    let pan_y = if width < 600.0 {
        margin - y0 * zoom
    } else {
        centred(height, y0, y1)
    };
    View {
        pan_x: centred(width, x0, x1),
        pan_y,
        zoom,
    }
}

/// The view panned as little as needed to show a node whole on a `width` × `height` screen.
pub fn pan_to_show(view: View, node: &Node, width: f64, height: f64) -> View {
    let p = position(node);
    let margin = 8.0;
    let shift = |lo: f64, hi: f64, screen: f64| {
        if lo < margin {
            margin - lo
        } else if hi > screen - margin {
            (screen - margin - hi).max(margin - lo)
        } else {
            0.0
        }
    };
    let (x0, y0) = (p.x * view.zoom + view.pan_x, p.y * view.zoom + view.pan_y);
    View {
        pan_x: view.pan_x
            + shift(
                x0 - PORT_R * view.zoom,
                x0 + (NODE_W + PORT_R) * view.zoom,
                width,
            ),
        pan_y: view.pan_y + shift(y0, y0 + NODE_H * view.zoom, height),
        zoom: view.zoom,
    }
}

/// Whether two designs mean the same: the same nodes, options and connections, wherever the
/// nodes stand. Moving a node changes no verdict.
pub fn same_meaning(a: &Design, b: &Design) -> bool {
    a.edges == b.edges
        && a.nodes.len() == b.nodes.len()
        && a.nodes
            .iter()
            .zip(&b.nodes)
            .all(|(x, y)| x.id == y.id && x.kind == y.kind && x.options == y.options)
}

/// Undo and redo of whole states. Bounded: the oldest state is dropped past `HISTORY_MAX`.
#[derive(Clone, Debug)]
pub struct History<T> {
    past: Vec<T>,
    future: Vec<T>,
}

impl<T> Default for History<T> {
    fn default() -> Self {
        History {
            past: Vec::new(),
            future: Vec::new(),
        }
    }
}

impl<T> History<T> {
    /// Remembers the state before an edit; a new edit forgets what could be redone.
    pub fn record(&mut self, before: T) {
        if self.past.len() == HISTORY_MAX {
            self.past.remove(0);
        }
        self.past.push(before);
        self.future.clear();
    }

    pub fn undo(&mut self, current: T) -> Result<T, T> {
        match self.past.pop() {
            Some(previous) => {
                self.future.push(current);
                Ok(previous)
            }
            None => Err(current),
        }
    }

    pub fn redo(&mut self, current: T) -> Result<T, T> {
        match self.future.pop() {
            Some(next) => {
                self.past.push(current);
                Ok(next)
            }
            None => Err(current),
        }
    }

    pub fn can_undo(&self) -> bool {
        !self.past.is_empty()
    }

    pub fn can_redo(&self) -> bool {
        !self.future.is_empty()
    }
}

/// The short name a new node of a kind gets, with a number when it is taken.
fn id_stem(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::SourceTable => "src",
        NodeKind::Stream => "stream",
        NodeKind::Sender => "sender",
        NodeKind::BatchJob => "job",
        NodeKind::StreamConsumer => "consumer",
        NodeKind::Table => "table",
    }
}

pub fn fresh_id(design: &Design, kind: NodeKind, hint: Option<&str>) -> String {
    let stem = hint.filter(|h| !h.is_empty()).unwrap_or(id_stem(kind));
    let taken = |id: &str| design.nodes.iter().any(|n| n.id == id);
    if !taken(stem) {
        return stem.to_string();
    }
    (2..=shared::design::MAX_NODES + 2)
        .map(|n| format!("{stem}{n}"))
        .find(|id| !taken(id))
        .unwrap_or_else(|| format!("{stem}-new"))
}

/// The option values a student may pick for one option of a kind in this scenario, in the
/// order the product lists them. Empty for options that are not a choice.
pub fn allowed_values(scenario: &Scenario, kind: NodeKind, option: &str) -> Vec<String> {
    let Some(spec) = kind.options().iter().find(|s| s.name == option) else {
        return Vec::new();
    };
    let palette = scenario.palette.kind(kind).and_then(|p| p.get(option));
    let all: Vec<String> = match spec.values {
        OptionValues::Choice(values) => values.iter().map(|v| v.to_string()).collect(),
        OptionValues::SourceTable => scenario
            .tables
            .iter()
            .filter(|t| t.role == TableRole::Source)
            .map(|t| t.name.clone())
            .collect(),
        OptionValues::SinkTable => scenario
            .tables
            .iter()
            .filter(|t| t.role == TableRole::Sink)
            .map(|t| t.name.clone())
            .collect(),
        OptionValues::Stream => scenario.streams.iter().map(|s| s.name.clone()).collect(),
        // A count is offered as the palette's values when the scenario names them.
        OptionValues::Count { .. } => return palette.cloned().unwrap_or_default(),
        OptionValues::Key => return Vec::new(),
    };
    match palette {
        Some(allowed) => all.into_iter().filter(|v| allowed.contains(v)).collect(),
        None => all,
    }
}

/// The kinds this scenario's palette offers, in the product's order.
pub fn palette_kinds(scenario: &Scenario) -> Vec<NodeKind> {
    NodeKind::ALL
        .into_iter()
        .filter(|k| scenario.palette.kind(*k).is_some())
        .collect()
}

/// The options a new node starts with: every choice at its first allowed value, and the
/// first table or stream not yet drawn.
pub fn default_options(scenario: &Scenario, design: &Design, kind: NodeKind) -> Map<String, Json> {
    let mut options = Map::new();
    for spec in kind.options() {
        match spec.values {
            // A missing count takes its default, and the key its table's first key.
            OptionValues::Key | OptionValues::Count { .. } => {}
            OptionValues::SourceTable | OptionValues::SinkTable | OptionValues::Stream => {
                let values = allowed_values(scenario, kind, spec.name);
                let used = |v: &String| {
                    design.nodes.iter().any(|n| {
                        n.kind == kind
                            && n.options.get(spec.name).and_then(Json::as_str) == Some(v.as_str())
                    })
                };
                if let Some(v) = values.iter().find(|v| !used(v)).or(values.first()) {
                    options.insert(spec.name.into(), Json::from(v.clone()));
                }
            }
            OptionValues::Choice(_) => {
                if let Some(v) = allowed_values(scenario, kind, spec.name).first() {
                    options.insert(spec.name.into(), Json::from(v.clone()));
                }
            }
        }
    }
    options
}

/// The design a student edits, with its undo history.
#[derive(Clone, Debug)]
pub struct Editor {
    design: Design,
    history: History<Design>,
    /// The node the last edit moved, while no other edit has come since: further moves of
    /// it join that edit, so a run of moves is undone in one step.
    moving: Option<String>,
    /// A design shown, not edited (an author's reference design, an attempt under review):
    /// every edit is refused.
    locked: bool,
}

impl Editor {
    pub fn new(mut design: Design) -> Editor {
        lay_out(&mut design);
        Editor {
            design,
            history: History::default(),
            moving: None,
            locked: false,
        }
    }

    /// An editor that shows `design` and refuses every edit.
    pub fn read_only(design: Design) -> Editor {
        Editor {
            locked: true,
            ..Editor::new(design)
        }
    }

    pub fn is_read_only(&self) -> bool {
        self.locked
    }

    pub fn design(&self) -> &Design {
        &self.design
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.design.nodes.iter().find(|n| n.id == id)
    }

    fn node_mut(&mut self, id: &str) -> Option<&mut Node> {
        self.design.nodes.iter_mut().find(|n| n.id == id)
    }

    fn record(&mut self) {
        self.moving = None;
        self.history.record(self.design.clone());
    }

    /// Records a move of `id` from `before`, unless it goes on a run of moves of that node.
    fn record_move(&mut self, id: &str, before: Design) {
        if self.moving.as_deref() != Some(id) {
            self.history.record(before);
            self.moving = Some(id.to_string());
        }
    }

    /// Adds a node of a kind with its default options, at `at` (snapped) or a free spot.
    pub fn add_node(&mut self, scenario: &Scenario, kind: NodeKind, at: Option<Point>) -> String {
        if self.locked {
            return String::new();
        }
        let options = default_options(scenario, &self.design, kind);
        // A table node is named after its table, so traces and the drawing speak alike.
        let hint = if kind == NodeKind::Table {
            options
                .get("table")
                .and_then(Json::as_str)
                .map(str::to_string)
        } else {
            None
        };
        let id = fresh_id(&self.design, kind, hint.as_deref());
        let p = at
            .map(snap_point)
            .unwrap_or_else(|| free_spot(&self.design, kind));
        self.record();
        self.design.nodes.push(Node {
            id: id.clone(),
            kind,
            options,
            position: Some(Position { x: p.x, y: p.y }),
        });
        id
    }

    /// Moves a node without recording it: a drag records once, through [`Editor::finish_move`].
    pub fn place(&mut self, id: &str, p: Point) {
        if self.locked {
            return;
        }
        let p = snap_point(p);
        if let Some(node) = self.node_mut(id) {
            node.position = Some(Position { x: p.x, y: p.y });
        }
    }

    /// Records a gesture (a drag) as one edit, if it changed anything.
    pub fn finish_gesture(&mut self, before: Design) {
        if before != self.design {
            self.moving = None;
            self.history.record(before);
        }
    }

    /// Records a drag of one node as a move: it joins a run of moves of that node.
    pub fn finish_move(&mut self, id: &str, before: Design) {
        if before != self.design {
            self.record_move(id, before);
        }
    }

    /// Moves a node by whole grid steps (the arrow keys).
    pub fn nudge(&mut self, id: &str, steps_x: i32, steps_y: i32) {
        if self.locked {
            return;
        }
        let Some(node) = self.node(id) else { return };
        let p = position(node);
        let target = snap_point(Point::new(
            p.x + f64::from(steps_x) * GRID,
            p.y + f64::from(steps_y) * GRID,
        ));
        if target != p {
            let before = self.design.clone();
            self.place(id, target);
            self.record_move(id, before);
        }
    }

    /// Why `source` may not feed `target`, in words for a student; `None` if it may.
    pub fn connection_refusal(&self, source: &str, target: &str) -> Option<String> {
        let (Some(s), Some(t)) = (self.node(source), self.node(target)) else {
            return Some("one of these nodes no longer exists".into());
        };
        if source == target {
            return Some("a node cannot feed itself".into());
        }
        if let Some(why) = wiring_refusal(s.kind, t.kind) {
            return Some(why);
        }
        if self
            .design
            .edges
            .iter()
            .any(|e| e.from == source && e.to == target)
        {
            return Some(format!("\"{source}\" already feeds \"{target}\""));
        }
        if let Some(existing) = self.design.edges.iter().find(|e| e.to == target) {
            return Some(format!("{} reads from one source, and \"{target}\" already reads from \"{}\"; delete that connection first", t.kind.describe(), existing.from));
        }
        if s.kind == NodeKind::StreamConsumer {
            if let Some(existing) = self.design.edges.iter().find(|e| e.from == source) {
                return Some(format!(
                    "a stream consumer writes one table, and \"{source}\" already writes \"{}\"",
                    existing.to
                ));
            }
        }
        None
    }

    pub fn connect(&mut self, source: &str, target: &str) -> Result<(), String> {
        if self.locked {
            return Err("this design is shown read-only".into());
        }
        if let Some(why) = self.connection_refusal(source, target) {
            return Err(why);
        }
        self.record();
        self.design.edges.push(Edge {
            from: source.into(),
            to: target.into(),
        });
        Ok(())
    }

    /// Deletes a node and every connection it has.
    pub fn delete_node(&mut self, id: &str) -> bool {
        if self.locked {
            return false;
        }
        if self.node(id).is_none() {
            return false;
        }
        self.record();
        self.design.nodes.retain(|n| n.id != id);
        self.design.edges.retain(|e| e.from != id && e.to != id);
        true
    }

    pub fn delete_edge(&mut self, source: &str, target: &str) -> bool {
        if self.locked {
            return false;
        }
        if !self
            .design
            .edges
            .iter()
            .any(|e| e.from == source && e.to == target)
        {
            return false;
        }
        self.record();
        self.design
            .edges
            .retain(|e| !(e.from == source && e.to == target));
        true
    }

    /// Sets one option; `Json::Null` removes it (so the default applies).
    pub fn set_option(&mut self, id: &str, option: &str, value: Json) {
        if self.locked {
            return;
        }
        let Some(node) = self.node(id) else { return };
        if node.options.get(option).unwrap_or(&Json::Null) == &value {
            return;
        }
        self.record();
        if let Some(node) = self.node_mut(id) {
            if value.is_null() {
                node.options.remove(option);
            } else {
                node.options.insert(option.into(), value);
            }
        }
    }

    /// Replaces the whole design (reset to the starting design, a design file opened) as one
    /// undoable edit.
    pub fn replace(&mut self, mut design: Design) {
        if self.locked {
            return;
        }
        lay_out(&mut design);
        if design != self.design {
            self.record();
            self.design = design;
        }
    }

    pub fn undo(&mut self) -> bool {
        self.moving = None;
        let current = std::mem::replace(&mut self.design, empty());
        let (design, done) = match self.history.undo(current) {
            Ok(d) => (d, true),
            Err(d) => (d, false),
        };
        self.design = design;
        done
    }

    pub fn redo(&mut self) -> bool {
        self.moving = None;
        let current = std::mem::replace(&mut self.design, empty());
        let (design, done) = match self.history.redo(current) {
            Ok(d) => (d, true),
            Err(d) => (d, false),
        };
        self.design = design;
        done
    }

    pub fn can_undo(&self) -> bool {
        self.history.can_undo()
    }

    pub fn can_redo(&self) -> bool {
        self.history.can_redo()
    }
}

fn empty() -> Design {
    Design {
        nodes: Vec::new(),
        edges: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scenarios/safe-retry.json"
        ))
        .unwrap();
        Scenario::from_json(&text).unwrap()
    }

    fn starting(scenario: &Scenario) -> Design {
        shared::design::design_from_json(scenario.starting_design.as_ref().unwrap()).unwrap()
    }

    #[test]
    fn a_read_only_editor_refuses_every_edit() {
        let scenario = scenario();
        let design = starting(&scenario);
        let mut editor = Editor::read_only(design.clone());
        let shown = editor.design().clone();
        let job = shown.nodes.iter().find(|n| n.id == "job").unwrap().clone();
        assert!(editor.add_node(&scenario, NodeKind::Table, None).is_empty());
        editor.place("job", Point::new(400.0, 400.0));
        editor.nudge("job", 3, 3);
        assert!(editor.connect("job", "src").is_err());
        assert!(!editor.delete_node("job"));
        let edge = shown.edges[0].clone();
        assert!(!editor.delete_edge(&edge.from, &edge.to));
        editor.set_option("job", "transaction", Json::from("none"));
        editor.replace(Design {
            nodes: Vec::new(),
            edges: Vec::new(),
        });
        assert_eq!(editor.design(), &shown);
        assert_eq!(editor.node("job"), Some(&job));
        assert!(editor.is_read_only() && !editor.can_undo());
        // The same edits change an editable one.
        let mut editable = Editor::new(design);
        assert!(editable.delete_node("job"));
        assert!(!editable.is_read_only() && editable.can_undo());
    }

    #[test]
    fn snapping_rounds_to_the_grid_and_stays_on_canvas() {
        assert_eq!(snap(29.0), 20.0);
        assert_eq!(snap(31.0), 40.0);
        assert_eq!(snap(-55.0), 0.0);
        assert_eq!(snap(1.0e9), COORD_MAX);
        assert_eq!(snap_point(Point::new(9.0, 11.0)), Point::new(0.0, 20.0));
    }

    #[test]
    fn hit_tests_prefer_ports_then_the_topmost_node() {
        let design = starting(&scenario());
        let job = design.nodes.iter().find(|n| n.id == "job").unwrap();
        assert_eq!(hit_test(&design, out_port(job)), Hit::OutPort("job".into()));
        assert_eq!(hit_test(&design, in_port(job)), Hit::InPort("job".into()));
        let p = position(job);
        assert_eq!(
            hit_test(&design, Point::new(p.x + NODE_W / 2.0, p.y + 10.0)),
            Hit::Node("job".into())
        );
        assert_eq!(
            hit_test(&design, Point::new(p.x - 50.0, p.y - 50.0)),
            Hit::Empty
        );
        // A source has no input port and a table has no output port.
        let src = design.nodes.iter().find(|n| n.id == "src").unwrap();
        assert_eq!(hit_test(&design, in_port(src)), Hit::Node("src".into()));
        let orders = design.nodes.iter().find(|n| n.id == "orders").unwrap();
        assert_eq!(
            hit_test(&design, out_port(orders)),
            Hit::Node("orders".into())
        );
    }

    #[test]
    fn view_zooms_around_the_pointer() {
        let view = View::default();
        let screen = Point::new(200.0, 100.0);
        let zoomed = view.zoom_at(screen, 2.0);
        assert_eq!(zoomed.zoom, 2.0);
        assert_eq!(zoomed.to_world(screen), view.to_world(screen));
        assert_eq!(view.zoom_at(screen, 100.0).zoom, ZOOM_MAX);
        assert_eq!(view.zoom_at(screen, 0.0001).zoom, ZOOM_MIN);
    }

    #[test]
    fn fit_shows_every_node() {
        let design = starting(&scenario());
        let view = fit(&design, 640.0, 400.0);
        assert!(view.zoom <= 1.0 && view.zoom >= ZOOM_MIN);
        for node in &design.nodes {
            let p = position(node);
            for corner in [Point::new(p.x, p.y), Point::new(p.x + NODE_W, p.y + NODE_H)] {
                let screen = Point::new(
                    corner.x * view.zoom + view.pan_x,
                    corner.y * view.zoom + view.pan_y,
                );
                assert!(
                    screen.x >= 0.0 && screen.x <= 640.0 && screen.y >= 0.0 && screen.y <= 400.0,
                    "{} at {screen:?}",
                    node.id
                );
            }
        }
        assert_eq!(
            fit(
                &Design {
                    nodes: Vec::new(),
                    edges: Vec::new()
                },
                640.0,
                400.0
            ),
            View::default()
        );
    }

    #[test]
    fn numbers_have_at_most_two_decimals() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(-0.5), "-0.5");
        assert_eq!(num(1.006), "1.01");
        assert_eq!(num(12.3456), "12.35");
        assert_eq!(num(-120.07), "-120.07");
    }

    #[test]
    fn edge_paths_run_from_port_to_port() {
        assert_eq!(
            edge_path(Point::new(0.0, 0.0), Point::new(200.0, 40.0)),
            "M 0 0 C 100 0, 100 40, 200 40"
        );
    }

    #[test]
    fn connection_rules_refuse_with_a_reason() {
        let scenario = scenario();
        let mut editor = Editor::new(Design {
            nodes: Vec::new(),
            edges: Vec::new(),
        });
        let src = editor.add_node(&scenario, NodeKind::SourceTable, None);
        let job = editor.add_node(&scenario, NodeKind::BatchJob, None);
        let orders = editor.add_node(&scenario, NodeKind::Table, None);
        let rev = editor.add_node(&scenario, NodeKind::Table, None);
        assert_eq!(
            (src.as_str(), job.as_str(), orders.as_str(), rev.as_str()),
            ("src", "job", "orders", "daily_revenue")
        );
        assert_eq!(
            editor.connect(&orders, &job).unwrap_err(),
            "a warehouse table is where data ends; it cannot feed a batch job"
        );
        assert_eq!(
            editor.connect(&job, &src).unwrap_err(),
            "a source table is where data starts; nothing can feed it"
        );
        assert_eq!(
            editor.connect(&job, &job).unwrap_err(),
            "a node cannot feed itself"
        );
        editor.connect(&src, &job).unwrap();
        assert!(editor
            .connect(&src, &job)
            .unwrap_err()
            .contains("already feeds"));
        editor.connect(&job, &orders).unwrap();
        editor.connect(&job, &rev).unwrap();
        let valid = shared::validate(&scenario, editor.design().clone());
        assert!(
            valid.is_ok(),
            "a design built on the canvas is valid: {valid:?}"
        );
    }

    #[test]
    fn new_nodes_get_free_spots_and_unique_ids() {
        let scenario = scenario();
        let mut editor = Editor::new(Design {
            nodes: Vec::new(),
            edges: Vec::new(),
        });
        let a = editor.add_node(&scenario, NodeKind::BatchJob, None);
        let b = editor.add_node(&scenario, NodeKind::BatchJob, None);
        assert_eq!((a.as_str(), b.as_str()), ("job", "job2"));
        assert_ne!(
            position(editor.node(&a).unwrap()),
            position(editor.node(&b).unwrap())
        );
        let options = &editor.node(&a).unwrap().options;
        // The palette offers only logical_date, so that is the default here.
        assert_eq!(options["date_filter"], "logical_date");
        assert_eq!(options["transaction"], "none");
    }

    #[test]
    fn every_edit_can_be_undone_and_redone() {
        let scenario = scenario();
        let start = starting(&scenario);
        let mut editor = Editor::new(start.clone());
        let original = editor.design().clone();
        editor.set_option("orders", "write", Json::from("delete_insert"));
        editor.nudge("job", 1, 0);
        editor.delete_node("rev");
        assert_eq!(editor.design().edges.len(), 2);
        let before = editor.design().clone();
        editor.place("src", Point::new(103.0, 207.0));
        editor.place("src", Point::new(143.0, 227.0));
        editor.finish_gesture(before.clone());
        assert_eq!(
            position(editor.node("src").unwrap()),
            Point::new(140.0, 220.0)
        );
        // Four edits, one of them a drag of two moves.
        assert!(editor.undo());
        assert_eq!(editor.design(), &before);
        assert!(editor.undo() && editor.undo() && editor.undo());
        assert_eq!(editor.design(), &original);
        assert!(!editor.undo());
        assert!(editor.redo());
        assert_eq!(
            editor.node("orders").unwrap().options["write"],
            "delete_insert"
        );
        // A new edit forgets the redo branch.
        editor.set_option("job", "transaction", Json::from("per_run"));
        assert!(!editor.can_redo());
        // Setting a value it already has is no edit.
        editor.set_option("job", "transaction", Json::from("per_run"));
        assert!(editor.undo());
        assert!(editor.undo());
        assert_eq!(editor.design(), &original);
    }

    #[test]
    fn history_is_bounded() {
        let mut history = History::default();
        for i in 0..HISTORY_MAX + 10 {
            history.record(i);
        }
        let mut current = usize::MAX;
        let mut undone = 0;
        while let Ok(previous) = history.undo(current) {
            current = previous;
            undone += 1;
        }
        assert_eq!(undone, HISTORY_MAX);
        assert_eq!(current, 10);
    }

    #[test]
    fn a_consumer_reads_one_source_and_writes_one_table() {
        let text = r#"{"nodes":[
            {"id":"a","kind":"stream","options":{"topic":"t"}},
            {"id":"b","kind":"stream","options":{"topic":"t"}},
            {"id":"c","kind":"stream_consumer"},
            {"id":"x","kind":"table"},{"id":"y","kind":"table"}],
            "edges":[{"from":"a","to":"c"},{"from":"c","to":"x"}]}"#;
        let design = shared::design::parse_design(text).unwrap();
        let mut editor = Editor::new(design);
        assert!(editor
            .connect("b", "c")
            .unwrap_err()
            .contains("already reads from \"a\""));
        assert!(editor
            .connect("c", "y")
            .unwrap_err()
            .contains("writes one table"));
        assert!(editor.delete_edge("a", "c"));
        editor.connect("b", "c").unwrap();
    }

    #[test]
    fn ports_take_taps_within_a_touch_target_at_any_zoom() {
        let design = starting(&scenario());
        let job = design.nodes.iter().find(|n| n.id == "job").unwrap();
        let out = out_port(job);
        // At the default zoom a port is hit 12 units (12 CSS px) from its centre.
        assert!(port_hit_radius(1.0) >= TOUCH_R);
        let near = Point::new(out.x + 12.0, out.y);
        assert_eq!(hit_test(&design, near), Hit::OutPort("job".into()));
        assert_eq!(hit_test_at(&design, near, 1.0), Hit::OutPort("job".into()));
        // At a phone's zoom the same 12 CSS px are 20 canvas units.
        let zoom = ZOOM_READABLE;
        let far = Point::new(out.x, out.y + TOUCH_R / zoom - 0.5);
        assert_eq!(hit_test_at(&design, far, zoom), Hit::OutPort("job".into()));
        assert_ne!(hit_test(&design, far), Hit::OutPort("job".into()));
        let input = in_port(job);
        let left = Point::new(input.x - TOUCH_R / zoom + 0.5, input.y);
        assert_eq!(hit_test_at(&design, left, zoom), Hit::InPort("job".into()));
        // Beyond it, nothing; and the hit area never grows past a node's middle.
        let beyond = Point::new(out.x + TOUCH_R / zoom + 1.0, out.y);
        assert_ne!(
            hit_test_at(&design, beyond, zoom),
            Hit::OutPort("job".into())
        );
        assert!(port_hit_radius(ZOOM_MIN) < NODE_W / 2.0);
        let middle = Point::new(position(job).x + NODE_W / 2.0, input.y);
        assert_eq!(
            hit_test_at(&design, middle, ZOOM_MIN),
            Hit::Node("job".into())
        );
    }

    #[test]
    fn a_phone_opens_the_design_at_a_readable_zoom_from_its_left_edge() {
        let design = starting(&scenario());
        let view = fit_readable(&design, 366.0, 340.0, ZOOM_READABLE);
        assert_eq!(view.zoom, ZOOM_READABLE);
        let leftmost = design
            .nodes
            .iter()
            .map(|n| position(n).x)
            .fold(f64::MAX, f64::min);
        let x = leftmost * view.zoom + view.pan_x;
        assert!((0.0..=24.0).contains(&x), "the first column starts at {x}");
        let top = design
            .nodes
            .iter()
            .map(|n| position(n).y)
            .fold(f64::MAX, f64::min);
        let y = top * view.zoom + view.pan_y;
        assert!((0.0..=24.0).contains(&y), "the first row starts at {y}");
        // A design that fits is centred and may be shown larger, as before.
        assert_eq!(
            fit_readable(&design, 1200.0, 600.0, ZOOM_READABLE),
            fit(&design, 1200.0, 600.0)
        );
    }

    #[test]
    fn a_node_out_of_view_is_panned_into_it() {
        let design = starting(&scenario());
        let job = design.nodes.iter().find(|n| n.id == "job").unwrap();
        let view = View {
            pan_x: -400.0,
            pan_y: 0.0,
            zoom: 1.0,
        };
        let shown = pan_to_show(view, job, 400.0, 300.0);
        let p = position(job);
        let x0 = p.x * shown.zoom + shown.pan_x;
        assert!(x0 >= 0.0 && x0 + NODE_W <= 400.0, "{x0}");
        assert_eq!(shown.zoom, 1.0);
        // A node in view does not move the view.
        assert_eq!(pan_to_show(shown, job, 400.0, 300.0), shown);
    }

    #[test]
    fn moving_a_node_does_not_change_what_the_design_means() {
        let start = starting(&scenario());
        let mut editor = Editor::new(start.clone());
        editor.nudge("job", 3, 1);
        assert_ne!(editor.design(), &start);
        assert!(same_meaning(editor.design(), &start));
        editor.set_option("job", "transaction", Json::from("per_run"));
        assert!(!same_meaning(editor.design(), &start));
        let mut editor = Editor::new(start.clone());
        editor.delete_edge("job", "rev");
        assert!(!same_meaning(editor.design(), &start));
    }

    #[test]
    fn a_run_of_moves_of_one_node_is_one_undo_step() {
        let start = starting(&scenario());
        let mut editor = Editor::new(start.clone());
        let original = editor.design().clone();
        for _ in 0..5 {
            editor.nudge("job", 1, 0);
        }
        // A drag of the same node goes on the same run.
        let before = editor.design().clone();
        editor.place("job", Point::new(600.0, 400.0));
        editor.finish_move("job", before);
        assert!(editor.undo());
        assert_eq!(editor.design(), &original);
        assert!(!editor.can_undo());
        assert!(editor.redo());
        assert_eq!(
            position(editor.node("job").unwrap()),
            Point::new(600.0, 400.0)
        );
        // Another node, or any other edit, starts a new step.
        let mut editor = Editor::new(start);
        editor.nudge("job", 1, 0);
        editor.nudge("job", 1, 0);
        editor.nudge("src", 0, 1);
        editor.nudge("src", 0, 1);
        editor.set_option("job", "transaction", Json::from("per_run"));
        editor.nudge("job", 1, 0);
        let mut steps = 0;
        while editor.undo() {
            steps += 1;
        }
        assert_eq!(steps, 4);
        assert_eq!(editor.design(), &original);
        // After an undo, a move is a step of its own again.
        editor.nudge("job", 1, 0);
        editor.undo();
        editor.nudge("job", 0, 1);
        assert!(editor.undo());
        assert_eq!(editor.design(), &original);
    }

    #[test]
    fn a_count_is_offered_as_the_palette_lists_it() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scenarios/dedupe-by-key.json"
        ))
        .unwrap();
        let scenario = Scenario::from_json(&text).unwrap();
        assert_eq!(
            allowed_values(&scenario, NodeKind::StreamConsumer, "dedupe_window"),
            ["2", "3", "4"]
        );
        assert!(allowed_values(
            &self::tests::scenario(),
            NodeKind::StreamConsumer,
            "dedupe_window"
        )
        .is_empty());
    }

    #[test]
    fn lay_out_places_nodes_without_positions_in_columns() {
        let text = r#"{"nodes":[{"id":"s","kind":"source_table"},{"id":"j","kind":"batch_job"},{"id":"t1","kind":"table"},{"id":"t2","kind":"table"}]}"#;
        let editor = Editor::new(shared::design::parse_design(text).unwrap());
        let ps: Vec<Point> = editor.design().nodes.iter().map(position).collect();
        assert_eq!(ps[0].x, 40.0);
        assert_eq!(ps[1].x, 320.0);
        assert_eq!((ps[2].x, ps[3].x), (600.0, 600.0));
        assert!(ps[3].y > ps[2].y);
    }
}
