//! What LTI keeps in the database: the tool's keys, the platforms and their deployments, the
//! logins in flight, the students of platforms' users (by issuer and `sub`) and the classes of
//! their courses (by issuer, deployment and context). The same queries run on SQLite and
//! PostgreSQL, as in `crate::store`.

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use crate::store::{with_pool, Store, StoreResult};

/// A platform registered with the tool (`pipeline-builder lti platform add`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Platform {
    pub id: String,
    pub issuer: String,
    pub client_id: String,
    pub auth_url: String,
    pub token_url: String,
    pub jwks_url: String,
    pub deployments: Vec<String>,
    /// Origins besides those of the URLs above where the platform's line items and scores
    /// may be (`--service-origin`).
    pub service_origins: Vec<String>,
}

/// A platform's row, without its deployments and service origins.
#[derive(FromRow)]
struct PlatformRow {
    id: String,
    issuer: String,
    client_id: String,
    auth_url: String,
    token_url: String,
    jwks_url: String,
}

impl PlatformRow {
    /// The platform with its values of `deployments` and `origins`, each (platform, value).
    fn platform(self, deployments: &[(String, String)], origins: &[(String, String)]) -> Platform {
        let of = |pairs: &[(String, String)]| -> Vec<String> {
            pairs
                .iter()
                .filter(|(platform, _)| *platform == self.id)
                .map(|(_, value)| value.clone())
                .collect()
        };
        Platform {
            deployments: of(deployments),
            service_origins: of(origins),
            id: self.id,
            issuer: self.issuer,
            client_id: self.client_id,
            auth_url: self.auth_url,
            token_url: self.token_url,
            jwks_url: self.jwks_url,
        }
    }
}

/// One of the tool's signing keys.
#[derive(Clone, Debug, FromRow)]
pub struct ToolKey {
    pub kid: String,
    pub private_pem: String,
    pub n: String,
    pub e: String,
    pub created_at: DateTime<Utc>,
    pub retired_at: Option<DateTime<Utc>>,
}

/// A login a platform started, as the launch finds it by its state.
#[derive(Clone, Debug, FromRow)]
pub struct Login {
    pub nonce: String,
    pub platform: String,
    pub created_at: DateTime<Utc>,
    /// The sha256 of the secret of the cookie that the login set in its browser; `None` for a
    /// login over plain HTTP, which set none.
    pub browser_hash: Option<String>,
}

impl Store {
    // Platforms.

