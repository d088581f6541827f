//! The solver: every design a scenario's palette and wiring rules allow, each checked with the
//! graded check, and what that says about the scenario as a lesson: which designs pass
//! (simplest first), how many designs miss each requirement, which requirements no design
//! misses, which failure kinds change no design's verdict, and when nothing passes, the
//! designs that come closest.
//!
//! Like the rest of this crate it does no IO: the caller is told of progress through a
//! callback, and draws a progress bar if it wants one.

use serde::Serialize;

use crate::check::{check_graded, CheckError, Limits};
use crate::compiled::Compiled;
use crate::design::{validate, Design, Pipeline, Stage, ValidDesign, WriteMode};
use crate::scenario::FailureSpec;

mod enumerate;
mod summary;

use enumerate::Space;

/// The most designs one solve checks unless its caller says otherwise. Every design is
/// checked once, and once more per failure kind the scenario injects, so a palette past this
/// takes minutes; a lesson needs far fewer choices than this to make its point.
pub const MAX_DESIGNS: u64 = 10_000;

/// What one solve may cost.
#[derive(Clone, Copy, Debug)]
pub struct SolveLimits {
    /// The most designs the palette may allow.
    pub max_designs: u64,
    /// The limits of each design's check.
    pub check: Limits,
}

impl Default for SolveLimits {
    fn default() -> Self {
        SolveLimits {
            max_designs: MAX_DESIGNS,
            check: Limits::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SolveError {
    /// The palette allows more designs than the limit.
    TooManyDesigns { designs: u64, limit: u64 },
    /// One design's check failed (it exceeds the check's limits).
    Check { design: u64, error: CheckError },
}

impl std::fmt::Display for SolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SolveError::TooManyDesigns { designs, limit } => write!(
                f,
                "the palette allows {designs} designs, more than the {limit} a solve checks; offer fewer option values in the palette"
            ),
            SolveError::Check { design, error } => {
                write!(f, "design {design} could not be checked: {error}")
            }
        }
    }
}

impl std::error::Error for SolveError {}

/// How far a solve has come: `done` of `total` checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
}

/// A requirement a design misses, and the fewest failures that make it miss it (0: a run
/// with no failure already does).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Miss {
    pub requirement: String,
    pub failures: usize,
}

/// One design of the palette with its graded verdict.
#[derive(Clone, Debug, Serialize)]
pub struct SolvedDesign {
    /// Its number in the solve, from 1, in the order designs are enumerated.
    pub number: u64,
    pub design: Design,
    pub passed: bool,
    pub score: u32,
    pub max_score: u32,
    pub misses: Vec<Miss>,
    pub schedules_explored: u64,
    /// How many options are away from their first offered value; the simplest designs have
    /// the fewest.
    pub options_changed: u32,
    /// The pipeline without node ids, to recognise the same design drawn otherwise.
    #[serde(skip)]
    shape: Pipeline,
}

/// How many designs miss one requirement.
#[derive(Clone, Debug, Serialize)]
pub struct RequirementTally {
    pub id: String,
    pub text: String,
    pub missed_by: u64,
}

/// What one failure kind does to the verdicts: checked again without it, which design's
/// verdict changes first (none: the kind is decorative).
#[derive(Clone, Debug, Serialize)]
pub struct FailureEffect {
    pub kind: String,
    /// The first design whose requirements missed change without this kind.
    pub changes_design: Option<u64>,
}

/// What a solve found.
#[derive(Clone, Debug, Serialize)]
pub struct Solution {
    pub scenario: String,
    /// The drawings the palette allows, valid or not.
    pub candidates: u64,
    /// How many of them the wiring rules refuse, and the first one's reason.
    pub refused: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// Every valid design, in enumeration order.
    pub designs: Vec<SolvedDesign>,
    pub requirements: Vec<RequirementTally>,
    pub failures: Vec<FailureEffect>,
    /// The options that tell one design from another, as `node.option`.
    pub varying: Vec<String>,
    pub schedules_explored: u64,
}

/// How many designs the palette allows (drawings, before the wiring rules refuse any).
pub fn design_count(scenario: &Compiled) -> u64 {
    Space::new(scenario).len()
}

/// Every drawing the palette allows, canonical, in the solve's order.
pub fn designs(scenario: &Compiled, limits: SolveLimits) -> Result<Vec<Design>, SolveError> {
    let space = bounded_space(scenario, limits)?;
    Ok((0..space.len()).map(|n| space.design(n)).collect())
}

fn bounded_space(scenario: &Compiled, limits: SolveLimits) -> Result<Space, SolveError> {
    let space = Space::new(scenario);
    if space.len() > limits.max_designs {
        return Err(SolveError::TooManyDesigns {
            designs: space.len(),
            limit: limits.max_designs,
        });
    }
    Ok(space)
}

