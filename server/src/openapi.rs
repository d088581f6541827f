//! The OpenAPI 3.1 document, generated from the handlers' annotations and from the types
//! themselves: the server's own bodies derive their schemas here, and the verdict's and the
//! design's come from `shared` (its `openapi` feature), so the document describes exactly the
//! JSON the API answers and accepts. A test validates real answers against it.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::error::ErrorCode;
use crate::regrade;
use crate::routes::{csv, grading, operations};
use shared::design::{Design, DesignError, Edge, Node, NodeKind, Position};
use shared::verdict::{
    Advisories, Advisory, Counterexample, Coverage, DiffRow, FailureCoverage, FaultAt,
    RequirementVerdict, RowStatus, TableDiff, TableView, TraceEntry, UntestedOption, Verdict,
};
use shared::wire;

#[derive(OpenApi)]
#[openapi(
    info(title = "Pipeline Builder", description = "Check data-pipeline designs against every failure a scenario allows; record and grade students' attempts."),
    // The document's own route; every other path comes from the routes the router registers
    // (`app::api_routes`), each listed once there.
    paths(operations::openapi),
    components(schemas(
        wire::errors::ErrorBody, wire::errors::ErrorDetail, wire::errors::ErrorCode, DesignError,
        Verdict, RequirementVerdict, Counterexample, TraceEntry, FaultAt, TableView,
        TableDiff, DiffRow, RowStatus, Coverage, FailureCoverage, UntestedOption, Advisories, Advisory,
        Design, Node, Edge, Position, NodeKind,
        wire::session::SessionBody, wire::session::SessionUpdate,
        wire::catalogue::ScenarioSummary, wire::catalogue::ProgressState,
        wire::submissions::SubmissionRequest, wire::submissions::Submission, wire::submissions::SubmissionSummary,
        grading::GradeItem, grading::GradeResult, grading::GradeEntry, grading::GradeError,
        grading::GradescopeResult, grading::GradescopeTest, grading::GradeFormat, csv::ListFormat,
        wire::submissions::DraftBody, wire::submissions::DraftAnswer, operations::Health,
        wire::classes::Preview, wire::classes::ClassBody, wire::classes::StudentClass,
        wire::classes::NewClass, wire::classes::ClassUpdate, wire::classes::JoinRequest,
        wire::classes::RegradeRequest, wire::classes::MemberUpdate, wire::session::SignIn, wire::session::Instructor,
        wire::classes::StudentAttempts, wire::classes::ClassAttemptBody,
        wire::classes::Matrix, wire::classes::ScenarioProgress, wire::classes::StudentRow,
        wire::classes::Cell, wire::classes::CellState,
        wire::classes::MissedScenario, wire::classes::MissedRequirement, wire::classes::MissedBy,
        wire::classes::AttemptRow, wire::classes::RegradeRow,
        regrade::RegradeReport, regrade::RequirementChange,
        wire::classes::StaffRole, wire::classes::StaffMember, wire::classes::StaffGrant,
        wire::classes::AuditEntry, wire::classes::Gradebook, wire::classes::GradebookScenario,
        wire::classes::GradebookRow, wire::classes::LtiIdentity, wire::classes::Grade,
        wire::classes::ScoreOverride, wire::classes::OverrideRequest, wire::classes::LatePolicy,
        wire::classes::Deadlines, wire::classes::ScenarioDue, wire::classes::Extension,
        wire::classes::DeadlinesUpdate, wire::classes::ExtensionRequest,
    )),
    tags(
        (name = "scenarios", description = "The catalogue and the check"),
        (name = "submissions", description = "Recorded attempts"),
        (name = "grading", description = "Whole classes at once"),
        (name = "students", description = "Anonymous sessions and drafts"),
        (name = "classes", description = "Classes, joining, the instructor's dashboard and regrading"),
        (name = "operations", description = "Health, readiness, metrics and this document"),
    )
)]
struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "grader_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("A grader token from `pipeline-builder token create`"))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "grader_cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "__Host-pb_grader",
                "The grader token POST /api/instructor/session keeps in an HttpOnly, SameSite=Strict cookie (`pb_grader` on plain HTTP to a host other than loopback)",
            ))),
        );
        components.add_security_scheme(
            "student_cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "__Host-pb_session",
                "The session secret POST /api/session sets (`pb_session` on plain HTTP to a host other than loopback)",
            ))),
        );
    }
}

/// The error answers a route gives through what it uses, written into every operation that
/// uses it (unless the route documents that status itself, with its own words): a grader's
/// token or cookie (`Grader`) answers `401 unauthorized`; a JSON body (`JsonBody`) answers
/// `400 malformed_json` and `413 body_too_large`; a write a cookie authenticates passes the
/// cross-site guard, which answers `415 unsupported_media_type` to a body that is not JSON; a class of the
/// path (`routes::classes::class_for`) answers `404 unknown_class`; a `format` query
/// (`FormatQuery`) answers `400 bad_request` for an unreadable query and `422
/// invalid_request` for another format.
struct ExtractorErrors;

