//! The exhaustive check: every failure schedule up to the scenario's bound, each run to the
//! end, and per requirement the shortest schedule that breaks it.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use sha2::{Digest, Sha256};

use crate::compiled::Compiled;
use crate::design::{validate_json, DesignError, ValidDesign};
pub use crate::model::Mutation;
use crate::scenario::Scenario;

use crate::model::Model;
use crate::run::{step_cap, Clean, Fault, Offers, Outcome, Saved, Sim, Trace};
use crate::sql::Dialect;
use crate::verdict::{Counterexample, RequirementVerdict, Verdict};

/// Limits on one check, so that a hostile scenario cannot make it run for ever.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_schedules: u64,
    /// The most simulated steps over all schedules of one check.
    pub max_steps: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_schedules: 2_000_000,
            max_steps: 400_000_000,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// The design is not valid for the scenario.
    Design(Vec<DesignError>),
    /// The check would explore more than the limits allow.
    TooLarge { schedules: u64, limit: String },
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckError::Design(errors) => {
                write!(f, "the design is not valid:")?;
                for e in errors {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
            CheckError::TooLarge { schedules, limit } => write!(
                f,
                "the check stopped after {schedules} schedules: it exceeds {limit}"
            ),
        }
    }
}

/// sha256 of the scenario's canonical JSON.
pub fn scenario_hash(scenario: &Scenario) -> String {
    let bytes = serde_json::to_vec(scenario).expect("a scenario always serialises");
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Validates design JSON for a scenario and checks it.
pub fn check_json(scenario: &Compiled, design: &serde_json::Value) -> Result<Verdict, CheckError> {
    let valid = validate_json(scenario, design).map_err(CheckError::Design)?;
    check(scenario, &valid)
}

pub fn check(scenario: &Compiled, design: &ValidDesign) -> Result<Verdict, CheckError> {
    check_with(scenario, design, Limits::default())
}

type Plan = Vec<(u32, Fault)>;

/// Depth-first enumeration of every schedule up to the model's bound, in lexicographic order
/// of (choice point, failure): each schedule is run once, untraced, and handed to `visit`.
/// Returns the number of schedules explored. The descent keeps its own stack (one level per
/// failure), so a large bound ends at a limit, never in a stack overflow.
fn explore(
    model: &Model,
    clean: &Clean,
    limits: Limits,
    visit: &mut dyn FnMut(&Plan, &Outcome),
) -> Result<u64, CheckError> {
    let mut explored: u64 = 0;
    let mut steps: u64 = 0;
    let mut plan: Plan = Vec::new();
    let mut run = |plan: &Plan, explored: &mut u64, steps: &mut u64| {
        let outcome: Outcome = Sim::run(model, plan, Offers::Record, Trace::Off, Some(clean));
        *explored += 1;
        *steps += outcome.steps;
        visit(plan, &outcome);
        outcome.offers
    };
    // Per level, the failures offered after the plan up to it, and the next one to try.
    let mut stack: Vec<(Vec<(u32, Fault)>, usize)> =
        vec![(run(&plan, &mut explored, &mut steps), 0)];
    while let Some((offers, next)) = stack.last_mut() {
        let Some(&offer) = offers.get(*next) else {
            stack.pop();
            plan.pop();
            continue;
        };
        *next += 1;
        let exceeded = if explored >= limits.max_schedules {
            Some(format!("the limit of {} schedules", limits.max_schedules))
        } else if steps >= limits.max_steps {
            Some(format!("the limit of {} simulated steps", limits.max_steps))
        } else {
            None
        };
        if let Some(limit) = exceeded {
            return Err(CheckError::TooLarge {
                schedules: explored,
                limit,
            });
        }
        plan.push(offer);
        let offers = run(&plan, &mut explored, &mut steps);
        stack.push((offers, 0));
    }
    Ok(explored)
}

fn clean_run(model: &Model) -> Clean {
    let tables = Sim::run(model, &[], Offers::Ignore, Trace::Off, None).end_tables;
    Clean::new(model, tables)
}

/// One schedule as the conformance runner replays it: its failures and its traced run.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// The failures as (choice point, kind), in the form `replay` takes.
    pub faults: Vec<(u32, String)>,
    pub trace: Vec<crate::verdict::TraceEntry>,
}

