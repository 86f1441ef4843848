//! Lock waits behind a caller's open transaction (docs/postgres.md, "Lock
//! waits"): a worker role that runs `fencing.check` and then idles holds the
//! scope's row until it ends. An operation that waits behind it must end
//! with an error that names the scope and, where the server tells, the
//! backend pid and role that hold it; the failover step and `retire` must not
//! wait on the bucket's floor row that a check's creation of a scope read.
//! Needs `FENCING_TEST_PG_URL` (see `scripts/pg-cluster`).

use std::time::{Duration, Instant};

use fencing::{BackendErrorKind, ErrorCode, Store};

mod support;
use support::{fresh_schema, postgres_test_url};

/// The client deadline of the library's store in these tests: the server
/// gives up a fifth earlier, so each wait costs under a second.
const CALL_TIMEOUT_MS: u64 = 1000;

fn client(url: &str) -> postgres::Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

/// `url` with its user replaced by `role` (the test server trusts every
/// local login).
fn as_role(url: &str, role: &str) -> String {
    let (_, rest) = url.split_once('@').unwrap();
    format!("postgres://{role}@{rest}")
}

/// A schema with a worker role allowed only `check` (docs/postgres.md,
/// "Grants"), and a session of that role.
struct Bed {
    base: String,
    schema: String,
    worker: String,
}

impl Bed {
    fn new(tag: &str) -> Option<Bed> {
        let base = postgres_test_url()?;
        let schema = fresh_schema(tag);
        let worker = format!("{schema}_worker");
        // The schema first, without the short limit: creating it on a
        // loaded machine (under Wine, beside other faces) can take longer
        // than the second these tests give one call.
        fencing::migrate(&format!("{base}?schema={schema}")).unwrap();
        client(&base)
            .batch_execute(&format!(
                "CREATE ROLE {worker} LOGIN;
                 GRANT USAGE ON SCHEMA {schema} TO {worker};
                 GRANT EXECUTE ON FUNCTION {schema}.check(text, bigint),
                    {schema}.check(text, bigint, bigint) TO {worker};"
            ))
            .unwrap();
        Some(Bed {
            base,
            schema,
            worker,
        })
    }

    /// The library's store, as the schema's owner.
    fn store(&self) -> Store {
        Store::open(&self_url(&self.base, &self.schema)).unwrap()
    }

    /// A worker session in an open transaction after `check(scope, token)`,
    /// and its backend pid.
    fn idle_check(&self, scope: &str, token: i64) -> (postgres::Client, i32) {
        let mut w = client(&as_role(&self.base, &self.worker));
        let pid: i32 = w.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
        w.batch_execute("BEGIN").unwrap();
        w.execute(
            &format!("SELECT {}.check($1, $2)", self.schema),
            &[&scope, &token],
        )
        .unwrap();
        (w, pid)
    }

    /// A name other than `scope` in the same floor bucket.
    fn neighbour(&self, scope: &str) -> String {
        let mut c = client(&self.base);
        let bucket = |c: &mut postgres::Client, name: &str| -> i32 {
            c.query_one(
                &format!("SELECT {}.floor_bucket($1)", self.schema),
                &[&name],
            )
            .unwrap()
            .get(0)
        };
        let want = bucket(&mut c, scope);
        (0..200_000)
            .map(|i| format!("n{i}"))
            .find(|n| n != scope && bucket(&mut c, n) == want)
            .unwrap()
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        let _ = client(&self.base).batch_execute(&format!(
            "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA {s} FROM {w};
             REVOKE ALL ON SCHEMA {s} FROM {w}; DROP ROLE {w};",
            s = self.schema,
            w = self.worker
        ));
    }
}

fn self_url(base: &str, schema: &str) -> String {
    format!("{base}?schema={schema}&call_timeout_ms={CALL_TIMEOUT_MS}")
}

/// The reproduction: `BEGIN; SELECT fencing.check('victim:5',
/// 5000000000);` and idle. Every acquire of the scope then fails; the error
/// must say which scope and which backend (pid, role) holds it.
#[test]
fn an_acquire_behind_a_callers_open_check_names_the_scope_and_the_holder() {
    let Some(bed) = Bed::new("lockwait") else {
        return;
    };
    let store = bed.store();
    // The scope exists: its worker fences with tokens the library issued.
    let lease = store
        .acquire("victim:5", "app", Duration::from_secs(1))
        .unwrap();
    store.release("victim:5", lease.token).unwrap();
    let (worker, pid) = bed.idle_check("victim:5", 5_000_000_000);

    let started = Instant::now();
    let err = store
        .acquire("victim:5", "app", Duration::from_secs(30))
        .expect_err("the worker holds the scope");
    let took = started.elapsed();
    let text = err.to_string();
    println!("acquire after {took:?}: {text}");
    assert_eq!(err.code(), ErrorCode::Backend, "{text}");
    assert!(
        matches!(
            err.backend_kind(),
            Some(BackendErrorKind::Busy | BackendErrorKind::Timeout)
        ),
        "the server gave up, so nothing happened: {text}"
    );
    assert!(text.contains("\"victim:5\""), "names the scope: {text}");
    assert!(
        text.contains(&format!("pid {pid}")),
        "names the pid: {text}"
    );
    assert!(text.contains(&bed.worker), "names the role: {text}");

    // The store still works for every other scope, and for this one once
    // the worker ends its transaction.
    store
        .acquire("other", "app", Duration::from_secs(30))
        .unwrap();
    drop(worker);
    store
        .acquire("victim:5", "app", Duration::from_secs(30))
        .unwrap();
    store.close();
}

