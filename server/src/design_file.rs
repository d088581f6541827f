//! The file a student uploads: the canvas's **Download design** file,
//! `{"scenario": ID, "scenario_hash": HASH, "design": DESIGN}`, or a bare design. One reader
//! for `pipeline-builder autograde` and `POST /api/grade`, so that both grade the same file
//! the same way: the scenario the grader names wins, an export for another scenario is not
//! graded, and an export of another version of the scenario is graded with a note.

use serde_json::Value as Json;

/// What an uploaded file says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Upload<'a> {
    /// The scenario an export names; `None` for a bare design.
    pub scenario: Option<&'a str>,
    /// The scenario hash an export names (the canvas leaves it out before the first Check).
    pub scenario_hash: Option<&'a str>,
    pub design: &'a Json,
    /// Where the design sits in the file: `$` for a bare design, `$.design` in an export.
    pub at: &'static str,
}

/// An export whose `scenario` or `scenario_hash` is not text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damaged {
    /// `$.scenario` or `$.scenario_hash`.
    pub path: String,
    pub message: String,
}

/// Reads an uploaded file's JSON. An object with `"design"` is an export; anything else is
/// taken as a bare design (which the validator then judges).
pub fn read(json: &Json) -> Result<Upload<'_>, Damaged> {
    let Some(map) = json.as_object().filter(|m| m.contains_key("design")) else {
        return Ok(Upload {
            scenario: None,
            scenario_hash: None,
            design: json,
            at: "$",
        });
    };
    let text = |key: &str| match map.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(Damaged {
            path: format!("$.{key}"),
            message: format!("\"{key}\" must be a string; export the design from the canvas again"),
        }),
    };
    Ok(Upload {
        scenario: text("scenario")?,
        scenario_hash: text("scenario_hash")?,
        design: &map["design"],
        at: "$.design",
    })
}

/// The scenario an upload is graded against: the one the grader names (`named`) wins; without
/// one, the one the export names; `Ok(None)` when neither names one (a bare design, and no
/// scenario given). An export for another scenario than the one named is `Err` with the id it
/// names: it is not graded.
pub fn scenario_to_grade<'a>(
    named: Option<&'a str>,
    upload: &Upload<'a>,
) -> Result<Option<&'a str>, &'a str> {
    match (named, upload.scenario) {
        (Some(named), Some(exported)) if named != exported => Err(exported),
        (Some(named), _) => Ok(Some(named)),
        (None, exported) => Ok(exported),
    }
}

/// Why an export for another scenario is not graded, in the student's words.
pub fn other_scenario(exported: &str, graded_id: &str, graded_title: &str) -> String {
    format!(
        "this file was exported from scenario \"{exported}\", but this assignment is \"{graded_id}\" ({graded_title}); open that scenario on the canvas, export it and resubmit"
    )
}

/// The note for an export of another version of the scenario than the one graded (its hash
/// differs), or `None` when it names the current one or none. Grading it is fairer than
/// refusing it: the design is the student's work, and requirements rarely change between
/// versions.
pub fn stale_note(upload: &Upload<'_>, scenario_id: &str, current_hash: &str) -> Option<String> {
    let exported = upload.scenario_hash.filter(|h| *h != current_hash)?;
    Some(format!(
        "your file was exported from another version of \"{scenario_id}\" (`{exported}`); it is graded against the current one (`{current_hash}`)."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bare_design_is_the_whole_file() {
        let bare = json!({"nodes": [], "edges": []});
        let upload = read(&bare).unwrap();
        assert_eq!(upload.design, &bare);
        assert_eq!(
            (upload.scenario, upload.scenario_hash, upload.at),
            (None, None, "$")
        );
        assert_eq!(scenario_to_grade(None, &upload), Ok(None));
        assert_eq!(
            scenario_to_grade(Some("safe-retry"), &upload),
            Ok(Some("safe-retry"))
        );
    }

    #[test]
    fn an_export_names_its_scenario_and_the_graders_scenario_wins() {
        let file = json!({"scenario": "offset-commit", "scenario_hash": "sha256:old", "design": {"nodes": []}});
        let upload = read(&file).unwrap();
        assert_eq!(upload.design, &json!({"nodes": []}));
        assert_eq!(upload.at, "$.design");
        assert_eq!(scenario_to_grade(None, &upload), Ok(Some("offset-commit")));
        assert_eq!(
            scenario_to_grade(Some("offset-commit"), &upload),
            Ok(Some("offset-commit"))
        );
        assert_eq!(
            scenario_to_grade(Some("safe-retry"), &upload),
            Err("offset-commit")
        );
        assert!(stale_note(&upload, "offset-commit", "sha256:old").is_none());
        let note = stale_note(&upload, "offset-commit", "sha256:new").unwrap();
        assert!(
            note.contains("`sha256:old`") && note.contains("`sha256:new`"),
            "{note}"
        );
    }

    #[test]
    fn an_export_whose_names_are_not_text_is_damaged() {
        let damaged = read(&json!({"scenario": 3, "design": {}})).unwrap_err();
        assert_eq!(damaged.path, "$.scenario");
        let damaged = read(&json!({"scenario_hash": [], "design": {}})).unwrap_err();
        assert_eq!(damaged.path, "$.scenario_hash");
        let anonymous = json!({"scenario": null, "design": {}});
        assert_eq!(read(&anonymous).unwrap().scenario, None);
    }
}
