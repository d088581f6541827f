//! The warehouse: tables of typed rows with SQL write semantics, transactions by undo log,
//! and an offset store that can take part in a transaction.
//!
//! There is one writer at a time, so the committed state is the current state whenever no
//! transaction is open; readers only look at such moments.
//!
//! For the exhaustive check, the undo log can also be kept outside transactions (a journal of
//! every change, so the search can go back to an earlier state), and the warehouse can keep a
//! fingerprint of its contents up to date with every change.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};

use crate::value::Value;

pub type Row = Vec<Value>;

#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
}

impl Table {
    /// The rows sorted, for comparing contents in any order: two tables hold the same rows
    /// exactly when their sorted rows are `==`, because the order's ties are `==` values
    /// (`Value::content_cmp`). The sort is stable, so equal rows keep the table's order.
    pub fn sorted_rows(&self) -> Vec<Row> {
        let mut rows = self.rows.clone();
        rows.sort_by(|a, b| crate::value::row_content_cmp(a, b));
        rows
    }
}

#[derive(Clone, Debug)]
enum Undo {
    /// `hash` is the row's content hash as [`Warehouse::remember`] added it (its two halves,
    /// so that the entry keeps the alignment of the others), taken off again on undo.
    Inserted {
        table: usize,
        hash: [u64; 2],
    },
    Deleted {
        table: usize,
        at: usize,
        row: Row,
    },
    Updated {
        table: usize,
        at: usize,
        row: Row,
    },
    Offset {
        slot: usize,
        old: u64,
    },
}

/// What looking a row's key up found: a row with that key, or none, with the key's hash by the
/// table's index when it has one by that key (so that inserting the row need not compute it
/// again).
enum Found {
    Present,
    Absent(Option<u64>),
}

/// Raised by a statement that a real database would refuse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlError(pub String);

/// The rows of one table by a hash of a key's values, as a unique index would find them.
/// Built on first use, kept up to date by inserts, and dropped by deletes (which move rows).
/// Rows whose keys share a hash share a bucket, so a lookup compares the rows it finds with
/// the key, as SQL compares keys ([`Value::key_eq`]).
#[derive(Clone, Debug)]
struct KeyIndex {
    key: Vec<usize>,
    rows: HashMap<u64, Vec<usize>, BuildHasherDefault<Hashed>>,
}

/// The index's keys are hashes already, so its map passes them through.
#[derive(Clone, Copy, Default)]
struct Hashed(u64);

impl Hasher for Hashed {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, i: u64) {
        self.0 = i;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash of `row`'s values in the `key` columns, equal for keys SQL finds equal (an integer
/// and a decimal of the same value, 25.0 and 25.00); `None` when one of them is NULL, which
/// no key equals.
fn key_hash(row: &Row, key: &[usize]) -> Option<u64> {
    let mut h = foldhash::fast::FixedState::with_seed(0x6b65_795f_6861_7368).build_hasher();
    for &k in key {
        match &row[k] {
            Value::Null => return None,
            Value::Int(i) => {
                h.write_u8(1);
                h.write_i64(*i);
            }
            Value::Decimal(d) => {
                let n = d.normalize();
                let whole = (n.scale() == 0)
                    .then(|| i64::try_from(n.mantissa()).ok())
                    .flatten();
                match whole {
                    Some(i) => {
                        h.write_u8(1);
                        h.write_i64(i);
                    }
                    None => {
                        h.write_u8(2);
                        h.write_i128(n.mantissa());
                        h.write_u32(n.scale());
                    }
                }
            }
            Value::Text(t) => {
                h.write_u8(3);
                h.write(t.as_bytes());
                h.write_u8(0xff);
            }
            Value::Date(d) => {
                h.write_u8(4);
                d.hash(&mut h);
            }
            Value::Timestamp(t) => {
                h.write_u8(5);
                t.hash(&mut h);
            }
        }
    }
    Some(h.finish())
}

/// Whether two rows have equal keys, as a unique index compares them.
fn same_key(a: &Row, b: &Row, key: &[usize]) -> bool {
    key.iter().all(|&k| a[k].key_eq(&b[k]))
}

#[derive(Clone, Debug)]
pub struct Warehouse {
    pub tables: Vec<Table>,
    /// Each consumer's next offset when it stores it in the warehouse (`with_write`), by the
    /// consumer's slot.
    pub stored_offsets: Vec<u64>,
    /// Undo entries: those of the open transaction, and, when `journaling`, every earlier one.
    journal: Vec<Undo>,
    /// Where the open transaction's entries start in the journal.
    transaction: Option<usize>,
    journaling: bool,
    /// The sum of the hashes of every row, by table (wrapping): equal for equal contents in any
    /// row order. Kept only when `fingerprinting`.
    contents: u128,
    fingerprinting: bool,
    indexes: Vec<Option<KeyIndex>>,
}

/// A 128-bit hash of a row of a table.
fn row_hash(table: usize, row: &Row) -> u128 {
    let mut f = crate::fingerprint::Fingerprint::new(0xa5);
    f.write_usize(table);
    f.values(row.iter());
    f.finish128()
}

/// How a statement changed a table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Affected {
    pub inserted: usize,
    pub updated: usize,
    pub deleted: usize,
    pub ignored: usize,
}

