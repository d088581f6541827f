//! Every HTTP call the app makes, in one place.

use js_sys::{Object, Promise, Reflect};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use shared::design::{Design, DesignError};
use shared::wire::catalogue::ScenarioSummary;
use shared::wire::classes::{JoinRequest, StudentClass};
use shared::wire::errors::ErrorBody;
use shared::wire::session::SessionBody;
use shared::wire::submissions::{DraftAnswer, DraftBody, Submission, SubmissionRequest};
use shared::Verdict;

use crate::student_view::StudentScenario;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// An error the server explained (422 and friends), or a network failure in words.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub message: String,
    /// The problems the server found in a design, each with its path and code.
    pub details: Vec<DesignError>,
    /// True when the server could not be reached at all.
    pub offline: bool,
}

impl ApiError {
    fn new(message: String, offline: bool) -> ApiError {
        ApiError {
            message,
            details: Vec::new(),
            offline,
        }
    }

    fn offline() -> ApiError {
        ApiError::new("the server cannot be reached".into(), true)
    }
}

/// Starts a request with the browser's `fetch`; a body is sent as JSON. With `keepalive` the
/// request outlives the page.
fn start(method: &str, url: &str, body: Option<String>, keepalive: bool) -> Option<Promise> {
    let init = Object::new();
    let set = |o: &Object, k: &str, v: JsValue| Reflect::set(o, &k.into(), &v).ok();
    set(&init, "method", method.into())?;
    if let Some(body) = body {
        let headers = Object::new();
        set(&headers, "Content-Type", "application/json".into())?;
        set(&init, "headers", headers.into())?;
        set(&init, "body", body.into())?;
    }
    if keepalive {
        set(&init, "keepalive", true.into())?;
    }
    Some(web_sys::window()?.fetch_with_str_and_init(url, init.unchecked_ref()))
}

/// Waits for a request's answer: its status and its text.
async fn answer(request: Option<Promise>) -> Result<(u16, String), ApiError> {
    let response = JsFuture::from(request.ok_or_else(ApiError::offline)?)
        .await
        .map_err(|_| ApiError::offline())?;
    let status = Reflect::get(&response, &"status".into())
        .ok()
        .and_then(|s| s.as_f64())
        .unwrap_or(0.0) as u16;
    let text = Reflect::get(&response, &"text".into())
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
        .and_then(|f| f.call0(&response).ok())
        .and_then(|p| p.dyn_into::<Promise>().ok())
        .ok_or_else(ApiError::offline)?;
    let text = JsFuture::from(text)
        .await
        .ok()
        .and_then(|t| t.as_string())
        .unwrap_or_default();
    Ok((status, text))
}

async fn fetch(method: &str, url: &str, body: Option<String>) -> Result<(u16, String), ApiError> {
    answer(start(method, url, body, false)).await
}

/// The error a refusal explains, in the server's words.
fn refusal(status: u16, text: &str) -> ApiError {
    match serde_json::from_str::<ErrorBody>(text) {
        Ok(body) => ApiError {
            message: body.error.message,
            details: body
                .error
                .details
                .unwrap_or_default()
                .into_iter()
                .map(|mut d| {
                    d.path = crate::problems::in_design(&d.path);
                    d
                })
                .collect(),
            offline: false,
        },
        Err(_) => ApiError::new(format!("the server answered {status}"), false),
    }
}

fn read<T: for<'de> Deserialize<'de>>((status, text): (u16, String)) -> Result<T, ApiError> {
    if !(200..300).contains(&status) {
        return Err(refusal(status, &text));
    }
    serde_json::from_str::<T>(&text).map_err(|e| {
        ApiError::new(
            format!("the server's answer was not understood: {e}"),
            false,
        )
    })
}

async fn get<T: for<'de> Deserialize<'de>>(url: &str) -> Result<T, ApiError> {
    read(fetch("GET", url, None).await?)
}

/// Starts this browser's session, or answers the one it has. The app calls it once when it
/// starts: it is the only call that makes a session (and sets its cookie).
pub async fn session() -> Result<SessionBody, ApiError> {
    session_started().await.map(|(session, _)| session)
}

/// The browser's session when it has one, never making one (`GET /api/session`).
pub async fn current_session() -> Result<SessionBody, ApiError> {
    get("/api/session").await
}

/// As [`session`], and whether the server made a new one (it had none for this browser).
pub async fn session_started() -> Result<(SessionBody, bool), ApiError> {
    let answer = fetch("POST", "/api/session", None).await?;
    let made = answer.0 == 201;
    read(answer).map(|session| (session, made))
}

/// A request that needs the student's session: when the server answers 401 (the session
/// was never made, or has expired), the session is started and the request sent once more.
async fn with_session(
    method: &str,
    url: &str,
    body: Option<String>,
) -> Result<(u16, String), ApiError> {
    let answer = fetch(method, url, body.clone()).await?;
    if answer.0 != 401 {
        return Ok(answer);
    }
    session().await?;
    fetch(method, url, body).await
}

