//! What staff change of a class's members: scores set by hand (an override of a member's
//! score at a scenario, with a reason, beside the computed one), members' names and
//! membership; and the learning platform's identities of the members, for the gradebook.

use crate::store::db::{with_pool, Store};
use crate::store::errors::StoreResult;
use chrono::{DateTime, Utc};
use sqlx::FromRow;

/// A score set by hand, as stored.
#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct OverrideRow {
    pub student: String,
    pub scenario: String,
    pub score: i32,
    pub max_score: i32,
    pub reason: String,
    pub set_by: String,
    pub set_at: DateTime<Utc>,
}

/// A member's identity on a learning platform.
#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct MemberIdentity {
    pub student: String,
    pub issuer: String,
    pub sub: String,
}

impl Store {
    /// Sets the score of `student` at `scenario` in `class` by hand (replacing one set
    /// before), and writes it in the audit log, in one transaction.
    #[allow(clippy::too_many_arguments)]
    pub async fn set_override(
        &self,
        class: &str,
        student: &str,
        scenario: &str,
        score: i32,
        max_score: i32,
        reason: &str,
        by: &str,
    ) -> StoreResult<DateTime<Utc>> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "INSERT INTO score_overrides (class_id, student, scenario, score, max_score, reason, set_by, set_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (class_id, student, scenario) DO UPDATE SET \
                 score = excluded.score, max_score = excluded.max_score, reason = excluded.reason, \
                 set_by = excluded.set_by, set_at = excluded.set_at")
                .bind(class).bind(student).bind(scenario).bind(score).bind(max_score).bind(reason).bind(by).bind(now)
                .execute(&mut *tx).await?;
            sqlx::query(
                "INSERT INTO audit_log (at, actor, class_id, action, detail) VALUES ($1, $2, $3, 'score_overridden', $4)")
                .bind(now).bind(by).bind(class)
                .bind(format!("set {student}'s score at {scenario} to {score} of {max_score}: {reason}"))
                .execute(&mut *tx).await?;
            tx.commit().await?;
        });
        Ok(now)
    }

    /// Removes the score set by hand for `student` at `scenario` in `class`, so that the
    /// computed one counts again; `Ok(false)` when there was none.
    pub async fn remove_override(
        &self,
        class: &str,
        student: &str,
        scenario: &str,
        by: &str,
    ) -> StoreResult<bool> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            let removed = sqlx::query(
                "DELETE FROM score_overrides WHERE class_id = $1 AND student = $2 AND scenario = $3")
                .bind(class).bind(student).bind(scenario).execute(&mut *tx).await?.rows_affected();
            if removed == 0 {
                tx.rollback().await?;
                return Ok(false);
            }
            // The platform holds the score set by hand: the computed one is due again.
            sqlx::query("UPDATE lti_grade_targets SET sent_through = NULL WHERE student = $1 AND scenario = $2")
                .bind(student).bind(scenario).execute(&mut *tx).await?;
            sqlx::query(
                "INSERT INTO audit_log (at, actor, class_id, action, detail) VALUES ($1, $2, $3, 'override_removed', $4)")
                .bind(now).bind(by).bind(class)
                .bind(format!("removed the score set by hand for {student} at {scenario}"))
                .execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    /// The scores set by hand in a class.
    pub async fn class_overrides(&self, class: &str) -> StoreResult<Vec<OverrideRow>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as(
            "SELECT student, scenario, score, max_score, reason, set_by, set_at FROM score_overrides \
             WHERE class_id = $1 ORDER BY student, scenario")
            .bind(class).fetch_all(pool).await?)
        })
    }

    /// The learning platform's identities of a class's members.
    pub async fn member_identities(&self, class: &str) -> StoreResult<Vec<MemberIdentity>> {
        with_pool!(self, |pool| Ok(sqlx::query_as(
            "SELECT i.student, i.issuer, i.sub FROM lti_identities AS i \
             JOIN memberships AS m ON m.student = i.student WHERE m.class_id = $1 \
             ORDER BY i.student, i.issuer, i.sub"
        )
        .bind(class)
        .fetch_all(pool)
        .await?))
    }
}

impl Store {
    /// Renames a member of a class, by `actor`, and writes it in the audit log; `Ok(false)`
    /// when the student is not a member.
    pub async fn rename_member(
        &self,
        class: &str,
        student: &str,
        name: &str,
        actor: &str,
    ) -> StoreResult<bool> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            let old: Option<String> = sqlx::query_scalar(
                "SELECT display_name FROM memberships WHERE class_id = $1 AND student = $2",
            )
            .bind(class)
            .bind(student)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(old) = old else {
                tx.rollback().await?;
                return Ok(false);
            };
            sqlx::query(
                "UPDATE memberships SET display_name = $3 WHERE class_id = $1 AND student = $2",
            )
            .bind(class)
            .bind(student)
            .bind(name)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "INSERT INTO audit_log (at, actor, class_id, action, detail) VALUES ($1, $2, $3, 'member_renamed', $4)")
                .bind(now).bind(actor).bind(class)
                .bind(format!("renamed {student} from \"{old}\" to \"{name}\""))
                .execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Removes a student from a class, by `actor`, and writes it in the audit log: they leave
    /// the dashboard and the gradebook; their attempts stay stored. `Ok(false)` when the
    /// student is not a member.
    pub async fn remove_member(
        &self,
        class: &str,
        student: &str,
        actor: &str,
    ) -> StoreResult<bool> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            let old: Option<String> = sqlx::query_scalar(
                "SELECT display_name FROM memberships WHERE class_id = $1 AND student = $2",
            )
            .bind(class)
            .bind(student)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(old) = old else {
                tx.rollback().await?;
                return Ok(false);
            };
            sqlx::query("DELETE FROM memberships WHERE class_id = $1 AND student = $2")
                .bind(class)
                .bind(student)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO audit_log (at, actor, class_id, action, detail) VALUES ($1, $2, $3, 'member_removed', $4)")
                .bind(now).bind(actor).bind(class)
                .bind(format!("removed {student} (\"{old}\") from the class"))
                .execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(true)
        })
    }
}
