//! `/api/classes/{id}/staff` and `/api/classes/{id}/audit`: who works on a class and in which
//! role, and the log of every change staff made to it.
//!
//! Reading the staff needs any role in the class; giving and taking roles, and reading the
//! audit log, need its owner (or a server administrator's token).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::classes::{class_for, FormatQuery};
use super::dashboard::wants_csv;
use super::time;
use crate::auth::{Grader, Need};
use crate::error::{AppError, ErrorBody, JsonBody};
use crate::store::{Removed, Store};

pub use shared::wire::classes::{AuditEntry, StaffGrant, StaffMember};

/// The header of the audit log's CSV.
pub const AUDIT_CSV_HEADER: [&str; 4] = ["at", "actor", "action", "detail"];

#[utoipa::path(get, path = "/api/classes/{id}/staff", tag = "classes",
    description = "The staff of a class and their roles, owners first. Any role in the class may read it.",
    params(("id" = String, Path, description = "The class id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = [StaffMember]),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody)))]
pub async fn list_staff(
    State(store): State<Store>,
    grader: Grader,
    Path(id): Path<String>,
) -> Result<Json<Vec<StaffMember>>, AppError> {
    class_for(&store, &grader, &id, Need::Read).await?;
    let staff = store.class_staff(&id).await?;
    Ok(Json(
        staff
            .into_iter()
            .map(|g| StaffMember {
                account: g.account,
                role: g.role,
                granted_by: g.granted_by,
                granted_at: time(g.granted_at),
            })
            .collect(),
    ))
}

/// The account a path names, when it is one the server has.
async fn known_account(store: &Store, account: &str) -> Result<(), AppError> {
    if account.len() <= 64 && store.account_exists(account).await? {
        return Ok(());
    }
    Err(AppError::invalid_request(format!(
        "there is no staff account \"{}\"; `pipeline-builder staff add` makes one",
        account.escape_default()
    ))
    .at("/account"))
}

fn last_owner() -> AppError {
    AppError::forbidden("this is the class's last owner: give another account the role owner first")
}

#[utoipa::path(put, path = "/api/classes/{id}/staff/{account}", tag = "classes", request_body = StaffGrant,
    description = "Gives a staff account a role in the class (owner, ta or viewer), replacing the one it had. Only an owner \
        (or a server administrator's token) may; the class's last owner cannot be made anything less. The audit log records it.",
    params(("id" = String, Path, description = "The class id"), ("account" = String, Path, description = "The staff account's name")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = StaffMember),
        (status = 403, description = "forbidden: not the class's owner, a read-only token, or the last owner made less; or cross_site_request", body = ErrorBody),
        (status = 422, description = "invalid_request: no such staff account, or a role other than owner, ta or viewer", body = ErrorBody)))]
pub async fn grant_staff(
    State(store): State<Store>,
    grader: Grader,
    Path((id, account)): Path<(String, String)>,
    JsonBody(body): JsonBody<StaffGrant>,
) -> Result<Json<StaffMember>, AppError> {
    class_for(&store, &grader, &id, Need::Own).await?;
    known_account(&store, &account).await?;
    if !store
        .grant_staff(&id, &account, body.role, &grader.actor())
        .await?
    {
        return Err(last_owner());
    }
    let granted = store
        .class_staff(&id)
        .await?
        .into_iter()
        .find(|g| g.account == account)
        .ok_or_else(|| AppError::internal("a role just given is not stored"))?;
    Ok(Json(StaffMember {
        account: granted.account,
        role: granted.role,
        granted_by: granted.granted_by,
        granted_at: time(granted.granted_at),
    }))
}

#[utoipa::path(delete, path = "/api/classes/{id}/staff/{account}", tag = "classes",
    description = "Takes a staff account's role in the class away. Only an owner (or a server administrator's token) may; \
        the class's last owner stays. The audit log records it.",
    params(("id" = String, Path, description = "The class id"), ("account" = String, Path, description = "The staff account's name")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 204, description = "The role is taken away"),
        (status = 403, description = "forbidden: not the class's owner, a read-only token, or the last owner; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class, or not_found: the account has no role in the class", body = ErrorBody)))]
pub async fn remove_staff(
    State(store): State<Store>,
    grader: Grader,
    Path((id, account)): Path<(String, String)>,
) -> Result<Response, AppError> {
    class_for(&store, &grader, &id, Need::Own).await?;
    match store.remove_staff(&id, &account, &grader.actor()).await? {
        Removed::Removed => Ok(StatusCode::NO_CONTENT.into_response()),
        Removed::LastOwner => Err(last_owner()),
        Removed::NotStaff => Err(AppError::of(
            crate::error::ErrorCode::NotFound,
            format!("\"{}\" has no role in this class", account.escape_default()),
        )),
    }
}

#[utoipa::path(get, path = "/api/classes/{id}/audit", tag = "classes",
    description = "Every change staff made to the class, oldest first: who (a staff account, or `admin:` and an \
        administrator token's name), when, what (`class_made`, `class_changed`, `staff_granted`, `staff_removed`, \
        `regraded`, `score_overridden`, `override_removed`, `deadlines_changed`, `extension_granted`, \
        `extension_removed`) and the change in words. Only an owner (or a server administrator's token) may read it. \
        With `?format=csv`, the columns `at`, `actor`, `action`, `detail`.",
    params(("id" = String, Path, description = "The class id"), FormatQuery),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, content(
            ([AuditEntry] = "application/json"),
            (String = "text/csv", example = json!("at,actor,action,detail\r\n2026-12-05T09:00:00.000Z,lea,class_made,\"made the class \"\"Data engineering, group A\"\"\"\r\n")))),
        (status = 403, description = "forbidden: not the class's owner", body = ErrorBody)))]
pub async fn audit_log(
    State(store): State<Store>,
    grader: Grader,
    Path(id): Path<String>,
    Query(query): Query<FormatQuery>,
) -> Result<Response, AppError> {
    let csv = wants_csv(query.format.as_deref())?;
    // Reading the log is the owner's: it is about the staff, not the students.
    class_for(&store, &grader, &id, Need::OwnerRead).await?;
    let entries: Vec<AuditEntry> = store
        .class_audit(&id)
        .await?
        .into_iter()
        .map(|r| AuditEntry {
            at: time(r.at),
            actor: r.actor,
            action: r.action,
            detail: r.detail,
        })
        .collect();
    if csv {
        let rows = entries.iter().map(|e| {
            vec![
                e.at.clone(),
                e.actor.clone(),
                e.action.clone(),
                e.detail.clone(),
            ]
        });
        return Ok(super::csv::csv_answer(
            crate::report::csv_table(&AUDIT_CSV_HEADER, rows),
            super::csv::Bom::asked(query.bom),
        ));
    }
    Ok(Json(entries).into_response())
}
