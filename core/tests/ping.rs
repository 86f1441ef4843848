//! `Store::ping` (and `fencing::ping`, the same question without opening a
//! store): `Ok` only while the store answers and its schema is the one this
//! build writes; a closed store is `CLOSED`, an older or newer schema a
//! `BACKEND` refusal, and asking changes nothing.

use std::path::Path;

use fencing::{BackendErrorKind, Error, ErrorCode, Store};

mod support;
use support::{fresh_schema, postgres_test_url, sqlite_url};

fn source(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

fn refused(e: &Error) -> bool {
    e.backend_kind() == Some(BackendErrorKind::Refused)
}

fn user_version(path: &Path) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

fn set_user_version(path: &Path, version: i64) {
    rusqlite::Connection::open(path)
        .unwrap()
        .pragma_update(None, "user_version", version)
        .unwrap();
}

#[test]
fn memory_answers_until_closed() {
    let store = Store::open("memory:").unwrap();
    store.ping().unwrap();
    let clone = store.clone();
    store.close();
    assert_eq!(clone.ping().unwrap_err().code(), ErrorCode::Closed);
    fencing::ping("memory:").unwrap();
    assert_eq!(
        fencing::ping("nosuch:x").unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn sqlite_answers_while_its_schema_is_current() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&sqlite_url(&path)).unwrap();
    store.ping().unwrap();
    fencing::ping(&sqlite_url(&path)).unwrap();
    let ours = user_version(&path);

    // An older file under the open handle (restored by hand, say): only a
    // migration makes it usable again, and the ping says so.
    set_user_version(&path, ours - 1);
    let behind = store.ping().unwrap_err();
    assert!(refused(&behind), "{behind:?}");
    assert!(behind.to_string().contains("fencing migrate"), "{behind}");
    assert_eq!(user_version(&path), ours - 1, "a ping migrates nothing");

    // A newer file: the write's own refusal.
    set_user_version(&path, ours + 1);
    let newer = store.ping().unwrap_err();
    assert!(refused(&newer), "{newer:?}");
    assert!(newer.to_string().contains("newer fencing"), "{newer}");

    set_user_version(&path, ours);
    store.ping().unwrap();
    store.close();
    assert_eq!(store.ping().unwrap_err().code(), ErrorCode::Closed);
}

/// `fencing::ping` of a file the development builds wrote (schema 4) is
/// refused and leaves it as it was, where opening it would migrate it.
#[test]
fn sqlite_ping_without_opening_refuses_an_old_file_and_creates_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&source("tests/data/sqlite-schema-v4.sql"))
        .unwrap();
    let url = sqlite_url(&path);
    let behind = fencing::ping(&url).unwrap_err();
    assert!(refused(&behind), "{behind:?}");
    assert!(behind.to_string().contains("fencing migrate"), "{behind}");
    assert_eq!(user_version(&path), 4);
    fencing::migrate(&url).unwrap();
    fencing::ping(&url).unwrap();

    let missing = dir.path().join("missing.db");
    let e = fencing::ping(&sqlite_url(&missing)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Backend, "{e:?}");
    assert!(!missing.exists(), "a ping created the file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aio_ping_is_the_stores() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let store = fencing::aio::Store::open(&sqlite_url(&path)).await.unwrap();
    store.ping().await.unwrap();
    set_user_version(&path, user_version(&path) - 1);
    assert!(refused(&store.ping().await.unwrap_err()));
    store.close().await;
    assert_eq!(store.ping().await.unwrap_err().code(), ErrorCode::Closed);
}

fn connect(base: &str) -> postgres::Client {
    base.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

#[test]
fn postgres_answers_while_its_schema_is_current() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("ping");
    let url = format!("{base}?schema={schema}");
    let store = Store::open(&url).unwrap();
    store.ping().unwrap();
    fencing::ping(&url).unwrap();

    let mut c = connect(&base);
    let latest: i32 = c
        .query_one(
            &format!("SELECT max(version) FROM \"{schema}\".migrations"),
            &[],
        )
        .unwrap()
        .get(0);
    // A newer build's migration recorded: refused as open refuses it.
    c.execute(
        &format!("INSERT INTO \"{schema}\".migrations (version) VALUES ($1)"),
        &[&(latest + 1)],
    )
    .unwrap();
    let newer = store.ping().unwrap_err();
    assert!(refused(&newer), "{newer:?}");
    assert!(newer.to_string().contains("newer fencing"), "{newer}");
    // Older: the latest migration gone (a schema restored under the store).
    c.execute(
        &format!("DELETE FROM \"{schema}\".migrations WHERE version >= $1"),
        &[&latest],
    )
    .unwrap();
    let behind = store.ping().unwrap_err();
    assert!(refused(&behind), "{behind:?}");
    assert!(behind.to_string().contains("fencing migrate"), "{behind}");
    assert!(refused(&fencing::ping(&url).unwrap_err()));
    let still: i32 = c
        .query_one(
            &format!("SELECT max(version) FROM \"{schema}\".migrations"),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(still, latest - 1, "a ping migrates nothing");

    // A schema that was never made.
    let none = fencing::ping(&format!("{base}?schema={}", fresh_schema("none"))).unwrap_err();
    assert!(refused(&none), "{none:?}");

    store.close();
    assert_eq!(store.ping().unwrap_err().code(), ErrorCode::Closed);
}

#[test]
fn postgres_unreachable_is_a_backend_error() {
    let e = fencing::ping("postgres://127.0.0.1:1/x?connect_timeout=1").unwrap_err();
    assert_eq!(e.code(), ErrorCode::Backend, "{e:?}");
}
