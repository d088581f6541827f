//! Parsing a scenario file: JSON, then the format, with every problem at its line, column and
//! JSON path in an author's words.

use serde::de::DeserializeOwned;
use serde_json::Value as Json;

use crate::scenario::{
    ExampleDesign, FailureSpec, JobDef, Palette, Requirement, RunDef, Scenario, SenderDef,
    StreamDef, TableDef, WrongDesign, MAX_BOUND,
};

use super::diagnostic::Diagnostics;
use super::json_position::{child_key, line_column, offset_of, Spans};
use super::points::bound_too_large;

// ---------------------------------------------------------------------------------------------
// Parsing: JSON, then the format, part by part so that every shape problem is reported
// ---------------------------------------------------------------------------------------------

pub(super) fn parse(text: &str, out: &mut Diagnostics) -> Option<Scenario> {
    if let Err(e) = serde_json::from_str::<Json>(text) {
        out.push(
            "$",
            format!(
                "the file is not valid JSON: {} (line {}, column {})",
                strip_position(&e),
                e.line(),
                e.column()
            ),
        );
        return None;
    }
    let spans = Spans::scan(text);
    match serde_json::from_str::<Scenario>(text) {
        Ok(s) => Some(s),
        Err(whole) => {
            let before = out.list.len();
            check_parts(text, &spans, out);
            if out.list.len() == before {
                // The part-by-part pass found nothing; report serde's own finding.
                report_serde(text, &spans, 0, &whole, out);
            }
            None
        }
    }
}

/// serde_json appends " at line L column C"; the diagnostic states the position itself.
pub(super) fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Reports a serde error found while reading `text[base..]`, with the JSON path of the place.
pub(super) fn report_serde(
    text: &str,
    spans: &Spans,
    base: usize,
    e: &serde_json::Error,
    out: &mut Diagnostics,
) {
    let slice = &text[base..];
    let mut offset = base + offset_of(slice, e.line(), e.column());
    let message = strip_position(e);
    let mut path = spans.path_at(offset);
    // serde reports an unknown field where it noticed it, which for a tagged object (a
    // requirement's check) is past the object's end: the field is the last one of that name
    // that starts before the reported place, and the author wants its line.
    if let Some(name) = message
        .strip_prefix("unknown field `")
        .and_then(|r| r.split('`').next())
    {
        match spans.last_key_before(name, offset) {
            Some(found) => {
                if let Some((start, _)) = spans.span(&found) {
                    offset = key_start(text, start);
                }
                path = found;
            }
            None => {
                // serde stopped right after the key: the key is the last of that name.
                path = child_key(&path, name);
                let quoted = format!("\"{name}\"");
                let end = (offset + quoted.len()).min(text.len());
                if let Some(k) = text.get(..end).and_then(|t| t.rfind(&quoted)) {
                    offset = k;
                }
            }
        }
    }
    let (line, column) = line_column(text, offset);
    let value = spans.span(&path).map(|(s, e)| &text[s..e]);
    let mut message = plain_words(&message, value);
    // A palette lists every option value as a string, a count such as dedupe_window too,
    // while a design gives a count as a number: say which this place takes.
    if path.starts_with("$.palette.") && message.starts_with("expected text in double quotes") {
        if let Some(v) = value.filter(|v| v.parse::<u64>().is_ok()) {
            message = format!("a palette lists each option value as text in double quotes: write \"{v}\" (a design gives it as a number, {v})");
        }
    }
    let advice = if message.starts_with("unknown field") {
        "; check the spelling against the format (docs/authoring.md, scenario.schema.json)"
    } else {
        ""
    };
    out.push(
        path,
        format!("{message}{advice} (line {line}, column {column})"),
    );
}

/// Where the key of the field whose value starts at `value` starts: back over the colon and
/// the quoted name. `value` itself when the text is not shaped so.
pub(super) fn key_start(text: &str, value: usize) -> usize {
    let b = text.as_bytes();
    let mut i = value;
    let skip_ws = |i: &mut usize| {
        while *i > 0 && b[*i - 1].is_ascii_whitespace() {
            *i -= 1;
        }
    };
    skip_ws(&mut i);
    if i == 0 || b[i - 1] != b':' {
        return value;
    }
    i -= 1;
    skip_ws(&mut i);
    if i == 0 || b[i - 1] != b'"' {
        return value;
    }
    i -= 1;
    match text[..i].rfind('"') {
        Some(open) => open,
        None => value,
    }
}