pub async fn catalogue() -> Result<Vec<ScenarioSummary>, ApiError> {
    get("/api/scenarios").await
}

/// One scenario as a student sees it, read once for the page that opens it.
pub async fn scenario(id: &str) -> Result<StudentScenario, ApiError> {
    let json: Json = get(&format!("/api/scenarios/{id}")).await?;
    StudentScenario::read(json).map_err(|message| ApiError::new(message, false))
}

/// A body as JSON text.
fn body_of(body: &impl Serialize) -> Result<String, ApiError> {
    serde_json::to_string(body).map_err(|e| ApiError::new(e.to_string(), false))
}

/// A design as the JSON a request body carries. It goes through its text, whose writer and
/// reader the app has anyway: `to_value` would add a second serializer of every design type
/// to the module.
fn design_json(design: &Design) -> Result<Json, ApiError> {
    serde_json::to_string(design)
        .and_then(|text| serde_json::from_str(&text))
        .map_err(|e| ApiError::new(e.to_string(), false))
}

/// The verdict a wire type carries as JSON. It is read from its text, as the app reads every
/// verdict: `from_value` would add a second reader of every verdict type to the module.
pub fn verdict_in(json: &Json) -> Option<Verdict> {
    serde_json::from_str(&json.to_string()).ok()
}

/// The server's verdict on a design, and the answer's text, which the local store keeps. The
/// attempt is for `class` when given.
pub async fn submit(
    scenario: &str,
    design: &Design,
    class: Option<&str>,
) -> Result<(Verdict, String), ApiError> {
    let body = body_of(&SubmissionRequest {
        scenario: scenario.to_string(),
        student: None,
        design: design_json(design)?,
        class: class.map(str::to_string),
    })?;
    let (status, text) = with_session("POST", "/api/submissions", Some(body)).await?;
    if !(200..300).contains(&status) {
        return Err(refusal(status, &text));
    }
    let verdict = verdict_of(&text)
        .ok_or_else(|| ApiError::new("the server's answer was not understood".into(), false))?;
    Ok((verdict, text))
}

/// True when a submission's answer says the attempt came after the student's due date.
pub fn answer_is_late(answer: &str) -> bool {
    // Only the one field is read, so the reader stays small.
    #[derive(serde::Deserialize)]
    struct Late {
        #[serde(default)]
        late: bool,
    }
    serde_json::from_str::<Late>(answer).is_ok_and(|s| s.late)
}

/// The verdict on a design without recording an attempt (`POST /api/scenarios/{id}/check`),
/// for an author trying a design.
pub async fn check(scenario: &str, design: &Design) -> Result<Verdict, ApiError> {
    let body = serde_json::to_string(design).map_err(|e| ApiError::new(e.to_string(), false))?;
    read(
        fetch(
            "POST",
            &format!("/api/scenarios/{scenario}/check"),
            Some(body),
        )
        .await?,
    )
}

/// The author page's view of the scenario files (`serve --author`).
pub mod author {
    use serde::Deserialize;
    pub use shared::wire::author::{
        AuthorDesign as NamedDesign, AuthorFile as File, AuthorScenario as Scenario, Status,
    };

    use super::{get, ApiError};

    pub async fn file(name: &str) -> Result<File, ApiError> {
        get(&format!("/api/author/files/{name}")).await
    }

    /// The verdict of a design on a file with problems as it is now; nothing is recorded.
    pub async fn check_file(
        name: &str,
        design: &shared::design::Design,
    ) -> Result<shared::Verdict, ApiError> {
        let body =
            serde_json::to_string(design).map_err(|e| ApiError::new(e.to_string(), false))?;
        super::read(
            super::fetch(
                "POST",
                &format!("/api/author/files/{name}/check"),
                Some(body),
            )
            .await?,
        )
    }

    pub async fn status() -> Result<Status, ApiError> {
        get("/api/author/status").await
    }

    /// A scenario with its designs, each of whose verdicts reads as a verdict.
    pub async fn scenario(id: &str) -> Result<Scenario, ApiError> {
        let scenario: Scenario = get(&format!("/api/author/scenarios/{id}")).await?;
        if scenario.designs.iter().any(|d| verdict(d).is_none()) {
            return Err(ApiError::new(
                "the server's answer was not understood: a design's verdict cannot be read".into(),
                false,
            ));
        }
        Ok(scenario)
    }

    /// The verdict the server gave a scenario's design.
    pub fn verdict(design: &NamedDesign) -> Option<shared::Verdict> {
        super::verdict_in(&design.verdict)
    }

