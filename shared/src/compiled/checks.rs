//! The scenario's requirements and row filters compiled against its tables: column names
//! become indices and JSON literals become typed values, so that a run evaluates them without
//! looking anything up.

use rust_decimal::Decimal;

use super::cond::{compile_conds, eval, Cond};
use super::error::{serr, ScenarioError};
use super::inputs::InputInfo;
use super::table::TableInfo;
use crate::scenario::{Check, Condition, Scenario};
use crate::value::{ColumnType, Value};

/// A compiled requirement check, in the order of the scenario's requirements.
#[derive(Clone, Debug)]
pub(crate) enum CCheck {
    Value {
        table: usize,
        column: usize,
        filter: Vec<Cond>,
        expected: Value,
    },
    Sum {
        table: usize,
        column: usize,
        filter: Vec<Cond>,
        expected: Option<Decimal>,
    },
    RowCount {
        table: usize,
        filter: Vec<Cond>,
        expected: Option<u64>,
    },
    Unique {
        table: usize,
        columns: Vec<usize>,
    },
    Complete {
        table: usize,
        column: usize,
        source: CompleteSource,
    },
    SameAsClean {
        tables: Vec<usize>,
    },
    RerunNoop {
        table: usize,
        run: usize,
    },
    NeverSeen {
        table: usize,
        filter: Vec<Cond>,
        rows: Option<u64>,
        column: Option<usize>,
        value: Option<Value>,
        /// Checked only from the first committed point where a row matches `filter`.
        from_first_row: bool,
    },
    NeverDrops {
        table: usize,
        column: usize,
        filter: Vec<Cond>,
    },
    Finishes,
}

/// Where a `complete` requirement's keys come from.
#[derive(Clone, Debug)]
pub(crate) enum CompleteSource {
    /// The messages of a stream or sender: their keys, sorted and without repeats.
    Keys(Vec<Value>),
    /// A table, as it is at the end of the run (the shop may change it between runs).
    Table {
        table: usize,
        column: usize,
        filter: Vec<Cond>,
    },
}

impl CompleteSource {
    /// The keys that must all be present, sorted and without repeats.
    pub fn keys(&self, tables: &[crate::warehouse::Table]) -> std::borrow::Cow<'_, [Value]> {
        match self {
            CompleteSource::Keys(keys) => std::borrow::Cow::Borrowed(keys),
            CompleteSource::Table {
                table,
                column,
                filter,
            } => {
                let mut keys: Vec<Value> = tables[*table]
                    .rows
                    .iter()
                    .filter(|r| eval(r, filter))
                    .map(|r| r[*column].clone())
                    .collect();
                keys.sort();
                keys.dedup();
                std::borrow::Cow::Owned(keys)
            }
        }
    }
}

/// What a requirement's check is compiled against, and where it reports.
struct Ctx<'a> {
    scenario: &'a Scenario,
    tables: &'a [TableInfo],
    streams: &'a [InputInfo],
    senders: &'a [InputInfo],
    /// The JSON path of the check.
    path: String,
    id: &'a str,
}

impl Ctx<'_> {
    fn table(&self, name: &str, errors: &mut Vec<ScenarioError>) -> Option<usize> {
        let t = self.tables.iter().position(|t| t.name == name);
        if t.is_none() {
            errors.push(serr(
                format!("{}.table", self.path),
                format!(
                    "requirement \"{}\" names table \"{name}\", which the scenario does not define",
                    self.id
                ),
            ));
        }
        t
    }

    fn column(
        &self,
        t: usize,
        name: &str,
        field: &str,
        errors: &mut Vec<ScenarioError>,
    ) -> Option<usize> {
        let c = self.tables[t].column(name);
        if c.is_none() {
            errors.push(serr(
                format!("{}.{field}", self.path),
                format!("table {} has no column \"{name}\"", self.tables[t].name),
            ));
        }
        c
    }

    fn conds(
        &self,
        t: usize,
        conds: &[Condition],
        field: &str,
        errors: &mut Vec<ScenarioError>,
    ) -> Vec<Cond> {
        compile_conds(
            &self.tables[t],
            conds,
            &format!("{}.{field}", self.path),
            errors,
        )
    }

    fn literal(
        &self,
        t: usize,
        c: usize,
        v: &serde_json::Value,
        field: &str,
        errors: &mut Vec<ScenarioError>,
    ) -> Option<Value> {
        Value::from_json(self.tables[t].types[c], v)
            .map_err(|m| errors.push(serr(format!("{}.{field}", self.path), m)))
            .ok()
    }
}

