//! What one address's checks may take of the cores: a cap on the checks it runs at once, and
//! the time its checks took, which the rate limiter charges against its buckets.
//!
//! A check is the one thing a request can ask for that costs far more than answering it (a few
//! milliseconds of simulation against a few microseconds), and anyone may ask for one. So the
//! rate limiter ([`crate::limit`]) runs every limited request inside a [`Share`]: the checker
//! ([`crate::checker`]) takes one of the address's turns before it runs the simulator
//! ([`turn`]), and adds the time the simulation ran to the request's cost ([`charge`]), which
//! the limiter then takes from the buckets the request spent from. The share travels with the
//! request's task (a `tokio` task-local), so that every route that runs a check — the check,
//! a submission, a grading batch — is held to it without each handler passing it along.
//!
//! An address runs at most `Config::checks_per_address` checks at once; the next ones wait
//! their turn, first come first served, and past `Config::checks_waiting_per_address` waiting
//! a check is refused at once with `429 rate_limited`. Outside a share (rate limits off, a
//! check the command line runs) nothing is capped or charged.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{AppError, ErrorCode};

tokio::task_local! {
    static SHARE: Share;
}

/// The share of the request being served: its address's turns and the time its checks took.
/// Clones share the cost.
#[derive(Clone)]
pub struct Share {
    address: String,
    turns: CheckTurns,
    cost: Arc<Mutex<Duration>>,
}

impl Share {
    /// The share of a request from `address` (the rate limiter's key of it).
    pub fn new(address: String, turns: CheckTurns) -> Share {
        Share {
            address,
            turns,
            cost: Arc::new(Mutex::new(Duration::ZERO)),
        }
    }

    /// Runs `work` (the rest of the request) inside this share.
    pub async fn scope<F: Future>(self, work: F) -> F::Output {
        SHARE.scope(self, work).await
    }

    /// The time the checks run within this share took.
    pub fn cost(&self) -> Duration {
        *self.cost.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Waits for a turn of the request's address to run a check. `Ok(None)` outside a share;
/// `429 rate_limited` when the address already has as many checks waiting as it may.
pub async fn turn() -> Result<Option<Turn>, AppError> {
    let Ok((address, turns)) = SHARE.try_with(|s| (s.address.clone(), s.turns.clone())) else {
        return Ok(None);
    };
    match turns.take(&address).await {
        Some(turn) => Ok(Some(turn)),
        None => Err(AppError::of(
            ErrorCode::RateLimited,
            format!(
                "too many checks from this address are waiting to run ({} at most); wait 1 s",
                turns.0.waiting_max
            ),
        )
        .retry_after(1)),
    }
}

/// `work`, for a task of its own, within the share of the request being served: a spawned task
/// does not inherit a task-local, so a route that runs its check in a task it spawns carries
/// the share into it with this.
pub fn carry<F: Future>(work: F) -> impl Future<Output = F::Output> {
    let share = SHARE.try_with(Share::clone).ok();
    async move {
        match share {
            Some(share) => SHARE.scope(share, work).await,
            None => work.await,
        }
    }
}

/// Adds `ran` to the cost of the request being served (nothing outside a share).
pub fn charge(ran: Duration) {
    let _ = SHARE.try_with(|s| {
        let mut cost = s.cost.lock().unwrap_or_else(|p| p.into_inner());
        *cost += ran;
    });
}

/// The turns of every address that is running or waiting to run a check. Cheap to clone.
#[derive(Clone)]
pub struct CheckTurns(Arc<TurnsInner>);

struct TurnsInner {
    per_address: usize,
    waiting_max: usize,
    /// Only addresses with a check running or waiting are here; the last turn given back
    /// removes its address, so the table is bounded by the requests in flight.
    addresses: Mutex<HashMap<String, Arc<AddressTurns>>>,
}

struct AddressTurns {
    running: Arc<Semaphore>,
    waiting: AtomicUsize,
}

/// One turn of an address to run a check; given back when dropped.
pub struct Turn {
    permit: Option<OwnedSemaphorePermit>,
    address: String,
    entry: Arc<AddressTurns>,
    turns: CheckTurns,
}

impl Drop for Turn {
    fn drop(&mut self) {
        drop(self.permit.take());
        self.turns.forget_if_idle(&self.address, &self.entry);
    }
}

/// Counts a check waiting for its turn while it waits, however the wait ends (a turn, or the
/// request dropped).
struct Waiting<'a>(&'a AddressTurns);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

impl CheckTurns {
    /// Turns for `per_address` checks at once per address (at least one), with at most
    /// `waiting_max` more waiting.
    pub fn new(per_address: usize, waiting_max: usize) -> CheckTurns {
        CheckTurns(Arc::new(TurnsInner {
            per_address: per_address.max(1),
            waiting_max,
            addresses: Mutex::new(HashMap::new()),
        }))
    }

