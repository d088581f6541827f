//! `/api/classes`: classes that a grader makes, their settings, and closing and reopening
//! them; with what every class route shares: finding the class the caller may act on, and
//! recording a change in the audit log.
//!
//! Every route of a class needs a grader: a bearer token, or the cookie
//! `POST /api/instructor/session` sets. A student's session cookie is never enough.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use serde::Deserialize;
use utoipa::IntoParams;

use super::time;
use crate::auth::{self, Grader, Need};
use crate::catalogue::Catalogue;
use crate::config::Config;
use crate::error::{AppError, ErrorBody, ErrorCode, JsonBody};
use crate::store::{Class, ClassMade, Membership, StaffRole, Store};

pub use shared::wire::classes::{
    ClassAttemptBody, ClassBody, ClassUpdate, JoinRequest, MemberUpdate, NewClass, Preview,
    RegradeRequest, StudentAttempts, StudentClass,
};
pub use shared::wire::session::{Instructor, SignIn};

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FormatQuery {
    /// `json` (the default) or `csv`. Another value → 422 `invalid_request` at `?format`.
    #[param(value_type = Option<super::csv::ListFormat>)]
    pub format: Option<String>,
    /// With `format=csv`: `true` starts the file with a UTF-8 byte order mark (U+FEFF), so
    /// that Excel opens accents intact; `false` (the default) leaves it out.
    pub bom: Option<bool>,
}

/// The characters of a join code: no 0/O, 1/I/L.
pub const JOIN_CODE_ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";
/// How long a join code is.
pub const JOIN_CODE_LENGTH: usize = 8;

/// A new join code from the operating system's random number generator, each character
/// uniform over [`JOIN_CODE_ALPHABET`] (bytes past the last multiple of its size are drawn
/// again, so that no character is likelier than another).
pub fn new_join_code() -> Result<String, getrandom::Error> {
    let n = JOIN_CODE_ALPHABET.len();
    let cut = 256 - 256 % n;
    let mut code = String::with_capacity(JOIN_CODE_LENGTH);
    while code.len() < JOIN_CODE_LENGTH {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)?;
        for b in bytes {
            if usize::from(b) < cut && code.len() < JOIN_CODE_LENGTH {
                code.push(char::from(JOIN_CODE_ALPHABET[usize::from(b) % n]));
            }
        }
    }
    Ok(code)
}

/// A code as typed: upper case, without spaces or dashes.
pub fn normal_code(typed: &str) -> String {
    typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// A new class id: `c-` and 16 hex digits.
pub fn new_class_id() -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("c-{}", &id[..16])
}

pub(super) fn unknown_class(id: &str) -> AppError {
    AppError::of(
        ErrorCode::UnknownClass,
        format!(
            "there is no class \"{}\"; GET /api/classes lists them",
            id.escape_default()
        ),
    )
}

pub(super) fn class_closed(name: &str) -> AppError {
    AppError::of(ErrorCode::ClassClosed,
        format!("the class \"{name}\" is closed: it takes no new members and no attempts; ask its instructor to reopen it"),
    )
}

/// Refuses an attempt at `scenario` for `class` unless `student` is a member, the class is
/// open and, when the class refuses late attempts, the student's due date has not passed.
/// `Ok(true)` when the attempt is late (and the class accepts it so).
pub(super) async fn may_record_for(
    store: &Store,
    class: &str,
    student: &str,
    scenario: &str,
) -> Result<bool, AppError> {
    let found = if class.len() > 64 {
        None
    } else {
        store.get_class(class).await?
    };
    let found = found.ok_or_else(|| unknown_class(class).at("$.class"))?;
    if store.membership(class, student).await?.is_none() {
        return Err(AppError::of(ErrorCode::NotAMember,
            "the student is not a member of this class: join it first with its code (POST /api/classes/join)",
        )
        .at("$.class"));
    }
    if !found.open {
        return Err(class_closed(&found.name).at("$.class"));
    }
    let (due, policy) = store.due_of(class, student, scenario).await?;
    let late = due.is_some_and(|due| chrono::Utc::now() > due);
    if late && policy == crate::store::LatePolicy::Refuse {
        let due = due.map(time).unwrap_or_default();
        return Err(AppError::of(ErrorCode::PastDue,
            format!("{scenario} was due in \"{}\" on {due} (UTC), and the class takes no attempt after its due date; ask its staff for an extension", found.name),
        )
        .at("$.class"));
    }
    Ok(late)
}

pub(super) fn class_body(class: Class, headers: &HeaderMap, config: &Config) -> ClassBody {
    let path = format!("/join/{}", class.join_code);
    ClassBody {
        join_url: match auth::origin_of(headers, config) {
            Some(origin) => format!("{origin}{path}"),
            None => path,
        },
        id: class.id,
        name: class.name,
        join_code: class.join_code,
        open: class.open,
        preview: class.preview,
        members: u32::try_from(class.members).unwrap_or(0),
        created_by: class.created_by,
        created_at: time(class.created_at),
        owner: class.owner,
        role: None,
    }
}

