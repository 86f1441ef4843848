//! Every shared scenario, replayed against `sqlite:` with a fresh file each:
//! the same results as `memory:`.

#[test]
fn every_scenario_passes_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let count = fencing_scenarios::run_all(|i| {
        format!("sqlite:{}", dir.path().join(format!("{i}.db")).display())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(count >= 30, "expected at least 30 scenarios, found {count}");
}
