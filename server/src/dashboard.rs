//! A class's dashboard, computed from what the store holds: the matrix of students and
//! scenarios, the requirements the class missed most, and one student's attempts.
//!
//! Pure: it takes the members, the class's attempts, their regraded verdicts and the
//! catalogue, and touches neither the database nor the clock, so each number is tested
//! from rows alone.
//!
//! An attempt's *result* is its own verdict, or, when its scenario changed since and the
//! attempt was regraded against the current version (`pipeline-builder regrade`), the
//! regraded verdict. A result from an older version of the scenario is *outdated*; the matrix
//! counts them.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};

pub use shared::wire::classes::{
    AttemptRow, Cell, CellState, Matrix, MissedBy, MissedRequirement, MissedScenario, RegradeRow,
    ScenarioProgress, StudentRow,
};

use crate::catalogue::Catalogue;
use crate::report::CsvRow;
use crate::store::{ClassAttempt, DueDates, Membership, Regrade};

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// What an attempt counts as on the dashboard.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub passed: bool,
    /// The requirement ids missed.
    pub missed: Vec<String>,
    /// The version of the scenario the result is for.
    pub scenario_hash: String,
    /// True when the result is a regraded verdict, not the attempt's own.
    pub regraded: bool,
    /// Why a regraded design got no verdict (it is not valid for the current version).
    pub error: Option<String>,
    /// The score of the result.
    pub score: i32,
}

/// The result of `attempt`: the regraded verdict against `current_hash` when there is one,
/// else the attempt's own.
pub fn outcome(
    attempt: &ClassAttempt,
    regrades: &[&Regrade],
    current_hash: Option<&str>,
) -> Outcome {
    let regraded = current_hash
        .filter(|h| *h != attempt.summary.scenario_hash)
        .and_then(|h| regrades.iter().find(|g| g.scenario_hash == h));
    match regraded {
        Some(g) => Outcome {
            passed: g.passed,
            missed: g
                .verdict
                .as_ref()
                .map(CsvRow::missed_of)
                .unwrap_or_default(),
            scenario_hash: g.scenario_hash.clone(),
            regraded: true,
            error: g.error.clone(),
            score: g.score,
        },
        None => Outcome {
            passed: attempt.summary.passed,
            missed: CsvRow::missed_of(&attempt.verdict),
            scenario_hash: attempt.summary.scenario_hash.clone(),
            regraded: false,
            error: None,
            score: attempt.summary.score,
        },
    }
}

/// Everything the dashboard is computed from.
pub struct ClassData<'a> {
    pub class: &'a str,
    pub catalogue: &'a Catalogue,
    pub members: &'a [Membership],
    /// Oldest first.
    pub attempts: &'a [ClassAttempt],
    pub regrades: &'a [Regrade],
    /// The due dates, which tell late attempts.
    pub due: &'a DueDates,
}

impl ClassData<'_> {
    /// True when `attempt` was made after its student's due date for its scenario.
    pub fn late(&self, attempt: &ClassAttempt) -> bool {
        let a = &attempt.summary;
        self.due.late(&a.student, &a.scenario, a.created_at)
    }

    fn regrades_by_attempt(&self) -> BTreeMap<&str, Vec<&Regrade>> {
        let mut by: BTreeMap<&str, Vec<&Regrade>> = BTreeMap::new();
        for g in self.regrades {
            by.entry(g.attempt.as_str()).or_default().push(g);
        }
        by
    }

    /// The attempts of each (student, scenario), oldest first, each with its result.
    pub(crate) fn outcomes(&self) -> BTreeMap<(&str, &str), Vec<(&ClassAttempt, Outcome)>> {
        let regrades = self.regrades_by_attempt();
        let mut by: BTreeMap<(&str, &str), Vec<(&ClassAttempt, Outcome)>> = BTreeMap::new();
        for a in self.attempts {
            let current = self
                .catalogue
                .get(&a.summary.scenario)
                .map(|e| e.hash.clone());
            let of = regrades
                .get(a.summary.id.as_str())
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let result = outcome(a, of, current.as_deref());
            by.entry((a.summary.student.as_str(), a.summary.scenario.as_str()))
                .or_default()
                .push((a, result));
        }
        by
    }
}