/// Solves a scenario with the default limits and no progress report.
pub fn solve(scenario: &Compiled) -> Result<Solution, SolveError> {
    solve_with(scenario, SolveLimits::default(), &mut |_| {})
}

/// Solves a scenario: every design the palette allows, each checked, then checked again
/// without each failure kind until one verdict changes.
pub fn solve_with(
    scenario: &Compiled,
    limits: SolveLimits,
    progress: &mut dyn FnMut(Progress),
) -> Result<Solution, SolveError> {
    let space = bounded_space(scenario, limits)?;
    let kinds = failure_kinds(&scenario.scenario().failures);
    let candidates = space.len();
    let mut report = Reporter {
        progress,
        done: 0,
        total: candidates * (1 + kinds.len() as u64),
    };
    let mut valid: Vec<(u64, ValidDesign)> = Vec::new();
    let (mut refused, mut refusal) = (0, None);
    for n in 0..candidates {
        match validate(scenario, space.design(n)) {
            Ok(v) => valid.push((n, v)),
            Err(errors) => {
                refused += 1;
                refusal.get_or_insert_with(|| first_error(&errors));
            }
        }
    }
    report.total = valid.len() as u64 * (1 + kinds.len() as u64);
    let hash = crate::check::scenario_hash(scenario.scenario());
    let mut designs = Vec::with_capacity(valid.len());
    for (number, (n, design)) in (1..).zip(&valid) {
        let verdict = check_graded(scenario, &hash, design, limits.check).map_err(|error| {
            SolveError::Check {
                design: number,
                error,
            }
        })?;
        designs.push(solved(number, space.away(*n), design, &verdict));
        report.step(1);
    }
    let mut failures = Vec::new();
    for (k, (kind, without)) in (1..).zip(kinds) {
        let reduced = scenario.with_failures(without);
        let mut changes_design = None;
        for (solved, (_, design)) in designs.iter().zip(&valid) {
            let verdict = check_graded(&reduced, &hash, design, limits.check).map_err(|error| {
                SolveError::Check {
                    design: solved.number,
                    error,
                }
            })?;
            report.step(1);
            if missed_ids(&verdict)
                != solved
                    .misses
                    .iter()
                    .map(|m| &m.requirement)
                    .collect::<Vec<_>>()
            {
                changes_design = Some(solved.number);
                break;
            }
        }
        // The designs after the first changed verdict need no check.
        report.done = k * valid.len() as u64;
        report.step(valid.len() as u64);
        failures.push(FailureEffect {
            kind: kind.to_string(),
            changes_design,
        });
    }
    Ok(Solution {
        scenario: scenario.scenario().id.clone(),
        candidates,
        refused,
        refusal,
        requirements: tallies(scenario, &designs),
        schedules_explored: designs.iter().map(|d| d.schedules_explored).sum(),
        designs,
        failures,
        varying: space
            .varying()
            .into_iter()
            .map(|(node, option)| format!("{node}.{option}"))
            .collect(),
    })
}

struct Reporter<'a> {
    progress: &'a mut dyn FnMut(Progress),
    done: u64,
    total: u64,
}

impl Reporter<'_> {
    fn step(&mut self, n: u64) {
        self.done = (self.done + n).min(self.total);
        (self.progress)(Progress {
            done: self.done,
            total: self.total,
        });
    }
}

/// The refusal that says most: the first at the deepest path (an option before a whole
/// node, a node before the design).
fn first_error(errors: &[crate::design::DesignError]) -> String {
    let depth = |e: &&crate::design::DesignError| e.path.matches(['.', '[']).count();
    let deepest = errors.iter().map(|e| depth(&e)).max().unwrap_or(0);
    errors.iter().find(|e| depth(e) == deepest).map_or_else(
        || "refused".to_string(),
        |e| format!("{}: {}", e.path, e.message),
    )
}

fn missed_ids(verdict: &crate::Verdict) -> Vec<&String> {
    verdict
        .requirements
        .iter()
        .filter(|r| !r.passed)
        .map(|r| &r.id)
        .collect()
}

fn solved(number: u64, away: u32, design: &ValidDesign, verdict: &crate::Verdict) -> SolvedDesign {
    SolvedDesign {
        number,
        design: design.design().clone(),
        passed: verdict.passed,
        score: verdict.score,
        max_score: verdict.max_score,
        misses: verdict
            .requirements
            .iter()
            .filter_map(|r| {
                r.counterexample.as_ref().map(|c| Miss {
                    requirement: r.id.clone(),
                    failures: c.faults.len(),
                })
            })
            .collect(),
        schedules_explored: verdict.schedules_explored,
        options_changed: away,
        shape: shape(design.pipeline()),
    }
}

fn tallies(scenario: &Compiled, designs: &[SolvedDesign]) -> Vec<RequirementTally> {
    scenario
        .scenario()
        .requirements
        .iter()
        .map(|r| RequirementTally {
            id: r.id.clone(),
            text: r.text.clone(),
            missed_by: designs
                .iter()
                .filter(|d| d.misses.iter().any(|m| m.requirement == r.id))
                .count() as u64,
        })
        .collect()
}

