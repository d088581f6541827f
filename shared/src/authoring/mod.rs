//! Checks on scenario files for course authors: the file parses and fits the format, every
//! name it uses exists, every reference design passes, every wrong design misses what it
//! names, and every requirement is missed by some wrong design. Verdicts come from the real
//! simulator, so a scenario that validates is one the course can ship.
//!
//! This module reads no files: callers (the server's start-up, the `scenarios validate`
//! command, tests) read them and pass the text. Every problem is reported, not the first
//! only, each with the file, a JSON path such as `$.requirements[2].check.table`, and a
//! message an author can act on.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use crate::compiled::Compiled;
use crate::scenario::Scenario;

mod diagnostic;
mod json_position;
mod opened;

mod parse;
mod points;
#[cfg(feature = "schema")]
mod schema;

mod scenario_checks;

mod design_checks;

mod solve_checks;

pub use crate::scenario::{MAX_ATTEMPTS, MAX_BOUND};
use design_checks::check_designs;
pub use diagnostic::Diagnostic;
use diagnostic::Diagnostics;
use json_position::Spans;
pub use opened::{locate, tryable, Located};
pub use points::{bound_finding, failure_points, FailurePoints, Severity};
use scenario_checks::{check_names, is_slug};
#[cfg(feature = "schema")]
pub use schema::schema_json;
pub use solve_checks::{solve_findings, SolveFindings};

/// The warnings on a scenario that validated: things that do not stop it, but that an author
/// would want to change.
pub fn warnings(file: &str, s: &Scenario) -> Vec<Diagnostic> {
    match bound_finding(s) {
        Some((Severity::Warning, message)) => vec![Diagnostic {
            file: file.to_string(),
            path: "$.failures.bound".into(),
            message: format!("warning: {message}"),
        }],
        _ => Vec::new(),
    }
}

/// What checking a catalogue found.
#[derive(Clone, Debug, Default)]
pub struct CatalogueReport {
    /// The scenarios that validated, compiled, in course order.
    pub scenarios: Vec<Compiled>,
    /// The file of each scenario in `scenarios`, in the same order.
    pub files: Vec<String>,
    /// Every problem; the catalogue is refused when there is one.
    pub problems: Vec<Diagnostic>,
    /// Warnings on scenarios that validated (their message starts with "warning: ").
    pub warnings: Vec<Diagnostic>,
}

/// Whether `id` can name a scenario: lowercase letters, digits and dashes, neither first nor
/// last a dash (it is used in URLs).
pub fn is_valid_id(id: &str) -> bool {
    is_slug(id)
}

/// A small scenario that validates, for an author to change: three paid orders on a stream,
/// one crash, three requirements, one reference design and two wrong ones.
pub fn template(id: &str, order: u32) -> String {
    TEMPLATE
        .replace(
            "\"id\": \"new-scenario\"",
            &format!("\"id\": {}", Json::String(id.into())),
        )
        .replace("\"order\": 1,", &format!("\"order\": {order},"))
}

const TEMPLATE: &str = include_str!("template.json");

/// A copy of a scenario file's text with a new id, order and title, and everything else as
/// written, formatting included. `None` when the text has no such top-level fields.
pub fn renamed_copy(text: &str, id: &str, order: u32, title: &str) -> Option<String> {
    let spans = Spans::scan(text);
    let mut edits = [
        (spans.span("$.id")?, Json::String(id.into()).to_string()),
        (spans.span("$.order")?, order.to_string()),
        (
            spans.span("$.title")?,
            Json::String(title.into()).to_string(),
        ),
    ];
    edits.sort_by_key(|((start, _), _)| std::cmp::Reverse(*start));
    let mut out = text.to_string();
    for ((start, end), value) in edits {
        out.replace_range(start..end, &value);
    }
    Some(out)
}

/// Parses and checks one scenario file's text; all problems are reported. A scenario that
/// passes every check comes back compiled, as the catalogue keeps it.
pub fn validate_scenario_text(file: &str, text: &str) -> Result<Compiled, Vec<Diagnostic>> {
    let mut out = Diagnostics {
        file,
        list: Vec::new(),
    };
    let Some(scenario) = parse::parse(text, &mut out) else {
        return Err(out.list);
    };
    let names_ok = {
        let before = out.list.len();
        check_names(&scenario, &mut out);
        out.list.len() == before
    };
    let compiled = match Compiled::new(scenario) {
        Ok(compiled) => compiled,
        Err(errors) => {
            // The names' checks say most of this in more words; what they missed is added.
            for e in errors {
                if !out.list.iter().any(|d| d.path == e.path) {
                    out.push(e.path, e.message);
                }
            }
            return Err(out.list);
        }
    };
    check_designs(&compiled, names_ok, &mut out);
    if out.list.is_empty() {
        Ok(compiled)
    } else {
        Err(out.list)
    }
}

