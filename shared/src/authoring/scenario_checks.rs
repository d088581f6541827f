//! The checks of a scenario's parts against each other, before anything is simulated: names,
//! tables, streams and senders, jobs and runs, failures, palette and requirements.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as Json;

use crate::design::{NodeKind, OptionValues};
use crate::scenario::{
    Check, ColumnDef, Condition, Op, Scenario, StepDef, TableDef, TableRole, MAX_ATTEMPTS,
};
use crate::value::{ColumnType, Value};

use super::diagnostic::Diagnostics;
use super::json_position::child_key;
use super::points::{bound_finding, Severity};

// ---------------------------------------------------------------------------------------------
// Names: everything a scenario refers to exists and fits
// ---------------------------------------------------------------------------------------------

pub(super) fn is_slug(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

pub(super) fn list_names<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

pub(super) fn check_names(s: &Scenario, out: &mut Diagnostics) {
    if !is_slug(&s.id) {
        out.push("$.id", format!("the id \"{}\" must be lowercase letters, digits and dashes (it is used in URLs), such as \"safe-retry\"", s.id));
    }
    if s.order == 0 {
        out.push(
            "$.order",
            "order is the scenario's place in the course and starts at 1",
        );
    }
    for (field, value) in [("title", &s.title), ("task", &s.task)] {
        if value.trim().is_empty() {
            out.push(
                format!("$.{field}"),
                format!("the {field} is empty; students read it first"),
            );
        }
    }
    check_tables(s, out);
    check_streams_and_senders(s, out);
    check_job(s, out);
    check_failures(s, out);
    check_palette(s, out);
    check_requirements(s, out);
    if s.reference_designs.is_empty() {
        out.push("$.reference_designs", "add at least one reference design that passes every requirement: it proves the scenario can be solved");
    }
    for (i, w) in s.wrong_designs.iter().enumerate() {
        let path = format!("$.wrong_designs[{i}]");
        if w.misses.is_empty() {
            out.push(format!("{path}.misses"), format!("wrong design \"{}\" names no requirement; list the requirement ids it must miss", w.name));
        }
        for (j, id) in w.misses.iter().enumerate() {
            if s.requirement(id).is_none() {
                out.push(
                    format!("{path}.misses[{j}]"),
                    format!("wrong design \"{}\" names requirement \"{id}\", which does not exist; the requirement ids are {}", w.name, list_names(s.requirements.iter().map(|r| r.id.as_str()).collect::<BTreeSet<_>>())),
                );
            }
        }
    }
    let mut design_names = BTreeSet::new();
    let named = s
        .reference_designs
        .iter()
        .map(|d| (&d.name, "reference_designs"))
        .chain(s.wrong_designs.iter().map(|d| (&d.name, "wrong_designs")));
    for (i, (name, list)) in named.enumerate() {
        let index = if i < s.reference_designs.len() {
            i
        } else {
            i - s.reference_designs.len()
        };
        if name.trim().is_empty() {
            out.push(
                format!("$.{list}[{index}].name"),
                "give the design a name; it is shown when the design passes or fails unexpectedly",
            );
        } else if !design_names.insert(name.as_str()) {
            out.push(
                format!("$.{list}[{index}].name"),
                format!("two designs are called \"{name}\"; give each its own name"),
            );
        }
    }
}

pub(super) fn check_columns(path: &str, what: &str, columns: &[ColumnDef], out: &mut Diagnostics) {
    if columns.is_empty() {
        out.push(path.to_string(), format!("{what} has no columns"));
    }
    let mut seen = BTreeSet::new();
    for (c, col) in columns.iter().enumerate() {
        if col.name.trim().is_empty() {
            out.push(format!("{path}[{c}].name"), "a column needs a name");
        } else if !seen.insert(col.name.as_str()) {
            out.push(
                format!("{path}[{c}].name"),
                format!("{what} has two columns called \"{}\"", col.name),
            );
        }
    }
}

pub(super) fn check_tables(s: &Scenario, out: &mut Diagnostics) {
    let mut names = BTreeSet::new();
    for (t, table) in s.tables.iter().enumerate() {
        let path = format!("$.tables[{t}]");
        if table.name.trim().is_empty() {
            out.push(format!("{path}.name"), "a table needs a name");
        } else if !names.insert(table.name.as_str()) {
            out.push(
                format!("{path}.name"),
                format!("two tables are called \"{}\"", table.name),
            );
        }
        check_columns(
            &format!("{path}.columns"),
            &format!("table {}", table.name),
            &table.columns,
            out,
        );
        for (k, key) in table.keys.iter().enumerate() {
            if key.is_empty() {
                out.push(format!("{path}.keys[{k}]"), "a key lists at least one column; leave \"keys\" empty when the table has no natural key");
            }
            for (c, col) in key.iter().enumerate() {
                if table.column_index(col).is_none() {
                    out.push(
                        format!("{path}.keys[{k}][{c}]"),
                        format!(
                            "key column \"{col}\" is not a column of {}; its columns are {}",
                            table.name,
                            list_names(table.columns.iter().map(|c| c.name.as_str()))
                        ),
                    );
                }
            }
        }
        if let Some(p) = &table.partition {
            match table.column_type(p) {
                None => out.push(format!("{path}.partition"), format!("partition column \"{p}\" is not a column of {}", table.name)),
                Some(ColumnType::Date) => {}
                Some(ty) => out.push(format!("{path}.partition"), format!("partition column \"{p}\" is a {ty:?} column; a partition is one day, so it must be a date column")),
            }
        }
        for (r, row) in table.rows.iter().enumerate() {
            if row.len() != table.columns.len() {
                out.push(
                    format!("{path}.rows[{r}]"),
                    format!(
                        "the row has {} values but table {} has {} columns ({})",
                        row.len(),
                        table.name,
                        table.columns.len(),
                        list_names(table.columns.iter().map(|c| c.name.as_str()))
                    ),
                );
                continue;
            }
            for (c, (cell, col)) in row.iter().zip(&table.columns).enumerate() {
                if let Err(m) = Value::from_json(col.ty, cell) {
                    out.push(
                        format!("{path}.rows[{r}][{c}]"),
                        format!("{}: {m}", col.name),
                    );
                }
            }
        }
        if table.role == TableRole::Source
            && table.partition.is_none()
            && s.job.as_ref().is_some_and(|j| j.source == table.name)
        {
            out.push(format!("{path}.partition"), format!("the job reads {} one day at a time, so the table needs a date partition column", table.name));
        }
    }
    if !s.tables.iter().any(|t| t.role == TableRole::Sink) {
        out.push(
            "$.tables",
            "the scenario has no sink table (role \"sink\") for the pipeline to write",
        );
    }
}

pub(super) fn check_messages(
    path: &str,
    what: &str,
    fields: &[ColumnDef],
    messages: &[BTreeMap<String, Json>],
    out: &mut Diagnostics,
) {
    for (i, m) in messages.iter().enumerate() {
        for (name, raw) in m {
            match fields.iter().find(|f| &f.name == name) {
                None => out.push(
                    child_key(&format!("{path}.messages[{i}]"), name),
                    format!(
                        "\"{name}\" is not a field of {what}; its fields are {}",
                        list_names(fields.iter().map(|f| f.name.as_str()))
                    ),
                ),
                Some(f) => {
                    if let Err(e) = Value::from_json(f.ty, raw) {
                        out.push(
                            child_key(&format!("{path}.messages[{i}]"), name),
                            format!("{name}: {e}"),
                        );
                    }
                }
            }
        }
    }
}

pub(super) fn check_streams_and_senders(s: &Scenario, out: &mut Diagnostics) {
    let tables: BTreeSet<&str> = s.tables.iter().map(|t| t.name.as_str()).collect();
    let mut names = BTreeSet::new();
    let sources = s
        .streams
        .iter()
        .enumerate()
        .map(|(i, st)| {
            (
                format!("$.streams[{i}]"),
                "stream",
                &st.name,
                &st.key_field,
                &st.fields,
                &st.messages,
            )
        })
        .chain(s.senders.iter().enumerate().map(|(i, se)| {
            (
                format!("$.senders[{i}]"),
                "sender",
                &se.name,
                &se.key_field,
                &se.fields,
                &se.messages,
            )
        }));
    for (path, kind, name, key_field, fields, messages) in sources {
        if name.trim().is_empty() {
            out.push(format!("{path}.name"), format!("a {kind} needs a name"));
        } else if tables.contains(name.as_str()) || !names.insert(name.clone()) {
            out.push(format!("{path}.name"), format!("the name \"{name}\" is already used by another table, stream or sender; requirements name their source by it"));
        }
        let what = format!("{kind} {name}");
        check_columns(&format!("{path}.fields"), &what, fields, out);
        if let Some(k) = key_field {
            if !fields.iter().any(|f| &f.name == k) {
                out.push(
                    format!("{path}.key_field"),
                    format!(
                        "key_field \"{k}\" is not a field of {what}; its fields are {}",
                        list_names(fields.iter().map(|f| f.name.as_str()))
                    ),
                );
            }
        }
        if messages.is_empty() {
            out.push(
                format!("{path}.messages"),
                format!("{what} has no messages"),
            );
        }
        check_messages(&path, &what, fields, messages, out);
    }
    // A sender's idempotency key is written into a sink column by name; without that column
    // the key would be dropped and no design could use it.
    let sinks: Vec<&TableDef> = s
        .tables
        .iter()
        .filter(|t| t.role == TableRole::Sink)
        .collect();
    let offers_keys = s.palette.sender.as_ref().is_some_and(|p| {
        p.get("idempotency_key")
            .is_none_or(|v| v.iter().any(|x| x != "none"))
    });
    for (i, se) in s.senders.iter().enumerate() {
        if offers_keys
            && !sinks.is_empty()
            && !sinks
                .iter()
                .any(|t| t.column_index(&se.idempotency_field).is_some())
        {
            out.push(
                format!("$.senders[{i}].idempotency_field"),
                format!(
                    "the palette offers idempotency keys, but no sink table has a column \"{}\" to store them; add the column, point idempotency_field at one, or offer only idempotency_key \"none\"",
                    se.idempotency_field
                ),
            );
        }
    }
}

pub(super) fn check_conditions(
    path: &str,
    table: &TableDef,
    conds: &[Condition],
    out: &mut Diagnostics,
) {
    for (i, c) in conds.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let Some(ty) = table.column_type(&c.column) else {
            out.push(
                format!("{p}.column"),
                format!(
                    "table {} has no column \"{}\"; its columns are {}",
                    table.name,
                    c.column,
                    list_names(table.columns.iter().map(|c| c.name.as_str()))
                ),
            );
            continue;
        };
        match (c.op, &c.value) {
            (Op::In | Op::NotIn, Json::Array(items)) => {
                for (j, v) in items.iter().enumerate() {
                    if let Err(m) = Value::from_json(ty, v) {
                        out.push(format!("{p}.value[{j}]"), format!("{}: {m}", c.column));
                    }
                }
            }
            (Op::In | Op::NotIn, _) => out.push(
                format!("{p}.value"),
                "in and not_in take a list of values, such as [101, 102]",
            ),
            (_, Json::Array(_)) => out.push(
                format!("{p}.value"),
                "a list of values needs the op \"in\" or \"not_in\"",
            ),
            (_, v) => {
                if v.is_null() {
                    out.push(
                        format!("{p}.value"),
                        "a comparison with NULL never matches a row in SQL; compare with a value",
                    );
                } else if let Err(m) = Value::from_json(ty, v) {
                    out.push(format!("{p}.value"), format!("{}: {m}", c.column));
                }
            }
        }
    }
}

