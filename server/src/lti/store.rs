//! What LTI keeps in the database: the tool's keys, the platforms and their deployments, the
//! logins in flight, and the students of platforms' users. The same queries run on SQLite and
//! PostgreSQL, as in `crate::store`.

use chrono::{DateTime, Utc};
use sqlx::Row;

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
}

/// One of the tool's signing keys.
#[derive(Clone, Debug)]
pub struct ToolKey {
    pub kid: String,
    pub private_pem: String,
    pub n: String,
    pub e: String,
    pub created_at: DateTime<Utc>,
    pub retired_at: Option<DateTime<Utc>>,
}

/// A login a platform started, as the launch finds it by its state.
#[derive(Clone, Debug)]
pub struct Login {
    pub nonce: String,
    pub platform: String,
    pub created_at: DateTime<Utc>,
}

impl Store {
    // Platforms.

    /// Registers a platform with its deployments; `Ok(false)` when one with this issuer and
    /// client id is registered already.
    pub async fn add_lti_platform(&self, p: &Platform) -> StoreResult<bool> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        with_pool!(self, pool => {
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
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Every registered platform, by issuer and client id.
    pub async fn lti_platforms(&self) -> StoreResult<Vec<Platform>> {
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT id, issuer, client_id, auth_url, token_url, jwks_url FROM lti_platforms ORDER BY issuer, client_id")
                .fetch_all(pool).await?;
            let deployments = sqlx::query("SELECT platform, deployment_id FROM lti_deployments ORDER BY deployment_id")
                .fetch_all(pool).await?;
            rows.iter().map(|r| {
                let id: String = r.try_get("id")?;
                let mut ds = Vec::new();
                for d in &deployments {
                    if d.try_get::<String, _>("platform")? == id {
                        ds.push(d.try_get("deployment_id")?);
                    }
                }
                Ok(Platform {
                    issuer: r.try_get("issuer")?,
                    client_id: r.try_get("client_id")?,
                    auth_url: r.try_get("auth_url")?,
                    token_url: r.try_get("token_url")?,
                    jwks_url: r.try_get("jwks_url")?,
                    deployments: ds,
                    id,
                })
            }).collect()
        })
    }

