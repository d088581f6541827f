//! The stream consumer: it reads offsets in order, commits its offset before, after or with
//! the write, and after a crash restarts from the last committed offset. The producer may
//! append late duplicates.

use std::collections::VecDeque;
use std::rc::Rc;

use super::{Consume, Cursor, Fault, Sim, Step};
use crate::design::OffsetCommit;
use crate::model::{ConsumerModel, StreamModel};
use crate::sql;

impl Sim<'_> {
    /// Consumes the stream from where the cursor stands to its end, restarting after crashes.
    pub(super) fn run_stream(&mut self, s: &StreamModel) {
        let StreamModel {
            stream_node,
            consumer: c,
            messages,
            crash,
            redelivery,
            ..
        } = s;
        let ConsumerModel {
            node: consumer_node,
            options: consumer,
            sink,
        } = c;
        let n = messages.len();
        let resumed = match std::mem::replace(&mut self.cursor, Cursor::Start) {
            Cursor::Consume(c) => Some(c),
            _ => None,
        };
        let Consume {
            stream,
            mut pos,
            mut broker_offset,
            mut memory,
        } = match resumed {
            Some(c) => c,
            None => {
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
                                    "the producer retries message {i} ({}), so it appears again after {after} other messages",
                                    message.describe
                                ));
                            }
                            self.log(|_| Step {
                                actor: "stream",
                                node: Some(stream_node),
                                edge: None,
                                action: format!(
                                    "gets a late duplicate of offset {i} ({}) after {after} other messages",
                                    message.describe
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
        };
        let with_write = consumer.offset_commit == OffsetCommit::WithWrite;
        let edge_in = (stream_node.as_str(), consumer_node.as_str());
        let edge_out = (consumer_node.as_str(), sink.node.as_str());
        while pos < stream.1.len() {
            if self.pause_here() {
                self.cursor = Cursor::Consume(Consume {
                    stream,
                    pos,
                    broker_offset,
                    memory,
                });
                return;
            }
            if self.too_long() {
                return;
            }
            let msg = &messages[stream.1[pos]];
            let may_crash = crash.may_crash_at(pos as u32);
            let offered: &[Fault] = if may_crash {
                &[Fault::ConsumerCrash]
            } else {
                &[]
            };
            self.tick(1);
            self.log(|_| Step {
                actor: "consumer",
                node: Some(consumer_node),
                edge: Some(edge_in),
                action: format!("reads offset {pos} ({})", msg.describe),
                sql: None,
                outcome: "read".into(),
                changed: false,
            });
            let mut crashed_at: Option<&str> = None;
            if self.point(offered).is_some() {
                crashed_at = Some("before it writes or commits anything");
            } else {
                match consumer.offset_commit {
                    OffsetCommit::BeforeWrite => {
                        broker_offset = pos + 1;
                        self.tick(1);
                        self.log(|_| Step {
                            actor: "consumer",
                            node: Some(consumer_node),
                            edge: Some(edge_in),
                            action: format!("commits offset: next to read is {}", pos + 1),
                            sql: None,
                            outcome: format!("broker stores next offset {}", pos + 1),
                            changed: false,
                        });
                        if self.point(offered).is_some() {
                            crashed_at =
                                Some("after it committed the offset, before it wrote the row");
                        } else {
                            self.consume_write(c, msg, &mut memory, edge_out, pos);
                            if self.point(offered).is_some() {
                                crashed_at =
                                    Some("after it committed the offset and wrote the row");
                            }
                        }
                    }
                    OffsetCommit::AfterWrite => {
                        self.consume_write(c, msg, &mut memory, edge_out, pos);
                        if self.point(offered).is_some() {
                            crashed_at =
                                Some("after it wrote the row, before it committed the offset");
                        } else {
                            broker_offset = pos + 1;
                            self.tick(1);
                            self.log(|_| Step {
                                actor: "consumer",
                                node: Some(consumer_node),
                                edge: Some(edge_in),
                                action: format!("commits offset: next to read is {}", pos + 1),
                                sql: None,
                                outcome: format!("broker stores next offset {}", pos + 1),
                                changed: false,
                            });
                            if self.point(offered).is_some() {
                                crashed_at =
                                    Some("after it wrote the row and committed the offset");
                            }
                        }
                    }
                    OffsetCommit::WithWrite => {
                        self.wh.begin();
                        self.tick(1);
                        self.log(|_| Step {
                            actor: "consumer",
                            node: Some(consumer_node),
                            edge: None,
                            action: "opens a transaction".into(),
                            sql: Some("BEGIN;".into()),
                            outcome: "transaction open".into(),
                            changed: false,
                        });
                        self.consume_write(c, msg, &mut memory, edge_out, pos);
                        self.wh.set_offset(pos as u64 + 1);
                        self.tick(1);
                        let sql = self.tracing.then(|| sql::offset_update(pos as u64 + 1));
                        self.log(|_| Step {
                            actor: "consumer",
                            node: Some(consumer_node),
                            edge: Some(edge_out),
                            action: format!("saves next offset {} with the row", pos + 1),
                            sql,
                            outcome: "not committed yet".into(),
                            changed: false,
                        });
                        if self.point(offered).is_some() {
                            crashed_at =
                                Some("after it wrote the row and the offset, before COMMIT");
                        } else {
                            self.wh.commit();
                            self.tick(1);
                            self.log(|_| Step {
                                actor: "consumer",
                                node: Some(consumer_node),
                                edge: Some(edge_out),
                                action: "commits the row and the offset together".into(),
                                sql: Some("COMMIT;".into()),
                                outcome: "committed".into(),
                                changed: true,
                            });
                            self.observe();
                            if self.point(offered).is_some() {
                                crashed_at = Some("after it committed the row and the offset");
                            }
                        }
                    }
                }
            }
            match crashed_at {
                None => pos += 1,
                Some(place) => {
                    if self.tracing {
                        self.failure_words.push(format!(
                            "the consumer crashes while it handles offset {pos} ({}), {place}",
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
                    memory.clear();
                    pos = if with_write {
                        self.wh.stored_offset as usize
                    } else {
                        broker_offset
                    };
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
            }
        }
    }
}