/// The requirements' checks, in the scenario's order.
pub(super) fn compile_checks(
    scenario: &Scenario,
    tables: &[TableInfo],
    streams: &[InputInfo],
    senders: &[InputInfo],
    errors: &mut Vec<ScenarioError>,
) -> Vec<CCheck> {
    let mut out = Vec::new();
    for (r, req) in scenario.requirements.iter().enumerate() {
        let ctx = Ctx {
            scenario,
            tables,
            streams,
            senders,
            path: format!("$.requirements[{r}].check"),
            id: &req.id,
        };
        let compiled = compile_end_check(&ctx, &req.check, errors)
            .or_else(|| compile_other_check(&ctx, &req.check, errors));
        // A failed compile leaves a placeholder so indices keep matching requirements (and
        // the errors refuse the scenario).
        out.push(compiled.unwrap_or(CCheck::Finishes));
    }
    out
}

/// The checks of the tables at the end of a run; `None` for the others (or on an error).
fn compile_end_check(ctx: &Ctx, check: &Check, errors: &mut Vec<ScenarioError>) -> Option<CCheck> {
    match check {
        Check::Value {
            table,
            column,
            filter,
            expected,
        } => {
            let t = ctx.table(table, errors)?;
            let c = ctx.column(t, column, "column", errors)?;
            let filter = ctx.conds(t, filter, "where", errors);
            let expected = ctx.literal(t, c, expected, "expected", errors)?;
            Some(CCheck::Value {
                table: t,
                column: c,
                filter,
                expected,
            })
        }
        Check::Sum {
            table,
            column,
            filter,
            expected,
        } => {
            let t = ctx.table(table, errors)?;
            let c = ctx.column(t, column, "column", errors)?;
            let filter = ctx.conds(t, filter, "where", errors);
            let expected = match expected {
                None => None,
                Some(v) => match Value::from_json(ColumnType::Decimal, v) {
                    Ok(Value::Decimal(d)) => Some(d),
                    Ok(_) => None,
                    Err(m) => {
                        errors.push(serr(format!("{}.expected", ctx.path), m));
                        return None;
                    }
                },
            };
            Some(CCheck::Sum {
                table: t,
                column: c,
                filter,
                expected,
            })
        }
        Check::RowCount {
            table,
            filter,
            expected,
        } => {
            let t = ctx.table(table, errors)?;
            let filter = ctx.conds(t, filter, "where", errors);
            Some(CCheck::RowCount {
                table: t,
                filter,
                expected: *expected,
            })
        }
        Check::Unique { table, columns } => {
            let t = ctx.table(table, errors)?;
            let cols: Vec<usize> = columns
                .iter()
                .filter_map(|c| ctx.column(t, c, "columns", errors))
                .collect();
            (cols.len() == columns.len() && !cols.is_empty()).then_some(CCheck::Unique {
                table: t,
                columns: cols,
            })
        }
        Check::Complete {
            table,
            column,
            source,
            source_column,
            source_where,
        } => {
            let t = ctx.table(table, errors)?;
            let c = ctx.column(t, column, "column", errors)?;
            let source = complete_source(ctx, source, source_column, source_where, errors)?;
            Some(CCheck::Complete {
                table: t,
                column: c,
                source,
            })
        }
        Check::SameAsCleanRun { tables: names } => {
            let ts: Vec<usize> = names.iter().filter_map(|n| ctx.table(n, errors)).collect();
            (ts.len() == names.len()).then_some(CCheck::SameAsClean { tables: ts })
        }
        _ => None,
    }
}

