//! A store written by the schema the development builds left (SQLite
//! version 4, PostgreSQL version 5, kept as dumps in `tests/data/`) opens
//! with this build, upgrades in place and keeps every promise it made:
//! scopes keep their counters, and every new scope still starts above the
//! floors. The functions (PostgreSQL) and the `fencing_check` trigger
//! (SQLite) are reinstalled when their text differs from what the store
//! records, and never replaced by an older build's (which refuses a SQLite
//! file whose trigger a newer build wrote: it cannot check that text).

use std::path::Path;

use fencing::{Error, Fence, Store, Token};

mod support;
use support::{fresh_schema, postgres_test_url, sqlite_url};

const OLD_FLOOR: u64 = 50;

fn source(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// What the old store promised, checked after the upgrade.
fn promises_kept(store: &Store) {
    assert_eq!(store.next_token("kept").unwrap().get(), 8);
    for scope in ["new", "another", "日本"] {
        assert_eq!(store.fence_of(scope).unwrap(), OLD_FLOOR);
        let floor = Fence::new(Token::new(OLD_FLOOR).unwrap());
        let stale = store.put(scope, "k", b"v", &floor).unwrap_err();
        assert!(matches!(stale, Error::StaleToken { .. }), "{stale:?}");
        assert_eq!(store.next_token(scope).unwrap().get(), OLD_FLOOR + 1);
    }
}

/// A SQLite file as the development builds wrote it, with a scope at 7 and
/// every bucket's floor at OLD_FLOOR.
fn old_sqlite_file(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&source("tests/data/sqlite-schema-v4.sql"))
        .unwrap();
    conn.execute_batch(&format!(
        "WITH RECURSIVE b(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM b WHERE n < 4095)
         INSERT INTO fencing_floors (bucket, floor) SELECT n, {OLD_FLOOR} FROM b;
         INSERT INTO fencing_scopes (scope, counter, fence, sealed) VALUES ('kept', 7, 7, 0);"
    ))
    .unwrap();
}

fn user_version(conn: &rusqlite::Connection) -> i64 {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

/// The `fencing_check` view of an upgraded file keeps the floor too.
fn view_keeps_the_floor(path: &Path, scope: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let check = "INSERT INTO fencing_check (scope, token) VALUES (?1, ?2)";
    let stale = conn.execute(check, rusqlite::params![scope, OLD_FLOOR as i64]);
    let code = stale.map_err(|e| Error::from_sqlite_message(&e.to_string()).map(|e| e.code()));
    assert_eq!(code, Err(Some(fencing::ErrorCode::StaleToken)));
    conn.execute(check, rusqlite::params![scope, OLD_FLOOR as i64 + 1])
        .unwrap();
}

#[test]
fn sqlite_file_of_the_development_builds_upgrades_and_keeps_its_floors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    old_sqlite_file(&path);
    promises_kept(&Store::open(&sqlite_url(&path)).unwrap());
    view_keeps_the_floor(&path, "yet-another");
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert!(user_version(&conn) > 4);
    // What the old version left unused is gone.
    let meta: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'fencing_meta'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(meta, 0);
}

/// The store's ceiling of an upgraded file (schema version 6) covers every
/// counter, fence and floor the file held: the greatest of them plus 2^32
/// (0 for a file that holds none), so the failover step after the upgrade
/// moves every scope and floor above them.
#[test]
fn sqlite_upgrade_sets_the_ceiling_over_what_the_file_holds() {
    const HEADROOM: u64 = 1 << 32; // the rules' CEILING_HEADROOM
    let dir = tempfile::tempdir().unwrap();
    let ceiling = |path: &Path| -> u64 {
        let conn = rusqlite::Connection::open(path).unwrap();
        let h: i64 = conn
            .query_row("SELECT ceiling FROM fencing_ceiling", [], |r| r.get(0))
            .unwrap();
        h as u64
    };

    let empty = dir.path().join("empty.db");
    rusqlite::Connection::open(&empty)
        .unwrap()
        .execute_batch(&source("tests/data/sqlite-schema-v4.sql"))
        .unwrap();
    let store = Store::open(&sqlite_url(&empty)).unwrap();
    assert_eq!(ceiling(&empty), 0);
    // An empty store's ceiling (0) is below the jump limit (2^48).
    assert_eq!(
        store.failover().unwrap(),
        (1 << 48) + fencing::FAILOVER_STEP
    );
    store.close();

    // A fence above its counter, and one bucket's floor: whichever is the
    // greatest value sets the ceiling.
    for (name, fence, floor) in [
        ("floor", 1u64 << 45, 1u64 << 46),
        ("fence", 1 << 49, 1 << 46),
    ] {
        let path = dir.path().join(format!("{name}.db"));
        old_sqlite_file(&path);
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "INSERT INTO fencing_scopes (scope, counter, fence, sealed) VALUES ('fenced', 3, ?1, 0)",
            [fence as i64],
        )
        .unwrap();
        conn.execute(
            "UPDATE fencing_floors SET floor = ?1 WHERE bucket = 7",
            [floor as i64],
        )
        .unwrap();
        drop(conn);
        fencing::migrate(&sqlite_url(&path)).unwrap();
        let top = fence.max(floor);
        assert_eq!(ceiling(&path), top + HEADROOM, "{name}");
        let store = Store::open(&sqlite_url(&path)).unwrap();
        // Above the greater of the ceiling and the jump limit (2^48).
        let base = (top + HEADROOM).max(1 << 48) + fencing::FAILOVER_STEP;
        assert_eq!(store.failover().unwrap(), base, "{name}");
        for scope in ["kept", "fenced", "new"] {
            assert_eq!(
                store.next_token(scope).unwrap().get(),
                base + 1,
                "{name} {scope}"
            );
        }
        let err = store
            .put("fenced", "k", b"v", &Fence::new(Token::new(fence).unwrap()))
            .unwrap_err();
        assert!(matches!(err, Error::StaleToken { .. }), "{name}: {err:?}");
    }
}

