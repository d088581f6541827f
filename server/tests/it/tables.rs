//! The verdict tables: built in the background without delaying readiness, said by `/readyz`,
//! and once built answering checks with the search's verdict, byte for byte, however the
//! design is drawn.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{json, Value};
use server::config::Config;
use server::watch::LiveCatalogue;
use server::{catalogue, AppState, Store};

use crate::common::{
    scenarios, scenarios_dir, spawn_app, spawn_app_with_tables, As, TempDir, TestApp,
};

/// How long the tables of every shipped scenario may take in a debug build on a busy machine.
const BUILD_WAIT: Duration = Duration::from_secs(600);

async fn tables_of(app: &TestApp) -> Value {
    let ready = app.get("/readyz", &As::nobody()).await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text);
    assert_eq!(ready.body["status"], "ready");
    ready.body["verdict_tables"].clone()
}

async fn wait_for_tables(app: &TestApp) -> Value {
    let started = Instant::now();
    loop {
        let tables = tables_of(app).await;
        if tables["complete"] == true {
            return tables;
        }
        assert!(
            started.elapsed() < BUILD_WAIT,
            "the tables were not built: {tables}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The design with its nodes renamed, moved and listed the other way round.
fn redrawn(design: &Value) -> Value {
    let mut out = design.clone();
    let rename = |id: &Value| json!(format!("my {}", id.as_str().unwrap()));
    let nodes = out["nodes"].as_array_mut().unwrap();
    for (i, node) in nodes.iter_mut().enumerate() {
        node["id"] = rename(&node["id"]);
        node["position"] = json!({"x": 10 * i, "y": 500 - 7 * i});
    }
    nodes.reverse();
    for edge in out["edges"].as_array_mut().unwrap() {
        edge["from"] = rename(&edge["from"]);
        edge["to"] = rename(&edge["to"]);
    }
    out
}

/// The search's verdict as the check route writes it.
fn searched(id: &str, design: &Value, limits: shared::Limits) -> String {
    let compiled = scenarios()
        .into_iter()
        .find(|s| s.scenario().id == id)
        .expect("a shipped scenario");
    let valid = shared::validate_json(&compiled, design).expect("a valid design");
    let hash = shared::scenario_hash(compiled.scenario());
    let verdict = shared::check::check_hashed(&compiled, &hash, &valid, limits).unwrap();
    serde_json::to_string(&verdict).unwrap()
}

#[tokio::test]
async fn checks_are_answered_from_the_built_tables_with_the_searchs_verdict() {
    let config = Config::default();
    let limits = config.check_limits;
    let app = spawn_app_with_tables(config).await;
    // Ready at once: the tables are built while the server answers.
    let first = tables_of(&app).await;
    assert!(first["built"].as_u64().unwrap() + first["building"].as_u64().unwrap() >= 11);
    let tables = wait_for_tables(&app).await;
    assert_eq!(tables["built"], scenarios().len(), "{tables}");
    assert_eq!(tables["searched"], 0);
    assert!(tables["designs"].as_u64().unwrap() >= 500, "{tables}");
    assert!(tables["bytes"].as_u64().unwrap() > 0);

    let catalogue = app.state.catalogue();
    let mut compared = 0;
    for compiled in scenarios() {
        let scenario = compiled.scenario();
        let id = &scenario.id;
        let drawn = scenario
            .reference_designs
            .iter()
            .map(|d| serde_json::to_value(&d.design).unwrap())
            .chain(
                scenario
                    .wrong_designs
                    .iter()
                    .map(|d| serde_json::to_value(&d.design).unwrap()),
            )
            .collect::<Vec<_>>();
        for design in drawn {
            for design in [redrawn(&design), design] {
                let valid = shared::validate_json(&compiled, &design).unwrap();
                let entry = catalogue.get(id).unwrap();
                assert!(
                    entry.table_json(&valid, limits).is_some(),
                    "{id}: the table holds {design}"
                );
                let answer = app
                    .post(
                        &format!("/api/scenarios/{id}/check"),
                        &As::nobody(),
                        &design,
                    )
                    .await;
                assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
                assert_eq!(answer.text, searched(id, &design, limits), "{id}: {design}");
                compared += 1;
            }
        }
    }
    assert!(compared >= 40, "{compared}");
}

#[tokio::test]
async fn a_server_that_keeps_no_tables_searches_and_says_so() {
    let app = spawn_app().await;
    let tables = wait_for_tables(&app).await;
    assert_eq!(tables["built"], 0, "{tables}");
    assert_eq!(tables["searched"], scenarios().len());
    let design = crate::common::passing_design("safe-retry");
    let answer = app
        .post("/api/scenarios/safe-retry/check", &As::nobody(), &design)
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.text,
        searched("safe-retry", &design, Config::default().check_limits)
    );
}

#[tokio::test]
async fn a_scenario_past_the_designs_limit_is_searched() {
    let app = spawn_app_with_tables(Config {
        // offset-commit, exactly-once and delivery-promise allow 6 designs, out-of-order 4.
        verdict_table_designs_max: 6,
        ..Config::default()
    })
    .await;
    let tables = wait_for_tables(&app).await;
    assert_eq!(tables["built"], 4, "{tables}");
    assert_eq!(tables["searched"], scenarios().len() - 4);
    let design = crate::common::passing_design("safe-retry");
    let answer = app
        .post("/api/scenarios/safe-retry/check", &As::nobody(), &design)
        .await;
    assert_eq!(
        answer.text,
        searched("safe-retry", &design, Config::default().check_limits)
    );
}

#[tokio::test]
async fn a_catalogue_swapped_in_gets_tables_for_its_changed_scenarios() {
    let folder = TempDir::new("tables");
    for id in ["offset-commit", "out-of-order"] {
        let name = format!("{id}.json");
        std::fs::copy(scenarios_dir().join(&name), folder.path().join(&name)).unwrap();
    }
    let loaded = catalogue::load(folder.path()).expect("the copied scenarios validate");
    let live = Arc::new(LiveCatalogue::new(loaded));
    let dir = TempDir::new("tables-db");
    let store = Store::connect(&dir.sqlite_url()).await.unwrap();
    let state = AppState::live(store, Arc::clone(&live), Config::default());
    let app = TestApp {
        router: server::router(state.clone()),
        state,
        _dir: dir,
        _postgres: None,
    };
    wait_for_tables(&app).await;
    let before = live.current();
    let kept = before.get("out-of-order").unwrap();

    // A new title is a new version of offset-commit; out-of-order is unchanged.
    let path = folder.path().join("offset-commit.json");
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    file["title"] = json!("Offset commit, again");
    std::fs::write(&path, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    let moved = tokio::task::spawn_blocking({
        let (live, folder) = (Arc::clone(&live), folder.path().to_path_buf());
        move || live.reload(&folder)
    })
    .await
    .unwrap();
    assert!(moved.problems.is_empty(), "{:?}", moved.problems);
    assert!(
        !Arc::ptr_eq(&before, &live.current()),
        "a new catalogue is served"
    );
    let tables = wait_for_tables(&app).await;
    assert_eq!(tables["built"], 2, "{tables}");
    let after = live.current();
    let unchanged = after.get("out-of-order").unwrap();
    let (Some(catalogue::Table::Built(old)), Some(catalogue::Table::Built(new))) =
        (kept.table.get(), unchanged.table.get())
    else {
        panic!("both catalogues have out-of-order's table");
    };
    assert!(
        Arc::ptr_eq(old, new),
        "an unchanged scenario's table is taken over"
    );
    let changed = after.get("offset-commit").unwrap();
    let Some(catalogue::Table::Built(table)) = changed.table.get() else {
        panic!("the new offset-commit has a table");
    };
    assert_eq!(table.hash(), changed.hash, "the table is the new version's");
}
