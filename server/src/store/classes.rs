//! Classes, their members and their attempts.

pub use shared::wire::classes::Preview;

use crate::store::attempts::{AttemptSummary, Deflated, HoldsVerdict};
use crate::store::db::{with_pool, Store};
use crate::store::errors::{unknown_stored, StoreResult};
use chrono::{DateTime, Utc};
use serde_json::Value as Json;
use sqlx::{FromRow, Row};

// Classes.

/// A class as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    pub id: String,
    pub name: String,
    pub join_code: String,
    pub open: bool,
    pub preview: Preview,
    /// The name of the grader token that made it.
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// How many students have joined.
    pub members: i64,
    /// The staff account that owns it (the first owner by name), if any.
    pub owner: Option<String>,
}

/// What [`Store::create_class_within`] came to.
#[derive(Debug)]
pub enum ClassMade {
    Made(Class),
    /// Another class has the join code: draw another.
    CodeTaken,
    /// The maker has made as many classes as it may.
    LimitReached,
}

/// A student's place in a class.
#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct Membership {
    #[sqlx(rename = "class_id")]
    pub class: String,
    pub student: String,
    pub display_name: String,
    pub joined_at: DateTime<Utc>,
}

/// What joining a class came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Joined {
    /// A new member.
    New(Membership),
    /// The student was a member already; nothing changed.
    Already(Membership),
    /// The class is closed and the student is not a member.
    Closed,
}

/// An attempt of a class, with what the dashboard reads of it.
#[derive(Clone, Debug, PartialEq, FromRow)]
pub struct ClassAttempt {
    #[sqlx(flatten)]
    pub summary: AttemptSummary,
    #[sqlx(json)]
    pub verdict: Json,
}

impl HoldsVerdict for ClassAttempt {
    fn verdict_mut(&mut self) -> &mut Json {
        &mut self.verdict
    }
}

/// The setting a class's stored `preview` names; any other value is refused.
pub fn preview_from_stored(stored: &str) -> StoreResult<Preview> {
    match stored {
        "everything" => Ok(Preview::Everything),
        "lacks" => Ok(Preview::Lacks),
        "nothing" => Ok(Preview::Nothing),
        other => Err(unknown_stored(format!("a class's preview {other:?}"))),
    }
}

pub(crate) const CLASS_COLUMNS: &str =
    "c.id, c.name, c.join_code, c.open, c.preview, c.created_by, c.created_at, \
     (SELECT COUNT(*) FROM memberships AS m WHERE m.class_id = c.id) AS members, \
     (SELECT MIN(s.account) FROM class_staff AS s WHERE s.class_id = c.id AND s.role = 'owner') AS owner";

/// A class's row as either backend stores it; the preview is checked when it becomes a
/// [`Class`].
#[derive(sqlx::FromRow)]
pub(crate) struct StoredClass {
    id: String,
    name: String,
    join_code: String,
    open: bool,
    preview: String,
    created_by: String,
    created_at: DateTime<Utc>,
    members: i64,
    owner: Option<String>,
}

impl StoredClass {
    fn class(self) -> StoreResult<Class> {
        Ok(Class {
            id: self.id,
            name: self.name,
            join_code: self.join_code,
            open: self.open,
            preview: preview_from_stored(&self.preview)?,
            created_by: self.created_by,
            created_at: self.created_at,
            members: self.members,
            owner: self.owner,
        })
    }
}

/// A class with the name a student gave it and when they joined it.
#[derive(sqlx::FromRow)]
struct StoredMembership {
    #[sqlx(flatten)]
    class: StoredClass,
    member_name: String,
    joined_at: DateTime<Utc>,
}

/// Reads a [`Class`] from a row of either backend that holds [`CLASS_COLUMNS`].
pub(crate) fn class_of<'r, R: Row>(r: &'r R) -> StoreResult<Class>
where
    StoredClass: sqlx::FromRow<'r, R>,
{
    StoredClass::from_row(r)?.class()
}

impl Store {
    /// Makes a class. `Ok(None)` when `join_code` is taken (the caller draws another).
    pub async fn create_class(
        &self,
        id: &str,
        name: &str,
        join_code: &str,
        created_by: &str,
    ) -> StoreResult<Option<Class>> {
        match self
            .create_class_within(id, name, join_code, created_by, u32::MAX)
            .await?
        {
            ClassMade::Made(class) => Ok(Some(class)),
            ClassMade::CodeTaken | ClassMade::LimitReached => Ok(None),
        }
    }

    /// Makes a class as [`Store::create_class`] does, unless `created_by` has made `max`
    /// classes already. The count and the insert are one transaction, and on PostgreSQL the
    /// maker's classes are locked for it (an advisory lock on the name), so that two makes at
    /// once cannot both take the last place. (SQLite's writes take their turns already.)
    pub async fn create_class_within(
        &self,
        id: &str,
        name: &str,
        join_code: &str,
        created_by: &str,
        max: u32,
    ) -> StoreResult<ClassMade> {
        self.create_class_for(id, name, join_code, created_by, None, max)
            .await
    }

