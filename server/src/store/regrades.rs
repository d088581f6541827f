//! Regrades: stored attempts checked again against another version of their scenario.

use crate::store::db::{with_pool, Store};
use crate::store::errors::StoreResult;
use crate::store::stored_verdict::verdict_of;
use chrono::{DateTime, Utc};
use serde_json::Value as Json;
use sqlx::types::Json as SqlJson;

/// The verdict of a stored attempt checked again against another version of its scenario.
#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct Regrade {
    pub attempt: String,
    pub scenario_hash: String,
    /// `None` when the design is not valid for that version; `error` says why.
    #[sqlx(json(nullable))]
    pub verdict: Option<Json>,
    pub error: Option<String>,
    pub score: i32,
    pub max_score: i32,
    pub passed: bool,
    pub created_at: DateTime<Utc>,
}

/// A stored attempt that a regrade checks again.
#[derive(Clone, Debug, PartialEq, sqlx::FromRow)]
pub struct StoredDesign {
    #[sqlx(rename = "id")]
    pub attempt: String,
    #[sqlx(json)]
    pub design: Json,
}

impl Store {
    // Regrades.

    /// The regraded verdicts of a class's attempts (every class's when `class` is `None`) at
    /// `scenario`, or at every scenario when it is `None`.
    pub async fn regrades(
        &self,
        class: Option<&str>,
        scenario: Option<&str>,
    ) -> StoreResult<Vec<Regrade>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as::<_, Regrade>(
                "SELECT g.attempt, g.scenario_hash, g.verdict, g.error, g.score, g.max_score, g.passed, g.created_at \
                 FROM regrades AS g JOIN attempts AS a ON a.id = g.attempt \
                 WHERE ($1 IS NULL OR a.class_id = $1) AND ($2 IS NULL OR a.scenario = $2) ORDER BY g.attempt, g.created_at")
                .bind(class).bind(scenario).fetch_all(pool).await?)
        })
    }

    /// Up to `limit` attempts at `scenario` (of `class`, when given) made against another
    /// version than `current_hash` and not yet regraded against it, oldest first.
    pub async fn attempts_to_regrade(
        &self,
        scenario: &str,
        class: Option<&str>,
        current_hash: &str,
        limit: u32,
    ) -> StoreResult<Vec<StoredDesign>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as::<_, StoredDesign>(
                "SELECT a.id, a.design FROM attempts AS a WHERE a.scenario = $1 AND a.scenario_hash <> $2 \
                 AND ($3 IS NULL OR a.class_id = $3) \
                 AND NOT EXISTS (SELECT 1 FROM regrades AS g WHERE g.attempt = a.id AND g.scenario_hash = $2) \
                 ORDER BY a.created_at, a.id LIMIT $4")
                .bind(scenario).bind(current_hash).bind(class).bind(i64::from(limit)).fetch_all(pool).await?)
        })
    }

    /// How many attempts at `scenario` (of `class`) were made against another version than
    /// `current_hash`.
    pub async fn count_outdated(
        &self,
        scenario: &str,
        class: Option<&str>,
        current_hash: &str,
    ) -> StoreResult<u64> {
        let n: i64 = with_pool!(self, |pool| {
            sqlx::query_scalar(
            "SELECT COUNT(*) FROM attempts WHERE scenario = $1 AND scenario_hash <> $2 AND ($3 IS NULL OR class_id = $3)")
            .bind(scenario).bind(current_hash).bind(class).fetch_one(pool).await
        })?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Records a batch of regraded verdicts in one transaction: all of them or none. One that
    /// is there already (a run that stopped after its commit) is left as it is.
    pub async fn record_regrades(&self, batch: &[Regrade]) -> StoreResult<u64> {
        let writer = self.writer().await;
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            let mut added = 0;
            for g in batch {
                added += sqlx::query(
                    "INSERT INTO regrades (attempt, scenario_hash, verdict, error, score, max_score, passed, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (attempt, scenario_hash) DO NOTHING")
                    .bind(&g.attempt).bind(&g.scenario_hash).bind(g.verdict.as_ref().map(SqlJson))
                    .bind(g.error.as_deref()).bind(g.score).bind(g.max_score).bind(g.passed).bind(g.created_at)
                    .execute(&mut *tx).await?.rows_affected();
            }
            tx.commit().await?;
            Ok(added)
        })
    }

    /// The attempts at `scenario` (of `class`) regraded against `hash`: each attempt's own
    /// verdict beside the regraded one.
    pub async fn regraded_pairs(
        &self,
        scenario: &str,
        class: Option<&str>,
        hash: &str,
    ) -> StoreResult<Vec<(Json, Option<Json>)>> {
        with_pool!(self, |pool| {
            let rows = sqlx::query_as::<_, (SqlJson<Json>, Option<Vec<u8>>, Option<SqlJson<Json>>)>(
                "SELECT a.verdict AS old, a.verdict_deflate AS old_deflate, g.verdict AS new FROM regrades AS g JOIN attempts AS a ON a.id = g.attempt \
                 WHERE a.scenario = $1 AND ($2 IS NULL OR a.class_id = $2) AND g.scenario_hash = $3 ORDER BY a.created_at, a.id")
                .bind(scenario).bind(class).bind(hash).fetch_all(pool).await?;
            rows.into_iter()
                .map(|(old, old_deflate, new)| {
                    Ok((verdict_of(old.0, old_deflate.as_deref())?, new.map(|v| v.0)))
                })
                .collect()
        })
    }
}
