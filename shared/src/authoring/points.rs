//! How many failures a scenario's schedules can have, and what the validator says of its
//! `bound`.

use std::collections::BTreeSet;

use crate::scenario::{Scenario, MAX_BOUND};

/// How much a diagnostic stops: an error refuses the file, a warning only tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// The failure points of a scenario: the places where one schedule can fail, each counted
/// once (a batch run's crashes up to `max_per_run`, each place where the consumer can crash
/// in the handling of each offset, each message a sender can lose or whose ack it can lose,
/// each message that can get a late copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailurePoints {
    /// The failure points of every stage together (each job, stream and sender): a design
    /// runs all of them.
    pub total: u64,
    /// True when no schedule can fail more often than `total` (job crashes, late copies,
    /// a sender that never resends). False when a point can fail again: a crashed consumer
    /// reads the offset again, a sender resends.
    pub exact: bool,
    /// How `total` is made, in words, for the message.
    pub parts: Vec<String>,
}

/// The places where one schedule of the scenario can fail; see [`FailurePoints`].
pub fn failure_points(s: &Scenario) -> FailurePoints {
    // (points, exact, words) per stage a design draws: a design runs every one of them.
    let mut stages: Vec<(u64, bool, Vec<String>)> = Vec::new();
    stages.extend(s.all_jobs().filter_map(|job| job_points(s, job)));
    stages.extend(s.streams.iter().map(|st| stream_points(s, st)));
    stages.extend(s.senders.iter().filter_map(|se| sender_points(s, se)));
    stages.retain(|p| p.0 > 0 || !p.2.is_empty());
    FailurePoints {
        total: stages.iter().map(|p| p.0).fold(0, u64::saturating_add),
        exact: stages.iter().all(|p| p.1),
        parts: stages.into_iter().flat_map(|p| p.2).collect(),
    }
}

fn job_points(s: &Scenario, job: &crate::scenario::JobDef) -> Option<(u64, bool, Vec<String>)> {
    let jc = s.failures.job_crash.as_ref()?;
    let runs = s
        .runs_of(job.id())
        .filter(|(_, r)| jc.runs.as_ref().is_none_or(|ids| ids.contains(&r.id)))
        .count() as u64;
    let per_run = u64::from(jc.max_per_run.min(job.max_attempts));
    let name = if s.jobs.is_empty() {
        "job_crash".to_string()
    } else {
        format!("job_crash of {}", job.id())
    };
    Some((
        per_run * runs,
        true,
        vec![format!(
            "{name}: {per_run} per run × {runs} run{}",
            if runs == 1 { "" } else { "s" }
        )],
    ))
}

fn stream_points(s: &Scenario, st: &crate::scenario::StreamDef) -> (u64, bool, Vec<String>) {
    let f = &s.failures;
    let n = st.messages.len() as u64;
    let mut points = 0u64;
    let mut words = Vec::new();
    let mut copies = 0u64;
    if let Some(r) = &f.redelivery {
        let lo = u64::from(r.after_min.max(1));
        if r.after_min <= r.after_max {
            copies = n.saturating_sub(lo);
        }
        points += copies;
        words.push(format!(
            "redelivery: a late copy of {copies} of the {n} messages"
        ));
    }
    let mut exact = true;
    if let Some(cc) = &f.consumer_crash {
        let offsets = crash_offsets(cc, n + copies);
        points += 3 * offsets;
        exact = false;
        words.push(format!(
            "consumer_crash: 3 places in the handling of each of {offsets} offset{}",
            if offsets == 1 { "" } else { "s" }
        ));
    }
    (points, exact, words)
}

/// The offsets (or messages) of `handled` that a consumer may crash at.
fn crash_offsets(cc: &crate::scenario::ConsumerCrashSpec, handled: u64) -> u64 {
    match &cc.offsets {
        Some(list) => list
            .iter()
            .filter(|&&o| u64::from(o) < handled)
            .collect::<BTreeSet<_>>()
            .len() as u64,
        None => handled,
    }
}

fn sender_points(
    s: &Scenario,
    se: &crate::scenario::SenderDef,
) -> Option<(u64, bool, Vec<String>)> {
    let f = &s.failures;
    let n = se.messages.len() as u64;
    let kinds = u64::from(f.message_lost.is_some()) + u64::from(f.ack_lost.is_some());
    let crash = f.consumer_crash.as_ref().map(|cc| crash_offsets(cc, n));
    if kinds == 0 && crash.is_none() {
        return None;
    }
    // A sender that gives up sends each message once, and one send fails at most once.
    let resends = s.palette.sender.as_ref().is_none_or(|p| {
        p.get("on_timeout")
            .is_none_or(|v| v.iter().any(|x| x == "resend"))
    });
    let mut words = Vec::new();
    let mut points = 0;
    if kinds > 0 {
        let which = if kinds == 2 {
            "message_lost and ack_lost"
        } else if f.message_lost.is_some() {
            "message_lost"
        } else {
            "ack_lost"
        };
        if resends {
            points += n * kinds;
            words.push(format!("{which} of each of {n} messages"));
        } else {
            points += n;
            words.push(format!(
                "one lost message or ack for each of {n} messages, sent once"
            ));
        }
    }
    if let Some(messages) = crash {
        points += 3 * messages;
        words.push(format!(
            "consumer_crash: 3 places in the handling of each of {messages} message{}",
            if messages == 1 { "" } else { "s" }
        ));
    }
    Some((points, !resends && crash.is_none(), words))
}

pub(super) fn bound_too_large(bound: u64) -> String {
    format!("bound is {bound}; a schedule may have at most {MAX_BOUND} failures. The check explores every schedule up to the bound, and their number grows about exponentially with it: 1 or 2 teach every idea of the chapter")
}

/// What the validator says of the scenario's `failures.bound`: nothing, a warning (a bound
/// no schedule can reach: the check is the same as with the reachable one), or an error (a
/// bound past [`MAX_BOUND`], or past the failure points where a point can fail again).
pub fn bound_finding(s: &Scenario) -> Option<(Severity, String)> {
    let bound = s.failures.bound;
    if bound > MAX_BOUND {
        return Some((Severity::Error, bound_too_large(u64::from(bound))));
    }
    let points = failure_points(s);
    if bound == 0 || u64::from(bound) <= points.total || points.parts.is_empty() {
        return None;
    }
    let total = points.total;
    let how = points.parts.join("; ");
    if points.exact {
        Some((Severity::Warning, format!("bound is {bound}, but no schedule of this scenario can have more than {total} failures ({how}); the check explores the same schedules as with bound {total}, so write {total}")))
    } else {
        Some((Severity::Error, format!("bound is {bound}, but this scenario has {total} failure points ({how}); a larger bound only adds schedules that fail again where they already failed, and their number explodes: set bound to {total} or less (1 or 2 teach every idea of the chapter)")))
    }
}