/// serde's words for a value of the wrong type, in an author's: "invalid type: string "2",
/// expected u32" becomes "expected a whole number, 0 or more, and found the text "2"; write
/// numbers without quotes". `value` is the JSON text of the value, when known.
pub(super) fn plain_words(message: &str, value: Option<&str>) -> String {
    // chrono's words for a date that does not exist.
    if matches!(
        message,
        "input is out of range"
            | "input contains invalid characters"
            | "premature end of input"
            | "input is not enough for unique date and time"
            | "trailing input"
    ) {
        let text = value.and_then(|v| serde_json::from_str::<String>(v).ok());
        return match text {
            Some(t) => match crate::value::why_not_a_date(&t) {
                Some(why) => format!("\"{t}\" is not a date: {why}"),
                None => {
                    format!("\"{t}\" is not a date written as YYYY-MM-DD, such as \"2026-01-10\"")
                }
            },
            None => {
                format!("{message}: expected a date written as YYYY-MM-DD, such as \"2026-01-10\"")
            }
        };
    }
    let Some((found, expected)) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.rsplit_once(", expected "))
    else {
        return message.to_string();
    };
    let expected_words = match expected {
        "u32" | "u64" | "u16" | "u8" | "usize" => "a whole number, 0 or more",
        "i32" | "i64" => "a whole number",
        "a string" => "text in double quotes",
        "a sequence" => "a list, [ … ]",
        "a boolean" => "true or false",
        e if e.starts_with("struct ")
            || e == "a map"
            || e.starts_with("internally tagged enum") =>
        {
            "an object, { … }"
        }
        e if e.starts_with("unit struct") => "an empty object, {}",
        _ => expected,
    };
    let unquote = |s: &str| s.trim_matches('`').to_string();
    let (found_words, hint) = if let Some(t) = found.strip_prefix("string ") {
        let inner: String = serde_json::from_str(t).unwrap_or_else(|_| t.to_string());
        let hint = if expected_words.starts_with("a whole number")
            && inner.trim().parse::<i64>().is_ok()
        {
            "; write numbers without quotes"
        } else {
            ""
        };
        (format!("the text {t}"), hint)
    } else if let Some(n) = found.strip_prefix("integer ") {
        let n = unquote(n);
        let hint = if expected == "u32" && n.starts_with('-') {
            ""
        } else if expected == "u32" {
            "; it must be at most 4294967295"
        } else {
            ""
        };
        (n, hint)
    } else if let Some(n) = found.strip_prefix("floating point ") {
        (
            unquote(n),
            if expected_words.starts_with("a whole number") {
                "; a count has no fraction"
            } else {
                ""
            },
        )
    } else if let Some(b) = found.strip_prefix("boolean ") {
        (unquote(b), "")
    } else {
        let words = match found {
            "map" => "an object",
            "sequence" => "a list",
            "null" => "null",
            "unit" => "null",
            other => other,
        };
        (words.to_string(), "")
    };
    format!("expected {expected_words}, and found {found_words}{hint}")
}

pub(super) const TOP_LEVEL: &[&str] = &[
    "$schema",
    "id",
    "order",
    "title",
    "task",
    "concepts",
    "tables",
    "streams",
    "senders",
    "job",
    "runs",
    "failures",
    "palette",
    "starting_design",
    "requirements",
    "reference_designs",
    "wrong_designs",
];
pub(super) const REQUIRED: &[&str] = &[
    "id",
    "order",
    "title",
    "task",
    "failures",
    "palette",
    "requirements",
    "reference_designs",
    "wrong_designs",
];

/// Reads each top-level field, and each element of each list, on its own, so that one
/// mistake does not hide the others.
pub(super) fn check_parts(text: &str, spans: &Spans, out: &mut Diagnostics) {
    let Ok(Json::Object(top)) = serde_json::from_str::<Json>(text) else {
        out.push(
            "$",
            "a scenario file is one JSON object, { \"id\": …, \"title\": …, … }",
        );
        return;
    };
    // A design saved into the scenarios folder: one message, not one per missing field.
    if top.contains_key("nodes") && !REQUIRED.iter().any(|k| top.contains_key(*k)) {
        out.push(
            "$",
            "this looks like a design (it has \"nodes\"), not a scenario; a design belongs inside a scenario (its starting_design, reference_designs or wrong_designs) or in a file of its own outside the scenarios folder, for `pipeline-builder check`",
        );
        return;
    }
    for key in top.keys() {
        if !TOP_LEVEL.contains(&key.as_str()) {
            out.push(
                child_key("$", key),
                format!(
                    "unknown field \"{key}\"; a scenario has the fields {}",
                    TOP_LEVEL.join(", ")
                ),
            );
        }
    }
    for key in REQUIRED {
        if !top.contains_key(*key) {
            out.push("$", format!("the field \"{key}\" is missing"));
        }
    }
    let part =
        |key: &str, out: &mut Diagnostics, read: &dyn Fn(&str) -> Result<(), serde_json::Error>| {
            let path = child_key("$", key);
            if let Some((start, end)) = spans.span(&path) {
                if let Err(e) = read(&text[start..end]) {
                    report_serde(text, spans, start, &e, out);
                }
            }
        };
    fn one<T: DeserializeOwned>(s: &str) -> Result<(), serde_json::Error> {
        serde_json::from_str::<T>(s).map(|_| ())
    }
    part("$schema", out, &one::<String>);
    part("id", out, &one::<String>);
    part("order", out, &one::<u32>);
    part("title", out, &one::<String>);
    part("task", out, &one::<String>);
    part("concepts", out, &one::<Vec<String>>);
    part("job", out, &one::<JobDef>);
    part("failures", out, &one::<FailureSpec>);
    // The format's maximum is part of the shape: said even when other parts do not read.
    if let Some(bound) = top
        .get("failures")
        .and_then(|f| f.get("bound"))
        .and_then(Json::as_u64)
        .filter(|&b| b > u64::from(MAX_BOUND))
    {
        out.push("$.failures.bound", bound_too_large(bound));
    }
    part("palette", out, &one::<Palette>);
    let list =
        |key: &str, out: &mut Diagnostics, read: &dyn Fn(&str) -> Result<(), serde_json::Error>| {
            let path = child_key("$", key);
            match top.get(key) {
                None => {}
                Some(Json::Array(items)) => {
                    for i in 0..items.len() {
                        if let Some((start, end)) = spans.span(&format!("{path}[{i}]")) {
                            if let Err(e) = read(&text[start..end]) {
                                report_serde(text, spans, start, &e, out);
                            }
                        }
                    }
                }
                Some(_) => out.push(path, format!("\"{key}\" must be a list")),
            }
        };
    list("tables", out, &one::<TableDef>);
    list("streams", out, &one::<StreamDef>);
    list("senders", out, &one::<SenderDef>);
    list("runs", out, &one::<RunDef>);
    list("requirements", out, &one::<Requirement>);
    list("reference_designs", out, &one::<ExampleDesign>);
    list("wrong_designs", out, &one::<WrongDesign>);
}
