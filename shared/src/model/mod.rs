//! The compiled model: a scenario and a design compiled together into what the simulator runs.
//!
//! Compiling resolves every name of the scenario and the design to an index (tables, columns,
//! steps), types every literal, and reports the scenario author's mistakes that only show
//! against a design. What it produces is plain data: the pipeline's shape with its own model
//! (a batch job, a stream consumer, or a sender and its consumer), the warehouse's starting
//! tables and the requirements as checks (in `checks`). Running a schedule on it is the run
//! module's concern.

use std::collections::BTreeMap;

use chrono::{NaiveDate, NaiveDateTime};

use crate::design::{
    ConsumerOptions, JobOptions, Pipeline, SenderOptions, SinkOptions, ValidDesign, WriteMode,
};
use crate::scenario::{typed_rows, ColumnDef, Scenario, StepDef, TableRole};
use crate::value::{ColumnType, Value};
use crate::warehouse::{Row, Table, Warehouse};

mod checks;
mod error;

use checks::{compile_checks, compile_conds};
pub(crate) use checks::{eval, CCheck, Cond};
use error::serr;
pub use error::ScenarioError;

/// A deliberately wrong model of SQL, so that the conformance runner's own tests can prove it
/// catches a simulator that disagrees with a real database. Checks never use one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mutation {
    #[default]
    None,
    /// ROLLBACK keeps the rows the transaction wrote.
    RollbackKeepsRows,
}

#[derive(Clone, Debug)]
pub(crate) struct Sink {
    pub node: String,
    pub table: usize,
    pub write: WriteMode,
    pub key: Vec<usize>,
    pub partition: Option<usize>,
    pub loaded_at: Option<(usize, ColumnType)>,
}

#[derive(Clone, Debug)]
pub(crate) enum StepKind {
    /// For each target column, the source column it is copied from.
    Copy { map: Vec<Option<usize>> },
    Sum {
        group_from: usize,
        sum_from: usize,
        group_to: usize,
        into: usize,
    },
}

#[derive(Clone, Debug)]
pub(crate) struct CStep {
    pub def: StepDef,
    pub number: usize,
    pub from: usize,
    pub from_day: usize,
    pub filter: Vec<Cond>,
    pub kind: StepKind,
    pub sink: Sink,
}

#[derive(Clone, Debug)]
pub(crate) struct CRun {
    pub id: String,
    pub logical_date: NaiveDate,
    pub start: NaiveDateTime,
    pub may_crash: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Message {
    /// The row the consumer writes, in sink column order.
    pub row: Row,
    /// The message's key for in-memory dedupe (NULL when it has none).
    pub key: Value,
    pub describe: String,
}

/// The pipeline a design draws, with what running it needs. Each shape has its own model, so
/// that the run dispatches on the shape once and every part of it holds its shape's data.
#[derive(Clone, Debug)]
pub(crate) enum Shape {
    Batch(BatchModel),
    Stream(StreamModel),
    Sender(SenderModel),
}

/// A batch job that the scheduler starts once per run, retrying it after a failed attempt.
#[derive(Clone, Debug)]
pub(crate) struct BatchModel {
    pub job_node: String,
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
    pub sender: SenderOptions,
    pub consumer: ConsumerModel,
    pub messages: Vec<Message>,
    pub start: NaiveDateTime,
    /// The sink column that stores the idempotency key, when the table has one.
    pub idempotency_col: Option<usize>,
    pub message_lost: bool,
    pub ack_lost: bool,
}

/// The consumer of a stream or of a sender: its node, its options and the table it writes.
#[derive(Clone, Debug)]
pub(crate) struct ConsumerModel {
    pub node: String,
    pub options: ConsumerOptions,
    pub sink: Sink,
}

/// Where a stream consumer may crash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ConsumerCrash {
    /// The scenario injects no consumer crash.
    Never,
    /// The consumer may crash while it handles any offset.
    Anywhere,
    /// The consumer may crash only while it handles one of these offsets.
    AtOffsets(Vec<u32>),
}

impl ConsumerCrash {
    /// Whether the consumer may crash while it handles the message at `offset`.
    pub fn may_crash_at(&self, offset: u32) -> bool {
        match self {
            ConsumerCrash::Never => false,
            ConsumerCrash::Anywhere => true,
            ConsumerCrash::AtOffsets(offsets) => offsets.contains(&offset),
        }
    }
}

