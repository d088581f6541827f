//! The notes under a verdict speak the chapter's words: they name only the choices a scenario
//! offers, by their labels, never a raw option value, and they say why another value gives the
//! same result here.

use shared::design::{Design, NodeKind, OptionValues};
use shared::verdict::Verdict;
use shared::words::{option_value, value_label, value_words};
use shared::{lesson_of, Lesson, Scenario, LESSONS};

use crate::golden::shipped_scenarios;

/// Every design a shipped scenario carries (its starting design, references and wrong
/// designs), with its verdict.
fn shipped_verdicts(s: &Scenario) -> Vec<(String, Verdict)> {
    let mut designs: Vec<(String, serde_json::Value)> = Vec::new();
    if let Some(d) = &s.starting_design {
        designs.push(("starting design".into(), d.clone()));
    }
    for d in &s.reference_designs {
        designs.push((format!("reference {}", d.name), d.design.clone()));
    }
    for d in &s.wrong_designs {
        designs.push((format!("wrong {}", d.name), d.design.clone()));
    }
    designs
        .into_iter()
        .filter_map(|(name, d)| {
            shared::check_json(&crate::Lesson::compiled(s), &d)
                .ok()
                .map(|v| (name, v))
        })
        .collect()
}

/// Every value the design format has, by option: `(option, value)`.
fn format_values() -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    for kind in NodeKind::ALL {
        for spec in kind.options() {
            if let OptionValues::Choice(values) = spec.values {
                for v in values {
                    if !out.contains(&(spec.name, *v)) {
                        out.push((spec.name, *v));
                    }
                }
            }
        }
    }
    out
}

fn offered(s: &Scenario, option: &str, value: &str) -> bool {
    NodeKind::ALL.iter().any(|k| {
        s.palette
            .kind(*k)
            .and_then(|p| p.get(option))
            .is_some_and(|vs| vs.iter().any(|v| v == value))
    })
}

#[test]
fn no_note_names_a_raw_value_or_a_choice_the_scenario_does_not_offer() {
    let values = format_values();
    let mut notes_seen = 0;
    for (name, s) in shipped_scenarios() {
        for (design, v) in shipped_verdicts(&s) {
            let mut notes: Vec<String> = Vec::new();
            for u in &v.coverage.untested {
                notes.push(u.why.clone());
                notes.push(shared::untested_line(u));
            }
            for a in &v.advisories.missed {
                notes.push(a.counterexample.failures.join("; "));
            }
            notes_seen += notes.len();
            for note in &notes {
                for (option, value) in &values {
                    if value.contains('_') {
                        assert!(
                            !note.contains(value),
                            "{name}: {design}: the raw value {value} in: {note}"
                        );
                    }
                    let label = format!("“{}”", value_label(option, value));
                    if !offered(&s, option, value) {
                        assert!(
                            !note.contains(&label),
                            "{name}: {design}: {label} is not offered here, in: {note}"
                        );
                    }
                }
            }
        }
    }
    assert!(notes_seen > 100, "only {notes_seen} notes were read");
}

/// The chapter: "With the clock, the rerun loads the wrong day. 2026-01-10 stays unfixed."
/// safe-rerun passes with the clock only because its rerun loads another day, and its note
/// says so, and where the chapter shows the harm.
#[test]
fn safe_rerun_says_the_clock_passes_only_because_it_loads_another_day() {
    let s = crate::scenario_file("safe-rerun");
    let mut seen = 0;
    for (design, v) in shipped_verdicts(&s) {
        for u in v
            .coverage
            .untested
            .iter()
            .filter(|u| u.option == "date_filter")
        {
            seen += 1;
            assert!(
                u.why.contains(
                    "with the clock, the rerun of 2026-01-15 09:00 loads 2026-01-14 and never touches 2026-01-10"
                ),
                "{design}: {}",
                u.why
            );
            assert!(u.why.contains("loads the wrong day"), "{}", u.why);
            assert_eq!(u.learn_in, ["logical-date"], "{design}");
        }
    }
    assert!(
        seen > 0,
        "no design of safe-rerun has the date filter untested"
    );
}

/// safe-retry's retries run at once, on the day the run starts: the clock picks the right day
/// by chance, and the note says which day and why.
#[test]
fn safe_retry_says_why_the_clock_picks_the_right_day_here() {
    let s = crate::scenario_file("safe-retry");
    let (_, v) = shipped_verdicts(&s).remove(0);
    let u = v
        .coverage
        .untested
        .iter()
        .find(|u| u.option == "date_filter")
        .expect("the date filter is untested in safe-retry");
    assert!(
        u.why
            .contains("every attempt of the run for 2026-01-10 starts on 2026-01-11"),
        "{}",
        u.why
    );
}

