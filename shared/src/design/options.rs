//! A node's options typed against a scenario: its palette, its tables and streams, the
//! defaults of what is left out.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use super::drawn::Node;
use super::error::{DesignErrorCode, Errors};
use super::kind::{
    Choice, DateFilter, Dedupe, IdempotencyKey, LoadedAt, NodeKind, OffsetCommit, OnTimeout,
    OptionSpec, OptionValues, Transaction, WriteMode,
};
use crate::scenario::{Palette, Scenario, TableRole};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobOptions {
    pub date_filter: DateFilter,
    pub transaction: Transaction,
    pub loaded_at: LoadedAt,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerOptions {
    pub offset_commit: OffsetCommit,
    pub dedupe: Dedupe,
    pub dedupe_window: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SenderOptions {
    pub on_timeout: OnTimeout,
    pub idempotency_key: IdempotencyKey,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkOptions {
    /// The design node that stands for this table.
    pub node: String,
    pub table: String,
    pub write: WriteMode,
    /// Empty when the table offers no key.
    pub key: Vec<String>,
    /// The version column of `merge_if_newer` (the table's first when the design names none).
    pub version: Option<String>,
}

// The palette is scenario data, but which of its fields belongs to a node kind is a question
// about designs, so the lookup lives here and the scenario format stays free of design types.
impl Palette {
    /// The allowed option values of one kind, or `None` when the kind is not offered.
    pub fn kind(&self, kind: NodeKind) -> Option<&BTreeMap<String, Vec<String>>> {
        use NodeKind as K;
        match kind {
            K::SourceTable => self.source_table.as_ref(),
            K::Stream => self.stream.as_ref(),
            K::Sender => self.sender.as_ref(),
            K::BatchJob => self.batch_job.as_ref(),
            K::StreamConsumer => self.stream_consumer.as_ref(),
            K::Table => self.table.as_ref(),
        }
    }

    /// The default of a choice option in this palette: the format's default, or the first
    /// value the palette offers when it does not offer the default.
    pub fn default_of(
        &self,
        kind: NodeKind,
        option: &str,
        values: &'static [&'static str],
    ) -> &'static str {
        let allowed = self.kind(kind).and_then(|p| p.get(option));
        match allowed {
            Some(allowed) if !allowed.iter().any(|a| a == values[0]) => values
                .iter()
                .copied()
                .find(|v| allowed.iter().any(|a| a == v))
                .unwrap_or(values[0]),
            _ => values[0],
        }
    }
}

/// A node's options, typed, with their defaults.
#[derive(Clone, Debug)]
pub(super) enum TypedOptions {
    SourceTable(String),
    Stream(String),
    Sender(SenderOptions),
    BatchJob(JobOptions),
    StreamConsumer(ConsumerOptions),
    Table {
        table: Option<String>,
        write: WriteMode,
        key: Option<Vec<String>>,
        version: Option<String>,
    },
}

/// The option values one node was given, read one spec at a time.
#[derive(Default)]
struct Given {
    choice: BTreeMap<&'static str, &'static str>,
    count: BTreeMap<&'static str, u32>,
    text: BTreeMap<&'static str, String>,
    key: Option<Vec<String>>,
}

impl Given {
    fn pick<T: Choice>(&self, name: &str) -> T {
        self.choice
            .get(name)
            .and_then(|v| T::parse(v))
            .unwrap_or(T::ALL[0])
    }
}

/// Types a node's options: unknown options, values of the wrong type or not in the palette
/// are reported; a missing option takes its default.
pub(super) fn typed_options(
    scenario: &Scenario,
    path: &str,
    node: &Node,
    errors: &mut Errors,
) -> Option<TypedOptions> {
    let specs = node.kind.options();
    let palette = scenario.palette.kind(node.kind);
    if palette.is_none() {
        errors.push(
            format!("{path}.kind"),
            DesignErrorCode::NotInPalette,
            format!(
                "this scenario does not offer {} ({})",
                node.kind.describe(),
                node.kind
            ),
        );
    }
    unknown_options(path, node, errors);
    let before = errors.0.len();
    let mut given = Given::default();
    for spec in specs {
        let read = OptionRead {
            scenario,
            kind: node.kind,
            node_path: path,
            name: spec.name,
            given: node.options.get(spec.name).filter(|v| !v.is_null()),
            allowed: palette.and_then(|p| p.get(spec.name)),
        };
        read.into(spec, &mut given, errors);
    }
    if errors.0.len() > before {
        return None;
    }
    Some(build(node.kind, given))
}

fn unknown_options(path: &str, node: &Node, errors: &mut Errors) {
    let specs = node.kind.options();
    for key in node.options.keys() {
        if !specs.iter().any(|s| s.name == key) {
            let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
            errors.push(
                format!("{path}.options.{key}"),
                DesignErrorCode::UnknownOption,
                format!(
                    "{} has no option \"{key}\"; its options are {}",
                    node.kind,
                    names.join(", ")
                ),
            );
        }
    }
}

fn build(kind: NodeKind, mut given: Given) -> TypedOptions {
    match kind {
        NodeKind::SourceTable => {
            TypedOptions::SourceTable(given.text.remove("table").unwrap_or_default())
        }
        NodeKind::Stream => TypedOptions::Stream(given.text.remove("topic").unwrap_or_default()),
        NodeKind::Sender => TypedOptions::Sender(SenderOptions {
            on_timeout: given.pick("on_timeout"),
            idempotency_key: given.pick("idempotency_key"),
        }),
        NodeKind::BatchJob => TypedOptions::BatchJob(JobOptions {
            date_filter: given.pick("date_filter"),
            transaction: given.pick("transaction"),
            loaded_at: given.pick("loaded_at"),
        }),
        NodeKind::StreamConsumer => TypedOptions::StreamConsumer(ConsumerOptions {
            offset_commit: given.pick("offset_commit"),
            dedupe: given.pick("dedupe"),
            dedupe_window: given.count.get("dedupe_window").copied().unwrap_or(2),
        }),
        NodeKind::Table => TypedOptions::Table {
            table: given.text.remove("table"),
            write: given.pick("write"),
            key: given.key,
            version: given.text.remove("version"),
        },
    }
}

/// One option of one node, as given, with what the scenario allows for it.
struct OptionRead<'a> {
    scenario: &'a Scenario,
    kind: NodeKind,
    /// The node's path; an option's own path is written only for an error.
    node_path: &'a str,
    name: &'static str,
    given: Option<&'a Json>,
    allowed: Option<&'a Vec<String>>,
}

