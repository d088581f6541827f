//! The node kinds, which kind may feed which, and each kind's options: their values as
//! enums, each value spelled once ([`Choice::NAMES`]), which the validator, the palette, the
//! JSON Schema, the OpenAPI document, the docs' tables and the canvas all read.

use std::fmt;

use serde::{Deserialize, Serialize};

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    SourceTable,
    Stream,
    Sender,
    BatchJob,
    StreamConsumer,
    Table,
}

impl NodeKind {
    pub const ALL: [NodeKind; 6] = [
        NodeKind::SourceTable,
        NodeKind::Stream,
        NodeKind::Sender,
        NodeKind::BatchJob,
        NodeKind::StreamConsumer,
        NodeKind::Table,
    ];

    pub fn name(self) -> &'static str {
        match self {
            NodeKind::SourceTable => "source_table",
            NodeKind::Stream => "stream",
            NodeKind::Sender => "sender",
            NodeKind::BatchJob => "batch_job",
            NodeKind::StreamConsumer => "stream_consumer",
            NodeKind::Table => "table",
        }
    }

    pub fn parse(s: &str) -> Option<NodeKind> {
        NodeKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// A phrase for messages to students.
    pub fn describe(self) -> &'static str {
        match self {
            NodeKind::SourceTable => "a source table",
            NodeKind::Stream => "a stream",
            NodeKind::Sender => "a sender",
            NodeKind::BatchJob => "a batch job",
            NodeKind::StreamConsumer => "a stream consumer",
            NodeKind::Table => "a warehouse table",
        }
    }

    /// Which kinds this kind may feed.
    pub fn may_feed(self, target: NodeKind) -> bool {
        matches!(
            (self, target),
            (NodeKind::SourceTable, NodeKind::BatchJob)
                | (NodeKind::Stream, NodeKind::StreamConsumer)
                | (NodeKind::Sender, NodeKind::StreamConsumer)
                | (NodeKind::BatchJob, NodeKind::Table)
                | (NodeKind::StreamConsumer, NodeKind::Table)
                | (NodeKind::Table, NodeKind::BatchJob)
        )
    }
}

impl fmt::Display for NodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub fn wiring_refusal(source: NodeKind, target: NodeKind) -> Option<String> {
    if source.may_feed(target) {
        return None;
    }
    Some(match (source, target) {
        (NodeKind::Table, _) => format!(
            "a warehouse table is read by a batch job; it cannot feed {}",
            target.describe()
        ),
        (_, NodeKind::SourceTable | NodeKind::Stream | NodeKind::Sender) => {
            format!(
                "{} is where data starts; nothing can feed it",
                target.describe()
            )
        }
        (NodeKind::SourceTable, _) => "a source table is read by a batch job".into(),
        (NodeKind::Stream | NodeKind::Sender, _) => {
            format!("{} feeds a stream consumer", source.describe())
        }
        (NodeKind::BatchJob | NodeKind::StreamConsumer, _) => {
            format!("{} writes into warehouse tables", source.describe())
        }
    })
}

/// An option whose value is one of a fixed list.
pub trait Choice: Copy + PartialEq + Sized + 'static {
    /// Every value, the default first.
    const ALL: &'static [Self];
    /// Each value as JSON writes it, in the order of [`Choice::ALL`]: the one spelling of
    /// every value.
    const NAMES: &'static [&'static str];

    fn name(self) -> &'static str {
        let i = Self::ALL
            .iter()
            .position(|v| *v == self)
            .expect("every value is in ALL");
        Self::NAMES[i]
    }

    fn parse(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| Self::ALL[i])
    }
}

/// What the sender does after silence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnTimeout {
    GiveUp,
    Resend,
}

impl Choice for OnTimeout {
    const ALL: &'static [Self] = &[OnTimeout::GiveUp, OnTimeout::Resend];
    const NAMES: &'static [&'static str] = &["give_up", "resend"];
}

/// The key the sender sends with each message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdempotencyKey {
    None,
    PerAttempt,
    PerAction,
}

