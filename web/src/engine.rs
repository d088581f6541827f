//! The preview's engine: what the browser's simulator says about a design as it is drawn —
//! its problems, the SQL it amounts to, and the score it would get.
//!
//! It runs in a WASM module of its own (`web/engine`, `engine_bg.wasm`), which a page loads
//! after it is interactive, so that the module every student loads first carries neither the
//! simulator nor the design's validation. The page sends the scenario's text and the design as
//! JSON and reads an [`Answer`] back as JSON; both sides are this file, so they cannot
//! disagree on the format.

use std::cell::RefCell;

use serde::{Deserialize, Serialize};
use shared::design::{Design, DesignError};
use shared::{Compiled, Verdict};

use crate::stage_sql::{self, StageSql};

/// The preview must stay instant: a check that would take longer is left to the server.
pub const LIMITS: shared::Limits = shared::Limits {
    max_schedules: 20_000,
    max_steps: 20_000_000,
};

/// What the engine says about one design.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// What keeps the design from being complete; empty when it is valid.
    #[serde(default)]
    pub problems: Vec<DesignError>,
    /// The SQL of a valid design, stage by stage in the order they run.
    #[serde(default)]
    pub stages: Vec<StageSql>,
    /// The score a valid design would get, without coverage and advisories.
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// The design has more failure schedules than the preview tries.
    #[serde(default)]
    pub too_large: bool,
    /// Why the engine could not say: a scenario it could not read, a design it could not
    /// parse, a check that failed.
    #[serde(default)]
    pub failed: Option<String>,
}

impl Answer {
    fn failed(message: String) -> Answer {
        Answer {
            failed: Some(message),
            ..Answer::default()
        }
    }
}

thread_local! {
    /// The last scenario compiled, by its text: a page asks about one scenario many times.
    static COMPILED: RefCell<Option<(String, Compiled)>> = const { RefCell::new(None) };
}

/// The engine's answer about `design` (JSON) in `scenario` (the fitted text of its student
/// view, [`crate::student_view::StudentScenario::text`]), as JSON.
pub fn answer_json(scenario: &str, design: &str) -> String {
    let answer = answer(scenario, design);
    serde_json::to_string(&answer).unwrap_or_else(|e| {
        serde_json::to_string(&Answer::failed(e.to_string())).unwrap_or_default()
    })
}

/// The engine's answer about `design` (JSON) in `scenario` (its fitted text).
pub fn answer(scenario: &str, design: &str) -> Answer {
    let design: Design = match serde_json::from_str(design) {
        Ok(design) => design,
        Err(e) => return Answer::failed(format!("the design could not be read: {e}")),
    };
    COMPILED.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|(text, _)| text != scenario) {
            match crate::student_view::compile(scenario) {
                Ok(compiled) => *cell = Some((scenario.to_string(), compiled)),
                Err(e) => return Answer::failed(e),
            }
        }
        let (_, compiled) = cell.as_ref().expect("compiled just above");
        answer_in(compiled, design)
    })
}

/// The engine's answer about `design` in a compiled scenario.
pub fn answer_in(scenario: &Compiled, design: Design) -> Answer {
    let valid = match shared::validate(scenario, design) {
        Ok(valid) => valid,
        Err(problems) => {
            return Answer {
                problems,
                ..Answer::default()
            }
        }
    };
    let stages = stage_sql::by_stage(&valid, shared::sql::design_sql(scenario, &valid));
    // The preview shows the score only, so it leaves out coverage and advisories, which cost
    // a search per variant, and shows no scenario hash.
    match shared::check::check_graded(scenario, "", &valid, LIMITS) {
        Ok(verdict) => Answer {
            stages,
            verdict: Some(verdict),
            ..Answer::default()
        },
        Err(shared::CheckError::TooLarge { .. }) => Answer {
            stages,
            too_large: true,
            ..Answer::default()
        },
        Err(e) => Answer {
            stages,
            failed: Some(e.to_string()),
            ..Answer::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::student_view::StudentScenario;
    use serde_json::Value as Json;

    fn shipped() -> Vec<(String, Json)> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
        let mut all = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if !name.ends_with(".json") || name.contains("schema") {
                continue;
            }
            all.push((
                name,
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap(),
            ));
        }
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The student's view the server sends: no reference or wrong designs.
    fn student_view(mut json: Json) -> StudentScenario {
        let object = json.as_object_mut().unwrap();
        object.remove("reference_designs");
        object.remove("wrong_designs");
        StudentScenario::read(json).unwrap()
    }

    #[test]
    fn every_reference_design_is_answered_as_the_simulator_scores_it_through_json() {
        let mut answered = 0;
        for (name, json) in shipped() {
            let full = Compiled::new(serde_json::from_value(json.clone()).unwrap()).unwrap();
            let view = student_view(json);
            for design in &full.scenario().reference_designs {
                let design_text = serde_json::to_string(&design.design).unwrap();
                // What the page reads: the answer's JSON, read back.
                let answer: Answer =
                    serde_json::from_str(&answer_json(&view.text(), &design_text)).unwrap();
                let valid = shared::validate_json(&full, &design.design).unwrap();
                let expected = shared::check::check_graded(&full, "", &valid, LIMITS);
                match expected {
                    Ok(v) => assert_eq!(answer.verdict.as_ref(), Some(&v), "{name}"),
                    Err(_) => assert!(answer.too_large || answer.failed.is_some(), "{name}"),
                }
                assert!(answer.problems.is_empty(), "{name}");
                assert!(!answer.stages.is_empty(), "{name}: the SQL view");
                answered += 1;
            }
        }
        assert!(answered >= 11, "{answered} designs");
    }

    #[test]
    fn an_incomplete_design_gets_its_problems_and_no_sql() {
        let (_, json) = shipped().into_iter().next().unwrap();
        let view = student_view(json);
        let answer = answer(&view.text(), r#"{"nodes":[],"edges":[]}"#);
        assert!(!answer.problems.is_empty());
        assert!(answer.stages.is_empty());
        assert!(answer.verdict.is_none());
        assert!(answer.failed.is_none());
    }

    #[test]
    fn what_it_cannot_read_is_said_not_panicked() {
        let (_, json) = shipped().into_iter().next().unwrap();
        let view = student_view(json);
        let bad_design = answer(&view.text(), "not json");
        assert!(bad_design.failed.unwrap().contains("design"));
        let bad_scenario = answer("{}", r#"{"nodes":[],"edges":[]}"#);
        assert!(bad_scenario.failed.unwrap().contains("scenario"));
    }

    #[test]
    fn a_second_scenario_is_compiled_in_place_of_the_first() {
        let mut views = shipped().into_iter().map(|(_, j)| student_view(j));
        let (a, b) = (views.next().unwrap(), views.next().unwrap());
        for view in [&a, &b, &a] {
            let start = view.scenario().starting_design.clone().unwrap();
            let answer = answer(&view.text(), &start.to_string());
            // Each starting design is judged in its own scenario: it is complete there.
            assert!(answer.failed.is_none(), "{:?}", answer.failed);
        }
    }
}
