//! The batch job: the scheduler starts each run, the job runs its steps in attempts, and a
//! crash or a SQL error makes the scheduler retry after a delay, until it gives up.

use std::collections::BTreeMap;

use chrono::{Duration, NaiveDate, NaiveDateTime};
use rust_decimal::Decimal;

use super::{format_rows, Cursor, Fault, Miss, Sim, Step};
use crate::design::{DateFilter, LoadedAt, Transaction, WriteMode};
use crate::diff::table_diff;
use crate::model::{eval, BatchModel, CCheck, CStep, StepKind};
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

impl Sim<'_> {
    /// Runs the scheduled runs from where the cursor stands, each until an attempt succeeds or
    /// the scheduler gives up.
    pub(super) fn run_batch(&mut self, b: &BatchModel) {
        let BatchModel {
            job_node,
            runs,
            max_attempts,
            crash_max_per_run,
            retry_delay_minutes,
            job,
            ..
        } = b;
        let first = match std::mem::replace(&mut self.cursor, Cursor::Start) {
            Cursor::Batch { r } => r,
            _ => 0,
        };
        for (r, run) in runs.iter().enumerate().skip(first) {
            if self.pause_here() {
                self.cursor = Cursor::Batch { r };
                return;
            }
            let start_s = run.start.and_utc().timestamp();
            if self.clock_s < start_s {
                self.clock_s = start_s;
            }
            let before: Vec<(usize, Vec<Row>)> = self
                .m
                .checks
                .iter()
                .enumerate()
                .filter_map(|(i, c)| match c {
                    CCheck::RerunNoop { table, run } if *run == r => {
                        Some((i, self.wh.tables[*table].sorted_rows()))
                    }
                    _ => None,
                })
                .collect();
            let mut crashes = 0;
            let mut done = false;
            for attempt in 1..=*max_attempts {
                if self.too_long() {
                    return;
                }
                let day = match job.date_filter {
                    DateFilter::LogicalDate => run.logical_date,
                    DateFilter::CurrentDateMinus1 => self.now().date() - Duration::days(1),
                };
                let stamp = match job.loaded_at {
                    LoadedAt::None => None,
                    LoadedAt::Now => Some(self.now()),
                    LoadedAt::LogicalDate => run.logical_date.and_hms_opt(0, 0, 0),
                };
                let filter_words = || match job.date_filter {
                    DateFilter::LogicalDate => format!("its logical date {}", run.logical_date),
                    DateFilter::CurrentDateMinus1 => format!("CURRENT_DATE - 1 = {day}"),
                };
                self.log(|_| Step {
                    actor: "scheduler",
                    node: Some(job_node),
                    edge: None,
                    action: format!(
                        "starts run {} for {} (attempt {attempt}); the job loads {day} ({})",
                        run.id,
                        run.logical_date,
                        filter_words()
                    ),
                    sql: None,
                    outcome: "started".into(),
                    changed: false,
                });
                let can_crash = run.may_crash && crashes < *crash_max_per_run;
                match self.attempt(b, day, stamp, can_crash, attempt, &run.id) {
                    AttemptEnd::Succeeded => {
                        self.log(|_| Step {
                            actor: "job",
                            node: Some(job_node),
                            edge: None,
                            action: "reports success to the scheduler".into(),
                            sql: None,
                            outcome: "run finished".into(),
                            changed: false,
                        });
                        done = true;
                        break;
                    }
                    end @ (AttemptEnd::Crashed | AttemptEnd::Failed) => {
                        let crashed = end == AttemptEnd::Crashed;
                        if crashed {
                            crashes += 1;
                        }
                        if attempt == *max_attempts {
                            break;
                        }
                        self.clock_s += 60 * i64::from(*retry_delay_minutes);
                        let when = || {
                            if *retry_delay_minutes == 0 {
                                "at once".to_string()
                            } else {
                                format!("after {retry_delay_minutes} minutes")
                            }
                        };
                        if crashed && self.tracing {
                            self.failure_words.push(format!(
                                "the scheduler retries {} ({})",
                                when(),
                                format_time(self.now())
                            ));
                        }
                        self.log(|_| Step {
                            actor: "scheduler",
                            node: Some(job_node),
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
                }
            }
            if !done {
                self.unfinished.get_or_insert_with(|| {
                    format!(
                        "run {} failed {max_attempts} times and the scheduler gave up",
                        run.id
                    )
                });
                self.log(|_| Step {
                    actor: "scheduler",
                    node: Some(job_node),
                    edge: None,
                    action: format!("gives up on run {} after {max_attempts} attempts", run.id),
                    sql: None,
                    outcome: "run failed".into(),
                    changed: false,
                });
            }
            for (i, rows) in before {
                let CCheck::RerunNoop { table, .. } = &self.m.checks[i] else {
                    continue;
                };
                let after = self.wh.tables[*table].sorted_rows();
                if after != rows && self.misses[i].is_none() {
                    let t = &self.wh.tables[*table];
                    self.misses[i] = Some(Miss {
                        expected: format!(
                            "{} unchanged: {}",
                            t.name,
                            format_rows(&t.columns, &rows)
                        ),
                        actual: format!(
                            "after run {}: {}",
                            run.id,
                            format_rows(&t.columns, &after)
                        ),
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
            }
        }
    }

    /// One attempt of the job, on the day it loads and with the stamp it writes.
    fn attempt(
        &mut self,
        b: &BatchModel,
        day: NaiveDate,
        stamp: Option<NaiveDateTime>,
        can_crash: bool,
        attempt: u32,
        run_id: &str,
    ) -> AttemptEnd {
        let BatchModel {
            job_node,
            job,
            steps,
            ..
        } = b;
        let per_run = job.transaction == Transaction::PerRun;
        if per_run {
            self.wh.begin();
            self.tick(1);
            self.log(|_| Step {
                actor: "job",
                node: Some(job_node),
                edge: None,
                action: "opens a transaction".into(),
                sql: Some("BEGIN;".into()),
                outcome: "transaction open".into(),
                changed: false,
            });
        }
        let offered: &[Fault] = if can_crash { &[Fault::JobCrash] } else { &[] };
        let total: usize = steps
            .iter()
            .map(|s| {
                if s.sink.write == WriteMode::DeleteInsert {
                    2
                } else {
                    1
                }
            })
            .sum();
        let mut done = 0;
        for step in steps {
            let parts: &[bool] = if step.sink.write == WriteMode::DeleteInsert {
                &[true, false]
            } else {
                &[false]
            };
            for &is_delete in parts {
                done += 1;
                self.tick(1);
                let result = if is_delete {
                    let p = step
                        .sink
                        .partition
                        .expect("delete_insert is only valid on a partitioned table");
                    Ok(self
                        .wh
                        .delete_where_eq(step.sink.table, p, &Value::Date(day)))
                } else {
                    self.write_step(step, day, stamp)
                };
                let sql = self.tracing.then(|| {
                    let ctx = self.sql_ctx(b, day, stamp);
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
                        "deletes {day} from {}",
                        self.wh.tables[step.sink.table].name
                    )
                } else {
                    format!("step {}: {}", step.number, step.def.title())
                };
                let edge = (job_node.as_str(), step.sink.node.as_str());
                match result {
                    Err(SqlError(message)) => {
                        self.log(|_| Step {
                            actor: "job",
                            node: Some(job_node),
                            edge: Some(edge),
                            action: what,
                            sql,
                            outcome: format!("error: {message}"),
                            changed: false,
                        });
                        self.rollback_in_trace("rolled back", false);
                        return AttemptEnd::Failed;
                    }
                    Ok(affected) => {
                        let committed = !per_run;
                        let described = || {
                            if is_delete {
                                affected.describe_delete()
                            } else {
                                affected.describe()
                            }
                        };
                        let outcome = if !self.tracing {
                            String::new()
                        } else if committed {
                            format!("committed: {}", described())
                        } else {
                            format!("{} (not committed yet)", described())
                        };
                        self.log(|_| Step {
                            actor: "job",
                            node: Some(job_node),
                            edge: Some(edge),
                            action: what,
                            sql,
                            outcome,
                            changed: committed,
                        });
                        self.observe();
                    }
                }
                if self.point(offered).is_some() {
                    let last = done == total && !per_run;
                    let place = if !self.tracing {
                        String::new()
                    } else if last {
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
                    self.crash_job(b, place, attempt, run_id);
                    return AttemptEnd::Crashed;
                }
            }
        }
        if per_run {
            self.wh.commit();
            self.tick(1);
            self.log(|_| Step {
                actor: "job",
                node: Some(job_node),
                edge: None,
                action: "commits the transaction".into(),
                sql: Some("COMMIT;".into()),
                outcome: "committed".into(),
                changed: true,
            });
            self.observe();
            if self.point(offered).is_some() {
                self.crash_job(
                    b,
                    "after COMMIT, before it reports success".into(),
                    attempt,
                    run_id,
                );
                return AttemptEnd::Crashed;
            }
        }
        AttemptEnd::Succeeded
    }

    fn crash_job(&mut self, b: &BatchModel, place: String, attempt: u32, run_id: &str) {
        let job_node = &b.job_node;
        if self.tracing {
            self.failure_words.push(format!(
                "the job crashes {place} (run {run_id}, attempt {attempt})"
            ));
        }
        self.log(|_| Step {
            actor: "job",
            node: Some(job_node),
            edge: None,
            action: format!("crashes {place}"),
            sql: None,
            outcome: "crashed".into(),
            changed: false,
        });
        self.rollback_in_trace("rolled back: nothing of this attempt is kept", true);
    }

    fn sql_ctx(
        &self,
        b: &BatchModel,
        day: NaiveDate,
        stamp: Option<NaiveDateTime>,
    ) -> sql::Ctx<'_> {
        let job = &b.job;
        sql::Ctx {
            tables: &self.wh.tables,
            types: &self.m.column_types,
            day,
            stamp,
            clock: job.date_filter == DateFilter::CurrentDateMinus1,
            dialect: self.dialect,
        }
    }

    fn select(&self, step: &CStep, day: NaiveDate, stamp: Option<NaiveDateTime>) -> Vec<Row> {
        let from = &self.wh.tables[step.from];
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
        match &step.kind {
            StepKind::Copy { map } => source
                .map(|r| {
                    let mut row: Row = map
                        .iter()
                        .map(|m| m.map_or(Value::Null, |c| r[c].clone()))
                        .collect();
                    stamp_value(&mut row);
                    row
                })
                .collect(),
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
                        stamp_value(&mut row);
                        row
                    })
                    .collect()
            }
        }
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
