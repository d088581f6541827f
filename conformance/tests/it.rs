//! The conformance runner agrees with real databases on shipped scenarios, and catches a
//! simulator that does not.

use conformance::{designs, load_scenarios, schedules, Database, Mismatch, Runner};
use shared::check::Mutation;

fn scenarios(ids: &[&str]) -> Vec<shared::Compiled> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    load_scenarios(&dir)
        .unwrap()
        .into_iter()
        .filter(|s| ids.contains(&s.scenario().id.as_str()))
        .collect()
}

fn sqlite(name: &str) -> Database {
    Database::Sqlite(std::env::temp_dir().join(format!(
        "pb-conformance-test-{name}-{}.db",
        std::process::id()
    )))
}

async fn replay_all(
    database: Database,
    compiled: &shared::Compiled,
    mutation: Mutation,
) -> (u64, Vec<Mismatch>) {
    let scenario = compiled.scenario();
    let mut runner = Runner::open(database).await.unwrap();
    let mut mismatches = Vec::new();
    let mut count = 0;
    for (name, design) in designs(scenario) {
        let (setup, all) = schedules(compiled, &design, runner.dialect(), mutation).unwrap();
        runner.create(&setup).await.unwrap();
        for s in &all {
            runner
                .replay(scenario, &name, &setup, s, &mut mismatches)
                .await
                .unwrap();
            count += 1;
        }
    }
    runner.finish().await.unwrap();
    (count, mismatches)
}

#[tokio::test]
async fn sqlite_agrees_with_the_simulator_on_batch_and_stream_scenarios() {
    for s in scenarios(&["safe-retry", "safe-rerun", "offset-commit", "exactly-once"]) {
        let id = &s.scenario().id;
        let (count, mismatches) = replay_all(sqlite(id), &s, Mutation::None).await;
        assert!(count > 0, "{id}: schedules were replayed");
        assert!(
            mismatches.is_empty(),
            "{id}: {}",
            mismatches
                .iter()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[tokio::test]
async fn a_model_where_rollback_keeps_the_rows_is_caught_with_a_clear_report() {
    let s = scenarios(&["safe-retry"]).remove(0);
    let (_, mismatches) = replay_all(sqlite("mutant"), &s, Mutation::RollbackKeepsRows).await;
    assert!(!mismatches.is_empty(), "the wrong model must be caught");
    let first = mismatches[0].to_string();
    assert!(first.starts_with("MISMATCH in safe-retry / reference: delete-insert of the day in one transaction / schedule [job_crash@"), "{first}");
    assert!(first.contains("differs from the simulator"), "{first}");
    assert!(
        first.contains("simulator: ") && first.contains("database:  "),
        "{first}"
    );
    // A crashed transaction's rows: the wrong model shows them, the database rolled them back.
    assert!(
        mismatches.iter().all(|m| !m.faults.is_empty()),
        "only schedules with a crash differ"
    );
}

#[tokio::test]
async fn postgres_agrees_with_the_simulator() {
    let url = conformance::postgres_url();
    if !conformance::postgres_reachable(&url).await {
        if std::env::var("PIPELINE_BUILDER_SKIP_POSTGRES").is_ok_and(|v| v == "1") {
            eprintln!("!!! SKIPPED: PostgreSQL not reachable at {url} (PIPELINE_BUILDER_SKIP_POSTGRES=1) !!!");
            return;
        }
        panic!("PostgreSQL is not reachable at {url}; start it, or set PIPELINE_BUILDER_SKIP_POSTGRES=1 to skip loudly");
    }
    for s in scenarios(&[
        "safe-retry",
        "offset-commit",
        "idempotency-key",
        "whole-path",
        "late-correction",
        "out-of-order",
    ]) {
        let (count, mismatches) =
            replay_all(Database::Postgres(url.clone()), &s, Mutation::None).await;
        assert!(count > 0);
        assert!(
            mismatches.is_empty(),
            "{}: {}",
            s.scenario().id,
            mismatches
                .iter()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    let s = scenarios(&["safe-retry"]).remove(0);
    let (_, mismatches) = replay_all(
        Database::Postgres(url.clone()),
        &s,
        Mutation::RollbackKeepsRows,
    )
    .await;
    assert!(
        !mismatches.is_empty(),
        "PostgreSQL catches the wrong model too"
    );
    let s = scenarios(&["whole-path"]).remove(0);
    let (_, mismatches) = replay_all(Database::Postgres(url), &s, Mutation::StaleUpstream).await;
    assert!(
        !mismatches.is_empty(),
        "PostgreSQL catches a job that does not see what the consumer committed"
    );
}

#[tokio::test]
async fn sqlite_agrees_with_the_simulator_on_the_scenarios_of_several_stages_and_changing_sources()
{
    for s in scenarios(&[
        "whole-path",
        "late-correction",
        "out-of-order",
        "delivery-promise",
    ]) {
        let id = &s.scenario().id;
        let (count, mismatches) = replay_all(sqlite(id), &s, Mutation::None).await;
        assert!(count > 0, "{id}: schedules were replayed");
        assert!(
            mismatches.is_empty(),
            "{id}: {}",
            mismatches
                .iter()
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// A second stage that reads the first stage's table as if nothing had been committed to it
/// computes a revenue the real database does not: the runner reports where.
#[tokio::test]
async fn a_job_that_does_not_see_what_the_consumer_committed_is_caught() {
    let s = scenarios(&["whole-path"]).remove(0);
    let (_, mismatches) = replay_all(sqlite("stale"), &s, Mutation::StaleUpstream).await;
    assert!(!mismatches.is_empty(), "the wrong model must be caught");
    assert!(
        mismatches
            .iter()
            .all(|m| m.problem == "daily_revenue differs from the simulator"),
        "{}",
        mismatches[0]
    );
    assert!(
        mismatches[0]
            .action
            .starts_with("step 1: sum the day's payments"),
        "{}",
        mismatches[0]
    );
}
