//! The verdict tables of the catalogue being served, built in the background.
//!
//! One thread builds them, scenario by scenario in course order, at start-up and again after
//! each catalogue `serve --watch` swaps in; the server answers meanwhile, each check
//! searching until its scenario's table is there (`Entry::table`). A table already built for
//! the same scenario version in the catalogue before is taken over, not built again. A build
//! stops as soon as its catalogue is no longer the one served, and the thread ends when the
//! server's catalogue is dropped.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use serde::Serialize;
use shared::verdict_table::{TableError, VerdictTable};
use utoipa::ToSchema;

use crate::catalogue::{Catalogue, Table};
use crate::watch::LiveCatalogue;

/// How often the thread looks whether another catalogue was swapped in.
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// Starts the thread that builds the tables of whatever catalogue `live` serves, for checks
/// within `limits`, of scenarios whose palettes allow at most `designs_max` designs (0: none).
pub fn spawn(live: &Arc<LiveCatalogue>, limits: shared::Limits, designs_max: u64) {
    let live = Arc::downgrade(live);
    let started = std::thread::Builder::new()
        .name("verdict-tables".into())
        .spawn(move || run(live, limits, designs_max));
    if let Err(e) = started {
        tracing::warn!("the verdict tables' thread did not start, so every check searches: {e}");
    }
}

fn run(live: Weak<LiveCatalogue>, limits: shared::Limits, designs_max: u64) {
    let mut before: Option<Arc<Catalogue>> = None;
    loop {
        let Some(current) = live.upgrade().map(|l| l.current()) else {
            return;
        };
        let done = before.as_ref().is_some_and(|b| Arc::ptr_eq(b, &current));
        if !done {
            build_all(&live, &current, before.as_deref(), limits, designs_max);
            before = Some(current);
        } else {
            drop(current);
            std::thread::sleep(LOOK_EVERY);
        }
    }
}

/// True while `catalogue` is the one `live` serves.
fn served(live: &Weak<LiveCatalogue>, catalogue: &Arc<Catalogue>) -> bool {
    live.upgrade()
        .is_some_and(|l| Arc::ptr_eq(&l.current(), catalogue))
}

fn build_all(
    live: &Weak<LiveCatalogue>,
    catalogue: &Arc<Catalogue>,
    before: Option<&Catalogue>,
    limits: shared::Limits,
    designs_max: u64,
) {
    for entry in catalogue.entries() {
        if entry.table.get().is_some() {
            continue;
        }
        let id = entry.scenario().id.clone();
        let kept = before
            .and_then(|b| b.get(&id))
            .filter(|old| old.hash == entry.hash)
            .and_then(|old| match old.table.get() {
                Some(Table::Built(table)) => Some(Arc::clone(table)),
                _ => None,
            });
        if let Some(table) = kept {
            let _ = entry.table.set(Table::Built(table));
            continue;
        }
        if designs_max == 0 {
            let _ = entry
                .table
                .set(Table::Searched("the server keeps no verdict tables".into()));
            continue;
        }
        let started = Instant::now();
        let mut progress = |_: u64, _: u64| served(live, catalogue);
        match VerdictTable::build(
            &entry.compiled,
            &entry.hash,
            limits,
            designs_max,
            &mut progress,
        ) {
            Ok(table) => {
                tracing::info!(
                    scenario = %id,
                    designs = table.len(),
                    left_to_search = table.left_out(),
                    bytes = table.bytes(),
                    ms = started.elapsed().as_millis() as u64,
                    "the verdict table is built"
                );
                let _ = entry.table.set(Table::Built(Arc::new(table)));
            }
            Err(TableError::Stopped) => return,
            Err(e) => {
                tracing::info!(scenario = %id, "no verdict table, every check searches: {e}");
                let _ = entry.table.set(Table::Searched(e.to_string()));
            }
        }
    }
}

/// Where the catalogue's verdict tables stand, as `/readyz` says it.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct TablesStatus {
    /// True when every scenario's table is built or its checks are known to search.
    pub complete: bool,
    /// Scenarios whose checks are looked up in their table.
    pub built: usize,
    /// Scenarios whose table is still being built (their checks search meanwhile).
    pub building: usize,
    /// Scenarios without a table, whose checks always search.
    pub searched: usize,
    /// The designs the built tables hold, and about how many bytes they take.
    pub designs: usize,
    pub bytes: usize,
}

impl TablesStatus {
    pub fn of(catalogue: &Catalogue) -> TablesStatus {
        let mut status = TablesStatus {
            complete: true,
            built: 0,
            building: 0,
            searched: 0,
            designs: 0,
            bytes: 0,
        };
        for entry in catalogue.entries() {
            match entry.table.get() {
                Some(Table::Built(table)) => {
                    status.built += 1;
                    status.designs += table.len();
                    status.bytes += table.bytes();
                }
                Some(Table::Searched(_)) => status.searched += 1,
                None => {
                    status.building += 1;
                    status.complete = false;
                }
            }
        }
        status
    }
}
