//! The verdict of a check: what graders, the canvas and the CLI read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// What this scenario puts to the test: the failures explored and the options of this
    /// design that no failure of the scenario tells apart. Never graded.
    #[serde(default)]
    pub coverage: Coverage,
    /// The design under the chapter's other failures that fit its shape: each requirement
    /// it would then miss. Never graded: `passed`, the scores and `requirements` are what
    /// the scenario's own failures give.
    #[serde(default)]
    pub advisories: Advisories,
}

impl Verdict {
    /// True when part of `coverage` or `advisories` was left out with a note, because a
    /// variant went past the check's limits: a check with larger limits may say more.
    pub fn cut_short(&self) -> bool {
        !self.coverage.notes.is_empty() || self.advisories.note.is_some()
    }
}

/// What a scenario puts to the test in a design (see `docs/verdict.md`).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// The failure kinds the scenario explores, in the verdict's order of kinds.
    pub failures: Vec<FailureCoverage>,
    /// The options of this design's nodes that the scenario does not put to the test, in the
    /// order of the design's nodes and of each kind's options.
    pub untested: Vec<UntestedOption>,
    /// Options that could not be compared (another value exceeded the check's limits).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One failure kind a scenario explores.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureCoverage {
    /// `job_crash`, `consumer_crash`, `message_lost`, `ack_lost` or `redelivery`.
    pub kind: String,
    /// How many of the explored schedules have at least one failure of this kind.
    pub schedules: u64,
}

/// An option of the design whose every other value gives the same result for every
/// requirement under the scenario's failures.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UntestedOption {
    /// The design node's id.
    pub node: String,
    pub option: String,
    /// The design's value (its default when the design leaves it out).
    pub value: String,
    /// The other values that were tried, each giving the same result.
    pub others: Vec<String>,
    /// Why, in the chapter's words: why the other values give the same result here, and,
    /// when the chapter calls one of the values wrong in general, what goes wrong with it.
    pub why: String,
    /// The scenarios that show what goes wrong with that value (none when it is this one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub learn_in: Vec<String>,
}

/// The design under failures the scenario does not explore. Never graded.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Advisories {
    /// The failure kinds the variant explores: every kind the model has for the design's
    /// shape. Empty when no variant was run.
    pub failures: Vec<String>,
    /// The most failures in one schedule of the variant.
    pub bound: u32,
    /// Each requirement the design passes here but misses under the variant's failures, in
    /// the scenario's order.
    pub missed: Vec<Advisory>,
    /// Why no advisory was given, when the variant could not be checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub note: Option<String>,
}

/// A requirement the design would miss under other failures.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Advisory {
    /// The requirement's id.
    pub id: String,
    pub text: String,
    /// The shipped scenarios that teach the failures of the counterexample, one per kind in
    /// the order the kinds first happen; this scenario itself is left out.
    pub learn_in: Vec<String>,
    /// The shortest schedule of the variant that breaks the requirement.
    pub counterexample: Counterexample,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequirementVerdict {
    pub id: String,
    pub text: String,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub counterexample: Option<Counterexample>,
}

/// The shortest schedule that breaks a requirement: fewest failures, and among those the one
/// whose first failure comes earliest.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// For a requirement that compares a whole table with the rows it should hold
    /// (`rerun_noop`, `same_as_clean_run`): the expected and the actual rows, paired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub diff: Option<TableDiff>,
}

/// A table as it should be and as it is, row by row (see `docs/verdict.md`). Rows are paired
/// first when equal (a decimal compares by value, NULL equals NULL, as the requirement
/// compares them), then by the table's key, or, for a table with no key, by the most equal
/// cells. Every row is marked, so the diff has a `same` mark on every row exactly when the
/// requirement holds.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDiff {
    pub table: String,
    pub columns: Vec<String>,
    /// The columns rows were paired by (the table's first key); empty when the table has no
    /// key and rows were paired by their most equal cells.
    pub key: Vec<String>,
    /// The rows the table should hold, sorted; each is `same`, `missing` or `differing`.
    pub expected: Vec<DiffRow>,
    /// The rows the table holds, sorted; each is `same`, `extra` or `differing`.
    pub actual: Vec<DiffRow>,
}

impl TableDiff {
    /// True when every row on both sides is `same`: the table is as it should be.
    pub fn is_same(&self) -> bool {
        self.expected
            .iter()
            .chain(&self.actual)
            .all(|r| r.status == RowStatus::Same)
    }
}

/// One row of a [`TableDiff`] side.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffRow {
    pub status: RowStatus,
    /// The row's cells in the order of `columns`, as in `TableView.rows`.
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::cells))]
    pub cells: Vec<serde_json::Value>,
    /// The index of the paired row on the other side (`same` and `differing` rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub pair: Option<u32>,
    /// The indices in `columns` of the cells that differ from the paired row's (`differing`
    /// rows only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differs: Vec<u32>,
}

/// How a row of a [`TableDiff`] compares with the other side.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    /// An equal row is on the other side.
    Same,
    /// Expected, and absent from the table.
    Missing,
    /// In the table, and not expected.
    Extra,
    /// Paired with a row on the other side (the same key, or the most equal cells) whose
    /// cells differ in `differs`.
    Differing,
}

impl RowStatus {
    /// The mark in a word, as the canvas and the Gradescope output show it beside the row, so
    /// that it never rests on colour alone.
    pub fn word(self) -> &'static str {
        match self {
            RowStatus::Same => "same",
            RowStatus::Missing => "missing",
            RowStatus::Extra => "extra",
            RowStatus::Differing => "differs",
        }
    }

    /// A symbol for the eye, shown before the word.
    pub fn symbol(self) -> &'static str {
        match self {
            RowStatus::Same => "=",
            RowStatus::Missing => "−",
            RowStatus::Extra => "+",
            RowStatus::Differing => "≠",
        }
    }
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultAt {
    pub step: u32,
    pub kind: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceEntry {
    pub step: u32,
    pub time: String,
    /// Who acted: scheduler, job, consumer, sender, stream, broker.
    pub actor: String,
    /// The design node that acted, for replay on the drawing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub node: Option<String>,
    /// The design edge the action travelled along (from, to), for replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub edge: Option<[String; 2]>,
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub sql: Option<String>,
    pub outcome: String,
    /// True when a failure was injected at this step.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failure: bool,
    /// The committed tables after this step, when this step changed what readers see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub tables: Option<BTreeMap<String, TableView>>,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableView {
    pub columns: Vec<String>,
    /// One array of cells per row, in the order of `columns`: a cell is a string, a number
    /// or null.
    #[cfg_attr(feature = "openapi", schema(schema_with = openapi::rows))]
    pub rows: Vec<Vec<serde_json::Value>>,
}

/// The schemas of what the Rust types do not say by themselves.
#[cfg(feature = "openapi")]
mod openapi {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, SchemaType, Type};
    use utoipa::openapi::{Array, RefOr};

    /// `TableView.rows`: an array of rows, each an array of cells that are strings, numbers
    /// or null (a cell is never an object, an array or a boolean).
    pub fn rows() -> Array {
        ArrayBuilder::new()
            .items(RefOr::T(Schema::Array(cells())))
            .build()
    }

    /// One row's cells (`DiffRow.cells`, each row of `TableView.rows`).
    pub fn cells() -> Array {
        let cell = ObjectBuilder::new().schema_type(SchemaType::from_iter([
            Type::String,
            Type::Number,
            Type::Null,
        ]));
        ArrayBuilder::new().items(cell).build()
    }
}
