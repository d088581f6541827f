//! What the canvas says about kinds and options, in the chapter's words.

use shared::design::NodeKind;

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

/// A one-line summary of a node's options, shown on the node itself.
pub fn node_summary(node: &shared::design::Node) -> String {
    let get = |name: &str| {
        node.options
            .get(name)
            .and_then(|v| v.as_str())
            .unwrap_or("")
    };
    match node.kind {
        NodeKind::SourceTable => get("table").to_string(),
        NodeKind::Stream => get("topic").to_string(),
        NodeKind::Sender => format!(
            "{} · key {}",
            value_label("on_timeout", get("on_timeout")),
            get("idempotency_key").replace('_', " ")
        ),
        NodeKind::BatchJob => {
            let tx = if get("transaction") == "per_run" {
                "1 transaction"
            } else {
                "autocommit"
            };
            let day = if get("date_filter") == "current_date_minus_1" {
                "clock"
            } else {
                "logical date"
            };
            format!("{day} · {tx}")
        }
        NodeKind::StreamConsumer => {
            let c = match get("offset_commit") {
                "after_write" => "commit after write",
                "with_write" => "offset with rows",
                _ => "commit before write",
            };
            if get("dedupe") == "in_memory" {
                format!("{c} · dedupe")
            } else {
                c.to_string()
            }
        }
        NodeKind::Table => format!("{} · {}", get("table"), get("write").replace('_', "-")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_choice_value_has_words() {
        for kind in NodeKind::ALL {
            for spec in kind.options() {
                if let shared::design::OptionValues::Choice(values) = spec.values {
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
                if let shared::design::OptionValues::Choice(values) = spec.values {
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
}
