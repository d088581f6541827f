//! Recorded attempts (`/api/submissions`) and the drafts a student keeps
//! (`/api/drafts/{scenario}`).

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A design to check and record for a student.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmissionRequest {
    #[cfg_attr(feature = "openapi", schema(example = "safe-retry"))]
    pub scenario: String,
    /// Required with a grader token; with a student session it may only name the session's
    /// own student.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub student: Option<String>,
    /// The design, in the format docs/design-format.md describes.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::design::Design))]
    pub design: Json,
    /// The class the attempt is for: the student must be a member of it, and it must be
    /// open. Left out, the attempt is self-study and belongs to no class.
    #[cfg_attr(feature = "openapi", schema(example = "c-3f2a9d1e6b7c4a58"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
}

/// A recorded attempt and its verdict.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    pub id: String,
    pub scenario: String,
    pub student: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub score: u32,
    pub max_score: u32,
    pub passed: bool,
    /// The class the attempt was made for; absent for self-study.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub class: Option<String>,
    /// True when the attempt was made for a class after the student's due date (it counts as
    /// late); absent otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub late: bool,
    #[cfg_attr(feature = "openapi", schema(value_type = crate::verdict::Verdict))]
    pub verdict: Json,
    /// The design that was checked (only when one attempt is asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = Option<crate::design::Design>, nullable = false)
    )]
    pub design: Option<Json>,
}

/// An attempt in a list, without its design and verdict.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubmissionSummary {
    pub id: String,
    pub scenario: String,
    pub scenario_hash: String,
    pub student: String,
    pub created_at: String,
    pub score: u32,
    pub max_score: u32,
    pub passed: bool,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DraftBody {
    /// Any JSON object: a draft may be unfinished or invalid.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub design: Json,
}

/// The design a student is working on, kept across reloads and browsers.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DraftAnswer {
    pub scenario: String,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub design: Json,
    pub updated_at: String,
}
