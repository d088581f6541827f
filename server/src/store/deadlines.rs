//! Due dates of a class (the whole class's, each scenario's), its late policy, and students'
//! extensions.
//!
//! A student's due date for a scenario is, first found: their extension for that scenario,
//! their extension for every scenario, the scenario's due date in the class, the class's.

pub use shared::wire::classes::LatePolicy;

use std::collections::BTreeMap;

use crate::store::db::{with_pool, Store};
use crate::store::errors::{unknown_stored, StoreResult};
use chrono::{DateTime, Utc};
use sqlx::FromRow;

/// The due date of `$2` (a student) at `$3` (a scenario) in the class `$1`, as the text of one
/// query both backends read: the order of [`DueDates::due`].
pub const DUE_AT: &str = "SELECT COALESCE(\
     (SELECT e.due_at FROM extensions AS e WHERE e.class_id = $1 AND e.student = $2 AND e.scenario = $3), \
     (SELECT e.due_at FROM extensions AS e WHERE e.class_id = $1 AND e.student = $2 AND e.scenario = ''), \
     (SELECT d.due_at FROM class_deadlines AS d WHERE d.class_id = $1 AND d.scenario = $3), \
     (SELECT c.due_at FROM classes AS c WHERE c.id = $1))";

/// A scenario's own due date in a class.
#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct ScenarioDeadline {
    pub scenario: String,
    pub due_at: DateTime<Utc>,
    pub source: String,
}

/// A student's extension: for one scenario, or (`scenario` empty) every one.
#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct ExtensionRow {
    pub student: String,
    pub scenario: String,
    pub due_at: DateTime<Utc>,
    pub set_by: String,
    pub set_at: DateTime<Utc>,
}

/// Everything that decides the due dates of a class's students.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DueDates {
    pub due_at: Option<DateTime<Utc>>,
    pub late_policy: LatePolicy,
    pub scenarios: Vec<ScenarioDeadline>,
    pub extensions: Vec<ExtensionRow>,
}

impl DueDates {
    /// The due date of `student` at `scenario`, if there is one.
    pub fn due(&self, student: &str, scenario: &str) -> Option<DateTime<Utc>> {
        let extension = |of: &str| {
            self.extensions
                .iter()
                .find(|e| e.student == student && e.scenario == of)
                .map(|e| e.due_at)
        };
        extension(scenario)
            .or_else(|| extension(""))
            .or_else(|| {
                self.scenarios
                    .iter()
                    .find(|d| d.scenario == scenario)
                    .map(|d| d.due_at)
            })
            .or(self.due_at)
    }

    /// True when an attempt of `student` at `scenario` made `at` is late.
    pub fn late(&self, student: &str, scenario: &str, at: DateTime<Utc>) -> bool {
        self.due(student, scenario).is_some_and(|due| at > due)
    }

    /// The due date of `student` at each of `scenarios` that has one.
    pub fn of_student<'a>(
        &self,
        student: &str,
        scenarios: impl IntoIterator<Item = &'a str>,
    ) -> BTreeMap<String, DateTime<Utc>> {
        scenarios
            .into_iter()
            .filter_map(|s| self.due(student, s).map(|d| (s.to_string(), d)))
            .collect()
    }
}

#[derive(FromRow)]
struct ClassDue {
    due_at: Option<DateTime<Utc>>,
    late_policy: String,
}

fn policy_of_stored(policy: &str) -> StoreResult<LatePolicy> {
    LatePolicy::parse(policy).ok_or_else(|| unknown_stored(format!("a late policy {policy:?}")))
}

/// Every grade passback record of the class's members is due again: their on-time best may
/// have changed with the due dates.
const RESEND_CLASS: &str = "UPDATE lti_grade_targets SET sent_through = NULL \
     WHERE student IN (SELECT m.student FROM memberships AS m WHERE m.class_id = $1)";

impl Store {
    /// The due dates of a class (nothing for a class that does not exist).
    pub async fn due_dates(&self, class: &str) -> StoreResult<DueDates> {
        with_pool!(self, |pool| {
            let found: Option<ClassDue> =
                sqlx::query_as("SELECT due_at, late_policy FROM classes WHERE id = $1")
                    .bind(class)
                    .fetch_optional(pool)
                    .await?;
            let Some(found) = found else {
                return Ok(DueDates::default());
            };
            let scenarios = sqlx::query_as(
                "SELECT scenario, due_at, source FROM class_deadlines WHERE class_id = $1 ORDER BY scenario")
                .bind(class).fetch_all(pool).await?;
            let extensions = sqlx::query_as(
                "SELECT student, scenario, due_at, set_by, set_at FROM extensions WHERE class_id = $1 \
                 ORDER BY student, scenario")
                .bind(class).fetch_all(pool).await?;
            Ok(DueDates {
                due_at: found.due_at,
                late_policy: policy_of_stored(&found.late_policy)?,
                scenarios,
                extensions,
            })
        })
    }

