//! The run of one failure schedule on a compiled model, step by step, as a real scheduler,
//! consumer, sender and SQL database would.
//!
//! A schedule is a list of (choice point, failure). Choice points are numbered in the order
//! the run meets them; because the run is deterministic, a schedule replays exactly. The
//! run records the failures it could have injected after the last planned one, which is how
//! `crate::check` enumerates every schedule up to the scenario's bound.
//!
//! A pipeline's stages take turns on one timeline: at each point, the stage whose next event
//! comes first (a job's run or retry, a message that reaches the stream, a sender's send) acts
//! for one iteration — a job's attempt, a consumer's handling of one message, one send — and
//! no other stage acts inside it, so every iteration ends with its transactions closed.
//!
//! This module holds the simulator's state and what every stage shares: choice points, the
//! clock, the turns, the trace, and what a reader sees while the run goes on. Each stage's
//! iteration lives in its own module (`job`, `stream`, `sender`, with the consumer's write in
//! `consumer`), the shop's changes to its source tables in `changes`, and the requirements
//! judged on the final tables in `end`.

use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use chrono::NaiveDateTime;
use rust_decimal::Decimal;

use crate::design::WriteMode;
use crate::model::{eval, CCheck, Model, Mutation, Sink, StageModel};
use crate::sql::Dialect;
use crate::value::{format_time, Value};
use crate::verdict::{FaultAt, TableDiff, TableView, TraceEntry};
use crate::warehouse::{Affected, Row, SqlError, Table, Warehouse};

mod changes;
mod consumer;
mod end;
mod job;
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

/// Where one stage is in its work, so that a run can stop between two iterations (a mark)
/// and later go on from there, and so that stages can take turns.
#[derive(Clone, Debug)]
pub(crate) enum Cursor {
    Job(JobCursor),
    Stream(StreamCursor),
    Sender(SenderCursor),
}

/// Each stage's cursor, in the model's order of stages. A pipeline of one stage keeps its
/// cursor inline, so that saving a state of the search allocates nothing for it.
#[derive(Clone, Debug)]
pub(crate) enum Cursors {
    One([Cursor; 1]),
    Many(Vec<Cursor>),
}

impl std::ops::Deref for Cursors {
    type Target = [Cursor];
    fn deref(&self) -> &[Cursor] {
        match self {
            Cursors::One(one) => one,
            Cursors::Many(many) => many,
        }
    }
}

impl std::ops::DerefMut for Cursors {
    fn deref_mut(&mut self) -> &mut [Cursor] {
        match self {
            Cursors::One(one) => one,
            Cursors::Many(many) => many,
        }
    }
}

impl Cursors {
    fn new(mut cursors: Vec<Cursor>) -> Cursors {
        match cursors.len() {
            1 => Cursors::One([cursors.remove(0)]),
            _ => Cursors::Many(cursors),
        }
    }
}

/// A batch job between two attempts.
#[derive(Clone, Debug, Default)]
pub(crate) struct JobCursor {
    /// The run the job is on, among its runs.
    run: usize,
    /// The attempts of this run so far (0: the run has not started).
    attempt: u32,
    /// The crashes of this run so far.
    crashes: u32,
    /// A failed attempt waiting for the scheduler's retry.
    retry: Option<Retry>,
    /// For each `rerun_noop` requirement on this run: its table's rows when the run started.
    before: Vec<(usize, Vec<Row>)>,
}

/// A failed attempt, retried at `at_s`.
#[derive(Clone, Copy, Debug, Hash)]
pub(crate) struct Retry {
    crashed: bool,
    at_s: i64,
}

