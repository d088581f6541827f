//! Students and their browser sessions, and deleting a student with all that is theirs.

use crate::store::db::{with_pool, Store};
use crate::store::errors::StoreResult;
use chrono::Utc;
use sqlx::FromRow;

#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct Student {
    pub id: String,
    pub display_name: Option<String>,
}

/// What `pipeline-builder student delete ID` removes, in order, in one transaction: what each
/// statement removes (as the command reports it) and the statement, which gets the student's
/// id as `$1`. A table that refers to students (class memberships, session secrets) gets its
/// `DELETE … WHERE student = $1` here, before the last one, which removes the student.
pub const STUDENT_DELETE: &[(&str, &str)] = &[
    (
        "regraded verdicts",
        "DELETE FROM regrades WHERE attempt IN (SELECT id FROM attempts WHERE student = $1)",
    ),
    ("attempts", "DELETE FROM attempts WHERE student = $1"),
    ("drafts", "DELETE FROM drafts WHERE student = $1"),
    ("sessions", "DELETE FROM sessions WHERE student = $1"),
    (
        "class memberships",
        "DELETE FROM memberships WHERE student = $1",
    ),
    (
        "learning platform links",
        "DELETE FROM lti_identities WHERE student = $1",
    ),
    (
        "grade passback records",
        "DELETE FROM lti_grade_targets WHERE student = $1",
    ),
    (
        "idempotency records",
        "DELETE FROM idempotency_keys WHERE caller = 'student:' || $1",
    ),
    ("extensions", "DELETE FROM extensions WHERE student = $1"),
    (
        "scores set by hand",
        "DELETE FROM score_overrides WHERE student = $1",
    ),
    (
        "staff sign-in links",
        "UPDATE staff_accounts SET student = NULL WHERE student = $1",
    ),
    ("students", "DELETE FROM students WHERE id = $1"),
];

impl Store {
    // Students.

    /// Makes a new student for a browser session, and the session: `secret_hash` is the
    /// sha256 of the cookie's secret, which is never stored itself.
    pub async fn create_session(&self, id: &str, secret_hash: &str) -> StoreResult<Student> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query("INSERT INTO students (id, display_name, origin, created_at, legacy_cookie) VALUES ($1, NULL, 'session', $2, FALSE)")
                .bind(id).bind(now).execute(&mut *tx).await?;
            sqlx::query(
                "INSERT INTO sessions (secret_hash, student, created_at) VALUES ($1, $2, $3)",
            )
            .bind(secret_hash)
            .bind(id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            tx.commit().await
        })?;
        Ok(Student {
            id: id.to_string(),
            display_name: None,
        })
    }

    /// The student of the session whose secret hashes to `secret_hash`.
    pub async fn session_by_secret(&self, secret_hash: &str) -> StoreResult<Option<Student>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as::<_, Student>(
                "SELECT s.id, s.display_name FROM sessions AS k JOIN students AS s ON s.id = k.student \
                 WHERE k.secret_hash = $1 AND s.origin = 'session'")
                .bind(secret_hash).fetch_optional(pool).await?)
        })
    }

    /// Exchanges the id of a student made before sessions had their own secret (the old
    /// `pb_student` cookie) for a session whose secret hashes to `secret_hash`. Works once per
    /// student: the student is marked in the same transaction, so the old id is never
    /// accepted again. `None` when `old_id` names no such student or was already exchanged.
    pub async fn redeem_legacy_student(
        &self,
        old_id: &str,
        secret_hash: &str,
    ) -> StoreResult<Option<Student>> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            let marked = sqlx::query(
                "UPDATE students SET legacy_cookie = FALSE WHERE id = $1 AND origin = 'session' AND legacy_cookie = TRUE")
                .bind(old_id).execute(&mut *tx).await?.rows_affected();
            if marked != 1 {
                tx.rollback().await?;
                return Ok(None);
            }
            sqlx::query(
                "INSERT INTO sessions (secret_hash, student, created_at) VALUES ($1, $2, $3)",
            )
            .bind(secret_hash)
            .bind(old_id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let student =
                sqlx::query_as::<_, Student>("SELECT id, display_name FROM students WHERE id = $1")
                    .bind(old_id)
                    .fetch_one(&mut *tx)
                    .await?;
            tx.commit().await?;
            Ok(Some(student))
        })
    }

    pub async fn set_display_name(&self, id: &str, display_name: Option<&str>) -> StoreResult<()> {
        let writer = self.writer().await;
        with_pool!(writer, |pool| sqlx::query(
            "UPDATE students SET display_name = $2 WHERE id = $1"
        )
        .bind(id)
        .bind(display_name)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))?;
        Ok(())
    }

    /// Removes the student `id` and everything that is theirs ([`STUDENT_DELETE`]) in one
    /// transaction. Returns how many rows of each kind were removed, in the list's order, or
    /// `None` when there is no such student (and nothing was removed).
    pub async fn delete_student(&self, id: &str) -> StoreResult<Option<Vec<(&'static str, u64)>>> {
        let writer = self.writer().await;
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            let found: Option<String> = sqlx::query_scalar("SELECT id FROM students WHERE id = $1")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            if found.is_none() {
                tx.rollback().await?;
                return Ok(None);
            }
            let mut removed = Vec::with_capacity(STUDENT_DELETE.len());
            for (what, statement) in STUDENT_DELETE {
                let n = sqlx::query(statement)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                removed.push((*what, n));
            }
            tx.commit().await?;
            Ok(Some(removed))
        })
    }
}
