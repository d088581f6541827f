//! The sender: it sends each message straight to the consumer and waits for the ack; when a
//! message or its ack is lost, or the consumer crashes before it acks, it hears nothing, and
//! gives up or resends. One iteration is one send, after the silence that led to it.
//!
//! The consumer's ack is its commit: with `before_write` it acks as soon as it has the
//! message and then writes it, so a crash in between loses a message the sender thinks
//! delivered; with `after_write` it acks once the row is written, so a crash in between makes
//! the sender send it again.

use std::borrow::Cow;

use super::{Cursor, Fault, SenderCursor, Sim, Step, SENDER_TIMEOUT_S};
use crate::design::{IdempotencyKey, OffsetCommit, OnTimeout};
use crate::model::{Message, SenderModel};
use crate::value::Value;

/// The message being sent, as one send carries it.
struct Send<'m> {
    i: usize,
    msg: &'m Message,
    attempt: u32,
}

impl Sim<'_> {
    /// One iteration of stage `k`'s sender: it acts on the silence after its last send, if
    /// any, and sends.
    pub(super) fn sender_iteration(&mut self, k: usize, s: &SenderModel) {
        let Cursor::Sender(mut c) = std::mem::replace(
            &mut self.cursors[k],
            Cursor::Sender(SenderCursor::default()),
        ) else {
            unreachable!("a sender stage has a sender cursor");
        };
        if c.silence_at.take().is_some() && !self.after_silence(s, c.i) {
            c.i += 1;
            c.attempt = 0;
            self.cursors[k] = Cursor::Sender(c);
            return;
        }
        c.attempt += 1;
        let send = Send {
            i: c.i,
            msg: &s.messages[c.i],
            attempt: c.attempt,
        };
        if self.send(s, &send, &mut c) {
            c.i += 1;
            c.attempt = 0;
        } else {
            c.silence_at = Some(self.clock_s);
        }
        self.cursors[k] = Cursor::Sender(c);
    }

    /// The sender heard nothing for its timeout: returns whether it sends again.
    fn after_silence(&mut self, s: &SenderModel, i: usize) -> bool {
        let node = Some(s.sender_node.as_str());
        match s.sender.on_timeout {
            OnTimeout::GiveUp => {
                self.log(|_| Step {
                    actor: "sender",
                    node,
                    edge: None,
                    action: format!(
                        "hears nothing for {SENDER_TIMEOUT_S} s and gives up on message {i}"
                    ),
                    sql: None,
                    outcome: "given up (at-most-once)".into(),
                    changed: false,
                });
                false
            }
            OnTimeout::Resend => {
                self.log(|_| Step {
                    actor: "sender",
                    node,
                    edge: None,
                    action: format!(
                        "hears nothing for {SENDER_TIMEOUT_S} s and will resend message {i}"
                    ),
                    sql: None,
                    outcome: "timeout".into(),
                    changed: false,
                });
                true
            }
        }
    }

    /// One send of a message and what the consumer does with it. Returns whether the sender
    /// heard the ack.
    fn send(&mut self, s: &SenderModel, send: &Send, c: &mut SenderCursor) -> bool {
        let Send { i, msg, attempt } = *send;
        let idem = match s.sender.idempotency_key {
            IdempotencyKey::None => Value::Null,
            IdempotencyKey::PerAction => Value::Text(format!("key-{}", i + 1)),
            IdempotencyKey::PerAttempt => Value::Text(format!("key-{}-{attempt}", i + 1)),
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
        let edge_in = (s.sender_node.as_str(), s.consumer.node.as_str());
        self.log(|_| Step {
            actor: "sender",
            node: Some(&s.sender_node),
            edge: Some(edge_in),
            action: format!("{verb} message {i} ({}){}", msg.describe, with_key()),
            sql: None,
            outcome: "sent".into(),
            changed: false,
        });
        let lost: &[Fault] = if s.message_lost {
            &[Fault::MessageLost]
        } else {
            &[]
        };
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
            return false;
        }
        let mut row = msg.row.clone();
        if let Some(col) = s.idempotency_col {
            row[col] = idem.clone();
        }
        let key = if s.sender.idempotency_key == IdempotencyKey::None {
            msg.key.clone()
        } else {
            idem
        };
        self.receive(s, send, c, row, &key)
    }

    /// The consumer takes the message: it acks and writes it in the order its option says,
    /// and may crash before, between and after. Returns whether the sender heard the ack.
    fn receive(
        &mut self,
        s: &SenderModel,
        send: &Send,
        c: &mut SenderCursor,
        row: Vec<Value>,
        key: &Value,
    ) -> bool {
        let i = send.i;
        let crashes: &[Fault] = if s.crash.may_crash_at(i as u32) {
            &[Fault::ConsumerCrash]
        } else {
            &[]
        };
        let edge_out = (s.consumer.node.as_str(), s.consumer.sink.node.as_str());
        let ack_first = s.consumer.options.offset_commit == OffsetCommit::BeforeWrite;
        if self.point(crashes).is_some() {
            let place = if ack_first {
                "before it acks or writes anything"
            } else {
                "before it writes or acks anything"
            };
            self.crash_receiver(s, send, c, place);
            return false;
        }
        if ack_first {
            let heard = self.ack(s, send);
            if self.point(crashes).is_some() {
                self.crash_receiver(s, send, c, "after it acked, before it wrote the row");
                return heard;
            }
            self.write_message(
                &s.consumer,
                Cow::Owned(row),
                key,
                &mut c.memory,
                edge_out,
                i,
            );
            if self.point(crashes).is_some() {
                self.crash_receiver(s, send, c, "after it acked and wrote the row");
            }
            return heard;
        }
        self.write_message(
            &s.consumer,
            Cow::Owned(row),
            key,
            &mut c.memory,
            edge_out,
            i,
        );
        if self.point(crashes).is_some() {
            self.crash_receiver(s, send, c, "after it wrote the row, before it acked");
            return false;
        }
        let heard = self.ack(s, send);
        if self.point(crashes).is_some() {
            self.crash_receiver(s, send, c, "after it wrote the row and acked");
        }
        heard
    }

    /// The consumer acks; the ack may be lost on the way back. Returns whether the sender
    /// heard it.
    fn ack(&mut self, s: &SenderModel, send: &Send) -> bool {
        let Send { i, msg, attempt } = *send;
        let edge_in = (s.sender_node.as_str(), s.consumer.node.as_str());
        self.tick(1);
        let acks: &[Fault] = if s.ack_lost { &[Fault::AckLost] } else { &[] };
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
            return false;
        }
        self.log(|_| Step {
            actor: "consumer",
            node: Some(&s.consumer.node),
            edge: Some(edge_in),
            action: format!("acks message {i}"),
            sql: None,
            outcome: "ack received".into(),
            changed: false,
        });
        true
    }

    /// The consumer crashes while it handles a message, and restarts with an empty memory.
    fn crash_receiver(&mut self, s: &SenderModel, send: &Send, c: &mut SenderCursor, place: &str) {
        let node = Some(s.consumer.node.as_str());
        if self.tracing {
            let who = self.consumer_words(&s.name);
            self.failure_words.push(format!(
                "{who} crashes while it handles message {} ({}), {place}",
                send.i, send.msg.describe
            ));
        }
        self.log(|_| Step {
            actor: "consumer",
            node,
            edge: None,
            action: format!("crashes {place}"),
            sql: None,
            outcome: "crashed; its memory is lost".into(),
            changed: false,
        });
        c.memory.clear();
        self.tick(1);
        self.log(|_| Step {
            actor: "consumer",
            node,
            edge: None,
            action: "restarts and waits for the next message".into(),
            sql: None,
            outcome: "restarted".into(),
            changed: false,
        });
    }
}