pub(super) fn check_job(s: &Scenario, out: &mut Diagnostics) {
    if s.job.is_none() && s.jobs.is_empty() {
        if !s.runs.is_empty() {
            out.push(
                "$.runs",
                "runs belong to a batch job, and the scenario has no \"job\"",
            );
        }
        if s.streams.is_empty() && s.senders.is_empty() {
            out.push("$", "the scenario has no data to move: give it a \"job\" (with a source table), a stream or a sender");
        }
        return;
    }
    let paths = s
        .job
        .iter()
        .map(|_| "$.job".to_string())
        .chain((0..s.jobs.len()).map(|i| format!("$.jobs[{i}]")));
    let mut targets = BTreeSet::new();
    for (job, path) in s.all_jobs().zip(paths) {
        check_one_job(s, job, &path, &mut targets, out);
    }
    check_runs(s, out);
}

/// One job: what it reads, its attempts and its steps. `targets` collects the tables the
/// jobs' steps write, which must all differ.
pub(super) fn check_one_job<'s>(
    s: &'s Scenario,
    job: &'s crate::scenario::JobDef,
    path: &str,
    targets: &mut BTreeSet<&'s str>,
    out: &mut Diagnostics,
) {
    if s.table(&job.source).is_none() {
        out.push(
            format!("{path}.source"),
            format!(
                "the job reads \"{}\", which is not a table of the scenario; its tables are {}",
                job.source,
                list_names(s.tables.iter().map(|t| t.name.as_str()))
            ),
        );
    }
    if job.steps.is_empty() {
        out.push(
            format!("{path}.steps"),
            "the job has no steps; add at least one",
        );
    }
    if job.max_attempts == 0 {
        out.push(
            format!("{path}.max_attempts"),
            "the scheduler makes at least one attempt; max_attempts must be 1 or more",
        );
    }
    if job.max_attempts > MAX_ATTEMPTS {
        out.push(
            format!("{path}.max_attempts"),
            format!("max_attempts is {}; the scheduler makes at most {MAX_ATTEMPTS} attempts per run (a job that fails on every attempt is retried that often in every schedule checked)", job.max_attempts),
        );
    }
    let mut ids = BTreeSet::new();
    for (i, step) in job.steps.iter().enumerate() {
        let p = format!("{path}.steps[{i}]");
        if !ids.insert(step.id()) {
            out.push(
                format!("{p}.id"),
                format!("two steps have the id \"{}\"", step.id()),
            );
        }
        check_step(s, step, &p, targets, out);
    }
}

