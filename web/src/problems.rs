//! A design's problems in the inspector's words. The simulator reports each problem with a
//! JSON path, a code and a sentence that may name option keys (`dedupe_window`) and values
//! (`after_write`); a student reads the node by its kind and name, the option by its label
//! and the values by theirs.

use shared::design::{Design, DesignError, DesignErrorCode, Node, NodeKind, OptionValues};
use shared::Scenario;

use crate::canvas::{allowed_values, table_versions};
use crate::words::{kind_title, option_title, value_label};

/// A path into the body the server was sent (`$.design.nodes[2]`) as a path into the design
/// (`$.nodes[2]`), as the browser's own checks write it; any other path as it is.
pub fn in_design(path: &str) -> String {
    match path.strip_prefix("$.design") {
        Some(rest) if rest.is_empty() || rest.starts_with(['.', '[']) => format!("${rest}"),
        _ => path.to_string(),
    }
}

/// The node a path such as `$.nodes[2].options.write` points at, and the option, if any. A
/// submission's answer points into its body, where the design sits under `design`
/// (`$.design.nodes[2]…`); the check's body is the design itself.
fn locate(path: &str) -> Option<(usize, Option<&str>)> {
    let rest = path
        .strip_prefix("$.design.nodes[")
        .or_else(|| path.strip_prefix("$.nodes["))?;
    let (index, rest) = rest.split_once(']')?;
    let option = rest.strip_prefix(".options.").filter(|o| !o.is_empty());
    Some((index.parse().ok()?, option))
}

