//! `/api/scenarios`: the catalogue with the student's progress, one scenario as a student
//! sees it, and the check of a design, which stores nothing and needs no login.

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;

use crate::auth::MaybeSession;
use crate::catalogue::Catalogue;
use crate::checker::Checker;
use crate::error::{is_connection_error, parse_json, read_body, AppError, ErrorBody};
use crate::store::Store;

pub use shared::wire::catalogue::{ProgressState, ScenarioSummary};

#[utoipa::path(get, path = "/api/scenarios", tag = "scenarios",
    description = "The catalogue in course order, with the calling student's progress.",
    responses((status = 200, body = [ScenarioSummary])))]
pub async fn list_scenarios(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    MaybeSession(student): MaybeSession,
) -> Result<Json<Vec<ScenarioSummary>>, AppError> {
    let progress = match &student {
        // During a database outage the catalogue is still served (it lives in memory, and
        // checking designs still works), only without the student's progress.
        Some(s) => match store.progress(&s.id).await {
            Ok(p) => p,
            Err(e) if is_connection_error(&e) => {
                tracing::warn!(error = %e, "the catalogue is served without progress: the database is unavailable");
                Default::default()
            }
            Err(e) => return Err(e.into()),
        },
        None => Default::default(),
    };
    let list = catalogue
        .entries()
        .iter()
        .map(|e| {
            let p = progress.get(&e.scenario().id).copied().unwrap_or_default();
            ScenarioSummary {
                id: e.scenario().id.clone(),
                title: e.scenario().title.clone(),
                order: e.scenario().order,
                concepts: e.scenario().concepts.clone(),
                progress: if p.passed {
                    ProgressState::Passed
                } else if p.tried {
                    ProgressState::Tried
                } else {
                    ProgressState::NotTried
                },
            }
        })
        .collect();
    Ok(Json(list))
}

#[utoipa::path(get, path = "/api/scenarios/{id}", tag = "scenarios",
    description = "One scenario as a student sees it: every field of the scenario file except `reference_designs`, `wrong_designs` and `$schema`.",
    params(("id" = String, Path, description = "The scenario id, for example safe-retry")),
    responses((status = 200, description = "The scenario", body = Object), (status = 404, description = "unknown_scenario", body = ErrorBody)))]
pub async fn get_scenario(
    State(catalogue): State<Arc<Catalogue>>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    let entry = catalogue
        .get(&id)
        .ok_or_else(|| AppError::unknown_scenario_in_url(&id, format!("/api/scenarios/{id}")))?;
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        entry.student_view.clone(),
    )
        .into_response())
}

#[utoipa::path(post, path = "/api/scenarios/{id}/check", tag = "scenarios",
    description = "Checks a design under every failure schedule the scenario allows. Pure: nothing is stored, no login needed.",
    params(("id" = String, Path, description = "The scenario id")),
    request_body(content = shared::Design, description = "A design, in the format docs/design-format.md describes"),
    responses((status = 200, description = "The verdict, as docs/verdict.md describes it", body = shared::Verdict),
        (status = 404, description = "unknown_scenario", body = ErrorBody),
        (status = 422, description = "invalid_design, graph_too_large or check_too_large", body = ErrorBody)))]
pub async fn check(
    State(catalogue): State<Arc<Catalogue>>,
    State(checker): State<Checker>,
    Path(id): Path<String>,
    request: Request,
) -> Result<Response, AppError> {
    let body = read_body(request, &()).await?;
    let Some(entry) = catalogue.get(&id) else {
        // A body that is not JSON is answered as such first, as for every route.
        parse_json::<Value>(&body)?;
        return Err(AppError::unknown_scenario_in_url(
            &id,
            format!("/api/scenarios/{id}/check"),
        ));
    };
    let checked = checker.check_body(entry, &body).await?;
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        checked.json.clone(),
    )
        .into_response())
}
