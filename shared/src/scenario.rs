//! The scenario file format: what a course author writes under `scenarios/`.
//!
//! Parsing (`Scenario::from_json`) checks the shape; `Scenario::check_names` checks that every
//! name a scenario uses exists. Whether the scenario is solvable and every requirement can be
//! missed is checked by `crate::authoring`, with the real simulator.

use std::collections::BTreeMap;

use chrono::{NaiveDate, NaiveDateTime};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::value::{format_time, parse_timestamp, why_not_a_date, ColumnType, Value};

/// The most failures one schedule may have, in any scenario (`failures.bound`). The check
/// explores every schedule up to the bound, and their number grows about exponentially with
/// it; one or two failures teach every idea of the chapter.
pub const MAX_BOUND: u32 = 1000;

/// The most attempts the scheduler makes for one run (`job.max_attempts`). A job that fails
/// on every attempt is retried this often in every schedule, so the number bounds the work of
/// each check.
pub const MAX_ATTEMPTS: u32 = 100;

/// In the JSON Schema, a design (`starting_design`, `reference_designs[].design`,
/// `wrong_designs[].design`) refers to the design schema, which `crate::authoring` adds:
/// it is built from the node kinds and their options.
#[cfg(feature = "schema")]
fn design_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "$ref": "#/$defs/Design" })
}

/// A UTC wall-clock time, written as "2026-01-11T02:00:00Z".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub NaiveDateTime);

impl Serialize for Instant {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_time(self.0))
    }
}

impl<'de> Deserialize<'de> for Instant {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_timestamp(&s).map(Instant).ok_or_else(|| {
            let day = s.split(['T', ' ']).next().unwrap_or(&s);
            serde::de::Error::custom(match why_not_a_date(day) {
                Some(why) => format!("\"{s}\" is not a time: {why}"),
                None => format!("\"{s}\" is not a time written as YYYY-MM-DDTHH:MM:SSZ"),
            })
        })
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Instant {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Instant".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])T([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\dZ$",
            "description": "A UTC time such as 2026-01-11T02:00:00Z."
        })
    }
}

