//! The scenario catalogue: every scenario file of a folder, validated with the authors'
//! checks before the server accepts a single request.
//!
//! A broken or hostile file is refused with a diagnostic, never by hanging: its size is
//! checked before it is read, its nesting before it is parsed, and each of its designs is
//! checked under [`AUTHORING_LIMITS`], far below the server's per-check limit, before the
//! full validation runs, so that a failure bound that explodes the schedule count is caught
//! after a bounded amount of work.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::Value as Json;
use shared::authoring::{check_catalogue, Diagnostic};
use shared::verdict_table::VerdictTable;
use shared::{Compiled, Scenario};

/// The largest scenario file accepted. The shipped ones are about 10 KB.
pub const MAX_SCENARIO_FILE_BYTES: u64 = 1024 * 1024;

/// The deepest nesting of arrays and objects accepted in a scenario file. The shipped ones
/// nest 8 deep.
pub const MAX_SCENARIO_NESTING: usize = 32;

/// How far the check of any one design of a scenario file may go. The shipped scenarios'
/// largest check explores 573 schedules; a file past this bound would make every student's
/// check slow, and validating it would take minutes.
pub const AUTHORING_LIMITS: shared::Limits = shared::Limits {
    max_schedules: 100_000,
    max_steps: 20_000_000,
};

/// One scenario and what the server derives from it once.
#[derive(Debug)]
pub struct Entry {
    /// The scenario, compiled: what every check reads.
    pub compiled: Compiled,
    pub hash: String,
    /// The scenario as a student sees it (no reference or wrong designs), as the JSON text
    /// `GET /api/scenarios/{id}` answers: written once, so a read costs no serialization.
    pub student_view: axum::body::Bytes,
    /// The verdict of every design the palette allows, once built in the background
    /// (`crate::tables`); unset while it is built.
    pub table: OnceLock<Table>,
}

/// A scenario's verdict table, or why its checks search instead.
#[derive(Debug)]
pub enum Table {
    Built(Arc<VerdictTable>),
    /// The palette allows more designs than the server keeps a table for
    /// (`Config::verdict_table_designs_max`): every check searches.
    Searched(String),
}

#[derive(Debug, Default)]
pub struct Catalogue {
    /// In course order.
    entries: Vec<Arc<Entry>>,
    by_id: BTreeMap<String, usize>,
}

impl Entry {
    /// The scenario file.
    pub fn scenario(&self) -> &Scenario {
        self.compiled.scenario()
    }

    /// The verdict's JSON and summary from the scenario's table, when the table is built for checks
    /// within `limits` and holds the design; the search's verdict byte for byte.
    pub fn table_json(
        &self,
        design: &shared::ValidDesign,
        limits: shared::Limits,
    ) -> Option<(String, shared::verdict_table::Summary)> {
        let Some(Table::Built(table)) = self.table.get() else {
            return None;
        };
        let built = table.limits();
        if (built.max_schedules, built.max_steps) != (limits.max_schedules, limits.max_steps) {
            return None;
        }
        table.lookup(&self.compiled, design)
    }
}

impl Catalogue {
    pub fn new(scenarios: Vec<Compiled>) -> Catalogue {
        let mut entries = Vec::with_capacity(scenarios.len());
        let mut by_id = BTreeMap::new();
        for compiled in scenarios {
            let scenario = compiled.scenario();
            by_id.insert(scenario.id.clone(), entries.len());
            entries.push(Arc::new(Entry {
                hash: shared::scenario_hash(scenario),
                student_view: serde_json::to_vec(&student_view(scenario))
                    .unwrap_or_default()
                    .into(),
                table: OnceLock::new(),
                compiled,
            }));
        }
        Catalogue { entries, by_id }
    }

    pub fn get(&self, id: &str) -> Option<Arc<Entry>> {
        self.by_id.get(id).map(|&i| Arc::clone(&self.entries[i]))
    }

    pub fn entries(&self) -> &[Arc<Entry>] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Every field of the scenario except the answers (`reference_designs`, `wrong_designs`)
/// and the editor's `$schema`.
pub fn student_view(scenario: &Scenario) -> Json {
    let mut value = serde_json::to_value(scenario).unwrap_or(Json::Null);
    if let Json::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("reference_designs");
        map.remove("wrong_designs");
    }
    value
}