impl Affected {
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let plural = |n: usize| if n == 1 { "row" } else { "rows" };
        if self.deleted > 0 {
            parts.push(format!("{} {} deleted", self.deleted, plural(self.deleted)));
        }
        if self.updated > 0 {
            parts.push(format!("{} {} updated", self.updated, plural(self.updated)));
        }
        if self.inserted > 0 || parts.is_empty() {
            parts.push(format!(
                "{} {} inserted",
                self.inserted,
                plural(self.inserted)
            ));
        }
        if self.ignored > 0 {
            parts.push(format!(
                "{} skipped as {}",
                self.ignored,
                if self.ignored == 1 {
                    "a repeat"
                } else {
                    "repeats"
                }
            ));
        }
        parts.join(", ")
    }

    /// A `DELETE`'s effect: the rows it deleted, none included ("0 rows deleted").
    pub fn describe_delete(&self) -> String {
        let plural = if self.deleted == 1 { "row" } else { "rows" };
        format!("{} {plural} deleted", self.deleted)
    }
}

impl Warehouse {
    /// A warehouse of `tables`, with room for the stored offset of one consumer.
    pub fn new(tables: Vec<Table>) -> Self {
        Warehouse::with_offset_slots(tables, 1)
    }

    /// A warehouse of `tables`, with room for the stored offsets of `slots` consumers.
    pub fn with_offset_slots(tables: Vec<Table>, slots: usize) -> Self {
        let indexes = vec![None; tables.len()];
        Warehouse {
            tables,
            stored_offsets: vec![0; slots],
            journal: Vec::new(),
            transaction: None,
            journaling: false,
            contents: 0,
            fingerprinting: false,
            indexes,
        }
    }

    /// Keeps every change from now on, so that `undo_to` can go back to any earlier `mark`.
    /// With `incremental`, the fingerprint of the contents is kept up to date with every
    /// change (for runs with many marks); otherwise `fingerprint` hashes every row each time.
    pub fn keep_journal(&mut self, incremental: bool) {
        self.journaling = true;
        self.fingerprinting = incremental;
        self.contents = if incremental { self.contents_hash() } else { 0 };
    }

    fn contents_hash(&self) -> u128 {
        self.tables
            .iter()
            .enumerate()
            .flat_map(|(t, table)| table.rows.iter().map(move |r| row_hash(t, r)))
            .fold(0, u128::wrapping_add)
    }

    /// The fingerprint of the tables' contents (row order aside) and the stored offsets.
    /// Equal contents always give equal fingerprints; different ones almost never do (2^-128).
    pub fn fingerprint(&self) -> (u128, Vec<u64>) {
        (self.contents_fingerprint(), self.stored_offsets.clone())
    }

