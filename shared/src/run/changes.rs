//! The shop's changes to its source tables before a run: each is one statement, committed on
//! its own, that readers see at once.

use super::{Sim, Step};
use crate::compiled::ChangeInfo;
use crate::model::{eval, JobModel};
use crate::sql;
use crate::warehouse::Affected;

impl Sim<'_> {
    /// Makes one change, as the shop's database would, and says so in the trace.
    pub(super) fn apply_change(&mut self, b: &JobModel, change: &ChangeInfo) {
        let table = change.table();
        let sql = self.tracing.then(|| {
            sql::change(
                &self.wh.tables[table],
                &self.m.column_types[table],
                change,
                self.dialect,
            )
        });
        let affected = match change {
            ChangeInfo::Insert { rows, .. } => self.wh.insert(table, rows.clone()),
            ChangeInfo::Update { set, filter, .. } => {
                let matching: Vec<usize> = self.matching(table, filter);
                for &at in &matching {
                    let mut row = self.wh.tables[table].rows[at].clone();
                    for (c, v) in set {
                        row[*c] = v.clone();
                    }
                    self.wh.update_at(table, at, row);
                }
                Affected {
                    updated: matching.len(),
                    ..Affected::default()
                }
            }
            ChangeInfo::Delete { filter, .. } => {
                let matching = self.matching(table, filter);
                self.wh.delete_at(table, &matching)
            }
        };
        self.tick(1);
        let node = (table == b.source_table).then_some(b.source_node.as_str());
        self.log(|sim| Step {
            actor: "shop",
            node,
            edge: None,
            action: format!("changes {}: {}", sim.wh.tables[table].name, change.title()),
            sql,
            outcome: if matches!(change, ChangeInfo::Delete { .. }) {
                format!("committed: {}", affected.describe_delete())
            } else {
                format!("committed: {}", affected.describe())
            },
            changed: true,
        });
        self.observe();
    }

    fn matching(&self, table: usize, filter: &[crate::model::Cond]) -> Vec<usize> {
        self.wh.tables[table]
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| eval(r, filter))
            .map(|(i, _)| i)
            .collect()
    }
}
