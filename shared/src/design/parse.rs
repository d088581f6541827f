//! Reading a design from JSON, with every problem of its shape reported.

use serde_json::{Map, Value as Json};

use super::drawn::{Design, Edge, Node, Position, MAX_EDGES, MAX_NODES};
use super::error::{DesignError, DesignErrorCode, Errors};
use super::kind::NodeKind;

/// Parses design JSON text. All shape problems are reported, each with its JSON path.
pub fn parse_design(text: &str) -> Result<Design, Vec<DesignError>> {
    let json: Json = serde_json::from_str(text).map_err(|e| {
        vec![DesignError {
            path: "$".into(),
            code: DesignErrorCode::MalformedJson,
            message: format!("the design is not valid JSON: {e}"),
        }]
    })?;
    design_from_json(&json)
}

/// Reads a design from JSON, reporting every problem of shape (not only the first).
pub fn design_from_json(json: &Json) -> Result<Design, Vec<DesignError>> {
    let mut errors = Errors(Vec::new());
    let Some(object) = json.as_object() else {
        errors.push(
            "$",
            DesignErrorCode::NotAnObject,
            "a design is a JSON object with \"nodes\" and \"edges\"",
        );
        return Err(errors.0);
    };
    for key in object.keys() {
        if key != "nodes" && key != "edges" {
            errors.push(
                format!("$.{key}"),
                DesignErrorCode::UnknownField,
                format!("unknown field \"{key}\"; a design has only \"nodes\" and \"edges\""),
            );
        }
    }
    let mut nodes = Vec::new();
    match object.get("nodes") {
        None => errors.push(
            "$.nodes",
            DesignErrorCode::MissingField,
            "a design needs a \"nodes\" list",
        ),
        Some(Json::Array(list)) => {
            if list.len() > MAX_NODES {
                errors.push(
                    "$.nodes",
                    DesignErrorCode::TooManyNodes,
                    format!(
                        "a design may have at most {MAX_NODES} nodes; this one has {}",
                        list.len()
                    ),
                );
                return Err(errors.0);
            }
            for (i, node) in list.iter().enumerate() {
                if let Some(n) = node_from_json(&format!("$.nodes[{i}]"), node, &mut errors) {
                    nodes.push(n);
                }
            }
        }
        Some(_) => errors.push(
            "$.nodes",
            DesignErrorCode::WrongType,
            "\"nodes\" must be a list",
        ),
    }
    let mut edges = Vec::new();
    match object.get("edges") {
        None => {}
        Some(Json::Array(list)) => {
            if list.len() > MAX_EDGES {
                errors.push(
                    "$.edges",
                    DesignErrorCode::TooManyEdges,
                    format!(
                        "a design may have at most {MAX_EDGES} edges; this one has {}",
                        list.len()
                    ),
                );
                return Err(errors.0);
            }
            for (i, edge) in list.iter().enumerate() {
                let path = format!("$.edges[{i}]");
                let Some(obj) = edge.as_object() else {
                    errors.push(
                        path,
                        DesignErrorCode::WrongType,
                        "an edge is an object {\"from\": …, \"to\": …}",
                    );
                    continue;
                };
                for key in obj.keys() {
                    if key != "from" && key != "to" {
                        errors.push(
                            format!("{path}.{key}"),
                            DesignErrorCode::UnknownField,
                            format!(
                                "unknown field \"{key}\"; an edge has only \"from\" and \"to\""
                            ),
                        );
                    }
                }
                let from = string_field(&path, obj, "from", &mut errors);
                let to = string_field(&path, obj, "to", &mut errors);
                if let (Some(from), Some(to)) = (from, to) {
                    edges.push(Edge { from, to });
                }
            }
        }
        Some(_) => errors.push(
            "$.edges",
            DesignErrorCode::WrongType,
            "\"edges\" must be a list",
        ),
    }
    if errors.0.is_empty() {
        Ok(Design { nodes, edges })
    } else {
        Err(errors.0)
    }
}

fn string_field(
    path: &str,
    obj: &Map<String, Json>,
    key: &str,
    errors: &mut Errors,
) -> Option<String> {
    match obj.get(key) {
        Some(Json::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Json::String(_)) => {
            errors.push(
                format!("{path}.{key}"),
                DesignErrorCode::Empty,
                format!("\"{key}\" must not be empty"),
            );
            None
        }
        Some(_) => {
            errors.push(
                format!("{path}.{key}"),
                DesignErrorCode::WrongType,
                format!("\"{key}\" must be a string"),
            );
            None
        }
        None => {
            errors.push(
                format!("{path}.{key}"),
                DesignErrorCode::MissingField,
                format!("\"{key}\" is missing"),
            );
            None
        }
    }
}

fn node_from_json(path: &str, json: &Json, errors: &mut Errors) -> Option<Node> {
    let Some(obj) = json.as_object() else {
        errors.push(
            path,
            DesignErrorCode::WrongType,
            "a node is an object with \"id\", \"kind\" and \"options\"",
        );
        return None;
    };
    for key in obj.keys() {
        if !matches!(key.as_str(), "id" | "kind" | "options" | "position") {
            errors.push(format!("{path}.{key}"), DesignErrorCode::UnknownField, format!("unknown field \"{key}\"; a node has \"id\", \"kind\", \"options\" and \"position\""));
        }
    }
    let id = string_field(path, obj, "id", errors);
    if let Some(id) = &id {
        if id.len() > 64 {
            errors.push(
                format!("{path}.id"),
                DesignErrorCode::TooLong,
                "a node id may have at most 64 characters",
            );
        }
    }
    let kind = match obj.get("kind") {
        Some(Json::String(s)) => match NodeKind::parse(s) {
            Some(k) => Some(k),
            None => {
                let known: Vec<&str> = NodeKind::ALL.iter().map(|k| k.name()).collect();
                errors.push(
                    format!("{path}.kind"),
                    DesignErrorCode::UnknownKind,
                    format!(
                        "unknown node kind \"{s}\"; the kinds are {}",
                        known.join(", ")
                    ),
                );
                None
            }
        },
        Some(_) => {
            errors.push(
                format!("{path}.kind"),
                DesignErrorCode::WrongType,
                "\"kind\" must be a string",
            );
            None
        }
        None => {
            errors.push(
                format!("{path}.kind"),
                DesignErrorCode::MissingField,
                "\"kind\" is missing",
            );
            None
        }
    };
    let options = match obj.get("options") {
        None | Some(Json::Null) => Map::new(),
        Some(Json::Object(m)) => m.clone(),
        Some(_) => {
            errors.push(
                format!("{path}.options"),
                DesignErrorCode::WrongType,
                "\"options\" must be an object",
            );
            Map::new()
        }
    };
    let position = match obj.get("position") {
        None | Some(Json::Null) => None,
        Some(p) => match serde_json::from_value::<Position>(p.clone()) {
            Ok(p) if p.x.is_finite() && p.y.is_finite() => Some(p),
            _ => {
                errors.push(
                    format!("{path}.position"),
                    DesignErrorCode::WrongType,
                    "\"position\" must be {\"x\": number, \"y\": number}",
                );
                None
            }
        },
    };
    Some(Node {
        id: id?,
        kind: kind?,
        options,
        position,
    })
}
