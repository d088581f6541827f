//! Checks on scenario files for course authors: the file parses and fits the format, every
//! name it uses exists, every reference design passes, every wrong design misses what it
//! names, and every requirement is missed by some wrong design. Verdicts come from the real
//! simulator, so a scenario that validates is one the course can ship.
//!
//! This module reads no files: callers (the server's start-up, the `scenarios validate`
//! command, tests) read them and pass the text. Every problem is reported, not the first
//! only, each with the file, a JSON path such as `$.requirements[2].check.table`, and a
//! message an author can act on.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::check::{check_json, CheckError};
use crate::design::{NodeKind, OptionValues};
use crate::scenario::{
    Check, ColumnDef, Condition, ExampleDesign, FailureSpec, JobDef, Op, Palette, Requirement,
    RunDef, Scenario, SenderDef, StepDef, StreamDef, TableDef, TableRole, WrongDesign,
};
use crate::value::{ColumnType, Value};
use crate::verdict::Verdict;

mod json_position;

use json_position::{child_key, line_column, offset_of, Spans};

/// One problem in a scenario file: the file, the JSON path inside it, and a message an
/// author can act on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Diagnostic {
    pub file: String,
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.path, self.message)
    }
}

/// The JSON Schema of scenario files, generated from the Rust types. The committed copy is
/// `scenarios/scenario.schema.json`; a test keeps the two equal.
///
/// Designs are typed by the design schema, built here from the node kinds and their options
/// (the scenario types hold a design as plain JSON, and refer to `#/$defs/Design`). A tagged
/// object (a requirement's check, a job's step, a node) also lists its `kind`s at the top, so
/// that an editor answers a misspelt kind with the kinds there are.
#[cfg(feature = "schema")]
pub fn schema_json() -> String {
    let mut schema = schemars::schema_for!(Scenario).to_value();
    let defs = schema
        .get_mut("$defs")
        .and_then(Json::as_object_mut)
        .expect("the scenario schema has definitions");
    for (name, def) in design_schemas() {
        defs.insert(name.into(), def);
    }
    defs.insert("Palette".into(), palette_schema());
    // A failure kind needs the part of the scenario it happens to.
    let needs = |kind: &str, part: &str, with: Json| {
        serde_json::json!({
            "if": { "required": ["failures"], "properties": { "failures": { "required": [kind] } } },
            "then": { "required": [part], "properties": { part: with } },
        })
    };
    let list = serde_json::json!({ "minItems": 1 });
    let rules = Json::Array(vec![
        needs("job_crash", "job", serde_json::json!({ "type": "object" })),
        needs("consumer_crash", "streams", list.clone()),
        needs("redelivery", "streams", list.clone()),
        needs("message_lost", "senders", list.clone()),
        needs("ack_lost", "senders", list),
    ]);
    for name in ["Check", "StepDef", "Node"] {
        let Some(Json::Object(def)) = defs.get_mut(name) else {
            continue;
        };
        let kinds: Vec<Json> = def
            .get("oneOf")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.pointer("/properties/kind/const").cloned())
            .collect();
        def.insert("type".into(), "object".into());
        def.insert("required".into(), serde_json::json!(["kind"]));
        def.insert(
            "properties".into(),
            serde_json::json!({ "kind": { "description": "What kind it is; each kind has its own fields.", "enum": kinds } }),
        );
    }
    if let Json::Object(top) = &mut schema {
        top.insert("allOf".into(), rules);
    }
    let mut text = serde_json::to_string_pretty(&schema).expect("a JSON Schema always serialises");
    text.push('\n');
    text
}

/// The palette's schema, from the node kinds and their options: per kind, the options it has
/// and, for each, the values it may offer (`key` cannot be restricted).
#[cfg(feature = "schema")]
fn palette_schema() -> Json {
    use serde_json::json;
    let mut kinds = serde_json::Map::new();
    for kind in NodeKind::ALL {
        let mut options = serde_json::Map::new();
        for spec in kind.options() {
            let value = match spec.values {
                OptionValues::Choice(values) => json!({ "enum": values }),
                OptionValues::Count { max, .. } => json!({
                    "description": format!("A whole number from 1 to {max}, written as a string such as \"2\"."),
                    "type": "string",
                    "pattern": "^[1-9][0-9]*$",
                }),
                OptionValues::SourceTable | OptionValues::SinkTable | OptionValues::Stream => {
                    json!({ "type": "string", "minLength": 1 })
                }
                // A table offers the keys in its `keys`; the palette cannot restrict them.
                OptionValues::Key => continue,
            };
            options.insert(
                spec.name.into(),
                json!({
                    "description": format!("The values of {} a student may choose; all of them when absent.", spec.name),
                    "type": "array",
                    "items": value,
                    "minItems": 1,
                    "uniqueItems": true,
                }),
            );
        }
        kinds.insert(
            kind.name().into(),
            json!({
                "description": format!("Offers {} ({}); absent, the kind cannot be used.", kind.describe(), kind.name()),
                "type": "object",
                "properties": options,
                "additionalProperties": false,
            }),
        );
    }
    json!({
        "description": "Which node kinds a student may place, and for each option which values. A kind that is absent may not be used; an option that is absent may take any value.",
        "type": "object",
        "properties": kinds,
        "additionalProperties": false,
    })
}

