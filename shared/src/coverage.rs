//! What a scenario puts to the test in a design, and what the design would miss under the
//! chapter's other failures: the verdict's `coverage` and `advisories` (`docs/verdict.md`).
//!
//! Both are found by checking variants: the design with one option set to another value,
//! and the scenario with other failures switched on. Neither is graded: the verdict's
//! `passed`, scores and requirements stay what the scenario's own failures give.
//!
//! This module does not run the search itself: the check hands it a [`Checker`], so that the
//! check can call it at the end of building its verdict.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use crate::compiled::Compiled;
use crate::design::{validate, ConsumerInput, NodeKind, OptionValues, Stage, ValidDesign};
use crate::notes::{untested_note, Untested};
use crate::scenario::{
    ConsumerCrashSpec, Enabled, FailureSpec, JobCrashSpec, RedeliverySpec, Scenario,
};
use crate::verdict::{Advisories, Advisory, Coverage, FailureCoverage, UntestedOption, Verdict};

/// The most failures in one schedule of an advisory's variant.
pub const ADVISORY_BOUND: u32 = 2;

/// The failure kinds, in the verdict's order.
pub const KINDS: [&str; 5] = [
    "job_crash",
    "consumer_crash",
    "message_lost",
    "ack_lost",
    "redelivery",
];

/// Which shipped scenario teaches each failure kind.
pub const TEACHES: [(&str, &str); 5] = [
    ("job_crash", "safe-retry"),
    ("consumer_crash", "offset-commit"),
    ("message_lost", "delivery-promise"),
    ("ack_lost", "delivery-promise"),
    ("redelivery", "dedupe-by-key"),
];

/// The check, as the variants need it. Errors are in words, for a note.
pub(crate) trait Checker {
    /// Whether the design misses other requirements than `missed` (one per requirement, in
    /// order) under the scenario's failures. A search may stop at the first schedule that
    /// misses a requirement `missed` does not name.
    fn differs(
        &self,
        scenario: &Compiled,
        design: &ValidDesign,
        missed: &[bool],
    ) -> Result<bool, String>;
    /// The verdict, without coverage or advisories.
    fn verdict(&self, scenario: &Compiled, design: &ValidDesign) -> Result<Verdict, String>;
}

/// The failure kinds whose schedules the check counts for coverage: with two kinds or more
/// switched on, the schedules with a failure of one kind are all of them but those without
/// it (with one kind, all but the clean run).
pub(crate) fn counted_kinds(failures: &FailureSpec) -> Vec<&'static str> {
    let kinds = kinds_of(failures);
    if failures.bound == 0 || kinds.len() < 2 {
        return Vec::new();
    }
    kinds
}

/// Fills in the verdict's `coverage` and `advisories`; nothing else of it changes. `without`
/// holds, per kind of [`counted_kinds`], how many of the check's schedules have no failure
/// of that kind.
pub(crate) fn annotate(
    scenario: &Compiled,
    design: &ValidDesign,
    verdict: &mut Verdict,
    without: &[u64],
    checker: &dyn Checker,
) {
    let missed: Vec<bool> = verdict.requirements.iter().map(|r| !r.passed).collect();
    let missed_ids: Vec<String> = verdict
        .requirements
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.id.clone())
        .collect();
    verdict.coverage = coverage(
        scenario,
        design,
        verdict.schedules_explored,
        without,
        (&missed, &missed_ids),
        checker,
    );
    verdict.advisories = advisories(scenario, design, &missed, checker);
}

/// The kinds a failure spec switches on, in the verdict's order.
pub fn kinds_of(failures: &FailureSpec) -> Vec<&'static str> {
    let on = [
        failures.job_crash.is_some(),
        failures.consumer_crash.is_some(),
        failures.message_lost.is_some(),
        failures.ack_lost.is_some(),
        failures.redelivery.is_some(),
    ];
    KINDS
        .iter()
        .zip(on)
        .filter(|(_, on)| *on)
        .map(|(k, _)| *k)
        .collect()
}

