//! The load generator behind `pipeline-builder load`: N clients, each with its own student
//! session, each making one request after another for S seconds, either a weighted mix of
//! the product's requests (checks, submissions, catalogue reads) or one fixed route.
//!
//! Every answer that is not a 2xx is an error, counted by status; a request that gets no
//! answer at all is counted as `transport`. Latencies are kept exactly (one `u32` of
//! microseconds per request) so the percentiles are true ones, not bucket bounds.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE, COOKIE, SET_COOKIE};
use reqwest::Method;
use serde::Serialize;
use serde_json::{json, Value as Json};

/// What each request of a client is.
#[derive(Clone, Debug)]
pub enum Workload {
    /// Weighted choice, request by request, of a check, a submission or a catalogue read.
    Mix {
        check: u32,
        submit: u32,
        catalogue: u32,
    },
    /// The same request every time.
    Route {
        method: Method,
        path: String,
        body: Option<Vec<u8>>,
    },
}

impl Workload {
    /// Parses `check=W,submit=W,catalogue=W` (missing kinds weigh 0).
    pub fn parse_mix(text: &str) -> Result<Workload, String> {
        let (mut check, mut submit, mut catalogue) = (0, 0, 0);
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, weight) = part
                .split_once('=')
                .ok_or_else(|| format!("\"{part}\" is not NAME=WEIGHT"))?;
            let weight: u32 = weight
                .trim()
                .parse()
                .map_err(|_| format!("the weight of {name} is not a whole number"))?;
            match name.trim() {
                "check" => check = weight,
                "submit" => submit = weight,
                "catalogue" => catalogue = weight,
                other => {
                    return Err(format!(
                        "unknown request kind \"{other}\"; use check, submit and catalogue"
                    ))
                }
            }
        }
        if check + submit + catalogue == 0 {
            return Err("the mix has no weight; for example check=6,submit=2,catalogue=2".into());
        }
        Ok(Workload::Mix {
            check,
            submit,
            catalogue,
        })
    }
}

#[derive(Clone, Debug)]
pub struct LoadConfig {
    pub url: String,
    pub clients: usize,
    pub duration: Duration,
    pub workload: Workload,
}

/// Latency percentiles in milliseconds.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct KindSummary {
    pub requests: u64,
    pub errors: u64,
    pub latency_ms: Latency,
}

/// What a run did.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub url: String,
    pub clients: usize,
    pub seconds: f64,
    pub requests: u64,
    pub errors: u64,
    /// Errors by status code, or `transport` for a request that got no answer.
    pub errors_by_status: BTreeMap<String, u64>,
    pub requests_per_second: f64,
    pub latency_ms: Latency,
    /// The same per kind of request (`check`, `submit`, `catalogue`, or the route).
    pub by_kind: BTreeMap<String, KindSummary>,
}

#[derive(Default)]
struct Tally {
    /// kind → latencies in microseconds.
    latencies_us: BTreeMap<&'static str, Vec<u32>>,
    /// kind → errors.
    errors: BTreeMap<&'static str, u64>,
    errors_by_status: BTreeMap<String, u64>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        for (kind, mut l) in other.latencies_us {
            self.latencies_us.entry(kind).or_default().append(&mut l);
        }
        for (kind, n) in other.errors {
            *self.errors.entry(kind).or_default() += n;
        }
        for (status, n) in other.errors_by_status {
            *self.errors_by_status.entry(status).or_default() += n;
        }
    }
}

/// The scenarios and starting designs the mix checks and submits, each request's URL and body
/// made once: the load generator shares the cores with the server it measures, so it does no
/// more per request than a client must.
#[derive(Clone)]
struct Corpus {
    designs: Vec<CorpusDesign>,
    /// `/api/scenarios`
    list_url: reqwest::Url,
    /// `/api/submissions`
    submit_url: reqwest::Url,
}

