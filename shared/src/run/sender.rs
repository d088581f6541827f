//! The sender: it sends each message straight to the consumer and waits for the ack; when a
//! message or its ack is lost it hears nothing, and gives up or resends.

use std::collections::VecDeque;

use super::{Cursor, Fault, Sim, Step};
use crate::design::{IdempotencyKey, OnTimeout};
use crate::model::{ConsumerModel, SenderModel};
use crate::value::Value;

impl Sim<'_> {
    /// Sends the messages from where the cursor stands, each until it is acked or given up.
    pub(super) fn run_sender(&mut self, s: &SenderModel) {
        let SenderModel {
            sender_node,
            sender,
            consumer: c,
            messages,
            idempotency_col,
            message_lost,
            ack_lost,
            ..
        } = s;
        let ConsumerModel {
            node: consumer_node,
            sink,
            ..
        } = c;
        let (first, mut memory) = match std::mem::replace(&mut self.cursor, Cursor::Start) {
            Cursor::Send { i, memory } => (i, memory),
            _ => (0, VecDeque::new()),
        };
        let edge_in = (sender_node.as_str(), consumer_node.as_str());
        let edge_out = (consumer_node.as_str(), sink.node.as_str());
        let lost: &[Fault] = if *message_lost {
            &[Fault::MessageLost]
        } else {
            &[]
        };
        let acks: &[Fault] = if *ack_lost { &[Fault::AckLost] } else { &[] };
        for (i, msg) in messages.iter().enumerate().skip(first) {
            if self.pause_here() {
                self.cursor = Cursor::Send { i, memory };
                return;
            }
            let mut attempt = 0u32;
            loop {
                if self.too_long() {
                    return;
                }
                attempt += 1;
                let idem = match sender.idempotency_key {
                    IdempotencyKey::None => Value::Null,
                    IdempotencyKey::PerAction => Value::Text(format!("key-{}", i + 1)),
                    IdempotencyKey::PerAttempt => Value::Text(format!("key-{}-{attempt}", i + 1)),
                };
                let mut row = msg.row.clone();
                if let Some(c) = idempotency_col {
                    row[*c] = idem.clone();
                }
                let key = if sender.idempotency_key == IdempotencyKey::None {
                    msg.key.clone()
                } else {
                    idem.clone()
                };
                self.tick(1);
                let with_key = || {
                    if idem.is_null() {
                        String::new()
                    } else {
                        format!(" with Idempotency-Key {idem}")
                    }
                };
                let verb = if attempt == 1 { "sends" } else { "resends" };
                self.log(|_| Step {
                    actor: "sender",
                    node: Some(sender_node),
                    edge: Some(edge_in),
                    action: format!("{verb} message {i} ({}){}", msg.describe, with_key()),
                    sql: None,
                    outcome: "sent".into(),
                    changed: false,
                });
                let mut silence = false;
                if self.point(lost).is_some() {
                    if self.tracing {
                        self.failure_words.push(format!(
                            "message {i} ({}) is lost on the way (attempt {attempt})",
                            msg.describe
                        ));
                    }
                    self.log(|_| Step {
                        actor: "network",
                        node: None,
                        edge: Some(edge_in),
                        action: format!("loses message {i}"),
                        sql: None,
                        outcome: "lost: the consumer never sees it".into(),
                        changed: false,
                    });
                    silence = true;
                } else {
                    self.write_message(c, row, &key, &mut memory, edge_out, i);
                    self.tick(1);
                    if self.point(acks).is_some() {
                        if self.tracing {
                            self.failure_words.push(format!(
                                "the ack for message {i} ({}) is lost (attempt {attempt})",
                                msg.describe
                            ));
                        }
                        self.log(|_| Step {
                            actor: "network",
                            node: None,
                            edge: Some(edge_in),
                            action: format!("loses the consumer's ack for message {i}"),
                            sql: None,
                            outcome: "lost: the sender hears nothing".into(),
                            changed: false,
                        });
                        silence = true;
                    } else {
                        self.log(|_| Step {
                            actor: "consumer",
                            node: Some(consumer_node),
                            edge: Some(edge_in),
                            action: format!("acks message {i}"),
                            sql: None,
                            outcome: "ack received".into(),
                            changed: false,
                        });
                    }
                }
                if !silence {
                    break;
                }
                self.clock_s += 30;
                match sender.on_timeout {
                    OnTimeout::GiveUp => {
                        self.log(|_| Step {
                            actor: "sender",
                            node: Some(sender_node),
                            edge: None,
                            action: format!("hears nothing for 30 s and gives up on message {i}"),
                            sql: None,
                            outcome: "given up (at-most-once)".into(),
                            changed: false,
                        });
                        break;
                    }
                    OnTimeout::Resend => {
                        self.log(|_| Step {
                            actor: "sender",
                            node: Some(sender_node),
                            edge: None,
                            action: format!("hears nothing for 30 s and will resend message {i}"),
                            sql: None,
                            outcome: "timeout".into(),
                            changed: false,
                        });
                    }
                }
            }
        }
    }
}
