//! A store written by schema version 1 (one store-wide retirement floor)
//! upgrades in place on open and keeps every promise it made: scopes keep
//! their counters, and every new scope still starts above the old floor.

use std::path::Path;

use fencing::{Error, Fence, Store, Token};

mod support;
use support::{fresh_schema, postgres_test_url, sqlite_url};

const OLD_FLOOR: u64 = 50;

fn source(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// What a version-1 store promised, checked after the upgrade.
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

#[test]
fn sqlite_version_1_file_upgrades_and_keeps_its_floor() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(&source("src/backend/sqlite/v1.sql"))
        .unwrap();
    conn.execute_batch(&format!(
        "UPDATE fencing_meta SET value = {OLD_FLOOR} WHERE name = 'floor';
         INSERT INTO fencing_scopes (scope, counter, fence, sealed) VALUES ('kept', 7, 7, 0);
         PRAGMA user_version = 1;"
    ))
    .unwrap();
    drop(conn);
    promises_kept(&Store::open(&sqlite_url(&path)).unwrap());
    // The upgraded file gained the view for fencing the caller's own tables
    // (docs/sqlite.md), and it keeps the old floor too.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let check = "INSERT INTO fencing_check (scope, token) VALUES (?1, ?2)";
    let stale = conn.execute(check, rusqlite::params!["yet-another", OLD_FLOOR as i64]);
    let code = stale.map_err(|e| Error::from_sqlite_message(&e.to_string()).map(|e| e.code()));
    assert_eq!(code, Err(Some(fencing::ErrorCode::StaleToken)));
    conn.execute(
        check,
        rusqlite::params!["yet-another", OLD_FLOOR as i64 + 1],
    )
    .unwrap();
}

#[test]
fn postgres_version_1_schema_upgrades_and_keeps_its_floor() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("upgrade");
    let mut c = base
        .parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap();
    let quoted = format!("\"{schema}\"");
    c.batch_execute(&format!("CREATE SCHEMA {quoted}")).unwrap();
    c.batch_execute(&source("src/backend/postgres/v1.sql").replace("@schema@", &quoted))
        .unwrap();
    c.batch_execute(&format!(
        "INSERT INTO {quoted}.migrations (version) VALUES (1);
         UPDATE {quoted}.meta SET floor = {OLD_FLOOR};
         INSERT INTO {quoted}.scopes (scope, counter, fence, sealed) VALUES ('kept', 7, 7, false);"
    ))
    .unwrap();
    promises_kept(&Store::open(&format!("{base}?schema={schema}")).unwrap());
}

/// `fencing::migrate` upgrades a version-1 file in place without opening a
/// store: afterwards the file has the current schema (the `fencing_check`
/// view works from any SQLite driver) and a store opened later keeps every
/// promise. A second call changes nothing; `memory:` has nothing to do.
#[test]
fn sqlite_migrate_upgrades_without_opening_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(&source("src/backend/sqlite/v1.sql"))
        .unwrap();
    conn.execute_batch(&format!(
        "UPDATE fencing_meta SET value = {OLD_FLOOR} WHERE name = 'floor';
         INSERT INTO fencing_scopes (scope, counter, fence, sealed) VALUES ('kept', 7, 7, 0);
         PRAGMA user_version = 1;"
    ))
    .unwrap();
    drop(conn);
    fencing::migrate(&sqlite_url(&path)).unwrap();
    fencing::migrate(&sqlite_url(&path)).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert!(version > 1, "still version {version}");
    // The floor (50) holds in the view too: 51 is the first token above it.
    conn.execute(
        "INSERT INTO fencing_check (scope, token) VALUES ('s', 51)",
        [],
    )
    .unwrap();
    drop(conn);
    promises_kept(&Store::open(&sqlite_url(&path)).unwrap());
    // A fresh file is created with the current schema.
    let fresh = dir.path().join("fresh.db");
    Store::migrate(&sqlite_url(&fresh)).unwrap();
    let conn = rusqlite::Connection::open(&fresh).unwrap();
    let fresh_version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(fresh_version, version);
    fencing::migrate("memory:").unwrap();
    // What open refuses, migrate refuses: a file fencing did not create.
    let foreign = dir.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE mine (x)")
        .unwrap();
    let refused = fencing::migrate(&sqlite_url(&foreign)).unwrap_err();
    assert_eq!(refused.code(), fencing::ErrorCode::Backend, "{refused}");
    assert_eq!(
        fencing::migrate("sqlite://x.db").unwrap_err().code(),
        fencing::ErrorCode::InvalidArgument
    );
}

/// On PostgreSQL: a fresh schema made by `fencing::migrate` alone answers
/// `fencing.check` (the caller's own transactions) before any store opened
/// it, and a version-1 schema upgrades in place and keeps its floor.
#[test]
fn postgres_migrate_creates_and_upgrades_without_opening_a_store() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let mut c = base
        .parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap();
    let fresh = fresh_schema("migrate");
    fencing::migrate(&format!("{base}?schema={fresh}")).unwrap();
    fencing::migrate(&format!("{base}?schema={fresh}")).unwrap();
    c.batch_execute(&format!("SELECT \"{fresh}\".check('s', 3)"))
        .unwrap();
    let stale = c
        .batch_execute(&format!("SELECT \"{fresh}\".check('s', 2)"))
        .unwrap_err();
    assert_eq!(stale.code().map(|s| s.code()), Some("FN001"), "{stale}");

    let schema = fresh_schema("migrate_v1");
    let quoted = format!("\"{schema}\"");
    c.batch_execute(&format!("CREATE SCHEMA {quoted}")).unwrap();
    c.batch_execute(&source("src/backend/postgres/v1.sql").replace("@schema@", &quoted))
        .unwrap();
    c.batch_execute(&format!(
        "INSERT INTO {quoted}.migrations (version) VALUES (1);
         UPDATE {quoted}.meta SET floor = {OLD_FLOOR};
         INSERT INTO {quoted}.scopes (scope, counter, fence, sealed) VALUES ('kept', 7, 7, false);"
    ))
    .unwrap();
    fencing::migrate(&format!("{base}?schema={schema}")).unwrap();
    let version: i32 = c
        .query_one(
            &format!("SELECT max(version) FROM {quoted}.migrations"),
            &[],
        )
        .unwrap()
        .get(0);
    assert!(version > 1, "still version {version}");
    promises_kept(&Store::open(&format!("{base}?schema={schema}")).unwrap());
}
