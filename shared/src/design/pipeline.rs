//! The stages a design's graph amounts to: each batch job and stream consumer with what it
//! reads and the tables it writes, where a table one stage writes may be read by a later
//! batch job.
//!
//! The stages come in an order fixed by the scenario (consumers of its streams, then of its
//! senders, then its jobs), never by the order of the design's nodes, so that two drawings of
//! the same pipeline are the same pipeline.

use std::collections::BTreeMap;

use super::drawn::Design;
use super::error::{DesignErrorCode, Errors};
use super::graph::Graph;
use super::kind::{Choice, LoadedAt, NodeKind, OffsetCommit, WriteMode};
use super::options::{ConsumerOptions, JobOptions, SenderOptions, SinkOptions, TypedOptions};
use crate::compiled::Compiled;

/// The pipeline a valid design amounts to: its stages in the scenario's order. Node ids are
/// kept for traces and replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pipeline {
    pub stages: Vec<Stage>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stage {
    Job(JobStage),
    Consumer(ConsumerStage),
}

/// A batch job of the scenario, as the design draws it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobStage {
    pub node: String,
    /// The scenario's id for the job.
    pub job: String,
    pub source_node: String,
    pub source_table: String,
    pub options: JobOptions,
    /// One sink per job step, in step order.
    pub sinks: Vec<SinkOptions>,
}

/// A consumer of a stream or of a sender, as the design draws it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerStage {
    pub node: String,
    pub input: ConsumerInput,
    pub options: ConsumerOptions,
    pub sink: SinkOptions,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsumerInput {
    Stream {
        node: String,
        topic: String,
    },
    Sender {
        node: String,
        name: String,
        options: SenderOptions,
    },
}

impl ConsumerInput {
    pub fn node(&self) -> &str {
        match self {
            ConsumerInput::Stream { node, .. } | ConsumerInput::Sender { node, .. } => node,
        }
    }
    /// The stream's or sender's name in the scenario.
    pub fn name(&self) -> &str {
        match self {
            ConsumerInput::Stream { topic, .. } => topic,
            ConsumerInput::Sender { name, .. } => name,
        }
    }
}

impl Pipeline {
    /// Every table the design writes, with how.
    pub fn sinks(&self) -> impl Iterator<Item = &SinkOptions> {
        self.stages.iter().flat_map(|s| match s {
            Stage::Job(j) => j.sinks.iter().collect::<Vec<_>>(),
            Stage::Consumer(c) => vec![&c.sink],
        })
    }
}

/// What the extraction reads: the scenario, the design, its nodes' typed options and its
/// edges.
struct Ctx<'a> {
    scenario: &'a Compiled,
    design: &'a Design,
    typed: &'a [Option<TypedOptions>],
    graph: &'a Graph,
}

fn node_path(i: usize) -> String {
    format!("$.nodes[{i}]")
}

impl Ctx<'_> {
    fn id(&self, i: usize) -> &str {
        &self.design.nodes[i].id
    }
    fn of_kind(&self, kind: NodeKind) -> Vec<usize> {
        (0..self.design.nodes.len())
            .filter(|&i| self.design.nodes[i].kind == kind)
            .collect()
    }
    fn table_of(&self, i: usize) -> Option<&str> {
        match &self.typed[i] {
            Some(TypedOptions::Table { table, .. }) => table.as_deref(),
            Some(TypedOptions::SourceTable(table)) => Some(table),
            _ => None,
        }
    }
}