    /// The fingerprint of the tables' contents alone (row order aside).
    pub fn contents_fingerprint(&self) -> u128 {
        if self.fingerprinting {
            self.contents
        } else {
            self.contents_hash()
        }
    }

    /// A point in the journal to come back to; only taken with no transaction open.
    pub fn mark(&self) -> usize {
        assert!(
            self.journaling && self.transaction.is_none(),
            "a mark is taken between transactions, with the journal kept"
        );
        self.journal.len()
    }

    /// Undoes every change since `mark`, including those of a transaction opened after it,
    /// which is closed.
    pub fn undo_to(&mut self, mark: usize) {
        assert!(
            self.transaction.is_none_or(|t| t >= mark),
            "a mark is never inside a transaction"
        );
        self.undo_down_to(mark);
        self.transaction = None;
    }

    pub fn in_transaction(&self) -> bool {
        self.transaction.is_some()
    }

    pub fn begin(&mut self) {
        assert!(
            self.transaction.is_none(),
            "nested transactions are never opened"
        );
        self.transaction = Some(self.journal.len());
    }

    pub fn commit(&mut self) {
        assert!(self.transaction.is_some(), "COMMIT without BEGIN");
        self.transaction = None;
        if !self.journaling {
            self.journal.clear();
        }
    }

    /// Undoes every change of the open transaction, if there is one. Returns whether one was open.
    pub fn rollback(&mut self) -> bool {
        let Some(start) = self.transaction.take() else {
            return false;
        };
        self.undo_down_to(start);
        true
    }

    fn undo_down_to(&mut self, len: usize) {
        while self.journal.len() > len {
            let undo = self
                .journal
                .pop()
                .expect("the journal is longer than the mark");
            match undo {
                Undo::Inserted { table, hash } => {
                    let at = self.tables[table].rows.len() - 1;
                    let row = self.tables[table]
                        .rows
                        .pop()
                        .expect("an undone insert has its row");
                    if let Some(index) = &mut self.indexes[table] {
                        if let Some(rows) =
                            key_hash(&row, &index.key).and_then(|h| index.rows.get_mut(&h))
                        {
                            rows.retain(|&r| r != at);
                        }
                    }
                    if self.fingerprinting {
                        let hash = u128::from(hash[0]) | (u128::from(hash[1]) << 64);
                        self.contents = self.contents.wrapping_sub(hash);
                    }
                }
                Undo::Deleted { table, at, row } => {
                    self.indexes[table] = None;
                    self.remember(table, &row);
                    self.tables[table].rows.insert(at, row);
                }
                Undo::Updated { table, at, row } => {
                    self.remember(table, &row);
                    let now = std::mem::replace(&mut self.tables[table].rows[at], row);
                    self.forget(table, &now);
                }
                Undo::Offset { slot, old } => self.stored_offsets[slot] = old,
            }
        }
    }

    /// Closes the open transaction keeping its changes, as no database would on ROLLBACK:
    /// only for a deliberately wrong model (`sim::Mutation`).
    pub fn abandon(&mut self) -> bool {
        let open = self.transaction.take().is_some();
        if open && !self.journaling {
            self.journal.clear();
        }
        open
    }

    fn log(&mut self, undo: Undo) {
        if self.journaling || self.transaction.is_some() {
            self.journal.push(undo);
        }
    }

    /// Adds `row` to the contents' hash and answers the row's hash (0 when not fingerprinting).
    fn remember(&mut self, table: usize, row: &Row) -> u128 {
        if !self.fingerprinting {
            return 0;
        }
        let hash = row_hash(table, row);
        self.contents = self.contents.wrapping_add(hash);
        hash
    }

    fn forget(&mut self, table: usize, row: &Row) {
        if self.fingerprinting {
            self.contents = self.contents.wrapping_sub(row_hash(table, row));
        }
    }

