//! LTI 1.3 launches against a test platform on a loopback port (its own RSA key and JWKS, which
//! the tool fetches over HTTP): a learner's login and launch, on SQLite and PostgreSQL; every
//! refusal, one case at a time, each creating nothing; the tool's keys and configuration.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use jsonwebtoken::{EncodingKey, Header};
use serde_json::{json, Value};
use server::config::Config;
use server::lti::store::Platform;
use server::Store;

use crate::common::{spawn_app_on, As, TempDir, TestApp};

pub(crate) const LTI: &str = "https://purl.imsglobal.org/spec/lti/claim/";
pub(crate) const PUBLIC: &str = "https://tool.example.edu";
pub(crate) const CLIENT: &str = "tool-client-1";
/// The client id of a second registration of the same platform (another activity of a course,
/// as Open edX registers each).
pub(crate) const CLIENT_2: &str = "tool-client-2";
pub(crate) const DEPLOYMENT: &str = "deployment-1";
pub(crate) const KID: &str = "platform-key-1";

/// The test platform: its issuer (its own URL), its keys and how often its JWKS was fetched.
pub(crate) struct TestPlatform {
    pub(crate) issuer: String,
    pub(crate) key: String,
    /// A key the platform never published.
    stranger: String,
    jwks_fetches: Arc<AtomicUsize>,
    pub(crate) grades: Arc<Gradebook>,
}

/// The platform's side of grade passback: a token endpoint that checks the tool's client
/// assertion against the tool's published keys, and a line item's score endpoint that can be
/// down.
#[derive(Default)]
pub(crate) struct Gradebook {
    pub(crate) tool_keys: std::sync::Mutex<Option<jsonwebtoken::jwk::JwkSet>>,
    down: std::sync::atomic::AtomicBool,
    refused: AtomicUsize,
    pub(crate) accepted: std::sync::Mutex<Vec<Value>>,
    /// The bearer token each accepted score came with, in the same order.
    bearers: std::sync::Mutex<Vec<String>>,
    /// Line items the tool made.
    made: std::sync::Mutex<Vec<Value>>,
    /// The `endDateTime` of the platform's line items, when it gives one.
    pub(crate) end_date: std::sync::Mutex<Option<String>>,
}

async fn lineitems_endpoint(
    axum::extract::State(book): axum::extract::State<Arc<Gradebook>>,
    headers: axum::http::HeaderMap,
    body: String,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok());
    if !bearer.is_some_and(|b| b.starts_with("Bearer platform-token-")) {
        return (StatusCode::UNAUTHORIZED, "no").into_response();
    }
    let host = headers
        .get("host")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let mut item: Value = serde_json::from_str(&body).unwrap();
    book.made.lock().unwrap().push(item.clone());
    item["id"] = json!(format!("http://{host}/lineitems/1"));
    (StatusCode::CREATED, axum::Json(item)).into_response()
}

/// A line item as the platform answers it, with its `endDateTime` when the test set one.
async fn lineitem_endpoint(
    axum::extract::State(book): axum::extract::State<Arc<Gradebook>>,
    axum::extract::Path(item): axum::extract::Path<String>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok());
    if !bearer.is_some_and(|b| b.starts_with("Bearer platform-token-")) {
        return (StatusCode::UNAUTHORIZED, "no").into_response();
    }
    let mut answer = json!({"id": item, "scoreMaximum": 3, "label": "safe-retry"});
    if let Some(end) = book.end_date.lock().unwrap().clone() {
        answer["endDateTime"] = json!(end);
    }
    axum::Json(answer).into_response()
}

async fn token_endpoint(
    axum::extract::State(book): axum::extract::State<Arc<Gradebook>>,
    axum::extract::Form(form): axum::extract::Form<std::collections::HashMap<String, String>>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let keys = book.tool_keys.lock().unwrap().clone();
    // The assertion's issuer is the registration's client id; the token is that client's own.
    let verified = (|| {
        let assertion = form.get("client_assertion")?;
        let header = jsonwebtoken::decode_header(assertion).ok()?;
        let keys = keys?;
        let key = jsonwebtoken::DecodingKey::from_jwk(keys.find(&header.kid?)?).ok()?;
        let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
        v.set_issuer(&[CLIENT, CLIENT_2]);
        v.set_audience(&[form.get("token_aud")?.as_str()]);
        jsonwebtoken::decode::<Value>(assertion, &key, &v).ok()
    })();
    let Some(client) = verified.as_ref().and_then(|t| t.claims["iss"].as_str()) else {
        return (StatusCode::UNAUTHORIZED, "bad client assertion").into_response();
    };
    if form.get("grant_type").map(String::as_str) != Some("client_credentials")
        || !matches!(
            form.get("scope").map(String::as_str),
            Some(
                server::lti::grades::SCORE_SCOPE
                    | server::lti::grades::LINEITEM_SCOPE
                    | server::lti::grades::LINEITEM_READONLY_SCOPE
            )
        )
    {
        return (StatusCode::UNAUTHORIZED, "bad client assertion").into_response();
    }
    axum::Json(json!({
        "access_token": format!("platform-token-{client}"),
        "token_type": "Bearer",
        "expires_in": 3600,
    }))
    .into_response()
}

async fn score_endpoint(
    axum::extract::State(book): axum::extract::State<Arc<Gradebook>>,
    headers: axum::http::HeaderMap,
    body: String,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if book.down.load(Ordering::SeqCst) {
        book.refused.fetch_add(1, Ordering::SeqCst);
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", "1")],
            "down",
        )
            .into_response();
    }
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok());
    let typed = headers.get("content-type").and_then(|v| v.to_str().ok());
    let Some(bearer) = bearer.filter(|b| b.starts_with("Bearer platform-token-")) else {
        return (StatusCode::UNAUTHORIZED, "no").into_response();
    };
    if typed != Some("application/vnd.ims.lis.v1.score+json") {
        return (StatusCode::UNAUTHORIZED, "no").into_response();
    }
    book.bearers.lock().unwrap().push(bearer.to_string());
    book.accepted
        .lock()
        .unwrap()
        .push(serde_json::from_str(&body).unwrap());
    StatusCode::NO_CONTENT.into_response()
}

fn rsa_pem() -> (String, String, String) {
    use base64::Engine;
    use rsa::pkcs8::{EncodePrivateKey, LineEnding};
    use rsa::traits::PublicKeyParts;
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    (
        key.to_pkcs8_pem(LineEnding::LF).unwrap().to_string(),
        b64.encode(key.n().to_bytes_be()),
        b64.encode(key.e().to_bytes_be()),
    )
}

/// Starts the platform: an axum app on a loopback port whose `/jwks` publishes one key.
pub(crate) async fn start_platform() -> TestPlatform {
    // Made once for every test platform: generating RSA keys is the slowest part of these
    // tests, and the tests beside them share the machine.
    static KEYS: std::sync::OnceLock<((String, String, String), String)> =
        std::sync::OnceLock::new();
    let ((pem, n, e), stranger) = KEYS.get_or_init(|| (rsa_pem(), rsa_pem().0)).clone();
    let fetches = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&fetches);
    let jwks =
        json!({"keys": [{"kty": "RSA", "kid": KID, "alg": "RS256", "use": "sig", "n": n, "e": e}]});
    let grades = Arc::new(Gradebook::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let token_url = format!("http://{address}/token");
    let app = axum::Router::new()
        .route(
            "/jwks",
            axum::routing::get(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                let jwks = jwks.clone();
                async move { axum::Json(jwks) }
            }),
        )
        .route(
            "/token",
            axum::routing::post(
                move |state: axum::extract::State<Arc<Gradebook>>,
                      axum::extract::Form(mut form): axum::extract::Form<
                    std::collections::HashMap<String, String>,
                >| {
                    form.insert("token_aud".into(), token_url.clone());
                    token_endpoint(state, axum::extract::Form(form))
                },
            ),
        )
        .route(
            "/lineitems/{item}/scores",
            axum::routing::post(score_endpoint),
        )
        .route("/lineitems", axum::routing::post(lineitems_endpoint))
        .route("/lineitems/{item}", axum::routing::get(lineitem_endpoint))
        .with_state(Arc::clone(&grades));
    tokio::spawn(async move { axum::serve(listener, app).await });
    TestPlatform {
        issuer: format!("http://{address}"),
        key: pem,
        stranger,
        jwks_fetches: fetches,
        grades,
    }
}

impl TestPlatform {
    pub(crate) fn registration(&self) -> Platform {
        self.registration_of("test-platform", CLIENT)
    }

