//! Requirements worth more than one point: the verdict's score sums the points of the
//! requirements passed, and a scenario that names no points keeps its file and hash.

use shared::check::scenario_hash;
use shared::Scenario;

use crate::{scenario_file, verdict};

/// safe-retry with its requirements worth 5, 0 and 1 point (the last one left at the default).
fn weighted() -> (Scenario, Scenario) {
    let plain = scenario_file("safe-retry");
    let mut weighted = plain.clone();
    weighted.requirements[0].points = 5;
    weighted.requirements[1].points = 0;
    (plain, weighted)
}

#[test]
fn a_score_sums_the_points_of_the_requirements_passed() {
    let (plain, weighted) = weighted();
    let reference = plain.reference_designs[0].design.clone();
    let starting = plain.starting_design.clone().expect("a starting design");

    let passed = verdict(&weighted, reference);
    assert!(passed.passed);
    assert_eq!((passed.score, passed.max_score), (6, 6));

    let missed = verdict(&weighted, starting.clone());
    assert!(!missed.passed);
    assert_eq!((missed.score, missed.max_score), (0, 6));
    // Without points, each requirement is worth one.
    let plain_missed = verdict(&plain, starting);
    assert_eq!(plain_missed.max_score, plain.requirements.len() as u32);
}

#[test]
fn a_requirement_worth_nothing_does_not_fail_the_score_but_fails_the_verdict() {
    let mut s = scenario_file("safe-retry");
    for r in &mut s.requirements {
        r.points = 0;
    }
    let v = verdict(&s, s.starting_design.clone().unwrap());
    assert_eq!((v.score, v.max_score), (0, 0));
    assert!(
        !v.passed,
        "passed means every requirement held, whatever it is worth"
    );
}

#[test]
fn points_round_trip_and_default_points_leave_the_file_and_hash_alone() {
    let (plain, weighted) = weighted();
    let text = serde_json::to_value(&plain).unwrap();
    assert!(
        !text.to_string().contains("\"points\""),
        "a scenario without points is written without them"
    );
    let mut explicit = text.clone();
    explicit["requirements"][0]["points"] = serde_json::json!(1);
    let read: Scenario = serde_json::from_value(explicit).unwrap();
    assert_eq!(scenario_hash(&read), scenario_hash(&plain));

    let written = serde_json::to_value(&weighted).unwrap();
    assert_eq!(written["requirements"][0]["points"], 5);
    assert_eq!(written["requirements"][1]["points"], 0);
    assert!(written["requirements"][2].get("points").is_none());
    let back: Scenario = serde_json::from_value(written).unwrap();
    assert_eq!(back.requirements[0].points, 5);
    assert_ne!(scenario_hash(&back), scenario_hash(&plain));
}
