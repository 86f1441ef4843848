//! The failover step on PostgreSQL against a copy of the store taken at one
//! instant (a file-level copy of the database: what a restored backup or a
//! standby that stopped receiving holds), while the original went on with
//! jumps: counters advanced far, tokens from outside, retirements. After
//! the step on the copy, replaying the same calls there must never hand out
//! a token the original handed out, nor accept a token from before the step
//! (docs/semantics.md, "Failover"). Also: the step's cost does not grow
//! with the number of scopes, and a worker role cannot push a fence out of
//! reach. Needs `FENCING_TEST_PG_URL`.

mod support;

use std::time::Instant;

use fencing::{Error, ErrorCode, Fence, Store, Token};
use support::postgres_test_url;

fn client(url: &str) -> postgres::Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

/// `base` (a server URL naming a database) pointed at database `db`.
fn db_url(base: &str, db: &str) -> String {
    let (path, query) = base.split_once('?').unwrap_or((base, ""));
    let (server, _) = path
        .rsplit_once('/')
        .expect("the test URL names a database");
    let query = if query.is_empty() {
        String::new()
    } else {
        format!("?{query}")
    };
    format!("{server}/{db}{query}")
}

/// A new empty database, dropped (with every copy) when the value goes.
struct Database {
    admin: String,
    names: Vec<String>,
}

impl Database {
    fn new(base: &str, tag: &str) -> (Database, String) {
        let name = support::fresh_schema(tag);
        client(base)
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let db = Database {
            admin: base.to_owned(),
            names: vec![name.clone()],
        };
        (db, name)
    }

    /// A copy of database `from` as it stands (no connection may be open
    /// to it): every file at one instant.
    fn copy(&mut self, from: &str) -> String {
        let name = format!("{from}_copy");
        client(&self.admin)
            .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {from}"))
            .unwrap();
        self.names.push(name.clone());
        name
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Ok(mut c) = self
            .admin
            .parse::<postgres::Config>()
            .and_then(|c| c.connect(postgres::NoTls))
        {
            for name in self.names.iter().rev() {
                let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
            }
        }
    }
}

fn token(v: u64) -> Token {
    Token::new(v).unwrap()
}

/// The reproduction: 10 tokens; the copy; on the original, a
/// counter advanced to 5 * 2^40 and a write with the outside token 7 * 2^40,
/// each followed by next_token; on the copy, the step, then the same calls
/// again (a worker restarting, a writer retrying a write whose outcome it
/// never learned). Before the ceiling and the jump limit, the step moved
/// each scope 2^40 above its own value in the copy, and both tokens were
/// handed out a second time.
#[test]
fn a_copy_never_reissues_what_the_original_issued_after_jumps() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let (mut db, name) = Database::new(&base, "jumps");
    let url = db_url(&base, &name);
    let original = Store::open(&url).unwrap();
    for _ in 0..10 {
        original.next_token("a").unwrap();
    }
    original.close();
    let copy_name = db.copy(&name);

    let original = Store::open(&url).unwrap();
    let mut issued = vec![];
    original
        .advance_counter("migrated", token(5 << 40))
        .unwrap();
    issued.push(("migrated", original.next_token("migrated").unwrap()));
    let outside = Fence::new(token(7 << 40));
    original.put("outside", "k", b"v", &outside).unwrap();
    issued.push(("outside", original.next_token("outside").unwrap()));
    issued.push(("a", original.next_token("a").unwrap()));
    assert_eq!(issued[0].1.get(), (5 << 40) + 1);
    assert_eq!(issued[1].1.get(), (7 << 40) + 1);
    original.close();

    let copy = Store::open(&db_url(&base, &copy_name)).unwrap();
    let stepped_to = copy.failover().unwrap();
    // The replay.
    copy.advance_counter("migrated", token(5 << 40)).unwrap();
    let err = copy.put("outside", "k", b"v", &outside).unwrap_err();
    assert!(matches!(err, Error::StaleToken { .. }), "{err:?}");
    for (scope, earlier) in &issued {
        let again = copy.next_token(scope).unwrap();
        assert!(
            again > *earlier,
            "{scope}: the copy handed out {again} after the step; the original had handed out {earlier}"
        );
        assert!(
            again.get() > stepped_to,
            "{scope}: {again} is not above the step's base {stepped_to}"
        );
        let err = copy
            .put(scope, "k", b"v", &Fence::new(*earlier))
            .unwrap_err();
        assert!(matches!(err, Error::StaleToken { .. }), "{scope}: {err:?}");
    }
    copy.close();
}