/// One scenario's starting design, as the mix sends it.
#[derive(Clone)]
struct CorpusDesign {
    /// `/api/scenarios/{id}`
    scenario_url: reqwest::Url,
    /// `/api/scenarios/{id}/check`
    check_url: reqwest::Url,
    /// The design: the check's body.
    check_body: Bytes,
    /// `{"scenario": id, "design": design}`: the submission's body.
    submit_body: Bytes,
}

fn url(text: String) -> Result<reqwest::Url, String> {
    reqwest::Url::parse(&text).map_err(|e| format!("{text}: {e}"))
}

async fn corpus(http: &reqwest::Client, base: &str) -> Result<Corpus, String> {
    let list: Json = http
        .get(format!("{base}/api/scenarios"))
        .send()
        .await
        .map_err(|e| format!("GET /api/scenarios: {e}"))?
        .json()
        .await
        .map_err(|e| format!("GET /api/scenarios: {e}"))?;
    let mut designs = Vec::new();
    for id in list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["id"].as_str())
    {
        let scenario: Json = http
            .get(format!("{base}/api/scenarios/{id}"))
            .send()
            .await
            .map_err(|e| format!("GET /api/scenarios/{id}: {e}"))?
            .json()
            .await
            .map_err(|e| format!("GET /api/scenarios/{id}: {e}"))?;
        if let Some(design) = scenario.get("starting_design").filter(|d| d.is_object()) {
            let submission = json!({"scenario": id, "design": design});
            designs.push(CorpusDesign {
                scenario_url: url(format!("{base}/api/scenarios/{id}"))?,
                check_url: url(format!("{base}/api/scenarios/{id}/check"))?,
                check_body: serde_json::to_vec(design)
                    .map_err(|e| e.to_string())?
                    .into(),
                submit_body: serde_json::to_vec(&submission)
                    .map_err(|e| e.to_string())?
                    .into(),
            });
        }
    }
    if designs.is_empty() {
        return Err("no scenario with a starting design to check".into());
    }
    Ok(Corpus {
        designs,
        list_url: url(format!("{base}/api/scenarios"))?,
        submit_url: url(format!("{base}/api/submissions"))?,
    })
}

/// A small, deterministic random sequence per client (xorshift), so that runs repeat.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Runs the load and summarises it.
pub async fn run(config: LoadConfig) -> Result<Summary, String> {
    let base = config.url.trim_end_matches('/').to_string();
    let setup = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let corpus = match &config.workload {
        Workload::Mix { .. } => Some(corpus(&setup, &base).await?),
        Workload::Route { .. } => None,
    };
    let started = Instant::now();
    let deadline = started + config.duration;
    let mut tasks = Vec::with_capacity(config.clients);
    for index in 0..config.clients {
        let base = base.clone();
        let workload = config.workload.clone();
        let corpus = corpus.clone();
        tasks.push(tokio::spawn(async move {
            client(index, base, workload, corpus, deadline).await
        }));
    }
    let mut tally = Tally::default();
    for task in tasks {
        tally.merge(task.await.map_err(|e| format!("a client stopped: {e}"))??);
    }
    let seconds = started.elapsed().as_secs_f64();
    let mut all: Vec<u32> = tally.latencies_us.values().flatten().copied().collect();
    let requests = all.len() as u64;
    let errors: u64 = tally.errors.values().sum();
    let mut by_kind = BTreeMap::new();
    for (kind, latencies) in tally.latencies_us.iter_mut() {
        let n = latencies.len() as u64;
        by_kind.insert(
            kind.to_string(),
            KindSummary {
                requests: n,
                errors: tally.errors.get(kind).copied().unwrap_or(0),
                latency_ms: percentiles(latencies),
            },
        );
    }
    Ok(Summary {
        url: base,
        clients: config.clients,
        seconds,
        requests,
        errors,
        errors_by_status: tally.errors_by_status,
        requests_per_second: if seconds > 0.0 {
            requests as f64 / seconds
        } else {
            0.0
        },
        latency_ms: percentiles(&mut all),
        by_kind,
    })
}

