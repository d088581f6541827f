//! The sentences of the verdict's untested options, in the chapter's words: why another value
//! of an option gives the same result in this scenario, and, where the chapter calls a value
//! wrong in general, what goes wrong with it in real life and which scenario shows it.
//!
//! A sentence names a value by its label only when the scenario offers it; a value the
//! scenario does not offer is described in words ("a job that asks the clock"), and a raw
//! option value (`current_date_minus_1`) never appears.

use chrono::{Duration, Timelike};

use crate::design::{Design, Node, NodeKind};
use crate::scenario::{Check, RunKind, Scenario};
use crate::verdict::UntestedOption;
use crate::words::{kind_title, option_title, option_value, value_label};

/// An option of a design that the scenario's failures do not tell apart from its other values.
pub(crate) struct Untested<'a> {
    pub scenario: &'a Scenario,
    pub design: &'a Design,
    pub node: &'a Node,
    pub option: &'a str,
    pub current: &'a str,
    /// The other values tried, each giving the same result.
    pub tried: &'a [String],
    /// Whether the scenario offers the values tried (otherwise it offers only `current`).
    pub offered: bool,
    /// The ids of the requirements the design misses.
    pub missed: &'a [String],
    /// The failure kinds the scenario switches on.
    pub kinds_on: &'a [&'static str],
}

/// The sentence, and the scenario that shows what goes wrong with the value the chapter calls
/// wrong (none when that is this scenario, or when no value is wrong in general).
pub(crate) fn untested_note(u: &Untested) -> (String, Vec<String>) {
    let lead = if u.offered {
        let labels: Vec<String> = u
            .tried
            .iter()
            .map(|v| format!("“{}”", value_label(u.option, v)))
            .collect();
        format!("{} gives the same result here", labels.join(" or "))
    } else {
        let words: Vec<&str> = u.tried.iter().map(|v| in_words(u.option, v)).collect();
        format!(
            "the only choice here, and {} would give the same result",
            words.join(" or ")
        )
    };
    let mut why = format!("{}{lead}: {}.", stage_of(u.design, u.node), because(u));
    let mut learn_in = Vec::new();
    let values = std::iter::once(u.current).chain(u.tried.iter().map(String::as_str));
    if let Some((sentence, scenario)) = values.filter_map(|v| wrong_in_general(u, v)).next() {
        why.push_str(&format!(" In real life, {sentence}."));
        if scenario != u.scenario.id {
            learn_in.push(scenario.to_string());
        }
    }
    (why, learn_in)
}

/// Where the option acts, when the design has several stages (jobs, consumers, senders):
/// "In the stream consumer “consumer”: ", or for a table, "In the batch job “nightly”, which
/// writes “revenue”: ". Empty for a design of one stage, where it could be no other.
fn stage_of(design: &Design, node: &Node) -> String {
    let is_stage = |k: NodeKind| {
        matches!(
            k,
            NodeKind::BatchJob | NodeKind::StreamConsumer | NodeKind::Sender
        )
    };
    if design.nodes.iter().filter(|n| is_stage(n.kind)).count() < 2 {
        return String::new();
    }
    let named = |n: &Node| format!("the {} “{}”", kind_title(n.kind).to_lowercase(), n.id);
    if is_stage(node.kind) {
        return format!("In {}: ", named(node));
    }
    let writer = design
        .edges
        .iter()
        .filter(|e| e.to == node.id)
        .find_map(|e| design.nodes.iter().find(|n| n.id == e.from));
    match writer {
        Some(w) => format!("In {}, which writes “{}”: ", named(w), node.id),
        None => String::new(),
    }
}

/// One line for the CLI and Gradescope: the node, the option and its value by their labels,
/// the sentence, and where to learn more.
pub fn untested_line(u: &UntestedOption) -> String {
    let learn = if u.learn_in.is_empty() {
        String::new()
    } else {
        format!(" Learn it in {}.", u.learn_in.join(", "))
    };
    format!(
        "“{}” · {}: {} — {}{learn}",
        u.node,
        option_title(&u.option),
        value_label(&u.option, &u.value),
        u.why
    )
}

/// A value the scenario does not offer, in words: never its label, never its raw name.
fn in_words(option: &str, value: &str) -> &'static str {
    match (option, value) {
        ("date_filter", "current_date_minus_1") => "a job that asks the clock",
        ("date_filter", _) => "the run's logical date",
        ("transaction", "none") => "autocommit",
        ("transaction", _) => "one transaction per run",
        ("loaded_at", "now") => "stamping the wall-clock time",
        ("loaded_at", "logical_date") => "stamping the run's date",
        ("loaded_at", _) => "no stamp",
        ("offset_commit", "before_write") => "committing the offset before the write",
        ("offset_commit", "after_write") => "committing the offset after the write",
        ("offset_commit", _) => "saving the offset with the rows",
        ("dedupe", "in_memory") => "remembering recent keys",
        ("dedupe", _) => "writing every message",
        ("dedupe_window", _) => "another number of keys remembered",
        ("on_timeout", "give_up") => "giving up after silence",
        ("on_timeout", _) => "sending again after silence",
        ("idempotency_key", "none") => "sending no key",
        ("idempotency_key", "per_attempt") => "a new key for every send",
        ("idempotency_key", _) => "one key per action",
        ("write", "append") => "a plain INSERT",
        ("write", "delete_insert") => "replacing the day",
        ("write", "merge") => "a MERGE by key",
        ("write", "insert_ignore") => "skipping known keys",
        ("write", _) => "merging only newer versions",
        _ => "another value",
    }
}