    /// A turn for `address`, once one is free; `None` when too many are waiting already.
    pub async fn take(&self, address: &str) -> Option<Turn> {
        let entry = {
            let mut addresses = self.0.addresses.lock().unwrap_or_else(|p| p.into_inner());
            let entry = Arc::clone(addresses.entry(address.to_string()).or_insert_with(|| {
                Arc::new(AddressTurns {
                    running: Arc::new(Semaphore::new(self.0.per_address)),
                    waiting: AtomicUsize::new(0),
                })
            }));
            if let Ok(permit) = Arc::clone(&entry.running).try_acquire_owned() {
                return Some(self.turn(address, entry, permit));
            }
            if entry.waiting.load(Ordering::SeqCst) >= self.0.waiting_max {
                return None;
            }
            entry.waiting.fetch_add(1, Ordering::SeqCst);
            entry
        };
        let waiting = Waiting(&entry);
        // The semaphore is never closed, so the wait ends only with a permit.
        let permit = Arc::clone(&entry.running).acquire_owned().await.ok()?;
        drop(waiting);
        Some(self.turn(address, entry, permit))
    }

    fn turn(&self, address: &str, entry: Arc<AddressTurns>, permit: OwnedSemaphorePermit) -> Turn {
        Turn {
            permit: Some(permit),
            address: address.to_string(),
            entry,
            turns: self.clone(),
        }
    }

    /// Removes `address` once nothing holds its entry but the table and the turn being
    /// given back (every holder takes its copy under the table's lock).
    fn forget_if_idle(&self, address: &str, entry: &Arc<AddressTurns>) {
        let mut addresses = self.0.addresses.lock().unwrap_or_else(|p| p.into_inner());
        if Arc::strong_count(entry) <= 2 {
            addresses.remove(address);
        }
    }

    /// How many checks of `address` wait for a turn.
    pub fn waiting(&self, address: &str) -> usize {
        let addresses = self.0.addresses.lock().unwrap_or_else(|p| p.into_inner());
        addresses
            .get(address)
            .map_or(0, |e| e.waiting.load(Ordering::SeqCst))
    }

    /// Every turn of `address`, taken as they come free (tests hold them to see what a busy
    /// address is answered).
    pub async fn hold_all(&self, address: &str) -> Vec<Turn> {
        let mut held = Vec::new();
        for _ in 0..self.0.per_address {
            if let Some(turn) = self.take(address).await {
                held.push(turn);
            }
        }
        held
    }

    /// How many addresses have a check running or waiting.
    pub fn addresses(&self) -> usize {
        self.0
            .addresses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_address_runs_its_share_at_once_and_waits_or_is_refused_past_it() {
        let turns = CheckTurns::new(1, 2);
        let first = turns.take("a").await.expect("a free turn");
        // Another address has turns of its own.
        let other = turns.take("b").await.expect("another address's turn");
        drop(other);
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let turns = turns.clone();
                tokio::spawn(async move { turns.take("a").await.is_some() })
            })
            .collect();
        while turns.waiting("a") < 2 {
            tokio::task::yield_now().await;
        }
        assert!(turns.take("a").await.is_none(), "a third waiter is refused");
        drop(first);
        for waiter in waiters {
            assert!(waiter.await.unwrap(), "a waiter gets its turn");
        }
        assert_eq!(turns.addresses(), 0, "idle addresses are forgotten");
    }
}