/// The trigger is reinstalled when the file records another text, and a
/// newer build's is left alone (and the file refused).
#[test]
fn sqlite_trigger_is_reinstalled_when_it_differs_never_downgraded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let url = sqlite_url(&path);
    drop(Store::open(&url).unwrap());
    let sabotage = "DROP VIEW fencing_check;
         CREATE VIEW fencing_check (scope, token, seq) AS SELECT NULL, NULL, NULL WHERE 0;
         CREATE TRIGGER fencing_check_insert INSTEAD OF INSERT ON fencing_check BEGIN SELECT 1; END;";
    let stale_accepted = |conn: &rusqlite::Connection| {
        conn.execute(
            "INSERT INTO fencing_check (scope, token) VALUES ('s', 1)",
            [],
        )
        .is_ok()
    };
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO fencing_check (scope, token) VALUES ('s', 5)",
        [],
    )
    .unwrap();
    // A trigger text the file records as a newer release's: never
    // downgraded, and since this build cannot check a text it does not
    // know, the file is refused (tests/sqlite_hostile.rs) and left alone.
    conn.execute_batch(sabotage).unwrap();
    conn.execute(
        "UPDATE fencing_installed SET hash = 'x', version = '999.0.0'",
        [],
    )
    .unwrap();
    let refused = Store::open(&url).expect_err("a newer build's trigger was trusted");
    assert!(refused.to_string().contains("999.0.0"), "{refused}");
    assert!(
        stale_accepted(&conn),
        "a newer build's trigger was replaced"
    );
    // Another text from this release or an older one: ours replace it.
    conn.execute("UPDATE fencing_installed SET version = '0.0.1'", [])
        .unwrap();
    drop(Store::open(&url).unwrap());
    assert!(!stale_accepted(&conn), "the old trigger is still installed");
}

/// `fencing::migrate` upgrades an old file in place without opening a
/// store: afterwards the file has the current schema (the `fencing_check`
/// view works from any SQLite driver) and a store opened later keeps every
/// promise. A second call changes nothing; `memory:` has nothing to do.
#[test]
fn sqlite_migrate_upgrades_without_opening_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    old_sqlite_file(&path);
    fencing::migrate(&sqlite_url(&path)).unwrap();
    fencing::migrate(&sqlite_url(&path)).unwrap();
    let version = user_version(&rusqlite::Connection::open(&path).unwrap());
    assert!(version > 4, "still version {version}");
    view_keeps_the_floor(&path, "s");
    promises_kept(&Store::open(&sqlite_url(&path)).unwrap());
    // A fresh file is created with the current schema.
    let fresh = dir.path().join("fresh.db");
    Store::migrate(&sqlite_url(&fresh)).unwrap();
    assert_eq!(
        user_version(&rusqlite::Connection::open(&fresh).unwrap()),
        version
    );
    fencing::migrate("memory:").unwrap();
    // What open refuses, migrate refuses: a file fencing did not create,
    // and one from before the development builds' schema was squashed.
    let foreign = dir.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE mine (x)")
        .unwrap();
    let refused = fencing::migrate(&sqlite_url(&foreign)).unwrap_err();
    assert_eq!(refused.code(), fencing::ErrorCode::Backend, "{refused}");
    let ancient = dir.path().join("ancient.db");
    rusqlite::Connection::open(&ancient)
        .unwrap()
        .execute_batch("CREATE TABLE fencing_scopes (scope TEXT); PRAGMA user_version = 2;")
        .unwrap();
    let refused = fencing::migrate(&sqlite_url(&ancient)).unwrap_err();
    assert!(refused.to_string().contains("version 2"), "{refused}");
    assert_eq!(
        fencing::migrate("sqlite://x.db").unwrap_err().code(),
        fencing::ErrorCode::InvalidArgument
    );
}

