//! The labels of kinds, options and values, in the chapter's words: what the inspector, the
//! canvas's nodes, the notes under a verdict, the CLI and the Gradescope output all say.
//!
//! A label says what a choice does, never the delivery promise it earns: telling that apart
//! is a scenario's work, and the promise is named only in a verdict.

use crate::design::{Node, NodeKind, OptionValues};
use crate::scenario::Palette;

pub fn kind_title(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::SourceTable => "Source table",
        NodeKind::Stream => "Stream",
        NodeKind::Sender => "Sender",
        NodeKind::BatchJob => "Batch job",
        NodeKind::StreamConsumer => "Stream consumer",
        NodeKind::Table => "Warehouse table",
    }
}

pub fn kind_line(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::SourceTable => "A table of the shop's database that the job reads.",
        NodeKind::Stream => "An ordered, replayable log; each message has an offset from 0.",
        NodeKind::Sender => "Sends each message straight to a consumer and waits for an ack.",
        NodeKind::BatchJob => "The daily job: the scheduler starts it with a logical date and retries it when it fails.",
        NodeKind::StreamConsumer => "Reads messages in offset order, writes each to its table, commits its offset.",
        NodeKind::Table => "A warehouse table written by a job or a consumer.",
    }
}

pub fn option_title(option: &str) -> &'static str {
    match option {
        "table" => "Table",
        "topic" => "Stream",
        "on_timeout" => "On silence",
        "idempotency_key" => "Idempotency key",
        "date_filter" => "Which day it loads",
        "transaction" => "Transaction",
        "loaded_at" => "loaded_at stamp",
        "offset_commit" => "Offset commit",
        "dedupe" => "Remove repeats",
        "dedupe_window" => "Keys remembered",
        "write" => "How it writes",
        "key" => "Key",
        "version" => "Version column",
        _ => "Option",
    }
}

/// A short label and one line in the chapter's words for an option value.
pub fn value_words(option: &str, value: &str) -> (&'static str, &'static str) {
    match (option, value) {
        ("date_filter", "current_date_minus_1") => (
            "Clock: CURRENT_DATE - 1",
            "asks the clock; a retry after midnight loads another day",
        ),
        ("date_filter", "logical_date") => (
            "Logical date",
            "the day the run is for, the same on every retry",
        ),
        ("transaction", "none") => (
            "None (autocommit)",
            "each statement commits on its own; a crash leaves half a run behind",
        ),
        ("transaction", "per_run") => (
            "One per run",
            "BEGIN … COMMIT around all steps; a crash rolls everything back",
        ),
        ("loaded_at", "none") => ("Not stamped", "rows carry no load time"),
        ("loaded_at", "now") => ("now()", "a retry gets a different time, so the rows change"),
        ("loaded_at", "logical_date") => (
            "The logical date",
            "the same stamp on every retry and rerun",
        ),
        ("write", "append") => ("Append", "plain INSERT: a repeat lands as a new row"),
        ("write", "delete_insert") => (
            "Delete-insert the day",
            "replaces the day's partition: “set to ON”, safe to repeat",
        ),
        ("write", "merge") => (
            "Merge by key",
            "MERGE: a known key is updated, a new one inserted",
        ),
        ("write", "insert_ignore") => (
            "Insert, skip known keys",
            "ON CONFLICT DO NOTHING: a repeat is skipped",
        ),
        ("write", "merge_if_newer") => (
            "Merge if newer",
            "apply a row only when its version is newer than the stored row's; an older one is skipped",
        ),
        ("offset_commit", "before_write") => (
            "Commit before write",
            "moves on first, then writes: a crash between the two skips the message",
        ),
        ("offset_commit", "after_write") => (
            "Commit after write",
            "writes first, then moves on: a crash between the two reads the message again",
        ),
        ("offset_commit", "with_write") => (
            "Offset with the rows",
            "the row and the offset commit in one transaction: both or neither",
        ),
        ("dedupe", "none") => ("No", "every message that arrives is written"),
        ("dedupe", "in_memory") => (
            "Recent keys in memory",
            "a restart forgets them, and a late copy is missed",
        ),
        ("on_timeout", "give_up") => (
            "Give up",
            "after silence it goes on to the next message and never sends that one again",
        ),
        ("on_timeout", "resend") => (
            "Resend",
            "after silence it sends the same message again, until it hears an ack",
        ),
        ("idempotency_key", "none") => (
            "None",
            "the receiver cannot tell a resend from a new action",
        ),
        ("idempotency_key", "per_attempt") => (
            "New key per send",
            "a resend carries a new key, so it looks new",
        ),
        ("idempotency_key", "per_action") => (
            "One key per action",
            "made once and sent again with every retry: a resend is recognised",
        ),
        ("table", _) => ("", "the table this node stands for"),
        ("topic", _) => ("", "the stream this node reads"),
        ("dedupe_window", _) => ("", "how many recent keys the consumer remembers"),
        ("version", _) => (
            "",
            "the column that says which of two updates of a row is newer",
        ),
        _ => ("", ""),
    }
}

/// The label of a value: the chapter's words, or the value itself for names.
pub fn value_label(option: &str, value: &str) -> String {
    match value_words(option, value).0 {
        "" => value.to_string(),
        label => label.to_string(),
    }
}