pub(super) fn check_step<'s>(
    s: &'s Scenario,
    step: &'s StepDef,
    p: &str,
    targets: &mut BTreeSet<&'s str>,
    out: &mut Diagnostics,
) {
    let from = s.table(step.from());
    if from.is_none() {
        out.push(
            format!("{p}.from"),
            format!(
                "step \"{}\" reads \"{}\", which is not a table of the scenario; its tables are {}",
                step.id(),
                step.from(),
                list_names(s.tables.iter().map(|t| t.name.as_str()))
            ),
        );
    }
    if let Some(from) = from {
        if from.partition.is_none() {
            out.push(
                format!("{p}.from"),
                format!(
                    "step \"{}\" reads one day of {}, so {} needs a date partition column",
                    step.id(),
                    from.name,
                    from.name
                ),
            );
        }
    }
    let target = s.table(step.target());
    match target {
            None => out.push(format!("{p}.target"), format!("step \"{}\" writes \"{}\", which is not a table of the scenario; its sink tables are {}", step.id(), step.target(), sink_names(s))),
            Some(t) if t.role != TableRole::Sink => out.push(format!("{p}.target"), format!("step \"{}\" writes {}, which is a source table; steps write sink tables", step.id(), t.name)),
            Some(_) => {}
        }
    if !targets.insert(step.target()) {
        out.push(
                format!("{p}.target"),
                format!(
                    "two steps write {}; a design has one table node per step, and one stage writes a table",
                    step.target()
                ),
            );
    }
    if let Some(from) = from {
        check_conditions(&format!("{p}.where"), from, step.filter(), out);
    }
    let (Some(from), Some(target)) = (from, target) else {
        return;
    };
    match step {
        StepDef::Copy { columns, .. } | StepDef::Distinct { columns, .. } => {
            if columns.is_empty() {
                out.push(
                    format!("{p}.columns"),
                    "a copy step lists the columns it copies",
                );
            }
            for (c, col) in columns.iter().enumerate() {
                for t in [from, target] {
                    if t.column_index(col).is_none() {
                        out.push(format!("{p}.columns[{c}]"), format!("column \"{col}\" is not a column of {}; a copied column must be in both {} and {}", t.name, from.name, target.name));
                    }
                }
            }
        }
        StepDef::Count { group_by, into, .. } => {
            for (field, col, t) in [
                ("group_by", group_by, from),
                ("group_by", group_by, target),
                ("into", into, target),
            ] {
                if t.column_index(col).is_none() {
                    out.push(
                        format!("{p}.{field}"),
                        format!(
                            "{field} \"{col}\" is not a column of {}; its columns are {}",
                            t.name,
                            list_names(t.columns.iter().map(|c| c.name.as_str()))
                        ),
                    );
                }
            }
            if let Some(ty) = target.column_type(into) {
                if ty != ColumnType::Integer {
                    out.push(
                        format!("{p}.into"),
                        format!("into \"{into}\" receives a count and must be an integer column"),
                    );
                }
            }
        }
        StepDef::Sum {
            group_by,
            sum,
            into,
            ..
        } => {
            for (field, col, t) in [
                ("group_by", group_by, from),
                ("group_by", group_by, target),
                ("sum", sum, from),
                ("into", into, target),
            ] {
                if t.column_index(col).is_none() {
                    out.push(
                        format!("{p}.{field}"),
                        format!(
                            "{field} \"{col}\" is not a column of {}; its columns are {}",
                            t.name,
                            list_names(t.columns.iter().map(|c| c.name.as_str()))
                        ),
                    );
                }
            }
            if let Some(ty) = from.column_type(sum) {
                if !matches!(ty, ColumnType::Decimal | ColumnType::Integer) {
                    out.push(
                        format!("{p}.sum"),
                        format!("sum \"{sum}\" must be a decimal or integer column"),
                    );
                }
            }
            if let Some(ty) = target.column_type(into) {
                if ty != ColumnType::Decimal {
                    out.push(
                        format!("{p}.into"),
                        format!(
                            "into \"{into}\" receives a sum of money and must be a decimal column"
                        ),
                    );
                }
            }
        }
    }
}