/// Calls `f` with every schedule the check of this design explores, traced with SQL of the
/// given dialect, in the check's order. Returns the number of schedules.
pub fn for_each_schedule(
    scenario: &Compiled,
    design: &ValidDesign,
    dialect: Dialect,
    limits: Limits,
    f: &mut dyn FnMut(Schedule),
) -> Result<u64, CheckError> {
    for_each_schedule_of(scenario, design, dialect, limits, Mutation::None, f)
}

/// As `for_each_schedule`, under a deliberately wrong model (for testing the conformance
/// runner).
pub fn for_each_schedule_of(
    scenario: &Compiled,
    design: &ValidDesign,
    dialect: Dialect,
    limits: Limits,
    mutation: Mutation,
    f: &mut dyn FnMut(Schedule),
) -> Result<u64, CheckError> {
    let mut model = Model::compile(scenario, design);
    model.mutation = mutation;
    let clean = clean_run(&model);
    explore(&model, &clean, limits, &mut |plan, _| {
        let traced = Sim::run(
            &model,
            plan,
            Offers::Ignore,
            Trace::In(dialect),
            Some(&clean),
        );
        let faults = plan
            .iter()
            .map(|(point, fault)| {
                let kind = match fault {
                    Fault::Redelivery { after } => format!("redelivery:{after}"),
                    other => other.kind().to_string(),
                };
                (*point, kind)
            })
            .collect();
        f(Schedule {
            faults,
            trace: traced.trace,
        });
    })
}

/// Checks a design under every failure schedule the scenario allows, within `limits`.
pub fn check_with(
    scenario: &Compiled,
    design: &ValidDesign,
    limits: Limits,
) -> Result<Verdict, CheckError> {
    check_hashed(
        scenario,
        &scenario_hash(scenario.scenario()),
        design,
        limits,
    )
}

/// As `check_with`, for a caller that keeps the scenario's hash (`scenario_hash`), which
/// otherwise costs a serialisation of the whole scenario per check.
pub fn check_hashed(
    scenario: &Compiled,
    hash: &str,
    design: &ValidDesign,
    limits: Limits,
) -> Result<Verdict, CheckError> {
    let counted = crate::coverage::counted_kinds(&scenario.scenario().failures);
    let (mut verdict, without) = graded(scenario, hash, design, limits, &counted)?;
    annotate(scenario, design, &mut verdict, &without, limits);
    Ok(verdict)
}

/// Fills in the verdict's coverage and advisories, checking the variants within the check's
/// limits (`Variants::within`).
fn annotate(
    scenario: &Compiled,
    design: &ValidDesign,
    verdict: &mut Verdict,
    without: &[u64],
    limits: Limits,
) {
    crate::coverage::annotate(
        scenario,
        design,
        verdict,
        without,
        &Variants::within(limits),
    );
}

/// As `check_hashed`, without the verdict's `coverage` and `advisories` (left empty): the
/// graded part alone, at the cost of one search. For a preview that shows only the score (it
/// passes no hash, so the app carries neither the scenario's serialisation nor sha256), and
/// for comparing the two.
pub fn check_graded(
    scenario: &Compiled,
    hash: &str,
    design: &ValidDesign,
    limits: Limits,
) -> Result<Verdict, CheckError> {
    graded(scenario, hash, design, limits, &[]).map(|(verdict, _)| verdict)
}

