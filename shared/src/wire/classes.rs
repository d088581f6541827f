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
    /// The staff account that owns the class (the first owner by name), if any: a class made
    /// by an administrator's token has none until one is added.
    #[serde(default)]
    pub owner: Option<String>,
    /// The caller's role in the class; absent for a server administrator, who may do
    /// everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<StaffRole>,
}

/// What a staff account may do in one class.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StaffRole {
    /// Read only: the class, its dashboard, attempts and exports.
    Viewer,
    /// A viewer's reading, and regrading.
    Ta,
    /// Everything: the class's settings, closing and reopening it, and its staff.
    Owner,
}

impl StaffRole {
    /// Every role, from the least to the most.
    pub const ALL: [StaffRole; 3] = [StaffRole::Viewer, StaffRole::Ta, StaffRole::Owner];

    /// The role as it is written in JSON and stored.
    pub fn as_str(self) -> &'static str {
        match self {
            StaffRole::Viewer => "viewer",
            StaffRole::Ta => "ta",
            StaffRole::Owner => "owner",
        }
    }

    /// The role a stored or typed name means.
    pub fn parse(name: &str) -> Option<StaffRole> {
        StaffRole::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// One staff account's role in a class.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StaffMember {
    /// The account's name.
    pub account: String,
    pub role: StaffRole,
    /// Who gave the role: an account's name, or `admin:` and an administrator token's name.
    pub granted_by: String,
    pub granted_at: String,
}

/// The role to give an account in a class.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaffGrant {
    pub role: StaffRole,
}

/// One staff change to a class, as the audit log keeps it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub at: String,
    /// The account that made the change, or `admin:` and an administrator token's name.
    pub actor: String,
    /// What was done: `class_made`, `class_changed`, `staff_granted`, `staff_removed`,
    /// `regraded`, `score_overridden`, `override_removed`, `deadlines_changed`,
    /// `extension_granted`, `extension_removed`.
    pub action: String,
    /// The change in words.
    pub detail: String,
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
    /// The student's due date per scenario (their extensions counted), RFC 3339 in UTC; a
    /// scenario without one is left out.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub due: std::collections::BTreeMap<String, String>,
    /// What happens to an attempt after its due date.
    #[serde(default)]
    pub late_policy: LatePolicy,
}

/// What happens to an attempt made for a class after its due date.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LatePolicy {
    /// It is recorded and marked late; grade passback sends the best on-time score.
    #[default]
    Accept,
    /// It is refused (409 `past_due`) and nothing is recorded.
    Refuse,
}

impl LatePolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            LatePolicy::Accept => "accept",
            LatePolicy::Refuse => "refuse",
        }
    }

    pub fn parse(name: &str) -> Option<LatePolicy> {
        [LatePolicy::Accept, LatePolicy::Refuse]
            .into_iter()
            .find(|p| p.as_str() == name)
    }
}

/// A class's due dates, its late policy and its students' extensions.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Deadlines {
    /// The due date of every scenario without one of its own; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at: Option<String>,
    pub late_policy: LatePolicy,
    /// The scenarios' own due dates.
    pub scenarios: Vec<ScenarioDue>,
    pub extensions: Vec<Extension>,
}

/// A scenario's due date in a class.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioDue {
    pub scenario: String,
    pub due_at: String,
    /// `staff` when staff set it, `platform` when it came from the learning platform's line
    /// item (`endDateTime`); staff's wins.
    pub source: String,
}

/// A later due date for one student, for one scenario or (without `scenario`) all of them.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Extension {
    pub student: String,
    pub display_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    pub due_at: String,
    pub set_by: String,
    pub set_at: String,
}

/// A class's due dates and late policy, as staff set them: the scenarios named replace every
/// due date staff set before (a scenario left out has none of its own, but keeps one from the
/// learning platform).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadlinesUpdate {
    /// RFC 3339 (`2026-12-10T17:00:00Z`); absent or null: no due date for the whole class.
    #[serde(default)]
    pub due_at: Option<String>,
    #[serde(default)]
    pub late_policy: LatePolicy,
    /// Scenario id → RFC 3339 due date.
    #[serde(default)]
    pub scenarios: std::collections::BTreeMap<String, String>,
}