/// The runs: ids, order, the job each is of, and the changes made before them.
pub(super) fn check_runs(s: &Scenario, out: &mut Diagnostics) {
    if s.runs.is_empty() {
        out.push(
            "$.runs",
            "the job needs at least one run: the day it loads and when it starts",
        );
    }
    let mut run_ids = BTreeSet::new();
    for (i, run) in s.runs.iter().enumerate() {
        if !is_slug(&run.id) {
            out.push(format!("$.runs[{i}].id"), format!("the run id \"{}\" must be lowercase letters, digits and dashes, such as \"load-2026-01-10\"", run.id));
        }
        if !run_ids.insert(run.id.as_str()) {
            out.push(
                format!("$.runs[{i}].id"),
                format!("two runs have the id \"{}\"", run.id),
            );
        }
        if i > 0 && run.start < s.runs[i - 1].start {
            out.push(format!("$.runs[{i}].start"), format!("run \"{}\" starts before the run listed above it; list runs in the order they start", run.id));
        }
    }
}

pub(super) fn source_names(s: &Scenario) -> String {
    list_names(
        s.tables
            .iter()
            .filter(|t| t.role == TableRole::Source)
            .map(|t| t.name.as_str()),
    )
}

pub(super) fn sink_names(s: &Scenario) -> String {
    list_names(
        s.tables
            .iter()
            .filter(|t| t.role == TableRole::Sink)
            .map(|t| t.name.as_str()),
    )
}