/// A scenario and a design compiled together into what the simulator runs.
#[derive(Clone, Debug)]
pub struct Model {
    pub(crate) mutation: Mutation,
    pub(crate) initial: Warehouse,
    pub(crate) checks: Vec<CCheck>,
    pub(crate) shape: Shape,
    pub(crate) sink_tables: Vec<usize>,
    pub(crate) bound: u32,
    pub(crate) column_types: Vec<Vec<ColumnType>>,
    /// Each table's first key as column indices (empty when it has none): a counterexample's
    /// table diff pairs rows by it.
    pub(crate) table_keys: Vec<Vec<usize>>,
}

impl Model {
    /// Compiles a scenario with a validated design. Errors are the scenario author's.
    pub fn compile(scenario: &Scenario, design: &ValidDesign) -> Result<Model, Vec<ScenarioError>> {
        let mut errors = Vec::new();
        let mut tables = Vec::new();
        let mut column_types = Vec::new();
        for (t, def) in scenario.tables.iter().enumerate() {
            let rows = match typed_rows(def) {
                Ok(rows) => rows,
                Err((p, m)) => {
                    errors.push(serr(format!("$.tables[{t}].{p}"), m));
                    Vec::new()
                }
            };
            tables.push(Table {
                name: def.name.clone(),
                columns: def.columns.iter().map(|c| c.name.clone()).collect(),
                rows,
            });
            column_types.push(def.columns.iter().map(|c| c.ty).collect());
        }
        let index = |name: &str| scenario.tables.iter().position(|t| t.name == name);
        let sink = |s: &SinkOptions, errors: &mut Vec<ScenarioError>| -> Option<Sink> {
            let t = index(&s.table)?;
            let def = &scenario.tables[t];
            let mut key = Vec::new();
            for k in &s.key {
                match def.column_index(k) {
                    Some(c) => key.push(c),
                    None => errors.push(serr(
                        format!("$.tables[{t}].keys"),
                        format!("key column \"{k}\" is not a column of {}", def.name),
                    )),
                }
            }
            let partition = def.partition.as_ref().and_then(|p| def.column_index(p));
            let loaded_at = def
                .column_index("loaded_at")
                .map(|c| (c, def.columns[c].ty));
            Some(Sink {
                node: s.node.clone(),
                table: t,
                write: s.write,
                key,
                partition,
                loaded_at,
            })
        };

        let fs = &scenario.failures;
        let shape = match design.pipeline() {
            Pipeline::Batch {
                job_node,
                job,
                sinks,
                ..
            } => {
                let Some(job_def) = &scenario.job else {
                    errors.push(serr(
                        "$.job",
                        "the design has a batch job but the scenario defines none",
                    ));
                    return Err(errors);
                };
                let mut steps = Vec::new();
                for (i, (step, s)) in job_def.steps.iter().zip(sinks).enumerate() {
                    let p = format!("$.job.steps[{i}]");
                    let Some(from) = index(step.from()) else {
                        errors.push(serr(
                            format!("{p}.from"),
                            format!("no table \"{}\"", step.from()),
                        ));
                        continue;
                    };
                    let from_def = &scenario.tables[from];
                    let Some(from_day) = from_def
                        .partition
                        .as_ref()
                        .and_then(|c| from_def.column_index(c))
                    else {
                        errors.push(serr(
                            format!("{p}.from"),
                            format!(
                                "table {} needs a date partition column for the job's date filter",
                                from_def.name
                            ),
                        ));
                        continue;
                    };
                    let Some(sink) = sink(s, &mut errors) else {
                        continue;
                    };
                    let target_def = &scenario.tables[sink.table];
                    let filter = compile_conds(
                        scenario,
                        step.from(),
                        step.filter(),
                        &format!("{p}.where"),
                        &mut errors,
                    );
                    let kind = match step {
                        StepDef::Copy { columns, .. } => {
                            for c in columns {
                                if from_def.column_index(c).is_none()
                                    || target_def.column_index(c).is_none()
                                {
                                    errors.push(serr(
                                        format!("{p}.columns"),
                                        format!(
                                            "column \"{c}\" must be in both {} and {}",
                                            from_def.name, target_def.name
                                        ),
                                    ));
                                }
                            }
                            let map = target_def
                                .columns
                                .iter()
                                .map(|tc| {
                                    if columns.contains(&tc.name) {
                                        from_def.column_index(&tc.name)
                                    } else {
                                        None
                                    }
                                })
                                .collect();
                            StepKind::Copy { map }
                        }
                        StepDef::Sum {
                            group_by,
                            sum,
                            into,
                            ..
                        } => {
                            let cols = (
                                from_def.column_index(group_by),
                                from_def.column_index(sum),
                                target_def.column_index(group_by),
                                target_def.column_index(into),
                            );
                            match cols {
                                (Some(group_from), Some(sum_from), Some(group_to), Some(into)) => {
                                    StepKind::Sum {
                                        group_from,
                                        sum_from,
                                        group_to,
                                        into,
                                    }
                                }
                                _ => {
                                    errors.push(serr(p.clone(), format!("group_by and sum must be columns of {}, group_by and into columns of {}", from_def.name, target_def.name)));
                                    continue;
                                }
                            }
                        }
                    };
                    steps.push(CStep {
                        def: step.clone(),
                        number: i + 1,
                        from,
                        from_day,
                        filter,
                        kind,
                        sink,
                    });
                }
                let crash = fs.job_crash.as_ref();
                let runs = scenario
                    .runs
                    .iter()
                    .map(|r| CRun {
                        id: r.id.clone(),
                        logical_date: r.logical_date,
                        start: r.start.0,
                        may_crash: crash
                            .is_some_and(|c| c.runs.as_ref().is_none_or(|ids| ids.contains(&r.id))),
                    })
                    .collect();
                if scenario.runs.is_empty() {
                    errors.push(serr(
                        "$.runs",
                        "a scenario with a batch job needs at least one run",
                    ));
                }
                Shape::Batch(BatchModel {
                    job_node: job_node.clone(),
                    job: job.clone(),
                    steps,
                    runs,
                    max_attempts: job_def.max_attempts.max(1),
                    crash_max_per_run: crash.map_or(0, |c| c.max_per_run),
                    retry_delay_minutes: crash.map_or(0, |c| c.retry_delay_minutes),
                })
            }
            Pipeline::Stream {
                stream_node,
                topic,
                consumer_node,
                consumer,
                sink: s,
            } => {
                let Some(def) = scenario.stream(topic) else {
                    return Err(vec![serr("$.streams", format!("no stream \"{topic}\""))]);
                };
                let Some(sink) = sink(s, &mut errors) else {
                    return Err(errors);
                };
                let messages = compile_messages(
                    scenario,
                    &def.fields,
                    &def.messages,
                    def.key_field.as_deref(),
                    &sink,
                    "$.streams",
                    &mut errors,
                );
                Shape::Stream(StreamModel {
                    stream_node: stream_node.clone(),
                    consumer: ConsumerModel {
                        node: consumer_node.clone(),
                        options: consumer.clone(),
                        sink,
                    },
                    messages,
                    start: def.start.0,
                    crash: match &fs.consumer_crash {
                        None => ConsumerCrash::Never,
                        Some(c) => match &c.offsets {
                            None => ConsumerCrash::Anywhere,
                            Some(offsets) => ConsumerCrash::AtOffsets(offsets.clone()),
                        },
                    },
                    redelivery: fs
                        .redelivery
                        .as_ref()
                        .map(|r| (r.after_min.max(1), r.after_max)),
                })
            }
            Pipeline::Sender {
                sender_node,
                sender_name,
                sender,
                consumer_node,
                consumer,
                sink: s,
            } => {
                let Some(def) = scenario.sender(sender_name) else {
                    return Err(vec![serr(
                        "$.senders",
                        format!("no sender \"{sender_name}\""),
                    )]);
                };
                let Some(sink) = sink(s, &mut errors) else {
                    return Err(errors);
                };
                let messages = compile_messages(
                    scenario,
                    &def.fields,
                    &def.messages,
                    def.key_field.as_deref(),
                    &sink,
                    "$.senders",
                    &mut errors,
                );
                let idempotency_col =
                    scenario.tables[sink.table].column_index(&def.idempotency_field);
                if fs.consumer_crash.is_some() || fs.redelivery.is_some() {
                    errors.push(serr("$.failures", "a sender pipeline explores message_lost and ack_lost; consumer_crash and redelivery need a stream"));
                }
                Shape::Sender(SenderModel {
                    sender_node: sender_node.clone(),
                    sender: sender.clone(),
                    consumer: ConsumerModel {
                        node: consumer_node.clone(),
                        options: consumer.clone(),
                        sink,
                    },
                    messages,
                    start: def.start.0,
                    idempotency_col,
                    message_lost: fs.message_lost.is_some(),
                    ack_lost: fs.ack_lost.is_some(),
                })
            }
        };

        let checks = compile_checks(scenario, &tables, &mut errors);
        if !errors.is_empty() {
            errors.sort();
            errors.dedup();
            return Err(errors);
        }
        // A key naming a column the table lacks is reported where the key is compiled for a
        // sink; here such a key just pairs nothing.
        let table_keys = scenario
            .tables
            .iter()
            .map(|def| {
                let key: Option<Vec<usize>> = def
                    .keys
                    .first()
                    .map(|k| k.iter().map(|c| def.column_index(c)).collect())
                    .unwrap_or(Some(Vec::new()));
                key.unwrap_or_default()
            })
            .collect();
        let sink_tables = scenario
            .tables
            .iter()
            .enumerate()
            .filter(|(_, t)| t.role == TableRole::Sink)
            .map(|(i, _)| i)
            .collect();
        Ok(Model {
            mutation: Mutation::None,
            initial: Warehouse::new(tables),
            checks,
            shape,
            sink_tables,
            bound: fs.bound,
            column_types,
            table_keys,
        })
    }
}