    /// Stores the next offset of the consumer of `slot`.
    pub fn set_offset(&mut self, slot: usize, offset: u64) {
        let old = self.stored_offsets[slot];
        self.stored_offsets[slot] = offset;
        self.log(Undo::Offset { slot, old });
    }

    fn push(&mut self, table: usize, row: Row) {
        self.push_hashed(table, row, None);
    }

    /// Appends `row`; `key` is the hash of its key by the table's index when the caller has it
    /// already ([`Self::key_present`]).
    fn push_hashed(&mut self, table: usize, row: Row, key: Option<u64>) {
        let at = self.tables[table].rows.len();
        if let Some(index) = &mut self.indexes[table] {
            if let Some(h) = key.or_else(|| key_hash(&row, &index.key)) {
                index.rows.entry(h).or_default().push(at);
            }
        }
        let hash = self.remember(table, &row);
        self.tables[table].rows.push(row);
        self.log(Undo::Inserted {
            table,
            hash: [hash as u64, (hash >> 64) as u64],
        });
    }

    /// Plain `INSERT`.
    pub fn insert(&mut self, table: usize, rows: Vec<Row>) -> Affected {
        let n = rows.len();
        for row in rows {
            self.push(table, row);
        }
        Affected {
            inserted: n,
            ..Affected::default()
        }
    }

    /// `DELETE FROM table WHERE column = value`.
    pub fn delete_where_eq(&mut self, table: usize, column: usize, value: &Value) -> Affected {
        let mut deleted = 0;
        let mut at = self.tables[table].rows.len();
        while at > 0 {
            at -= 1;
            if self.tables[table].rows[at][column].key_eq(value) {
                self.indexes[table] = None;
                let row = self.tables[table].rows.remove(at);
                self.forget(table, &row);
                self.log(Undo::Deleted { table, at, row });
                deleted += 1;
            }
        }
        Affected {
            deleted,
            ..Affected::default()
        }
    }

    /// Whether a row with the same key is present (a NULL key never is).
    #[cfg(test)]
    fn key_present(&mut self, table: usize, key: &[usize], row: &Row) -> bool {
        matches!(self.find_key(table, key, row), Found::Present)
    }

    /// Whether a row with the same key is present (a NULL key never is), and when it is not,
    /// the key's hash where the table's index is by `key`.
    fn find_key(&mut self, table: usize, key: &[usize], row: &Row) -> Found {
        if key.iter().any(|&k| row[k].is_null()) {
            return Found::Absent(None);
        }
        if self.tables[table].rows.len() < 32 && self.indexes[table].is_none() {
            let present = self.tables[table]
                .rows
                .iter()
                .any(|existing| same_key(existing, row, key));
            return if present {
                Found::Present
            } else {
                Found::Absent(None)
            };
        }
        let Some(h) = key_hash(row, key) else {
            return Found::Absent(None);
        };
        let (index, rows) = self.index(table, key);
        let present = index
            .rows
            .get(&h)
            .is_some_and(|bucket| bucket.iter().any(|&at| same_key(&rows[at], row, key)));
        if present {
            Found::Present
        } else {
            Found::Absent(Some(h))
        }
    }

    /// The index of `table` by `key`, built if it has none by that key.
    fn index(&mut self, table: usize, key: &[usize]) -> (&KeyIndex, &[Row]) {
        if self.indexes[table].as_ref().is_none_or(|i| i.key != key) {
            let mut rows: HashMap<u64, Vec<usize>, BuildHasherDefault<Hashed>> = HashMap::default();
            for (at, existing) in self.tables[table].rows.iter().enumerate() {
                if let Some(h) = key_hash(existing, key) {
                    rows.entry(h).or_default().push(at);
                }
            }
            self.indexes[table] = Some(KeyIndex {
                key: key.to_vec(),
                rows,
            });
        }
        let index = self.indexes[table]
            .as_ref()
            .expect("the index was just built");
        (index, &self.tables[table].rows)
    }