    /// A registration of this platform with its own id and client id.
    pub(crate) fn registration_of(&self, id: &str, client: &str) -> Platform {
        Platform {
            id: id.into(),
            issuer: self.issuer.clone(),
            client_id: client.into(),
            auth_url: format!("{}/auth", self.issuer),
            token_url: format!("{}/token", self.issuer),
            jwks_url: format!("{}/jwks", self.issuer),
            deployments: vec![DEPLOYMENT.into()],
            service_origins: Vec::new(),
        }
    }

    /// The claims of a learner's resource link launch.
    pub(crate) fn claims(&self, nonce: &str, sub: &str) -> Value {
        let now = chrono::Utc::now().timestamp();
        json!({
            "iss": self.issuer, "aud": CLIENT, "sub": sub, "exp": now + 300, "iat": now,
            "nonce": nonce, "name": "Ada Lovelace",
            format!("{LTI}message_type"): "LtiResourceLinkRequest",
            format!("{LTI}version"): "1.3.0",
            format!("{LTI}deployment_id"): DEPLOYMENT,
            format!("{LTI}target_link_uri"): format!("{PUBLIC}/lti/launch"),
            format!("{LTI}resource_link"): {"id": "resource-link-1"},
            format!("{LTI}roles"): ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"],
            format!("{LTI}custom"): {"scenario": "safe-retry"},
            format!("{LTI}context"): {"id": "course-1", "title": "Data Engineering 101"},
        })
    }

    pub(crate) fn sign(&self, claims: &Value, kid: &str, pem: &str) -> String {
        let mut header = Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some(kid.into());
        jsonwebtoken::encode(
            &header,
            claims,
            &EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
        )
        .unwrap()
    }
}

/// A test platform registered with a tool on `store`.
pub(crate) async fn registered(store: &Store) -> (TestPlatform, TestApp) {
    let platform = start_platform().await;
    assert!(store
        .add_lti_platform(&platform.registration())
        .await
        .unwrap());
    let app = tool_on(store.clone()).await;
    (platform, app)
}

pub(crate) async fn tool_on(store: Store) -> TestApp {
    spawn_app_on(
        store,
        Config {
            public_url: Some(PUBLIC.into()),
            // LTI runs over HTTPS, where a login can leave its cookie in its browser.
            https: true,
            ..Config::default()
        },
        TempDir::new("lti"),
    )
}

/// A login the platform started, as the browser that started it holds it: the state and
/// nonce the tool sent to the platform's authorization endpoint, and the cookie the login left
/// (over HTTPS).
pub(crate) struct Started {
    pub(crate) state: String,
    pub(crate) nonce: String,
    pub(crate) cookie: Option<String>,
}

/// Starts a login as the platform does, for the registration of `CLIENT`.
pub(crate) async fn login(app: &TestApp, platform: &TestPlatform) -> Started {
    login_for(app, platform, CLIENT).await
}

/// Starts a login as the platform does, for the registration of `client`.
pub(crate) async fn login_for(app: &TestApp, platform: &TestPlatform, client: &str) -> Started {
    let uri = format!(
        "/lti/login?iss={}&login_hint=user-hint&target_link_uri={}&client_id={client}&lti_message_hint=m1",
        urlencode(&platform.issuer),
        urlencode(&format!("{PUBLIC}/lti/launch"))
    );
    let answer = app.get(&uri, &As::nobody()).await;
    assert_eq!(answer.status, StatusCode::FOUND, "{}", answer.text);
    let location = reqwest::Url::parse(answer.header("location").unwrap()).unwrap();
    assert!(location
        .as_str()
        .starts_with(&format!("{}/auth?", platform.issuer)));
    let q: std::collections::HashMap<String, String> =
        location.query_pairs().into_owned().collect();
    assert_eq!(q["redirect_uri"], format!("{PUBLIC}/lti/launch"));
    assert_eq!(q["client_id"], client);
    assert_eq!(q["response_mode"], "form_post");
    assert_eq!(q["scope"], "openid");
    assert_eq!(q["lti_message_hint"], "m1");
    Started {
        state: q["state"].clone(),
        nonce: q["nonce"].clone(),
        cookie: answer.cookie(),
    }
}

pub(crate) fn urlencode(text: &str) -> String {
    reqwest::Url::parse_with_params("http://x/", &[("v", text)])
        .unwrap()
        .query()
        .unwrap()
        .trim_start_matches("v=")
        .to_string()
}

/// The platform's auto-submitted form post of a launch, from the browser that started its
/// login (with the login's cookie, when it left one).
pub(crate) async fn launch(
    app: &TestApp,
    id_token: &str,
    started: &Started,
) -> crate::common::Answer {
    let who = match &started.cookie {
        Some(cookie) => As::student(cookie),
        None => As::nobody(),
    };
    launch_as(app, id_token, &started.state, &who).await
}

/// A launch's form post with `state`, from a browser holding `who`'s cookies.
async fn launch_as(app: &TestApp, id_token: &str, state: &str, who: &As) -> crate::common::Answer {
    let body = format!(
        "id_token={}&state={}",
        urlencode(id_token),
        urlencode(state)
    );
    app.send(
        Method::POST,
        "/lti/launch",
        who,
        &[
            ("content-type", "application/x-www-form-urlencoded"),
            ("origin", "https://platform.example"),
            ("sec-fetch-site", "cross-site"),
        ],
        Some(body.into_bytes()),
    )
    .await
}

pub(crate) fn session_cookie(answer: &crate::common::Answer) -> String {
    answer.cookie().expect("the launch sets the session cookie")
}

async fn a_learner_launches_signed_in_on_the_scenario(store: Store) {
    let (platform, app) = registered(&store).await;
    let started = login(&app, &platform).await;
    let nonce = started.nonce.clone();
    let token = platform.sign(&platform.claims(&nonce, "learner-1"), KID, &platform.key);
    let answer = launch(&app, &token, &started).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text);
    let location = answer.header("location").unwrap().to_string();
    assert!(
        location.starts_with("/scenarios/safe-retry#lti-handoff="),
        "{location}"
    );
    let cookie = session_cookie(&answer);
    let me = app.get("/api/session", &As::student(&cookie)).await;
    assert_eq!(me.status, StatusCode::OK, "{}", me.text);
    assert_eq!(me.body["display_name"], "Ada Lovelace");
    let student = me.body["student"].as_str().unwrap_or_default().to_string();
    assert!(!student.is_empty(), "{}", me.text);
    // The launched student works as any: an attempt is theirs.
    let attempt = app
        .post(
            "/api/submissions",
            &As::student(&cookie),
            &json!({"scenario": "safe-retry", "design": crate::common::passing_design("safe-retry")}),
        )
        .await;
    assert_eq!(attempt.status, StatusCode::CREATED, "{}", attempt.text);
    assert_eq!(attempt.body["student"], student.as_str());

    // The platform's course is a class, and the learner a member under their name; an
    // attempt can be made for it.
    let class = store
        .lti_course_class(&platform.issuer, DEPLOYMENT, "course-1")
        .await
        .unwrap()
        .expect("the course's class");
    let members = store.members(&class).await.unwrap();
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].display_name, "Ada Lovelace");
    let for_class = app
        .post(
            "/api/submissions",
            &As::student(&cookie),
            &json!({"scenario": "safe-retry", "class": class, "design": crate::common::passing_design("safe-retry")}),
        )
        .await;
    assert_eq!(for_class.status, StatusCode::CREATED, "{}", for_class.text);

    // An instructor of the course lands on its class's dashboard; no second class is made.
    let started_i = login(&app, &platform).await;
    let nonce_i = started_i.nonce.clone();
    let mut teacher = platform.claims(&nonce_i, "teacher-9");
    teacher[format!("{LTI}roles")] =
        json!(["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"]);
    let landed = launch(
        &app,
        &platform.sign(&teacher, KID, &platform.key),
        &started_i,
    )
    .await;
    assert_eq!(landed.status, StatusCode::SEE_OTHER, "{}", landed.text);
    assert!(
        landed
            .header("location")
            .unwrap()
            .starts_with(&format!("/instructor/classes/{class}#")),
        "{:?}",
        landed.header("location")
    );
    assert_eq!(
        store.members(&class).await.unwrap().len(),
        1,
        "an instructor is no member"
    );
    let classes = store.list_classes().await.unwrap();
    assert_eq!(
        classes
            .iter()
            .filter(|c| c.name == "Data Engineering 101")
            .count(),
        1
    );

    // The same token and state again: the login was spent.
    let replay = launch(&app, &token, &started).await;
    assert_eq!(replay.status, StatusCode::FORBIDDEN);
    assert!(replay.cookie().is_none());

    // A later launch of the same user is the same student.
    let started = login(&app, &platform).await;
    let nonce = started.nonce.clone();
    let token = platform.sign(&platform.claims(&nonce, "learner-1"), KID, &platform.key);
    let again = launch(&app, &token, &started).await;
    assert_eq!(again.status, StatusCode::SEE_OTHER);
    let me = app
        .get("/api/session", &As::student(&session_cookie(&again)))
        .await;
    assert_eq!(me.body["student"], student.as_str());
    assert_eq!(
        platform.jwks_fetches.load(Ordering::SeqCst),
        1,
        "the key set is cached"
    );

    // With the launch cookie, a cross-site write to any other route is still refused.
    let cross = app
        .send(
            Method::POST,
            "/api/submissions",
            &As::student(&cookie),
            &[("origin", "https://platform.example"), ("sec-fetch-site", "cross-site")],
            Some(
                serde_json::to_vec(&json!({"scenario": "safe-retry", "design": crate::common::passing_design("safe-retry")}))
                    .unwrap(),
            ),
        )
        .await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN, "{}", cross.text);
    let mine = app.get("/api/submissions", &As::student(&cookie)).await;
    assert_eq!(
        mine.body.as_array().unwrap().len(),
        2,
        "the refused write recorded nothing"
    );
}