/// The stages of a design whose nodes and edges are valid, or `None` with the reasons in
/// `errors`.
pub(super) fn extract_pipeline(
    scenario: &Compiled,
    design: &Design,
    typed: &[Option<TypedOptions>],
    graph: &Graph,
    errors: &mut Errors,
) -> Option<Pipeline> {
    let ctx = Ctx {
        scenario,
        design,
        typed,
        graph,
    };
    let jobs = ctx.of_kind(NodeKind::BatchJob);
    let consumers = ctx.of_kind(NodeKind::StreamConsumer);
    if jobs.is_empty() && consumers.is_empty() {
        let what = if scenario.jobs.is_empty() {
            "a stream consumer"
        } else {
            "a batch job"
        };
        errors.push(
            "$.nodes",
            DesignErrorCode::Incomplete,
            format!("the design has no {what} yet; add one and connect it"),
        );
        return None;
    }
    check_shape(&ctx, &jobs, &consumers, errors);
    if !errors.0.is_empty() {
        return None;
    }
    let sinks = sinks(&ctx, errors);
    let mut stages: Vec<(usize, Stage)> = Vec::new();
    for &c in &consumers {
        if let Some(stage) = consumer_stage(&ctx, c, &sinks, errors) {
            stages.push(stage);
        }
    }
    for &j in &jobs {
        if let Some(stage) = job_stage(&ctx, j, &sinks, errors) {
            stages.push(stage);
        }
    }
    check_stages(&ctx, &stages, errors);
    if !errors.0.is_empty() {
        return None;
    }
    stages.sort_by_key(|(order, _)| *order);
    Some(Pipeline {
        stages: stages.into_iter().map(|(_, s)| s).collect(),
    })
}

/// Every processor has one input and writes somewhere; every node takes part; every table
/// has one writer, and a table a job reads has one.
fn check_shape(ctx: &Ctx, jobs: &[usize], consumers: &[usize], errors: &mut Errors) {
    for &p in jobs.iter().chain(consumers) {
        let inputs = ctx.graph.inputs(p);
        let outputs = ctx.graph.outputs(p);
        let id = ctx.id(p);
        if inputs.is_empty() {
            errors.push(
                node_path(p),
                DesignErrorCode::Incomplete,
                format!("\"{id}\" has no input; connect a source to it"),
            );
        }
        if inputs.len() > 1 {
            errors.push(
                node_path(p),
                DesignErrorCode::TooManyInputs,
                format!("\"{id}\" reads from one source; remove the other connections"),
            );
        }
        if outputs.is_empty() {
            errors.push(
                node_path(p),
                DesignErrorCode::Incomplete,
                format!("\"{id}\" writes nowhere; connect it to a warehouse table"),
            );
        }
        if ctx.design.nodes[p].kind == NodeKind::StreamConsumer && outputs.len() > 1 {
            errors.push(
                node_path(p),
                DesignErrorCode::TooManyOutputs,
                "a stream consumer writes one table",
            );
        }
    }
    let processor = |i: usize| {
        matches!(
            ctx.design.nodes[i].kind,
            NodeKind::BatchJob | NodeKind::StreamConsumer
        )
    };
    for (i, node) in ctx.design.nodes.iter().enumerate() {
        if processor(i) {
            continue;
        }
        let near = |list: &[usize]| list.iter().any(|&n| processor(n));
        if !near(ctx.graph.inputs(i)) && !near(ctx.graph.outputs(i)) {
            errors.push(
                node_path(i),
                DesignErrorCode::NotConnected,
                format!("\"{}\" is not connected to the pipeline", node.id),
            );
            continue;
        }
        if node.kind != NodeKind::Table {
            continue;
        }
        let writers = ctx.graph.inputs(i);
        let table = ctx.table_of(i).unwrap_or("the table");
        if writers.len() > 1 {
            let names: Vec<String> = writers
                .iter()
                .map(|&w| format!("\"{}\"", ctx.id(w)))
                .collect();
            errors.push(
                node_path(i),
                DesignErrorCode::TwoWriters,
                format!(
                    "{} both write {table}; one stage writes a table, and a later one may read it",
                    names.join(" and ")
                ),
            );
        }
        if writers.is_empty() {
            let reader = ctx.graph.outputs(i).first().map_or("", |&r| ctx.id(r));
            errors.push(
                node_path(i),
                DesignErrorCode::NoWriter,
                format!(
                    "nothing writes {table} before \"{reader}\" reads it; connect the stage that writes {table} to this node"
                ),
            );
        }
    }
}

