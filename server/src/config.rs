//! What the server is started with: its limits, its places and its rate limit.
//!
//! Each default is stated once, here. `Config::default()` is built from these constants, and
//! the command line (`pipeline-builder serve`) shows and uses the same constants as its
//! defaults, so the two cannot drift apart.

use std::path::PathBuf;
use std::time::Duration;

/// The folder of scenario files every command reads unless told another.
pub const DEFAULT_SCENARIOS_DIR: &str = "scenarios";
/// The largest request body of every route but `/api/grade`, in bytes.
pub const DEFAULT_BODY_LIMIT_BYTES: usize = 256 * 1024;
/// How many times the ordinary body limit `/api/grade` accepts, since it carries a whole class.
pub const GRADE_BODY_LIMIT_FACTOR: usize = 64;
/// The most items one `/api/grade` call may carry.
pub const DEFAULT_GRADE_ITEMS_MAX: usize = 1000;
/// The longest a request may take, in seconds, before it is answered with `timeout`.
pub const DEFAULT_REQUEST_TIMEOUT_SECONDS: u64 = 300;
/// The lease of an in-flight idempotency key, in seconds.
pub const DEFAULT_IDEMPOTENCY_LEASE_SECONDS: u64 = 10;
/// The memory for verdicts already given, in MiB.
pub const DEFAULT_VERDICT_CACHE_MIB: usize = 64;
/// Requests per second one client may make to `/api`, sustained.
pub const DEFAULT_RATE_LIMIT_PER_SECOND: u32 = 100;
/// Requests one client may make at once before the sustained rate applies.
pub const DEFAULT_RATE_LIMIT_BURST: u32 = 200;
/// How many times one client's limit one address gets (every request spends from its
/// address's bucket too: a classroom behind one NAT address shares it).
pub const DEFAULT_ADDRESS_RATE_FACTOR: u32 = 10;
/// Requests per second one address may make for pages, static files and `/readyz`/`/metrics`.
pub const DEFAULT_PAGE_RATE_LIMIT_PER_SECOND: u32 = 50;
/// Page requests one address may make at once (a classroom loading the app together).
pub const DEFAULT_PAGE_RATE_LIMIT_BURST: u32 = 500;
/// How long an `Idempotency-Key`'s stored answer is kept, in hours.
pub const DEFAULT_IDEMPOTENCY_TTL_HOURS: u64 = 24;
/// The largest answer kept for replaying an `Idempotency-Key`, in bytes; a larger one is kept
/// in a short form (see `crate::bounds::answer_for_replay`).
pub const DEFAULT_IDEMPOTENCY_ANSWER_MAX_BYTES: usize = 64 * 1024;
/// The most bytes of drafts one student may keep, over every scenario.
pub const DEFAULT_DRAFT_BYTES_PER_STUDENT: usize = 1024 * 1024;
/// How long a session with no work (no attempt, no draft) is kept, in days.
pub const DEFAULT_WORKLESS_SESSION_DAYS: u64 = 7;
/// How often the sweeper removes what has expired, in seconds.
pub const DEFAULT_SWEEP_PERIOD_SECONDS: u64 = 600;
/// How long a connection may take to send a request's headers, and may sit idle between two
/// requests, in seconds.
pub const DEFAULT_HEADER_TIMEOUT_SECONDS: u64 = 10;
/// How long a request's body may take to arrive, in seconds (shorter than the request timeout).
pub const DEFAULT_BODY_TIMEOUT_SECONDS: u64 = 60;
/// The most connections open at once; past it, new connections wait to be accepted.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Join codes that name no class one address may send at once, before the sustained rate.
pub const DEFAULT_FAILED_JOINS_BURST: u32 = 20;
/// Join codes that name no class one address may send per minute, sustained.
pub const DEFAULT_FAILED_JOINS_PER_MINUTE: u32 = 10;
/// Checks one address may have waiting for a turn to run; past it, `429 rate_limited`.
pub const DEFAULT_CHECKS_WAITING_PER_ADDRESS: usize = 32;
/// The most classes one grader token may make.
pub const DEFAULT_CLASSES_PER_TOKEN_MAX: u32 = 1000;

/// The most designs a scenario's palette may allow for the server to keep its verdict table.
/// The shipped scenarios allow at most 288 (whole-path, whose table takes about 5 MB, 18 KB a
/// design), so a table stays within about 20 MB.
pub const DEFAULT_VERDICT_TABLE_DESIGNS_MAX: u64 = 1024;

