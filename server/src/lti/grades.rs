//! Grade passback (LTI Assignment and Grade Services): a launched student's best score for a
//! scenario goes to the line item of the resource link they launched from.
//!
//! Nothing is queued beside the attempt: the score to send is derived from the attempts
//! themselves, which are durable before their answer, so a score cannot be lost between the
//! attempt and the send. What the platform accepted last is recorded only after it accepted
//! it; until then the send is retried with backoff (a platform's `Retry-After` is honoured).
//! A crash between the platform's acceptance and the record sends the same score once more,
//! which changes nothing in the gradebook. A regrade of an attempt (`pipeline-builder
//! regrade`) changes its score, and the new best is sent with a new, later timestamp.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sqlx::FromRow;

use super::keys;
use super::outbound::Outbound;
use super::store::Platform;
use crate::store::{with_pool, Store, StoreResult};

/// The scope of posting scores.
pub const SCORE_SCOPE: &str = "https://purl.imsglobal.org/spec/lti-ags/scope/score";
/// The scope of creating line items.
pub const LINEITEM_SCOPE: &str = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem";
/// The scope of reading line items only.
pub const LINEITEM_READONLY_SCOPE: &str =
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly";
/// The longest wait between two tries.
const BACKOFF_MAX: Duration = Duration::from_secs(15 * 60);
/// How long a server holds a score it is sending, so that two servers on one database never
/// send it at once; longer than a send's timeouts (a token and a score, 15 s each).
const CLAIM: Duration = Duration::from_secs(60);

/// A target whose best score the platform has not accepted yet.
#[derive(Clone, Debug)]
pub struct Due {
    pub student: String,
    pub scenario: String,
    pub platform: String,
    pub sub: String,
    pub lineitem: String,
    pub score: i32,
    pub max_score: i32,
    /// The newest attempt counted.
    pub through: DateTime<Utc>,
    pub last_timestamp: Option<DateTime<Utc>>,
    pub tries: i32,
}

/// Where a student's score for a scenario goes, and what the platform accepted last.
#[derive(FromRow)]
struct Target {
    student: String,
    scenario: String,
    platform: String,
    sub: String,
    lineitem: String,
    sent_through: Option<DateTime<Utc>>,
    sent_timestamp: Option<DateTime<Utc>>,
    tries: i32,
}

/// An attempt with one of its regrades, if it has any.
#[derive(FromRow)]
struct ScoredAttempt {
    id: String,
    score: i32,
    max_score: i32,
    created_at: DateTime<Utc>,
    class_id: Option<String>,
    r_score: Option<i32>,
    r_max: Option<i32>,
    r_at: Option<DateTime<Utc>>,
}

impl ScoredAttempt {
    /// The regrade's score, else the attempt's own.
    fn score(&self) -> (i32, i32) {
        match (self.r_at, self.r_score, self.r_max) {
            (Some(_), Some(score), Some(max)) => (score, max),
            _ => (self.score, self.max_score),
        }
    }
}

impl Store {
    /// Records where `student`'s score for `scenario` goes (a launch with a line item).
    pub async fn set_grade_target(
        &self,
        student: &str,
        scenario: &str,
        platform: &str,
        sub: &str,
        lineitem: &str,
    ) -> StoreResult<()> {
        let writer = self.writer().await;
        with_pool!(writer, |pool| {
            sqlx::query(
            "INSERT INTO lti_grade_targets (student, scenario, platform, sub, lineitem, tries) VALUES ($1, $2, $3, $4, $5, 0) \
             ON CONFLICT (student, scenario, lineitem) DO NOTHING")
            .bind(student).bind(scenario).bind(platform).bind(sub).bind(lineitem)
            .execute(pool).await.map(|_| ())
        })
    }

