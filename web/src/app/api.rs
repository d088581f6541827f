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

async fn send<B: Serialize, T: for<'de> Deserialize<'de>>(
    method: &str,
    url: &str,
    body: &B,
) -> Result<T, ApiError> {
    let builder = match method {
        "PUT" => Request::put(url),
        _ => Request::post(url),
    };
    let request = builder.json(body).map_err(ApiError::offline)?;
    let response = request.send().await.map_err(ApiError::offline)?;
    read(response).await
}

pub async fn session() -> Result<Session, ApiError> {
    get("/api/session").await
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
    let submission: Submission = send("POST", "/api/submissions", &body).await?;
    Ok(submission.verdict)
}

#[derive(Deserialize)]
struct Draft {
    design: Json,
}

/// The saved draft, `Ok(None)` when there is none.
pub async fn draft(scenario: &str) -> Result<Option<Json>, ApiError> {
    let response = Request::get(&format!("/api/drafts/{scenario}"))
        .send()
        .await
        .map_err(ApiError::offline)?;
    if response.status() == 404 {
        return Ok(None);
    }
    read::<Draft>(response).await.map(|d| Some(d.design))
}

pub async fn save_draft(scenario: &str, design: &Design) -> Result<(), ApiError> {
    let body = DraftBody { design };
    let response = Request::put(&format!("/api/drafts/{scenario}"))
        .json(&body)
        .map_err(ApiError::offline)?
        .send()
        .await
        .map_err(ApiError::offline)?;
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