/// Where a `complete` check's keys come from: a table (read at the end) or the messages of a
/// stream or sender.
fn complete_source(
    ctx: &Ctx,
    source: &str,
    source_column: &str,
    source_where: &[Condition],
    errors: &mut Vec<ScenarioError>,
) -> Option<CompleteSource> {
    if let Some(s) = ctx.tables.iter().position(|t| t.name == source) {
        let Some(sc) = ctx.tables[s].column(source_column) else {
            errors.push(serr(
                format!("{}.source_column", ctx.path),
                format!("table {source} has no column \"{source_column}\""),
            ));
            return None;
        };
        let filter = ctx.conds(s, source_where, "source_where", errors);
        return Some(CompleteSource::Table {
            table: s,
            column: sc,
            filter,
        });
    }
    let input = ctx
        .streams
        .iter()
        .chain(ctx.senders)
        .find(|i| i.name == source);
    let Some(input) = input else {
        errors.push(serr(
            format!("{}.source", ctx.path),
            format!("\"{source}\" is not a table, stream or sender of the scenario"),
        ));
        return None;
    };
    let declared = ctx
        .scenario
        .streams
        .iter()
        .map(|s| (&s.name, &s.fields))
        .chain(ctx.scenario.senders.iter().map(|s| (&s.name, &s.fields)))
        .find(|(name, _)| *name == source)
        .is_some_and(|(_, fields)| fields.iter().any(|f| f.name == source_column));
    if !declared {
        errors.push(serr(
            format!("{}.source_column", ctx.path),
            format!("{source} has no field \"{source_column}\""),
        ));
        return None;
    }
    let mut keys: Vec<Value> = input
        .messages
        .iter()
        .filter_map(|m| m.values.iter().find(|(f, _)| f == source_column))
        .map(|(_, v)| v.clone())
        .collect();
    keys.sort();
    keys.dedup();
    Some(CompleteSource::Keys(keys))
}

/// The checks of what readers see while the run goes on, and of how it ends.
fn compile_other_check(
    ctx: &Ctx,
    check: &Check,
    errors: &mut Vec<ScenarioError>,
) -> Option<CCheck> {
    match check {
        Check::RerunNoop { table, run } => {
            let t = ctx.table(table, errors)?;
            let Some(r) = ctx.scenario.runs.iter().position(|x| &x.id == run) else {
                errors.push(serr(
                    format!("{}.run", ctx.path),
                    format!("no run \"{run}\" in the scenario's runs"),
                ));
                return None;
            };
            Some(CCheck::RerunNoop { table: t, run: r })
        }
        Check::NeverSeen {
            table,
            filter,
            rows,
            column,
            value,
            from_first_row,
        } => {
            let t = ctx.table(table, errors)?;
            let filter = ctx.conds(t, filter, "where", errors);
            let column = match column {
                Some(c) => Some(ctx.column(t, c, "column", errors)?),
                None => None,
            };
            let value = match (column, value) {
                (Some(c), Some(v)) => Some(ctx.literal(t, c, v, "value", errors)?),
                (None, Some(_)) => {
                    errors.push(serr(format!("{}.value", ctx.path), "value needs a column"));
                    return None;
                }
                _ => None,
            };
            Some(CCheck::NeverSeen {
                table: t,
                filter,
                rows: *rows,
                column,
                value,
                from_first_row: *from_first_row,
            })
        }
        Check::NeverDrops {
            table,
            column,
            filter,
        } => {
            let t = ctx.table(table, errors)?;
            let c = ctx.column(t, column, "column", errors)?;
            let filter = ctx.conds(t, filter, "where", errors);
            Some(CCheck::NeverDrops {
                table: t,
                column: c,
                filter,
            })
        }
        Check::Finishes {} => Some(CCheck::Finishes),
        _ => None,
    }
}
