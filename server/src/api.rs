//! The routes the OpenAPI document describes, in lists the router is made of (`app.rs` lays
//! its layers over each list) and the document takes its paths from (`openapi.rs`): each
//! route is registered once, for both, with `utoipa_axum`'s `routes!`.

use axum::middleware;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use crate::auth;
use crate::routes::{
    classes, dashboard, deadlines, drafts, gradebook, grading, instructor, joining, members,
    operations, regrading, scenarios, session, staff, submissions,
};
use crate::state::AppState;

/// The routes of a student's own work: the session, submissions and drafts.
pub fn student_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(
            session::get_session,
            session::post_session,
            session::put_session
        ))
        .routes(routes!(
            submissions::create_submission,
            submissions::list_submissions
        ))
        .routes(routes!(submissions::get_submission))
        .routes(routes!(drafts::get_draft, drafts::put_draft))
}

/// The routes of classes: a grader's (token, sign-in cookie or a launched staff member's
/// session), but joining and a student's own list.
pub fn class_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(joining::my_classes))
        .routes(routes!(classes::create_class, classes::list_classes))
        .routes(routes!(joining::join_class))
        .routes(routes!(classes::get_class, classes::update_class))
        .routes(routes!(classes::close_class))
        .routes(routes!(classes::reopen_class))
        .routes(routes!(dashboard::matrix))
        .routes(routes!(dashboard::missed))
        .routes(routes!(dashboard::class_attempts))
        .routes(routes!(dashboard::class_attempt))
        .routes(routes!(members::rename_member, members::remove_member))
        .routes(routes!(dashboard::student_attempts))
        .routes(routes!(staff::list_staff))
        .routes(routes!(staff::grant_staff, staff::remove_staff))
        .routes(routes!(staff::audit_log))
        .routes(routes!(gradebook::get_gradebook))
        .routes(routes!(deadlines::get_deadlines, deadlines::set_deadlines))
        .routes(routes!(
            deadlines::grant_extension,
            deadlines::remove_extension
        ))
        .routes(routes!(gradebook::set_score, gradebook::remove_score))
        .routes(routes!(regrading::regrade_route))
        .routes(routes!(
            instructor::sign_in,
            instructor::whoami,
            instructor::sign_out
        ))
}

/// `/api/grade`: a whole class at once, with a body limit of its own.
pub fn grade_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(grading::grade))
}

/// The documented routes open to anyone, which no cookie authenticates: the catalogue and
/// the check, health, readiness and metrics.
pub fn open_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        // The catalogue carries the caller's progress.
        .routes(routes!(scenarios::list_scenarios).layer(middleware::from_fn(auth::no_store)))
        .routes(routes!(scenarios::get_scenario))
        .routes(routes!(scenarios::check))
        .routes(routes!(operations::healthz))
        .routes(routes!(operations::readyz))
        .routes(routes!(operations::metrics))
}

/// Every route the OpenAPI document describes, each registered once: the router is made of
/// these lists, and the document's paths are theirs (`openapi::document`).
pub fn api_routes() -> OpenApiRouter<AppState> {
    student_routes()
        .merge(class_routes())
        .merge(grade_routes())
        .merge(open_routes())
}
