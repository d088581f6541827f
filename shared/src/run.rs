//! The run of one failure schedule on a compiled model, step by step, as a real scheduler,
//! consumer, sender and SQL database would.
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
    DateFilter, Dedupe, IdempotencyKey, LoadedAt, OffsetCommit, OnTimeout, Transaction, WriteMode,
};
use crate::model::{
    eval, BatchModel, CCheck, CStep, Cond, ConsumerModel, Message, Model, Mutation, SenderModel,
    Shape, Sink, StepKind, StreamModel,
};
use crate::sql::{self, Dialect};
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

/// Whether a run records the failures it could inject after its plan. The search needs them
/// to enumerate the schedules that extend this one; a replay only needs the run itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Offers {
    Record,
    Ignore,
}

/// Whether a run writes a trace, and in which SQL dialect. The exhaustive search runs
/// untraced so that it formats no text at all; a counterexample is replayed traced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trace {
    Off,
    In(Dialect),
}

/// One entry of the trace, as a part of the run describes it; the run numbers it, times it
/// and marks the failure that led to it. It is only ever built when the run is traced.
struct Step<'s> {
    /// Who acts: the scheduler, the job, the consumer, the database, the network…
    actor: &'static str,
    /// The node of the design that acts, if any.
    node: Option<&'s str>,
    /// The edge of the design the step travels along, if any.
    edge: Option<(&'s str, &'s str)>,
    action: String,
    sql: Option<String>,
    outcome: String,
    /// Whether the step changed committed data, so the entry shows the tables after it.
    changed: bool,
}

