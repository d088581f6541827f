//! `/api/classes`: classes that a grader makes and students join with a code; the
//! instructor's dashboard of a class (the matrix, the requirements missed most, a student's
//! attempts, CSV exports); regrading; and the instructor's sign-in cookie.
//!
//! Every route here but joining and a student's own list of classes needs a grader: a bearer
//! token, or the cookie `POST /api/instructor/session` sets. A student's session cookie is
//! never enough.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use serde::Deserialize;
use utoipa::IntoParams;

use super::{scenario_entry, time};
use crate::auth::{self, Grader, Need, Session};
use crate::catalogue::Catalogue;
use crate::config::Config;
use crate::dashboard::{self, AttemptRow, ClassData, Matrix, MissedScenario};
use crate::error::{AppError, ErrorBody, ErrorCode, JsonBody};
use crate::limit::JoinGuesses;
use crate::regrade::{self, RegradeReport};
use crate::report::CsvRow;
use crate::store::{Class, ClassMade, DueDates, Joined, Membership, StaffRole, Store};

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

fn unknown_class(id: &str) -> AppError {
    AppError::of(
        ErrorCode::UnknownClass,
        format!(
            "there is no class \"{}\"; GET /api/classes lists them",
            id.escape_default()
        ),
    )
}

fn class_closed(name: &str) -> AppError {
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

fn class_body(class: Class, headers: &HeaderMap, config: &Config) -> ClassBody {
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
async fn student_class(
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
        (status = 400, description = "malformed_json", body = ErrorBody),
        (status = 401, description = "unauthorized: no grader token (a student's session is not one)", body = ErrorBody),
        (status = 403, description = "forbidden: a read-only token; or cross_site_request: another site sent it (with the grader cookie)", body = ErrorBody),
        (status = 409, description = "class_limit_reached: the token has made as many classes as one token may (`--classes-per-token-max`, 1,000 by default)", body = ErrorBody),
        (status = 413, description = "body_too_large", body = ErrorBody),
        (status = 415, description = "unsupported_media_type", body = ErrorBody),
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
        (status = 401, description = "unauthorized", body = ErrorBody),
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
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody),
        (status = 404, description = "unknown_class", body = ErrorBody)))]
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
        (status = 400, description = "malformed_json", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the account is not the class's owner, or the token is read-only; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class", body = ErrorBody),
        (status = 413, description = "body_too_large", body = ErrorBody),
        (status = 415, description = "unsupported_media_type", body = ErrorBody),
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
async fn audit_change(
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
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the account is not the class's owner, or the token is read-only; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class", body = ErrorBody),
        (status = 415, description = "unsupported_media_type", body = ErrorBody)))]
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
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the account is not the class's owner, or the token is read-only; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class", body = ErrorBody),
        (status = 415, description = "unsupported_media_type", body = ErrorBody)))]
