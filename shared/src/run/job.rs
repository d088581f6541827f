//! The batch job: the scheduler starts each run, the job runs its steps in attempts, and a
//! crash or a SQL error makes the scheduler retry after a delay, until it gives up. One
//! iteration is one attempt.

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate, NaiveDateTime};
use rust_decimal::Decimal;

use super::{format_rows, Cursor, Fault, JobCursor, Miss, Retry, Sim, Step};
use crate::design::{DateFilter, LoadedAt, Transaction, WriteMode};
use crate::diff::table_diff;
use crate::model::{eval, CCheck, CRun, CStep, JobModel, Mutation, StepKind};
use crate::sql;
use crate::value::{format_time, ColumnType, Value};
use crate::warehouse::{Affected, Row, SqlError};

/// How one attempt of a batch job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AttemptEnd {
    /// Every statement ran and was committed: the job reports success.
    Succeeded,
    /// The job crashed at a choice point (an injected failure); it counts against the
    /// scenario's crashes per run.
    Crashed,
    /// A statement failed with a SQL error, which the scheduler sees as a failed attempt.
    Failed,
}

/// The attempt in progress: which run, which attempt, and what it loads.
struct Attempt<'r> {
    run: &'r CRun,
    number: u32,
    day: NaiveDate,
    stamp: Option<NaiveDateTime>,
    can_crash: bool,
}