crate::on_both_databases!(a_learner_launches_signed_in_on_the_scenario, |db| {
    a_learner_launches_signed_in_on_the_scenario(db.store().await).await;
});

/// What each refused launch changes in a valid one.
enum Change {
    /// The claims, before signing.
    Claims(fn(&mut Value, &str)),
    /// Signed by a key the platform never published, under the published key's id.
    StrangerKey,
    /// A key id the platform's key set does not have.
    UnknownKid,
    /// Signed with a shared secret (HS256).
    Hs256,
    /// A state the tool never set.
    MadeUpState,
    /// The nonce of another login.
    OtherNonce,
}

#[tokio::test]
async fn every_refused_launch_says_why_and_creates_nothing() {
    let dir = TempDir::new("lti-refusals");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    let cases: Vec<(&str, Change, StatusCode, &str)> = vec![
        (
            "a wrong signature",
            Change::StrangerKey,
            StatusCode::FORBIDDEN,
            "signature does not verify",
        ),
        (
            "an unknown kid",
            Change::UnknownKid,
            StatusCode::FORBIDDEN,
            "has no key",
        ),
        (
            "a wrong audience",
            Change::Claims(|c, _| c["aud"] = json!("another-tool")),
            StatusCode::FORBIDDEN,
            "audience",
        ),
        (
            "an azp that is not the client id",
            Change::Claims(|c, _| {
                c["aud"] = json!([CLIENT, "x"]);
                c["azp"] = json!("x");
            }),
            StatusCode::FORBIDDEN,
            "azp",
        ),
        (
            "several audiences without azp",
            Change::Claims(|c, _| c["aud"] = json!([CLIENT, "x"])),
            StatusCode::FORBIDDEN,
            "several audiences",
        ),
        (
            "an expired token",
            Change::Claims(|c, _| {
                let now = chrono::Utc::now().timestamp();
                c["exp"] = json!(now - 3600);
                c["iat"] = json!(now - 4000);
            }),
            StatusCode::FORBIDDEN,
            "expired",
        ),
        (
            "a token issued in the future",
            Change::Claims(|c, _| c["iat"] = json!(chrono::Utc::now().timestamp() + 3600)),
            StatusCode::FORBIDDEN,
            "future",
        ),
        (
            "another issuer",
            Change::Claims(|c, _| c["iss"] = json!("https://elsewhere.example")),
            StatusCode::FORBIDDEN,
            "issuer",
        ),
        (
            "a replayed nonce",
            Change::OtherNonce,
            StatusCode::FORBIDDEN,
            "nonce",
        ),
        (
            "no nonce",
            Change::Claims(|c, _| {
                c.as_object_mut().unwrap().remove("nonce");
            }),
            StatusCode::FORBIDDEN,
            "nonce",
        ),
        (
            "a wrong state",
            Change::MadeUpState,
            StatusCode::FORBIDDEN,
            "state",
        ),
        (
            "an unknown deployment",
            Change::Claims(|c, _| c[format!("{LTI}deployment_id")] = json!("deployment-9")),
            StatusCode::FORBIDDEN,
            "deployment-9",
        ),
        (
            "no deployment",
            Change::Claims(|c, _| {
                c.as_object_mut()
                    .unwrap()
                    .remove(&format!("{LTI}deployment_id"));
            }),
            StatusCode::BAD_REQUEST,
            "deployment_id",
        ),
        (
            "a missing message type",
            Change::Claims(|c, _| {
                c.as_object_mut()
                    .unwrap()
                    .remove(&format!("{LTI}message_type"));
            }),
            StatusCode::BAD_REQUEST,
            "message_type",
        ),
        (
            "another message type",
            Change::Claims(|c, _| {
                c[format!("{LTI}message_type")] = json!("LtiSubmissionReviewRequest")
            }),
            StatusCode::BAD_REQUEST,
            "LtiSubmissionReviewRequest",
        ),
        (
            "a wrong version",
            Change::Claims(|c, _| c[format!("{LTI}version")] = json!("1.1")),
            StatusCode::BAD_REQUEST,
            "1.3.0",
        ),
        (
            "no user",
            Change::Claims(|c, _| {
                c.as_object_mut().unwrap().remove("sub");
            }),
            StatusCode::BAD_REQUEST,
            "sub",
        ),
        ("HS256", Change::Hs256, StatusCode::BAD_REQUEST, "RS256"),
    ];
    for (i, (name, change, status, words)) in cases.into_iter().enumerate() {
        let sub = format!("refused-{i}");
        let mut started = login(&app, &platform).await;
        let nonce = started.nonce.clone();
        let mut claims = platform.claims(&nonce, &sub);
        let token = match change {
            Change::Claims(f) => {
                f(&mut claims, &nonce);
                platform.sign(&claims, KID, &platform.key)
            }
            Change::StrangerKey => platform.sign(&claims, KID, &platform.stranger),
            Change::UnknownKid => platform.sign(&claims, "no-such-key", &platform.key),
            Change::Hs256 => {
                let mut header = Header::new(jsonwebtoken::Algorithm::HS256);
                header.kid = Some(KID.into());
                jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(b"secret"))
                    .unwrap()
            }
            Change::MadeUpState => {
                started.state = "made-up-state".into();
                platform.sign(&claims, KID, &platform.key)
            }
            Change::OtherNonce => {
                let other = login(&app, &platform).await.nonce;
                claims["nonce"] = json!(other);
                platform.sign(&claims, KID, &platform.key)
            }
        };
        let answer = launch(&app, &token, &started).await;
        assert_eq!(answer.status, status, "{name}: {}", answer.text);
        assert!(
            answer.text.contains(words),
            "{name}: the page says {}",
            answer.text
        );
        assert!(
            answer
                .header("content-type")
                .unwrap()
                .starts_with("text/html"),
            "{name}"
        );
        assert!(answer.cookie().is_none(), "{name}: no session");
        assert_eq!(
            store.lti_student(&platform.issuer, &sub).await.unwrap(),
            None,
            "{name}: no student"
        );
        // The login was not spent: a refusal creates nothing and uses nothing.
        if started.state != "made-up-state" {
            assert!(
                store.lti_login(&started.state).await.unwrap().is_some(),
                "{name}: the login is still there"
            );
        }
    }
}

