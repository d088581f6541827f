//! The stream consumer: it reads offsets in order, commits its offset before, after or with
//! the write, and after a crash restarts from the last committed offset. The producer may
//! append late duplicates. One iteration is the handling of one offset (with a crash and the
//! restart after it); the first one decides the late duplicates.

use std::collections::VecDeque;
use std::rc::Rc;

use super::{Consume, Cursor, Fault, Sim, Step, StreamCursor};
use crate::design::OffsetCommit;
use crate::model::{ConsumerModel, Message, StreamModel};
use crate::sql;

/// The offset the consumer is handling, and where it may crash.
struct Read<'m> {
    msg: &'m Message,
    pos: usize,
    edge_in: (&'m str, &'m str),
    edge_out: (&'m str, &'m str),
    offered: &'m [Fault],
}

impl Sim<'_> {
    /// One iteration of stage `k`'s consumer: the stream's start, or one offset.
    pub(super) fn stream_iteration(&mut self, k: usize, s: &StreamModel) {
        let Cursor::Stream(mut cursor) = std::mem::replace(
            &mut self.cursors[k],
            Cursor::Stream(StreamCursor::default()),
        ) else {
            unreachable!("a stream stage has a stream cursor");
        };
        cursor.consume = Some(match cursor.consume {
            None => self.open_stream(s),
            Some(mut c) => {
                self.consume_offset(s, &mut c);
                c
            }
        });
        self.cursors[k] = Cursor::Stream(cursor);
    }

    /// The stream as the consumer will read it: the producer's late duplicates are decided
    /// here, at choice points of their own.
    fn open_stream(&mut self, s: &StreamModel) -> Consume {
        let StreamModel {
            stream_node,
            messages,
            redelivery,
            ..
        } = s;
        let n = messages.len();
        {
            {
                let mut copies = Vec::new();
                // The producer's late duplicates: each message may reappear after some others.
                if let Some((lo, hi)) = redelivery {
                    // A copy after `after` others needs that many messages after it, so no
                    // `after` past the stream's length is ever offered: the range stops
                    // there, however large the scenario's after_max.
                    let hi = (*hi).min(u32::try_from(n).unwrap_or(u32::MAX));
                    let mut offered: Vec<Fault> =
                        Vec::with_capacity((hi.saturating_sub(*lo) + 1) as usize);
                    for (i, message) in messages.iter().enumerate() {
                        offered.clear();
                        offered.extend(
                            (*lo..=hi)
                                .filter(|&k| i + (k as usize) < n)
                                .map(|after| Fault::Redelivery { after }),
                        );
                        if let Some(Fault::Redelivery { after }) = self.point(&offered) {
                            copies.push((i, i + after as usize));
                            if self.tracing {
                                self.failure_words.push(format!(
                                    "the producer retries message {i} ({}), so it appears again after {}",
                                    message.describe,
                                    others(after)
                                ));
                            }
                            self.log(|_| Step {
                                actor: "stream",
                                node: Some(stream_node),
                                edge: None,
                                action: format!(
                                    "gets a late duplicate of offset {i} ({}) after {}",
                                    message.describe,
                                    others(after)
                                ),
                                sql: None,
                                outcome: "duplicate appended".into(),
                                changed: false,
                            });
                        }
                    }
                }
                let mut stream: Vec<usize> = Vec::with_capacity(n + copies.len());
                for j in 0..n {
                    stream.push(j);
                    stream.extend(copies.iter().filter(|c| c.1 == j).map(|c| c.0));
                }
                Consume {
                    stream: Rc::new((copies, stream)),
                    pos: 0,
                    broker_offset: 0,
                    memory: VecDeque::new(),
                }
            }
        }
    }

    /// The consumer handles the offset it is at: reads it, writes and commits as its option
    /// says, and may crash at each point between.
    fn consume_offset(&mut self, s: &StreamModel, state: &mut Consume) {
        let c = &s.consumer;
        let pos = state.pos;
        let stream = Rc::clone(&state.stream);
        let msg = &s.messages[stream.1[pos]];
        let offered: &[Fault] = if s.crash.may_crash_at(pos as u32) {
            &[Fault::ConsumerCrash]
        } else {
            &[]
        };
        let read = Read {
            msg,
            pos,
            edge_in: (s.stream_node.as_str(), c.node.as_str()),
            edge_out: (c.node.as_str(), c.sink.node.as_str()),
            offered,
        };
        self.tick(1);
        self.log(|_| Step {
            actor: "consumer",
            node: Some(&c.node),
            edge: Some(read.edge_in),
            action: format!("reads offset {pos} ({})", msg.describe),
            sql: None,
            outcome: "read".into(),
            changed: false,
        });
        let crashed_at = if self.point(offered).is_some() {
            Some("before it writes or commits anything")
        } else {
            match c.options.offset_commit {
                OffsetCommit::BeforeWrite => self.commit_then_write(c, state, &read),
                OffsetCommit::AfterWrite => self.write_then_commit(c, state, &read),
                OffsetCommit::WithWrite => self.write_with_offset(c, state, &read),
            }
        };
        match crashed_at {
            None => state.pos += 1,
            Some(place) => self.restart_consumer(s, state, place),
        }
    }

    /// The consumer commits its next offset to the broker.
    fn commit_offset(&mut self, c: &ConsumerModel, state: &mut Consume, read: &Read) {
        let next = read.pos + 1;
        state.broker_offset = next;
        self.tick(1);
        self.log(|_| Step {
            actor: "consumer",
            node: Some(&c.node),
            edge: Some(read.edge_in),
            action: format!("commits offset: next to read is {next}"),
            sql: None,
            outcome: format!("broker stores next offset {next}"),
            changed: false,
        });
    }

    /// `before_write`: commit, then write; returns where it crashed, if it did.
    fn commit_then_write(
        &mut self,
        c: &ConsumerModel,
        state: &mut Consume,
        read: &Read,
    ) -> Option<&'static str> {
        self.commit_offset(c, state, read);
        if self.point(read.offered).is_some() {
            return Some("after it committed the offset, before it wrote the row");
        }
        self.consume_write(c, read.msg, &mut state.memory, read.edge_out, read.pos);
        self.point(read.offered)
            .map(|_| "after it committed the offset and wrote the row")
    }

    /// `after_write`: write, then commit; returns where it crashed, if it did.
    fn write_then_commit(
        &mut self,
        c: &ConsumerModel,
        state: &mut Consume,
        read: &Read,
    ) -> Option<&'static str> {
        self.consume_write(c, read.msg, &mut state.memory, read.edge_out, read.pos);
        if self.point(read.offered).is_some() {
            return Some("after it wrote the row, before it committed the offset");
        }
        self.commit_offset(c, state, read);
        self.point(read.offered)
            .map(|_| "after it wrote the row and committed the offset")
    }

    /// `with_write`: the row and the next offset in one transaction; returns where it crashed,
    /// if it did.
    fn write_with_offset(
        &mut self,
        c: &ConsumerModel,
        state: &mut Consume,
        read: &Read,
    ) -> Option<&'static str> {
        let next = read.pos + 1;
        self.wh.begin();
        self.tick(1);
        self.log(|_| Step {
            actor: "consumer",
            node: Some(&c.node),
            edge: None,
            action: "opens a transaction".into(),
            sql: Some("BEGIN;".into()),
            outcome: "transaction open".into(),
            changed: false,
        });
        self.consume_write(c, read.msg, &mut state.memory, read.edge_out, read.pos);
        self.wh.set_offset(c.slot, next as u64);
        self.tick(1);
        let sql = self
            .tracing
            .then(|| sql::offset_update(&c.slot_name, next as u64));
        self.log(|_| Step {
            actor: "consumer",
            node: Some(&c.node),
            edge: Some(read.edge_out),
            action: format!("saves next offset {next} with the row"),
            sql,
            outcome: "not committed yet".into(),
            changed: false,
        });
        if self.point(read.offered).is_some() {
            return Some("after it wrote the row and the offset, before COMMIT");
        }
        self.wh.commit();
        self.tick(1);
        self.log(|_| Step {
            actor: "consumer",
            node: Some(&c.node),
            edge: Some(read.edge_out),
            action: "commits the row and the offset together".into(),
            sql: Some("COMMIT;".into()),
            outcome: "committed".into(),
            changed: true,
        });
        self.observe();
        self.point(read.offered)
            .map(|_| "after it committed the row and the offset")
    }

    /// The consumer crashed while it handled its current offset: it restarts from the offset
    /// it committed (or saved with its rows), with an empty memory.
    fn restart_consumer(&mut self, s: &StreamModel, state: &mut Consume, place: &str) {
        let c = &s.consumer;
        let consumer_node = &c.node;
        let pos = state.pos;
        let msg = &s.messages[state.stream.1[pos]];
        let with_write = c.options.offset_commit == OffsetCommit::WithWrite;
        if self.tracing {
            let who = self.consumer_words(&s.topic);
            self.failure_words.push(format!(
                "{who} crashes while it handles offset {pos} ({}), {place}",
                msg.describe
            ));
        }
        self.log(|_| Step {
            actor: "consumer",
            node: Some(consumer_node),
            edge: None,
            action: format!("crashes {place}"),
            sql: None,
            outcome: "crashed; its memory is lost".into(),
            changed: false,
        });
        self.rollback_in_trace("rolled back", true);
        state.memory.clear();
        state.pos = if with_write {
            self.wh.stored_offsets[c.slot] as usize
        } else {
            state.broker_offset
        };
        let pos = state.pos;
        self.tick(1);
        let from = if with_write {
            "the offset saved in the warehouse"
        } else {
            "the broker's committed offset"
        };
        self.log(|_| Step {
            actor: "consumer",
            node: Some(consumer_node),
            edge: None,
            action: format!("restarts and reads from offset {pos} ({from})"),
            sql: None,
            outcome: "restarted".into(),
            changed: false,
        });
    }

    /// How the trace's words name a consumer: "the consumer", or, in a pipeline of several
    /// stages, the consumer of its stream or sender.
    pub(super) fn consumer_words(&self, input: &str) -> String {
        if self.m.stages.len() > 1 {
            format!("the consumer of {input}")
        } else {
            "the consumer".to_string()
        }
    }
}

/// "1 other message", "3 other messages".
fn others(n: u32) -> String {
    if n == 1 {
        "1 other message".into()
    } else {
        format!("{n} other messages")
    }
}