impl Modify for ExtractorErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{Content, Ref, ResponseBuilder};
        for (path, item) in openapi.paths.paths.iter_mut() {
            for (write, operation) in [
                (false, &mut item.get),
                (true, &mut item.put),
                (true, &mut item.post),
                (true, &mut item.delete),
                (true, &mut item.patch),
            ] {
                let Some(operation) = operation else {
                    continue;
                };
                // Written by the route's attribute: a map of scheme names, which serialises.
                let security = serde_json::to_value(&operation.security)
                    .expect("a route's security requirements are JSON");
                let uses = |scheme: &str| {
                    security
                        .as_array()
                        .is_some_and(|s| s.iter().any(|r| r.get(scheme).is_some()))
                };
                let grader = uses("grader_token");
                let cookie = uses("grader_cookie") || uses("student_cookie");
                let json_body = operation
                    .request_body
                    .as_ref()
                    .is_some_and(|b| b.content.contains_key("application/json"));
                let format = operation
                    .parameters
                    .iter()
                    .flatten()
                    .any(|p| p.name == "format");
                let mut answers: Vec<(&str, &str)> = Vec::new();
                if grader {
                    answers.push(("401", "unauthorized"));
                }
                if json_body {
                    answers.extend([("400", "malformed_json"), ("413", "body_too_large")]);
                }
                if write && cookie {
                    answers.push(("415", "unsupported_media_type"));
                }
                if grader && path.starts_with("/api/classes/{id}") {
                    answers.push(("404", "unknown_class"));
                }
                if format {
                    answers.extend([
                        ("400", "bad_request: an unreadable query string"),
                        ("422", "invalid_request: a `format` other than json or csv"),
                    ]);
                }
                for (status, description) in answers {
                    operation
                        .responses
                        .responses
                        .entry(status.to_string())
                        .or_insert_with(|| {
                            ResponseBuilder::new()
                                .description(description)
                                .content(
                                    "application/json",
                                    Content::new(Some(Ref::from_schema_name("ErrorBody"))),
                                )
                                .build()
                                .into()
                        });
                }
            }
        }
    }
}

/// The answers every route may give besides its own: `429 rate_limited` on `/api/…`,
/// `/readyz` and `/metrics`, and
/// `503 database_unavailable` on the routes that need the database; both with `Retry-After`.
struct CommonErrors;

impl Modify for CommonErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::header::HeaderBuilder;
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        use utoipa::openapi::{Content, Ref, RefOr, ResponseBuilder};
        let error = |description: &str| -> RefOr<utoipa::openapi::Response> {
            let retry_after = HeaderBuilder::new()
                .schema(ObjectBuilder::new().schema_type(Type::Integer))
                .description(Some("Seconds to wait before a retry may succeed"))
                .build();
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    Content::new(Some(Ref::from_schema_name("ErrorBody"))),
                )
                .header("Retry-After", retry_after)
                .build()
                .into()
        };
        // The catalogue degrades to no progress rather than failing; these need no database.
        let without_database = [
            "/api/scenarios",
            "/api/scenarios/{id}",
            "/api/scenarios/{id}/check",
            "/api/openapi.json",
            "/healthz",
            "/metrics",
        ];
        for (path, item) in openapi.paths.paths.iter_mut() {
            // `/readyz` and `/metrics` share the pages' bucket per address; `/healthz` has none.
            let limited = path.starts_with("/api/") || path == "/readyz" || path == "/metrics";
            let needs_database = !without_database.contains(&path.as_str());
            for operation in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                let responses = &mut operation.responses.responses;
                if limited {
                    responses.entry("429".to_string()).or_insert_with(|| {
                        error(&format!(
                            "{}: this client made too many requests; wait as Retry-After says",
                            ErrorCode::RateLimited
                        ))
                    });
                }
                if needs_database {
                    // Replaces a route's own 503, so that each one names its Retry-After.
                    responses.insert(
                        "503".to_string(),
                        error(&format!(
                            "{}: the database cannot be reached; retry after Retry-After seconds",
                            ErrorCode::DatabaseUnavailable
                        )),
                    );
                }
            }
        }
    }
}

/// A node's `options` are any JSON values by name: which names and values a kind takes is
/// checked against the scenario, not by the schema. `shared` types them as a map of
/// `serde_json::Value`, which utoipa would describe with a reference to a `Value` schema that
/// no document defines; this describes them as the free-form object they are.
struct NodeOptions;

impl Modify for NodeOptions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Schema};
        use utoipa::openapi::RefOr;
        let Some(components) = openapi.components.as_mut() else {
            return;
        };
        let Some(RefOr::T(Schema::Object(node))) = components.schemas.get_mut("Node") else {
            return;
        };
        let options = ObjectBuilder::new()
            .description(Some(
                "The kind's options; a missing option takes its default. For example a batch \
                 job's `date_filter`, `transaction`, `loaded_at`, or a table's `table`, \
                 `write`, `key`.",
            ))
            .additional_properties(Some(AdditionalProperties::FreeForm(true)))
            .examples([
                serde_json::json!({"date_filter": "logical_date", "transaction": "per_run"}),
            ])
            .build();
        node.properties
            .insert("options".to_string(), RefOr::T(Schema::Object(options)));
    }
}

/// The document of the routes `paths` holds (split from the router's [`OpenApiRouter`]
/// (`utoipa_axum`)): this module's types, tags and the document's own route, with those
/// paths, then what every route shares (security, common errors) written into it.
pub fn with_paths(paths: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    let mut document = ApiDoc::openapi();
    document.merge(paths);
    for modifier in [
        &Security as &dyn Modify,
        &ExtractorErrors,
        &CommonErrors,
        &NodeOptions,
    ] {
        modifier.modify(&mut document);
    }
    document
}

/// The whole document, as the router serves it.
pub fn document() -> utoipa::openapi::OpenApi {
    with_paths(crate::api::api_routes().into_openapi())
}