/// The matrix of a class.
pub fn matrix(data: &ClassData<'_>) -> Matrix {
    let outcomes = data.outcomes();
    let entries = data.catalogue.entries();
    let mut scenarios: Vec<ScenarioProgress> = entries
        .iter()
        .map(|e| ScenarioProgress {
            scenario: e.scenario().id.clone(),
            title: e.scenario().title.clone(),
            scenario_hash: e.hash.clone(),
            not_tried: 0,
            tried: 0,
            passed: 0,
            outdated_attempts: 0,
        })
        .collect();
    let mut students = Vec::with_capacity(data.members.len());
    for m in data.members {
        let mut cells = Vec::with_capacity(entries.len());
        for (column, e) in entries.iter().enumerate() {
            let id = e.scenario().id.as_str();
            let list = outcomes
                .get(&(m.student.as_str(), id))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let first_pass = list.iter().position(|(_, o)| o.passed);
            let outdated = list
                .iter()
                .filter(|(_, o)| o.scenario_hash != e.hash)
                .count();
            let late = list.iter().filter(|(a, _)| data.late(a)).count();
            let state = if first_pass.is_some() {
                CellState::Passed
            } else if !list.is_empty() {
                CellState::Tried
            } else {
                CellState::NotTried
            };
            let progress = &mut scenarios[column];
            match state {
                CellState::NotTried => progress.not_tried += 1,
                CellState::Tried => progress.tried += 1,
                CellState::Passed => progress.passed += 1,
            }
            progress.outdated_attempts += count(outdated);
            cells.push(Cell {
                scenario: id.to_string(),
                state,
                attempts: count(list.len()),
                last_attempt_at: list.last().map(|(a, _)| time(a.summary.created_at)),
                attempts_before_first_pass: first_pass.map(count),
                outdated_attempts: count(outdated),
                late_attempts: count(late),
            });
        }
        students.push(StudentRow {
            student: m.student.clone(),
            display_name: m.display_name.clone(),
            joined_at: time(m.joined_at),
            passed: count(
                cells
                    .iter()
                    .filter(|c| c.state == CellState::Passed)
                    .count(),
            ),
            cells,
        });
    }
    Matrix {
        class: data.class.to_string(),
        members: count(data.members.len()),
        scenarios,
        students,
    }
}

/// The header of the matrix as CSV.
pub const MATRIX_CSV_HEADER: [&str; 9] = [
    "student",
    "display_name",
    "scenario",
    "state",
    "attempts",
    "last_attempt_at",
    "attempts_before_first_pass",
    "outdated_attempts",
    "late_attempts",
];

/// The matrix as CSV: one row per student and scenario.
pub fn matrix_csv(matrix: &Matrix) -> String {
    let rows = matrix.students.iter().flat_map(|s| {
        s.cells.iter().map(move |c| {
            vec![
                s.student.clone(),
                s.display_name.clone(),
                c.scenario.clone(),
                c.state.as_str().to_string(),
                c.attempts.to_string(),
                c.last_attempt_at.clone().unwrap_or_default(),
                c.attempts_before_first_pass
                    .map(|n| n.to_string())
                    .unwrap_or_default(),
                c.outdated_attempts.to_string(),
                c.late_attempts.to_string(),
            ]
        })
    });
    crate::report::csv_table(&MATRIX_CSV_HEADER, rows)
}

