use shared::*;
#[test]
fn quick() {
    let s: Scenario = Scenario::from_json(&std::fs::read_to_string("../scenarios/safe-retry.json").unwrap()).unwrap();
    for d in s.reference_designs.iter().map(|d| (&d.name, &d.design)).chain(s.wrong_designs.iter().map(|d| (&d.name, &d.design))).chain(std::iter::once((&s.id, s.starting_design.as_ref().unwrap()))) {
        let v = check_json(&s, d.1).unwrap();
        println!("== {} passed={} score={}/{} schedules={}", d.0, v.passed, v.score, v.max_score, v.schedules_explored);
        for r in &v.requirements {
            if let Some(c) = &r.counterexample {
                println!("  MISS {}: expected {} actual {} failures {:?}", r.id, c.expected, c.actual, c.failures);
            }
        }
    }
    let v = check_json(&s, s.starting_design.as_ref().unwrap()).unwrap();
    println!("{}", serde_json::to_string_pretty(&v.requirements[0]).unwrap());
}