/// Each failure kind the scenario injects, with the scenario's failures without it.
fn failure_kinds(spec: &FailureSpec) -> Vec<(&'static str, FailureSpec)> {
    let mut out = Vec::new();
    if spec.job_crash.is_some() {
        out.push((
            "job_crash",
            FailureSpec {
                job_crash: None,
                ..spec.clone()
            },
        ));
    }
    if spec.consumer_crash.is_some() {
        out.push((
            "consumer_crash",
            FailureSpec {
                consumer_crash: None,
                ..spec.clone()
            },
        ));
    }
    if spec.message_lost.is_some() {
        out.push((
            "message_lost",
            FailureSpec {
                message_lost: None,
                ..spec.clone()
            },
        ));
    }
    if spec.ack_lost.is_some() {
        out.push((
            "ack_lost",
            FailureSpec {
                ack_lost: None,
                ..spec.clone()
            },
        ));
    }
    if spec.redelivery.is_some() {
        out.push((
            "redelivery",
            FailureSpec {
                redelivery: None,
                ..spec.clone()
            },
        ));
    }
    out
}

/// A pipeline with its node ids blanked and the options its writes ignore cleared: two
/// drawings of the same design have the same shape.
fn shape(pipeline: &Pipeline) -> Pipeline {
    let mut p = pipeline.clone();
    let clear = |sink: &mut crate::design::SinkOptions| {
        sink.node.clear();
        if !sink.write.by_key() {
            sink.key.clear();
        }
        if sink.write != WriteMode::MergeIfNewer {
            sink.version = None;
        }
    };
    for stage in &mut p.stages {
        match stage {
            Stage::Job(j) => {
                j.node.clear();
                j.source_node.clear();
                j.sinks.iter_mut().for_each(clear);
            }
            Stage::Consumer(c) => {
                c.node.clear();
                if c.options.dedupe == crate::design::Dedupe::None {
                    c.options.dedupe_window = 0;
                }
                match &mut c.input {
                    crate::design::ConsumerInput::Stream { node, .. }
                    | crate::design::ConsumerInput::Sender { node, .. } => node.clear(),
                }
                clear(&mut c.sink);
            }
        }
    }
    p
}

impl Solution {
    /// The designs that pass everything, simplest first (fewest options changed, then in
    /// enumeration order).
    pub fn passing(&self) -> Vec<&SolvedDesign> {
        let mut out: Vec<&SolvedDesign> = self.designs.iter().filter(|d| d.passed).collect();
        out.sort_by_key(|d| (d.options_changed, d.number));
        out
    }

    /// The requirements no design misses.
    pub fn never_missed(&self) -> Vec<&RequirementTally> {
        self.requirements
            .iter()
            .filter(|r| r.missed_by == 0)
            .collect()
    }

    /// The failure kinds whose removal changes no design's verdict.
    pub fn decorative_failures(&self) -> Vec<&str> {
        self.failures
            .iter()
            .filter(|f| f.changes_design.is_none())
            .map(|f| f.kind.as_str())
            .collect()
    }

    /// The designs that meet the most requirements, simplest first; empty when a design
    /// passes.
    pub fn closest(&self) -> Vec<&SolvedDesign> {
        if self.designs.iter().any(|d| d.passed) {
            return Vec::new();
        }
        let fewest = self.designs.iter().map(|d| d.misses.len()).min();
        let mut out: Vec<&SolvedDesign> = self
            .designs
            .iter()
            .filter(|d| Some(d.misses.len()) == fewest)
            .collect();
        out.sort_by_key(|d| (d.options_changed, d.number));
        out
    }

    /// The solve as JSON for scripts: every design with its options and the requirements it
    /// misses, and beside them what the summary derives (the passing designs' numbers,
    /// simplest first; the closest designs' when none passes; the requirements no design
    /// misses; the failure kinds that change no verdict).
    pub fn to_json(&self) -> serde_json::Value {
        let mut json = serde_json::to_value(self).expect("a solution always serialises");
        let numbers =
            |list: Vec<&SolvedDesign>| -> Vec<u64> { list.iter().map(|d| d.number).collect() };
        let extra = serde_json::json!({
            "passing": numbers(self.passing()),
            "closest": numbers(self.closest()),
            "never_missed": self.never_missed().iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            "decorative_failures": self.decorative_failures(),
        });
        if let (Some(out), serde_json::Value::Object(extra)) = (json.as_object_mut(), extra) {
            out.extend(extra);
        }
        json
    }

    /// The solved design that is the same pipeline as `design`, however it is drawn.
    pub fn find(&self, design: &ValidDesign) -> Option<&SolvedDesign> {
        let wanted = shape(design.pipeline());
        self.designs.iter().find(|d| d.shape == wanted)
    }
}

#[cfg(test)]
mod tests;
