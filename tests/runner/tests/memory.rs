//! Every shared scenario, replayed against `memory:`.

use fencing_scenarios::{load_all, scenario_dir};

#[test]
fn every_scenario_passes_on_memory() {
    let scenarios = load_all(&scenario_dir()).expect("scenario files load");
    let failures: Vec<String> = scenarios
        .iter()
        .filter_map(|s| {
            s.run("memory:")
                .err()
                .map(|e| format!("{}: {e}", s.path.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} scenario(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        scenarios.len() >= 30,
        "expected at least 30 scenarios, found {}",
        scenarios.len()
    );
}
