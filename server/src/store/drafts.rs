//! The drafts a student keeps of each scenario.

use crate::store::db::{with_pool, Store};
use crate::store::errors::StoreResult;
use chrono::{DateTime, Utc};
use serde_json::Value as Json;
use sqlx::types::Json as SqlJson;
use sqlx::FromRow;

#[derive(Clone, Debug, PartialEq, FromRow)]
pub struct Draft {
    pub scenario: String,
    #[sqlx(json)]
    pub design: Json,
    pub updated_at: DateTime<Utc>,
}

impl Store {
    // Drafts.

    pub async fn get_draft(&self, student: &str, scenario: &str) -> StoreResult<Option<Draft>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as::<_, Draft>("SELECT scenario, design, updated_at FROM drafts WHERE student = $1 AND scenario = $2")
                .bind(student).bind(scenario).fetch_optional(pool).await?)
        })
    }

    pub async fn put_draft(
        &self,
        student: &str,
        scenario: &str,
        design: &Json,
    ) -> StoreResult<Draft> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            sqlx::query(
            "INSERT INTO drafts (student, scenario, design, updated_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (student, scenario) DO UPDATE SET design = excluded.design, updated_at = excluded.updated_at")
            .bind(student).bind(scenario).bind(SqlJson(design)).bind(now).execute(pool).await.map(|r| r.rows_affected())
        })?;
        Ok(Draft {
            scenario: scenario.to_string(),
            design: design.clone(),
            updated_at: now,
        })
    }

    /// The bytes of the drafts `student` keeps, except the one of `except_scenario` (which a
    /// write is about to replace): counted as characters of the stored JSON text.
    pub async fn draft_bytes(&self, student: &str, except_scenario: &str) -> StoreResult<u64> {
        let total: i64 = with_pool!(self, |pool| {
            sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(LENGTH(CAST(design AS TEXT))), 0) AS BIGINT) FROM drafts WHERE student = $1 AND scenario <> $2")
            .bind(student).bind(except_scenario).fetch_one(pool).await
        })?;
        Ok(u64::try_from(total).unwrap_or(0))
    }
}