impl Choice for IdempotencyKey {
    const ALL: &'static [Self] = &[
        IdempotencyKey::None,
        IdempotencyKey::PerAttempt,
        IdempotencyKey::PerAction,
    ];
    const NAMES: &'static [&'static str] = &["none", "per_attempt", "per_action"];
}

/// Which day a batch job loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateFilter {
    CurrentDateMinus1,
    LogicalDate,
}

impl Choice for DateFilter {
    const ALL: &'static [Self] = &[DateFilter::CurrentDateMinus1, DateFilter::LogicalDate];
    const NAMES: &'static [&'static str] = &["current_date_minus_1", "logical_date"];
}

/// Whether a batch job runs in one transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transaction {
    None,
    PerRun,
}

impl Choice for Transaction {
    const ALL: &'static [Self] = &[Transaction::None, Transaction::PerRun];
    const NAMES: &'static [&'static str] = &["none", "per_run"];
}

/// What a batch job writes as `loaded_at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadedAt {
    None,
    Now,
    LogicalDate,
}

impl Choice for LoadedAt {
    const ALL: &'static [Self] = &[LoadedAt::None, LoadedAt::Now, LoadedAt::LogicalDate];
    const NAMES: &'static [&'static str] = &["none", "now", "logical_date"];
}

/// When a consumer commits its offset (a consumer fed by a sender: when it acks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffsetCommit {
    BeforeWrite,
    AfterWrite,
    WithWrite,
}

impl Choice for OffsetCommit {
    const ALL: &'static [Self] = &[
        OffsetCommit::BeforeWrite,
        OffsetCommit::AfterWrite,
        OffsetCommit::WithWrite,
    ];
    const NAMES: &'static [&'static str] = &["before_write", "after_write", "with_write"];
}

/// Whether a consumer skips the keys it remembers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dedupe {
    None,
    InMemory,
}

impl Choice for Dedupe {
    const ALL: &'static [Self] = &[Dedupe::None, Dedupe::InMemory];
    const NAMES: &'static [&'static str] = &["none", "in_memory"];
}

/// How a table is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    Append,
    DeleteInsert,
    Merge,
    InsertIgnore,
    /// A merge that applies an incoming row only when its version is greater than the stored
    /// row's (a new key is inserted).
    MergeIfNewer,
}

impl Choice for WriteMode {
    const ALL: &'static [Self] = &[
        WriteMode::Append,
        WriteMode::DeleteInsert,
        WriteMode::Merge,
        WriteMode::InsertIgnore,
        WriteMode::MergeIfNewer,
    ];
    const NAMES: &'static [&'static str] = &[
        "append",
        "delete_insert",
        "merge",
        "insert_ignore",
        "merge_if_newer",
    ];
}

impl WriteMode {
    /// Whether the write finds existing rows by a key.
    pub fn by_key(self) -> bool {
        matches!(
            self,
            WriteMode::Merge | WriteMode::InsertIgnore | WriteMode::MergeIfNewer
        )
    }
}

#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    pub name: &'static str,
    pub values: OptionValues,
}

#[derive(Clone, Copy, Debug)]
pub enum OptionValues {
    /// One of these names ([`Choice::NAMES`]); the first is the default.
    Choice(&'static [&'static str]),
    /// A whole number from 1 to `max`.
    Count { default: u32, max: u32 },
    /// A source table of the scenario.
    SourceTable,
    /// A sink table of the scenario.
    SinkTable,
    /// A stream of the scenario.
    Stream,
    /// A column list the table offers as a key.
    Key,
    /// A column the table offers as a version (`merge_if_newer`).
    Version,
}