    /// Registers a platform with its deployments; `Ok(false)` when one with this issuer and
    /// client id is registered already.
    pub async fn add_lti_platform(&self, p: &Platform) -> StoreResult<bool> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            let added = sqlx::query(
                "INSERT INTO lti_platforms (id, issuer, client_id, auth_url, token_url, jwks_url, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (issuer, client_id) DO NOTHING")
                .bind(&p.id).bind(&p.issuer).bind(&p.client_id).bind(&p.auth_url)
                .bind(&p.token_url).bind(&p.jwks_url).bind(now)
                .execute(&mut *tx).await?.rows_affected();
            if added == 0 {
                return Ok(false);
            }
            for d in &p.deployments {
                sqlx::query("INSERT INTO lti_deployments (platform, deployment_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                    .bind(&p.id).bind(d).execute(&mut *tx).await?;
            }
            for o in &p.service_origins {
                sqlx::query("INSERT INTO lti_service_origins (platform, origin) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                    .bind(&p.id).bind(o).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Every registered platform, by issuer and client id.
    pub async fn lti_platforms(&self) -> StoreResult<Vec<Platform>> {
        with_pool!(self, |pool| {
            let rows = sqlx::query_as::<_, PlatformRow>(
                "SELECT id, issuer, client_id, auth_url, token_url, jwks_url FROM lti_platforms ORDER BY issuer, client_id")
                .fetch_all(pool).await?;
            let deployments: Vec<(String, String)> = sqlx::query_as(
                "SELECT platform, deployment_id FROM lti_deployments ORDER BY deployment_id",
            )
            .fetch_all(pool)
            .await?;
            let origins: Vec<(String, String)> =
                sqlx::query_as("SELECT platform, origin FROM lti_service_origins ORDER BY origin")
                    .fetch_all(pool)
                    .await?;
            Ok(rows
                .into_iter()
                .map(|r| r.platform(&deployments, &origins))
                .collect())
        })
    }

    /// Removes a platform by id, with its deployments and logins (the students and their
    /// attempts stay). The links of its issuer's users and courses go with the issuer's last
    /// registration. `Ok(false)` when there is none.
    pub async fn remove_lti_platform(&self, id: &str) -> StoreResult<bool> {
        let writer = self.writer().await;
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            let issuer: Option<String> =
                sqlx::query_scalar("SELECT issuer FROM lti_platforms WHERE id = $1")
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await?;
            let Some(issuer) = issuer else {
                tx.rollback().await?;
                return Ok(false);
            };
            for table in [
                "lti_deployments",
                "lti_logins",
                "lti_service_origins",
                "lti_users",
                "lti_contexts",
            ] {
                sqlx::query(&format!("DELETE FROM {table} WHERE platform = $1"))
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            sqlx::query("DELETE FROM lti_platforms WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            let others: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM lti_platforms WHERE issuer = $1")
                    .bind(&issuer)
                    .fetch_one(&mut *tx)
                    .await?;
            if others == 0 {
                for table in ["lti_identities", "lti_courses"] {
                    sqlx::query(&format!("DELETE FROM {table} WHERE issuer = $1"))
                        .bind(&issuer)
                        .execute(&mut *tx)
                        .await?;
                }
            }
            tx.commit().await?;
            Ok(true)
        })
    }

    // Keys.

    pub async fn add_lti_key(&self, key: &ToolKey) -> StoreResult<()> {
        let writer = self.writer().await;
        with_pool!(writer, |pool| {
            sqlx::query(
            "INSERT INTO lti_keys (kid, private_pem, n, e, created_at, retired_at) VALUES ($1, $2, $3, $4, $5, NULL)")
            .bind(&key.kid).bind(&key.private_pem).bind(&key.n).bind(&key.e).bind(key.created_at)
            .execute(pool).await.map(|_| ())
        })
    }

    /// Retires every key but `keep`.
    pub async fn retire_lti_keys_except(&self, keep: &str) -> StoreResult<u64> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| sqlx::query(
            "UPDATE lti_keys SET retired_at = $2 WHERE kid <> $1 AND retired_at IS NULL"
        )
        .bind(keep)
        .bind(now)
        .execute(pool)
        .await
        .map(|r| r.rows_affected()))
    }