/// How each table node is written, by node index; each table is drawn once.
fn sinks(ctx: &Ctx, errors: &mut Errors) -> BTreeMap<usize, SinkOptions> {
    let mut out = BTreeMap::new();
    let mut nodes_of: BTreeMap<String, usize> = BTreeMap::new();
    for t in ctx.of_kind(NodeKind::Table) {
        let Some(TypedOptions::Table {
            table: Some(table),
            write,
            key,
            version,
        }) = &ctx.typed[t]
        else {
            continue;
        };
        if let Some(&first) = nodes_of.get(table) {
            let same_writer = ctx.graph.inputs(first) == ctx.graph.inputs(t);
            let message = if same_writer {
                format!("two nodes write {table}; keep one")
            } else {
                format!(
                    "\"{}\" already stands for {table}; draw it once and connect every stage that writes or reads it to that node",
                    ctx.id(first)
                )
            };
            errors.push(
                format!("{}.options.table", node_path(t)),
                DesignErrorCode::DuplicateSink,
                message,
            );
            continue;
        }
        nodes_of.insert(table.clone(), t);
        if let Some(sink) = sink_options(
            ctx,
            t,
            table,
            *write,
            key.as_ref(),
            version.as_deref(),
            errors,
        ) {
            out.insert(t, sink);
        }
    }
    out
}

/// One table node's write, checked against what the table offers.
fn sink_options(
    ctx: &Ctx,
    t: usize,
    table: &str,
    write: WriteMode,
    key: Option<&Vec<String>>,
    version: Option<&str>,
    errors: &mut Errors,
) -> Option<SinkOptions> {
    let def = ctx.scenario.scenario().table(table)?;
    let path = node_path(t);
    let key = match key {
        Some(k) => {
            if !def.keys.contains(k) {
                let offered: Vec<String> = def
                    .keys
                    .iter()
                    .map(|k| format!("[{}]", k.join(", ")))
                    .collect();
                let message = if offered.is_empty() {
                    format!("{table} offers no key to write by")
                } else {
                    format!(
                        "{table} cannot be keyed by [{}]; it offers {}",
                        k.join(", "),
                        offered.join(" or ")
                    )
                };
                errors.push(
                    format!("{path}.options.key"),
                    DesignErrorCode::BadKey,
                    message,
                );
            }
            k.clone()
        }
        None => def.keys.first().cloned().unwrap_or_default(),
    };
    if write.by_key() && key.is_empty() {
        errors.push(
            format!("{path}.options.write"),
            DesignErrorCode::NoKey,
            format!(
                "{} needs a key, and {table} has no natural key to write by",
                write.name()
            ),
        );
    }
    if write == WriteMode::DeleteInsert && def.partition.is_none() {
        errors.push(
            format!("{path}.options.write"),
            DesignErrorCode::NoPartition,
            format!("delete_insert replaces one day, and {table} has no date partition"),
        );
    }
    let version = match version {
        Some(v) if !def.versions.iter().any(|c| c == v) => {
            let message = if def.versions.is_empty() {
                format!("{table} offers no version column")
            } else {
                format!(
                    "{table} cannot be versioned by {v}; it offers {}",
                    def.versions.join(" or ")
                )
            };
            errors.push(
                format!("{path}.options.version"),
                DesignErrorCode::BadVersion,
                message,
            );
            Some(v.to_string())
        }
        Some(v) => Some(v.to_string()),
        None => def.versions.first().cloned(),
    };
    if write == WriteMode::MergeIfNewer && version.is_none() {
        errors.push(
            format!("{path}.options.write"),
            DesignErrorCode::NoVersion,
            format!(
                "merge_if_newer applies a row only when it is newer, and {table} has no version column to compare"
            ),
        );
    }
    Some(SinkOptions {
        node: ctx.id(t).to_string(),
        table: table.to_string(),
        write,
        key,
        version,
    })
}

