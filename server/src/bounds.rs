//! How much of a client's input the server repeats back, and keeps.
//!
//! Error bodies name what is wrong, often by quoting it (an unknown key, a value). A hostile
//! client can make those quotes as long as its body, and an `Idempotency-Key` stores the
//! answer: so every echo is clipped here, where an [`crate::error::AppError`] becomes a body,
//! whatever module (or `shared`) wrote the message. The answer kept for replay is capped too.

use serde_json::{json, Value as Json};
use shared::DesignError;

/// The most characters of one quoted piece of input in a message.
pub const MAX_ECHO_CHARS: usize = 64;
/// The most characters of a whole message.
pub const MAX_MESSAGE_CHARS: usize = 512;
/// The most characters of a JSON path.
pub const MAX_PATH_CHARS: usize = 160;
/// The most problems listed in `details`; the message still says how many there are.
pub const MAX_DETAILS: usize = 20;

/// `text` cut to `max` characters, the cut marked with "…".
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some(_) => {
            let end = text
                .char_indices()
                .nth(max.saturating_sub(1))
                .map_or(text.len(), |(i, _)| i);
            format!("{}…", &text[..end])
        }
    }
}

/// A message with each quoted piece ("…" or `…`) cut to [`MAX_ECHO_CHARS`], then the whole
/// cut to [`MAX_MESSAGE_CHARS`]: what the message explains after a long quote survives.
pub fn clip_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE_CHARS * 4));
    let mut rest = message;
    while let Some(open) = rest.find(['"', '`']) {
        let quote = &rest[open..open + 1];
        out.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
        match rest.find(quote) {
            Some(close) => {
                out.push_str(&clip(&rest[..close], MAX_ECHO_CHARS));
                out.push_str(quote);
                rest = &rest[close + 1..];
            }
            None => {
                out.push_str(&clip(rest, MAX_ECHO_CHARS));
                rest = "";
            }
        }
        if out.len() > MAX_MESSAGE_CHARS * 4 {
            break;
        }
    }
    out.push_str(rest);
    clip(&out, MAX_MESSAGE_CHARS)
}

/// A JSON path cut to [`MAX_PATH_CHARS`] (a path names a key the client chose).
pub fn clip_path(path: &str) -> String {
    clip(path, MAX_PATH_CHARS)
}

/// At most [`MAX_DETAILS`] problems, each clipped.
pub fn clip_details(details: &[DesignError]) -> Vec<DesignError> {
    details
        .iter()
        .take(MAX_DETAILS)
        .map(|d| DesignError {
            path: clip_path(&d.path),
            code: d.code,
            message: clip_message(&d.message),
        })
        .collect()
}

/// What is stored to replay an idempotent answer: the answer itself when its JSON has at most
/// `max_bytes`, otherwise a short form with the same status — an object keeps its short fields
/// (a submission's `verdict` and `design` are never kept), an error keeps its code and message
/// and drops its `details`. Either way a retry never records a second attempt.
pub fn answer_for_replay(body: &Json, max_bytes: usize) -> Json {
    let size = serde_json::to_vec(body).map_or(usize::MAX, |b| b.len());
    if size <= max_bytes {
        return body.clone();
    }
    match body {
        Json::Object(fields) if fields.contains_key("error") => {
            let error = &fields["error"];
            json!({"error": {
                "code": error.get("code").cloned().unwrap_or(Json::Null),
                "message": clip_message(error.get("message").and_then(Json::as_str).unwrap_or("")),
            }})
        }
        Json::Object(fields) => Json::Object(
            fields
                .iter()
                .filter(|(name, value)| {
                    name.as_str() != "verdict"
                        && name.as_str() != "design"
                        && serde_json::to_vec(value).is_ok_and(|b| b.len() <= 1024)
                })
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect(),
        ),
        _ => Json::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_quotes_are_cut_and_the_explanation_kept() {
        let key = "k".repeat(200_000);
        let message = format!("unknown field \"{key}\"; a design has only \"nodes\" and \"edges\"");
        let clipped = clip_message(&message);
        assert!(clipped.chars().count() <= MAX_MESSAGE_CHARS, "{clipped}");
        assert!(
            clipped.ends_with("a design has only \"nodes\" and \"edges\""),
            "{clipped}"
        );
        assert!(clipped.contains(&format!("\"{}…\"", "k".repeat(MAX_ECHO_CHARS - 1))));
        let serde = format!("unknown field `{key}`, expected `scenario`");
        assert!(clip_message(&serde).ends_with("expected `scenario`"));
        // Short messages are untouched; an unclosed quote is cut too.
        assert_eq!(clip_message("fine \"a\""), "fine \"a\"");
        assert!(clip_message(&format!("open \"{key}")).len() < 200);
        assert_eq!(clip("héllo", 3), "hé…");
        assert_eq!(clip("hé", 3), "hé");
    }

    #[test]
    fn a_large_answer_is_kept_short() {
        let big = json!({"id": "a", "score": 1, "verdict": {"x": "y".repeat(100_000)}});
        let kept = answer_for_replay(&big, 1024);
        assert_eq!(kept, json!({"id": "a", "score": 1}));
        let small = json!({"id": "a"});
        assert_eq!(answer_for_replay(&small, 1024), small);
        let error = json!({"error": {"code": "invalid_design", "message": "m", "details": ["z".repeat(5000)]}});
        assert_eq!(
            answer_for_replay(&error, 1024),
            json!({"error": {"code": "invalid_design", "message": "m"}})
        );
    }
}
