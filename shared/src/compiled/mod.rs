//! A scenario compiled once: every name resolved to an index, every literal typed.
//!
//! [`Compiled::new`] is the one place where a scenario file's contents are checked against
//! each other (tables, columns, steps, runs, messages, failures, requirements), so that what
//! holds a `Compiled` holds a scenario the simulator can run: validating a design against it
//! and compiling the two into a model cannot find a mistake of the author's any more. The
//! catalogue keeps one per scenario and every check reads it.

use crate::scenario::{FailureSpec, Palette, Scenario};

mod error;

mod table;

mod cond;

mod failures;
mod inputs;
mod jobs;

mod checks;

pub(crate) use checks::CCheck;
pub(crate) use cond::{eval, sum, Cond};
pub(crate) use error::serr;
pub use error::ScenarioError;
use failures::compile_failures;
pub(crate) use failures::{ConsumerCrash, Failures};
pub(crate) use inputs::{InputInfo, MessageInfo};
pub(crate) use jobs::{ChangeInfo, JobInfo, RunInfo, StepInfo, StepKind};
pub(crate) use table::TableInfo;

/// A scenario whose every part was checked and compiled: what validation, the model and the
/// check read. It keeps the file it came from ([`Compiled::scenario`]).
#[derive(Clone, Debug)]
pub struct Compiled {
    scenario: Scenario,
    pub(crate) tables: Vec<TableInfo>,
    pub(crate) jobs: Vec<JobInfo>,
    pub(crate) runs: Vec<RunInfo>,
    pub(crate) streams: Vec<InputInfo>,
    pub(crate) senders: Vec<InputInfo>,
    pub(crate) checks: Vec<CCheck>,
    pub(crate) failures: Failures,
}

impl Compiled {
    /// Compiles a scenario file. Errors are the author's, each at its JSON path, sorted.
    pub fn new(scenario: Scenario) -> Result<Compiled, Vec<ScenarioError>> {
        let mut errors = Vec::new();
        let tables = table::compile_tables(&scenario, &mut errors);
        let jobs = jobs::compile_jobs(&scenario, &tables, &mut errors);
        let runs = jobs::compile_runs(&scenario, &tables, &jobs, &mut errors);
        let jobs = jobs::with_runs(jobs, &runs);
        let streams = inputs::compile_streams(&scenario, &mut errors);
        let senders = inputs::compile_senders(&scenario, &mut errors);
        let failures = compile_failures(&scenario);
        let checks = checks::compile_checks(&scenario, &tables, &streams, &senders, &mut errors);
        if !errors.is_empty() {
            errors.sort();
            errors.dedup();
            return Err(errors);
        }
        Ok(Compiled {
            scenario,
            tables,
            jobs,
            runs,
            streams,
            senders,
            checks,
            failures,
        })
    }

    /// Parses and compiles a scenario file's text. A text that is not a scenario is one error
    /// at `$` (`crate::authoring` reports such a file at its line and column).
    pub fn parse(text: &str) -> Result<Compiled, Vec<ScenarioError>> {
        let scenario = Scenario::from_json(text).map_err(|e| vec![serr("$", e.to_string())])?;
        Compiled::new(scenario)
    }

    /// The scenario file this was compiled from.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The scenario file, given back.
    pub fn into_scenario(self) -> Scenario {
        self.scenario
    }

    /// The palette, to widen for a variant of a design (coverage tries values the scenario
    /// does not offer).
    pub(crate) fn palette_mut(&mut self) -> &mut Palette {
        &mut self.scenario.palette
    }

    /// The same scenario under other failures (an advisory's variant).
    pub(crate) fn with_failures(&self, failures: FailureSpec) -> Compiled {
        let mut c = self.clone();
        c.scenario.failures = failures;
        c.failures = compile_failures(&c.scenario);
        let crash = c.scenario.failures.job_crash.as_ref();
        for run in &mut c.runs {
            run.may_crash =
                crash.is_some_and(|j| j.runs.as_ref().is_none_or(|ids| ids.contains(&run.id)));
        }
        c
    }

    pub(crate) fn table(&self, name: &str) -> Option<usize> {
        self.tables.iter().position(|t| t.name == name)
    }

    pub(crate) fn stream(&self, name: &str) -> Option<usize> {
        self.streams.iter().position(|s| s.name == name)
    }

    /// The job that reads `table`, if one does.
    pub(crate) fn job_reading(&self, table: usize) -> Option<usize> {
        self.jobs.iter().position(|j| j.source == table)
    }
}
