//! A scenario file opened on the author page as it is now, valid or not: where each of its
//! problems sits in the text, and the scenario compiled when its parts fit together, so
//! that a design can be tried on it while its own designs, or its other checks, are wrong.

use serde::{Deserialize, Serialize};

use super::diagnostic::Diagnostic;
use super::json_position::{line_column, Spans};
use crate::compiled::Compiled;
use crate::scenario::Scenario;

/// A problem of a file with the line and column (1-based) of the value its path names, or
/// of the nearest value around it that the text has (a missing field is shown at the object
/// that lacks it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Located {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Each problem of `text` at its place in the text.
pub fn locate(text: &str, problems: &[Diagnostic]) -> Vec<Located> {
    let spans = Spans::scan(text);
    problems
        .iter()
        .map(|p| {
            let mut path = p.path.as_str();
            let offset = loop {
                if let Some((start, _)) = spans.span(path) {
                    break start;
                }
                match parent(path) {
                    Some(up) => path = up,
                    None => break 0,
                }
            };
            // A text that is not JSON has no value at the place: the parser's own line and
            // column, which the message quotes, say where it stopped.
            let (line, column) =
                quoted_position(&p.message).unwrap_or_else(|| line_column(text, offset));
            Located {
                path: p.path.clone(),
                line,
                column,
                message: p.message.clone(),
            }
        })
        .collect()
}

/// The "line 2, column 11" a JSON parser's message gives.
fn quoted_position(message: &str) -> Option<(usize, usize)> {
    let at = message.find("(line ")? + "(line ".len();
    let rest = &message[at..];
    let (line, rest) = rest.split_once(", column ")?;
    let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((line.parse().ok()?, column.parse().ok()?))
}

/// The path of the value that holds the value at `path`: `$.a.b[2]` → `$.a.b` → `$.a` → `$`.
fn parent(path: &str) -> Option<&str> {
    if path == "$" {
        return None;
    }
    let cut = if path.ends_with(']') {
        path.rfind('[')
    } else {
        path.rfind('.')
    };
    cut.filter(|&i| i > 0).map(|i| &path[..i])
}

/// The scenario of `text` compiled, if its parts fit together (its tables, streams, jobs,
/// runs, failures and requirements), whatever its reference, wrong and starting designs say:
/// a design can then be checked on it. Otherwise, why not, in an author's words.
pub fn tryable(text: &str) -> Result<Compiled, String> {
    let scenario = Scenario::from_json(text).map_err(|e| {
        format!("the file does not read as a scenario yet ({e}), so no design can be tried on it")
    })?;
    Compiled::new(scenario).map_err(|errors| {
        let first = errors
            .first()
            .map(|e| format!("{}: {}", e.path, e.message))
            .unwrap_or_default();
        format!("the scenario's parts do not fit together yet ({first}), so no design can be tried on it")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_field_is_shown_at_the_object_that_lacks_it() {
        let text = "{\n  \"a\": {\n    \"b\": [1, 2]\n  }\n}";
        let problem = |path: &str| Diagnostic {
            file: "f.json".into(),
            path: path.into(),
            message: "m".into(),
        };
        let found = locate(
            text,
            &[problem("$.a.b[1]"), problem("$.a.c"), problem("$.z")],
        );
        assert_eq!((found[0].line, found[0].column), (3, 14));
        assert_eq!((found[1].line, found[1].column), (2, 8));
        assert_eq!((found[2].line, found[2].column), (1, 1));
        let unparsed = Diagnostic {
            message: "the file is not valid JSON: EOF while parsing a value (line 2, column 11)"
                .into(),
            ..problem("$")
        };
        let found = locate("{\n  \"a\": ", &[unparsed]);
        assert_eq!((found[0].line, found[0].column), (2, 11));
        assert_eq!(parent("$"), None);
        assert_eq!(parent("$.a.b[1]"), Some("$.a.b"));
    }

    #[test]
    fn a_file_that_does_not_parse_cannot_be_tried_and_says_why() {
        let why = tryable("{ \"id\": ").unwrap_err();
        assert!(why.contains("does not read as a scenario"), "{why}");
    }
}