impl Model {
    /// An upper bound on the steps of one run under any schedule within the bound.
    pub(crate) fn max_run_steps(&self) -> u64 {
        let bound = u64::from(self.bound);
        match &self.shape {
            Shape::Batch(b) => (b.runs.len() as u64)
                .saturating_mul(u64::from(b.max_attempts))
                .saturating_mul(2 * b.steps.len() as u64 + 4),
            // Each crash replays at most the whole stream (with its late duplicates); an
            // offset takes at most 6 steps, counted here as 8.
            Shape::Stream(s) => (bound + 1)
                .saturating_mul(s.messages.len() as u64 + bound)
                .saturating_mul(8)
                .saturating_add(bound),
            // Each resend needs a failure; an attempt takes at most 3 steps.
            Shape::Sender(s) => (s.messages.len() as u64 + bound).saturating_mul(4),
        }
    }

    /// Whether the design reads the simulated clock (a batch job: its date filter, its
    /// `loaded_at`, the scheduler's retry times).
    pub(crate) fn reads_clock(&self) -> bool {
        matches!(self.shape, Shape::Batch(_))
    }
}

fn compile_messages(
    scenario: &Scenario,
    fields: &[ColumnDef],
    messages: &[BTreeMap<String, serde_json::Value>],
    key_field: Option<&str>,
    sink: &Sink,
    path: &str,
    errors: &mut Vec<ScenarioError>,
) -> Vec<Message> {
    let target = &scenario.tables[sink.table];
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let mut typed: BTreeMap<&str, Value> = BTreeMap::new();
        for (name, raw) in m {
            match fields.iter().find(|f| &f.name == name) {
                Some(f) => match Value::from_json(f.ty, raw) {
                    Ok(v) => {
                        typed.insert(f.name.as_str(), v);
                    }
                    Err(e) => errors.push(serr(format!("{path}.messages[{i}].{name}"), e)),
                },
                None => errors.push(serr(
                    format!("{path}.messages[{i}].{name}"),
                    format!("\"{name}\" is not one of the declared fields"),
                )),
            }
        }
        let row = target
            .columns
            .iter()
            .map(|c| typed.get(c.name.as_str()).cloned().unwrap_or(Value::Null))
            .collect();
        let key = key_field
            .and_then(|k| typed.get(k).cloned())
            .unwrap_or(Value::Null);
        let describe = fields
            .iter()
            .filter_map(|f| {
                typed
                    .get(f.name.as_str())
                    .map(|v| format!("{} {v}", f.name))
            })
            .collect::<Vec<_>>()
            .join(", ");
        out.push(Message { row, key, describe });
    }
    out
}
