//! What every request shares, and how each part of it is handed out on its own.
//!
//! [`AppState`] owns the parts; axum's `FromRef` gives a handler, an extractor or a middleware
//! just the part it uses (`State<Store>`, `State<Arc<Catalogue>>`, `State<Checker>`,
//! `State<Arc<Metrics>>`, `State<Arc<Config>>`, `State<Option<RateLimiter>>`,
//! `State<Arc<LiveCatalogue>>`, `State<Arc<Outbound>>`). So the modules that use a part depend on that part's module,
//! never on this one. `State<Arc<Catalogue>>` is the catalogue being served when the request
//! started, which `serve --watch` may replace while the request runs.

use std::sync::Arc;

use axum::extract::FromRef;
use tokio::sync::OwnedSemaphorePermit;

use crate::catalogue::Catalogue;
use crate::checker::Checker;
use crate::config::Config;
use crate::limit::RateLimiter;
use crate::lti::Outbound;
use crate::metrics::Metrics;
use crate::store::Store;
use crate::watch::LiveCatalogue;

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

struct Inner {
    store: Store,
    catalogue: Arc<LiveCatalogue>,
    metrics: Arc<Metrics>,
    config: Arc<Config>,
    checker: Checker,
    rate_limiter: Option<RateLimiter>,
    /// The client of learning platforms' services, with their keys and tokens.
    outbound: Arc<Outbound>,
}

impl AppState {
    pub fn new(store: Store, catalogue: Catalogue, config: Config) -> AppState {
        AppState::live(store, Arc::new(LiveCatalogue::new(catalogue)), config)
    }

    /// The state of a server whose catalogue may be replaced while it runs.
    pub fn live(store: Store, catalogue: Arc<LiveCatalogue>, config: Config) -> AppState {
        let metrics = Arc::new(Metrics::default());
        let checker = Checker::new(
            Arc::clone(&metrics),
            config.check_limits,
            config.inline_check_limits,
            config.verdict_cache_bytes,
        );
        let rate_limiter = RateLimiter::from_config(&config);
        crate::tables::spawn(
            &catalogue,
            config.check_limits,
            config.verdict_table_designs_max,
        );
        AppState(Arc::new(Inner {
            store,
            catalogue,
            metrics,
            config: Arc::new(config),
            checker,
            rate_limiter,
            outbound: Arc::new(Outbound::new()),
        }))
    }
    pub fn store(&self) -> &Store {
        &self.0.store
    }
    /// The catalogue being served now.
    pub fn catalogue(&self) -> Arc<Catalogue> {
        self.0.catalogue.current()
    }
    pub fn live_catalogue(&self) -> &Arc<LiveCatalogue> {
        &self.0.catalogue
    }
    pub fn metrics(&self) -> &Metrics {
        &self.0.metrics
    }
    pub fn config(&self) -> &Config {
        &self.0.config
    }
    pub fn checker(&self) -> &Checker {
        &self.0.checker
    }
    pub fn outbound(&self) -> &Arc<Outbound> {
        &self.0.outbound
    }
    pub fn rate_limiter(&self) -> Option<&RateLimiter> {
        self.0.rate_limiter.as_ref()
    }
    /// Waits for a turn to run a check off a request's thread (tests hold every turn to
    /// see what a busy server answers).
    pub async fn check_permit(&self) -> Option<OwnedSemaphorePermit> {
        self.0.checker.permit().await
    }
    /// Takes every turn of `address` to run checks (tests hold them to see what a busy
    /// address is answered); nothing when rate limits are off.
    pub async fn hold_check_turns(&self, address: std::net::IpAddr) -> Vec<crate::share::Turn> {
        match &self.0.rate_limiter {
            Some(limiter) => {
                limiter
                    .check_turns()
                    .hold_all(&crate::limit::address_key(address))
                    .await
            }
            None => Vec::new(),
        }
    }
    /// How many checks of `address` wait for a turn.
    pub fn checks_waiting(&self, address: std::net::IpAddr) -> usize {
        self.0.rate_limiter.as_ref().map_or(0, |l| {
            l.check_turns().waiting(&crate::limit::address_key(address))
        })
    }
}

impl FromRef<AppState> for Arc<Outbound> {
    fn from_ref(state: &AppState) -> Arc<Outbound> {
        Arc::clone(&state.0.outbound)
    }
}

impl FromRef<AppState> for Store {
    fn from_ref(state: &AppState) -> Store {
        state.0.store.clone()
    }
}

impl FromRef<AppState> for Arc<Catalogue> {
    fn from_ref(state: &AppState) -> Arc<Catalogue> {
        state.0.catalogue.current()
    }
}

impl FromRef<AppState> for Arc<LiveCatalogue> {
    fn from_ref(state: &AppState) -> Arc<LiveCatalogue> {
        Arc::clone(&state.0.catalogue)
    }
}

impl FromRef<AppState> for Arc<Metrics> {
    fn from_ref(state: &AppState) -> Arc<Metrics> {
        Arc::clone(&state.0.metrics)
    }
}

impl FromRef<AppState> for Arc<Config> {
    fn from_ref(state: &AppState) -> Arc<Config> {
        Arc::clone(&state.0.config)
    }
}

impl FromRef<AppState> for Checker {
    fn from_ref(state: &AppState) -> Checker {
        state.0.checker.clone()
    }
}

impl FromRef<AppState> for Option<RateLimiter> {
    fn from_ref(state: &AppState) -> Option<RateLimiter> {
        state.0.rate_limiter.clone()
    }
}
