//! Per-client rate limits, so that one client cannot starve the others.
//!
//! Every `/api` request spends from two token buckets: its address's, and its identity's when
//! it has one — a grader token or a student session that the server *verified* (the
//! verification is remembered for [`IDENTITY_CACHE_TTL`] in a bounded table keyed by the
//! sha256 of the credential). A credential the server cannot verify (a made-up token or
//! cookie) names no identity: the request spends from its address's bucket alone, so
//! inventing credentials never buys a fresh bucket. An address gets
//! `Config::address_rate_factor` times one client's limit, since a classroom behind one NAT
//! address shares it. The requests of an address that carry no verified credential are one
//! client between them: they spend from one more bucket of one client's limit (the request
//! that makes a session, `POST /api/session`, excepted, so that a classroom can start
//! together). A request past any of its buckets is answered `429 rate_limited` with
//! `Retry-After`, before any work is done; the address is checked first, so that a refused
//! request costs no database lookup.
//!
//! An IPv6 client is counted by its /64 network, the block one subscriber is given, so that
//! walking the addresses of one's own network buys no fresh bucket.
//!
//! A check costs more than one request: every request runs within a [`Share`] of its
//! address, which caps the checks the address runs at once, and the time its checks took is
//! charged against the buckets it spent from, [`CHECK_MILLISECONDS_PER_REQUEST`] to a
//! request (a grader token's are not: staff grade whole classes at once). Failed joins by
//! code have a bucket per address of their own (`Config::failed_join_limit`, see
//! [`JoinGuesses`]).
//!
//! Pages, static files, `/readyz` and `/metrics` spend from a separate, more generous bucket
//! per address (`Config::page_rate_limit`); `/healthz` is never limited.
//!
//! The address is the TCP peer's, unless the peer is a trusted reverse proxy
//! (`Config::trusted_proxies`): then `X-Forwarded-For` names the client — the right-most
//! address in it that is not itself a trusted proxy. From anyone else the header is ignored.
//!
//! Rationale: a hand-written bucket table instead of a rate-limiting crate, because the keys
//! are ours, a check is charged by its cost, and the table must stay bounded: past
//! `MAX_CLIENTS` entries the full buckets are dropped (a full bucket is the same as none),
//! then, when that is not room enough, the fullest tenth of the rest. The emptiest buckets,
//! the clients being limited, are the last ever dropped, so a full table opens no limit.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRef, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::auth;
use crate::config::{Config, RateLimit};
use crate::error::{AppError, ErrorCode};
use crate::net::Cidr;
use crate::share::{CheckTurns, Share};
use crate::store::Store;

/// How many milliseconds of checking cost as much as one request: a check that ran 5 ms
/// spends six requests' worth (the request and its 5 ms) from each of its buckets.
pub const CHECK_MILLISECONDS_PER_REQUEST: f64 = 1.0;

/// How many times one client's limit a peer address gets by default
/// (`Config::address_rate_factor`).
pub const SHARED_ADDRESS_FACTOR: f64 = 10.0;

/// How long a credential's verification is remembered for choosing its bucket. A token
/// revoked meanwhile still names its bucket this long; it is refused by the routes at once.
pub const IDENTITY_CACHE_TTL: Duration = Duration::from_secs(60);

/// How long the limiter waits for the database to verify a credential; past it (an outage)
/// the request is counted by its address alone, and nothing is remembered.
const VERIFY_TIMEOUT: Duration = Duration::from_millis(500);

/// The most clients remembered at once.
const MAX_CLIENTS: usize = 100_000;

/// The most verified (or refused) credentials remembered at once.
const MAX_IDENTITIES: usize = 20_000;

struct Bucket {
    tokens: f64,
    updated: Instant,
    /// The limit it fills up to, for telling how full it is when the table must shrink.
    limit: RateLimit,
}

