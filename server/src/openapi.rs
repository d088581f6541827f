//! The OpenAPI 3 document, generated from the handlers' annotations.
//!
//! The verdict's types live in `shared`, which must not depend on utoipa; the `*Doc` types
//! below describe the same JSON for the document only.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::api;
use crate::error::{ErrorBody, ErrorDetail};

#[derive(OpenApi)]
#[openapi(
    info(title = "Pipeline Builder", description = "Check data-pipeline designs against every failure a scenario allows; record and grade students' attempts."),
    paths(
        api::get_session, api::put_session,
        api::list_scenarios, api::get_scenario, api::check,
        api::create_submission, api::list_submissions, api::get_submission,
        api::grade,
        api::get_draft, api::put_draft,
        api::openapi, api::healthz, api::readyz, api::metrics,
    ),
    components(schemas(
        ErrorBody, ErrorDetail, DesignErrorDoc, VerdictDoc, RequirementVerdictDoc, CounterexampleDoc, TraceEntryDoc, FaultAtDoc, TableViewDoc,
        api::SessionBody, api::SessionUpdate, api::ScenarioSummary, api::ProgressState, api::SubmissionRequest, api::Submission,
        api::SubmissionSummary, api::GradeItem, api::GradeResult, api::DraftBody, api::DraftAnswer, api::Health,
        GradeEntryDoc, GradeErrorDoc, GradescopeResultDoc, GradescopeTestDoc, DesignDoc, NodeDoc, EdgeDoc, PositionDoc, NodeKindDoc,
    )),
    modifiers(&Security, &CommonErrors),
    tags(
        (name = "scenarios", description = "The catalogue and the check"),
        (name = "submissions", description = "Recorded attempts"),
        (name = "grading", description = "Whole classes at once"),
        (name = "students", description = "Anonymous sessions and drafts"),
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
            "student_cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new("pb_student"))),
        );
    }
}

/// The answers every route may give besides its own: `429 rate_limited` on `/api/…`, and
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
            let limited = path.starts_with("/api/");
            let needs_database = !without_database.contains(&path.as_str());
            for operation in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                let responses = &mut operation.responses.responses;
                if limited {
                    responses.entry("429".to_string()).or_insert_with(|| error("rate_limited: this client made too many requests; wait as Retry-After says"));
                }
                if needs_database {
                    // Replaces a route's own 503, so that each one names its Retry-After.
                    responses.insert("503".to_string(), error("database_unavailable: the database cannot be reached; retry after Retry-After seconds"));
                }
            }
        }
    }
}

pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// One problem of a design.
#[derive(Serialize, ToSchema)]
#[schema(as = DesignError)]
pub struct DesignErrorDoc {
    #[schema(example = "$.nodes[2].options.write")]
    pub path: String,
    #[schema(example = "unknown_value")]
    pub code: String,
    pub message: String,
}

/// The verdict of a check (SPEC §2).
#[derive(Serialize, ToSchema)]
#[schema(as = Verdict)]
pub struct VerdictDoc {
    #[schema(example = "safe-retry")]
    pub scenario: String,
    /// sha256 of the scenario, so a grade names exactly what it was graded against.
    #[schema(example = "sha256:…")]
    pub scenario_hash: String,
    pub passed: bool,
    /// One point per requirement passed.
    pub score: u32,
    pub max_score: u32,
    /// Failure schedules run to the end, the clean run included.
    pub schedules_explored: u64,
    pub requirements: Vec<RequirementVerdictDoc>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = RequirementVerdict)]
pub struct RequirementVerdictDoc {
    pub id: String,
    pub text: String,
    pub passed: bool,
    /// For a missed requirement: the shortest failure schedule that breaks it.
    pub counterexample: Option<CounterexampleDoc>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = Counterexample)]
pub struct CounterexampleDoc {
    /// The failures in words, in order.
    pub failures: Vec<String>,
    pub faults: Vec<FaultAtDoc>,
    pub trace: Vec<TraceEntryDoc>,
    /// The trace step where the requirement was seen to be missed.
    pub went_wrong_at: u32,
    pub expected: String,
    pub actual: String,
    /// The tables at the moment it went wrong.
    pub tables: BTreeMap<String, TableViewDoc>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = FaultAt)]