/// The graded verdict, and per failure kind of `counted` how many of its schedules have no
/// failure of that kind.
fn graded(
    scenario: &Compiled,
    hash: &str,
    design: &ValidDesign,
    limits: Limits,
    counted: &[&'static str],
) -> Result<(Verdict, Vec<u64>), CheckError> {
    let model = Model::compile(scenario, design);
    let ask = Ask {
        count_without: counted,
        stop_beyond: None,
    };
    let Ended::All(found) = Search::run(&model, limits, ask)? else {
        unreachable!("a search that stops at nothing runs to its end");
    };
    let mut verdict = verdict(scenario, &model, &found.clean, found.schedules, &found.best);
    verdict.scenario_hash = hash.to_string();
    Ok((verdict, found.without))
}

/// As `check_with`, but runs every schedule from the start, one after the other, with nothing
/// shared between them: the plain enumeration the search must agree with, byte for byte.
#[doc(hidden)]
pub fn check_every_schedule(
    scenario: &Compiled,
    design: &ValidDesign,
    limits: Limits,
) -> Result<Verdict, CheckError> {
    let model = Model::compile(scenario, design);
    let clean = clean_run(&model);
    // Per requirement, the shortest failing plan: the search is depth-first in lexicographic
    // order, so the first failing plan of a given length is the one whose failures come
    // earliest, and only a strictly shorter one replaces it.
    let mut best: Vec<Option<Plan>> = vec![None; scenario.scenario().requirements.len()];
    let counted = crate::coverage::counted_kinds(&scenario.scenario().failures);
    let mut without = vec![0u64; counted.len()];
    let explored = explore(&model, &clean, limits, &mut |plan, outcome| {
        for (i, miss) in outcome.misses.iter().enumerate() {
            if miss.is_some() && best[i].as_ref().is_none_or(|b| plan.len() < b.len()) {
                best[i] = Some(plan.clone());
            }
        }
        for (n, kind) in without.iter_mut().zip(&counted) {
            if plan.iter().all(|(_, f)| f.kind() != *kind) {
                *n += 1;
            }
        }
    })?;
    let mut verdict = verdict(scenario, &model, &clean, explored, &best);
    verdict.scenario_hash = scenario_hash(scenario.scenario());
    // The schedules per failure kind are counted schedule by schedule here; the variants of
    // coverage and advisories come from the search in both checks: they are the same either
    // way, and the plain enumeration would repeat each variant schedule by schedule.
    annotate(scenario, design, &mut verdict, &without, limits);
    Ok(verdict)
}

/// The verdict, with each missed requirement's plan replayed traced.
fn verdict(
    scenario: &Compiled,
    model: &Model,
    clean: &Clean,
    explored: u64,
    best: &[Option<Plan>],
) -> Verdict {
    let file = scenario.scenario();
    let mut requirements = Vec::with_capacity(file.requirements.len());
    let mut traced: BTreeMap<Plan, Outcome> = BTreeMap::new();
    for (i, req) in file.requirements.iter().enumerate() {
        let counterexample = best[i].as_ref().map(|plan| {
            let outcome = traced.entry(plan.clone()).or_insert_with(|| {
                Sim::run(
                    model,
                    plan,
                    Offers::Ignore,
                    Trace::In(Dialect::Display),
                    Some(clean),
                )
            });
            let miss = outcome.misses[i]
                .clone()
                .expect("a traced replay misses what the search saw it miss");
            let last = outcome.trace.len() as u32;
            Counterexample {
                failures: outcome.failure_words.clone(),
                faults: outcome.faults.clone(),
                trace: outcome.trace.clone(),
                went_wrong_at: if miss.step == 0 {
                    last.min(1)
                } else {
                    miss.step
                },
                expected: miss.expected,
                actual: miss.actual,
                tables: miss.tables.unwrap_or_default(),
                diff: miss.diff,
            }
        });
        requirements.push(RequirementVerdict {
            id: req.id.clone(),
            text: req.text.clone(),
            passed: counterexample.is_none(),
            counterexample,
        });
    }
    // Each requirement is worth its points (1 unless the scenario says otherwise).
    let points = |i: usize| file.requirements[i].points;
    let score = (0..requirements.len())
        .filter(|&i| requirements[i].passed)
        .map(points)
        .sum();
    let max_score = (0..requirements.len()).map(points).sum();
    Verdict {
        scenario: file.id.clone(),
        scenario_hash: String::new(),
        passed: requirements.iter().all(|r| r.passed),
        score,
        max_score,
        schedules_explored: explored,
        requirements,
        coverage: Default::default(),
        advisories: Default::default(),
    }
}

/// The check of a variant (another option value, other failures) for coverage and
/// advisories: the search with the check's limits, and the verdict without coverage.
struct Variants {
    limits: Limits,
}

/// The most one search for coverage or an advisory may cover. They are never graded, so they
/// may not make a check cost more than a bounded amount of work, whatever the check's own
/// limits (a variant adds failures, and at a large bound its schedules grow much faster than
/// the scenario's own); a variant past them is reported as not explored.
const VARIANT_SCHEDULES_MAX: u64 = 100_000;
const VARIANT_STEPS_MAX: u64 = 1_000_000;

impl Variants {
    fn within(limits: Limits) -> Variants {
        Variants {
            limits: Limits {
                max_schedules: limits.max_schedules.min(VARIANT_SCHEDULES_MAX),
                max_steps: limits.max_steps.min(VARIANT_STEPS_MAX),
            },
        }
    }
}

impl crate::coverage::Checker for Variants {
    fn differs(
        &self,
        scenario: &Compiled,
        design: &ValidDesign,
        missed: &[bool],
    ) -> Result<bool, String> {
        let model = Model::compile(scenario, design);
        let ask = Ask {
            count_without: &[],
            stop_beyond: Some(missed),
        };
        match Search::run(&model, self.limits, ask).map_err(|e| e.to_string())? {
            Ended::NewMiss => Ok(true),
            Ended::All(found) => Ok(found
                .best
                .iter()
                .map(Option::is_some)
                .ne(missed.iter().copied())),
        }
    }

    fn verdict(&self, scenario: &Compiled, design: &ValidDesign) -> Result<Verdict, String> {
        let model = Model::compile(scenario, design);
        let Ended::All(found) =
            Search::run(&model, self.limits, Ask::default()).map_err(|e| e.to_string())?
        else {
            unreachable!("a search that stops at nothing runs to its end");
        };
        Ok(verdict(
            scenario,
            &model,
            &found.clean,
            found.schedules,
            &found.best,
        ))
    }
}

/// What a set of schedules that share a beginning amounts to: how many there are and, per
/// requirement, the best plan that misses it. Plans are counted from a state: choice point 0
/// is the state's next one. The plans are shared between summaries, with their choice points
/// moved by `shift`, so that moving a summary to an earlier state allocates nothing.
#[derive(Clone, Debug)]
struct Summary {
    schedules: u64,
    shift: u32,
    best: Rc<Vec<Option<Plan>>>,
    /// Per failure kind the search counts ([`Search::counted`]), how many of these schedules
    /// have no failure of that kind. Empty when the search counts none.
    without: Box<[u64]>,
}

/// The order of counterexamples: fewer failures first, then the failures that come earliest
/// (which is the order in which a depth-first search in choice-point order meets them). Plans
/// are compared with their choice points moved by their shifts. True when `a` comes first.
fn better(a: &Plan, a_shift: u32, b: &Plan, b_shift: u32) -> bool {
    if a.len() != b.len() {
        return a.len() < b.len();
    }
    let a = a.iter().map(|&(p, f)| (p + a_shift, f));
    let b = b.iter().map(|&(p, f)| (p + b_shift, f));
    a.lt(b)
}

impl Summary {
    /// `without`, once the failures `before` come first: a kind among them leaves no
    /// schedule without it.
    fn without_behind(&self, before: &[(u32, Fault)], counted: &[&str]) -> Box<[u64]> {
        self.without
            .iter()
            .zip(counted)
            .map(|(&n, kind)| {
                if before.iter().any(|(_, f)| f.kind() == *kind) {
                    0
                } else {
                    n
                }
            })
            .collect()
    }

    fn plans(&self) -> impl Iterator<Item = Option<Plan>> + '_ {
        self.best.iter().map(|plan| {
            plan.as_ref()
                .map(|plan| plan.iter().map(|&(p, f)| (p + self.shift, f)).collect())
        })
    }

    /// The same schedules seen from `by` choice points earlier, behind the failures `before`.
    /// `counted` names the failure kinds of `without`.
    fn behind(&self, by: u32, before: &[(u32, Fault)], counted: &[&str]) -> Summary {
        let without = if before.is_empty() {
            self.without.clone()
        } else {
            self.without_behind(before, counted)
        };
        if before.is_empty() || self.best.iter().all(Option::is_none) {
            return Summary {
                schedules: self.schedules,
                shift: self.shift + by,
                best: self.best.clone(),
                without,
            };
        }
        let best = self
            .best
            .iter()
            .map(|plan| {
                plan.as_ref().map(|plan| {
                    before
                        .iter()
                        .copied()
                        .chain(plan.iter().map(|&(p, f)| (p + self.shift + by, f)))
                        .collect()
                })
            })
            .collect();
        Summary {
            schedules: self.schedules,
            shift: 0,
            best: Rc::new(best),
            without,
        }
    }

    fn absorb(&mut self, other: Summary) {
        self.schedules = self.schedules.saturating_add(other.schedules);
        for (mine, theirs) in self.without.iter_mut().zip(other.without.iter()) {
            *mine = mine.saturating_add(*theirs);
        }
        let wins = |(mine, theirs): (&Option<Plan>, &Option<Plan>)| match (mine, theirs) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(m), Some(t)) => better(t, other.shift, m, self.shift),
        };
        if !self.best.iter().zip(other.best.iter()).any(wins) {
            return;
        }
        let mut best: Vec<Option<Plan>> = self.plans().collect();
        for (mine, theirs) in best.iter_mut().zip(other.plans()) {
            if let Some(theirs) = theirs {
                if mine.as_ref().is_none_or(|m| better(&theirs, 0, m, 0)) {
                    *mine = Some(theirs);
                }
            }
        }
        self.shift = 0;
        self.best = Rc::new(best);
    }
}

