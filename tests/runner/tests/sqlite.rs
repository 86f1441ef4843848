//! Every shared scenario, replayed against `sqlite:` with a fresh file each:
//! the same results as `memory:`.

use fencing_scenarios::{load_all, scenario_dir};

#[test]
fn every_scenario_passes_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = load_all(&scenario_dir()).expect("scenario files load");
    let failures: Vec<String> = scenarios
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let base = format!("sqlite:{}", dir.path().join(format!("{i}.db")).display());
            s.run(&base)
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
        "found only {} scenarios",
        scenarios.len()
    );
}