/// The design format's schemas (`Design`, `Node`, `Edge`, `Position`), from the node kinds and
/// their options: what `crate::design::validate` accepts before it looks at a scenario.
#[cfg(feature = "schema")]
fn design_schemas() -> Vec<(&'static str, Json)> {
    use crate::design::{MAX_EDGES, MAX_NODES};
    use serde_json::json;
    let variants: Vec<Json> = NodeKind::ALL
        .iter()
        .map(|&kind| {
            let mut options = serde_json::Map::new();
            for spec in kind.options() {
                let schema = match spec.values {
                    OptionValues::Choice(values) => json!({
                        "description": format!("One of {}; the default is {}.", values.join(", "), values[0]),
                        "enum": values,
                    }),
                    OptionValues::Count { default, max } => json!({
                        "description": format!("A whole number from 1 to {max}; the default is {default}."),
                        "type": "integer",
                        "minimum": 1,
                        "maximum": max,
                    }),
                    OptionValues::SourceTable => json!({
                        "description": "A source table of the scenario, by name.",
                        "type": "string",
                        "minLength": 1,
                    }),
                    OptionValues::SinkTable => json!({
                        "description": "A sink table of the scenario, by name.",
                        "type": "string",
                        "minLength": 1,
                    }),
                    OptionValues::Stream => json!({
                        "description": "A stream of the scenario, by name.",
                        "type": "string",
                        "minLength": 1,
                    }),
                    OptionValues::Key => json!({
                        "description": "The columns to write by: one of the table's keys, such as [\"order_id\"]; the table's first key when absent.",
                        "anyOf": [
                            { "type": "array", "items": { "type": "string" }, "minItems": 1 },
                            { "type": "string" }
                        ],
                    }),
                };
                options.insert(spec.name.into(), schema);
            }
            json!({
                "description": format!("{} ({}).", kind.describe(), kind.name()),
                "type": "object",
                "properties": {
                    "id": { "$ref": "#/$defs/NodeId" },
                    "kind": { "type": "string", "const": kind.name() },
                    "options": {
                        "description": "The node's options; an option that is absent takes its default.",
                        "type": "object",
                        "properties": options,
                        "additionalProperties": false,
                    },
                    "position": { "$ref": "#/$defs/Position" },
                },
                "required": ["id", "kind"],
                "additionalProperties": false,
            })
        })
        .collect();
    vec![
        (
            "Design",
            json!({
                "description": "A design: the pipeline's nodes and the edges between them (docs/design-format.md).",
                "type": "object",
                "properties": {
                    "nodes": { "type": "array", "items": { "$ref": "#/$defs/Node" }, "minItems": 1, "maxItems": MAX_NODES },
                    "edges": { "type": "array", "items": { "$ref": "#/$defs/Edge" }, "maxItems": MAX_EDGES, "default": [] },
                },
                "required": ["nodes"],
                "additionalProperties": false,
            }),
        ),
        (
            "Node",
            json!({ "description": "A node of a design.", "oneOf": variants }),
        ),
        (
            "NodeId",
            json!({
                "description": "The node's id in the design, named by edges; 1 to 64 characters.",
                "type": "string",
                "minLength": 1,
                "maxLength": 64,
            }),
        ),
        (
            "Edge",
            json!({
                "description": "Data flows from the node `from` to the node `to`.",
                "type": "object",
                "properties": { "from": { "$ref": "#/$defs/NodeId" }, "to": { "$ref": "#/$defs/NodeId" } },
                "required": ["from", "to"],
                "additionalProperties": false,
            }),
        ),
        (
            "Position",
            json!({
                "description": "Where the canvas draws the node; no effect on the check.",
                "type": "object",
                "properties": { "x": { "type": "number" }, "y": { "type": "number" } },
                "required": ["x", "y"],
                "additionalProperties": false,
            }),
        ),
    ]
}

pub use crate::scenario::{MAX_ATTEMPTS, MAX_BOUND};

/// How much a diagnostic stops: an error refuses the file, a warning only tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// The failure points of a scenario: the places where one schedule can fail, each counted
/// once (a batch run's crashes up to `max_per_run`, each place where the consumer can crash
/// in the handling of each offset, each message a sender can lose or whose ack it can lose,
/// each message that can get a late copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailurePoints {
    /// The most over the pipelines a design can draw (a job, a stream or a sender).
    pub total: u64,
    /// True when no schedule can fail more often than `total` (job crashes, late copies,
    /// a sender that never resends). False when a point can fail again: a crashed consumer
    /// reads the offset again, a sender resends.
    pub exact: bool,
    /// How `total` is made, in words, for the message.
    pub parts: Vec<String>,
}

