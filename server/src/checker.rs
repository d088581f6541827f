//! Checking designs for the API: the verdict cache first, then the simulator in `shared`, on
//! the request's thread when the check is small and on the blocking pool when it is not.
//!
//! A design its scenario's verdict table holds (`crate::tables`) is answered from the table:
//! `shared`'s lookup gives the search's verdict byte for byte, at the cost of a validation.
//!
//! The server never decides a verdict itself; this module only decides where and when
//! `shared`'s check runs, remembers what it answered, and turns a check that gave no verdict
//! into an [`AppError`].

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value as Json;
use shared::{CheckError, DesignError, DesignErrorCode, Verdict};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::catalogue::Entry;
use crate::error::{parse_json, AppError, ErrorCode};
use crate::metrics::Metrics;
use crate::verdicts::{Checked, Outline, VerdictCache};

/// Runs checks. Cheap to clone: clones share the cache, the counters and the turns.
#[derive(Clone)]
pub struct Checker(Arc<Inner>);

struct Inner {
    verdicts: VerdictCache,
    metrics: Arc<Metrics>,
    /// How far one check may go before it is answered with `check_too_large`.
    limits: shared::Limits,
    /// How far a check may go on the request's own thread (never past `limits`).
    inline: shared::Limits,
    /// Checks are CPU-bound: at most one per core runs at a time, the rest wait their turn.
    turns: Arc<Semaphore>,
}

impl Checker {
    /// A checker within `limits`, that runs checks within `inline_limits` on the request's
    /// thread, and remembers verdicts in about `verdict_cache_bytes` of memory.
    pub fn new(
        metrics: Arc<Metrics>,
        limits: shared::Limits,
        inline_limits: shared::Limits,
        verdict_cache_bytes: usize,
    ) -> Checker {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        Checker(Arc::new(Inner {
            verdicts: VerdictCache::new(verdict_cache_bytes),
            metrics,
            limits,
            inline: shared::Limits {
                max_schedules: limits.max_schedules.min(inline_limits.max_schedules),
                max_steps: limits.max_steps.min(inline_limits.max_steps),
            },
            turns: Arc::new(Semaphore::new(cores)),
        }))
    }

    pub fn verdicts(&self) -> &VerdictCache {
        &self.0.verdicts
    }

    /// Waits for a turn to run a check off the request's thread.
    pub async fn permit(&self) -> Option<OwnedSemaphorePermit> {
        // The semaphore is never closed, so an error cannot happen; without a permit the
        // check runs anyway rather than failing the request.
        Arc::clone(&self.0.turns).acquire_owned().await.ok()
    }

    /// The verdict of `design` for `entry`'s scenario, from the cache when the same design
    /// of the same scenario was checked before.
    pub async fn check(&self, entry: Arc<Entry>, design: Json) -> Result<Arc<Checked>, AppError> {
        let key = VerdictCache::key(&entry.hash, &design);
        if let Some(known) = self.cached(&entry, &key) {
            return Ok(known);
        }
        self.anew(entry, key, design).await
    }

    /// The verdict of a design as a request's body wrote it. A body checked before is
    /// answered before its JSON is even parsed.
    pub async fn check_body(
        &self,
        entry: Arc<Entry>,
        body: &[u8],
    ) -> Result<Arc<Checked>, AppError> {
        let key = VerdictCache::key_of_text(&entry.hash, body);
        if let Some(known) = self.cached(&entry, &key) {
            return Ok(known);
        }
        let design: Json = parse_json(body)?;
        self.anew(entry, key, design).await
    }

    /// The verdict given before for this key, if any.
    fn cached(&self, entry: &Entry, key: &[u8]) -> Option<Arc<Checked>> {
        let known = self.0.verdicts.get(key)?;
        self.0.metrics.observe_cached_check(
            &entry.scenario().id,
            if known.outline.summary.passed {
                "passed"
            } else {
                "missed"
            },
        );
        Some(known)
    }

