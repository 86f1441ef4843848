//! Every shared scenario, replayed against `memory:`.

#[test]
fn every_scenario_passes_on_memory() {
    let count =
        fencing_scenarios::run_all(|_| "memory:".to_owned()).unwrap_or_else(|e| panic!("{e}"));
    assert!(count >= 30, "expected at least 30 scenarios, found {count}");
}
