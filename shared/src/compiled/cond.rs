//! Row filters compiled against a table: a column index, an operator and typed values, and
//! what is worked out from the rows they select.

use rust_decimal::Decimal;

use super::error::{serr, ScenarioError};
use super::table::TableInfo;
use crate::scenario::{Condition, Op};
use crate::value::Value;
use crate::warehouse::Row;

/// A compiled condition on rows: a column index, an operator and typed values.
#[derive(Clone, Debug)]
pub(crate) struct Cond {
    col: usize,
    op: Op,
    values: Vec<Value>,
}

impl Cond {
    /// The condition as SQL, on a table with these columns.
    pub(crate) fn sql(&self, columns: &[String], dialect: crate::dialect::Dialect) -> String {
        let column = &columns[self.col];
        match self.op {
            Op::In | Op::NotIn => {
                let values: Vec<String> = self.values.iter().map(|v| v.literal(dialect)).collect();
                format!("{column} {} ({})", self.op.sql(), values.join(", "))
            }
            op => format!("{column} {} {}", op.sql(), self.values[0].literal(dialect)),
        }
    }
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

pub(crate) fn compile_conds(
    def: &TableInfo,
    conds: &[Condition],
    path: &str,
    errors: &mut Vec<ScenarioError>,
) -> Vec<Cond> {
    let table = &def.name;
    let mut out = Vec::new();
    for (i, c) in conds.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let Some(col) = def.column(&c.column) else {
            errors.push(serr(
                format!("{p}.column"),
                format!("table {table} has no column \"{}\"", c.column),
            ));
            continue;
        };
        let ty = def.types[col];
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

/// The sum of `column` over the rows that match `filter` (NULLs and text count as nothing).
pub(crate) fn sum(rows: &[Row], column: usize, filter: &[Cond]) -> Decimal {
    rows.iter()
        .filter(|r| eval(r, filter))
        .map(|r| match &r[column] {
            Value::Decimal(d) => *d,
            Value::Int(i) => Decimal::from(*i),
            _ => Decimal::ZERO,
        })
        .sum()
}
