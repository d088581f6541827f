//! Designs: the graph a student draws, its parsing, and its validation against a scenario.
//!
//! `Design` is the raw JSON shape (it round-trips exactly). `ValidDesign` exists only after
//! `validate` has accepted a design for one scenario: every option typed, defaults applied,
//! and the pipeline the simulator runs extracted from the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use crate::scenario::{Palette, Scenario, TableRole};

/// The largest design accepted, so that a hostile graph cannot make validation expensive.
pub const MAX_NODES: usize = 64;
pub const MAX_EDGES: usize = 256;

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Design {
    pub nodes: Vec<Node>,
    #[serde(default)]
    pub edges: Vec<Edge>,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    pub id: String,
    pub kind: NodeKind,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub options: Map<String, Json>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Position {
    pub x: f64,
    pub y: f64,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    pub from: String,
    pub to: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    SourceTable,
    Stream,
    Sender,
    BatchJob,
    StreamConsumer,
    Table,
}

impl NodeKind {
    pub const ALL: [NodeKind; 6] = [
        NodeKind::SourceTable,
        NodeKind::Stream,
        NodeKind::Sender,
        NodeKind::BatchJob,
        NodeKind::StreamConsumer,
        NodeKind::Table,
    ];

    pub fn name(self) -> &'static str {
        match self {
            NodeKind::SourceTable => "source_table",
            NodeKind::Stream => "stream",
            NodeKind::Sender => "sender",
            NodeKind::BatchJob => "batch_job",
            NodeKind::StreamConsumer => "stream_consumer",
            NodeKind::Table => "table",
        }
    }

    pub fn parse(s: &str) -> Option<NodeKind> {
        NodeKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// A phrase for messages to students.
    pub fn describe(self) -> &'static str {
        match self {
            NodeKind::SourceTable => "a source table",
            NodeKind::Stream => "a stream",
            NodeKind::Sender => "a sender",
            NodeKind::BatchJob => "a batch job",
            NodeKind::StreamConsumer => "a stream consumer",
            NodeKind::Table => "a warehouse table",
        }
    }

    /// The options of this kind; for choice options, their values with the default first.
    pub fn options(self) -> &'static [OptionSpec] {
        match self {
            NodeKind::SourceTable => &[OptionSpec {
                name: "table",
                values: OptionValues::SourceTable,
            }],
            NodeKind::Stream => &[OptionSpec {
                name: "topic",
                values: OptionValues::Stream,
            }],
            NodeKind::Sender => &[
                OptionSpec {
                    name: "on_timeout",
                    values: OptionValues::Choice(&["give_up", "resend"]),
                },
                OptionSpec {
                    name: "idempotency_key",
                    values: OptionValues::Choice(&["none", "per_attempt", "per_action"]),
                },
            ],
            NodeKind::BatchJob => &[
                OptionSpec {
                    name: "date_filter",
                    values: OptionValues::Choice(&["current_date_minus_1", "logical_date"]),
                },
                OptionSpec {
                    name: "transaction",
                    values: OptionValues::Choice(&["none", "per_run"]),
                },
                OptionSpec {
                    name: "loaded_at",
                    values: OptionValues::Choice(&["none", "now", "logical_date"]),
                },
            ],
            NodeKind::StreamConsumer => &[
                OptionSpec {
                    name: "offset_commit",
                    values: OptionValues::Choice(&["before_write", "after_write", "with_write"]),
                },
                OptionSpec {
                    name: "dedupe",
                    values: OptionValues::Choice(&["none", "in_memory"]),
                },
                OptionSpec {
                    name: "dedupe_window",
                    values: OptionValues::Count {
                        default: 2,
                        max: 1000,
                    },
                },
            ],
            NodeKind::Table => &[
                OptionSpec {
                    name: "table",
                    values: OptionValues::SinkTable,
                },
                OptionSpec {
                    name: "write",
                    values: OptionValues::Choice(&[
                        "append",
                        "delete_insert",
                        "merge",
                        "insert_ignore",
                    ]),
                },
                OptionSpec {
                    name: "key",
                    values: OptionValues::Key,
                },
            ],
        }
    }

    /// Which kinds this kind may feed.
    pub fn may_feed(self, target: NodeKind) -> bool {
        matches!(
            (self, target),
            (NodeKind::SourceTable, NodeKind::BatchJob)
                | (NodeKind::Stream, NodeKind::StreamConsumer)
                | (NodeKind::Sender, NodeKind::StreamConsumer)
                | (NodeKind::BatchJob, NodeKind::Table)
                | (NodeKind::StreamConsumer, NodeKind::Table)
        )
    }
}

impl fmt::Display for NodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    pub name: &'static str,
    pub values: OptionValues,
}

#[derive(Clone, Copy, Debug)]
pub enum OptionValues {
    /// One of these strings; the first is the default.
    Choice(&'static [&'static str]),
    /// A whole number from 1 to `max`.
    Count { default: u32, max: u32 },
    /// A source table of the scenario.
    SourceTable,
    /// A sink table of the scenario.
    SinkTable,
    /// A stream of the scenario.
    Stream,
    /// A column list the table offers as a key.
    Key,
}

