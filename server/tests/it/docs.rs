//! The documentation says what the server does: every error code is listed in
//! docs/errors.md, and nothing else is.

use std::collections::BTreeSet;

use server::error::{CodeStatus, ErrorCode};

#[test]
fn docs_errors_lists_exactly_the_error_codes() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/errors.md");
    let text = std::fs::read_to_string(path).expect("docs/errors.md exists");
    let documented: BTreeSet<String> = text
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_string)
        .collect();
    let answered: BTreeSet<String> = ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect();
    let missing: Vec<&String> = answered.difference(&documented).collect();
    let unknown: Vec<&String> = documented.difference(&answered).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/errors.md is out of step with ErrorCode: not documented {missing:?}, documented but not a code {unknown:?}"
    );
}

#[test]
fn every_error_code_is_answered_with_the_status_docs_errors_lists() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/errors.md");
    let text = std::fs::read_to_string(path).expect("docs/errors.md exists");
    let documented: std::collections::BTreeMap<String, u16> = text
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| {
            let (code, rest) = rest.split_once('`')?;
            let status = rest.trim_start_matches(" |").split('|').next()?.trim();
            Some((code.to_string(), status.parse().ok()?))
        })
        .collect();
    let wrong: Vec<String> = ErrorCode::ALL
        .iter()
        .filter(|code| documented.get(code.as_str()) != Some(&code.status().as_u16()))
        .map(|code| {
            format!(
                "{code}: answered {}, documented {:?}",
                code.status().as_u16(),
                documented.get(code.as_str())
            )
        })
        .collect();
    assert_eq!(documented.len(), ErrorCode::ALL.len(), "{documented:?}");
    assert!(wrong.is_empty(), "{wrong:?}");
}
