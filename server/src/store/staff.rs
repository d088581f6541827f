//! Staff: named accounts, their role in each class, the tokens that act for them, and the
//! audit log of every change staff make to a class.

pub use shared::wire::classes::StaffRole;

use crate::store::db::{with_pool, Store};
use crate::store::errors::{unknown_stored, StoreResult};
use chrono::{DateTime, Utc};
use sqlx::FromRow;

/// A token that is not revoked, with what it may do.
#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct ActiveToken {
    pub name: String,
    /// The sha256 of the token, in hex.
    pub token_hash: String,
    /// The staff account it acts for; `None` for a server administrator's token.
    pub account: Option<String>,
    /// True when it may only read.
    pub read_only: bool,
}

/// One account's role in a class, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaffGrantRow {
    pub account: String,
    pub role: StaffRole,
    pub granted_by: String,
    pub granted_at: DateTime<Utc>,
}

#[derive(FromRow)]
struct StoredGrant {
    account: String,
    role: String,
    granted_by: String,
    granted_at: DateTime<Utc>,
}

fn role_of_stored(role: &str) -> StoreResult<StaffRole> {
    StaffRole::parse(role).ok_or_else(|| unknown_stored(format!("a staff role {role:?}")))
}

/// One line of the audit log.
#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct AuditRow {
    pub at: DateTime<Utc>,
    pub actor: String,
    pub action: String,
    pub detail: String,
}

/// What removing a role came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removed {
    Removed,
    /// The account had no role in the class.
    NotStaff,
    /// The account is the class's last owner: a class keeps one.
    LastOwner,
}

impl Store {
    /// Makes a staff account; `Ok(false)` when the name is taken.
    pub async fn create_account(&self, name: &str) -> StoreResult<bool> {
        let writer = self.writer().await;
        let now = Utc::now();
        let made = with_pool!(writer, |pool| {
            sqlx::query(
            "INSERT INTO staff_accounts (name, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING")
            .bind(name).bind(now).execute(pool).await?.rows_affected()
        });
        Ok(made == 1)
    }

    /// Every staff account's name, with how many classes it has a role in.
    pub async fn list_accounts(&self) -> StoreResult<Vec<(String, i64)>> {
        with_pool!(self, |pool| Ok(sqlx::query_as(
            "SELECT a.name, (SELECT COUNT(*) FROM class_staff AS s WHERE s.account = a.name) \
             FROM staff_accounts AS a ORDER BY a.name"
        )
        .fetch_all(pool)
        .await?))
    }

    pub async fn account_exists(&self, name: &str) -> StoreResult<bool> {
        with_pool!(self, |pool| Ok(sqlx::query_scalar::<_, String>(
            "SELECT name FROM staff_accounts WHERE name = $1"
        )
        .bind(name)
        .fetch_optional(pool)
        .await?
        .is_some()))
    }

    /// Stores a token's hash under `name`, acting for `account` (`None`: an administrator's
    /// token) and limited to reading when `read_only`. A revoked name may be used again; an
    /// active one may not (`Ok(false)`).
    pub async fn create_token_for(
        &self,
        name: &str,
        token_hash: &str,
        account: Option<&str>,
        read_only: bool,
    ) -> StoreResult<bool> {
        let writer = self.writer().await;
        let now = Utc::now();
        let done = with_pool!(writer, |pool| {
            sqlx::query(
            "INSERT INTO grader_tokens (name, token_hash, created_at, revoked_at, account, read_only) \
             VALUES ($1, $2, $3, NULL, $4, $5) \
             ON CONFLICT (name) DO UPDATE SET token_hash = excluded.token_hash, created_at = excluded.created_at, \
             revoked_at = NULL, account = excluded.account, read_only = excluded.read_only \
             WHERE grader_tokens.revoked_at IS NOT NULL")
            .bind(name).bind(token_hash).bind(now).bind(account).bind(read_only)
            .execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// The tokens that are not revoked, with the account each acts for.
    pub async fn active_grants(&self) -> StoreResult<Vec<ActiveToken>> {
        with_pool!(self, |pool| Ok(sqlx::query_as(
            "SELECT name, token_hash, account, read_only FROM grader_tokens \
             WHERE revoked_at IS NULL ORDER BY name"
        )
        .fetch_all(pool)
        .await?))
    }

    /// The role of `account` in `class`, if it has one.
    pub async fn staff_role(&self, class: &str, account: &str) -> StoreResult<Option<StaffRole>> {
        let role: Option<String> = with_pool!(self, |pool| sqlx::query_scalar(
            "SELECT role FROM class_staff WHERE class_id = $1 AND account = $2"
        )
        .bind(class)
        .bind(account)
        .fetch_optional(pool)
        .await?);
        role.as_deref().map(role_of_stored).transpose()
    }

    /// The staff of a class, owners first, then by name.
    pub async fn class_staff(&self, class: &str) -> StoreResult<Vec<StaffGrantRow>> {
        let rows: Vec<StoredGrant> = with_pool!(self, |pool| {
            sqlx::query_as(
            "SELECT account, role, granted_by, granted_at FROM class_staff WHERE class_id = $1 \
             ORDER BY CASE role WHEN 'owner' THEN 0 WHEN 'ta' THEN 1 ELSE 2 END, account")
            .bind(class).fetch_all(pool).await?
        });
        rows.into_iter()
            .map(|r| {
                Ok(StaffGrantRow {
                    role: role_of_stored(&r.role)?,
                    account: r.account,
                    granted_by: r.granted_by,
                    granted_at: r.granted_at,
                })
            })
            .collect()
    }

    /// Gives `account` the role `role` in `class` (replacing the one it had), by `actor`,
    /// and writes it in the audit log, in one transaction. Taking the owner role from the
    /// last owner is refused (`Ok(false)`).
    pub async fn grant_staff(
        &self,
        class: &str,
        account: &str,
        role: StaffRole,
        actor: &str,
    ) -> StoreResult<bool> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            if role != StaffRole::Owner {
                let owners: Vec<String> = sqlx::query_scalar(
                    "SELECT account FROM class_staff WHERE class_id = $1 AND role = 'owner'",
                )
                .bind(class)
                .fetch_all(&mut *tx)
                .await?;
                if owners == [account] {
                    tx.rollback().await?;
                    return Ok(false);
                }
            }
            sqlx::query(
                "INSERT INTO class_staff (class_id, account, role, granted_by, granted_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (class_id, account) DO UPDATE SET \
                 role = excluded.role, granted_by = excluded.granted_by, granted_at = excluded.granted_at")
                .bind(class).bind(account).bind(role.as_str()).bind(actor).bind(now)
                .execute(&mut *tx).await?;
            sqlx::query(
                "INSERT INTO audit_log (at, actor, class_id, action, detail) VALUES ($1, $2, $3, 'staff_granted', $4)")
                .bind(now).bind(actor).bind(class)
                .bind(format!("gave {account} the role {}", role.as_str()))
                .execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Takes every role of `account` in `class` away, by `actor`, and writes it in the audit
    /// log. The last owner keeps the role.
    pub async fn remove_staff(
        &self,
        class: &str,
        account: &str,
        actor: &str,
    ) -> StoreResult<Removed> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            let roles: Vec<(String, String)> =
                sqlx::query_as("SELECT account, role FROM class_staff WHERE class_id = $1")
                    .bind(class)
                    .fetch_all(&mut *tx)
                    .await?;
            let Some((_, role)) = roles.iter().find(|(a, _)| a == account) else {
                tx.rollback().await?;
                return Ok(Removed::NotStaff);
            };
            let owners = roles.iter().filter(|(_, r)| r == "owner").count();
            if role == "owner" && owners == 1 {
                tx.rollback().await?;
                return Ok(Removed::LastOwner);
            }
            sqlx::query("DELETE FROM class_staff WHERE class_id = $1 AND account = $2")
                .bind(class)
                .bind(account)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO audit_log (at, actor, class_id, action, detail) VALUES ($1, $2, $3, 'staff_removed', $4)")
                .bind(now).bind(actor).bind(class).bind(format!("took {account}'s role {role} away"))
                .execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(Removed::Removed)
        })
    }

