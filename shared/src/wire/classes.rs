//! Classes and the instructor's dashboard: a class, joining it, the matrix of students and
//! scenarios, the requirements missed most, and a student's attempts.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// What the student's app shows before a check.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Preview {
    /// The live preview of every requirement, met or not (the default, and self-study's).
    Everything,
    /// Only the requirements the design still lacks.
    Lacks,
    /// No live preview: only Check tells.
    Nothing,
}

impl Preview {
    /// Every setting, in the order an instructor is offered them.
    pub const ALL: [Preview; 3] = [Preview::Everything, Preview::Lacks, Preview::Nothing];

    /// The setting as it is written in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Preview::Everything => "everything",
            Preview::Lacks => "lacks",
            Preview::Nothing => "nothing",
        }
    }

    /// The setting written `name`, if there is one.
    pub fn named(name: &str) -> Option<Preview> {
        Preview::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

/// A class as a grader sees it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassBody {
    #[cfg_attr(feature = "openapi", schema(example = "c-3f2a9d1e6b7c4a58"))]
    pub id: String,
    pub name: String,
    /// 8 characters from `23456789ABCDEFGHJKMNPQRSTUVWXYZ`.
    #[cfg_attr(feature = "openapi", schema(example = "K7QM3XHP"))]
    pub join_code: String,
    /// The page where a student joins: `/join/{code}` on this server.
    #[cfg_attr(
        feature = "openapi",
        schema(example = "https://pipelines.example.edu/join/K7QM3XHP")
    )]
    pub join_url: String,
    /// A closed class takes no new members and no attempts.
    pub open: bool,
    pub preview: Preview,
    pub members: u32,
    /// The name of the grader token that made it.
    pub created_by: String,
    pub created_at: String,
}

/// A class as one of its students sees it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudentClass {
    pub id: String,
    pub name: String,
    pub open: bool,
    pub preview: Preview,
    /// The name the student gave when joining.
    pub display_name: String,
    pub joined_at: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewClass {
    /// 1 to 100 characters, no control characters; spaces around it are dropped.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 100))]
    pub name: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassUpdate {
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 100))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinRequest {
    /// The class's join code; case, spaces and dashes do not matter.
    #[cfg_attr(feature = "openapi", schema(example = "K7QM3XHP"))]
    pub code: String,
    /// The name the instructor sees: 1 to 60 characters once trimmed, no control characters.
    /// Asked once per class: a member joining again keeps the first name, and may leave it out.
    #[cfg_attr(feature = "openapi", schema(example = "Ada L."))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// Where a student stands with a scenario.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellState {
    /// No attempt for the class.
    NotTried,
    /// An attempt (a Check made for the class), but no passing result. A draft alone is not
    /// a try.
    Tried,
    /// At least one attempt's result passed.
    Passed,
}

impl CellState {
    pub fn as_str(self) -> &'static str {
        match self {
            CellState::NotTried => "not_tried",
            CellState::Tried => "tried",
            CellState::Passed => "passed",
        }
    }
}

/// One student at one scenario.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub scenario: String,
    pub state: CellState,
    /// Attempts made for the class.
    pub attempts: u32,
    /// RFC 3339, UTC; absent without an attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub last_attempt_at: Option<String>,
    /// How many attempts came before the first passing one; absent when none passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub attempts_before_first_pass: Option<u32>,
    /// Attempts whose result is from an older version of the scenario (not regraded yet).
    pub outdated_attempts: u32,
}

/// A student's row of the matrix.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudentRow {
    pub student: String,
    pub display_name: String,
    pub joined_at: String,
    /// How many scenarios the student passed.
    pub passed: u32,
    /// One cell per scenario, in the order of `scenarios`.
    pub cells: Vec<Cell>,
}

/// A scenario's column: the class's progress at it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioProgress {
    pub scenario: String,
    pub title: String,
    /// The current version of the scenario.
    pub scenario_hash: String,
    pub not_tried: u32,
    /// Tried and not passed.
    pub tried: u32,
    pub passed: u32,
    pub outdated_attempts: u32,
}

/// Students × scenarios.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    pub class: String,
    pub members: u32,
    /// In course order.
    pub scenarios: Vec<ScenarioProgress>,
    /// By display name.
    pub students: Vec<StudentRow>,
}

/// A member who missed a requirement.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MissedBy {
    pub student: String,
    pub display_name: String,
    /// True when the student's latest attempt still misses it.
    pub still_missing: bool,
}

/// A requirement of a scenario and the students who missed it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MissedRequirement {
    pub requirement: String,
    pub text: String,
    /// Students with at least one attempt that missed it.
    pub students: u32,
    /// `students` over the students who made an attempt at the scenario, from 0 to 1.
    pub share: f64,
    /// Students whose latest attempt still misses it.
    pub still_missing: u32,
    pub missed_by: Vec<MissedBy>,
}

/// A scenario's requirements, the most missed first.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MissedScenario {
    pub scenario: String,
    pub title: String,
    /// Students who made at least one attempt at it for the class.
    pub students_tried: u32,
    /// Every requirement some student missed, by `students` (most first), then in the
    /// scenario's order.
    pub requirements: Vec<MissedRequirement>,
}

/// A regraded verdict of an attempt.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegradeRow {
    pub scenario_hash: String,
    /// True when it is against the scenario's current version.
    pub current: bool,
    pub score: u32,
    pub max_score: u32,
    pub passed: bool,
    pub missed: Vec<String>,
    /// Why the design got no verdict against that version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub error: Option<String>,
    pub created_at: String,
}

/// One attempt of a student, with its own verdict and any regraded ones.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttemptRow {
    pub id: String,
    pub scenario: String,
    pub scenario_hash: String,
    pub created_at: String,
    pub score: u32,
    pub max_score: u32,
    pub passed: bool,
    pub missed: Vec<String>,
    /// True when the attempt's result is from an older version of its scenario: its own
    /// verdict is, and no regrade against the current version exists yet.
    pub outdated: bool,
    /// The attempt's own verdict, as it was given.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::verdict::Verdict))]
    pub verdict: Json,
    pub regrades: Vec<RegradeRow>,
}

/// A student's attempts for a class.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudentAttempts {
    pub class: String,
    pub student: String,
    pub display_name: String,
    pub joined_at: String,
    /// Oldest first.
    pub attempts: Vec<AttemptRow>,
}

/// One attempt of a class with its design, for opening it read-only on the canvas.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassAttemptBody {
    #[serde(flatten)]
    pub row: AttemptRow,
    pub student: String,
    #[cfg_attr(feature = "openapi", schema(value_type = crate::design::Design))]
    pub design: Json,
}