/// Which delivery promise a choice earns is what a scenario asks the student to work out: no
/// label or line of a choice any scenario offers names one.
#[test]
fn no_offered_choice_is_labelled_by_the_delivery_promise_it_earns() {
    const PROMISES: [&str; 4] = [
        "at-least-once",
        "at-most-once",
        "exactly-once",
        "effectively-once",
    ];
    let mut labels = 0;
    for (name, s) in shipped_scenarios() {
        for kind in NodeKind::ALL {
            let Some(palette) = s.palette.kind(kind) else {
                continue;
            };
            for spec in kind.options() {
                let OptionValues::Choice(all) = spec.values else {
                    continue;
                };
                let offered: Vec<&str> = match palette.get(spec.name) {
                    Some(vs) => vs.iter().map(String::as_str).collect(),
                    None => all.to_vec(),
                };
                for value in offered {
                    let (label, line) = value_words(spec.name, value);
                    labels += 1;
                    for words in [label, line, shared::words::option_title(spec.name)] {
                        let lower = words.to_lowercase().replace(' ', "-");
                        for promise in PROMISES {
                            assert!(
                                !lower.contains(promise),
                                "{name}: {kind} {}={value}: {words}",
                                spec.name
                            );
                        }
                    }
                }
            }
        }
    }
    assert!(labels > 50, "only {labels} labels were read");
}

/// Whether a scenario teaches exactly a lesson's value: it names the lesson's concept, offers
/// that value and another, and ships a wrong design that uses that value on a node (a table
/// written by the lesson's kind of stage) and misses a requirement.
fn teaches(s: &Scenario, lesson: &Lesson) -> bool {
    let offers = NodeKind::ALL.iter().any(|k| {
        s.palette
            .kind(*k)
            .and_then(|p| p.get(lesson.option))
            .is_some_and(|vs| vs.len() > 1 && vs.iter().any(|v| v == lesson.value))
    });
    offers
        && s.concepts.iter().any(|c| c == lesson.concept)
        && s.wrong_designs.iter().any(|w| {
            let design: Design =
                serde_json::from_value(w.design.clone()).expect("a shipped design parses");
            let uses = design.nodes.iter().any(|n| {
                let value = option_value(n, &s.palette, lesson.option);
                lesson_of(&design, n, lesson.option, value) == Some(*lesson)
            });
            uses && !crate::verdict(s, w.design.clone()).passed
        })
}

/// A note's link goes to the scenario that teaches exactly the value the note warns about,
/// not to one that teaches a neighbour (the same failure, another option).
#[test]
fn every_link_of_a_note_goes_to_the_scenario_that_teaches_exactly_that_value() {
    let shipped = shipped_scenarios();
    let mut links = Vec::new();
    for (name, s) in &shipped {
        for (design, v) in shipped_verdicts(s) {
            for u in &v.coverage.untested {
                for link in &u.learn_in {
                    let (_, taught) = shipped
                        .iter()
                        .find(|(id, _)| id == link)
                        .unwrap_or_else(|| panic!("{name}: {design}: {link} is not shipped"));
                    let warned: Vec<&Lesson> = LESSONS
                        .iter()
                        .filter(|l| l.option == u.option && l.scenario == link)
                        .filter(|l| l.value == u.value || u.others.iter().any(|o| o == l.value))
                        .collect();
                    assert!(
                        warned.iter().any(|l| teaches(taught, l)),
                        "{name}: {design}: {}.{} links {link}, which does not teach {warned:?}",
                        u.node,
                        u.option
                    );
                    links.push(format!("{name} {}.{} → {link}", u.node, u.option));
                }
            }
        }
    }
    assert!(
        links.len() >= 10,
        "only {} links were read: {links:?}",
        links.len()
    );
    // Every lesson links the first scenario of the course that teaches it, whether or not a
    // shipped note links it now.
    let mut in_order: Vec<&(String, Scenario)> = shipped.iter().collect();
    in_order.sort_by_key(|(_, s)| s.order);
    for lesson in &LESSONS {
        let first = in_order.iter().find(|(_, s)| teaches(s, lesson));
        assert_eq!(
            first.map(|(id, _)| id.as_str()),
            Some(lesson.scenario),
            "{lesson:?}"
        );
    }
}

/// In a design of several stages a note says which stage the option acts in; in a design of
/// one stage it needs not.
#[test]
fn a_note_names_the_stage_in_a_design_of_several() {
    let s = crate::scenario_file("whole-path");
    let mut named = 0;
    for (design, v) in shipped_verdicts(&s) {
        for u in &v.coverage.untested {
            let stage = match u.node.as_str() {
                "raw" => "In the stream consumer “consumer”, which writes “raw”: ",
                "revenue" => "In the batch job “nightly”, which writes “revenue”: ",
                "checkout" => "In the sender “checkout”: ",
                "consumer" => "In the stream consumer “consumer”: ",
                "nightly" => "In the batch job “nightly”: ",
                other => panic!("{design}: an untested option of {other}"),
            };
            assert!(u.why.starts_with(stage), "{design}: {}", u.why);
            assert!(shared::untested_line(u).contains(stage), "{design}");
            named += 1;
        }
    }
    assert!(named >= 10, "only {named} notes of whole-path");
    let s = crate::scenario_file("safe-rerun");
    for (design, v) in shipped_verdicts(&s) {
        for u in &v.coverage.untested {
            assert!(!u.why.starts_with("In the "), "{design}: {}", u.why);
        }
    }
}
