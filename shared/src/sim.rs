//! The simulator: runs one design under one failure schedule, step by step, as a real
//! scheduler, consumer, sender and SQL database would.
//!
//! A schedule is a list of (choice point, failure). Choice points are numbered in the order
//! the run meets them; because the run is deterministic, a schedule replays exactly. The
//! run records the failures it could have injected after the last planned one, which is how
//! `crate::check` enumerates every schedule up to the scenario's bound.

use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use chrono::{Duration, NaiveDate, NaiveDateTime};
use rust_decimal::Decimal;

use crate::design::{
    DateFilter, Dedupe, IdempotencyKey, JobOptions, LoadedAt, OffsetCommit, OnTimeout, Pipeline,
    SinkOptions, Transaction, ValidDesign, WriteMode,
};
use crate::scenario::{Check, Condition, Op, Scenario, StepDef, TableRole};
use crate::sql;
use crate::value::{format_time, ColumnType, Value};
use crate::verdict::{FaultAt, TableView, TraceEntry};
use crate::warehouse::{Affected, Row, SqlError, Table, Warehouse};

/// A failure the simulator injects at a choice point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    JobCrash,
    ConsumerCrash,
    MessageLost,
    AckLost,
    Redelivery { after: u32 },
}

impl Fault {
    pub fn kind(self) -> &'static str {
        match self {
            Fault::JobCrash => "job_crash",
            Fault::ConsumerCrash => "consumer_crash",
            Fault::MessageLost => "message_lost",
            Fault::AckLost => "ack_lost",
            Fault::Redelivery { .. } => "redelivery",
        }
    }
}

/// A deliberately wrong model of SQL, so that the conformance runner's own tests can prove it
/// catches a simulator that disagrees with a real database. Checks never use one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mutation {
    #[default]
    None,
    /// ROLLBACK keeps the rows the transaction wrote.
    RollbackKeepsRows,
}

/// A problem in a scenario file that only shows when it is compiled against a design.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ScenarioError {
    pub path: String,
    pub message: String,
}

fn serr(path: impl Into<String>, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        path: path.into(),
        message: message.into(),
    }
}

// ---------------------------------------------------------------------------------------------
// Compiled model
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
pub(crate) struct Cond {
    col: usize,
    op: Op,
    values: Vec<Value>,
}

fn eval(row: &Row, conds: &[Cond]) -> bool {
    conds.iter().all(|c| {
        let v = &row[c.col];
        match c.op {
            Op::In => c.values.iter().any(|x| v.key_eq(x)),
            Op::NotIn => !v.is_null() && c.values.iter().all(|x| !v.key_eq(x)),
            op => match v.sql_cmp(&c.values[0]) {
                None => false,
                Some(o) => match op {
                    Op::Eq => o.is_eq(),
                    Op::Ne => o.is_ne(),
                    Op::Lt => o.is_lt(),
                    Op::Le => o.is_le(),
                    Op::Gt => o.is_gt(),
                    Op::Ge => o.is_ge(),
                    _ => false,
                },
            },
        }
    })
}

#[derive(Clone, Debug)]
pub(crate) enum CCheck {
    Value {
        table: usize,
        column: usize,
        filter: Vec<Cond>,
        expected: Value,
    },
    Sum {
        table: usize,
        column: usize,
        filter: Vec<Cond>,
        expected: Option<Decimal>,
    },
    RowCount {
        table: usize,
        filter: Vec<Cond>,
        expected: Option<u64>,
    },
    Unique {
        table: usize,
        columns: Vec<usize>,
    },
    Complete {
        table: usize,
        column: usize,
        keys: Vec<Value>,
    },
    SameAsClean {
        tables: Vec<usize>,
    },
    RerunNoop {
        table: usize,
        run: usize,
    },
    NeverSeen {
        table: usize,
        filter: Vec<Cond>,
        rows: Option<u64>,
        column: Option<usize>,
        value: Option<Value>,
    },
    Finishes,
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

#[derive(Clone, Debug)]
pub(crate) enum Shape {
    Batch {
        job_node: String,
        source_node: String,
        job: JobOptions,
        steps: Vec<CStep>,
        runs: Vec<CRun>,
        max_attempts: u32,
        crash_max_per_run: u32,
        retry_delay_minutes: u32,
    },
    Stream {
        stream_node: String,
        consumer_node: String,
        consumer: crate::design::ConsumerOptions,
        sink: Sink,
        messages: Vec<Message>,
        start: NaiveDateTime,
        crash: Option<Option<Vec<u32>>>,
        redelivery: Option<(u32, u32)>,
    },
    Sender {
        sender_node: String,
        consumer_node: String,
        sender: crate::design::SenderOptions,
        consumer: crate::design::ConsumerOptions,
        sink: Sink,
        messages: Vec<Message>,
        start: NaiveDateTime,
        idempotency_col: Option<usize>,
        message_lost: bool,
        ack_lost: bool,
    },
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
}

fn compile_conds(
    scenario: &Scenario,
    table: &str,
    conds: &[Condition],
    path: &str,
    errors: &mut Vec<ScenarioError>,
) -> Vec<Cond> {
    let Some(def) = scenario.table(table) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, c) in conds.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let Some(col) = def.column_index(&c.column) else {
            errors.push(serr(
                format!("{p}.column"),
                format!("table {table} has no column \"{}\"", c.column),
            ));
            continue;
        };
        let ty = def.columns[col].ty;
        let raw: Vec<&serde_json::Value> = match (c.op, &c.value) {
            (Op::In | Op::NotIn, serde_json::Value::Array(items)) => items.iter().collect(),
            (Op::In | Op::NotIn, _) => {
                errors.push(serr(
                    format!("{p}.value"),
                    "in and not_in take a list of values",
                ));
                continue;
            }
            (_, v) => vec![v],
        };
        let mut values = Vec::new();
        for v in raw {
            match Value::from_json(ty, v) {
                Ok(v) => values.push(v),
                Err(m) => errors.push(serr(format!("{p}.value"), m)),
            }
        }
        if !values.is_empty() || matches!(c.op, Op::In | Op::NotIn) {
            out.push(Cond {
                col,
                op: c.op,
                values,
            });
        }
    }
    out
}

impl Model {
    /// Compiles a scenario with a validated design. Errors are the scenario author's.
    pub fn compile(scenario: &Scenario, design: &ValidDesign) -> Result<Model, Vec<ScenarioError>> {
        let mut errors = Vec::new();
        let mut tables = Vec::new();
        let mut column_types = Vec::new();
        for (t, def) in scenario.tables.iter().enumerate() {
            let rows = match crate::scenario::typed_rows(def) {
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
                source_node,
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
                Shape::Batch {
                    job_node: job_node.clone(),
                    source_node: source_node.clone(),
                    job: job.clone(),
                    steps,
                    runs,
                    max_attempts: job_def.max_attempts.max(1),
                    crash_max_per_run: crash.map_or(0, |c| c.max_per_run),
                    retry_delay_minutes: crash.map_or(0, |c| c.retry_delay_minutes),
                }
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
                Shape::Stream {
                    stream_node: stream_node.clone(),
                    consumer_node: consumer_node.clone(),
                    consumer: consumer.clone(),
                    sink,
                    messages,
                    start: def.start.0,
                    crash: fs.consumer_crash.as_ref().map(|c| c.offsets.clone()),
                    redelivery: fs
                        .redelivery
                        .as_ref()
                        .map(|r| (r.after_min.max(1), r.after_max)),
                }
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
                Shape::Sender {
                    sender_node: sender_node.clone(),
                    consumer_node: consumer_node.clone(),
                    sender: sender.clone(),
                    consumer: consumer.clone(),
                    sink,
                    messages,
                    start: def.start.0,
                    idempotency_col,
                    message_lost: fs.message_lost.is_some(),
                    ack_lost: fs.ack_lost.is_some(),
                }
            }
        };

        let checks = compile_checks(scenario, &tables, &mut errors);
        if !errors.is_empty() {
            errors.sort();
            errors.dedup();
            return Err(errors);
        }
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
        })
    }
}

