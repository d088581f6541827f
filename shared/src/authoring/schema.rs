//! The JSON Schema of the scenario format, for authors' editors: the scenario types' own
//! schema, with the design and palette schemas built from the node kinds' options.

#![cfg(feature = "schema")]

use serde_json::Value as Json;

use crate::design::{NodeKind, OptionValues};
use crate::scenario::Scenario;

/// The JSON Schema of scenario files, generated from the Rust types. The committed copy is
/// `scenarios/scenario.schema.json`; a test keeps the two equal.
///
/// Designs are typed by the design schema, built here from the node kinds and their options
/// (the scenario types hold a design as plain JSON, and refer to `#/$defs/Design`). A tagged
/// object (a requirement's check, a job's step, a node) also lists its `kind`s at the top, so
/// that an editor answers a misspelt kind with the kinds there are.
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
    // A failure kind needs a part of the scenario it happens to (one of `parts`).
    let needs = |kind: &str, parts: &[(&str, Json)]| {
        let any: Vec<Json> = parts
            .iter()
            .map(|(part, with)| serde_json::json!({ "required": [part], "properties": { *part: with } }))
            .collect();
        serde_json::json!({
            "if": { "required": ["failures"], "properties": { "failures": { "required": [kind] } } },
            "then": { "anyOf": any },
        })
    };
    let list = serde_json::json!({ "minItems": 1 });
    let object = serde_json::json!({ "type": "object" });
    let rules = Json::Array(vec![
        needs("job_crash", &[("job", object), ("jobs", list.clone())]),
        needs(
            "consumer_crash",
            &[("streams", list.clone()), ("senders", list.clone())],
        ),
        needs("redelivery", &[("streams", list.clone())]),
        needs("message_lost", &[("senders", list.clone())]),
        needs("ack_lost", &[("senders", list)]),
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
                // A table offers the keys in its `keys` and the versions in its `versions`;
                // the palette cannot restrict them.
                OptionValues::Key | OptionValues::Version => continue,
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
                    OptionValues::Version => json!({
                        "description": "The column merge_if_newer compares: one of the table's versions, such as \"version\"; the table's first version when absent.",
                        "type": "string",
                        "minLength": 1,
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
