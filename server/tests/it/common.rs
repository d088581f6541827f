//! What the tests share: a fresh app on its own SQLite file, and requests through the router.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
use serde_json::Value;
use server::error::ErrorCode;
use server::{AppState, Catalogue, Config, Store};
use shared::Compiled;
use tower::ServiceExt;

pub fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// The shipped scenarios, validated once per test run.
pub fn scenarios() -> Vec<Compiled> {
    static LOADED: OnceLock<Vec<Compiled>> = OnceLock::new();
    LOADED
        .get_or_init(
            || match server::catalogue::validate_paths(&[scenarios_dir()]) {
                Ok(s) => s,
                Err(problems) => panic!("the shipped scenarios do not validate: {problems:?}"),
            },
        )
        .clone()
}

pub fn scenario(id: &str) -> Compiled {
    scenarios()
        .into_iter()
        .find(|s| s.scenario().id == id)
        .unwrap_or_else(|| panic!("no scenario {id}"))
}

/// The first reference design of a scenario: passes everything.
pub fn passing_design(id: &str) -> Value {
    scenario(id).scenario().reference_designs[0].design.clone()
}

/// The chapter's append-only job: misses every requirement of safe-retry.
pub fn failing_design() -> Value {
    scenario("safe-retry")
        .scenario()
        .starting_design
        .clone()
        .expect("safe-retry has a starting design")
}

/// A folder that is removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "pipeline-builder-{label}-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("a temp folder");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn sqlite_url(&self) -> String {
        format!("sqlite://{}", self.0.join("db/test.db").display())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub struct TestApp {
    pub router: Router,
    pub state: AppState,
    /// Kept so that the database folder lives as long as the app.
    pub _dir: TempDir,
    /// Kept so that a PostgreSQL test database lives as long as the app.
    pub _postgres: Option<crate::postgres::PgDatabase>,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(Config::default()).await
}

pub async fn spawn_app_with(config: Config) -> TestApp {
    let dir = TempDir::new("api");
    let store = Store::connect(&dir.sqlite_url())
        .await
        .expect("a fresh SQLite database");
    spawn_app_on(store, config, dir)
}

/// The app on a given store (for example a PostgreSQL one). It builds no verdict tables, so
/// that each test's app does not simulate every design of every scenario in the background;
/// its checks search (`spawn_app_with_tables` builds them).
pub fn spawn_app_on(store: Store, config: Config, dir: TempDir) -> TestApp {
    let config = Config {
        verdict_table_designs_max: 0,
        ..config
    };
    app_on(store, config, dir)
}

/// The app with its verdict tables built in the background, as `serve` builds them.
pub async fn spawn_app_with_tables(config: Config) -> TestApp {
    let dir = TempDir::new("api");
    let store = Store::connect(&dir.sqlite_url())
        .await
        .expect("a fresh SQLite database");
    app_on(store, config, dir)
}

fn app_on(store: Store, config: Config, dir: TempDir) -> TestApp {
    let state = AppState::new(store, Catalogue::new(scenarios()), config);
    TestApp {
        router: server::router(state.clone()),
        state,
        _dir: dir,
        _postgres: None,
    }
}

/// The database one test runs on, removed when it is dropped: a new SQLite file in a folder
/// of its own, or a new PostgreSQL database (with a folder of its own for anything else).
pub struct TestDatabase {
    pub url: String,
    /// `SQLite` or `PostgreSQL`, for messages.
    pub name: &'static str,
    pub dir: TempDir,
    postgres: Option<crate::postgres::PgDatabase>,
}

impl TestDatabase {
    pub fn sqlite(label: &str) -> TestDatabase {
        let dir = TempDir::new(label);
        TestDatabase {
            url: dir.sqlite_url(),
            name: "SQLite",
            dir,
            postgres: None,
        }
    }

    /// `None` only where the PostgreSQL tests are skipped knowingly (see `postgres.rs`).
    pub async fn postgres(label: &str) -> Option<TestDatabase> {
        let database = crate::postgres::database(label).await?;
        Some(TestDatabase {
            url: database.url.clone(),
            name: "PostgreSQL",
            dir: TempDir::new(label),
            postgres: Some(database),
        })
    }

    pub fn is_postgres(&self) -> bool {
        self.postgres.is_some()
    }

    /// A store on the database, its migrations run.
    pub async fn store(&self) -> Store {
        Store::connect(&self.url)
            .await
            .unwrap_or_else(|e| panic!("the {} test database: {e}", self.name))
    }

