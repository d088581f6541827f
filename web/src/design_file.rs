//! The design file a student downloads from the canvas and uploads to Gradescope (or opens on
//! the canvas again): `{"scenario": ID, "scenario_hash": HASH, "design": DESIGN}`, the
//! format `pipeline-builder autograde` reads (server/src/autograde.rs). A bare design is
//! accepted when a file is opened, as the autograder accepts it.

use serde::Serialize;
use serde_json::Value as Json;
use shared::design::{design_from_json, Design};

use crate::problems::plain;

#[derive(Serialize)]
struct Export<'a> {
    scenario: &'a str,
    /// Left out when the app does not know it; the autograder grades the file without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    scenario_hash: Option<&'a str>,
    design: &'a Design,
}

/// The file's name: `<scenario-id>-design.json`.
pub fn file_name(scenario: &str) -> String {
    format!("{scenario}-design.json")
}

/// The file's text.
pub fn export(scenario: &str, scenario_hash: Option<&str>, design: &Design) -> String {
    let mut text = serde_json::to_string_pretty(&Export {
        scenario,
        scenario_hash: scenario_hash.filter(|h| !h.is_empty()),
        design,
    })
    .unwrap_or_default();
    text.push('\n');
    text
}

/// Why a file was not opened.
#[derive(Debug, PartialEq)]
pub enum Refused {
    /// The file is an export for another scenario, whose id it names.
    OtherScenario(String),
    /// Anything else, in words.
    Unreadable(String),
}

/// The design in a file's text, for the scenario `scenario`: a bare design, or an export
/// whose scenario (if it names one) is this one.
pub fn open(text: &str, scenario: &str) -> Result<Design, Refused> {
    let unreadable = Refused::Unreadable;
    let json: Json = serde_json::from_str(text).map_err(|_| {
        unreadable("This file is not valid JSON, so it is not a design. Open the file that “Download design” saved, unchanged.".into())
    })?;
    // As the autograder reads it: an object with "design" is an export; anything else is
    // taken as a bare design.
    let design = match json.as_object().filter(|m| m.contains_key("design")) {
        Some(map) => {
            let text = |key: &str| match map.get(key) {
                None | Some(Json::Null) => Ok(None),
                Some(Json::String(s)) => Ok(Some(s.as_str())),
                Some(_) => Err(unreadable(format!(
                    "This file is damaged: its “{key}” is not text. Download the design again."
                ))),
            };
            text("scenario_hash")?;
            if let Some(other) = text("scenario")?.filter(|id| *id != scenario) {
                return Err(Refused::OtherScenario(other.to_string()));
            }
            &map["design"]
        }
        None => &json,
    };
    design_from_json(design).map_err(|errors| {
        let why = errors
            .first()
            .map(|e| plain(&e.message))
            .unwrap_or_default();
        unreadable(format!("This file is not a design: {why}."))
    })
}

/// The refusal of an export for another scenario, named by its title.
pub fn other_scenario(title: &str) -> String {
    format!("This file is a design for “{title}”, not for this scenario.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn design() -> Design {
        design_from_json(&json!({
            "nodes": [
                {"id": "stream", "kind": "stream", "options": {"topic": "orders_paid"}, "position": {"x": 40.0, "y": 160.0}},
                {"id": "consumer", "kind": "stream_consumer", "options": {"offset_commit": "after_write"}}
            ],
            "edges": [{"from": "stream", "to": "consumer"}]
        }))
        .unwrap()
    }

    #[test]
    fn an_export_has_the_autograders_shape_and_opens_again() {
        let text = export("offset-commit", Some("abc"), &design());
        assert_eq!(file_name("offset-commit"), "offset-commit-design.json");
        let json: Json = serde_json::from_str(&text).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 3);
        assert_eq!(json["scenario"], "offset-commit");
        assert_eq!(json["scenario_hash"], "abc");
        assert_eq!(design_from_json(&json["design"]).unwrap(), design());
        assert_eq!(open(&text, "offset-commit").unwrap(), design());
    }

    #[test]
    fn an_unknown_hash_is_left_out() {
        for hash in [None, Some("")] {
            let json: Json =
                serde_json::from_str(&export("offset-commit", hash, &design())).unwrap();
            assert!(json.get("scenario_hash").is_none());
            assert_eq!(json["scenario"], "offset-commit");
        }
    }

    #[test]
    fn a_bare_design_and_an_export_without_scenario_open() {
        let bare = serde_json::to_string(&design()).unwrap();
        assert_eq!(open(&bare, "offset-commit").unwrap(), design());
        let anonymous = json!({"design": design(), "scenario": null}).to_string();
        assert_eq!(open(&anonymous, "offset-commit").unwrap(), design());
    }

    #[test]
    fn an_export_for_another_scenario_is_refused() {
        let text = export("offset-commit", None, &design());
        assert_eq!(
            open(&text, "safe-retry"),
            Err(Refused::OtherScenario("offset-commit".into()))
        );
        assert_eq!(
            other_scenario("Offset commit"),
            "This file is a design for “Offset commit”, not for this scenario."
        );
    }

    #[test]
    fn what_is_not_a_design_is_refused_in_words() {
        for text in [
            "{not json",
            "[1, 2]",
            r#"{"hello": "world"}"#,
            r#"{"scenario": 3, "design": {"nodes": []}}"#,
            r#"{"scenario": "offset-commit", "design": {"nodes": "none"}}"#,
        ] {
            match open(text, "offset-commit") {
                Err(Refused::Unreadable(why)) => {
                    assert!(why.starts_with("This file is"), "{text}: {why}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