#[tokio::test]
async fn a_refused_login_says_why() {
    let dir = TempDir::new("lti-login");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    let target = urlencode(&format!("{PUBLIC}/lti/launch"));
    let cases = [
        ("/lti/login?login_hint=u".to_string(), StatusCode::BAD_REQUEST, "iss"),
        (format!("/lti/login?iss=https%3A%2F%2Funknown.example&login_hint=u&target_link_uri={target}"), StatusCode::FORBIDDEN, "no platform"),
        (format!("/lti/login?iss={}&login_hint=u&target_link_uri=https%3A%2F%2Fevil.example%2F", urlencode(&platform.issuer)), StatusCode::BAD_REQUEST, "not a page of this tool"),
        (format!("/lti/login?iss={}&login_hint=u&target_link_uri={}", urlencode(&platform.issuer), urlencode(&format!("{PUBLIC}.evil.example/lti/launch"))), StatusCode::BAD_REQUEST, "not a page of this tool"),
        (format!("/lti/login?iss={}&login_hint=u&target_link_uri={target}&lti_deployment_id=nine", urlencode(&platform.issuer)), StatusCode::FORBIDDEN, "deployment nine"),
    ];
    for (uri, status, words) in cases {
        let answer = app.get(&uri, &As::nobody()).await;
        assert_eq!(answer.status, status, "{uri}: {}", answer.text);
        assert!(answer.text.contains(words), "{uri}: {}", answer.text);
    }
    // A login by form post works as by query.
    let body = format!(
        "iss={}&login_hint=u&target_link_uri={target}&client_id={CLIENT}",
        urlencode(&platform.issuer)
    );
    let posted = app
        .send(
            Method::POST,
            "/lti/login",
            &As::nobody(),
            &[("content-type", "application/x-www-form-urlencoded")],
            Some(body.into_bytes()),
        )
        .await;
    assert_eq!(posted.status, StatusCode::FOUND, "{}", posted.text);
    // Without --public-url the tool says what it lacks.
    let dir2 = TempDir::new("lti-no-url");
    let bare = spawn_app_on(
        Store::connect(&dir2.sqlite_url()).await.unwrap(),
        Config::default(),
        TempDir::new("lti-bare"),
    );
    let answer = bare.get("/lti/config", &As::nobody()).await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(answer.text.contains("--public-url"));
}

#[tokio::test]
async fn the_tool_publishes_its_keys_and_the_urls_to_register() {
    let dir = TempDir::new("lti-keys");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let app = tool_on(store.clone()).await;
    let config = app.get("/lti/config", &As::nobody()).await;
    assert_eq!(config.status, StatusCode::OK);
    assert_eq!(
        config.body["oidc_initiation_url"],
        format!("{PUBLIC}/lti/login")
    );
    assert_eq!(
        config.body["redirect_uris"],
        json!([format!("{PUBLIC}/lti/launch")])
    );
    assert_eq!(config.body["public_jwk_url"], format!("{PUBLIC}/lti/jwks"));
    let jwks = app.get("/lti/jwks", &As::nobody()).await;
    let keys = jwks.body["keys"].as_array().unwrap().clone();
    assert_eq!(keys.len(), 1, "{}", jwks.text);
    assert_eq!(keys[0]["kty"], "RSA");
    assert_eq!(keys[0]["alg"], "RS256");
    // The key is made once: asked again, the same.
    let again = app.get("/lti/jwks", &As::nobody()).await;
    assert_eq!(again.body["keys"], json!(keys));
    // What the tool signs verifies with what it publishes.
    let current = server::lti::keys::current(&store).await.unwrap();
    let mut header = Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some(current.kid.clone());
    let token = jsonwebtoken::encode(
        &header,
        &json!({"iss": CLIENT, "exp": chrono::Utc::now().timestamp() + 60}),
        &EncodingKey::from_rsa_pem(current.private_pem.as_bytes()).unwrap(),
    )
    .unwrap();
    let set: jsonwebtoken::jwk::JwkSet = serde_json::from_value(jwks.body.clone()).unwrap();
    let jwk = set.find(&current.kid).unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    validation.set_required_spec_claims(&["exp"]);
    jsonwebtoken::decode::<Value>(
        &token,
        &jsonwebtoken::DecodingKey::from_jwk(jwk).unwrap(),
        &validation,
    )
    .expect("the tool's token verifies with its published key");
    // Rotated: the new key signs, the old one is still published.
    let new_kid = server::lti::keys::rotate(&store).await.unwrap();
    assert_ne!(new_kid, current.kid);
    let rotated = app.get("/lti/jwks", &As::nobody()).await;
    let kids: Vec<&str> = rotated.body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert!(
        kids.contains(&new_kid.as_str()) && kids.contains(&current.kid.as_str()),
        "{kids:?}"
    );
    assert_eq!(
        server::lti::keys::current(&store).await.unwrap().kid,
        new_kid
    );
}

crate::on_both_databases!(an_instructor_places_a_scenario_by_deep_linking, |db| {
    an_instructor_places_a_scenario_by_deep_linking(db.store().await).await;
});