/// The scenario files named by `paths`: files as given, and in folders every `*.json` except
/// `*.schema.json`, sorted by name. A path that cannot be read is a diagnostic.
pub fn read_files(paths: &[PathBuf]) -> (Vec<(String, String)>, Vec<Diagnostic>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    let problem = |file: &Path, message: String| Diagnostic {
        file: file.display().to_string(),
        path: "$".into(),
        message,
    };
    for path in paths {
        if path.is_dir() {
            let listing = match std::fs::read_dir(path) {
                Ok(listing) => listing,
                Err(e) => {
                    problems.push(problem(path, format!("the folder cannot be read: {e}")));
                    continue;
                }
            };
            let mut names: Vec<PathBuf> = listing
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && is_scenario_file(p))
                .collect();
            names.sort();
            for name in names {
                read_one(&name, &mut files, &mut problems);
            }
        } else if path.exists() {
            read_one(path, &mut files, &mut problems);
        } else {
            problems.push(problem(path, "no such file or folder".into()));
        }
    }
    (files, problems)
}

fn is_scenario_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".json") && !name.ends_with(".schema.json")
}

fn read_one(path: &Path, files: &mut Vec<(String, String)>, problems: &mut Vec<Diagnostic>) {
    let file = path.display().to_string();
    let problem = |message: String| Diagnostic {
        file: file.clone(),
        path: "$".into(),
        message,
    };
    // The size first, so that a huge file is never read into memory.
    match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_SCENARIO_FILE_BYTES => {
            problems.push(problem(format!(
                "the file has {} bytes; a scenario file may have at most {MAX_SCENARIO_FILE_BYTES}",
                m.len()
            )));
            return;
        }
        Ok(_) => {}
        Err(e) => {
            problems.push(problem(format!("the file cannot be read: {e}")));
            return;
        }
    }
    // Read through a bound too, in case the file grew since.
    use std::io::Read;
    let mut text = String::new();
    let read = std::fs::File::open(path).and_then(|f| {
        f.take(MAX_SCENARIO_FILE_BYTES + 1)
            .read_to_string(&mut text)
    });
    match read {
        Ok(n) if n as u64 > MAX_SCENARIO_FILE_BYTES => problems.push(problem(format!(
            "the file has more than {MAX_SCENARIO_FILE_BYTES} bytes"
        ))),
        Ok(_) => files.push((file.clone(), text)),
        Err(e) => problems.push(problem(format!("the file cannot be read: {e}"))),
    }
}

/// The deepest nesting of arrays and objects in JSON text, counted without parsing it
/// (strings are skipped, so brackets inside them do not count).
pub fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The problems found before the full validation: nesting too deep, or a design whose check
/// goes past [`AUTHORING_LIMITS`]. A file with any of them is not validated further.
pub fn precheck(file: &str, text: &str) -> Vec<Diagnostic> {
    let problem = |path: String, message: String| Diagnostic {
        file: file.to_string(),
        path,
        message,
    };
    let depth = nesting_depth(text);
    if depth > MAX_SCENARIO_NESTING {
        return vec![problem("$".into(), format!("the file nests arrays and objects {depth} deep; a scenario file may nest at most {MAX_SCENARIO_NESTING} deep"))];
    }
    // A file that does not parse is left to the full validation, which says why.
    let Ok(scenario) = Scenario::from_json(text) else {
        return Vec::new();
    };
    // So is a file with a problem found without simulating (a bound past the format's
    // maximum or the scenario's failure points, a name that does not exist…): the full
    // validation reports it and simulates nothing, and simulating here would only reach a
    // limit, slowly.
    if !shared::authoring::problems_without_simulating(file, text).is_empty() {
        return Vec::new();
    }
    // A file whose parts do not fit together is left to it as well.
    let Ok(compiled) = shared::Compiled::new(scenario.clone()) else {
        return Vec::new();
    };
    let designs = scenario
        .reference_designs
        .iter()
        .enumerate()
        .map(|(i, d)| (format!("$.reference_designs[{i}].design"), &d.design))
        .chain(
            scenario
                .wrong_designs
                .iter()
                .enumerate()
                .map(|(i, d)| (format!("$.wrong_designs[{i}].design"), &d.design)),
        )
        .chain(
            scenario
                .starting_design
                .iter()
                .map(|d| ("$.starting_design".to_string(), d)),
        );
    let mut problems = Vec::new();
    for (path, design) in designs {
        let Ok(valid) = shared::validate_json(&compiled, design) else {
            continue;
        };
        if let Err(shared::CheckError::TooLarge { schedules, limit }) =
            shared::check_with(&compiled, &valid, AUTHORING_LIMITS)
        {
            problems.push(problem(
                path,
                format!("checking this design stopped after {schedules} failure schedules ({limit}); a scenario's checks may explore at most {} schedules: lower $.failures.bound (now {}), or use fewer messages or crash points", AUTHORING_LIMITS.max_schedules, scenario.failures.bound),
            ));
            // One is enough to refuse the file; the others would cost as much again.
            break;
        }
    }
    problems
}