/// The places where one schedule of the scenario can fail; see [`FailurePoints`].
pub fn failure_points(s: &Scenario) -> FailurePoints {
    let f = &s.failures;
    // (points, exact, words) per pipeline a design can draw.
    let mut pipelines: Vec<(u64, bool, Vec<String>)> = Vec::new();
    if let (Some(job), Some(jc)) = (&s.job, &f.job_crash) {
        let runs = match &jc.runs {
            Some(ids) => s.runs.iter().filter(|r| ids.contains(&r.id)).count(),
            None => s.runs.len(),
        } as u64;
        let per_run = u64::from(jc.max_per_run.min(job.max_attempts));
        pipelines.push((
            per_run * runs,
            true,
            vec![format!(
                "job_crash: {per_run} per run × {runs} run{}",
                if runs == 1 { "" } else { "s" }
            )],
        ));
    }
    for st in &s.streams {
        let n = st.messages.len() as u64;
        let mut points = 0u64;
        let mut words = Vec::new();
        let mut copies = 0u64;
        if let Some(r) = &f.redelivery {
            let lo = u64::from(r.after_min.max(1));
            if r.after_min <= r.after_max {
                copies = n.saturating_sub(lo);
            }
            points += copies;
            words.push(format!(
                "redelivery: a late copy of {copies} of the {n} messages"
            ));
        }
        let mut exact = true;
        if let Some(cc) = &f.consumer_crash {
            let handled = n + copies;
            let offsets = match &cc.offsets {
                Some(list) => list
                    .iter()
                    .filter(|&&o| u64::from(o) < handled)
                    .collect::<BTreeSet<_>>()
                    .len() as u64,
                None => handled,
            };
            points += 3 * offsets;
            exact = false;
            words.push(format!(
                "consumer_crash: 3 places in the handling of each of {offsets} offset{}",
                if offsets == 1 { "" } else { "s" }
            ));
        }
        pipelines.push((points, exact, words));
    }
    for se in &s.senders {
        let n = se.messages.len() as u64;
        let kinds = u64::from(f.message_lost.is_some()) + u64::from(f.ack_lost.is_some());
        if kinds == 0 {
            continue;
        }
        // A sender that gives up sends each message once, and one send fails at most once.
        let resends = s.palette.sender.as_ref().is_none_or(|p| {
            p.get("on_timeout")
                .is_none_or(|v| v.iter().any(|x| x == "resend"))
        });
        let (points, words) = if resends {
            (
                n * kinds,
                format!(
                    "{} of each of {n} messages",
                    if kinds == 2 {
                        "message_lost and ack_lost"
                    } else if f.message_lost.is_some() {
                        "message_lost"
                    } else {
                        "ack_lost"
                    }
                ),
            )
        } else {
            (
                n,
                format!("one lost message or ack for each of {n} messages, sent once"),
            )
        };
        pipelines.push((points, !resends, vec![words]));
    }
    let total = pipelines.iter().map(|p| p.0).max().unwrap_or(0);
    FailurePoints {
        total,
        exact: pipelines.iter().all(|p| p.1),
        parts: pipelines
            .into_iter()
            .filter(|p| p.0 == total)
            .flat_map(|p| p.2)
            .collect(),
    }
}

fn bound_too_large(bound: u64) -> String {
    format!("bound is {bound}; a schedule may have at most {MAX_BOUND} failures. The check explores every schedule up to the bound, and their number grows about exponentially with it: 1 or 2 teach every idea of the chapter")
}

/// What the validator says of the scenario's `failures.bound`: nothing, a warning (a bound
/// no schedule can reach: the check is the same as with the reachable one), or an error (a
/// bound past [`MAX_BOUND`], or past the failure points where a point can fail again).
pub fn bound_finding(s: &Scenario) -> Option<(Severity, String)> {
    let bound = s.failures.bound;
    if bound > MAX_BOUND {
        return Some((Severity::Error, bound_too_large(u64::from(bound))));
    }
    let points = failure_points(s);
    if bound == 0 || u64::from(bound) <= points.total || points.parts.is_empty() {
        return None;
    }
    let total = points.total;
    let how = points.parts.join("; ");
    if points.exact {
        Some((Severity::Warning, format!("bound is {bound}, but no schedule of this scenario can have more than {total} failures ({how}); the check explores the same schedules as with bound {total}, so write {total}")))
    } else {
        Some((Severity::Error, format!("bound is {bound}, but this scenario has {total} failure points ({how}); a larger bound only adds schedules that fail again where they already failed, and their number explodes: set bound to {total} or less (1 or 2 teach every idea of the chapter)")))
    }
}

/// The warnings on a scenario that validated: things that do not stop it, but that an author
/// would want to change.
pub fn warnings(file: &str, s: &Scenario) -> Vec<Diagnostic> {
    match bound_finding(s) {
        Some((Severity::Warning, message)) => vec![Diagnostic {
            file: file.to_string(),
            path: "$.failures.bound".into(),
            message: format!("warning: {message}"),
        }],
        _ => Vec::new(),
    }
}

/// What checking a catalogue found.
#[derive(Clone, Debug, Default)]
pub struct CatalogueReport {
    /// The scenarios that validated, in course order.
    pub scenarios: Vec<Scenario>,
    /// Every problem; the catalogue is refused when there is one.
    pub problems: Vec<Diagnostic>,
    /// Warnings on scenarios that validated (their message starts with "warning: ").
    pub warnings: Vec<Diagnostic>,
}

/// Whether `id` can name a scenario: lowercase letters, digits and dashes, neither first nor
/// last a dash (it is used in URLs).
pub fn is_valid_id(id: &str) -> bool {
    is_slug(id)
}

