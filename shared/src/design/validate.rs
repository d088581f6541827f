//! Validation of a design against a compiled scenario: ids, options, edges and wiring here;
//! the stages the graph amounts to in `pipeline`.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use super::drawn::Design;
use super::error::{DesignError, DesignErrorCode, Errors};
use super::graph::edges;
use super::options::{typed_options, TypedOptions};
use super::parse::design_from_json;
use super::pipeline::{extract_pipeline, Pipeline};
use crate::compiled::Compiled;

/// A design that passed validation for one scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidDesign {
    design: Design,
    pipeline: Pipeline,
}

impl ValidDesign {
    pub fn design(&self) -> &Design {
        &self.design
    }
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

/// Parses and validates a design for a scenario, reporting every problem.
pub fn validate_json(scenario: &Compiled, json: &Json) -> Result<ValidDesign, Vec<DesignError>> {
    let design = design_from_json(json)?;
    validate(scenario, design)
}

/// Validates a design for a scenario: options, palette, wiring, and that it forms one of the
/// pipelines the scenario runs. Every problem is reported, sorted by path.
pub fn validate(scenario: &Compiled, design: Design) -> Result<ValidDesign, Vec<DesignError>> {
    let mut errors = Errors(Vec::new());
    let index = node_index(&design, &mut errors);
    let typed: Vec<Option<TypedOptions>> = design
        .nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            typed_options(
                scenario.scenario(),
                &format!("$.nodes[{i}]"),
                node,
                &mut errors,
            )
        })
        .collect();
    let graph = edges(&design, &index, &mut errors);
    let pipeline = if errors.0.is_empty() {
        extract_pipeline(scenario, &design, &typed, &graph, &mut errors)
    } else {
        None
    };
    match pipeline {
        Some(pipeline) if errors.0.is_empty() => Ok(ValidDesign { design, pipeline }),
        _ => {
            let mut list = errors.0;
            list.sort();
            list.dedup();
            Err(list)
        }
    }
}

fn node_index<'d>(design: &'d Design, errors: &mut Errors) -> BTreeMap<&'d str, usize> {
    let mut index = BTreeMap::new();
    for (i, node) in design.nodes.iter().enumerate() {
        if index.insert(node.id.as_str(), i).is_some() {
            errors.push(
                format!("$.nodes[{i}].id"),
                DesignErrorCode::DuplicateId,
                format!("two nodes are called \"{}\"; ids must be unique", node.id),
            );
        }
    }
    index
}