/// The memo's keys are fingerprints already, so its hasher passes them through.
#[derive(Clone, Copy, Default)]
struct PassThrough(u64);

impl std::hash::Hasher for PassThrough {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u128(&mut self, i: u128) {
        self.0 = i as u64;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// What a whole search found.
struct Found {
    /// The end of the run with no failure, which the search met first.
    clean: Clean,
    /// The schedules covered.
    schedules: u64,
    /// Per requirement, the best plan that misses it.
    best: Vec<Option<Plan>>,
    /// Per failure kind of [`Ask::count_without`], the schedules with no failure of it.
    without: Vec<u64>,
}

/// What a search is asked besides each requirement's best plan.
#[derive(Clone, Copy, Default)]
struct Ask<'a> {
    /// Failure kinds (as `Fault::kind` names them) to count the schedules without: the same
    /// number as a search of the scenario with that kind switched off would cover.
    count_without: &'a [&'static str],
    /// Requirements already known to be missed: the search stops at the first schedule that
    /// misses any other, which is all a comparison with a known result needs to know.
    stop_beyond: Option<&'a [bool]>,
}

/// How a search ended.
enum Ended {
    /// Every schedule was covered.
    All(Found),
    /// A schedule missed a requirement outside `Ask::stop_beyond`.
    NewMiss,
}