/// Why the values give the same result here, as precisely as the scenario lets us say.
fn because(u: &Untested) -> String {
    if let Some(never) = never_tested(u) {
        return never;
    }
    if u.option == "date_filter" {
        return clock_days(u.scenario);
    }
    if let Some(specific) = specific(u) {
        return specific;
    }
    match u.missed.len() {
        0 => "under this scenario's failures every requirement holds either way".into(),
        1 => "your design misses the same requirement either way".into(),
        n => format!("your design misses the same {n} requirements either way"),
    }
}

/// The failures that tell the option's values apart, when the scenario has none of them.
fn never_tested(u: &Untested) -> Option<String> {
    let (kinds, phrase): (&[&str], &str) = match u.option {
        "offset_commit" => (
            &["consumer_crash"],
            "never crashes the consumer between the commit and the write",
        ),
        "dedupe" | "dedupe_window" => (
            &["consumer_crash", "ack_lost", "redelivery"],
            "never brings a message twice",
        ),
        "on_timeout" => (
            &["message_lost", "ack_lost"],
            "never loses a message or an ack",
        ),
        "idempotency_key" => (
            &["ack_lost"],
            "never loses an ack, so nothing is sent twice",
        ),
        "transaction" | "loaded_at" => (&["job_crash"], "never crashes the job"),
        "write" => (
            &["job_crash", "consumer_crash", "ack_lost", "redelivery"],
            "never runs a write twice",
        ),
        _ => return None,
    };
    let none_on = u.scenario.failures.bound == 0 || !kinds.iter().any(|k| u.kinds_on.contains(k));
    // A rerun runs the job's writes again and stamps its rows anew, with no failure at all.
    let rerun_tells = matches!(u.option, "loaded_at" | "write") && has_rerun(u.scenario);
    (none_on && !rerun_tells).then(|| format!("this scenario {phrase}"))
}

fn has_rerun(s: &Scenario) -> bool {
    s.runs.iter().any(|r| r.kind == RunKind::Manual)
}

/// Which day a job that asks the clock loads in each attempt of each run, against the day
/// the run is for.
fn clock_days(s: &Scenario) -> String {
    let crash = s
        .failures
        .job_crash
        .as_ref()
        .filter(|_| s.failures.bound > 0);
    let mut right = Vec::new();
    for run in &s.runs {
        let mut starts = vec![(run.start.0, false)];
        if let Some(c) = crash.filter(|c| c.runs.as_ref().is_none_or(|r| r.contains(&run.id))) {
            for k in 1..=i64::from(c.max_per_run) {
                let later = run.start.0 + Duration::minutes(i64::from(c.retry_delay_minutes) * k);
                starts.push((later, true));
            }
        }
        for (start, retry) in starts {
            let day = start.date() - Duration::days(1);
            let logical = run.logical_date;
            if day != logical {
                let who = match (retry, run.kind) {
                    (true, _) => "a retry",
                    (false, RunKind::Manual) => "the rerun",
                    (false, RunKind::Scheduled) => "the run",
                };
                return format!(
                    "with the clock, {who} of {} {:02}:{:02} loads {day} and never touches {logical}",
                    start.date(),
                    start.hour(),
                    start.minute()
                );
            }
        }
        right.push(format!(
            "every attempt of the run for {} starts on {}, so the clock's day before is {} too",
            run.logical_date,
            run.start.0.date(),
            run.logical_date
        ));
    }
    right.join("; ")
}

/// A reason that follows from the rest of the design or the scenario's requirements.
fn specific(u: &Untested) -> Option<String> {
    match u.option {
        "dedupe" | "dedupe_window" => {
            let sink = sink_of(u.design, &u.node.id)?;
            let write = option_value(sink, &u.scenario.palette, "write");
            let table = option_value(sink, &u.scenario.palette, "table");
            matches!(write, "merge" | "insert_ignore" | "merge_if_newer").then(|| {
                format!("{table} is written by key, so the table itself skips a repeat either way")
            })
        }
        "idempotency_key" => (option_value(u.node, &u.scenario.palette, "on_timeout") == "give_up")
            .then(|| "the sender gives up after silence, so it never sends anything twice".into()),
        "transaction" if u.missed.is_empty() => {
            let watches = u
                .scenario
                .requirements
                .iter()
                .any(|r| matches!(r.check, Check::NeverSeen { .. } | Check::NeverDrops { .. }));
            (!watches).then(|| {
                "no requirement looks at the tables while a run is half done, and the retry finishes the run either way".into()
            })
        }
        _ => None,
    }
}