/// A class as one of its students sees it, with their due dates.
pub(super) async fn student_class(
    store: &Store,
    catalogue: &Catalogue,
    class: Class,
    m: Membership,
) -> Result<StudentClass, AppError> {
    let due = store.due_dates(&class.id).await?;
    let ids = catalogue.entries().iter().map(|e| e.scenario().id.as_str());
    Ok(StudentClass {
        due: due
            .of_student(&m.student, ids.collect::<Vec<_>>())
            .into_iter()
            .map(|(s, at)| (s, time(at)))
            .collect(),
        late_policy: due.late_policy,
        id: class.id,
        name: class.name,
        open: class.open,
        preview: class.preview,
        display_name: m.display_name,
        joined_at: time(m.joined_at),
    })
}

/// The most characters of the name a member of a class is shown by.
pub const MEMBER_NAME_CHARS_MAX: usize = 60;

/// The rules of the name a member of a class is shown by, as the student typed it: trimmed,
/// 1 to [`MEMBER_NAME_CHARS_MAX`] characters and no control characters. `None` when it
/// breaks them. A learning platform's name for a user is made to follow them too
/// (`crate::lti::platform_name`).
pub fn member_name(typed: &str) -> Option<&str> {
    let name = typed.trim();
    let fits = !name.is_empty()
        && name.chars().count() <= MEMBER_NAME_CHARS_MAX
        && !name.chars().any(char::is_control);
    fits.then_some(name)
}

fn class_name(name: &str, path: &str) -> Result<String, AppError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(AppError::invalid_request(
            "a class name has 1 to 100 characters (spaces around it dropped) and no control characters",
        )
        .at(path));
    }
    Ok(name.to_string())
}

/// The class `id`, or `unknown_class` with the URL as its path.
pub(super) async fn existing(store: &Store, id: &str) -> Result<Class, AppError> {
    if id.len() > 64 || id.chars().any(char::is_control) {
        return Err(unknown_class(id));
    }
    store
        .get_class(id)
        .await?
        .ok_or_else(|| unknown_class(id).at(format!("/api/classes/{id}")))
}

#[utoipa::path(post, path = "/api/classes", tag = "classes", request_body = NewClass,
    description = "Makes a class, open, with a random join code and the preview setting `everything`.",
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 201, body = ClassBody),
        (status = 401, description = "unauthorized: no grader token (a student's session is not one)", body = ErrorBody),
        (status = 403, description = "forbidden: a read-only token; or cross_site_request: another site sent it (with the grader cookie)", body = ErrorBody),
        (status = 409, description = "class_limit_reached: the token has made as many classes as one token may (`--classes-per-token-max`, 1,000 by default)", body = ErrorBody),
        (status = 422, description = "invalid_request: the name", body = ErrorBody)))]
pub async fn create_class(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    grader: Grader,
    headers: HeaderMap,
    JsonBody(body): JsonBody<NewClass>,
) -> Result<Response, AppError> {
    grader.may_write()?;
    let name = class_name(&body.name, "$.name")?;
    let max = config.classes_per_token_max;
    // A code already taken is drawn again; with 31^8 codes, twice is already rare.
    for _ in 0..8 {
        let code = new_join_code().map_err(AppError::internal)?;
        match store
            .create_class_for(
                &new_class_id(),
                &name,
                &code,
                &grader.name,
                grader.account.as_deref(),
                max,
            )
            .await?
        {
            ClassMade::Made(class) => {
                tracing::info!(class = %class.id, grader = %grader.name, "class made");
                let role = grader.account.is_some().then_some(StaffRole::Owner);
                return Ok((
                    StatusCode::CREATED,
                    Json(ClassBody {
                        role,
                        ..class_body(class, &headers, &config)
                    }),
                )
                    .into_response());
            }
            ClassMade::CodeTaken => continue,
            ClassMade::LimitReached => {
                return Err(AppError::of(ErrorCode::ClassLimitReached,
                    format!("the grader token \"{}\" has made {max} classes, as many as one token may (--classes-per-token-max); make the class with another token", grader.name),
                ))
            }
        }
    }
    Err(AppError::internal("no free join code after 8 draws"))
}

/// The most classes one page of `GET /api/classes` lists, and how many by default.
pub const CLASS_PAGE_MAX: u32 = 1000;
pub const CLASS_PAGE_DEFAULT: u32 = 100;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ClassPageQuery {
    /// The most classes to list: 1 to 1000 (default 100). Another number → 422
    /// `invalid_request` at `?limit`.
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// Where the page starts: the `cursor` of the `Link: <…>; rel="next"` header of the page
    /// before. Left out, the newest class. One the server did not make → 422
    /// `invalid_request` at `?cursor`.
    pub cursor: Option<String>,
}