type Memo = HashMap<u128, Summary, std::hash::BuildHasherDefault<PassThrough>>;

/// The exhaustive search, sharing work between schedules in two ways:
/// - *Shared prefixes.* Schedules that agree up to a choice point share the run up to it: the
///   search runs on from a saved state and goes back to it through the warehouse's journal,
///   instead of replaying each schedule from the start.
/// - *Merged states.* A run stops at marks, the top of each iteration of its loop. When the
///   state there (tables, offsets, the consumer's memory, failures used, requirements already
///   missed…) was met before, everything that can follow it is known already: the number of
///   schedules and, per requirement, the best failing continuation. States are identified by
///   a 128-bit fingerprint, as model checkers do.
///
/// The result is the plain enumeration's (`check_every_schedule`), byte for byte: the same
/// schedules counted, and per requirement the same counterexample, since the best one is
/// chosen by an order, not by the order of the search.
struct Search<'m> {
    sim: Sim<'m>,
    /// The end of the run with no failure: the search's first run to the end is that run,
    /// and every later one compares with it.
    clean: Option<Clean>,
    limits: Limits,
    memo: Memo,
    with_clock: bool,
    with_steps: bool,
    /// Schedules accounted for so far: runs to the end, and those behind merged states.
    covered: u64,
    exceeded: Option<String>,
    segments: u64,
    merged: u64,
    /// The failure kinds whose schedules without them are counted (`Ask::count_without`).
    counted: Vec<&'static str>,
    /// `Ask::stop_beyond`.
    stop_beyond: Option<Vec<bool>>,
    /// Set when a schedule missed a requirement outside `stop_beyond`.
    new_miss: bool,
    /// The best plans of a leaf, one per set of requirements leaves missed so far.
    leaves: Vec<Rc<Vec<Option<Plan>>>>,
}

/// What a search did, for benchmarks and profiles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    /// Schedules covered (those the plain enumeration would run one by one).
    pub schedules: u64,
    /// Stretches of a run simulated, from one mark to the next (or the end).
    pub segments_run: u64,
    /// Simulated steps, over all segments.
    pub steps_simulated: u64,
    /// States remembered, with what follows them.
    pub states_kept: u64,
    /// Times a run reached a remembered state and stopped there.
    pub states_merged: u64,
}

/// Runs the check's search and tells what it did (the verdict aside).
pub fn search_stats(
    scenario: &Compiled,
    design: &ValidDesign,
    limits: Limits,
) -> Result<SearchStats, CheckError> {
    let model = Model::compile(scenario, design);
    let (result, stats) = Search::run_counted(&model, limits, Ask::default());
    result.map(|_| stats)
}

