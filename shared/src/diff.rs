//! The table diff of a counterexample: the rows a table should hold beside the rows it holds,
//! each marked `same`, `missing`, `extra` or `differing`, for the requirements that compare a
//! whole table (`rerun_noop`, `same_as_clean_run`).
//!
//! Rows are paired in three passes, each over the rows the passes before left unpaired:
//!
//! 1. **Equal rows** are `same`. Equal is what the requirement itself uses: cell by cell `==`,
//!    so a decimal compares by value (25.0 is 25.00) and NULL equals NULL. Duplicates pair one
//!    for one: two equal rows expected and one present leave one `missing`.
//! 2. **By key**, when the table has one (the scenario's first key): an expected and an actual
//!    row with the same key values are `differing`, and `differs` names the cells that are not
//!    equal. A key with a NULL in it pairs with nothing, as in a unique index; several rows of
//!    one key pair in sorted order.
//! 3. **By the most equal cells**, when the table has no key: the pair with the most equal
//!    cells first (ties to the earlier expected row, then the earlier actual row), and only
//!    when at least half of the columns are equal.
//!
//! What is left is `missing` (expected) or `extra` (actual). Both sides come sorted in the
//! order the requirement compares them, so the diff is as deterministic as the verdict: the
//! same rows always give the same diff. Its every row is `same` exactly when the sorted rows
//! are equal, that is exactly when the requirement holds.

use std::cmp::Ordering;

use crate::value::{row_content_cmp, Value};
use crate::verdict::{DiffRow, RowStatus, TableDiff};
use crate::warehouse::Row;

/// The diff of `expected` against `actual` rows of a table with `columns`, paired by `key`
/// (column indices; empty for a table with no key). Both sides come sorted as
/// [`Table::sorted_rows`](crate::warehouse::Table::sorted_rows) sorts them, which is how the
/// requirements hold them already.
pub fn table_diff(
    table: &str,
    columns: &[String],
    key: &[usize],
    expected: &[Row],
    actual: &[Row],
) -> TableDiff {
    let sorted = |rows: &[Row]| {
        rows.windows(2)
            .all(|w| row_content_cmp(&w[0], &w[1]).is_le())
    };
    assert!(
        sorted(expected) && sorted(actual),
        "a table diff is given sorted rows"
    );
    let mut pair_e: Vec<Option<usize>> = vec![None; expected.len()];
    let mut pair_a: Vec<Option<usize>> = vec![None; actual.len()];

    // 1. Equal rows, by a merge of the two sorted sides.
    let (mut i, mut j) = (0, 0);
    while i < expected.len() && j < actual.len() {
        match row_content_cmp(&expected[i], &actual[j]) {
            Ordering::Less => i += 1,
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                pair_e[i] = Some(j);
                pair_a[j] = Some(i);
                i += 1;
                j += 1;
            }
        }
    }

    if !key.is_empty() {
        // 2. By key: each unpaired expected row takes the first unpaired actual row with the
        // same key values. Both sides are sorted, so rows of one key pair in sorted order.
        // A NULL in the key pairs with nothing (and only NULL is content-equal to NULL).
        let same_key = |e: &Row, a: &Row| {
            key.iter()
                .all(|&c| !e[c].is_null() && e[c].content_cmp(&a[c]).is_eq())
        };
        for e in 0..expected.len() {
            if pair_e[e].is_some() {
                continue;
            }
            let found = (0..actual.len())
                .find(|&a| pair_a[a].is_none() && same_key(&expected[e], &actual[a]));
            if let Some(a) = found {
                pair_e[e] = Some(a);
                pair_a[a] = Some(e);
            }
        }
    } else {
        // 3. By the most equal cells, at least half of the columns: the most first, and at
        // each count in the order of the expected rows, then of the actual rows. (Counting
        // down instead of sorting the pairs keeps the app's code small.)
        let equal_cells = |e: &Row, a: &Row| e.iter().zip(a).filter(|(x, y)| x == y).count();
        let least = columns.len().div_ceil(2).max(1);
        for n in (least..=columns.len()).rev() {
            for e in 0..expected.len() {
                if pair_e[e].is_some() {
                    continue;
                }
                let found = (0..actual.len())
                    .find(|&a| pair_a[a].is_none() && equal_cells(&expected[e], &actual[a]) == n);
                if let Some(a) = found {
                    pair_e[e] = Some(a);
                    pair_a[a] = Some(e);
                }
            }
        }
    }

    let side = |rows: &[Row], pairs: &[Option<usize>], others: &[Row], alone: RowStatus| {
        rows.iter()
            .zip(pairs)
            .map(|(row, pair)| {
                let differs: Vec<u32> = match pair {
                    Some(p) => row
                        .iter()
                        .zip(&others[*p])
                        .enumerate()
                        .filter(|(_, (x, y))| x != y)
                        .map(|(c, _)| c as u32)
                        .collect(),
                    None => Vec::new(),
                };
                DiffRow {
                    status: match pair {
                        None => alone,
                        Some(_) if differs.is_empty() => RowStatus::Same,
                        Some(_) => RowStatus::Differing,
                    },
                    cells: row.iter().map(Value::to_json).collect(),
                    pair: pair.map(|p| p as u32),
                    differs,
                }
            })
            .collect()
    };
    TableDiff {
        table: table.to_string(),
        columns: columns.to_vec(),
        key: key.iter().map(|&c| columns[c].clone()).collect(),
        expected: side(expected, &pair_e, actual, RowStatus::Missing),
        actual: side(actual, &pair_a, expected, RowStatus::Extra),
    }
}