pub(super) fn check_failures(s: &Scenario, out: &mut Diagnostics) {
    let f = &s.failures;
    let any = f.job_crash.is_some()
        || f.consumer_crash.is_some()
        || f.message_lost.is_some()
        || f.ack_lost.is_some()
        || f.redelivery.is_some();
    if f.bound == 0 && any {
        out.push("$.failures.bound", "bound is 0, so no failure is ever injected; set it to the most failures one schedule may have");
    }
    if f.bound > 0 && !any {
        out.push("$.failures", "no failure kind is switched on; add job_crash, consumer_crash, message_lost, ack_lost or redelivery");
    }
    if let Some((Severity::Error, message)) = bound_finding(s) {
        out.push("$.failures.bound", message);
    }
    if let Some(jc) = &f.job_crash {
        if s.all_jobs().next().is_none() {
            out.push(
                "$.failures.job_crash",
                "job_crash needs a batch job, and the scenario has no \"job\"",
            );
        }
        if jc.max_per_run == 0 {
            out.push(
                "$.failures.job_crash.max_per_run",
                "max_per_run is 0, so the job never crashes; set it to 1 or more",
            );
        }
        if let Some(j) = s.all_jobs().find(|j| jc.max_per_run >= j.max_attempts) {
            out.push(
                "$.failures.job_crash.max_per_run",
                format!("with {} crashes per run and {} attempts the scheduler gives up on a run; lower max_per_run or raise job.max_attempts", jc.max_per_run, j.max_attempts),
            );
        }
        for (i, id) in jc.runs.iter().flatten().enumerate() {
            if !s.runs.iter().any(|r| &r.id == id) {
                out.push(
                    format!("$.failures.job_crash.runs[{i}]"),
                    format!(
                        "no run \"{id}\"; the runs are {}",
                        list_names(s.runs.iter().map(|r| r.id.as_str()))
                    ),
                );
            }
        }
    }
    if f.consumer_crash.is_some() && s.streams.is_empty() && s.senders.is_empty() {
        out.push("$.failures.consumer_crash", "consumer_crash happens in a consumer, and the scenario has no stream or sender for one to read");
    }
    if f.redelivery.is_some() && s.streams.is_empty() {
        out.push("$.failures.redelivery", "redelivery happens on a stream, and the scenario has none (a sender is explored with message_lost and ack_lost)");
    }
    let longest = s
        .streams
        .iter()
        .map(|st| st.messages.len())
        .chain(s.senders.iter().map(|se| se.messages.len()))
        .max()
        .unwrap_or(0);
    if let Some(offsets) = f.consumer_crash.as_ref().and_then(|c| c.offsets.as_ref()) {
        // Late duplicates lengthen the stream by at most one message per failure.
        let room = longest
            + if f.redelivery.is_some() {
                f.bound as usize
            } else {
                0
            };
        if offsets.is_empty() {
            out.push("$.failures.consumer_crash.offsets", "an empty list of offsets means the consumer never crashes; leave \"offsets\" out to crash at every offset");
        }
        for (i, o) in offsets.iter().enumerate() {
            if *o as usize >= room && longest > 0 {
                out.push(
                    format!("$.failures.consumer_crash.offsets[{i}]"),
                    format!(
                        "offset {o} is past the end of the stream (offsets 0 to {})",
                        room.saturating_sub(1)
                    ),
                );
            }
        }
    }
    if let Some(r) = &f.redelivery {
        if r.after_min == 0 {
            out.push(
                "$.failures.redelivery.after_min",
                "a late copy comes after at least 1 other message; after_min must be 1 or more",
            );
        }
        if r.after_min > r.after_max {
            out.push(
                "$.failures.redelivery",
                format!(
                    "after_min ({}) is larger than after_max ({})",
                    r.after_min, r.after_max
                ),
            );
        }
        if longest > 0 && r.after_min.max(1) as usize >= longest {
            out.push("$.failures.redelivery.after_min", format!("no message has {} others after it in a stream of {longest}, so no late copy is ever explored", r.after_min.max(1)));
        }
    }
    for (what, on) in [
        ("message_lost", f.message_lost.is_some()),
        ("ack_lost", f.ack_lost.is_some()),
    ] {
        if on && s.senders.is_empty() {
            out.push(format!("$.failures.{what}"), format!("{what} happens between a sender and its consumer, and the scenario has no sender"));
        }
    }
}