async fn an_instructor_places_a_scenario_by_deep_linking(store: Store) {
    let (platform, app) = registered(&store).await;
    let request = |nonce: &str, role: &str| {
        let mut claims = platform.claims(nonce, "teacher-1");
        claims[format!("{LTI}message_type")] = json!("LtiDeepLinkingRequest");
        claims[format!("{LTI}roles")] = json!([format!(
            "http://purl.imsglobal.org/vocab/lis/v2/membership#{role}"
        )]);
        claims["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"] = json!({
            "deep_link_return_url": format!("{}/deep-link-return", platform.issuer),
            "accept_types": ["ltiResourceLink"],
            "data": "opaque-platform-data",
        });
        claims
    };
    // A learner cannot place an activity.
    let started = login(&app, &platform).await;
    let nonce = started.nonce.clone();
    let refused = launch(
        &app,
        &platform.sign(&request(&nonce, "Learner"), KID, &platform.key),
        &started,
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text);
    assert!(refused.text.contains("only an instructor"));

    let started = login(&app, &platform).await;
    let nonce = started.nonce.clone();
    let page = launch(
        &app,
        &platform.sign(&request(&nonce, "Instructor"), KID, &platform.key),
        &started,
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let policy = page.header("content-security-policy").unwrap();
    assert!(
        policy.contains(&format!("form-action {}", platform.issuer)),
        "{policy}"
    );
    assert!(
        policy.contains(&format!("frame-ancestors {}", platform.issuer)),
        "{policy}"
    );
    // One form per scenario, each posting its signed choice to the platform.
    assert_eq!(
        page.text.matches("<form method=\"post\"").count(),
        crate::common::scenarios().len()
    );
    let form = page
        .text
        .split("<form ")
        .find(|f| f.contains("data-scenario=\"safe-retry\""))
        .expect("a form for safe-retry");
    assert!(form.contains(&format!("action=\"{}/deep-link-return\"", platform.issuer)));
    let jwt = form
        .split("name=\"JWT\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    // The platform verifies it with the tool's published keys.
    let jwks: jsonwebtoken::jwk::JwkSet =
        serde_json::from_value(app.get("/lti/jwks", &As::nobody()).await.body).unwrap();
    let header = jsonwebtoken::decode_header(jwt).unwrap();
    let key =
        jsonwebtoken::DecodingKey::from_jwk(jwks.find(&header.kid.unwrap()).unwrap()).unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    validation.set_audience(&[&platform.issuer]);
    validation.set_issuer(&[CLIENT]);
    let claims = jsonwebtoken::decode::<Value>(jwt, &key, &validation)
        .expect("the platform accepts the tool's signature")
        .claims;
    assert_eq!(
        claims[format!("{LTI}message_type")],
        "LtiDeepLinkingResponse"
    );
    assert_eq!(claims[format!("{LTI}version")], "1.3.0");
    assert_eq!(claims[format!("{LTI}deployment_id")], DEPLOYMENT);
    assert_eq!(
        claims["https://purl.imsglobal.org/spec/lti-dl/claim/data"],
        "opaque-platform-data"
    );
    let items = claims["https://purl.imsglobal.org/spec/lti-dl/claim/content_items"]
        .as_array()
        .unwrap();
    assert_eq!(items.len(), 1);
    let scenario = crate::common::scenario("safe-retry");
    let points: u32 = scenario
        .scenario()
        .requirements
        .iter()
        .map(|r| r.points)
        .sum();
    assert_eq!(items[0]["type"], "ltiResourceLink");
    assert_eq!(items[0]["custom"]["scenario"], "safe-retry");
    assert_eq!(items[0]["lineItem"]["scoreMaximum"], points);
    assert_eq!(items[0]["title"], scenario.scenario().title.as_str());
}

crate::on_both_databases!(a_launched_learners_score_reaches_the_platform_once, |db| {
    a_launched_learners_score_reaches_the_platform_once_even_after_an_outage(db.store().await)
        .await;
});

async fn a_launched_learners_score_reaches_the_platform_once_even_after_an_outage(store: Store) {
    let (platform, app) = registered(&store).await;
    let jwks = app.get("/lti/jwks", &As::nobody()).await.body;
    *platform.grades.tool_keys.lock().unwrap() = Some(serde_json::from_value(jwks).unwrap());
    let lineitem = format!("{}/lineitems/1?type=score", platform.issuer);
    let started = login(&app, &platform).await;
    let nonce = started.nonce.clone();
    let mut claims = platform.claims(&nonce, "learner-7");
    claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = json!({
        "scope": [server::lti::grades::SCORE_SCOPE],
        "lineitem": lineitem,
    });
    let answer = launch(&app, &platform.sign(&claims, KID, &platform.key), &started).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text);
    let cookie = session_cookie(&answer);
    // Nothing to send before an attempt.
    let now = chrono::Utc::now();
    assert_eq!(
        server::lti::grades::send_due(&store, app.state.outbound(), now)
            .await
            .unwrap(),
        server::lti::grades::Round::default()
    );
    // A missed attempt, then a passing one; the platform is down.
    let mut attempts = Vec::new();
    for design in [
        crate::common::failing_design(),
        crate::common::passing_design("safe-retry"),
    ] {
        let a = app
            .post(
                "/api/submissions",
                &As::student(&cookie),
                &json!({"scenario": "safe-retry", "design": design}),
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.text);
        attempts.push(a.body);
    }
    platform.grades.down.store(true, Ordering::SeqCst);
    let round = server::lti::grades::send_due(&store, app.state.outbound(), chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(round, server::lti::grades::Round { sent: 0, failed: 1 });
    assert_eq!(platform.grades.refused.load(Ordering::SeqCst), 1);
    // Not due again before the platform's Retry-After.
    let round = server::lti::grades::send_due(&store, app.state.outbound(), chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(round, server::lti::grades::Round::default());
    // Back up: the score arrives, once.
    platform.grades.down.store(false, Ordering::SeqCst);
    let later = chrono::Utc::now() + chrono::Duration::seconds(5);
    let round = server::lti::grades::send_due(&store, app.state.outbound(), later)
        .await
        .unwrap();
    assert_eq!(round, server::lti::grades::Round { sent: 1, failed: 0 });
    let round = server::lti::grades::send_due(
        &store,
        app.state.outbound(),
        later + chrono::Duration::seconds(60),
    )
    .await
    .unwrap();
    assert_eq!(
        round,
        server::lti::grades::Round::default(),
        "nothing is sent twice"
    );
    let accepted = platform.grades.accepted.lock().unwrap().clone();
    assert_eq!(accepted.len(), 1, "{accepted:?}");
    let score = &accepted[0];
    let max: u32 = crate::common::scenario("safe-retry")
        .scenario()
        .requirements
        .iter()
        .map(|r| r.points)
        .sum();
    assert_eq!(score["userId"], "learner-7");
    assert_eq!(score["scoreGiven"], max, "the best attempt's score");
    assert_eq!(score["scoreMaximum"], max);
    assert_eq!(score["gradingProgress"], "FullyGraded");
    assert_eq!(score["activityProgress"], "Completed");
    let first_time =
        chrono::DateTime::parse_from_rfc3339(score["timestamp"].as_str().unwrap()).unwrap();
    // A new attempt sends again, with a later timestamp.
    let a = app
        .post(
            "/api/submissions",
            &As::student(&cookie),
            &json!({"scenario": "safe-retry", "design": crate::common::failing_design()}),
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let round = server::lti::grades::send_due(
        &store,
        app.state.outbound(),
        chrono::Utc::now() + chrono::Duration::seconds(120),
    )
    .await
    .unwrap();
    assert_eq!(round.sent, 1);
    let accepted = platform.grades.accepted.lock().unwrap().clone();
    assert_eq!(
        accepted[1]["scoreGiven"], max,
        "a later, lower attempt keeps the best score"
    );
    let second_time =
        chrono::DateTime::parse_from_rfc3339(accepted[1]["timestamp"].as_str().unwrap()).unwrap();
    assert!(second_time > first_time);
    // A regrade lowers the passing attempt's score (its scenario now asks for more): the new
    // best is sent, with a later timestamp still.
    let lower = max as i32 - 1;
    store
        .record_regrades(&[server::store::Regrade {
            attempt: attempts[1]["id"].as_str().unwrap().to_string(),
            scenario_hash: "a-changed-scenario".into(),
            verdict: None,
            error: None,
            score: lower,
            max_score: max as i32,
            passed: false,
            created_at: chrono::Utc::now(),
        }])
        .await
        .unwrap();
    let round = server::lti::grades::send_due(
        &store,
        app.state.outbound(),
        chrono::Utc::now() + chrono::Duration::seconds(180),
    )
    .await
    .unwrap();
    assert_eq!(round.sent, 1);
    let accepted = platform.grades.accepted.lock().unwrap().clone();
    assert_eq!(accepted.len(), 3);
    let failing_best = attempts[0]["score"].as_i64().unwrap().max(i64::from(lower));
    assert_eq!(accepted[2]["scoreGiven"], failing_best, "the regraded best");
    let third_time =
        chrono::DateTime::parse_from_rfc3339(accepted[2]["timestamp"].as_str().unwrap()).unwrap();
    assert!(third_time > second_time);
}

#[test]
fn the_score_url_of_a_line_item_keeps_its_query() {
    assert_eq!(
        server::lti::grades::scores_url(
            "https://lms.example/api/lti/courses/1/line_items/7?type=x"
        )
        .as_deref(),
        Some("https://lms.example/api/lti/courses/1/line_items/7/scores?type=x")
    );
}

/// The resume page's form post, from this tool's own page in a browser holding `who`'s
/// cookies, with the headers Chromium sends: the pages' `Referrer-Policy: no-referrer` makes
/// a form's `Origin` `null`, and `Sec-Fetch-Site` says the form is the tool's own.
async fn post_resume(app: &TestApp, code: &str, who: &As) -> crate::common::Answer {
    app.send(
        Method::POST,
        "/lti/resume",
        who,
        &[
            ("content-type", "application/x-www-form-urlencoded"),
            ("origin", "null"),
            ("sec-fetch-site", "same-origin"),
        ],
        Some(format!("code={}", urlencode(code)).into_bytes()),
    )
    .await
}

/// The handoff code a launch's answer carries, in its fragment or in the resume page's query.
fn handoff_code(answer: &crate::common::Answer) -> String {
    let location = answer.header("location").expect("a redirect");
    location
        .split_once("#lti-handoff=")
        .or_else(|| location.split_once("/lti/resume?code="))
        .map(|(_, code)| code.to_string())
        .unwrap_or_else(|| panic!("no handoff code in {location}"))
}

#[tokio::test]
async fn a_frame_that_keeps_no_cookie_hands_the_student_to_a_new_window_that_names_them_once() {
    let dir = TempDir::new("lti-handoff");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    let started = login(&app, &platform).await;
    let answer = launch(
        &app,
        &platform.sign(
            &platform.claims(&started.nonce, "framed-1"),
            KID,
            &platform.key,
        ),
        &started,
    )
    .await;
    let launched = app
        .get("/api/session", &As::student(&session_cookie(&answer)))
        .await
        .body["student"]
        .clone();
    let code = handoff_code(&answer);
    // The new window's page names who it will sign in and asks; by itself it signs nobody
    // in and spends nothing.
    let uri = format!("/lti/resume?code={code}");
    let page = app.get(&uri, &As::nobody()).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(
        page.text.contains("<strong>Ada Lovelace</strong>"),
        "{}",
        page.text
    );
    assert!(
        page.text
            .contains("<form method=\"post\" action=\"/lti/resume\" target=\"_blank\">"),
        "a page that may be in a frame opens a new window: {}",
        page.text
    );
    assert!(page.header("set-cookie").is_none());
    let top = app
        .send(
            Method::GET,
            &uri,
            &As::nobody(),
            &[("sec-fetch-dest", "document")],
            None,
        )
        .await;
    assert!(
        top.text.contains("Continue as Ada Lovelace") && !top.text.contains("_blank"),
        "a top-level page continues in place: {}",
        top.text
    );
    // A post that does not show it comes from the tool's own page (an opaque `Origin` and no
    // `Sec-Fetch-Site`, as a sandboxed page of another site can send) is refused and spends
    // nothing.
    let opaque = app
        .send(
            Method::POST,
            "/lti/resume",
            &As::nobody(),
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                ("origin", "null"),
            ],
            Some(format!("code={}", urlencode(&code)).into_bytes()),
        )
        .await;
    assert_eq!(opaque.status, StatusCode::FORBIDDEN, "{}", opaque.text);
    assert!(opaque.header("set-cookie").is_none());
    // Its form signs the new window in as the launched student, on the scenario.
    let resumed = post_resume(&app, &code, &As::nobody()).await;
    assert_eq!(resumed.status, StatusCode::SEE_OTHER, "{}", resumed.text);
    assert_eq!(resumed.header("location"), Some("/scenarios/safe-retry"));
    let me = app
        .get("/api/session", &As::student(&resumed.cookie().unwrap()))
        .await;
    assert_eq!(me.body["student"], launched);
    // Once only; an unknown code too is refused with a page that says so.
    let again = post_resume(&app, &code, &As::nobody()).await;
    assert_eq!(again.status, StatusCode::FORBIDDEN, "{}", again.text);
    assert!(again.header("set-cookie").is_none());
    for uri in [
        uri,
        "/lti/resume?code=made-up".to_string(),
        "/lti/resume".to_string(),
    ] {
        let again = app.get(&uri, &As::nobody()).await;
        assert!(again.status.is_client_error(), "{uri}: {}", again.status);
        assert!(again.header("set-cookie").is_none(), "{uri}");
        assert!(
            again
                .text
                .contains("open the activity from the course again"),
            "{uri}: {}",
            again.text
        );
    }
}

#[tokio::test]
async fn a_launch_the_logins_browser_did_not_send_signs_nobody_in_and_goes_through_the_resume_page()
{
    let dir = TempDir::new("lti-unbound");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    // Over HTTPS the login leaves a cookie of its own in its browser, which the platform's
    // cross-site form post carries back and a platform's frame may keep.
    let uri = format!(
        "/lti/login?iss={}&login_hint=h&target_link_uri={}&client_id={CLIENT}",
        urlencode(&platform.issuer),
        urlencode(&format!("{PUBLIC}/lti/launch"))
    );
    let answer = app.get(&uri, &As::nobody()).await;
    let set_cookie = answer.header("set-cookie").expect("the login's cookie");
    for part in [
        "__Host-pb_lti_",
        "HttpOnly",
        "Secure",
        "SameSite=None",
        "Partitioned",
        "Path=/",
        "Max-Age=600",
    ] {
        assert!(set_cookie.contains(part), "{set_cookie} lacks {part}");
    }
    // A launch without it (a frame that keeps no cookie of this site) is the user's all the
    // same, but signs this browser in as nobody: the resume page asks first.
    let started = login(&app, &platform).await;
    let token = platform.sign(
        &platform.claims(&started.nonce, "cookieless-1"),
        KID,
        &platform.key,
    );
    let answer = launch_as(&app, &token, &started.state, &As::nobody()).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text);
    assert!(
        answer
            .header("location")
            .unwrap()
            .starts_with("/lti/resume?code="),
        "{:?}",
        answer.header("location")
    );
    assert!(answer.header("set-cookie").is_none(), "no session is set");
    let code = handoff_code(&answer);
    let page = app
        .get(answer.header("location").unwrap(), &As::nobody())
        .await;
    assert!(page.text.contains("Ada Lovelace"), "{}", page.text);
    let resumed = post_resume(&app, &code, &As::nobody()).await;
    assert_eq!(resumed.status, StatusCode::SEE_OTHER, "{}", resumed.text);
    let cookie = resumed.cookie().unwrap();
    let me = app.get("/api/session", &As::student(&cookie)).await;
    let student = store
        .lti_student(&platform.issuer, "cookieless-1")
        .await
        .unwrap();
    assert_eq!(me.body["student"].as_str(), student.as_deref());
    // The next such launch finds this browser signed in as the same student: the page sends
    // it on at once.
    let started = login(&app, &platform).await;
    let token = platform.sign(
        &platform.claims(&started.nonce, "cookieless-1"),
        KID,
        &platform.key,
    );
    let answer = launch_as(&app, &token, &started.state, &As::student(&cookie)).await;
    let next = app
        .get(answer.header("location").unwrap(), &As::student(&cookie))
        .await;
    assert_eq!(next.status, StatusCode::SEE_OTHER, "{}", next.text);
    assert_eq!(next.header("location"), Some("/scenarios/safe-retry"));
    // Over plain HTTP no cookie can make that trip: the login sets none, and every launch
    // goes through the resume page.
    let plain = spawn_app_on(
        store.clone(),
        Config {
            public_url: Some(PUBLIC.into()),
            ..Config::default()
        },
        TempDir::new("lti-unbound-http"),
    );
    let started = login(&plain, &platform).await;
    assert_eq!(started.cookie, None);
    let token = platform.sign(
        &platform.claims(&started.nonce, "cookieless-2"),
        KID,
        &platform.key,
    );
    let answer = launch(&plain, &token, &started).await;
    assert!(answer.header("set-cookie").is_none());
    assert!(answer
        .header("location")
        .unwrap()
        .starts_with("/lti/resume?code="));
}

/// A victim's browser with anonymous work in it, and an attacker who launches as themself.
async fn a_planted_login_leaves_the_victims_session_as_it_was(store: Store) {
    let (platform, app) = registered(&store).await;
    let (victim, victim_id) = app.new_student().await;
    let victim_browser = As::student(&victim);
    let work = app
        .post(
            "/api/submissions",
            &victim_browser,
            &json!({"scenario": "safe-retry", "design": crate::common::failing_design()}),
        )
        .await;
    assert_eq!(work.status, StatusCode::CREATED, "{}", work.text);
    let as_the_attacker = |nonce: &str| {
        let mut claims = platform.claims(nonce, "mallory");
        claims["name"] = json!("Mallory");
        platform.sign(&claims, KID, &platform.key)
    };
    let still_the_victims = || async {
        let me = app.get("/api/session", &victim_browser).await;
        assert_eq!(me.status, StatusCode::OK, "{}", me.text);
        assert_eq!(me.body["student"], victim_id.as_str());
        let mine = app.get("/api/submissions", &victim_browser).await;
        assert_eq!(mine.body.as_array().map(Vec::len), Some(1), "{}", mine.text);
    };

    // A planted resume code: the attacker's own launch, its code opened in the victim's
    // browser, by a link, by a forged form post, and by the page's own form.
    let started = login(&app, &platform).await;
    let attackers = launch(&app, &as_the_attacker(&started.nonce), &started).await;
    let code = handoff_code(&attackers);
    let page = app
        .get(&format!("/lti/resume?code={code}"), &victim_browser)
        .await;
    assert_eq!(page.status, StatusCode::CONFLICT, "{}", page.text);
    assert!(page.text.contains("Mallory"), "{}", page.text);
    assert!(!page.text.contains("<form"), "{}", page.text);
    let forged = app
        .send(
            Method::POST,
            "/lti/resume",
            &victim_browser,
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                ("origin", "https://evil.example"),
                ("sec-fetch-site", "cross-site"),
            ],
            Some(format!("code={code}").into_bytes()),
        )
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.text);
    let posted = post_resume(&app, &code, &victim_browser).await;
    assert_eq!(posted.status, StatusCode::CONFLICT, "{}", posted.text);
    for answer in [&page, &forged, &posted] {
        assert!(answer.header("set-cookie").is_none(), "{}", answer.text);
    }
    still_the_victims().await;

    // A cross-site launch: another site's form posts the attacker's own id_token and state
    // from the victim's browser, which never started that login.
    let started = login(&app, &platform).await;
    let posted = launch_as(
        &app,
        &as_the_attacker(&started.nonce),
        &started.state,
        &victim_browser,
    )
    .await;
    assert_eq!(posted.status, StatusCode::SEE_OTHER, "{}", posted.text);
    assert!(
        posted.header("set-cookie").is_none(),
        "{:?}",
        posted.headers
    );
    let followed = app
        .get(posted.header("location").unwrap(), &victim_browser)
        .await;
    assert_eq!(followed.status, StatusCode::CONFLICT, "{}", followed.text);
    assert!(followed.header("set-cookie").is_none());
    still_the_victims().await;
    // The victim's next attempt is theirs.
    let next = app
        .post(
            "/api/submissions",
            &victim_browser,
            &json!({"scenario": "safe-retry", "design": crate::common::failing_design()}),
        )
        .await;
    assert_eq!(next.body["student"], victim_id.as_str());
    // A browser with no session at all is told whom the link is for before anything happens.
    let stranger = app
        .get(&format!("/lti/resume?code={code}"), &As::nobody())
        .await;
    assert_eq!(stranger.status, StatusCode::OK);
    assert!(stranger.text.contains("<strong>Mallory</strong>"));
    assert!(stranger.header("set-cookie").is_none());
}

