//! Every design a scenario's palette and wiring rules allow, drawn canonically: one node per
//! stream, sender, source table, stage and written table, with ids and positions fixed by the
//! scenario, and every option value the palette offers.
//!
//! The stages are the scenario's (one consumer per stream and per sender, one job per job),
//! so what varies between designs is each node's options and, where a consumer could write
//! more than one table, which table it writes. Options that the chosen values make irrelevant
//! (a key for `append`, a window for `dedupe: none`, a version for anything but
//! `merge_if_newer`) are left out, so that two designs never differ only in an option that
//! does nothing.

use serde_json::{Map, Value as Json};

use crate::compiled::Compiled;
use crate::design::{Choice, Design, Edge, Node, NodeKind, OptionValues, Position, WriteMode};
use crate::scenario::TableRole;

/// The canonical drawing every design of a scenario shares, and per node the option sets it
/// may take. Design number `n` picks one option set per node and one table per consumer, in
/// mixed radix with the first node most significant.
#[derive(Clone, Debug)]
pub(super) struct Space {
    nodes: Vec<Slot>,
    /// The tables each consumer may write, one list per consumer assignment.
    assignments: Vec<Vec<String>>,
    /// The consumers' node indices, in the order of an assignment's tables.
    consumers: Vec<usize>,
    edges: Vec<Edge>,
}

/// One node of the drawing: its fixed part and the option sets it may take.
#[derive(Clone, Debug)]
struct Slot {
    id: String,
    kind: NodeKind,
    position: Position,
    fixed: Map<String, Json>,
    /// Each option set with how many of its options are away from their first value.
    choices: Vec<(Map<String, Json>, u32)>,
}

/// Where a node sits: a column per hop from where the data starts.
fn position(column: u32, row: u32) -> Position {
    Position {
        x: f64::from(60 + 240 * column),
        y: f64::from(60 + 140 * row),
    }
}

impl Space {
    /// The drawing of a scenario and the options its palette offers.
    pub(super) fn new(scenario: &Compiled) -> Space {
        let mut b = Builder {
            scenario,
            nodes: Vec::new(),
            edges: Vec::new(),
            rows: Vec::new(),
        };
        let mut consumers = Vec::new();
        let inputs: Vec<(NodeKind, String)> = scenario
            .streams
            .iter()
            .map(|s| (NodeKind::Stream, s.name.clone()))
            .chain(
                scenario
                    .senders
                    .first()
                    .map(|s| (NodeKind::Sender, s.name.clone())),
            )
            .collect();
        for (kind, name) in &inputs {
            let input = b.add(name, *kind, 0, fixed_of(*kind, name));
            let id = if inputs.len() == 1 {
                "consumer".to_string()
            } else {
                format!("consumer-{name}")
            };
            let consumer = b.add(&id, NodeKind::StreamConsumer, 1, Map::new());
            b.edge(input, consumer);
            consumers.push(consumer);
        }
        let assignments = consumer_tables(scenario, consumers.len());
        // The tables a consumer may write sit beside it; a job that reads one of them follows.
        let mut written: Vec<String> = assignments.iter().flatten().cloned().collect();
        written.sort();
        written.dedup();
        for table in &written {
            b.add(table, NodeKind::Table, 2, table_fixed(table));
        }
        for (j, job) in scenario.jobs.iter().enumerate() {
            let source = &scenario.tables[job.source].name;
            let (source_node, column) = match b.find(source) {
                Some(node) => (node, 3),
                None => (
                    b.add(
                        source,
                        NodeKind::SourceTable,
                        0,
                        fixed_of(NodeKind::SourceTable, source),
                    ),
                    1,
                ),
            };
            let id = if scenario.jobs.len() == 1 {
                "job".to_string()
            } else {
                format!("job-{}", scenario.jobs[j].id)
            };
            let job_node = b.add(&id, NodeKind::BatchJob, column, Map::new());
            b.edge(source_node, job_node);
            for step in &job.steps {
                let target = &scenario.tables[step.target].name;
                let node = match b.find(target) {
                    Some(node) => node,
                    None => b.add(target, NodeKind::Table, column + 1, table_fixed(target)),
                };
                let (from, to) = (&b.nodes[job_node].id, &b.nodes[node].id);
                if !b.edges.iter().any(|e| &e.from == from && &e.to == to) {
                    b.edge(job_node, node);
                }
            }
        }
        let mut nodes = b.nodes;
        for slot in &mut nodes {
            slot.choices = option_sets(scenario, slot);
        }
        Space {
            nodes,
            assignments,
            consumers,
            edges: b.edges,
        }
    }

