//! `pipeline-builder serve`: the web app and the REST API.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::args::{DatabaseArg, ExpiryArgs, ScenariosDir};
use crate::config::{self, Config};
use crate::watch::LiveCatalogue;
use crate::{catalogue, AppState};

#[derive(Args)]
pub struct ServeArgs {
    /// The address to listen on; port 0 picks a free port.
    #[arg(long, env = "BIND", default_value = "127.0.0.1:3000")]
    bind: String,
    #[command(flatten)]
    database: DatabaseArg,
    #[command(flatten)]
    scenarios: ScenariosDir,
    /// Serve the web app from this folder (cargo xtask dist builds web/dist) instead of the
    /// one built into the binary; for development.
    #[arg(long, env = "STATIC_DIR")]
    static_dir: Option<PathBuf>,
    /// The largest request body, in bytes (POST /api/grade accepts 64 times as much).
    #[arg(long, env = "BODY_LIMIT_BYTES", default_value_t = config::DEFAULT_BODY_LIMIT_BYTES)]
    body_limit_bytes: usize,
    /// The longest a request may run, in seconds.
    #[arg(long, env = "REQUEST_TIMEOUT_SECONDS", default_value_t = config::DEFAULT_REQUEST_TIMEOUT_SECONDS)]
    request_timeout_seconds: u64,
    /// The most failure schedules one check may explore before it is refused as too large.
    #[arg(long, env = "CHECK_MAX_SCHEDULES", default_value_t = Config::default().check_limits.max_schedules)]
    check_max_schedules: u64,
    /// The most designs a scenario's palette may allow for the server to work out every
    /// design's verdict in the background after it starts (its verdict table), so that a check
    /// is answered by a lookup; a scenario past it is always searched. 0 builds no table.
    #[arg(long, env = "VERDICT_TABLE_DESIGNS_MAX", default_value_t = config::DEFAULT_VERDICT_TABLE_DESIGNS_MAX)]
    verdict_table_designs_max: u64,
    /// Memory for verdicts already given, in MiB: a design checked again is answered without
    /// running the simulator; 0 checks every design anew.
    #[arg(long, env = "VERDICT_CACHE_MB", default_value_t = config::DEFAULT_VERDICT_CACHE_MIB)]
    verdict_cache_mb: usize,
    /// Requests per second each client may make to /api, sustained: a grader token, a student
    /// session, or the requests of one address with neither (one client between them; an IPv6
    /// client by its /64). A check costs one more request per millisecond it ran (not for a
    /// grader token). 0 turns every rate limit off, the check and join limits included.
    #[arg(long, env = "RATE_LIMIT_PER_SECOND", default_value_t = config::DEFAULT_RATE_LIMIT_PER_SECOND)]
    rate_limit_per_second: u32,
    /// Requests each client may make at once before the sustained rate applies.
    #[arg(long, env = "RATE_LIMIT_BURST", default_value_t = config::DEFAULT_RATE_LIMIT_BURST)]
    rate_limit_burst: u32,
    /// How long an in-flight Idempotency-Key is held by a server that stopped renewing it
    /// (because it died) before a retry takes it over, in seconds.
    #[arg(long, env = "IDEMPOTENCY_LEASE_SECONDS", default_value_t = config::DEFAULT_IDEMPOTENCY_LEASE_SECONDS)]
    idempotency_lease_seconds: u64,
    /// Mount POST /api/floor?bytes=N: a fixed JSON answer of N bytes that does no work, for
    /// benchmarks to compare against.
    #[arg(long, env = "FLOOR_ROUTE")]
    floor_route: bool,
    /// How many times one client's rate limit each address gets (every /api request spends
    /// from its address's bucket too).
    #[arg(long, env = "ADDRESS_RATE_FACTOR", default_value_t = config::DEFAULT_ADDRESS_RATE_FACTOR)]
    address_rate_factor: u32,
    /// Checks one address (an IPv6 client by its /64) may run at once; the next ones wait
    /// their turn. The default is half the cores, at least one.
    #[arg(long, env = "CHECKS_PER_ADDRESS", default_value_t = config::default_checks_per_address())]
    checks_per_address: usize,
    /// The most classes one grader token may make (POST /api/classes answers
    /// class_limit_reached past it).
    #[arg(long, env = "CLASSES_PER_TOKEN_MAX", default_value_t = config::DEFAULT_CLASSES_PER_TOKEN_MAX)]
    classes_per_token_max: u32,
    /// Requests per second one address may make for pages, static files, /readyz and
    /// /metrics; 0 turns this limit off.
    #[arg(long, env = "PAGE_RATE_LIMIT_PER_SECOND", default_value_t = config::DEFAULT_PAGE_RATE_LIMIT_PER_SECOND)]
    page_rate_limit_per_second: u32,
    /// Page requests one address may make at once.
    #[arg(long, env = "PAGE_RATE_LIMIT_BURST", default_value_t = config::DEFAULT_PAGE_RATE_LIMIT_BURST)]
    page_rate_limit_burst: u32,
    /// A reverse proxy (an address or CIDR network) whose X-Forwarded-For names the client;
    /// repeat it for several. Without it the header is ignored.
    #[arg(
        long = "trusted-proxy",
        env = "TRUSTED_PROXIES",
        value_delimiter = ',',
        value_name = "CIDR"
    )]
    trusted_proxies: Vec<crate::net::Cidr>,
    /// Require Authorization: Bearer TOKEN on /metrics.
    #[arg(long, env = "METRICS_TOKEN", hide_env_values = true)]
    metrics_token: Option<String>,
    #[command(flatten)]
    expiry: ExpiryArgs,
    /// The largest answer stored to replay an Idempotency-Key, in bytes; a larger one is
    /// stored without its verdict or details.
    #[arg(long, env = "IDEMPOTENCY_ANSWER_MAX_BYTES", default_value_t = config::DEFAULT_IDEMPOTENCY_ANSWER_MAX_BYTES)]
    idempotency_answer_max_bytes: usize,
    /// The most bytes of drafts one student may keep, over every scenario.
    #[arg(long, env = "DRAFT_BYTES_PER_STUDENT", default_value_t = config::DEFAULT_DRAFT_BYTES_PER_STUDENT)]
    draft_bytes_per_student: usize,
    /// How often expired idempotency records and sessions with no work are removed, in
    /// seconds; 0 never (then run `pipeline-builder sweep`).
    #[arg(long, env = "SWEEP_PERIOD_SECONDS", default_value_t = config::DEFAULT_SWEEP_PERIOD_SECONDS)]
    sweep_period_seconds: u64,
    /// How long a connection may take to send a request's headers, and may sit idle between
    /// two requests, in seconds.
    #[arg(long, env = "HEADER_TIMEOUT_SECONDS", default_value_t = config::DEFAULT_HEADER_TIMEOUT_SECONDS)]
    header_timeout_seconds: u64,
    /// How long a request's body may take to arrive, in seconds.
    #[arg(long, env = "BODY_TIMEOUT_SECONDS", default_value_t = config::DEFAULT_BODY_TIMEOUT_SECONDS)]
    body_timeout_seconds: u64,
    /// The most connections open at once; past it, new connections wait to be accepted.
    #[arg(long, env = "MAX_CONNECTIONS", default_value_t = config::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Clients reach the server only over HTTPS (through a TLS proxy): send HSTS and always
    /// use the `__Host-pb_session` cookie with `Secure`.
    #[arg(long, env = "HTTPS")]
    https: bool,
    /// Ignore `X-Forwarded-Proto`: no proxy in front sets it, so a client's own is not
    /// believed.
    #[arg(long, env = "IGNORE_FORWARDED_PROTO")]
    ignore_forwarded_proto: bool,
    /// Watch the scenarios folder and serve each change once it validates, without a
    /// restart; a change with problems is logged and not served. Also starts on a folder
    /// with problems, serving nothing until they are fixed.
    #[arg(long, env = "WATCH")]
    watch: bool,
    /// Serve the author page (/author): every scenario with its reference and wrong designs,
    /// their verdicts and the files' problems. It shows the answers, so only on a loopback
    /// address.
    #[arg(long, env = "AUTHOR")]
    author: bool,
    /// The URL students reach this server at, for example https://pipelines.example.edu:
    /// learning platforms send LTI launches back to it (GET /lti/config lists the URLs).
    #[arg(long, env = "PUBLIC_URL")]
    public_url: Option<String>,
    /// An origin that may show the app in a frame, for example a learning platform's
    /// https://school.instructure.com; repeat for several. Registered LTI platforms' issuer
    /// and authorization origins may always.
    #[arg(
        long = "frame-ancestor",
        env = "FRAME_ANCESTORS",
        value_delimiter = ',',
        value_name = "ORIGIN"
    )]
    frame_ancestors: Vec<String>,
}