impl Bucket {
    /// How full the bucket would be at `now`, from 0 (empty or in debt) to 1 (full).
    fn fill(&self, now: Instant) -> f64 {
        let refill =
            now.saturating_duration_since(self.updated).as_secs_f64() * self.limit.per_second;
        ((self.tokens + refill) / self.limit.burst).clamp(0.0, 1.0)
    }
}

/// The key of a client's address: an IPv4 address, or the /64 network of an IPv6 one.
pub fn address_key(ip: IpAddr) -> String {
    match ip.to_canonical() {
        IpAddr::V4(v4) => format!("ip:{v4}"),
        IpAddr::V6(v6) => {
            let network = Ipv6Addr::from(u128::from(v6) & !(u128::from(u64::MAX)));
            format!("ip:{network}/64")
        }
    }
}

/// The address key of a request, as the rate limiter counted it (a request extension that
/// the limiter sets on every `/api` request it lets through).
#[derive(Clone, Debug)]
pub struct ClientAddress(pub String);

/// The client's address: the peer, or what a trusted proxy's `X-Forwarded-For` says — the
/// right-most hop that is not a trusted proxy (a hop that does not parse ends the walk: what
/// is left of it was written by someone untrusted).
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &[Cidr]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    let peer = peer.to_canonical();
    if !is_trusted(peer) {
        return peer;
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        let parsed = IpAddr::from_str(hop)
            .ok()
            .or_else(|| SocketAddr::from_str(hop).ok().map(|s| s.ip()));
        match parsed {
            Some(ip) => {
                client = ip.to_canonical();
                if !is_trusted(client) {
                    break;
                }
            }
            None => break,
        }
    }
    client
}

/// Verifications of credentials, by the sha256 of the credential.
#[derive(Default)]
struct Identities {
    known: HashMap<[u8; 32], (Option<String>, Instant)>,
}

/// The bucket of every client seen recently. Cheap to clone: clones share the buckets.
#[derive(Clone)]
pub struct RateLimiter {
    limit: RateLimit,
    address_factor: f64,
    page: Option<RateLimit>,
    failed_joins: RateLimit,
    trusted: Arc<Vec<Cidr>>,
    /// The most buckets remembered ([`MAX_CLIENTS`]; smaller in tests).
    capacity: usize,
    buckets: Arc<Mutex<HashMap<String, Bucket>>>,
    identities: Arc<Mutex<Identities>>,
    checks: CheckTurns,
}

impl RateLimiter {
    /// A limiter with `limit` per client, [`SHARED_ADDRESS_FACTOR`] times it per address, no
    /// page limit, no trusted proxy, and the default limits of failed joins and checks.
    pub fn new(limit: RateLimit) -> RateLimiter {
        let defaults = Config::default();
        RateLimiter {
            limit,
            address_factor: SHARED_ADDRESS_FACTOR,
            page: None,
            failed_joins: defaults.failed_join_limit,
            trusted: Arc::new(Vec::new()),
            capacity: MAX_CLIENTS,
            buckets: Arc::new(Mutex::new(HashMap::new())),
            identities: Arc::new(Mutex::new(Identities::default())),
            checks: CheckTurns::new(
                defaults.checks_per_address,
                defaults.checks_waiting_per_address,
            ),
        }
    }

    /// The limiter `config` asks for; `None` when its rate limit is off.
    pub fn from_config(config: &Config) -> Option<RateLimiter> {
        config.rate_limit.map(|limit| RateLimiter {
            address_factor: config.address_rate_factor.max(1.0),
            page: config.page_rate_limit,
            failed_joins: config.failed_join_limit,
            trusted: Arc::new(config.trusted_proxies.clone()),
            checks: CheckTurns::new(config.checks_per_address, config.checks_waiting_per_address),
            ..RateLimiter::new(limit)
        })
    }

    /// The turns of each address to run checks.
    pub fn check_turns(&self) -> &CheckTurns {
        &self.checks
    }

