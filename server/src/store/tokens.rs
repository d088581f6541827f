//! Grader tokens.

use crate::store::db::{with_pool, Store};
use crate::store::errors::StoreResult;
use chrono::{DateTime, Utc};
use sqlx::FromRow;

#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct TokenInfo {
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl Store {
    // Grader tokens.

    /// Stores a token's hash under `name`. A revoked name may be used again; an active one
    /// may not (`Ok(false)`).
    pub async fn create_token(&self, name: &str, token_hash: &str) -> StoreResult<bool> {
        let writer = self.writer().await;
        let now = Utc::now();
        let done = with_pool!(writer, |pool| {
            sqlx::query(
            "INSERT INTO grader_tokens (name, token_hash, created_at, revoked_at) VALUES ($1, $2, $3, NULL) \
             ON CONFLICT (name) DO UPDATE SET token_hash = excluded.token_hash, created_at = excluded.created_at, revoked_at = NULL \
             WHERE grader_tokens.revoked_at IS NOT NULL")
            .bind(name).bind(token_hash).bind(now).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(done == 1)
    }

    pub async fn list_tokens(&self) -> StoreResult<Vec<TokenInfo>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as::<_, TokenInfo>(
                "SELECT name, created_at, revoked_at FROM grader_tokens ORDER BY name",
            )
            .fetch_all(pool)
            .await?)
        })
    }

    /// Revokes the active token called `name`; `Ok(false)` when there is none.
    pub async fn revoke_token(&self, name: &str) -> StoreResult<bool> {
        let writer = self.writer().await;
        let now = Utc::now();
        let done = with_pool!(writer, |pool| sqlx::query(
            "UPDATE grader_tokens SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL"
        )
        .bind(name)
        .bind(now)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(done == 1)
    }

    /// The names and hashes of the tokens that are not revoked. The hash identifies a token:
    /// a name revoked and given to a new token gets a new hash.
    pub async fn active_tokens(&self) -> StoreResult<Vec<(String, String)>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as::<_, (String, String)>(
                "SELECT name, token_hash FROM grader_tokens WHERE revoked_at IS NULL ORDER BY name",
            )
            .fetch_all(pool)
            .await?)
        })
    }
}
