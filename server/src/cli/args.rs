//! The arguments several commands share, each default stated once (in `crate::config`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::config::{self, Config};
use crate::Store;

/// The database a command works on.
#[derive(Args)]
pub struct DatabaseArg {
    /// sqlite://PATH (created when missing) or postgres://…
    #[arg(long, env = "DATABASE_URL", default_value = crate::store::DEFAULT_DATABASE_URL)]
    pub database_url: String,
}

impl DatabaseArg {
    /// Connects, or says why not on stderr.
    pub async fn connect(&self) -> Option<Store> {
        match Store::connect(&self.database_url).await {
            Ok(store) => Some(store),
            Err(e) => {
                eprintln!("{e}");
                None
            }
        }
    }
}

/// Waits for a command's `work` on `store`, then closes the store; a database error is said on
/// stderr and exits 1.
pub async fn finish(
    store: &Store,
    work: impl std::future::Future<Output = Result<std::process::ExitCode, sqlx::Error>>,
) -> std::process::ExitCode {
    let code = match work.await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("database error: {e}");
            std::process::ExitCode::FAILURE
        }
    };
    store.close().await;
    code
}

/// The folder of scenario files a command reads.
#[derive(Args)]
pub struct ScenariosDir {
    /// The folder of scenario files.
    #[arg(long = "scenarios", env = "SCENARIOS_DIR", default_value = config::DEFAULT_SCENARIOS_DIR)]
    pub dir: PathBuf,
}

/// How long what anyone can store is kept.
#[derive(Args)]
pub struct ExpiryArgs {
    /// How long an Idempotency-Key and its stored answer are kept, in hours.
    #[arg(long, env = "IDEMPOTENCY_TTL_HOURS", default_value_t = config::DEFAULT_IDEMPOTENCY_TTL_HOURS)]
    pub idempotency_ttl_hours: u64,
    /// How long a session with no attempt and no draft is kept, in days.
    #[arg(long, env = "WORKLESS_SESSION_DAYS", default_value_t = config::DEFAULT_WORKLESS_SESSION_DAYS)]
    pub workless_session_days: u64,
}

impl ExpiryArgs {
    pub fn apply(&self, config: Config) -> Config {
        Config {
            idempotency_ttl: Duration::from_secs(self.idempotency_ttl_hours.saturating_mul(3600)),
            workless_session_ttl: Duration::from_secs(
                self.workless_session_days.saturating_mul(86_400),
            ),
            ..config
        }
    }
}
