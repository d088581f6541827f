//! Where each value of a JSON text sits, by JSON path.
//!
//! serde_json reports a problem by line and column; an author needs the JSON path of the
//! value it is in (`$.requirements[2].check.table`). This scanner records the span of every
//! value of a scenario file, without building the values, so that a position can be turned
//! into a path and a path into the text to read on its own. It is lenient: it reads what it
//! can of a text that is not valid JSON, and never reads past the text's end.

use serde_json::Value as Json;

/// Where each value of a JSON text starts and ends, by JSON path.
pub(super) struct Spans {
    /// (path, start byte, end byte), children before their parents.
    entries: Vec<(String, usize, usize)>,
}

impl Spans {
    /// The most a scenario nests; deeper values are not given paths of their own.
    const MAX_DEPTH: usize = 64;

    /// Scans a JSON text; a text that is not valid JSON gets the spans of what it has.
    pub(super) fn scan(text: &str) -> Spans {
        let mut spans = Spans {
            entries: Vec::new(),
        };
        let mut i = 0;
        spans.value(text.as_bytes(), &mut i, "$".to_string(), 0);
        spans
    }

    /// Where the value at `path` starts and ends.
    pub(super) fn span(&self, path: &str) -> Option<(usize, usize)> {
        self.entries
            .iter()
            .find(|(p, _, _)| p == path)
            .map(|&(_, s, e)| (s, e))
    }

    /// The path of the last field called `name` that starts at or before `offset`.
    pub(super) fn last_key_before(&self, name: &str, offset: usize) -> Option<String> {
        let suffix = child_key("", name);
        self.entries
            .iter()
            .filter(|(p, s, _)| *s <= offset && p.ends_with(&suffix))
            .max_by_key(|(_, s, _)| *s)
            .map(|(p, _, _)| p.clone())
    }

    /// The innermost value that contains `offset`.
    pub(super) fn path_at(&self, offset: usize) -> String {
        self.entries
            .iter()
            .filter(|(_, s, e)| *s <= offset && offset <= *e)
            .min_by_key(|(_, s, e)| e - s)
            .map_or_else(|| "$".to_string(), |(p, _, _)| p.clone())
    }

    fn value(&mut self, b: &[u8], i: &mut usize, path: String, depth: usize) {
        skip_ws(b, i);
        let start = *i;
        match b.get(*i) {
            Some(b'{') => {
                *i += 1;
                loop {
                    skip_ws(b, i);
                    match b.get(*i) {
                        Some(b'}') => {
                            *i += 1;
                            break;
                        }
                        Some(b',') => {
                            *i += 1;
                            continue;
                        }
                        Some(b'"') => {}
                        _ => break,
                    }
                    let key_start = *i;
                    skip_string(b, i);
                    let key: String = std::str::from_utf8(&b[key_start..*i])
                        .ok()
                        .and_then(|k| serde_json::from_str(k).ok())
                        .unwrap_or_default();
                    skip_ws(b, i);
                    if b.get(*i) == Some(&b':') {
                        *i += 1;
                    }
                    let child = child_key(&path, &key);
                    if depth < Self::MAX_DEPTH {
                        self.value(b, i, child, depth + 1);
                    } else {
                        skip_value(b, i);
                    }
                }
            }
            Some(b'[') => {
                *i += 1;
                let mut index = 0;
                loop {
                    skip_ws(b, i);
                    match b.get(*i) {
                        Some(b']') => {
                            *i += 1;
                            break;
                        }
                        Some(b',') => {
                            *i += 1;
                            continue;
                        }
                        None => break,
                        _ => {}
                    }
                    if depth < Self::MAX_DEPTH {
                        self.value(b, i, format!("{path}[{index}]"), depth + 1);
                    } else {
                        skip_value(b, i);
                    }
                    index += 1;
                }
            }
            Some(b'"') => skip_string(b, i),
            Some(_) => skip_scalar(b, i),
            None => {}
        }
        self.entries.push((path, start, *i));
    }
}

fn skip_ws(b: &[u8], i: &mut usize) {
    while matches!(b.get(*i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        *i += 1;
    }
}

fn skip_string(b: &[u8], i: &mut usize) {
    *i += 1;
    while let Some(&c) = b.get(*i) {
        *i += 1;
        match c {
            b'\\' => *i += 1,
            b'"' => return,
            _ => {}
        }
    }
}

fn skip_scalar(b: &[u8], i: &mut usize) {
    while !matches!(
        b.get(*i),
        None | Some(b',' | b']' | b'}' | b' ' | b'\t' | b'\r' | b'\n')
    ) {
        *i += 1;
    }
}

/// Skips a whole value without recording paths (past the depth limit), bounded by the text.
fn skip_value(b: &[u8], i: &mut usize) {
    skip_ws(b, i);
    let mut depth = 0usize;
    while let Some(&c) = b.get(*i) {
        match c {
            b'"' => {
                skip_string(b, i);
                if depth == 0 {
                    return;
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth == 0 {
                    return;
                }
                depth -= 1;
                if depth == 0 {
                    *i += 1;
                    return;
                }
            }
            b',' if depth == 0 => return,
            _ => {}
        }
        *i += 1;
    }
}

/// The JSON path of a field of `parent`: `$.name` for a plain name, `$["a b"]` otherwise.
pub(super) fn child_key(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.chars().enumerate().all(|(i, c)| {
            c == '_' || c == '$' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
        });
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}[{}]", Json::String(key.to_string()))
    }
}

/// The byte offset of a 1-based line and column, as serde_json reports them, clamped to the
/// text.
pub(super) fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line.max(1) {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => break,
        }
    }
    (start + column.saturating_sub(1)).min(text.len().saturating_sub(1))
}

/// The 1-based line and column of a byte offset, for a message an author reads in an editor.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    (line, offset - line_start + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_give_the_innermost_path() {
        let text = r#"{"a": [1, {"b": "x"}], "c d": 2}"#;
        let spans = Spans::scan(text);
        assert_eq!(spans.path_at(text.find("\"x\"").unwrap()), "$.a[1].b");
        assert_eq!(spans.path_at(text.find('2').unwrap()), "$[\"c d\"]");
        assert_eq!(spans.span("$.a[0]"), Some((7, 8)));
    }
}