pub(super) fn check_palette(s: &Scenario, out: &mut Diagnostics) {
    for kind in NodeKind::ALL {
        let Some(options) = s.palette.kind(kind) else {
            continue;
        };
        let path = format!("$.palette.{}", kind.name());
        let sensible = match kind {
            NodeKind::SourceTable | NodeKind::BatchJob => s.job.is_some(),
            NodeKind::Stream => !s.streams.is_empty(),
            NodeKind::Sender => !s.senders.is_empty(),
            NodeKind::StreamConsumer => !s.streams.is_empty() || !s.senders.is_empty(),
            NodeKind::Table => s.tables.iter().any(|t| t.role == TableRole::Sink),
        };
        if !sensible {
            let why = match kind {
                NodeKind::SourceTable | NodeKind::BatchJob => "the scenario has no job",
                NodeKind::Stream => "the scenario has no stream",
                NodeKind::Sender => "the scenario has no sender",
                NodeKind::StreamConsumer => "the scenario has no stream or sender",
                NodeKind::Table => "the scenario has no sink table",
            };
            out.push(
                path.clone(),
                format!(
                    "the palette offers {} ({}), but {why}; remove it",
                    kind.describe(),
                    kind.name()
                ),
            );
        }
        let specs = kind.options();
        for (name, values) in options {
            let opath = child_key(&path, name);
            let Some(spec) = specs.iter().find(|o| o.name == name) else {
                out.push(
                    opath,
                    format!(
                        "{} has no option \"{name}\"; its options are {}",
                        kind.name(),
                        list_names(specs.iter().map(|o| o.name))
                    ),
                );
                continue;
            };
            if values.is_empty() {
                out.push(opath.clone(), format!("no value of {name} is offered, so no design can be drawn; list the values a student may choose, or leave {name} out to offer them all"));
            }
            let mut seen = BTreeSet::new();
            for (v, value) in values.iter().enumerate() {
                let vpath = format!("{opath}[{v}]");
                if !seen.insert(value.as_str()) {
                    out.push(vpath.clone(), format!("{value} is listed twice"));
                }
                match spec.values {
                    OptionValues::Choice(choices) => {
                        if !choices.contains(&value.as_str()) {
                            out.push(
                                vpath,
                                format!(
                                    "\"{value}\" is not a value of {} {name}; its values are {}",
                                    kind.name(),
                                    choices.join(", ")
                                ),
                            );
                        }
                    }
                    OptionValues::Count { max, .. } => {
                        if !value.parse::<u32>().is_ok_and(|n| n >= 1 && n <= max) {
                            out.push(vpath, format!("{name} is a whole number from 1 to {max}, written as a string such as \"2\"; \"{value}\" is not"));
                        }
                    }
                    OptionValues::SourceTable => {
                        if !s
                            .tables
                            .iter()
                            .any(|t| t.role == TableRole::Source && &t.name == value)
                        {
                            out.push(vpath, format!("\"{value}\" is not a source table of the scenario; its source tables are {}", source_names(s)));
                        }
                    }
                    OptionValues::SinkTable => {
                        if !s
                            .tables
                            .iter()
                            .any(|t| t.role == TableRole::Sink && &t.name == value)
                        {
                            out.push(vpath, format!("\"{value}\" is not a sink table of the scenario; its sink tables are {}", sink_names(s)));
                        }
                    }
                    OptionValues::Stream => {
                        if s.stream(value).is_none() {
                            out.push(vpath, format!("\"{value}\" is not a stream of the scenario; its streams are {}", list_names(s.streams.iter().map(|x| x.name.as_str()))));
                        }
                    }
                    OptionValues::Key => {
                        out.push(opath.clone(), "the palette cannot restrict key; a table offers the keys listed in its \"keys\", so change those instead");
                    }
                    OptionValues::Version => {
                        out.push(opath.clone(), "the palette cannot restrict version; a table offers the columns listed in its \"versions\", so change those instead");
                    }
                }
            }
        }
    }
}

