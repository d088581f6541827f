//! The documentation says what the server does: every error code is listed in
//! docs/errors.md, and nothing else is.

use std::collections::BTreeSet;

use server::error::ErrorCode;

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
