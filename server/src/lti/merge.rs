//! Moves LTI users and courses from the keys of old to the standard's. A platform's user was
//! keyed by registration (issuer and client id) and `sub`, a course by registration and
//! context id; now a user is (issuer, `sub`) and a course (issuer, deployment, context id).
//! A platform that gives each activity of a course its own client id (Open edX does by
//! default) had made one person a student per activity and one course a class per activity:
//! those are merged here into the student and the class made first, every attempt kept.
//!
//! It runs when the store connects, after the migrations (`Store::connect`), in one
//! transaction: it reads the old tables (`lti_users`, `lti_contexts`), merges, writes the new
//! ones (`lti_identities`, `lti_courses`) and empties the old ones. With the old tables empty
//! it does nothing, so it runs at every start, does its work once, and a start that fails
//! half-way leaves the old rows for the next one. It takes the pool itself, not the store,
//! because the store runs it while connecting.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

type StoreResult<T> = Result<T, sqlx::Error>;

/// The database the merge runs on.
pub enum Db<'a> {
    Sqlite(&'a sqlx::SqlitePool),
    Postgres(&'a sqlx::PgPool),
}

/// Runs `$body` with `$pool` bound to whichever pool `$db` holds, as `crate::store`'s
/// `with_pool!` does for the store.
macro_rules! on_pool {
    ($db:expr, |$pool:ident| $body:expr) => {
        match $db {
            Db::Sqlite($pool) => $body,
            Db::Postgres($pool) => $body,
        }
    };
}

/// What moving one student into another changes, in order, in the merge's transaction: each
/// statement gets the student merged away as `$1` and the one that stays as `$2` (and names
/// both, as binding needs). Every table
/// that holds a student id has its statements here (a test compares it with the schema's
/// foreign keys); of two rows that would collide, the newer draft and the staying student's
/// other rows are kept.
pub const STUDENT_MERGE: &[&str] = &[
    "DELETE FROM drafts WHERE student = $2 AND EXISTS (SELECT 1 FROM drafts AS l \
     WHERE l.student = $1 AND l.scenario = drafts.scenario AND l.updated_at > drafts.updated_at)",
    "DELETE FROM drafts WHERE student = $1 AND EXISTS (SELECT 1 FROM drafts AS w \
     WHERE w.student = $2 AND w.scenario = drafts.scenario)",
    "UPDATE drafts SET student = $2 WHERE student = $1",
    "UPDATE attempts SET student = $2 WHERE student = $1",
    "UPDATE sessions SET student = $2 WHERE student = $1",
    "DELETE FROM memberships WHERE student = $1 AND class_id IN \
     (SELECT w.class_id FROM memberships AS w WHERE w.student = $2)",
    "UPDATE memberships SET student = $2 WHERE student = $1",
    "DELETE FROM lti_grade_targets WHERE student = $1 AND EXISTS (SELECT 1 FROM lti_grade_targets AS w \
     WHERE w.student = $2 AND w.scenario = lti_grade_targets.scenario AND w.lineitem = lti_grade_targets.lineitem)",
    "UPDATE lti_grade_targets SET student = $2 WHERE student = $1",
    // The best attempt may now be one the other student made: every score is sent again.
    "UPDATE lti_grade_targets SET sent_through = NULL WHERE student IN ($1, $2)",
    "UPDATE lti_handoffs SET student = $2 WHERE student = $1",
    "DELETE FROM idempotency_keys WHERE caller = 'student:' || $1 AND key IN \
     (SELECT w.key FROM idempotency_keys AS w WHERE w.caller = 'student:' || $2)",
    "UPDATE idempotency_keys SET caller = 'student:' || $2 WHERE caller = 'student:' || $1",
    "UPDATE students SET display_name = (SELECT l.display_name FROM students AS l WHERE l.id = $1) \
     WHERE id = $2 AND display_name IS NULL",
    "UPDATE lti_identities SET student = $2 WHERE student = $1",
    // A score set by hand for both at once keeps the one of the student that stays.
    "DELETE FROM score_overrides WHERE student = $1 AND EXISTS (SELECT 1 FROM score_overrides AS w \
     WHERE w.student = $2 AND w.class_id = score_overrides.class_id AND w.scenario = score_overrides.scenario)",
    "UPDATE score_overrides SET student = $2 WHERE student = $1",
    "DELETE FROM extensions WHERE student = $1 AND EXISTS (SELECT 1 FROM extensions AS w \
     WHERE w.student = $2 AND w.class_id = extensions.class_id AND w.scenario = extensions.scenario)",
    "UPDATE extensions SET student = $2 WHERE student = $1",
    "UPDATE staff_accounts SET student = $2 WHERE student = $1 \
     AND NOT EXISTS (SELECT 1 FROM staff_accounts AS w WHERE w.student = $2)",
    "DELETE FROM students WHERE id = $1 AND id <> $2",
];

/// What moving one class into another changes, in order: `$1` the class merged away, `$2` the
/// one that stays. A student in both stays a member once, under the name given to the class
/// that stays.
pub const CLASS_MERGE: &[&str] = &[
    "DELETE FROM memberships WHERE class_id = $1 AND student IN \
     (SELECT w.student FROM memberships AS w WHERE w.class_id = $2)",
    "UPDATE memberships SET class_id = $2 WHERE class_id = $1",
    "UPDATE attempts SET class_id = $2 WHERE class_id = $1",
    "UPDATE lti_courses SET class_id = $2 WHERE class_id = $1",
    // Staff with a role in both keep the role of the class that stays.
    "DELETE FROM class_staff WHERE class_id = $1 AND account IN \
     (SELECT w.account FROM class_staff AS w WHERE w.class_id = $2)",
    "UPDATE class_staff SET class_id = $2 WHERE class_id = $1",
    "DELETE FROM score_overrides WHERE class_id = $1 AND EXISTS (SELECT 1 FROM score_overrides AS w \
     WHERE w.class_id = $2 AND w.student = score_overrides.student AND w.scenario = score_overrides.scenario)",
    "UPDATE score_overrides SET class_id = $2 WHERE class_id = $1",
    "DELETE FROM class_deadlines WHERE class_id = $1 AND scenario IN \
     (SELECT w.scenario FROM class_deadlines AS w WHERE w.class_id = $2)",
    "UPDATE class_deadlines SET class_id = $2 WHERE class_id = $1",
    "DELETE FROM extensions WHERE class_id = $1 AND EXISTS (SELECT 1 FROM extensions AS w \
     WHERE w.class_id = $2 AND w.student = extensions.student AND w.scenario = extensions.scenario)",
    "UPDATE extensions SET class_id = $2 WHERE class_id = $1",
    "UPDATE audit_log SET class_id = $2 WHERE class_id = $1",
    "DELETE FROM classes WHERE id = $1 AND id <> $2",
];

/// What one merge did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Merged {
    /// Rows of the old tables moved to the new ones.
    pub moved: usize,
    /// Students merged into another.
    pub students: usize,
    /// Classes merged into another.
    pub classes: usize,
}

