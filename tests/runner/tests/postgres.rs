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

/// A test bed's variable, or `None` to skip (a failure under
/// `FENCING_REQUIRE_PG=1`, as for the plain server).
fn bed(var: &str, bed: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ if std::env::var("FENCING_REQUIRE_PG").as_deref() == Ok("1") => {
            panic!("FENCING_REQUIRE_PG=1 but {var} is not set: run under {bed} run")
        }
        _ => {
            eprintln!("skipped: {var} is not set (run the tests under `{bed} run -- ...`)");
            None
        }
    }
}

/// Every scenario over TLS to a TLS-only server (`scripts/pg-tls`), the
/// server's certificate checked against the test CA, name included.
#[test]
fn every_scenario_passes_over_tls_with_verify_full() {
    let (Some(base), Some(dir)) = (
        bed("FENCING_TEST_PG_TLS_URL", "scripts/pg-tls"),
        bed("FENCING_TEST_PG_TLS_DIR", "scripts/pg-tls"),
    ) else {
        return;
    };
    let ca = std::path::Path::new(&dir).join("ca.crt");
    let run = fencing_scenarios::fresh_schema("scntls");
    let count = fencing_scenarios::run_all(|i| {
        format!(
            "{base}?schema={run}_{i}&sslmode=verify-full&sslrootcert={}",
            ca.display()
        )
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(count >= 30, "expected at least 30 scenarios, found {count}");
}

/// Every scenario through PgBouncer in transaction mode (`scripts/pgbouncer`,
/// 3 server connections), opened with `pooler=transaction`.
#[test]
fn every_scenario_passes_through_pgbouncer_in_transaction_mode() {
    let Some(base) = bed("FENCING_TEST_PGBOUNCER_URL", "scripts/pgbouncer") else {
        return;
    };
    let run = fencing_scenarios::fresh_schema("scnbouncer");
    let count =
        fencing_scenarios::run_all(|i| format!("{base}?schema={run}_{i}&pooler=transaction"))
            .unwrap_or_else(|e| panic!("{e}"));
    assert!(count >= 30, "expected at least 30 scenarios, found {count}");
}
