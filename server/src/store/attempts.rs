//! Recorded attempts: one, a page of them, an export, and what a student has done.

use std::collections::BTreeMap;

use crate::store::db::{with_pool, Store};
use crate::store::errors::StoreResult;
use crate::store::stored_verdict::verdict_of;
use chrono::{DateTime, Utc};
use serde_json::Value as Json;
use sqlx::FromRow;

/// A student's progress, answered from the index `attempts_by_student` alone (every column
/// it reads is in the index): read from the rows, `passed` sits after the verdict, several
/// kilobytes, and reading it meant going through the verdict's pages, attempt by attempt.
const PROGRESS: &str = "SELECT scenario, MAX(CASE WHEN passed THEN 1 ELSE 0 END) AS passed \
     FROM attempts WHERE student = $1 GROUP BY scenario";

/// One recorded attempt: a design checked for a student.
#[derive(Clone, Debug, PartialEq, FromRow)]
pub struct Attempt {
    pub id: String,
    pub student: String,
    pub scenario: String,
    pub scenario_hash: String,
    #[sqlx(json)]
    pub design: Json,
    #[sqlx(json)]
    pub verdict: Json,
    pub score: i32,
    pub max_score: i32,
    pub passed: bool,
    pub created_at: DateTime<Utc>,
    /// The class the attempt was made for; `None` for self-study and for graders' records.
    #[sqlx(rename = "class_id")]
    pub class: Option<String>,
}

/// A row that holds an attempt's verdict, read with the verdict's compressed column
/// (`super::stored_verdict`); [`Deflated::read`] puts the verdict back.
#[derive(FromRow)]
pub(crate) struct Deflated<T> {
    #[sqlx(flatten)]
    row: T,
    verdict_deflate: Option<Vec<u8>>,
}

/// What holds an attempt's verdict, as its row's `verdict` column gave it.
pub(crate) trait HoldsVerdict {
    fn verdict_mut(&mut self) -> &mut Json;
}

impl<T: HoldsVerdict> Deflated<T> {
    /// The row with its verdict read from whichever column holds it.
    pub(crate) fn read(mut self) -> StoreResult<T> {
        let json = std::mem::take(self.row.verdict_mut());
        *self.row.verdict_mut() = verdict_of(json, self.verdict_deflate.as_deref())?;
        Ok(self.row)
    }

    /// Each of `rows` read.
    pub(crate) fn read_all(rows: Vec<Deflated<T>>) -> StoreResult<Vec<T>> {
        rows.into_iter().map(Deflated::read).collect()
    }
}

impl HoldsVerdict for Attempt {
    fn verdict_mut(&mut self) -> &mut Json {
        &mut self.verdict
    }
}

impl HoldsVerdict for ExportedAttempt {
    fn verdict_mut(&mut self) -> &mut Json {
        &mut self.verdict
    }
}

/// An attempt without its design and verdict, for lists.
#[derive(Clone, Debug, PartialEq, FromRow)]
pub struct AttemptSummary {
    pub id: String,
    pub student: String,
    pub scenario: String,
    pub scenario_hash: String,
    pub score: i32,
    pub max_score: i32,
    pub passed: bool,
    pub created_at: DateTime<Utc>,
}

/// Which attempts a page of a list holds: those of `student` and `scenario` when given,
/// older than the attempt `before` names (the last of the page before), at most `limit`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AttemptsQuery<'a> {
    pub student: Option<&'a str>,
    pub scenario: Option<&'a str>,
    pub before: Option<&'a str>,
    pub limit: u32,
}

/// An attempt as an export lists it.
#[derive(Clone, Debug, PartialEq, FromRow)]
pub struct ExportedAttempt {
    #[sqlx(flatten)]
    pub summary: AttemptSummary,
    /// Empty when the student gave no name.
    pub display_name: String,
    #[sqlx(json)]
    pub verdict: Json,
}

pub(crate) const ATTEMPTS_PAGE_COLUMNS: &str =
    "a.id, a.student, a.scenario, a.scenario_hash, a.score, a.max_score, a.passed, a.created_at";

/// The rest of a page's query, after its columns: `$1` the student, `$2` the scenario, `$3`
/// the attempt the page starts after, `$4` the limit. The order, newest first with the id
/// breaking ties, is the one a page's cursor continues.
macro_rules! attempts_page_where {
    () => {
        "WHERE ($1 IS NULL OR a.student = $1) AND ($2 IS NULL OR a.scenario = $2) \
     AND ($3 IS NULL OR (a.created_at, a.id) < (SELECT b.created_at, b.id FROM attempts AS b WHERE b.id = $3)) \
     ORDER BY a.created_at DESC, a.id DESC LIMIT $4"
    };
}

pub(crate) const ATTEMPTS_PAGE: &str = concat!("FROM attempts AS a ", attempts_page_where!());
pub(crate) const ATTEMPTS_PAGE_JOINED: &str = concat!(
    "FROM attempts AS a JOIN students AS s ON s.id = a.student \
     LEFT JOIN memberships AS m ON m.class_id = a.class_id AND m.student = a.student ",
    attempts_page_where!()
);

