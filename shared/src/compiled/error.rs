//! The scenario author's mistakes that compiling a scenario finds.
//!
//! A module of its own so that every part of the compiled scenario reports them the same way
//! without importing each other.

/// A problem in a scenario file, at its JSON path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ScenarioError {
    pub path: String,
    pub message: String,
}

pub(crate) fn serr(path: impl Into<String>, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        path: path.into(),
        message: message.into(),
    }
}