impl PartialEq for OptionValues {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

const fn choice(name: &'static str, values: &'static [&'static str]) -> OptionSpec {
    OptionSpec {
        name,
        values: OptionValues::Choice(values),
    }
}

const SOURCE_TABLE_OPTIONS: &[OptionSpec] = &[OptionSpec {
    name: "table",
    values: OptionValues::SourceTable,
}];
const STREAM_OPTIONS: &[OptionSpec] = &[OptionSpec {
    name: "topic",
    values: OptionValues::Stream,
}];
const SENDER_OPTIONS: &[OptionSpec] = &[
    choice("on_timeout", OnTimeout::NAMES),
    choice("idempotency_key", IdempotencyKey::NAMES),
];
const BATCH_JOB_OPTIONS: &[OptionSpec] = &[
    choice("date_filter", DateFilter::NAMES),
    choice("transaction", Transaction::NAMES),
    choice("loaded_at", LoadedAt::NAMES),
];
const CONSUMER_OPTIONS: &[OptionSpec] = &[
    choice("offset_commit", OffsetCommit::NAMES),
    choice("dedupe", Dedupe::NAMES),
    OptionSpec {
        name: "dedupe_window",
        values: OptionValues::Count {
            default: 2,
            max: 1000,
        },
    },
];
const TABLE_OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "table",
        values: OptionValues::SinkTable,
    },
    choice("write", WriteMode::NAMES),
    OptionSpec {
        name: "key",
        values: OptionValues::Key,
    },
    OptionSpec {
        name: "version",
        values: OptionValues::Version,
    },
];

impl NodeKind {
    /// The options of this kind; for choice options, their values with the default first.
    pub fn options(self) -> &'static [OptionSpec] {
        match self {
            NodeKind::SourceTable => SOURCE_TABLE_OPTIONS,
            NodeKind::Stream => STREAM_OPTIONS,
            NodeKind::Sender => SENDER_OPTIONS,
            NodeKind::BatchJob => BATCH_JOB_OPTIONS,
            NodeKind::StreamConsumer => CONSUMER_OPTIONS,
            NodeKind::Table => TABLE_OPTIONS,
        }
    }
}

/// A node's `options` in the OpenAPI document: every option of every kind, with the values a
/// choice takes spelled as [`Choice::NAMES`] spells them (which options a kind has is in
/// `docs/design-format.md`; an option the node's kind lacks is refused with `unknown_option`).
#[cfg(feature = "openapi")]
pub(crate) fn openapi_options() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    let mut object = ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(
        "The node's options by name; each kind has its own, and a missing one takes its default.",
    ));
    let mut seen = Vec::new();
    for kind in NodeKind::ALL {
        for spec in kind.options() {
            if seen.contains(&spec.name) {
                continue;
            }
            seen.push(spec.name);
            let schema = match spec.values {
                OptionValues::Choice(values) => ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(values.iter().copied()))
                    .into(),
                OptionValues::Count { max, .. } => ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(1))
                    .maximum(Some(max))
                    .into(),
                OptionValues::Key => utoipa::openapi::schema::OneOfBuilder::new()
                    .item(
                        ArrayBuilder::new()
                            .items(ObjectBuilder::new().schema_type(Type::String))
                            .build(),
                    )
                    .item(ObjectBuilder::new().schema_type(Type::String))
                    .into(),
                _ => ObjectBuilder::new().schema_type(Type::String).into(),
            };
            let schema: utoipa::openapi::RefOr<utoipa::openapi::Schema> = schema;
            // `null` is the same as leaving the option out.
            let or_null = utoipa::openapi::schema::OneOfBuilder::new()
                .item(schema)
                .item(ObjectBuilder::new().schema_type(Type::Null));
            object = object.property(spec.name, or_null);
        }
    }
    object.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T: Choice + std::fmt::Debug>() {
        assert_eq!(T::ALL.len(), T::NAMES.len(), "every value has its name");
        for (value, name) in T::ALL.iter().zip(T::NAMES) {
            assert_eq!(value.name(), *name);
            assert_eq!(T::parse(name), Some(*value));
        }
        assert_eq!(T::parse("no such value"), None);
    }

    #[test]
    fn every_option_value_is_spelled_once_and_read_back() {
        round_trips::<OnTimeout>();
        round_trips::<IdempotencyKey>();
        round_trips::<DateFilter>();
        round_trips::<Transaction>();
        round_trips::<LoadedAt>();
        round_trips::<OffsetCommit>();
        round_trips::<Dedupe>();
        round_trips::<WriteMode>();
    }
}
