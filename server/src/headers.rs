//! The security headers every answer carries, pages and errors alike.
//!
//! The Content-Security-Policy allows the app and nothing else: its own scripts (and the
//! WebAssembly they compile), its own styles, images and API, no frames, no foreign forms.
//! Each page's one inline bootstrap script is allowed by its sha256, computed at start-up from
//! the pages that are served (`index.html`, `staff.html`), never by `'unsafe-inline'`.

use std::path::Path;

use axum::http::{HeaderName, HeaderValue};
use base64::Engine;
use sha2::{Digest, Sha256};

/// The policy without inline scripts; `script-src` gains a `'sha256-…'` per inline script.
const POLICY: [(&str, &str); 9] = [
    ("default-src", "'self'"),
    ("script-src", "'self' 'wasm-unsafe-eval'"),
    ("style-src", "'self' 'unsafe-inline'"),
    ("img-src", "'self' data:"),
    ("connect-src", "'self'"),
    ("frame-ancestors", "'none'"),
    ("base-uri", "'self'"),
    ("form-action", "'self'"),
    ("object-src", "'none'"),
];

/// The Content-Security-Policy for an app served from `static_dir` (none: the API only).
/// The inline scripts of the pages in `static_dir` (`index.html`, `staff.html`) and of the
/// source pages beside the folder (`web/index.html` for `web/dist`) are allowed by hash.
pub fn content_security_policy(static_dir: Option<&Path>) -> String {
    let mut hashes: Vec<String> = Vec::new();
    if let Some(dir) = static_dir {
        let pages = crate::embedded::PAGES
            .iter()
            .flat_map(|name| [Some(dir.join(name)), dir.parent().map(|p| p.join(name))]);
        for page in pages.flatten() {
            if let Ok(html) = std::fs::read_to_string(&page) {
                for hash in inline_script_hashes(&html) {
                    if !hashes.contains(&hash) {
                        hashes.push(hash);
                    }
                }
            }
        }
    }
    policy(&hashes)
}

/// The Content-Security-Policy for an app whose pages are `pages` (the app built into the
/// binary; none: the API only).
pub fn content_security_policy_of(pages: &[&str]) -> String {
    let mut hashes: Vec<String> = Vec::new();
    for hash in pages.iter().flat_map(|page| inline_script_hashes(page)) {
        if !hashes.contains(&hash) {
            hashes.push(hash);
        }
    }
    policy(&hashes)
}

fn policy(hashes: &[String]) -> String {
    POLICY
        .iter()
        .map(|(directive, sources)| {
            if *directive == "script-src" && !hashes.is_empty() {
                let allowed: Vec<String> = hashes.iter().map(|h| format!("'{h}'")).collect();
                format!("{directive} {sources} {}", allowed.join(" "))
            } else {
                format!("{directive} {sources}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `sha256-…` of the text of every inline `<script>` (one without `src`) in `html`, as a
/// browser hashes it for a CSP: the exact characters between the tags.
pub fn inline_script_hashes(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut hashes = Vec::new();
    let mut at = 0;
    // Bounded by the length of the page: every turn moves past a closing tag.
    while let Some(open) = lower[at..].find("<script").map(|i| at + i) {
        let Some(tag_end) = lower[open..].find('>').map(|i| open + i) else {
            break;
        };
        let Some(close) = lower[tag_end..].find("</script").map(|i| tag_end + i) else {
            break;
        };
        let attributes = &lower[open + "<script".len()..tag_end];
        if !has_src(attributes) {
            let text = &html[tag_end + 1..close];
            let digest = Sha256::digest(text.as_bytes());
            hashes.push(format!(
                "sha256-{}",
                base64::engine::general_purpose::STANDARD.encode(digest)
            ));
        }
        at = close + "</script".len();
    }
    hashes
}

fn has_src(attributes: &str) -> bool {
    attributes
        .split(|c: char| c.is_whitespace())
        .any(|a| a == "src" || a.starts_with("src="))
}

/// Every header and its value, the policy included.
pub fn security_headers(csp: &str) -> Vec<(HeaderName, HeaderValue)> {
    let mut headers = vec![
        (
            HeaderName::from_static("x-content-type-options"),
            HeaderValue::from_static("nosniff"),
        ),
        (
            HeaderName::from_static("x-frame-options"),
            HeaderValue::from_static("DENY"),
        ),
        (
            HeaderName::from_static("referrer-policy"),
            HeaderValue::from_static("no-referrer"),
        ),
    ];
    match HeaderValue::from_str(csp) {
        Ok(value) => headers.push((HeaderName::from_static("content-security-policy"), value)),
        // The policy is built from constants and base64 text, so this cannot happen; were it
        // to, the strictest policy is sent rather than none.
        Err(_) => headers.push((
            HeaderName::from_static("content-security-policy"),
            HeaderValue::from_static("default-src 'none'"),
        )),
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_scripts_are_hashed_and_scripts_with_src_are_not() {
        let html = "<head><script type=\"module\" src=\"/web.js\"></script></head>\
                    <body><SCRIPT type=\"module\">\n  init();\n</SCRIPT><script>a()</script></body>";
        let hashes = inline_script_hashes(html);
        let expected = |text: &str| {
            format!(
                "sha256-{}",
                base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes()))
            )
        };
        assert_eq!(hashes, vec![expected("\n  init();\n"), expected("a()")]);
    }

    #[test]
    fn without_an_app_the_policy_is_the_fixed_one() {
        assert_eq!(
            content_security_policy(None),
            "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
             connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"
        );
    }
}