/// The words of a list of values: "A", "A or B", "A, B or C".
fn either(labels: &[String]) -> String {
    match labels {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// Replaces option keys and values written with underscores by their labels, so that a
/// sentence of the simulator names nothing a student did not see.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.contains('_') {
            let label = NodeKind::ALL
                .iter()
                .flat_map(|k| k.options())
                .find_map(|spec| {
                    if spec.name == word {
                        return Some(option_title(spec.name).to_string());
                    }
                    match spec.values {
                        OptionValues::Choice(values) if values.contains(&word.as_str()) => {
                            Some(format!("“{}”", value_label(spec.name, word)))
                        }
                        _ => None,
                    }
                });
            out.push_str(label.as_deref().unwrap_or(word));
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// One problem of a design in words: which node (by kind and name), which option (by its
/// label), and what to choose, never a JSON path or an option key.
pub fn problem_words(scenario: &Scenario, design: &Design, error: &DesignError) -> String {
    let Some((index, option)) = locate(&error.path) else {
        return plain(&error.message);
    };
    let Some(node) = design.nodes.get(index) else {
        return plain(&error.message);
    };
    let who = format!("{} “{}”", kind_title(node.kind), node.id);
    let Some(option) = option else {
        if let Some(words) = writer_words(design, node, error, &who) {
            return words;
        }
        // "\"paid\" is not connected" reads "Warehouse table “paid” is not connected".
        let named = format!("\"{}\"", node.id);
        return match error.message.strip_prefix(&named) {
            Some(rest) => format!("{who}{}", plain(rest)),
            None => format!("{who}: {}", plain(&error.message)),
        };
    };
    let label = option_title(option);
    if let Some(words) = version_words(scenario, node, error, &who) {
        return words;
    }
    match error.code.as_str() {
        "bad_option_value" | "not_in_palette" | "wrong_type" | "missing_option" => {
            let offered: Vec<String> = allowed_values(scenario, node.kind, option)
                .iter()
                .map(|v| format!("“{}”", value_label(option, v)))
                .collect();
            if offered.is_empty() {
                format!("{who}: {label} — {}", plain(&error.message))
            } else {
                format!("{who}: choose {label}: {}.", either(&offered))
            }
        }
        _ => format!("{who}, {label}: {}", plain(&error.message)),
    }
}

/// The nodes at the other end of a node's connections, by kind and name: those that feed
/// it (`into`) or those it feeds.
fn neighbours(design: &Design, node: &Node, into: bool) -> Vec<String> {
    design
        .edges
        .iter()
        .filter_map(|e| match into {
            true if e.to == node.id => Some(&e.from),
            false if e.from == node.id => Some(&e.to),
            _ => None,
        })
        .filter_map(|id| design.nodes.iter().find(|n| n.id == *id))
        .map(|n| format!("{} “{}”", kind_title(n.kind), n.id))
        .collect()
}

/// A table with two writers, or read before anything writes it, in words that name the
/// stages at either end.
fn writer_words(design: &Design, node: &Node, error: &DesignError, who: &str) -> Option<String> {
    let table = node
        .options
        .get("table")
        .and_then(|t| t.as_str())
        .unwrap_or("this table");
    match error.code {
        DesignErrorCode::TwoWriters => Some(format!(
            "{who} is written by {}: one stage writes a table, and a later stage may read it; remove all but one of these connections.",
            and(&neighbours(design, node, true))
        )),
        DesignErrorCode::NoWriter => Some(format!(
            "{who} is read by {}, but nothing writes {table} before: connect the stage that fills it into this node.",
            and(&neighbours(design, node, false))
        )),
        _ => None,
    }
}

/// A version the table does not offer, or "merge if newer" on a table without one.
fn version_words(
    scenario: &Scenario,
    node: &Node,
    error: &DesignError,
    who: &str,
) -> Option<String> {
    let table = node
        .options
        .get("table")
        .and_then(|t| t.as_str())
        .unwrap_or("this table");
    let offered: Vec<String> = table_versions(scenario, node)
        .iter()
        .map(|v| format!("“{v}”"))
        .collect();
    let newer = value_label("write", "merge_if_newer");
    match error.code {
        DesignErrorCode::BadVersion if offered.is_empty() => Some(format!(
            "{who}: {table} has no version column; choose another way to write it than “{newer}”."
        )),
        DesignErrorCode::BadVersion => Some(format!(
            "{who}: choose {}: {}.",
            option_title("version"),
            either(&offered)
        )),
        DesignErrorCode::NoVersion => Some(format!(
            "{who}: “{newer}” compares the version of each row, and {table} has no version column; choose another way to write it."
        )),
        _ => None,
    }
}

/// The words of a list of names: "A", "A and B", "A, B and C".
fn and(names: &[String]) -> String {
    match names {
        [] => "nothing".to_string(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value as Json;

    #[test]
    fn paths_into_a_submission_read_as_paths_into_its_design() {
        assert_eq!(in_design("$.design.nodes[1]"), "$.nodes[1]");
        assert_eq!(
            in_design("$.design.nodes[1].options.write"),
            "$.nodes[1].options.write"
        );
        assert_eq!(in_design("$.design"), "$");
        assert_eq!(in_design("$.nodes[1]"), "$.nodes[1]");
        assert_eq!(in_design("$.designer"), "$.designer");
        assert_eq!(in_design("$.scenario"), "$.scenario");
    }

    fn scenario(name: &str) -> Scenario {
        let text = std::fs::read_to_string(format!(
            "{}/../scenarios/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        Scenario::from_json(&text).unwrap()
    }

    fn words_of(scenario: &Scenario, design: &Design) -> Vec<String> {
        let compiled = shared::Compiled::new(scenario.clone()).unwrap();
        shared::validate(&compiled, design.clone())
            .err()
            .unwrap_or_default()
            .iter()
            .map(|e| problem_words(scenario, design, e))
            .collect()
    }

    /// Nothing a student reads names a JSON path or an option key.
    fn assert_plain(words: &[String]) {
        assert!(!words.is_empty());
        for w in words {
            assert!(!w.contains("$."), "{w}");
            assert!(!w.contains("nodes["), "{w}");
            for kind in NodeKind::ALL {
                for spec in kind.options() {
                    if spec.name.contains('_') {
                        assert!(!w.contains(spec.name), "{w}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_count_outside_the_palette_speaks_the_inspectors_words() {
        let scenario = scenario("dedupe-by-key");
        let mut design =
            shared::design::design_from_json(scenario.starting_design.as_ref().unwrap()).unwrap();
        let consumer = design
            .nodes
            .iter_mut()
            .find(|n| n.kind == NodeKind::StreamConsumer)
            .unwrap();
        let id = consumer.id.clone();
        consumer
            .options
            .insert("dedupe".into(), Json::from("in_memory"));
        consumer
            .options
            .insert("dedupe_window".into(), Json::from(7));
        let words = words_of(&scenario, &design);
        assert_plain(&words);
        assert!(
            words.contains(&format!(
                "Stream consumer “{id}”: choose Keys remembered: “2”, “3” or “4”."
            )),
            "{words:?}"
        );
    }

    #[test]
    fn choices_and_wiring_problems_name_nodes_options_and_values_by_label() {
        let scenario = scenario("offset-commit");
        let mut design =
            shared::design::design_from_json(scenario.starting_design.as_ref().unwrap()).unwrap();
        design.nodes[1]
            .options
            .insert("offset_commit".into(), Json::from("with_write"));
        design.nodes[2]
            .options
            .insert("write".into(), Json::from("delete_insert"));
        design.edges.pop();
        let words = words_of(&scenario, &design);
        assert_plain(&words);
        assert!(
            words.iter().any(|w| w
                == "Stream consumer “consumer”: choose Offset commit: “Commit before write” or “Commit after write”."),
            "{words:?}"
        );
        assert!(
            words
                .iter()
                .any(|w| w.starts_with("Warehouse table “paid”: choose How it writes:")),
            "{words:?}"
        );
    }

    #[test]
    fn a_node_named_by_the_simulator_is_named_once() {
        let scenario = scenario("offset-commit");
        let mut design =
            shared::design::design_from_json(scenario.starting_design.as_ref().unwrap()).unwrap();
        design.edges.pop();
        let words = words_of(&scenario, &design);
        assert_plain(&words);
        assert!(
            words.contains(&"Warehouse table “paid” is not connected to the pipeline".to_string()),
            "{words:?}"
        );
        assert!(
            words
                .iter()
                .any(|w| w.starts_with("Stream consumer “consumer” writes nowhere")),
            "{words:?}"
        );
    }

    #[test]
    fn plain_replaces_keys_and_values_only() {
        assert_eq!(
            plain("dedupe_window 7 is not offered; delete_insert replaces paid_orders"),
            "Keys remembered 7 is not offered; “Delete-insert the day” replaces paid_orders"
        );
        assert_eq!(locate("$.nodes[3].options.write"), Some((3, Some("write"))));
        assert_eq!(locate("$.nodes[0]"), Some((0, None)));
        assert_eq!(
            locate("$.design.nodes[1].options.dedupe_window"),
            Some((1, Some("dedupe_window")))
        );
        assert_eq!(locate("$.edges[0]"), None);
    }

    fn design_of(json: &Json) -> Design {
        shared::design::design_from_json(json).unwrap()
    }

    #[test]
    fn a_table_with_two_writers_names_both_stages() {
        let scenario = scenario("whole-path");
        let mut design = design_of(&scenario.reference_designs[0].design);
        // A second consumer of the checkout lands its payments in the same raw table.
        let mut again = design.nodes[1].clone();
        again.id = "again".into();
        design.nodes.push(again);
        for (from, to) in [("checkout", "again"), ("again", "raw")] {
            design.edges.push(shared::design::Edge {
                from: from.into(),
                to: to.into(),
            });
        }
        let words = words_of(&scenario, &design);
        assert_plain(&words);
        assert!(
            words.contains(&"Warehouse table “raw” is written by Stream consumer “consumer” and Stream consumer “again”: one stage writes a table, and a later stage may read it; remove all but one of these connections.".to_string()),
            "{words:?}"
        );
    }

    #[test]
    fn a_table_read_before_anything_writes_it_names_its_reader() {
        let scenario = scenario("whole-path");
        let mut design = design_of(&scenario.reference_designs[0].design);
        design.edges.retain(|e| e.to != "raw");
        let words = words_of(&scenario, &design);
        assert_plain(&words);
        assert!(
            words.contains(&"Warehouse table “raw” is read by Batch job “nightly”, but nothing writes raw_payments before: connect the stage that fills it into this node.".to_string()),
            "{words:?}"
        );
    }

    #[test]
    fn a_version_the_table_does_not_offer_lists_the_ones_it_does() {
        let scenario = scenario("out-of-order");
        let mut design = design_of(scenario.starting_design.as_ref().unwrap());
        let status = design.nodes.iter_mut().find(|n| n.id == "status").unwrap();
        status
            .options
            .insert("write".into(), Json::from("merge_if_newer"));
        status
            .options
            .insert("version".into(), Json::from("order_id"));
        let words = words_of(&scenario, &design);
        assert_plain(&words);
        assert!(
            words.contains(
                &"Warehouse table “status”: choose Version column: “version”.".to_string()
            ),
            "{words:?}"
        );
    }

    #[test]
    fn merge_if_newer_on_a_table_without_a_version_says_so() {
        // late-correction's tables have no version column; its palette is widened here to
        // offer the write all the same.
        let mut scenario = scenario("late-correction");
        if let Some(table) = scenario.palette.table.as_mut() {
            table
                .entry("write".into())
                .or_default()
                .push("merge_if_newer".into());
        }
        let mut design = design_of(scenario.starting_design.as_ref().unwrap());
        design.nodes[2]
            .options
            .insert("write".into(), Json::from("merge_if_newer"));
        let words = words_of(&scenario, &design);
        assert_plain(&words);
        assert!(
            words.contains(&"Warehouse table “orders”: “Merge if newer” compares the version of each row, and orders has no version column; choose another way to write it.".to_string()),
            "{words:?}"
        );
    }
}