fn percentiles(latencies_us: &mut [u32]) -> Latency {
    latencies_us.sort_unstable();
    let at = |q: f64| -> f64 {
        if latencies_us.is_empty() {
            return 0.0;
        }
        let rank = ((q * latencies_us.len() as f64).ceil() as usize).clamp(1, latencies_us.len());
        f64::from(latencies_us[rank - 1]) / 1000.0
    };
    Latency {
        p50: at(0.50),
        p90: at(0.90),
        p99: at(0.99),
        max: at(1.0),
    }
}

/// One client: its own connections and session, one request after another until `deadline`.
///
/// Its connection pool keeps every idle connection: a connection goes back to the pool a
/// moment after its answer has been read, so the next request sometimes opens a second one,
/// and a pool that kept only one idle connection closed the other each time (about one check
/// in four paid a new TCP connection, on both sides). With both kept, a client settles on one
/// or two connections for the whole run, as a browser keeps its own open.
async fn client(
    index: usize,
    base: String,
    workload: Workload,
    corpus: Option<Corpus>,
    deadline: Instant,
) -> Result<Tally, String> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())?;
    let mut headers = HeaderMap::new();
    if let Some(c) = open_session(&http, &base, index)
        .await?
        .as_deref()
        .and_then(|c| HeaderValue::from_str(c).ok())
    {
        headers.insert(COOKIE, c);
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let mut tally = Tally::default();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((index as u64 + 1) * 0x2545_F491_4F6C_DD1D));
    let mut sent: u64 = 0;
    while Instant::now() < deadline {
        sent += 1;
        let next = Next {
            http: &http,
            base: &base,
            headers: &headers,
            index,
            sent,
        };
        let (kind, request) = next.request(&workload, corpus.as_ref(), &mut rng)?;
        let began = Instant::now();
        let status = status_once_read(request).await;
        let micros = u32::try_from(began.elapsed().as_micros()).unwrap_or(u32::MAX);
        tally.latencies_us.entry(kind).or_default().push(micros);
        let refusal = match status {
            Some(s) if s.is_success() => continue,
            Some(s) => s.as_u16().to_string(),
            None => "transport".into(),
        };
        *tally.errors.entry(kind).or_default() += 1;
        *tally.errors_by_status.entry(refusal).or_default() += 1;
    }
    Ok(tally)
}

/// The session, made by POST /api/session as the web app does; its cookie is sent back on
/// every request as a browser does. A 429 here (many clients opening sessions from one
/// address at once) is waited out, ten times at most.
async fn open_session(
    http: &reqwest::Client,
    base: &str,
    index: usize,
) -> Result<Option<String>, String> {
    let mut tries = 0;
    loop {
        tries += 1;
        match http.post(format!("{base}/api/session")).send().await {
            Ok(r) if r.status().is_success() => {
                return Ok(r
                    .headers()
                    .get(SET_COOKIE)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|c| c.split(';').next())
                    .map(str::to_string))
            }
            Ok(r) if r.status().as_u16() == 429 && tries < 10 => {
                let wait = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1);
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
            Ok(r) => {
                return Err(format!(
                    "client {index}: POST /api/session answered {}",
                    r.status()
                ))
            }
            Err(e) => return Err(format!("client {index}: POST /api/session: {e}")),
        }
    }
}

/// What one client needs to build its next request.
struct Next<'a> {
    http: &'a reqwest::Client,
    base: &'a str,
    headers: &'a HeaderMap,
    index: usize,
    /// How many requests this client has begun, this one included.
    sent: u64,
}

