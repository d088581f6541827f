//! The failures a scenario allows, compiled.

use crate::scenario::Scenario;

/// The failures a scenario allows, compiled.
#[derive(Clone, Debug)]
pub(crate) struct Failures {
    pub bound: u32,
    /// The most crashes per run, and the scheduler's delay before a retry.
    pub job_crash: Option<(u32, u32)>,
    pub consumer_crash: ConsumerCrash,
    pub message_lost: bool,
    pub ack_lost: bool,
    /// The producer's late duplicates: each message may reappear after between `.0` and `.1`
    /// other messages.
    pub redelivery: Option<(u32, u32)>,
}

/// Where a consumer may crash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ConsumerCrash {
    /// The scenario injects no consumer crash.
    Never,
    /// The consumer may crash while it handles any message.
    Anywhere,
    /// The consumer may crash only while it handles one of these offsets (messages).
    AtOffsets(Vec<u32>),
}

impl ConsumerCrash {
    /// Whether the consumer may crash while it handles the message at `offset`.
    pub fn may_crash_at(&self, offset: u32) -> bool {
        match self {
            ConsumerCrash::Never => false,
            ConsumerCrash::Anywhere => true,
            ConsumerCrash::AtOffsets(offsets) => offsets.contains(&offset),
        }
    }
}

pub(super) fn compile_failures(scenario: &Scenario) -> Failures {
    let fs = &scenario.failures;
    Failures {
        bound: fs.bound,
        job_crash: fs
            .job_crash
            .as_ref()
            .map(|c| (c.max_per_run, c.retry_delay_minutes)),
        consumer_crash: match &fs.consumer_crash {
            None => ConsumerCrash::Never,
            Some(c) => match &c.offsets {
                None => ConsumerCrash::Anywhere,
                Some(offsets) => ConsumerCrash::AtOffsets(offsets.clone()),
            },
        },
        message_lost: fs.message_lost.is_some(),
        ack_lost: fs.ack_lost.is_some(),
        redelivery: fs
            .redelivery
            .as_ref()
            .map(|r| (r.after_min.max(1), r.after_max)),
    }
}