crate::on_both_databases!(
    a_planted_resume_code_and_a_cross_site_launch_leave_the_victims_session_as_it_was,
    |db| {
        a_planted_login_leaves_the_victims_session_as_it_was(db.store().await).await;
    }
);

#[tokio::test]
async fn over_https_the_launch_cookie_lives_in_a_platforms_frame() {
    let dir = TempDir::new("lti-https");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let platform = start_platform().await;
    store
        .add_lti_platform(&platform.registration())
        .await
        .unwrap();
    let app = spawn_app_on(
        store.clone(),
        Config {
            public_url: Some(PUBLIC.into()),
            https: true,
            frame_ancestors: vec!["https://school.example".into()],
            ..Config::default()
        },
        TempDir::new("lti-https-app"),
    );
    let started = login(&app, &platform).await;
    let nonce = started.nonce.clone();
    let answer = launch(
        &app,
        &platform.sign(&platform.claims(&nonce, "framed-2"), KID, &platform.key),
        &started,
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text);
    let set_cookie = answer.header("set-cookie").unwrap();
    for part in [
        "__Host-pb_session=",
        "SameSite=None",
        "Secure",
        "Partitioned",
        "HttpOnly",
        "Path=/",
    ] {
        assert!(set_cookie.contains(part), "{set_cookie} lacks {part}");
    }
    // An ordinary session stays SameSite=Lax.
    let plain = app.post("/api/session", &As::nobody(), &json!({})).await;
    assert!(plain.header("set-cookie").unwrap().contains("SameSite=Lax"));
}