impl Sim<'_> {
    /// One attempt of stage `k`'s job: the start of a run (after the shop's changes), or the
    /// retry of a failed attempt.
    pub(super) fn job_iteration(&mut self, k: usize, b: &JobModel) {
        let Cursor::Job(mut c) =
            std::mem::replace(&mut self.cursors[k], Cursor::Job(JobCursor::default()))
        else {
            unreachable!("a job stage has a job cursor");
        };
        let run = &b.runs[c.run];
        match c.retry.take() {
            None => self.start_run(b, run, &mut c),
            Some(retry) => self.announce_retry(b, run, retry),
        }
        c.attempt += 1;
        let attempt = self.plan_attempt(b, run, &c);
        let filter_words = || match b.job.date_filter {
            DateFilter::LogicalDate => format!("its logical date {}", run.logical_date),
            DateFilter::CurrentDateMinus1 => format!("CURRENT_DATE - 1 = {}", attempt.day),
        };
        self.log(|_| Step {
            actor: "scheduler",
            node: Some(&b.job_node),
            edge: None,
            action: format!(
                "starts run {} for {} (attempt {}); the job loads {} ({})",
                run.id,
                run.logical_date,
                attempt.number,
                attempt.day,
                filter_words()
            ),
            sql: None,
            outcome: "started".into(),
            changed: false,
        });
        match self.attempt(b, &attempt) {
            AttemptEnd::Succeeded => {
                self.log(|_| Step {
                    actor: "job",
                    node: Some(&b.job_node),
                    edge: None,
                    action: "reports success to the scheduler".into(),
                    sql: None,
                    outcome: "run finished".into(),
                    changed: false,
                });
                self.finish_run(b, run, &mut c, true);
            }
            end @ (AttemptEnd::Crashed | AttemptEnd::Failed) => {
                let crashed = end == AttemptEnd::Crashed;
                if crashed {
                    c.crashes += 1;
                }
                if c.attempt == b.max_attempts {
                    self.finish_run(b, run, &mut c, false);
                } else {
                    c.retry = Some(Retry {
                        crashed,
                        at_s: self.clock_s + 60 * i64::from(b.retry_delay_minutes),
                    });
                }
            }
        }
        self.cursors[k] = Cursor::Job(c);
    }

    /// The start of a run: the shop's changes to its sources, and the tables as the run finds
    /// them for the requirements that the run must leave as they were.
    fn start_run(&mut self, b: &JobModel, run: &CRun, c: &mut JobCursor) {
        for change in &run.changes {
            self.apply_change(b, change);
        }
        c.crashes = 0;
        c.before = self
            .m
            .checks
            .iter()
            .enumerate()
            .filter_map(|(i, check)| match check {
                CCheck::RerunNoop { table, run: r } if *r == run.index => {
                    Some((i, self.wh.tables[*table].sorted_rows()))
                }
                _ => None,
            })
            .collect();
    }

    /// The scheduler retries a failed attempt, at once or after its delay.
    fn announce_retry(&mut self, b: &JobModel, run: &CRun, retry: Retry) {
        let delay = b.retry_delay_minutes;
        let when = || {
            if delay == 0 {
                "at once".to_string()
            } else {
                format!("after {delay} minutes")
            }
        };
        if retry.crashed && self.tracing {
            let who = if self.m.stages.len() > 1 {
                format!("the scheduler retries {}", b.title)
            } else {
                "the scheduler retries".to_string()
            };
            self.failure_words
                .push(format!("{who} {} ({})", when(), format_time(self.now())));
        }
        self.log(|_| Step {
            actor: "scheduler",
            node: Some(&b.job_node),
            edge: None,
            action: format!(
                "sees the attempt fail and retries run {} {}",
                run.id,
                when()
            ),
            sql: None,
            outcome: "retry scheduled".into(),
            changed: false,
        });
    }

    /// What this attempt loads: the day its date filter selects, the stamp it writes, and
    /// whether it may still crash.
    fn plan_attempt<'r>(&self, b: &JobModel, run: &'r CRun, c: &JobCursor) -> Attempt<'r> {
        let day = match b.job.date_filter {
            DateFilter::LogicalDate => run.logical_date,
            DateFilter::CurrentDateMinus1 => self.now().date() - Duration::days(1),
        };
        let stamp = match b.job.loaded_at {
            LoadedAt::None => None,
            LoadedAt::Now => Some(self.now()),
            LoadedAt::LogicalDate => run.logical_date.and_hms_opt(0, 0, 0),
        };
        Attempt {
            run,
            number: c.attempt,
            day,
            stamp,
            can_crash: run.may_crash && c.crashes < b.crash_max_per_run,
        }
    }

    /// The end of a run, done or given up: the requirements that the run must leave its tables
    /// as it found them are judged, and the job moves on to its next run.
    fn finish_run(&mut self, b: &JobModel, run: &CRun, c: &mut JobCursor, done: bool) {
        let max_attempts = b.max_attempts;
        if !done {
            self.unfinished.get_or_insert_with(|| {
                format!(
                    "run {} failed {max_attempts} times and the scheduler gave up",
                    run.id
                )
            });
            self.log(|_| Step {
                actor: "scheduler",
                node: Some(&b.job_node),
                edge: None,
                action: format!("gives up on run {} after {max_attempts} attempts", run.id),
                sql: None,
                outcome: "run failed".into(),
                changed: false,
            });
        }
        for (i, rows) in std::mem::take(&mut c.before) {
            self.judge_rerun(i, run, rows);
        }
        *c = JobCursor {
            run: c.run + 1,
            ..JobCursor::default()
        };
    }

    /// A `rerun_noop` requirement after its run: the table must hold the rows it held before.
    fn judge_rerun(&mut self, i: usize, run: &CRun, rows: Vec<Row>) {
        let CCheck::RerunNoop { table, .. } = &self.m.checks[i] else {
            return;
        };
        let after = self.wh.tables[*table].sorted_rows();
        if after == rows || self.misses[i].is_some() {
            return;
        }
        let t = &self.wh.tables[*table];
        self.misses[i] = Some(Miss {
            expected: format!("{} unchanged: {}", t.name, format_rows(&t.columns, &rows)),
            actual: format!("after run {}: {}", run.id, format_rows(&t.columns, &after)),
            step: self.step_no(),
            tables: self.tracing.then(|| self.view()),
            diff: self.tracing.then(|| {
                table_diff(
                    &t.name,
                    &t.columns,
                    &self.m.table_keys[*table],
                    &rows,
                    &after,
                )
            }),
        });
    }

    /// One attempt of the job: its statements, each followed by a point where it may crash.
    fn attempt(&mut self, b: &JobModel, a: &Attempt) -> AttemptEnd {
        let per_run = b.job.transaction == Transaction::PerRun;
        if per_run {
            self.wh.begin();
            self.tick(1);
            self.log(|_| Step {
                actor: "job",
                node: Some(&b.job_node),
                edge: None,
                action: "opens a transaction".into(),
                sql: Some("BEGIN;".into()),
                outcome: "transaction open".into(),
                changed: false,
            });
        }
        let offered: &[Fault] = if a.can_crash { &[Fault::JobCrash] } else { &[] };
        let total: usize = b.steps.iter().map(|s| statements(s).len()).sum();
        let mut done = 0;
        for step in &b.steps {
            for &is_delete in statements(step) {
                done += 1;
                if self.statement(b, step, is_delete, a, per_run).is_err() {
                    self.rollback_in_trace("rolled back", false);
                    return AttemptEnd::Failed;
                }
                if self.point(offered).is_some() {
                    let place = if !self.tracing {
                        String::new()
                    } else if done == total && !per_run {
                        format!(
                            "after its last statement (step {}: {}), before it reports success",
                            step.number,
                            step.def.title()
                        )
                    } else if is_delete {
                        format!(
                            "after the DELETE of step {} ({}), before its INSERT",
                            step.number,
                            step.def.title()
                        )
                    } else {
                        format!("after step {} ({})", step.number, step.def.title())
                    };
                    self.crash_job(b, place, a);
                    return AttemptEnd::Crashed;
                }
            }
        }
        if per_run {
            self.wh.commit();
            self.tick(1);
            self.log(|_| Step {
                actor: "job",
                node: Some(&b.job_node),
                edge: None,
                action: "commits the transaction".into(),
                sql: Some("COMMIT;".into()),
                outcome: "committed".into(),
                changed: true,
            });
            self.observe();
            if self.point(offered).is_some() {
                self.crash_job(b, "after COMMIT, before it reports success".into(), a);
                return AttemptEnd::Crashed;
            }
        }
        AttemptEnd::Succeeded
    }

    /// One statement of a step: the `DELETE` of its day, or its write. A SQL error is the
    /// attempt's failure.
    fn statement(
        &mut self,
        b: &JobModel,
        step: &CStep,
        is_delete: bool,
        a: &Attempt,
        per_run: bool,
    ) -> Result<(), ()> {
        self.tick(1);
        let result = if is_delete {
            let p = step
                .sink
                .partition
                .expect("delete_insert is only valid on a partitioned table");
            Ok(self
                .wh
                .delete_where_eq(step.sink.table, p, &Value::Date(a.day)))
        } else {
            self.write_step(step, a.day, a.stamp)
        };
        let sql = self.tracing.then(|| {
            let ctx = self.sql_ctx(b, a.day, a.stamp);
            if is_delete {
                sql::delete_partition(&ctx, step)
            } else {
                sql::step_write(&ctx, step)
            }
        });
        let what = if !self.tracing {
            String::new()
        } else if is_delete {
            format!(
                "deletes {} from {}",
                a.day, self.wh.tables[step.sink.table].name
            )
        } else {
            format!("step {}: {}", step.number, step.def.title())
        };
        let edge = (b.job_node.as_str(), step.sink.node.as_str());
        match result {
            Err(SqlError(message)) => {
                self.log(|_| Step {
                    actor: "job",
                    node: Some(&b.job_node),
                    edge: Some(edge),
                    action: what,
                    sql,
                    outcome: format!("error: {message}"),
                    changed: false,
                });
                Err(())
            }
            Ok(affected) => {
                let committed = !per_run;
                let outcome = if !self.tracing {
                    String::new()
                } else {
                    let described = if is_delete {
                        affected.describe_delete()
                    } else {
                        affected.describe()
                    };
                    if committed {
                        format!("committed: {described}")
                    } else {
                        format!("{described} (not committed yet)")
                    }
                };
                self.log(|_| Step {
                    actor: "job",
                    node: Some(&b.job_node),
                    edge: Some(edge),
                    action: what,
                    sql,
                    outcome,
                    changed: committed,
                });
                self.observe();
                Ok(())
            }
        }
    }

    fn crash_job(&mut self, b: &JobModel, place: String, a: &Attempt) {
        if self.tracing {
            let who = if self.m.stages.len() > 1 {
                &b.title
            } else {
                "the job"
            };
            self.failure_words.push(format!(
                "{who} crashes {place} (run {}, attempt {})",
                a.run.id, a.number
            ));
        }
        self.log(|_| Step {
            actor: "job",
            node: Some(&b.job_node),
            edge: None,
            action: format!("crashes {place}"),
            sql: None,
            outcome: "crashed".into(),
            changed: false,
        });
        self.rollback_in_trace("rolled back: nothing of this attempt is kept", true);
    }

    fn sql_ctx(&self, b: &JobModel, day: NaiveDate, stamp: Option<NaiveDateTime>) -> sql::Ctx<'_> {
        sql::Ctx {
            tables: &self.wh.tables,
            types: &self.m.column_types,
            day,
            stamp,
            clock: b.job.date_filter == DateFilter::CurrentDateMinus1,
            dialect: self.dialect,
        }
    }

    /// The rows a step's `SELECT` gives on `day`, stamped with `stamp` where the target has a
    /// `loaded_at` column.
    fn select(&self, step: &CStep, day: NaiveDate, stamp: Option<NaiveDateTime>) -> Vec<Row> {
        let from = if self.m.mutation == Mutation::StaleUpstream && self.m.written[step.from] {
            &self.m.initial.tables[step.from]
        } else {
            &self.wh.tables[step.from]
        };
        let day = Value::Date(day);
        let source = from
            .rows
            .iter()
            .filter(|r| r[step.from_day].key_eq(&day) && eval(r, &step.filter));
        let width = self.wh.tables[step.sink.table].columns.len();
        let stamp_value = |row: &mut Row| {
            if let (Some((c, ty)), Some(t)) = (step.sink.loaded_at, stamp) {
                row[c] = if ty == ColumnType::Date {
                    Value::Date(t.date())
                } else {
                    Value::Timestamp(t)
                };
            }
        };
        let mut rows: Vec<Row> = match &step.kind {
            StepKind::Copy { map, distinct } => {
                let mut rows: Vec<Row> = source
                    .map(|r| {
                        map.iter()
                            .map(|m| m.map_or(Value::Null, |c| r[c].clone()))
                            .collect()
                    })
                    .collect();
                if *distinct {
                    // SELECT DISTINCT: one of each row, NULLs equal to each other, in the
                    // order the rows come first.
                    let mut seen: Vec<Row> = Vec::with_capacity(rows.len());
                    rows.retain(|r| {
                        let fresh = !seen.contains(r);
                        if fresh {
                            seen.push(r.clone());
                        }
                        fresh
                    });
                }
                rows
            }
            StepKind::Sum {
                group_from,
                sum_from,
                group_to,
                into,
            } => {
                let mut groups: BTreeMap<Value, Option<Decimal>> = BTreeMap::new();
                for r in source {
                    let entry = groups.entry(r[*group_from].clone()).or_insert(None);
                    match &r[*sum_from] {
                        Value::Decimal(d) => *entry = Some(entry.unwrap_or(Decimal::ZERO) + d),
                        Value::Int(i) => {
                            *entry = Some(entry.unwrap_or(Decimal::ZERO) + Decimal::from(*i))
                        }
                        _ => {}
                    }
                }
                groups
                    .into_iter()
                    .map(|(g, s)| {
                        let mut row = vec![Value::Null; width];
                        row[*group_to] = g;
                        row[*into] = s.map_or(Value::Null, Value::Decimal);
                        row
                    })
                    .collect()
            }
            StepKind::Count {
                group_from,
                group_to,
                into,
            } => {
                let mut groups: BTreeMap<Value, i64> = BTreeMap::new();
                for r in source {
                    *groups.entry(r[*group_from].clone()).or_insert(0) += 1;
                }
                groups
                    .into_iter()
                    .map(|(g, n)| {
                        let mut row = vec![Value::Null; width];
                        row[*group_to] = g;
                        row[*into] = Value::Int(n);
                        row
                    })
                    .collect()
            }
        };
        rows.iter_mut().for_each(stamp_value);
        rows
    }

    fn write_step(
        &mut self,
        step: &CStep,
        day: NaiveDate,
        stamp: Option<NaiveDateTime>,
    ) -> Result<Affected, SqlError> {
        let rows = self.select(step, day, stamp);
        self.write_rows(&step.sink, rows)
    }
}

/// A step's statements: the `DELETE` of its day first when its target is written by
/// delete-insert (`true`), then its write (`false`).
fn statements(step: &CStep) -> &'static [bool] {
    if step.sink.write == WriteMode::DeleteInsert {
        &[true, false]
    } else {
        &[false]
    }
}
