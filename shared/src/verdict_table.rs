//! Verdict tables: the full verdict of every design a scenario's palette allows, computed once
//! per scenario version, so that a check of one of them is a lookup.
//!
//! A verdict depends on the scenario and on what a design means: its nodes' kinds and
//! options and its wiring. It does not depend on the node ids, the positions or the order in
//! which nodes and edges were drawn, except where a node's id is quoted (a trace entry's
//! node, an untested option's node, the words that name a stage) and where the drawn order
//! of nodes orders the untested options. So the table keeps, per design, its verdict's JSON
//! as a template: text with holes where a node id goes, and the untested options apart, each
//! with the node it belongs to. A lookup finds the design by its [`Key`], fills the holes
//! with the student's own ids and puts the untested options in the student's order of nodes.
//!
//! The table never approximates. Each design is checked twice while the table is built,
//! under two sets of stand-in ids that sort in opposite orders, with its nodes and edges drawn
//! in opposite orders and its options at their defaults written out in one and left out in the
//! other; a design whose second verdict is not its first template filled with the
//! second ids is left out of the table, and so is a design whose check was cut short or
//! refused. A design left out, or one the table does not hold (an option set where the
//! enumeration of designs leaves it out because the other options make it irrelevant, another
//! order of edges at a node with three or more), is checked by the search as before.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value as Json;

use crate::check::{check_hashed, Limits};
use crate::compiled::Compiled;
use crate::design::{
    validate, Choice, ConsumerInput, Design, Node, NodeKind, OptionValues, Stage, ValidDesign,
    WriteMode,
};
use crate::solve::{designs, SolveError, SolveLimits};

/// A design's meaning, independent of its node ids, positions and drawing order: each node's
/// kind and options (an option left out read as its default, as validation reads it) in the
/// order its pipeline's stages reach them, and each node's edges to
/// and from the others by that order (in the order drawn at that node, which the words of a
/// note read).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key(String);

/// A design's key, and per node in the key's order its index among the drawn nodes. `None`
/// when some node is not part of the design's pipeline.
pub fn key_of(scenario: &Compiled, design: &ValidDesign) -> Option<(Key, Vec<usize>)> {
    let drawn = design.design();
    let mut order: Vec<usize> = Vec::with_capacity(drawn.nodes.len());
    let mut reach = |id: &str| {
        let Some(i) = drawn.nodes.iter().position(|n| n.id == id) else {
            return;
        };
        if !order.contains(&i) {
            order.push(i);
        }
    };
    for stage in &design.pipeline().stages {
        match stage {
            Stage::Job(job) => {
                reach(&job.node);
                reach(&job.source_node);
                job.sinks.iter().for_each(|s| reach(&s.node));
            }
            Stage::Consumer(consumer) => {
                reach(&consumer.node);
                match &consumer.input {
                    ConsumerInput::Stream { node, .. } | ConsumerInput::Sender { node, .. } => {
                        reach(node)
                    }
                }
                reach(&consumer.sink.node);
            }
        }
    }
    if order.len() != drawn.nodes.len() {
        return None;
    }
    let rank = |id: &str| {
        let i = drawn.nodes.iter().position(|n| n.id == id)?;
        order.iter().position(|&o| o == i)
    };
    // Written as the JSON array of each node's `[kind, options, targets, sources]`.
    let mut key = Vec::with_capacity(64 * order.len());
    key.push(b'[');
    for (k, &i) in order.iter().enumerate() {
        let node = &drawn.nodes[i];
        let options = with_defaults(scenario, node);
        let mut targets = Vec::new();
        let mut sources = Vec::new();
        for edge in &drawn.edges {
            if edge.from == node.id {
                targets.push(rank(&edge.to)?);
            }
            if edge.to == node.id {
                sources.push(rank(&edge.from)?);
            }
        }
        // A node's edges in the order drawn at it, where that order could tell more than
        // which of two comes first; the table's build checks that two come in either order.
        for edges in [&mut targets, &mut sources] {
            if edges.len() <= 2 {
                edges.sort_unstable();
            }
        }
        if k > 0 {
            key.push(b',');
        }
        serde_json::to_writer(&mut key, &(node.kind, &options, &targets, &sources)).ok()?;
    }
    key.push(b']');
    Some((Key(String::from_utf8(key).ok()?), order))
}

