//! Verdicts in words: plain text for the `check` command, Markdown for Gradescope.

use std::fmt::Write;

use serde_json::{json, Value as Json};
use shared::verdict::{Counterexample, RequirementVerdict};
use shared::{Scenario, Verdict};

/// The verdict as the `check` command prints it: each requirement ✓ or ✗ with its text, and
/// for a missed one the failures, expected against actual, and the trace.
pub fn verdict_text(scenario: &Scenario, verdict: &Verdict) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} — {}", scenario.id, scenario.title);
    for r in &verdict.requirements {
        let mark = if r.passed { '✓' } else { '✗' };
        let _ = writeln!(out, "{mark} {}: {}", r.id, r.text);
        if let Some(c) = &r.counterexample {
            counterexample_text(&mut out, c);
            if let Some(req) = scenario.requirement(&r.id) {
                let _ = writeln!(out, "    hint: {}", req.hint);
            }
        }
    }
    let outcome = if verdict.passed { "passed" } else { "missed" };
    let _ = writeln!(
        out,
        "{outcome}: score {}/{}, {} schedules explored ({})",
        verdict.score, verdict.max_score, verdict.schedules_explored, verdict.scenario_hash
    );
    out
}

fn counterexample_text(out: &mut String, c: &Counterexample) {
    if c.failures.is_empty() {
        let _ = writeln!(
            out,
            "    failures: none (a run with no failure already misses it)"
        );
    } else {
        let _ = writeln!(out, "    failures: {}", c.failures.join("; "));
    }
    let _ = writeln!(out, "    expected: {}", c.expected);
    let _ = writeln!(out, "    actual:   {}", c.actual);
    let _ = writeln!(out, "    trace:");
    for t in &c.trace {
        let marker = if t.step == c.went_wrong_at {
            "  ← went wrong here"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "      {} {} {} {} — {}{marker}",
            t.step, t.time, t.actor, t.action, t.outcome
        );
        if let Some(sql) = &t.sql {
            for line in sql.lines() {
                let _ = writeln!(out, "          {line}");
            }
        }
    }
}

/// One requirement's result in Markdown, for a Gradescope test's `output`.
pub fn requirement_markdown(requirement: &RequirementVerdict, hint: Option<&str>) -> String {
    let mut out = String::new();
    let Some(c) = &requirement.counterexample else {
        let _ = write!(out, "**Passed.** {}", requirement.text);
        return out;
    };
    let _ = writeln!(out, "**Missed.** {}\n", requirement.text);
    if c.failures.is_empty() {
        let _ = writeln!(out, "A run with no failure at all already misses it.\n");
    } else {
        let _ = writeln!(out, "**Failures that break it:**\n");
        for f in &c.failures {
            let _ = writeln!(out, "- {f}");
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "**Expected** `{}`, **actual** `{}`.\n",
        c.expected, c.actual
    );
    let _ = writeln!(out, "**Trace:**\n");
    out.push_str("```text\n");
    for t in &c.trace {
        let marker = if t.step == c.went_wrong_at {
            "   <- went wrong here"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{} {} {} {} — {}{marker}",
            t.step, t.time, t.actor, t.action, t.outcome
        );
        if let Some(sql) = &t.sql {
            for line in sql.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    out.push_str("```\n");
    if let Some(hint) = hint {
        let _ = writeln!(out, "\n**Hint:** {hint}");
    }
    out
}

/// A verdict in Gradescope's `results.json` shape: one test per requirement, one point each.
pub fn gradescope(scenario: &Scenario, verdict: &Verdict, extra: Json) -> Json {
    let tests: Vec<Json> = verdict
        .requirements
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let hint = scenario.requirement(&r.id).map(|q| q.hint.as_str());
            json!({
                "name": format!("{}: {}", r.id, r.text),
                "number": format!("{}", i + 1),
                "score": if r.passed { 1 } else { 0 },
                "max_score": 1,
                "status": if r.passed { "passed" } else { "failed" },
                "output": requirement_markdown(r, hint),
                "output_format": "md",
            })
        })
        .collect();
    let missed: Vec<&str> = verdict
        .requirements
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.id.as_str())
        .collect();
    let output = if missed.is_empty() {
        format!(
            "**{}**: every requirement passed under all {} failure schedules.",
            scenario.title, verdict.schedules_explored
        )
    } else {
        format!(
            "**{}**: {} of {} requirements passed; missed: {}. {} failure schedules explored.",
            scenario.title,
            verdict.score,
            verdict.max_score,
            missed
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", "),
            verdict.schedules_explored
        )
    };
    json!({
        "score": verdict.score,
        "max_score": verdict.max_score,
        "output": output,
        "output_format": "md",
        "tests": tests,
        "extra_data": extra,
    })
}