/// A consumer's stage, with its place in the scenario's order.
fn consumer_stage(
    ctx: &Ctx,
    c: usize,
    sinks: &BTreeMap<usize, SinkOptions>,
    errors: &mut Errors,
) -> Option<(usize, Stage)> {
    let Some(TypedOptions::StreamConsumer(options)) = &ctx.typed[c] else {
        return None;
    };
    let input = *ctx.graph.inputs(c).first()?;
    let output = *ctx.graph.outputs(c).first()?;
    let sink = sinks.get(&output)?.clone();
    if sink.write == WriteMode::DeleteInsert {
        errors.push(format!("{}.options.write", node_path(output)), DesignErrorCode::BadWrite, "a consumer writes one message at a time; delete_insert replaces a day and makes no sense here");
        return None;
    }
    let node = ctx.id(c).to_string();
    let streams = ctx.scenario.scenario().streams.len();
    match &ctx.typed[input] {
        Some(TypedOptions::Stream(topic)) => {
            let order = ctx.scenario.stream(topic)?;
            Some((
                order,
                Stage::Consumer(ConsumerStage {
                    node,
                    input: ConsumerInput::Stream {
                        node: ctx.id(input).to_string(),
                        topic: topic.clone(),
                    },
                    options: options.clone(),
                    sink,
                }),
            ))
        }
        Some(TypedOptions::Sender(sender)) => {
            let Some(def) = ctx.scenario.scenario().senders.first() else {
                errors.push(
                    node_path(input),
                    DesignErrorCode::NotInPalette,
                    "this scenario has no sender",
                );
                return None;
            };
            if options.offset_commit == OffsetCommit::WithWrite {
                errors.push(
                    format!("{}.options.offset_commit", node_path(c)),
                    DesignErrorCode::BadOptionValue,
                    "a consumer fed by a sender has no offset to save with the row: it acks the sender before it writes (before_write) or after (after_write)",
                );
                return None;
            }
            Some((
                streams,
                Stage::Consumer(ConsumerStage {
                    node,
                    input: ConsumerInput::Sender {
                        node: ctx.id(input).to_string(),
                        name: def.name.clone(),
                        options: sender.clone(),
                    },
                    options: options.clone(),
                    sink,
                }),
            ))
        }
        _ => None,
    }
}

