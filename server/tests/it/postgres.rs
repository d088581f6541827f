//! A PostgreSQL database of its own for each test, dropped afterwards.
//!
//! The server's machines run PostgreSQL on 127.0.0.1:5432 with trust auth. When it cannot be
//! reached these tests FAIL, loudly, unless `PIPELINE_BUILDER_SKIP_POSTGRES=1` says that
//! this run knowingly goes without it; then they say SKIPPED just as loudly.
//! `PIPELINE_BUILDER_POSTGRES_URL` names another server to use instead (a URL to any database
//! there, used to create and drop the test databases).

use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, Executor};

pub struct PgDatabase {
    admin_url: String,
    name: String,
    pub url: String,
}

const CANDIDATES: [&str; 2] = [
    "postgres://postgres@127.0.0.1:5432/postgres",
    "postgres://root@127.0.0.1:5432/postgres",
];

async fn admin_connection() -> Result<(String, sqlx::PgConnection), String> {
    let candidates: Vec<String> = match std::env::var("PIPELINE_BUILDER_POSTGRES_URL") {
        Ok(url) => vec![url],
        Err(_) => CANDIDATES.iter().map(|s| s.to_string()).collect(),
    };
    let mut errors = Vec::new();
    for url in candidates {
        let options: PgConnectOptions = match url.parse() {
            Ok(o) => o,
            Err(e) => {
                errors.push(format!("{url}: {e}"));
                continue;
            }
        };
        match tokio::time::timeout(std::time::Duration::from_secs(5), options.connect()).await {
            Ok(Ok(conn)) => return Ok((url, conn)),
            Ok(Err(e)) => errors.push(format!("{url}: {e}")),
            Err(_) => errors.push(format!("{url}: timed out")),
        }
    }
    Err(errors.join("; "))
}

/// A fresh database, or `None` when PostgreSQL is knowingly skipped.
pub async fn database(label: &str) -> Option<PgDatabase> {
    let (admin_url, mut conn) = match admin_connection().await {
        Ok(found) => found,
        Err(why) => {
            if std::env::var("PIPELINE_BUILDER_SKIP_POSTGRES").as_deref() == Ok("1") {
                // Written to stderr directly: the test harness captures eprintln!, and a
                // skip must be seen.
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "\n!!!!!!!! SKIPPED: PostgreSQL not reachable ({why}); {label} did not run against PostgreSQL !!!!!!!!\n");
                return None;
            }
            panic!(
                "\n\nPostgreSQL is NOT reachable ({why}).\n\
                 The storage and multi-process tests need it. Start PostgreSQL, or set \
                 PIPELINE_BUILDER_SKIP_POSTGRES=1 to skip these tests knowingly.\n"
            );
        }
    };
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let name = format!(
        "pb_test_{}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos % 1_000_000_000
    );
    conn.execute(format!("CREATE DATABASE \"{name}\"").as_str())
        .await
        .expect("CREATE DATABASE");
    let _ = conn.close().await;
    let base = admin_url
        .rsplit_once('/')
        .map(|(b, _)| b.to_string())
        .expect("a URL with a database");
    let url = format!("{base}/{name}");
    Some(PgDatabase {
        admin_url,
        name,
        url,
    })
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        // Drop runs inside a test's runtime, so the cleanup gets a runtime of its own.
        let done = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let options: PgConnectOptions =
                    admin_url.parse().expect("the admin URL parsed before");
                if let Ok(mut conn) = options.connect().await {
                    if let Err(e) = conn
                        .execute(
                            format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str(),
                        )
                        .await
                    {
                        eprintln!("could not drop test database {name}: {e}");
                    }
                    let _ = conn.close().await;
                }
            });
        })
        .join();
        if done.is_err() {
            eprintln!("could not drop test database {}", self.name);
        }
    }
}