    /// The targets whose score changed since the platform accepted one (a new attempt, or a
    /// regrade of one), whose next try is due at `now`. An attempt's score is that of its
    /// newest regrade, if it was regraded; the score sent is the best of them, leaving out
    /// attempts made for a class after the student's due date there, or the score staff set
    /// by hand when there is one.
    pub async fn due_grades(&self, now: DateTime<Utc>) -> StoreResult<Vec<Due>> {
        with_pool!(self, |pool| {
            let targets = sqlx::query_as::<_, Target>(
                "SELECT student, scenario, platform, sub, lineitem, sent_through, sent_timestamp, tries \
                 FROM lti_grade_targets WHERE next_try_at IS NULL OR next_try_at <= $1")
                .bind(now).fetch_all(pool).await?;
            let mut due = Vec::new();
            for t in targets {
                let (student, scenario) = (&t.student, &t.scenario);
                let rows = sqlx::query_as::<_, ScoredAttempt>(
                    "SELECT a.id, a.score, a.max_score, a.created_at, a.class_id, r.score AS r_score, r.max_score AS r_max, r.created_at AS r_at \
                     FROM attempts AS a LEFT JOIN regrades AS r ON r.attempt = a.id \
                     WHERE a.student = $1 AND a.scenario = $2 ORDER BY a.id, r.created_at")
                    .bind(student).bind(scenario).fetch_all(pool).await?;
                // The student's due date in each class they made attempts for: a late attempt
                // does not count.
                let mut due_in: BTreeMap<String, Option<DateTime<Utc>>> = BTreeMap::new();
                for r in &rows {
                    if let Some(class) = &r.class_id {
                        if let std::collections::btree_map::Entry::Vacant(slot) =
                            due_in.entry(class.clone())
                        {
                            let at: Option<DateTime<Utc>> =
                                sqlx::query_scalar(crate::store::DUE_AT)
                                    .bind(slot.key())
                                    .bind(student)
                                    .bind(scenario)
                                    .fetch_one(pool)
                                    .await?;
                            slot.insert(at);
                        }
                    }
                }
                // Per attempt, its score now: the newest regrade's, else its own.
                let mut now_scores: Vec<(String, i32, i32)> = Vec::new();
                let mut through: Option<DateTime<Utc>> = None;
                for r in rows {
                    let made = r.created_at;
                    if r.class_id
                        .as_ref()
                        .and_then(|c| due_in.get(c).copied().flatten())
                        .is_some_and(|d| made > d)
                    {
                        continue;
                    }
                    through = through.max(Some(made)).max(r.r_at);
                    let score = r.score();
                    match now_scores.last_mut() {
                        Some(last) if last.0 == r.id => (last.1, last.2) = score,
                        _ => now_scores.push((r.id, score.0, score.1)),
                    }
                }
                let mut best = now_scores.iter().max_by_key(|s| s.1).map(|s| (s.1, s.2));
                // A score staff set by hand (the newest, in any class) is the one sent.
                let set: Option<(i32, i32, DateTime<Utc>)> = sqlx::query_as(
                    "SELECT score, max_score, set_at FROM score_overrides WHERE student = $1 AND scenario = $2 \
                     ORDER BY set_at DESC LIMIT 1")
                    .bind(student).bind(scenario).fetch_optional(pool).await?;
                if let Some((score, max_score, at)) = set {
                    best = Some((score, max_score));
                    through = through.max(Some(at));
                }
                let (Some(through), Some(best)) = (through, best) else {
                    continue;
                };
                if t.sent_through.is_some_and(|s| s >= through) {
                    continue;
                }
                due.push(Due {
                    score: best.0,
                    max_score: best.1,
                    student: t.student,
                    scenario: t.scenario,
                    platform: t.platform,
                    sub: t.sub,
                    lineitem: t.lineitem,
                    through,
                    last_timestamp: t.sent_timestamp,
                    tries: t.tries,
                });
            }
            Ok(due)
        })
    }

    /// Takes the send of `d` for [`CLAIM`]: false when another server (or round) holds it,
    /// or has sent it since `d` was read (then the score is no longer due).
    async fn claim_grade(&self, d: &Due, now: DateTime<Utc>) -> StoreResult<bool> {
        let writer = self.writer().await;
        let until = now + chrono::Duration::from_std(CLAIM).unwrap_or_default();
        with_pool!(writer, |pool| {
            sqlx::query(
            "UPDATE lti_grade_targets SET next_try_at = $4 \
             WHERE student = $1 AND scenario = $2 AND lineitem = $3 AND (next_try_at IS NULL OR next_try_at <= $5) \
             AND (sent_through IS NULL OR sent_through < $6)")
            .bind(&d.student).bind(&d.scenario).bind(&d.lineitem).bind(until).bind(now).bind(d.through)
            .execute(pool).await.map(|r| r.rows_affected() == 1)
        })
    }

