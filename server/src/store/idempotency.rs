//! Idempotency keys: what a claim came to, the stored answer, renewing and abandoning a claim.

use crate::store::db::{with_pool, Store};
use crate::store::errors::StoreResult;
use chrono::Utc;
use serde_json::Value as Json;

/// One claim on an idempotency key: the caller it is scoped to, the key, and the name of the
/// claim's holder. Renewing, recording and abandoning a claim name all three, so a holder
/// whose claim was taken over (a takeover gives the claim a new holder) can no longer write
/// to it. [`crate::idempotency::KeyClaim`] holds one for a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimId {
    pub caller: String,
    pub key: String,
    pub owner: String,
}

impl ClaimId {
    /// A claim of `key` for `caller` by a new holder (128 random bits in hex).
    pub fn new(caller: &str, key: &str) -> ClaimId {
        ClaimId::held_by(caller, key, &uuid::Uuid::new_v4().simple().to_string())
    }

    /// The claim of `key` for `caller` by the holder named `owner`.
    pub fn held_by(caller: &str, key: &str, owner: &str) -> ClaimId {
        ClaimId {
            caller: caller.to_string(),
            key: key.to_string(),
            owner: owner.to_string(),
        }
    }
}

/// The stored answer of an idempotent request, written with the attempt in one transaction,
/// and only while its claim is still held.
#[derive(Clone, Debug)]
pub struct IdempotentAnswer<'a> {
    pub claim: &'a ClaimId,
    pub status: u16,
    pub body: &'a Json,
}

impl Store {
    /// Renews the lease of an in-flight claim; its holder calls it while it works.
    /// `Ok(false)` when the claim is no longer the holder's.
    pub async fn renew_idempotency_key(&self, claim: &ClaimId) -> StoreResult<bool> {
        let (caller, key, owner) = (&claim.caller, &claim.key, &claim.owner);
        let _turn = self.write_turn().await;
        let now = Utc::now();
        let renewed = with_pool!(self, pool => sqlx::query("UPDATE idempotency_keys SET updated_at = $3 WHERE caller = $1 AND key = $2 AND owner = $4 AND state = 'in_flight'")
            .bind(caller).bind(key).bind(now).bind(owner).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(renewed == 1)
    }

    /// Gives up a claim whose request failed on our side, so that a retry can run. Only its
    /// holder can: `Ok(false)` when the claim was taken over meanwhile.
    pub async fn abandon_idempotency_key(&self, claim: &ClaimId) -> StoreResult<bool> {
        let (caller, key, owner) = (&claim.caller, &claim.key, &claim.owner);
        let _turn = self.write_turn().await;
        let done = with_pool!(self, pool => sqlx::query("DELETE FROM idempotency_keys WHERE caller = $1 AND key = $2 AND owner = $3 AND state = 'in_flight'")
            .bind(caller).bind(key).bind(owner).execute(pool).await.map(|r| r.rows_affected()))?;
        Ok(done == 1)
    }
}
