//! Every shared scenario, replayed against `etcd://` on the three-member
//! cluster, each under a fresh key prefix: the same results as the other
//! backends. Scenarios on the manual clock move that prefix's clock key
//! (docs/etcd.md, "Time").

#[test]
fn every_scenario_passes_on_etcd() {
    let Some(members) = fencing_scenarios::etcd_test_members() else {
        return;
    };
    let run = fencing_scenarios::fresh_schema("scn");
    let count = fencing_scenarios::run_all(|i| format!("etcd://{members}/{run}_{i}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(count >= 30, "expected at least 30 scenarios, found {count}");
}
