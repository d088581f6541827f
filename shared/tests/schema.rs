//! The committed JSON Schema of scenario files (`scenarios/scenario.schema.json`) must be the
//! one the Rust types generate, so that authors' editors check what the server checks.
//! Regenerate it with `UPDATE_SCHEMA=1 cargo test -p shared --features schema --test schema`.
#![cfg(feature = "schema")]

use std::path::Path;

#[test]
fn committed_schema_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/scenario.schema.json");
    let generated = shared::authoring::schema_json();
    if std::env::var_os("UPDATE_SCHEMA").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "scenarios/scenario.schema.json is stale: the scenario types changed. Regenerate it with\n  UPDATE_SCHEMA=1 cargo test -p shared --features schema --test schema\nand commit it."
    );
}

#[test]
fn schema_describes_the_scenario_format() {
    let schema: serde_json::Value =
        serde_json::from_str(&shared::authoring::schema_json()).expect("the schema is JSON");
    let properties = schema["properties"]
        .as_object()
        .expect("a scenario is an object");
    for field in [
        "id",
        "order",
        "title",
        "task",
        "tables",
        "failures",
        "palette",
        "requirements",
        "reference_designs",
        "wrong_designs",
    ] {
        assert!(
            properties.contains_key(field),
            "the schema describes \"{field}\""
        );
    }
    assert_eq!(
        schema["additionalProperties"],
        serde_json::Value::Bool(false),
        "unknown fields are refused, as the parser refuses them"
    );
}

fn workspace() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("shared sits in the workspace")
        .to_path_buf()
}

/// The `.json` files of a folder (schemas aside), sorted, as (file name, text).
fn json_files(folder: &Path) -> Vec<(String, String)> {
    conformance::scenario_texts(folder)
        .unwrap_or_else(|e| panic!("cannot read {e}"))
        .into_iter()
        .map(|(p, text)| (p.file_name().unwrap().to_string_lossy().into_owned(), text))
        .collect()
}

/// The committed schema as a real JSON Schema (2020-12) validator.
fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(workspace().join("scenarios/scenario.schema.json")).unwrap(),
    )
    .expect("the committed schema is JSON");
    jsonschema::draft202012::new(&schema).expect("the committed schema is a valid JSON Schema")
}

/// The schema's complaints about a text, as "path: message" lines; one line when it is not
/// JSON at all.
fn complaints(validator: &jsonschema::Validator, text: &str) -> Vec<String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Err(e) => vec![format!("not JSON: {e}")],
        Ok(json) => validator
            .iter_errors(&json)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect(),
    }
}

#[test]
fn every_shipped_scenario_fits_the_schema() {
    let validator = validator();
    let files = json_files(&workspace().join("scenarios"));
    assert!(files.len() >= 8);
    for (file, text) in files {
        let found = complaints(&validator, &text);
        assert!(found.is_empty(), "{file}:\n{}", found.join("\n"));
    }
    // The template `scenarios new` writes fits it too.
    let template = shared::authoring::template("late-orders", 9);
    let found = complaints(&validator, &template);
    assert!(found.is_empty(), "the template:\n{}", found.join("\n"));
}

/// Which broken fixtures the schema alone catches, in an editor, before the validator runs.
/// The others need what a schema cannot know: names across the file, the catalogue, or the
/// simulator's verdicts.
#[test]
fn the_schema_alone_catches_the_broken_fixtures_it_can() {
    #[rustfmt::skip]
    const CAUGHT_BY_SCHEMA: &[(&str, bool)] = &[
        ("bad-json.json", true),                             // not JSON at all
        ("bad-message-value.json", false),                   // a message's field types are the file's own
        ("bound-as-text.json", true),                        // bound is an integer
        ("bound-never-reached.json", false),                 // a warning: needs max_per_run × runs
        ("bound-too-large.json", true),                      // bound ≤ 1000
        ("design-in-scenarios-folder.json", true),           // required fields missing
        ("duplicate-requirement-id.json", false),            // uniqueness of ids
        ("failure-without-sender.json", true),               // message_lost requires senders
        ("missing-field.json", true),                        // required field
        ("misspelt-fields.json", true),                      // no additional properties
        ("month-13.json", true),
        ("never-seen-from-first-row-zero.json", false),                             // the date pattern
        ("palette-window-as-number.json", true),             // palette values are strings
        ("reference-design-fails.json", false),              // the simulator's verdict
        ("requirement-never-missed.json", false),            // the simulator's verdict
        ("shape-errors-everywhere.json", true),              // bound ≥ 0, kinds, types
        ("starting-design-already-passes.json", false),      // the simulator's verdict
        ("starting-design-outside-palette.json", false),     // the design against the palette
        ("stream-bound-past-failure-points.json", false),    // needs messages × crash places
        ("unknown-column-in-requirement.json", false),       // names across the file
        ("unknown-column-in-step.json", false),              // names across the file
        ("unknown-palette-value.json", true),                // the option's values
        ("unknown-requirement-in-wrong-design.json", false), // names across the file
        ("unknown-run.json", false),                         // names across the file
        ("unknown-stream-in-design.json", false),            // names across the file
        ("unknown-table-in-requirement.json", false),        // names across the file
        ("wrong-design-passes.json", false),                 // the simulator's verdict
    ];
    let validator = validator();
    let fixtures = json_files(&workspace().join("tests/fixtures/broken-scenarios"));
    let mut seen = Vec::new();
    for (file, text) in &fixtures {
        seen.push((file.as_str(), !complaints(&validator, text).is_empty()));
    }
    let table: Vec<(&str, bool)> = CAUGHT_BY_SCHEMA.to_vec();
    assert_eq!(seen, table, "the schema's catch, per fixture, changed");
}

/// A misspelt kind, option or value gets an answer that lists what there is, in an editor.
#[test]
fn a_misspelt_kind_or_option_value_is_answered_with_what_there_is() {
    let validator = validator();
    let text = std::fs::read_to_string(workspace().join("scenarios/offset-commit.json")).unwrap();
    let mut scenario: serde_json::Value = serde_json::from_str(&text).unwrap();
    scenario["requirements"][0]["check"]["kind"] = "summ".into();
    scenario["reference_designs"][0]["design"]["nodes"][1]["options"]["offset_commit"] =
        "after_writes".into();
    scenario["wrong_designs"][0]["design"]["nodes"][2]["kind"] = "tabel".into();
    scenario["order"] = 0.into();
    scenario["id"] = "Offset Commit".into();
    let found = complaints(&validator, &scenario.to_string()).join("\n");
    for expected in [
        "/requirements/0/check/kind: \"summ\" is not one of \"value\", \"sum\"",
        "/reference_designs/0/design/nodes/1",
        "/wrong_designs/0/design/nodes/2/kind: \"tabel\" is not one of \"source_table\"",
        "/order: 0 is less than the minimum of 1",
        "/id: \"Offset Commit\" does not match",
    ] {
        assert!(found.contains(expected), "{expected} missing in:\n{found}");
    }
}