pub async fn reopen_class(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    grader: Grader,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<ClassBody>, AppError> {
    set_open(&store, &config, &grader, &headers, &id, true).await
}

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
        (status = 413, description = "body_too_large", body = ErrorBody),
        (status = 415, description = "unsupported_media_type", body = ErrorBody),
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

fn name_clash(name: &str) -> AppError {
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

#[utoipa::path(patch, path = "/api/classes/{id}/students/{student}", tag = "classes", request_body = MemberUpdate,
    description = "Renames a member of the class (the name staff see). A TA or the owner may; the audit log records it.",
    params(("id" = String, Path, description = "The class id"), ("student" = String, Path, description = "The student id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 204, description = "Renamed"),
        (status = 400, description = "malformed_json", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the account is not a TA or owner of the class, or the token is read-only; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class, or unknown_student: not a member", body = ErrorBody),
        (status = 413, description = "body_too_large", body = ErrorBody),
        (status = 415, description = "unsupported_media_type", body = ErrorBody),
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

fn not_a_member(student: &str) -> AppError {
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
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the account is not a TA or owner of the class, or the token is read-only; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_class, or unknown_student: not a member", body = ErrorBody),
        (status = 415, description = "unsupported_media_type", body = ErrorBody)))]
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

/// Everything the dashboard reads of a class.
pub(super) struct Loaded {
    members: Vec<Membership>,
    attempts: Vec<crate::store::ClassAttempt>,
    regrades: Vec<crate::store::Regrade>,
    due: DueDates,
}

impl Loaded {
    pub(super) async fn of(
        store: &Store,
        class: &str,
        student: Option<&str>,
    ) -> Result<Loaded, AppError> {
        Ok(Loaded {
            members: store.members(class).await?,
            attempts: store.class_attempts(class, student).await?,
            regrades: store.regrades(Some(class), None).await?,
            due: store.due_dates(class).await?,
        })
    }

    pub(super) fn data<'a>(&'a self, class: &'a str, catalogue: &'a Catalogue) -> ClassData<'a> {
        ClassData {
            class,
            catalogue,
            members: &self.members,
            attempts: &self.attempts,
            regrades: &self.regrades,
            due: &self.due,
        }
    }
}

/// The CSV's note of a late attempt: when it was due.
fn late_note(due: &DueDates, a: &crate::store::AttemptSummary) -> String {
    match due.due(&a.student, &a.scenario) {
        Some(at) if a.created_at > at => format!("late: due {}", time(at)),
        _ => String::new(),
    }
}

pub(super) fn wants_csv(format: Option<&str>) -> Result<bool, AppError> {
    match format {
        None | Some("json") => Ok(false),
        Some("csv") => Ok(true),
        Some(other) => Err(AppError::invalid_request(format!(
            "unknown format \"{}\"; use json (the default) or csv",
            other.escape_default()
        ))
        .at("?format")),
    }
}

/// The header and an example row of the matrix's CSV, for the OpenAPI document.
pub const MATRIX_CSV_EXAMPLE: &str = "student,display_name,scenario,state,attempts,last_attempt_at,attempts_before_first_pass,outdated_attempts,late_attempts\r\n\
    s-0f8e3c2a9b7d4e61a5c3b2d1e0f9a8b7,Ada L.,safe-retry,passed,3,2026-01-12T09:30:00.000Z,2,0,1\r\n";

#[utoipa::path(get, path = "/api/classes/{id}/matrix", tag = "classes",
    description = "Students × scenarios: per student and scenario `not_tried`, `tried` or `passed`, the attempts, \
        the last attempt's time, the attempts before the first pass, the attempts whose result is from an older \
        version of the scenario, and the attempts made after the student's due date; per scenario, the class's progress. With `?format=csv`, one row per student and scenario; \
        a field that starts with `=`, `+`, `-`, `@`, a tab or a CR is written as text (a `'` before it, quoted), and \
        `bom=true` starts the file with a UTF-8 byte order mark.",
    params(("id" = String, Path, description = "The class id"), FormatQuery),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, content(
            (Matrix = "application/json"),
            (String = "text/csv", example = json!(MATRIX_CSV_EXAMPLE)))),
        (status = 400, description = "bad_request: an unreadable query string", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody),
        (status = 404, description = "unknown_class", body = ErrorBody),
        (status = 422, description = "invalid_request: a `format` other than json or csv", body = ErrorBody)))]
pub async fn matrix(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path(id): Path<String>,
    Query(query): Query<FormatQuery>,
) -> Result<Response, AppError> {
    let csv = wants_csv(query.format.as_deref())?;
    class_for(&store, &grader, &id, Need::Read).await?;
    let loaded = Loaded::of(&store, &id, None).await?;
    let matrix = dashboard::matrix(&loaded.data(&id, &catalogue));
    if csv {
        return Ok(super::csv::csv_answer(
            dashboard::matrix_csv(&matrix),
            super::csv::Bom::asked(query.bom),
        ));
    }
    Ok(Json(matrix).into_response())
}

#[utoipa::path(get, path = "/api/classes/{id}/missed", tag = "classes",
    description = "Per scenario, the requirements the class missed, most missed first: how many students missed each \
        (in any attempt), their share of the students who tried the scenario, how many still miss it in their latest \
        attempt, and who.",
    params(("id" = String, Path, description = "The class id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = [MissedScenario]),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody),
        (status = 404, description = "unknown_class", body = ErrorBody)))]
pub async fn missed(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path(id): Path<String>,
) -> Result<Json<Vec<MissedScenario>>, AppError> {
    class_for(&store, &grader, &id, Need::Read).await?;
    let loaded = Loaded::of(&store, &id, None).await?;
    Ok(Json(dashboard::missed(&loaded.data(&id, &catalogue))))
}

#[utoipa::path(get, path = "/api/classes/{id}/students/{student}/attempts", tag = "classes",
    description = "A member's attempts for the class, oldest first, each with its verdict and any regraded ones.",
    params(("id" = String, Path, description = "The class id"), ("student" = String, Path, description = "The student id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = StudentAttempts),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody),
        (status = 404, description = "unknown_class, or unknown_student: not a member of the class", body = ErrorBody)))]
