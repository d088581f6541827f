//! What the server is started with: its limits, its places and its rate limit.
//!
//! Each default is stated once, here. `Config::default()` is built from these constants, and
//! the command line (`pipeline-builder serve`) shows and uses the same constants as its
//! defaults, so the two cannot drift apart.

use std::path::PathBuf;
use std::time::Duration;

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
    /// Clients reach the server only over HTTPS (a TLS proxy in front): every answer gets
    /// HSTS and the session cookie is always `__Host-pb_session; Secure`.
    pub https: bool,
    /// Believe `X-Forwarded-Proto: https`: the server sits behind a proxy that sets it (and
    /// drops a client's own). Off, only `https` above says the request came over TLS.
    pub trust_forwarded_proto: bool,
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
            check_limits: shared::Limits::default(),
            inline_check_limits: shared::Limits {
                max_schedules: 10_000,
                max_steps: 10_000,
            },
            rate_limit: Some(RateLimit::default()),
            floor_route: false,
            verdict_cache_bytes: DEFAULT_VERDICT_CACHE_MIB * 1024 * 1024,
            https: false,
            trust_forwarded_proto: true,
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