    fn matches(&mut self, table: usize, key: &[usize], row: &Row) -> Vec<usize> {
        if key.iter().any(|&k| row[k].is_null()) {
            return Vec::new();
        }
        // A small table is scanned; a larger one gets an index, as a database would use.
        if self.tables[table].rows.len() < 32 && self.indexes[table].is_none() {
            return self.tables[table]
                .rows
                .iter()
                .enumerate()
                .filter(|(_, existing)| same_key(existing, row, key))
                .map(|(i, _)| i)
                .collect();
        }
        let Some(h) = key_hash(row, key) else {
            return Vec::new();
        };
        let (index, rows) = self.index(table, key);
        let mut found: Vec<usize> = index
            .rows
            .get(&h)
            .map(|bucket| {
                bucket
                    .iter()
                    .copied()
                    .filter(|&at| same_key(&rows[at], row, key))
                    .collect()
            })
            .unwrap_or_default();
        found.sort_unstable();
        found
    }

    /// `INSERT … ON CONFLICT (key) DO NOTHING`: a row whose key is already present (or was
    /// inserted earlier by the same statement) is skipped; a NULL key never conflicts.
    pub fn insert_ignore(&mut self, table: usize, key: &[usize], rows: Vec<Row>) -> Affected {
        let mut affected = Affected::default();
        for row in rows {
            match self.find_key(table, key, &row) {
                Found::Present => affected.ignored += 1,
                Found::Absent(hash) => {
                    self.push_hashed(table, row, hash);
                    affected.inserted += 1;
                }
            }
        }
        affected
    }

    /// `MERGE … ON key`: matched rows are updated (every column that is not the key), new rows
    /// inserted. As in PostgreSQL, a target row matched by two source rows is an error.
    pub fn merge(
        &mut self,
        table: usize,
        key: &[usize],
        rows: Vec<Row>,
    ) -> Result<Affected, SqlError> {
        let mut plan = Vec::with_capacity(rows.len());
        let mut touched = std::collections::BTreeSet::new();
        for row in &rows {
            let matched = self.matches(table, key, row);
            for &m in &matched {
                if !touched.insert(m) {
                    return Err(SqlError(format!(
                        "MERGE command cannot affect row a second time (two incoming rows have the same key in {})",
                        self.tables[table].name
                    )));
                }
            }
            plan.push(matched);
        }
        let mut affected = Affected::default();
        for (row, matched) in rows.into_iter().zip(plan) {
            if matched.is_empty() {
                self.push(table, row);
                affected.inserted += 1;
            } else {
                for at in matched {
                    let old = self.tables[table].rows[at].clone();
                    let mut new = old.clone();
                    for (c, v) in row.iter().enumerate() {
                        if !key.contains(&c) {
                            new[c] = v.clone();
                        }
                    }
                    self.forget(table, &old);
                    self.remember(table, &new);
                    self.tables[table].rows[at] = new;
                    self.log(Undo::Updated {
                        table,
                        at,
                        row: old,
                    });
                    affected.updated += 1;
                }
            }
        }
        Ok(affected)
    }

    /// A plain `INSERT` of one row.
    pub fn insert_one(&mut self, table: usize, row: Row) -> Affected {
        self.push(table, row);
        Affected {
            inserted: 1,
            ..Affected::default()
        }
    }

    /// `INSERT … ON CONFLICT (key) DO NOTHING` of one row, copied only when it is inserted.
    pub fn insert_ignore_one(
        &mut self,
        table: usize,
        key: &[usize],
        row: Cow<'_, Row>,
    ) -> Affected {
        match self.find_key(table, key, &row) {
            Found::Present => Affected {
                ignored: 1,
                ..Affected::default()
            },
            Found::Absent(hash) => {
                self.push_hashed(table, row.into_owned(), hash);
                Affected {
                    inserted: 1,
                    ..Affected::default()
                }
            }
        }
    }