/// An extension to grant a student.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtensionRequest {
    /// The scenario it is for; absent: every scenario of the class.
    #[serde(default)]
    pub scenario: Option<String>,
    /// RFC 3339: the student's new due date.
    pub due_at: String,
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
    /// Attempts made after the student's due date for the scenario; absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late_attempts: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
    /// True when it was made after the student's due date for its scenario; absent when not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub late: bool,
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
    /// The name the student goes by in the class; absent when they are no longer a member.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    #[cfg_attr(feature = "openapi", schema(value_type = crate::design::Design))]
    pub design: Json,
}

/// A class's gradebook: one row per member, one grade per scenario.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gradebook {
    pub class: String,
    /// The scenarios, in course order, with the most points each is worth.
    pub scenarios: Vec<GradebookScenario>,
    /// The members, by display name.
    pub students: Vec<GradebookRow>,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradebookScenario {
    pub scenario: String,
    pub title: String,
    pub max_score: u32,
}

/// A member's grades.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradebookRow {
    pub student: String,
    pub display_name: String,
    /// The learning platform's identity of a member who came by an LTI launch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lti: Option<LtiIdentity>,
    /// One per scenario, in the order of `scenarios`.
    pub grades: Vec<Grade>,
    /// The sum of the scores that count (`score`), missing ones as 0.
    pub total: u32,
    pub max_total: u32,
}

/// Who a member is on a learning platform.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LtiIdentity {
    /// The platform's issuer (`iss`).
    pub issuer: String,
    /// The platform's id of the user (`sub`).
    pub subject: String,
}

/// A member's grade at one scenario.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Grade {
    pub scenario: String,
    /// The best score of the member's on-time attempts for the class, each counted by its
    /// current result (a regraded verdict where there is one); absent when they made none.
    pub computed: Option<u32>,
    /// The best score of the attempts made after the due date, when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<u32>,
    /// A score staff set by hand, kept beside the computed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overridden: Option<ScoreOverride>,
    /// The score that counts: the override's when there is one, else the computed one.
    pub score: Option<u32>,
    pub attempts: u32,
}

/// A score set by staff by hand, with the reason.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoreOverride {
    pub score: u32,
    pub reason: String,
    /// The staff account (or `admin:` and a token's name) that set it.
    pub by: String,
    pub at: String,
}

/// A score to set by hand for a member at a scenario.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverrideRequest {
    /// 0 to the scenario's most points.
    pub score: u32,
    /// Why: 1 to 500 characters; the audit log and the gradebook keep it.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 500))]
    pub reason: String,
}

/// How results changed for one requirement, over the regraded attempts.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequirementChange {
    pub requirement: String,
    /// Attempts whose result for the requirement differs from their own verdict's.
    pub changed: u32,
    /// Of those, missed before and met now.
    pub now_met: u32,
    /// Of those, met before and missed now.
    pub now_missed: u32,
}

/// What a regrade did.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegradeReport {
    pub scenario: String,
    /// The class whose attempts were regraded; absent: every attempt at the scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub class: Option<String>,
    /// The current version of the scenario, which the attempts were checked against.
    pub scenario_hash: String,
    /// Attempts made against another version of the scenario.
    pub outdated: u32,
    /// Of those, regraded by this run.
    pub regraded_now: u32,
    /// Of those, regraded against the current version in all (this run and earlier ones).
    pub regraded: u32,
    /// Regraded attempts whose overall `passed` changed.
    pub passed_changed: u32,
    /// Regraded attempts whose design is not valid for the current version (no verdict).
    pub invalid: u32,
    /// One entry per requirement of the current version and per requirement the old
    /// verdicts had, in the scenario's order (requirements no longer there last).
    pub requirements: Vec<RequirementChange>,
}

/// What to regrade: a scenario's attempts, of one class when named.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegradeRequest {
    #[cfg_attr(feature = "openapi", schema(example = "safe-retry"))]
    pub scenario: String,
    /// Only this class's attempts; left out, every attempt at the scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
}

/// A member's new name in a class.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemberUpdate {
    /// 1 to 60 characters, no control characters, and not the name of another member.
    pub display_name: String,
}