/// Runs the command.
pub async fn run(args: ServeArgs) -> ExitCode {
    let Some(live) = catalogue_to_serve(&args).await else {
        return ExitCode::FAILURE;
    };
    let Some(store) = args.database.connect().await else {
        return ExitCode::FAILURE;
    };
    let Some(frame_ancestors) = frame_ancestors(&args.frame_ancestors) else {
        return ExitCode::from(2);
    };
    let config = config(&args, static_dir(args.static_dir.as_ref()), frame_ancestors);
    let listener = match tokio::net::TcpListener::bind(&args.bind).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("cannot listen on {}: {e}", args.bind);
            return ExitCode::FAILURE;
        }
    };
    if args.author && !listener.local_addr().is_ok_and(|a| a.ip().is_loopback()) {
        eprintln!("refusing to start: --author shows every scenario's answers, so it is served on a loopback address only (for example --bind 127.0.0.1:3000), not on {}", args.bind);
        return ExitCode::FAILURE;
    }
    let watcher = if args.watch {
        match crate::watch::spawn(Arc::clone(&live), args.scenarios.dir.clone()) {
            Ok(task) => Some(task),
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    let address = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| args.bind.clone());
    tracing::info!(
        scenarios = live.current().len(),
        database = store.backend(),
        "ready"
    );
    // Scripts and tests read this line to learn the port.
    println!("pipeline-builder listening on http://{address}");
    if args.author {
        println!("the author page: http://{address}/author");
    }
    // The tool's LTI key is made at first start, so that /lti/jwks never waits for it.
    if let Err(e) = crate::lti::keys::current(&store).await {
        tracing::warn!("the LTI key could not be made now (it is made at first need): {e}");
    }
    let state = AppState::live(store.clone(), live, config);
    // Scores of students launched from a learning platform go back to it, through the same
    // client (and token cache) the launches use.
    let grades = crate::lti::grades::spawn(
        store.clone(),
        state.outbound().clone(),
        Duration::from_secs(5),
    );
    let result = crate::app::serve(listener, state).await;
    if let Some(task) = watcher {
        task.abort();
    }
    grades.abort();
    store.close().await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("the server stopped: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The scenarios to serve: with problems in the files, none (under --watch, until they are
/// fixed) or a refusal to start (said on stderr).
async fn catalogue_to_serve(args: &ServeArgs) -> Option<Arc<LiveCatalogue>> {
    let dir = args.scenarios.dir.clone();
    let loaded = tokio::task::spawn_blocking(move || catalogue::load(&dir)).await;
    match loaded {
        Ok(Ok(c)) => Some(Arc::new(LiveCatalogue::new(c))),
        Ok(Err(problems)) => {
            for p in &problems {
                eprintln!("{p}");
            }
            if !args.watch {
                eprintln!(
                    "refusing to start: {} problem(s) in the scenario files under {}",
                    problems.len(),
                    args.scenarios.dir.display()
                );
                return None;
            }
            eprintln!(
                "{} problem(s) in the scenario files under {}: serving no scenario until they are fixed",
                problems.len(),
                args.scenarios.dir.display()
            );
            Some(Arc::new(LiveCatalogue::broken(problems)))
        }
        Err(e) => {
            eprintln!("loading the scenarios failed: {e}");
            None
        }
    }
}

/// The folder to serve the web app from, when it holds a built app; otherwise the app built
/// into the binary (said in the log either way).
fn static_dir(given: Option<&PathBuf>) -> Option<PathBuf> {
    let static_dir = match given {
        Some(dir) if dir.join("index.html").is_file() => Some(dir.clone()),
        Some(dir) => {
            tracing::warn!(dir = %dir.display(), "no built web app there (no index.html); serving the one built into the binary");
            None
        }
        None => None,
    };
    if static_dir.is_none() {
        if crate::embedded::is_built() {
            let (files, bytes) = crate::embedded::summary();
            tracing::info!(files, bytes, "serving the web app built into the binary");
        } else {
            tracing::warn!("this binary was built without the web app: / says how to build it (cargo xtask dist, then build the server again), or pass --static-dir web/dist");
        }
    }
    static_dir
}

/// Each origin as the frame policy writes it; anything else (a path, a `;`) is refused, on
/// stderr.
fn frame_ancestors(given: &[String]) -> Option<Vec<String>> {
    let mut origins = Vec::new();
    for one in given {
        match reqwest::Url::parse(one.trim()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
                origins.push(u.origin().ascii_serialization())
            }
            _ => {
                eprintln!("--frame-ancestor takes an origin such as https://school.instructure.com, not \"{one}\"");
                return None;
            }
        }
    }
    Some(origins)
}

/// The server's configuration from its arguments.
fn config(args: &ServeArgs, static_dir: Option<PathBuf>, frame_ancestors: Vec<String>) -> Config {
    Config {
        body_limit_bytes: args.body_limit_bytes,
        grade_body_limit_bytes: args
            .body_limit_bytes
            .saturating_mul(config::GRADE_BODY_LIMIT_FACTOR),
        request_timeout: Duration::from_secs(args.request_timeout_seconds),
        idempotency_lease: Duration::from_secs(args.idempotency_lease_seconds.max(1)),
        rate_limit: (args.rate_limit_per_second > 0).then(|| config::RateLimit {
            per_second: f64::from(args.rate_limit_per_second),
            burst: f64::from(args.rate_limit_burst.max(1)),
        }),
        floor_route: args.floor_route,
        verdict_cache_bytes: args.verdict_cache_mb.saturating_mul(1024 * 1024),
        verdict_table_designs_max: args.verdict_table_designs_max,
        https: args.https,
        trust_forwarded_proto: !args.ignore_forwarded_proto,
        static_dir,
        embedded_app: true,
        check_limits: shared::Limits {
            max_schedules: args.check_max_schedules,
            ..Config::default().check_limits
        },
        address_rate_factor: f64::from(args.address_rate_factor.max(1)),
        checks_per_address: args.checks_per_address.max(1),
        classes_per_token_max: args.classes_per_token_max,
        page_rate_limit: (args.page_rate_limit_per_second > 0).then(|| config::RateLimit {
            per_second: f64::from(args.page_rate_limit_per_second),
            burst: f64::from(args.page_rate_limit_burst.max(1)),
        }),
        trusted_proxies: args.trusted_proxies.clone(),
        metrics_token: args.metrics_token.clone().filter(|t| !t.is_empty()),
        idempotency_answer_max_bytes: args.idempotency_answer_max_bytes,
        draft_bytes_per_student: args.draft_bytes_per_student,
        sweep_period: (args.sweep_period_seconds > 0)
            .then(|| Duration::from_secs(args.sweep_period_seconds)),
        header_timeout: Duration::from_secs(args.header_timeout_seconds.max(1)),
        body_timeout: Duration::from_secs(args.body_timeout_seconds.max(1)),
        max_connections: args.max_connections.max(1),
        author: args.author,
        public_url: args.public_url.clone(),
        frame_ancestors,
        ..args.expiry.apply(Config::default())
    }
}