    /// The keys not retired before `since`, newest first.
    pub async fn lti_keys(&self, since: DateTime<Utc>) -> StoreResult<Vec<ToolKey>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as::<_, ToolKey>(
                "SELECT kid, private_pem, n, e, created_at, retired_at FROM lti_keys \
                 WHERE retired_at IS NULL OR retired_at > $1 ORDER BY created_at DESC, kid",
            )
            .bind(since)
            .fetch_all(pool)
            .await?)
        })
    }

    // Logins.

    /// Keeps a login in flight: `browser_hash` is the sha256 of the secret of the cookie the
    /// login sets in its browser, if it sets one.
    pub async fn start_lti_login(
        &self,
        state: &str,
        nonce: &str,
        platform: &str,
        browser_hash: Option<&str>,
    ) -> StoreResult<()> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            sqlx::query(
            "INSERT INTO lti_logins (state, nonce, platform, created_at, used_at, browser_hash) VALUES ($1, $2, $3, $4, NULL, $5)")
            .bind(state).bind(nonce).bind(platform).bind(now).bind(browser_hash).execute(pool).await.map(|_| ())
        })
    }

    /// The login started with `state`, if it was never used.
    pub async fn lti_login(&self, state: &str) -> StoreResult<Option<Login>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as::<_, Login>("SELECT nonce, platform, created_at, browser_hash FROM lti_logins WHERE state = $1 AND used_at IS NULL")
                .bind(state).fetch_optional(pool).await?)
        })
    }

    /// Spends the login of `state`: true for the one launch that does it first.
    pub async fn use_lti_login(&self, state: &str) -> StoreResult<bool> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| sqlx::query(
            "UPDATE lti_logins SET used_at = $2 WHERE state = $1 AND used_at IS NULL"
        )
        .bind(state)
        .bind(now)
        .execute(pool)
        .await
        .map(|r| r.rows_affected() == 1))
    }

    // Users.

    /// The student a platform's user is, if they launched before: a user is their issuer's
    /// `sub`, whichever registration of the issuer they came through.
    pub async fn lti_student(&self, issuer: &str, sub: &str) -> StoreResult<Option<String>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_scalar(
                "SELECT u.student FROM lti_identities AS u JOIN students AS s ON s.id = u.student \
                 WHERE u.issuer = $1 AND u.sub = $2",
            )
            .bind(issuer)
            .bind(sub)
            .fetch_optional(pool)
            .await?)
        })
    }

    /// Links a platform's user to `student`, unless they are linked to a student who still
    /// exists: of two first launches at once, the link made first wins. Answers the student
    /// the user is.
    pub async fn link_lti_user(
        &self,
        issuer: &str,
        sub: &str,
        student: &str,
    ) -> StoreResult<String> {
        {
            let writer = self.writer().await;
            with_pool!(writer, |pool| {
                sqlx::query(
                "INSERT INTO lti_identities (issuer, sub, student) VALUES ($1, $2, $3) \
                 ON CONFLICT (issuer, sub) DO UPDATE SET student = excluded.student \
                 WHERE NOT EXISTS (SELECT 1 FROM students WHERE students.id = lti_identities.student)")
                .bind(issuer).bind(sub).bind(student).execute(pool).await.map(|_| ())
            })?;
        }
        Ok(self
            .lti_student(issuer, sub)
            .await?
            .unwrap_or_else(|| student.to_string()))
    }

    /// A new student for a platform's user, without a session: a launch that cannot sign its
    /// browser in still knows who launched.
    pub async fn add_lti_student(&self, id: &str) -> StoreResult<()> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            sqlx::query(
            "INSERT INTO students (id, display_name, origin, created_at, legacy_cookie) VALUES ($1, NULL, 'session', $2, FALSE)")
            .bind(id).bind(now).execute(pool).await.map(|_| ())
        })
    }

    /// The display name of student `id`, if it has one.
    pub async fn lti_student_name(&self, id: &str) -> StoreResult<Option<String>> {
        with_pool!(self, |pool| {
            let name: Option<Option<String>> =
                sqlx::query_scalar("SELECT display_name FROM students WHERE id = $1")
                    .bind(id)
                    .fetch_optional(pool)
                    .await?;
            Ok(name.flatten())
        })
    }

    /// True when student `id` holds anything of a person's: an attempt, a draft, a class
    /// joined, a learning platform's user, or a display name. A session of such a student is
    /// never replaced by another student's.
    pub async fn holds_work(&self, id: &str) -> StoreResult<bool> {
        with_pool!(self, |pool| {
            let found: Option<i32> = sqlx::query_scalar(
                "SELECT 1 FROM students WHERE id = $1 AND (display_name IS NOT NULL \
                 OR EXISTS (SELECT 1 FROM attempts WHERE attempts.student = $1) \
                 OR EXISTS (SELECT 1 FROM drafts WHERE drafts.student = $1) \
                 OR EXISTS (SELECT 1 FROM memberships WHERE memberships.student = $1) \
                 OR EXISTS (SELECT 1 FROM lti_identities WHERE lti_identities.student = $1))",
            )
            .bind(id)
            .fetch_optional(pool)
            .await?;
            Ok(found.is_some())
        })
    }

    /// A new session of an existing student: `secret_hash` is the sha256 of the cookie's secret.
    pub async fn add_session(&self, student: &str, secret_hash: &str) -> StoreResult<()> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| sqlx::query(
            "INSERT INTO sessions (secret_hash, student, created_at) VALUES ($1, $2, $3)"
        )
        .bind(secret_hash)
        .bind(student)
        .bind(now)
        .execute(pool)
        .await
        .map(|_| ()))
    }
}

