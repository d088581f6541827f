//! The end of a run: every requirement that is judged on the final tables (values, sums,
//! counts, uniqueness, completeness, sameness with the clean run) is evaluated here.

use rust_decimal::Decimal;

use super::{describe_rows, format_rows, Clean, CleanTotal, Miss, Sim};
use crate::diff::table_diff;
use crate::model::{eval, CCheck, Cond, Model};
use crate::value::Value;
use crate::warehouse::Row;

impl Sim<'_> {
    /// Judges the requirements that look at the tables once the run is over. `clean` is the
    /// clean run's end, which `same_as_clean_run` and clean-run sums compare with.
    pub(super) fn evaluate_end(&mut self, clean: Option<&Clean>) {
        let step = self.step_no();
        // Untraced runs only need to know whether a requirement was missed.
        let detail = self.tracing;
        for (i, check) in self.m.checks.iter().enumerate() {
            if self.misses[i].is_some() {
                continue;
            }
            let mut diff = None;
            let miss = match check {
                CCheck::NeverSeen { .. } | CCheck::RerunNoop { .. } => None,
                CCheck::Finishes => self.unfinished.as_ref().map(|why| {
                    (
                        "every run and message handled to the end".to_string(),
                        why.clone(),
                    )
                }),
                CCheck::Value {
                    table,
                    column,
                    filter,
                    expected,
                } => {
                    let t = &self.wh.tables[*table];
                    let rows: Vec<&Row> = t.rows.iter().filter(|r| eval(r, filter)).collect();
                    if rows.len() == 1 && rows[0][*column].key_eq(expected) {
                        None
                    } else {
                        Some(if detail {
                            (expected.to_string(), describe_rows(t, &rows, Some(*column)))
                        } else {
                            Default::default()
                        })
                    }
                }
                CCheck::Sum {
                    table,
                    column,
                    filter,
                    expected,
                } => {
                    let actual = sum(&self.wh.tables[*table].rows, *column, filter);
                    let expected = expected.or_else(|| match clean?.totals[i] {
                        Some(CleanTotal::Sum(s)) => Some(s),
                        _ => None,
                    });
                    match expected {
                        Some(e) if e == actual => None,
                        Some(e) => Some(if detail {
                            (e.to_string(), actual.to_string())
                        } else {
                            Default::default()
                        }),
                        None => None,
                    }
                }
                CCheck::RowCount {
                    table,
                    filter,
                    expected,
                } => {
                    let count = self.wh.tables[*table]
                        .rows
                        .iter()
                        .filter(|r| eval(r, filter))
                        .count() as u64;
                    let expected = expected.or_else(|| match clean?.totals[i] {
                        Some(CleanTotal::Count(n)) => Some(n),
                        _ => None,
                    });
                    match expected {
                        Some(e) if e == count => None,
                        Some(e) => Some(if detail {
                            (format!("{e} rows"), format!("{count} rows"))
                        } else {
                            Default::default()
                        }),
                        None => None,
                    }
                }
                CCheck::Unique { table, columns } => {
                    let t = &self.wh.tables[*table];
                    // Rows with a NULL in the key are never duplicates, as in a unique index.
                    let key = |i: &usize| {
                        let row = &t.rows[*i];
                        columns.iter().map(move |&c| &row[c])
                    };
                    let mut rows: Vec<usize> = (0..t.rows.len())
                        .filter(|i| key(i).all(|v| !v.is_null()))
                        .collect();
                    rows.sort_by(|a, b| key(a).cmp(key(b)));
                    let dup = rows
                        .windows(2)
                        .find(|w| key(&w[0]).eq(key(&w[1])))
                        .map(|w| w[0]);
                    dup.map(|first| {
                        if !detail {
                            return Default::default();
                        }
                        let names: Vec<&str> =
                            columns.iter().map(|&c| t.columns[c].as_str()).collect();
                        let shown: Vec<String> = key(&first).map(|v| v.to_string()).collect();
                        let count = rows.iter().filter(|i| key(i).eq(key(&first))).count();
                        (
                            format!("each {} once", names.join(", ")),
                            format!(
                                "{} {} appears {count} times",
                                names.join(", "),
                                shown.join(", ")
                            ),
                        )
                    })
                }
                CCheck::Complete {
                    table,
                    column,
                    keys,
                } => {
                    let t = &self.wh.tables[*table];
                    let mut present: Vec<&Value> = t
                        .rows
                        .iter()
                        .map(|r| &r[*column])
                        .filter(|v| !v.is_null())
                        .collect();
                    present.sort();
                    let missing: Vec<&Value> = keys
                        .iter()
                        .filter(|k| present.binary_search(k).is_err())
                        .collect();
                    (!missing.is_empty()).then(|| {
                        if !detail {
                            return Default::default();
                        }
                        let missing: Vec<String> = missing.iter().map(|k| k.to_string()).collect();
                        let all: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
                        (
                            format!("{} {} all present", t.columns[*column], all.join(", ")),
                            format!("{} {} missing", t.columns[*column], missing.join(", ")),
                        )
                    })
                }
                CCheck::SameAsClean { tables } => clean.and_then(|c| {
                    let (t, now) = tables.iter().find_map(|&t| {
                        let now = self.wh.tables[t].sorted_rows();
                        (now != c.tables[t]).then_some((t, now))
                    })?;
                    if !detail {
                        return Some(Default::default());
                    }
                    let table = &self.wh.tables[t];
                    diff = Some(table_diff(
                        &table.name,
                        &table.columns,
                        &self.m.table_keys[t],
                        &c.tables[t],
                        &now,
                    ));
                    Some((
                        format!(
                            "{} as after a run with no failure: {}",
                            table.name,
                            format_rows(&table.columns, &c.tables[t])
                        ),
                        format!("{}: {}", table.name, format_rows(&table.columns, &now)),
                    ))
                }),
            };
            if let Some((expected, actual)) = miss {
                self.misses[i] = Some(Miss {
                    expected,
                    actual,
                    step,
                    tables: self.tracing.then(|| self.view()),
                    diff,
                });
            }
        }
    }
}

impl Clean {
    /// The clean run's end, from its sorted tables (`Clean` is declared with the run's
    /// state; its figures are worked out here, beside the checks that read them).
    pub(crate) fn new(m: &Model, tables: Vec<Vec<Row>>) -> Clean {
        let totals = m
            .checks
            .iter()
            .map(|check| clean_total(check, &tables))
            .collect();
        Clean { tables, totals }
    }
}

/// What a requirement compares with in the clean run's end `tables`: a sum or a row count
/// with no expected value of its own.
fn clean_total(check: &CCheck, tables: &[Vec<Row>]) -> Option<CleanTotal> {
    match check {
        CCheck::Sum {
            table,
            column,
            filter,
            expected: None,
        } => Some(CleanTotal::Sum(sum(&tables[*table], *column, filter))),
        CCheck::RowCount {
            table,
            filter,
            expected: None,
        } => Some(CleanTotal::Count(
            tables[*table].iter().filter(|r| eval(r, filter)).count() as u64,
        )),
        _ => None,
    }
}

fn sum(rows: &[Row], column: usize, filter: &[Cond]) -> Decimal {
    rows.iter()
        .filter(|r| eval(r, filter))
        .map(|r| match &r[column] {
            Value::Decimal(d) => *d,
            Value::Int(i) => Decimal::from(*i),
            _ => Decimal::ZERO,
        })
        .sum()
}
