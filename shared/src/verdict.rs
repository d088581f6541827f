//! The verdict of a check: what graders, the canvas and the CLI read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub scenario: String,
    pub scenario_hash: String,
    pub passed: bool,
    pub score: u32,
    pub max_score: u32,
    /// How many failure schedules were run to the end (the clean run included).
    pub schedules_explored: u64,
    pub requirements: Vec<RequirementVerdict>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequirementVerdict {
    pub id: String,
    pub text: String,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counterexample: Option<Counterexample>,
}

/// The shortest schedule that breaks a requirement: fewest failures, and among those the one
/// whose first failure comes earliest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Counterexample {
    /// The failures in words, in the order they happened; empty when a run with no failure
    /// already misses the requirement.
    pub failures: Vec<String>,
    /// The same failures as data: the trace step where each happened and its kind.
    pub faults: Vec<FaultAt>,
    pub trace: Vec<TraceEntry>,
    /// The trace step at which the requirement was seen to be missed.
    pub went_wrong_at: u32,
    pub expected: String,
    pub actual: String,
    /// The warehouse tables at the moment it went wrong.
    pub tables: BTreeMap<String, TableView>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultAt {
    pub step: u32,
    pub kind: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceEntry {
    pub step: u32,
    pub time: String,
    /// Who acted: scheduler, job, consumer, sender, stream, broker.
    pub actor: String,
    /// The design node that acted, for replay on the drawing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The design edge the action travelled along (from, to), for replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge: Option<[String; 2]>,
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    pub outcome: String,
    /// True when a failure was injected at this step.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failure: bool,
    /// The committed tables after this step, when this step changed what readers see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<BTreeMap<String, TableView>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableView {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<serde_json::Value>>,
}