/// A stream consumer: before it starts (`None`), or reading.
#[derive(Clone, Debug, Default)]
pub(crate) struct StreamCursor {
    consume: Option<Consume>,
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

/// A sender and the consumer it feeds, between two sends.
#[derive(Clone, Debug, Default)]
pub(crate) struct SenderCursor {
    /// The message being sent.
    i: usize,
    /// The sends of this message so far (0: not sent yet).
    attempt: u32,
    /// When the sender last heard silence for this message, if it is waiting to act on it.
    silence_at: Option<i64>,
    /// The consumer's memory of keys (in-memory dedupe).
    memory: VecDeque<Value>,
}

/// Everything of a paused run but the warehouse, which goes back through its journal.
#[derive(Clone, Debug)]
pub(crate) struct Saved {
    cursors: Cursors,
    journal: usize,
    pub(crate) next_point: u32,
    used: u32,
    clock_s: i64,
    /// Which requirements were missed, when the search saved the state (untraced, a miss is
    /// only a yes or a no).
    missed: Missed,
    peaks: Vec<Decimal>,
    unfinished: Option<String>,
    steps: u64,
    at_mark: bool,
}

/// Which requirements a saved state had missed: a bit each, in one word for up to 64
/// requirements, so that saving a state allocates nothing for them.
#[derive(Clone, Debug)]
enum Missed {
    Bits(u64),
    Many(Vec<bool>),
}

impl Missed {
    fn of(misses: &[Option<Miss>]) -> Missed {
        if misses.len() <= 64 {
            Missed::Bits(
                misses
                    .iter()
                    .enumerate()
                    .fold(0, |bits, (i, m)| bits | (u64::from(m.is_some()) << i)),
            )
        } else {
            Missed::Many(misses.iter().map(Option::is_some).collect())
        }
    }

    fn get(&self, i: usize) -> bool {
        match self {
            Missed::Bits(bits) => bits >> i & 1 == 1,
            Missed::Many(many) => many[i],
        }
    }
}

/// How long a sender waits for an ack before it acts on the silence.
const SENDER_TIMEOUT_S: i64 = 30;

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
    /// Per requirement, what readers have seen so far: the greatest total for a
    /// `never_drops`, one once a row has matched for a `never_seen` from the first row, zero
    /// for the others.
    peaks: Vec<Decimal>,
    unfinished: Option<String>,
    steps: u64,
    /// Steps simulated over the life of this simulator, across every resumed run.
    pub(crate) work: u64,
    /// Set when the last choice point injected a failure, so the next trace entry shows it.
    failing: bool,
    /// Each stage's place in its work, in the model's order of stages.
    cursors: Cursors,
    /// Whether the run stops at the next mark once its plan is done.
    pausing: bool,
    /// Set when resuming at a mark, which is not a place to stop again.
    skip_mark: bool,
    /// Whether the state is one the run stopped at (a mark), not the start.
    at_mark: bool,
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
            sim.end_tables()
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

    /// The tables as they are, each sorted, as a clean run's end keeps them.
    fn end_tables(&self) -> Vec<Vec<Row>> {
        self.wh.tables.iter().map(Table::sorted_rows).collect()
    }

    /// The end of a run that had no failure, for the runs that compare with it.
    pub(crate) fn clean_end(&self) -> Clean {
        Clean::new(self.m, self.end_tables())
    }

    /// A simulator at the start of the run.
    pub(crate) fn new(m: &'a Model, offers: Offers, trace: Trace) -> Self {
        let (tracing, dialect) = match trace {
            Trace::Off => (false, Dialect::Display),
            Trace::In(dialect) => (true, dialect),
        };
        let cursors = m
            .stages
            .iter()
            .map(|stage| match stage {
                StageModel::Job(_) => Cursor::Job(JobCursor::default()),
                StageModel::Stream(_) => Cursor::Stream(StreamCursor::default()),
                StageModel::Sender(_) => Cursor::Sender(SenderCursor::default()),
            })
            .collect();
        let cursors = Cursors::new(cursors);
        let mut sim = Sim {
            m,
            plan: Vec::new(),
            plan_pos: 0,
            next_point: 0,
            used: 0,
            record: offers,
            offers: Vec::new(),
            wh: m.initial.clone(),
            clock_s: 0,
            tracing,
            dialect,
            trace: Vec::new(),
            failure_words: Vec::new(),
            faults: Vec::new(),
            misses: vec![None; m.checks.len()],
            // Only a model with a `never_drops` requirement, or a `never_seen` from the first
            // row, keeps what readers saw.
            peaks: if m.checks.iter().any(|c| {
                matches!(
                    c,
                    CCheck::NeverDrops { .. }
                        | CCheck::NeverSeen {
                            from_first_row: true,
                            ..
                        }
                )
            }) {
                vec![Decimal::ZERO; m.checks.len()]
            } else {
                Vec::new()
            },
            unfinished: None,
            steps: 0,
            work: 0,
            failing: false,
            cursors,
            pausing: false,
            skip_mark: false,
            at_mark: false,
            paused: false,
            step_cap: step_cap(m),
        };
        sim.clock_s = (0..m.stages.len())
            .filter_map(|k| sim.next_time(k))
            .min()
            .unwrap_or_default();
        sim.observe();
        sim
    }