pub(super) fn check_requirements(s: &Scenario, out: &mut Diagnostics) {
    if s.requirements.is_empty() {
        out.push(
            "$.requirements",
            "the scenario has no requirements; add at least one",
        );
    }
    let mut ids: BTreeMap<&str, usize> = BTreeMap::new();
    for (r, req) in s.requirements.iter().enumerate() {
        let path = format!("$.requirements[{r}]");
        if !is_slug(&req.id) {
            out.push(format!("{path}.id"), format!("the requirement id \"{}\" must be lowercase letters, digits and dashes, such as \"revenue-correct\"; graders read it", req.id));
        }
        if let Some(first) = ids.insert(req.id.as_str(), r) {
            out.push(format!("{path}.id"), format!("the requirement id \"{}\" is already used by $.requirements[{first}]; requirement ids must be unique", req.id));
        }
        for (field, value) in [("text", &req.text), ("hint", &req.hint)] {
            if value.trim().is_empty() {
                out.push(
                    format!("{path}.{field}"),
                    format!(
                        "the {field} is empty; a student reads it when the requirement is missed"
                    ),
                );
            }
        }
        check_check(s, &format!("{path}.check"), &req.id, &req.check, out);
    }
}

/// The table a check names, or a diagnostic that says which tables exist.
pub(super) fn table_of<'a>(
    s: &'a Scenario,
    path: &str,
    id: &str,
    name: &str,
    out: &mut Diagnostics,
) -> Option<&'a TableDef> {
    let t = s.table(name);
    if t.is_none() {
        out.push(format!("{path}.table"), format!("requirement \"{id}\" checks table \"{name}\", which the scenario does not define; its tables are {}", list_names(s.tables.iter().map(|t| t.name.as_str()))));
    }
    t
}

pub(super) fn column_of(
    t: &TableDef,
    path: &str,
    name: &str,
    out: &mut Diagnostics,
) -> Option<ColumnType> {
    let ty = t.column_type(name);
    if ty.is_none() {
        out.push(
            path.to_string(),
            format!(
                "table {} has no column \"{name}\"; its columns are {}",
                t.name,
                list_names(t.columns.iter().map(|c| c.name.as_str()))
            ),
        );
    }
    ty
}