fn coverage(
    compiled: &Compiled,
    design: &ValidDesign,
    schedules: u64,
    without: &[u64],
    (missed, missed_ids): (&[bool], &[String]),
    checker: &dyn Checker,
) -> Coverage {
    let scenario = compiled.scenario();
    let mut notes = Vec::new();
    let kinds = kinds_of(&scenario.failures);
    let failures = failure_coverage(&scenario.failures, schedules, without);

    let mut untested = Vec::new();
    // The scenario whose palette is widened, option by option (made once, when needed).
    let mut wide: Option<Compiled> = None;
    for node in &design.design().nodes {
        for spec in node.kind.options() {
            let Some((current, candidates, all_values)) = values_to_try(scenario, node, spec)
            else {
                continue;
            };
            let mut others: Vec<String> =
                candidates.into_iter().filter(|v| *v != current).collect();
            // The palette offers this value only: try every value the format has, in the
            // scenario with its palette widened for this option alone.
            let widened = others.is_empty().then(|| {
                others = all_values.into_iter().filter(|v| *v != current).collect();
                let wide = wide.get_or_insert_with(|| compiled.clone());
                set_palette(wide.palette_mut(), node.kind, spec.name, &current, &others)
            });
            let in_scenario = match (&widened, &wide) {
                (Some(_), Some(wide)) => wide,
                _ => compiled,
            };
            let mut tried = Vec::new();
            let mut tested = false;
            for other in &others {
                let Some(changed) = with_value(design, &node.id, spec, other) else {
                    continue;
                };
                let Ok(valid) = validate(in_scenario, changed) else {
                    continue;
                };
                match checker.differs(in_scenario, &valid, missed) {
                    Ok(differs) => {
                        tried.push(other.clone());
                        if differs {
                            tested = true;
                            break;
                        }
                    }
                    Err(e) => {
                        notes.push(format!(
                            "{}.{} = {other} was not compared: {e}",
                            node.id, spec.name
                        ));
                        tested = true;
                        break;
                    }
                }
            }
            let offered = widened.is_none();
            if let (Some(previous), Some(wide)) = (widened, wide.as_mut()) {
                reset_palette(wide.palette_mut(), node.kind, spec.name, previous);
            }
            if !tested && !tried.is_empty() {
                let (why, learn_in) = untested_note(&Untested {
                    scenario,
                    design: design.design(),
                    node,
                    option: spec.name,
                    current: &current,
                    tried: &tried,
                    offered,
                    missed: missed_ids,
                    kinds_on: &kinds,
                });
                untested.push(UntestedOption {
                    node: node.id.clone(),
                    option: spec.name.to_string(),
                    why,
                    learn_in,
                    value: current,
                    others: tried,
                });
            }
        }
    }
    Coverage {
        failures,
        untested,
        notes,
    }
}

/// Per kind the scenario switches on, how many of the check's schedules have a failure of
/// it: all of them but those without it, which the check counted (`without`, per kind of
/// [`counted_kinds`]), or all but the clean run when it is the only kind.
fn failure_coverage(
    failures: &FailureSpec,
    schedules: u64,
    without: &[u64],
) -> Vec<FailureCoverage> {
    let counted = counted_kinds(failures);
    kinds_of(failures)
        .into_iter()
        .map(|kind| {
            let with = if failures.bound == 0 {
                0
            } else if let Some(i) = counted.iter().position(|k| *k == kind) {
                schedules.saturating_sub(without.get(i).copied().unwrap_or(schedules))
            } else {
                schedules.saturating_sub(1)
            };
            FailureCoverage {
                kind: kind.to_string(),
                schedules: with,
            }
        })
        .collect()
}