    /// Makes a class as [`Store::create_class_within`] does; with an `owner` account, the
    /// class is made with that account as its owner, in the same transaction. The audit log
    /// records the making.
    pub async fn create_class_for(
        &self,
        id: &str,
        name: &str,
        join_code: &str,
        created_by: &str,
        owner: Option<&str>,
        max: u32,
    ) -> StoreResult<ClassMade> {
        let writer = self.writer().await;
        let now = Utc::now();
        let postgres = matches!(self, Store::Postgres(..));
        let made = with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            if postgres {
                sqlx::query("SELECT pg_advisory_xact_lock(hashtext('classes:' || $1))")
                    .bind(created_by)
                    .execute(&mut *tx)
                    .await?;
            }
            let (count,): (i64,) =
                sqlx::query_as("SELECT COUNT(*) FROM classes WHERE created_by = $1")
                    .bind(created_by)
                    .fetch_one(&mut *tx)
                    .await?;
            if count >= i64::from(max) {
                tx.rollback().await?;
                return Ok(ClassMade::LimitReached);
            }
            let made = sqlx::query(
                "INSERT INTO classes (id, name, join_code, open, preview, created_by, created_at) \
                 VALUES ($1, $2, $3, TRUE, 'everything', $4, $5) ON CONFLICT DO NOTHING",
            )
            .bind(id)
            .bind(name)
            .bind(join_code)
            .bind(created_by)
            .bind(now)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if let (1, Some(owner)) = (made, owner) {
                sqlx::query(
                    "INSERT INTO class_staff (class_id, account, role, granted_by, granted_at) \
                     VALUES ($1, $2, 'owner', $2, $3)",
                )
                .bind(id)
                .bind(owner)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
            if made == 1 {
                sqlx::query(
                    "INSERT INTO audit_log (at, actor, class_id, action, detail) VALUES ($1, $2, $3, 'class_made', $4)")
                    .bind(now).bind(owner.map_or_else(|| format!("admin:{created_by}"), str::to_string))
                    .bind(id).bind(format!("made the class \"{name}\""))
                    .execute(&mut *tx).await?;
            }
            tx.commit().await?;
            made
        });
        if made != 1 {
            return Ok(ClassMade::CodeTaken);
        }
        Ok(ClassMade::Made(Class {
            id: id.to_string(),
            name: name.to_string(),
            join_code: join_code.to_string(),
            open: true,
            preview: Preview::Everything,
            created_by: created_by.to_string(),
            created_at: now,
            members: 0,
            owner: owner.map(str::to_string),
        }))
    }

    /// Every class, newest first.
    pub async fn list_classes(&self) -> StoreResult<Vec<Class>> {
        let query =
            format!("SELECT {CLASS_COLUMNS} FROM classes AS c ORDER BY c.created_at DESC, c.id");
        with_pool!(self, |pool| {
            let rows = sqlx::query(&query).fetch_all(pool).await?;
            rows.iter().map(class_of).collect()
        })
    }

    /// At most `limit` classes, newest first (the order of [`Store::list_classes`]), after
    /// the class `after` names by its creation time and id (the last one of the page before).
    pub async fn list_classes_page(
        &self,
        limit: u32,
        after: Option<&(DateTime<Utc>, String)>,
        account: Option<&str>,
    ) -> StoreResult<Vec<Class>> {
        let limit = i64::from(limit);
        // An account sees only the classes it has a role in; an administrator, every class.
        let mine = if account.is_some() {
            "EXISTS (SELECT 1 FROM class_staff AS s WHERE s.class_id = c.id AND s.account = $4)"
        } else {
            "$4 = ''"
        };
        let account = account.unwrap_or("");
        let query = format!(
            "SELECT {CLASS_COLUMNS} FROM classes AS c \
             WHERE ($5 = 0 OR c.created_at < $1 OR (c.created_at = $1 AND c.id > $2)) AND {mine} \
             ORDER BY c.created_at DESC, c.id LIMIT $3"
        );
        let (at, id, paged) = match after {
            Some((at, id)) => (*at, id.as_str(), 1i32),
            None => (Utc::now(), "", 0i32),
        };
        with_pool!(self, |pool| {
            let rows = sqlx::query(&query)
                .bind(at)
                .bind(id)
                .bind(limit)
                .bind(account)
                .bind(paged)
                .fetch_all(pool)
                .await?;
            rows.iter().map(class_of).collect()
        })
    }

    pub async fn get_class(&self, id: &str) -> StoreResult<Option<Class>> {
        let query = format!("SELECT {CLASS_COLUMNS} FROM classes AS c WHERE c.id = $1");
        with_pool!(self, |pool| {
            let row = sqlx::query(&query).bind(id).fetch_optional(pool).await?;
            row.as_ref().map(class_of).transpose()
        })
    }

    pub async fn class_by_code(&self, join_code: &str) -> StoreResult<Option<Class>> {
        let query = format!("SELECT {CLASS_COLUMNS} FROM classes AS c WHERE c.join_code = $1");
        with_pool!(self, |pool| {
            let row = sqlx::query(&query)
                .bind(join_code)
                .fetch_optional(pool)
                .await?;
            row.as_ref().map(class_of).transpose()
        })
    }

    /// Changes what is given of a class: its name, whether it is open, its preview setting.
    /// `Ok(None)` when there is no such class.
    pub async fn update_class(
        &self,
        id: &str,
        name: Option<&str>,
        open: Option<bool>,
        preview: Option<Preview>,
    ) -> StoreResult<Option<Class>> {
        let preview = preview.map(Preview::as_str);
        {
            let writer = self.writer().await;
            let changed = with_pool!(writer, |pool| {
                sqlx::query(
                "UPDATE classes SET name = COALESCE($2, name), open = COALESCE($3, open), preview = COALESCE($4, preview) WHERE id = $1")
                .bind(id).bind(name).bind(open).bind(preview).execute(pool).await.map(|r| r.rows_affected())
            })?;
            if changed != 1 {
                return Ok(None);
            }
        }
        self.get_class(id).await
    }

    /// Makes `student` a member of the open class `class` under `display_name`; a member
    /// already keeps the name given first.
    pub async fn join_class(
        &self,
        class: &str,
        student: &str,
        display_name: &str,
    ) -> StoreResult<Joined> {
        let writer = self.writer().await;
        let now = Utc::now();
        let inserted = with_pool!(writer, |pool| {
            sqlx::query(
            "INSERT INTO memberships (class_id, student, display_name, joined_at) \
             SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM classes WHERE id = $1 AND open = TRUE) \
             ON CONFLICT (class_id, student) DO NOTHING")
            .bind(class).bind(student).bind(display_name).bind(now)
            .execute(pool).await.map(|r| r.rows_affected())
        })?;
        drop(writer);
        match self.membership(class, student).await? {
            Some(m) if inserted == 1 => Ok(Joined::New(m)),
            Some(m) => Ok(Joined::Already(m)),
            None => Ok(Joined::Closed),
        }
    }

    pub async fn membership(&self, class: &str, student: &str) -> StoreResult<Option<Membership>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as::<_, Membership>("SELECT class_id, student, display_name, joined_at FROM memberships WHERE class_id = $1 AND student = $2")
                .bind(class).bind(student).fetch_optional(pool).await?)
        })
    }

    /// The members of a class, by display name.
    pub async fn members(&self, class: &str) -> StoreResult<Vec<Membership>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as::<_, Membership>("SELECT class_id, student, display_name, joined_at FROM memberships WHERE class_id = $1 ORDER BY display_name, student")
                .bind(class).fetch_all(pool).await?)
        })
    }

    /// The classes `student` belongs to, each with the membership, in the order joined.
    pub async fn student_classes(&self, student: &str) -> StoreResult<Vec<(Class, Membership)>> {
        let query = format!(
            "SELECT {CLASS_COLUMNS}, m.display_name AS member_name, m.joined_at FROM memberships AS m \
             JOIN classes AS c ON c.id = m.class_id WHERE m.student = $1 ORDER BY m.joined_at, c.id"
        );
        with_pool!(self, |pool| {
            let rows = sqlx::query_as::<_, StoredMembership>(&query)
                .bind(student)
                .fetch_all(pool)
                .await?;
            rows.into_iter()
                .map(|r| {
                    let class = r.class.class()?;
                    let membership = Membership {
                        class: class.id.clone(),
                        student: student.to_string(),
                        display_name: r.member_name,
                        joined_at: r.joined_at,
                    };
                    Ok((class, membership))
                })
                .collect()
        })
    }

    /// The attempts made for a class, oldest first, each with its verdict; only `student`'s
    /// when given.
    pub async fn class_attempts(
        &self,
        class: &str,
        student: Option<&str>,
    ) -> StoreResult<Vec<ClassAttempt>> {
        with_pool!(self, |pool| {
            Deflated::read_all(sqlx::query_as::<_, Deflated<ClassAttempt>>(
                "SELECT id, student, scenario, scenario_hash, score, max_score, passed, created_at, verdict, verdict_deflate FROM attempts \
                 WHERE class_id = $1 AND ($2 IS NULL OR student = $2) ORDER BY created_at, id")
                .bind(class).bind(student).fetch_all(pool).await?)
        })
    }
}
