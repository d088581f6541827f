//! The compiled model: a compiled scenario and a valid design put together into what the
//! simulator runs.
//!
//! A pipeline is a list of stages, each a part with its own model: a batch job that the
//! scheduler starts once per run, a consumer of a stream, or a consumer fed by a sender. Each
//! stage writes its tables, and a later stage may read them (a job summing the table a
//! consumer lands). Building a model cannot fail: the scenario was checked when it was
//! compiled ([`Compiled::new`]) and the design when it was validated. Running a schedule on
//! it is the run module's concern.

use chrono::NaiveDateTime;

use crate::compiled::{ChangeInfo, Compiled, ConsumerCrash, StepInfo, TableInfo};
use crate::design::{
    ConsumerInput, ConsumerOptions, JobOptions, JobStage, SenderOptions, SinkOptions, Stage,
    ValidDesign, WriteMode,
};
use crate::scenario::TableRole;
use crate::value::{ColumnType, Value};
use crate::warehouse::{Row, Table, Warehouse};

pub(crate) use crate::compiled::{eval, sum, CCheck, Cond, StepKind};

/// A deliberately wrong model, so that the conformance runner's own tests can prove it
/// catches a simulator that disagrees with a real database. Checks never use one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mutation {
    #[default]
    None,
    /// ROLLBACK keeps the rows the transaction wrote.
    RollbackKeepsRows,
    /// A batch job that reads a table another stage writes reads it as it was before any
    /// stage wrote it, as if the other stage's commits were not visible to it.
    StaleUpstream,
}

#[derive(Clone, Debug)]
pub(crate) struct Sink {
    pub node: String,
    pub table: usize,
    pub write: WriteMode,
    pub key: Vec<usize>,
    pub partition: Option<usize>,
    pub loaded_at: Option<(usize, ColumnType)>,
    /// `merge_if_newer`'s version column.
    pub version: Option<usize>,
}

#[derive(Clone, Debug)]
pub(crate) struct CStep {
    pub def: crate::scenario::StepDef,
    pub number: usize,
    pub from: usize,
    pub from_day: usize,
    pub filter: Vec<Cond>,
    pub kind: StepKind,
    pub sink: Sink,
}

#[derive(Clone, Debug)]
pub(crate) struct CRun {
    /// The run's index among the scenario's runs (which `rerun_noop` names).
    pub index: usize,
    pub id: String,
    pub logical_date: chrono::NaiveDate,
    pub start: NaiveDateTime,
    pub may_crash: bool,
    pub changes: Vec<ChangeInfo>,
}

#[derive(Clone, Debug)]
pub(crate) struct Message {
    /// The row the consumer writes, in sink column order.
    pub row: Row,
    /// The message's key for in-memory dedupe (NULL when it has none).
    pub key: Value,
    pub describe: String,
    /// When the message reaches the stream (or may be sent), in seconds since the epoch.
    pub arrival_s: i64,
}

/// One stage of the pipeline, with what running it needs.
#[derive(Clone, Debug)]
pub(crate) enum StageModel {
    Job(JobModel),
    Stream(StreamModel),
    Sender(SenderModel),
}

/// A batch job that the scheduler starts once per run, retrying it after a failed attempt.
#[derive(Clone, Debug)]
pub(crate) struct JobModel {
    pub job_node: String,
    /// The design's node for the table the job reads.
    pub source_node: String,
    pub source_table: usize,
    /// How the trace's words name the job ("the job", or the scenario's title for it).
    pub title: String,
    pub job: JobOptions,
    pub steps: Vec<CStep>,
    pub runs: Vec<CRun>,
    pub max_attempts: u32,
    pub crash_max_per_run: u32,
    pub retry_delay_minutes: u32,
}

/// A consumer that reads a stream, commits its offset and writes each message to its sink.
#[derive(Clone, Debug)]
pub(crate) struct StreamModel {
    pub stream_node: String,
    pub topic: String,
    pub consumer: ConsumerModel,
    pub messages: Vec<Message>,
    pub start: NaiveDateTime,
    pub crash: ConsumerCrash,
    /// The producer's late duplicates: each message may reappear after between `.0` and `.1`
    /// other messages.
    pub redelivery: Option<(u32, u32)>,
}