/// The value of a choice option on a node: the design's, or the palette's default when the
/// design leaves it out (as the check reads it).
pub fn option_value<'a>(node: &'a Node, palette: &Palette, option: &str) -> &'a str {
    if let Some(v) = node.options.get(option).and_then(|v| v.as_str()) {
        return v;
    }
    let values = node
        .kind
        .options()
        .iter()
        .find_map(|spec| match spec.values {
            OptionValues::Choice(values) if spec.name == option => Some(values),
            _ => None,
        });
    values.map_or("", |values| palette.default_of(node.kind, option, values))
}

/// A one-line summary of a node's options, shown on the node itself: the same words for the
/// same choices in every scenario, options the design leaves out read as their defaults.
pub fn node_summary(node: &Node, palette: &Palette) -> String {
    let get = |name: &str| option_value(node, palette, name);
    match node.kind {
        NodeKind::SourceTable => get("table").to_string(),
        NodeKind::Stream => get("topic").to_string(),
        NodeKind::Sender => {
            let key = match get("idempotency_key") {
                "per_attempt" => "new key per send",
                "per_action" => "one key per action",
                _ => "no key",
            };
            format!("{} · {key}", value_label("on_timeout", get("on_timeout")))
        }
        NodeKind::BatchJob => {
            let day = match get("date_filter") {
                "current_date_minus_1" => "clock",
                _ => "logical date",
            };
            let tx = match get("transaction") {
                "per_run" => "1 transaction",
                _ => "autocommit",
            };
            match get("loaded_at") {
                "now" => format!("{day} · {tx} · stamps now()"),
                "logical_date" => format!("{day} · {tx} · stamps the date"),
                _ => format!("{day} · {tx}"),
            }
        }
        NodeKind::StreamConsumer => {
            let commit = match get("offset_commit") {
                "after_write" => "commit after write",
                "with_write" => "offset with the rows",
                _ => "commit before write",
            };
            match get("dedupe") {
                "in_memory" => format!("{commit} · keys in memory"),
                _ => commit.to_string(),
            }
        }
        NodeKind::Table => {
            let write = match get("write") {
                "delete_insert" => "delete-insert",
                "merge" => "merge by key",
                "insert_ignore" => "skip known keys",
                "merge_if_newer" => "merge if newer",
                _ => "append",
            };
            format!("{} · {write}", get("table"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_choice_value_has_words() {
        for kind in NodeKind::ALL {
            for spec in kind.options() {
                if let crate::design::OptionValues::Choice(values) = spec.values {
                    for v in values {
                        let (label, line) = value_words(spec.name, v);
                        assert!(
                            !label.is_empty() && !line.is_empty(),
                            "{kind} {} {v}",
                            spec.name
                        );
                    }
                }
                assert_ne!(option_title(spec.name), "Option", "{}", spec.name);
            }
        }
    }

    #[test]
    fn chapter_words_for_offset_commit() {
        assert_eq!(
            value_words("offset_commit", "after_write"),
            (
                "Commit after write",
                "writes first, then moves on: a crash between the two reads the message again"
            )
        );
    }

    #[test]
    fn merge_if_newer_says_it_applies_a_row_only_when_its_version_is_newer() {
        let (label, line) = value_words("write", "merge_if_newer");
        assert_eq!(label, "Merge if newer");
        assert!(
            line.starts_with("apply a row only when its version is newer"),
            "{line}"
        );
        assert_eq!(option_title("version"), "Version column");
    }

    /// Which promise a choice earns is what a scenario asks the student to work out, so the
    /// words say what the choice does and never name the promise.
    #[test]
    fn labels_say_what_a_choice_does_never_the_delivery_promise_it_earns() {
        for kind in NodeKind::ALL {
            for spec in kind.options() {
                if let crate::design::OptionValues::Choice(values) = spec.values {
                    for v in values {
                        let (label, line) = value_words(spec.name, v);
                        for words in [label, line] {
                            let lower = words.to_ascii_lowercase();
                            assert!(
                                !lower.contains("-once") && !lower.contains(" once:"),
                                "{} {v}: {words}",
                                spec.name
                            );
                        }
                    }
                }
            }
        }
    }

    /// A node reads the same in every scenario: an option the design leaves out reads as its
    /// default, by the same words as a node that names it.
    #[test]
    fn node_summaries_read_options_left_out_as_their_defaults() {
        let palette = Palette::default();
        let node = |kind: &str, options: serde_json::Value| -> Node {
            serde_json::from_value(serde_json::json!({"id": "n", "kind": kind, "options": options}))
                .unwrap()
        };
        let bare = node_summary(&node("sender", serde_json::json!({})), &palette);
        let named = node_summary(
            &node(
                "sender",
                serde_json::json!({"on_timeout": "give_up", "idempotency_key": "none"}),
            ),
            &palette,
        );
        assert_eq!(bare, "Give up · no key");
        assert_eq!(bare, named);
        assert_eq!(
            node_summary(
                &node(
                    "sender",
                    serde_json::json!({"on_timeout": "resend", "idempotency_key": "per_action"})
                ),
                &palette
            ),
            "Resend · one key per action"
        );
        assert_eq!(
            node_summary(&node("batch_job", serde_json::json!({})), &palette),
            "clock · autocommit"
        );
        assert_eq!(
            node_summary(
                &node("table", serde_json::json!({"table": "orders"})),
                &palette
            ),
            "orders · append"
        );
    }
}