pub(super) fn check_check(s: &Scenario, p: &str, id: &str, check: &Check, out: &mut Diagnostics) {
    match check {
        Check::Value {
            table,
            column,
            filter,
            expected,
        } => {
            let Some(t) = table_of(s, p, id, table, out) else {
                return;
            };
            check_conditions(&format!("{p}.where"), t, filter, out);
            if let Some(ty) = column_of(t, &format!("{p}.column"), column, out) {
                if let Err(m) = Value::from_json(ty, expected) {
                    out.push(format!("{p}.expected"), format!("{column}: {m}"));
                }
            }
        }
        Check::Sum {
            table,
            column,
            filter,
            expected,
        } => {
            let Some(t) = table_of(s, p, id, table, out) else {
                return;
            };
            check_conditions(&format!("{p}.where"), t, filter, out);
            if let Some(ty) = column_of(t, &format!("{p}.column"), column, out) {
                if !matches!(ty, ColumnType::Decimal | ColumnType::Integer) {
                    out.push(
                        format!("{p}.column"),
                        format!("a sum needs a decimal or integer column, and {column} is not one"),
                    );
                }
            }
            if let Some(e) = expected {
                if !matches!(
                    Value::from_json(ColumnType::Decimal, e),
                    Ok(Value::Decimal(_))
                ) {
                    out.push(format!("{p}.expected"), format!("expected is a decimal written as a string, such as \"80.50\"; {e} is not one"));
                }
            }
        }
        Check::RowCount { table, filter, .. } => {
            let Some(t) = table_of(s, p, id, table, out) else {
                return;
            };
            check_conditions(&format!("{p}.where"), t, filter, out);
        }
        Check::Unique { table, columns } => {
            let Some(t) = table_of(s, p, id, table, out) else {
                return;
            };
            if columns.is_empty() {
                out.push(
                    format!("{p}.columns"),
                    "list the columns that must be unique together",
                );
            }
            for (c, col) in columns.iter().enumerate() {
                column_of(t, &format!("{p}.columns[{c}]"), col, out);
            }
        }
        Check::Complete {
            table,
            column,
            source,
            source_column,
            source_where,
        } => {
            let Some(t) = table_of(s, p, id, table, out) else {
                return;
            };
            column_of(t, &format!("{p}.column"), column, out);
            if let Some(src) = s.table(source) {
                column_of(src, &format!("{p}.source_column"), source_column, out);
                check_conditions(&format!("{p}.source_where"), src, source_where, out);
            } else {
                let fields = s
                    .stream(source)
                    .map(|x| &x.fields)
                    .or_else(|| s.sender(source).map(|x| &x.fields));
                match fields {
                    None => out.push(
                        format!("{p}.source"),
                        format!(
                            "\"{source}\" is not a table, stream or sender of the scenario; choose one of {}",
                            list_names(s.tables.iter().map(|x| x.name.as_str()).chain(s.streams.iter().map(|x| x.name.as_str())).chain(s.senders.iter().map(|x| x.name.as_str())))
                        ),
                    ),
                    Some(fields) => {
                        if !fields.iter().any(|f| &f.name == source_column) {
                            out.push(format!("{p}.source_column"), format!("{source} has no field \"{source_column}\"; its fields are {}", list_names(fields.iter().map(|f| f.name.as_str()))));
                        }
                        if !source_where.is_empty() {
                            out.push(format!("{p}.source_where"), format!("source_where filters a source table; every message of {source} counts"));
                        }
                    }
                }
            }
        }
        Check::SameAsCleanRun { tables } => {
            if tables.is_empty() {
                out.push(
                    format!("{p}.tables"),
                    "list the tables that must end as after a run with no failure",
                );
            }
            for (i, name) in tables.iter().enumerate() {
                if s.table(name).is_none() {
                    out.push(format!("{p}.tables[{i}]"), format!("requirement \"{id}\" checks table \"{name}\", which the scenario does not define; its tables are {}", list_names(s.tables.iter().map(|t| t.name.as_str()))));
                }
            }
        }
        Check::RerunNoop { table, run } => {
            table_of(s, p, id, table, out);
            if !s.runs.iter().any(|r| &r.id == run) {
                out.push(format!("{p}.run"), format!("requirement \"{id}\" names run \"{run}\", which is not one of the scenario's runs ({})", list_names(s.runs.iter().map(|r| r.id.as_str()))));
            }
        }
        Check::NeverSeen {
            table,
            filter,
            rows,
            column,
            value,
            from_first_row,
        } => {
            let Some(t) = table_of(s, p, id, table, out) else {
                return;
            };
            if *from_first_row && *rows == Some(0) {
                out.push(format!("{p}.from_first_row"), "from_first_row starts the check at the first row that matches, and rows 0 says no row may match: the check could only pass; leave out from_first_row, or give the number of rows a reader must find");
            }
            check_conditions(&format!("{p}.where"), t, filter, out);
            match (column, value) {
                (Some(c), Some(v)) => {
                    if let Some(ty) = column_of(t, &format!("{p}.column"), c, out) {
                        if let Err(m) = Value::from_json(ty, v) {
                            out.push(format!("{p}.value"), format!("{c}: {m}"));
                        }
                    }
                }
                (Some(_), None) => out.push(format!("{p}.value"), "column needs a value: the value every matching row must have"),
                (None, Some(_)) => out.push(format!("{p}.column"), "value needs a column: which column must hold it"),
                (None, None) if rows.is_none() => out.push(p.to_string(), "never_seen needs rows, or column and value, or both; without them it checks nothing"),
                (None, None) => {}
            }
        }
        Check::NeverDrops {
            table,
            column,
            filter,
        } => {
            let Some(t) = table_of(s, p, id, table, out) else {
                return;
            };
            check_conditions(&format!("{p}.where"), t, filter, out);
            if let Some(ty) = column_of(t, &format!("{p}.column"), column, out) {
                if !matches!(ty, ColumnType::Decimal | ColumnType::Integer) {
                    out.push(format!("{p}.column"), format!("never_drops adds up \"{column}\", which must be a decimal or integer column"));
                }
            }
        }
        Check::Finishes {} => {}
    }
}