/// A service that sends each message straight to a consumer and waits for its ack.
#[derive(Clone, Debug)]
pub(crate) struct SenderModel {
    pub sender_node: String,
    /// The sender's name in the scenario.
    pub name: String,
    pub sender: SenderOptions,
    pub consumer: ConsumerModel,
    pub messages: Vec<Message>,
    /// The sink column that stores the idempotency key, when the table has one.
    pub idempotency_col: Option<usize>,
    pub message_lost: bool,
    pub ack_lost: bool,
    pub crash: ConsumerCrash,
}

/// The consumer of a stream or of a sender: its node, its options and the table it writes.
#[derive(Clone, Debug)]
pub(crate) struct ConsumerModel {
    pub node: String,
    pub options: ConsumerOptions,
    pub sink: Sink,
    /// The warehouse's slot for this consumer's offset, when it stores it with its rows.
    pub slot: usize,
    /// The consumer's name in the offsets table.
    pub slot_name: String,
}

/// A scenario and a design compiled together into what the simulator runs.
#[derive(Clone, Debug)]
pub struct Model {
    pub(crate) mutation: Mutation,
    pub(crate) initial: Warehouse,
    pub(crate) checks: Vec<CCheck>,
    pub(crate) stages: Vec<StageModel>,
    pub(crate) sink_tables: Vec<usize>,
    pub(crate) bound: u32,
    pub(crate) column_types: Vec<Vec<ColumnType>>,
    /// Each table's first key as column indices (empty when it has none): a counterexample's
    /// table diff pairs rows by it.
    pub(crate) table_keys: Vec<Vec<usize>>,
    /// Per table, whether a stage writes it (what a later stage reads of it is another stage's
    /// work).
    pub(crate) written: Vec<bool>,
}

impl Model {
    /// Puts a compiled scenario and a design valid for it together.
    pub fn compile(scenario: &Compiled, design: &ValidDesign) -> Model {
        let tables: Vec<Table> = scenario
            .tables
            .iter()
            .map(|t| Table {
                name: t.name.clone(),
                columns: t.columns.clone(),
                rows: t.rows.clone(),
            })
            .collect();
        let stages = &design.pipeline().stages;
        let consumers = stages
            .iter()
            .filter(|s| matches!(s, Stage::Consumer(_)))
            .count();
        let mut slot = 0;
        let models = stages
            .iter()
            .map(|stage| match stage {
                Stage::Job(j) => StageModel::Job(job_model(scenario, j)),
                Stage::Consumer(c) => {
                    let slot_name = if consumers == 1 {
                        "consumer".to_string()
                    } else {
                        c.input.name().to_string()
                    };
                    let consumer = ConsumerModel {
                        node: c.node.clone(),
                        options: c.options.clone(),
                        sink: sink(scenario, &c.sink),
                        slot,
                        slot_name,
                    };
                    slot += 1;
                    consumer_model(scenario, &c.input, consumer)
                }
            })
            .collect::<Vec<_>>();
        let mut written = vec![false; tables.len()];
        for s in design.pipeline().sinks() {
            if let Some(t) = scenario.table(&s.table) {
                written[t] = true;
            }
        }
        Model {
            mutation: Mutation::None,
            initial: Warehouse::with_offset_slots(tables, slot.max(1)),
            checks: scenario.checks.clone(),
            stages: models,
            sink_tables: (0..scenario.tables.len())
                .filter(|&t| scenario.tables[t].role == TableRole::Sink)
                .collect(),
            bound: scenario.failures.bound,
            column_types: scenario.tables.iter().map(|t| t.types.clone()).collect(),
            table_keys: scenario
                .tables
                .iter()
                .map(|t| t.keys.first().cloned().unwrap_or_default())
                .collect(),
            written,
        }
    }

    /// An upper bound on the steps of one run under any schedule within the bound.
    pub(crate) fn max_run_steps(&self) -> u64 {
        let bound = u64::from(self.bound);
        self.stages
            .iter()
            .map(|stage| match stage {
                StageModel::Job(b) => {
                    let changes: usize = b.runs.iter().map(|r| r.changes.len()).sum();
                    (b.runs.len() as u64)
                        .saturating_mul(u64::from(b.max_attempts))
                        .saturating_mul(2 * b.steps.len() as u64 + 4)
                        .saturating_add(changes as u64)
                }
                // Each crash replays at most the whole stream (with its late duplicates); an
                // offset takes at most 6 steps, counted here as 8.
                StageModel::Stream(s) => (bound + 1)
                    .saturating_mul(s.messages.len() as u64 + bound)
                    .saturating_mul(8)
                    .saturating_add(bound),
                // Each resend needs a failure; an attempt takes at most 4 steps.
                StageModel::Sender(s) => (s.messages.len() as u64 + bound).saturating_mul(6),
            })
            .fold(0, u64::saturating_add)
    }

