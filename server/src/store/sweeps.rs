//! Expiry: removing old idempotency records and students made for a session that did nothing.

use crate::store::db::{with_pool, Store};
use crate::store::errors::StoreResult;
use chrono::{DateTime, Utc};

impl Store {
    /// Removes the idempotency records first used before `cutoff` (a claim still in flight
    /// and renewed since is kept), a batch at a time so that requests get their turns to
    /// write between batches. Returns how many were removed.
    pub async fn sweep_idempotency_keys(&self, cutoff: DateTime<Utc>) -> StoreResult<u64> {
        let mut removed = 0;
        loop {
            let writer = self.writer().await;
            let n = with_pool!(writer, |pool| {
                sqlx::query(
                "DELETE FROM idempotency_keys WHERE (caller, key) IN (SELECT caller, key FROM idempotency_keys \
                 WHERE created_at < $1 AND (state = 'done' OR updated_at < $1) LIMIT $2)")
                .bind(cutoff).bind(SWEEP_BATCH).execute(pool).await.map(|r| r.rows_affected())
            })?;
            removed += n;
            if n < SWEEP_BATCH as u64 {
                return Ok(removed);
            }
        }
    }

    /// Removes the students made for a session before `cutoff` that have no attempt, no
    /// draft and no class membership, with every row that refers to them
    /// ([`WORKLESS_SESSION_SWEEP`]), a batch at a time, each batch in one transaction. Returns
    /// how many students were removed.
    pub async fn sweep_workless_sessions(&self, cutoff: DateTime<Utc>) -> StoreResult<u64> {
        let batch = format!(
            "SELECT id FROM students WHERE origin = 'session' AND created_at < $1 \
             AND NOT EXISTS (SELECT 1 FROM attempts WHERE attempts.student = students.id) \
             AND NOT EXISTS (SELECT 1 FROM drafts WHERE drafts.student = students.id) \
             AND NOT EXISTS (SELECT 1 FROM memberships WHERE memberships.student = students.id) \
             ORDER BY id LIMIT {SWEEP_BATCH}"
        );
        let statements: Vec<String> = WORKLESS_SESSION_SWEEP
            .iter()
            .map(|s| s.replace("{students}", &batch))
            .collect();
        let mut removed = 0;
        loop {
            let writer = self.writer().await;
            let n = with_pool!(writer, |pool| {
                let mut tx = pool.begin().await?;
                let mut last = 0;
                for statement in &statements {
                    last = sqlx::query(statement)
                        .bind(cutoff)
                        .execute(&mut *tx)
                        .await?
                        .rows_affected();
                }
                tx.commit().await?;
                last
            });
            removed += n;
            if n < SWEEP_BATCH as u64 {
                return Ok(removed);
            }
        }
    }
}

/// How many rows one step of a sweep removes.
pub(crate) const SWEEP_BATCH: i64 = 500;

/// What removing a batch of students with no work deletes, in order, in one transaction: each
/// statement gets the cutoff as `$1`, and `{students}` becomes the query of the batch's ids. A
/// table that refers to students (a table of session secrets, say) gets its `DELETE … WHERE
/// student IN ({students})` before the last one, which removes the students and is counted.
pub(crate) const WORKLESS_SESSION_SWEEP: &[&str] = &[
    "DELETE FROM sessions WHERE student IN ({students})",
    "DELETE FROM students WHERE id IN ({students})",
];