    /// One address's limit: the address factor times one client's.
    fn per_address(&self) -> RateLimit {
        RateLimit {
            per_second: self.limit.per_second * self.address_factor,
            burst: self.limit.burst * self.address_factor,
        }
    }

    /// Takes one request from `client`'s bucket; `Err(wait)` when it is empty. `factor`
    /// scales the limit (1 for one client, [`SHARED_ADDRESS_FACTOR`] for an address).
    pub fn take(&self, client: &str, factor: f64, now: Instant) -> Result<(), Duration> {
        let limit = RateLimit {
            per_second: self.limit.per_second * factor,
            burst: self.limit.burst * factor,
        };
        self.take_all(&[(client, limit)], now, true)
            .map_err(|(wait, _)| wait)
    }

    /// Takes one request from each bucket, or from none when one of them is empty (then
    /// `Err((wait, index of that bucket))`). With `spend` false, only looks.
    fn take_all(
        &self,
        buckets_of: &[(&str, RateLimit)],
        now: Instant,
        spend: bool,
    ) -> Result<(), (Duration, usize)> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        // Only a client the table does not hold yet needs room.
        let incoming = buckets_of
            .iter()
            .filter(|(client, _)| !buckets.contains_key(*client))
            .count();
        if buckets.len() + incoming > self.capacity {
            make_room(&mut buckets, self.capacity, incoming, now);
        }
        for (i, (client, limit)) in buckets_of.iter().enumerate() {
            let bucket = buckets.entry(client.to_string()).or_insert(Bucket {
                tokens: limit.burst,
                updated: now,
                limit: *limit,
            });
            let refill =
                now.saturating_duration_since(bucket.updated).as_secs_f64() * limit.per_second;
            bucket.tokens = (bucket.tokens + refill).min(limit.burst);
            bucket.updated = now;
            bucket.limit = *limit;
            if bucket.tokens < 1.0 {
                return Err((
                    Duration::from_secs_f64((1.0 - bucket.tokens) / limit.per_second),
                    i,
                ));
            }
        }
        if spend {
            for (client, _) in buckets_of {
                if let Some(b) = buckets.get_mut(*client) {
                    b.tokens -= 1.0;
                }
            }
        }
        Ok(())
    }

    /// Takes `tokens` more from each bucket (after the request that spent one from each):
    /// what a request's checks cost. A bucket may go into debt, at most its burst, and is
    /// refused until it has refilled past one token.
    fn charge(&self, buckets_of: &[(&str, RateLimit)], tokens: f64, now: Instant) {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        for (client, limit) in buckets_of {
            if let Some(bucket) = buckets.get_mut(*client) {
                let refill =
                    now.saturating_duration_since(bucket.updated).as_secs_f64() * limit.per_second;
                bucket.tokens =
                    ((bucket.tokens + refill).min(limit.burst) - tokens).max(-limit.burst);
                bucket.updated = now;
            }
        }
    }

    pub fn clients(&self) -> usize {
        self.buckets.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// The request's client address (see [`client_address`]); `None` without a peer address
    /// (a request made in-process, as tests do).
    fn address(&self, request: &Request) -> Option<IpAddr> {
        request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(peer)| client_address(peer.ip(), request.headers(), &self.trusted))
    }

    /// The verified identity of the request's credential: `token:<name>` for a valid grader
    /// token, `session:<student>` for a valid session; `None` without a credential or with one
    /// that does not verify.
    async fn identity(&self, headers: &HeaderMap, store: &Store) -> Option<String> {
        let (credential, kind) = if let Some(value) = headers.get(header::AUTHORIZATION) {
            (value.as_bytes().to_vec(), b't')
        } else {
            (auth::cookie_student(headers)?.into_bytes(), b'c')
        };
        let mut hasher = Sha256::new();
        hasher.update([kind]);
        hasher.update(&credential);
        let key: [u8; 32] = hasher.finalize().into();
        let now = Instant::now();
        {
            let identities = self.identities.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((identity, at)) = identities.known.get(&key) {
                if now.saturating_duration_since(*at) < IDENTITY_CACHE_TTL {
                    return identity.clone();
                }
            }
        }
        let verified = tokio::time::timeout(VERIFY_TIMEOUT, verify(headers, kind, store)).await;
        // An outage proves nothing either way: count by address, remember nothing.
        let Ok(Ok(identity)) = verified else {
            return None;
        };
        let mut identities = self.identities.lock().unwrap_or_else(|p| p.into_inner());
        if identities.known.len() >= MAX_IDENTITIES {
            identities
                .known
                .retain(|_, (_, at)| now.saturating_duration_since(*at) < IDENTITY_CACHE_TTL);
            if identities.known.len() >= MAX_IDENTITIES {
                identities.known.clear();
            }
        }
        identities.known.insert(key, (identity.clone(), now));
        identity
    }

    fn refused(&self, wait: Duration, limit: RateLimit, what: &str) -> Response {
        let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
        tracing::debug!(bucket = what, "rate limited");
        AppError::of(ErrorCode::RateLimited,
            format!(
                "too many requests from this {what}; wait {seconds} s (the limit is {} per second, {} at once)",
                limit.per_second, limit.burst
            ),
        )
        .retry_after(seconds)
        .into_response()
    }
}

