//! A solve's summary in an author's words, as `scenarios solve` and `validate --verbose`
//! print it.

use std::fmt::Write;

use serde_json::Value as Json;

use super::{Solution, SolvedDesign};

/// How many designs a list in the summary shows before it says how many more there are.
const LISTED_MAX: usize = 5;

/// "1 design", "3 designs".
fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

impl Solution {
    /// One design in a line: its number and the options that tell it from the others.
    pub fn describe(&self, design: &SolvedDesign) -> String {
        let mut parts = Vec::new();
        for name in &self.varying {
            let Some((node, option)) = name.rsplit_once('.') else {
                continue;
            };
            let Some(n) = design.design.nodes.iter().find(|n| n.id == node) else {
                continue;
            };
            if option == "writes" {
                let to = design.design.edges.iter().find(|e| e.from == node);
                if let Some(e) = to {
                    parts.push(format!("{node} writes {}", e.to));
                }
                continue;
            }
            if let Some(value) = n.options.get(option) {
                parts.push(format!("{node}.{option} = {}", show(value)));
            }
        }
        let what = if parts.is_empty() {
            "the only design the palette allows".to_string()
        } else {
            parts.join(", ")
        };
        format!("#{}: {what}", design.number)
    }

    /// What the solve found, in lines an author reads.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let designs = self.designs.len() as u64;
        let passing = self.passing();
        let _ = write!(
            out,
            "{}: {} the palette allows, {} {}; {} explored in all",
            self.scenario,
            count(designs, "design", "designs"),
            passing.len(),
            if passing.len() == 1 { "passes" } else { "pass" },
            count(self.schedules_explored, "schedule", "schedules"),
        );
        if self.refused > 0 {
            let _ = write!(
                out,
                "\n  {} the wiring rules refuse",
                count(self.refused, "more drawing", "more drawings")
            );
            if let Some(reason) = &self.refusal {
                let _ = write!(out, " (for example: {reason})");
            }
        }
        if passing.is_empty() {
            let closest = self.closest();
            if let Some(first) = closest.first() {
                let _ = write!(
                    out,
                    "\nNo design passes. The closest ({} each still misses):",
                    count(first.misses.len() as u64, "requirement", "requirements")
                );
                self.list(&mut out, &closest, true);
            } else {
                out.push_str("\nNo design passes: the wiring rules refuse every drawing.");
            }
        } else {
            out.push_str("\nPassing designs, simplest first:");
            self.list(&mut out, &passing, false);
        }
        self.requirements_part(&mut out, designs);
        out
    }

    fn list(&self, out: &mut String, designs: &[&SolvedDesign], misses: bool) {
        for d in designs.iter().take(LISTED_MAX) {
            let _ = write!(out, "\n  {}", self.describe(d));
            if misses {
                let ids: Vec<&str> = d.misses.iter().map(|m| m.requirement.as_str()).collect();
                let _ = write!(out, "\n      misses {}", ids.join(", "));
            }
        }
        if designs.len() > LISTED_MAX {
            let _ = write!(
                out,
                "\n  and {} more",
                count((designs.len() - LISTED_MAX) as u64, "design", "designs")
            );
        }
    }

    fn requirements_part(&self, out: &mut String, designs: u64) {
        out.push_str("\nDesigns that miss each requirement:");
        let width = self
            .requirements
            .iter()
            .map(|r| r.id.len())
            .max()
            .unwrap_or(0);
        for r in &self.requirements {
            let _ = write!(out, "\n  {:width$}  {} of {designs}", r.id, r.missed_by);
        }
        let never = self.never_missed();
        if !never.is_empty() {
            let ids: Vec<&str> = never.iter().map(|r| r.id.as_str()).collect();
            let _ = write!(out, "\nNo design misses: {}", ids.join(", "));
        }
        if self.failures.is_empty() {
            return;
        }
        out.push_str("\nFailure kinds, each checked away:");
        for f in &self.failures {
            let effect = match f.changes_design {
                Some(n) => format!("changes the verdict of design #{n}"),
                None => "changes no design's verdict".to_string(),
            };
            let _ = write!(out, "\n  without {}: {effect}", f.kind);
        }
    }
}

fn show(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        Json::Array(items) => {
            let items: Vec<String> = items.iter().map(show).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}