    /// The nodes drawn under one consumer assignment: a table that no stage writes or reads
    /// in it is left out.
    fn drawn(&self, assignment: usize) -> Vec<usize> {
        let tables = &self.assignments[assignment];
        (0..self.nodes.len())
            .filter(|&i| {
                let slot = &self.nodes[i];
                slot.kind != NodeKind::Table
                    || tables.contains(&slot.id)
                    || self
                        .edges
                        .iter()
                        .any(|e| e.to == slot.id || e.from == slot.id)
            })
            .collect()
    }

    /// How many designs one assignment holds (saturating).
    fn len_of(&self, assignment: usize) -> u64 {
        self.drawn(assignment)
            .into_iter()
            .map(|i| self.nodes[i].choices.len() as u64)
            .fold(1u64, u64::saturating_mul)
    }

    /// How many designs the space holds (saturating: the caller compares it with a limit).
    pub(super) fn len(&self) -> u64 {
        (0..self.assignments.len())
            .map(|a| self.len_of(a))
            .fold(0u64, u64::saturating_add)
    }

    /// Design number `n` (below [`Space::len`]) as its consumer assignment and, per drawn
    /// node, the option set it takes.
    fn decode(&self, mut n: u64) -> (usize, Vec<(usize, usize)>) {
        let mut assignment = 0;
        while n >= self.len_of(assignment) {
            n -= self.len_of(assignment);
            assignment += 1;
        }
        let mut picks: Vec<(usize, usize)> = Vec::new();
        for i in self.drawn(assignment).into_iter().rev() {
            let radix = self.nodes[i].choices.len() as u64;
            picks.push((i, (n % radix) as usize));
            n /= radix;
        }
        picks.reverse();
        (assignment, picks)
    }

    /// Design number `n` (below [`Space::len`]).
    pub(super) fn design(&self, n: u64) -> Design {
        let (assignment, picks) = self.decode(n);
        let mut edges = self.edges.clone();
        for (&consumer, table) in self.consumers.iter().zip(&self.assignments[assignment]) {
            edges.push(Edge {
                from: self.nodes[consumer].id.clone(),
                to: table.clone(),
            });
        }
        let nodes = picks
            .iter()
            .map(|&(i, pick)| {
                let slot = &self.nodes[i];
                let mut options = slot.fixed.clone();
                options.extend(slot.choices[pick].0.clone());
                Node {
                    id: slot.id.clone(),
                    kind: slot.kind,
                    options,
                    position: Some(slot.position),
                }
            })
            .collect();
        edges.sort();
        Design { nodes, edges }
    }

    /// How many options of design number `n` are away from their first offered value (a
    /// consumer writing another table than the first counts as one): the fewer, the simpler.
    pub(super) fn away(&self, n: u64) -> u32 {
        let (assignment, picks) = self.decode(n);
        let moved = u32::from(assignment > 0);
        moved
            + picks
                .iter()
                .map(|&(i, pick)| self.nodes[i].choices[pick].1)
                .sum::<u32>()
    }

    /// The options that take more than one value across the space, as (node id, option):
    /// what tells one design from another.
    pub(super) fn varying(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for slot in &self.nodes {
            let mut names: Vec<&String> = slot.choices.iter().flat_map(|c| c.0.keys()).collect();
            names.sort();
            names.dedup();
            for name in names {
                let first = slot.choices[0].0.get(name);
                if slot.choices.iter().any(|c| c.0.get(name) != first) {
                    out.push((slot.id.clone(), name.clone()));
                }
            }
        }
        if self.assignments.len() > 1 {
            for &c in &self.consumers {
                out.push((self.nodes[c].id.clone(), "writes".to_string()));
            }
        }
        out
    }
}