    /// Runs the simulator and keeps the verdict under `key`. A check first runs where the
    /// request is, within the inline limits; one that goes past them (its coverage or
    /// advisories included) starts again off the async threads, at most one per core at a
    /// time, within the server's limits.
    async fn anew(
        &self,
        entry: Arc<Entry>,
        key: Vec<u8>,
        design: Json,
    ) -> Result<Arc<Checked>, AppError> {
        let scenario_id = entry.scenario().id.clone();
        let (limits, inline) = (self.0.limits, self.0.inline);
        /// A verdict from the scenario's table comes with its JSON; one the search gives is
        /// serialised when it is kept.
        enum Answer {
            Looked(Checked),
            Searched(Verdict),
        }
        /// The design's verdict from its scenario's table when the table holds it, else
        /// from the search within `within`. The table holds verdicts within the server's
        /// `limits`, which are what a check within the inline limits gives whenever it is
        /// not started again (see below).
        fn check(
            entry: &Entry,
            design: &Json,
            within: shared::Limits,
            limits: shared::Limits,
        ) -> Result<Answer, CheckError> {
            let valid =
                shared::validate_json(&entry.compiled, design).map_err(CheckError::Design)?;
            if let Some((json, summary)) = entry.table_json(&valid, limits) {
                let outline = Outline::from_table(&entry.scenario().id, &entry.hash, summary);
                return Ok(Answer::Looked(Checked::of_json(outline, json.into())));
            }
            shared::check::check_hashed(&entry.compiled, &entry.hash, &valid, within)
                .map(Answer::Searched)
        }
        let larger =
            (inline.max_schedules, inline.max_steps) != (limits.max_schedules, limits.max_steps);
        // One of the address's turns for the whole check, and its time charged to the request.
        let _turn = crate::share::turn().await?;
        let started = Instant::now();
        let first = check(&entry, &design, inline, limits);
        crate::share::charge(started.elapsed());
        // A verdict whose coverage or advisories were cut short by the inline limits starts
        // again too, so that it is the verdict the server's limits give.
        let again = larger
            && match &first {
                Err(CheckError::TooLarge { .. }) => true,
                Ok(Answer::Searched(verdict)) => verdict.cut_short(),
                Ok(Answer::Looked(..)) | Err(_) => false,
            };
        let result = if again {
            let permit = self.permit().await;
            let ran = tokio::task::spawn_blocking(move || {
                let _permit = permit;
                let started = Instant::now();
                (check(&entry, &design, limits, limits), started.elapsed())
            })
            .await;
            ran.map(|(result, took)| {
                crate::share::charge(took);
                result
            })
        } else {
            Ok(first)
        };
        let metrics = &self.0.metrics;
        match result {
            Ok(Ok(answer)) => {
                let checked = match answer {
                    Answer::Looked(checked) => checked,
                    Answer::Searched(verdict) => {
                        Checked::new(verdict).map_err(AppError::internal)?
                    }
                };
                let verdict = &checked.outline.summary;
                metrics.observe_check(
                    &scenario_id,
                    if verdict.passed { "passed" } else { "missed" },
                    verdict.schedules_explored,
                );
                let checked = Arc::new(checked);
                self.0.verdicts.insert(key, Arc::clone(&checked));
                Ok(checked)
            }
            Ok(Err(e)) => {
                let (outcome, schedules) = match &e {
                    CheckError::Design(_) => ("invalid", 0),
                    CheckError::TooLarge { schedules, .. } => ("too_large", *schedules),
                };
                metrics.observe_check(&scenario_id, outcome, schedules);
                Err(check_error(e))
            }
            Err(join) => Err(AppError::internal(format!(
                "the check of {scenario_id} stopped: {join}"
            ))),
        }
    }
}

/// The answer to a check that gave no verdict.
pub fn check_error(error: CheckError) -> AppError {
    match error {
        CheckError::Design(errors) => design_error(errors),
        CheckError::TooLarge { schedules, limit } => AppError::of(ErrorCode::CheckTooLarge,
            format!("the check stopped after {schedules} failure schedules: it exceeds {limit}; simplify the design"),
        ),
    }
}

/// A design the validator refused: `graph_too_large` when it has too many nodes or edges,
/// otherwise `invalid_design` with every problem in `details`.
pub fn design_error(errors: Vec<DesignError>) -> AppError {
    if let Some(big) = errors.iter().find(|e| {
        matches!(
            e.code,
            DesignErrorCode::TooManyNodes | DesignErrorCode::TooManyEdges
        )
    }) {
        return AppError::of(ErrorCode::GraphTooLarge, big.message.clone()).at(big.path.clone());
    }
    let first = errors.first().cloned().unwrap_or(DesignError {
        path: "$".into(),
        code: DesignErrorCode::Invalid,
        message: "the design is not valid".into(),
    });
    let message = if errors.len() > 1 {
        format!(
            "the design has {} problems; the first: {}",
            errors.len(),
            first.message
        )
    } else {
        first.message.clone()
    };
    let mut error = AppError::of(ErrorCode::InvalidDesign, message).at(first.path);
    error.details = Some(errors);
    error
}