/// Checks one address may run at once by default: half the cores, at least one, so that one
/// address (a classroom's NAT, or someone flooding) leaves the other half to everyone else.
pub fn default_checks_per_address() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get() / 2)
        .unwrap_or(1)
        .max(1)
}

/// Limits and places the server is started with.
#[derive(Clone, Debug)]
pub struct Config {
    /// The largest request body of every route but `/api/grade`.
    pub body_limit_bytes: usize,
    /// The largest body of `/api/grade`, which carries a whole class.
    pub grade_body_limit_bytes: usize,
    /// The most items one `/api/grade` call may carry.
    pub grade_items_max: usize,
    /// The longest a request may take before it is answered with `timeout`.
    pub request_timeout: Duration,
    /// The lease of an in-flight idempotency key: its holder renews it every quarter of this
    /// while it works; a claim not renewed for this long belongs to a server that died, and a
    /// retry takes it over.
    pub idempotency_lease: Duration,
    /// The built web app, served for every path that is not the API.
    pub static_dir: Option<PathBuf>,
    /// Without a `static_dir` holding a built app, serve the app built into the binary
    /// (`crate::embedded`), or the page that says how to build it. `serve` sets it; off by
    /// default, so that a test's router serves the API only.
    pub embedded_app: bool,
    /// How far one check may go before it is answered with `check_too_large`.
    pub check_limits: shared::Limits,
    /// How far a check may go on the request's own thread before it is handed to the blocking
    /// pool: a millisecond or two of simulation by default. Every check of a shipped design
    /// fits (the largest simulates about 6,000 steps), and so skips the handoff.
    pub inline_check_limits: shared::Limits,
    /// Per-client request limits; `None` turns them off.
    pub rate_limit: Option<RateLimit>,
    /// Mounts `POST /api/floor`, an answer with no work, for benchmarks to compare against.
    pub floor_route: bool,
    /// The memory for verdicts already given (`crate::verdicts`); 0 checks every design anew.
    pub verdict_cache_bytes: usize,
    /// How many times one client's rate limit each address gets; every request spends from
    /// its address's bucket as well as from its token's or session's.
    pub address_rate_factor: f64,
    /// The per-address limit of everything that is not `/api` (pages, static files,
    /// `/readyz`, `/metrics`); `/healthz` is never limited. Off when `rate_limit` is off.
    pub page_rate_limit: Option<RateLimit>,
    /// Reverse proxies whose `X-Forwarded-For` names the client; empty: the header is ignored.
    pub trusted_proxies: Vec<crate::net::Cidr>,
    /// When set, `/metrics` requires `Authorization: Bearer <this>`.
    pub metrics_token: Option<String>,
    /// How long an `Idempotency-Key` and its stored answer are kept.
    pub idempotency_ttl: Duration,
    /// The largest answer stored for replay, in bytes (serialized JSON).
    pub idempotency_answer_max_bytes: usize,
    /// The most bytes of drafts one student may keep, over every scenario.
    pub draft_bytes_per_student: usize,
    /// How long a session with no attempt and no draft is kept.
    pub workless_session_ttl: Duration,
    /// How often `app::serve` sweeps what has expired; `None`: never (tests sweep by hand).
    pub sweep_period: Option<Duration>,
    /// How long a connection may take to send a request's headers, and may sit idle between
    /// two requests, before it is closed.
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive before the request is answered `timeout`.
    pub body_timeout: Duration,
    /// The most connections open at once; past it, new ones wait in the listen queue.
    pub max_connections: usize,
    /// Clients reach the server only over HTTPS (a TLS proxy in front): every answer gets
    /// HSTS and the session cookie is always `__Host-pb_session; Secure`.
    pub https: bool,
    /// Believe `X-Forwarded-Proto: https`: the server sits behind a proxy that sets it (and
    /// drops a client's own). Off, only `https` above says the request came over TLS.
    pub trust_forwarded_proto: bool,
    /// Mounts the author page's API (`crate::routes::author`): every scenario with its
    /// answers. `serve --author` sets it, on a loopback address only.
    pub author: bool,
    /// The URL students reach the server at (`--public-url`, for example
    /// `https://pipelines.example.edu`): LTI platforms are sent back to it.
    pub public_url: Option<String>,
    /// Origins that may show the app's pages in a frame (`--frame-ancestor`), besides the
    /// registered LTI platforms' own.
    pub frame_ancestors: Vec<String>,
    /// Join codes that name no class, per address (an IPv6 client by its /64): past it every
    /// join from the address is refused until the bucket refills. Off when `rate_limit` is off.
    pub failed_join_limit: RateLimit,
    /// Checks one address may run at once; the next ones wait their turn. Off when
    /// `rate_limit` is off.
    pub checks_per_address: usize,
    /// Checks one address may have waiting for a turn; past it, `429 rate_limited`.
    pub checks_waiting_per_address: usize,
    /// The most classes one grader token (by its name) may make; past it, `POST /api/classes`
    /// is answered `409 class_limit_reached`.
    pub classes_per_token_max: u32,
    /// The most designs a scenario's palette may allow for the server to build its verdict
    /// table in the background (`crate::tables`); a scenario past it is always searched. 0
    /// builds no table.
    pub verdict_table_designs_max: u64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            body_limit_bytes: DEFAULT_BODY_LIMIT_BYTES,
            grade_body_limit_bytes: DEFAULT_BODY_LIMIT_BYTES * GRADE_BODY_LIMIT_FACTOR,
            grade_items_max: DEFAULT_GRADE_ITEMS_MAX,
            request_timeout: Duration::from_secs(DEFAULT_REQUEST_TIMEOUT_SECONDS),
            idempotency_lease: Duration::from_secs(DEFAULT_IDEMPOTENCY_LEASE_SECONDS),
            static_dir: None,
            embedded_app: false,
            check_limits: shared::Limits::default(),
            inline_check_limits: shared::Limits {
                max_schedules: 10_000,
                max_steps: 10_000,
            },
            rate_limit: Some(RateLimit::default()),
            floor_route: false,
            verdict_cache_bytes: DEFAULT_VERDICT_CACHE_MIB * 1024 * 1024,
            address_rate_factor: f64::from(DEFAULT_ADDRESS_RATE_FACTOR),
            page_rate_limit: Some(RateLimit {
                per_second: f64::from(DEFAULT_PAGE_RATE_LIMIT_PER_SECOND),
                burst: f64::from(DEFAULT_PAGE_RATE_LIMIT_BURST),
            }),
            trusted_proxies: Vec::new(),
            metrics_token: None,
            idempotency_ttl: Duration::from_secs(DEFAULT_IDEMPOTENCY_TTL_HOURS * 3600),
            idempotency_answer_max_bytes: DEFAULT_IDEMPOTENCY_ANSWER_MAX_BYTES,
            draft_bytes_per_student: DEFAULT_DRAFT_BYTES_PER_STUDENT,
            workless_session_ttl: Duration::from_secs(DEFAULT_WORKLESS_SESSION_DAYS * 86_400),
            sweep_period: Some(Duration::from_secs(DEFAULT_SWEEP_PERIOD_SECONDS)),
            header_timeout: Duration::from_secs(DEFAULT_HEADER_TIMEOUT_SECONDS),
            body_timeout: Duration::from_secs(DEFAULT_BODY_TIMEOUT_SECONDS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            https: false,
            trust_forwarded_proto: true,
            author: false,
            public_url: None,
            frame_ancestors: Vec::new(),
            failed_join_limit: RateLimit {
                per_second: f64::from(DEFAULT_FAILED_JOINS_PER_MINUTE) / 60.0,
                burst: f64::from(DEFAULT_FAILED_JOINS_BURST),
            },
            checks_per_address: default_checks_per_address(),
            checks_waiting_per_address: DEFAULT_CHECKS_WAITING_PER_ADDRESS,
            verdict_table_designs_max: DEFAULT_VERDICT_TABLE_DESIGNS_MAX,
            classes_per_token_max: DEFAULT_CLASSES_PER_TOKEN_MAX,
        }
    }
}

/// How many requests a client may make: `burst` at once, `per_second` sustained.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: f64,
}

impl Default for RateLimit {
    /// Far above what a student's browser or a grader's script does (a browser makes a few
    /// requests per click; the 256-client load test makes about 10 a second per client), far
    /// below what it takes to fill both cores with checks.
    fn default() -> RateLimit {
        RateLimit {
            per_second: f64::from(DEFAULT_RATE_LIMIT_PER_SECOND),
            burst: f64::from(DEFAULT_RATE_LIMIT_BURST),
        }
    }
}