    /// Whether what happens next can depend on the simulated clock: a batch job reads it
    /// (its date filter, its `loaded_at`, the scheduler's retry times), and stages of several
    /// kinds take turns by it.
    pub(crate) fn reads_clock(&self) -> bool {
        self.stages.len() > 1 || self.stages.iter().any(|s| matches!(s, StageModel::Job(_)))
    }
}

fn sink(scenario: &Compiled, s: &SinkOptions) -> Sink {
    let t = scenario
        .table(&s.table)
        .expect("a valid design writes the scenario's tables");
    let def: &TableInfo = &scenario.tables[t];
    Sink {
        node: s.node.clone(),
        table: t,
        write: s.write,
        key: s.key.iter().filter_map(|k| def.column(k)).collect(),
        partition: def.partition,
        loaded_at: def.loaded_at,
        version: s.version.as_deref().and_then(|v| def.column(v)),
    }
}

fn job_model(scenario: &Compiled, j: &JobStage) -> JobModel {
    let job = scenario
        .jobs
        .iter()
        .find(|job| job.id == j.job)
        .expect("a valid design's job is the scenario's");
    let steps = job
        .steps
        .iter()
        .zip(&j.sinks)
        .map(|(step, s): (&StepInfo, _)| CStep {
            def: step.def.clone(),
            number: step.number,
            from: step.from,
            from_day: step.from_day,
            filter: step.filter.clone(),
            kind: step.kind.clone(),
            sink: sink(scenario, s),
        })
        .collect();
    let runs = job
        .runs
        .iter()
        .map(|&r| {
            let run = &scenario.runs[r];
            CRun {
                index: r,
                id: run.id.clone(),
                logical_date: run.logical_date,
                start: run.start,
                may_crash: run.may_crash,
                changes: run.changes.clone(),
            }
        })
        .collect();
    let crash = scenario.failures.job_crash;
    JobModel {
        job_node: j.node.clone(),
        source_node: j.source_node.clone(),
        source_table: job.source,
        title: job.title.clone(),
        job: j.options.clone(),
        steps,
        runs,
        max_attempts: job.max_attempts,
        crash_max_per_run: crash.map_or(0, |c| c.0),
        retry_delay_minutes: crash.map_or(0, |c| c.1),
    }
}

fn consumer_model(
    scenario: &Compiled,
    input: &ConsumerInput,
    consumer: ConsumerModel,
) -> StageModel {
    let table = &scenario.tables[consumer.sink.table];
    let fs = &scenario.failures;
    match input {
        ConsumerInput::Stream { node, topic } => {
            let s = scenario
                .stream(topic)
                .map(|i| &scenario.streams[i])
                .expect("a valid design reads the scenario's streams");
            StageModel::Stream(StreamModel {
                stream_node: node.clone(),
                topic: topic.clone(),
                messages: messages(&s.messages, table),
                consumer,
                start: s.start,
                crash: fs.consumer_crash.clone(),
                redelivery: fs.redelivery,
            })
        }
        ConsumerInput::Sender {
            node,
            name,
            options,
        } => {
            let s = scenario
                .senders
                .iter()
                .find(|s| &s.name == name)
                .expect("a valid design takes the scenario's senders");
            StageModel::Sender(SenderModel {
                sender_node: node.clone(),
                name: name.clone(),
                sender: options.clone(),
                idempotency_col: s.idempotency_field.as_deref().and_then(|f| table.column(f)),
                messages: messages(&s.messages, table),
                consumer,
                message_lost: fs.message_lost,
                ack_lost: fs.ack_lost,
                crash: fs.consumer_crash.clone(),
            })
        }
    }
}

fn messages(list: &[crate::compiled::MessageInfo], table: &TableInfo) -> Vec<Message> {
    list.iter()
        .map(|m| Message {
            row: m.row_for(table),
            key: m.key.clone(),
            describe: m.describe.clone(),
            arrival_s: m.arrival.and_utc().timestamp(),
        })
        .collect()
}
