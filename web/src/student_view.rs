//! The scenario as the server shows it to a student, read into `shared::Scenario`, which the
//! canvas, the inspector and the problems' words read; its text, fitted, is what the preview's
//! engine compiles (`crate::engine`).
//!
//! The student's view leaves out what would give the answer away (the reference and wrong
//! designs) and may carry fields the canvas does not know; `shared::Scenario` is strict about
//! both, so the JSON is fitted to it first.

use std::sync::Arc;

use serde_json::Value as Json;
use shared::{Compiled, Scenario};

/// Fields of a scenario file the canvas knows.
const SCENARIO_FIELDS: &[&str] = &[
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
    "jobs",
    "runs",
    "failures",
    "palette",
    "starting_design",
    "requirements",
    "reference_designs",
    "wrong_designs",
];

/// A scenario as a page opened it: what the canvas reads, and the text the preview's engine
/// compiles (the student's view fitted to `shared::Scenario`).
#[derive(Debug)]
pub struct StudentScenario {
    scenario: Scenario,
    text: Arc<str>,
}

impl StudentScenario {
    /// Reads the student's view of a scenario, as the server sends it.
    pub fn read(json: Json) -> Result<StudentScenario, String> {
        let text = fitted(json);
        let scenario = Scenario::from_json(&text)
            .map_err(|e| format!("the scenario could not be read: {e}"))?;
        Ok(StudentScenario {
            scenario,
            text: text.into(),
        })
    }

    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The JSON text `scenario` was read from.
    pub fn text(&self) -> Arc<str> {
        self.text.clone()
    }
}

/// The student's view fitted to `shared::Scenario`, as JSON text: fields the canvas does not
/// know left out, the lists the view leaves out present and empty.
fn fitted(mut json: Json) -> String {
    if let Some(object) = json.as_object_mut() {
        object.retain(|k, _| SCENARIO_FIELDS.contains(&k.as_str()));
        for field in ["reference_designs", "wrong_designs"] {
            object
                .entry(field)
                .or_insert_with(|| Json::Array(Vec::new()));
        }
        if let Some(Json::Array(requirements)) = object.get_mut("requirements") {
            for r in requirements.iter_mut().filter_map(Json::as_object_mut) {
                r.entry("hint").or_insert_with(|| Json::from(""));
            }
        }
    }
    // Parsed from text rather than from the `Value`, so that the app carries one set of
    // deserializers for the scenario's many types (a size budget matter).
    json.to_string()
}

pub fn scenario(json: Json) -> Result<Scenario, String> {
    StudentScenario::read(json).map(|s| s.scenario)
}

/// The fitted text of a student's view, compiled, as the preview's engine compiles it. The
/// server serves only scenarios that compile, so an error here means the app and the server
/// disagree on the format; it is told in the author's words.
pub fn compile(text: &str) -> Result<Compiled, String> {
    let scenario =
        Scenario::from_json(text).map_err(|e| format!("the scenario could not be read: {e}"))?;
    Compiled::new(scenario).map_err(|errors| {
        let words: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: {}", e.path, e.message))
            .collect();
        format!("the scenario could not be read: {}", words.join("; "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_scenario_reads_from_its_student_view() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
        let mut read = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if !name.ends_with(".json") || name.contains("schema") {
                continue;
            }
            let mut json: Json =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let object = json.as_object_mut().unwrap();
            // What the server leaves out, and something it might add.
            object.remove("reference_designs");
            object.remove("wrong_designs");
            object.remove("$schema");
            object.insert("progress".into(), Json::from("tried"));
            for r in object["requirements"].as_array_mut().unwrap() {
                r.as_object_mut().unwrap().remove("hint");
            }
            let scenario = scenario(json).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(scenario.reference_designs.is_empty());
            assert!(!scenario.requirements.is_empty());
            assert!(scenario.requirements.iter().all(|r| r.hint.is_empty()));
            read += 1;
        }
        assert!(read >= 1);
    }

    fn whole_path() -> Json {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/whole-path.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn every_shipped_scenario_compiles_from_its_student_view() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
        let mut compiled_count = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if !name.ends_with(".json") || name.contains("schema") {
                continue;
            }
            let mut json: Json =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let object = json.as_object_mut().unwrap();
            object.remove("reference_designs");
            object.remove("wrong_designs");
            let compiled = compile(&fitted(json)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!compiled.scenario().requirements.is_empty());
            compiled_count += 1;
        }
        assert!(compiled_count >= 11, "{compiled_count} scenarios");
    }

    #[test]
    fn a_scenario_whose_jobs_are_listed_under_jobs_keeps_them() {
        // The same pipeline as whole-path, its nightly job given under `jobs` with an id that
        // its run names, as a scenario of several jobs writes it.
        let mut json = whole_path();
        let object = json.as_object_mut().unwrap();
        let mut job = object.remove("job").unwrap();
        job["id"] = Json::from("nightly");
        object.insert("jobs".into(), Json::Array(vec![job]));
        object["runs"][0]["job"] = Json::from("nightly");
        object.remove("reference_designs");
        object.remove("wrong_designs");
        let compiled = compile(&fitted(json)).unwrap();
        let jobs: Vec<&str> = compiled.scenario().all_jobs().map(|j| j.id()).collect();
        assert_eq!(jobs, ["nightly"]);
        // The starting design validates against it: its job node reads raw_payments.
        let start = compiled.scenario().starting_design.clone().unwrap();
        assert!(shared::validate_json(&compiled, &start).is_ok());
    }

    #[test]
    fn something_else_is_an_error() {
        assert!(scenario(Json::from("not a scenario")).is_err());
    }
}
