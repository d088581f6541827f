//! The batch jobs of a scenario, their steps and their runs (with the changes the shop makes
//! to its source tables before a run), compiled.

use std::collections::BTreeSet;

use chrono::{NaiveDate, NaiveDateTime};

use super::cond::{compile_conds, Cond};
use super::error::{serr, ScenarioError};
use super::table::TableInfo;
use crate::scenario::{Change, JobDef, Scenario, StepDef, TableRole, DEFAULT_JOB_ID};
use crate::value::Value;
use crate::warehouse::Row;

/// A batch job: what it reads, its steps, and its runs.
#[derive(Clone, Debug)]
pub(crate) struct JobInfo {
    pub id: String,
    /// How the trace names the job: "the job", or the scenario's title for it.
    pub title: String,
    /// The table the job reads (its input in a design).
    pub source: usize,
    pub steps: Vec<StepInfo>,
    pub max_attempts: u32,
    /// Indices in [`Compiled::runs`], in order.
    pub runs: Vec<usize>,
}

/// One step of a job, its tables and columns resolved. The design says how its target is
/// written.
#[derive(Clone, Debug)]
pub(crate) struct StepInfo {
    pub def: StepDef,
    /// From 1, in the job's order.
    pub number: usize,
    pub from: usize,
    /// The date column of `from` that the job's day filters on.
    pub from_day: usize,
    pub filter: Vec<Cond>,
    pub kind: StepKind,
    pub target: usize,
}

#[derive(Clone, Debug)]
pub(crate) enum StepKind {
    /// For each target column, the source column it is copied from; `distinct` drops
    /// repeated rows of the selection (`SELECT DISTINCT`).
    Copy {
        map: Vec<Option<usize>>,
        distinct: bool,
    },
    Sum {
        group_from: usize,
        sum_from: usize,
        group_to: usize,
        into: usize,
    },
    Count {
        group_from: usize,
        group_to: usize,
        into: usize,
    },
}

/// One run of a job.
#[derive(Clone, Debug)]
pub(crate) struct RunInfo {
    pub id: String,
    pub logical_date: NaiveDate,
    pub start: NaiveDateTime,
    /// Index in [`Compiled::jobs`].
    pub job: usize,
    pub may_crash: bool,
    pub changes: Vec<ChangeInfo>,
}

/// A change of a source table before a run, compiled.
#[derive(Clone, Debug)]
pub(crate) enum ChangeInfo {
    Insert {
        table: usize,
        title: String,
        rows: Vec<Row>,
    },
    Update {
        table: usize,
        title: String,
        set: Vec<(usize, Value)>,
        filter: Vec<Cond>,
    },
    Delete {
        table: usize,
        title: String,
        filter: Vec<Cond>,
    },
}

impl ChangeInfo {
    pub fn table(&self) -> usize {
        match self {
            ChangeInfo::Insert { table, .. }
            | ChangeInfo::Update { table, .. }
            | ChangeInfo::Delete { table, .. } => *table,
        }
    }
    pub fn title(&self) -> &str {
        match self {
            ChangeInfo::Insert { title, .. }
            | ChangeInfo::Update { title, .. }
            | ChangeInfo::Delete { title, .. } => title,
        }
    }
}

/// The id a run's job goes by.
fn run_job_id(job: Option<&str>) -> &str {
    job.unwrap_or(DEFAULT_JOB_ID)
}

/// Every job (`job`, then `jobs`), with its steps; runs come after (`with_runs`).
pub(super) fn compile_jobs(
    scenario: &Scenario,
    tables: &[TableInfo],
    errors: &mut Vec<ScenarioError>,
) -> Vec<JobInfo> {
    let mut out = Vec::new();
    let mut ids = BTreeSet::new();
    let paths = scenario
        .job
        .iter()
        .map(|_| "$.job".to_string())
        .chain((0..scenario.jobs.len()).map(|i| format!("$.jobs[{i}]")));
    for (def, path) in scenario.all_jobs().zip(paths) {
        if path != "$.job" && def.id.is_none() {
            errors.push(serr(
                format!("{path}.id"),
                "every job of jobs needs an id, which its runs name with \"job\"",
            ));
        }
        if !ids.insert(def.id().to_string()) {
            errors.push(serr(
                format!("{path}.id"),
                format!("two jobs have the id \"{}\"", def.id()),
            ));
        }
        if let Some(job) = compile_job(def, &path, tables, errors) {
            out.push(job);
        }
    }
    let mut sources = BTreeSet::new();
    for (i, job) in out.iter().enumerate() {
        if !sources.insert(job.source) {
            let path = match (scenario.job.is_some(), i) {
                (true, 0) => "$.job".to_string(),
                (true, i) => format!("$.jobs[{}]", i - 1),
                (false, i) => format!("$.jobs[{i}]"),
            };
            errors.push(serr(
                format!("{path}.source"),
                format!(
                    "two jobs read {}: a design tells its jobs apart by the table each reads",
                    tables[job.source].name
                ),
            ));
        }
    }
    out
}

