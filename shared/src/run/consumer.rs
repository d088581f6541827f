//! The consumer's write of one message, shared by the stream consumer and the sender's
//! consumer: its in-memory dedupe, the write to its sink, and the trace of both.

use std::borrow::Cow;
use std::collections::VecDeque;

use super::{Sim, Step};
use crate::design::Dedupe;
use crate::model::{ConsumerModel, Message};
use crate::sql;
use crate::value::Value;
use crate::warehouse::Row;

impl Sim<'_> {
    /// The consumer writes one message of the stream to its sink.
    pub(super) fn consume_write(
        &mut self,
        c: &ConsumerModel,
        msg: &Message,
        memory: &mut VecDeque<Value>,
        edge: (&str, &str),
        pos: usize,
    ) {
        self.write_message(c, Cow::Borrowed(&msg.row), &msg.key, memory, edge, pos);
    }

    /// The consumer writes one row to its sink, unless its in-memory dedupe remembers its key.
    pub(super) fn write_message(
        &mut self,
        c: &ConsumerModel,
        row: Cow<'_, Row>,
        key: &Value,
        memory: &mut VecDeque<Value>,
        edge: (&str, &str),
        pos: usize,
    ) {
        let ConsumerModel {
            node: consumer_node,
            options: consumer,
            sink,
            ..
        } = c;
        self.tick(1);
        let dedupe = consumer.dedupe == Dedupe::InMemory;
        if dedupe && !key.is_null() && memory.iter().any(|k| k.key_eq(key)) {
            self.log(|_| Step {
                actor: "consumer",
                node: Some(consumer_node),
                edge: None,
                action: format!("skips message {pos}: key {key} is in its memory"),
                sql: None,
                outcome: "skipped as a repeat".into(),
                changed: false,
            });
            return;
        }
        let sql = self
            .tracing
            .then(|| sql::message_write(&self.wh.tables[sink.table], sink, &row, self.dialect));
        let affected = self.write_row(sink, row);
        let committed = !self.wh.in_transaction();
        let outcome = if !self.tracing {
            String::new()
        } else if committed {
            format!("committed: {}", affected.describe())
        } else {
            format!("{} (not committed yet)", affected.describe())
        };
        self.log(|sim| Step {
            actor: "consumer",
            node: Some(consumer_node),
            edge: Some(edge),
            action: format!("writes message {pos} to {}", sim.wh.tables[sink.table].name),
            sql,
            outcome,
            changed: committed,
        });
        self.observe();
        if dedupe && !key.is_null() {
            if memory.len() >= consumer.dedupe_window as usize {
                memory.pop_front();
            }
            memory.push_back(key.clone());
        }
    }
}