/// The table node a node writes (its first).
fn sink_of<'a>(design: &'a Design, node: &str) -> Option<&'a Node> {
    design
        .edges
        .iter()
        .filter(|e| e.from == node)
        .find_map(|e| {
            design
                .nodes
                .iter()
                .find(|n| n.id == e.to && n.kind == NodeKind::Table)
        })
}

/// The kind of the stage that writes a table node.
fn writer_of(design: &Design, node: &str) -> Option<NodeKind> {
    let edge = design.edges.iter().find(|e| e.to == node)?;
    design
        .nodes
        .iter()
        .find(|n| n.id == edge.from)
        .map(|n| n.kind)
}

/// A value the chapter calls wrong in general: what goes wrong with it in real life, and the
/// shipped scenario whose lesson is exactly that value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lesson {
    pub option: &'static str,
    pub value: &'static str,
    /// For a table's write: the kind of stage that writes the table, since a retried day and
    /// a message that comes again are different lessons. `None`: any node with the option.
    pub writer: Option<NodeKind>,
    /// What goes wrong, in the chapter's words (a clause after "In real life, ").
    pub harm: &'static str,
    /// The concept, among the scenario's `concepts`, that names the lesson.
    pub concept: &'static str,
    /// The scenario that teaches it: the first in the course's order that names the concept,
    /// offers the value and ships a wrong design that fails with it.
    pub scenario: &'static str,
}

/// Every value the chapter calls wrong in general, each with the scenario that teaches it.
pub const LESSONS: [Lesson; 10] = [
    Lesson {
        option: "date_filter",
        value: "current_date_minus_1",
        writer: None,
        harm: "a retry after midnight or a rerun asks the clock and loads the wrong day, and the day the run is for stays unfixed",
        concept: "the clock is not an input",
        scenario: "logical-date",
    },
    Lesson {
        option: "loaded_at",
        value: "now",
        writer: None,
        harm: "a retry or a rerun stamps another time, so the rows change",
        concept: "loaded_at",
        scenario: "logical-date",
    },
    Lesson {
        option: "transaction",
        value: "none",
        writer: None,
        harm: "without a transaction a crash after the first DELETE leaves the day empty: readers see no revenue until the retry finishes",
        concept: "what readers see",
        scenario: "safe-rerun",
    },
    Lesson {
        option: "write",
        value: "append",
        writer: Some(NodeKind::BatchJob),
        harm: "a plain INSERT lands a retried day a second time: the chapter's 50.00 instead of 25.00",
        concept: "retry",
        scenario: "safe-retry",
    },
    Lesson {
        option: "write",
        value: "append",
        writer: Some(NodeKind::StreamConsumer),
        harm: "a plain INSERT writes a message that comes again a second time",
        concept: "commit",
        scenario: "offset-commit",
    },
    Lesson {
        option: "offset_commit",
        value: "before_write",
        writer: None,
        harm: "a consumer that commits before it writes loses the message when it crashes in between",
        concept: "commit",
        scenario: "offset-commit",
    },
    Lesson {
        option: "dedupe",
        value: "in_memory",
        writer: None,
        harm: "keys kept in memory are forgotten at a restart, and a copy that comes later than the memory holds is written again",
        concept: "in-memory dedupe",
        scenario: "dedupe-by-key",
    },
    Lesson {
        option: "on_timeout",
        value: "give_up",
        writer: None,
        harm: "a sender that gives up after silence loses the message whenever it was the message, not the ack, that was lost",
        concept: "ack",
        scenario: "delivery-promise",
    },
    Lesson {
        option: "idempotency_key",
        value: "none",
        writer: None,
        harm: "a resent charge that carries no key, or a new one, is billed twice",
        concept: "NULL never matches a key",
        scenario: "idempotency-key",
    },
    Lesson {
        option: "idempotency_key",
        value: "per_attempt",
        writer: None,
        harm: "a resent charge that carries no key, or a new one, is billed twice",
        concept: "idempotency key",
        scenario: "idempotency-key",
    },
];

/// The lesson of a node's option value, if the chapter calls that value wrong in general.
pub fn lesson_of(design: &Design, node: &Node, option: &str, value: &str) -> Option<Lesson> {
    let writer = (option == "write")
        .then(|| writer_of(design, &node.id))
        .flatten();
    LESSONS.into_iter().find(|l| {
        l.option == option && l.value == value && (l.writer.is_none() || l.writer == writer)
    })
}

/// What the chapter says goes wrong with a value in real life, and the scenario that shows it.
fn wrong_in_general(u: &Untested, value: &str) -> Option<(&'static str, &'static str)> {
    lesson_of(u.design, u.node, u.option, value).map(|l| (l.harm, l.scenario))
}
