//! The scenario's requirements and row filters compiled against its tables: column names
//! become indices and JSON literals become typed values, so that a run evaluates them without
//! looking anything up.

use rust_decimal::Decimal;

use super::error::{serr, ScenarioError};
use crate::scenario::{Check, Condition, Op, Scenario};
use crate::value::{ColumnType, Value};
use crate::warehouse::{Row, Table};

/// A compiled condition on rows: a column index, an operator and typed values.
#[derive(Clone, Debug)]
pub(crate) struct Cond {
    col: usize,
    op: Op,
    values: Vec<Value>,
}

/// Whether a row matches every condition, with SQL's rules for NULL.
pub(crate) fn eval(row: &Row, conds: &[Cond]) -> bool {
    conds.iter().all(|c| {
        let v = &row[c.col];
        match c.op {
            Op::In => c.values.iter().any(|x| v.key_eq(x)),
            Op::NotIn => !v.is_null() && c.values.iter().all(|x| !v.key_eq(x)),
            op => match v.sql_cmp(&c.values[0]) {
                None => false,
                Some(o) => match op {
                    Op::Eq => o.is_eq(),
                    Op::Ne => o.is_ne(),
                    Op::Lt => o.is_lt(),
                    Op::Le => o.is_le(),
                    Op::Gt => o.is_gt(),
                    Op::Ge => o.is_ge(),
                    _ => false,
                },
            },
        }
    })
}

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
        keys: Vec<Value>,
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
    },
    Finishes,
}

pub(super) fn compile_conds(
    scenario: &Scenario,
    table: &str,
    conds: &[Condition],
    path: &str,
    errors: &mut Vec<ScenarioError>,
) -> Vec<Cond> {
    let Some(def) = scenario.table(table) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, c) in conds.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let Some(col) = def.column_index(&c.column) else {
            errors.push(serr(
                format!("{p}.column"),
                format!("table {table} has no column \"{}\"", c.column),
            ));
            continue;
        };
        let ty = def.columns[col].ty;
        let raw: Vec<&serde_json::Value> = match (c.op, &c.value) {
            (Op::In | Op::NotIn, serde_json::Value::Array(items)) => items.iter().collect(),
            (Op::In | Op::NotIn, _) => {
                errors.push(serr(
                    format!("{p}.value"),
                    "in and not_in take a list of values",
                ));
                continue;
            }
            (_, v) => vec![v],
        };
        let mut values = Vec::new();
        for v in raw {
            match Value::from_json(ty, v) {
                Ok(v) => values.push(v),
                Err(m) => errors.push(serr(format!("{p}.value"), m)),
            }
        }
        if !values.is_empty() || matches!(c.op, Op::In | Op::NotIn) {
            out.push(Cond {
                col,
                op: c.op,
                values,
            });
        }
    }
    out
}