impl<'m> Search<'m> {
    fn run(model: &'m Model, limits: Limits, ask: Ask<'_>) -> Result<Ended, CheckError> {
        Search::run_counted(model, limits, ask).0
    }

    fn run_counted(
        model: &'m Model,
        limits: Limits,
        ask: Ask<'_>,
    ) -> (Result<Ended, CheckError>, SearchStats) {
        let mut search = Search {
            counted: ask.count_without.to_vec(),
            stop_beyond: ask.stop_beyond.map(<[bool]>::to_vec),
            new_miss: false,
            leaves: Vec::new(),
            sim: Sim::searching(model),
            clean: None,
            limits,
            memo: Memo::with_capacity_and_hasher(1024, Default::default()),
            with_clock: model.reads_clock(),
            // A run's cap is at least the model's most steps per run, so no run reaches it
            // and the step count never tells two states apart; kept so that a lower cap
            // stays correct.
            with_steps: model.max_run_steps() >= step_cap(model),
            covered: 0,
            exceeded: None,
            segments: 0,
            merged: 0,
        };
        let result = match search.onward() {
            Some(all) => Ok(Ended::All(Found {
                clean: search
                    .clean
                    .take()
                    .expect("a search that covers every schedule ran the one with no failure"),
                schedules: all.schedules,
                best: all.plans().collect(),
                without: all.without.to_vec(),
            })),
            None if search.new_miss => Ok(Ended::NewMiss),
            None => Err(CheckError::TooLarge {
                schedules: search.covered,
                limit: search.exceeded.clone().unwrap_or_default(),
            }),
        };
        let stats = SearchStats {
            schedules: search.covered,
            segments_run: search.segments,
            steps_simulated: search.sim.work,
            states_kept: search.memo.len() as u64,
            states_merged: search.merged,
        };
        (result, stats)
    }

    /// The schedule the simulator just ran to its end, with no failure yet. Notes a miss
    /// outside `stop_beyond`.
    fn leaf(&mut self) -> Summary {
        if let Some(known) = &self.stop_beyond {
            let misses = &self.sim.misses;
            if misses.iter().zip(known).any(|(m, &k)| m.is_some() && !k) {
                self.new_miss = true;
            }
        }
        // The leaves of one search miss one of a few sets of requirements: each set's plans
        // (every one empty) are made once and shared.
        let missed = &self.sim.misses;
        let same = |best: &Rc<Vec<Option<Plan>>>| {
            best.iter()
                .map(Option::is_some)
                .eq(missed.iter().map(Option::is_some))
        };
        let best = match self.leaves.iter().find(|b| same(b)) {
            Some(best) => Rc::clone(best),
            None => {
                let best: Rc<Vec<Option<Plan>>> = Rc::new(
                    missed
                        .iter()
                        .map(|m| m.as_ref().map(|_| Vec::new()))
                        .collect(),
                );
                self.leaves.push(Rc::clone(&best));
                best
            }
        };
        Summary {
            schedules: 1,
            shift: 0,
            best,
            without: vec![1; self.counted.len()].into_boxed_slice(),
        }
    }

    /// `None` once past a limit, or once a schedule missed a requirement outside
    /// `stop_beyond`.
    fn within_limits(&mut self) -> Option<()> {
        if self.new_miss {
            return None;
        }
        if self.exceeded.is_none() && self.covered > self.limits.max_schedules {
            self.exceeded = Some(format!(
                "the limit of {} schedules",
                self.limits.max_schedules
            ));
        }
        if self.exceeded.is_none() && self.sim.work >= self.limits.max_steps {
            self.exceeded = Some(format!(
                "the limit of {} simulated steps",
                self.limits.max_steps
            ));
        }
        self.exceeded.is_none().then_some(())
    }

