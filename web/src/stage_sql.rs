//! The SQL view's blocks grouped by stage: in a pipeline of several stages (a consumer landing
//! payments, then the nightly job summing them) each stage's statements stand under that
//! stage's node, in the order the stages run.

use shared::design::{NodeKind, Stage, ValidDesign};
use shared::sql::SqlBlock;

/// The statements of one stage of a design (the preview's engine sends them to the page as
/// JSON).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StageSql {
    /// The design node of the stage (a batch job or a stream consumer).
    pub node: String,
    pub kind: NodeKind,
    /// Its blocks, in order, each titled without the stage's name.
    pub blocks: Vec<SqlBlock>,
}

/// Groups `blocks`, the SQL of `design` (`shared::sql::design_sql`, which titles each block
/// "node: …" when there are several stages), by stage, in the pipeline's order.
pub fn by_stage(design: &ValidDesign, blocks: Vec<SqlBlock>) -> Vec<StageSql> {
    let mut stages: Vec<StageSql> = design
        .pipeline()
        .stages
        .iter()
        .map(|stage| {
            let (node, kind) = match stage {
                Stage::Job(j) => (j.node.clone(), NodeKind::BatchJob),
                Stage::Consumer(c) => (c.node.clone(), NodeKind::StreamConsumer),
            };
            StageSql {
                node,
                kind,
                blocks: Vec::new(),
            }
        })
        .collect();
    let one = stages.len() == 1;
    for mut block in blocks {
        let owner = stages.iter().position(|s| {
            one || block
                .title
                .strip_prefix(s.node.as_str())
                .is_some_and(|rest| rest.starts_with(": "))
        });
        // A block that names no stage stays with the stage before it, so nothing is hidden.
        let Some(i) = owner.or(stages.len().checked_sub(1)) else {
            continue;
        };
        if !one {
            if let Some(rest) = block.title.strip_prefix(&format!("{}: ", stages[i].node)) {
                block.title = rest.to_string();
            }
        }
        stages[i].blocks.push(block);
    }
    stages.retain(|s| !s.blocks.is_empty());
    stages
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::Compiled;

    fn compiled(name: &str) -> Compiled {
        let path = format!("{}/../scenarios/{name}.json", env!("CARGO_MANIFEST_DIR"));
        Compiled::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn sql_of(scenario: &Compiled, design: &serde_json::Value) -> Vec<StageSql> {
        let valid = shared::validate_json(scenario, design).unwrap();
        by_stage(&valid, shared::sql::design_sql(scenario, &valid))
    }

    #[test]
    fn the_whole_path_shows_the_consumers_sql_then_the_nightly_jobs() {
        let scenario = compiled("whole-path");
        let design = &scenario.scenario().reference_designs[0].design;
        let stages = sql_of(&scenario, design);
        let heads: Vec<(&str, NodeKind)> =
            stages.iter().map(|s| (s.node.as_str(), s.kind)).collect();
        assert_eq!(
            heads,
            [
                ("consumer", NodeKind::StreamConsumer),
                ("nightly", NodeKind::BatchJob)
            ]
        );
        assert!(stages[0].blocks[0].sql.contains("INSERT INTO raw_payments"));
        assert_eq!(stages[0].blocks[0].title, "consumer → raw_payments");
        let nightly: Vec<&str> = stages[1].blocks.iter().map(|b| b.title.as_str()).collect();
        assert_eq!(nightly.first(), Some(&"open one transaction"));
        assert!(
            stages[1]
                .blocks
                .iter()
                .any(|b| b.sql.contains("DELETE FROM daily_revenue")),
            "{nightly:?}"
        );
        // No block's title still names its stage: the heading does.
        for stage in &stages {
            for block in &stage.blocks {
                assert!(!block.title.starts_with(&format!("{}: ", stage.node)));
            }
        }
    }

    #[test]
    fn a_design_of_one_stage_keeps_its_blocks_as_they_are() {
        let scenario = compiled("safe-retry");
        let design = scenario.scenario().starting_design.clone().unwrap();
        let valid = shared::validate_json(&scenario, &design).unwrap();
        let blocks = shared::sql::design_sql(&scenario, &valid);
        let stages = by_stage(&valid, blocks.clone());
        assert_eq!(stages.len(), 1);
        assert_eq!(stages[0].node, "job");
        assert_eq!(stages[0].blocks, blocks);
    }
}