fn compile_job(
    def: &JobDef,
    path: &str,
    tables: &[TableInfo],
    errors: &mut Vec<ScenarioError>,
) -> Option<JobInfo> {
    let index = |name: &str| tables.iter().position(|t| t.name == name);
    let Some(source) = index(&def.source) else {
        errors.push(serr(
            format!("{path}.source"),
            format!("no table \"{}\"", def.source),
        ));
        return None;
    };
    let steps = def
        .steps
        .iter()
        .enumerate()
        .filter_map(|(i, step)| {
            compile_step(step, i, &format!("{path}.steps[{i}]"), tables, errors)
        })
        .collect();
    Some(JobInfo {
        id: def.id().to_string(),
        title: def.title().to_string(),
        source,
        steps,
        max_attempts: def.max_attempts.max(1),
        runs: Vec::new(),
    })
}

fn compile_step(
    step: &StepDef,
    i: usize,
    p: &str,
    tables: &[TableInfo],
    errors: &mut Vec<ScenarioError>,
) -> Option<StepInfo> {
    let index = |name: &str| tables.iter().position(|t| t.name == name);
    let Some(from) = index(step.from()) else {
        errors.push(serr(
            format!("{p}.from"),
            format!("no table \"{}\"", step.from()),
        ));
        return None;
    };
    let Some(target) = index(step.target()) else {
        errors.push(serr(
            format!("{p}.target"),
            format!("no table \"{}\"", step.target()),
        ));
        return None;
    };
    let from_def = &tables[from];
    let target_def = &tables[target];
    let Some(from_day) = from_def.partition else {
        errors.push(serr(
            format!("{p}.from"),
            format!(
                "table {} needs a date partition column for the job's date filter",
                from_def.name
            ),
        ));
        return None;
    };
    let filter = compile_conds(from_def, step.filter(), &format!("{p}.where"), errors);
    let kind = step_kind(step, p, from_def, target_def, errors)?;
    Some(StepInfo {
        def: step.clone(),
        number: i + 1,
        from,
        from_day,
        filter,
        kind,
        target,
    })
}

/// What a step computes, its columns resolved in its source and its target.
fn step_kind(
    step: &StepDef,
    p: &str,
    from_def: &TableInfo,
    target_def: &TableInfo,
    errors: &mut Vec<ScenarioError>,
) -> Option<StepKind> {
    match step {
        StepDef::Copy { columns, .. } | StepDef::Distinct { columns, .. } => {
            for c in columns {
                if from_def.column(c).is_none() || target_def.column(c).is_none() {
                    errors.push(serr(
                        format!("{p}.columns"),
                        format!(
                            "column \"{c}\" must be in both {} and {}",
                            from_def.name, target_def.name
                        ),
                    ));
                }
            }
            let map = target_def
                .columns
                .iter()
                .map(|tc| columns.contains(tc).then(|| from_def.column(tc)).flatten())
                .collect();
            Some(StepKind::Copy {
                map,
                distinct: matches!(step, StepDef::Distinct { .. }),
            })
        }
        StepDef::Sum {
            group_by,
            sum,
            into,
            ..
        } => {
            let cols = (
                from_def.column(group_by),
                from_def.column(sum),
                target_def.column(group_by),
                target_def.column(into),
            );
            let (Some(group_from), Some(sum_from), Some(group_to), Some(into)) = cols else {
                errors.push(serr(
                    p,
                    format!(
                        "group_by and sum must be columns of {}, group_by and into columns of {}",
                        from_def.name, target_def.name
                    ),
                ));
                return None;
            };
            Some(StepKind::Sum {
                group_from,
                sum_from,
                group_to,
                into,
            })
        }
        StepDef::Count { group_by, into, .. } => {
            let cols = (
                from_def.column(group_by),
                target_def.column(group_by),
                target_def.column(into),
            );
            let (Some(group_from), Some(group_to), Some(into)) = cols else {
                errors.push(serr(
                    p,
                    format!(
                        "group_by must be a column of {} and {}, into a column of {}",
                        from_def.name, target_def.name, target_def.name
                    ),
                ));
                return None;
            };
            Some(StepKind::Count {
                group_from,
                group_to,
                into,
            })
        }
    }
}