    /// Every schedule that goes on from the simulator's state (the start, or a mark with no
    /// planned failure ahead), counted from its next choice point.
    ///
    /// The search descends one level per failure, so its depth is the scenario's bound: the
    /// descent keeps its own stack of frames instead of the thread's, and a large bound ends
    /// at a limit, never in a stack overflow. Each frame runs until it needs what follows a
    /// failure (it calls) or knows its summary (it returns).
    fn onward(&mut self) -> Option<Summary> {
        let mut stack: Vec<Frame> = Vec::new();
        let mut frame = Frame::Onward(Box::default());
        let mut input: Option<Summary> = None;
        loop {
            let next = match frame {
                Frame::Onward(f) => self.step_onward(f, input.take())?,
                Frame::Fail(f) => self.step_fail(f, input.take())?,
            };
            match next {
                Next::Return(summary) => match stack.pop() {
                    None => return Some(summary),
                    Some(parent) => {
                        frame = parent;
                        input = Some(summary);
                    }
                },
                Next::Call(me, call) => {
                    stack.push(me);
                    frame = call;
                }
            }
        }
    }

    /// Forward, with no failure, from mark to mark up to the end or a state met before; then
    /// backward, mark by mark: the schedules that fail first in a segment, then those that go
    /// on to the next mark without failing there. `input` is what a failure it called for
    /// amounts to.
    fn step_onward(&mut self, mut f: Box<OnwardFrame>, input: Option<Summary>) -> Option<Next> {
        if f.after.is_none() {
            let (after, after_point) = loop {
                // With no failure yet, a state has one way in: it is never met again.
                let key = (self.sim.used() > 0)
                    .then(|| self.sim.fingerprint(self.with_clock, self.with_steps));
                if let Some(known) = key.and_then(|key| self.memo.get(&key)) {
                    self.covered = self.covered.saturating_add(known.schedules);
                    self.merged += 1;
                    break (known.clone(), self.sim.next_point);
                }
                let point = self.sim.next_point;
                let saved = self.sim.may_fail().then(|| Rc::new(self.sim.save()));
                let ended = self.sim.advance(Vec::new(), self.clean.as_ref());
                self.segments += 1;
                if ended && self.clean.is_none() {
                    // The first run to the end is the one with no failure: the forward pass
                    // of the first frame.
                    debug_assert_eq!(self.sim.used(), 0);
                    self.clean = Some(self.sim.clean_end());
                }
                let offers = std::mem::take(&mut self.sim.offers);
                f.segments.push(Segment {
                    point,
                    saved,
                    key,
                    offers,
                });
                if ended {
                    self.covered += 1;
                    break (self.leaf(), self.sim.next_point);
                }
                self.within_limits()?;
            };
            self.within_limits()?;
            f.after = Some((after, after_point));
        }
        if let (Some(failing), Some(current)) = (input, f.current.as_mut()) {
            current.here.absorb(failing);
        }
        loop {
            if let Some(current) = f.current.as_mut() {
                let segment = &current.segment;
                if let Some(saved) = &segment.saved {
                    if let Some(&offer) = segment.offers.get(current.next_offer) {
                        current.next_offer += 1;
                        let call =
                            Frame::Fail(Box::new(FailFrame::new(Rc::clone(saved), vec![offer])));
                        return Some(Next::Call(Frame::Onward(f), call));
                    }
                }
                let Some(current) = f.current.take() else {
                    unreachable!("the current segment was just seen");
                };
                if let Some(key) = current.segment.key {
                    self.memo.insert(key, current.here.clone());
                }
                f.after = Some((current.here, current.segment.point));
            }
            let Some(segment) = f.segments.pop() else {
                let (after, _) = f.after.take().expect("the forward pass has run");
                return Some(Next::Return(after));
            };
            let (after, after_point) = f.after.as_ref().expect("the forward pass has run");
            let here = after.behind(after_point - segment.point, &[], &self.counted);
            f.current = Some(Current {
                segment,
                here,
                next_offer: 0,
            });
        }
    }