    /// Removes a platform by id, with its deployments, logins and users' links (the students
    /// and their attempts stay). `Ok(false)` when there is none.
    pub async fn remove_lti_platform(&self, id: &str) -> StoreResult<bool> {
        let _turn = self.write_turn().await;
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            for table in ["lti_deployments", "lti_logins", "lti_users"] {
                sqlx::query(&format!("DELETE FROM {table} WHERE platform = $1"))
                    .bind(id).execute(&mut *tx).await?;
            }
            let removed = sqlx::query("DELETE FROM lti_platforms WHERE id = $1")
                .bind(id).execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            Ok(removed == 1)
        })
    }

    // Keys.

    pub async fn add_lti_key(&self, key: &ToolKey) -> StoreResult<()> {
        let _turn = self.write_turn().await;
        with_pool!(self, pool => sqlx::query(
            "INSERT INTO lti_keys (kid, private_pem, n, e, created_at, retired_at) VALUES ($1, $2, $3, $4, $5, NULL)")
            .bind(&key.kid).bind(&key.private_pem).bind(&key.n).bind(&key.e).bind(key.created_at)
            .execute(pool).await.map(|_| ()))
    }

    /// Retires every key but `keep`.
    pub async fn retire_lti_keys_except(&self, keep: &str) -> StoreResult<u64> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        with_pool!(self, pool => sqlx::query(
            "UPDATE lti_keys SET retired_at = $2 WHERE kid <> $1 AND retired_at IS NULL")
            .bind(keep).bind(now).execute(pool).await.map(|r| r.rows_affected()))
    }

    /// The keys not retired before `since`, newest first.
    pub async fn lti_keys(&self, since: DateTime<Utc>) -> StoreResult<Vec<ToolKey>> {
        with_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT kid, private_pem, n, e, created_at, retired_at FROM lti_keys \
                 WHERE retired_at IS NULL OR retired_at > $1 ORDER BY created_at DESC, kid")
                .bind(since).fetch_all(pool).await?;
            rows.iter().map(|r| Ok(ToolKey {
                kid: r.try_get("kid")?,
                private_pem: r.try_get("private_pem")?,
                n: r.try_get("n")?,
                e: r.try_get("e")?,
                created_at: r.try_get("created_at")?,
                retired_at: r.try_get("retired_at")?,
            })).collect()
        })
    }

    // Logins.

    pub async fn start_lti_login(
        &self,
        state: &str,
        nonce: &str,
        platform: &str,
    ) -> StoreResult<()> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        with_pool!(self, pool => sqlx::query(
            "INSERT INTO lti_logins (state, nonce, platform, created_at, used_at) VALUES ($1, $2, $3, $4, NULL)")
            .bind(state).bind(nonce).bind(platform).bind(now).execute(pool).await.map(|_| ()))
    }

    /// The login started with `state`, if it was never used.
    pub async fn lti_login(&self, state: &str) -> StoreResult<Option<Login>> {
        with_pool!(self, pool => {
            let row = sqlx::query("SELECT nonce, platform, created_at FROM lti_logins WHERE state = $1 AND used_at IS NULL")
                .bind(state).fetch_optional(pool).await?;
            row.map(|r| Ok(Login { nonce: r.try_get("nonce")?, platform: r.try_get("platform")?, created_at: r.try_get("created_at")? })).transpose()
        })
    }

    /// Spends the login of `state`: true for the one launch that does it first.
    pub async fn use_lti_login(&self, state: &str) -> StoreResult<bool> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        with_pool!(self, pool => sqlx::query("UPDATE lti_logins SET used_at = $2 WHERE state = $1 AND used_at IS NULL")
            .bind(state).bind(now).execute(pool).await.map(|r| r.rows_affected() == 1))
    }

    // Users.

    /// The student a platform's user is, if they launched before.
    pub async fn lti_student(&self, platform: &str, sub: &str) -> StoreResult<Option<String>> {
        with_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT u.student FROM lti_users AS u JOIN students AS s ON s.id = u.student \
                 WHERE u.platform = $1 AND u.sub = $2")
                .bind(platform).bind(sub).fetch_optional(pool).await?;
            row.map(|r| r.try_get("student")).transpose()
        })
    }

    /// Links a platform's user to a student (replacing a link to a student that is gone).
    pub async fn link_lti_user(&self, platform: &str, sub: &str, student: &str) -> StoreResult<()> {
        let _turn = self.write_turn().await;
        with_pool!(self, pool => sqlx::query(
            "INSERT INTO lti_users (platform, sub, student) VALUES ($1, $2, $3) \
             ON CONFLICT (platform, sub) DO UPDATE SET student = excluded.student")
            .bind(platform).bind(sub).bind(student).execute(pool).await.map(|_| ()))
    }

    /// A new session of an existing student: `secret_hash` is the sha256 of the cookie's secret.
    pub async fn add_session(&self, student: &str, secret_hash: &str) -> StoreResult<()> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        with_pool!(self, pool => sqlx::query("INSERT INTO sessions (secret_hash, student, created_at) VALUES ($1, $2, $3)")
            .bind(secret_hash).bind(student).bind(now).execute(pool).await.map(|_| ()))
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
        let _turn = self.write_turn().await;
        let now = Utc::now();
        with_pool!(self, pool => sqlx::query(
            "INSERT INTO lti_handoffs (code_hash, student, target, created_at, used_at) VALUES ($1, $2, $3, $4, NULL)")
            .bind(code_hash).bind(student).bind(target).bind(now).execute(pool).await.map(|_| ()))
    }

    /// Spends the handoff whose code hashes to `code_hash` if it is unused and was made after
    /// `since`: its student and target, once.
    pub async fn use_lti_handoff(
        &self,
        code_hash: &str,
        since: DateTime<Utc>,
    ) -> StoreResult<Option<(String, String)>> {
        let _turn = self.write_turn().await;
        let now = Utc::now();
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let row = sqlx::query(
                "SELECT student, target FROM lti_handoffs WHERE code_hash = $1 AND used_at IS NULL AND created_at > $2")
                .bind(code_hash).bind(since).fetch_optional(&mut *tx).await?;
            let Some(row) = row else {
                tx.rollback().await?;
                return Ok(None);
            };
            let spent = sqlx::query("UPDATE lti_handoffs SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL")
                .bind(code_hash).bind(now).execute(&mut *tx).await?.rows_affected();
            if spent != 1 {
                tx.rollback().await?;
                return Ok(None);
            }
            tx.commit().await?;
            Ok(Some((row.try_get("student")?, row.try_get("target")?)))
        })
    }
}

impl Store {
    // Courses.

    /// The class of a platform's context, if a launch from it made one.
    pub async fn lti_context_class(
        &self,
        platform: &str,
        context: &str,
    ) -> StoreResult<Option<String>> {
        with_pool!(self, pool => {
            let row = sqlx::query("SELECT class_id FROM lti_contexts WHERE platform = $1 AND context_id = $2")
                .bind(platform).bind(context).fetch_optional(pool).await?;
            row.map(|r| r.try_get("class_id")).transpose()
        })
    }

    /// Links a platform's context to a class; the link made first wins (two first launches
    /// at once both find the same class afterwards).
    pub async fn link_lti_context(
        &self,
        platform: &str,
        context: &str,
        class: &str,
    ) -> StoreResult<String> {
        {
            let _turn = self.write_turn().await;
            with_pool!(self, pool => sqlx::query(
                "INSERT INTO lti_contexts (platform, context_id, class_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
                .bind(platform).bind(context).bind(class).execute(pool).await.map(|_| ()))?;
        }
        Ok(self
            .lti_context_class(platform, context)
            .await?
            .unwrap_or_else(|| class.to_string()))
    }
}

impl Store {
    /// Removes the logins and handoff codes made before `cutoff`, used or not: past their
    /// ten minutes they are refused anyway. Answers how many rows went.
    pub async fn sweep_lti_logins(&self, cutoff: DateTime<Utc>) -> StoreResult<u64> {
        let _turn = self.write_turn().await;
        with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let logins = sqlx::query("DELETE FROM lti_logins WHERE created_at < $1")
                .bind(cutoff).execute(&mut *tx).await?.rows_affected();
            let handoffs = sqlx::query("DELETE FROM lti_handoffs WHERE created_at < $1")
                .bind(cutoff).execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            Ok(logins + handoffs)
        })
    }
}
