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
