//! The end of a run: every requirement that is judged on the final tables (values, sums,
//! counts, uniqueness, completeness, sameness with the clean run) is evaluated here.

use super::{describe_rows, format_rows, Clean, CleanTotal, Miss, Sim};
use crate::diff::table_diff;
use crate::model::{eval, sum, CCheck, Model};
use crate::value::Value;
use crate::verdict::TableDiff;
use crate::warehouse::Row;

/// What a requirement judged at the end expected and found, and a table diff when it
/// compares a whole table. Untraced, the words are left empty.
type Found = (String, String, Option<TableDiff>);

impl Sim<'_> {
    /// Judges the requirements that look at the tables once the run is over. `clean` is the
    /// clean run's end, which `same_as_clean_run` and clean-run sums compare with.
    pub(super) fn evaluate_end(&mut self, clean: Option<&Clean>) {
        let step = self.step_no();
        for (i, check) in self.m.checks.iter().enumerate() {
            if self.misses[i].is_some() {
                continue;
            }
            if let Some((expected, actual, diff)) = self.end_miss(i, check, clean) {
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

    /// Whether requirement `i` is missed at the end, and how.
    fn end_miss(&self, i: usize, check: &CCheck, clean: Option<&Clean>) -> Option<Found> {
        match check {
            CCheck::NeverSeen { .. } | CCheck::NeverDrops { .. } | CCheck::RerunNoop { .. } => None,
            CCheck::Finishes => self.unfinished.as_ref().map(|why| {
                self.words(&|| {
                    (
                        "every run and message handled to the end".to_string(),
                        why.clone(),
                    )
                })
            }),
            CCheck::Value {
                table,
                column,
                filter,
                expected,
            } => {
                let t = &self.wh.tables[*table];
                let mut matching = t.rows.iter().filter(|r| eval(r, filter));
                let first = matching.next();
                if first.is_some_and(|r| r[*column].key_eq(expected)) && matching.next().is_none() {
                    return None;
                }
                Some(self.words(&|| {
                    let rows: Vec<&Row> = t.rows.iter().filter(|r| eval(r, filter)).collect();
                    (expected.to_string(), describe_rows(t, &rows, Some(*column)))
                }))
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
                })?;
                (expected != actual)
                    .then(|| self.words(&|| (expected.to_string(), actual.to_string())))
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
                })?;
                (expected != count)
                    .then(|| self.words(&|| (rows_count(expected), rows_count(count))))
            }
            CCheck::Unique { table, columns } => self
                .unique_miss(*table, columns)
                .map(|found| (found.0, found.1, None)),
            CCheck::Complete {
                table,
                column,
                source,
            } => self
                .complete_miss(*table, *column, &source.keys(&self.wh.tables))
                .map(|found| (found.0, found.1, None)),
            CCheck::SameAsClean { tables } => self.same_as_clean_miss(tables, clean?),
        }
    }

    /// What a miss expected and found, in words: made only when the run is traced, since an
    /// untraced run only needs to know whether a requirement was missed.
    fn words(&self, found: &dyn Fn() -> (String, String)) -> Found {
        let (expected, actual) = if self.tracing {
            found()
        } else {
            Default::default()
        };
        (expected, actual, None)
    }

    /// A `unique` requirement: the first key two rows share, if any. Rows with a NULL in the
    /// key are never duplicates, as in a unique index.
    fn unique_miss(&self, table: usize, columns: &[usize]) -> Option<(String, String)> {
        let t = &self.wh.tables[table];
        let key = |i: &usize| {
            let row = &t.rows[*i];
            columns.iter().map(move |&c| &row[c])
        };
        let mut rows: Vec<usize> = (0..t.rows.len())
            .filter(|i| key(i).all(|v| !v.is_null()))
            .collect();
        rows.sort_by(|a, b| key(a).cmp(key(b)));
        let first = rows
            .windows(2)
            .find(|w| key(&w[0]).eq(key(&w[1])))
            .map(|w| w[0])?;
        if !self.tracing {
            return Some(Default::default());
        }
        let names: Vec<&str> = columns.iter().map(|&c| t.columns[c].as_str()).collect();
        let shown: Vec<String> = key(&first).map(|v| v.to_string()).collect();
        let count = rows.iter().filter(|i| key(i).eq(key(&first))).count();
        Some((
            format!("each {} once", names.join(", ")),
            format!(
                "{} {} appears {count} times",
                names.join(", "),
                shown.join(", ")
            ),
        ))
    }

    /// A `complete` requirement: the keys of the source missing from the table.
    fn complete_miss(
        &self,
        table: usize,
        column: usize,
        keys: &[Value],
    ) -> Option<(String, String)> {
        let t = &self.wh.tables[table];
        // A key is present when a row's cell is the same value (in the order rows are sorted
        // by); NULL is never present. A small table is scanned; a large one is sorted (in
        // linear time when its rows are in order already) and walked beside the keys, which
        // are sorted too.
        let present: Vec<bool> = if keys.len().saturating_mul(t.rows.len()) > 4096 {
            let mut cells: Vec<&Value> = t
                .rows
                .iter()
                .map(|r| &r[column])
                .filter(|v| !v.is_null())
                .collect();
            cells.sort();
            let mut cells = cells.into_iter().peekable();
            keys.iter()
                .map(|k| {
                    while cells.next_if(|c| (*c).cmp(k).is_lt()).is_some() {}
                    cells.peek().is_some_and(|c| (*c).cmp(k).is_eq())
                })
                .collect()
        } else {
            keys.iter()
                .map(|k| {
                    t.rows
                        .iter()
                        .any(|r| !r[column].is_null() && r[column].cmp(k).is_eq())
                })
                .collect()
        };
        if present.iter().all(|&p| p) {
            return None;
        }
        if !self.tracing {
            return Some(Default::default());
        }
        let missing: Vec<String> = keys
            .iter()
            .zip(&present)
            .filter(|(_, &p)| !p)
            .map(|(k, _)| k.to_string())
            .collect();
        let all: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        Some((
            format!("{} {} all present", t.columns[column], all.join(", ")),
            format!("{} {} missing", t.columns[column], missing.join(", ")),
        ))
    }

    /// A `same_as_clean_run` requirement: the first table that differs from the clean run's,
    /// with the diff of its rows.
    fn same_as_clean_miss(&self, tables: &[usize], clean: &Clean) -> Option<Found> {
        let (t, now) = tables.iter().find_map(|&t| {
            let now = self.wh.tables[t].sorted_rows();
            (now != clean.tables[t]).then_some((t, now))
        })?;
        if !self.tracing {
            return Some(Default::default());
        }
        let table = &self.wh.tables[t];
        let diff = table_diff(
            &table.name,
            &table.columns,
            &self.m.table_keys[t],
            &clean.tables[t],
            &now,
        );
        Some((
            format!(
                "{} as after a run with no failure: {}",
                table.name,
                format_rows(&table.columns, &clean.tables[t])
            ),
            format!("{}: {}", table.name, format_rows(&table.columns, &now)),
            Some(diff),
        ))
    }
}

fn rows_count(n: u64) -> String {
    if n == 1 {
        "1 row".into()
    } else {
        format!("{n} rows")
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
