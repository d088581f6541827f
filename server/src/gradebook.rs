//! A class's gradebook: one row per member with their display name and their identity on the
//! learning platform, one grade per scenario (the best current result of their attempts for
//! the class, or the score staff set by hand) and a total; and its wide CSV, which an LMS's
//! gradebook import or a spreadsheet takes.
//!
//! Pure, like the dashboard it reads: rows in, numbers out.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};

pub use shared::wire::classes::{
    Grade, Gradebook, GradebookRow, GradebookScenario, LtiIdentity, ScoreOverride,
};

use crate::dashboard::ClassData;
use crate::store::{MemberIdentity, OverrideRow};

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn points(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

/// The gradebook of a class: its members by display name (then id), the catalogue's
/// scenarios in course order.
pub fn gradebook(
    data: &ClassData<'_>,
    overrides: &[OverrideRow],
    identities: &[MemberIdentity],
) -> Gradebook {
    let outcomes = data.outcomes();
    let scenarios: Vec<GradebookScenario> = data
        .catalogue
        .entries()
        .iter()
        .map(|e| GradebookScenario {
            scenario: e.scenario().id.clone(),
            title: e.scenario().title.clone(),
            max_score: e.scenario().requirements.iter().map(|r| r.points).sum(),
        })
        .collect();
    let set: BTreeMap<(&str, &str), &OverrideRow> = overrides
        .iter()
        .map(|o| ((o.student.as_str(), o.scenario.as_str()), o))
        .collect();
    // A member launched from several platforms keeps the first identity (by issuer).
    let mut lti: BTreeMap<&str, &MemberIdentity> = BTreeMap::new();
    for i in identities {
        lti.entry(i.student.as_str()).or_insert(i);
    }
    let max_total = scenarios.iter().map(|s| s.max_score).sum();
    let mut members: Vec<_> = data.members.iter().collect();
    members.sort_by(|a, b| (&a.display_name, &a.student).cmp(&(&b.display_name, &b.student)));
    let students = members
        .into_iter()
        .map(|m| {
            let grades: Vec<Grade> = scenarios
                .iter()
                .map(|s| {
                    let key = (m.student.as_str(), s.scenario.as_str());
                    let results = outcomes.get(&key).map(Vec::as_slice).unwrap_or(&[]);
                    // Late attempts do not count; their best is shown beside.
                    let computed = results
                        .iter()
                        .filter(|(a, _)| !data.late(a))
                        .map(|(_, o)| points(o.score))
                        .max();
                    let late = results
                        .iter()
                        .filter(|(a, _)| data.late(a))
                        .map(|(_, o)| points(o.score))
                        .max();
                    let overridden = set.get(&key).map(|o| ScoreOverride {
                        score: points(o.score),
                        reason: o.reason.clone(),
                        by: o.set_by.clone(),
                        at: time(o.set_at),
                    });
                    Grade {
                        scenario: s.scenario.clone(),
                        score: overridden.as_ref().map(|o| o.score).or(computed),
                        computed,
                        late,
                        overridden,
                        attempts: u32::try_from(results.len()).unwrap_or(u32::MAX),
                    }
                })
                .collect();
            GradebookRow {
                student: m.student.clone(),
                display_name: m.display_name.clone(),
                lti: lti.get(m.student.as_str()).map(|i| LtiIdentity {
                    issuer: i.issuer.clone(),
                    subject: i.sub.clone(),
                }),
                total: grades.iter().filter_map(|g| g.score).sum(),
                max_total,
                grades,
            }
        })
        .collect();
    Gradebook {
        class: data.class.to_string(),
        scenarios,
        students,
    }
}

/// What the `overrides` column says of a grade: a score set by hand, from what and why; late
/// attempts and their best score.
fn grade_notes(g: &Grade) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(o) = &g.overridden {
        let from = g
            .computed
            .map_or_else(|| "no attempt".to_string(), |c| c.to_string());
        notes.push(format!(
            "{}: {} set by {} (computed {from}): {}",
            g.scenario, o.score, o.by, o.reason
        ));
    }
    if let Some(late) = g.late {
        notes.push(format!(
            "{}: late attempts, best {late} (not counted)",
            g.scenario
        ));
    }
    notes
}

/// The gradebook as a wide CSV: `student`, `display_name`, `lti_issuer`, `lti_subject`, one
/// column per scenario (its id) with the score that counts (empty when there is none), then
/// `total` and `max_total`, and `overrides`, which says in words which scores were set by
/// hand, from what and why, and which scenarios have late attempts (their best score, which
/// does not count). A second line under the header gives each scenario's most points.
pub fn gradebook_csv(book: &Gradebook) -> String {
    let mut header: Vec<String> = ["student", "display_name", "lti_issuer", "lti_subject"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    header.extend(book.scenarios.iter().map(|s| s.scenario.clone()));
    header.extend(["total", "max_total", "overrides"].map(String::from));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let max_total: u32 = book.scenarios.iter().map(|s| s.max_score).sum();
    let mut most = vec![
        String::new(),
        "(most points)".to_string(),
        String::new(),
        String::new(),
    ];
    most.extend(book.scenarios.iter().map(|s| s.max_score.to_string()));
    most.extend([max_total.to_string(), max_total.to_string(), String::new()]);
    let rows = std::iter::once(most).chain(book.students.iter().map(|row| {
        let mut cells = vec![
            row.student.clone(),
            row.display_name.clone(),
            row.lti
                .as_ref()
                .map(|i| i.issuer.clone())
                .unwrap_or_default(),
            row.lti
                .as_ref()
                .map(|i| i.subject.clone())
                .unwrap_or_default(),
        ];
        cells.extend(
            row.grades
                .iter()
                .map(|g| g.score.map(|s| s.to_string()).unwrap_or_default()),
        );
        let notes: Vec<String> = row.grades.iter().flat_map(grade_notes).collect();
        cells.extend([
            row.total.to_string(),
            row.max_total.to_string(),
            notes.join("; "),
        ]);
        cells
    }));
    crate::report::csv_table(&header, rows)
}