pub async fn student_attempts(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path((id, student)): Path<(String, String)>,
) -> Result<Json<StudentAttempts>, AppError> {
    class_for(&store, &grader, &id, Need::Read).await?;
    let member = member_of(&store, &id, &student).await?;
    let loaded = Loaded::of(&store, &id, Some(&student)).await?;
    let attempts = dashboard::student_attempts(&loaded.data(&id, &catalogue), &student);
    Ok(Json(StudentAttempts {
        class: id,
        student: member.student,
        display_name: member.display_name,
        joined_at: time(member.joined_at),
        attempts,
    }))
}

#[utoipa::path(get, path = "/api/classes/{id}/attempts/{attempt}", tag = "classes",
    description = "One attempt of the class with its design, its verdict (with the replay of each missed requirement) \
        and any regraded verdicts.",
    params(("id" = String, Path, description = "The class id"), ("attempt" = String, Path, description = "The submission id")),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = ClassAttemptBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody),
        (status = 404, description = "unknown_class, or unknown_submission: no attempt of this class has this id", body = ErrorBody)))]
pub async fn class_attempt(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path((id, attempt)): Path<(String, String)>,
) -> Result<Json<ClassAttemptBody>, AppError> {
    class_for(&store, &grader, &id, Need::Read).await?;
    let unknown = || {
        AppError::of(
            ErrorCode::UnknownSubmission,
            format!("the class has no attempt \"{}\"", attempt.escape_default()),
        )
    };
    let found = if attempt.len() > 64 {
        None
    } else {
        store.get_attempt(&attempt).await?
    };
    let found = found
        .filter(|a| a.class.as_deref() == Some(id.as_str()))
        .ok_or_else(unknown)?;
    let loaded = Loaded::of(&store, &id, Some(&found.student)).await?;
    let row = dashboard::student_attempts(&loaded.data(&id, &catalogue), &found.student)
        .into_iter()
        .find(|r| r.id == found.id)
        .ok_or_else(unknown)?;
    let display_name = store
        .membership(&id, &found.student)
        .await?
        .map(|m| m.display_name)
        .unwrap_or_default();
    Ok(Json(ClassAttemptBody {
        row,
        student: found.student,
        display_name,
        design: found.design,
    }))
}

#[utoipa::path(get, path = "/api/classes/{id}/attempts", tag = "classes",
    description = "Every attempt of the class's members, oldest first, each with its verdict and any regraded ones. \
        With `?format=csv`, one row per attempt with `student`, `display_name` (the name the student gave the class), `scenario`, \
        `score`, `max_score`, `passed`, `missed`, `submission_id`, `submitted_at`, `error` (always empty) and `note` (`late: due …` for an attempt after the student's due date, else empty), \
        as `GET /api/submissions?format=csv` writes them; a field that starts with `=`, `+`, `-`, `@`, a tab or a CR is written \
        as text (a `'` before it, quoted). `bom=true` starts the file with a UTF-8 byte order mark.",
    params(("id" = String, Path, description = "The class id"), FormatQuery),
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, content(
            ([AttemptRow] = "application/json"),
            (String = "text/csv", example = json!(super::csv::CSV_EXAMPLE)))),
        (status = 400, description = "bad_request: an unreadable query string", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the token's account has no role in the class", body = ErrorBody),
        (status = 404, description = "unknown_class", body = ErrorBody),
        (status = 422, description = "invalid_request: a `format` other than json or csv", body = ErrorBody)))]
pub async fn class_attempts(
    State(store): State<Store>,
    State(catalogue): State<Arc<Catalogue>>,
    grader: Grader,
    Path(id): Path<String>,
    Query(query): Query<FormatQuery>,
) -> Result<Response, AppError> {
    let csv = wants_csv(query.format.as_deref())?;
    class_for(&store, &grader, &id, Need::Read).await?;
    let attempts = store.class_attempts(&id, None).await?;
    let due = store.due_dates(&id).await?;
    if csv {
        // The class's name for each student: the CSV names them as the matrix does.
        let names: std::collections::BTreeMap<String, String> = store
            .members(&id)
            .await?
            .into_iter()
            .map(|m| (m.student, m.display_name))
            .collect();
        let rows: Vec<CsvRow> = attempts
            .iter()
            .map(|a| CsvRow {
                student: a.summary.student.clone(),
                display_name: names.get(&a.summary.student).cloned().unwrap_or_default(),
                scenario: a.summary.scenario.clone(),
                score: Some(super::count(a.summary.score)),
                max_score: Some(super::count(a.summary.max_score)),
                passed: a.summary.passed,
                missed: CsvRow::missed_of(&a.verdict),
                submission_id: a.summary.id.clone(),
                submitted_at: time(a.summary.created_at),
                note: late_note(&due, &a.summary),
                ..CsvRow::default()
            })
            .collect();
        return Ok(super::csv::csv_response(
            &rows,
            super::csv::Bom::asked(query.bom),
        ));
    }
    let loaded = Loaded {
        members: store.members(&id).await?,
        attempts,
        regrades: store.regrades(Some(&id), None).await?,
        due,
    };
    let data = loaded.data(&id, &catalogue);
    let mut rows = Vec::new();
    for m in &loaded.members {
        rows.extend(dashboard::student_attempts(&data, &m.student));
    }
    rows.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    Ok(Json(rows).into_response())
}