/// A batch job's stage: the scenario's job that reads the job node's input, with a table node
/// for each of its steps.
fn job_stage(
    ctx: &Ctx,
    j: usize,
    sinks: &BTreeMap<usize, SinkOptions>,
    errors: &mut Errors,
) -> Option<(usize, Stage)> {
    let Some(TypedOptions::BatchJob(options)) = &ctx.typed[j] else {
        return None;
    };
    let input = *ctx.graph.inputs(j).first()?;
    let source = ctx.table_of(input)?.to_string();
    let scenario = ctx.scenario;
    let Some(job) = scenario
        .table(&source)
        .and_then(|t| scenario.job_reading(t))
    else {
        let sources: Vec<&str> = scenario
            .jobs
            .iter()
            .map(|job| scenario.tables[job.source].name.as_str())
            .collect();
        let message = match sources.as_slice() {
            [] => "this scenario has no batch job".to_string(),
            [one] => format!("the job reads {one}, not {source}"),
            many => format!(
                "no job of this scenario reads {source}; its jobs read {}",
                many.join(", ")
            ),
        };
        errors.push(
            format!("{}.options.table", node_path(input)),
            DesignErrorCode::WrongSource,
            message,
        );
        return None;
    };
    let def = &scenario.jobs[job];
    let mut by_table: BTreeMap<&str, &SinkOptions> = ctx
        .graph
        .outputs(j)
        .iter()
        .filter_map(|o| sinks.get(o))
        .map(|s| (s.table.as_str(), s))
        .collect();
    let mut steps = Vec::new();
    for step in &def.steps {
        let target = scenario.tables[step.target].name.as_str();
        match by_table.remove(target) {
            Some(s) => steps.push(s.clone()),
            None => errors.push(
                node_path(j),
                DesignErrorCode::Incomplete,
                format!(
                    "the step \"{}\" writes {target}; connect the job to a {target} table",
                    step.def.title()
                ),
            ),
        }
    }
    for (table, sink) in by_table {
        let i = ctx
            .design
            .nodes
            .iter()
            .position(|n| n.id == sink.node)
            .unwrap_or(0);
        errors.push(
            format!("{}.options.table", node_path(i)),
            DesignErrorCode::NoStep,
            format!("the job has no step that writes {table}"),
        );
    }
    if options.loaded_at != LoadedAt::None {
        for sink in &steps {
            if scenario
                .scenario()
                .table(&sink.table)
                .and_then(|t| t.column_index("loaded_at"))
                .is_none()
            {
                errors.push(
                    format!("{}.options.loaded_at", node_path(j)),
                    DesignErrorCode::NoColumn,
                    format!("{} has no loaded_at column to stamp", sink.table),
                );
            }
        }
    }
    let order = scenario.streams.len() + scenario.senders.len() + job;
    Some((
        order,
        Stage::Job(JobStage {
            node: ctx.id(j).to_string(),
            job: def.id.clone(),
            source_node: ctx.id(input).to_string(),
            source_table: source,
            options: options.clone(),
            sinks: steps,
        }),
    ))
}

/// Each of the scenario's jobs, streams and senders is one stage of the design, once.
fn check_stages(ctx: &Ctx, stages: &[(usize, Stage)], errors: &mut Errors) {
    let mut seen: BTreeMap<usize, &str> = BTreeMap::new();
    for (order, stage) in stages {
        let (node, what) = match stage {
            Stage::Job(j) => (
                j.node.as_str(),
                format!("the job that reads {}", j.source_table),
            ),
            Stage::Consumer(c) => (
                c.node.as_str(),
                format!("{} is read by one consumer", c.input.name()),
            ),
        };
        if let Some(first) = seen.insert(*order, node) {
            let i = ctx
                .design
                .nodes
                .iter()
                .position(|n| n.id == node)
                .unwrap_or(0);
            let message = match stage {
                Stage::Job(_) => {
                    format!("{what} is drawn twice (\"{first}\" and \"{node}\"); remove one")
                }
                Stage::Consumer(_) => format!("{what}; remove \"{node}\" or \"{first}\""),
            };
            errors.push(node_path(i), DesignErrorCode::ExtraNode, message);
        }
    }
    let scenario = ctx.scenario;
    let streams = scenario.streams.len();
    let senders = scenario.senders.len().min(1);
    let missing = |order: usize| !seen.contains_key(&order);
    for (s, stream) in scenario.streams.iter().enumerate() {
        if missing(s) {
            errors.push("$.nodes", DesignErrorCode::Incomplete, format!("the design does not read the stream {} yet; add a stream consumer and connect {} to it", stream.name, stream.name));
        }
    }
    if senders == 1 && missing(streams) {
        let name = &scenario.senders[0].name;
        errors.push("$.nodes", DesignErrorCode::Incomplete, format!("the design does not take the messages of the sender {name} yet; add a stream consumer and connect {name} to it"));
    }
    for (j, job) in scenario.jobs.iter().enumerate() {
        if missing(streams + scenario.senders.len() + j) {
            let source = &scenario.tables[job.source].name;
            errors.push("$.nodes", DesignErrorCode::Incomplete, format!("the design has no batch job that reads {source} yet; add one and connect {source} to it"));
        }
    }
}