/// A retirement on the original raises its bucket's floor to the retired
/// scope's counter, and a new name in the same bucket starts there: the
/// copy never saw either. The old step moved the copy's floor 2^40 above
/// its own value, below the scope the original had created.
#[test]
fn a_copy_stays_above_scopes_the_original_created_from_a_raised_floor() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let (mut db, name) = Database::new(&base, "floors");
    let url = db_url(&base, &name);
    let original = Store::open(&url).unwrap();
    original.advance_counter("old", token(1 << 45)).unwrap();
    original.close();
    let copy_name = db.copy(&name);

    let original = Store::open(&url).unwrap();
    assert!(original.retire("old").unwrap());
    // A name in the same floor bucket as "old", found by its raised floor.
    let twin = (0..100_000)
        .map(|i| format!("new-{i}"))
        .find(|s| original.status(s).unwrap().counter == 1 << 45)
        .expect("a name in the same bucket");
    let issued = original.next_token(&twin).unwrap();
    assert_eq!(issued.get(), (1 << 45) + 1);
    original.close();

    let copy = Store::open(&db_url(&base, &copy_name)).unwrap();
    copy.failover().unwrap();
    let err = copy.put(&twin, "k", b"v", &Fence::new(issued)).unwrap_err();
    assert!(matches!(err, Error::StaleToken { .. }), "{twin}: {err:?}");
    assert!(copy.next_token(&twin).unwrap() > issued);
    copy.close();
}

/// The step writes one row, whatever the number of scopes: with a million
/// scopes it used to update every row (about 6 s, past the library's own
/// statement timeout). Every scope still moves, when next touched.
#[test]
fn the_step_on_a_million_scopes_finishes_and_moves_every_scope() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let (_db, name) = Database::new(&base, "million");
    let url = db_url(&base, &name);
    let store = Store::open(&url).unwrap();
    store.next_token("seed").unwrap();
    let mut c = client(&url);
    c.batch_execute(
        "INSERT INTO fencing.scopes (scope, counter, fence, sealed, lease_holder, lease_token,
                                     lease_ttl_ms, lease_expires_ms)
         SELECT 's' || i, i, i, false, 'h', i, 60000, 9000000000000000
           FROM generate_series(1, 1000000) i;
         ANALYZE fencing.scopes;",
    )
    .unwrap();
    // The insert bypassed the functions: let the ceiling cover it, as
    // next_token would have.
    store.advance_counter("s1000000", token(1_000_001)).unwrap();

    let started = Instant::now();
    let stepped_to = store.failover().unwrap();
    eprintln!("failover on 1,000,001 scopes took {:?}", started.elapsed());
    for scope in ["s1", "s500000", "s1000000", "never-seen"] {
        let status = store.status(scope).unwrap();
        assert_eq!(status.counter, stepped_to, "{scope}");
        assert_eq!(status.fence, stepped_to, "{scope}");
        assert!(status.lease.is_none(), "{scope}: the step ends every lease");
        assert_eq!(
            store.next_token(scope).unwrap().get(),
            stepped_to + 1,
            "{scope}"
        );
    }
    let err = store
        .put("s7", "k", b"v", &Fence::new(token(7)))
        .unwrap_err();
    assert!(matches!(err, Error::StaleToken { .. }), "{err:?}");
    store.close();
}

/// A worker role that may only run `fencing.check` cannot move a fence out
/// of reach: a token above the jump limit is refused (INVALID_ARGUMENT,
/// nothing changed), so one call can no longer wedge a scope at the
/// largest token.
#[test]
fn a_check_only_role_cannot_push_a_fence_past_the_jump_limit() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let (_db, name) = Database::new(&base, "wedge");
    let url = db_url(&base, &name);
    let store = Store::open(&url).unwrap();
    store.next_token("job").unwrap();
    let before = store.status("job").unwrap();
    let role = format!("{name}_worker");
    client(&url)
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN;
             GRANT USAGE ON SCHEMA fencing TO {role};
             GRANT EXECUTE ON FUNCTION fencing.check(text, bigint) TO {role};"
        ))
        .unwrap();
    let worker_url = url.replacen("postgres@", &format!("{role}@"), 1);
    let mut worker = client(&worker_url);
    for t in [i64::MAX, (1 << 48) + 2] {
        let err = worker
            .batch_execute(&format!("SELECT fencing.check('job', {t})"))
            .unwrap_err();
        let db = err.as_db_error().expect("a database error");
        assert_eq!(
            Error::from_sqlstate(db.code().code(), db.detail()).map(|e| e.code()),
            Some(ErrorCode::InvalidArgument),
            "{t}: {err:?}"
        );
    }
    let after = store.status("job").unwrap();
    assert_eq!((after.counter, after.fence), (before.counter, before.fence));
    // Within the limit a token from outside is still taken, and the
    // scope goes on issuing above it.
    worker
        .batch_execute(&format!("SELECT fencing.check('job', {})", 1u64 << 48))
        .unwrap();
    assert_eq!(store.next_token("job").unwrap().get(), (1 << 48) + 1);
    store.close();
    drop(worker);
    client(&url)
        .batch_execute(&format!(
            "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA fencing FROM {role};
             REVOKE ALL ON SCHEMA fencing FROM {role}; DROP ROLE {role};"
        ))
        .unwrap();
}
