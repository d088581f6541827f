//! The scenario author's mistakes that only show when a scenario is compiled with a design.
//!
//! A module of its own so that the model and its requirement checks both report them
//! without importing each other.

/// A problem in a scenario file that only shows when it is compiled against a design.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ScenarioError {
    pub path: String,
    pub message: String,
}

pub(super) fn serr(path: impl Into<String>, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        path: path.into(),
        message: message.into(),
    }
}
