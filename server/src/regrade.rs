//! Regrading: the stored attempts at a scenario whose file has changed since are checked
//! again against the current version, and the new verdicts are recorded *beside* the old
//! ones (the `regrades` table), never over them.
//!
//! The run goes a batch at a time: a batch's designs are checked, then its verdicts are
//! committed in one transaction. An attempt already regraded against the current version is
//! never picked again, so a run that stops midway (a crash, a check past the limits, the
//! database gone) leaves every old verdict and every committed batch in place, and running it
//! again finishes the rest. The report is computed from everything recorded against the
//! current version, so it is the same whether the run went at once or in several goes.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use serde_json::Value as Json;
use shared::CheckError;

use crate::catalogue::Entry;
use crate::store::{Regrade, Store, StoredDesign};

/// How many attempts one batch checks and commits.
pub const BATCH: u32 = 50;

pub use shared::wire::classes::{RegradeReport, RequirementChange};

/// Why a regrade stopped before the end.
#[derive(Debug)]
pub enum RegradeError {
    Database(sqlx::Error),
    /// A check went past the limits, or the scenario cannot be compiled: nothing of the
    /// batch was recorded.
    Check(String),
}

impl std::fmt::Display for RegradeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegradeError::Database(e) => write!(f, "database error: {e}"),
            RegradeError::Check(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for RegradeError {}

impl From<sqlx::Error> for RegradeError {
    fn from(e: sqlx::Error) -> Self {
        RegradeError::Database(e)
    }
}

/// Checks each design of a batch against the current version.
fn check_batch(
    entry: &Entry,
    batch: &[StoredDesign],
    limits: shared::Limits,
) -> Result<Vec<Regrade>, RegradeError> {
    let mut out = Vec::with_capacity(batch.len());
    for stored in batch {
        let now = Utc::now();
        let checked = shared::validate_json(&entry.compiled, &stored.design)
            .map_err(CheckError::Design)
            .and_then(|valid| {
                shared::check::check_hashed(&entry.compiled, &entry.hash, &valid, limits)
            });
        let regrade = match checked {
            Ok(verdict) => Regrade {
                attempt: stored.attempt.clone(),
                scenario_hash: entry.hash.clone(),
                score: i32::try_from(verdict.score).unwrap_or(i32::MAX),
                max_score: i32::try_from(verdict.max_score).unwrap_or(i32::MAX),
                passed: verdict.passed,
                verdict: Some(serde_json::to_value(&verdict).map_err(|e| {
                    RegradeError::Check(format!("the verdict cannot be written: {e}"))
                })?),
                error: None,
                created_at: now,
            },
            Err(CheckError::Design(errors)) => Regrade {
                attempt: stored.attempt.clone(),
                scenario_hash: entry.hash.clone(),
                verdict: None,
                error: Some(format!(
                    "the design is not valid for the current version: {}",
                    errors
                        .iter()
                        .map(|e| format!("{}: {}", e.path, e.message))
                        .collect::<Vec<_>>()
                        .join("; ")
                )),
                score: 0,
                max_score: 0,
                passed: false,
                created_at: now,
            },
            Err(e) => {
                return Err(RegradeError::Check(format!(
                    "attempt {}: {e}",
                    stored.attempt
                )))
            }
        };
        out.push(regrade);
    }
    Ok(out)
}

/// Regrades the attempts at `entry`'s scenario (of `class`, when given) made against another
/// version, `BATCH` at a time; `progress(done, total)` is told after each committed batch.
pub async fn regrade(
    store: &Store,
    entry: Arc<Entry>,
    class: Option<&str>,
    limits: shared::Limits,
    mut progress: impl FnMut(u32, u32),
) -> Result<RegradeReport, RegradeError> {
    let id = entry.scenario().id.clone();
    let outdated = store.count_outdated(&id, class, &entry.hash).await?;
    let already = store.regraded_pairs(&id, class, &entry.hash).await?.len();
    let total = u32::try_from(outdated).unwrap_or(u32::MAX);
    let mut done = u32::try_from(already).unwrap_or(u32::MAX);
    let mut now = 0u32;
    loop {
        let batch = store
            .attempts_to_regrade(&id, class, &entry.hash, BATCH)
            .await?;
        if batch.is_empty() {
            break;
        }
        let for_check = Arc::clone(&entry);
        let checked = tokio::task::spawn_blocking(move || check_batch(&for_check, &batch, limits))
            .await
            .map_err(|e| RegradeError::Check(format!("the check stopped: {e}")))??;
        let added = store.record_regrades(&checked).await?;
        let added = u32::try_from(added).unwrap_or(u32::MAX);
        now += added;
        done = done.saturating_add(added);
        progress(done, total);
    }
    report(store, &entry, class, outdated, now).await
}

/// The report of what is recorded against the current version.
pub async fn report(
    store: &Store,
    entry: &Entry,
    class: Option<&str>,
    outdated: u64,
    regraded_now: u32,
) -> Result<RegradeReport, RegradeError> {
    let pairs = store
        .regraded_pairs(&entry.scenario().id, class, &entry.hash)
        .await?;
    let mut changes: BTreeMap<String, RequirementChange> = BTreeMap::new();
    let mut passed_changed = 0;
    let mut invalid = 0;
    for (old, new) in &pairs {
        let Some(new) = new else {
            invalid += 1;
            continue;
        };
        if old["passed"] != new["passed"] {
            passed_changed += 1;
        }
        let before = requirement_results(old);
        let after = requirement_results(new);
        let ids: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
        for id in ids {
            let (b, a) = (before.get(id).copied(), after.get(id).copied());
            if b == a {
                continue;
            }
            let change = changes
                .entry(id.clone())
                .or_insert_with(|| RequirementChange {
                    requirement: id.clone(),
                    ..RequirementChange::default()
                });
            change.changed += 1;
            match (b, a) {
                (Some(false), Some(true)) => change.now_met += 1,
                (Some(true), Some(false)) => change.now_missed += 1,
                _ => {}
            }
        }
    }
    // The scenario's order first, then requirements only the old versions had.
    let mut requirements = Vec::new();
    for q in &entry.scenario().requirements {
        requirements.push(changes.remove(&q.id).unwrap_or_else(|| RequirementChange {
            requirement: q.id.clone(),
            ..RequirementChange::default()
        }));
    }
    requirements.extend(changes.into_values());
    Ok(RegradeReport {
        scenario: entry.scenario().id.clone(),
        class: class.map(str::to_string),
        scenario_hash: entry.hash.clone(),
        outdated: u32::try_from(outdated).unwrap_or(u32::MAX),
        regraded_now,
        regraded: u32::try_from(pairs.len()).unwrap_or(u32::MAX),
        passed_changed,
        invalid,
        requirements,
    })
}

/// A verdict's requirements: id → met.
fn requirement_results(verdict: &Json) -> BTreeMap<String, bool> {
    verdict["requirements"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .filter_map(|r| Some((r["id"].as_str()?.to_string(), r["passed"].as_bool()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// The report in words, as the command prints it.
pub fn report_text(report: &RegradeReport) -> String {
    let mut out = format!(
        "{}: {} attempt(s) made against an older version; {} regraded by this run, {} in all against {}\n",
        report.scenario,
        report.outdated,
        report.regraded_now,
        report.regraded,
        &report.scenario_hash
    );
    out.push_str(&format!(
        "passed changed for {} attempt(s); {} design(s) not valid for the current version\n",
        report.passed_changed, report.invalid
    ));
    for r in &report.requirements {
        out.push_str(&format!(
            "  {}: {} changed ({} now met, {} now missed)\n",
            r.requirement, r.changed, r.now_met, r.now_missed
        ));
    }
    out
}
