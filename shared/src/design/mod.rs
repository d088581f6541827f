//! Designs: the graph a student draws, its parsing, and its validation against a scenario.
//!
//! `Design` is the raw JSON shape (it round-trips exactly). `ValidDesign` exists only after
//! `validate` has accepted a design for one scenario: every option typed, defaults applied,
//! and the pipeline the simulator runs extracted from the graph.

mod kind;

mod drawn;
mod error;

mod parse;

mod options;

mod graph;

mod pipeline;

mod validate;

pub use drawn::{Design, Edge, Node, Position, MAX_EDGES, MAX_NODES};
pub use error::{DesignError, DesignErrorCode};
pub use kind::{
    wiring_refusal, Choice, DateFilter, Dedupe, IdempotencyKey, LoadedAt, NodeKind, OffsetCommit,
    OnTimeout, OptionSpec, OptionValues, Transaction, WriteMode,
};
pub use parse::{design_from_json, parse_design};

pub use options::{ConsumerOptions, JobOptions, SenderOptions, SinkOptions};
pub use pipeline::{ConsumerInput, ConsumerStage, JobStage, Pipeline, Stage};
pub use validate::{validate, validate_json, ValidDesign};
