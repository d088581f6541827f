//! What the solver says about a scenario as a lesson: an error when no design the palette
//! allows passes (naming the closest), and warnings when a requirement is never missed by any
//! design, when a failure kind changes no design's verdict, and when every wrong design
//! misses what it names with no failure at all.
//!
//! These checks cost a check of every design the palette allows, so the `scenarios validate`
//! command runs them and the server's start-up does not.

use crate::compiled::Compiled;
use crate::design::validate_json;
use crate::solve::{solve, Solution, SolveError};

use super::diagnostic::{Diagnostic, Diagnostics};
use super::parse;
use super::scenario_checks::check_names;

/// How many of the closest designs the error names.
const CLOSEST_NAMED_MAX: usize = 3;

/// What solving one scenario file found.
#[derive(Clone, Debug, Default)]
pub struct SolveFindings {
    /// Problems that refuse the file: no design passes.
    pub problems: Vec<Diagnostic>,
    /// Warnings (their message starts with "warning: ").
    pub warnings: Vec<Diagnostic>,
    /// The solve itself, when it ran.
    pub solution: Option<Solution>,
}

/// Solves a scenario file whose names and format are sound (whatever its designs say) and
/// reports what the solve shows. A file that does not compile, or whose names are wrong,
/// has nothing to solve: its problems are the validator's to report.
pub fn solve_findings(file: &str, text: &str) -> SolveFindings {
    let mut out = Diagnostics {
        file,
        list: Vec::new(),
    };
    let mut found = SolveFindings::default();
    let Some(scenario) = parse::parse(text, &mut out) else {
        return found;
    };
    check_names(&scenario, &mut out);
    if !out.list.is_empty() {
        return found;
    }
    let Ok(compiled) = Compiled::new(scenario) else {
        return found;
    };
    let warn = |path: String, message: String| Diagnostic {
        file: file.to_string(),
        path,
        message: format!("warning: {message}"),
    };
    let solution = match solve(&compiled) {
        Ok(s) => s,
        Err(e @ SolveError::TooManyDesigns { .. }) => {
            found.warnings.push(warn(
                "$.palette".into(),
                format!("{e}, so the palette was not solved"),
            ));
            return found;
        }
        Err(e) => {
            found.warnings.push(warn(
                "$.palette".into(),
                format!("the palette could not be solved: {e}"),
            ));
            return found;
        }
    };
    if let Some(problem) = no_passing_design(file, &solution) {
        found.problems.push(problem);
    }
    let designs = solution.designs.len();
    for (i, r) in compiled.scenario().requirements.iter().enumerate() {
        if solution.never_missed().iter().any(|t| t.id == r.id) && designs > 0 {
            found.warnings.push(warn(
                format!("$.requirements[{i}]"),
                format!("no design the palette allows misses requirement \"{}\": all {designs} pass it, so it tests nothing a student can get wrong here; offer a choice that misses it, or remove it", r.id),
            ));
        }
    }
    for kind in solution.decorative_failures() {
        found.warnings.push(warn(
            format!("$.failures.{kind}"),
            format!("without {kind}, each of the {designs} designs the palette allows misses the same requirements as with it, so {kind} changes no verdict here; add a requirement it breaks, or remove it"),
        ));
    }
    if let Some(w) = misses_without_failures(&compiled, &solution) {
        found.warnings.push(warn("$.wrong_designs".into(), w));
    }
    found.solution = Some(solution);
    found
}

/// The error when nothing passes, with the closest designs and what each still misses.
fn no_passing_design(file: &str, solution: &Solution) -> Option<Diagnostic> {
    if !solution.passing().is_empty() || solution.designs.is_empty() {
        return None;
    }
    let closest = solution.closest();
    let named: Vec<String> = closest
        .iter()
        .take(CLOSEST_NAMED_MAX)
        .map(|d| {
            let ids: Vec<&str> = d.misses.iter().map(|m| m.requirement.as_str()).collect();
            format!("{} (misses {})", solution.describe(d), ids.join(", "))
        })
        .collect();
    let more = closest.len().saturating_sub(CLOSEST_NAMED_MAX);
    let more = if more > 0 {
        format!(", and {more} more as close")
    } else {
        String::new()
    };
    Some(Diagnostic {
        file: file.to_string(),
        path: "$.palette".into(),
        message: format!(
            "no design the palette allows passes every requirement ({} checked); the closest: {}{more}. Offer the option values a passing design needs, or change the requirements it cannot meet",
            match solution.designs.len() {
                1 => "1 design".to_string(),
                n => format!("{n} designs"),
            },
            named.join("; ")
        ),
    })
}

/// The warning when every wrong design misses each requirement it names in a run with no
/// failure: the failures are then not what the wrong designs show.
fn misses_without_failures(compiled: &Compiled, solution: &Solution) -> Option<String> {
    let s = compiled.scenario();
    if s.wrong_designs.is_empty() || solution.failures.is_empty() {
        return None;
    }
    for wrong in &s.wrong_designs {
        let json = serde_json::to_value(&wrong.design).ok()?;
        let valid = validate_json(compiled, &json).ok()?;
        let solved = solution.find(&valid)?;
        let with_failure = wrong.misses.iter().any(|id| {
            solved
                .misses
                .iter()
                .any(|m| &m.requirement == id && m.failures > 0)
        });
        let misses_named = wrong
            .misses
            .iter()
            .all(|id| solved.misses.iter().any(|m| &m.requirement == id));
        if with_failure || !misses_named {
            return None;
        }
    }
    Some("every wrong design misses what it names even in a run with no failure, so none shows what the failures do; add a wrong design that passes a run with no failure and misses under one".into())
}