    /// A simulator for the exhaustive search: untraced, recording offers, stopping at every
    /// mark once its plan is done, and able to go back to any saved state.
    pub(crate) fn searching(m: &'a Model) -> Self {
        let mut sim = Sim::new(m, Offers::Record, Trace::Off);
        sim.pausing = true;
        // A batch job alone stops at a mark once per scheduled run: hashing the tables there
        // costs less than keeping their hash with every row written.
        let job_alone = matches!(m.stages.as_slice(), [StageModel::Job(_)]);
        sim.wh.keep_journal(!job_alone);
        sim
    }

    /// Runs on from where the simulator is, injecting `plan` (absolute choice points), up to
    /// the next mark after the plan (when pausing) or the end. Returns whether the run ended.
    pub(crate) fn advance(&mut self, plan: Vec<(u32, Fault)>, clean: Option<&Clean>) -> bool {
        self.plan = plan;
        self.plan_pos = 0;
        self.paused = false;
        self.offers.clear();
        self.skip_mark = self.at_mark;
        let steps = self.steps;
        self.take_turns();
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

    /// The stages take turns, one iteration at a time, until every stage is done, the run is
    /// too long, or it pauses at a mark: the top of an iteration that starts a stage's unit of
    /// work (a run, a message).
    fn take_turns(&mut self) {
        // The model outlives the simulator's borrow of itself, so each stage's own model can
        // be handed to its iteration alongside `&mut self`.
        let m: &'a Model = self.m;
        while let Some((k, at)) = self.next_stage() {
            if self.starts_unit(k) && self.pause_here() {
                return;
            }
            if self.too_long() {
                return;
            }
            if self.clock_s < at {
                self.clock_s = at;
            }
            match &m.stages[k] {
                StageModel::Job(b) => self.job_iteration(k, b),
                StageModel::Stream(s) => self.stream_iteration(k, s),
                StageModel::Sender(s) => self.sender_iteration(k, s),
            }
            debug_assert!(
                !self.wh.in_transaction(),
                "an iteration closes its transactions before another stage acts"
            );
        }
    }

    /// The stage whose next event comes first (the earlier stage on a tie), with the time of
    /// that event, if any stage has one.
    #[inline]
    fn next_stage(&self) -> Option<(usize, i64)> {
        if self.cursors.len() == 1 {
            return self.next_time(0).map(|t| (0, t));
        }
        (0..self.cursors.len())
            .filter_map(|k| self.next_time(k).map(|t| (t, k)))
            .min()
            .map(|(t, k)| (k, t))
    }

    /// When stage `k` acts next, or `None` when it is done.
    #[inline]
    fn next_time(&self, k: usize) -> Option<i64> {
        match (&self.m.stages[k], &self.cursors[k]) {
            (StageModel::Job(b), Cursor::Job(c)) => {
                let run = b.runs.get(c.run)?;
                Some(match c.retry {
                    Some(retry) => retry.at_s,
                    None => run.start.and_utc().timestamp(),
                })
            }
            (StageModel::Stream(s), Cursor::Stream(c)) => match &c.consume {
                None => Some(s.start.and_utc().timestamp()),
                Some(c) => {
                    let &message = c.stream.1.get(c.pos)?;
                    Some(s.messages[message].arrival_s)
                }
            },
            (StageModel::Sender(s), Cursor::Sender(c)) => {
                let message = s.messages.get(c.i)?;
                Some(match c.silence_at {
                    Some(at) => at + SENDER_TIMEOUT_S,
                    None => message.arrival_s,
                })
            }
            _ => unreachable!("each stage has a cursor of its kind"),
        }
    }

    /// Whether stage `k`'s next iteration starts a unit of its work: a run, a message of the
    /// stream, a message to send. Only there does a run stop at a mark.
    #[inline]
    fn starts_unit(&self, k: usize) -> bool {
        match &self.cursors[k] {
            Cursor::Job(c) => c.attempt == 0,
            Cursor::Stream(c) => c.consume.is_some(),
            Cursor::Sender(c) => c.attempt == 0,
        }
    }

    /// Failures used so far.
    pub(crate) fn used(&self) -> u32 {
        self.used
    }

    /// Whether a failure can still be injected (the bound is not used up).
    pub(crate) fn may_fail(&self) -> bool {
        self.used < self.m.bound
    }

    /// Whether the run stops here, at a mark. A run resumed at a mark does not stop there
    /// again.
    #[inline]
    fn pause_here(&mut self) -> bool {
        if !self.pausing || std::mem::take(&mut self.skip_mark) || self.plan_pos < self.plan.len() {
            return false;
        }
        self.paused = true;
        self.at_mark = true;
        true
    }

    pub(crate) fn save(&self) -> Saved {
        Saved {
            cursors: self.cursors.clone(),
            journal: self.wh.mark(),
            next_point: self.next_point,
            used: self.used,
            clock_s: self.clock_s,
            missed: Missed::of(&self.misses),
            peaks: self.peaks.clone(),
            unfinished: self.unfinished.clone(),
            steps: self.steps,
            at_mark: self.at_mark,
        }
    }

    pub(crate) fn restore(&mut self, saved: &Saved) {
        self.wh.undo_to(saved.journal);
        self.cursors.clone_from(&saved.cursors);
        self.next_point = saved.next_point;
        self.used = saved.used;
        self.clock_s = saved.clock_s;
        for (i, miss) in self.misses.iter_mut().enumerate() {
            let missed = saved.missed.get(i);
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
        self.peaks.clone_from(&saved.peaks);
        self.unfinished.clone_from(&saved.unfinished);
        self.steps = saved.steps;
        self.at_mark = saved.at_mark;
        self.failing = false;
    }

    /// A 128-bit fingerprint of everything the rest of the run can depend on: two states with
    /// the same fingerprint have the same future under the same later failures. Choice points
    /// are counted from here, so the point number is not part of it. The clock is, where the
    /// design reads it (a batch job) or where stages take turns by it, and so is the step
    /// count, where a run could reach its cap ([`step_cap`]).
    pub(crate) fn fingerprint(&self, with_clock: bool, with_steps: bool) -> u128 {
        use std::hash::{Hash, Hasher};
        let mut f = crate::fingerprint::Fingerprint::new(0xc3);
        for cursor in self.cursors.iter() {
            match cursor {
                Cursor::Job(c) => {
                    (
                        4u8,
                        c.run,
                        c.attempt,
                        c.crashes,
                        c.retry.map(|r| (r.crashed, r.at_s)),
                    )
                        .hash(&mut f);
                    for (check, rows) in &c.before {
                        check.hash(&mut f);
                        for row in rows {
                            f.values(row.iter());
                        }
                    }
                }
                Cursor::Stream(c) => match &c.consume {
                    None => f.write_u8(0),
                    Some(c) => {
                        (2u8, &c.stream.0, c.pos, c.broker_offset).hash(&mut f);
                        f.values(c.memory.iter());
                    }
                },
                Cursor::Sender(c) => {
                    (3u8, c.i, c.attempt, c.silence_at).hash(&mut f);
                    f.values(c.memory.iter());
                }
            }
        }
        let contents = self.wh.contents_fingerprint();
        f.write_u64(contents as u64);
        f.write_u64((contents >> 64) as u64);
        for &offset in &self.wh.stored_offsets {
            f.write_u64(offset);
        }
        // The failures used and which requirements were missed, 64 at a time, in as few
        // writes as the hasher takes.
        let mut word = u64::from(self.used);
        let mut bit = 32;
        for miss in &self.misses {
            if bit == 64 {
                f.write_u64(word);
                word = 0;
                bit = 0;
            }
            word |= u64::from(miss.is_some()) << bit;
            bit += 1;
        }
        f.write_u64(word);
        if !self.peaks.is_empty() {
            self.peaks.hash(&mut f);
        }
        match &self.unfinished {
            None => f.write_u8(0),
            Some(why) => {
                f.write_u8(1);
                why.hash(&mut f);
            }
        }
        if with_clock {
            f.write_i64(self.clock_s);
        }
        if with_steps {
            f.write_u64(self.steps);
        }
        f.finish128()
    }

    /// A choice point: returns the failure the plan injects here, if any, and otherwise
    /// records which failures could be injected.
    #[inline]
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
            Mutation::None | Mutation::StaleUpstream => self.wh.rollback(),
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

    #[inline]
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

    /// Looks at the committed state as a reader would, for `never_seen` and `never_drops`
    /// requirements.
    fn observe(&mut self) {
        if self.wh.in_transaction() {
            return;
        }
        for (i, check) in self.m.checks.iter().enumerate() {
            if let CCheck::NeverDrops {
                table,
                column,
                filter,
            } = check
            {
                self.observe_total(i, *table, *column, filter);
                continue;
            }
            let CCheck::NeverSeen {
                table,
                filter,
                rows,
                column,
                value,
                from_first_row,
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
            // From the first row: until a row matches, a reader has seen nothing wrong; the
            // first one starts the check for the rest of the run (kept with the totals, so
            // the search's state holds it).
            if *from_first_row && self.peaks[i].is_zero() {
                if matching.is_empty() {
                    continue;
                }
                self.peaks[i] = Decimal::ONE;
            }
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

    /// A `never_drops` requirement: the total a reader sees now, against the greatest one
    /// seen before.
    fn observe_total(
        &mut self,
        i: usize,
        table: usize,
        column: usize,
        filter: &[crate::model::Cond],
    ) {
        if self.misses[i].is_some() {
            return;
        }
        let total = crate::model::sum(&self.wh.tables[table].rows, column, filter);
        if total >= self.peaks[i] {
            self.peaks[i] = total;
            return;
        }
        let t = &self.wh.tables[table];
        let tables = self.tracing.then(|| self.view());
        let seen = if t.rows.iter().any(|r| eval(r, filter)) {
            total.to_string()
        } else {
            "no row".to_string()
        };
        self.misses[i] = Some(Miss {
            expected: format!(
                "{} of {} never below {} once a reader saw it",
                t.columns[column], t.name, self.peaks[i]
            ),
            actual: format!("a reader saw {seen}"),
            step: self.step_no(),
            tables,
            diff: None,
        });
    }

    /// Writes one row (a message's) to its sink, copying it only where the table keeps it.
    fn write_row(&mut self, sink: &Sink, row: std::borrow::Cow<'_, Row>) -> Affected {
        let (t, key) = (sink.table, &sink.key);
        match sink.write {
            WriteMode::Append | WriteMode::DeleteInsert => self.wh.insert_one(t, row.into_owned()),
            WriteMode::Merge => self.wh.merge_one(t, key, row),
            WriteMode::InsertIgnore => self.wh.insert_ignore_one(t, key, row),
            WriteMode::MergeIfNewer => {
                let version = sink
                    .version
                    .expect("a valid design's merge_if_newer names a version");
                self.wh.merge_if_newer_one(t, key, version, row)
            }
        }
    }

    fn write_rows(&mut self, sink: &Sink, rows: Vec<Row>) -> Result<Affected, SqlError> {
        match sink.write {
            WriteMode::Append | WriteMode::DeleteInsert => Ok(self.wh.insert(sink.table, rows)),
            WriteMode::Merge => self.wh.merge(sink.table, &sink.key, rows),
            WriteMode::InsertIgnore => Ok(self.wh.insert_ignore(sink.table, &sink.key, rows)),
            WriteMode::MergeIfNewer => {
                let version = sink
                    .version
                    .expect("a valid design's merge_if_newer names a version");
                self.wh.merge_if_newer(sink.table, &sink.key, version, rows)
            }
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