/// A small scenario that validates, for an author to change: three paid orders on a stream,
/// one crash, three requirements, one reference design and two wrong ones.
pub fn template(id: &str, order: u32) -> String {
    TEMPLATE
        .replace(
            "\"id\": \"new-scenario\"",
            &format!("\"id\": {}", Json::String(id.into())),
        )
        .replace("\"order\": 1,", &format!("\"order\": {order},"))
}

const TEMPLATE: &str = include_str!("template.json");

/// A copy of a scenario file's text with a new id, order and title, and everything else as
/// written, formatting included. `None` when the text has no such top-level fields.
pub fn renamed_copy(text: &str, id: &str, order: u32, title: &str) -> Option<String> {
    let spans = Spans::scan(text);
    let mut edits = [
        (spans.span("$.id")?, Json::String(id.into()).to_string()),
        (spans.span("$.order")?, order.to_string()),
        (
            spans.span("$.title")?,
            Json::String(title.into()).to_string(),
        ),
    ];
    edits.sort_by_key(|((start, _), _)| std::cmp::Reverse(*start));
    let mut out = text.to_string();
    for ((start, end), value) in edits {
        out.replace_range(start..end, &value);
    }
    Some(out)
}

/// Parses and checks one scenario file's text; all problems are reported.
pub fn validate_scenario_text(file: &str, text: &str) -> Result<Scenario, Vec<Diagnostic>> {
    let mut out = Diagnostics {
        file,
        list: Vec::new(),
    };
    let Some(scenario) = parse(text, &mut out) else {
        return Err(out.list);
    };
    let names_ok = {
        let before = out.list.len();
        check_names(&scenario, &mut out);
        out.list.len() == before
    };
    check_designs(&scenario, names_ok, &mut out);
    if out.list.is_empty() {
        Ok(scenario)
    } else {
        Err(out.list)
    }
}

/// The problems of one scenario file found without simulating anything: JSON, the format,
/// names, failures and palette. Empty when only the simulator can say more.
pub fn problems_without_simulating(file: &str, text: &str) -> Vec<Diagnostic> {
    let mut out = Diagnostics {
        file,
        list: Vec::new(),
    };
    if let Some(scenario) = parse(text, &mut out) {
        check_names(&scenario, &mut out);
    }
    out.list
}

/// Checks a whole catalogue: each file, and that ids and orders are unique across files.
/// Returns the scenarios that validated, in course order, and every problem found.
pub fn validate_catalogue(files: &[(String, String)]) -> (Vec<Scenario>, Vec<Diagnostic>) {
    let report = check_catalogue(files);
    (report.scenarios, report.problems)
}

/// As [`validate_catalogue`], with the warnings on the scenarios that validated.
///
/// When two files share an id or an order, each is told about the other: which of them is
/// the new one is the author's to say, not the files' order.
pub fn check_catalogue(files: &[(String, String)]) -> CatalogueReport {
    let mut report = CatalogueReport::default();
    // Ids and orders are read from the raw JSON, so that a clash is reported even when the
    // file has other problems.
    let mut ids: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut orders: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, (_, text)) in files.iter().enumerate() {
        if let Ok(Json::Object(raw)) = serde_json::from_str::<Json>(text) {
            if let Some(Json::String(id)) = raw.get("id") {
                ids.entry(id.clone()).or_default().push(i);
            }
            if let Some(order) = raw.get("order").and_then(Json::as_u64) {
                orders.entry(order).or_default().push(i);
            }
        }
    }
    let others = |same: &[usize], i: usize| {
        same.iter()
            .filter(|&&j| j != i)
            .map(|&j| files[j].0.as_str())
            .collect::<Vec<_>>()
            .join(" and ")
    };
    let mut clash = vec![false; files.len()];
    let mut clashes: Vec<Vec<Diagnostic>> = vec![Vec::new(); files.len()];
    for (id, same) in ids.iter().filter(|(_, same)| same.len() > 1) {
        for &i in same {
            clash[i] = true;
            clashes[i].push(Diagnostic {
                file: files[i].0.clone(),
                path: "$.id".into(),
                message: format!("the id \"{id}\" is also used by {}; ids must be unique across the catalogue, because URLs and graders name scenarios by id: give the new scenario its own", others(same, i)),
            });
        }
    }
    for (order, same) in orders.iter().filter(|(_, same)| same.len() > 1) {
        for &i in same {
            clashes[i].push(Diagnostic {
                file: files[i].0.clone(),
                path: "$.order".into(),
                message: format!("order {order} is also taken by {}; give each scenario its own place in the course", others(same, i)),
            });
        }
    }
    for (i, (file, text)) in files.iter().enumerate() {
        report.problems.append(&mut clashes[i]);
        match validate_scenario_text(file, text) {
            Ok(s) if !clash[i] => {
                report.warnings.extend(warnings(file, &s));
                report.scenarios.push(s);
            }
            Ok(_) => {}
            Err(mut d) => report.problems.append(&mut d),
        }
    }
    report
        .scenarios
        .sort_by(|a, b| a.order.cmp(&b.order).then(a.id.cmp(&b.id)));
    report
}

// ---------------------------------------------------------------------------------------------
// Collecting problems
// ---------------------------------------------------------------------------------------------

struct Diagnostics<'a> {
    file: &'a str,
    list: Vec<Diagnostic>,
}

