//! The scenario catalogue: every scenario file of a folder, validated with the authors'
//! checks before the server accepts a single request.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;
use shared::authoring::{validate_catalogue, Diagnostic};
use shared::Scenario;

/// One scenario and what the server derives from it once.
#[derive(Debug)]
pub struct Entry {
    pub scenario: Scenario,
    pub hash: String,
    /// The scenario as a student sees it: no reference or wrong designs.
    pub student_view: Json,
}

#[derive(Debug, Default)]
pub struct Catalogue {
    /// In course order.
    entries: Vec<Arc<Entry>>,
    by_id: BTreeMap<String, usize>,
}

impl Catalogue {
    pub fn new(scenarios: Vec<Scenario>) -> Catalogue {
        let mut entries = Vec::with_capacity(scenarios.len());
        let mut by_id = BTreeMap::new();
        for scenario in scenarios {
            by_id.insert(scenario.id.clone(), entries.len());
            entries.push(Arc::new(Entry { hash: shared::scenario_hash(&scenario), student_view: student_view(&scenario), scenario }));
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
    let problem = |file: &Path, message: String| Diagnostic { file: file.display().to_string(), path: "$".into(), message };
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
    match std::fs::read_to_string(path) {
        Ok(text) => files.push((path.display().to_string(), text)),
        Err(e) => problems.push(Diagnostic { file: path.display().to_string(), path: "$".into(), message: format!("the file cannot be read: {e}") }),
    }
}

/// Reads and validates every scenario under `paths`; all diagnostics, or the scenarios in
/// course order.
pub fn validate_paths(paths: &[PathBuf]) -> Result<Vec<Scenario>, Vec<Diagnostic>> {
    let (files, mut problems) = read_files(paths);
    let (scenarios, mut found) = validate_catalogue(&files);
    problems.append(&mut found);
    if problems.is_empty() {
        Ok(scenarios)
    } else {
        Err(problems)
    }
}

/// Loads the catalogue the server serves; refuses on any diagnostic.
pub fn load(dir: &Path) -> Result<Catalogue, Vec<Diagnostic>> {
    if !dir.is_dir() {
        return Err(vec![Diagnostic { file: dir.display().to_string(), path: "$".into(), message: "the scenarios folder does not exist".into() }]);
    }
    validate_paths(&[dir.to_path_buf()]).map(Catalogue::new)
}

/// Finds one scenario by id among the files of `dir` without validating the others, for the
/// offline `check` command.
pub fn find(dir: &Path, id: &str) -> Result<Scenario, String> {
    let (files, problems) = read_files(&[dir.to_path_buf()]);
    if let Some(p) = problems.first() {
        return Err(p.to_string());
    }
    let mut known = Vec::new();
    for (file, text) in &files {
        match Scenario::from_json(text) {
            Ok(s) if s.id == id => return Ok(s),
            Ok(s) => known.push(s.id),
            Err(e) => tracing::warn!(file, error = %e, "skipping a scenario file that does not parse"),
        }
    }
    known.sort();
    Err(format!("there is no scenario \"{id}\" in {}; known: {}", dir.display(), known.join(", ")))
}
