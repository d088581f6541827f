use super::*;

fn compiled(text: &str) -> Compiled {
    Compiled::parse(text).expect("the scenario compiles")
}

/// The template `scenarios new` writes: a small scenario that validates.
fn template_scenario() -> Compiled {
    compiled(include_str!("../authoring/template.json"))
}

#[test]
fn the_count_is_the_product_of_the_offered_values() {
    let s = template_scenario();
    let palette = &s.scenario().palette;
    let offered = |kind: &Option<std::collections::BTreeMap<String, Vec<String>>>, option: &str| {
        kind.as_ref()
            .and_then(|k| k.get(option))
            .map_or(1, Vec::len) as u64
    };
    let consumer = offered(&palette.stream_consumer, "offset_commit");
    let writes = offered(&palette.table, "write");
    assert!(consumer * writes > 1, "the template offers choices");
    assert_eq!(
        design_count(&s),
        designs(&s, SolveLimits::default()).unwrap().len() as u64
    );
}

#[test]
fn designs_are_canonical_and_distinct() {
    let s = template_scenario();
    let all = designs(&s, SolveLimits::default()).unwrap();
    for d in &all {
        assert!(d.nodes.iter().all(|n| n.position.is_some()), "{d:?}");
    }
    let mut shapes: Vec<String> = all
        .iter()
        .filter_map(|d| validate(&s, d.clone()).ok())
        .map(|v| format!("{:?}", shape(v.pipeline())))
        .collect();
    let n = shapes.len();
    shapes.sort();
    shapes.dedup();
    assert_eq!(shapes.len(), n, "two designs are the same pipeline");
    // Enumerating twice gives the same designs in the same order.
    assert_eq!(all, designs(&s, SolveLimits::default()).unwrap());
}

#[test]
fn past_the_limit_the_solve_says_how_many_and_the_limit() {
    let s = template_scenario();
    let limits = SolveLimits {
        max_designs: 1,
        ..SolveLimits::default()
    };
    let err = solve_with(&s, limits, &mut |_| {}).unwrap_err();
    let SolveError::TooManyDesigns { designs, limit } = err.clone() else {
        panic!("{err:?}");
    };
    assert_eq!((designs, limit), (design_count(&s), 1));
    let message = err.to_string();
    assert!(message.contains(&format!("{designs} designs")), "{message}");
    assert!(
        message.contains("more than the 1 a solve checks"),
        "{message}"
    );
}

#[test]
fn progress_ends_at_its_total() {
    let s = template_scenario();
    let mut last = None;
    let solution = solve_with(&s, SolveLimits::default(), &mut |p| last = Some(p)).unwrap();
    let last = last.expect("a solve reports progress");
    assert_eq!(last.done, last.total);
    let kinds = solution.failures.len() as u64;
    assert_eq!(last.total, solution.designs.len() as u64 * (1 + kinds));
}

#[test]
fn the_summary_names_the_passing_designs_and_the_tallies() {
    let s = template_scenario();
    let solution = solve(&s).unwrap();
    let passing = solution.passing();
    assert!(!passing.is_empty());
    let text = solution.summary();
    assert!(text.contains("Passing designs, simplest first:"), "{text}");
    assert!(text.contains(&solution.describe(passing[0])), "{text}");
    for r in &s.scenario().requirements {
        assert!(text.contains(&r.id), "{text}");
    }
    // The simplest design changes no more options than any other passing one.
    assert!(passing
        .iter()
        .all(|d| d.options_changed >= passing[0].options_changed));
}

#[test]
fn a_palette_of_one_design_that_misses_names_it_as_the_closest() {
    let mut scenario = template_scenario().into_scenario();
    let only = |v: &str| vec![v.to_string()];
    if let Some(c) = scenario.palette.stream_consumer.as_mut() {
        c.insert("offset_commit".into(), only("before_write"));
    }
    if let Some(t) = scenario.palette.table.as_mut() {
        t.insert("write".into(), only("append"));
    }
    let s = Compiled::new(scenario).unwrap();
    let solution = solve(&s).unwrap();
    assert_eq!(solution.designs.len(), 1);
    assert!(solution.passing().is_empty());
    let closest = solution.closest();
    assert_eq!(closest.len(), 1);
    let text = solution.summary();
    assert!(text.contains("No design passes"), "{text}");
    assert!(
        text.contains("the only design the palette allows"),
        "{text}"
    );
}