/// The design with one node's option set to `value`; `None` for a count that is not a number.
fn with_value(
    design: &ValidDesign,
    node: &str,
    spec: &crate::design::OptionSpec,
    value: &str,
) -> Option<crate::design::Design> {
    let value = match spec.values {
        OptionValues::Count { .. } => Json::from(value.parse::<u64>().ok()?),
        _ => Json::String(value.to_string()),
    };
    let mut changed = design.design().clone();
    if let Some(n) = changed.nodes.iter_mut().find(|n| n.id == node) {
        n.options.insert(spec.name.to_string(), value);
    }
    Some(changed)
}

/// An option's value in the design, the values the palette offers for it, and every value the
/// format has (none for a count); `None` for an option that is not tried.
fn values_to_try(
    scenario: &Scenario,
    node: &crate::design::Node,
    spec: &crate::design::OptionSpec,
) -> Option<(String, Vec<String>, Vec<String>)> {
    let palette = scenario.palette.kind(node.kind);
    match spec.values {
        OptionValues::Choice(values) => {
            let allowed = palette.and_then(|p| p.get(spec.name));
            let default = scenario.palette.default_of(node.kind, spec.name, values);
            let current = match node.options.get(spec.name) {
                Some(Json::String(s)) => s.clone(),
                _ => default.to_string(),
            };
            let all: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            let candidates = allowed.cloned().unwrap_or_else(|| all.clone());
            Some((current, candidates, all))
        }
        // A window only matters to a consumer that removes repeats in memory, and only the
        // values the palette lists are tried.
        OptionValues::Count { default, .. } if spec.name == "dedupe_window" => {
            if node.options.get("dedupe").and_then(Json::as_str) != Some("in_memory") {
                return None;
            }
            let allowed = palette.and_then(|p| p.get(spec.name))?;
            let current = match node.options.get(spec.name) {
                Some(Json::Number(n)) => n.to_string(),
                _ => default.to_string(),
            };
            Some((current, allowed.clone(), Vec::new()))
        }
        _ => None,
    }
}

/// The palette's options for one kind of node, if the scenario offers that kind.
fn palette_options(
    p: &mut crate::scenario::Palette,
    kind: NodeKind,
) -> Option<&mut BTreeMap<String, Vec<String>>> {
    let field = match kind {
        NodeKind::SourceTable => &mut p.source_table,
        NodeKind::Stream => &mut p.stream,
        NodeKind::Sender => &mut p.sender,
        NodeKind::BatchJob => &mut p.batch_job,
        NodeKind::StreamConsumer => &mut p.stream_consumer,
        NodeKind::Table => &mut p.table,
    };
    field.as_mut()
}

/// Offers `current` and `others` for `option` in the palette; returns what it offered before
/// (for [`reset_palette`]).
fn set_palette(
    scenario: &mut crate::scenario::Palette,
    kind: NodeKind,
    option: &str,
    current: &str,
    others: &[String],
) -> Option<Vec<String>> {
    let options = palette_options(scenario, kind)?;
    let mut values = vec![current.to_string()];
    values.extend(others.iter().cloned());
    options.insert(option.to_string(), values)
}

/// Puts back what `set_palette` replaced.
fn reset_palette(
    scenario: &mut crate::scenario::Palette,
    kind: NodeKind,
    option: &str,
    previous: Option<Vec<String>>,
) {
    if let Some(options) = palette_options(scenario, kind) {
        match previous {
            Some(values) => options.insert(option.to_string(), values),
            None => options.remove(option),
        };
    }
}