impl OptionRead<'_> {
    /// Where the option is in the design, as an error names it.
    fn path(&self) -> String {
        format!("{}.options.{}", self.node_path, self.name)
    }

    fn into(self, spec: &OptionSpec, given: &mut Given, errors: &mut Errors) {
        match spec.values {
            OptionValues::Choice(values) => {
                if let Some(v) = self.choice(spec.name, values, errors) {
                    given.choice.insert(spec.name, v);
                }
            }
            OptionValues::Count { default, max } => {
                if let Some(v) = self.count(spec.name, default, max, errors) {
                    given.count.insert(spec.name, v);
                }
            }
            OptionValues::SourceTable | OptionValues::SinkTable | OptionValues::Stream => {
                if let Some(v) = self.name(spec, errors) {
                    given.text.insert(spec.name, v);
                }
            }
            OptionValues::Key => given.key = self.key(errors),
            OptionValues::Version => match self.given {
                None => {}
                Some(Json::String(s)) => {
                    given.text.insert(spec.name, s.clone());
                }
                Some(_) => errors.push(
                    self.path(),
                    DesignErrorCode::WrongType,
                    "version must be the name of a column, such as \"version\"",
                ),
            },
        }
    }

    fn not_offered(&self, what: &str, v: &str, errors: &mut Errors) {
        if let Some(allowed) = self.allowed {
            if !allowed.iter().any(|a| a == v) {
                errors.push(
                    self.path(),
                    DesignErrorCode::NotInPalette,
                    format!(
                        "{what} {v} is not offered in this scenario; choose one of {}",
                        allowed.join(", ")
                    ),
                );
            }
        }
    }

    fn choice(
        &self,
        name: &str,
        values: &'static [&'static str],
        errors: &mut Errors,
    ) -> Option<&'static str> {
        let value = match self.given {
            None => Some(self.scenario.palette.default_of(self.kind, name, values)),
            Some(Json::String(s)) => match values.iter().find(|v| **v == s) {
                Some(v) => Some(*v),
                None => {
                    errors.push(
                        self.path(),
                        DesignErrorCode::BadOptionValue,
                        format!(
                            "\"{s}\" is not a value of {name}; choose one of {}",
                            values.join(", ")
                        ),
                    );
                    None
                }
            },
            Some(_) => {
                errors.push(
                    self.path(),
                    DesignErrorCode::WrongType,
                    format!("{name} must be a string, one of {}", values.join(", ")),
                );
                None
            }
        }?;
        self.not_offered(name, value, errors);
        Some(value)
    }

    fn count(&self, name: &str, default: u32, max: u32, errors: &mut Errors) -> Option<u32> {
        let value = match self.given {
            None => Some(default),
            Some(Json::Number(n)) => match n.as_u64() {
                Some(v) if v >= 1 && v <= u64::from(max) => Some(v as u32),
                _ => {
                    errors.push(
                        self.path(),
                        DesignErrorCode::BadOptionValue,
                        format!("{name} must be a whole number from 1 to {max}"),
                    );
                    None
                }
            },
            Some(Json::String(s)) => {
                // A palette lists every option value as a string; a design gives this one
                // as a number, and says so.
                errors.push(
                    self.path(),
                    DesignErrorCode::WrongType,
                    format!("{name} is a number in a design, such as {default}, not the string \"{s}\" (only a palette lists it as a string); write it without quotes, a whole number from 1 to {max}"),
                );
                None
            }
            Some(_) => {
                errors.push(
                    self.path(),
                    DesignErrorCode::WrongType,
                    format!("{name} must be a whole number from 1 to {max}"),
                );
                None
            }
        }?;
        if let Some(allowed) = self.allowed {
            if !allowed.iter().any(|a| a == &value.to_string()) {
                errors.push(
                    self.path(),
                    DesignErrorCode::NotInPalette,
                    format!(
                        "{name} {value} is not offered here; choose one of {}",
                        allowed.join(", ")
                    ),
                );
            }
        }
        Some(value)
    }

    /// A table or stream option: the name of one the scenario has.
    fn name(&self, spec: &OptionSpec, errors: &mut Errors) -> Option<String> {
        let tables = |role| {
            self.scenario
                .tables
                .iter()
                .filter(move |t| t.role == role)
                .map(|t| t.name.as_str())
                .collect()
        };
        let (candidates, what): (Vec<&str>, &str) = match spec.values {
            OptionValues::SourceTable => (tables(TableRole::Source), "source table"),
            OptionValues::SinkTable => (tables(TableRole::Sink), "warehouse table"),
            _ => (
                self.scenario
                    .streams
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect(),
                "stream",
            ),
        };
        match self.given {
            None if candidates.len() == 1 && spec.values != OptionValues::SinkTable => {
                Some(candidates[0].to_string())
            }
            None => {
                errors.push(
                    self.path(),
                    DesignErrorCode::MissingOption,
                    format!(
                        "choose which {what} this node stands for: {}",
                        candidates.join(", ")
                    ),
                );
                None
            }
            Some(Json::String(s)) if candidates.contains(&s.as_str()) => {
                if let Some(allowed) = self.allowed {
                    if !allowed.contains(s) {
                        errors.push(
                            self.path(),
                            DesignErrorCode::NotInPalette,
                            format!(
                                "{what} {s} is not offered here; choose one of {}",
                                allowed.join(", ")
                            ),
                        );
                    }
                }
                Some(s.clone())
            }
            Some(Json::String(s)) => {
                errors.push(
                    self.path(),
                    DesignErrorCode::UnknownName,
                    format!(
                        "this scenario has no {what} \"{s}\"; its {what}s are {}",
                        candidates.join(", ")
                    ),
                );
                None
            }
            Some(_) => {
                errors.push(
                    self.path(),
                    DesignErrorCode::WrongType,
                    format!("{} must be the name of a {what}", spec.name),
                );
                None
            }
        }
    }

    fn key(&self, errors: &mut Errors) -> Option<Vec<String>> {
        match self.given {
            None => None,
            Some(Json::Array(items)) if items.iter().all(Json::is_string) => Some(
                items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
            ),
            Some(Json::String(s)) => Some(vec![s.clone()]),
            Some(_) => {
                errors.push(
                    self.path(),
                    DesignErrorCode::WrongType,
                    "key must be a list of column names, such as [\"order_id\"]",
                );
                None
            }
        }
    }
}