    async fn grade_sent(&self, d: &Due, timestamp: DateTime<Utc>) -> StoreResult<()> {
        let writer = self.writer().await;
        with_pool!(writer, |pool| {
            sqlx::query(
            "UPDATE lti_grade_targets SET sent_score = $4, sent_through = $5, sent_timestamp = $6, tries = 0, next_try_at = NULL, last_error = NULL \
             WHERE student = $1 AND scenario = $2 AND lineitem = $3")
            .bind(&d.student).bind(&d.scenario).bind(&d.lineitem).bind(d.score).bind(d.through).bind(timestamp)
            .execute(pool).await.map(|_| ())
        })
    }

    async fn grade_failed(
        &self,
        d: &Due,
        next: DateTime<Utc>,
        error: &str,
        timestamp: DateTime<Utc>,
    ) -> StoreResult<()> {
        let writer = self.writer().await;
        with_pool!(writer, |pool| {
            sqlx::query(
            "UPDATE lti_grade_targets SET tries = tries + 1, next_try_at = $4, last_error = $5, sent_timestamp = $6 \
             WHERE student = $1 AND scenario = $2 AND lineitem = $3")
            .bind(&d.student).bind(&d.scenario).bind(&d.lineitem).bind(next).bind(error).bind(timestamp)
            .execute(pool).await.map(|_| ())
        })
    }
}

/// What one round of sending did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub sent: usize,
    pub failed: usize,
}

/// Sends every score due at `now`; failures are kept for a later round.
pub async fn send_due(
    store: &Store,
    outbound: &Outbound,
    now: DateTime<Utc>,
) -> StoreResult<Round> {
    let due = store.due_grades(now).await?;
    if due.is_empty() {
        return Ok(Round::default());
    }
    let platforms: HashMap<String, Platform> = store
        .lti_platforms()
        .await?
        .into_iter()
        .map(|p| (p.id.clone(), p))
        .collect();
    let mut round = Round::default();
    for d in due {
        if !store.claim_grade(&d, now).await? {
            continue;
        }
        // Each score carries a timestamp later than the last one sent for it.
        let mut timestamp = Utc::now();
        if let Some(last) = d.last_timestamp {
            if timestamp <= last {
                timestamp = last + chrono::Duration::milliseconds(1);
            }
        }
        let result = match platforms.get(&d.platform) {
            Some(p) => post_score(store, outbound, p, &d, timestamp).await,
            None => Err(Failure::retry("the platform is no longer registered")),
        };
        match result {
            Ok(()) => {
                store.grade_sent(&d, timestamp).await?;
                round.sent += 1;
            }
            Err(f) => {
                let backoff = f.retry_after.unwrap_or_else(|| {
                    Duration::from_secs(2u64.saturating_pow(d.tries.clamp(0, 20) as u32))
                        .min(BACKOFF_MAX)
                });
                let next = now + chrono::Duration::from_std(backoff).unwrap_or_default();
                tracing::warn!(student = %d.student, scenario = %d.scenario, error = %f.why, retry_in_s = backoff.as_secs(), "a score was not accepted; it is sent again later");
                store.grade_failed(&d, next, &f.why, timestamp).await?;
                round.failed += 1;
            }
        }
    }
    Ok(round)
}

/// Sends what is due every `period` until the server stops.
pub fn spawn(
    store: Store,
    outbound: Arc<Outbound>,
    period: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        loop {
            tick.tick().await;
            if let Err(e) = send_due(&store, &outbound, Utc::now()).await {
                tracing::warn!("sending scores: {e}");
            }
        }
    })
}

struct Failure {
    why: String,
    retry_after: Option<Duration>,
}

impl Failure {
    fn retry(why: impl Into<String>) -> Failure {
        Failure {
            why: why.into(),
            retry_after: None,
        }
    }
}

/// The origin (scheme, host and port) of `url`, if it has one.
fn origin(url: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()
        .map(|u| u.origin().ascii_serialization())
        .filter(|o| o != "null")
}

