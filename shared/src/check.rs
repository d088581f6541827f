//! The exhaustive check: every failure schedule up to the scenario's bound, each run to the
//! end, and per requirement the shortest schedule that breaks it.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::design::{validate_json, DesignError, ValidDesign};
use crate::scenario::Scenario;
use crate::sim::{Clean, Fault, Model, Outcome, ScenarioError, Sim};
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
        Limits { max_schedules: 2_000_000, max_steps: 400_000_000 }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// The design is not valid for the scenario.
    Design(Vec<DesignError>),
    /// The scenario itself is broken (an author's mistake).
    Scenario(Vec<ScenarioError>),
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
            CheckError::Scenario(errors) => {
                write!(f, "the scenario is broken:")?;
                for e in errors {
                    write!(f, "\n  {}: {}", e.path, e.message)?;
                }
                Ok(())
            }
            CheckError::TooLarge { schedules, limit } => write!(f, "the check stopped after {schedules} schedules: it exceeds {limit}"),
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
pub fn check_json(scenario: &Scenario, design: &serde_json::Value) -> Result<Verdict, CheckError> {
    let valid = validate_json(scenario, design).map_err(CheckError::Design)?;
    check(scenario, &valid)
}

pub fn check(scenario: &Scenario, design: &ValidDesign) -> Result<Verdict, CheckError> {
    check_with(scenario, design, Limits::default())
}

type Plan = Vec<(u32, Fault)>;

/// Depth-first enumeration of every schedule up to the model's bound, in lexicographic order
/// of (choice point, failure): each schedule is run once, untraced, and handed to `visit`.
/// Returns the number of schedules explored.
fn explore(model: &Model, clean: &Clean, limits: Limits, visit: &mut dyn FnMut(&Plan, &Outcome)) -> Result<u64, CheckError> {
    struct Walk<'a> {
        model: &'a Model,
        clean: &'a Clean,
        limits: Limits,
        explored: u64,
        steps: u64,
        exceeded: Option<String>,
    }
    fn walk(w: &mut Walk, plan: &mut Plan, visit: &mut dyn FnMut(&Plan, &Outcome)) {
        let outcome: Outcome = Sim::run(w.model, plan, true, false, Some(w.clean));
        w.explored += 1;
        w.steps += outcome.steps;
        visit(plan, &outcome);
        for &(point, fault) in &outcome.offers {
            if w.exceeded.is_none() && w.explored >= w.limits.max_schedules {
                w.exceeded = Some(format!("the limit of {} schedules", w.limits.max_schedules));
            }
            if w.exceeded.is_none() && w.steps >= w.limits.max_steps {
                w.exceeded = Some(format!("the limit of {} simulated steps", w.limits.max_steps));
            }
            if w.exceeded.is_some() {
                return;
            }
            plan.push((point, fault));
            walk(w, plan, visit);
            plan.pop();
        }
    }
    let mut w = Walk { model, clean, limits, explored: 0, steps: 0, exceeded: None };
    walk(&mut w, &mut Vec::new(), visit);
    match w.exceeded {
        Some(limit) => Err(CheckError::TooLarge { schedules: w.explored, limit }),
        None => Ok(w.explored),
    }
}