/// Why a connection between two kinds is refused, in words for a student; `None` if allowed.
pub fn wiring_refusal(source: NodeKind, target: NodeKind) -> Option<String> {
    if source.may_feed(target) {
        return None;
    }
    Some(match (source, target) {
        (NodeKind::Table, _) => format!(
            "a warehouse table is where data ends; it cannot feed {}",
            target.describe()
        ),
        (_, NodeKind::SourceTable | NodeKind::Stream | NodeKind::Sender) => {
            format!(
                "{} is where data starts; nothing can feed it",
                target.describe()
            )
        }
        (NodeKind::SourceTable, _) => "a source table is read by a batch job".into(),
        (NodeKind::Stream | NodeKind::Sender, _) => {
            format!("{} feeds a stream consumer", source.describe())
        }
        (NodeKind::BatchJob | NodeKind::StreamConsumer, _) => {
            format!("{} writes into warehouse tables", source.describe())
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Typed options
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    GiveUp,
    Resend,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdempotencyKey {
    None,
    PerAttempt,
    PerAction,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DateFilter {
    CurrentDateMinus1,
    LogicalDate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transaction {
    None,
    PerRun,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadedAt {
    None,
    Now,
    LogicalDate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OffsetCommit {
    BeforeWrite,
    AfterWrite,
    WithWrite,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dedupe {
    None,
    InMemory,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteMode {
    Append,
    DeleteInsert,
    Merge,
    InsertIgnore,
}

impl WriteMode {
    pub fn name(self) -> &'static str {
        match self {
            WriteMode::Append => "append",
            WriteMode::DeleteInsert => "delete_insert",
            WriteMode::Merge => "merge",
            WriteMode::InsertIgnore => "insert_ignore",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobOptions {
    pub date_filter: DateFilter,
    pub transaction: Transaction,
    pub loaded_at: LoadedAt,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConsumerOptions {
    pub offset_commit: OffsetCommit,
    pub dedupe: Dedupe,
    pub dedupe_window: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SenderOptions {
    pub on_timeout: OnTimeout,
    pub idempotency_key: IdempotencyKey,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SinkOptions {
    /// The design node that stands for this table.
    pub node: String,
    pub table: String,
    pub write: WriteMode,
    /// Empty when the table offers no key.
    pub key: Vec<String>,
}

/// The pipeline a valid design amounts to; node ids are kept for traces and replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "shape", rename_all = "snake_case")]
pub enum Pipeline {
    Batch {
        source_node: String,
        source_table: String,
        job_node: String,
        job: JobOptions,
        /// One sink per job step, in step order.
        sinks: Vec<SinkOptions>,
    },
    Stream {
        stream_node: String,
        topic: String,
        consumer_node: String,
        consumer: ConsumerOptions,
        sink: SinkOptions,
    },
    Sender {
        sender_node: String,
        sender_name: String,
        sender: SenderOptions,
        consumer_node: String,
        consumer: ConsumerOptions,
        sink: SinkOptions,
    },
}

/// A design that passed validation for one scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidDesign {
    design: Design,
    pipeline: Pipeline,
}

impl ValidDesign {
    pub fn design(&self) -> &Design {
        &self.design
    }
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

// The palette is scenario data, but which of its fields belongs to a node kind is a question
// about designs, so the lookup lives here and the scenario format stays free of design types.
impl Palette {
    /// The allowed option values of one kind, or `None` when the kind is not offered.
    pub fn kind(&self, kind: NodeKind) -> Option<&BTreeMap<String, Vec<String>>> {
        use NodeKind as K;
        match kind {
            K::SourceTable => self.source_table.as_ref(),
            K::Stream => self.stream.as_ref(),
            K::Sender => self.sender.as_ref(),
            K::BatchJob => self.batch_job.as_ref(),
            K::StreamConsumer => self.stream_consumer.as_ref(),
            K::Table => self.table.as_ref(),
        }
    }
}

/// One problem with a design: where (a JSON path such as `nodes[2].options.write`), a
/// machine-readable code, and a sentence a student understands.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DesignError {
    pub path: String,
    pub code: DesignErrorCode,
    pub message: String,
}

/// What kind of problem a [`DesignError`] is, for a program to act on (the server answers
/// `graph_too_large` for [`DesignErrorCode::TooManyNodes`], for instance). It serialises as
/// the snake_case name that [`DesignErrorCode::as_str`] returns.
///
/// The variants are declared in the alphabetical order of those names, so that sorting a list
/// of errors orders it exactly as sorting by the names would: the order a student reads the
/// problems in does not depend on how the code is stored.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DesignErrorCode {
    BadKey,
    BadOptionValue,
    BadWiring,
    BadWrite,
    Cycle,
    DanglingEdge,
    DuplicateEdge,
    DuplicateId,
    DuplicateSink,
    Empty,
    ExtraNode,
    Incomplete,
    /// No more precise reason: a caller's answer for a refused design whose list of problems
    /// is empty. The validator itself never reports it.
    Invalid,
    MalformedJson,
    MissingField,
    MissingOption,
    NoColumn,
    NoKey,
    NoPartition,
    NoStep,
    NotAnObject,
    NotConnected,
    NotInPalette,
    TooLong,
    TooManyEdges,
    TooManyInputs,
    TooManyNodes,
    TooManyOutputs,
    UnknownField,
    UnknownKind,
    UnknownName,
    UnknownOption,
    WrongSource,
    WrongType,
}

impl DesignErrorCode {
    /// The code's name, as it appears in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            DesignErrorCode::BadKey => "bad_key",
            DesignErrorCode::BadOptionValue => "bad_option_value",
            DesignErrorCode::BadWiring => "bad_wiring",
            DesignErrorCode::BadWrite => "bad_write",
            DesignErrorCode::Cycle => "cycle",
            DesignErrorCode::DanglingEdge => "dangling_edge",
            DesignErrorCode::DuplicateEdge => "duplicate_edge",
            DesignErrorCode::DuplicateId => "duplicate_id",
            DesignErrorCode::DuplicateSink => "duplicate_sink",
            DesignErrorCode::Empty => "empty",
            DesignErrorCode::ExtraNode => "extra_node",
            DesignErrorCode::Incomplete => "incomplete",
            DesignErrorCode::Invalid => "invalid",
            DesignErrorCode::MalformedJson => "malformed_json",
            DesignErrorCode::MissingField => "missing_field",
            DesignErrorCode::MissingOption => "missing_option",
            DesignErrorCode::NoColumn => "no_column",
            DesignErrorCode::NoKey => "no_key",
            DesignErrorCode::NoPartition => "no_partition",
            DesignErrorCode::NoStep => "no_step",
            DesignErrorCode::NotAnObject => "not_an_object",
            DesignErrorCode::NotConnected => "not_connected",
            DesignErrorCode::NotInPalette => "not_in_palette",
            DesignErrorCode::TooLong => "too_long",
            DesignErrorCode::TooManyEdges => "too_many_edges",
            DesignErrorCode::TooManyInputs => "too_many_inputs",
            DesignErrorCode::TooManyNodes => "too_many_nodes",
            DesignErrorCode::TooManyOutputs => "too_many_outputs",
            DesignErrorCode::UnknownField => "unknown_field",
            DesignErrorCode::UnknownKind => "unknown_kind",
            DesignErrorCode::UnknownName => "unknown_name",
            DesignErrorCode::UnknownOption => "unknown_option",
            DesignErrorCode::WrongSource => "wrong_source",
            DesignErrorCode::WrongType => "wrong_type",
        }
    }
}

impl fmt::Display for DesignErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for DesignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

struct Errors(Vec<DesignError>);

impl Errors {
    fn push(&mut self, path: impl Into<String>, code: DesignErrorCode, message: impl Into<String>) {
        self.0.push(DesignError {
            path: path.into(),
            code,
            message: message.into(),
        });
    }
}

/// Parses design JSON text. All shape problems are reported, each with its JSON path.
pub fn parse_design(text: &str) -> Result<Design, Vec<DesignError>> {
    let json: Json = serde_json::from_str(text).map_err(|e| {
        vec![DesignError {
            path: "$".into(),
            code: DesignErrorCode::MalformedJson,
            message: format!("the design is not valid JSON: {e}"),
        }]
    })?;
    design_from_json(&json)
}

/// Reads a design from JSON, reporting every problem of shape (not only the first).
pub fn design_from_json(json: &Json) -> Result<Design, Vec<DesignError>> {
    let mut errors = Errors(Vec::new());
    let Some(object) = json.as_object() else {
        errors.push(
            "$",
            DesignErrorCode::NotAnObject,
            "a design is a JSON object with \"nodes\" and \"edges\"",
        );
        return Err(errors.0);
    };
    for key in object.keys() {
        if key != "nodes" && key != "edges" {
            errors.push(
                format!("$.{key}"),
                DesignErrorCode::UnknownField,
                format!("unknown field \"{key}\"; a design has only \"nodes\" and \"edges\""),
            );
        }
    }
    let mut nodes = Vec::new();
    match object.get("nodes") {
        None => errors.push(
            "$.nodes",
            DesignErrorCode::MissingField,
            "a design needs a \"nodes\" list",
        ),
        Some(Json::Array(list)) => {
            if list.len() > MAX_NODES {
                errors.push(
                    "$.nodes",
                    DesignErrorCode::TooManyNodes,
                    format!(
                        "a design may have at most {MAX_NODES} nodes; this one has {}",
                        list.len()
                    ),
                );
                return Err(errors.0);
            }
            for (i, node) in list.iter().enumerate() {
                if let Some(n) = node_from_json(&format!("$.nodes[{i}]"), node, &mut errors) {
                    nodes.push(n);
                }
            }
        }
        Some(_) => errors.push(
            "$.nodes",
            DesignErrorCode::WrongType,
            "\"nodes\" must be a list",
        ),
    }
    let mut edges = Vec::new();
    match object.get("edges") {
        None => {}
        Some(Json::Array(list)) => {
            if list.len() > MAX_EDGES {
                errors.push(
                    "$.edges",
                    DesignErrorCode::TooManyEdges,
                    format!(
                        "a design may have at most {MAX_EDGES} edges; this one has {}",
                        list.len()
                    ),
                );
                return Err(errors.0);
            }
            for (i, edge) in list.iter().enumerate() {
                let path = format!("$.edges[{i}]");
                let Some(obj) = edge.as_object() else {
                    errors.push(
                        path,
                        DesignErrorCode::WrongType,
                        "an edge is an object {\"from\": …, \"to\": …}",
                    );
                    continue;
                };
                for key in obj.keys() {
                    if key != "from" && key != "to" {
                        errors.push(
                            format!("{path}.{key}"),
                            DesignErrorCode::UnknownField,
                            format!(
                                "unknown field \"{key}\"; an edge has only \"from\" and \"to\""
                            ),
                        );
                    }
                }
                let from = string_field(&path, obj, "from", &mut errors);
                let to = string_field(&path, obj, "to", &mut errors);
                if let (Some(from), Some(to)) = (from, to) {
                    edges.push(Edge { from, to });
                }
            }
        }
        Some(_) => errors.push(
            "$.edges",
            DesignErrorCode::WrongType,
            "\"edges\" must be a list",
        ),
    }
    if errors.0.is_empty() {
        Ok(Design { nodes, edges })
    } else {
        Err(errors.0)
    }
}

fn string_field(
    path: &str,
    obj: &Map<String, Json>,
    key: &str,
    errors: &mut Errors,
) -> Option<String> {
    match obj.get(key) {
        Some(Json::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Json::String(_)) => {
            errors.push(
                format!("{path}.{key}"),
                DesignErrorCode::Empty,
                format!("\"{key}\" must not be empty"),
            );
            None
        }
        Some(_) => {
            errors.push(
                format!("{path}.{key}"),
                DesignErrorCode::WrongType,
                format!("\"{key}\" must be a string"),
            );
            None
        }
        None => {
            errors.push(
                format!("{path}.{key}"),
                DesignErrorCode::MissingField,
                format!("\"{key}\" is missing"),
            );
            None
        }
    }
}

fn node_from_json(path: &str, json: &Json, errors: &mut Errors) -> Option<Node> {
    let Some(obj) = json.as_object() else {
        errors.push(
            path,
            DesignErrorCode::WrongType,
            "a node is an object with \"id\", \"kind\" and \"options\"",
        );
        return None;
    };
    for key in obj.keys() {
        if !matches!(key.as_str(), "id" | "kind" | "options" | "position") {
            errors.push(format!("{path}.{key}"), DesignErrorCode::UnknownField, format!("unknown field \"{key}\"; a node has \"id\", \"kind\", \"options\" and \"position\""));
        }
    }
    let id = string_field(path, obj, "id", errors);
    if let Some(id) = &id {
        if id.len() > 64 {
            errors.push(
                format!("{path}.id"),
                DesignErrorCode::TooLong,
                "a node id may have at most 64 characters",
            );
        }
    }
    let kind = match obj.get("kind") {
        Some(Json::String(s)) => match NodeKind::parse(s) {
            Some(k) => Some(k),
            None => {
                let known: Vec<&str> = NodeKind::ALL.iter().map(|k| k.name()).collect();
                errors.push(
                    format!("{path}.kind"),
                    DesignErrorCode::UnknownKind,
                    format!(
                        "unknown node kind \"{s}\"; the kinds are {}",
                        known.join(", ")
                    ),
                );
                None
            }
        },
        Some(_) => {
            errors.push(
                format!("{path}.kind"),
                DesignErrorCode::WrongType,
                "\"kind\" must be a string",
            );
            None
        }
        None => {
            errors.push(
                format!("{path}.kind"),
                DesignErrorCode::MissingField,
                "\"kind\" is missing",
            );
            None
        }
    };
    let options = match obj.get("options") {
        None | Some(Json::Null) => Map::new(),
        Some(Json::Object(m)) => m.clone(),
        Some(_) => {
            errors.push(
                format!("{path}.options"),
                DesignErrorCode::WrongType,
                "\"options\" must be an object",
            );
            Map::new()
        }
    };
    let position = match obj.get("position") {
        None | Some(Json::Null) => None,
        Some(p) => match serde_json::from_value::<Position>(p.clone()) {
            Ok(p) if p.x.is_finite() && p.y.is_finite() => Some(p),
            _ => {
                errors.push(
                    format!("{path}.position"),
                    DesignErrorCode::WrongType,
                    "\"position\" must be {\"x\": number, \"y\": number}",
                );
                None
            }
        },
    };
    Some(Node {
        id: id?,
        kind: kind?,
        options,
        position,
    })
}

// ---------------------------------------------------------------------------------------------
// Validation against a scenario
// ---------------------------------------------------------------------------------------------

/// Parses and validates a design for a scenario, reporting every problem.
pub fn validate_json(scenario: &Scenario, json: &Json) -> Result<ValidDesign, Vec<DesignError>> {
    let design = design_from_json(json)?;
    validate(scenario, design)
}

/// Validates a design for a scenario: options, palette, wiring, and that it forms the
/// scenario's pipeline. Every problem is reported, sorted by path.
pub fn validate(scenario: &Scenario, design: Design) -> Result<ValidDesign, Vec<DesignError>> {
    let mut errors = Errors(Vec::new());
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, node) in design.nodes.iter().enumerate() {
        if index.insert(node.id.as_str(), i).is_some() {
            errors.push(
                format!("$.nodes[{i}].id"),
                DesignErrorCode::DuplicateId,
                format!("two nodes are called \"{}\"; ids must be unique", node.id),
            );
        }
    }

    // Options, defaults and palette.
    let mut typed: Vec<Option<TypedOptions>> = Vec::with_capacity(design.nodes.len());
    for (i, node) in design.nodes.iter().enumerate() {
        typed.push(typed_options(
            scenario,
            &format!("$.nodes[{i}]"),
            node,
            &mut errors,
        ));
    }

    // Edges: dangling, duplicate, wiring.
    let mut seen_edges = BTreeSet::new();
    let mut outgoing: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut incoming: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (e, edge) in design.edges.iter().enumerate() {
        let path = format!("$.edges[{e}]");
        let source = index.get(edge.from.as_str()).copied();
        let target = index.get(edge.to.as_str()).copied();
        if source.is_none() {
            errors.push(
                format!("{path}.from"),
                DesignErrorCode::DanglingEdge,
                format!(
                    "the edge starts at \"{}\", which is not a node of the design",
                    edge.from
                ),
            );
        }
        if target.is_none() {
            errors.push(
                format!("{path}.to"),
                DesignErrorCode::DanglingEdge,
                format!(
                    "the edge ends at \"{}\", which is not a node of the design",
                    edge.to
                ),
            );
        }
        let (Some(s), Some(t)) = (source, target) else {
            continue;
        };
        if !seen_edges.insert((s, t)) {
            errors.push(
                path,
                DesignErrorCode::DuplicateEdge,
                format!("\"{}\" is already connected to \"{}\"", edge.from, edge.to),
            );
            continue;
        }
        if s == t {
            errors.push(
                path,
                DesignErrorCode::Cycle,
                format!(
                    "\"{}\" is connected to itself; a pipeline flows one way",
                    edge.from
                ),
            );
            continue;
        }
        outgoing.entry(s).or_default().push(t);
        incoming.entry(t).or_default().push(s);
    }
    if let Some(cycle) = find_cycle(design.nodes.len(), &outgoing) {
        let names: Vec<&str> = cycle.iter().map(|&i| design.nodes[i].id.as_str()).collect();
        errors.push(
            "$.edges",
            DesignErrorCode::Cycle,
            format!(
                "the edges form a cycle ({} → {}); a pipeline flows one way",
                names.join(" → "),
                names[0]
            ),
        );
    }
    for (e, edge) in design.edges.iter().enumerate() {
        let (Some(&s), Some(&t)) = (index.get(edge.from.as_str()), index.get(edge.to.as_str()))
        else {
            continue;
        };
        if s == t {
            continue;
        }
        if let Some(why) = wiring_refusal(design.nodes[s].kind, design.nodes[t].kind) {
            errors.push(
                format!("$.edges[{e}]"),
                DesignErrorCode::BadWiring,
                format!("\"{}\" cannot feed \"{}\": {why}", edge.from, edge.to),
            );
        }
    }

    let pipeline = if errors.0.is_empty() {
        extract_pipeline(scenario, &design, &typed, &incoming, &outgoing, &mut errors)
    } else {
        None
    };
    match pipeline {
        Some(pipeline) if errors.0.is_empty() => Ok(ValidDesign { design, pipeline }),
        _ => {
            let mut list = errors.0;
            list.sort();
            list.dedup();
            Err(list)
        }
    }
}

#[derive(Clone, Debug)]
enum TypedOptions {
    SourceTable(String),
    Stream(String),
    Sender(SenderOptions),
    BatchJob(JobOptions),
    StreamConsumer(ConsumerOptions),
    Table {
        table: Option<String>,
        write: WriteMode,
        key: Option<Vec<String>>,
    },
}

fn typed_options(
    scenario: &Scenario,
    path: &str,
    node: &Node,
    errors: &mut Errors,
) -> Option<TypedOptions> {
    let specs = node.kind.options();
    let palette = scenario.palette.kind(node.kind);
    if palette.is_none() {
        errors.push(
            format!("{path}.kind"),
            DesignErrorCode::NotInPalette,
            format!(
                "this scenario does not offer {} ({})",
                node.kind.describe(),
                node.kind
            ),
        );
    }
    for key in node.options.keys() {
        if !specs.iter().any(|s| s.name == key) {
            let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
            errors.push(
                format!("{path}.options.{key}"),
                DesignErrorCode::UnknownOption,
                format!(
                    "{} has no option \"{key}\"; its options are {}",
                    node.kind,
                    names.join(", ")
                ),
            );
        }
    }
    let before = errors.0.len();
    let mut choice: BTreeMap<&str, &'static str> = BTreeMap::new();
    let mut count: BTreeMap<&str, u32> = BTreeMap::new();
    let mut text: BTreeMap<&str, String> = BTreeMap::new();
    let mut key: Option<Vec<String>> = None;
    for spec in specs {
        let opath = format!("{path}.options.{}", spec.name);
        let given = node.options.get(spec.name).filter(|v| !v.is_null());
        let allowed = palette.and_then(|p| p.get(spec.name));
        match spec.values {
            OptionValues::Choice(values) => {
                // A missing option takes the spec's default, or the scenario's first offered
                // value when the scenario does not offer the default.
                let default = match allowed {
                    Some(allowed) if !allowed.iter().any(|a| a == values[0]) => values
                        .iter()
                        .copied()
                        .find(|v| allowed.iter().any(|a| a == v))
                        .unwrap_or(values[0]),
                    _ => values[0],
                };
                let value: Option<&'static str> = match given {
                    None => Some(default),
                    Some(Json::String(s)) => match values.iter().find(|v| **v == s) {
                        Some(v) => Some(*v),
                        None => {
                            errors.push(
                                &opath,
                                DesignErrorCode::BadOptionValue,
                                format!(
                                    "\"{s}\" is not a value of {}; choose one of {}",
                                    spec.name,
                                    values.join(", ")
                                ),
                            );
                            None
                        }
                    },
                    Some(_) => {
                        errors.push(
                            &opath,
                            DesignErrorCode::WrongType,
                            format!(
                                "{} must be a string, one of {}",
                                spec.name,
                                values.join(", ")
                            ),
                        );
                        None
                    }
                };
                if let (Some(v), Some(allowed)) = (value, allowed) {
                    if !allowed.iter().any(|a| a == v) {
                        errors.push(
                            &opath,
                            DesignErrorCode::NotInPalette,
                            format!(
                                "{} {v} is not offered in this scenario; choose one of {}",
                                spec.name,
                                allowed.join(", ")
                            ),
                        );
                    }
                }
                if let Some(v) = value {
                    choice.insert(spec.name, v);
                }
            }
            OptionValues::Count { default, max } => {
                let value = match given {
                    None => Some(default),
                    Some(Json::Number(n)) => match n.as_u64() {
                        Some(v) if v >= 1 && v <= u64::from(max) => Some(v as u32),
                        _ => {
                            errors.push(
                                &opath,
                                DesignErrorCode::BadOptionValue,
                                format!("{} must be a whole number from 1 to {max}", spec.name),
                            );
                            None
                        }
                    },
                    Some(_) => {
                        errors.push(
                            &opath,
                            DesignErrorCode::WrongType,
                            format!("{} must be a whole number from 1 to {max}", spec.name),
                        );
                        None
                    }
                };
                if let (Some(v), Some(allowed)) = (value, allowed) {
                    if !allowed.iter().any(|a| a == &v.to_string()) {
                        errors.push(
                            &opath,
                            DesignErrorCode::NotInPalette,
                            format!(
                                "{} {v} is not offered here; choose one of {}",
                                spec.name,
                                allowed.join(", ")
                            ),
                        );
                    }
                }
                if let Some(v) = value {
                    count.insert(spec.name, v);
                }
            }
            OptionValues::SourceTable | OptionValues::SinkTable | OptionValues::Stream => {
                let (candidates, what): (Vec<&str>, &str) = match spec.values {
                    OptionValues::SourceTable => (
                        scenario
                            .tables
                            .iter()
                            .filter(|t| t.role == TableRole::Source)
                            .map(|t| t.name.as_str())
                            .collect(),
                        "source table",
                    ),
                    OptionValues::SinkTable => (
                        scenario
                            .tables
                            .iter()
                            .filter(|t| t.role == TableRole::Sink)
                            .map(|t| t.name.as_str())
                            .collect(),
                        "warehouse table",
                    ),
                    _ => (
                        scenario.streams.iter().map(|s| s.name.as_str()).collect(),
                        "stream",
                    ),
                };
                match given {
                    None if candidates.len() == 1 && spec.values != OptionValues::SinkTable => {
                        text.insert(spec.name, candidates[0].to_string());
                    }
                    None => errors.push(
                        &opath,
                        DesignErrorCode::MissingOption,
                        format!(
                            "choose which {what} this node stands for: {}",
                            candidates.join(", ")
                        ),
                    ),
                    Some(Json::String(s)) if candidates.contains(&s.as_str()) => {
                        if let Some(allowed) = allowed {
                            if !allowed.contains(s) {
                                errors.push(
                                    &opath,
                                    DesignErrorCode::NotInPalette,
                                    format!(
                                        "{what} {s} is not offered here; choose one of {}",
                                        allowed.join(", ")
                                    ),
                                );
                            }
                        }
                        text.insert(spec.name, s.clone());
                    }
                    Some(Json::String(s)) => errors.push(
                        &opath,
                        DesignErrorCode::UnknownName,
                        format!(
                            "this scenario has no {what} \"{s}\"; its {what}s are {}",
                            candidates.join(", ")
                        ),
                    ),
                    Some(_) => errors.push(
                        &opath,
                        DesignErrorCode::WrongType,
                        format!("{} must be the name of a {what}", spec.name),
                    ),
                }
            }
            OptionValues::Key => match given {
                None => {}
                Some(Json::Array(items)) if items.iter().all(|v| v.is_string()) => {
                    key = Some(
                        items
                            .iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect(),
                    );
                }
                Some(Json::String(s)) => key = Some(vec![s.clone()]),
                Some(_) => errors.push(
                    &opath,
                    DesignErrorCode::WrongType,
                    "key must be a list of column names, such as [\"order_id\"]",
                ),
            },
        }
    }
    if errors.0.len() > before {
        return None;
    }
    let c = |name: &str| choice.get(name).copied().unwrap_or_default();
    Some(match node.kind {
        NodeKind::SourceTable => TypedOptions::SourceTable(text.remove("table")?),
        NodeKind::Stream => TypedOptions::Stream(text.remove("topic")?),
        NodeKind::Sender => TypedOptions::Sender(SenderOptions {
            on_timeout: if c("on_timeout") == "resend" {
                OnTimeout::Resend
            } else {
                OnTimeout::GiveUp
            },
            idempotency_key: match c("idempotency_key") {
                "per_attempt" => IdempotencyKey::PerAttempt,
                "per_action" => IdempotencyKey::PerAction,
                _ => IdempotencyKey::None,
            },
        }),
        NodeKind::BatchJob => TypedOptions::BatchJob(JobOptions {
            date_filter: if c("date_filter") == "logical_date" {
                DateFilter::LogicalDate
            } else {
                DateFilter::CurrentDateMinus1
            },
            transaction: if c("transaction") == "per_run" {
                Transaction::PerRun
            } else {
                Transaction::None
            },
            loaded_at: match c("loaded_at") {
                "now" => LoadedAt::Now,
                "logical_date" => LoadedAt::LogicalDate,
                _ => LoadedAt::None,
            },
        }),
        NodeKind::StreamConsumer => TypedOptions::StreamConsumer(ConsumerOptions {
            offset_commit: match c("offset_commit") {
                "after_write" => OffsetCommit::AfterWrite,
                "with_write" => OffsetCommit::WithWrite,
                _ => OffsetCommit::BeforeWrite,
            },
            dedupe: if c("dedupe") == "in_memory" {
                Dedupe::InMemory
            } else {
                Dedupe::None
            },
            dedupe_window: count.get("dedupe_window").copied().unwrap_or(2),
        }),
        NodeKind::Table => TypedOptions::Table {
            table: text.remove("table"),
            write: match c("write") {
                "delete_insert" => WriteMode::DeleteInsert,
                "merge" => WriteMode::Merge,
                "insert_ignore" => WriteMode::InsertIgnore,
                _ => WriteMode::Append,
            },
            key,
        },
    })
}

impl PartialEq for OptionValues {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

fn find_cycle(n: usize, outgoing: &BTreeMap<usize, Vec<usize>>) -> Option<Vec<usize>> {
    // Iterative depth-first search with colours; bounded by the node and edge limits.
    let mut colour = vec![0u8; n];
    for start in 0..n {
        if colour[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        colour[start] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            let children = outgoing.get(&node).map(Vec::as_slice).unwrap_or(&[]);
            if *next < children.len() {
                let child = children[*next];
                *next += 1;
                match colour[child] {
                    0 => {
                        colour[child] = 1;
                        stack.push((child, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|&(v, _)| v == child).unwrap_or(0);
                        return Some(stack[from..].iter().map(|&(v, _)| v).collect());
                    }
                    _ => {}
                }
            } else {
                colour[node] = 2;
                stack.pop();
            }
        }
    }
    None
}

fn extract_pipeline(
    scenario: &Scenario,
    design: &Design,
    typed: &[Option<TypedOptions>],
    incoming: &BTreeMap<usize, Vec<usize>>,
    outgoing: &BTreeMap<usize, Vec<usize>>,
    errors: &mut Errors,
) -> Option<Pipeline> {
    let of_kind = |k: NodeKind| -> Vec<usize> {
        design
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == k)
            .map(|(i, _)| i)
            .collect()
    };
    let jobs = of_kind(NodeKind::BatchJob);
    let consumers = of_kind(NodeKind::StreamConsumer);
    let node_path = |i: usize| format!("$.nodes[{i}]");
    let processors: Vec<usize> = jobs.iter().chain(&consumers).copied().collect();
    if processors.is_empty() {
        let what = if scenario.job.is_some() {
            "a batch job"
        } else {
            "a stream consumer"
        };
        errors.push(
            "$.nodes",
            DesignErrorCode::Incomplete,
            format!("the design has no {what} yet; add one and connect it"),
        );
        return None;
    }
    if processors.len() > 1 {
        for &p in &processors[1..] {
            errors.push(
                node_path(p),
                DesignErrorCode::ExtraNode,
                "this scenario runs one job or consumer; remove the extra one",
            );
        }
        return None;
    }
    let p = processors[0];
    let inputs = incoming.get(&p).cloned().unwrap_or_default();
    let outputs = outgoing.get(&p).cloned().unwrap_or_default();
    // Every node must be part of the one pipeline.
    for (i, node) in design.nodes.iter().enumerate() {
        if i != p && !inputs.contains(&i) && !outputs.contains(&i) {
            errors.push(
                node_path(i),
                DesignErrorCode::NotConnected,
                format!("\"{}\" is not connected to the pipeline", node.id),
            );
        }
    }
    if inputs.is_empty() {
        errors.push(
            node_path(p),
            DesignErrorCode::Incomplete,
            format!(
                "\"{}\" has no input; connect a source to it",
                design.nodes[p].id
            ),
        );
    }
    if inputs.len() > 1 {
        errors.push(
            node_path(p),
            DesignErrorCode::TooManyInputs,
            format!(
                "\"{}\" reads from one source; remove the other connections",
                design.nodes[p].id
            ),
        );
    }
    if outputs.is_empty() {
        errors.push(
            node_path(p),
            DesignErrorCode::Incomplete,
            format!(
                "\"{}\" writes nowhere; connect it to a warehouse table",
                design.nodes[p].id
            ),
        );
    }
    if !errors.0.is_empty() {
        return None;
    }
    let input = inputs[0];
    let mut sinks_by_table: BTreeMap<String, SinkOptions> = BTreeMap::new();
    for &o in &outputs {
        let Some(TypedOptions::Table { table, write, key }) = &typed[o] else {
            continue;
        };
        let Some(table) = table else { continue };
        let Some(def) = scenario.table(table) else {
            continue;
        };
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
                        format!("{}.options.key", node_path(o)),
                        DesignErrorCode::BadKey,
                        message,
                    );
                }
                k.clone()
            }
            None => def.keys.first().cloned().unwrap_or_default(),
        };
        if matches!(write, WriteMode::Merge | WriteMode::InsertIgnore) && key.is_empty() {
            errors.push(
                format!("{}.options.write", node_path(o)),
                DesignErrorCode::NoKey,
                format!(
                    "{} needs a key, and {table} has no natural key to write by",
                    write.name()
                ),
            );
        }
        if *write == WriteMode::DeleteInsert && def.partition.is_none() {
            errors.push(
                format!("{}.options.write", node_path(o)),
                DesignErrorCode::NoPartition,
                format!("delete_insert replaces one day, and {table} has no date partition"),
            );
        }
        let sink = SinkOptions {
            node: design.nodes[o].id.clone(),
            table: table.clone(),
            write: *write,
            key,
        };
        if sinks_by_table.insert(table.clone(), sink).is_some() {
            errors.push(
                format!("{}.options.table", node_path(o)),
                DesignErrorCode::DuplicateSink,
                format!("two nodes write {table}; keep one"),
            );
        }
    }
    match (&typed[p], &typed[input]) {
        (Some(TypedOptions::BatchJob(job)), Some(TypedOptions::SourceTable(source))) => {
            let Some(job_def) = &scenario.job else {
                errors.push(node_path(p), DesignErrorCode::NotInPalette, "this scenario has no batch job");
                return None;
            };
            if *source != job_def.source {
                errors.push(format!("{}.options.table", node_path(input)), DesignErrorCode::WrongSource, format!("the job reads {}, not {source}", job_def.source));
            }
            let mut sinks = Vec::new();
            for step in &job_def.steps {
                match sinks_by_table.remove(step.target()) {
                    Some(s) => sinks.push(s),
                    None => errors.push(node_path(p), DesignErrorCode::Incomplete, format!("the step \"{}\" writes {}; connect the job to a {} table", step.title(), step.target(), step.target())),
                }
            }
            for (table, sink) in sinks_by_table {
                let i = design.nodes.iter().position(|n| n.id == sink.node).unwrap_or(0);
                errors.push(format!("{}.options.table", node_path(i)), DesignErrorCode::NoStep, format!("the job has no step that writes {table}"));
            }
            if job.loaded_at != LoadedAt::None {
                for sink in &sinks {
                    if scenario.table(&sink.table).and_then(|t| t.column_index("loaded_at")).is_none() {
                        errors.push(format!("{}.options.loaded_at", node_path(p)), DesignErrorCode::NoColumn, format!("{} has no loaded_at column to stamp", sink.table));
                    }
                }
            }
            errors.0.is_empty().then(|| Pipeline::Batch {
                source_node: design.nodes[input].id.clone(),
                source_table: source.clone(),
                job_node: design.nodes[p].id.clone(),
                job: job.clone(),
                sinks,
            })
        }
        (Some(TypedOptions::StreamConsumer(consumer)), Some(source @ (TypedOptions::Stream(_) | TypedOptions::Sender(_)))) => {
            if sinks_by_table.len() != 1 || outputs.len() != 1 {
                errors.push(node_path(p), DesignErrorCode::TooManyOutputs, "a stream consumer writes one table");
                return None;
            }
            let sink = sinks_by_table.into_values().next()?;
            if sink.write == WriteMode::DeleteInsert {
                let i = design.nodes.iter().position(|n| n.id == sink.node).unwrap_or(0);
                errors.push(format!("{}.options.write", node_path(i)), DesignErrorCode::BadWrite, "a consumer writes one message at a time; delete_insert replaces a day and makes no sense here");
                return None;
            }
            match source {
                TypedOptions::Stream(topic) => Some(Pipeline::Stream {
                    stream_node: design.nodes[input].id.clone(),
                    topic: topic.clone(),
                    consumer_node: design.nodes[p].id.clone(),
                    consumer: consumer.clone(),
                    sink,
                }),
                TypedOptions::Sender(sender) => {
                    let Some(def) = scenario.senders.first() else {
                        errors.push(node_path(input), DesignErrorCode::NotInPalette, "this scenario has no sender");
                        return None;
                    };
                    Some(Pipeline::Sender {
                        sender_node: design.nodes[input].id.clone(),
                        sender_name: def.name.clone(),
                        sender: sender.clone(),
                        consumer_node: design.nodes[p].id.clone(),
                        consumer: consumer.clone(),
                        sink,
                    })
                }
                _ => None,
            }
        }
        _ => None,
    }
    .filter(|_| errors.0.is_empty())
}
