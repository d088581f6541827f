//! The author page's API, mounted only by `serve --author` on a loopback address: the state of
//! the scenario files (with `--watch`, as they change) and every scenario whole — its reference
//! and wrong designs with their verdicts, which students never see.
//!
//! These routes are a local authoring tool rather than part of the public API, so the OpenAPI
//! document leaves them out; docs/authoring.md describes them.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::Json;
use serde_json::Value as Json_;

use crate::catalogue::Catalogue;
use crate::checker::Checker;
use crate::error::AppError;

use crate::watch::{BrokenFile, LiveCatalogue};
pub use shared::wire::author::{
    AuthorDesign, AuthorFile, AuthorScenario, BrokenLine, ScenarioLine, Status,
};

pub async fn status(State(live): State<Arc<LiveCatalogue>>) -> Json<Status> {
    // The catalogue and the status are read apart; a swap between the two reads shows at the
    // next poll.
    let catalogue = live.current();
    let broken = live
        .broken_files()
        .values()
        .map(|b| BrokenLine {
            name: b.name.clone(),
            id: b.id.clone(),
            title: b.title.clone(),
            problems: b.problems.len(),
            tryable: b.tryable.is_ok(),
        })
        .collect();
    Json(Status {
        broken,
        files: (*live.status()).clone(),
        scenarios: catalogue
            .entries()
            .iter()
            .map(|e| ScenarioLine {
                id: e.scenario().id.clone(),
                title: e.scenario().title.clone(),
                order: e.scenario().order,
                hash: e.hash.clone(),
                reference_designs: e.scenario().reference_designs.len(),
                wrong_designs: e.scenario().wrong_designs.len(),
            })
            .collect(),
    })
}

pub async fn scenario(
    State(catalogue): State<Arc<Catalogue>>,
    State(checker): State<Checker>,
    Path(id): Path<String>,
) -> Result<Json<AuthorScenario>, AppError> {
    let Some(entry) = catalogue.get(&id) else {
        return Err(AppError::unknown_scenario_in_url(
            &id,
            format!("/api/author/scenarios/{id}"),
        ));
    };
    let s = &entry.scenario();
    let named = s
        .reference_designs
        .iter()
        .map(|d| ("reference", d.name.clone(), Vec::new(), d.design.clone()))
        .chain(
            s.wrong_designs
                .iter()
                .map(|d| ("wrong", d.name.clone(), d.misses.clone(), d.design.clone())),
        )
        .collect::<Vec<_>>();
    let mut designs = Vec::with_capacity(named.len());
    for (kind, name, misses, design) in named {
        // The catalogue validated every one of these designs; a check that fails here is
        // answered as the check route would answer it.
        let checked = checker.check(Arc::clone(&entry), design.clone()).await?;
        designs.push(AuthorDesign {
            kind: kind.to_string(),
            name,
            misses,
            design,
            verdict: serde_json::from_slice(&checked.json).map_err(AppError::internal)?,
        });
    }
    Ok(Json(AuthorScenario {
        hash: entry.hash.clone(),
        scenario: serde_json::to_value(s).map_err(AppError::internal)?,
        designs,
    }))
}

/// `GET /api/author/scenarios/{id}/solve`: every design the scenario's palette allows, checked
/// (`scenarios solve --json`), with the summary in words beside it. It checks every design,
/// so it runs on the blocking pool.
pub async fn solve(
    State(catalogue): State<Arc<Catalogue>>,
    Path(id): Path<String>,
) -> Result<Json<Json_>, AppError> {
    let Some(entry) = catalogue.get(&id) else {
        return Err(AppError::unknown_scenario_in_url(
            &id,
            format!("/api/author/scenarios/{id}/solve"),
        ));
    };
    let solved = tokio::task::spawn_blocking(move || shared::solve::solve(&entry.compiled))
        .await
        .map_err(AppError::internal)?;
    let solution = solved.map_err(|e| {
        AppError::of(crate::error::ErrorCode::CheckTooLarge, e.to_string()).at("$.palette")
    })?;
    let mut json = solution.to_json();
    if let Some(out) = json.as_object_mut() {
        out.insert("summary".into(), Json_::String(solution.summary()));
    }
    Ok(Json(json))
}

fn broken_file(live: &LiveCatalogue, name: &str) -> Result<Arc<BrokenFile>, AppError> {
    live.broken_files().get(name).cloned().ok_or_else(|| {
        AppError::of(crate::error::ErrorCode::NotFound,
            format!("no scenario file \"{name}\" has problems now: it validates, or the folder has no such file; GET /api/author/status lists the files with problems"),
        )
    })
}

pub async fn file(
    State(live): State<Arc<LiveCatalogue>>,
    Path(name): Path<String>,
) -> Result<Json<AuthorFile>, AppError> {
    let b = broken_file(&live, &name)?;
    let (scenario, hash, why_not_tryable) = match &b.tryable {
        Ok(entry) => (
            Some(serde_json::to_value(entry.scenario()).map_err(AppError::internal)?),
            Some(entry.hash.clone()),
            None,
        ),
        Err(why) => (None, None, Some(why.clone())),
    };
    Ok(Json(AuthorFile {
        name: b.name.clone(),
        file: b.file.clone(),
        id: b.id.clone(),
        text: b.text.clone(),
        problems: b.problems.clone(),
        scenario,
        hash,
        why_not_tryable,
    }))
}

/// `POST /api/author/files/{name}/check`: the verdict of a design on the file as it is now,
/// as `POST /api/scenarios/{id}/check` gives it for a scenario being served. Nothing is
/// recorded.
pub async fn check_file(
    State(live): State<Arc<LiveCatalogue>>,
    State(checker): State<Checker>,
    Path(name): Path<String>,
    request: axum::extract::Request,
) -> Result<axum::response::Response, AppError> {
    use axum::response::IntoResponse;
    let body = crate::error::read_body(request, &()).await?;
    let b = broken_file(&live, &name)?;
    let entry = b
        .tryable
        .clone()
        .map_err(|why| AppError::of(crate::error::ErrorCode::FileNotTryable, why))?;
    let checked = checker.check_body(entry, &body).await?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        checked.json.clone(),
    )
        .into_response())
}
