//! The chapter's numbers (docs/design-format.md, "The chapter's numbers"), reproduced by the
//! simulator.

use crate::Lesson;
use serde_json::json;

use crate::{batch_design, requirement, scenario, scenario_file, verdict};

fn revenue_rows(
    tables: &std::collections::BTreeMap<String, shared::verdict::TableView>,
    day: &str,
) -> Vec<String> {
    tables["daily_revenue"]
        .rows
        .iter()
        .filter(|r| r[0] == json!(day))
        .map(|r| r[1].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn append_crash_and_retry_doubles_the_revenue_and_order_102() {
    let s = scenario_file("safe-retry");
    let v = verdict(&s, batch_design("none", "append", "append"));
    assert!(!v.passed);
    let revenue = requirement(&v, "revenue-correct");
    let c = revenue.counterexample.as_ref().expect("a counterexample");
    assert_eq!(c.expected, "25.00");
    assert_eq!(c.actual, "50.00");
    assert_eq!(c.failures.len(), 2, "{:?}", c.failures);
    assert!(
        c.failures[0].contains("crashes after step 1 (copy the day's orders)"),
        "{:?}",
        c.failures
    );
    assert!(
        c.failures[1].contains("retries at once"),
        "{:?}",
        c.failures
    );
    assert_eq!(c.faults.len(), 1);
    assert_eq!(c.faults[0].kind, "job_crash");
    let orders_102 = c.tables["orders"]
        .rows
        .iter()
        .filter(|r| r[0] == json!(102))
        .count();
    assert_eq!(orders_102, 2, "order 102 is in orders twice");
    assert_eq!(revenue_rows(&c.tables, "2026-01-10"), vec!["50.00"]);
    // The trace quotes the chapter's SQL.
    let sql: Vec<&str> = c.trace.iter().filter_map(|t| t.sql.as_deref()).collect();
    assert!(sql.iter().any(|s| s.starts_with("INSERT INTO orders (order_id, customer_id, status, amount, order_date)\nSELECT order_id, customer_id, status, amount, order_date\nFROM source_orders\nWHERE order_date = DATE '2026-01-10'")), "{sql:?}");
    assert!(
        sql.iter().any(|s| s.contains("SUM(amount)")
            && s.contains("status = 'paid'")
            && s.contains("GROUP BY order_date")),
        "{sql:?}"
    );
    let unique = requirement(&v, "orders-unique");
    assert_eq!(
        unique.counterexample.as_ref().unwrap().actual,
        "order_id 102 appears 2 times"
    );
}

#[test]
fn delete_insert_in_one_transaction_gives_25_after_retries_and_after_a_second_run() {
    let mut s = scenario_file("safe-retry");
    let v = verdict(
        &s,
        batch_design("per_run", "delete_insert", "delete_insert"),
    );
    assert!(v.passed, "{v:#?}");
    assert!(
        v.schedules_explored > 10,
        "every crash point was explored: {}",
        v.schedules_explored
    );

    // A second, manual run of the same day: still 25.00, and it changes nothing.
    s.runs.push(serde_json::from_value(json!({"id": "manual", "logical_date": "2026-01-10", "start": "2026-01-15T09:00:00Z", "kind": "manual"})).unwrap());
    s.requirements.push(serde_json::from_value(json!({"id": "rerun-noop", "text": "the rerun changes nothing", "hint": "-", "check": {"kind": "rerun_noop", "table": "daily_revenue", "run": "manual"}})).unwrap());
    s.requirements.push(serde_json::from_value(json!({"id": "orders-noop", "text": "the rerun changes nothing", "hint": "-", "check": {"kind": "rerun_noop", "table": "orders", "run": "manual"}})).unwrap());
    let v = verdict(
        &s,
        batch_design("per_run", "delete_insert", "delete_insert"),
    );
    assert!(v.passed, "{v:#?}");
    assert!(requirement(&v, "revenue-correct").passed);

    // The append-only job is not safe to run twice even without a crash.
    let v = verdict(&s, batch_design("none", "append", "append"));
    let c = requirement(&v, "rerun-noop")
        .counterexample
        .as_ref()
        .unwrap();
    assert!(
        c.failures.is_empty(),
        "a plain rerun already breaks it: {:?}",
        c.failures
    );
    // Without any crash the rerun copies the day again and appends a second revenue row.
    assert_eq!(
        requirement(&v, "revenue-correct")
            .counterexample
            .as_ref()
            .unwrap()
            .actual,
        "2 rows: 25.00, 50.00"
    );
}

fn rerun_scenario() -> shared::Scenario {
    let mut s = scenario_file("safe-retry");
    // 2026-01-10 is already loaded; someone reruns it by hand.
    for t in &mut s.tables {
        if t.name == "orders" {
            t.rows.push(vec![
                json!(102),
                json!(2),
                json!("paid"),
                json!("25.00"),
                json!("2026-01-10"),
            ]);
            t.rows.push(vec![
                json!(104),
                json!(4),
                json!("pending"),
                json!("60.00"),
                json!("2026-01-10"),
            ]);
            t.rows.push(vec![
                json!(105),
                json!(1),
                json!("cancelled"),
                json!("12.00"),
                json!("2026-01-10"),
            ]);
        }
        if t.name == "daily_revenue" {
            t.rows.push(vec![json!("2026-01-10"), json!("25.00")]);
        }
    }
    s.runs = vec![serde_json::from_value(json!({"id": "rerun", "logical_date": "2026-01-10", "start": "2026-01-15T09:00:00Z", "kind": "manual"})).unwrap()];
    s.failures.bound = 1;
    s.failures.job_crash.as_mut().unwrap().max_per_run = 1;
    s.requirements.push(serde_json::from_value(json!({
        "id": "day-never-empty", "text": "readers never see 2026-01-10 without its revenue", "hint": "-",
        "check": {"kind": "never_seen", "table": "daily_revenue", "where": [{"column": "order_date", "value": "2026-01-10"}], "rows": 1, "column": "paid_revenue", "value": "25.00"}
    })).unwrap());
    s
}

#[test]
fn delete_insert_without_a_transaction_shows_readers_an_empty_day_on_a_crashing_rerun() {
    let s = rerun_scenario();
    let v = verdict(&s, batch_design("none", "delete_insert", "delete_insert"));
    let c = requirement(&v, "day-never-empty")
        .counterexample
        .as_ref()
        .expect("readers see the day empty");
    assert_eq!(c.actual, "a reader saw no row");
    assert!(
        revenue_rows(&c.tables, "2026-01-10").is_empty(),
        "the tables at that moment lack the day"
    );
    let step = &c.trace[c.went_wrong_at as usize - 1];
    assert!(
        step.sql
            .as_deref()
            .unwrap_or("")
            .starts_with("DELETE FROM daily_revenue WHERE order_date = DATE '2026-01-10'"),
        "{step:?}"
    );
    // The end state is still right: only readers in between were misled.
    assert!(requirement(&v, "revenue-correct").passed);

    // With the crash right after the DELETE, the day stays empty until the retry finishes.
    let crash = shared::check::replay(
        &s.compiled(),
        &batch_design("none", "delete_insert", "delete_insert"),
        &[(2, "job_crash")],
    )
    .unwrap();
    let after_crash: Vec<_> = crash.iter().skip_while(|t| !t.failure).collect();
    assert!(
        after_crash[0]
            .action
            .contains("crashes after the DELETE of step 2"),
        "{:?}",
        after_crash[0]
    );
    let empty_until = after_crash
        .iter()
        .position(|t| {
            t.tables
                .as_ref()
                .is_some_and(|tb| !revenue_rows(tb, "2026-01-10").is_empty())
        })
        .unwrap();
    assert!(
        after_crash[..empty_until]
            .iter()
            .any(|t| t.actor == "scheduler"),
        "the day stays empty across the retry"
    );

    // In one transaction, readers never see the day empty, crash or not.
    let v = verdict(
        &s,
        batch_design("per_run", "delete_insert", "delete_insert"),
    );
    assert!(v.passed, "{v:#?}");
}

pub fn offset_commit_scenario() -> shared::Scenario {
    scenario(json!({
        "id": "offset-commit-test", "order": 7, "title": "t", "task": "t",
        "tables": [{"name": "paid_orders", "role": "sink", "columns": [{"name": "order_id", "type": "integer"}, {"name": "amount", "type": "decimal"}], "keys": [["order_id"]]}],
        "streams": [{"name": "orders_paid", "key_field": "order_id", "fields": [{"name": "order_id", "type": "integer"}, {"name": "amount", "type": "decimal"}],
                     "messages": [{"order_id": 101, "amount": "40.00"}, {"order_id": 102, "amount": "25.00"}, {"order_id": 103, "amount": "15.50"}]}],
        "failures": {"bound": 1, "consumer_crash": {"offsets": [1]}},
        "palette": {"stream": {}, "stream_consumer": {}, "table": {}},
        "requirements": [
            {"id": "total", "text": "total 80.50", "hint": "-", "check": {"kind": "sum", "table": "paid_orders", "column": "amount", "expected": "80.50"}},
            {"id": "complete", "text": "nothing lost", "hint": "-", "check": {"kind": "complete", "table": "paid_orders", "column": "order_id", "source": "orders_paid", "source_column": "order_id"}},
            {"id": "unique", "text": "no order twice", "hint": "-", "check": {"kind": "unique", "table": "paid_orders", "columns": ["order_id"]}}
        ],
        "reference_designs": [], "wrong_designs": []
    }))
}

pub fn stream_design(offset_commit: &str, write: &str) -> serde_json::Value {
    json!({
        "nodes": [
            {"id": "stream", "kind": "stream", "options": {"topic": "orders_paid"}},
            {"id": "consumer", "kind": "stream_consumer", "options": {"offset_commit": offset_commit}},
            {"id": "sink", "kind": "table", "options": {"table": "paid_orders", "write": write}}
        ],
        "edges": [{"from": "stream", "to": "consumer"}, {"from": "consumer", "to": "sink"}]
    })
}

#[test]
fn consumer_crash_at_offset_1_gives_the_chapters_three_totals() {
    let s = offset_commit_scenario();

    let v = verdict(&s, stream_design("before_write", "append"));
    let c = requirement(&v, "total").counterexample.as_ref().unwrap();
    assert_eq!(
        (c.expected.as_str(), c.actual.as_str()),
        ("80.50", "55.50"),
        "commit before write loses 102"
    );
    assert!(
        c.failures[0].contains("offset 1")
            && c.failures[0].contains("after it committed the offset, before it wrote the row"),
        "{:?}",
        c.failures
    );
    assert_eq!(
        requirement(&v, "complete")
            .counterexample
            .as_ref()
            .unwrap()
            .actual,
        "order_id 102 missing"
    );
    assert!(requirement(&v, "unique").passed);

    let v = verdict(&s, stream_design("after_write", "append"));
    let c = requirement(&v, "total").counterexample.as_ref().unwrap();
    assert_eq!(c.actual, "105.50", "write then commit repeats 102");
    assert!(
        c.failures[0].contains("after it wrote the row, before it committed the offset"),
        "{:?}",
        c.failures
    );
    assert!(requirement(&v, "complete").passed);
    assert!(!requirement(&v, "unique").passed);

    let v = verdict(&s, stream_design("after_write", "insert_ignore"));
    assert!(
        v.passed,
        "write then commit, by key, gives the effect once: {v:#?}"
    );
    // Every crash point of offset 1 was explored: the clean run and three crash points.
    assert_eq!(v.schedules_explored, 4);

    let v = verdict(&s, stream_design("with_write", "append"));
    assert!(v.passed, "the offset saved with the row: {v:#?}");
}

#[test]
fn the_trace_shows_the_consumer_restarting_from_the_committed_offset() {
    let s = offset_commit_scenario();
    let v = verdict(&s, stream_design("after_write", "append"));
    let c = requirement(&v, "total").counterexample.as_ref().unwrap();
    let restart = c
        .trace
        .iter()
        .find(|t| t.action.starts_with("restarts"))
        .expect("a restart");
    assert!(
        restart.action.contains("reads from offset 1"),
        "{restart:?}"
    );
    let writes_of_102 = c
        .trace
        .iter()
        .filter(|t| {
            t.sql
                .as_deref()
                .is_some_and(|s| s.contains("VALUES (102, 25.00)"))
        })
        .count();
    assert_eq!(writes_of_102, 2);
    assert_eq!(c.trace.iter().filter(|t| t.failure).count(), 1);
}

#[test]
fn a_check_past_its_limits_answers_with_an_error_not_a_hang() {
    let s = scenario_file("safe-retry");
    let valid =
        shared::validate_json(&s.compiled(), &batch_design("none", "append", "append")).unwrap();
    let all = shared::check(&s.compiled(), &valid)
        .unwrap()
        .schedules_explored;
    let exact = shared::check_with(
        &s.compiled(),
        &valid,
        shared::Limits {
            max_schedules: all,
            max_steps: u64::MAX,
        },
    )
    .unwrap();
    assert_eq!(
        exact.schedules_explored, all,
        "a limit equal to the count still completes"
    );
    let err = shared::check_with(
        &s.compiled(),
        &valid,
        shared::Limits {
            max_schedules: all - 1,
            max_steps: u64::MAX,
        },
    )
    .unwrap_err();
    assert!(
        matches!(err, shared::CheckError::TooLarge { .. }),
        "{err:?}"
    );
    let mut n = 0;
    let counted = shared::check::for_each_schedule(
        &s.compiled(),
        &valid,
        shared::sql::Dialect::Sqlite,
        shared::Limits::default(),
        &mut |sch| {
            n += 1;
            assert!(
                sch.trace
                    .iter()
                    .all(|t| !t.sql.as_deref().unwrap_or("").contains("DATE '")),
                "SQLite dates are text"
            );
        },
    )
    .unwrap();
    assert_eq!((n, counted), (all, all));
}

/// "Readers never see half a day" asked of a first load: the day has no row before the job
/// first writes it, so a check from the first committed point misses every design at once,
/// while a check from the first row tells the designs apart.
#[test]
fn a_reader_check_from_the_first_row_can_be_asked_of_a_first_load() {
    let with = |from_first_row: bool| {
        let mut s = serde_json::to_value(scenario_file("safe-retry")).unwrap();
        s["requirements"].as_array_mut().unwrap().push(json!({
            "id": "day-whole", "text": "A reader who finds the day finds its one revenue row.", "hint": "-",
            "check": {"kind": "never_seen", "table": "daily_revenue", "rows": 1, "from_first_row": from_first_row,
                      "where": [{"column": "order_date", "op": "=", "value": "2026-01-10"}]}
        }));
        scenario(s)
    };
    let day_whole = |s: &shared::Scenario, transaction: &str, write: &str| {
        let v = verdict(s, batch_design(transaction, "merge", write));
        requirement(&v, "day-whole").passed
    };
    let from_start = with(false);
    assert!(
        !day_whole(&from_start, "per_run", "delete_insert"),
        "from the first committed point, the day is missing before the first load"
    );
    let from_first = with(true);
    assert!(day_whole(&from_first, "per_run", "delete_insert"));
    assert!(day_whole(&from_first, "none", "merge"));
    // A retry's delete, committed on its own, empties the day a reader already found.
    assert!(!day_whole(&from_first, "none", "delete_insert"));
    // A retry's append shows the day twice.
    assert!(!day_whole(&from_first, "none", "append"));
    // Written back, the flag is kept; left out, it is not written.
    let text = serde_json::to_string(&from_first).unwrap();
    assert!(text.contains("\"from_first_row\":true"));
    assert!(!serde_json::to_string(&from_start)
        .unwrap()
        .contains("from_first_row"));
}