impl Diagnostics<'_> {
    fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        let d = Diagnostic {
            file: self.file.to_string(),
            path: path.into(),
            message: message.into(),
        };
        if !self.list.contains(&d) {
            self.list.push(d);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing: JSON, then the format, part by part so that every shape problem is reported
// ---------------------------------------------------------------------------------------------

fn parse(text: &str, out: &mut Diagnostics) -> Option<Scenario> {
    if let Err(e) = serde_json::from_str::<Json>(text) {
        out.push(
            "$",
            format!(
                "the file is not valid JSON: {} (line {}, column {})",
                strip_position(&e),
                e.line(),
                e.column()
            ),
        );
        return None;
    }
    let spans = Spans::scan(text);
    match serde_json::from_str::<Scenario>(text) {
        Ok(s) => Some(s),
        Err(whole) => {
            let before = out.list.len();
            check_parts(text, &spans, out);
            if out.list.len() == before {
                // The part-by-part pass found nothing; report serde's own finding.
                report_serde(text, &spans, 0, &whole, out);
            }
            None
        }
    }
}

/// serde_json appends " at line L column C"; the diagnostic states the position itself.
fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Reports a serde error found while reading `text[base..]`, with the JSON path of the place.
fn report_serde(
    text: &str,
    spans: &Spans,
    base: usize,
    e: &serde_json::Error,
    out: &mut Diagnostics,
) {
    let slice = &text[base..];
    let mut offset = base + offset_of(slice, e.line(), e.column());
    let message = strip_position(e);
    let mut path = spans.path_at(offset);
    // serde reports an unknown field where it noticed it, which for a tagged object (a
    // requirement's check) is past the object's end: the field is the last one of that name
    // that starts before the reported place, and the author wants its line.
    if let Some(name) = message
        .strip_prefix("unknown field `")
        .and_then(|r| r.split('`').next())
    {
        match spans.last_key_before(name, offset) {
            Some(found) => {
                if let Some((start, _)) = spans.span(&found) {
                    offset = key_start(text, start);
                }
                path = found;
            }
            None => {
                // serde stopped right after the key: the key is the last of that name.
                path = child_key(&path, name);
                let quoted = format!("\"{name}\"");
                let end = (offset + quoted.len()).min(text.len());
                if let Some(k) = text.get(..end).and_then(|t| t.rfind(&quoted)) {
                    offset = k;
                }
            }
        }
    }
    let (line, column) = line_column(text, offset);
    let value = spans.span(&path).map(|(s, e)| &text[s..e]);
    let message = plain_words(&message, value);
    let advice = if message.starts_with("unknown field") {
        "; check the spelling against the format (docs/authoring.md, scenario.schema.json)"
    } else {
        ""
    };
    out.push(
        path,
        format!("{message}{advice} (line {line}, column {column})"),
    );
}

/// Where the key of the field whose value starts at `value` starts: back over the colon and
/// the quoted name. `value` itself when the text is not shaped so.
fn key_start(text: &str, value: usize) -> usize {
    let b = text.as_bytes();
    let mut i = value;
    let skip_ws = |i: &mut usize| {
        while *i > 0 && b[*i - 1].is_ascii_whitespace() {
            *i -= 1;
        }
    };
    skip_ws(&mut i);
    if i == 0 || b[i - 1] != b':' {
        return value;
    }
    i -= 1;
    skip_ws(&mut i);
    if i == 0 || b[i - 1] != b'"' {
        return value;
    }
    i -= 1;
    match text[..i].rfind('"') {
        Some(open) => open,
        None => value,
    }
}

/// serde's words for a value of the wrong type, in an author's: "invalid type: string "2",
/// expected u32" becomes "expected a whole number, 0 or more, and found the text "2"; write
/// numbers without quotes". `value` is the JSON text of the value, when known.
fn plain_words(message: &str, value: Option<&str>) -> String {
    // chrono's words for a date that does not exist.
    if matches!(
        message,
        "input is out of range"
            | "input contains invalid characters"
            | "premature end of input"
            | "input is not enough for unique date and time"
            | "trailing input"
    ) {
        let text = value.and_then(|v| serde_json::from_str::<String>(v).ok());
        return match text {
            Some(t) => match crate::value::why_not_a_date(&t) {
                Some(why) => format!("\"{t}\" is not a date: {why}"),
                None => {
                    format!("\"{t}\" is not a date written as YYYY-MM-DD, such as \"2026-01-10\"")
                }
            },
            None => {
                format!("{message}: expected a date written as YYYY-MM-DD, such as \"2026-01-10\"")
            }
        };
    }
    let Some((found, expected)) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.rsplit_once(", expected "))
    else {
        return message.to_string();
    };
    let expected_words = match expected {
        "u32" | "u64" | "u16" | "u8" | "usize" => "a whole number, 0 or more",
        "i32" | "i64" => "a whole number",
        "a string" => "text in double quotes",
        "a sequence" => "a list, [ … ]",
        "a boolean" => "true or false",
        e if e.starts_with("struct ")
            || e == "a map"
            || e.starts_with("internally tagged enum") =>
        {
            "an object, { … }"
        }
        e if e.starts_with("unit struct") => "an empty object, {}",
        _ => expected,
    };
    let unquote = |s: &str| s.trim_matches('`').to_string();
    let (found_words, hint) = if let Some(t) = found.strip_prefix("string ") {
        let inner: String = serde_json::from_str(t).unwrap_or_else(|_| t.to_string());
        let hint = if expected_words.starts_with("a whole number")
            && inner.trim().parse::<i64>().is_ok()
        {
            "; write numbers without quotes"
        } else {
            ""
        };
        (format!("the text {t}"), hint)
    } else if let Some(n) = found.strip_prefix("integer ") {
        let n = unquote(n);
        let hint = if expected == "u32" && n.starts_with('-') {
            ""
        } else if expected == "u32" {
            "; it must be at most 4294967295"
        } else {
            ""
        };
        (n, hint)
    } else if let Some(n) = found.strip_prefix("floating point ") {
        (
            unquote(n),
            if expected_words.starts_with("a whole number") {
                "; a count has no fraction"
            } else {
                ""
            },
        )
    } else if let Some(b) = found.strip_prefix("boolean ") {
        (unquote(b), "")
    } else {
        let words = match found {
            "map" => "an object",
            "sequence" => "a list",
            "null" => "null",
            "unit" => "null",
            other => other,
        };
        (words.to_string(), "")
    };
    format!("expected {expected_words}, and found {found_words}{hint}")
}