    /// `MERGE … ON key` of one row: every row it matches is updated (one incoming row may match
    /// several), or it is inserted.
    pub fn merge_one(&mut self, table: usize, key: &[usize], row: Cow<'_, Row>) -> Affected {
        let matched = self.matches(table, key, &row);
        if matched.is_empty() {
            return self.insert_one(table, row.into_owned());
        }
        let mut affected = Affected::default();
        for at in matched {
            self.update_from(table, at, key, &row);
            affected.updated += 1;
        }
        affected
    }

    /// `merge_if_newer` of one row (see [`Warehouse::merge_if_newer`]).
    pub fn merge_if_newer_one(
        &mut self,
        table: usize,
        key: &[usize],
        version: usize,
        row: Cow<'_, Row>,
    ) -> Affected {
        let matched = self.matches(table, key, &row);
        if matched.is_empty() {
            return self.insert_one(table, row.into_owned());
        }
        let mut affected = Affected::default();
        for at in matched {
            let old = &self.tables[table].rows[at];
            if row[version].sql_cmp(&old[version]) == Some(std::cmp::Ordering::Greater) {
                self.update_from(table, at, key, &row);
                affected.updated += 1;
            } else {
                affected.ignored += 1;
            }
        }
        affected
    }

    /// Updates the row at `at` with every cell of `row` but the key's.
    fn update_from(&mut self, table: usize, at: usize, key: &[usize], row: &Row) {
        let mut new = self.tables[table].rows[at].clone();
        for (c, v) in row.iter().enumerate() {
            if !key.contains(&c) {
                new[c] = v.clone();
            }
        }
        self.update_at(table, at, new);
    }

    /// `UPDATE` of the row at `at` to `row`.
    pub fn update_at(&mut self, table: usize, at: usize, row: Row) {
        self.indexes[table] = None;
        let old = std::mem::replace(&mut self.tables[table].rows[at], row);
        self.forget(table, &old);
        let new = self.tables[table].rows[at].clone();
        self.remember(table, &new);
        self.log(Undo::Updated {
            table,
            at,
            row: old,
        });
    }

    /// `DELETE` of the rows at the positions `ats`.
    pub fn delete_at(&mut self, table: usize, ats: &[usize]) -> Affected {
        let mut ats = ats.to_vec();
        ats.sort_unstable();
        ats.dedup();
        for &at in ats.iter().rev() {
            self.indexes[table] = None;
            let row = self.tables[table].rows.remove(at);
            self.forget(table, &row);
            self.log(Undo::Deleted { table, at, row });
        }
        Affected {
            deleted: ats.len(),
            ..Affected::default()
        }
    }