/// True when `url` is on one of the platform's own origins: those of its issuer and its
/// registered endpoints, and the service origins registered with it (`--service-origin`).
/// The tool sends the platform's access token only there, so that a launch cannot point it
/// at another host (an internal one, say).
pub fn on_platform(p: &Platform, url: &str) -> bool {
    let Some(target) = origin(url) else {
        return false;
    };
    [&p.issuer, &p.auth_url, &p.token_url, &p.jwks_url]
        .into_iter()
        .chain(&p.service_origins)
        .filter_map(|u| origin(u))
        .any(|o| o == target)
}

/// The score endpoint of a line item: its URL with `/scores` added to the path.
pub fn scores_url(lineitem: &str) -> Option<String> {
    let mut url = reqwest::Url::parse(lineitem).ok()?;
    let path = format!("{}/scores", url.path().trim_end_matches('/'));
    url.set_path(&path);
    Some(url.to_string())
}

async fn post_score(
    store: &Store,
    outbound: &Outbound,
    p: &Platform,
    d: &Due,
    timestamp: DateTime<Utc>,
) -> Result<(), Failure> {
    let url =
        scores_url(&d.lineitem).ok_or_else(|| Failure::retry("the line item is not a URL"))?;
    if !on_platform(p, &url) {
        return Err(Failure::retry(format!(
            "{url} is not on one of the platform's origins: no score is sent there"
        )));
    }
    let token = access_token(store, outbound, p, SCORE_SCOPE).await?;
    let body = serde_json::json!({
        "userId": d.sub,
        "scoreGiven": d.score,
        "scoreMaximum": d.max_score,
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
        "timestamp": timestamp.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    });
    let answer = outbound
        .http()
        .post(&url)
        .bearer_auth(&token)
        .header("content-type", "application/vnd.ims.lis.v1.score+json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| Failure::retry(format!("{url}: {e}")))?;
    let status = answer.status();
    if status.is_success() {
        return Ok(());
    }
    if status.as_u16() == 401 {
        outbound.forget_tokens(&p.id);
    }
    let retry_after = answer
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    Err(Failure {
        why: format!("{url} answered {status}"),
        retry_after,
    })
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// An access token for `scope`: cached until shortly before it expires, else asked for with a
/// client assertion signed by the tool's key (RFC 7523).
async fn access_token(
    store: &Store,
    outbound: &Outbound,
    p: &Platform,
    scope: &str,
) -> Result<String, Failure> {
    let cache_key = (p.id.clone(), p.token_url.clone(), scope.to_string());
    if let Some(token) = outbound.token(&cache_key) {
        return Ok(token);
    }
    let key = keys::current(store).await.map_err(Failure::retry)?;
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some(key.kid.clone());
    let now = Utc::now().timestamp();
    let jti = {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| Failure::retry(e.to_string()))?;
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    let assertion = jsonwebtoken::encode(
        &header,
        &serde_json::json!({
            "iss": p.client_id, "sub": p.client_id, "aud": p.token_url,
            "iat": now, "exp": now + 300, "jti": jti,
        }),
        &jsonwebtoken::EncodingKey::from_rsa_pem(key.private_pem.as_bytes())
            .map_err(|e| Failure::retry(e.to_string()))?,
    )
    .map_err(|e| Failure::retry(e.to_string()))?;
    let answer = outbound
        .http()
        .post(&p.token_url)
        .form(&[
            ("grant_type", "client_credentials"),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ),
            ("client_assertion", assertion.as_str()),
            ("scope", scope),
        ])
        .send()
        .await
        .map_err(|e| Failure::retry(format!("{}: {e}", p.token_url)))?;
    if !answer.status().is_success() {
        return Err(Failure::retry(format!(
            "the token endpoint {} answered {}",
            p.token_url,
            answer.status()
        )));
    }
    let token: TokenAnswer = answer
        .json()
        .await
        .map_err(|e| Failure::retry(format!("the token endpoint's answer: {e}")))?;
    let lasts = Duration::from_secs(token.expires_in.unwrap_or(3600).saturating_sub(60).max(1));
    outbound.keep_token(cache_key, token.access_token.clone(), lasts);
    Ok(token.access_token)
}

/// The line item of a resource link whose launch named none: the one made for it before, or
/// one made now on the platform (`POST` to its line items container), once per resource link.
/// The `endDateTime` of a line item, read from the platform (on one of its own origins) with
/// an access token for reading line items; `None` when it has none.
pub async fn line_item_end(
    store: &Store,
    outbound: &Outbound,
    p: &Platform,
    lineitem: &str,
) -> Result<Option<DateTime<Utc>>, String> {
    if !on_platform(p, lineitem) {
        return Err(format!(
            "{lineitem} is not on one of the platform's origins"
        ));
    }
    let token = access_token(store, outbound, p, LINEITEM_READONLY_SCOPE)
        .await
        .map_err(|f| f.why)?;
    let answer = outbound
        .http()
        .get(lineitem)
        .bearer_auth(&token)
        .header("accept", "application/vnd.ims.lis.v2.lineitem+json")
        .send()
        .await
        .map_err(|e| format!("{lineitem}: {e}"))?;
    if !answer.status().is_success() {
        return Err(format!("{lineitem} answered {}", answer.status()));
    }
    let item: serde_json::Value = answer
        .json()
        .await
        .map_err(|e| format!("the line item: {e}"))?;
    match item.get("endDateTime").and_then(serde_json::Value::as_str) {
        None => Ok(None),
        Some(end) => DateTime::parse_from_rfc3339(end)
            .map(|t| Some(t.with_timezone(&Utc)))
            .map_err(|_| format!("the line item's endDateTime {end:?} is not an RFC 3339 date")),
    }
}

pub async fn line_item_for(
    store: &Store,
    outbound: &Outbound,
    p: &Platform,
    lineitems: &str,
    resource_link: &str,
    scenario: &shared::Scenario,
) -> Result<String, String> {
    if let Some(known) = store
        .lti_line_item(&p.id, resource_link)
        .await
        .map_err(|e| e.to_string())?
    {
        return Ok(known);
    }
    if !on_platform(p, lineitems) {
        return Err(format!(
            "{lineitems} is not on one of the platform's origins"
        ));
    }
    let token = access_token(store, outbound, p, LINEITEM_SCOPE)
        .await
        .map_err(|f| f.why)?;
    let points: u32 = scenario.requirements.iter().map(|r| r.points).sum();
    let answer = outbound
        .http()
        .post(lineitems)
        .bearer_auth(&token)
        .header("content-type", "application/vnd.ims.lis.v2.lineitem+json")
        .header("accept", "application/vnd.ims.lis.v2.lineitem+json")
        .body(
            serde_json::json!({
                "scoreMaximum": points,
                "label": scenario.title,
                "resourceLinkId": resource_link,
                "resourceId": scenario.id,
            })
            .to_string(),
        )
        .send()
        .await
        .map_err(|e| format!("{lineitems}: {e}"))?;
    if !answer.status().is_success() {
        return Err(format!("{lineitems} answered {}", answer.status()));
    }
    let made: serde_json::Value = answer
        .json()
        .await
        .map_err(|e| format!("the line item the platform made: {e}"))?;
    let id = made
        .get("id")
        .and_then(serde_json::Value::as_str)
        .ok_or("the line item the platform made has no id")?;
    if !on_platform(p, id) {
        return Err(format!(
            "the line item the platform made, {id}, is not on one of its origins"
        ));
    }
    store
        .link_lti_line_item(&p.id, resource_link, id)
        .await
        .map_err(|e| e.to_string())
}

impl Store {
    async fn lti_line_item(
        &self,
        platform: &str,
        resource_link: &str,
    ) -> StoreResult<Option<String>> {
        with_pool!(self, |pool| {
            Ok(sqlx::query_scalar(
                "SELECT lineitem FROM lti_line_items WHERE platform = $1 AND resource_link = $2",
            )
            .bind(platform)
            .bind(resource_link)
            .fetch_optional(pool)
            .await?)
        })
    }

    /// Keeps the line item made for a resource link; the one kept first wins.
    async fn link_lti_line_item(
        &self,
        platform: &str,
        resource_link: &str,
        lineitem: &str,
    ) -> StoreResult<String> {
        {
            let writer = self.writer().await;
            with_pool!(writer, |pool| {
                sqlx::query(
                "INSERT INTO lti_line_items (platform, resource_link, lineitem) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
                .bind(platform).bind(resource_link).bind(lineitem).execute(pool).await.map(|_| ())
            })?;
        }
        Ok(self
            .lti_line_item(platform, resource_link)
            .await?
            .unwrap_or_else(|| lineitem.to_string()))
    }
}
