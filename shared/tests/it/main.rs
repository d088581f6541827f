//! Tests through the public API: scenario and design in, verdict out.

mod chapter;
mod coverage;
mod designs;
mod diff;
mod golden;
mod notes;
mod pipelines;
mod points;
mod properties;
mod search;
mod stages;
mod wire;

use shared::{check_json, Compiled, Scenario, Verdict};

/// A shipped scenario file, as written (tests change it before they compile it).
pub fn scenario_file(name: &str) -> Scenario {
    let path = format!("{}/../scenarios/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Scenario::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn scenario(json: serde_json::Value) -> Scenario {
    serde_json::from_value(json).expect("a test scenario parses")
}

/// A scenario the check can read: a compiled one as it is, a file compiled (which must
/// compile).
pub trait Lesson {
    fn compiled(&self) -> Compiled;
}

impl Lesson for Scenario {
    fn compiled(&self) -> Compiled {
        Compiled::new(self.clone()).unwrap_or_else(|e| panic!("the test scenario compiles: {e:?}"))
    }
}

impl Lesson for Compiled {
    fn compiled(&self) -> Compiled {
        self.clone()
    }
}

pub fn verdict(scenario: &impl Lesson, design: serde_json::Value) -> Verdict {
    let scenario = &scenario.compiled();
    check_json(&scenario.compiled(), &design).unwrap_or_else(|e| panic!("{e}"))
}

pub fn requirement<'a>(v: &'a Verdict, id: &str) -> &'a shared::verdict::RequirementVerdict {
    v.requirements
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("no requirement {id}"))
}

/// The chapter's daily job design, with the given options.
pub fn batch_design(
    transaction: &str,
    orders_write: &str,
    revenue_write: &str,
) -> serde_json::Value {
    serde_json::json!({
        "nodes": [
            {"id": "src", "kind": "source_table", "options": {"table": "source_orders"}},
            {"id": "job", "kind": "batch_job", "options": {"date_filter": "logical_date", "transaction": transaction}},
            {"id": "orders", "kind": "table", "options": {"table": "orders", "write": orders_write}},
            {"id": "rev", "kind": "table", "options": {"table": "daily_revenue", "write": revenue_write}}
        ],
        "edges": [{"from": "src", "to": "job"}, {"from": "job", "to": "orders"}, {"from": "job", "to": "rev"}]
    })
}