    /// Every schedule that goes on from the saved mark with exactly the failures `plan`
    /// (absolute choice points) before the next mark, and then any. `input` is what a call
    /// it made amounts to: first `onward` from where the failures led, then each further
    /// failure in the same segment.
    fn step_fail(&mut self, mut f: Box<FailFrame>, input: Option<Summary>) -> Option<Next> {
        if !f.started {
            f.started = true;
            self.sim.restore(&f.at);
            f.point = f.at.next_point;
            let ended = self.sim.advance(f.plan.clone(), self.clean.as_ref());
            self.segments += 1;
            f.offers = std::mem::take(&mut self.sim.offers);
            f.relative = f
                .plan
                .iter()
                .map(|&(p, fault)| (p - f.point, fault))
                .collect();
            if ended {
                self.covered += 1;
                f.all = Some(self.leaf().behind(0, &f.relative, &self.counted));
                self.within_limits()?;
            } else {
                self.within_limits()?;
                f.next = self.sim.next_point;
                let call = Frame::Onward(Box::default());
                return Some(Next::Call(Frame::Fail(f), call));
            }
        } else if let Some(summary) = input {
            match f.all.as_mut() {
                None => {
                    f.all = Some(summary.behind(f.next - f.point, &f.relative, &self.counted));
                    self.within_limits()?;
                }
                Some(all) => all.absorb(summary),
            }
        }
        if let Some(&offer) = f.offers.get(f.next_offer) {
            f.next_offer += 1;
            let mut more = f.plan.clone();
            more.push(offer);
            let call = Frame::Fail(Box::new(FailFrame::new(Rc::clone(&f.at), more)));
            return Some(Next::Call(Frame::Fail(f), call));
        }
        let all = f.all.take().expect("a failing segment has its summary");
        Some(Next::Return(all))
    }
}

/// A stretch of a run from one mark to the next, as the search's forward pass ran it.
struct Segment {
    point: u32,
    /// Only kept when a failure can still happen, to come back to.
    saved: Option<Rc<Saved>>,
    key: Option<u128>,
    offers: Vec<(u32, Fault)>,
}

/// The segment `onward`'s backward pass stands at: what follows it so far, and which of its
/// failures comes next.
struct Current {
    segment: Segment,
    here: Summary,
    next_offer: usize,
}

/// `onward`, part way: its segments still to go back over, and the summary of what follows
/// the last one gone back over (`None` before the forward pass).
#[derive(Default)]
struct OnwardFrame {
    segments: Vec<Segment>,
    after: Option<(Summary, u32)>,
    current: Option<Current>,
}

/// A failing segment, part way: its saved mark, its failures, and the further failures in
/// the same segment still to try.
struct FailFrame {
    at: Rc<Saved>,
    plan: Plan,
    started: bool,
    point: u32,
    relative: Plan,
    /// Where the run stood after the failures, for `onward`'s summary.
    next: u32,
    offers: Vec<(u32, Fault)>,
    next_offer: usize,
    all: Option<Summary>,
}

impl FailFrame {
    fn new(at: Rc<Saved>, plan: Plan) -> FailFrame {
        FailFrame {
            at,
            plan,
            started: false,
            point: 0,
            relative: Vec::new(),
            next: 0,
            offers: Vec::new(),
            next_offer: 0,
            all: None,
        }
    }
}

/// A frame of the search's own stack.
enum Frame {
    Onward(Box<OnwardFrame>),
    Fail(Box<FailFrame>),
}

/// What a frame does next: wait for a call's summary, or hand its own to its caller.
enum Next {
    Call(Frame, Frame),
    Return(Summary),
}

/// Runs one schedule, named by its failures as (choice point, kind) with kinds as in the
/// verdict (`job_crash`, `consumer_crash`, `message_lost`, `ack_lost`, `redelivery:N`), and
/// returns its trace. A failure that the run does not offer at that point is an error.
pub fn replay(
    scenario: &Compiled,
    design: &serde_json::Value,
    faults: &[(u32, &str)],
) -> Result<Vec<crate::verdict::TraceEntry>, String> {
    let valid = validate_json(scenario, design).map_err(|e| CheckError::Design(e).to_string())?;
    let model = Model::compile(scenario, &valid);
    let clean = clean_run(&model);
    let mut plan: Plan = Vec::new();
    for &(point, kind) in faults {
        let fault = match kind {
            "job_crash" => Fault::JobCrash,
            "consumer_crash" => Fault::ConsumerCrash,
            "message_lost" => Fault::MessageLost,
            "ack_lost" => Fault::AckLost,
            other => match other
                .strip_prefix("redelivery:")
                .and_then(|n| n.parse().ok())
            {
                Some(after) => Fault::Redelivery { after },
                None => return Err(format!("unknown failure kind \"{other}\"")),
            },
        };
        let offers = Sim::run(&model, &plan, Offers::Record, Trace::Off, Some(&clean)).offers;
        if !offers.contains(&(point, fault)) {
            return Err(format!(
                "the schedule offers no {kind} at choice point {point}"
            ));
        }
        plan.push((point, fault));
    }
    Ok(Sim::run(
        &model,
        &plan,
        Offers::Ignore,
        Trace::In(Dialect::Display),
        Some(&clean),
    )
    .trace)
}
