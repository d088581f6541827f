//! A small Prometheus registry kept by hand: requests by route and status, a latency
//! histogram per route, checks run and schedules explored; and, counted by the store's writer
//! itself, the group commit's batches ([`crate::group_commit::Stats`]).
//!
//! Rationale: four metric families do not justify a metrics framework and its exporter; the
//! text format is simple and stable.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use crate::group_commit;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS_SECONDS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS_SECONDS.len()],
    count: u64,
    sum_seconds: f64,
}

#[derive(Default)]
struct Registry {
    /// (method, route, status) → count.
    requests: BTreeMap<(String, String, u16), u64>,
    /// (method, route) → latency.
    latency: BTreeMap<(String, String), Histogram>,
    /// (scenario, outcome) → count; outcome is passed, missed, invalid or too_large.
    checks: BTreeMap<String, BTreeMap<&'static str, u64>>,
    /// scenario → schedules.
    schedules: BTreeMap<String, u64>,
    /// scenario → checks answered with a verdict given before.
    cached: BTreeMap<String, u64>,
    /// What the sweeper removed: idempotency records, sessions.
    swept_idempotency: u64,
    swept_sessions: u64,
}

/// The methods that get a label of their own; any other method is counted as `other`, so a
/// client cannot add label values (or bytes to `/metrics`) by inventing methods.
const METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE",
];

/// The label of a request's method: a standard method, or `other`.
pub fn method_label(method: &str) -> &'static str {
    METHODS
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("other")
}

#[derive(Default)]
pub struct Metrics {
    registry: Mutex<Registry>,
}

impl Metrics {
    fn with<R>(&self, f: impl FnOnce(&mut Registry) -> R) -> R {
        // A panic while holding the lock cannot leave the counters inconsistent in a way
        // that matters, so a poisoned lock is used as is.
        let mut guard = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }

