//! The problems a design can have, each at its JSON path with a code and a sentence.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One problem with a design: where (a JSON path such as `nodes[2].options.write`), a
/// machine-readable code, and a sentence a student understands.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DesignError {
    pub path: String,
    pub code: DesignErrorCode,
    pub message: String,
}

/// What kind of problem a [`DesignError`] is, for a program to act on (the server answers
/// `graph_too_large` for [`DesignErrorCode::TooManyNodes`], for instance). It serialises as
/// the snake_case name that [`DesignErrorCode::as_str`] returns.
///
/// The variants are declared in the alphabetical order of those names, so that sorting a list
/// of errors orders it exactly as sorting by the names would: the order a student reads the
/// problems in does not depend on how the code is stored.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DesignErrorCode {
    BadKey,
    BadOptionValue,
    BadVersion,
    BadWiring,
    BadWrite,
    Cycle,
    DanglingEdge,
    DuplicateEdge,
    DuplicateId,
    DuplicateSink,
    Empty,
    ExtraNode,
    Incomplete,
    /// No more precise reason: a caller's answer for a refused design whose list of problems
    /// is empty. The validator itself never reports it.
    Invalid,
    MalformedJson,
    MissingField,
    MissingOption,
    NoColumn,
    NoKey,
    NoPartition,
    NoStep,
    NoVersion,
    NoWriter,
    NotAnObject,
    NotConnected,
    NotInPalette,
    TooLong,
    TooManyEdges,
    TooManyInputs,
    TooManyNodes,
    TooManyOutputs,
    TwoWriters,
    UnknownField,
    UnknownKind,
    UnknownName,
    UnknownOption,
    WrongSource,
    WrongType,
}

impl DesignErrorCode {
    /// Every code, in the order of their names.
    pub const ALL: [DesignErrorCode; 38] = [
        DesignErrorCode::BadKey,
        DesignErrorCode::BadOptionValue,
        DesignErrorCode::BadVersion,
        DesignErrorCode::BadWiring,
        DesignErrorCode::BadWrite,
        DesignErrorCode::Cycle,
        DesignErrorCode::DanglingEdge,
        DesignErrorCode::DuplicateEdge,
        DesignErrorCode::DuplicateId,
        DesignErrorCode::DuplicateSink,
        DesignErrorCode::Empty,
        DesignErrorCode::ExtraNode,
        DesignErrorCode::Incomplete,
        DesignErrorCode::Invalid,
        DesignErrorCode::MalformedJson,
        DesignErrorCode::MissingField,
        DesignErrorCode::MissingOption,
        DesignErrorCode::NoColumn,
        DesignErrorCode::NoKey,
        DesignErrorCode::NoPartition,
        DesignErrorCode::NoStep,
        DesignErrorCode::NoVersion,
        DesignErrorCode::NoWriter,
        DesignErrorCode::NotAnObject,
        DesignErrorCode::NotConnected,
        DesignErrorCode::NotInPalette,
        DesignErrorCode::TooLong,
        DesignErrorCode::TooManyEdges,
        DesignErrorCode::TooManyInputs,
        DesignErrorCode::TooManyNodes,
        DesignErrorCode::TooManyOutputs,
        DesignErrorCode::TwoWriters,
        DesignErrorCode::UnknownField,
        DesignErrorCode::UnknownKind,
        DesignErrorCode::UnknownName,
        DesignErrorCode::UnknownOption,
        DesignErrorCode::WrongSource,
        DesignErrorCode::WrongType,
    ];

    /// The code's name, as it appears in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            DesignErrorCode::BadKey => "bad_key",
            DesignErrorCode::BadOptionValue => "bad_option_value",
            DesignErrorCode::BadVersion => "bad_version",
            DesignErrorCode::BadWiring => "bad_wiring",
            DesignErrorCode::BadWrite => "bad_write",
            DesignErrorCode::Cycle => "cycle",
            DesignErrorCode::DanglingEdge => "dangling_edge",
            DesignErrorCode::DuplicateEdge => "duplicate_edge",
            DesignErrorCode::DuplicateId => "duplicate_id",
            DesignErrorCode::DuplicateSink => "duplicate_sink",
            DesignErrorCode::Empty => "empty",
            DesignErrorCode::ExtraNode => "extra_node",
            DesignErrorCode::Incomplete => "incomplete",
            DesignErrorCode::Invalid => "invalid",
            DesignErrorCode::MalformedJson => "malformed_json",
            DesignErrorCode::MissingField => "missing_field",
            DesignErrorCode::MissingOption => "missing_option",
            DesignErrorCode::NoColumn => "no_column",
            DesignErrorCode::NoKey => "no_key",
            DesignErrorCode::NoPartition => "no_partition",
            DesignErrorCode::NoStep => "no_step",
            DesignErrorCode::NoVersion => "no_version",
            DesignErrorCode::NoWriter => "no_writer",
            DesignErrorCode::NotAnObject => "not_an_object",
            DesignErrorCode::NotConnected => "not_connected",
            DesignErrorCode::NotInPalette => "not_in_palette",
            DesignErrorCode::TooLong => "too_long",
            DesignErrorCode::TooManyEdges => "too_many_edges",
            DesignErrorCode::TooManyInputs => "too_many_inputs",
            DesignErrorCode::TooManyNodes => "too_many_nodes",
            DesignErrorCode::TooManyOutputs => "too_many_outputs",
            DesignErrorCode::TwoWriters => "two_writers",
            DesignErrorCode::UnknownField => "unknown_field",
            DesignErrorCode::UnknownKind => "unknown_kind",
            DesignErrorCode::UnknownName => "unknown_name",
            DesignErrorCode::UnknownOption => "unknown_option",
            DesignErrorCode::WrongSource => "wrong_source",
            DesignErrorCode::WrongType => "wrong_type",
        }
    }
}

impl fmt::Display for DesignErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for DesignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

pub(super) struct Errors(pub(super) Vec<DesignError>);

impl Errors {
    pub(super) fn push(
        &mut self,
        path: impl Into<String>,
        code: DesignErrorCode,
        message: impl Into<String>,
    ) {
        self.0.push(DesignError {
            path: path.into(),
            code,
            message: message.into(),
        });
    }
}
