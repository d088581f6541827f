//! A design's edges as a graph: dangling, repeated and self edges, cycles and wiring that
//! makes no sense are reported; the rest is what the stages are read from.

use std::collections::{BTreeMap, BTreeSet};

use super::drawn::Design;
use super::error::{DesignErrorCode, Errors};
use super::kind::wiring_refusal;

/// The graph's edges by node index, both ways.
pub(super) struct Graph {
    pub outgoing: BTreeMap<usize, Vec<usize>>,
    pub incoming: BTreeMap<usize, Vec<usize>>,
}

impl Graph {
    pub fn inputs(&self, node: usize) -> &[usize] {
        self.incoming.get(&node).map_or(&[], Vec::as_slice)
    }
    pub fn outputs(&self, node: usize) -> &[usize] {
        self.outgoing.get(&node).map_or(&[], Vec::as_slice)
    }
}

/// The edges: dangling, repeated, to itself, in a cycle, or wired in a way that makes no
/// sense are reported; the others make the graph.
pub(super) fn edges(design: &Design, index: &BTreeMap<&str, usize>, errors: &mut Errors) -> Graph {
    let mut seen = BTreeSet::new();
    let mut graph = Graph {
        outgoing: BTreeMap::new(),
        incoming: BTreeMap::new(),
    };
    for (e, edge) in design.edges.iter().enumerate() {
        let path = format!("$.edges[{e}]");
        let source = index.get(edge.from.as_str()).copied();
        let target = index.get(edge.to.as_str()).copied();
        for (end, name, found) in [("from", &edge.from, source), ("to", &edge.to, target)] {
            if found.is_none() {
                let verb = if end == "from" { "starts" } else { "ends" };
                errors.push(
                    format!("{path}.{end}"),
                    DesignErrorCode::DanglingEdge,
                    format!("the edge {verb} at \"{name}\", which is not a node of the design"),
                );
            }
        }
        let (Some(s), Some(t)) = (source, target) else {
            continue;
        };
        if !seen.insert((s, t)) {
            errors.push(
                path,
                DesignErrorCode::DuplicateEdge,
                format!("\"{}\" is already connected to \"{}\"", edge.from, edge.to),
            );
            continue;
        }
        if s == t {
            errors.push(
                path,
                DesignErrorCode::Cycle,
                format!(
                    "\"{}\" is connected to itself; a pipeline flows one way",
                    edge.from
                ),
            );
            continue;
        }
        if let Some(why) = wiring_refusal(design.nodes[s].kind, design.nodes[t].kind) {
            errors.push(
                path,
                DesignErrorCode::BadWiring,
                format!("\"{}\" cannot feed \"{}\": {why}", edge.from, edge.to),
            );
        }
        graph.outgoing.entry(s).or_default().push(t);
        graph.incoming.entry(t).or_default().push(s);
    }
    if let Some(cycle) = find_cycle(design.nodes.len(), &graph.outgoing) {
        let names: Vec<&str> = cycle.iter().map(|&i| design.nodes[i].id.as_str()).collect();
        errors.push(
            "$.edges",
            DesignErrorCode::Cycle,
            format!(
                "the edges form a cycle ({} → {}); a pipeline flows one way",
                names.join(" → "),
                names[0]
            ),
        );
    }
    graph
}

fn find_cycle(n: usize, outgoing: &BTreeMap<usize, Vec<usize>>) -> Option<Vec<usize>> {
    // Iterative depth-first search with colours; bounded by the node and edge limits.
    let mut colour = vec![0u8; n];
    for start in 0..n {
        if colour[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        colour[start] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            let children = outgoing.get(&node).map(Vec::as_slice).unwrap_or(&[]);
            if *next < children.len() {
                let child = children[*next];
                *next += 1;
                match colour[child] {
                    0 => {
                        colour[child] = 1;
                        stack.push((child, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|&(v, _)| v == child).unwrap_or(0);
                        return Some(stack[from..].iter().map(|&(v, _)| v).collect());
                    }
                    _ => {}
                }
            } else {
                colour[node] = 2;
                stack.pop();
            }
        }
    }
    None
}