    /// The due date of `student` at `scenario` in `class`, and the class's late policy.
    pub async fn due_of(
        &self,
        class: &str,
        student: &str,
        scenario: &str,
    ) -> StoreResult<(Option<DateTime<Utc>>, LatePolicy)> {
        with_pool!(self, |pool| {
            let due: Option<DateTime<Utc>> = sqlx::query_scalar(DUE_AT)
                .bind(class)
                .bind(student)
                .bind(scenario)
                .fetch_one(pool)
                .await?;
            let policy: Option<String> =
                sqlx::query_scalar("SELECT late_policy FROM classes WHERE id = $1")
                    .bind(class)
                    .fetch_optional(pool)
                    .await?;
            let policy = policy
                .as_deref()
                .map(policy_of_stored)
                .transpose()?
                .unwrap_or_default();
            Ok((due, policy))
        })
    }

    /// Sets a class's due dates as staff give them: the whole class's (`None`: none), the late
    /// policy, and each scenario's, which replace every one staff set before (a learning
    /// platform's stay where staff set none). Written in the audit log by `actor`.
    pub async fn set_due_dates(
        &self,
        class: &str,
        due_at: Option<DateTime<Utc>>,
        policy: LatePolicy,
        scenarios: &BTreeMap<String, DateTime<Utc>>,
        actor: &str,
        detail: &str,
    ) -> StoreResult<()> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query("UPDATE classes SET due_at = $2, late_policy = $3 WHERE id = $1")
                .bind(class)
                .bind(due_at)
                .bind(policy.as_str())
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM class_deadlines WHERE class_id = $1 AND source = 'staff'")
                .bind(class)
                .execute(&mut *tx)
                .await?;
            for (scenario, due) in scenarios {
                sqlx::query(
                    "INSERT INTO class_deadlines (class_id, scenario, due_at, source) VALUES ($1, $2, $3, 'staff') \
                     ON CONFLICT (class_id, scenario) DO UPDATE SET due_at = excluded.due_at, source = 'staff'")
                    .bind(class).bind(scenario).bind(*due).execute(&mut *tx).await?;
            }
            sqlx::query(RESEND_CLASS)
                .bind(class)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO audit_log (at, actor, class_id, action, detail) VALUES ($1, $2, $3, 'deadlines_changed', $4)")
                .bind(now).bind(actor).bind(class).bind(detail).execute(&mut *tx).await?;
            tx.commit().await?;
        });
        Ok(())
    }

    /// Makes `due_at` the due date of `scenario` in `class` as the learning platform's line
    /// item gives it, unless staff set one. `Ok(true)` when it changed.
    pub async fn set_platform_due(
        &self,
        class: &str,
        scenario: &str,
        due_at: DateTime<Utc>,
    ) -> StoreResult<bool> {
        let writer = self.writer().await;
        let done = with_pool!(writer, |pool| {
            sqlx::query(
            "INSERT INTO class_deadlines (class_id, scenario, due_at, source) VALUES ($1, $2, $3, 'platform') \
             ON CONFLICT (class_id, scenario) DO UPDATE SET due_at = excluded.due_at \
             WHERE class_deadlines.source = 'platform' AND class_deadlines.due_at <> excluded.due_at")
            .bind(class).bind(scenario).bind(due_at).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// Gives `student` the due date `due_at` at `scenario` (`""`: every scenario) in `class`,
    /// replacing an extension given before, and writes it in the audit log.
    pub async fn set_extension(
        &self,
        class: &str,
        student: &str,
        scenario: &str,
        due_at: DateTime<Utc>,
        actor: &str,
    ) -> StoreResult<DateTime<Utc>> {
        let writer = self.writer().await;
        let now = Utc::now();
        let what = if scenario.is_empty() {
            "every scenario"
        } else {
            scenario
        };
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "INSERT INTO extensions (class_id, student, scenario, due_at, set_by, set_at) VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (class_id, student, scenario) DO UPDATE SET due_at = excluded.due_at, \
                 set_by = excluded.set_by, set_at = excluded.set_at")
                .bind(class).bind(student).bind(scenario).bind(due_at).bind(actor).bind(now)
                .execute(&mut *tx).await?;
            sqlx::query("UPDATE lti_grade_targets SET sent_through = NULL WHERE student = $1")
                .bind(student)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO audit_log (at, actor, class_id, action, detail) VALUES ($1, $2, $3, 'extension_granted', $4)")
                .bind(now).bind(actor).bind(class)
                .bind(format!("gave {student} until {} for {what}", due_at.to_rfc3339()))
                .execute(&mut *tx).await?;
            tx.commit().await?;
        });
        Ok(now)
    }

    /// Takes a student's extension away; `Ok(false)` when there was none.
    pub async fn remove_extension(
        &self,
        class: &str,
        student: &str,
        scenario: &str,
        actor: &str,
    ) -> StoreResult<bool> {
        let writer = self.writer().await;
        let now = Utc::now();
        let what = if scenario.is_empty() {
            "every scenario"
        } else {
            scenario
        };
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            let removed = sqlx::query(
                "DELETE FROM extensions WHERE class_id = $1 AND student = $2 AND scenario = $3",
            )
            .bind(class)
            .bind(student)
            .bind(scenario)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if removed == 0 {
                tx.rollback().await?;
                return Ok(false);
            }
            sqlx::query("UPDATE lti_grade_targets SET sent_through = NULL WHERE student = $1")
                .bind(student)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO audit_log (at, actor, class_id, action, detail) VALUES ($1, $2, $3, 'extension_removed', $4)")
                .bind(now).bind(actor).bind(class)
                .bind(format!("took {student}'s extension for {what} away"))
                .execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(true)
        })
    }
}