/// A PostgreSQL schema as the development builds wrote it, loaded under a
/// fresh name, with a scope at 7 and every bucket's floor at OLD_FLOOR.
fn old_postgres_schema(c: &mut postgres::Client) -> String {
    let schema = fresh_schema("upgrade");
    c.batch_execute(&source("tests/data/postgres-schema-v5.sql").replace("fencing_v5", &schema))
        .unwrap();
    c.batch_execute(&format!(
        "SET search_path = public;
         UPDATE \"{schema}\".floors SET floor = {OLD_FLOOR};
         INSERT INTO \"{schema}\".scopes (scope, counter, fence, sealed) VALUES ('kept', 7, 7, false);"
    ))
    .unwrap();
    schema
}

fn connect(base: &str) -> postgres::Client {
    base.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

#[test]
fn postgres_schema_of_the_development_builds_upgrades_and_keeps_its_floors() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let mut c = connect(&base);
    let schema = old_postgres_schema(&mut c);
    promises_kept(&Store::open(&format!("{base}?schema={schema}")).unwrap());
    // The functions are recorded as this build's.
    let recorded: i64 = c
        .query_one(
            &format!("SELECT count(*) FROM \"{schema}\".installed_functions"),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(recorded, 1);
}

/// The functions are reinstalled when the schema records another text, and
/// a newer build's are left alone.
#[test]
fn postgres_functions_are_reinstalled_when_they_differ_never_downgraded() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let mut c = connect(&base);
    let schema = fresh_schema("reinstall");
    let url = format!("{base}?schema={schema}");
    drop(Store::open(&url).unwrap());
    let q = format!("\"{schema}\"");
    // A next_token that hands out 1 forever: what an old, wrong text does.
    let sabotage = format!(
        "CREATE OR REPLACE FUNCTION {q}.next_token(p_scope text) RETURNS bigint \
         LANGUAGE sql AS $$ SELECT 1::bigint $$"
    );
    c.batch_execute(&sabotage).unwrap();
    c.batch_execute(&format!(
        "UPDATE {q}.installed_functions SET hash = 'x', version = '999.0.0'"
    ))
    .unwrap();
    let store = Store::open(&url).unwrap();
    assert_eq!(store.next_token("s").unwrap().get(), 1);
    assert_eq!(
        store.next_token("s").unwrap().get(),
        1,
        "a newer build's functions were replaced"
    );
    drop(store);
    c.batch_execute(&format!(
        "UPDATE {q}.installed_functions SET version = '0.0.1'"
    ))
    .unwrap();
    let store = Store::open(&url).unwrap();
    assert_eq!(store.next_token("s").unwrap().get(), 1);
    assert_eq!(store.next_token("s").unwrap().get(), 2);
}

/// On PostgreSQL: a fresh schema made by `fencing::migrate` alone answers
/// `fencing.check` (the caller's own transactions) before any store opened
/// it, and an old schema upgrades in place and keeps its floors.
#[test]
fn postgres_migrate_creates_and_upgrades_without_opening_a_store() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let mut c = connect(&base);
    let fresh = fresh_schema("migrate");
    fencing::migrate(&format!("{base}?schema={fresh}")).unwrap();
    fencing::migrate(&format!("{base}?schema={fresh}")).unwrap();
    c.batch_execute(&format!("SELECT \"{fresh}\".check('s', 3)"))
        .unwrap();
    let stale = c
        .batch_execute(&format!("SELECT \"{fresh}\".check('s', 2)"))
        .unwrap_err();
    assert_eq!(stale.code().map(|s| s.code()), Some("FN001"), "{stale}");

    let schema = old_postgres_schema(&mut c);
    fencing::migrate(&format!("{base}?schema={schema}")).unwrap();
    let version: i32 = c
        .query_one(
            &format!("SELECT max(version) FROM \"{schema}\".migrations"),
            &[],
        )
        .unwrap()
        .get(0);
    assert!(version > 5, "still version {version}");
    promises_kept(&Store::open(&format!("{base}?schema={schema}")).unwrap());
}
