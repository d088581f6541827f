//! Every HTTP call the app makes, in one place.

use gloo_net::http::{Request, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use shared::design::Design;
use shared::{Scenario, Verdict};

#[derive(Clone, Debug, Deserialize)]
pub struct Session {
    /// `null` until the student picks a name.
    #[serde(default)]
    pub display_name: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CatalogueEntry {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub order: u32,
    #[serde(default)]
    pub concepts: Vec<String>,
    #[serde(default)]
    pub progress: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Submission {
    pub verdict: Verdict,
}

/// An error the server explained (422 and friends), or a network failure in words.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub message: String,
    pub details: Vec<String>,
    /// True when the server could not be reached at all.
    pub offline: bool,
}

impl ApiError {
    fn offline(e: impl std::fmt::Display) -> ApiError {
        ApiError {
            message: format!("the server cannot be reached ({e})"),
            details: Vec::new(),
            offline: true,
        }
    }
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorInner,
}

#[derive(Deserialize)]
struct ErrorInner {
    message: String,
    #[serde(default)]
    details: Vec<ErrorDetail>,
}

#[derive(Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    path: String,
    message: String,
}

async fn read<T: for<'de> Deserialize<'de>>(response: Response) -> Result<T, ApiError> {
    if response.ok() {
        return response.json::<T>().await.map_err(|e| ApiError {
            message: format!("the server's answer was not understood: {e}"),
            details: Vec::new(),
            offline: false,
        });
    }
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    Err(match serde_json::from_str::<ErrorBody>(&text) {
        Ok(body) => ApiError {
            message: body.error.message,
            details: body
                .error
                .details
                .into_iter()
                .map(|d| {
                    if d.path.is_empty() {
                        d.message
                    } else {
                        format!("{}: {}", d.path, d.message)
                    }
                })
                .collect(),
            offline: false,
        },
        Err(_) => ApiError {
            message: format!("the server answered {status}"),
            details: Vec::new(),
            offline: false,
        },
    })
}

async fn get<T: for<'de> Deserialize<'de>>(url: &str) -> Result<T, ApiError> {
    let response = Request::get(url).send().await.map_err(ApiError::offline)?;
    read(response).await
}

/// Starts this browser's session, or answers the one it has. The app calls it once when it
/// starts: it is the only call that makes a session (and sets its cookie).
pub async fn session() -> Result<Session, ApiError> {
    let response = Request::post("/api/session")
        .send()
        .await
        .map_err(ApiError::offline)?;
    read(response).await
}

/// Sends a request that needs the session, starting one first if the server says there is
/// none (401), once.
async fn with_session(method: &str, url: &str, body: Option<&Json>) -> Result<Response, ApiError> {
    let mut started = false;
    loop {
        let builder = match method {
            "PUT" => Request::put(url),
            "POST" => Request::post(url),
            _ => Request::get(url),
        };
        let response = match body {
            Some(b) => builder.json(b).map_err(ApiError::offline)?.send().await,
            None => builder.send().await,
        }
        .map_err(ApiError::offline)?;
        if response.status() != 401 || started {
            return Ok(response);
        }
        started = true;
        session().await?;
    }
}

fn to_json<B: Serialize>(body: &B) -> Result<Json, ApiError> {
    serde_json::to_value(body).map_err(ApiError::offline)
}

pub async fn catalogue() -> Result<Vec<CatalogueEntry>, ApiError> {
    get("/api/scenarios").await
}

pub async fn scenario(id: &str) -> Result<Scenario, ApiError> {
    let json: Json = get(&format!("/api/scenarios/{id}")).await?;
    crate::student_view::scenario(json).map_err(|message| ApiError {
        message,
        details: Vec::new(),
        offline: false,
    })
}

#[derive(Serialize)]
struct SubmissionBody<'a> {
    scenario: &'a str,
    design: &'a Design,
}

#[derive(Serialize)]
struct DraftBody<'a> {
    design: &'a Design,
}

pub async fn submit(scenario: &str, design: &Design) -> Result<Verdict, ApiError> {
    let body = SubmissionBody { scenario, design };
    let response = with_session("POST", "/api/submissions", Some(&to_json(&body)?)).await?;
    let submission: Submission = read(response).await?;
    Ok(submission.verdict)
}

#[derive(Deserialize)]
struct Draft {
    design: Json,
}

/// The saved draft, `Ok(None)` when there is none.
pub async fn draft(scenario: &str) -> Result<Option<Json>, ApiError> {
    let response = with_session("GET", &format!("/api/drafts/{scenario}"), None).await?;
    if response.status() == 404 {
        return Ok(None);
    }
    read::<Draft>(response).await.map(|d| Some(d.design))
}

pub async fn save_draft(scenario: &str, design: &Design) -> Result<(), ApiError> {
    let body = DraftBody { design };
    let response = with_session(
        "PUT",
        &format!("/api/drafts/{scenario}"),
        Some(&to_json(&body)?),
    )
    .await?;
    if response.ok() {
        Ok(())
    } else {
        read::<Json>(response).await.map(|_| ())
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

    /// The local draft and whether the server has it too.
    pub fn load(scenario: &str) -> Option<(Json, bool)> {
        let text = storage()?.get_item(&key(scenario)).ok()??;
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
        if let (Some(storage), Ok(text)) =
            (storage(), serde_json::to_string(&Stored { design, synced }))
        {
            let _ = storage.set_item(&key(scenario), &text);
        }
    }
}
