//! `POST /api/regrade`: stored attempts checked again against the current scenarios.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;

use super::scenario_entry;
use crate::auth::{Grader, Need};
use crate::catalogue::Catalogue;
use crate::config::Config;
use crate::error::{AppError, ErrorBody, ErrorCode, JsonBody};
use crate::regrade::{self, RegradeReport};
use crate::store::Store;

use super::classes::class_for;
pub use shared::wire::classes::{
    ClassAttemptBody, ClassBody, ClassUpdate, JoinRequest, MemberUpdate, NewClass, Preview,
    RegradeRequest, StudentAttempts, StudentClass,
};
pub use shared::wire::session::{Instructor, SignIn};

#[utoipa::path(post, path = "/api/regrade", tag = "classes", request_body = RegradeRequest,
    description = "Checks again the stored attempts at a scenario (of one class, when given) made against another version \
        of its file, and records the new verdicts beside the old ones, a batch per transaction. Running it again goes on \
        where it stopped and regrades nothing twice. The report says how many results changed per requirement.",
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = RegradeReport),
        (status = 403, description = "forbidden: the account is not a TA or owner of the class, the token is read-only, or no class is named by a staff account's token; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_scenario or unknown_class", body = ErrorBody),
        (status = 422, description = "invalid_request, or check_too_large: a design's check went past the server's limits (the batches before it are kept)", body = ErrorBody)))]
pub async fn regrade_route(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    State(config): State<Arc<Config>>,
    grader: Grader,
    JsonBody(body): JsonBody<RegradeRequest>,
) -> Result<Json<RegradeReport>, AppError> {
    let entry = scenario_entry(&catalogue, &body.scenario)?;
    match &body.class {
        Some(class) => {
            class_for(&store, &grader, class, Need::Work)
                .await
                .map_err(|e| e.at("$.class"))?;
        }
        None => grader.must_administer("regrade every class's attempts: name a class")?,
    }
    tracing::info!(grader = %grader.name, scenario = %body.scenario, "regrade");
    let report = regrade::regrade(
        &store,
        entry,
        body.class.as_deref(),
        config.check_limits,
        |done, total| tracing::info!(done, total, "regraded"),
    )
    .await
    .map_err(|e| match e {
        regrade::RegradeError::Database(e) => AppError::from(e),
        regrade::RegradeError::Check(m) => AppError::of(ErrorCode::CheckTooLarge, m),
    })?;
    if let Some(class) = &body.class {
        let detail = format!(
            "regraded {} ({} attempts checked again against version {})",
            body.scenario, report.regraded_now, report.scenario_hash
        );
        store
            .audit(&grader.actor(), Some(class), "regraded", &detail)
            .await?;
    }
    Ok(Json(report))
}