    /// A scenario's solve: every design its palette allows, checked; the summary in words.
    /// The page shows only the summary.
    #[derive(Clone, Debug, Deserialize)]
    pub struct Solved {
        pub summary: String,
    }

    pub async fn solve(id: &str) -> Result<Solved, ApiError> {
        get(&format!("/api/author/scenarios/{id}/solve")).await
    }
}

/// The verdict in the text of a submission's answer.
pub fn verdict_of(text: &str) -> Option<Verdict> {
    serde_json::from_str::<Submission>(text)
        .ok()
        .and_then(|s| verdict_in(&s.verdict))
}

/// The saved draft, `Ok(None)` when there is none.
pub async fn draft(scenario: &str) -> Result<Option<Json>, ApiError> {
    let answer = with_session("GET", &format!("/api/drafts/{scenario}"), None).await?;
    if answer.0 == 404 {
        return Ok(None);
    }
    read::<DraftAnswer>(answer).map(|d| Some(d.design))
}

/// Sends the draft with a request that outlives the page (`keepalive`), for a student who is
/// leaving: nothing waits for it. The promise says how it went, if the page is still there.
pub fn save_draft_keepalive(scenario: &str, design: &Design) -> Option<Promise> {
    let body = body_of(&DraftBody {
        design: design_json(design).ok()?,
    })
    .ok()?;
    start("PUT", &format!("/api/drafts/{scenario}"), Some(body), true)
}

/// Whether a request sent with [`save_draft_keepalive`] was answered with success.
pub async fn answered_ok(request: Promise) -> bool {
    matches!(answer(Some(request)).await, Ok((200..=299, _)))
}

/// Saves the draft on the server and waits for the answer, starting the session if the
/// server has none for this browser.
pub async fn save_draft(scenario: &str, design: &Design) -> bool {
    let Ok(body) = design_json(design).and_then(|design| body_of(&DraftBody { design })) else {
        return false;
    };
    let url = format!("/api/drafts/{scenario}");
    matches!(
        with_session("PUT", &url, Some(body)).await,
        Ok((200..=299, _))
    )
}

/// The classes of this browser's student.
pub async fn my_classes() -> Result<Vec<StudentClass>, ApiError> {
    read(with_session("GET", "/api/session/classes", None).await?)
}

/// Joins the class of a join code under a display name.
pub async fn join(code: &str, display_name: &str) -> Result<StudentClass, ApiError> {
    let body = body_of(&JoinRequest {
        code: code.to_string(),
        display_name: Some(display_name.to_string()),
    })?;
    read(with_session("POST", "/api/classes/join", Some(body)).await?)
}

/// The instructor's calls: the grader cookie that `sign_in` sets goes with each of them.
pub mod grader {
    use serde::de::DeserializeOwned;
    use shared::wire::classes::ClassAttemptBody;
    use shared::wire::session::{Instructor, SignIn};

    use super::{body_of, fetch, get, read, ApiError};

    /// Signs in with a grader token, which the server keeps in an HttpOnly cookie; the token
    /// is not kept here. The token's name.
    pub async fn sign_in(token: &str) -> Result<String, ApiError> {
        let body = body_of(&SignIn {
            token: token.to_string(),
        })?;
        let who: Instructor = read(fetch("POST", "/api/instructor/session", Some(body)).await?)?;
        Ok(who.name)
    }

    /// The signed-in token's name, or an error when nobody is signed in.
    pub async fn whoami() -> Result<String, ApiError> {
        let who: Instructor = get("/api/instructor/session").await?;
        Ok(who.name)
    }

    pub async fn sign_out() {
        let _ = fetch("DELETE", "/api/instructor/session", None).await;
    }

    /// One attempt of a class, as the instructor opens it: the answer, and its verdict.
    pub async fn class_attempt(
        class: &str,
        attempt: &str,
    ) -> Result<(ClassAttemptBody, shared::Verdict), ApiError> {
        let body: ClassAttemptBody =
            get(&format!("/api/classes/{class}/attempts/{attempt}")).await?;
        let verdict = super::verdict_in(&body.row.verdict)
            .ok_or_else(|| ApiError::new("the attempt's verdict cannot be read".into(), false))?;
        Ok((body, verdict))
    }

    /// A grader route's answer.
    pub async fn get_answer<T: DeserializeOwned>(url: &str) -> Result<T, ApiError> {
        get(url).await
    }

    /// A grader route's write that answers no body (204), with its body sent as JSON.
    pub async fn send_no_content(
        method: &str,
        url: &str,
        body: Option<&impl serde::Serialize>,
    ) -> Result<(), ApiError> {
        let body = body.map(body_of).transpose()?;
        let (status, text) = fetch(method, url, body).await?;
        if (200..300).contains(&status) {
            Ok(())
        } else {
            Err(super::refusal(status, &text))
        }
    }

