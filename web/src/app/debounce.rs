//! Running a piece of work once things have been quiet for a while.
//!
//! The scenario page waits out bursts in four places: the preview after edits, the draft's
//! save after edits, the fading of a notice, and the replay's next step while it plays. Each
//! place holds one [`Debounce`]; every new request bumps its generation, so a timer that wakes
//! up to find a newer generation knows it was superseded and does nothing.

use std::time::Duration;

use leptos::prelude::*;

/// A delay and the generation of the newest request. `Copy`, so closures can hold it.
#[derive(Clone, Copy)]
pub struct Debounce {
    generation: StoredValue<u64>,
    delay: Duration,
}

/// One request of a [`Debounce`]: it tells whether a newer request has come since.
#[derive(Clone, Copy)]
pub struct Ticket {
    generation: StoredValue<u64>,
    mine: u64,
}

impl Ticket {
    /// True while no later request has superseded this one. Once the page that owns the
    /// debounce is gone, nothing is current: work that wakes up late must not touch it.
    pub fn is_current(self) -> bool {
        self.generation.try_get_value() == Some(self.mine)
    }
}

impl Debounce {
    /// A debounce owned by the current reactive owner, usually the component creating it.
    pub fn new(delay: Duration) -> Self {
        Self {
            generation: StoredValue::new(0),
            delay,
        }
    }

    /// Supersedes every pending run without scheduling a new one.
    pub fn cancel(self) -> Ticket {
        let mine = self
            .generation
            .try_update_value(|g| {
                *g += 1;
                *g
            })
            .unwrap_or(0);
        Ticket {
            generation: self.generation,
            mine,
        }
    }

    /// Runs `work` after the quiet period unless another request comes first. The work gets
    /// its ticket, so that work which goes on asynchronously can check it is still wanted.
    pub fn run(self, work: impl FnOnce(Ticket) + 'static) {
        let ticket = self.cancel();
        set_timeout(
            move || {
                if ticket.is_current() {
                    work(ticket);
                }
            },
            self.delay,
        );
    }
}