/// Makes room in a table past `capacity` for `incoming` more buckets: drops the full ones
/// (a full bucket is the same as none), then, if that is not enough, the fullest tenth of
/// the table, the longest unused first among equals. The emptiest buckets, the clients being
/// limited now (each refused request refreshes its bucket), are the last to go.
fn make_room(
    buckets: &mut HashMap<String, Bucket>,
    capacity: usize,
    incoming: usize,
    now: Instant,
) {
    buckets.retain(|_, b| b.fill(now) < 1.0);
    if buckets.len() + incoming <= capacity {
        return;
    }
    let drop_count = (buckets.len() + incoming - capacity)
        .max(capacity / 10)
        .min(buckets.len());
    let mut by_fill: Vec<(f64, Instant, String)> = buckets
        .iter()
        .map(|(key, b)| (b.fill(now), b.updated, key.clone()))
        .collect();
    // The fullest first, and of equally full ones the longest unused; `select_nth_unstable_by`
    // puts the `drop_count` first before the cut without sorting the rest.
    if drop_count < by_fill.len() {
        by_fill.select_nth_unstable_by(drop_count, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    }
    tracing::warn!(
        clients = buckets.len(),
        dropped = drop_count,
        "the rate limiter's table is full of busy clients; forgetting the least limited"
    );
    for (_, _, key) in by_fill.into_iter().take(drop_count) {
        buckets.remove(&key);
    }
}

/// Asks the database who a credential is. `kind` is `t` for an `Authorization` header, `c`
/// for the session cookie.
async fn verify(headers: &HeaderMap, kind: u8, store: &Store) -> Result<Option<String>, AppError> {
    if kind == b't' {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        return match token {
            Some(token) => Ok(auth::verify_token(store, token)
                .await?
                .map(|found| format!("token:{}", found.token_hash))),
            None => Ok(None),
        };
    }
    verified_session(headers, store).await
}

/// The student of the request's session, when the session is valid.
async fn verified_session(headers: &HeaderMap, store: &Store) -> Result<Option<String>, AppError> {
    let Some(secret_hash) = auth::cookie_student(headers) else {
        return Ok(None);
    };
    Ok(store
        .session_by_secret(&secret_hash)
        .await?
        .map(|student| format!("session:{}", student.id)))
}

/// Middleware: answers `429 rate_limited` to a client past its limit. Its state is the
/// limiter (`None` when limits are off) and the store, to verify credentials.
pub async fn rate_limit(
    State(limiter): State<Option<RateLimiter>>,
    State(store): State<Store>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(limiter) = limiter else {
        return next.run(request).await;
    };
    let path = request.uri().path();
    let (is_probe, is_api) = (path == "/healthz", path.starts_with("/api"));
    if is_probe {
        return next.run(request).await;
    }
    let makes_session = request.method() == Method::POST && path == "/api/session";
    let address = match limiter.address(&request) {
        Some(ip) => address_key(ip),
        None => "ip:unknown".to_string(),
    };
    let now = Instant::now();
    if !is_api {
        let Some(page) = limiter.page else {
            return next.run(request).await;
        };
        let key = format!("page:{address}");
        return match limiter.take_all(&[(&key, page)], now, true) {
            Ok(()) => next.run(request).await,
            Err((wait, _)) => limiter.refused(wait, page, "address"),
        };
    }
    let per_address = limiter.per_address();
    // The address first, without spending: a refused request costs no verification.
    if let Err((wait, _)) = limiter.take_all(&[(&address, per_address)], now, false) {
        return limiter.refused(wait, per_address, "address");
    }
    let identity = limiter.identity(request.headers(), &store).await;
    let mut buckets = vec![(address.clone(), per_address)];
    match &identity {
        Some(identity) => buckets.push((identity.clone(), limiter.limit)),
        // Without a verified credential, the address's requests are one client between them.
        None if !makes_session => buckets.push((format!("anonymous:{address}"), limiter.limit)),
        None => {}
    }
    let buckets: Vec<(&str, RateLimit)> = buckets.iter().map(|(k, l)| (k.as_str(), *l)).collect();
    match limiter.take_all(&buckets, Instant::now(), true) {
        Ok(()) => {}
        Err((wait, 0)) => return limiter.refused(wait, per_address, "address"),
        Err((wait, _)) => return limiter.refused(wait, limiter.limit, "client"),
    }
    request
        .extensions_mut()
        .insert(ClientAddress(address.clone()));
    let share = Share::new(address, limiter.checks.clone());
    let response = share.clone().scope(next.run(request)).await;
    // What the request's checks took is charged as requests; a grader token's are not.
    let staff = identity.as_deref().is_some_and(|i| i.starts_with("token:"));
    let cost = share.cost();
    if !staff && !cost.is_zero() {
        let tokens = cost.as_secs_f64() * 1000.0 / CHECK_MILLISECONDS_PER_REQUEST;
        limiter.charge(&buckets, tokens, Instant::now());
    }
    response
}

/// The failed joins left to the request's address (`POST /api/classes/join` takes it before
/// anything else): a join by code is refused with `429 rate_limited` while its address has
/// none left, whatever the code, and each code that names no class spends one
/// ([`JoinGuesses::failed`]). The bucket is the address's, not the session's, so making new
/// sessions buys no more guesses. Nothing is limited when rate limits are off.
pub struct JoinGuesses(Option<(RateLimiter, String)>);

impl JoinGuesses {
    /// Spends one failed join of the address.
    pub fn failed(&self) {
        if let Some((limiter, key)) = &self.0 {
            let _ = limiter.take_all(&[(key, limiter.failed_joins)], Instant::now(), true);
        }
    }
}

impl<S> FromRequestParts<S> for JoinGuesses
where
    Option<RateLimiter>: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Some(limiter) = Option::<RateLimiter>::from_ref(state) else {
            return Ok(JoinGuesses(None));
        };
        let address = parts
            .extensions
            .get::<ClientAddress>()
            .map_or_else(|| "ip:unknown".to_string(), |a| a.0.clone());
        let key = format!("join:{address}");
        let limit = limiter.failed_joins;
        if let Err((wait, _)) = limiter.take_all(&[(&key, limit)], Instant::now(), false) {
            let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
            return Err(AppError::of(ErrorCode::RateLimited,
                format!(
                    "too many join codes from this address named no class; wait {seconds} s and check the code with your instructor"
                ),
            )
            .retry_after(seconds));
        }
        Ok(JoinGuesses(Some((limiter, key))))
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

#[cfg(test)]
mod table_tests {
    use super::*;

    #[test]
    fn a_full_table_forgets_its_fullest_buckets_and_keeps_limiting_the_busiest() {
        let limit = RateLimit {
            per_second: 0.001,
            burst: 3.0,
        };
        let limiter = RateLimiter {
            capacity: 100,
            ..RateLimiter::new(limit)
        };
        let start = Instant::now();
        // A flooder that has spent its bucket, among 99 other clients that spent theirs before
        // it did (so that no bucket ties with the flooder's when the table makes room).
        for i in 0..99 {
            for _ in 0..3 {
                assert!(limiter.take(&format!("busy-{i}"), 1.0, start).is_ok());
            }
        }
        for _ in 0..3 {
            assert!(limiter
                .take("flooder", 1.0, start + Duration::from_micros(100))
                .is_ok());
        }
        // The flooder keeps trying, so its bucket is the one used last.
        assert!(limiter
            .take("flooder", 1.0, start + Duration::from_micros(500))
            .is_err());
        // Then a crowd of new clients, each with one request, while the flooder keeps trying:
        // the table makes room and the flooder stays limited.
        for i in 0..1000 {
            let now = start + Duration::from_millis(i + 1);
            assert!(limiter.take(&format!("new-{i}"), 1.0, now).is_ok());
            assert!(limiter.clients() <= 100, "the table stays bounded");
            assert!(
                limiter.take("flooder", 1.0, now).is_err(),
                "the flooder is limited after {i} new clients"
            );
        }
        // Room was made from the new clients' nearly full buckets, not the spent ones: only
        // the first room, when every bucket was spent, cost a tenth of them.
        let kept = (0..99)
            .filter(|i| {
                let buckets = limiter.buckets.lock().unwrap();
                buckets.contains_key(&format!("busy-{i}"))
            })
            .count();
        assert!(kept >= 89, "{kept} of 99 spent buckets kept");
    }

    #[test]
    fn an_ipv6_address_is_counted_by_its_64_network() {
        let key = |ip: &str| address_key(ip.parse().unwrap());
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff:1:2:3"));
        assert_eq!(key("2001:db8:1:2::1"), "ip:2001:db8:1:2::/64");
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("203.0.113.4"), "ip:203.0.113.4");
        assert_eq!(key("::ffff:203.0.113.4"), "ip:203.0.113.4");
    }
}

