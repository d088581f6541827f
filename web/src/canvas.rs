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
pub const ZOOM_MIN: f64 = 0.2;
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
    NodeKind::ALL
        .into_iter()
        .any(|source| source.may_feed(kind))
}

/// Whether this kind can feed anything: every kind but a warehouse table always can, and a
/// table can where a batch job reads it ([`Ports`]).
pub fn has_output(kind: NodeKind) -> bool {
    NodeKind::ALL
        .into_iter()
        .any(|target| kind.may_feed(target))
}

/// Which nodes of a scenario's designs draw which ports. A warehouse table has an output port
/// only when one of the scenario's batch jobs reads it (a nightly job summing what a consumer
/// landed); elsewhere a table is where data ends, and the drawing says so.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ports {
    /// The warehouse tables a batch job of the scenario reads.
    read_by_jobs: Vec<String>,
}

impl Ports {
    pub fn of(scenario: &Scenario) -> Ports {
        let sink = |name: &str| {
            scenario
                .table(name)
                .is_some_and(|t| t.role == TableRole::Sink)
        };
        Ports {
            read_by_jobs: scenario
                .all_jobs()
                .map(|j| j.source.clone())
                .filter(|t| sink(t))
                .collect(),
        }
    }

    pub fn has_input(&self, node: &Node) -> bool {
        has_input(node.kind)
    }

    pub fn has_output(&self, node: &Node) -> bool {
        match node.kind {
            NodeKind::Table => node
                .options
                .get("table")
                .and_then(Json::as_str)
                .is_some_and(|t| self.read_by_jobs.iter().any(|r| r == t)),
            kind => has_output(kind),
        }
    }
}

/// Which column of the default layout a kind belongs to when nothing connects it: sources,
/// processors, tables.
fn kind_column(kind: NodeKind) -> usize {
    match kind {
        NodeKind::SourceTable | NodeKind::Stream | NodeKind::Sender => 0,
        NodeKind::BatchJob | NodeKind::StreamConsumer => 1,
        NodeKind::Table => 2,
    }
}

const COLUMN_X0: f64 = 40.0;
const COLUMN_DX: f64 = 280.0;
const ROW_Y0: f64 = 60.0;
const ROW_DY: f64 = 120.0;

fn column_x(column: usize) -> f64 {
    COLUMN_X0 + COLUMN_DX * column as f64
}