/// How one attempt of a batch job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AttemptEnd {
    /// Every statement ran and was committed: the job reports success.
    Succeeded,
    /// The job crashed at a choice point (an injected failure); it counts against the
    /// scenario's crashes per run.
    Crashed,
    /// A statement failed with a SQL error, which the scheduler sees as a failed attempt.
    Failed,
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
    record: Offers,
    pub(crate) offers: Vec<(u32, Fault)>,
    wh: Warehouse,
    /// The simulated wall clock, in seconds since the Unix epoch (cheap to advance).
    clock_s: i64,
    /// Whether the run writes a trace (see `Trace`).
    tracing: bool,
    /// The SQL dialect of the trace.
    dialect: Dialect,
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
    /// Runs one whole schedule from the start. `clean` is the clean run's outcome, or `None`
    /// when this is the clean run, whose end state is then kept in the outcome.
    pub(crate) fn run(
        m: &'a Model,
        plan: &[(u32, Fault)],
        offers: Offers,
        trace: Trace,
        clean: Option<&Clean>,
    ) -> Outcome {
        let mut sim = Sim::new(m, offers, trace);
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
    pub(crate) fn new(m: &'a Model, offers: Offers, trace: Trace) -> Self {
        let start = match &m.shape {
            Shape::Batch(b) => b.runs.first().map(|r| r.start).unwrap_or_default(),
            Shape::Stream(s) => s.start,
            Shape::Sender(s) => s.start,
        };
        let (tracing, dialect) = match trace {
            Trace::Off => (false, Dialect::Display),
            Trace::In(dialect) => (true, dialect),
        };
        let mut sim = Sim {
            m,
            plan: Vec::new(),
            plan_pos: 0,
            next_point: 0,
            used: 0,
            record: offers,
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
        let mut sim = Sim::new(m, Offers::Record, Trace::Off);
        sim.pausing = true;
        // A batch job stops at a mark once per scheduled run: hashing the tables there costs
        // less than keeping their hash with every row written.
        sim.wh.keep_journal(!matches!(m.shape, Shape::Batch(_)));
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
        // The model outlives the simulator's borrow of itself, so each shape's own model can
        // be handed to its run alongside `&mut self`.
        let m: &'a Model = self.m;
        match &m.shape {
            Shape::Batch(b) => self.run_batch(b),
            Shape::Stream(s) => self.run_stream(s),
            Shape::Sender(s) => self.run_sender(s),
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
        if self.record == Offers::Record && self.used < self.m.bound {
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

    /// Adds a trace entry. `step` only runs when the run is traced, so that the exhaustive
    /// search, which runs untraced, formats nothing. It gets the simulator to read from,
    /// since the caller holds it mutably.
    fn log<'s>(&mut self, step: impl FnOnce(&Self) -> Step<'s>) {
        let failure = std::mem::take(&mut self.failing);
        if self.tracing {
            let step = step(self);
            self.push_trace(failure, step);
        }
    }

    fn push_trace(&mut self, failure: bool, entry: Step) {
        let Step {
            actor,
            node,
            edge,
            action,
            sql,
            outcome,
            changed,
        } = entry;
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

    fn run_batch(&mut self, b: &BatchModel) {
        let BatchModel {
            job_node,
            runs,
            max_attempts,
            crash_max_per_run,
            retry_delay_minutes,
            job,
            ..
        } = b;
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
                self.log(|_| Step {
                    actor: "scheduler",
                    node: Some(job_node),
                    edge: None,
                    action: format!(
                        "starts run {} for {} (attempt {attempt}); the job loads {day} ({})",
                        run.id,
                        run.logical_date,
                        filter_words()
                    ),
                    sql: None,
                    outcome: "started".into(),
                    changed: false,
                });
                let can_crash = run.may_crash && crashes < *crash_max_per_run;
                match self.attempt(b, day, stamp, can_crash, attempt, &run.id) {
                    AttemptEnd::Succeeded => {
                        self.log(|_| Step {
                            actor: "job",
                            node: Some(job_node),
                            edge: None,
                            action: "reports success to the scheduler".into(),
                            sql: None,
                            outcome: "run finished".into(),
                            changed: false,
                        });
                        done = true;
                        break;
                    }
                    end @ (AttemptEnd::Crashed | AttemptEnd::Failed) => {
                        let crashed = end == AttemptEnd::Crashed;
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
                        self.log(|_| Step {
                            actor: "scheduler",
                            node: Some(job_node),
                            edge: None,
                            action: format!(
                                "sees the attempt fail and retries run {} {}",
                                run.id,
                                when()
                            ),
                            sql: None,
                            outcome: "retry scheduled".into(),
                            changed: false,
                        });
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
                self.log(|_| Step {
                    actor: "scheduler",
                    node: Some(job_node),
                    edge: None,
                    action: format!("gives up on run {} after {max_attempts} attempts", run.id),
                    sql: None,
                    outcome: "run failed".into(),
                    changed: false,
                });
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

    /// One attempt of the job, on the day it loads and with the stamp it writes.
    fn attempt(
        &mut self,
        b: &BatchModel,
        day: NaiveDate,
        stamp: Option<NaiveDateTime>,
        can_crash: bool,
        attempt: u32,
        run_id: &str,
    ) -> AttemptEnd {
        let BatchModel {
            job_node,
            job,
            steps,
            ..
        } = b;
        let per_run = job.transaction == Transaction::PerRun;
        if per_run {
            self.wh.begin();
            self.tick(1);
            self.log(|_| Step {
                actor: "job",
                node: Some(job_node),
                edge: None,
                action: "opens a transaction".into(),
                sql: Some("BEGIN;".into()),
                outcome: "transaction open".into(),
                changed: false,
            });
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
                    let ctx = self.sql_ctx(b, day, stamp);
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
                match result {
                    Err(SqlError(message)) => {
                        self.log(|_| Step {
                            actor: "job",
                            node: Some(job_node),
                            edge: Some(edge),
                            action: what,
                            sql,
                            outcome: format!("error: {message}"),
                            changed: false,
                        });
                        if self.rollback() {
                            self.log(|_| Step {
                                actor: "database",
                                node: None,
                                edge: None,
                                action: "rolls back the open transaction".into(),
                                sql: Some("ROLLBACK;".into()),
                                outcome: "rolled back".into(),
                                changed: false,
                            });
                        }
                        return AttemptEnd::Failed;
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
                        self.log(|_| Step {
                            actor: "job",
                            node: Some(job_node),
                            edge: Some(edge),
                            action: what,
                            sql,
                            outcome,
                            changed: committed,
                        });
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
                    self.crash_job(b, place, attempt, run_id);
                    return AttemptEnd::Crashed;
                }
            }
        }
        if per_run {
            self.wh.commit();
            self.tick(1);
            self.log(|_| Step {
                actor: "job",
                node: Some(job_node),
                edge: None,
                action: "commits the transaction".into(),
                sql: Some("COMMIT;".into()),
                outcome: "committed".into(),
                changed: true,
            });
            self.observe();
            if self.point(offered).is_some() {
                self.crash_job(
                    b,
                    "after COMMIT, before it reports success".into(),
                    attempt,
                    run_id,
                );
                return AttemptEnd::Crashed;
            }
        }
        AttemptEnd::Succeeded
    }

    fn crash_job(&mut self, b: &BatchModel, place: String, attempt: u32, run_id: &str) {
        let job_node = &b.job_node;
        if self.tracing {
            self.failure_words.push(format!(
                "the job crashes {place} (run {run_id}, attempt {attempt})"
            ));
        }
        self.log(|_| Step {
            actor: "job",
            node: Some(job_node),
            edge: None,
            action: format!("crashes {place}"),
            sql: None,
            outcome: "crashed".into(),
            changed: false,
        });
        if self.rollback() {
            self.log(|_| Step {
                actor: "database",
                node: None,
                edge: None,
                action: "rolls back the open transaction".into(),
                sql: Some("ROLLBACK;".into()),
                outcome: "rolled back: nothing of this attempt is kept".into(),
                changed: true,
            });
        }
    }

    fn sql_ctx(
        &self,
        b: &BatchModel,
        day: NaiveDate,
        stamp: Option<NaiveDateTime>,
    ) -> sql::Ctx<'_> {
        let job = &b.job;
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

    fn run_stream(&mut self, s: &StreamModel) {
        let StreamModel {
            stream_node,
            consumer: c,
            messages,
            crash,
            redelivery,
            ..
        } = s;
        let ConsumerModel {
            node: consumer_node,
            options: consumer,
            sink,
        } = c;
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
                            self.log(|_| Step {
actor: "stream",
node: Some(stream_node),
edge: None,
action: format!("gets a late duplicate of offset {i} ({}) after {after} other messages", message.describe),
sql: None,
outcome: "duplicate appended".into(),
changed: false,
});
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
            let may_crash = crash.may_crash_at(pos as u32);
            let offered: &[Fault] = if may_crash {
                &[Fault::ConsumerCrash]
            } else {
                &[]
            };
            self.tick(1);
            self.log(|_| Step {
                actor: "consumer",
                node: Some(consumer_node),
                edge: Some(edge_in),
                action: format!("reads offset {pos} ({})", msg.describe),
                sql: None,
                outcome: "read".into(),
                changed: false,
            });
            let mut crashed_at: Option<&str> = None;
            if self.point(offered).is_some() {
                crashed_at = Some("before it writes or commits anything");
            } else {
                match consumer.offset_commit {
                    OffsetCommit::BeforeWrite => {
                        broker_offset = pos + 1;
                        self.tick(1);
                        self.log(|_| Step {
                            actor: "consumer",
                            node: Some(consumer_node),
                            edge: Some(edge_in),
                            action: format!("commits offset: next to read is {}", pos + 1),
                            sql: None,
                            outcome: format!("broker stores next offset {}", pos + 1),
                            changed: false,
                        });
                        if self.point(offered).is_some() {
                            crashed_at =
                                Some("after it committed the offset, before it wrote the row");
                        } else {
                            self.consume_write(c, msg, &mut memory, edge_out, pos);
                            if self.point(offered).is_some() {
                                crashed_at =
                                    Some("after it committed the offset and wrote the row");
                            }
                        }
                    }
                    OffsetCommit::AfterWrite => {
                        self.consume_write(c, msg, &mut memory, edge_out, pos);
                        if self.point(offered).is_some() {
                            crashed_at =
                                Some("after it wrote the row, before it committed the offset");
                        } else {
                            broker_offset = pos + 1;
                            self.tick(1);
                            self.log(|_| Step {
                                actor: "consumer",
                                node: Some(consumer_node),
                                edge: Some(edge_in),
                                action: format!("commits offset: next to read is {}", pos + 1),
                                sql: None,
                                outcome: format!("broker stores next offset {}", pos + 1),
                                changed: false,
                            });
                            if self.point(offered).is_some() {
                                crashed_at =
                                    Some("after it wrote the row and committed the offset");
                            }
                        }
                    }
                    OffsetCommit::WithWrite => {
                        self.wh.begin();
                        self.tick(1);
                        self.log(|_| Step {
                            actor: "consumer",
                            node: Some(consumer_node),
                            edge: None,
                            action: "opens a transaction".into(),
                            sql: Some("BEGIN;".into()),
                            outcome: "transaction open".into(),
                            changed: false,
                        });
                        self.consume_write(c, msg, &mut memory, edge_out, pos);
                        self.wh.set_offset(pos as u64 + 1);
                        self.tick(1);
                        let sql = self.tracing.then(|| sql::offset_update(pos as u64 + 1));
                        self.log(|_| Step {
                            actor: "consumer",
                            node: Some(consumer_node),
                            edge: Some(edge_out),
                            action: format!("saves next offset {} with the row", pos + 1),
                            sql,
                            outcome: "not committed yet".into(),
                            changed: false,
                        });
                        if self.point(offered).is_some() {
                            crashed_at =
                                Some("after it wrote the row and the offset, before COMMIT");
                        } else {
                            self.wh.commit();
                            self.tick(1);
                            self.log(|_| Step {
                                actor: "consumer",
                                node: Some(consumer_node),
                                edge: Some(edge_out),
                                action: "commits the row and the offset together".into(),
                                sql: Some("COMMIT;".into()),
                                outcome: "committed".into(),
                                changed: true,
                            });
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
                    self.log(|_| Step {
                        actor: "consumer",
                        node: Some(consumer_node),
                        edge: None,
                        action: format!("crashes {place}"),
                        sql: None,
                        outcome: "crashed; its memory is lost".into(),
                        changed: false,
                    });
                    if self.rollback() {
                        self.log(|_| Step {
                            actor: "database",
                            node: None,
                            edge: None,
                            action: "rolls back the open transaction".into(),
                            sql: Some("ROLLBACK;".into()),
                            outcome: "rolled back".into(),
                            changed: true,
                        });
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
                    self.log(|_| Step {
                        actor: "consumer",
                        node: Some(consumer_node),
                        edge: None,
                        action: format!("restarts and reads from offset {pos} ({from})"),
                        sql: None,
                        outcome: "restarted".into(),
                        changed: false,
                    });
                }
            }
        }
    }

    /// The consumer writes one message of the stream to its sink.
    fn consume_write(
        &mut self,
        c: &ConsumerModel,
        msg: &Message,
        memory: &mut VecDeque<Value>,
        edge: (&str, &str),
        pos: usize,
    ) {
        self.write_message(c, msg.row.clone(), &msg.key, memory, edge, pos);
    }

    /// The consumer writes one row to its sink, unless its in-memory dedupe remembers its key.
    fn write_message(
        &mut self,
        c: &ConsumerModel,
        row: Row,
        key: &Value,
        memory: &mut VecDeque<Value>,
        edge: (&str, &str),
        pos: usize,
    ) {
        let ConsumerModel {
            node: consumer_node,
            options: consumer,
            sink,
        } = c;
        self.tick(1);
        let dedupe = consumer.dedupe == Dedupe::InMemory;
        if dedupe && !key.is_null() && memory.iter().any(|k| k.key_eq(key)) {
            self.log(|_| Step {
                actor: "consumer",
                node: Some(consumer_node),
                edge: None,
                action: format!("skips message {pos}: key {key} is in its memory"),
                sql: None,
                outcome: "skipped as a repeat".into(),
                changed: false,
            });
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
                self.log(|sim| Step {
                    actor: "consumer",
                    node: Some(consumer_node),
                    edge: Some(edge),
                    action: format!("writes message {pos} to {}", sim.wh.tables[sink.table].name),
                    sql,
                    outcome,
                    changed: committed,
                });
                self.observe();
            }
            Err(SqlError(message)) => {
                self.unfinished.get_or_insert_with(|| message.clone());
                self.log(|_| Step {
                    actor: "consumer",
                    node: Some(consumer_node),
                    edge: Some(edge),
                    action: format!("writes message {pos}"),
                    sql,
                    outcome: format!("error: {message}"),
                    changed: false,
                });
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

    fn run_sender(&mut self, s: &SenderModel) {
        let SenderModel {
            sender_node,
            sender,
            consumer: c,
            messages,
            idempotency_col,
            message_lost,
            ack_lost,
            ..
        } = s;
        let ConsumerModel {
            node: consumer_node,
            sink,
            ..
        } = c;
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
                self.log(|_| Step {
                    actor: "sender",
                    node: Some(sender_node),
                    edge: Some(edge_in),
                    action: format!("{verb} message {i} ({}){}", msg.describe, with_key()),
                    sql: None,
                    outcome: "sent".into(),
                    changed: false,
                });
                let mut silence = false;
                if self.point(lost).is_some() {
                    if self.tracing {
                        self.failure_words.push(format!(
                            "message {i} ({}) is lost on the way (attempt {attempt})",
                            msg.describe
                        ));
                    }
                    self.log(|_| Step {
                        actor: "network",
                        node: None,
                        edge: Some(edge_in),
                        action: format!("loses message {i}"),
                        sql: None,
                        outcome: "lost: the consumer never sees it".into(),
                        changed: false,
                    });
                    silence = true;
                } else {
                    self.write_message(c, row, &key, &mut memory, edge_out, i);
                    self.tick(1);
                    if self.point(acks).is_some() {
                        if self.tracing {
                            self.failure_words.push(format!(
                                "the ack for message {i} ({}) is lost (attempt {attempt})",
                                msg.describe
                            ));
                        }
                        self.log(|_| Step {
                            actor: "network",
                            node: None,
                            edge: Some(edge_in),
                            action: format!("loses the consumer's ack for message {i}"),
                            sql: None,
                            outcome: "lost: the sender hears nothing".into(),
                            changed: false,
                        });
                        silence = true;
                    } else {
                        self.log(|_| Step {
                            actor: "consumer",
                            node: Some(consumer_node),
                            edge: Some(edge_in),
                            action: format!("acks message {i}"),
                            sql: None,
                            outcome: "ack received".into(),
                            changed: false,
                        });
                    }
                }
                if !silence {
                    break;
                }
                self.clock_s += 30;
                match sender.on_timeout {
                    OnTimeout::GiveUp => {
                        self.log(|_| Step {
                            actor: "sender",
                            node: Some(sender_node),
                            edge: None,
                            action: format!("hears nothing for 30 s and gives up on message {i}"),
                            sql: None,
                            outcome: "given up (at-most-once)".into(),
                            changed: false,
                        });
                        break;
                    }
                    OnTimeout::Resend => {
                        self.log(|_| Step {
                            actor: "sender",
                            node: Some(sender_node),
                            edge: None,
                            action: format!("hears nothing for 30 s and will resend message {i}"),
                            sql: None,
                            outcome: "timeout".into(),
                            changed: false,
                        });
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