pub struct FaultAtDoc {
    pub step: u32,
    pub kind: String,
}

#[derive(Serialize, ToSchema)]
#[schema(as = TraceEntry)]
pub struct TraceEntryDoc {
    pub step: u32,
    pub time: String,
    /// scheduler, job, consumer, sender, stream or broker.
    pub actor: String,
    pub node: Option<String>,
    pub edge: Option<[String; 2]>,
    pub action: String,
    pub sql: Option<String>,
    pub outcome: String,
    pub failure: Option<bool>,
    pub tables: Option<BTreeMap<String, TableViewDoc>>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = TableView)]
pub struct TableViewDoc {
    pub columns: Vec<String>,
    /// Rows of cells: strings, numbers or null.
    #[schema(value_type = Vec<Vec<Object>>)]
    pub rows: Vec<Vec<serde_json::Value>>,
}

/// One entry of a grading batch's answer.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[schema(as = GradeEntry)]
pub enum GradeEntryDoc {
    /// Without `format`: the recorded submission.
    Graded(api::GradeResult),
    /// With `format=gradescope`: Gradescope's `results.json`.
    Gradescope(GradescopeResultDoc),
    /// An item that could not be graded.
    Failed(GradeErrorDoc),
}

/// An item of a batch that could not be graded; the batch goes on.
#[derive(Serialize, ToSchema)]
#[schema(as = GradeError)]
pub struct GradeErrorDoc {
    pub index: usize,
    /// Paths start at the batch: `$[3].nodes[0].kind`.
    pub error: ErrorDetail,
}

/// Gradescope's `results.json`: one test per requirement.
#[derive(Serialize, ToSchema)]
#[schema(as = GradescopeResult)]
pub struct GradescopeResultDoc {
    pub score: u32,
    pub max_score: u32,
    /// A Markdown summary.
    pub output: String,
    #[schema(example = "md")]
    pub output_format: String,
    pub tests: Vec<GradescopeTestDoc>,
    /// `index`, `submission_id`, `student`, `scenario`, `scenario_hash`, `schedules_explored`.
    #[schema(value_type = Object)]
    pub extra_data: serde_json::Value,
}

#[derive(Serialize, ToSchema)]
#[schema(as = GradescopeTest)]
pub struct GradescopeTestDoc {
    /// `<requirement id>: <requirement text>`
    pub name: String,
    pub number: String,
    /// 1 when the requirement passed, else 0.
    pub score: u32,
    pub max_score: u32,
    /// `passed` or `failed`.
    pub status: String,
    /// Markdown: the failures, expected against actual, the trace and a hint.
    pub output: String,
    #[schema(example = "md")]
    pub output_format: String,
}

/// A design: the graph a student draws (SPEC §1). Unknown fields, kinds and option values,
/// dangling edges, cycles and wiring that makes no sense are refused with their JSON path.
#[derive(Serialize, ToSchema)]
#[schema(as = Design)]
pub struct DesignDoc {
    /// At most 64.
    pub nodes: Vec<NodeDoc>,
    /// At most 256.
    pub edges: Vec<EdgeDoc>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = Node)]
pub struct NodeDoc {
    #[schema(example = "job")]
    pub id: String,
    pub kind: NodeKindDoc,
    /// The kind's options; a missing option takes its default. For example a batch job's
    /// `date_filter`, `transaction`, `loaded_at`, or a table's `table`, `write`, `key`.
    #[schema(value_type = Object, example = json!({"date_filter": "logical_date", "transaction": "per_run"}))]
    pub options: serde_json::Value,
    /// For the canvas only; never changes a verdict.
    pub position: Option<PositionDoc>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = NodeKind)]
pub enum NodeKindDoc {
    SourceTable,
    Stream,
    Sender,
    BatchJob,
    StreamConsumer,
    Table,
}

#[derive(Serialize, ToSchema)]
#[schema(as = Position)]
pub struct PositionDoc {
    pub x: f64,
    pub y: f64,
}

#[derive(Serialize, ToSchema)]
#[schema(as = Edge)]
pub struct EdgeDoc {
    pub from: String,
    pub to: String,
}
