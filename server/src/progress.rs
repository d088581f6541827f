//! A progress bar on the terminal for long commands (`scenarios solve`): drawn on stderr, only
//! when stderr is a terminal and only once the work has taken a second, so that quick runs,
//! pipes and logs never see it.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How long work runs before its bar appears.
const SHOWN_AFTER: Duration = Duration::from_secs(1);
/// How often the bar is redrawn at most.
const REDRAWN_EVERY: Duration = Duration::from_millis(100);
const WIDTH: u64 = 30;

pub struct Bar {
    label: String,
    started: Instant,
    drawn: Option<Instant>,
    terminal: bool,
}

impl Bar {
    pub fn new(label: &str) -> Bar {
        Bar {
            label: label.to_string(),
            started: Instant::now(),
            drawn: None,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    /// The line the bar draws for `done` of `total`.
    pub fn line(&self, done: u64, total: u64) -> String {
        let filled = (done * WIDTH)
            .checked_div(total)
            .unwrap_or(WIDTH)
            .min(WIDTH);
        format!(
            "{} [{}{}] {done}/{total}",
            self.label,
            "#".repeat(filled as usize),
            " ".repeat((WIDTH - filled) as usize)
        )
    }

    pub fn show(&mut self, done: u64, total: u64) {
        if !self.terminal || self.started.elapsed() < SHOWN_AFTER {
            return;
        }
        if self.drawn.is_some_and(|at| at.elapsed() < REDRAWN_EVERY) && done < total {
            return;
        }
        self.drawn = Some(Instant::now());
        let mut err = std::io::stderr();
        let _ = write!(err, "\r{}", self.line(done, total));
        let _ = err.flush();
    }

    /// Removes the bar, if it was drawn, so that what follows starts on a clean line.
    pub fn clear(&mut self) {
        if self.drawn.take().is_some() {
            let mut err = std::io::stderr();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_fills_in_proportion() {
        let bar = Bar::new("solving x");
        assert_eq!(
            bar.line(0, 10),
            format!("solving x [{}] 0/10", " ".repeat(30))
        );
        assert_eq!(
            bar.line(5, 10),
            format!("solving x [{}{}] 5/10", "#".repeat(15), " ".repeat(15))
        );
        assert_eq!(
            bar.line(10, 10),
            format!("solving x [{}] 10/10", "#".repeat(30))
        );
        assert_eq!(
            bar.line(0, 0),
            format!("solving x [{}] 0/0", "#".repeat(30))
        );
    }
}