    /// A grader route's write without a body that answers none.
    pub async fn send_empty(method: &str, url: &str) -> Result<(), ApiError> {
        send_no_content(method, url, None::<&()>).await
    }

    /// A grader route's answer to a write, whose body is sent as JSON.
    pub async fn send<T: DeserializeOwned>(
        method: &str,
        url: &str,
        body: Option<&impl serde::Serialize>,
    ) -> Result<T, ApiError> {
        let body = body.map(body_of).transpose()?;
        read(fetch(method, url, body).await?)
    }
}

/// The class this browser works in, chosen when the student joined.
pub mod class_choice {
    const KEY: &str = "pipeline-builder.class";

    fn storage() -> Option<web_sys::Storage> {
        web_sys::window()?.local_storage().ok()?
    }

    pub fn get() -> Option<String> {
        storage()?.get_item(KEY).ok()?
    }

    pub fn set(id: &str) {
        if let Some(s) = storage() {
            let _ = s.set_item(KEY, id);
        }
    }
}

/// A scenario's undo history, kept for the tab's session: leaving the page and coming back
/// (or reloading it) keeps what Undo can bring back.
pub mod history {
    use shared::design::Design;

    #[derive(serde::Serialize)]
    struct Keeping<'a> {
        design: &'a Design,
        past: &'a [Design],
        future: &'a [Design],
    }

    /// A kept history, read by the design format's own reader.
    pub struct Kept {
        /// The design the history leads to: it is worth keeping only while it is the one on
        /// the canvas.
        pub design: Design,
        pub past: Vec<Design>,
        pub future: Vec<Design>,
    }

    fn storage() -> Option<web_sys::Storage> {
        web_sys::window()?.session_storage().ok()?
    }

    fn key(scenario: &str) -> String {
        format!("pipeline-builder.history.{scenario}")
    }

    pub fn load(scenario: &str) -> Option<Kept> {
        let text = storage()?.get_item(&key(scenario)).ok()??;
        let json: serde_json::Value = serde_json::from_str(&text).ok()?;
        let designs = |field: &str| -> Option<Vec<Design>> {
            json.get(field)?
                .as_array()?
                .iter()
                .map(|d| shared::design::design_from_json(d).ok())
                .collect()
        };
        Some(Kept {
            design: shared::design::design_from_json(json.get("design")?).ok()?,
            past: designs("past")?,
            future: designs("future")?,
        })
    }

    pub fn store(scenario: &str, design: &Design, past: &[Design], future: &[Design]) {
        let keeping = Keeping {
            design,
            past,
            future,
        };
        if let (Some(storage), Ok(text)) = (storage(), serde_json::to_string(&keeping)) {
            // A history too large for the tab's storage is not kept; the draft is, elsewhere.
            if storage.set_item(&key(scenario), &text).is_err() {
                let _ = storage.remove_item(&key(scenario));
            }
        }
    }
}

/// The browser's own copy of drafts, for when the server cannot be reached.
pub mod local {
    use serde_json::Value as Json;

    fn storage() -> Option<web_sys::Storage> {
        web_sys::window()?.local_storage().ok()?
    }

    fn key(scenario: &str) -> String {
        format!("pipeline-builder.draft.{scenario}")
    }

    fn get(key: &str) -> Option<String> {
        storage()?.get_item(key).ok()?
    }

    fn set(key: &str, value: &str) {
        if let Some(storage) = storage() {
            let _ = storage.set_item(key, value);
        }
    }

    /// The last verdict of a scenario: the design it was for and the server's answer.
    pub fn last_verdict(scenario: &str) -> Option<(Json, String)> {
        let design =
            serde_json::from_str(&get(&format!("pipeline-builder.checked.{scenario}"))?).ok()?;
        Some((
            design,
            get(&format!("pipeline-builder.verdict.{scenario}"))?,
        ))
    }

    pub fn store_verdict(scenario: &str, design: &shared::design::Design, answer: &str) {
        if let Ok(text) = serde_json::to_string(design) {
            set(&format!("pipeline-builder.checked.{scenario}"), &text);
            set(&format!("pipeline-builder.verdict.{scenario}"), answer);
        }
    }

    /// The local draft and whether the server has it too.
    pub fn load(scenario: &str) -> Option<(Json, bool)> {
        let text = get(&key(scenario))?;
        let json: Json = serde_json::from_str(&text).ok()?;
        Some((
            json.get("design")?.clone(),
            json.get("synced").and_then(Json::as_bool).unwrap_or(false),
        ))
    }

    #[derive(serde::Serialize)]
    struct Stored<'a> {
        design: &'a shared::design::Design,
        synced: bool,
    }

    pub fn store(scenario: &str, design: &shared::design::Design, synced: bool) {
        if let Ok(text) = serde_json::to_string(&Stored { design, synced }) {
            set(&key(scenario), &text);
        }
    }
}