/// Reads and validates every scenario under `paths`; all diagnostics, or the scenarios in
/// course order.
pub fn validate_paths(paths: &[PathBuf]) -> Result<Vec<Compiled>, Vec<Diagnostic>> {
    let (result, _warnings) = validate_paths_with_warnings(paths);
    result
}

/// As [`validate_paths`], with the warnings on the scenarios that validated (their messages
/// start with "warning: "); warnings never refuse a file.
pub fn validate_paths_with_warnings(
    paths: &[PathBuf],
) -> (Result<Vec<Compiled>, Vec<Diagnostic>>, Vec<Diagnostic>) {
    let (files, mut problems) = read_files(paths);
    let mut checked = Vec::with_capacity(files.len());
    for (file, text) in files {
        let mut found = precheck(&file, &text);
        if found.is_empty() {
            checked.push((file, text));
        } else {
            problems.append(&mut found);
        }
    }
    let mut report = check_catalogue(&checked);
    problems.append(&mut report.problems);
    if problems.is_empty() {
        (Ok(report.scenarios), report.warnings)
    } else {
        (Err(problems), report.warnings)
    }
}

/// Every scenario file under `paths` checked, as the catalogue's report: the scenarios that
/// validated with their files, and every problem, the files' reading and sizes included.
pub fn check_paths(paths: &[PathBuf]) -> shared::authoring::CatalogueReport {
    let (files, mut problems) = read_files(paths);
    let mut checked = Vec::with_capacity(files.len());
    for (file, text) in files {
        let mut found = precheck(&file, &text);
        if found.is_empty() {
            checked.push((file, text));
        } else {
            problems.append(&mut found);
        }
    }
    let mut report = check_catalogue(&checked);
    problems.append(&mut report.problems);
    report.problems = problems;
    report
}

/// Solves every scenario file under `paths` that reads and parses (see
/// [`shared::authoring::solve_findings`]): what `scenarios validate` adds to the checks the
/// server's start-up makes, since it checks every design each palette allows.
pub fn solve_paths(paths: &[PathBuf]) -> Vec<shared::authoring::SolveFindings> {
    let (files, _problems) = read_files(paths);
    files
        .iter()
        .filter(|(file, text)| precheck(file, text).is_empty())
        .map(|(file, text)| shared::authoring::solve_findings(file, text))
        .collect()
}

/// Loads the catalogue the server serves; refuses on any diagnostic.
pub fn load(dir: &Path) -> Result<Catalogue, Vec<Diagnostic>> {
    if !dir.is_dir() {
        return Err(vec![Diagnostic {
            file: dir.display().to_string(),
            path: "$".into(),
            message: "the scenarios folder does not exist".into(),
        }]);
    }
    let (result, warnings) = validate_paths_with_warnings(&[dir.to_path_buf()]);
    for w in &warnings {
        eprintln!("{w}");
    }
    result.map(Catalogue::new)
}

/// Finds one scenario by id among the files of `dir` without validating the others, for the
/// offline `check` command.
pub fn find(dir: &Path, id: &str) -> Result<Compiled, String> {
    let (files, problems) = read_files(&[dir.to_path_buf()]);
    if let Some(p) = problems.first() {
        return Err(p.to_string());
    }
    let mut known = Vec::new();
    for (file, text) in &files {
        match Scenario::from_json(text) {
            Ok(s) if s.id == id => {
                return Compiled::new(s).map_err(|errors| {
                    let said: Vec<String> = errors
                        .iter()
                        .map(|e| format!("{file}: {}: {}", e.path, e.message))
                        .collect();
                    said.join("\n")
                })
            }
            Ok(s) => known.push(s.id),
            Err(_) => {
                // Said in an author's words, as `scenarios validate` says it.
                for problem in shared::authoring::problems_without_simulating(file, text) {
                    tracing::warn!(file, path = %problem.path, "skipping a scenario file that does not parse: {}", problem.message)
                }
            }
        }
    }
    known.sort();
    Err(format!(
        "there is no scenario \"{id}\" in {}; known: {}",
        dir.display(),
        known.join(", ")
    ))
}