#[cfg(test)]
mod address_tests {
    use super::*;

    #[test]
    fn forwarded_for_names_the_client_only_through_trusted_proxies() {
        let trusted: Vec<Cidr> = vec!["10.0.0.0/8".parse().unwrap(), "::1".parse().unwrap()];
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            "6.6.6.6, 1.2.3.4, 10.1.1.1".parse().unwrap(),
        );
        let proxy: IpAddr = "10.9.9.9".parse().unwrap();
        let stranger: IpAddr = "5.5.5.5".parse().unwrap();
        assert_eq!(
            client_address(proxy, &headers, &trusted),
            "1.2.3.4".parse::<IpAddr>().unwrap()
        );
        assert_eq!(client_address(stranger, &headers, &trusted), stranger);
        assert_eq!(client_address(proxy, &headers, &[]), proxy);
        headers.insert("x-forwarded-for", "garbage, 10.2.2.2".parse().unwrap());
        assert_eq!(
            client_address(proxy, &headers, &trusted),
            "10.2.2.2".parse::<IpAddr>().unwrap()
        );
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("0.0.0.0/0"
            .parse::<Cidr>()
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
        assert!("::ffff:10.0.0.1"
            .parse::<IpAddr>()
            .map(|ip| trusted[0].contains(ip))
            .unwrap());
    }
}