pub(super) fn compile_checks(
    scenario: &Scenario,
    tables: &[Table],
    errors: &mut Vec<ScenarioError>,
) -> Vec<CCheck> {
    let index = |name: &str| scenario.tables.iter().position(|t| t.name == name);
    let mut out = Vec::new();
    for (r, req) in scenario.requirements.iter().enumerate() {
        let p = format!("$.requirements[{r}].check");
        let table_of = |name: &str, errors: &mut Vec<ScenarioError>| -> Option<usize> {
            let t = index(name);
            if t.is_none() {
                errors.push(serr(format!("{p}.table"), format!("requirement \"{}\" names table \"{name}\", which the scenario does not define", req.id)));
            }
            t
        };
        let column_of =
            |t: usize, name: &str, field: &str, errors: &mut Vec<ScenarioError>| -> Option<usize> {
                let c = scenario.tables[t].column_index(name);
                if c.is_none() {
                    errors.push(serr(
                        format!("{p}.{field}"),
                        format!("table {} has no column \"{name}\"", scenario.tables[t].name),
                    ));
                }
                c
            };
        let compiled = match &req.check {
            Check::Value {
                table,
                column,
                filter,
                expected,
            } => (|| {
                let t = table_of(table, errors)?;
                let c = column_of(t, column, "column", errors)?;
                let filter = compile_conds(scenario, table, filter, &format!("{p}.where"), errors);
                let expected = Value::from_json(scenario.tables[t].columns[c].ty, expected)
                    .map_err(|m| errors.push(serr(format!("{p}.expected"), m)))
                    .ok()?;
                Some(CCheck::Value {
                    table: t,
                    column: c,
                    filter,
                    expected,
                })
            })(),
            Check::Sum {
                table,
                column,
                filter,
                expected,
            } => (|| {
                let t = table_of(table, errors)?;
                let c = column_of(t, column, "column", errors)?;
                let filter = compile_conds(scenario, table, filter, &format!("{p}.where"), errors);
                let expected = match expected {
                    None => None,
                    Some(v) => match Value::from_json(ColumnType::Decimal, v) {
                        Ok(Value::Decimal(d)) => Some(d),
                        Ok(_) => None,
                        Err(m) => {
                            errors.push(serr(format!("{p}.expected"), m));
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
            })(),
            Check::RowCount {
                table,
                filter,
                expected,
            } => (|| {
                let t = table_of(table, errors)?;
                let filter = compile_conds(scenario, table, filter, &format!("{p}.where"), errors);
                Some(CCheck::RowCount {
                    table: t,
                    filter,
                    expected: *expected,
                })
            })(),
            Check::Unique { table, columns } => (|| {
                let t = table_of(table, errors)?;
                let cols: Vec<usize> = columns
                    .iter()
                    .filter_map(|c| column_of(t, c, "columns", errors))
                    .collect();
                (cols.len() == columns.len() && !cols.is_empty()).then_some(CCheck::Unique {
                    table: t,
                    columns: cols,
                })
            })(),
            Check::Complete {
                table,
                column,
                source,
                source_column,
                source_where,
            } => (|| {
                let t = table_of(table, errors)?;
                let c = column_of(t, column, "column", errors)?;
                let keys: Vec<Value> = if let Some(s) = index(source) {
                    let sc = scenario.tables[s].column_index(source_column);
                    let Some(sc) = sc else {
                        errors.push(serr(
                            format!("{p}.source_column"),
                            format!("table {source} has no column \"{source_column}\""),
                        ));
                        return None;
                    };
                    let filter = compile_conds(
                        scenario,
                        source,
                        source_where,
                        &format!("{p}.source_where"),
                        errors,
                    );
                    tables[s]
                        .rows
                        .iter()
                        .filter(|r| eval(r, &filter))
                        .map(|r| r[sc].clone())
                        .collect()
                } else {
                    let (fields, messages) = if let Some(st) = scenario.stream(source) {
                        (&st.fields, &st.messages)
                    } else if let Some(se) = scenario.sender(source) {
                        (&se.fields, &se.messages)
                    } else {
                        errors.push(serr(
                            format!("{p}.source"),
                            format!(
                                "\"{source}\" is not a table, stream or sender of the scenario"
                            ),
                        ));
                        return None;
                    };
                    let Some(f) = fields.iter().find(|f| &f.name == source_column) else {
                        errors.push(serr(
                            format!("{p}.source_column"),
                            format!("{source} has no field \"{source_column}\""),
                        ));
                        return None;
                    };
                    messages
                        .iter()
                        .filter_map(|m| m.get(source_column))
                        .filter_map(|v| Value::from_json(f.ty, v).ok())
                        .collect()
                };
                let mut keys = keys;
                keys.sort();
                keys.dedup();
                Some(CCheck::Complete {
                    table: t,
                    column: c,
                    keys,
                })
            })(),
            Check::SameAsCleanRun { tables: names } => {
                let ts: Vec<usize> = names.iter().filter_map(|n| table_of(n, errors)).collect();
                (ts.len() == names.len()).then_some(CCheck::SameAsClean { tables: ts })
            }
            Check::RerunNoop { table, run } => (|| {
                let t = table_of(table, errors)?;
                let Some(r) = scenario.runs.iter().position(|x| &x.id == run) else {
                    errors.push(serr(
                        format!("{p}.run"),
                        format!("no run \"{run}\" in the scenario's runs"),
                    ));
                    return None;
                };
                Some(CCheck::RerunNoop { table: t, run: r })
            })(),
            Check::NeverSeen {
                table,
                filter,
                rows,
                column,
                value,
            } => (|| {
                let t = table_of(table, errors)?;
                let filter = compile_conds(scenario, table, filter, &format!("{p}.where"), errors);
                let column = match column {
                    Some(c) => Some(column_of(t, c, "column", errors)?),
                    None => None,
                };
                let value = match (column, value) {
                    (Some(c), Some(v)) => Some(
                        Value::from_json(scenario.tables[t].columns[c].ty, v)
                            .map_err(|m| errors.push(serr(format!("{p}.value"), m)))
                            .ok()?,
                    ),
                    (None, Some(_)) => {
                        errors.push(serr(format!("{p}.value"), "value needs a column"));
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
                })
            })(),
            Check::Finishes {} => Some(CCheck::Finishes),
        };
        // A failed compile leaves a placeholder so indices keep matching requirements.
        out.push(compiled.unwrap_or(CCheck::Finishes));
    }
    out
}