/// Builds the drawing node by node.
struct Builder<'a> {
    scenario: &'a Compiled,
    nodes: Vec<Slot>,
    edges: Vec<Edge>,
    /// How many nodes each column holds so far.
    rows: Vec<u32>,
}

impl Builder<'_> {
    fn add(&mut self, id: &str, kind: NodeKind, column: u32, fixed: Map<String, Json>) -> usize {
        // Table, stream and sender names are unique among themselves; a stage's id could
        // still meet one of them.
        let mut id = id.to_string();
        while self.nodes.iter().any(|n| n.id == id) || self.is_name(&id, kind) {
            id.push_str("-stage");
        }
        let c = column as usize;
        if self.rows.len() <= c {
            self.rows.resize(c + 1, 0);
        }
        let row = self.rows[c];
        self.rows[c] += 1;
        self.nodes.push(Slot {
            id,
            kind,
            position: position(column, row),
            fixed,
            choices: Vec::new(),
        });
        self.nodes.len() - 1
    }

    /// Whether a stage's id would take a name the scenario gives a table, stream or sender.
    fn is_name(&self, id: &str, kind: NodeKind) -> bool {
        let stage = matches!(kind, NodeKind::BatchJob | NodeKind::StreamConsumer);
        let s = self.scenario;
        stage
            && (s.tables.iter().any(|t| t.name == id)
                || s.streams.iter().any(|t| t.name == id)
                || s.senders.iter().any(|t| t.name == id))
    }

    fn find(&self, id: &str) -> Option<usize> {
        self.nodes
            .iter()
            .position(|n| n.id == id && n.kind == NodeKind::Table)
    }

    fn edge(&mut self, from: usize, to: usize) {
        self.edges.push(Edge {
            from: self.nodes[from].id.clone(),
            to: self.nodes[to].id.clone(),
        });
    }
}

fn fixed_of(kind: NodeKind, name: &str) -> Map<String, Json> {
    let option = match kind {
        NodeKind::Stream => "topic",
        NodeKind::SourceTable => "table",
        _ => return Map::new(),
    };
    Map::from_iter([(option.to_string(), Json::String(name.to_string()))])
}

fn table_fixed(table: &str) -> Map<String, Json> {
    Map::from_iter([("table".to_string(), Json::String(table.to_string()))])
}

/// Which tables the consumers may write: each a warehouse table that no job step writes, no
/// two consumers the same one, and every table a job reads written by one of them when there
/// are consumers enough.
fn consumer_tables(scenario: &Compiled, consumers: usize) -> Vec<Vec<String>> {
    let s = scenario.scenario();
    let targets: Vec<&str> = scenario
        .jobs
        .iter()
        .flat_map(|j| &j.steps)
        .map(|step| scenario.tables[step.target].name.as_str())
        .collect();
    let free: Vec<String> = s
        .tables
        .iter()
        .filter(|t| t.role == TableRole::Sink && !targets.contains(&t.name.as_str()))
        .map(|t| t.name.clone())
        .collect();
    let read: Vec<&str> = scenario
        .jobs
        .iter()
        .map(|j| scenario.tables[j.source].name.as_str())
        .filter(|t| free.iter().any(|f| f == t))
        .collect();
    let mut out = Vec::new();
    let mut current = Vec::new();
    assign(&free, consumers, &mut current, &mut out);
    let must = read.len().min(consumers);
    out.retain(|a: &Vec<String>| read.iter().filter(|t| a.iter().any(|x| x == *t)).count() >= must);
    if out.is_empty() {
        // No table is free: the consumers are drawn writing nothing, which the wiring rules
        // refuse, so that the solve says so rather than inventing a table.
        out.push(Vec::new());
    }
    out
}