/// Every run, with its job and the changes made before it.
pub(super) fn compile_runs(
    scenario: &Scenario,
    tables: &[TableInfo],
    jobs: &[JobInfo],
    errors: &mut Vec<ScenarioError>,
) -> Vec<RunInfo> {
    let crash = scenario.failures.job_crash.as_ref();
    if scenario.runs.is_empty() && !jobs.is_empty() {
        errors.push(serr(
            "$.runs",
            "a scenario with a batch job needs at least one run",
        ));
    }
    let mut out = Vec::new();
    for (r, run) in scenario.runs.iter().enumerate() {
        let p = format!("$.runs[{r}]");
        let id = run_job_id(run.job.as_deref());
        let Some(job) = jobs.iter().position(|j| j.id == id) else {
            errors.push(serr(
                format!("{p}.job"),
                match &run.job {
                    Some(j) => format!("no job has the id \"{j}\""),
                    None => "the scenario has no job for this run".to_string(),
                },
            ));
            continue;
        };
        let changes = run
            .changes
            .iter()
            .enumerate()
            .filter_map(|(c, change)| {
                compile_change(change, &format!("{p}.changes[{c}]"), tables, errors)
            })
            .collect();
        out.push(RunInfo {
            id: run.id.clone(),
            logical_date: run.logical_date,
            start: run.start.0,
            job,
            may_crash: crash
                .is_some_and(|c| c.runs.as_ref().is_none_or(|ids| ids.contains(&run.id))),
            changes,
        });
    }
    out
}

fn compile_change(
    change: &Change,
    p: &str,
    tables: &[TableInfo],
    errors: &mut Vec<ScenarioError>,
) -> Option<ChangeInfo> {
    let Some(table) = tables.iter().position(|t| t.name == change.table()) else {
        errors.push(serr(
            format!("{p}.table"),
            format!("no table \"{}\"", change.table()),
        ));
        return None;
    };
    let def = &tables[table];
    if def.role != TableRole::Source {
        errors.push(serr(
            format!("{p}.table"),
            format!(
                "{} is a warehouse table; the shop changes its source tables only",
                def.name
            ),
        ));
        return None;
    }
    let title = change.title().to_string();
    Some(match change {
        Change::Insert { rows, .. } => {
            let mut typed = Vec::new();
            for (r, row) in rows.iter().enumerate() {
                if row.len() != def.columns.len() {
                    errors.push(serr(
                        format!("{p}.rows[{r}]"),
                        format!(
                            "row has {} values but table {} has {} columns",
                            row.len(),
                            def.name,
                            def.columns.len()
                        ),
                    ));
                    continue;
                }
                let cells: Result<Vec<Value>, String> = row
                    .iter()
                    .zip(&def.types)
                    .map(|(v, ty)| Value::from_json(*ty, v))
                    .collect();
                match cells {
                    Ok(cells) => typed.push(cells),
                    Err(m) => errors.push(serr(format!("{p}.rows[{r}]"), m)),
                }
            }
            ChangeInfo::Insert {
                table,
                title,
                rows: typed,
            }
        }
        Change::Update { set, filter, .. } => {
            let mut cells = Vec::new();
            for (name, raw) in set {
                let Some(c) = def.column(name) else {
                    errors.push(serr(
                        format!("{p}.set.{name}"),
                        format!("table {} has no column \"{name}\"", def.name),
                    ));
                    continue;
                };
                match Value::from_json(def.types[c], raw) {
                    Ok(v) => cells.push((c, v)),
                    Err(m) => errors.push(serr(format!("{p}.set.{name}"), m)),
                }
            }
            ChangeInfo::Update {
                table,
                title,
                set: cells,
                filter: compile_conds(def, filter, &format!("{p}.where"), errors),
            }
        }
        Change::Delete { filter, .. } => ChangeInfo::Delete {
            table,
            title,
            filter: compile_conds(def, filter, &format!("{p}.where"), errors),
        },
    })
}

/// The jobs with the indices of their runs.
pub(super) fn with_runs(mut jobs: Vec<JobInfo>, runs: &[RunInfo]) -> Vec<JobInfo> {
    for (r, run) in runs.iter().enumerate() {
        if let Some(job) = jobs.get_mut(run.job) {
            job.runs.push(r);
        }
    }
    jobs
}
