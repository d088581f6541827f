//! The scenario's tables: columns typed, keys and partitions resolved, starting rows typed.

use super::error::{serr, ScenarioError};
use crate::scenario::{typed_rows, Scenario, TableDef, TableRole};
use crate::value::ColumnType;
use crate::warehouse::Row;

/// A table with its columns' types and positions resolved.
#[derive(Clone, Debug)]
pub(crate) struct TableInfo {
    pub name: String,
    pub role: TableRole,
    pub columns: Vec<String>,
    pub types: Vec<ColumnType>,
    /// The keys a design may write by, as column indices; the first is the default.
    pub keys: Vec<Vec<usize>>,
    pub partition: Option<usize>,
    /// The `loaded_at` column a job may stamp, with its type.
    pub loaded_at: Option<(usize, ColumnType)>,
    pub rows: Vec<Row>,
}

impl TableInfo {
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }
}

pub(super) fn compile_tables(
    scenario: &Scenario,
    errors: &mut Vec<ScenarioError>,
) -> Vec<TableInfo> {
    scenario
        .tables
        .iter()
        .enumerate()
        .map(|(t, def)| compile_table(t, def, errors))
        .collect()
}

fn compile_table(t: usize, def: &TableDef, errors: &mut Vec<ScenarioError>) -> TableInfo {
    let rows = typed_rows(def).unwrap_or_else(|(p, m)| {
        errors.push(serr(format!("$.tables[{t}].{p}"), m));
        Vec::new()
    });
    let columns: Vec<String> = def.columns.iter().map(|c| c.name.clone()).collect();
    let column = |name: &str, field: &str, errors: &mut Vec<ScenarioError>| {
        let c = def.column_index(name);
        if c.is_none() {
            errors.push(serr(
                format!("$.tables[{t}].{field}"),
                format!("\"{name}\" is not a column of {}", def.name),
            ));
        }
        c
    };
    let keys = def
        .keys
        .iter()
        .filter_map(|k| {
            k.iter()
                .map(|c| column(c, "keys", errors))
                .collect::<Option<Vec<usize>>>()
        })
        .collect();
    let partition = def
        .partition
        .as_ref()
        .and_then(|p| column(p, "partition", errors));
    for v in &def.versions {
        column(v, "versions", errors);
    }
    let loaded_at = def
        .column_index("loaded_at")
        .map(|c| (c, def.columns[c].ty));
    TableInfo {
        name: def.name.clone(),
        role: def.role,
        columns,
        types: def.columns.iter().map(|c| c.ty).collect(),
        keys,
        partition,
        loaded_at,
        rows,
    }
}