impl Model {
    /// An upper bound on the steps of one run under any schedule within the bound.
    pub(crate) fn max_run_steps(&self) -> u64 {
        let bound = u64::from(self.bound);
        match &self.shape {
            Shape::Batch {
                steps,
                runs,
                max_attempts,
                ..
            } => (runs.len() as u64)
                .saturating_mul(u64::from(*max_attempts))
                .saturating_mul(2 * steps.len() as u64 + 4),
            // Each crash replays at most the whole stream (with its late duplicates); an
            // offset takes at most 6 steps, counted here as 8.
            Shape::Stream { messages, .. } => (bound + 1)
                .saturating_mul(messages.len() as u64 + bound)
                .saturating_mul(8)
                .saturating_add(bound),
            // Each resend needs a failure; an attempt takes at most 3 steps.
            Shape::Sender { messages, .. } => (messages.len() as u64 + bound).saturating_mul(4),
        }
    }

    /// Whether the design reads the simulated clock (a batch job: its date filter, its
    /// `loaded_at`, the scheduler's retry times).
    pub(crate) fn reads_clock(&self) -> bool {
        matches!(self.shape, Shape::Batch { .. })
    }
}

fn compile_messages(
    scenario: &Scenario,
    fields: &[crate::scenario::ColumnDef],
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

fn compile_checks(
    scenario: &Scenario,
    tables: &[Table],
    errors: &mut Vec<ScenarioError>,
) -> Vec<CCheck> {
    let index = |name: &str| scenario.tables.iter().position(|t| t.name == name);
    let mut out = Vec::new();
    for (r, req) in scenario.requirements.iter().enumerate() {
        let p = format!("$.requirements[{r}].check");
        let table_of = |name: &str, errors: &mut Vec<ScenarioError>| -> Option<usize> {
            let t = index(name);
            if t.is_none() {
                errors.push(serr(format!("{p}.table"), format!("requirement \"{}\" names table \"{name}\", which the scenario does not define", req.id)));
            }
            t
        };
        let column_of =
            |t: usize, name: &str, field: &str, errors: &mut Vec<ScenarioError>| -> Option<usize> {
                let c = scenario.tables[t].column_index(name);
                if c.is_none() {
                    errors.push(serr(
                        format!("{p}.{field}"),
                        format!("table {} has no column \"{name}\"", scenario.tables[t].name),
                    ));
                }
                c
            };
        let compiled = match &req.check {
            Check::Value {
                table,
                column,
                filter,
                expected,
            } => (|| {
                let t = table_of(table, errors)?;
                let c = column_of(t, column, "column", errors)?;
                let filter = compile_conds(scenario, table, filter, &format!("{p}.where"), errors);
                let expected = Value::from_json(scenario.tables[t].columns[c].ty, expected)
                    .map_err(|m| errors.push(serr(format!("{p}.expected"), m)))
                    .ok()?;
                Some(CCheck::Value {
                    table: t,
                    column: c,
                    filter,
                    expected,
                })
            })(),
            Check::Sum {
                table,
                column,
                filter,
                expected,
            } => (|| {
                let t = table_of(table, errors)?;
                let c = column_of(t, column, "column", errors)?;
                let filter = compile_conds(scenario, table, filter, &format!("{p}.where"), errors);
                let expected = match expected {
                    None => None,
                    Some(v) => match Value::from_json(ColumnType::Decimal, v) {
                        Ok(Value::Decimal(d)) => Some(d),
                        Ok(_) => None,
                        Err(m) => {
                            errors.push(serr(format!("{p}.expected"), m));
                            return None;
                        }
                    },
                };
                Some(CCheck::Sum {
                    table: t,
                    column: c,
                    filter,
                    expected,
                })
            })(),
            Check::RowCount {
                table,
                filter,
                expected,
            } => (|| {
                let t = table_of(table, errors)?;
                let filter = compile_conds(scenario, table, filter, &format!("{p}.where"), errors);
                Some(CCheck::RowCount {
                    table: t,
                    filter,
                    expected: *expected,
                })
            })(),
            Check::Unique { table, columns } => (|| {
                let t = table_of(table, errors)?;
                let cols: Vec<usize> = columns
                    .iter()
                    .filter_map(|c| column_of(t, c, "columns", errors))
                    .collect();
                (cols.len() == columns.len() && !cols.is_empty()).then_some(CCheck::Unique {
                    table: t,
                    columns: cols,
                })
            })(),
            Check::Complete {
                table,
                column,
                source,
                source_column,
                source_where,
            } => (|| {
                let t = table_of(table, errors)?;
                let c = column_of(t, column, "column", errors)?;
                let keys: Vec<Value> = if let Some(s) = index(source) {
                    let sc = scenario.tables[s].column_index(source_column);
                    let Some(sc) = sc else {
                        errors.push(serr(
                            format!("{p}.source_column"),
                            format!("table {source} has no column \"{source_column}\""),
                        ));
                        return None;
                    };
                    let filter = compile_conds(
                        scenario,
                        source,
                        source_where,
                        &format!("{p}.source_where"),
                        errors,
                    );
                    tables[s]
                        .rows
                        .iter()
                        .filter(|r| eval(r, &filter))
                        .map(|r| r[sc].clone())
                        .collect()
                } else {
                    let (fields, messages) = if let Some(st) = scenario.stream(source) {
                        (&st.fields, &st.messages)
                    } else if let Some(se) = scenario.sender(source) {
                        (&se.fields, &se.messages)
                    } else {
                        errors.push(serr(
                            format!("{p}.source"),
                            format!(
                                "\"{source}\" is not a table, stream or sender of the scenario"
                            ),
                        ));
                        return None;
                    };
                    let Some(f) = fields.iter().find(|f| &f.name == source_column) else {
                        errors.push(serr(
                            format!("{p}.source_column"),
                            format!("{source} has no field \"{source_column}\""),
                        ));
                        return None;
                    };
                    messages
                        .iter()
                        .filter_map(|m| m.get(source_column))
                        .filter_map(|v| Value::from_json(f.ty, v).ok())
                        .collect()
                };
                let mut keys = keys;
                keys.sort();
                keys.dedup();
                Some(CCheck::Complete {
                    table: t,
                    column: c,
                    keys,
                })
            })(),
            Check::SameAsCleanRun { tables: names } => {
                let ts: Vec<usize> = names.iter().filter_map(|n| table_of(n, errors)).collect();
                (ts.len() == names.len()).then_some(CCheck::SameAsClean { tables: ts })
            }
            Check::RerunNoop { table, run } => (|| {
                let t = table_of(table, errors)?;
                let Some(r) = scenario.runs.iter().position(|x| &x.id == run) else {
                    errors.push(serr(
                        format!("{p}.run"),
                        format!("no run \"{run}\" in the scenario's runs"),
                    ));
                    return None;
                };
                Some(CCheck::RerunNoop { table: t, run: r })
            })(),
            Check::NeverSeen {
                table,
                filter,
                rows,
                column,
                value,
            } => (|| {
                let t = table_of(table, errors)?;
                let filter = compile_conds(scenario, table, filter, &format!("{p}.where"), errors);
                let column = match column {
                    Some(c) => Some(column_of(t, c, "column", errors)?),
                    None => None,
                };
                let value = match (column, value) {
                    (Some(c), Some(v)) => Some(
                        Value::from_json(scenario.tables[t].columns[c].ty, v)
                            .map_err(|m| errors.push(serr(format!("{p}.value"), m)))
                            .ok()?,
                    ),
                    (None, Some(_)) => {
                        errors.push(serr(format!("{p}.value"), "value needs a column"));
                        return None;
                    }
                    _ => None,
                };
                Some(CCheck::NeverSeen {
                    table: t,
                    filter,
                    rows: *rows,
                    column,
                    value,
                })
            })(),
            Check::Finishes {} => Some(CCheck::Finishes),
        };
        // A failed compile leaves a placeholder so indices keep matching requirements.
        out.push(compiled.unwrap_or(CCheck::Finishes));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// One run
// ---------------------------------------------------------------------------------------------

/// Why a requirement was missed in one schedule.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Miss {
    pub expected: String,
    pub actual: String,
    /// The trace step at which it was seen (0 = at the end of the run).
    pub step: u32,
    pub tables: Option<BTreeMap<String, TableView>>,
}

/// What the clean run (no failures) ended with, for `same_as_clean_run` and clean-run sums.
#[derive(Clone, Debug)]
pub(crate) struct Clean {
    pub tables: Vec<Vec<Row>>,
}

pub(crate) struct Outcome {
    pub misses: Vec<Option<Miss>>,
    /// Failures that could be injected after the last planned one: (choice point, failure).
    pub offers: Vec<(u32, Fault)>,
    pub trace: Vec<TraceEntry>,
    pub failure_words: Vec<String>,
    pub faults: Vec<FaultAt>,
    pub end_tables: Vec<Vec<Row>>,
    pub steps: u64,
}

/// A run never takes more steps than this; past it the run stops and does not finish.
pub const MAX_STEPS_PER_RUN: u64 = 1_000_000;

/// Adds a trace entry. The entry's text is only built when the run is traced, so that the
/// exhaustive search, which runs untraced, formats nothing.
macro_rules! log {
    ($sim:expr, $actor:expr, $node:expr, $edge:expr, $action:expr, $sql:expr, $outcome:expr, $changed:expr $(,)?) => {{
        let failure = std::mem::take(&mut $sim.failing);
        if $sim.tracing {
            $sim.push_trace(
                failure, $actor, $node, $edge, $action, $sql, $outcome, $changed,
            );
        }
    }};
}

/// Where a run is in its loop, so that it can stop at the top of an iteration (a mark) and
/// later go on from there.
#[derive(Clone, Debug)]
pub(crate) enum Cursor {
    Start,
    /// The consumer is about to read offset `pos`.
    Consume(Consume),
    /// The sender is about to send message `i`.
    Send {
        i: usize,
        memory: VecDeque<Value>,
    },
    /// The scheduler is about to start run `r`.
    Batch {
        r: usize,
    },
}

/// The late duplicates, (message, after which message), and the messages in offset order
/// with those duplicates.
type Stream = (Vec<(usize, usize)>, Vec<usize>);

#[derive(Clone, Debug)]
pub(crate) struct Consume {
    stream: Rc<Stream>,
    pos: usize,
    broker_offset: usize,
    memory: VecDeque<Value>,
}

/// Everything of a paused run but the warehouse, which goes back through its journal.
#[derive(Clone, Debug)]
pub(crate) struct Saved {
    cursor: Cursor,
    journal: usize,
    pub(crate) next_point: u32,
    used: u32,
    clock_s: i64,
    /// Which requirements were missed, when the search saved the state (untraced, a miss is
    /// only a yes or a no).
    missed: Vec<bool>,
    unfinished: Option<String>,
    steps: u64,
}

pub(crate) struct Sim<'a> {
    m: &'a Model,
    /// The failures to inject, by absolute choice point.
    plan: Vec<(u32, Fault)>,
    plan_pos: usize,
    pub(crate) next_point: u32,
    used: u32,
    record: bool,
    pub(crate) offers: Vec<(u32, Fault)>,
    wh: Warehouse,
    /// The simulated wall clock, in seconds since the Unix epoch (cheap to advance).
    clock_s: i64,
    tracing: bool,
    /// The SQL dialect of the trace.
    dialect: sql::Dialect,
    trace: Vec<TraceEntry>,
    failure_words: Vec<String>,
    faults: Vec<FaultAt>,
    pub(crate) misses: Vec<Option<Miss>>,
    unfinished: Option<String>,
    steps: u64,
    /// Steps simulated over the life of this simulator, across every resumed run.
    pub(crate) work: u64,
    /// Set when the last choice point injected a failure, so the next trace entry shows it.
    failing: bool,
    cursor: Cursor,
    /// Whether the run stops at the next mark once its plan is done.
    pausing: bool,
    /// Set when resuming at a mark, which is not a place to stop again.
    skip_mark: bool,
    paused: bool,
}

impl<'a> Sim<'a> {
    pub(crate) fn run(
        m: &'a Model,
        plan: &[(u32, Fault)],
        record: bool,
        tracing: bool,
        clean: Option<&Clean>,
    ) -> Outcome {
        Self::run_in(m, plan, record, tracing, clean, sql::Dialect::Display)
    }

    /// Runs one whole schedule from the start.
    pub(crate) fn run_in(
        m: &'a Model,
        plan: &[(u32, Fault)],
        record: bool,
        tracing: bool,
        clean: Option<&Clean>,
        dialect: sql::Dialect,
    ) -> Outcome {
        let mut sim = Sim::new(m, record, tracing, dialect);
        let ended = sim.advance(plan.to_vec(), clean);
        debug_assert!(ended, "a run that does not pause ends");
        // Only the clean run's end state is kept, for `same_as_clean_run` and clean sums.
        let end_tables = if clean.is_none() {
            sim.wh.tables.iter().map(Table::sorted_rows).collect()
        } else {
            Vec::new()
        };
        Outcome {
            misses: sim.misses,
            offers: sim.offers,
            trace: sim.trace,
            failure_words: sim.failure_words,
            faults: sim.faults,
            end_tables,
            steps: sim.steps,
        }
    }

    /// A simulator at the start of the run.
    pub(crate) fn new(m: &'a Model, record: bool, tracing: bool, dialect: sql::Dialect) -> Self {
        let start = match &m.shape {
            Shape::Batch { runs, .. } => runs.first().map(|r| r.start).unwrap_or_default(),
            Shape::Stream { start, .. } | Shape::Sender { start, .. } => *start,
        };
        let mut sim = Sim {
            m,
            plan: Vec::new(),
            plan_pos: 0,
            next_point: 0,
            used: 0,
            record,
            offers: Vec::new(),
            wh: m.initial.clone(),
            clock_s: start.and_utc().timestamp(),
            tracing,
            dialect,
            trace: Vec::new(),
            failure_words: Vec::new(),
            faults: Vec::new(),
            misses: vec![None; m.checks.len()],
            unfinished: None,
            steps: 0,
            work: 0,
            failing: false,
            cursor: Cursor::Start,
            pausing: false,
            skip_mark: false,
            paused: false,
        };
        sim.observe();
        sim
    }

    /// A simulator for the exhaustive search: untraced, recording offers, stopping at every
    /// mark once its plan is done, and able to go back to any saved state.
    pub(crate) fn searching(m: &'a Model) -> Self {
        let mut sim = Sim::new(m, true, false, sql::Dialect::Display);
        sim.pausing = true;
        // A batch job stops at a mark once per scheduled run: hashing the tables there costs
        // less than keeping their hash with every row written.
        sim.wh.keep_journal(!matches!(m.shape, Shape::Batch { .. }));
        sim
    }

    /// Runs on from where the simulator is, injecting `plan` (absolute choice points), up to
    /// the next mark after the plan (when pausing) or the end. Returns whether the run ended.
    pub(crate) fn advance(&mut self, plan: Vec<(u32, Fault)>, clean: Option<&Clean>) -> bool {
        self.plan = plan;
        self.plan_pos = 0;
        self.paused = false;
        self.offers.clear();
        self.skip_mark = !matches!(self.cursor, Cursor::Start);
        let steps = self.steps;
        match &self.m.shape {
            Shape::Batch { .. } => self.run_batch(),
            Shape::Stream { .. } => self.run_stream(),
            Shape::Sender { .. } => self.run_sender(),
        }
        self.work += self.steps - steps;
        assert!(
            self.plan_pos == self.plan.len(),
            "every planned failure is met when a schedule replays"
        );
        if self.paused {
            return false;
        }
        assert!(
            !self.wh.in_transaction(),
            "every run ends with its transactions closed"
        );
        self.evaluate_end(clean);
        true
    }

    /// Failures used so far.
    pub(crate) fn used(&self) -> u32 {
        self.used
    }

    /// Whether a failure can still be injected (the bound is not used up).
    pub(crate) fn may_fail(&self) -> bool {
        self.used < self.m.bound
    }

    /// Whether the run stops here, at the top of an iteration of its loop. The caller then
    /// stores its loop state in `cursor` and returns.
    fn pause_here(&mut self) -> bool {
        if !self.pausing || std::mem::take(&mut self.skip_mark) || self.plan_pos < self.plan.len() {
            return false;
        }
        self.paused = true;
        true
    }

    pub(crate) fn save(&self) -> Saved {
        Saved {
            cursor: self.cursor.clone(),
            journal: self.wh.mark(),
            next_point: self.next_point,
            used: self.used,
            clock_s: self.clock_s,
            missed: self.misses.iter().map(Option::is_some).collect(),
            unfinished: self.unfinished.clone(),
            steps: self.steps,
        }
    }

    pub(crate) fn restore(&mut self, saved: &Saved) {
        self.wh.undo_to(saved.journal);
        self.cursor = saved.cursor.clone();
        self.next_point = saved.next_point;
        self.used = saved.used;
        self.clock_s = saved.clock_s;
        for (miss, &missed) in self.misses.iter_mut().zip(&saved.missed) {
            if miss.is_some() != missed {
                *miss = missed.then(|| Miss {
                    expected: String::new(),
                    actual: String::new(),
                    step: 0,
                    tables: None,
                });
            }
        }
        self.unfinished.clone_from(&saved.unfinished);
        self.steps = saved.steps;
        self.failing = false;
    }

    /// A 128-bit fingerprint of everything the rest of the run can depend on: two states with
    /// the same fingerprint have the same future under the same later failures. Choice points
    /// are counted from here, so the point number is not part of it. The clock is, where the
    /// design reads it (a batch job), and so is the step count, where a run could reach
    /// `MAX_STEPS_PER_RUN`.
    pub(crate) fn fingerprint(&self, with_clock: bool, with_steps: bool) -> u128 {
        use std::hash::{Hash, Hasher};
        let mut f = crate::fingerprint::Fingerprint::new(0xc3);
        match &self.cursor {
            Cursor::Start => f.write_u8(0),
            Cursor::Consume(c) => {
                (2u8, &c.stream.0, c.pos, c.broker_offset).hash(&mut f);
                f.values(c.memory.iter());
            }
            Cursor::Send { i, memory } => {
                (3u8, i).hash(&mut f);
                f.values(memory.iter());
            }
            Cursor::Batch { r } => (4u8, r).hash(&mut f),
        }
        self.wh.fingerprint().hash(&mut f);
        self.used.hash(&mut f);
        for miss in &self.misses {
            miss.is_some().hash(&mut f);
        }
        self.unfinished.hash(&mut f);
        if with_clock {
            self.clock_s.hash(&mut f);
        }
        if with_steps {
            self.steps.hash(&mut f);
        }
        f.finish128()
    }

    /// A choice point: returns the failure the plan injects here, if any, and otherwise
    /// records which failures could be injected.
    fn point(&mut self, offered: &[Fault]) -> Option<Fault> {
        let idx = self.next_point;
        self.next_point += 1;
        if let Some(&(at, fault)) = self.plan.get(self.plan_pos) {
            if at == idx {
                assert!(
                    offered.contains(&fault),
                    "a planned failure is offered where it was recorded"
                );
                self.plan_pos += 1;
                self.used += 1;
                self.failing = true;
                return Some(fault);
            }
            return None;
        }
        if self.record && self.used < self.m.bound {
            self.offers.extend(offered.iter().map(|&f| (idx, f)));
        }
        None
    }

    fn tick(&mut self, seconds: i64) {
        self.clock_s += seconds;
        self.steps += 1;
    }

    /// Rolls back the open transaction, if any (or, under a mutation, wrongly keeps its rows).
    fn rollback(&mut self) -> bool {
        match self.m.mutation {
            Mutation::None => self.wh.rollback(),
            Mutation::RollbackKeepsRows => self.wh.abandon(),
        }
    }

    fn now(&self) -> NaiveDateTime {
        chrono::DateTime::from_timestamp(self.clock_s, 0)
            .map(|t| t.naive_utc())
            .unwrap_or_default()
    }

    fn too_long(&mut self) -> bool {
        if self.steps > MAX_STEPS_PER_RUN {
            self.unfinished.get_or_insert_with(|| {
                format!("the run was stopped after {MAX_STEPS_PER_RUN} steps")
            });
            return true;
        }
        false
    }

    fn view(&self) -> BTreeMap<String, TableView> {
        self.m
            .sink_tables
            .iter()
            .map(|&t| {
                (
                    self.wh.tables[t].name.clone(),
                    table_view(&self.wh.tables[t]),
                )
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn push_trace(
        &mut self,
        failure: bool,
        actor: &str,
        node: Option<&str>,
        edge: Option<(&str, &str)>,
        action: String,
        sql: Option<String>,
        outcome: String,
        changed: bool,
    ) {
        let step = self.trace.len() as u32 + 1;
        if failure {
            if let Some(last) = self.plan.get(self.plan_pos.wrapping_sub(1)) {
                self.faults.push(FaultAt {
                    step,
                    kind: last.1.kind().into(),
                });
            }
        }
        let tables = changed.then(|| self.view());
        self.trace.push(TraceEntry {
            step,
            time: format_time(self.now()),
            actor: actor.into(),
            node: node.map(str::to_string),
            edge: edge.map(|(a, b)| [a.to_string(), b.to_string()]),
            action,
            sql,
            outcome,
            failure,
            tables,
        });
    }

    fn step_no(&self) -> u32 {
        self.trace.len() as u32
    }

    /// Looks at the committed state as a reader would, for `never_seen` requirements.
    fn observe(&mut self) {
        if self.wh.in_transaction() {
            return;
        }
        for (i, check) in self.m.checks.iter().enumerate() {
            let CCheck::NeverSeen {
                table,
                filter,
                rows,
                column,
                value,
            } = check
            else {
                continue;
            };
            if self.misses[i].is_some() {
                continue;
            }
            let matching: Vec<&Row> = self.wh.tables[*table]
                .rows
                .iter()
                .filter(|r| eval(r, filter))
                .collect();
            let count_ok = rows.is_none_or(|n| matching.len() as u64 == n);
            let value_ok = match (column, value) {
                (Some(c), Some(v)) => matching.iter().all(|r| r[*c].key_eq(v)),
                _ => true,
            };
            if !(count_ok && value_ok) {
                let expected = describe_expectation(
                    *rows,
                    column.map(|c| (self.wh.tables[*table].columns[c].as_str(), value.as_ref())),
                );
                let actual = describe_rows(&self.wh.tables[*table], &matching, *column);
                let tables = self.tracing.then(|| self.view());
                self.misses[i] = Some(Miss {
                    expected,
                    actual: format!("a reader saw {actual}"),
                    step: self.step_no(),
                    tables,
                });
            }
        }
    }

    // ------------------------------------------------------------------ batch job

    fn run_batch(&mut self) {
        let Shape::Batch {
            job_node,
            runs,
            max_attempts,
            crash_max_per_run,
            retry_delay_minutes,
            job,
            ..
        } = &self.m.shape
        else {
            unreachable!()
        };
        let first = match std::mem::replace(&mut self.cursor, Cursor::Start) {
            Cursor::Batch { r } => r,
            _ => 0,
        };
        for (r, run) in runs.iter().enumerate().skip(first) {
            if self.pause_here() {
                self.cursor = Cursor::Batch { r };
                return;
            }
            let start_s = run.start.and_utc().timestamp();
            if self.clock_s < start_s {
                self.clock_s = start_s;
            }
            let before: Vec<(usize, Vec<Row>)> = self
                .m
                .checks
                .iter()
                .enumerate()
                .filter_map(|(i, c)| match c {
                    CCheck::RerunNoop { table, run } if *run == r => {
                        Some((i, self.wh.tables[*table].sorted_rows()))
                    }
                    _ => None,
                })
                .collect();
            let mut crashes = 0;
            let mut done = false;
            for attempt in 1..=*max_attempts {
                if self.too_long() {
                    return;
                }
                let day = match job.date_filter {
                    DateFilter::LogicalDate => run.logical_date,
                    DateFilter::CurrentDateMinus1 => self.now().date() - Duration::days(1),
                };
                let stamp = match job.loaded_at {
                    LoadedAt::None => None,
                    LoadedAt::Now => Some(self.now()),
                    LoadedAt::LogicalDate => run.logical_date.and_hms_opt(0, 0, 0),
                };
                let filter_words = || match job.date_filter {
                    DateFilter::LogicalDate => format!("its logical date {}", run.logical_date),
                    DateFilter::CurrentDateMinus1 => format!("CURRENT_DATE - 1 = {day}"),
                };
                log!(
                    self,
                    "scheduler",
                    Some(job_node),
                    None,
                    format!(
                        "starts run {} for {} (attempt {attempt}); the job loads {day} ({})",
                        run.id,
                        run.logical_date,
                        filter_words()
                    ),
                    None,
                    "started".into(),
                    false,
                );
                let can_crash = run.may_crash && crashes < *crash_max_per_run;
                match self.attempt(day, stamp, can_crash, attempt, &run.id) {
                    Ok(()) => {
                        log!(
                            self,
                            "job",
                            Some(job_node),
                            None,
                            "reports success to the scheduler".into(),
                            None,
                            "run finished".into(),
                            false
                        );
                        done = true;
                        break;
                    }
                    Err(crashed) => {
                        if crashed {
                            crashes += 1;
                        }
                        if attempt == *max_attempts {
                            break;
                        }
                        self.clock_s += 60 * i64::from(*retry_delay_minutes);
                        let when = || {
                            if *retry_delay_minutes == 0 {
                                "at once".to_string()
                            } else {
                                format!("after {retry_delay_minutes} minutes")
                            }
                        };
                        if crashed && self.tracing {
                            self.failure_words.push(format!(
                                "the scheduler retries {} ({})",
                                when(),
                                format_time(self.now())
                            ));
                        }
                        log!(
                            self,
                            "scheduler",
                            Some(job_node),
                            None,
                            format!(
                                "sees the attempt fail and retries run {} {}",
                                run.id,
                                when()
                            ),
                            None,
                            "retry scheduled".into(),
                            false
                        );
                    }
                }
            }
            if !done {
                self.unfinished.get_or_insert_with(|| {
                    format!(
                        "run {} failed {max_attempts} times and the scheduler gave up",
                        run.id
                    )
                });
                log!(
                    self,
                    "scheduler",
                    Some(job_node),
                    None,
                    format!("gives up on run {} after {max_attempts} attempts", run.id),
                    None,
                    "run failed".into(),
                    false
                );
            }
            for (i, rows) in before {
                let CCheck::RerunNoop { table, .. } = &self.m.checks[i] else {
                    continue;
                };
                let after = self.wh.tables[*table].sorted_rows();
                if after != rows && self.misses[i].is_none() {
                    let t = &self.wh.tables[*table];
                    self.misses[i] = Some(Miss {
                        expected: format!(
                            "{} unchanged: {}",
                            t.name,
                            format_rows(&t.columns, &rows)
                        ),
                        actual: format!(
                            "after run {}: {}",
                            run.id,
                            format_rows(&t.columns, &after)
                        ),
                        step: self.step_no(),
                        tables: self.tracing.then(|| self.view()),
                    });
                }
            }
        }
    }

    /// One attempt of the job. `Err(true)` when it crashed, `Err(false)` on a SQL error.
    fn attempt(
        &mut self,
        day: NaiveDate,
        stamp: Option<NaiveDateTime>,
        can_crash: bool,
        attempt: u32,
        run_id: &str,
    ) -> Result<(), bool> {
        let Shape::Batch {
            job_node,
            source_node,
            job,
            steps,
            ..
        } = &self.m.shape
        else {
            unreachable!()
        };
        let per_run = job.transaction == Transaction::PerRun;
        if per_run {
            self.wh.begin();
            self.tick(1);
            log!(
                self,
                "job",
                Some(job_node),
                None,
                "opens a transaction".into(),
                Some("BEGIN;".into()),
                "transaction open".into(),
                false
            );
        }
        let offered: &[Fault] = if can_crash { &[Fault::JobCrash] } else { &[] };
        let total: usize = steps
            .iter()
            .map(|s| {
                if s.sink.write == WriteMode::DeleteInsert {
                    2
                } else {
                    1
                }
            })
            .sum();
        let mut done = 0;
        for step in steps {
            let parts: &[bool] = if step.sink.write == WriteMode::DeleteInsert {
                &[true, false]
            } else {
                &[false]
            };
            for &is_delete in parts {
                done += 1;
                self.tick(1);
                let result = if is_delete {
                    let p = step
                        .sink
                        .partition
                        .expect("delete_insert is only valid on a partitioned table");
                    Ok(self
                        .wh
                        .delete_where_eq(step.sink.table, p, &Value::Date(day)))
                } else {
                    self.write_step(step, day, stamp)
                };
                let sql = self.tracing.then(|| {
                    let ctx = self.sql_ctx(day, stamp);
                    if is_delete {
                        sql::delete_partition(&ctx, step)
                    } else {
                        sql::step_write(&ctx, step)
                    }
                });
                let what = if !self.tracing {
                    String::new()
                } else if is_delete {
                    format!(
                        "deletes {day} from {}",
                        self.wh.tables[step.sink.table].name
                    )
                } else {
                    format!("step {}: {}", step.number, step.def.title())
                };
                let edge = (job_node.as_str(), step.sink.node.as_str());
                let _ = source_node;
                match result {
                    Err(SqlError(message)) => {
                        log!(
                            self,
                            "job",
                            Some(job_node),
                            Some(edge),
                            what,
                            sql,
                            format!("error: {message}"),
                            false
                        );
                        if self.rollback() {
                            log!(
                                self,
                                "database",
                                None,
                                None,
                                "rolls back the open transaction".into(),
                                Some("ROLLBACK;".into()),
                                "rolled back".into(),
                                false
                            );
                        }
                        return Err(false);
                    }
                    Ok(affected) => {
                        let committed = !per_run;
                        let outcome = if !self.tracing {
                            String::new()
                        } else if committed {
                            format!("committed: {}", affected.describe())
                        } else {
                            format!("{} (not committed yet)", affected.describe())
                        };
                        log!(
                            self,
                            "job",
                            Some(job_node),
                            Some(edge),
                            what,
                            sql,
                            outcome,
                            committed
                        );
                        self.observe();
                    }
                }
                if self.point(offered).is_some() {
                    let last = done == total && !per_run;
                    let place = if !self.tracing {
                        String::new()
                    } else if last {
                        format!(
                            "after its last statement (step {}: {}), before it reports success",
                            step.number,
                            step.def.title()
                        )
                    } else if is_delete {
                        format!(
                            "after the DELETE of step {} ({}), before its INSERT",
                            step.number,
                            step.def.title()
                        )
                    } else {
                        format!("after step {} ({})", step.number, step.def.title())
                    };
                    self.crash_job(place, attempt, run_id);
                    return Err(true);
                }
            }
        }
        if per_run {
            self.wh.commit();
            self.tick(1);
            log!(
                self,
                "job",
                Some(job_node),
                None,
                "commits the transaction".into(),
                Some("COMMIT;".into()),
                "committed".into(),
                true
            );
            self.observe();
            if self.point(offered).is_some() {
                self.crash_job(
                    "after COMMIT, before it reports success".into(),
                    attempt,
                    run_id,
                );
                return Err(true);
            }
        }
        Ok(())
    }

    fn crash_job(&mut self, place: String, attempt: u32, run_id: &str) {
        let Shape::Batch { job_node, .. } = &self.m.shape else {
            unreachable!()
        };
        if self.tracing {
            self.failure_words.push(format!(
                "the job crashes {place} (run {run_id}, attempt {attempt})"
            ));
        }
        log!(
            self,
            "job",
            Some(job_node),
            None,
            format!("crashes {place}"),
            None,
            "crashed".into(),
            false
        );
        if self.rollback() {
            log!(
                self,
                "database",
                None,
                None,
                "rolls back the open transaction".into(),
                Some("ROLLBACK;".into()),
                "rolled back: nothing of this attempt is kept".into(),
                true
            );
        }
    }

    fn sql_ctx(&self, day: NaiveDate, stamp: Option<NaiveDateTime>) -> sql::Ctx<'_> {
        let Shape::Batch { job, .. } = &self.m.shape else {
            unreachable!()
        };
        sql::Ctx {
            tables: &self.wh.tables,
            types: &self.m.column_types,
            day,
            stamp,
            clock: job.date_filter == DateFilter::CurrentDateMinus1,
            dialect: self.dialect,
        }
    }

    fn select(&self, step: &CStep, day: NaiveDate, stamp: Option<NaiveDateTime>) -> Vec<Row> {
        let from = &self.wh.tables[step.from];
        let day = Value::Date(day);
        let source = from
            .rows
            .iter()
            .filter(|r| r[step.from_day].key_eq(&day) && eval(r, &step.filter));
        let width = self.wh.tables[step.sink.table].columns.len();
        let stamp_value = |row: &mut Row| {
            if let (Some((c, ty)), Some(t)) = (step.sink.loaded_at, stamp) {
                row[c] = if ty == ColumnType::Date {
                    Value::Date(t.date())
                } else {
                    Value::Timestamp(t)
                };
            }
        };
        match &step.kind {
            StepKind::Copy { map } => source
                .map(|r| {
                    let mut row: Row = map
                        .iter()
                        .map(|m| m.map_or(Value::Null, |c| r[c].clone()))
                        .collect();
                    stamp_value(&mut row);
                    row
                })
                .collect(),
            StepKind::Sum {
                group_from,
                sum_from,
                group_to,
                into,
            } => {
                let mut groups: BTreeMap<Value, Option<Decimal>> = BTreeMap::new();
                for r in source {
                    let entry = groups.entry(r[*group_from].clone()).or_insert(None);
                    match &r[*sum_from] {
                        Value::Decimal(d) => *entry = Some(entry.unwrap_or(Decimal::ZERO) + d),
                        Value::Int(i) => {
                            *entry = Some(entry.unwrap_or(Decimal::ZERO) + Decimal::from(*i))
                        }
                        _ => {}
                    }
                }
                groups
                    .into_iter()
                    .map(|(g, s)| {
                        let mut row = vec![Value::Null; width];
                        row[*group_to] = g;
                        row[*into] = s.map_or(Value::Null, Value::Decimal);
                        stamp_value(&mut row);
                        row
                    })
                    .collect()
            }
        }
    }

    fn write_step(
        &mut self,
        step: &CStep,
        day: NaiveDate,
        stamp: Option<NaiveDateTime>,
    ) -> Result<Affected, SqlError> {
        let rows = self.select(step, day, stamp);
        self.write_rows(&step.sink, rows)
    }

    fn write_rows(&mut self, sink: &Sink, rows: Vec<Row>) -> Result<Affected, SqlError> {
        match sink.write {
            WriteMode::Append | WriteMode::DeleteInsert => Ok(self.wh.insert(sink.table, rows)),
            WriteMode::Merge => self.wh.merge(sink.table, &sink.key, rows),
            WriteMode::InsertIgnore => Ok(self.wh.insert_ignore(sink.table, &sink.key, rows)),
        }
    }

    // ------------------------------------------------------------------ stream consumer

    fn run_stream(&mut self) {
        let Shape::Stream {
            stream_node,
            consumer_node,
            consumer,
            sink,
            messages,
            crash,
            redelivery,
            ..
        } = &self.m.shape
        else {
            unreachable!()
        };
        let n = messages.len();
        let resumed = match std::mem::replace(&mut self.cursor, Cursor::Start) {
            Cursor::Consume(c) => Some(c),
            _ => None,
        };
        let Consume {
            stream,
            mut pos,
            mut broker_offset,
            mut memory,
        } = match resumed {
            Some(c) => c,
            None => {
                let mut copies = Vec::new();
                // The producer's late duplicates: each message may reappear after some others.
                if let Some((lo, hi)) = redelivery {
                    let mut offered: Vec<Fault> =
                        Vec::with_capacity((hi.saturating_sub(*lo) + 1) as usize);
                    for (i, message) in messages.iter().enumerate() {
                        offered.clear();
                        offered.extend(
                            (*lo..=*hi)
                                .filter(|&k| i + (k as usize) < n)
                                .map(|after| Fault::Redelivery { after }),
                        );
                        if let Some(Fault::Redelivery { after }) = self.point(&offered) {
                            copies.push((i, i + after as usize));
                            if self.tracing {
                                self.failure_words.push(format!("the producer retries message {i} ({}), so it appears again after {after} other messages", message.describe));
                            }
                            log!(self, "stream", Some(stream_node), None, format!("gets a late duplicate of offset {i} ({}) after {after} other messages", message.describe), None, "duplicate appended".into(), false);
                        }
                    }
                }
                let mut stream: Vec<usize> = Vec::with_capacity(n + copies.len());
                for j in 0..n {
                    stream.push(j);
                    stream.extend(copies.iter().filter(|c| c.1 == j).map(|c| c.0));
                }
                Consume {
                    stream: Rc::new((copies, stream)),
                    pos: 0,
                    broker_offset: 0,
                    memory: VecDeque::new(),
                }
            }
        };
        let with_write = consumer.offset_commit == OffsetCommit::WithWrite;
        let edge_in = (stream_node.as_str(), consumer_node.as_str());
        let edge_out = (consumer_node.as_str(), sink.node.as_str());
        while pos < stream.1.len() {
            if self.pause_here() {
                self.cursor = Cursor::Consume(Consume {
                    stream,
                    pos,
                    broker_offset,
                    memory,
                });
                return;
            }
            if self.too_long() {
                return;
            }
            let msg = &messages[stream.1[pos]];
            let may_crash = crash
                .as_ref()
                .is_some_and(|offs| offs.as_ref().is_none_or(|o| o.contains(&(pos as u32))));
            let offered: &[Fault] = if may_crash {
                &[Fault::ConsumerCrash]
            } else {
                &[]
            };
            self.tick(1);
            log!(
                self,
                "consumer",
                Some(consumer_node),
                Some(edge_in),
                format!("reads offset {pos} ({})", msg.describe),
                None,
                "read".into(),
                false
            );
            let mut crashed_at: Option<&str> = None;
            if self.point(offered).is_some() {
                crashed_at = Some("before it writes or commits anything");
            } else {
                match consumer.offset_commit {
                    OffsetCommit::BeforeWrite => {
                        broker_offset = pos + 1;
                        self.tick(1);
                        log!(
                            self,
                            "consumer",
                            Some(consumer_node),
                            Some(edge_in),
                            format!("commits offset: next to read is {}", pos + 1),
                            None,
                            format!("broker stores next offset {}", pos + 1),
                            false
                        );
                        if self.point(offered).is_some() {
                            crashed_at =
                                Some("after it committed the offset, before it wrote the row");
                        } else {
                            self.consume_write(msg, &mut memory, edge_out, pos);
                            if self.point(offered).is_some() {
                                crashed_at =
                                    Some("after it committed the offset and wrote the row");
                            }
                        }
                    }
                    OffsetCommit::AfterWrite => {
                        self.consume_write(msg, &mut memory, edge_out, pos);
                        if self.point(offered).is_some() {
                            crashed_at =
                                Some("after it wrote the row, before it committed the offset");
                        } else {
                            broker_offset = pos + 1;
                            self.tick(1);
                            log!(
                                self,
                                "consumer",
                                Some(consumer_node),
                                Some(edge_in),
                                format!("commits offset: next to read is {}", pos + 1),
                                None,
                                format!("broker stores next offset {}", pos + 1),
                                false
                            );
                            if self.point(offered).is_some() {
                                crashed_at =
                                    Some("after it wrote the row and committed the offset");
                            }
                        }
                    }
                    OffsetCommit::WithWrite => {
                        self.wh.begin();
                        self.tick(1);
                        log!(
                            self,
                            "consumer",
                            Some(consumer_node),
                            None,
                            "opens a transaction".into(),
                            Some("BEGIN;".into()),
                            "transaction open".into(),
                            false
                        );
                        self.consume_write(msg, &mut memory, edge_out, pos);
                        self.wh.set_offset(pos as u64 + 1);
                        self.tick(1);
                        let sql = self.tracing.then(|| sql::offset_update(pos as u64 + 1));
                        log!(
                            self,
                            "consumer",
                            Some(consumer_node),
                            Some(edge_out),
                            format!("saves next offset {} with the row", pos + 1),
                            sql,
                            "not committed yet".into(),
                            false
                        );
                        if self.point(offered).is_some() {
                            crashed_at =
                                Some("after it wrote the row and the offset, before COMMIT");
                        } else {
                            self.wh.commit();
                            self.tick(1);
                            log!(
                                self,
                                "consumer",
                                Some(consumer_node),
                                Some(edge_out),
                                "commits the row and the offset together".into(),
                                Some("COMMIT;".into()),
                                "committed".into(),
                                true
                            );
                            self.observe();
                            if self.point(offered).is_some() {
                                crashed_at = Some("after it committed the row and the offset");
                            }
                        }
                    }
                }
            }
            match crashed_at {
                None => pos += 1,
                Some(place) => {
                    if self.tracing {
                        self.failure_words.push(format!(
                            "the consumer crashes while it handles offset {pos} ({}), {place}",
                            msg.describe
                        ));
                    }
                    log!(
                        self,
                        "consumer",
                        Some(consumer_node),
                        None,
                        format!("crashes {place}"),
                        None,
                        "crashed; its memory is lost".into(),
                        false
                    );
                    if self.rollback() {
                        log!(
                            self,
                            "database",
                            None,
                            None,
                            "rolls back the open transaction".into(),
                            Some("ROLLBACK;".into()),
                            "rolled back".into(),
                            true
                        );
                    }
                    memory.clear();
                    pos = if with_write {
                        self.wh.stored_offset as usize
                    } else {
                        broker_offset
                    };
                    self.tick(1);
                    let from = if with_write {
                        "the offset saved in the warehouse"
                    } else {
                        "the broker's committed offset"
                    };
                    log!(
                        self,
                        "consumer",
                        Some(consumer_node),
                        None,
                        format!("restarts and reads from offset {pos} ({from})"),
                        None,
                        "restarted".into(),
                        false
                    );
                }
            }
        }
    }

    /// The consumer writes one message to its sink, unless its in-memory dedupe remembers it.
    fn consume_write(
        &mut self,
        msg: &Message,
        memory: &mut VecDeque<Value>,
        edge: (&str, &str),
        pos: usize,
    ) {
        let (consumer_node, consumer, sink) = match &self.m.shape {
            Shape::Stream {
                consumer_node,
                consumer,
                sink,
                ..
            }
            | Shape::Sender {
                consumer_node,
                consumer,
                sink,
                ..
            } => (consumer_node, consumer, sink),
            Shape::Batch { .. } => unreachable!(),
        };
        self.write_message(
            consumer_node,
            consumer,
            sink,
            msg.row.clone(),
            &msg.key,
            memory,
            edge,
            pos,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn write_message(
        &mut self,
        consumer_node: &str,
        consumer: &crate::design::ConsumerOptions,
        sink: &Sink,
        row: Row,
        key: &Value,
        memory: &mut VecDeque<Value>,
        edge: (&str, &str),
        pos: usize,
    ) {
        self.tick(1);
        let dedupe = consumer.dedupe == Dedupe::InMemory;
        if dedupe && !key.is_null() && memory.iter().any(|k| k.key_eq(key)) {
            log!(
                self,
                "consumer",
                Some(consumer_node),
                None,
                format!("skips message {pos}: key {key} is in its memory"),
                None,
                "skipped as a repeat".into(),
                false
            );
            return;
        }
        let sql = self
            .tracing
            .then(|| sql::message_write(&self.wh.tables[sink.table], sink, &row, self.dialect));
        let result = self.write_rows(sink, vec![row]);
        let committed = !self.wh.in_transaction();
        match result {
            Ok(affected) => {
                let outcome = if !self.tracing {
                    String::new()
                } else if committed {
                    format!("committed: {}", affected.describe())
                } else {
                    format!("{} (not committed yet)", affected.describe())
                };
                log!(
                    self,
                    "consumer",
                    Some(consumer_node),
                    Some(edge),
                    format!(
                        "writes message {pos} to {}",
                        self.wh.tables[sink.table].name
                    ),
                    sql,
                    outcome,
                    committed
                );
                self.observe();
            }
            Err(SqlError(message)) => {
                self.unfinished.get_or_insert_with(|| message.clone());
                log!(
                    self,
                    "consumer",
                    Some(consumer_node),
                    Some(edge),
                    format!("writes message {pos}"),
                    sql,
                    format!("error: {message}"),
                    false
                );
            }
        }
        if dedupe && !key.is_null() {
            if memory.len() >= consumer.dedupe_window as usize {
                memory.pop_front();
            }
            memory.push_back(key.clone());
        }
    }

    // ------------------------------------------------------------------ sender

    fn run_sender(&mut self) {
        let Shape::Sender {
            sender_node,
            consumer_node,
            sender,
            consumer,
            sink,
            messages,
            idempotency_col,
            message_lost,
            ack_lost,
            ..
        } = &self.m.shape
        else {
            unreachable!()
        };
        let (first, mut memory) = match std::mem::replace(&mut self.cursor, Cursor::Start) {
            Cursor::Send { i, memory } => (i, memory),
            _ => (0, VecDeque::new()),
        };
        let edge_in = (sender_node.as_str(), consumer_node.as_str());
        let edge_out = (consumer_node.as_str(), sink.node.as_str());
        let lost: &[Fault] = if *message_lost {
            &[Fault::MessageLost]
        } else {
            &[]
        };
        let acks: &[Fault] = if *ack_lost { &[Fault::AckLost] } else { &[] };
        for (i, msg) in messages.iter().enumerate().skip(first) {
            if self.pause_here() {
                self.cursor = Cursor::Send { i, memory };
                return;
            }
            let mut attempt = 0u32;
            loop {
                if self.too_long() {
                    return;
                }
                attempt += 1;
                let idem = match sender.idempotency_key {
                    IdempotencyKey::None => Value::Null,
                    IdempotencyKey::PerAction => Value::Text(format!("key-{}", i + 1)),
                    IdempotencyKey::PerAttempt => Value::Text(format!("key-{}-{attempt}", i + 1)),
                };
                let mut row = msg.row.clone();
                if let Some(c) = idempotency_col {
                    row[*c] = idem.clone();
                }
                let key = if sender.idempotency_key == IdempotencyKey::None {
                    msg.key.clone()
                } else {
                    idem.clone()
                };
                self.tick(1);
                let with_key = || {
                    if idem.is_null() {
                        String::new()
                    } else {
                        format!(" with Idempotency-Key {idem}")
                    }
                };
                let verb = if attempt == 1 { "sends" } else { "resends" };
                log!(
                    self,
                    "sender",
                    Some(sender_node),
                    Some(edge_in),
                    format!("{verb} message {i} ({}){}", msg.describe, with_key()),
                    None,
                    "sent".into(),
                    false
                );
                let mut silence = false;
                if self.point(lost).is_some() {
                    if self.tracing {
                        self.failure_words.push(format!(
                            "message {i} ({}) is lost on the way (attempt {attempt})",
                            msg.describe
                        ));
                    }
                    log!(
                        self,
                        "network",
                        None,
                        Some(edge_in),
                        format!("loses message {i}"),
                        None,
                        "lost: the consumer never sees it".into(),
                        false
                    );
                    silence = true;
                } else {
                    self.write_message(
                        consumer_node,
                        consumer,
                        sink,
                        row,
                        &key,
                        &mut memory,
                        edge_out,
                        i,
                    );
                    self.tick(1);
                    if self.point(acks).is_some() {
                        if self.tracing {
                            self.failure_words.push(format!(
                                "the ack for message {i} ({}) is lost (attempt {attempt})",
                                msg.describe
                            ));
                        }
                        log!(
                            self,
                            "network",
                            None,
                            Some(edge_in),
                            format!("loses the consumer's ack for message {i}"),
                            None,
                            "lost: the sender hears nothing".into(),
                            false
                        );
                        silence = true;
                    } else {
                        log!(
                            self,
                            "consumer",
                            Some(consumer_node),
                            Some(edge_in),
                            format!("acks message {i}"),
                            None,
                            "ack received".into(),
                            false
                        );
                    }
                }
                if !silence {
                    break;
                }
                self.clock_s += 30;
                match sender.on_timeout {
                    OnTimeout::GiveUp => {
                        log!(
                            self,
                            "sender",
                            Some(sender_node),
                            None,
                            format!("hears nothing for 30 s and gives up on message {i}"),
                            None,
                            "given up (at-most-once)".into(),
                            false
                        );
                        break;
                    }
                    OnTimeout::Resend => {
                        log!(
                            self,
                            "sender",
                            Some(sender_node),
                            None,
                            format!("hears nothing for 30 s and will resend message {i}"),
                            None,
                            "timeout".into(),
                            false
                        );
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------------ end of run

    fn evaluate_end(&mut self, clean: Option<&Clean>) {
        let step = self.step_no();
        // Untraced runs only need to know whether a requirement was missed.
        let detail = self.tracing;
        for (i, check) in self.m.checks.iter().enumerate() {
            if self.misses[i].is_some() {
                continue;
            }
            let miss = match check {
                CCheck::NeverSeen { .. } | CCheck::RerunNoop { .. } => None,
                CCheck::Finishes => self.unfinished.as_ref().map(|why| {
                    (
                        "every run and message handled to the end".to_string(),
                        why.clone(),
                    )
                }),
                CCheck::Value {
                    table,
                    column,
                    filter,
                    expected,
                } => {
                    let t = &self.wh.tables[*table];
                    let rows: Vec<&Row> = t.rows.iter().filter(|r| eval(r, filter)).collect();
                    if rows.len() == 1 && rows[0][*column].key_eq(expected) {
                        None
                    } else {
                        Some(if detail {
                            (expected.to_string(), describe_rows(t, &rows, Some(*column)))
                        } else {
                            Default::default()
                        })
                    }
                }
                CCheck::Sum {
                    table,
                    column,
                    filter,
                    expected,
                } => {
                    let actual = sum(&self.wh.tables[*table].rows, *column, filter);
                    let expected =
                        expected.or_else(|| clean.map(|c| sum(&c.tables[*table], *column, filter)));
                    match expected {
                        Some(e) if e == actual => None,
                        Some(e) => Some(if detail {
                            (e.to_string(), actual.to_string())
                        } else {
                            Default::default()
                        }),
                        None => None,
                    }
                }
                CCheck::RowCount {
                    table,
                    filter,
                    expected,
                } => {
                    let count = self.wh.tables[*table]
                        .rows
                        .iter()
                        .filter(|r| eval(r, filter))
                        .count() as u64;
                    let expected = expected.or_else(|| {
                        clean.map(|c| {
                            c.tables[*table].iter().filter(|r| eval(r, filter)).count() as u64
                        })
                    });
                    match expected {
                        Some(e) if e == count => None,
                        Some(e) => Some(if detail {
                            (format!("{e} rows"), format!("{count} rows"))
                        } else {
                            Default::default()
                        }),
                        None => None,
                    }
                }
                CCheck::Unique { table, columns } => {
                    let t = &self.wh.tables[*table];
                    // Rows with a NULL in the key are never duplicates, as in a unique index.
                    let key = |i: &usize| {
                        let row = &t.rows[*i];
                        columns.iter().map(move |&c| &row[c])
                    };
                    let mut rows: Vec<usize> = (0..t.rows.len())
                        .filter(|i| key(i).all(|v| !v.is_null()))
                        .collect();
                    rows.sort_by(|a, b| key(a).cmp(key(b)));
                    let dup = rows
                        .windows(2)
                        .find(|w| key(&w[0]).eq(key(&w[1])))
                        .map(|w| w[0]);
                    dup.map(|first| {
                        if !detail {
                            return Default::default();
                        }
                        let names: Vec<&str> =
                            columns.iter().map(|&c| t.columns[c].as_str()).collect();
                        let shown: Vec<String> = key(&first).map(|v| v.to_string()).collect();
                        let count = rows.iter().filter(|i| key(i).eq(key(&first))).count();
                        (
                            format!("each {} once", names.join(", ")),
                            format!(
                                "{} {} appears {count} times",
                                names.join(", "),
                                shown.join(", ")
                            ),
                        )
                    })
                }
                CCheck::Complete {
                    table,
                    column,
                    keys,
                } => {
                    let t = &self.wh.tables[*table];
                    let mut present: Vec<&Value> = t
                        .rows
                        .iter()
                        .map(|r| &r[*column])
                        .filter(|v| !v.is_null())
                        .collect();
                    present.sort();
                    let missing: Vec<&Value> = keys
                        .iter()
                        .filter(|k| present.binary_search(k).is_err())
                        .collect();
                    (!missing.is_empty()).then(|| {
                        if !detail {
                            return Default::default();
                        }
                        let missing: Vec<String> = missing.iter().map(|k| k.to_string()).collect();
                        let all: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
                        (
                            format!("{} {} all present", t.columns[*column], all.join(", ")),
                            format!("{} {} missing", t.columns[*column], missing.join(", ")),
                        )
                    })
                }
                CCheck::SameAsClean { tables } => clean.and_then(|c| {
                    tables.iter().find_map(|&t| {
                        let now = self.wh.tables[t].sorted_rows();
                        (now != c.tables[t]).then(|| {
                            if !detail {
                                return Default::default();
                            }
                            let cols = &self.wh.tables[t].columns;
                            (
                                format!(
                                    "{} as after a run with no failure: {}",
                                    self.wh.tables[t].name,
                                    format_rows(cols, &c.tables[t])
                                ),
                                format!("{}: {}", self.wh.tables[t].name, format_rows(cols, &now)),
                            )
                        })
                    })
                }),
            };
            if let Some((expected, actual)) = miss {
                self.misses[i] = Some(Miss {
                    expected,
                    actual,
                    step,
                    tables: self.tracing.then(|| self.view()),
                });
            }
        }
    }
}

fn sum(rows: &[Row], column: usize, filter: &[Cond]) -> Decimal {
    rows.iter()
        .filter(|r| eval(r, filter))
        .map(|r| match &r[column] {
            Value::Decimal(d) => *d,
            Value::Int(i) => Decimal::from(*i),
            _ => Decimal::ZERO,
        })
        .sum()
}

pub(crate) fn table_view(t: &Table) -> TableView {
    TableView {
        columns: t.columns.clone(),
        rows: t
            .rows
            .iter()
            .map(|r| r.iter().map(Value::to_json).collect())
            .collect(),
    }
}

fn format_rows(columns: &[String], rows: &[Row]) -> String {
    if rows.is_empty() {
        return "no rows".into();
    }
    let shown: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "({})",
                r.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    format!(
        "{} {} [{}] {}",
        rows.len(),
        if rows.len() == 1 { "row" } else { "rows" },
        columns.join(", "),
        shown.join(" ")
    )
}

fn describe_rows(t: &Table, rows: &[&Row], column: Option<usize>) -> String {
    match (rows.len(), column) {
        (0, _) => "no row".into(),
        (1, Some(c)) => rows[0][c].to_string(),
        (n, Some(c)) => format!(
            "{n} rows: {}",
            rows.iter()
                .map(|r| r[c].to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (n, None) => format!("{n} rows in {}", t.name),
    }
}

fn describe_expectation(rows: Option<u64>, value: Option<(&str, Option<&Value>)>) -> String {
    let mut parts = Vec::new();
    if let Some(n) = rows {
        parts.push(format!(
            "exactly {n} {}",
            if n == 1 { "row" } else { "rows" }
        ));
    }
    if let Some((c, Some(v))) = value {
        parts.push(format!("{c} = {v}"));
    }
    if parts.is_empty() {
        "the rows as they were".into()
    } else {
        parts.join(" with ")
    }
}
