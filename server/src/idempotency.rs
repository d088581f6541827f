//! A request's hold on an `Idempotency-Key`: [`KeyClaim::take`] claims the key, and the
//! claim it returns holds the caller, the key and the holder's name together, renews its
//! lease while it lives, records the request's answer to finish ([`KeyClaim::finish`]), and
//! gives the key back when it is dropped unfinished (an error on our side, a panic, a client
//! gone), so that a retry can run at once.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as Json;

use crate::store::{Claim, ClaimId, IdempotentAnswer, NewAttempt, Store, StoreResult};

/// What claiming a key came to.
pub enum Claimed {
    /// This request holds the key: it does its work, then finishes the claim.
    Held(KeyClaim),
    /// The key was used with the same request, which finished: answer what it answered.
    Replay { status: u16, body: Json },
    /// The key was used with another request.
    Mismatch,
    /// The first request with this key is still running.
    InFlight,
}

/// A held claim on an idempotency key (see the module's documentation).
pub struct KeyClaim {
    store: Store,
    id: ClaimId,
    /// Stopped (dropped) before the answer is recorded, and with the claim.
    renewal: Option<LeaseRenewal>,
    /// True once the claim is finished or given back: nothing is left to do when dropped.
    settled: bool,
}

impl KeyClaim {
    /// Claims `key` for `caller`, for the request whose fingerprint is `fingerprint`; a held
    /// claim's lease is renewed every quarter of `lease` while it lives.
    pub async fn take(
        store: &Store,
        caller: &str,
        key: &str,
        fingerprint: &str,
        lease: Duration,
    ) -> StoreResult<Claimed> {
        let id = ClaimId::new(caller, key);
        Ok(
            match store
                .claim_idempotency_key_as(&id, fingerprint, lease)
                .await?
            {
                Claim::Started => Claimed::Held(KeyClaim {
                    renewal: Some(LeaseRenewal::start(store.clone(), id.clone(), lease)),
                    store: store.clone(),
                    id,
                    settled: false,
                }),
                Claim::Replay { status, body } => Claimed::Replay { status, body },
                Claim::Mismatch => Claimed::Mismatch,
                Claim::InFlight => Claimed::InFlight,
            },
        )
    }

    /// Records `attempt` (if any) with the request's answer, in one transaction, and ends the
    /// claim. `Ok(false)` when the claim was taken over meanwhile (this request stalled past
    /// its lease): nothing was recorded, and the other request's answer is the one that
    /// counts. On an error the claim is given back.
    pub async fn finish(
        mut self,
        attempt: Option<NewAttempt>,
        status: u16,
        body: &Json,
    ) -> StoreResult<bool> {
        self.renewal = None;
        let answer = IdempotentAnswer {
            claim: &self.id,
            status,
            body,
        };
        let recorded = self.store.record_new(attempt, Some(&answer)).await;
        self.settled = recorded.is_ok();
        recorded
    }

    /// Gives the key back now (the request failed on our side), so that a retry can run.
    pub async fn abandon(mut self) {
        self.renewal = None;
        self.settled = true;
        give_back(&self.store, &self.id).await;
    }
}

impl Drop for KeyClaim {
    fn drop(&mut self) {
        self.renewal = None;
        if self.settled {
            return;
        }
        // Dropped unfinished: give the key back in the background, when there is a runtime
        // to do it (otherwise its lease runs out and a retry takes it over).
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (store, id) = (self.store.clone(), self.id.clone());
            runtime.spawn(async move { give_back(&store, &id).await });
        }
    }
}

async fn give_back(store: &Store, id: &ClaimId) {
    if let Err(e) = store.abandon_idempotency_key(id).await {
        tracing::error!(error = %e, "could not release an idempotency key");
    }
}

/// Renews the lease of an idempotency key's claim every quarter of the lease, until dropped.
/// Dropping it (when its request ends, however it ends: an answer, an error, a panic, or its
/// future being dropped) stops the renewal, so a claim is never kept alive by a request that
/// is gone. A renewal that finds the claim taken over stops by itself.
pub struct LeaseRenewal {
    task: tokio::task::JoinHandle<()>,
    alive: Arc<()>,
}

impl LeaseRenewal {
    pub fn start(store: Store, claim: ClaimId, lease: Duration) -> LeaseRenewal {
        let alive = Arc::new(());
        let held = Arc::clone(&alive);
        let every = (lease / 4).max(Duration::from_millis(10));
        let task = tokio::spawn(async move {
            let _held = held;
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                ticks.tick().await;
                match store.renew_idempotency_key(&claim).await {
                    Ok(true) => {}
                    Ok(false) => return,
                    Err(e) => {
                        tracing::warn!(error = %e, "could not renew an idempotency key's lease")
                    }
                }
            }
        });
        LeaseRenewal { task, alive }
    }

    /// Alive while the renewal task runs: the task holds the other end and lets go of it
    /// when it stops.
    pub fn watch(&self) -> std::sync::Weak<()> {
        Arc::downgrade(&self.alive)
    }
}

impl Drop for LeaseRenewal {
    fn drop(&mut self) {
        self.task.abort();
    }
}
