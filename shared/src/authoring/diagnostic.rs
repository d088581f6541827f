//! A problem in a scenario file, and the list of them a check collects.

use serde::{Deserialize, Serialize};

/// One problem in a scenario file: the file, the JSON path inside it, and a message an
/// author can act on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Diagnostic {
    pub file: String,
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.path, self.message)
    }
}

/// The problems one file has, as the checks find them.
pub(super) struct Diagnostics<'a> {
    pub(super) file: &'a str,
    pub(super) list: Vec<Diagnostic>,
}

impl Diagnostics<'_> {
    pub(super) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        let d = Diagnostic {
            file: self.file.to_string(),
            path: path.into(),
            message: message.into(),
        };
        if !self.list.contains(&d) {
            self.list.push(d);
        }
    }
}
