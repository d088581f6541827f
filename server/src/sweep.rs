//! The sweeper: removes what has expired, so that what anyone can store is bounded in time as
//! well as in size. Idempotency records expire after `Config::idempotency_ttl`; students made
//! for a session that have done no work (no attempt, no draft) after
//! `Config::workless_session_ttl`; LTI logins and handoff codes after their ten minutes.
//! `app::serve` runs it every `Config::sweep_period`;
//! `pipeline-builder sweep` runs it once.

use std::time::Duration;

use chrono::Utc;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::store::{Store, StoreResult};

/// What one sweep removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    pub idempotency: u64,
    pub sessions: u64,
}

/// `now - ttl`, or the earliest time when `ttl` reaches past it.
fn cutoff(ttl: Duration) -> chrono::DateTime<Utc> {
    let now = Utc::now();
    chrono::Duration::from_std(ttl)
        .ok()
        .and_then(|d| now.checked_sub_signed(d))
        .unwrap_or(chrono::DateTime::<Utc>::MIN_UTC)
}

/// Removes what has expired, now, and counts it in `metrics`.
pub async fn sweep_once(store: &Store, config: &Config, metrics: &Metrics) -> StoreResult<Swept> {
    let idempotency = store
        .sweep_idempotency_keys(cutoff(config.idempotency_ttl))
        .await?;
    metrics.observe_swept(idempotency, 0);
    let sessions = store
        .sweep_workless_sessions(cutoff(config.workless_session_ttl))
        .await?;
    metrics.observe_swept(0, sessions);
    // Anyone may start an LTI login for a registered platform: the rows it leaves go too.
    let lti_logins = store
        .sweep_lti_logins(cutoff(crate::lti::LOGIN_TTL.max(crate::lti::HANDOFF_TTL)))
        .await?;
    let swept = Swept {
        idempotency,
        sessions,
    };
    if idempotency + sessions + lti_logins > 0 {
        tracing::info!(idempotency, sessions, lti_logins, "swept expired records");
    }
    Ok(swept)
}

/// Sweeps every `period`, the first time one period after it starts, until aborted. A failed
/// sweep (the database is away) is logged and tried again at the next period.
pub fn spawn(
    store: Store,
    config: std::sync::Arc<Config>,
    metrics: std::sync::Arc<Metrics>,
    period: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let period = period.max(Duration::from_millis(10));
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Err(e) = sweep_once(&store, &config, &metrics).await {
                tracing::warn!(error = %e, "the sweep failed; trying again at the next period");
            }
        }
    })
}