/// A node's options with every option it leaves out that validation gives a default at that
/// default.
fn with_defaults<'a>(scenario: &Compiled, node: &'a Node) -> BTreeMap<&'a str, Cow<'a, Json>> {
    let mut options: BTreeMap<&str, Cow<Json>> = node
        .options
        .iter()
        .map(|(name, value)| (name.as_str(), Cow::Borrowed(value)))
        .collect();
    for (name, default) in defaults(scenario, node) {
        options.entry(name).or_insert(Cow::Owned(default));
    }
    options
}

/// The defaults of a node's options: a choice's (the palette's, as validation takes it), a
/// count's, and for a table written by key its first key, for one written `merge_if_newer`
/// its first version column, as the enumeration of designs writes them.
fn defaults(scenario: &Compiled, node: &Node) -> Vec<(&'static str, Json)> {
    let file = scenario.scenario();
    let mut out = Vec::new();
    for spec in node.kind.options() {
        match spec.values {
            OptionValues::Choice(values) => out.push((
                spec.name,
                Json::from(file.palette.default_of(node.kind, spec.name, values)),
            )),
            OptionValues::Count { default, .. } => out.push((spec.name, Json::from(default))),
            _ => {}
        }
    }
    if node.kind == NodeKind::Table {
        let given = |name: &str| {
            node.options
                .get(name)
                .cloned()
                .or_else(|| out.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone()))
        };
        let write = given("write")
            .as_ref()
            .and_then(Json::as_str)
            .and_then(WriteMode::parse);
        let table = given("table");
        let def = table
            .as_ref()
            .and_then(Json::as_str)
            .and_then(|t| file.table(t));
        if let (Some(write), Some(def)) = (write, def) {
            let key = def.keys.first().filter(|_| write.by_key());
            let version = def
                .versions
                .first()
                .filter(|_| write == WriteMode::MergeIfNewer);
            if let Some(key) = key {
                out.push(("key", Json::from(key.clone())));
            }
            if let Some(version) = version {
                out.push(("version", Json::from(version.as_str())));
            }
        }
    }
    out
}

/// The design with each option that has a default written out where it was left out, and left
/// out where it was written at its default.
fn defaults_flipped(scenario: &Compiled, design: &Design) -> Design {
    let mut out = design.clone();
    for node in &mut out.nodes {
        for (name, default) in defaults(scenario, node) {
            match node.options.get(name) {
                Some(value) if *value == default => {
                    node.options.remove(name);
                }
                Some(_) => {}
                None => {
                    node.options.insert(name.to_string(), default);
                }
            }
        }
    }
    out
}

/// A part of a verdict's JSON: text as it is, or the id of the node at this index of the
/// key's order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(Box<str>),
    Node(usize),
}

/// One design's verdict, as a template.
#[derive(Clone, Debug)]
struct Entry {
    summary: Summary,
    /// The verdict's JSON up to the untested options' list (`"untested":[`).
    head: Vec<Part>,
    /// Each untested option's JSON, with the node (in the key's order) it belongs to, in the
    /// option order of that node.
    untested: Vec<(usize, Vec<Part>)>,
    /// From the end of the untested options' list on.
    tail: Vec<Part>,
}

/// What a verdict says at its top, which no node id changes: for a caller that reads only
/// this, a verdict from the table need not be read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    pub passed: bool,
    pub score: u32,
    pub max_score: u32,
    pub schedules_explored: u64,
}

impl Summary {
    pub fn of(verdict: &crate::Verdict) -> Summary {
        Summary {
            passed: verdict.passed,
            score: verdict.score,
            max_score: verdict.max_score,
            schedules_explored: verdict.schedules_explored,
        }
    }
}

/// Why a scenario has no table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableError {
    /// The palette allows more designs than the limit.
    TooManyDesigns { designs: u64, limit: u64 },
    /// The build was stopped by its caller.
    Stopped,
}

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableError::TooManyDesigns { designs, limit } => write!(
                f,
                "the palette allows {designs} designs, more than the table's limit of {limit}"
            ),
            TableError::Stopped => write!(f, "the table's build was stopped"),
        }
    }
}

impl std::error::Error for TableError {}

/// The verdicts of every design a scenario's palette allows, for one scenario version (its
/// hash) and one set of check limits.
#[derive(Clone, Debug)]
pub struct VerdictTable {
    hash: String,
    limits: Limits,
    entries: BTreeMap<Key, Entry>,
    /// Designs the palette allows that the table leaves to the search.
    left_out: u64,
    bytes: usize,
}

/// Stand-in node ids: characters of Unicode's private use area that no scenario's words hold
/// and that JSON writes as they are. `flip` numbers them the other way round, so that the
/// two sets sort in opposite orders.
fn stand_in(i: usize, count: usize, flip: bool) -> String {
    let n = if flip { count - 1 - i } else { i };
    format!("\u{E000}{n:03}\u{E001}")
}