/// One sentence on a table diff: what differs, and how rows were paired.
pub fn summary(diff: &TableDiff) -> String {
    let count =
        |rows: &[DiffRow], status: RowStatus| rows.iter().filter(|r| r.status == status).count();
    let rows = |n: usize| if n == 1 { "row" } else { "rows" };
    let mut parts = Vec::new();
    let differing = count(&diff.expected, RowStatus::Differing);
    if differing > 0 {
        parts.push(format!(
            "{differing} {} {} in the marked cells",
            rows(differing),
            if differing == 1 { "differs" } else { "differ" }
        ));
    }
    let missing = count(&diff.expected, RowStatus::Missing);
    if missing > 0 {
        parts.push(format!("{missing} expected {} missing", rows(missing)));
    }
    let extra = count(&diff.actual, RowStatus::Extra);
    if extra > 0 {
        parts.push(format!("{extra} extra {}", rows(extra)));
    }
    let what = if parts.is_empty() {
        format!("{} holds the expected rows.", diff.table)
    } else {
        format!("In {}: {}.", diff.table, parts.join("; "))
    };
    let paired = if diff.key.is_empty() {
        "Rows are paired by their most equal cells.".to_string()
    } else {
        format!("Rows are paired by {}.", diff.key.join(", "))
    };
    format!("{what} {paired}")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rust_decimal::Decimal;

    use super::{summary, DiffRow, Row, RowStatus, TableDiff, Value};
    use crate::warehouse::Table;

    /// The diff of two sides given in any order, sorted first as the requirements sort them.
    fn table_diff(
        table: &str,
        columns: &[String],
        key: &[usize],
        expected: &[Row],
        actual: &[Row],
    ) -> TableDiff {
        let sorted = |rows: &[Row]| {
            Table {
                name: table.into(),
                columns: columns.to_vec(),
                rows: rows.to_vec(),
            }
            .sorted_rows()
        };
        super::table_diff(table, columns, key, &sorted(expected), &sorted(actual))
    }

    fn dec(s: &str) -> Value {
        Value::Decimal(s.parse().expect("a decimal"))
    }
    fn text(s: &str) -> Value {
        Value::Text(s.into())
    }
    fn cols(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }
    /// Each side's marks, in order, as one letter per row: s, m, x, d.
    fn marks(d: &TableDiff) -> (String, String) {
        let letters = |rows: &[DiffRow]| {
            rows.iter()
                .map(|r| match r.status {
                    RowStatus::Same => 's',
                    RowStatus::Missing => 'm',
                    RowStatus::Extra => 'x',
                    RowStatus::Differing => 'd',
                })
                .collect()
        };
        (letters(&d.expected), letters(&d.actual))
    }
    /// What the requirements compare: the tables' sorted rows.
    fn check_holds(expected: &[Row], actual: &[Row]) -> bool {
        let table = |rows: &[Row]| Table {
            name: "t".into(),
            columns: Vec::new(),
            rows: rows.to_vec(),
        };
        table(expected).sorted_rows() == table(actual).sorted_rows()
    }

    #[test]
    fn equal_tables_in_any_order_are_all_same() {
        let e = vec![
            vec![Value::Int(1), text("a")],
            vec![Value::Int(2), text("b")],
        ];
        let a = vec![e[1].clone(), e[0].clone()];
        let d = table_diff("t", &cols(&["id", "v"]), &[0], &e, &a);
        assert!(d.is_same());
        assert_eq!(marks(&d), ("ss".into(), "ss".into()));
        assert_eq!(d.expected[0].pair, Some(0));
        assert_eq!(d.key, vec!["id".to_string()]);
    }

    #[test]
    fn a_missing_and_an_extra_row() {
        let e = vec![
            vec![Value::Int(1), text("a")],
            vec![Value::Int(2), text("b")],
        ];
        let a = vec![
            vec![Value::Int(1), text("a")],
            vec![Value::Int(3), text("c")],
        ];
        let d = table_diff("t", &cols(&["id", "v"]), &[0], &e, &a);
        assert_eq!(marks(&d), ("sm".into(), "sx".into()));
        assert_eq!(d.expected[1].pair, None);
        assert!(d.expected[1].differs.is_empty());
        assert!(!d.is_same());
    }

    #[test]
    fn a_row_with_the_same_key_differs_in_its_changed_cells() {
        // The rerun of logical-date's wrong design: loaded_at is the clock, not the day.
        let cells = |at: &str| {
            vec![
                Value::Int(102),
                dec("25.00"),
                Value::Text(at.into()),
                text("paid"),
            ]
        };
        let e = vec![cells("2026-01-11T23:55:00Z")];
        let a = vec![cells("2026-01-15T09:00:00Z")];
        let d = table_diff(
            "orders",
            &cols(&["id", "amount", "loaded_at", "s"]),
            &[0],
            &e,
            &a,
        );
        assert_eq!(marks(&d), ("d".into(), "d".into()));
        assert_eq!(d.expected[0].differs, vec![2]);
        assert_eq!(d.actual[0].differs, vec![2]);
        assert_eq!(d.actual[0].pair, Some(0));
    }

    #[test]
    fn a_null_cell_equals_null_and_differs_from_a_value() {
        let e = vec![
            vec![Value::Int(1), Value::Null],
            vec![Value::Int(2), Value::Null],
        ];
        let a = vec![
            vec![Value::Int(1), Value::Null],
            vec![Value::Int(2), text("x")],
        ];
        let d = table_diff("t", &cols(&["id", "v"]), &[0], &e, &a);
        assert_eq!(marks(&d), ("sd".into(), "sd".into()));
        assert_eq!(d.expected[1].differs, vec![1]);
        assert_eq!(d.expected[1].cells[1], serde_json::Value::Null);
    }

    #[test]
    fn a_null_key_pairs_with_nothing() {
        let e = vec![vec![Value::Null, text("a")]];
        let a = vec![vec![Value::Null, text("b")]];
        let d = table_diff("t", &cols(&["id", "v"]), &[0], &e, &a);
        assert_eq!(marks(&d), ("m".into(), "x".into()));
    }

    #[test]
    fn duplicates_pair_one_for_one() {
        let row = vec![Value::Int(7), dec("10.00")];
        let e = vec![row.clone()];
        let a = vec![row.clone(), row.clone()];
        let d = table_diff("t", &cols(&["id", "amount"]), &[0], &e, &a);
        assert_eq!(marks(&d), ("s".into(), "sx".into()));
        // The same with no key: the second copy has no partner left either.
        let d = table_diff("t", &cols(&["id", "amount"]), &[], &e, &a);
        assert_eq!(marks(&d), ("s".into(), "sx".into()));
        assert!(!check_holds(&e, &a));
    }

    #[test]
    fn decimals_compare_by_value_as_the_requirement_does() {
        let e = vec![vec![Value::Int(1), dec("25.00")]];
        let a = vec![vec![Value::Int(1), dec("25.0")]];
        let d = table_diff("t", &cols(&["id", "amount"]), &[0], &e, &a);
        assert!(d.is_same());
        assert!(check_holds(&e, &a));
        // The cells show what each side holds.
        assert_eq!(d.expected[0].cells[1], serde_json::json!("25.00"));
        assert_eq!(d.actual[0].cells[1], serde_json::json!("25.0"));
        let a = vec![vec![Value::Int(1), dec("25.01")]];
        let d = table_diff("t", &cols(&["id", "amount"]), &[0], &e, &a);
        assert_eq!(d.expected[0].differs, vec![1]);
    }

    #[test]
    fn with_no_key_rows_pair_by_their_most_equal_cells() {
        let e = vec![
            vec![text("a"), Value::Int(1), Value::Int(1)],
            vec![text("b"), Value::Int(2), Value::Int(2)],
        ];
        let a = vec![
            vec![text("b"), Value::Int(2), Value::Int(9)],
            vec![text("z"), Value::Int(8), Value::Int(9)],
        ];
        let d = table_diff("t", &cols(&["a", "b", "c"]), &[], &e, &a);
        // (b,2,2) pairs with (b,2,9): two of three equal. (a,1,1) and (z,8,9) share nothing.
        assert_eq!(marks(&d), ("md".into(), "dx".into()));
        assert_eq!(d.expected[1].pair, Some(0));
        assert_eq!(d.expected[1].differs, vec![2]);
        assert!(d.key.is_empty());
    }

    #[test]
    fn empty_sides() {
        let row = vec![Value::Int(1)];
        let d = table_diff("t", &cols(&["id"]), &[0], &[], std::slice::from_ref(&row));
        assert_eq!(marks(&d), (String::new(), "x".into()));
        let d = table_diff("t", &cols(&["id"]), &[0], &[row], &[]);
        assert_eq!(marks(&d), ("m".into(), String::new()));
        assert!(table_diff("t", &cols(&["id"]), &[0], &[], &[]).is_same());
    }

    /// A cell of a small domain, so that equal rows, shared keys and NULLs are common; the
    /// decimal column mixes scales (2.5, 2.50).
    fn row() -> impl Strategy<Value = Row> {
        let id = prop_oneof![Just(Value::Null), (0i64..3).prop_map(Value::Int)];
        let amount = prop_oneof![
            Just(Value::Null),
            (0i64..3, 0u32..3).prop_map(|(n, scale)| {
                let mut d = Decimal::from(n * 10 + 5) / Decimal::from(10);
                d.rescale(scale.max(1));
                Value::Decimal(d)
            }),
        ];
        let word = prop_oneof![Just(text("a")), Just(text("b"))];
        (id, amount, word).prop_map(|(i, a, w)| vec![i, a, w])
    }

    #[test]
    fn a_diff_in_one_sentence() {
        let row = |status, differs: Vec<u32>| DiffRow {
            status,
            cells: Vec::new(),
            pair: None,
            differs,
        };
        let mut diff = TableDiff {
            table: "orders".into(),
            columns: vec!["order_id".into(), "loaded_at".into()],
            key: vec!["order_id".into()],
            expected: vec![
                row(RowStatus::Same, vec![]),
                row(RowStatus::Differing, vec![1]),
            ],
            actual: vec![
                row(RowStatus::Same, vec![]),
                row(RowStatus::Differing, vec![1]),
            ],
        };
        assert_eq!(
            summary(&diff),
            "In orders: 1 row differs in the marked cells. Rows are paired by order_id."
        );
        diff.key.clear();
        diff.expected.push(row(RowStatus::Missing, vec![]));
        diff.actual.push(row(RowStatus::Extra, vec![]));
        diff.actual.push(row(RowStatus::Extra, vec![]));
        assert_eq!(
            summary(&diff),
            "In orders: 1 row differs in the marked cells; 1 expected row missing; 2 extra rows. \
             Rows are paired by their most equal cells."
        );
        assert_eq!(
            (RowStatus::Missing.symbol(), RowStatus::Missing.word()),
            ("−", "missing")
        );
    }

    proptest! {
        #[test]
        fn the_diff_is_all_same_exactly_when_the_requirement_holds(
            expected in proptest::collection::vec(row(), 0..5),
            actual in proptest::collection::vec(row(), 0..5),
            keyed in any::<bool>(),
        ) {
            let key: &[usize] = if keyed { &[0] } else { &[] };
            let columns = cols(&["id", "amount", "word"]);
            let d = table_diff("t", &columns, key, &expected, &actual);
            prop_assert_eq!(d.is_same(), check_holds(&expected, &actual));
            // Every row appears once, pairs point at each other, and only pairs differ.
            prop_assert_eq!(d.expected.len(), expected.len());
            prop_assert_eq!(d.actual.len(), actual.len());
            for (e, row) in d.expected.iter().enumerate() {
                match row.pair {
                    Some(p) => {
                        prop_assert_eq!(d.actual[p as usize].pair, Some(e as u32));
                        prop_assert_ne!(row.status, RowStatus::Missing);
                    }
                    None => prop_assert_eq!(row.status, RowStatus::Missing),
                }
                prop_assert_eq!(row.status == RowStatus::Differing, !row.differs.is_empty());
            }
            prop_assert_eq!(&d, &table_diff("t", &columns, key, &expected, &actual));
        }
    }
}