#[utoipa::path(post, path = "/api/regrade", tag = "classes", request_body = RegradeRequest,
    description = "Checks again the stored attempts at a scenario (of one class, when given) made against another version \
        of its file, and records the new verdicts beside the old ones, a batch per transaction. Running it again goes on \
        where it stopped and regrades nothing twice. The report says how many results changed per requirement.",
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = RegradeReport),
        (status = 400, description = "malformed_json", body = ErrorBody),
        (status = 401, description = "unauthorized", body = ErrorBody),
        (status = 403, description = "forbidden: the account is not a TA or owner of the class, the token is read-only, or no class is named by a staff account's token; or cross_site_request", body = ErrorBody),
        (status = 404, description = "unknown_scenario or unknown_class", body = ErrorBody),
        (status = 413, description = "body_too_large", body = ErrorBody),
        (status = 415, description = "unsupported_media_type", body = ErrorBody),
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

#[utoipa::path(post, path = "/api/instructor/session", tag = "classes", request_body = SignIn,
    description = "Signs an instructor in with a grader token: sets the cookie `__Host-pb_grader` (HttpOnly, Secure, \
        SameSite=Strict, Path=/, 12 hours; `pb_grader` without Secure on plain HTTP to a host other than loopback), \
        which the grader routes accept as they accept the bearer token. The token is never put in a URL.",
    responses((status = 200, description = "Signed in; Set-Cookie carries it", body = Instructor),
        (status = 400, description = "malformed_json", body = ErrorBody),
        (status = 401, description = "unauthorized: the token is unknown or revoked", body = ErrorBody),
        (status = 403, description = "cross_site_request", body = ErrorBody),
        (status = 413, description = "body_too_large", body = ErrorBody),
        (status = 415, description = "unsupported_media_type", body = ErrorBody),
        (status = 422, description = "invalid_request", body = ErrorBody)))]
pub async fn sign_in(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<SignIn>,
) -> Result<Response, AppError> {
    let token = body.token.trim();
    let shaped = !token.is_empty()
        && token.len() <= 256
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let found = if shaped {
        auth::verify_token(&store, token).await?
    } else {
        None
    };
    let Some(found) = found else {
        return Err(AppError::unauthorized("the grader token is unknown or revoked").at("$.token"));
    };
    let mut response = Json(Instructor {
        administrator: found.account.is_none(),
        name: found.name,
        account: found.account,
        read_only: found.read_only,
    })
    .into_response();
    let set = auth::grader_cookie(&headers, &config, token);
    let prefixed = set.starts_with(auth::GRADER_COOKIE);
    let cookie = HeaderValue::from_str(&set).map_err(AppError::internal)?;
    response.headers_mut().append(header::SET_COOKIE, cookie);
    if prefixed {
        // An unprefixed cookie this host set before is removed; it would not count anyway.
        response.headers_mut().append(
            header::SET_COOKIE,
            HeaderValue::from_static(auth::EXPIRE_PLAIN_GRADER_COOKIE),
        );
    }
    Ok(response)
}

#[utoipa::path(get, path = "/api/instructor/session", tag = "classes",
    description = "Who is signed in: the grader token's name, the staff account it acts for (absent for a server \
        administrator's token), and whether it may only read.",
    security(("grader_token" = []), ("grader_cookie" = [])),
    responses((status = 200, body = Instructor),
        (status = 401, description = "unauthorized", body = ErrorBody)))]
pub async fn whoami(grader: Grader) -> Json<Instructor> {
    Json(Instructor {
        administrator: grader.administrator(),
        name: grader.name,
        account: grader.account,
        read_only: grader.read_only,
    })
}

#[utoipa::path(delete, path = "/api/instructor/session", tag = "classes",
    description = "Signs the instructor out: expires the grader cookie.",
    responses((status = 204, description = "Signed out"),
        (status = 403, description = "cross_site_request", body = ErrorBody),
        (status = 415, description = "unsupported_media_type: a body that is not application/json", body = ErrorBody)))]
pub async fn sign_out(State(config): State<Arc<Config>>, headers: HeaderMap) -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    if let Ok(v) = HeaderValue::from_str(&auth::expire_grader_cookie(&headers, &config)) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
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
