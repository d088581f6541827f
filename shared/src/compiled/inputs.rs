//! The scenario's streams and senders: their messages typed, with their keys and the times
//! they arrive.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;

use super::error::{serr, ScenarioError};
use super::table::TableInfo;
use crate::scenario::{ColumnDef, Late, Scenario};
use crate::value::Value;
use crate::warehouse::Row;

/// A stream or a sender: its messages, typed.
#[derive(Clone, Debug)]
pub(crate) struct InputInfo {
    pub name: String,
    pub messages: Vec<MessageInfo>,
    pub start: NaiveDateTime,
    /// A sender's field for its idempotency key.
    pub idempotency_field: Option<String>,
}

#[derive(Clone, Debug)]
pub(crate) struct MessageInfo {
    /// The message's fields and their typed values, in the declared order of the fields.
    pub values: Vec<(String, Value)>,
    /// The message's key for in-memory dedupe (NULL when it has none).
    pub key: Value,
    pub describe: String,
    /// When the message reaches the stream, or when the sender may send it.
    pub arrival: NaiveDateTime,
}

impl MessageInfo {
    /// The row a consumer writes into `table`: each column takes the field of its name, or
    /// NULL.
    pub fn row_for(&self, table: &TableInfo) -> Row {
        table
            .columns
            .iter()
            .map(|c| {
                self.values
                    .iter()
                    .find(|(f, _)| f == c)
                    .map_or(Value::Null, |(_, v)| v.clone())
            })
            .collect()
    }
}

/// The fields of a stream or sender by name, for typing its messages.
fn field<'a>(fields: &'a [ColumnDef], name: &str) -> Option<&'a ColumnDef> {
    fields.iter().find(|f| f.name == name)
}

pub(super) fn compile_streams(
    scenario: &Scenario,
    errors: &mut Vec<ScenarioError>,
) -> Vec<InputInfo> {
    scenario
        .streams
        .iter()
        .enumerate()
        .map(|(i, s)| InputInfo {
            name: s.name.clone(),
            messages: compile_messages(
                &Source {
                    path: format!("$.streams[{i}]"),
                    fields: &s.fields,
                    key_field: s.key_field.as_deref(),
                    start: s.start.0,
                    late: &s.late,
                },
                &s.messages,
                errors,
            ),
            start: s.start.0,
            idempotency_field: None,
        })
        .collect()
}

pub(super) fn compile_senders(
    scenario: &Scenario,
    errors: &mut Vec<ScenarioError>,
) -> Vec<InputInfo> {
    scenario
        .senders
        .iter()
        .enumerate()
        .map(|(i, s)| InputInfo {
            name: s.name.clone(),
            messages: compile_messages(
                &Source {
                    path: format!("$.senders[{i}]"),
                    fields: &s.fields,
                    key_field: s.key_field.as_deref(),
                    start: s.start.0,
                    late: &s.late,
                },
                &s.messages,
                errors,
            ),
            start: s.start.0,
            idempotency_field: Some(s.idempotency_field.clone()),
        })
        .collect()
}

/// What the messages of one stream or sender are read against.
struct Source<'a> {
    path: String,
    fields: &'a [ColumnDef],
    key_field: Option<&'a str>,
    start: NaiveDateTime,
    late: &'a [Late],
}

fn compile_messages(
    source: &Source,
    messages: &[BTreeMap<String, serde_json::Value>],
    errors: &mut Vec<ScenarioError>,
) -> Vec<MessageInfo> {
    let path = &source.path;
    for (l, late) in source.late.iter().enumerate() {
        if late.message as usize >= messages.len() {
            errors.push(serr(
                format!("{path}.late[{l}].message"),
                format!(
                    "there is no message {} (the messages are 0 to {})",
                    late.message,
                    messages.len().saturating_sub(1)
                ),
            ));
        }
    }
    // A message arrives at its own time, and never before the one ahead of it.
    let mut arrival = source.start;
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let mut values = Vec::new();
        for f in source.fields {
            let Some(raw) = m.get(&f.name) else { continue };
            match Value::from_json(f.ty, raw) {
                Ok(v) => values.push((f.name.clone(), v)),
                Err(e) => errors.push(serr(format!("{path}.messages[{i}].{}", f.name), e)),
            }
        }
        for name in m.keys() {
            if field(source.fields, name).is_none() {
                errors.push(serr(
                    format!("{path}.messages[{i}].{name}"),
                    format!("\"{name}\" is not one of the declared fields"),
                ));
            }
        }
        let key = source
            .key_field
            .and_then(|k| values.iter().find(|(f, _)| f == k))
            .map_or(Value::Null, |(_, v)| v.clone());
        let describe = values
            .iter()
            .map(|(f, v)| format!("{f} {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        if let Some(late) = source.late.iter().find(|l| l.message as usize == i) {
            arrival = arrival.max(late.at.0);
        }
        out.push(MessageInfo {
            values,
            key,
            describe,
            arrival,
        });
    }
    out
}