const TOP_LEVEL: &[&str] = &[
    "$schema",
    "id",
    "order",
    "title",
    "task",
    "concepts",
    "tables",
    "streams",
    "senders",
    "job",
    "runs",
    "failures",
    "palette",
    "starting_design",
    "requirements",
    "reference_designs",
    "wrong_designs",
];
const REQUIRED: &[&str] = &[
    "id",
    "order",
    "title",
    "task",
    "failures",
    "palette",
    "requirements",
    "reference_designs",
    "wrong_designs",
];

/// Reads each top-level field, and each element of each list, on its own, so that one
/// mistake does not hide the others.
fn check_parts(text: &str, spans: &Spans, out: &mut Diagnostics) {
    let Ok(Json::Object(top)) = serde_json::from_str::<Json>(text) else {
        out.push(
            "$",
            "a scenario file is one JSON object, { \"id\": …, \"title\": …, … }",
        );
        return;
    };
    // A design saved into the scenarios folder: one message, not one per missing field.
    if top.contains_key("nodes") && !REQUIRED.iter().any(|k| top.contains_key(*k)) {
        out.push(
            "$",
            "this looks like a design (it has \"nodes\"), not a scenario; a design belongs inside a scenario (its starting_design, reference_designs or wrong_designs) or in a file of its own outside the scenarios folder, for `pipeline-builder check`",
        );
        return;
    }
    for key in top.keys() {
        if !TOP_LEVEL.contains(&key.as_str()) {
            out.push(
                child_key("$", key),
                format!(
                    "unknown field \"{key}\"; a scenario has the fields {}",
                    TOP_LEVEL.join(", ")
                ),
            );
        }
    }
    for key in REQUIRED {
        if !top.contains_key(*key) {
            out.push("$", format!("the field \"{key}\" is missing"));
        }
    }
    let part =
        |key: &str, out: &mut Diagnostics, read: &dyn Fn(&str) -> Result<(), serde_json::Error>| {
            let path = child_key("$", key);
            if let Some((start, end)) = spans.span(&path) {
                if let Err(e) = read(&text[start..end]) {
                    report_serde(text, spans, start, &e, out);
                }
            }
        };
    fn one<T: DeserializeOwned>(s: &str) -> Result<(), serde_json::Error> {
        serde_json::from_str::<T>(s).map(|_| ())
    }
    part("$schema", out, &one::<String>);
    part("id", out, &one::<String>);
    part("order", out, &one::<u32>);
    part("title", out, &one::<String>);
    part("task", out, &one::<String>);
    part("concepts", out, &one::<Vec<String>>);
    part("job", out, &one::<JobDef>);
    part("failures", out, &one::<FailureSpec>);
    // The format's maximum is part of the shape: said even when other parts do not read.
    if let Some(bound) = top
        .get("failures")
        .and_then(|f| f.get("bound"))
        .and_then(Json::as_u64)
        .filter(|&b| b > u64::from(MAX_BOUND))
    {
        out.push("$.failures.bound", bound_too_large(bound));
    }
    part("palette", out, &one::<Palette>);
    let list =
        |key: &str, out: &mut Diagnostics, read: &dyn Fn(&str) -> Result<(), serde_json::Error>| {
            let path = child_key("$", key);
            match top.get(key) {
                None => {}
                Some(Json::Array(items)) => {
                    for i in 0..items.len() {
                        if let Some((start, end)) = spans.span(&format!("{path}[{i}]")) {
                            if let Err(e) = read(&text[start..end]) {
                                report_serde(text, spans, start, &e, out);
                            }
                        }
                    }
                }
                Some(_) => out.push(path, format!("\"{key}\" must be a list")),
            }
        };
    list("tables", out, &one::<TableDef>);
    list("streams", out, &one::<StreamDef>);
    list("senders", out, &one::<SenderDef>);
    list("runs", out, &one::<RunDef>);
    list("requirements", out, &one::<Requirement>);
    list("reference_designs", out, &one::<ExampleDesign>);
    list("wrong_designs", out, &one::<WrongDesign>);
}

