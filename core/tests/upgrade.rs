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
