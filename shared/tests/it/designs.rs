//! Design parsing and validation: every problem reported, each with its JSON path.

use crate::Lesson;
use serde_json::json;

use crate::{batch_design, scenario_file};
use shared::validate_json;

fn errors(design: serde_json::Value) -> Vec<(String, String)> {
    let s = scenario_file("safe-retry");
    match validate_json(&s.compiled(), &design) {
        Ok(_) => Vec::new(),
        Err(list) => list
            .into_iter()
            .map(|e| (e.path, e.code.as_str().to_string()))
            .collect(),
    }
}

fn has(list: &[(String, String)], path: &str, code: &str) -> bool {
    list.iter().any(|(p, c)| p == path && c == code)
}

#[test]
fn the_reference_design_validates_with_defaults() {
    let s = scenario_file("safe-retry");
    let v = validate_json(
        &s.compiled(),
        &batch_design("per_run", "delete_insert", "delete_insert"),
    )
    .unwrap();
    match v.pipeline().stages.as_slice() {
        [shared::design::Stage::Job(job)] => {
            assert_eq!(
                job.options.loaded_at,
                shared::design::LoadedAt::None,
                "a missing option takes its default"
            );
            assert_eq!(
                job.sinks[0].key,
                vec!["order_id".to_string()],
                "the key defaults to the table's first"
            );
            assert_eq!(
                job.sinks
                    .iter()
                    .map(|s| s.table.as_str())
                    .collect::<Vec<_>>(),
                ["orders", "daily_revenue"],
                "sinks in step order"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_problem_is_reported_with_its_path() {
    let list = errors(json!({
        "nodes": [
            {"id": "src", "kind": "source_table", "options": {"table": "source_orders"}, "colour": "red"},
            {"id": "job", "kind": "batch_job", "options": {"transaction": "sometimes", "retries": 3}},
            {"id": "x", "kind": "kafka_topic"},
            {"id": "orders", "kind": "table", "options": {"table": "orders", "write": "upsert"}}
        ],
        "edges": [{"from": "src", "to": "job"}, {"from": "job", "to": "nowhere"}],
        "extra": true
    }));
    assert!(has(&list, "$.extra", "unknown_field"), "{list:?}");
    assert!(has(&list, "$.nodes[0].colour", "unknown_field"), "{list:?}");
    assert!(has(&list, "$.nodes[2].kind", "unknown_kind"), "{list:?}");
    // Shape errors stop before option checks; fix the shape and options are checked.
    let list = errors(json!({
        "nodes": [
            {"id": "src", "kind": "source_table", "options": {"table": "source_orders"}},
            {"id": "job", "kind": "batch_job", "options": {"transaction": "sometimes", "retries": 3}},
            {"id": "orders", "kind": "table", "options": {"table": "orders", "write": "upsert"}},
            {"id": "orders", "kind": "table", "options": {"table": "daily_revenue"}}
        ],
        "edges": [{"from": "src", "to": "job"}, {"from": "job", "to": "nowhere"}, {"from": "job", "to": "src"}]
    }));
    assert!(
        has(&list, "$.nodes[1].options.transaction", "bad_option_value"),
        "{list:?}"
    );
    assert!(
        has(&list, "$.nodes[1].options.retries", "unknown_option"),
        "{list:?}"
    );
    assert!(
        has(&list, "$.nodes[2].options.write", "bad_option_value"),
        "{list:?}"
    );
    assert!(has(&list, "$.nodes[3].id", "duplicate_id"), "{list:?}");
    assert!(has(&list, "$.edges[1].to", "dangling_edge"), "{list:?}");
    assert!(has(&list, "$.edges[2]", "bad_wiring"), "{list:?}");
    assert!(has(&list, "$.edges", "cycle"), "{list:?}");
}

#[test]
fn wiring_that_makes_no_sense_is_refused_with_a_reason() {
    let list = errors(json!({
        "nodes": [
            {"id": "src", "kind": "source_table"},
            {"id": "job", "kind": "batch_job"},
            {"id": "orders", "kind": "table", "options": {"table": "orders"}},
            {"id": "rev", "kind": "table", "options": {"table": "daily_revenue"}}
        ],
        "edges": [{"from": "src", "to": "job"}, {"from": "job", "to": "orders"}, {"from": "orders", "to": "rev"}]
    }));
    assert!(has(&list, "$.edges[2]", "bad_wiring"), "{list:?}");
    let refusal = shared::design::wiring_refusal(
        shared::design::NodeKind::Table,
        shared::design::NodeKind::StreamConsumer,
    )
    .unwrap();
    assert!(
        refusal.contains("cannot feed a stream consumer"),
        "{refusal}"
    );
}

#[test]
fn the_palette_limits_kinds_and_values() {
    // safe-retry offers no stream and only the logical date.
    let list = errors(json!({
        "nodes": [
            {"id": "src", "kind": "source_table"},
            {"id": "job", "kind": "batch_job", "options": {"date_filter": "current_date_minus_1", "loaded_at": "now"}},
            {"id": "orders", "kind": "table", "options": {"table": "orders"}},
            {"id": "rev", "kind": "table", "options": {"table": "daily_revenue"}},
            {"id": "s", "kind": "stream"}
        ],
        "edges": [{"from": "src", "to": "job"}, {"from": "job", "to": "orders"}, {"from": "job", "to": "rev"}]
    }));
    assert!(
        has(&list, "$.nodes[1].options.date_filter", "not_in_palette"),
        "{list:?}"
    );
    assert!(
        has(&list, "$.nodes[1].options.loaded_at", "not_in_palette"),
        "{list:?}"
    );
    assert!(has(&list, "$.nodes[4].kind", "not_in_palette"), "{list:?}");
}

#[test]
fn an_incomplete_design_says_what_is_missing() {
    let list = errors(json!({
        "nodes": [
            {"id": "src", "kind": "source_table"},
            {"id": "job", "kind": "batch_job"},
            {"id": "orders", "kind": "table", "options": {"table": "orders"}}
        ],
        "edges": [{"from": "src", "to": "job"}, {"from": "job", "to": "orders"}]
    }));
    assert!(has(&list, "$.nodes[1]", "incomplete"), "{list:?}");
    let empty = errors(json!({"nodes": [], "edges": []}));
    assert!(has(&empty, "$.nodes", "incomplete"), "{empty:?}");
}

#[test]
fn write_modes_need_what_they_use() {
    let s = crate::chapter::offset_commit_scenario();
    let mut no_key = s.clone();
    no_key.tables[0].keys.clear();
    let list = validate_json(
        &no_key.compiled(),
        &crate::chapter::stream_design("after_write", "insert_ignore"),
    )
    .unwrap_err();
    assert!(list.iter().any(|e| e.code.as_str() == "no_key"), "{list:?}");
    let list = validate_json(
        &s.compiled(),
        &crate::chapter::stream_design("after_write", "delete_insert"),
    )
    .unwrap_err();
    assert!(
        list.iter()
            .any(|e| e.code.as_str() == "no_partition" || e.code.as_str() == "bad_write"),
        "{list:?}"
    );
}

#[test]
fn hostile_graphs_are_refused_early() {
    let nodes: Vec<_> = (0..65)
        .map(|i| json!({"id": format!("n{i}"), "kind": "table"}))
        .collect();
    let list = errors(json!({"nodes": nodes, "edges": []}));
    assert!(has(&list, "$.nodes", "too_many_nodes"), "{list:?}");
    assert!(has(&errors(json!([1, 2])), "$", "not_an_object"));
    assert!(
        shared::design::parse_design("{\"nodes\": [").unwrap_err()[0]
            .code
            .as_str()
            == "malformed_json"
    );
}

#[test]
fn the_sql_view_shows_the_chapters_statements() {
    let s = scenario_file("safe-retry");
    let valid = validate_json(
        &s.compiled(),
        &batch_design("per_run", "delete_insert", "merge"),
    )
    .unwrap();
    let blocks = shared::sql::design_sql(&s.compiled(), &valid);
    let all: String = blocks
        .iter()
        .map(|b| b.sql.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        all.starts_with(
            "BEGIN;\nDELETE FROM orders WHERE order_date = DATE '2026-01-10';\nINSERT INTO orders"
        ),
        "{all}"
    );
    assert!(all.contains("MERGE INTO daily_revenue AS t\nUSING (SELECT order_date, SUM(amount) AS paid_revenue FROM orders WHERE order_date = DATE '2026-01-10' AND status = 'paid' GROUP BY order_date) AS s\nON t.order_date = s.order_date"), "{all}");
    assert!(all.ends_with("COMMIT;"), "{all}");

    let s = crate::chapter::offset_commit_scenario();
    let valid = validate_json(
        &s.compiled(),
        &crate::chapter::stream_design("with_write", "insert_ignore"),
    )
    .unwrap();
    let sql = &shared::sql::design_sql(&s.compiled(), &valid)[0].sql;
    assert!(sql.contains("INSERT INTO paid_orders (order_id, amount)\nVALUES (:order_id, :amount)\nON CONFLICT (order_id) DO NOTHING;"), "{sql}");
    assert!(
        sql.contains("UPDATE consumer_offsets SET next_offset = :offset + 1"),
        "{sql}"
    );
    let valid = validate_json(
        &s.compiled(),
        &crate::chapter::stream_design("before_write", "append"),
    )
    .unwrap();
    let sql = &shared::sql::design_sql(&s.compiled(), &valid)[0].sql;
    assert!(
        sql.find("commit offset").unwrap() < sql.find("INSERT INTO").unwrap(),
        "commit before write: {sql}"
    );
}

/// The server and the canvas read a design error's code from JSON: the enum must serialise as
/// the same snake_case name that `as_str` gives, and read back from it.
#[test]
fn error_codes_serialise_as_their_names() {
    let s = scenario_file("safe-retry");
    let mut list = validate_json(
        &s.compiled(),
        &json!({
            "nodes": [
                {"id": "a", "kind": "table", "colour": "red"},
                {"id": "a", "kind": "no_such_kind"}
            ],
            "edges": [{"from": "a", "to": "b"}]
        }),
    )
    .unwrap_err();
    list.extend(shared::design::parse_design("{").unwrap_err());
    assert!(list.len() >= 3, "{list:?}");
    for e in &list {
        let json = serde_json::to_value(e).unwrap();
        assert_eq!(json["code"], json!(e.code.as_str()), "{e:?}");
        assert_eq!(e.code.to_string(), e.code.as_str());
        let back: shared::DesignError = serde_json::from_value(json).unwrap();
        assert_eq!(&back, e);
    }
}

/// The option table of docs/design-format.md lists every option of every kind with exactly
/// the values the validator accepts, in their order, spelled as the code spells them.
#[test]
fn the_design_format_lists_every_option_value_as_the_validator_spells_it() {
    use shared::design::{NodeKind, OptionValues};
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/design-format.md");
    let text = std::fs::read_to_string(path).expect("docs/design-format.md exists");
    let table: Vec<&str> = text
        .split("## Node kinds and their options")
        .nth(1)
        .expect("the section exists")
        .lines()
        .skip_while(|l| !l.starts_with("| kind"))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect();
    let mut kind = String::new();
    let mut documented: Vec<(String, String, Vec<String>)> = Vec::new();
    for line in table {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if !cells[1].is_empty() {
            kind = cells[1].trim_matches('`').to_string();
        }
        let option = cells[3].trim_matches('`').to_string();
        let values: Vec<String> = cells[4]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        documented.push((kind.clone(), option, values));
    }
    for kind in NodeKind::ALL {
        for spec in kind.options() {
            let row = documented
                .iter()
                .find(|(k, o, _)| k == kind.name() && o == spec.name)
                .unwrap_or_else(|| panic!("{kind}.{} is not in the table", spec.name));
            if let OptionValues::Choice(values) = spec.values {
                assert_eq!(row.2, values, "{kind}.{}", spec.name);
            }
        }
    }
    let options: usize = NodeKind::ALL.iter().map(|k| k.options().len()).sum();
    assert_eq!(
        documented.len(),
        options,
        "the table has a row per option, no more"
    );
}

/// The error codes of docs/design-format.md's table are exactly the validator's codes.
#[test]
fn the_design_format_lists_every_problem_code() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/design-format.md");
    let text = std::fs::read_to_string(path).expect("docs/design-format.md exists");
    let section = text
        .split("| code | what is wrong |")
        .nth(1)
        .expect("the table of codes exists");
    let documented: std::collections::BTreeSet<String> = section
        .lines()
        .take_while(|l| l.is_empty() || l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(1))
        .flat_map(|cell| {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let every: std::collections::BTreeSet<String> = shared::DesignErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .filter(|c| c != "invalid")
        .collect();
    assert_eq!(documented, every);
}

#[test]
fn a_window_given_as_a_string_is_told_it_is_a_number_in_a_design() {
    let s = scenario_file("dedupe-by-key");
    let design = json!({
        "nodes": [
            {"id": "stream", "kind": "stream", "options": {"topic": "orders_paid"}},
            {"id": "consumer", "kind": "stream_consumer", "options": {"offset_commit": "after_write", "dedupe": "in_memory", "dedupe_window": "3"}},
            {"id": "paid", "kind": "table", "options": {"table": "paid_orders", "write": "append"}}
        ],
        "edges": [{"from": "stream", "to": "consumer"}, {"from": "consumer", "to": "paid"}]
    });
    let errors = validate_json(&s.compiled(), &design).unwrap_err();
    let e = errors
        .iter()
        .find(|e| e.path == "$.nodes[1].options.dedupe_window")
        .unwrap_or_else(|| panic!("{errors:?}"));
    assert_eq!(e.code.as_str(), "wrong_type");
    assert!(
        e.message
            .starts_with("dedupe_window is a number in a design, such as 2, not the string \"3\""),
        "{}",
        e.message
    );
}