    /// Writes one line of the audit log.
    pub async fn audit(
        &self,
        actor: &str,
        class: Option<&str>,
        action: &str,
        detail: &str,
    ) -> StoreResult<()> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            sqlx::query(
            "INSERT INTO audit_log (at, actor, class_id, action, detail) VALUES ($1, $2, $3, $4, $5)")
            .bind(now).bind(actor).bind(class).bind(action).bind(detail)
            .execute(pool).await.map(|_| ())?
        });
        Ok(())
    }

    /// The staff account a student row signs in as (a person launched by a learning
    /// platform with a staff role), if any.
    pub async fn account_of_student(&self, student: &str) -> StoreResult<Option<String>> {
        with_pool!(self, |pool| Ok(sqlx::query_scalar(
            "SELECT name FROM staff_accounts WHERE student = $1"
        )
        .bind(student)
        .fetch_optional(pool)
        .await?))
    }

    /// The role of a person a learning platform launched into `class` with a staff role:
    /// their account (`lti-` and their student id, made at their first such launch) keeps
    /// the role it has; without one, it becomes the owner when `wanted` is owner and the
    /// class has none yet, else a TA. The role given is written in the audit log, by `lti`.
    pub async fn launched_staff(
        &self,
        student: &str,
        class: &str,
        wanted: StaffRole,
    ) -> StoreResult<(String, StaffRole)> {
        let writer = self.writer().await;
        let now = Utc::now();
        let account = format!("lti-{student}");
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "INSERT INTO staff_accounts (name, created_at, student) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
                .bind(&account).bind(now).bind(student).execute(&mut *tx).await?;
            let had: Option<String> = sqlx::query_scalar(
                "SELECT role FROM class_staff WHERE class_id = $1 AND account = $2",
            )
            .bind(class)
            .bind(&account)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(role) = had {
                tx.rollback().await?;
                return Ok((account, role_of_stored(&role)?));
            }
            let owners: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM class_staff WHERE class_id = $1 AND role = 'owner'",
            )
            .bind(class)
            .fetch_one(&mut *tx)
            .await?;
            let role = if wanted == StaffRole::Owner && owners == 0 {
                StaffRole::Owner
            } else {
                wanted.min(StaffRole::Ta)
            };
            sqlx::query(
                "INSERT INTO class_staff (class_id, account, role, granted_by, granted_at) VALUES ($1, $2, $3, 'lti', $4)")
                .bind(class).bind(&account).bind(role.as_str()).bind(now).execute(&mut *tx).await?;
            sqlx::query(
                "INSERT INTO audit_log (at, actor, class_id, action, detail) VALUES ($1, 'lti', $2, 'staff_granted', $3)")
                .bind(now).bind(class)
                .bind(format!("gave {account} the role {} at their launch from the learning platform", role.as_str()))
                .execute(&mut *tx).await?;
            tx.commit().await?;
            Ok((account, role))
        })
    }

    /// The audit log of a class, oldest first.
    pub async fn class_audit(&self, class: &str) -> StoreResult<Vec<AuditRow>> {
        with_pool!(self, |pool| Ok(sqlx::query_as(
            "SELECT at, actor, action, detail FROM audit_log WHERE class_id = $1 ORDER BY id"
        )
        .bind(class)
        .fetch_all(pool)
        .await?))
    }
}