/// One row of a key and the id it names, with when that id was made.
struct Keyed<K> {
    key: K,
    id: String,
    made: DateTime<Utc>,
}

/// For every id, the id it stays as: ids that share a key, directly or through others, are
/// one group, and a group stays as the id made first (the smaller id on a tie).
fn survivors<K: Ord>(rows: &[Keyed<K>]) -> BTreeMap<String, String> {
    fn root(parent: &BTreeMap<String, String>, id: &str) -> String {
        let mut at = id.to_string();
        while let Some(up) = parent.get(&at).filter(|up| **up != at) {
            at = up.clone();
        }
        at
    }
    let mut parent: BTreeMap<String, String> = BTreeMap::new();
    let mut first_of_key: BTreeMap<&K, &str> = BTreeMap::new();
    let mut made: BTreeMap<&str, DateTime<Utc>> = BTreeMap::new();
    for row in rows {
        parent
            .entry(row.id.clone())
            .or_insert_with(|| row.id.clone());
        made.insert(&row.id, row.made);
        let first = *first_of_key.entry(&row.key).or_insert(&row.id);
        let (a, b) = (root(&parent, first), root(&parent, &row.id));
        if a != b {
            parent.insert(b, a);
        }
    }
    let mut best: BTreeMap<String, String> = BTreeMap::new();
    for id in parent.keys() {
        let r = root(&parent, id);
        let rank = |x: &str| (made.get(x).copied(), x.to_string());
        match best.get(&r) {
            Some(b) if rank(b) <= rank(id) => {}
            _ => {
                best.insert(r, id.clone());
            }
        }
    }
    parent
        .keys()
        .map(|id| (id.clone(), best[&root(&parent, id)].clone()))
        .collect()
}

/// The old tables' users: issuer, sub, student and when the student was made.
const OLD_USERS: &str =
    "SELECT p.issuer, u.sub, u.student AS id, s.created_at FROM lti_users AS u \
     JOIN lti_platforms AS p ON p.id = u.platform JOIN students AS s ON s.id = u.student \
     UNION ALL SELECT i.issuer, i.sub, i.student AS id, s.created_at FROM lti_identities AS i \
     JOIN students AS s ON s.id = i.student";