/// The design drawn again: node `order[k]` gets id `ids[k]`, with edges renamed; with
/// `reverse`, the nodes and the edges are listed in the opposite order.
fn redrawn(design: &Design, order: &[usize], ids: &[String], reverse: bool) -> Design {
    let mut rename: BTreeMap<&str, &str> = BTreeMap::new();
    for (k, &i) in order.iter().enumerate() {
        rename.insert(design.nodes[i].id.as_str(), ids[k].as_str());
    }
    let mut out = design.clone();
    for node in &mut out.nodes {
        node.id = rename[node.id.as_str()].to_string();
    }
    for edge in &mut out.edges {
        edge.from = rename[edge.from.as_str()].to_string();
        edge.to = rename[edge.to.as_str()].to_string();
    }
    if reverse {
        out.nodes.reverse();
        out.edges.reverse();
    }
    out
}

/// A JSON text cut at each stand-in id into parts.
fn parts_of(text: &str, ids: &[String]) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('\u{E000}') {
        let hole = ids
            .iter()
            .enumerate()
            .find(|(_, id)| rest[start..].starts_with(id.as_str()));
        let Some((k, id)) = hole else {
            // Not one of the ids: keep the character as text and look further.
            let next = start + '\u{E000}'.len_utf8();
            parts.push(Part::Text(rest[..next].into()));
            rest = &rest[next..];
            continue;
        };
        if start > 0 {
            parts.push(Part::Text(rest[..start].into()));
        }
        parts.push(Part::Node(k));
        rest = &rest[start + id.len()..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest.into()));
    }
    parts
}

const UNTESTED_OPEN: &str = "\"untested\":[";

impl Entry {
    /// The template of a verdict checked with node `k` (in the key's order) called `ids[k]`.
    /// `None` when the JSON does not have the shape the template needs.
    fn new(verdict: &crate::Verdict, ids: &[String]) -> Option<Entry> {
        let mut bare = verdict.clone();
        let untested = std::mem::take(&mut bare.coverage.untested);
        let text = serde_json::to_string(&bare).ok()?;
        let open = text.find(UNTESTED_OPEN)? + UNTESTED_OPEN.len();
        if text[open..].find(UNTESTED_OPEN).is_some() || !text[open..].starts_with(']') {
            return None;
        }
        let mut options = Vec::with_capacity(untested.len());
        for u in &untested {
            let node = ids.iter().position(|id| *id == u.node)?;
            options.push((node, parts_of(&serde_json::to_string(u).ok()?, ids)));
        }
        Some(Entry {
            summary: Summary::of(verdict),
            head: parts_of(&text[..open], ids),
            untested: options,
            tail: parts_of(&text[open..], ids),
        })
    }

    /// The verdict's JSON for a design whose node `k` (in the key's order) is called
    /// `ids[k]` and was drawn at index `drawn[k]`.
    fn render(&self, ids: &[&str], drawn: &[usize]) -> String {
        let escaped: Vec<String> = ids
            .iter()
            .map(|id| {
                let quoted = Json::String((*id).to_string()).to_string();
                quoted[1..quoted.len() - 1].to_string()
            })
            .collect();
        let mut out = String::with_capacity(self.size());
        let put = |out: &mut String, parts: &[Part]| {
            for part in parts {
                match part {
                    Part::Text(text) => out.push_str(text),
                    Part::Node(k) => out.push_str(&escaped[*k]),
                }
            }
        };
        put(&mut out, &self.head);
        // The untested options follow the drawn order of their nodes, each node's options in
        // their own order (a stable sort).
        let mut order: Vec<&(usize, Vec<Part>)> = self.untested.iter().collect();
        order.sort_by_key(|(node, _)| drawn[*node]);
        for (n, (_, parts)) in order.into_iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            put(&mut out, parts);
        }
        put(&mut out, &self.tail);
        out
    }

    /// About how many bytes the template holds.
    fn size(&self) -> usize {
        let of = |parts: &[Part]| -> usize {
            parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => t.len() + std::mem::size_of::<Part>(),
                    Part::Node(_) => std::mem::size_of::<Part>(),
                })
                .sum()
        };
        of(&self.head) + of(&self.tail) + self.untested.iter().map(|(_, p)| of(p)).sum::<usize>()
    }
}

/// What a table's build is told after each design: how many are done of how many. It returns
/// false to stop the build.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64) -> bool;