/// Per scenario, the requirements the class missed most.
pub fn missed(data: &ClassData<'_>) -> Vec<MissedScenario> {
    let outcomes = data.outcomes();
    let names: BTreeMap<&str, &str> = data
        .members
        .iter()
        .map(|m| (m.student.as_str(), m.display_name.as_str()))
        .collect();
    let mut answer = Vec::new();
    for e in data.catalogue.entries() {
        let id = e.scenario().id.as_str();
        let mut tried = 0;
        // requirement → (student → still missing)
        let mut by_requirement: BTreeMap<&str, BTreeMap<&str, bool>> = BTreeMap::new();
        for m in data.members {
            let Some(list) = outcomes.get(&(m.student.as_str(), id)) else {
                continue;
            };
            if list.is_empty() {
                continue;
            }
            tried += 1;
            let latest = list.last().map(|(_, o)| &o.missed);
            for (_, o) in list {
                for r in &o.missed {
                    let Some(requirement) = e.scenario().requirements.iter().find(|q| &q.id == r)
                    else {
                        continue;
                    };
                    let still = latest.is_some_and(|l| l.contains(r));
                    by_requirement
                        .entry(requirement.id.as_str())
                        .or_default()
                        .insert(m.student.as_str(), still);
                }
            }
        }
        let mut requirements: Vec<(usize, MissedRequirement)> = e
            .scenario()
            .requirements
            .iter()
            .enumerate()
            .filter_map(|(order, q)| {
                let who = by_requirement.get(q.id.as_str())?;
                let mut missed_by: Vec<MissedBy> = who
                    .iter()
                    .map(|(student, still)| MissedBy {
                        student: student.to_string(),
                        display_name: names.get(student).copied().unwrap_or("").to_string(),
                        still_missing: *still,
                    })
                    .collect();
                missed_by.sort_by(|a, b| {
                    (&a.display_name, &a.student).cmp(&(&b.display_name, &b.student))
                });
                let students = who.len();
                Some((
                    order,
                    MissedRequirement {
                        requirement: q.id.clone(),
                        text: q.text.clone(),
                        students: count(students),
                        share: students as f64 / f64::from(count(tried).max(1)),
                        still_missing: count(who.values().filter(|s| **s).count()),
                        missed_by,
                    },
                ))
            })
            .collect();
        requirements.sort_by(|(oa, a), (ob, b)| b.students.cmp(&a.students).then(oa.cmp(ob)));
        answer.push(MissedScenario {
            scenario: id.to_string(),
            title: e.scenario().title.clone(),
            students_tried: count(tried),
            requirements: requirements.into_iter().map(|(_, r)| r).collect(),
        });
    }
    answer
}

/// A member's attempts for the class, oldest first.
pub fn student_attempts(data: &ClassData<'_>, student: &str) -> Vec<AttemptRow> {
    let regrades = data.regrades_by_attempt();
    data.attempts
        .iter()
        .filter(|a| a.summary.student == student)
        .map(|a| {
            let current = data
                .catalogue
                .get(&a.summary.scenario)
                .map(|e| e.hash.clone());
            let of = regrades
                .get(a.summary.id.as_str())
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let result = outcome(a, of, current.as_deref());
            AttemptRow {
                id: a.summary.id.clone(),
                scenario: a.summary.scenario.clone(),
                scenario_hash: a.summary.scenario_hash.clone(),
                created_at: time(a.summary.created_at),
                score: u32::try_from(a.summary.score).unwrap_or(0),
                max_score: u32::try_from(a.summary.max_score).unwrap_or(0),
                passed: a.summary.passed,
                missed: CsvRow::missed_of(&a.verdict),
                outdated: current.as_ref().is_some_and(|h| *h != result.scenario_hash),
                late: data.late(a),
                verdict: a.verdict.clone(),
                regrades: of
                    .iter()
                    .map(|g| RegradeRow {
                        scenario_hash: g.scenario_hash.clone(),
                        current: current.as_deref() == Some(g.scenario_hash.as_str()),
                        score: u32::try_from(g.score).unwrap_or(0),
                        max_score: u32::try_from(g.max_score).unwrap_or(0),
                        passed: g.passed,
                        missed: g
                            .verdict
                            .as_ref()
                            .map(CsvRow::missed_of)
                            .unwrap_or_default(),
                        error: g.error.clone(),
                        created_at: time(g.created_at),
                    })
                    .collect(),
            }
        })
        .collect()
}