/// The cursor of the page after `last`: its creation time and id, base64url.
fn class_cursor(last: &Class) -> String {
    let at = last
        .created_at
        .to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{at}|{}", last.id))
}

/// The creation time and id a cursor names.
fn read_cursor(cursor: &str) -> Result<(chrono::DateTime<chrono::Utc>, String), AppError> {
    let refused = || {
        AppError::invalid_request(
            "this cursor is not one the server gave; start again without ?cursor",
        )
        .at("?cursor")
    };
    let text = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(refused)?;
    let (at, id) = text.split_once('|').ok_or_else(refused)?;
    let at = chrono::DateTime::parse_from_rfc3339(at).map_err(|_| refused())?;
    if id.is_empty() || id.len() > 64 {
        return Err(refused());
    }
    Ok((at.with_timezone(&chrono::Utc), id.to_string()))
}

#[utoipa::path(get, path = "/api/classes", tag = "classes",
    description = "The classes, newest first, a page at a time (`limit`, 100 by default). A server administrator's token sees every \
        class; a staff account's token only the classes the account has a role in, each with that `role`. \
        When there are more, the answer carries `Link: </api/classes?limit=N&cursor=C>; rel=\"next\"`, the next page's URL; \
        the last page has no `Link`.",
    params(ClassPageQuery),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = [ClassBody], headers(
            ("link" = String, description = "`</api/classes?limit=N&cursor=C>; rel=\"next\"` when there are more classes after this page"))),
        (status = 400, description = "bad_request: a query string that cannot be read (a `limit` that is not a number)", body = ErrorBody),
        (status = 422, description = "invalid_request: a `limit` outside 1 to 1000 (path `?limit`), or a `cursor` the server did not give (path `?cursor`)", body = ErrorBody)))]
pub async fn list_classes(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    grader: Grader,
    headers: HeaderMap,
    Query(query): Query<ClassPageQuery>,
) -> Result<Response, AppError> {
    let limit = query.limit.unwrap_or(CLASS_PAGE_DEFAULT);
    if !(1..=CLASS_PAGE_MAX).contains(&limit) {
        return Err(AppError::invalid_request(format!(
            "limit is a whole number from 1 to {CLASS_PAGE_MAX}"
        ))
        .at("?limit"));
    }
    let after = query.cursor.as_deref().map(read_cursor).transpose()?;
    // One more than the page, to tell whether another page follows.
    let mut classes = store
        .list_classes_page(limit + 1, after.as_ref(), grader.account.as_deref())
        .await?;
    let more = classes.len() > limit as usize;
    classes.truncate(limit as usize);
    let next = more
        .then(|| classes.last().map(class_cursor))
        .flatten()
        .map(|cursor| format!("</api/classes?limit={limit}&cursor={cursor}>; rel=\"next\""));
    let mut body = Vec::with_capacity(classes.len());
    for class in classes {
        let role = match &grader.account {
            Some(account) => store.staff_role(&class.id, account).await?,
            None => None,
        };
        body.push(ClassBody {
            role,
            ..class_body(class, &headers, &config)
        });
    }
    let mut response = Json(body).into_response();
    if let Some(link) = next.and_then(|l| HeaderValue::from_str(&l).ok()) {
        response.headers_mut().insert(header::LINK, link);
    }
    Ok(response)
}