impl VerdictTable {
    /// Builds the table of a scenario (whose hash is `hash`) for checks within `limits`, when
    /// its palette allows at most `max_designs` designs.
    pub fn build(
        scenario: &Compiled,
        hash: &str,
        limits: Limits,
        max_designs: u64,
        progress: Progress<'_>,
    ) -> Result<VerdictTable, TableError> {
        let space = designs(
            scenario,
            SolveLimits {
                max_designs,
                check: limits,
            },
        )
        .map_err(|e| match e {
            SolveError::TooManyDesigns { designs, limit } => {
                TableError::TooManyDesigns { designs, limit }
            }
            // Enumerating designs checks none of them.
            SolveError::Check { .. } => unreachable!("enumerating designs checks none"),
        })?;
        let total = space.len() as u64;
        let mut table = VerdictTable {
            hash: hash.to_string(),
            limits,
            entries: BTreeMap::new(),
            left_out: 0,
            bytes: 0,
        };
        for (done, design) in (1..).zip(space) {
            // A drawing the validator refuses is refused at check time too.
            if let Ok(valid) = validate(scenario, design) {
                match table_entry(scenario, hash, limits, &valid) {
                    Some((key, entry)) => {
                        table.bytes += entry.size() + key.0.len();
                        table.entries.insert(key, entry);
                    }
                    None => table.left_out += 1,
                }
            }
            if !progress(done, total) {
                return Err(TableError::Stopped);
            }
        }
        Ok(table)
    }

    /// The scenario version the table is for.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The check limits the table's verdicts were given within.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// How many designs the table holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many valid designs of the palette the table leaves to the search.
    pub fn left_out(&self) -> u64 {
        self.left_out
    }

    /// About how many bytes of memory the table's verdicts take.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The JSON of the verdict that `check_hashed(scenario, hash, design, limits)` gives,
    /// with this table's hash and limits, byte for byte; `None` when the table does not hold
    /// the design. `scenario` is the one the table was built for (its hash).
    pub fn json(&self, scenario: &Compiled, design: &ValidDesign) -> Option<String> {
        self.lookup(scenario, design).map(|(json, _)| json)
    }

    /// [`VerdictTable::json`] with the verdict's [`Summary`].
    pub fn lookup(&self, scenario: &Compiled, design: &ValidDesign) -> Option<(String, Summary)> {
        let (key, drawn) = key_of(scenario, design)?;
        let entry = self.entries.get(&key)?;
        let nodes = &design.design().nodes;
        let ids: Vec<&str> = drawn.iter().map(|&i| nodes[i].id.as_str()).collect();
        // The rank of each node (in the key's order) among the drawn nodes.
        Some((entry.render(&ids, &drawn), entry.summary))
    }

    /// The verdict itself, read back from [`VerdictTable::json`].
    pub fn verdict(&self, scenario: &Compiled, design: &ValidDesign) -> Option<crate::Verdict> {
        serde_json::from_str(&self.json(scenario, design)?).ok()
    }
}

/// One design's key and template; `None` when the design is left to the search.
fn table_entry(
    scenario: &Compiled,
    hash: &str,
    limits: Limits,
    valid: &ValidDesign,
) -> Option<(Key, Entry)> {
    let (key, order) = key_of(scenario, valid)?;
    let count = order.len();
    let first: Vec<String> = (0..count).map(|k| stand_in(k, count, false)).collect();
    let second: Vec<String> = (0..count).map(|k| stand_in(k, count, true)).collect();
    // The second drawing also writes out the options the first leaves at their defaults and
    // leaves out those it writes at their defaults, which the key does not tell apart.
    let checked = |ids: &[String], second: bool| {
        let mut drawing = redrawn(valid.design(), &order, ids, second);
        if second {
            drawing = defaults_flipped(scenario, &drawing);
        }
        let valid = validate(scenario, drawing).ok()?;
        let verdict = check_hashed(scenario, hash, &valid, limits).ok()?;
        // Notes on variants past the limits follow the drawn order and name the limits:
        // such a verdict is left to the search.
        (!verdict.cut_short()).then_some((valid, verdict))
    };
    let (_, verdict) = checked(&first, false)?;
    let entry = Entry::new(&verdict, &first)?;
    let (again, verdict) = checked(&second, true)?;
    let (again_key, drawn) = key_of(scenario, &again)?;
    let ids: Vec<&str> = second.iter().map(String::as_str).collect();
    let same =
        again_key == key && entry.render(&ids, &drawn) == serde_json::to_string(&verdict).ok()?;
    same.then_some((key, entry))
}