/// What a student has done with a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Progress {
    pub tried: bool,
    pub passed: bool,
}

impl Store {
    // Attempts.

    pub async fn get_attempt(&self, id: &str) -> StoreResult<Option<Attempt>> {
        with_pool!(self, |pool| {
            sqlx::query_as::<_, Deflated<Attempt>>(
                "SELECT id, student, scenario, scenario_hash, design, verdict, verdict_deflate, score, max_score, passed, created_at, class_id \
                 FROM attempts WHERE id = $1")
                .bind(id).fetch_optional(pool).await?.map(Deflated::read).transpose()
        })
    }

    /// Attempts, newest first, filtered by student and scenario when given.
    pub async fn list_attempts(
        &self,
        student: Option<&str>,
        scenario: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<AttemptSummary>> {
        self.attempts_page(&AttemptsQuery {
            student,
            scenario,
            before: None,
            limit,
        })
        .await
    }

    /// A page of attempts, newest first: those `query` filters, after the attempt it names.
    pub async fn attempts_page(
        &self,
        query: &AttemptsQuery<'_>,
    ) -> StoreResult<Vec<AttemptSummary>> {
        let sql = format!("SELECT {ATTEMPTS_PAGE_COLUMNS} {ATTEMPTS_PAGE}");
        self.page_of(&sql, query).await
    }

    /// The rows `sql` (a page's query, see [`ATTEMPTS_PAGE`]) gives for `query`.
    async fn page_of<T>(&self, sql: &str, query: &AttemptsQuery<'_>) -> StoreResult<Vec<T>>
    where
        T: for<'r> FromRow<'r, sqlx::sqlite::SqliteRow>
            + for<'r> FromRow<'r, sqlx::postgres::PgRow>
            + Send
            + Unpin,
    {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as::<_, T>(sql)
                .bind(query.student)
                .bind(query.scenario)
                .bind(query.before)
                .bind(i64::from(query.limit))
                .fetch_all(pool)
                .await?)
        })
    }

    /// As [`Store::attempts_page`], each attempt with its verdict (for exports that name the
    /// requirements missed) and the student's display name: the one they gave the attempt's
    /// class, else the one of their session or platform, else none.
    pub async fn attempts_page_for_export(
        &self,
        query: &AttemptsQuery<'_>,
    ) -> StoreResult<Vec<ExportedAttempt>> {
        let sql = format!(
            "SELECT {ATTEMPTS_PAGE_COLUMNS}, a.verdict, a.verdict_deflate, COALESCE(m.display_name, s.display_name, '') AS display_name \
             {ATTEMPTS_PAGE_JOINED}"
        );
        Deflated::read_all(
            self.page_of::<Deflated<ExportedAttempt>>(&sql, query)
                .await?,
        )
    }

    /// The name a student goes by: the one of their session or platform, else the one they
    /// gave the class they joined last; `None` for a student with neither (or none at all).
    pub async fn display_name(&self, student: &str) -> StoreResult<Option<String>> {
        with_pool!(self, |pool| {
            let name: Option<Option<String>> = sqlx::query_scalar(
                "SELECT COALESCE(s.display_name, \
                 (SELECT m.display_name FROM memberships AS m WHERE m.student = s.id ORDER BY m.joined_at DESC LIMIT 1)) AS name \
                 FROM students AS s WHERE s.id = $1")
                .bind(student).fetch_optional(pool).await?;
            Ok(name.flatten())
        })
    }

    /// Per scenario, whether the student has tried it (made a Check: an attempt is recorded)
    /// and passed it. A draft alone is not a try: it may be an edit never checked.
    pub async fn progress(&self, student: &str) -> StoreResult<BTreeMap<String, Progress>> {
        let mut progress: BTreeMap<String, Progress> = BTreeMap::new();
        with_pool!(self, |pool| {
            let rows: Vec<(String, i32)> = sqlx::query_as(PROGRESS)
                .bind(student)
                .fetch_all(pool)
                .await?;
            for (scenario, passed) in rows {
                progress.insert(
                    scenario,
                    Progress {
                        tried: true,
                        passed: passed == 1,
                    },
                );
            }
        });
        Ok(progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::PoolRef;

    /// SQLite plans the progress query on the index alone, never reading an attempt's row.
    #[tokio::test]
    async fn progress_is_read_from_the_index_alone() {
        let dir = std::env::temp_dir().join(format!("pb-progress-plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}", dir.join("plan.db").display());
        let store = Store::connect(&url).await.unwrap();
        let PoolRef::Sqlite(pool) = store.pools() else {
            panic!("a SQLite URL opens a SQLite store");
        };
        let plan: Vec<(i64, i64, i64, String)> =
            sqlx::query_as(&format!("EXPLAIN QUERY PLAN {PROGRESS}"))
                .bind("s")
                .fetch_all(pool)
                .await
                .unwrap();
        let words: Vec<&str> = plan.iter().map(|row| row.3.as_str()).collect();
        assert!(
            words
                .iter()
                .any(|w| w.contains("USING COVERING INDEX attempts_by_student")),
            "{words:?}"
        );
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }
}
