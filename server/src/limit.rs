//! Per-client rate limits, so that one client cannot starve the others.
//!
//! A client is its grader token (hashed), else its student session cookie, else its peer IP
//! address. Each client has a token bucket: `burst` requests at once, refilled at
//! `per_second`. A request past it is answered `429 rate_limited` with `Retry-After`, before
//! any work is done. The limit reads no database, so it holds during an outage too.
//!
//! Only `/api/…` is limited: the probes (`/healthz`, `/readyz`, `/metrics`) and the web app's
//! static files are not, so that a classroom behind one NAT address can load the page at once.
//! For the same reason a peer address, which a whole classroom may share until each browser
//! has its session, gets [`SHARED_ADDRESS_FACTOR`] times the limit of one client.
//!
//! Rationale: a hand-written bucket table instead of a rate-limiting crate, because the key
//! (token, then cookie, then address) is ours and the table must stay bounded: past
//! `MAX_CLIENTS` entries the idle ones are dropped, and if every entry is busy the table
//! starts over (failing open rather than refusing clients it has no room to remember).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth;
use crate::config::RateLimit;
use crate::error::{AppError, ErrorCode};

/// How many times one client's limit a peer address gets: a classroom behind one NAT address
/// opens its sessions (`GET /api/session`, keyed by address until the cookie is set) at once.
pub const SHARED_ADDRESS_FACTOR: f64 = 10.0;

/// The most clients remembered at once.
const MAX_CLIENTS: usize = 100_000;

struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// The bucket of every client seen recently. Cheap to clone: clones share the buckets.
#[derive(Clone)]
pub struct RateLimiter {
    limit: RateLimit,
    buckets: Arc<Mutex<HashMap<String, Bucket>>>,
}

impl RateLimiter {
    pub fn new(limit: RateLimit) -> RateLimiter {
        RateLimiter {
            limit,
            buckets: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Takes one request from `client`'s bucket; `Err(wait)` when it is empty. `factor`
    /// scales the limit (1 for one client, [`SHARED_ADDRESS_FACTOR`] for an address).
    pub fn take(&self, client: &str, factor: f64, now: Instant) -> Result<(), Duration> {
        let (per_second, burst) = (self.limit.per_second * factor, self.limit.burst * factor);
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() >= MAX_CLIENTS && !buckets.contains_key(client) {
            // Full buckets are the same as no bucket: forget them.
            buckets.retain(|_, b| {
                b.tokens + now.saturating_duration_since(b.updated).as_secs_f64() * per_second
                    < burst
            });
            if buckets.len() >= MAX_CLIENTS {
                tracing::warn!(
                    clients = buckets.len(),
                    "the rate limiter's table is full of busy clients; starting it over"
                );
                buckets.clear();
            }
        }
        let bucket = buckets.entry(client.to_string()).or_insert(Bucket {
            tokens: burst,
            updated: now,
        });
        let refill = now.saturating_duration_since(bucket.updated).as_secs_f64() * per_second;
        bucket.tokens = (bucket.tokens + refill).min(burst);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / per_second))
        }
    }

    pub fn clients(&self) -> usize {
        self.buckets.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Who a request comes from, as the rate limiter counts, and the factor of its limit: the
/// token's hash, the session cookie, or the peer address. None of these needs the database.
pub fn client_key(request: &Request) -> (String, f64) {
    let headers = request.headers();
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        return (
            format!(
                "token:{}",
                auth::hash_token(&String::from_utf8_lossy(value.as_bytes()))
            ),
            1.0,
        );
    }
    if let Some(session) = auth::cookie_student(headers) {
        return (format!("session:{session}"), 1.0);
    }
    match request.extensions().get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(address)) => (format!("ip:{}", address.ip()), SHARED_ADDRESS_FACTOR),
        None => ("ip:unknown".to_string(), SHARED_ADDRESS_FACTOR),
    }
}

/// Middleware: answers `429 rate_limited` to a client past its limit. Its state is the
/// limiter alone (`None` when limits are off), so it needs nothing else of the app.
pub async fn rate_limit(
    State(limiter): State<Option<RateLimiter>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(limiter) = limiter else {
        return next.run(request).await;
    };
    if !request.uri().path().starts_with("/api") {
        return next.run(request).await;
    }
    let (key, factor) = client_key(&request);
    match limiter.take(&key, factor, Instant::now()) {
        Ok(()) => next.run(request).await,
        Err(wait) => {
            let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
            tracing::debug!(client = %key.split(':').next().unwrap_or(""), "rate limited");
            AppError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::RateLimited,
                format!(
                    "too many requests from this client; wait {seconds} s (the limit is {} per second, {} at once)",
                    limiter.limit.per_second * factor,
                    limiter.limit.burst * factor
                ),
            )
            .retry_after(seconds)
            .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_gives_its_burst_then_refills_at_its_rate() {
        let limiter = RateLimiter::new(RateLimit {
            per_second: 10.0,
            burst: 3.0,
        });
        let start = Instant::now();
        for _ in 0..3 {
            assert!(limiter.take("a", 1.0, start).is_ok());
        }
        let wait = limiter.take("a", 1.0, start).unwrap_err();
        assert!(
            wait <= Duration::from_millis(100) && wait > Duration::ZERO,
            "{wait:?}"
        );
        // Another client is not affected.
        assert!(limiter.take("b", 1.0, start).is_ok());
        // A tenth of a second later, one more.
        assert!(limiter
            .take("a", 1.0, start + Duration::from_millis(100))
            .is_ok());
        assert!(limiter
            .take("a", 1.0, start + Duration::from_millis(100))
            .is_err());
        // Long idle: full again, never more than the burst.
        let later = start + Duration::from_secs(60);
        for _ in 0..3 {
            assert!(limiter.take("a", 1.0, later).is_ok());
        }
        assert!(limiter.take("a", 1.0, later).is_err());
        // An address gets the limit of ten clients.
        for _ in 0..30 {
            assert!(limiter.take("ip", SHARED_ADDRESS_FACTOR, start).is_ok());
        }
        assert!(limiter.take("ip", SHARED_ADDRESS_FACTOR, start).is_err());
    }
}
