//! What the server keeps of its requests to learning platforms: one HTTP client, the
//! platforms' key sets and the access tokens their services gave. The server's state owns one
//! [`Outbound`], made at start-up, so nothing of it lives outside what a request is handed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::DecodingKey;

use super::page::Refusal;
use crate::error::ErrorCode;

/// How long a platform's key set is trusted before it is fetched again.
const JWKS_TTL: Duration = Duration::from_secs(10 * 60);
/// A key set fetched this recently is not fetched again for an unknown `kid`, so that launches
/// naming made-up keys cannot make the tool hammer the platform.
const JWKS_REFETCH_MIN: Duration = Duration::from_secs(5);
/// The longest a platform may take to answer any request of the tool's.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// The longest a platform may take to answer for its key set, which a launch waits for.
const JWKS_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Access tokens by registration, its token endpoint and scope. A token is the
/// registration's (its client id's), so two registrations sharing one token endpoint (hosted
/// Canvas tenants do) never share one.
pub type TokenKey = (String, String, String);

struct CachedSet {
    set: JwkSet,
    fetched: Instant,
}

struct CachedToken {
    token: String,
    until: Instant,
}

/// The client of the platforms' services and what it remembers of their answers.
pub struct Outbound {
    http: reqwest::Client,
    key_sets: Mutex<HashMap<String, CachedSet>>,
    tokens: Mutex<HashMap<TokenKey, CachedToken>>,
}

impl Default for Outbound {
    fn default() -> Outbound {
        Outbound::new()
    }
}

impl Outbound {
    /// A client that follows no redirect (a redirect could take an access token's request
    /// to a host that is not the platform's), with timeouts, and empty caches.
    pub fn new() -> Outbound {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Outbound {
            http,
            key_sets: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
        }
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The platform's key `kid`: from the cached key set, or from the set fetched again when
    /// the cached one is old or does not have it.
    pub async fn platform_key(&self, jwks_url: &str, kid: &str) -> Result<DecodingKey, Refusal> {
        let cached = {
            let sets = self.key_sets.lock().unwrap_or_else(|e| e.into_inner());
            sets.get(jwks_url).map(|c| {
                (
                    c.set.find(kid).cloned(),
                    c.fetched.elapsed() < JWKS_TTL,
                    c.fetched.elapsed() < JWKS_REFETCH_MIN,
                )
            })
        };
        let no_key = || Refusal::forbidden(format!("the platform's key set has no key {kid}"));
        let jwk = match cached {
            Some((Some(jwk), true, _)) => jwk,
            Some((None, _, true)) => return Err(no_key()),
            _ => {
                let set = self.fetch_jwks(jwks_url).await?;
                let found = set.find(kid).cloned();
                self.key_sets
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(
                        jwks_url.to_string(),
                        CachedSet {
                            set,
                            fetched: Instant::now(),
                        },
                    );
                found.ok_or_else(no_key)?
            }
        };
        DecodingKey::from_jwk(&jwk).map_err(|e| {
            Refusal::forbidden(format!("the platform's key {kid} cannot be used: {e}"))
        })
    }

    async fn fetch_jwks(&self, url: &str) -> Result<JwkSet, Refusal> {
        let request = self.http.get(url).timeout(JWKS_TIMEOUT);
        let answer = request.send().await.map_err(|e| {
            Refusal::of(
                ErrorCode::PlatformUnavailable,
                format!("the platform's key set ({url}) cannot be fetched: {e}"),
            )
        })?;
        if !answer.status().is_success() {
            return Err(Refusal::of(
                ErrorCode::PlatformUnavailable,
                format!(
                    "the platform's key set ({url}) answered {}",
                    answer.status()
                ),
            ));
        }
        answer.json::<JwkSet>().await.map_err(|e| {
            Refusal::of(
                ErrorCode::PlatformUnavailable,
                format!("the platform's key set ({url}) is not a JWKS: {e}"),
            )
        })
    }

    /// The access token kept for `key`, while it is still good.
    pub fn token(&self, key: &TokenKey) -> Option<String> {
        self.tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .filter(|t| t.until > Instant::now())
            .map(|t| t.token.clone())
    }

    /// Keeps an access token for `lasts`.
    pub fn keep_token(&self, key: TokenKey, token: String, lasts: Duration) {
        self.tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                key,
                CachedToken {
                    token,
                    until: Instant::now() + lasts,
                },
            );
    }

    /// Forgets every token of the registration `platform` (one was refused).
    pub fn forget_tokens(&self, platform: &str) {
        self.tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(p, _, _), _| p != platform);
    }
}