/// One scenario file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Path of the JSON Schema, for editors. Ignored by the simulator.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Stable id, used in URLs and by graders (for example `safe-retry`): lowercase letters,
    /// digits and dashes, not starting or ending with a dash. Unique across the catalogue.
    #[cfg_attr(
        feature = "schema",
        schemars(regex(pattern = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"))
    )]
    pub id: String,
    /// Position in the course, from 1. Unique across the catalogue.
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub order: u32,
    /// A short title for the catalogue.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub title: String,
    /// The task, in Markdown, for a student who has just read the chapter.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub task: String,
    /// The ideas the scenario teaches, in the chapter's words.
    #[serde(default)]
    pub concepts: Vec<String>,
    /// Source tables and warehouse tables.
    #[serde(default)]
    pub tables: Vec<TableDef>,
    /// Streams (ordered, replayable logs).
    #[serde(default)]
    pub streams: Vec<StreamDef>,
    /// Services that send messages straight to a consumer and wait for an ack.
    #[serde(default)]
    pub senders: Vec<SenderDef>,
    /// The daily batch job, when the scenario has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobDef>,
    /// Further batch jobs, for a pipeline of several stages (a second job reading what the
    /// first one wrote). Each has an `id`, which its runs name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobDef>,
    /// The batch jobs' runs, in the order the scheduler (or a person) starts them.
    #[serde(default)]
    pub runs: Vec<RunDef>,
    /// Which failures the simulator injects, and how many at most in one schedule.
    pub failures: FailureSpec,
    /// Which node kinds and option values a student may use.
    pub palette: Palette,
    /// The design the student starts from (for example the chapter's append-only job). It
    /// must fit the palette, and must not already pass every requirement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "design_schema"))]
    pub starting_design: Option<serde_json::Value>,
    /// What a design must achieve; at least one.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub requirements: Vec<Requirement>,
    /// Designs that must pass every requirement: proof that the scenario can be solved. At
    /// least one.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub reference_designs: Vec<ExampleDesign>,
    /// Designs that must miss the requirements they name: proof that each can be missed.
    pub wrong_designs: Vec<WrongDesign>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum TableRole {
    /// A table of the shop's database that a batch job reads.
    Source,
    /// A warehouse table that a job or a consumer writes.
    Sink,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ColumnDef {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: ColumnType,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TableDef {
    /// The table's name; unique among tables, streams and senders.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub name: String,
    pub role: TableRole,
    /// At least one column; names are unique in the table.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub columns: Vec<ColumnDef>,
    /// The keys a design may write by (`merge`, `insert_ignore`); the first is the default.
    /// Empty when the table has no natural key.
    #[serde(default)]
    pub keys: Vec<Vec<String>>,
    /// The columns a design may name as the version of `merge_if_newer`, which applies an
    /// incoming row only when its version is greater than the stored row's; the first is the
    /// default. Empty when the table has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
    /// The date column that names a partition (one day), used by `delete_insert` and the job's
    /// date filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// Starting rows, one JSON array per row in column order.
    #[serde(default)]
    pub rows: Vec<Vec<serde_json::Value>>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StreamDef {
    pub name: String,
    /// The message field that identifies a message (used by in-memory dedupe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_field: Option<String>,
    pub fields: Vec<ColumnDef>,
    /// Messages at offsets 0, 1, 2, … as JSON objects of field → value; at least one.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub messages: Vec<BTreeMap<String, serde_json::Value>>,
    /// When the consumer starts reading.
    #[serde(default = "default_start")]
    pub start: Instant,
    /// Messages that reach the stream later than `start`: each is appended at its time, so a
    /// consumer that has read everything before it waits for it. Messages keep their offsets
    /// in list order, so a late message and every one after it arrive no earlier than it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub late: Vec<Late>,
}

/// A message that arrives after the start: `message` is its index in `messages`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Late {
    pub message: u32,
    pub at: Instant,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SenderDef {
    pub name: String,
    /// The message field that identifies a message (used by in-memory dedupe when the sender
    /// sends no idempotency key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_field: Option<String>,
    pub fields: Vec<ColumnDef>,
    /// The messages the sender must deliver, in order, as JSON objects of field → value; at
    /// least one.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub messages: Vec<BTreeMap<String, serde_json::Value>>,
    /// The message field where the sender puts its idempotency key, if it sends one.
    #[serde(default = "default_idempotency_field")]
    pub idempotency_field: String,
    #[serde(default = "default_start")]
    pub start: Instant,
    /// Messages the sender sends later than `start`: it sends each no earlier than its time,
    /// and the messages after it no earlier either.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub late: Vec<Late>,
}

fn default_idempotency_field() -> String {
    "idempotency_key".into()
}

fn default_start() -> Instant {
    Instant(
        NaiveDate::from_ymd_opt(2026, 1, 11)
            .and_then(|d| d.and_hms_opt(2, 0, 0))
            .expect("a valid constant time"),
    )
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct JobDef {
    /// The job's id, which runs name with `job`: needed by every job of `jobs`; the job of
    /// `job` is `job` unless it says otherwise.
    #[cfg_attr(
        feature = "schema",
        schemars(regex(pattern = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"))
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// How a trace names the job (for example "the nightly job"); "the job" when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The table the job reads: a source table, or a warehouse table an earlier stage writes.
    pub source: String,
    /// The job's steps, in order; each writes one sink table. At least one.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub steps: Vec<StepDef>,
    /// How many attempts the scheduler makes for one run before it gives up: 1 to 100
    /// (default 4).
    #[serde(default = "default_attempts")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = MAX_ATTEMPTS)))]
    pub max_attempts: u32,
}

fn default_attempts() -> u32 {
    4
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum StepDef {
    /// `INSERT INTO target (columns) SELECT columns FROM from WHERE <day>`.
    Copy {
        id: String,
        title: String,
        from: String,
        target: String,
        columns: Vec<String>,
        #[serde(default, rename = "where")]
        filter: Vec<Condition>,
    },
    /// `INSERT INTO target (columns) SELECT DISTINCT columns FROM from WHERE <day>`.
    Distinct {
        id: String,
        title: String,
        from: String,
        target: String,
        columns: Vec<String>,
        #[serde(default, rename = "where")]
        filter: Vec<Condition>,
    },
    /// `INSERT INTO target (group_by, into) SELECT group_by, COUNT(*) FROM from WHERE <day> AND … GROUP BY group_by`.
    Count {
        id: String,
        title: String,
        from: String,
        target: String,
        group_by: String,
        into: String,
        #[serde(default, rename = "where")]
        filter: Vec<Condition>,
    },
    /// `INSERT INTO target (group_by, into) SELECT group_by, SUM(sum) FROM from WHERE <day> AND … GROUP BY group_by`.
    Sum {
        id: String,
        title: String,
        from: String,
        target: String,
        group_by: String,
        sum: String,
        into: String,
        #[serde(default, rename = "where")]
        filter: Vec<Condition>,
    },
}

impl StepDef {
    pub fn id(&self) -> &str {
        match self {
            StepDef::Copy { id, .. }
            | StepDef::Distinct { id, .. }
            | StepDef::Count { id, .. }
            | StepDef::Sum { id, .. } => id,
        }
    }
    pub fn title(&self) -> &str {
        match self {
            StepDef::Copy { title, .. }
            | StepDef::Distinct { title, .. }
            | StepDef::Count { title, .. }
            | StepDef::Sum { title, .. } => title,
        }
    }
    pub fn from(&self) -> &str {
        match self {
            StepDef::Copy { from, .. }
            | StepDef::Distinct { from, .. }
            | StepDef::Count { from, .. }
            | StepDef::Sum { from, .. } => from,
        }
    }
    pub fn target(&self) -> &str {
        match self {
            StepDef::Copy { target, .. }
            | StepDef::Distinct { target, .. }
            | StepDef::Count { target, .. }
            | StepDef::Sum { target, .. } => target,
        }
    }
    pub fn filter(&self) -> &[Condition] {
        match self {
            StepDef::Copy { filter, .. }
            | StepDef::Distinct { filter, .. }
            | StepDef::Count { filter, .. }
            | StepDef::Sum { filter, .. } => filter,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// Started by the scheduler.
    Scheduled,
    /// Started by a person, after the day was already loaded.
    Manual,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RunDef {
    /// The run's id, named by `job_crash.runs` and `rerun_noop` checks: lowercase letters,
    /// digits and dashes, such as `load-2026-01-10`.
    #[cfg_attr(
        feature = "schema",
        schemars(regex(pattern = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"))
    )]
    pub id: String,
    /// The day the run is for, written as YYYY-MM-DD.
    #[serde(deserialize_with = "crate::value::deserialize_date")]
    #[cfg_attr(
        feature = "schema",
        schemars(regex(pattern = r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"))
    )]
    pub logical_date: NaiveDate,
    /// When the run starts (a run never starts before the previous one has finished).
    pub start: Instant,
    #[serde(default = "default_run_kind")]
    pub kind: RunKind,
    /// The job this run is of (its `id`); the scenario's `job` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// Changes to source tables that the shop makes before this run starts (an order paid
    /// late, one cancelled, a row for an earlier day that arrives late), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
}

/// A change the shop makes to a source table between runs, committed on its own.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Change {
    /// `INSERT INTO table VALUES …`: rows in column order, as a table's starting rows.
    Insert {
        table: String,
        /// What happens, in a student's words ("order 107 of 2026-01-10 arrives late").
        title: String,
        rows: Vec<Vec<serde_json::Value>>,
    },
    /// `UPDATE table SET column = value, … WHERE …`.
    Update {
        table: String,
        title: String,
        set: BTreeMap<String, serde_json::Value>,
        #[serde(default, rename = "where")]
        filter: Vec<Condition>,
    },
    /// `DELETE FROM table WHERE …`.
    Delete {
        table: String,
        title: String,
        #[serde(default, rename = "where")]
        filter: Vec<Condition>,
    },
}

impl Change {
    pub fn table(&self) -> &str {
        match self {
            Change::Insert { table, .. }
            | Change::Update { table, .. }
            | Change::Delete { table, .. } => table,
        }
    }
    pub fn title(&self) -> &str {
        match self {
            Change::Insert { title, .. }
            | Change::Update { title, .. }
            | Change::Delete { title, .. } => title,
        }
    }
}

fn default_run_kind() -> RunKind {
    RunKind::Scheduled
}

/// The failures a scenario allows. Every schedule with at most `bound` failures is explored.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FailureSpec {
    /// The most failures in one schedule, of all kinds together: 0 to 1000, and no more than
    /// the scenario's failure points (a run's crashes up to `max_per_run`, 3 places in the
    /// handling of each offset a consumer may crash at, each message a sender can lose or
    /// whose ack it can lose, each message that can get a late copy). Past them a stream or
    /// sender scenario is refused; a batch scenario is warned, since no schedule reaches it.
    #[cfg_attr(feature = "schema", schemars(range(max = MAX_BOUND)))]
    pub bound: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_crash: Option<JobCrashSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_crash: Option<ConsumerCrashSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_lost: Option<Enabled>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_lost: Option<Enabled>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redelivery: Option<RedeliverySpec>,
}

/// An empty object that switches a failure kind on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Enabled {}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct JobCrashSpec {
    /// The most crashes in one run (its first attempt and its retries together): 1 or more,
    /// and below `job.max_attempts`, or the scheduler gives up on the run.
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub max_per_run: u32,
    /// How long the scheduler waits before it retries a crashed attempt; 0 retries at once.
    #[serde(default)]
    pub retry_delay_minutes: u32,
    /// The runs that may crash (ids); all runs when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ConsumerCrashSpec {
    /// Crash only while the consumer handles these offsets (for a consumer fed by a sender,
    /// these message numbers); every offset when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offsets: Option<Vec<u32>>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RedeliverySpec {
    /// The fewest other messages between a message and its late copy; 1 or more.
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub after_min: u32,
    /// The most other messages between a message and its late copy.
    pub after_max: u32,
}

/// Which node kinds a student may place, and for each option which values. A kind that is
/// absent may not be used; an option that is absent may take any value.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Palette {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_table: Option<BTreeMap<String, Vec<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<BTreeMap<String, Vec<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<BTreeMap<String, Vec<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_job: Option<BTreeMap<String, Vec<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_consumer: Option<BTreeMap<String, Vec<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<BTreeMap<String, Vec<String>>>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// Stable id, used by graders: lowercase letters, digits and dashes, unique in the
    /// scenario.
    #[cfg_attr(
        feature = "schema",
        schemars(regex(pattern = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"))
    )]
    pub id: String,
    /// One sentence a student understands.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub text: String,
    /// Points to the idea, not the answer.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub hint: String,
    /// What the requirement is worth in a score: 1 when absent; 0 makes it feedback only.
    #[serde(default = "default_points", skip_serializing_if = "is_default_points")]
    pub points: u32,
    pub check: Check,
}

fn default_points() -> u32 {
    1
}

// serde's `skip_serializing_if` hands the field by reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_default_points(points: &u32) -> bool {
    *points == 1
}

/// A filter on rows: `column op value`. `in` and `not_in` take a JSON array.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Condition {
    pub column: String,
    #[serde(default = "default_op")]
    pub op: Op,
    pub value: serde_json::Value,
}

fn default_op() -> Op {
    Op::Eq
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Op {
    #[serde(rename = "=")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "in")]
    In,
    #[serde(rename = "not_in")]
    NotIn,
}

impl Op {
    pub fn sql(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "<>",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::In => "IN",
            Op::NotIn => "NOT IN",
        }
    }
}

/// What a requirement checks, on what readers can see.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// At the end, exactly one row matches `where` and its `column` equals `expected`.
    Value {
        table: String,
        column: String,
        #[serde(default, rename = "where")]
        filter: Vec<Condition>,
        expected: serde_json::Value,
    },
    /// At the end, the sum of `column` over the rows matching `where` equals `expected`
    /// (a decimal string), or the clean run's sum when `expected` is absent.
    Sum {
        table: String,
        column: String,
        #[serde(default, rename = "where")]
        filter: Vec<Condition>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expected: Option<serde_json::Value>,
    },
    /// At the end, the number of rows matching `where` equals `expected`, or the clean run's
    /// count when `expected` is absent.
    RowCount {
        table: String,
        #[serde(default, rename = "where")]
        filter: Vec<Condition>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expected: Option<u64>,
    },
    /// At the end, no two rows share the values of `columns`. Rows with a NULL in any of
    /// `columns` are skipped, as a unique index skips them: NULL is never equal to NULL.
    Unique { table: String, columns: Vec<String> },
    /// At the end, every value of `source_column` in the source (a table, stream or sender,
    /// filtered by `source_where`) appears in `column` of `table`.
    Complete {
        table: String,
        column: String,
        source: String,
        source_column: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        source_where: Vec<Condition>,
    },
    /// At the end, each table equals its state after a run with no failures (rows in any order).
    SameAsCleanRun { tables: Vec<String> },
    /// The run `run` (a rerun after success) leaves `table` as it found it: the same rows,
    /// values included, in any order.
    RerunNoop { table: String, run: String },
    /// At every committed point, the rows matching `where` are exactly `rows` in number and
    /// each has `column` = `value` (when given). A reader must never see anything else.
    NeverSeen {
        table: String,
        #[serde(default, rename = "where")]
        filter: Vec<Condition>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rows: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        column: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<serde_json::Value>,
        /// When true, the check starts at the first committed point where a row matches
        /// `where`: before a first load, a reader who finds no row at all has seen nothing
        /// wrong, while a part of the rows is still a miss.
        #[serde(default, skip_serializing_if = "is_false")]
        from_first_row: bool,
    },
    /// At every committed point, the sum of `column` over the rows matching `where` is never
    /// less than a reader has seen it before: a total, once published, never drops (no rows
    /// count as 0, so a day that disappears is a drop too).
    NeverDrops {
        table: String,
        column: String,
        #[serde(default, rename = "where")]
        filter: Vec<Condition>,
    },
    /// Every run and every message is handled to the end, with no unhandled error.
    Finishes {},
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ExampleDesign {
    /// Shown when the design passes or fails unexpectedly; unique among the file's designs.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub name: String,
    /// The design, in the format of the API (`docs/design-format.md`).
    #[cfg_attr(feature = "schema", schemars(schema_with = "design_schema"))]
    pub design: serde_json::Value,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WrongDesign {
    /// Named after the mistake it makes; unique among the file's designs.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub name: String,
    /// The requirement ids this design must miss (it may miss others too); at least one.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub misses: Vec<String>,
    /// The design, in the format of the API (`docs/design-format.md`).
    #[cfg_attr(feature = "schema", schemars(schema_with = "design_schema"))]
    pub design: serde_json::Value,
}

impl Scenario {
    pub fn table(&self, name: &str) -> Option<&TableDef> {
        self.tables.iter().find(|t| t.name == name)
    }
    pub fn stream(&self, name: &str) -> Option<&StreamDef> {
        self.streams.iter().find(|s| s.name == name)
    }
    pub fn sender(&self, name: &str) -> Option<&SenderDef> {
        self.senders.iter().find(|s| s.name == name)
    }
    pub fn requirement(&self, id: &str) -> Option<&Requirement> {
        self.requirements.iter().find(|r| r.id == id)
    }
    /// Every batch job: `job` first, then `jobs`, in the scenario's order.
    pub fn all_jobs(&self) -> impl Iterator<Item = &JobDef> {
        self.job.iter().chain(&self.jobs)
    }
    /// The runs of the job with id `job`, with their indices in `runs`.
    pub fn runs_of<'a>(&'a self, job: &'a str) -> impl Iterator<Item = (usize, &'a RunDef)> + 'a {
        self.runs
            .iter()
            .enumerate()
            .filter(move |(_, r)| r.job.as_deref().unwrap_or(DEFAULT_JOB_ID) == job)
    }
}

/// The id of the scenario's `job` when it gives none.
pub const DEFAULT_JOB_ID: &str = "job";

impl JobDef {
    /// The job's id: its own, or [`DEFAULT_JOB_ID`].
    pub fn id(&self) -> &str {
        self.id.as_deref().unwrap_or(DEFAULT_JOB_ID)
    }
    /// How a trace names the job.
    pub fn title(&self) -> &str {
        self.title.as_deref().unwrap_or("the job")
    }
}

impl TableDef {
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
    pub fn column_type(&self, name: &str) -> Option<ColumnType> {
        self.columns.iter().find(|c| c.name == name).map(|c| c.ty)
    }
}

/// Typed starting rows of a table; errors name the row and column.
pub fn typed_rows(table: &TableDef) -> Result<Vec<Vec<Value>>, (String, String)> {
    let mut out = Vec::with_capacity(table.rows.len());
    for (r, row) in table.rows.iter().enumerate() {
        if row.len() != table.columns.len() {
            return Err((
                format!("rows[{r}]"),
                format!(
                    "row has {} values but table {} has {} columns",
                    row.len(),
                    table.name,
                    table.columns.len()
                ),
            ));
        }
        let mut typed = Vec::with_capacity(row.len());
        for (c, (cell, col)) in row.iter().zip(&table.columns).enumerate() {
            typed.push(
                Value::from_json(col.ty, cell)
                    .map_err(|m| (format!("rows[{r}][{c}]"), format!("{}: {m}", col.name)))?,
            );
        }
        out.push(typed);
    }
    Ok(out)
}

/// For `skip_serializing_if`: a flag left at its default is not written, so a file without
/// it serialises (and hashes) as it did before the flag existed.
fn is_false(b: &bool) -> bool {
    !*b
}
