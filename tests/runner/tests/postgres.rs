//! Every shared scenario, replayed against `postgres://` with a fresh schema
//! each: the same results as `memory:` and `sqlite:`. Scenarios on the manual
//! clock stop that schema's clock (see docs/postgres.md).

#[test]
fn every_scenario_passes_on_postgres() {
    let Some(base) = fencing_scenarios::postgres_test_url() else {
        return;
    };
    let run = fencing_scenarios::fresh_schema("scn");
    let count = fencing_scenarios::run_all(|i| format!("{base}?schema={run}_{i}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(count >= 30, "expected at least 30 scenarios, found {count}");
}