    /// The app on the database, with the default configuration.
    pub async fn app(self) -> TestApp {
        self.app_with(Config::default()).await
    }

    /// The app on the database (as `spawn_app_on` makes it), which keeps the database.
    pub async fn app_with(self, config: Config) -> TestApp {
        let store = self.store().await;
        let mut app = spawn_app_on(store, config, self.dir);
        app._postgres = self.postgres;
        app
    }
}

/// Makes two tests of one body: `NAME::on_sqlite`, on a new SQLite file, and
/// `NAME::on_postgres`, on a new PostgreSQL database. The body gets the database as `DB` (a
/// [`TestDatabase`]) and may use everything of the module it is written in.
#[macro_export]
macro_rules! on_both_databases {
    ($name:ident, |$db:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test]
            async fn on_sqlite() {
                let $db = $crate::common::TestDatabase::sqlite(stringify!($name));
                $body
            }

            #[tokio::test]
            async fn on_postgres() {
                let Some($db) = $crate::common::TestDatabase::postgres(stringify!($name)).await
                else {
                    return;
                };
                $body
            }
        }
    };
}

/// An answer: status, headers and the body as JSON (or as a JSON string when it is not JSON).
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Answer {
    /// The error code of an error answer, parsed: an unknown code fails the test.
    pub fn code(&self) -> ErrorCode {
        serde_json::from_value(self.body["error"]["code"].clone())
            .unwrap_or_else(|_| panic!("not an error answer ({}): {}", self.status, self.text))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `name=value` pair of the (first) Set-Cookie header, ready for a Cookie header.
    pub fn cookie(&self) -> Option<String> {
        self.header("set-cookie")
            .and_then(|c| c.split(';').next())
            .map(str::to_string)
    }
}

/// How a test calls: as nobody, as the student of a cookie, or as a grader.
#[derive(Clone, Debug, Default)]
pub struct As {
    pub cookie: Option<String>,
    pub token: Option<String>,
}

impl As {
    pub fn nobody() -> As {
        As::default()
    }
    pub fn student(cookie: &str) -> As {
        As {
            cookie: Some(cookie.to_string()),
            token: None,
        }
    }
    pub fn grader(token: &str) -> As {
        As {
            cookie: None,
            token: Some(token.to_string()),
        }
    }
}

impl TestApp {
    pub async fn send(
        &self,
        method: Method,
        uri: &str,
        who: &As,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Answer {
        let mut builder = Request::builder().method(method).uri(uri);
        if let Some(c) = &who.cookie {
            builder = builder.header("cookie", c);
        }
        if let Some(t) = &who.token {
            builder = builder.header("authorization", format!("Bearer {t}"));
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let has_body = body.is_some();
        let typed = headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
        if has_body && !typed {
            builder = builder.header("content-type", "application/json");
        }
        let request = builder
            .body(body.map(Body::from).unwrap_or_else(Body::empty))
            .expect("a request");
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router always answers");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("a body");
        let text = String::from_utf8_lossy(&bytes).to_string();
        let body = serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(text.clone()));
        Answer {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn get(&self, uri: &str, who: &As) -> Answer {
        self.send(Method::GET, uri, who, &[], None).await
    }

    pub async fn post(&self, uri: &str, who: &As, body: &Value) -> Answer {
        self.send(
            Method::POST,
            uri,
            who,
            &[],
            Some(serde_json::to_vec(body).unwrap()),
        )
        .await
    }

    pub async fn put(&self, uri: &str, who: &As, body: &Value) -> Answer {
        self.send(
            Method::PUT,
            uri,
            who,
            &[],
            Some(serde_json::to_vec(body).unwrap()),
        )
        .await
    }

    /// A new student session, made by `POST /api/session` as the web app does; returns its
    /// cookie and the student's public id.
    pub async fn new_student(&self) -> (String, String) {
        let answer = self
            .send(Method::POST, "/api/session", &As::nobody(), &[], None)
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);
        let cookie = answer.cookie().expect("a new session sets a cookie");
        let id = answer.body["student"]
            .as_str()
            .expect("a student id")
            .to_string();
        (cookie, id)
    }

    /// A grader token stored the way `token create` stores it.
    pub async fn grader_token(&self, name: &str) -> String {
        let token = server::auth::new_token().expect("randomness");
        assert!(self
            .state
            .store()
            .create_token(name, &server::auth::hash_token(&token))
            .await
            .expect("the store answers"));
        token
    }
}