/// The old tables' courses: issuer, deployment, context, class and when the class was made.
/// An old course was the class of every deployment of its registration.
const OLD_COURSES: &str = "SELECT p.issuer, d.deployment_id, c.context_id, c.class_id AS id, k.created_at FROM lti_contexts AS c \
     JOIN lti_platforms AS p ON p.id = c.platform JOIN lti_deployments AS d ON d.platform = c.platform \
     JOIN classes AS k ON k.id = c.class_id \
     UNION ALL SELECT o.issuer, o.deployment_id, o.context_id, o.class_id AS id, k.created_at FROM lti_courses AS o \
     JOIN classes AS k ON k.id = o.class_id";

/// Moves the old tables' rows to the new keys, merging what the old keys had split; nothing
/// when the old tables are empty.
pub async fn merge_old_keys(db: Db<'_>) -> StoreResult<Merged> {
    let postgres = matches!(db, Db::Postgres(_));
    let merged = on_pool!(db, |pool| {
        let mut tx = pool.begin().await?;
        if postgres {
            // Two servers starting at once on one database: the second waits, then finds
            // the old tables empty.
            sqlx::query("SELECT pg_advisory_xact_lock(2026120202)")
                .execute(&mut *tx)
                .await?;
        }
        let old: i64 = sqlx::query_scalar(
            "SELECT (SELECT COUNT(*) FROM lti_users) + (SELECT COUNT(*) FROM lti_contexts)",
        )
        .fetch_one(&mut *tx)
        .await?;
        if old == 0 {
            tx.rollback().await?;
            return Ok(Merged::default());
        }
        let users: Vec<(String, String, String, DateTime<Utc>)> =
            sqlx::query_as(OLD_USERS).fetch_all(&mut *tx).await?;
        let users: Vec<_> = users
            .into_iter()
            .map(|(issuer, sub, id, made)| Keyed {
                key: (issuer, sub),
                id,
                made,
            })
            .collect();
        type Course = (String, String, String, String, DateTime<Utc>);
        let courses: Vec<Course> = sqlx::query_as(OLD_COURSES).fetch_all(&mut *tx).await?;
        let courses: Vec<_> = courses
            .into_iter()
            .map(|(issuer, deployment, context, id, made)| Keyed {
                key: (issuer, deployment, context),
                id,
                made,
            })
            .collect();
        let student_of = survivors(&users);
        let class_of = survivors(&courses);
        let mut done = Merged {
            moved: old as usize,
            ..Merged::default()
        };
        for (merges, statements, merged) in [
            (&student_of, STUDENT_MERGE, &mut done.students),
            (&class_of, CLASS_MERGE, &mut done.classes),
        ] {
            for (gone, stays) in merges.iter().filter(|(a, b)| a != b) {
                for statement in statements {
                    sqlx::query(statement)
                        .bind(gone)
                        .bind(stays)
                        .execute(&mut *tx)
                        .await?;
                }
                *merged += 1;
            }
        }
        for row in &users {
            sqlx::query(
                "INSERT INTO lti_identities (issuer, sub, student) VALUES ($1, $2, $3) \
                 ON CONFLICT (issuer, sub) DO UPDATE SET student = excluded.student",
            )
            .bind(&row.key.0)
            .bind(&row.key.1)
            .bind(&student_of[&row.id])
            .execute(&mut *tx)
            .await?;
        }
        for row in &courses {
            sqlx::query(
                "INSERT INTO lti_courses (issuer, deployment_id, context_id, class_id) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (issuer, deployment_id, context_id) DO UPDATE SET class_id = excluded.class_id")
                .bind(&row.key.0).bind(&row.key.1).bind(&row.key.2).bind(&class_of[&row.id])
                .execute(&mut *tx).await?;
        }
        sqlx::query("DELETE FROM lti_users")
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM lti_contexts")
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        done
    });
    if merged != Merged::default() {
        tracing::info!(
            moved = merged.moved,
            students = merged.students,
            classes = merged.classes,
            "learning platforms' users and courses moved to their issuer's keys"
        );
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, id: &str, minute: i64) -> Keyed<String> {
        Keyed {
            key: key.to_string(),
            id: id.to_string(),
            made: DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::minutes(minute),
        }
    }

    #[test]
    fn every_statement_of_a_merge_names_both_ids() {
        for statement in STUDENT_MERGE.iter().chain(CLASS_MERGE) {
            assert!(
                statement.contains("$1") && statement.contains("$2"),
                "{statement}"
            );
        }
    }

    #[test]
    fn ids_that_share_a_key_stay_as_the_one_made_first_even_through_other_keys() {
        let rows = [
            row("a", "late", 5),
            row("a", "early", 1),
            row("b", "late", 5),
            row("b", "other", 3),
            row("c", "alone", 9),
        ];
        let of = survivors(&rows);
        assert_eq!(of["late"], "early");
        assert_eq!(of["other"], "early", "joined to a through b");
        assert_eq!(of["early"], "early");
        assert_eq!(of["alone"], "alone");
    }
}
