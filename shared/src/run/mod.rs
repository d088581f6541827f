//! The run of one failure schedule on a compiled model, step by step, as a real scheduler,
//! consumer, sender and SQL database would.
//!
//! A schedule is a list of (choice point, failure). Choice points are numbered in the order
//! the run meets them; because the run is deterministic, a schedule replays exactly. The
//! run records the failures it could have injected after the last planned one, which is how
//! `crate::check` enumerates every schedule up to the scenario's bound.
//!
//! This module holds the simulator's state and what every shape shares: choice points, the
//! clock, the trace, and what a reader sees while the run goes on. Each shape's loop lives in
//! its own module (`batch`, `stream`, `sender`, with the consumer's write in `consumer`), and
//! the requirements judged on the final tables in `end`.

use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use chrono::NaiveDateTime;

use crate::design::WriteMode;
use crate::model::{eval, CCheck, Model, Mutation, Shape, Sink};
use crate::sql::Dialect;
use crate::value::{format_time, Value};
use crate::verdict::{FaultAt, TableDiff, TableView, TraceEntry};
use crate::warehouse::{Affected, Row, SqlError, Table, Warehouse};

mod batch;
mod consumer;
mod end;
mod sender;
mod stream;

/// A failure the simulator injects at a choice point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Fault {
    JobCrash,
    ConsumerCrash,
    MessageLost,
    AckLost,
    Redelivery { after: u32 },
}

impl Fault {
    /// The failure's kind as the verdict names it.
    pub(crate) fn kind(self) -> &'static str {
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
    /// The table's expected and actual rows, for a requirement that compares a whole table.
    pub diff: Option<TableDiff>,
}

/// What the clean run (no failures) ended with, for `same_as_clean_run` and clean-run sums.
#[derive(Clone, Debug)]
pub(crate) struct Clean {
    pub tables: Vec<Vec<Row>>,
    /// Per requirement, the clean run's sum or row count where the requirement compares with
    /// it (a `sum` or `row_count` with no expected value), worked out once.
    pub totals: Vec<Option<CleanTotal>>,
}

/// A clean run's figure that a requirement compares with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum CleanTotal {
    Sum(rust_decimal::Decimal),
    Count(u64),
}

/// What one whole run ended with.
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

/// A run never takes more steps than this, or than its model's most steps per run
/// ([`Model::max_run_steps`]) where that is more; past it the run stops and does not finish.
/// Since a run of a well-formed model never takes more than that most, the cap only stops a
/// run the model did not foresee.
pub(crate) const MAX_STEPS_PER_RUN: u64 = 1_000_000;

/// The steps one run of `m` may take: [`MAX_STEPS_PER_RUN`], raised above the model's most
/// steps per run, so that a large stream is never cut short.
pub(crate) fn step_cap(m: &Model) -> u64 {
    MAX_STEPS_PER_RUN.max(m.max_run_steps().saturating_add(1))
}

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
    /// The most steps of one run ([`step_cap`]).
    step_cap: u64,
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
            step_cap: step_cap(m),
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
                    diff: None,
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
    /// design reads it (a batch job), and so is the step count, where a run could reach its
    /// cap ([`step_cap`]).
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

    /// Rolls back the open transaction, if there is one, and says so in the trace with
    /// `outcome`; `changed` when what readers see may have changed with it.
    fn rollback_in_trace(&mut self, outcome: &'static str, changed: bool) {
        if self.rollback() {
            self.log(|_| Step {
                actor: "database",
                node: None,
                edge: None,
                action: "rolls back the open transaction".into(),
                sql: Some("ROLLBACK;".into()),
                outcome: outcome.into(),
                changed,
            });
        }
    }

    fn now(&self) -> NaiveDateTime {
        chrono::DateTime::from_timestamp(self.clock_s, 0)
            .map(|t| t.naive_utc())
            .unwrap_or_default()
    }

    fn too_long(&mut self) -> bool {
        if self.steps > self.step_cap {
            let cap = self.step_cap;
            self.unfinished
                .get_or_insert_with(|| format!("the run was stopped after {cap} steps"));
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
                    diff: None,
                });
            }
        }
    }

    fn write_rows(&mut self, sink: &Sink, rows: Vec<Row>) -> Result<Affected, SqlError> {
        match sink.write {
            WriteMode::Append | WriteMode::DeleteInsert => Ok(self.wh.insert(sink.table, rows)),
            WriteMode::Merge => self.wh.merge(sink.table, &sink.key, rows),
            WriteMode::InsertIgnore => Ok(self.wh.insert_ignore(sink.table, &sink.key, rows)),
        }
    }
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