/// The problems of one scenario file found without simulating anything: JSON, the format,
/// names, failures and palette. Empty when only the simulator can say more.
pub fn problems_without_simulating(file: &str, text: &str) -> Vec<Diagnostic> {
    let mut out = Diagnostics {
        file,
        list: Vec::new(),
    };
    if let Some(scenario) = parse::parse(text, &mut out) {
        check_names(&scenario, &mut out);
    }
    out.list
}

/// Checks a whole catalogue: each file, and that ids and orders are unique across files.
/// Returns the scenarios that validated, in course order, and every problem found.
pub fn validate_catalogue(files: &[(String, String)]) -> (Vec<Compiled>, Vec<Diagnostic>) {
    let report = check_catalogue(files);
    (report.scenarios, report.problems)
}

/// As [`validate_catalogue`], with the warnings on the scenarios that validated.
///
/// When two files share an id or an order, each is told about the other: which of them is
/// the new one is the author's to say, not the files' order.
pub fn check_catalogue(files: &[(String, String)]) -> CatalogueReport {
    let mut report = CatalogueReport::default();
    // Ids and orders are read from the raw JSON, so that a clash is reported even when the
    // file has other problems.
    let mut ids: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut orders: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, (_, text)) in files.iter().enumerate() {
        if let Ok(Json::Object(raw)) = serde_json::from_str::<Json>(text) {
            if let Some(Json::String(id)) = raw.get("id") {
                ids.entry(id.clone()).or_default().push(i);
            }
            if let Some(order) = raw.get("order").and_then(Json::as_u64) {
                orders.entry(order).or_default().push(i);
            }
        }
    }
    let others = |same: &[usize], i: usize| {
        same.iter()
            .filter(|&&j| j != i)
            .map(|&j| files[j].0.as_str())
            .collect::<Vec<_>>()
            .join(" and ")
    };
    let mut clash = vec![false; files.len()];
    let mut clashes: Vec<Vec<Diagnostic>> = vec![Vec::new(); files.len()];
    for (id, same) in ids.iter().filter(|(_, same)| same.len() > 1) {
        for &i in same {
            clash[i] = true;
            clashes[i].push(Diagnostic {
                file: files[i].0.clone(),
                path: "$.id".into(),
                message: format!("the id \"{id}\" is also used by {}; ids must be unique across the catalogue, because URLs and graders name scenarios by id: give the new scenario its own", others(same, i)),
            });
        }
    }
    for (order, same) in orders.iter().filter(|(_, same)| same.len() > 1) {
        for &i in same {
            clashes[i].push(Diagnostic {
                file: files[i].0.clone(),
                path: "$.order".into(),
                message: format!("order {order} is also taken by {}; give each scenario its own place in the course", others(same, i)),
            });
        }
    }
    for (i, (file, text)) in files.iter().enumerate() {
        report.problems.append(&mut clashes[i]);
        match validate_scenario_text(file, text) {
            Ok(s) if !clash[i] => {
                report.warnings.extend(warnings(file, s.scenario()));
                report.scenarios.push(s);
                report.files.push(file.clone());
            }
            Ok(_) => {}
            Err(mut d) => report.problems.append(&mut d),
        }
    }
    let mut validated: Vec<(Compiled, String)> = std::mem::take(&mut report.scenarios)
        .into_iter()
        .zip(std::mem::take(&mut report.files))
        .collect();
    validated.sort_by(|(a, _), (b, _)| {
        let (a, b) = (a.scenario(), b.scenario());
        a.order.cmp(&b.order).then(a.id.cmp(&b.id))
    });
    (report.scenarios, report.files) = validated.into_iter().unzip();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_field_is_named_in_the_path() {
        let text = "{\n  \"id\": \"x\",\n  \"order\": 1,\n  \"title\": \"t\",\n  \"task\": \"t\",\n  \"failures\": {\"bound\": 1, \"jobcrash\": {}},\n  \"palette\": {},\n  \"requirements\": [],\n  \"reference_designs\": [],\n  \"wrong_designs\": []\n}";
        let errors = validate_scenario_text("f.json", text).unwrap_err();
        assert!(
            errors
                .iter()
                .any(|d| d.path == "$.failures.jobcrash" && d.message.contains("line 6")),
            "{errors:?}"
        );
    }
}
