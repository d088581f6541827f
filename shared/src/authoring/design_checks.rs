//! The checks of a scenario's designs through the real simulator: the starting design fits
//! and does not already pass, every reference design passes, every wrong design misses what it
//! names, and every requirement is missed by some wrong design.

use std::collections::BTreeSet;

use serde_json::Value as Json;

use crate::check::{check_json, CheckError};
use crate::compiled::Compiled;
use crate::verdict::Verdict;

use super::diagnostic::Diagnostics;

// ---------------------------------------------------------------------------------------------
// Designs: the starting design fits the palette, reference designs pass, wrong designs miss
// ---------------------------------------------------------------------------------------------

/// Re-roots a design error's path (`$.nodes[1].options`) under the design's place in the file.
pub(super) fn under(prefix: &str, path: &str) -> String {
    format!("{prefix}{}", path.strip_prefix('$').unwrap_or(path))
}

pub(super) fn check_designs(c: &Compiled, names_ok: bool, out: &mut Diagnostics) {
    let s = c.scenario();
    if let Some(start) = &s.starting_design {
        if let Err(errors) = crate::design::validate_json(c, start) {
            for e in errors {
                out.push(
                    under("$.starting_design", &e.path),
                    format!(
                        "the starting design does not fit the scenario: {}",
                        e.message
                    ),
                );
            }
        }
    }
    if !names_ok {
        // The simulator would only repeat the problems above; designs are still checked
        // against the palette, which needs no simulation.
        let designs = s
            .reference_designs
            .iter()
            .enumerate()
            .map(|(i, d)| (format!("$.reference_designs[{i}].design"), &d.design))
            .chain(
                s.wrong_designs
                    .iter()
                    .enumerate()
                    .map(|(i, d)| (format!("$.wrong_designs[{i}].design"), &d.design)),
            );
        for (path, design) in designs {
            if let Err(errors) = crate::design::validate_json(c, design) {
                for e in errors {
                    out.push(under(&path, &e.path), e.message);
                }
            }
        }
        return;
    }
    if let Some(start) = &s.starting_design {
        // Only a design that fits the palette is simulated; the problems of one that does not
        // are reported above.
        if crate::design::validate_json(c, start).is_ok() {
            if let Some(v) = verdict(c, "$.starting_design", start, out) {
                if v.passed {
                    out.push("$.starting_design", "the starting design already passes every requirement, so the student has nothing to do; start from the broken pipeline the task describes");
                }
            }
        }
    }
    let mut missable: BTreeSet<&str> = BTreeSet::new();
    for (i, d) in s.reference_designs.iter().enumerate() {
        let path = format!("$.reference_designs[{i}]");
        let Some(verdict) = verdict(c, &format!("{path}.design"), &d.design, out) else {
            continue;
        };
        for r in verdict.requirements.iter().filter(|r| !r.passed) {
            let how = r.counterexample.as_ref().map_or_else(String::new, |c| {
                let when = if c.failures.is_empty() {
                    "even with no failure".to_string()
                } else {
                    format!("when {}", c.failures.join(", then "))
                };
                format!(": expected {}, got {} {when}", c.expected, c.actual)
            });
            out.push(path.clone(), format!("reference design \"{}\" misses requirement \"{}\"{how}; a reference design must pass everything, so fix the design or the requirement", d.name, r.id));
        }
    }
    // A wrong design that could not be checked says nothing yet about what it misses: its
    // own problems come first, and no "misses" complaint is made on its behalf.
    let mut unchecked: BTreeSet<&str> = BTreeSet::new();
    for (i, d) in s.wrong_designs.iter().enumerate() {
        let path = format!("$.wrong_designs[{i}]");
        let Some(verdict) = verdict(c, &format!("{path}.design"), &d.design, out) else {
            unchecked.extend(d.misses.iter().map(String::as_str));
            continue;
        };
        for (j, id) in d.misses.iter().enumerate() {
            match verdict.requirements.iter().find(|r| &r.id == id) {
                Some(r) if r.passed => out.push(
                    format!("{path}.misses[{j}]"),
                    format!(
                        "wrong design \"{}\" should miss \"{id}\" but passes it in all {} schedules explored; change the design so it misses it, or remove \"{id}\" from its misses",
                        d.name, verdict.schedules_explored
                    ),
                ),
                Some(_) => {
                    missable.insert(id.as_str());
                }
                None => {}
            }
        }
    }
    for (r, req) in s.requirements.iter().enumerate() {
        let named = s.wrong_designs.iter().any(|w| w.misses.contains(&req.id));
        if !named {
            out.push(
                format!("$.requirements[{r}]"),
                format!("no wrong design misses requirement \"{}\"; add a wrong design that names it in \"misses\", to prove a student can miss it", req.id),
            );
        } else if !missable.contains(req.id.as_str())
            && !unchecked.contains(req.id.as_str())
            && !out
                .list
                .iter()
                .any(|d| d.message.contains(&format!("should miss \"{}\"", req.id)))
        {
            out.push(
                format!("$.requirements[{r}]"),
                format!("no wrong design misses requirement \"{}\" when it is checked; make one of the designs that name it miss it", req.id),
            );
        }
    }
}

/// Checks one design with the real simulator; problems go to `out` under the design's path.
pub(super) fn verdict(
    s: &Compiled,
    path: &str,
    design: &Json,
    out: &mut Diagnostics,
) -> Option<Verdict> {
    match check_json(s, design) {
        Ok(v) => Some(v),
        Err(CheckError::Design(errors)) => {
            for e in errors {
                out.push(under(path, &e.path), e.message);
            }
            None
        }
        Err(CheckError::TooLarge { schedules, limit }) => {
            out.push(path.to_string(), format!("checking this design stopped after {schedules} schedules ({limit}); lower failures.bound, or use fewer messages or crash points"));
            None
        }
    }
}