// ---------------------------------------------------------------------------------------------
// Names: everything a scenario refers to exists and fits
// ---------------------------------------------------------------------------------------------

fn is_slug(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn list_names<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

fn check_names(s: &Scenario, out: &mut Diagnostics) {
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

fn check_columns(path: &str, what: &str, columns: &[ColumnDef], out: &mut Diagnostics) {
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

fn check_tables(s: &Scenario, out: &mut Diagnostics) {
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

fn check_messages(
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

fn check_streams_and_senders(s: &Scenario, out: &mut Diagnostics) {
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

fn check_conditions(path: &str, table: &TableDef, conds: &[Condition], out: &mut Diagnostics) {
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

fn check_job(s: &Scenario, out: &mut Diagnostics) {
    let Some(job) = &s.job else {
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
    };
    match s.table(&job.source) {
        None => out.push("$.job.source", format!("the job reads \"{}\", which is not a table of the scenario; its source tables are {}", job.source, source_names(s))),
        Some(t) if t.role != TableRole::Source => out.push("$.job.source", format!("the job reads {}, which is a sink; give it role \"source\" or read a source table", job.source)),
        Some(_) => {}
    }
    if job.steps.is_empty() {
        out.push("$.job.steps", "the job has no steps; add at least one");
    }
    if job.max_attempts == 0 {
        out.push(
            "$.job.max_attempts",
            "the scheduler makes at least one attempt; max_attempts must be 1 or more",
        );
    }
    if job.max_attempts > MAX_ATTEMPTS {
        out.push(
            "$.job.max_attempts",
            format!("max_attempts is {}; the scheduler makes at most {MAX_ATTEMPTS} attempts per run (a job that fails on every attempt is retried that often in every schedule checked)", job.max_attempts),
        );
    }
    let mut ids = BTreeSet::new();
    let mut targets = BTreeSet::new();
    for (i, step) in job.steps.iter().enumerate() {
        let p = format!("$.job.steps[{i}]");
        if !ids.insert(step.id()) {
            out.push(
                format!("{p}.id"),
                format!("two steps have the id \"{}\"", step.id()),
            );
        }
        let from = s.table(step.from());
        if from.is_none() {
            out.push(format!("{p}.from"), format!("step \"{}\" reads \"{}\", which is not a table of the scenario; its tables are {}", step.id(), step.from(), list_names(s.tables.iter().map(|t| t.name.as_str()))));
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
                    "two steps write {}; a design has one table node per step",
                    step.target()
                ),
            );
        }
        if let Some(from) = from {
            check_conditions(&format!("{p}.where"), from, step.filter(), out);
        }
        let (Some(from), Some(target)) = (from, target) else {
            continue;
        };
        match step {
            StepDef::Copy { columns, .. } => {
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
                        out.push(format!("{p}.into"), format!("into \"{into}\" receives a sum of money and must be a decimal column"));
                    }
                }
            }
        }
    }
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

fn source_names(s: &Scenario) -> String {
    list_names(
        s.tables
            .iter()
            .filter(|t| t.role == TableRole::Source)
            .map(|t| t.name.as_str()),
    )
}

fn sink_names(s: &Scenario) -> String {
    list_names(
        s.tables
            .iter()
            .filter(|t| t.role == TableRole::Sink)
            .map(|t| t.name.as_str()),
    )
}

fn check_failures(s: &Scenario, out: &mut Diagnostics) {
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
        if s.job.is_none() {
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
        if s.job
            .as_ref()
            .is_some_and(|j| jc.max_per_run >= j.max_attempts)
        {
            out.push(
                "$.failures.job_crash.max_per_run",
                format!("with {} crashes per run and {} attempts the scheduler gives up on a run; lower max_per_run or raise job.max_attempts", jc.max_per_run, s.job.as_ref().map_or(0, |j| j.max_attempts)),
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
    if f.consumer_crash.is_some() || f.redelivery.is_some() {
        let what = if f.consumer_crash.is_some() {
            "consumer_crash"
        } else {
            "redelivery"
        };
        if s.streams.is_empty() {
            out.push(format!("$.failures.{what}"), format!("{what} happens on a stream, and the scenario has none (a sender is explored with message_lost and ack_lost)"));
        }
    }
    let longest = s
        .streams
        .iter()
        .map(|st| st.messages.len())
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
            if *o as usize >= room && !s.streams.is_empty() {
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

fn check_palette(s: &Scenario, out: &mut Diagnostics) {
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
                }
            }
        }
    }
}

fn check_requirements(s: &Scenario, out: &mut Diagnostics) {
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
fn table_of<'a>(
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

fn column_of(t: &TableDef, path: &str, name: &str, out: &mut Diagnostics) -> Option<ColumnType> {
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

fn check_check(s: &Scenario, p: &str, id: &str, check: &Check, out: &mut Diagnostics) {
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
        } => {
            let Some(t) = table_of(s, p, id, table, out) else {
                return;
            };
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
        Check::Finishes {} => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Designs: the starting design fits the palette, reference designs pass, wrong designs miss
// ---------------------------------------------------------------------------------------------

/// Re-roots a design error's path (`$.nodes[1].options`) under the design's place in the file.
fn under(prefix: &str, path: &str) -> String {
    format!("{prefix}{}", path.strip_prefix('$').unwrap_or(path))
}

fn check_designs(s: &Scenario, names_ok: bool, out: &mut Diagnostics) {
    if let Some(start) = &s.starting_design {
        if let Err(errors) = crate::design::validate_json(s, start) {
            for e in errors {
                out.push(
                    under("$.starting_design", &e.path),
                    format!(
                        "the starting design does not fit the scenario: {}",
                        e.message
                    ),
                );
            }
        }
    }
    if !names_ok {
        // The simulator would only repeat the problems above; designs are still checked
        // against the palette, which needs no simulation.
        let designs = s
            .reference_designs
            .iter()
            .enumerate()
            .map(|(i, d)| (format!("$.reference_designs[{i}].design"), &d.design))
            .chain(
                s.wrong_designs
                    .iter()
                    .enumerate()
                    .map(|(i, d)| (format!("$.wrong_designs[{i}].design"), &d.design)),
            );
        for (path, design) in designs {
            if let Err(errors) = crate::design::validate_json(s, design) {
                for e in errors {
                    out.push(under(&path, &e.path), e.message);
                }
            }
        }
        return;
    }
    if let Some(start) = &s.starting_design {
        // Only a design that fits the palette is simulated; the problems of one that does not
        // are reported above.
        if crate::design::validate_json(s, start).is_ok() {
            if let Some(v) = verdict(s, "$.starting_design", start, out) {
                if v.passed {
                    out.push("$.starting_design", "the starting design already passes every requirement, so the student has nothing to do; start from the broken pipeline the task describes");
                }
            }
        }
    }
    let mut missable: BTreeSet<&str> = BTreeSet::new();
    for (i, d) in s.reference_designs.iter().enumerate() {
        let path = format!("$.reference_designs[{i}]");
        let Some(verdict) = verdict(s, &format!("{path}.design"), &d.design, out) else {
            continue;
        };
        for r in verdict.requirements.iter().filter(|r| !r.passed) {
            let how = r.counterexample.as_ref().map_or_else(String::new, |c| {
                let when = if c.failures.is_empty() {
                    "even with no failure".to_string()
                } else {
                    format!("when {}", c.failures.join(", then "))
                };
                format!(": expected {}, got {} {when}", c.expected, c.actual)
            });
            out.push(path.clone(), format!("reference design \"{}\" misses requirement \"{}\"{how}; a reference design must pass everything, so fix the design or the requirement", d.name, r.id));
        }
    }
    for (i, d) in s.wrong_designs.iter().enumerate() {
        let path = format!("$.wrong_designs[{i}]");
        let Some(verdict) = verdict(s, &format!("{path}.design"), &d.design, out) else {
            continue;
        };
        for (j, id) in d.misses.iter().enumerate() {
            match verdict.requirements.iter().find(|r| &r.id == id) {
                Some(r) if r.passed => out.push(
                    format!("{path}.misses[{j}]"),
                    format!(
                        "wrong design \"{}\" should miss \"{id}\" but passes it in all {} schedules explored; change the design so it misses it, or remove \"{id}\" from its misses",
                        d.name, verdict.schedules_explored
                    ),
                ),
                Some(_) => {
                    missable.insert(id.as_str());
                }
                None => {}
            }
        }
    }
    for (r, req) in s.requirements.iter().enumerate() {
        let named = s.wrong_designs.iter().any(|w| w.misses.contains(&req.id));
        if !named {
            out.push(
                format!("$.requirements[{r}]"),
                format!("no wrong design misses requirement \"{}\"; add a wrong design that names it in \"misses\", to prove a student can miss it", req.id),
            );
        } else if !missable.contains(req.id.as_str())
            && !out
                .list
                .iter()
                .any(|d| d.message.contains(&format!("should miss \"{}\"", req.id)))
        {
            out.push(
                format!("$.requirements[{r}]"),
                format!("no wrong design actually misses requirement \"{}\"", req.id),
            );
        }
    }
}

/// Checks one design with the real simulator; problems go to `out` under the design's path.
fn verdict(s: &Scenario, path: &str, design: &Json, out: &mut Diagnostics) -> Option<Verdict> {
    match check_json(s, design) {
        Ok(v) => Some(v),
        Err(CheckError::Design(errors)) => {
            for e in errors {
                out.push(under(path, &e.path), e.message);
            }
            None
        }
        Err(CheckError::Scenario(errors)) => {
            for e in errors {
                out.push(e.path, e.message);
            }
            None
        }
        Err(CheckError::TooLarge { schedules, limit }) => {
            out.push(path.to_string(), format!("checking this design stopped after {schedules} schedules ({limit}); lower failures.bound, or use fewer messages or crash points"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_field_is_named_in_the_path() {
        let text = "{\n  \"id\": \"x\",\n  \"order\": 1,\n  \"title\": \"t\",\n  \"task\": \"t\",\n  \"failures\": {\"bound\": 1, \"jobcrash\": {}},\n  \"palette\": {},\n  \"requirements\": [],\n  \"reference_designs\": [],\n  \"wrong_designs\": []\n}";
        let errors = validate_scenario_text("f.json", text).unwrap_err();
        assert!(
            errors
                .iter()
                .any(|d| d.path == "$.failures.jobcrash" && d.message.contains("line 6")),
            "{errors:?}"
        );
    }
}
