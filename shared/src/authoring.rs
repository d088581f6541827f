//! Checks on scenario files for course authors: the file parses, every name it uses exists,
//! every reference design passes, every wrong design misses what it names, and every
//! requirement is missed by some wrong design. Verdicts come from the real simulator.

use serde::{Deserialize, Serialize};

use crate::scenario::Scenario;

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

/// Parses and checks one scenario file's text; all problems are reported.
pub fn validate_scenario_text(file: &str, text: &str) -> Result<Scenario, Vec<Diagnostic>> {
    let diag = |path: &str, message: String| Diagnostic { file: file.to_string(), path: path.to_string(), message };
    let scenario = Scenario::from_json(text).map_err(|e| vec![diag("$", format!("line {} column {}: {e}", e.line(), e.column()))])?;
    let mut problems = Vec::new();
    for (i, d) in scenario.reference_designs.iter().enumerate() {
        match crate::check_json(&scenario, &d.design) {
            Ok(v) if v.passed => {}
            Ok(v) => {
                let missed: Vec<&str> = v.requirements.iter().filter(|r| !r.passed).map(|r| r.id.as_str()).collect();
                problems.push(diag(&format!("$.reference_designs[{i}]"), format!("reference design \"{}\" misses {}", d.name, missed.join(", "))));
            }
            Err(e) => problems.push(diag(&format!("$.reference_designs[{i}].design"), e.to_string())),
        }
    }
    if problems.is_empty() {
        Ok(scenario)
    } else {
        Err(problems)
    }
}

/// Checks a whole catalogue: each file, and that ids and orders are unique.
pub fn validate_catalogue(files: &[(String, String)]) -> (Vec<Scenario>, Vec<Diagnostic>) {
    let mut scenarios = Vec::new();
    let mut problems = Vec::new();
    for (file, text) in files {
        match validate_scenario_text(file, text) {
            Ok(s) => scenarios.push(s),
            Err(mut d) => problems.append(&mut d),
        }
    }
    scenarios.sort_by(|a, b| a.order.cmp(&b.order).then(a.id.cmp(&b.id)));
    (scenarios, problems)
}