/// The column of each node in the order data flows, left to right: a node stands at least one
/// column right of every node that feeds it, and no further left than its kind's column. So a
/// sender, its consumer, the table it lands, the job reading that table and the job's table
/// stand in five columns, and a job between a source and its tables in three.
pub fn flow_columns(design: &Design) -> Vec<usize> {
    let index = |id: &str| design.nodes.iter().position(|n| n.id == id);
    let edges: Vec<(usize, usize)> = design
        .edges
        .iter()
        .filter_map(|e| Some((index(&e.from)?, index(&e.to)?)))
        .collect();
    let mut columns: Vec<usize> = design.nodes.iter().map(|n| kind_column(n.kind)).collect();
    // Bounded: a graph without a cycle settles within one pass per node, and a drawing with a
    // cycle (which validation refuses) stops there too.
    for _ in 0..design.nodes.len() {
        let mut changed = false;
        for &(from, to) in &edges {
            if columns[to] <= columns[from] {
                columns[to] = columns[from] + 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    columns
}

pub fn position(node: &Node) -> Point {
    node.position
        .map(|p| Point::new(p.x, p.y))
        .unwrap_or(Point::new(column_x(kind_column(node.kind)), ROW_Y0))
}

pub fn in_port(node: &Node) -> Point {
    let p = position(node);
    Point::new(p.x, p.y + NODE_H / 2.0)
}

pub fn out_port(node: &Node) -> Point {
    let p = position(node);
    Point::new(p.x + NODE_W, p.y + NODE_H / 2.0)
}

/// The first row of a column at `x` that no node covers.
fn free_row(design: &Design, x: f64) -> Point {
    let mut y = ROW_Y0;
    // Bounded: each step passes at least one node, and there are at most MAX_NODES of them.
    for _ in 0..=shared::design::MAX_NODES {
        let taken = design.nodes.iter().any(|n| {
            n.position.is_some() && {
                let p = position(n);
                (p.x - x).abs() < NODE_W && (p.y - y).abs() < NODE_H + GRID
            }
        });
        if !taken {
            break;
        }
        y += ROW_DY;
    }
    Point::new(x, y)
}

/// A free spot for a new node of this kind: its kind's column, in the first row no node
/// covers.
pub fn free_spot(design: &Design, kind: NodeKind) -> Point {
    free_row(design, column_x(kind_column(kind)))
}

/// Gives every node without a position one in the default layout, keeping the others: its
/// column in the order data flows ([`flow_columns`]), in the first free row.
pub fn lay_out(design: &mut Design) {
    let columns = flow_columns(design);
    for (i, column) in columns.into_iter().enumerate() {
        if design.nodes[i].position.is_none() {
            let p = free_row(design, column_x(column));
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
pub fn hit_test(design: &Design, ports: &Ports, p: Point) -> Hit {
    hit_test_at(design, ports, p, 1.0)
}

/// [`hit_test`] at a zoom: a port takes taps within [`port_hit_radius`] of its centre.
pub fn hit_test_at(design: &Design, ports: &Ports, p: Point, zoom: f64) -> Hit {
    let r = port_hit_radius(zoom);
    for node in design.nodes.iter().rev() {
        if ports.has_output(node) && out_port(node).distance(p) <= r {
            return Hit::OutPort(node.id.clone());
        }
        if ports.has_input(node) && in_port(node).distance(p) <= r {
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

    /// Two fingers moved from `from` to `to`: the drawing follows them, the world point under
    /// their midpoint staying under it, and zooms by how far they spread or pinched.
    pub fn pinch(self, from: (Point, Point), to: (Point, Point)) -> View {
        let mid = |(a, b): (Point, Point)| Point::new((a.x + b.x) / 2.0, (a.y + b.y) / 2.0);
        let apart = |(a, b): (Point, Point)| (a.x - b.x).hypot(a.y - b.y);
        let factor = if apart(from) > 1.0 {
            apart(to) / apart(from)
        } else {
            1.0
        };
        let zoom = (self.zoom * factor).clamp(ZOOM_MIN, ZOOM_MAX);
        let world = self.to_world(mid(from));
        let now = mid(to);
        View {
            pan_x: now.x - world.x * zoom,
            pan_y: now.y - world.y * zoom,
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

    /// The states undo and redo would bring back, oldest first, to be kept elsewhere.
    pub fn parts(&self) -> (&[T], &[T]) {
        (&self.past, &self.future)
    }

    /// A history made of kept parts; past `HISTORY_MAX` the oldest are dropped.
    pub fn from_parts(mut past: Vec<T>, mut future: Vec<T>) -> History<T> {
        past.drain(..past.len().saturating_sub(HISTORY_MAX));
        future.drain(..future.len().saturating_sub(HISTORY_MAX));
        History { past, future }
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
        // A key and a version are offered by the node's table: see `table_keys` and
        // `table_versions`.
        OptionValues::Key | OptionValues::Version => return Vec::new(),
    };
    match palette {
        Some(allowed) => all.into_iter().filter(|v| allowed.contains(v)).collect(),
        None => all,
    }
}

/// The table a node stands for, when it names one.
fn table_of<'a>(scenario: &'a Scenario, node: &Node) -> Option<&'a shared::scenario::TableDef> {
    scenario.table(node.options.get("table")?.as_str()?)
}

/// The keys a table node may write by: its table's, the default first. Empty when the table
/// has no natural key (or the node names no table yet).
pub fn table_keys(scenario: &Scenario, node: &Node) -> Vec<Vec<String>> {
    table_of(scenario, node)
        .map(|t| t.keys.clone())
        .unwrap_or_default()
}

/// The columns a table node may name as the version of "merge if newer": its table's, the
/// default first. Empty when the table has none.
pub fn table_versions(scenario: &Scenario, node: &Node) -> Vec<String> {
    table_of(scenario, node)
        .map(|t| t.versions.clone())
        .unwrap_or_default()
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
            // A missing count takes its default, the key its table's first key and the
            // version its table's first version column.
            OptionValues::Key | OptionValues::Version | OptionValues::Count { .. } => {}
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
    /// Which nodes of the scenario may feed others: a connection from a port the drawing
    /// does not show is refused.
    ports: Ports,
}

impl Editor {
    pub fn new(mut design: Design, ports: Ports) -> Editor {
        lay_out(&mut design);
        Editor {
            design,
            history: History::default(),
            moving: None,
            locked: false,
            ports,
        }
    }

    /// An editor that shows `design` and refuses every edit.
    pub fn read_only(design: Design, ports: Ports) -> Editor {
        Editor {
            locked: true,
            ..Editor::new(design, ports)
        }
    }

    pub fn ports(&self) -> &Ports {
        &self.ports
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
        if !self.ports.has_output(s) {
            let table = s
                .options
                .get("table")
                .and_then(Json::as_str)
                .unwrap_or("it");
            return Some(format!(
                "a warehouse table is where data ends here: no batch job of this scenario reads {table}"
            ));
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
            let from = &existing.from;
            return Some(if t.kind == NodeKind::Table {
                format!("\"{target}\" is already written by \"{from}\", and one stage writes a table (a later job may read it); delete that connection first")
            } else {
                format!("{} reads from one source, and \"{target}\" already reads from \"{from}\"; delete that connection first", t.kind.describe())
            });
        }
        if s.kind == NodeKind::StreamConsumer {
            if let Some(existing) = self.design.edges.iter().find(|e| e.from == source) {
                return Some(format!(
                    "a stream consumer writes one table, and \"{source}\" already writes \"{}\"",
                    existing.to
                ));
            }
        }
        if self.feeds(target, source) {
            return Some(format!(
                "data would go round in a circle: \"{target}\" already feeds \"{source}\""
            ));
        }
        None
    }

    /// Whether data flows from `source` to `target` along the design's connections.
    fn feeds(&self, source: &str, target: &str) -> bool {
        let mut reached = vec![source];
        let mut next = 0;
        // Bounded: each node is reached once, and there are as many steps as nodes reached.
        while let Some(&node) = reached.get(next) {
            next += 1;
            for edge in self.design.edges.iter().filter(|e| e.from == node) {
                if edge.to == target {
                    return true;
                }
                if !reached.contains(&edge.to.as_str()) {
                    reached.push(&edge.to);
                }
            }
        }
        false
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

    /// The undo history, to be kept while the student is away from the page.
    pub fn history(&self) -> &History<Design> {
        &self.history
    }

    /// Brings back a kept history; a read-only design has none.
    pub fn restore_history(&mut self, history: History<Design>) {
        if !self.locked {
            self.moving = None;
            self.history = history;
        }
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
        let mut editor = Editor::read_only(design.clone(), Ports::default());
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
        let mut editable = Editor::new(design, Ports::default());
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
        assert_eq!(
            hit_test(&design, &Ports::default(), out_port(job)),
            Hit::OutPort("job".into())
        );
        assert_eq!(
            hit_test(&design, &Ports::default(), in_port(job)),
            Hit::InPort("job".into())
        );
        let p = position(job);
        assert_eq!(
            hit_test(
                &design,
                &Ports::default(),
                Point::new(p.x + NODE_W / 2.0, p.y + 10.0)
            ),
            Hit::Node("job".into())
        );
        assert_eq!(
            hit_test(
                &design,
                &Ports::default(),
                Point::new(p.x - 50.0, p.y - 50.0)
            ),
            Hit::Empty
        );
        // A source has no input port and a table has no output port.
        let src = design.nodes.iter().find(|n| n.id == "src").unwrap();
        assert_eq!(
            hit_test(&design, &Ports::default(), in_port(src)),
            Hit::Node("src".into())
        );
        let orders = design.nodes.iter().find(|n| n.id == "orders").unwrap();
        assert_eq!(
            hit_test(&design, &Ports::default(), out_port(orders)),
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
    fn two_fingers_move_and_zoom_the_drawing_around_their_midpoint() {
        let view = View {
            pan_x: 10.0,
            pan_y: 20.0,
            zoom: 0.8,
        };
        let (a, b) = (Point::new(100.0, 100.0), Point::new(200.0, 100.0));
        // Moved together by (30, -40): a pan, no zoom.
        let moved = view.pinch((a, b), (Point::new(130.0, 60.0), Point::new(230.0, 60.0)));
        assert_eq!(moved.zoom, 0.8);
        assert_eq!((moved.pan_x, moved.pan_y), (40.0, -20.0));
        // Spread to twice as far apart around the same midpoint: twice the zoom, and the
        // world point under the midpoint stays under it.
        let mid = Point::new(150.0, 100.0);
        let spread = view.pinch((a, b), (Point::new(50.0, 100.0), Point::new(250.0, 100.0)));
        assert_eq!(spread.zoom, 1.6);
        assert_eq!(spread.to_world(mid), view.to_world(mid));
        // Fingers on one spot change no zoom.
        assert_eq!(view.pinch((a, a), (b, b)).zoom, 0.8);
        assert_eq!(
            view.pinch((a, b), (Point::new(149.0, 100.0), Point::new(151.0, 100.0)))
                .zoom,
            ZOOM_MIN
        );
    }

    #[test]
    fn a_history_kept_in_parts_comes_back_bounded() {
        let mut history = History::default();
        for i in 0..5 {
            history.record(i);
        }
        let _ = history.undo(5);
        let (past, future) = history.parts();
        assert_eq!((past, future), (&[0, 1, 2, 3][..], &[5][..]));
        let mut back = History::from_parts(past.to_vec(), future.to_vec());
        assert_eq!(back.undo(4), Ok(3));
        let long: Vec<i32> = (0..(HISTORY_MAX as i32 + 7)).collect();
        let bounded = History::from_parts(long, Vec::new());
        assert_eq!(bounded.parts().0.len(), HISTORY_MAX);
        assert_eq!(bounded.parts().0[0], 7);
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
        let mut editor = Editor::new(
            Design {
                nodes: Vec::new(),
                edges: Vec::new(),
            },
            Ports::of(&scenario),
        );
        let src = editor.add_node(&scenario, NodeKind::SourceTable, None);
        let job = editor.add_node(&scenario, NodeKind::BatchJob, None);
        let orders = editor.add_node(&scenario, NodeKind::Table, None);
        let rev = editor.add_node(&scenario, NodeKind::Table, None);
        assert_eq!(
            (src.as_str(), job.as_str(), orders.as_str(), rev.as_str()),
            ("src", "job", "orders", "daily_revenue")
        );
        // The job of this scenario reads the shop's orders, never a warehouse table.
        assert_eq!(
            editor.connect(&orders, &job).unwrap_err(),
            "a warehouse table is where data ends here: no batch job of this scenario reads orders"
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
        let valid = shared::validate(&compiled(scenario), editor.design().clone());
        assert!(
            valid.is_ok(),
            "a design built on the canvas is valid: {valid:?}"
        );
    }

    fn whole_path() -> Scenario {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scenarios/whole-path.json"
        ))
        .unwrap();
        Scenario::from_json(&text).unwrap()
    }

    fn compiled(scenario: Scenario) -> shared::Compiled {
        shared::Compiled::new(scenario).unwrap()
    }

    /// A design without positions: the whole-path scenario's first reference design.
    fn whole_path_reference(scenario: &Scenario) -> Design {
        shared::design::design_from_json(&scenario.reference_designs[0].design).unwrap()
    }

    #[test]
    fn a_table_a_consumer_lands_feeds_the_nightly_job_that_reads_it() {
        let scenario = whole_path();
        let mut editor = Editor::new(
            Design {
                nodes: Vec::new(),
                edges: Vec::new(),
            },
            Ports::of(&scenario),
        );
        let sender = editor.add_node(&scenario, NodeKind::Sender, None);
        let consumer = editor.add_node(&scenario, NodeKind::StreamConsumer, None);
        let raw = editor.add_node(&scenario, NodeKind::Table, None);
        let job = editor.add_node(&scenario, NodeKind::BatchJob, None);
        let revenue = editor.add_node(&scenario, NodeKind::Table, None);
        assert_eq!(
            (raw.as_str(), revenue.as_str()),
            ("raw_payments", "daily_revenue")
        );
        editor.connect(&sender, &consumer).unwrap();
        editor.connect(&consumer, &raw).unwrap();
        editor.connect(&raw, &job).unwrap();
        editor.connect(&job, &revenue).unwrap();
        let valid = shared::validate(&compiled(scenario.clone()), editor.design().clone());
        assert!(
            valid.is_ok(),
            "the whole path drawn on the canvas: {valid:?}"
        );
        // The table the job reads has an output port; the job's own table has none, since no
        // job reads daily_revenue.
        let design = editor.design();
        let ports = editor.ports();
        let node = |id: &str| design.nodes.iter().find(|n| n.id == id).unwrap();
        assert_eq!(
            hit_test(design, ports, out_port(node(&raw))),
            Hit::OutPort(raw.clone())
        );
        assert_eq!(
            hit_test(design, ports, out_port(node(&revenue))),
            Hit::Node(revenue.clone())
        );
        assert!(editor
            .connect(&revenue, &job)
            .unwrap_err()
            .contains("no batch job of this scenario reads daily_revenue"));
    }

    #[test]
    fn a_table_has_one_writer_and_a_job_or_consumer_one_input() {
        let scenario = whole_path();
        let mut editor = Editor::new(whole_path_reference(&scenario), Ports::of(&scenario));
        // The nightly job writing the raw table beside the consumer: two writers.
        assert_eq!(
            editor.connect("nightly", "raw").unwrap_err(),
            "\"raw\" is already written by \"consumer\", and one stage writes a table (a later job may read it); delete that connection first"
        );
        // A second input of the job, and a second table of the consumer.
        let other = editor.add_node(&scenario, NodeKind::Table, None);
        assert!(editor
            .connect(&other, "nightly")
            .unwrap_err()
            .contains("reads from one source, and \"nightly\" already reads from \"raw\""));
        assert!(editor
            .connect("consumer", &other)
            .unwrap_err()
            .contains("a stream consumer writes one table"));
    }

    #[test]
    fn a_connection_that_would_close_a_circle_is_refused() {
        let scenario = whole_path();
        let mut editor = Editor::new(
            Design {
                nodes: Vec::new(),
                edges: Vec::new(),
            },
            Ports::of(&scenario),
        );
        let raw = editor.add_node(&scenario, NodeKind::Table, None);
        let job = editor.add_node(&scenario, NodeKind::BatchJob, None);
        editor.connect(&raw, &job).unwrap();
        assert_eq!(
            editor.connect(&job, &raw).unwrap_err(),
            "data would go round in a circle: \"raw_payments\" already feeds \"job\""
        );
        assert_eq!(editor.design().edges.len(), 1);
    }

    #[test]
    fn the_default_layout_of_several_stages_reads_left_to_right_in_the_order_data_flows() {
        let scenario = whole_path();
        let design = whole_path_reference(&scenario);
        assert!(design.nodes.iter().all(|n| n.position.is_none()));
        let editor = Editor::new(design, Ports::of(&scenario));
        let at = |id: &str| position(editor.node(id).unwrap());
        let path = ["checkout", "consumer", "raw", "nightly", "revenue"];
        for pair in path.windows(2) {
            let (a, b) = (at(pair[0]), at(pair[1]));
            assert!(
                b.x >= a.x + NODE_W,
                "{} at {a:?} stands left of {} at {b:?}",
                pair[0],
                pair[1]
            );
            assert_eq!(a.y, b.y, "one row: {pair:?}");
        }
        // Fit shows the whole path on a canvas as wide as the page's at 1280 px.
        let view = fit(editor.design(), 650.0, 400.0);
        for id in path {
            let p = at(id);
            for corner in [p, Point::new(p.x + NODE_W, p.y + NODE_H)] {
                let x = corner.x * view.zoom + view.pan_x;
                let y = corner.y * view.zoom + view.pan_y;
                assert!(
                    (0.0..=650.0).contains(&x) && (0.0..=400.0).contains(&y),
                    "{id} at ({x}, {y})"
                );
            }
        }
    }

    /// The browser test's path on the host: each hop of the starting design fixed in turn,
    /// the last one left wrong until the end.
    #[test]
    fn fixing_every_hop_of_the_whole_path_on_the_canvas_passes_and_a_hop_left_wrong_names_its_stage(
    ) {
        let scenario = whole_path();
        let start =
            shared::design::design_from_json(scenario.starting_design.as_ref().unwrap()).unwrap();
        let compiled = compiled(scenario.clone());
        let mut editor = Editor::new(start, Ports::of(&scenario));
        editor.set_option("checkout", "on_timeout", Json::from("resend"));
        editor.set_option("checkout", "idempotency_key", Json::from("per_action"));
        editor.set_option("consumer", "offset_commit", Json::from("after_write"));
        editor.set_option("raw", "write", Json::from("insert_ignore"));
        let check = |design: &Design| {
            shared::check_json(&compiled, &serde_json::to_value(design).unwrap()).unwrap()
        };
        let verdict = check(editor.design());
        let missed: Vec<&str> = verdict
            .requirements
            .iter()
            .filter(|r| !r.passed)
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(missed, ["revenue-correct", "one-revenue-row-per-day"]);
        let failures = &verdict.requirements[2]
            .counterexample
            .as_ref()
            .unwrap()
            .failures;
        assert!(
            failures.iter().any(|f| f.contains("the nightly job")),
            "{failures:?}"
        );
        editor.set_option("revenue", "write", Json::from("delete_insert"));
        let verdict = check(editor.design());
        assert!(verdict.passed, "{:?}", verdict.requirements);
    }

    #[test]
    fn a_node_of_a_pipeline_of_several_stages_is_dragged_as_any_other() {
        let scenario = whole_path();
        let mut editor = Editor::new(whole_path_reference(&scenario), Ports::of(&scenario));
        let laid_out = editor.design().clone();
        let before = editor.design().clone();
        editor.place("nightly", Point::new(905.0, 333.0));
        editor.finish_move("nightly", before);
        assert_eq!(
            position(editor.node("nightly").unwrap()),
            Point::new(900.0, 340.0)
        );
        assert!(same_meaning(editor.design(), &laid_out));
        assert!(editor.undo());
        assert_eq!(editor.design(), &laid_out);
    }

    #[test]
    fn new_nodes_get_free_spots_and_unique_ids() {
        let scenario = scenario();
        let mut editor = Editor::new(
            Design {
                nodes: Vec::new(),
                edges: Vec::new(),
            },
            Ports::default(),
        );
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
        let mut editor = Editor::new(start.clone(), Ports::default());
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
        let mut editor = Editor::new(design, Ports::default());
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
        assert_eq!(
            hit_test(&design, &Ports::default(), near),
            Hit::OutPort("job".into())
        );
        assert_eq!(
            hit_test_at(&design, &Ports::default(), near, 1.0),
            Hit::OutPort("job".into())
        );
        // At a phone's zoom the same 12 CSS px are 20 canvas units.
        let zoom = ZOOM_READABLE;
        let far = Point::new(out.x, out.y + TOUCH_R / zoom - 0.5);
        assert_eq!(
            hit_test_at(&design, &Ports::default(), far, zoom),
            Hit::OutPort("job".into())
        );
        assert_ne!(
            hit_test(&design, &Ports::default(), far),
            Hit::OutPort("job".into())
        );
        let input = in_port(job);
        let left = Point::new(input.x - TOUCH_R / zoom + 0.5, input.y);
        assert_eq!(
            hit_test_at(&design, &Ports::default(), left, zoom),
            Hit::InPort("job".into())
        );
        // Beyond it, nothing; and the hit area never grows past a node's middle.
        let beyond = Point::new(out.x + TOUCH_R / zoom + 1.0, out.y);
        assert_ne!(
            hit_test_at(&design, &Ports::default(), beyond, zoom),
            Hit::OutPort("job".into())
        );
        assert!(port_hit_radius(ZOOM_MIN) < NODE_W / 2.0);
        let middle = Point::new(position(job).x + NODE_W / 2.0, input.y);
        assert_eq!(
            hit_test_at(&design, &Ports::default(), middle, ZOOM_MIN),
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

    /// Fit on a phone shows every node whole, however wide the design: five stages in a row
    /// are shrunk as far as needed, and never past the screen's edges.
    #[test]
    fn fit_on_a_phone_brings_every_node_on_screen() {
        let mut design = starting(&scenario());
        for (i, node) in design.nodes.iter_mut().enumerate() {
            node.position = Some(Position {
                x: 40.0 + 300.0 * i as f64,
                y: 160.0,
            });
        }
        let (w, h) = (366.0, 340.0);
        let view = fit(&design, w, h);
        for node in &design.nodes {
            let p = position(node);
            let (x0, y0) = (p.x * view.zoom + view.pan_x, p.y * view.zoom + view.pan_y);
            let (x1, y1) = (
                (p.x + NODE_W) * view.zoom + view.pan_x,
                (p.y + NODE_H) * view.zoom + view.pan_y,
            );
            assert!(
                x0 >= 0.0 && y0 >= 0.0 && x1 <= w && y1 <= h,
                "{} is drawn at {x0}..{x1} × {y0}..{y1} on a {w} × {h} canvas",
                node.id
            );
        }
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
        let mut editor = Editor::new(start.clone(), Ports::default());
        editor.nudge("job", 3, 1);
        assert_ne!(editor.design(), &start);
        assert!(same_meaning(editor.design(), &start));
        editor.set_option("job", "transaction", Json::from("per_run"));
        assert!(!same_meaning(editor.design(), &start));
        let mut editor = Editor::new(start.clone(), Ports::default());
        editor.delete_edge("job", "rev");
        assert!(!same_meaning(editor.design(), &start));
    }

    #[test]
    fn a_run_of_moves_of_one_node_is_one_undo_step() {
        let start = starting(&scenario());
        let mut editor = Editor::new(start.clone(), Ports::default());
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
        let mut editor = Editor::new(start, Ports::default());
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
        let editor = Editor::new(
            shared::design::parse_design(text).unwrap(),
            Ports::default(),
        );
        let ps: Vec<Point> = editor.design().nodes.iter().map(position).collect();
        assert_eq!(ps[0].x, 40.0);
        assert_eq!(ps[1].x, 320.0);
        assert_eq!((ps[2].x, ps[3].x), (600.0, 600.0));
        assert!(ps[3].y > ps[2].y);
    }
}
