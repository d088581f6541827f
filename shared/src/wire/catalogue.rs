//! The catalogue of scenarios (`GET /api/scenarios`).

use serde::{Deserialize, Serialize};

/// Where the calling student stands with a scenario.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgressState {
    NotTried,
    Tried,
    Passed,
}

impl ProgressState {
    pub fn as_str(self) -> &'static str {
        match self {
            ProgressState::NotTried => "not_tried",
            ProgressState::Tried => "tried",
            ProgressState::Passed => "passed",
        }
    }
}

/// One scenario of the catalogue.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    #[cfg_attr(feature = "openapi", schema(example = "safe-retry"))]
    pub id: String,
    pub title: String,
    /// Position in the course, from 1.
    pub order: u32,
    pub concepts: Vec<String>,
    /// The calling student's progress; `not_tried` without a session.
    pub progress: ProgressState,
}
