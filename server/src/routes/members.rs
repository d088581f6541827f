//! A class's members as its staff manage them: renamed or removed.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::auth::{Grader, Need};
use crate::error::{AppError, ErrorBody, ErrorCode, JsonBody};
use crate::store::{Membership, Store};

use super::classes::{class_for, member_name};
use super::joining::name_clash;
use super::joining::name_taken;
pub use shared::wire::classes::{
    ClassAttemptBody, ClassBody, ClassUpdate, JoinRequest, MemberUpdate, NewClass, Preview,
    RegradeRequest, StudentAttempts, StudentClass,
};
pub use shared::wire::session::{Instructor, SignIn};

#[utoipa::path(patch, path = "/api/classes/{id}/students/{student}", tag = "classes", request_body = MemberUpdate,
    description = "Renames a member of the class (the name staff see). A TA or the owner may; the audit log records it.",
    params(("id" = String, Path, description = "The class id"), ("student" = String, Path, description = "The student id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 204, description = "Renamed"),
        (status = 403, description = "forbidden: the account is not a TA or owner of the class, or the token is read-only; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class, or unknown_student: not a member", body = ErrorBody),
        (status = 422, description = "invalid_request: a name empty, too long, with control characters, or another member's", body = ErrorBody)))]
pub async fn rename_member(
    State(store): State<Store>,
    grader: Grader,
    Path((id, student)): Path<(String, String)>,
    JsonBody(body): JsonBody<MemberUpdate>,
) -> Result<Response, AppError> {
    class_for(&store, &grader, &id, Need::Work).await?;
    let Some(name) = member_name(&body.display_name) else {
        return Err(AppError::invalid_request(
            "a member's name has 1 to 60 characters and no control characters",
        )
        .at("$.display_name"));
    };
    if name_taken(&store, &id, name, &student).await? {
        return Err(name_clash(name).at("$.display_name"));
    }
    if student.len() > 128
        || !store
            .rename_member(&id, &student, name, &grader.actor())
            .await?
    {
        return Err(not_a_member(&student));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The member `student` of `class`, or 404 `unknown_student`.
pub(super) async fn member_of(
    store: &Store,
    class: &str,
    student: &str,
) -> Result<Membership, AppError> {
    let found = if student.len() > 128 {
        None
    } else {
        store.membership(class, student).await?
    };
    found.ok_or_else(|| not_a_member(student))
}

pub(super) fn not_a_member(student: &str) -> AppError {
    AppError::of(
        ErrorCode::UnknownStudent,
        format!("the class has no member \"{}\"", student.escape_default()),
    )
}

#[utoipa::path(delete, path = "/api/classes/{id}/students/{student}", tag = "classes",
    description = "Removes a member from the class: they leave its dashboard and gradebook and may join again with the code; \
        their attempts stay stored. A TA or the owner may; the audit log records it.",
    params(("id" = String, Path, description = "The class id"), ("student" = String, Path, description = "The student id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 204, description = "Removed"),
        (status = 403, description = "forbidden: the account is not a TA or owner of the class, or the token is read-only; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class, or unknown_student: not a member", body = ErrorBody)))]
pub async fn remove_member(
    State(store): State<Store>,
    grader: Grader,
    Path((id, student)): Path<(String, String)>,
) -> Result<Response, AppError> {
    class_for(&store, &grader, &id, Need::Work).await?;
    if student.len() > 128 || !store.remove_member(&id, &student, &grader.actor()).await? {
        return Err(not_a_member(&student));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
