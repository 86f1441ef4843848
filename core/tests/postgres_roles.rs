//! What each role can do (docs/postgres.md, "Grants"), measured: every entry
//! point and a few plain-SQL attempts, run as the schema's owner (a plain
//! role, not a superuser), a library role (USAGE and EXECUTE on every
//! function) and a worker role (USAGE and EXECUTE on `check` only), each in
//! a transaction that is rolled back. The table in docs/postgres.md must be
//! exactly the one measured here. Needs `FENCING_TEST_PG_URL`.

mod support;
use support::{fresh_schema, postgres_test_url};

fn client(url: &str) -> postgres::Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

fn as_role(base: &str, role: &str) -> String {
    format!("postgres://{role}@{}", base.split_once('@').unwrap().1)
}

/// Each row of the table: what is tried, and the SQL (`S` is the schema).
const ENTRIES: [(&str, &str); 32] = [
    ("`next_token`", "SELECT S.next_token('r:1')"),
    ("`advance_counter`", "SELECT S.advance_counter('r:1', 5)"),
    ("`acquire`", "SELECT * FROM S.acquire('r:2', 'h', 30000, true)"),
    ("`renew`", "SELECT * FROM S.renew('r:1', 1, 30000)"),
    ("`release`", "SELECT S.release('r:1', 1)"),
    (
        "`acquire_waiting` (a waiting acquire)",
        "SELECT * FROM S.acquire_waiting('r:4', 'h', 30000, true, NULL)",
    ),
    ("`leave_queue`", "SELECT S.leave_queue('r:4', 1)"),
    ("`watch` (a watch of a lease)", "SELECT * FROM S.watch('r:1', NULL)"),
    (
        "`apply` (put, delete, batch)",
        "SELECT S.apply('r:1', 9, NULL, false, ARRAY['k'], ARRAY['v'::bytea], ARRAY[NULL::bigint], NULL)",
    ),
    ("`claim`", "SELECT S.claim('r:1', 9, NULL)"),
    ("`get`", "SELECT * FROM S.get('r:1', 'k')"),
    ("`get_checked`", "SELECT * FROM S.get_checked('r:1', 'k', 9)"),
    ("`list`", "SELECT * FROM S.list('r:1', '', 10)"),
    ("`status`", "SELECT * FROM S.status('r:1')"),
    ("`retire`", "SELECT S.retire('r:3')"),
    ("`check(scope, token)`", "SELECT S.check('r:1', 9)"),
    ("`check(scope, token, seq)`", "SELECT S.check('r:1', 9, 1)"),
    (
        "`record_rejection`",
        "SELECT S.record_rejection('r:1', 'k', 'STALE_TOKEN', 1, NULL, NULL, 0)",
    ),
    ("`rejections` (events)", "SELECT * FROM S.rejections(NULL, 10)"),
    ("`last_writes` (events)", "SELECT * FROM S.last_writes(NULL, 10)"),
    ("`lock_holders`", "SELECT * FROM S.lock_holders('r:1')"),
    ("`advance_clock`", "SELECT S.advance_clock(1)"),
    ("`clock_is_manual`", "SELECT S.clock_is_manual()"),
    ("`failover` (the failover step)", "SELECT S.failover()"),
    ("`unbound_jumps` (`jumps=unbounded`)", "SELECT S.unbound_jumps()"),
    ("`stop_clock` (`clock=manual`)", "SELECT S.stop_clock()"),
    ("`lower_wedged`", "SELECT S.lower_wedged('r:1', 5)"),
    (
        "a helper, e.g. `cover` (raise the ceiling)",
        "SELECT S.cover(h, h.ceiling + 1) FROM S.history h",
    ),
    ("read the tables (`scopes`)", "SELECT count(*) FROM S.scopes"),
    ("write the tables (`scopes`)", "UPDATE S.scopes SET fence = fence + 1"),
    ("read `migrations` (the version)", "SELECT max(version) FROM S.migrations"),
    ("create objects in the schema", "CREATE TABLE S.extra (i int)"),
];

/// "yes": the call ran (answered, or refused by fencing's own rules with an
/// `FN` SQLSTATE); "no": permission denied (42501). Anything else is shown.
fn outcome(c: &mut postgres::Client, sql: &str) -> String {
    c.batch_execute("BEGIN").unwrap();
    let got = match c.batch_execute(sql) {
        Ok(()) => "yes".to_owned(),
        Err(e) => match e.code().map(|c| c.code()) {
            Some("42501") => "no".to_owned(),
            Some(code) if code.starts_with("FN") => "yes".to_owned(),
            _ => format!("?? {e}"),
        },
    };
    c.batch_execute("ROLLBACK").unwrap();
    got
}

/// The table between the markers in docs/postgres.md.
fn documented() -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/postgres.md"))
        .unwrap();
    let start = doc
        .find("<!-- roles: begin")
        .expect("docs/postgres.md has the roles table");
    let start = start + doc[start..].find('\n').unwrap() + 1;
    let end = doc.find("<!-- roles: end -->").unwrap();
    doc[start..end].to_owned()
}

#[test]
fn the_role_table_in_the_docs_is_what_each_role_can_do() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let s = fresh_schema("roles");
    let (owner, app, worker) = (format!("{s}_own"), format!("{s}_app"), format!("{s}_wrk"));
    let mut admin = client(&base);
    admin
        .batch_execute(&format!(
            "CREATE ROLE {owner} LOGIN; CREATE ROLE {app} LOGIN; CREATE ROLE {worker} LOGIN;
             DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO {owner}', current_database()); END $$;"
        ))
        .unwrap();
    // The owner creates the schema, then grants as docs/postgres.md says.
    fencing::migrate(&format!("{}?schema={s}", as_role(&base, &owner))).unwrap();
    let mut own = client(&as_role(&base, &owner));
    own.batch_execute(&format!(
        "GRANT USAGE ON SCHEMA {s} TO {app}, {worker};
         GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {s} TO {app};
         GRANT EXECUTE ON FUNCTION {s}.check(text, bigint), {s}.check(text, bigint, bigint)
            TO {worker};
         SELECT {s}.next_token('r:1');"
    ))
    .unwrap();
    let mut clients = [
        own,
        client(&as_role(&base, &app)),
        client(&as_role(&base, &worker)),
    ];
    let mut table =
        String::from("| entry point | owner | library role | worker role |\n|---|---|---|---|\n");
    for (what, sql) in ENTRIES {
        let sql = sql.replace("S.", &format!("{s}."));
        let row: Vec<String> = clients.iter_mut().map(|c| outcome(c, &sql)).collect();
        table.push_str(&format!("| {what} | {} |\n", row.join(" | ")));
    }
    println!("{table}");
    drop(clients);
    admin
        .batch_execute(&format!(
            "DROP SCHEMA {s} CASCADE;
             DO $$ BEGIN EXECUTE format('REVOKE CREATE ON DATABASE %I FROM {owner}', current_database()); END $$;
             DROP ROLE {app}; DROP ROLE {worker}; DROP ROLE {owner};"
        ))
        .unwrap();
    assert_eq!(
        documented(),
        table,
        "docs/postgres.md's role table differs from what was measured (above)"
    );
}
