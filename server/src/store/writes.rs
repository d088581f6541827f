//! The store's writes that go through the group commit ([`crate::group_commit`]): claiming an
//! idempotency key, and recording an attempt with its stored answer.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value as Json;

use crate::group_commit;
use crate::store::attempts::Attempt;
use crate::store::db::Store;
use crate::store::errors::StoreResult;
use crate::store::hot::Claim;
use crate::store::hot::ClaimId;
use crate::store::hot::{mismatched_answer, HotWrite, NewAttempt, StoredAnswer, Written};
use crate::store::idempotency::IdempotentAnswer;

impl Store {
    /// Records an attempt and, when the request carried an idempotency key, its stored
    /// answer, in one transaction: either both are committed or neither. With an answer, the
    /// write happens only while the answer's claim is still held: a holder whose
    /// claim was taken over (it stalled past its lease) records nothing and gets `Ok(false)`.
    ///
    /// The write goes through the store's group commit ([`crate::group_commit`]): it joins
    /// the writes waiting at the same moment in one transaction, in a savepoint of its own,
    /// and this returns once that transaction committed.
    pub async fn record(
        &self,
        attempt: Option<&Attempt>,
        answer: Option<&IdempotentAnswer<'_>>,
    ) -> StoreResult<bool> {
        let attempt = attempt.map(NewAttempt::of).transpose()?;
        self.record_new(attempt, answer).await
    }

    /// [`Store::record`] of an attempt whose design and verdict are JSON text already.
    pub async fn record_new(
        &self,
        attempt: Option<NewAttempt>,
        answer: Option<&IdempotentAnswer<'_>>,
    ) -> StoreResult<bool> {
        let job = HotWrite::Record {
            attempt,
            answer: answer.map(|a| StoredAnswer {
                caller: a.claim.caller.clone(),
                key: a.claim.key.clone(),
                owner: a.claim.owner.clone(),
                status: a.status,
                response: a.body.to_string(),
            }),
        };
        match self.hot_writes().run(job).await? {
            Written::Recorded(done) => Ok(done),
            Written::Claimed(_) => Err(mismatched_answer()),
        }
    }

    /// Claims `claim`'s key for the request whose fingerprint is `fingerprint` and records
    /// `attempt` with the request's answer, in one write: for a request whose work is done
    /// before its key is looked at. `Started` when this request's answer and attempt were
    /// committed. Otherwise nothing of it was written and the key decides, as
    /// [`Store::claim_idempotency_key_as`] does: the answer of the request that used the key
    /// first (`Replay`), another request's key (`Mismatch`), or a request still holding it
    /// (`InFlight`); one that stopped renewing it for `lease` is taken over, and this request's
    /// answer recorded.
    ///
    /// A second request with the same key that arrives while the first is working does its
    /// work too, and gets the first one's answer: the first to commit is the one that counts.
    pub async fn record_once(
        &self,
        claim: &ClaimId,
        fingerprint: &str,
        lease: Duration,
        attempt: Option<NewAttempt>,
        answer: (u16, &Json),
    ) -> StoreResult<Claim> {
        let job = HotWrite::Once {
            fingerprint: fingerprint.to_string(),
            lease,
            attempt,
            answer: StoredAnswer {
                caller: claim.caller.clone(),
                key: claim.key.clone(),
                owner: claim.owner.clone(),
                status: answer.0,
                response: answer.1.to_string(),
            },
        };
        match self.hot_writes().run(job).await? {
            Written::Claimed(claim) => Ok(claim),
            Written::Recorded(_) => Err(mismatched_answer()),
        }
    }

    // Idempotency keys.

    /// Claims `key` for `caller` with a request whose fingerprint is `fingerprint`. A claim is
    /// a lease: its holder renews it ([`Store::renew_idempotency_key`]) while it works, so an
    /// in-flight claim not renewed for `lease` belongs to a server that died (`kill -9`, a
    /// lost machine) and is taken over. The state lives in the database, so several servers
    /// agree.
    ///
    /// The claim's holder is a fresh random id, which the caller does not learn: this is how
    /// another server's claim looks. A request that works under its claim takes a
    /// [`crate::idempotency::KeyClaim`].
    pub async fn claim_idempotency_key(
        &self,
        caller: &str,
        key: &str,
        fingerprint: &str,
        lease: Duration,
    ) -> StoreResult<Claim> {
        self.claim_idempotency_key_as(&ClaimId::new(caller, key), fingerprint, lease)
            .await
    }

    /// Takes the claim `claim` (its key for its caller, as its holder). Renewing, recording
    /// and abandoning the claim name the holder, and a takeover gives the claim a new one, so
    /// a holder that stalled past its lease can no longer write to it.
    ///
    /// Like [`Store::record`], the claim goes through the store's group commit: it is
    /// committed, in a savepoint of its own, before this returns, so a `Started` claim is
    /// in the database before its request does any work.
    pub async fn claim_idempotency_key_as(
        &self,
        claim: &ClaimId,
        fingerprint: &str,
        lease: Duration,
    ) -> StoreResult<Claim> {
        let job = HotWrite::Claim {
            owner: claim.owner.clone(),
            caller: claim.caller.clone(),
            key: claim.key.clone(),
            fingerprint: fingerprint.to_string(),
            lease,
        };
        match self.hot_writes().run(job).await? {
            Written::Claimed(claim) => Ok(claim),
            Written::Recorded(_) => Err(mismatched_answer()),
        }
    }

    /// What the group-commit writer of this store has done (batches, writes; `/metrics`).
    pub fn group_commit_stats(&self) -> group_commit::Stats {
        self.hot_writes().stats()
    }

    /// Holds the group-commit writer until the permit is dropped: the batch it runs finishes,
    /// then the writes sent meanwhile wait and gather into the next batch. On SQLite this is
    /// the write turn itself, so every other write waits too. Tests use it to make a batch of
    /// known members.
    pub async fn hold_group_commit(&self) -> tokio::sync::OwnedSemaphorePermit {
        self.hot_writes().hold().await
    }

    fn hot_writes(&self) -> &group_commit::Writer<HotWrite, Written> {
        match self {
            Store::Sqlite(_, _, writes) | Store::Postgres(_, writes) => &writes.0,
        }
    }
}

impl NewAttempt {
    /// `a` to insert, its design written out as JSON and its verdict compressed.
    pub fn of(a: &Attempt) -> StoreResult<NewAttempt> {
        let verdict =
            serde_json::to_string(&a.verdict).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
        NewAttempt::with_verdict(a, super::stored_verdict::deflate(&verdict))
    }

    /// `a` to insert with `verdict`, the JSON of its verdict as the check gave it, compressed
    /// (`a.verdict` is not read: see [`crate::verdicts::Checked::deflated`]), so that a verdict
    /// is never read into a value only to be written out again.
    pub fn with_verdict(a: &Attempt, verdict: Arc<[u8]>) -> StoreResult<NewAttempt> {
        let text = |v: &Json| {
            serde_json::value::to_raw_value(v).map_err(|e| sqlx::Error::Encode(Box::new(e)))
        };
        Ok(NewAttempt {
            id: a.id.clone(),
            student: a.student.clone(),
            scenario: a.scenario.clone(),
            scenario_hash: a.scenario_hash.clone(),
            design: text(&a.design)?,
            verdict,
            score: a.score,
            max_score: a.max_score,
            passed: a.passed,
            created_at: a.created_at,
            class: a.class.clone(),
        })
    }
}