    /// Counts an answer. `method` is folded with [`method_label`]; `route` must come from a
    /// bounded set (a route template, `unmatched` or `static`).
    pub fn observe_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let method = method_label(method);
        self.with(|r| {
            *r.requests
                .entry((method.to_string(), route.to_string(), status))
                .or_default() += 1;
            let h = r
                .latency
                .entry((method.to_string(), route.to_string()))
                .or_default();
            let seconds = elapsed.as_secs_f64();
            for (i, bound) in BUCKETS_SECONDS.iter().enumerate() {
                if seconds <= *bound {
                    h.counts[i] += 1;
                }
            }
            h.count += 1;
            h.sum_seconds += seconds;
        });
    }

    pub fn observe_check(&self, scenario: &str, outcome: &'static str, schedules: u64) {
        self.with(|r| {
            count(&mut r.checks, scenario, outcome);
            *r.schedules.entry(scenario.to_string()).or_default() += schedules;
        });
    }

    /// A check answered from the verdicts already given: counted as a check, with no
    /// schedules explored.
    pub fn observe_cached_check(&self, scenario: &str, outcome: &'static str) {
        self.with(|r| {
            count(&mut r.checks, scenario, outcome);
            match r.cached.get_mut(scenario) {
                Some(n) => *n += 1,
                None => drop(r.cached.insert(scenario.to_string(), 1)),
            }
        });
    }

    /// Counts what one sweep removed.
    pub fn observe_swept(&self, idempotency: u64, sessions: u64) {
        self.with(|r| {
            r.swept_idempotency += idempotency;
            r.swept_sessions += sessions;
        });
    }

    /// The Prometheus text exposition format, version 0.0.4, with the counts of the store's
    /// group-commit writer.
    pub fn render(&self, writes: &group_commit::Stats) -> String {
        self.with(|r| {
            let mut out = String::new();
            out.push_str("# HELP pipeline_builder_http_requests_total HTTP requests answered, by method, route and status.\n");
            out.push_str("# TYPE pipeline_builder_http_requests_total counter\n");
            for ((method, route, status), n) in &r.requests {
                let _ = writeln!(out, "pipeline_builder_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {n}", escape(method), escape(route));
            }
            out.push_str("# HELP pipeline_builder_http_request_duration_seconds Time to answer an HTTP request, by method and route.\n");
            out.push_str("# TYPE pipeline_builder_http_request_duration_seconds histogram\n");
            for ((method, route), h) in &r.latency {
                let labels = format!("method=\"{}\",route=\"{}\"", escape(method), escape(route));
                for (i, bound) in BUCKETS_SECONDS.iter().enumerate() {
                    let _ = writeln!(out, "pipeline_builder_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {}", h.counts[i]);
                }
                let _ = writeln!(out, "pipeline_builder_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
                let _ = writeln!(out, "pipeline_builder_http_request_duration_seconds_sum{{{labels}}} {}", h.sum_seconds);
                let _ = writeln!(out, "pipeline_builder_http_request_duration_seconds_count{{{labels}}} {}", h.count);
            }
            out.push_str("# HELP pipeline_builder_checks_total Designs checked, by scenario and outcome (passed, missed, invalid, too_large).\n");
            out.push_str("# TYPE pipeline_builder_checks_total counter\n");
            for ((scenario, outcome), n) in r.checks.iter().flat_map(|(s, by)| by.iter().map(move |(o, n)| ((s, o), n))) {
                let _ = writeln!(out, "pipeline_builder_checks_total{{scenario=\"{}\",outcome=\"{outcome}\"}} {n}", escape(scenario));
            }
            out.push_str("# HELP pipeline_builder_schedules_explored_total Failure schedules the simulator ran to the end, by scenario.\n");
            out.push_str("# TYPE pipeline_builder_schedules_explored_total counter\n");
            for (scenario, n) in &r.schedules {
                let _ = writeln!(out, "pipeline_builder_schedules_explored_total{{scenario=\"{}\"}} {n}", escape(scenario));
            }
            out.push_str("# HELP pipeline_builder_checks_cached_total Checks answered with the verdict of the same design checked before, by scenario.\n");
            out.push_str("# TYPE pipeline_builder_checks_cached_total counter\n");
            for (scenario, n) in &r.cached {
                let _ = writeln!(out, "pipeline_builder_checks_cached_total{{scenario=\"{}\"}} {n}", escape(scenario));
            }
            out.push_str("# HELP pipeline_builder_swept_total Expired rows the sweeper removed, by kind (idempotency records, sessions with no work).\n");
            out.push_str("# TYPE pipeline_builder_swept_total counter\n");
            let _ = writeln!(out, "pipeline_builder_swept_total{{kind=\"idempotency\"}} {}", r.swept_idempotency);
            let _ = writeln!(out, "pipeline_builder_swept_total{{kind=\"session\"}} {}", r.swept_sessions);
            single(
                &mut out,
                "pipeline_builder_group_commit_batches_total",
                "counter",
                "Transactions the group-commit writer ran, each holding one or more submission writes.",
                writes.batches,
            );
            single(
                &mut out,
                "pipeline_builder_group_commit_writes_total",
                "counter",
                "Writes (idempotency claims, recorded attempts) the group-commit writer ran in those batches.",
                writes.jobs,
            );
            single(
                &mut out,
                "pipeline_builder_group_commit_failed_batches_total",
                "counter",
                "Batches that failed as a whole; every write in them was answered with the error.",
                writes.failed_batches,
            );
            single(
                &mut out,
                "pipeline_builder_group_commit_largest_batch",
                "gauge",
                "The most writes one batch has held.",
                writes.largest_batch,
            );
            single(
                &mut out,
                "pipeline_builder_group_commit_waiting",
                "gauge",
                "Writes waiting for the group-commit writer's next batch.",
                writes.waiting,
            );
            out
        })
    }
}

/// One metric with no labels: its help, its type and its value.
fn single(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    let _ = writeln!(out, "{name} {value}");
}

fn escape(label: &str) -> String {
    label
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Adds one to a count by scenario and outcome, allocating only for a scenario not seen yet.
fn count(
    checks: &mut BTreeMap<String, BTreeMap<&'static str, u64>>,
    scenario: &str,
    outcome: &'static str,
) {
    let by_outcome = match checks.get_mut(scenario) {
        Some(by) => by,
        None => checks.entry(scenario.to_string()).or_default(),
    };
    *by_outcome.entry(outcome).or_default() += 1;
}