impl Store {
    // Handoffs out of a frame.

    pub async fn add_lti_handoff(
        &self,
        code_hash: &str,
        student: &str,
        target: &str,
    ) -> StoreResult<()> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            sqlx::query(
            "INSERT INTO lti_handoffs (code_hash, student, target, created_at, used_at) VALUES ($1, $2, $3, $4, NULL)")
            .bind(code_hash).bind(student).bind(target).bind(now).execute(pool).await.map(|_| ())
        })
    }

    /// The student and target of the handoff whose code hashes to `code_hash`, if it is
    /// unused and was made after `since`; spends nothing.
    pub async fn lti_handoff(
        &self,
        code_hash: &str,
        since: DateTime<Utc>,
    ) -> StoreResult<Option<(String, String)>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_as(
                "SELECT student, target FROM lti_handoffs WHERE code_hash = $1 AND used_at IS NULL AND created_at > $2")
                .bind(code_hash).bind(since).fetch_optional(pool).await?)
        })
    }

    /// Spends the handoff whose code hashes to `code_hash` if it is unused and was made after
    /// `since`: its student and target, once.
    pub async fn use_lti_handoff(
        &self,
        code_hash: &str,
        since: DateTime<Utc>,
    ) -> StoreResult<Option<(String, String)>> {
        let writer = self.writer().await;
        let now = Utc::now();
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            let handoff: Option<(String, String)> = sqlx::query_as(
                "SELECT student, target FROM lti_handoffs WHERE code_hash = $1 AND used_at IS NULL AND created_at > $2")
                .bind(code_hash).bind(since).fetch_optional(&mut *tx).await?;
            let Some(handoff) = handoff else {
                tx.rollback().await?;
                return Ok(None);
            };
            let spent = sqlx::query(
                "UPDATE lti_handoffs SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL",
            )
            .bind(code_hash)
            .bind(now)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if spent != 1 {
                tx.rollback().await?;
                return Ok(None);
            }
            tx.commit().await?;
            Ok(Some(handoff))
        })
    }
}

impl Store {
    // Courses.

    /// The class of a platform's course, if a launch from it made one: a course is its
    /// issuer's context within a deployment, whichever registration it came through.
    pub async fn lti_course_class(
        &self,
        issuer: &str,
        deployment: &str,
        context: &str,
    ) -> StoreResult<Option<String>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_scalar("SELECT class_id FROM lti_courses WHERE issuer = $1 AND deployment_id = $2 AND context_id = $3")
                .bind(issuer).bind(deployment).bind(context).fetch_optional(pool).await?)
        })
    }

    /// Links a platform's course to a class; the link made first wins (two first launches
    /// at once both find the same class afterwards).
    pub async fn link_lti_course(
        &self,
        issuer: &str,
        deployment: &str,
        context: &str,
        class: &str,
    ) -> StoreResult<String> {
        {
            let writer = self.writer().await;
            with_pool!(writer, |pool| {
                sqlx::query(
                "INSERT INTO lti_courses (issuer, deployment_id, context_id, class_id) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING")
                .bind(issuer).bind(deployment).bind(context).bind(class).execute(pool).await.map(|_| ())
            })?;
        }
        Ok(self
            .lti_course_class(issuer, deployment, context)
            .await?
            .unwrap_or_else(|| class.to_string()))
    }
}

impl Store {
    /// Removes the logins and handoff codes made before `cutoff`, used or not: past their
    /// ten minutes they are refused anyway. Answers how many rows went.
    pub async fn sweep_lti_logins(&self, cutoff: DateTime<Utc>) -> StoreResult<u64> {
        let writer = self.writer().await;
        with_pool!(writer, |pool| {
            let mut tx = pool.begin().await?;
            let logins = sqlx::query("DELETE FROM lti_logins WHERE created_at < $1")
                .bind(cutoff)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            let handoffs = sqlx::query("DELETE FROM lti_handoffs WHERE created_at < $1")
                .bind(cutoff)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            Ok(logins + handoffs)
        })
    }
}