fn clean_run(model: &Model) -> Clean {
    Clean { tables: Sim::run(model, &[], false, false, None).end_tables }
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
pub fn for_each_schedule(scenario: &Scenario, design: &ValidDesign, dialect: crate::sql::Dialect, limits: Limits, f: &mut dyn FnMut(Schedule)) -> Result<u64, CheckError> {
    for_each_schedule_of(scenario, design, dialect, limits, crate::sim::Mutation::None, f)
}

/// As `for_each_schedule`, under a deliberately wrong model (for testing the conformance
/// runner).
pub fn for_each_schedule_of(scenario: &Scenario, design: &ValidDesign, dialect: crate::sql::Dialect, limits: Limits, mutation: crate::sim::Mutation, f: &mut dyn FnMut(Schedule)) -> Result<u64, CheckError> {
    let mut model = Model::compile(scenario, design).map_err(CheckError::Scenario)?;
    model.mutation = mutation;
    let clean = clean_run(&model);
    explore(&model, &clean, limits, &mut |plan, _| {
        let traced = Sim::run_in(&model, plan, false, true, Some(&clean), dialect);
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
        f(Schedule { faults, trace: traced.trace });
    })
}

/// Checks a design under every failure schedule the scenario allows, within `limits`.
pub fn check_with(scenario: &Scenario, design: &ValidDesign, limits: Limits) -> Result<Verdict, CheckError> {
    let model = Model::compile(scenario, design).map_err(CheckError::Scenario)?;
    let clean = clean_run(&model);
    // Per requirement, the shortest failing plan: the search is depth-first in lexicographic
    // order, so the first failing plan of a given length is the one whose failures come
    // earliest, and only a strictly shorter one replaces it.
    let mut best: Vec<Option<Plan>> = vec![None; scenario.requirements.len()];
    let explored = explore(&model, &clean, limits, &mut |plan, outcome| {
        for (i, miss) in outcome.misses.iter().enumerate() {
            if miss.is_some() && best[i].as_ref().is_none_or(|b| plan.len() < b.len()) {
                best[i] = Some(plan.clone());
            }
        }
    })?;
    let mut requirements = Vec::with_capacity(scenario.requirements.len());
    let mut traced: BTreeMap<Plan, Outcome> = BTreeMap::new();
    for (i, req) in scenario.requirements.iter().enumerate() {
        let counterexample = best[i].as_ref().map(|plan| {
            let outcome = traced.entry(plan.clone()).or_insert_with(|| Sim::run(&model, plan, false, true, Some(&clean)));
            let miss = outcome.misses[i].clone().expect("a traced replay misses what the search saw it miss");
            let last = outcome.trace.len() as u32;
            Counterexample {
                failures: outcome.failure_words.clone(),
                faults: outcome.faults.clone(),
                trace: outcome.trace.clone(),
                went_wrong_at: if miss.step == 0 { last.min(1) } else { miss.step },
                expected: miss.expected,
                actual: miss.actual,
                tables: miss.tables.unwrap_or_default(),
            }
        });
        requirements.push(RequirementVerdict { id: req.id.clone(), text: req.text.clone(), passed: counterexample.is_none(), counterexample });
    }
    let score = requirements.iter().filter(|r| r.passed).count() as u32;
    let max_score = requirements.len() as u32;
    Ok(Verdict {
        scenario: scenario.id.clone(),
        scenario_hash: scenario_hash(scenario),
        passed: score == max_score,
        score,
        max_score,
        schedules_explored: explored,
        requirements,
    })
}

/// Runs one schedule, named by its failures as (choice point, kind) with kinds as in the
/// verdict (`job_crash`, `consumer_crash`, `message_lost`, `ack_lost`, `redelivery:N`), and
/// returns its trace. A failure that the run does not offer at that point is an error.
pub fn replay(scenario: &Scenario, design: &serde_json::Value, faults: &[(u32, &str)]) -> Result<Vec<crate::verdict::TraceEntry>, String> {
    let valid = validate_json(scenario, design).map_err(|e| CheckError::Design(e).to_string())?;
    let model = Model::compile(scenario, &valid).map_err(|e| CheckError::Scenario(e).to_string())?;
    let clean = clean_run(&model);
    let mut plan: Plan = Vec::new();
    for &(point, kind) in faults {
        let fault = match kind {
            "job_crash" => Fault::JobCrash,
            "consumer_crash" => Fault::ConsumerCrash,
            "message_lost" => Fault::MessageLost,
            "ack_lost" => Fault::AckLost,
            other => match other.strip_prefix("redelivery:").and_then(|n| n.parse().ok()) {
                Some(after) => Fault::Redelivery { after },
                None => return Err(format!("unknown failure kind \"{other}\"")),
            },
        };
        let offers = Sim::run(&model, &plan, true, false, Some(&clean)).offers;
        if !offers.contains(&(point, fault)) {
            return Err(format!("the schedule offers no {kind} at choice point {point}"));
        }
        plan.push((point, fault));
    }
    Ok(Sim::run(&model, &plan, false, true, Some(&clean)).trace)
}
