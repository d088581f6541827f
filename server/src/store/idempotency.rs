//! Idempotency keys: what a claim came to, the stored answer, renewing and abandoning a claim.

use crate::store::db::{with_pool, Store};
use crate::store::errors::StoreResult;
use crate::store::hot::ClaimId;
use chrono::Utc;
use serde_json::Value as Json;

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
        let writer = self.writer().await;
        let now = Utc::now();
        let renewed = with_pool!(writer, |pool| {
            sqlx::query("UPDATE idempotency_keys SET updated_at = $3 WHERE caller = $1 AND key = $2 AND owner = $4 AND state = 'in_flight'")
            .bind(caller).bind(key).bind(now).bind(owner).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(renewed == 1)
    }

    /// Gives up a claim whose request failed on our side, so that a retry can run. Only its
    /// holder can: `Ok(false)` when the claim was taken over meanwhile.
    pub async fn abandon_idempotency_key(&self, claim: &ClaimId) -> StoreResult<bool> {
        let (caller, key, owner) = (&claim.caller, &claim.key, &claim.owner);
        let writer = self.writer().await;
        let done = with_pool!(writer, |pool| {
            sqlx::query("DELETE FROM idempotency_keys WHERE caller = $1 AND key = $2 AND owner = $3 AND state = 'in_flight'")
            .bind(caller).bind(key).bind(owner).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(done == 1)
    }
}