impl Next<'_> {
    /// The next request of `workload`, with the kind its latency is counted under.
    fn request(
        &self,
        workload: &Workload,
        corpus: Option<&Corpus>,
        rng: &mut Rng,
    ) -> Result<(&'static str, reqwest::RequestBuilder), String> {
        let (http, base) = (self.http, self.base);
        let (check, submit, catalogue) = match workload {
            Workload::Route { method, path, body } => {
                let mut r = http
                    .request(method.clone(), format!("{base}{path}"))
                    .headers(self.headers.clone());
                if let Some(b) = body {
                    r = r.body(b.clone());
                }
                return Ok(("route", r));
            }
            Workload::Mix {
                check,
                submit,
                catalogue,
            } => (*check, *submit, *catalogue),
        };
        let corpus = corpus.ok_or("no corpus for the mix")?;
        let design = &corpus.designs[(rng.next() % corpus.designs.len() as u64) as usize];
        let pick = rng.next() % u64::from(check + submit + catalogue);
        let request = if pick < u64::from(check) {
            let check = http.post(design.check_url.clone());
            ("check", check.body(design.check_body.clone()))
        } else if pick < u64::from(check + submit) {
            let key = format!("load-{}-{}-{}", self.index, self.sent, rng.next());
            (
                "submit",
                http.post(corpus.submit_url.clone())
                    .header("idempotency-key", key)
                    .body(design.submit_body.clone()),
            )
        } else if self.sent.is_multiple_of(2) {
            ("catalogue", http.get(corpus.list_url.clone()))
        } else {
            ("catalogue", http.get(design.scenario_url.clone()))
        };
        Ok((request.0, request.1.headers(self.headers.clone())))
    }
}

/// The answer's status once its whole body has arrived (a request is done when its body has
/// been read), or `None` when the request or the reading failed.
async fn status_once_read(request: reqwest::RequestBuilder) -> Option<reqwest::StatusCode> {
    let response = request.send().await.ok()?;
    let status = response.status();
    response.bytes().await.ok().map(|_| status)
}

/// The summary as a table for people.
pub fn table(summary: &Summary) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{} clients for {:.1} s against {}: {} requests, {:.0} requests/s, {} errors\n",
        summary.clients,
        summary.seconds,
        summary.url,
        summary.requests,
        summary.requests_per_second,
        summary.errors
    ));
    out.push_str(&format!(
        "{:<10} {:>10} {:>8} {:>10} {:>10} {:>10} {:>10}\n",
        "kind", "requests", "errors", "p50 ms", "p90 ms", "p99 ms", "max ms"
    ));
    let mut row = |name: &str, requests: u64, errors: u64, l: &Latency| {
        out.push_str(&format!(
            "{name:<10} {requests:>10} {errors:>8} {:>10.2} {:>10.2} {:>10.2} {:>10.2}\n",
            l.p50, l.p90, l.p99, l.max
        ));
    };
    for (kind, k) in &summary.by_kind {
        row(kind, k.requests, k.errors, &k.latency_ms);
    }
    row("all", summary.requests, summary.errors, &summary.latency_ms);
    if !summary.errors_by_status.is_empty() {
        let list: Vec<String> = summary
            .errors_by_status
            .iter()
            .map(|(s, n)| format!("{s}: {n}"))
            .collect();
        out.push_str(&format!("errors by status: {}\n", list.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mix_is_parsed_with_its_weights() {
        assert!(matches!(
            Workload::parse_mix("check=6,submit=2,catalogue=2"),
            Ok(Workload::Mix {
                check: 6,
                submit: 2,
                catalogue: 2
            })
        ));
        assert!(matches!(
            Workload::parse_mix("check=1"),
            Ok(Workload::Mix {
                check: 1,
                submit: 0,
                catalogue: 0
            })
        ));
        assert!(Workload::parse_mix("check=0").is_err());
        assert!(Workload::parse_mix("grade=1").is_err());
        assert!(Workload::parse_mix("check=x").is_err());
    }

    #[test]
    fn percentiles_are_ranks_of_the_sorted_latencies() {
        let mut l: Vec<u32> = (1..=100).rev().map(|ms| ms * 1000).collect();
        assert_eq!(
            percentiles(&mut l),
            Latency {
                p50: 50.0,
                p90: 90.0,
                p99: 99.0,
                max: 100.0
            }
        );
        assert_eq!(
            percentiles(&mut []),
            Latency {
                p50: 0.0,
                p90: 0.0,
                p99: 0.0,
                max: 0.0
            }
        );
    }
}