#[tokio::test]
async fn the_app_may_be_framed_by_a_registered_platform_and_nobody_else() {
    let dir = TempDir::new("lti-frames");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let static_dir = TempDir::new("lti-frames-static");
    std::fs::write(
        static_dir.path().join("index.html"),
        "<!doctype html><title>app</title>",
    )
    .unwrap();
    let app = spawn_app_on(
        store.clone(),
        Config {
            static_dir: Some(static_dir.path().to_path_buf()),
            ..Config::default()
        },
        TempDir::new("lti-frames-app"),
    );
    let page = app.get("/scenarios/safe-retry", &As::nobody()).await;
    let policy = page.header("content-security-policy").unwrap().to_string();
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    let platform = start_platform().await;
    store
        .add_lti_platform(&platform.registration())
        .await
        .unwrap();
    let page = app.get("/scenarios/safe-retry", &As::nobody()).await;
    let policy = page.header("content-security-policy").unwrap().to_string();
    assert!(
        policy.contains(&format!("frame-ancestors 'self' {}", platform.issuer)),
        "{policy}"
    );
    assert!(!policy.contains("frame-ancestors 'none'"), "{policy}");
    assert_eq!(page.header("x-frame-options"), None);
    // The API's answers are not pages: their policy stays.
    let api = app.get("/api/scenarios", &As::nobody()).await;
    assert!(api
        .header("content-security-policy")
        .unwrap()
        .contains("frame-ancestors 'none'"));
}

#[tokio::test]
async fn a_line_item_is_made_once_per_resource_link_when_the_launch_names_none() {
    let dir = TempDir::new("lti-lineitem");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    let jwks = app.get("/lti/jwks", &As::nobody()).await.body;
    *platform.grades.tool_keys.lock().unwrap() = Some(serde_json::from_value(jwks).unwrap());
    let endpoint = json!({
        "scope": [server::lti::grades::LINEITEM_SCOPE, server::lti::grades::SCORE_SCOPE],
        "lineitems": format!("{}/lineitems", platform.issuer),
    });
    let mut cookie = String::new();
    for (sub, role) in [
        ("learner-a", "Learner"),
        ("learner-a", "Learner"),
        ("teacher-a", "Instructor"),
    ] {
        let started = login(&app, &platform).await;
        let nonce = started.nonce.clone();
        let mut claims = platform.claims(&nonce, sub);
        claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = endpoint.clone();
        claims[format!("{LTI}resource_link")] = json!({"id": "link-without-item"});
        claims[format!("{LTI}roles")] = json!([format!(
            "http://purl.imsglobal.org/vocab/lis/v2/membership#{role}"
        )]);
        let answer = launch(&app, &platform.sign(&claims, KID, &platform.key), &started).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text);
        if role == "Learner" {
            cookie = session_cookie(&answer);
        }
    }
    let made = platform.grades.made.lock().unwrap().clone();
    assert_eq!(
        made.len(),
        1,
        "one line item for the resource link: {made:?}"
    );
    let points: u32 = crate::common::scenario("safe-retry")
        .scenario()
        .requirements
        .iter()
        .map(|r| r.points)
        .sum();
    assert_eq!(made[0]["scoreMaximum"], points);
    assert_eq!(made[0]["resourceLinkId"], "link-without-item");
    assert_eq!(made[0]["resourceId"], "safe-retry");
    let a = app
        .post("/api/submissions", &As::student(&cookie), &json!({"scenario": "safe-retry", "design": crate::common::passing_design("safe-retry")}))
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.text);
    // Two servers on one database sending at once: the score goes once.
    let now = chrono::Utc::now();
    let (one, two) = tokio::join!(
        server::lti::grades::send_due(&store, app.state.outbound(), now),
        server::lti::grades::send_due(&store, app.state.outbound(), now)
    );
    assert_eq!(one.unwrap().sent + two.unwrap().sent, 1);
    let accepted = platform.grades.accepted.lock().unwrap().clone();
    assert_eq!(accepted.len(), 1);
    assert_eq!(accepted[0]["userId"], "learner-a");
}

#[test]
fn platforms_are_added_listed_and_removed_from_the_command_line() {
    use std::process::Command;
    let dir = TempDir::new("lti-cli");
    let url = dir.sqlite_url();
    let run = |args: &[&str]| {
        Command::new(crate::processes::BIN)
            .args(args)
            .args(["--database-url", &url])
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    };
    let add = [
        "lti",
        "platform",
        "add",
        "--issuer",
        "https://lms.example",
        "--client-id",
        "c1",
        "--deployment-id",
        "d1",
        "--deployment-id",
        "d2",
        "--auth-url",
        "https://lms.example/auth",
        "--token-url",
        "https://lms.example/token",
        "--jwks-url",
        "https://lms.example/jwks",
        "--service-origin",
        "https://school.lms.example/",
    ];
    let added = run(&add);
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let id = String::from_utf8_lossy(&added.stdout).trim().to_string();
    assert_eq!(id.len(), 12, "{id}");
    let listed = String::from_utf8_lossy(&run(&["lti", "platform", "list"]).stdout).to_string();
    assert!(
        listed.contains(&format!("{id}\thttps://lms.example\tc1\td1,d2\t")),
        "{listed}"
    );
    assert!(
        listed.contains("\thttps://lms.example/jwks\thttps://school.lms.example\n"),
        "the service origin, as an origin: {listed}"
    );
    // The same registration again is refused; so is a URL that is not one.
    let again = run(&add);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("registered already"));
    let mut bad = add.to_vec();
    bad[4] = "https://other.example";
    bad[12] = "not a url";
    let refused = run(&bad);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--auth-url"));
    let mut not_an_origin = add.to_vec();
    not_an_origin[4] = "https://other.example";
    *not_an_origin.last_mut().unwrap() = "https://school.lms.example/grades";
    let refused = run(&not_an_origin);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--service-origin"));
    let removed = run(&["lti", "platform", "remove", &id]);
    assert!(removed.status.success());
    let listed = String::from_utf8_lossy(&run(&["lti", "platform", "list"]).stdout).to_string();
    assert!(!listed.contains(&id), "{listed}");
    assert_eq!(
        run(&["lti", "platform", "remove", &id]).status.code(),
        Some(1)
    );
    let rotated = run(&["lti", "key", "rotate"]);
    assert!(rotated.status.success());
    assert!(!String::from_utf8_lossy(&rotated.stdout).trim().is_empty());
}