/// A check that creates a scope reads its bucket's floor with a lock; the
/// transaction stays open. Retiring another scope of that bucket, and the
/// failover step, must not wait for it.
#[test]
fn retire_and_failover_do_not_wait_on_a_floor_row_a_check_read() {
    let Some(bed) = Bed::new("floorwait") else {
        return;
    };
    let store = bed.store();
    let neighbour = bed.neighbour("fresh:1");
    // The neighbour exists, and the store's ceiling is above the worker's
    // token, so its check writes nothing but its own new scope.
    store.next_token(&neighbour).unwrap();
    let (worker, _) = bed.idle_check("fresh:1", 5);

    let started = Instant::now();
    let retired = store.retire(&neighbour);
    let took = started.elapsed();
    println!("retire after {took:?}: {retired:?}");
    assert!(retired.unwrap(), "the neighbour had state");
    assert!(
        took < Duration::from_millis(CALL_TIMEOUT_MS / 2),
        "{took:?}"
    );

    let started = Instant::now();
    let base = store.failover();
    let took = started.elapsed();
    println!("failover after {took:?}: {base:?}");
    base.unwrap();
    assert!(
        took < Duration::from_millis(CALL_TIMEOUT_MS / 2),
        "{took:?}"
    );

    // The worker's transaction commits: its new scope was created before
    // the step and the retirement, and the step moves it when next touched.
    drop(worker);
    store.close();
}

/// A check within the jump limit never writes the store's `history` row
/// (the limit covers its token: `rules::ceiling_covering`), so the failover
/// step never waits for a caller's open transaction around one. Before, a
/// check above the ceiling raised it in the caller's transaction and the
/// step waited until the server gave up.
#[test]
fn a_failover_never_waits_for_a_check_in_an_open_transaction() {
    let Some(bed) = Bed::new("histwait") else {
        return;
    };
    let store = bed.store();
    let (worker, _pid) = bed.idle_check("victim:6", 5_000_000_000);
    let base = store
        .failover()
        .expect("the step does not wait for the worker's transaction");
    assert!(base > 5_000_000_000, "{base}");
    drop(worker);
    store.close();
}

/// The same wait on a schema whose owner is a plain role (no superuser, no
/// pg_read_all_stats), run by a library role: the server still names the
/// holder's pid and role to it, and hides the transaction's state and age.
#[test]
fn a_plain_owner_still_names_the_holders_pid_and_role() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let s = fresh_schema("plainowner");
    let (owner, app, worker) = (format!("{s}_own"), format!("{s}_app"), format!("{s}_wrk"));
    let mut admin = client(&base);
    admin
        .batch_execute(&format!(
            "CREATE ROLE {owner} LOGIN; CREATE ROLE {app} LOGIN; CREATE ROLE {worker} LOGIN;
             DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO {owner}', current_database()); END $$;"
        ))
        .unwrap();
    fencing::migrate(&format!("{}?schema={s}", as_role(&base, &owner))).unwrap();
    client(&as_role(&base, &owner))
        .batch_execute(&format!(
            "GRANT USAGE ON SCHEMA {s} TO {app}, {worker};
             GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {s} TO {app};
             GRANT EXECUTE ON FUNCTION {s}.check(text, bigint) TO {worker};"
        ))
        .unwrap();
    let store = Store::open(&self_url(&as_role(&base, &app), &s)).unwrap();
    store.next_token("victim:7").unwrap();
    let mut w = client(&as_role(&base, &worker));
    let pid: i32 = w.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    w.batch_execute(&format!("BEGIN; SELECT {s}.check('victim:7', 5)"))
        .unwrap();
    let err = store
        .acquire("victim:7", "app", Duration::from_secs(30))
        .unwrap_err();
    let text = err.to_string();
    println!("plain owner: {text}");
    assert!(text.contains("\"victim:7\""), "{text}");
    assert!(
        text.contains(&format!("pid {pid} (role {worker})")),
        "{text}"
    );
    assert!(!text.contains("idle in transaction"), "{text}");
    drop(w);
    store.close();
    admin
        .batch_execute(&format!(
            "DROP SCHEMA {s} CASCADE;
             DO $$ BEGIN EXECUTE format('REVOKE CREATE ON DATABASE %I FROM {owner}', current_database()); END $$;
             DROP ROLE {app}; DROP ROLE {worker}; DROP ROLE {owner};"
        ))
        .unwrap();
}
