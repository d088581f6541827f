//! Joining a class with its code, and a student's own list of classes.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::auth::Session;
use crate::catalogue::Catalogue;
use crate::error::{AppError, ErrorBody, ErrorCode, JsonBody};
use crate::limit::JoinGuesses;
use crate::store::{Joined, Store};

use super::classes::{class_closed, member_name, normal_code, student_class};
pub use shared::wire::classes::{
    ClassAttemptBody, ClassBody, ClassUpdate, JoinRequest, MemberUpdate, NewClass, Preview,
    RegradeRequest, StudentAttempts, StudentClass,
};
pub use shared::wire::session::{Instructor, SignIn};

#[utoipa::path(post, path = "/api/classes/join", tag = "classes", request_body = JoinRequest,
    description = "The session's student joins the class of a join code, under a display name asked once per class. \
        A member joining again gets 200 and keeps the first name; a closed class refuses a new member (409 `class_closed`).",
    security(("student_cookie" = [])),
    responses((status = 201, description = "A new member", body = StudentClass),
        (status = 200, description = "A member already", body = StudentClass),
        (status = 400, description = "malformed_json or ambiguous_session", body = ErrorBody),
        (status = 401, description = "no_session", body = ErrorBody),
        (status = 403, description = "cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class: no class has this code", body = ErrorBody),
        (status = 409, description = "class_closed", body = ErrorBody),
        (status = 422, description = "invalid_request: a display name missing, empty, longer than 60 characters, with control characters, or another member's (letter case aside)", body = ErrorBody),
        (status = 429, description = "rate_limited: too many codes from this address named no class (docs/security.md gives the limit); `Retry-After` says when to try again", body = ErrorBody)))]
pub async fn join_class(
    guesses: JoinGuesses,
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    Session(student): Session,
    JsonBody(body): JsonBody<JoinRequest>,
) -> Result<Response, AppError> {
    let code = normal_code(&body.code);
    // A code that names no class spends one of the address's failed joins.
    let not_found = || {
        guesses.failed();
        AppError::of(
            ErrorCode::UnknownClass,
            "no class has this join code; check it with your instructor",
        )
        .at("$.code")
    };
    if code.is_empty() || code.len() > 32 {
        return Err(not_found());
    }
    let class = store.class_by_code(&code).await?.ok_or_else(not_found)?;
    if let Some(m) = store.membership(&class.id, &student.id).await? {
        let answer = student_class(&store, &catalogue, class, m).await?;
        return Ok((StatusCode::OK, Json(answer)).into_response());
    }
    let Some(name) = body.display_name.as_deref().and_then(member_name) else {
        return Err(AppError::invalid_request(
            "give the name your instructor will see: 1 to 60 characters, no control characters",
        )
        .at("$.display_name"));
    };
    if name_taken(&store, &class.id, name, &student.id).await? {
        return Err(name_clash(name).at("$.display_name"));
    }
    match store.join_class(&class.id, &student.id, name).await? {
        Joined::New(m) => {
            let class = store.get_class(&class.id).await?.unwrap_or(class);
            let answer = student_class(&store, &catalogue, class, m).await?;
            Ok((StatusCode::CREATED, Json(answer)).into_response())
        }
        Joined::Already(m) => {
            let answer = student_class(&store, &catalogue, class, m).await?;
            Ok((StatusCode::OK, Json(answer)).into_response())
        }
        Joined::Closed => Err(class_closed(&class.name).at("$.code")),
    }
}

/// True when another member of `class` than `student` goes by `name` (letter case aside).
pub(crate) async fn name_taken(
    store: &Store,
    class: &str,
    name: &str,
    student: &str,
) -> Result<bool, AppError> {
    let wanted = name.to_lowercase();
    Ok(store
        .members(class)
        .await?
        .iter()
        .any(|m| m.student != student && m.display_name.to_lowercase() == wanted))
}

pub(super) fn name_clash(name: &str) -> AppError {
    AppError::invalid_request(format!(
        "another member of this class goes by \"{name}\": add an initial or a second name so that your instructor can tell you apart"
    ))
}

/// A name for a member joining `class` by a learning platform's launch: the platform's, or,
/// when another member goes by it, the first of "NAME (2)", "NAME (3)"… that is free.
pub(crate) async fn free_name(
    store: &Store,
    class: &str,
    name: &str,
    student: &str,
) -> Result<String, AppError> {
    if !name_taken(store, class, name, student).await? {
        return Ok(name.to_string());
    }
    for n in 2.. {
        let candidate = format!("{name} ({n})");
        if !name_taken(store, class, &candidate, student).await? {
            return Ok(candidate);
        }
    }
    unreachable!("some number is free")
}

#[utoipa::path(get, path = "/api/session/classes", tag = "classes",
    description = "The classes of the session's student, in the order joined, each with its preview setting, the \
        student's due date per scenario (`due`, their extensions counted) and the late policy.",
    security(("student_cookie" = [])),
    responses((status = 200, body = [StudentClass]),
        (status = 400, description = "ambiguous_session", body = ErrorBody),
        (status = 401, description = "no_session", body = ErrorBody)))]
pub async fn my_classes(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    Session(student): Session,
) -> Result<Json<Vec<StudentClass>>, AppError> {
    let list = store.student_classes(&student.id).await?;
    let mut answer = Vec::with_capacity(list.len());
    for (class, m) in list {
        answer.push(student_class(&store, &catalogue, class, m).await?);
    }
    Ok(Json(answer))
}