fn assign(free: &[String], left: usize, current: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    if left == 0 {
        out.push(current.clone());
        return;
    }
    for table in free {
        if !current.contains(table) {
            current.push(table.clone());
            assign(free, left - 1, current, out);
            current.pop();
        }
    }
}

/// Every option set a node may take: the product of each option's values, the palette's when
/// it lists them (in the format's order, so the default comes first), all of them otherwise.
fn option_sets(scenario: &Compiled, slot: &Slot) -> Vec<(Map<String, Json>, u32)> {
    let s = scenario.scenario();
    let palette = s.palette.kind(slot.kind);
    let offered = |name: &str, values: &'static [&'static str]| -> Vec<Json> {
        let allowed = palette.and_then(|p| p.get(name));
        values
            .iter()
            .filter(|v| allowed.is_none_or(|a| a.iter().any(|x| x == *v)))
            .map(|v| Json::String((*v).to_string()))
            .collect()
    };
    let mut sets = vec![(Map::new(), 0)];
    for spec in slot.kind.options() {
        let values: Vec<Json> = match spec.values {
            OptionValues::Choice(values) => offered(spec.name, values),
            _ => continue,
        };
        sets = sets
            .into_iter()
            .flat_map(|set| with_each(set, spec.name, values.clone()))
            .collect();
    }
    match slot.kind {
        NodeKind::Table => {
            let table = slot.fixed.get("table").and_then(Json::as_str).unwrap_or("");
            sets.into_iter()
                .flat_map(|set| table_variants(scenario, table, set))
                .collect()
        }
        NodeKind::StreamConsumer => {
            let windows: Vec<Json> = match palette.and_then(|p| p.get("dedupe_window")) {
                Some(list) => list
                    .iter()
                    .filter_map(|w| w.parse::<u32>().ok())
                    .map(Json::from)
                    .collect(),
                None => vec![Json::from(window_default())],
            };
            sets.into_iter()
                .flat_map(|set| {
                    let remembers = set.0.get("dedupe").and_then(Json::as_str) == Some("in_memory");
                    let windows = if remembers {
                        windows.clone()
                    } else {
                        Vec::new()
                    };
                    with_each(set, "dedupe_window", windows)
                })
                .collect()
        }
        _ => sets,
    }
}

/// `dedupe_window`'s default, as the format states it.
fn window_default() -> u32 {
    NodeKind::StreamConsumer
        .options()
        .iter()
        .find_map(|spec| match spec.values {
            OptionValues::Count { default, .. } => Some(default),
            _ => None,
        })
        .unwrap_or(2)
}

/// A table node's option set with each key its write can use, and each version column for
/// `merge_if_newer`.
fn table_variants(
    scenario: &Compiled,
    table: &str,
    set: (Map<String, Json>, u32),
) -> Vec<(Map<String, Json>, u32)> {
    let def = scenario.scenario().table(table);
    let write = set
        .0
        .get("write")
        .and_then(Json::as_str)
        .and_then(WriteMode::parse)
        .unwrap_or(WriteMode::ALL[0]);
    let keys: Vec<Json> = match def {
        Some(def) if write.by_key() => def.keys.iter().map(|k| Json::from(k.clone())).collect(),
        _ => Vec::new(),
    };
    let versions: Vec<Json> = match def {
        Some(def) if write == WriteMode::MergeIfNewer => def
            .versions
            .iter()
            .map(|v| Json::from(v.as_str()))
            .collect(),
        _ => Vec::new(),
    };
    with_each(set, "key", keys)
        .into_iter()
        .flat_map(|set| with_each(set, "version", versions.clone()))
        .collect()
}

/// The set once per value of `option`, or the set as it is when there is none. A value
/// after the first makes the set one option further from the simplest.
fn with_each(
    set: (Map<String, Json>, u32),
    option: &str,
    values: Vec<Json>,
) -> Vec<(Map<String, Json>, u32)> {
    if values.is_empty() {
        return vec![set];
    }
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let (mut options, away) = set.clone();
            options.insert(option.to_string(), v);
            (options, away + u32::from(i > 0))
        })
        .collect()
}