#[tokio::test]
async fn the_sweeper_removes_logins_past_their_ten_minutes() {
    let dir = TempDir::new("lti-sweep");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    let state = login(&app, &platform).await.state;
    // Within its ten minutes a login stays.
    let now = chrono::Utc::now();
    assert_eq!(
        store
            .sweep_lti_logins(now - chrono::Duration::minutes(10))
            .await
            .unwrap(),
        0
    );
    assert!(store.lti_login(&state).await.unwrap().is_some());
    // Past them it goes, and the sweep says so.
    assert_eq!(
        store
            .sweep_lti_logins(now + chrono::Duration::minutes(1))
            .await
            .unwrap(),
        1
    );
    assert!(store.lti_login(&state).await.unwrap().is_none());
    let metrics = server::metrics::Metrics::default();
    server::sweep::sweep_once(&store, &Config::default(), &metrics)
        .await
        .unwrap();
}

#[tokio::test]
async fn the_platforms_name_for_a_user_follows_the_rules_of_a_typed_display_name() {
    use server::lti::platform_name;
    assert_eq!(
        platform_name("Ada\r\nLovelace").as_deref(),
        Some("Ada Lovelace")
    );
    assert_eq!(platform_name(" \u{0}\t\r\n\u{7f} "), None);
    assert_eq!(
        platform_name(&"é".repeat(200)).map(|n| n.chars().count()),
        Some(60)
    );
    let dir = TempDir::new("lti-names");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    for (sub, claim, shown, member) in [
        (
            "named-1",
            "Ada\r\nSet-Cookie: x=1\u{7}\u{1b}[31m",
            Some("Ada Set-Cookie: x=1 [31m"),
            "Ada Set-Cookie: x=1 [31m",
        ),
        ("named-2", "\r\n\u{0}", None, "Learner"),
    ] {
        let started = login(&app, &platform).await;
        let mut claims = platform.claims(&started.nonce, sub);
        claims["name"] = json!(claim);
        let answer = launch(&app, &platform.sign(&claims, KID, &platform.key), &started).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text);
        let me = app
            .get("/api/session", &As::student(&session_cookie(&answer)))
            .await;
        assert_eq!(me.body["display_name"].as_str(), shown, "{claim:?}");
        let class = store
            .lti_course_class(&platform.issuer, DEPLOYMENT, "course-1")
            .await
            .unwrap()
            .unwrap();
        let members = store.members(&class).await.unwrap();
        let theirs = members
            .iter()
            .find(|m| Some(m.student.as_str()) == me.body["student"].as_str())
            .expect("a member");
        assert_eq!(theirs.display_name, member, "{claim:?}");
    }
}

#[tokio::test]
async fn the_request_log_keeps_no_query_of_an_lti_route() {
    use std::io::Read;
    let dir = TempDir::new("lti-log");
    std::fs::create_dir_all(dir.path().join("db")).unwrap();
    let mut command = std::process::Command::new(crate::processes::BIN);
    command
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--static-dir",
            "/nonexistent",
        ])
        .args(["--public-url", PUBLIC, "--database-url", &dir.sqlite_url()])
        .arg("--scenarios")
        .arg(crate::common::scenarios_dir())
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stderr(std::process::Stdio::piped());
    let mut server = crate::processes::ServerProcess::spawn(command);
    let mut log = server.child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = log.read_to_string(&mut text);
        text
    });
    let base = server.base.clone();
    let client = reqwest::Client::new();
    for path in [
        "/lti/resume?code=a-planted-handoff-code",
        "/lti/login?iss=https%3A%2F%2Flms.example&login_hint=a-login-hint&target_link_uri=x",
        "/api/scenarios?kept=yes",
    ] {
        client.get(format!("{base}{path}")).send().await.unwrap();
    }
    server.terminate();
    let log = log.join().unwrap();
    assert!(log.contains("uri=/lti/resume "), "{log}");
    assert!(log.contains("uri=/lti/login "), "{log}");
    assert!(
        !log.contains("a-planted-handoff-code"),
        "the code is logged: {log}"
    );
    assert!(
        !log.contains("a-login-hint"),
        "the login hint is logged: {log}"
    );
    assert!(
        log.contains("uri=/api/scenarios?kept=yes"),
        "other routes keep their query: {log}"
    );
}

/// A learner's launch through the registration of `client`, whose scores go to `lineitem`,
/// and a passing attempt of theirs.
async fn a_launch_with_a_line_item(
    app: &TestApp,
    platform: &TestPlatform,
    client: &str,
    sub: &str,
    endpoint: Value,
) -> crate::common::Answer {
    let started = login_for(app, platform, client).await;
    let mut claims = platform.claims(&started.nonce, sub);
    claims["aud"] = json!(client);
    claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = endpoint;
    let answer = launch(app, &platform.sign(&claims, KID, &platform.key), &started).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.text);
    let attempt = app
        .post(
            "/api/submissions",
            &As::student(&session_cookie(&answer)),
            &json!({"scenario": "safe-retry", "design": crate::common::passing_design("safe-retry")}),
        )
        .await;
    assert_eq!(attempt.status, StatusCode::CREATED, "{}", attempt.text);
    answer
}

#[tokio::test]
async fn two_registrations_sharing_a_token_endpoint_send_scores_with_their_own_tokens() {
    let dir = TempDir::new("lti-tokens");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    assert!(store
        .add_lti_platform(&platform.registration_of("test-platform-2", CLIENT_2))
        .await
        .unwrap());
    let jwks = app.get("/lti/jwks", &As::nobody()).await.body;
    *platform.grades.tool_keys.lock().unwrap() = Some(serde_json::from_value(jwks).unwrap());
    for (client, sub, item) in [(CLIENT, "learner-x", 1), (CLIENT_2, "learner-y", 2)] {
        let endpoint = json!({
            "scope": [server::lti::grades::SCORE_SCOPE],
            "lineitem": format!("{}/lineitems/{item}", platform.issuer),
        });
        a_launch_with_a_line_item(&app, &platform, client, sub, endpoint).await;
    }
    let round = server::lti::grades::send_due(&store, app.state.outbound(), chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(round, server::lti::grades::Round { sent: 2, failed: 0 });
    let accepted = platform.grades.accepted.lock().unwrap().clone();
    let bearers = platform.grades.bearers.lock().unwrap().clone();
    let sent: std::collections::BTreeMap<String, String> = accepted
        .iter()
        .zip(bearers)
        .map(|(score, bearer)| (score["userId"].as_str().unwrap().to_string(), bearer))
        .collect();
    assert_eq!(
        sent,
        [
            (
                "learner-x".to_string(),
                format!("Bearer platform-token-{CLIENT}")
            ),
            (
                "learner-y".to_string(),
                format!("Bearer platform-token-{CLIENT_2}")
            ),
        ]
        .into(),
        "each registration's score goes with its own token"
    );
}

#[tokio::test]
async fn scores_and_line_items_go_only_to_the_platforms_own_origins() {
    let dir = TempDir::new("lti-origins");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let (platform, app) = registered(&store).await;
    // Another server, not the platform's: an internal host, say, with a score endpoint.
    let elsewhere = start_platform().await;
    let jwks = app.get("/lti/jwks", &As::nobody()).await.body;
    *platform.grades.tool_keys.lock().unwrap() = Some(serde_json::from_value(jwks).unwrap());
    let endpoint = json!({
        "scope": [server::lti::grades::SCORE_SCOPE, server::lti::grades::LINEITEM_SCOPE],
        "lineitem": format!("{}/lineitems/1", elsewhere.issuer),
        "lineitems": format!("{}/lineitems", elsewhere.issuer),
    });
    a_launch_with_a_line_item(&app, &platform, CLIENT, "learner-o", endpoint.clone()).await;
    let now = chrono::Utc::now();
    assert!(store.due_grades(now).await.unwrap().is_empty());
    let round = server::lti::grades::send_due(&store, app.state.outbound(), now)
        .await
        .unwrap();
    assert_eq!(round, server::lti::grades::Round::default());
    assert!(elsewhere.grades.made.lock().unwrap().is_empty());
    assert!(elsewhere.grades.accepted.lock().unwrap().is_empty());
    // Registered as one of the platform's service origins, the other server gets the score.
    let mut with_origin = platform.registration_of("test-platform-2", CLIENT_2);
    with_origin.service_origins = vec![elsewhere.issuer.clone()];
    assert!(store.add_lti_platform(&with_origin).await.unwrap());
    a_launch_with_a_line_item(&app, &platform, CLIENT_2, "learner-p", endpoint).await;
    let round = server::lti::grades::send_due(&store, app.state.outbound(), chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(round, server::lti::grades::Round { sent: 1, failed: 0 });
    let accepted = elsewhere.grades.accepted.lock().unwrap().clone();
    assert_eq!(accepted.len(), 1, "{accepted:?}");
    assert_eq!(accepted[0]["userId"], "learner-p");
}