#[utoipa::path(get, path = "/api/classes/{id}", tag = "classes",
    description = "One class.",
    params(("id" = String, Path, description = "The class id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = ClassBody),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody)))]
pub async fn get_class(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    grader: Grader,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<ClassBody>, AppError> {
    let (class, role) = class_for(&store, &grader, &id, Need::Read).await?;
    Ok(Json(ClassBody {
        role,
        ..class_body(class, &headers, &config)
    }))
}

#[utoipa::path(patch, path = "/api/classes/{id}", tag = "classes", request_body = ClassUpdate,
    description = "Changes a class's name, whether it is open, or its preview setting; what is left out stays.",
    params(("id" = String, Path, description = "The class id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = ClassBody),
        (status = 403, description = "forbidden: the account is not the class's owner, or the token is read-only; or cross_site_request", body = ErrorBody),
        (status = 422, description = "invalid_request: the name, or a preview other than everything, lacks or nothing", body = ErrorBody)))]
pub async fn update_class(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    grader: Grader,
    headers: HeaderMap,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ClassUpdate>,
) -> Result<Json<ClassBody>, AppError> {
    let (before, role) = class_for(&store, &grader, &id, Need::Own).await?;
    let name = body
        .name
        .as_deref()
        .map(|n| class_name(n, "$.name"))
        .transpose()?;
    let class = store
        .update_class(&id, name.as_deref(), body.open, body.preview)
        .await?
        .ok_or_else(|| unknown_class(&id))?;
    audit_change(&store, &grader, &before, &class).await?;
    Ok(Json(ClassBody {
        role,
        ..class_body(class, &headers, &config)
    }))
}

async fn set_open(
    store: &Store,
    config: &Config,
    grader: &Grader,
    headers: &HeaderMap,
    id: &str,
    open: bool,
) -> Result<Json<ClassBody>, AppError> {
    let (before, role) = class_for(store, grader, id, Need::Own).await?;
    let class = store
        .update_class(id, None, Some(open), None)
        .await?
        .ok_or_else(|| unknown_class(id))?;
    audit_change(store, grader, &before, &class).await?;
    Ok(Json(ClassBody {
        role,
        ..class_body(class, headers, config)
    }))
}

/// The class `id` when the caller may do `need` there, with the caller's role: 404
/// `unknown_class` for a class that does not exist, 403 `forbidden` for one the caller has
/// no such role in.
pub(crate) async fn class_for(
    store: &Store,
    grader: &Grader,
    id: &str,
    need: Need,
) -> Result<(Class, Option<StaffRole>), AppError> {
    let class = existing(store, id).await?;
    let role = grader.may(store, id, need).await?;
    Ok((class, role))
}

/// Writes in the audit log what a change of settings did to a class, when it did anything.
pub(super) async fn audit_change(
    store: &Store,
    grader: &Grader,
    before: &Class,
    after: &Class,
) -> Result<(), AppError> {
    let mut changes = Vec::new();
    if before.name != after.name {
        changes.push(format!(
            "renamed it from \"{}\" to \"{}\"",
            before.name, after.name
        ));
    }
    if before.open != after.open {
        changes.push(
            if after.open {
                "reopened it"
            } else {
                "closed it"
            }
            .to_string(),
        );
    }
    if before.preview != after.preview {
        changes.push(format!(
            "set its preview from {} to {}",
            before.preview.as_str(),
            after.preview.as_str()
        ));
    }
    if !changes.is_empty() {
        store
            .audit(
                &grader.actor(),
                Some(&after.id),
                "class_changed",
                &changes.join("; "),
            )
            .await?;
    }
    Ok(())
}

#[utoipa::path(post, path = "/api/classes/{id}/close", tag = "classes",
    description = "Closes a class: it then refuses joins and attempts (409 `class_closed`). Its members and attempts stay.",
    params(("id" = String, Path, description = "The class id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = ClassBody),
        (status = 403, description = "forbidden: the account is not the class's owner, or the token is read-only; or cross_site_request", body = ErrorBody)))]
pub async fn close_class(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    grader: Grader,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<ClassBody>, AppError> {
    set_open(&store, &config, &grader, &headers, &id, false).await
}

#[utoipa::path(post, path = "/api/classes/{id}/reopen", tag = "classes",
    description = "Opens a closed class again.",
    params(("id" = String, Path, description = "The class id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = ClassBody),
        (status = 403, description = "forbidden: the account is not the class's owner, or the token is read-only; or cross_site_request", body = ErrorBody)))]
pub async fn reopen_class(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    grader: Grader,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<ClassBody>, AppError> {
    set_open(&store, &config, &grader, &headers, &id, true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_join_code_is_eight_readable_characters_and_codes_differ() {
        let mut seen = std::collections::BTreeSet::new();
        let mut counts = [0u32; 31];
        for _ in 0..2000 {
            let code = new_join_code().unwrap();
            assert_eq!(code.len(), JOIN_CODE_LENGTH);
            for b in code.bytes() {
                let at = JOIN_CODE_ALPHABET.iter().position(|&a| a == b);
                assert!(at.is_some(), "{code} has {}", char::from(b));
                counts[at.unwrap()] += 1;
                assert!(!b"0O1lIL".contains(&b));
            }
            seen.insert(code);
        }
        assert_eq!(
            seen.len(),
            2000,
            "2000 codes from 31^8 never repeat in practice"
        );
        // 16,000 characters over 31: every character turns up, none far more than its share
        // (516 expected; the bounds are beyond six standard deviations).
        for (i, n) in counts.iter().enumerate() {
            assert!(
                (380..=660).contains(n),
                "{} drawn {n} times",
                char::from(JOIN_CODE_ALPHABET[i])
            );
        }
    }

    #[test]
    fn a_typed_code_is_read_as_the_same_code() {
        assert_eq!(normal_code(" k7qm-3xhp "), "K7QM3XHP");
        assert_eq!(normal_code("K7QM 3XHP"), "K7QM3XHP");
        assert_eq!(normal_code(""), "");
    }
}