/// The failures the model has for a design's stages, each as wide as it goes, at
/// `ADVISORY_BOUND`: a job crashes at any point of any run; a stream's consumer crashes at any
/// offset and any message may come again; a sender's messages and acks may be lost and its
/// consumer may crash.
pub(crate) fn advisory_failures(scenario: &Scenario, design: &ValidDesign) -> FailureSpec {
    let mut f = FailureSpec {
        bound: ADVISORY_BOUND,
        ..FailureSpec::default()
    };
    for stage in &design.pipeline().stages {
        match stage {
            Stage::Job(_) => {
                f.job_crash = Some(JobCrashSpec {
                    max_per_run: ADVISORY_BOUND,
                    retry_delay_minutes: scenario
                        .failures
                        .job_crash
                        .as_ref()
                        .map_or(0, |j| j.retry_delay_minutes),
                    runs: None,
                });
            }
            Stage::Consumer(c) => {
                f.consumer_crash = Some(ConsumerCrashSpec { offsets: None });
                match &c.input {
                    ConsumerInput::Stream { topic, .. } => {
                        let messages = scenario
                            .streams
                            .iter()
                            .find(|s| &s.name == topic)
                            .map_or(1, |s| s.messages.len() as u32);
                        let widest = f.redelivery.as_ref().map_or(1, |r| r.after_max);
                        f.redelivery = Some(RedeliverySpec {
                            after_min: 1,
                            after_max: messages.max(widest),
                        });
                    }
                    ConsumerInput::Sender { .. } => {
                        f.message_lost = Some(Enabled {});
                        f.ack_lost = Some(Enabled {});
                    }
                }
            }
        }
    }
    f
}

/// True when every schedule of `wider` is a schedule of `f`: then a variant finds nothing new.
fn covers(f: &FailureSpec, wider: &FailureSpec) -> bool {
    if f.bound < wider.bound {
        return false;
    }
    let job = match (&f.job_crash, &wider.job_crash) {
        (_, None) => true,
        (Some(a), Some(b)) => {
            a.runs.is_none()
                && a.max_per_run >= b.max_per_run
                && a.retry_delay_minutes == b.retry_delay_minutes
        }
        (None, Some(_)) => false,
    };
    let consumer = match (&f.consumer_crash, &wider.consumer_crash) {
        (_, None) => true,
        (Some(a), Some(_)) => a.offsets.is_none(),
        (None, Some(_)) => false,
    };
    let redelivery = match (&f.redelivery, &wider.redelivery) {
        (_, None) => true,
        (Some(a), Some(b)) => a.after_min.max(1) <= b.after_min && a.after_max >= b.after_max,
        (None, Some(_)) => false,
    };
    job && consumer
        && redelivery
        && (wider.message_lost.is_none() || f.message_lost.is_some())
        && (wider.ack_lost.is_none() || f.ack_lost.is_some())
}

fn advisories(
    compiled: &Compiled,
    design: &ValidDesign,
    missed: &[bool],
    checker: &dyn Checker,
) -> Advisories {
    let scenario = compiled.scenario();
    let failures = advisory_failures(scenario, design);
    let mut out = Advisories {
        failures: kinds_of(&failures).iter().map(|k| k.to_string()).collect(),
        bound: failures.bound,
        missed: Vec::new(),
        note: None,
    };
    if covers(&scenario.failures, &failures) || missed.iter().all(|m| *m) {
        return out;
    }
    let variant = compiled.with_failures(failures);
    let verdict = match checker.verdict(&variant, design) {
        Ok(verdict) => verdict,
        Err(e) => {
            out.note = Some(format!("no advisory: {e}"));
            return out;
        }
    };
    for (i, req) in verdict.requirements.into_iter().enumerate() {
        let Some(counterexample) = req.counterexample else {
            continue;
        };
        if missed[i] {
            continue;
        }
        let mut learn_in: Vec<String> = Vec::new();
        for fault in &counterexample.faults {
            let teaches = TEACHES
                .iter()
                .find(|(k, _)| *k == fault.kind)
                .map(|(_, s)| s.to_string());
            if let Some(s) = teaches {
                if s != scenario.id && !learn_in.contains(&s) {
                    learn_in.push(s);
                }
            }
        }
        out.missed.push(Advisory {
            id: req.id,
            text: req.text,
            learn_in,
            counterexample,
        });
    }
    out
}