    /// A merge on `key` that applies an incoming row only when its `version` is greater than
    /// the stored row's (`INSERT … ON CONFLICT (key) DO UPDATE … WHERE stored.version <
    /// excluded.version`): a new key is inserted, an older or equal version is skipped, and a
    /// NULL version is never greater. A target row matched by two incoming rows is an error,
    /// as in `merge`.
    pub fn merge_if_newer(
        &mut self,
        table: usize,
        key: &[usize],
        version: usize,
        rows: Vec<Row>,
    ) -> Result<Affected, SqlError> {
        let mut affected = Affected::default();
        for row in rows {
            let one = self.merge_if_newer_one(table, key, version, Cow::Owned(row));
            affected.inserted += one.inserted;
            affected.updated += one.updated;
            affected.ignored += one.ignored;
        }
        Ok(affected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wh() -> Warehouse {
        Warehouse::new(vec![Table {
            name: "t".into(),
            columns: vec!["k".into(), "v".into()],
            rows: vec![
                vec![Value::Int(1), Value::Int(10)],
                vec![Value::Int(2), Value::Int(20)],
            ],
        }])
    }

    #[test]
    fn rollback_restores_every_change_in_place() {
        let mut w = wh();
        let before = w.tables.clone();
        w.begin();
        w.insert(0, vec![vec![Value::Int(3), Value::Int(30)]]);
        w.delete_where_eq(0, 0, &Value::Int(1));
        w.merge(0, &[0], vec![vec![Value::Int(2), Value::Int(99)]])
            .unwrap();
        w.set_offset(0, 7);
        assert_ne!(w.tables, before);
        assert!(w.rollback());
        assert_eq!(w.tables, before);
        assert_eq!(w.stored_offsets[0], 0);
    }

    /// A table past the size at which lookups go through the index: keys of every kind, and
    /// two-column keys, found as SQL compares them (an integer equals a decimal of its
    /// value, 25.0 equals 25.00, a text never equals a number).
    #[test]
    fn the_index_finds_what_a_scan_finds() {
        use rust_decimal::Decimal;
        let dec = |s: &str| Value::Decimal(s.parse::<Decimal>().unwrap());
        let mut rows: Vec<Row> = (0..40)
            .map(|i| vec![Value::Int(i), Value::Int(i % 3)])
            .collect();
        rows.push(vec![dec("25.50"), Value::Int(0)]);
        rows.push(vec![Value::Text("7".into()), Value::Int(1)]);
        let mut w = Warehouse::new(vec![Table {
            name: "t".into(),
            columns: vec!["k".into(), "v".into()],
            rows,
        }]);
        let probes = [
            (vec![Value::Int(7), Value::Int(9)], true),
            (vec![dec("7.000"), Value::Int(9)], true),
            (vec![dec("25.5"), Value::Int(9)], true),
            (vec![dec("25.51"), Value::Int(9)], false),
            (vec![Value::Text("7".into()), Value::Int(9)], true),
            (vec![Value::Text("8".into()), Value::Int(9)], false),
            (vec![Value::Int(40), Value::Int(9)], false),
            (vec![Value::Null, Value::Int(9)], false),
        ];
        for (probe, present) in &probes {
            let scanned = w.tables[0].rows.iter().any(|r| same_key(r, probe, &[0]));
            assert_eq!(scanned, *present, "{probe:?}: the scan");
            assert_eq!(
                w.key_present(0, &[0], probe),
                *present,
                "{probe:?}: the index"
            );
        }
        // Two columns: 7 % 3 = 1.
        assert!(w.key_present(0, &[0, 1], &vec![dec("7.0"), Value::Int(1)]));
        assert!(!w.key_present(0, &[0, 1], &vec![Value::Int(7), Value::Int(2)]));
        assert_eq!(
            w.matches(0, &[1], &vec![Value::Null, Value::Int(2)]).len(),
            13
        );
        // The index follows an insert and its rollback.
        w.begin();
        w.insert_ignore(0, &[0], vec![vec![Value::Int(40), Value::Int(0)]]);
        assert!(w.key_present(0, &[0], &vec![dec("40"), Value::Int(0)]));
        w.rollback();
        assert!(!w.key_present(0, &[0], &vec![Value::Int(40), Value::Int(0)]));
    }

    #[test]
    fn null_keys_never_conflict() {
        let mut w = wh();
        let a = w.insert_ignore(
            0,
            &[0],
            vec![
                vec![Value::Null, Value::Int(1)],
                vec![Value::Null, Value::Int(1)],
            ],
        );
        assert_eq!(a.inserted, 2);
        let b = w.insert_ignore(
            0,
            &[0],
            vec![
                vec![Value::Int(1), Value::Int(5)],
                vec![Value::Int(4), Value::Int(5)],
                vec![Value::Int(4), Value::Int(6)],
            ],
        );
        assert_eq!((b.inserted, b.ignored), (1, 2));
    }

    #[test]
    fn the_key_index_follows_inserts_rollbacks_and_deletes() {
        let mut w = wh();
        assert_eq!(
            w.insert_ignore(0, &[0], vec![vec![Value::Int(2), Value::Int(0)]])
                .ignored,
            1
        );
        w.begin();
        w.insert_ignore(0, &[0], vec![vec![Value::Int(3), Value::Int(30)]]);
        w.rollback();
        assert_eq!(
            w.insert_ignore(0, &[0], vec![vec![Value::Int(3), Value::Int(31)]])
                .inserted,
            1,
            "a rolled-back row is no conflict"
        );
        w.delete_where_eq(0, 0, &Value::Int(1));
        assert_eq!(
            w.insert_ignore(0, &[0], vec![vec![Value::Int(1), Value::Int(11)]])
                .inserted,
            1,
            "a deleted row is no conflict"
        );
        assert_eq!(
            w.insert_ignore(0, &[0], vec![vec![Value::Int(3), Value::Int(32)]])
                .ignored,
            1
        );
        let m = w
            .merge(0, &[0], vec![vec![Value::Int(3), Value::Int(99)]])
            .unwrap();
        assert_eq!(m.updated, 1);
        assert_eq!(
            w.tables[0]
                .rows
                .iter()
                .filter(|r| r[0] == Value::Int(3))
                .count(),
            1
        );
    }

    #[test]
    fn the_journal_goes_back_to_any_mark_and_the_fingerprint_follows() {
        let mut w = wh();
        w.keep_journal(true);
        let start = (w.tables.clone(), w.fingerprint());
        let m0 = w.mark();
        w.insert(0, vec![vec![Value::Int(3), Value::Int(30)]]);
        let middle = (w.tables.clone(), w.fingerprint());
        let m1 = w.mark();
        w.begin();
        w.merge(0, &[0], vec![vec![Value::Int(2), Value::Int(99)]])
            .unwrap();
        w.set_offset(0, 4);
        w.commit();
        w.delete_where_eq(0, 0, &Value::Int(1));
        w.begin();
        w.insert(0, vec![vec![Value::Int(5), Value::Int(50)]]);
        assert_ne!(w.fingerprint(), middle.1);
        w.undo_to(m1);
        assert!(
            !w.in_transaction(),
            "a transaction opened after the mark is closed"
        );
        assert_eq!((w.tables.clone(), w.fingerprint()), middle);
        w.undo_to(m0);
        assert_eq!((w.tables.clone(), w.fingerprint()), start);
    }

    #[test]
    fn the_fingerprint_is_the_contents_in_any_row_order() {
        let mut a = wh();
        a.keep_journal(true);
        let mut b = wh();
        b.keep_journal(false);
        a.insert(
            0,
            vec![
                vec![Value::Int(3), Value::Int(30)],
                vec![Value::Int(4), Value::Int(40)],
            ],
        );
        b.insert(0, vec![vec![Value::Int(4), Value::Int(40)]]);
        b.insert(0, vec![vec![Value::Int(3), Value::Int(30)]]);
        assert_eq!(a.fingerprint(), b.fingerprint());
        b.set_offset(0, 1);
        assert_ne!(
            a.fingerprint(),
            b.fingerprint(),
            "the stored offset is part of the state"
        );
        a.set_offset(0, 1);
        a.merge(0, &[0], vec![vec![Value::Int(4), Value::Int(41)]])
            .unwrap();
        assert_ne!(a.fingerprint(), b.fingerprint());
        b.begin();
        b.merge(0, &[0], vec![vec![Value::Int(4), Value::Int(41)]])
            .unwrap();
        b.commit();
        assert_eq!(a.fingerprint(), b.fingerprint());
    }

    #[test]
    fn merge_refuses_to_touch_a_row_twice() {
        let mut w = wh();
        let err = w.merge(
            0,
            &[0],
            vec![
                vec![Value::Int(1), Value::Int(5)],
                vec![Value::Int(1), Value::Int(6)],
            ],
        );
        assert!(err.is_err());
        assert_eq!(
            w.tables[0].rows[0][1],
            Value::Int(10),
            "a refused statement changes nothing"
        );
    }
}
