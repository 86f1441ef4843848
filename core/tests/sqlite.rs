//! The SQLite backend's own promises: durable across reopen, shared between
//! handles, private file mode, and clear BACKEND errors for bad files that
//! leave them untouched.

#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
#[cfg(unix)]
use std::process::Command;
use std::time::Duration;

use fencing::{Error, ErrorCode, Fence, Op, Store, Token};

mod support;
use support::sqlite_url;

fn open_err(path: &Path) -> Error {
    Store::open(&sqlite_url(path)).expect_err("open must fail")
}

#[test]
fn state_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fence.db");
    // Unbounded jumps (docs/semantics.md, "Failover"): a property of the
    // file from then on, kept by the reopen below.
    let store = Store::open(&format!("{}?jumps=unbounded", sqlite_url(&path))).unwrap();
    let lease = store
        .acquire("report", "a", Duration::from_secs(60))
        .unwrap();
    store
        .put("report", "body", b"v1", &Fence::new(lease.token))
        .unwrap();
    store.advance_counter("other", Token::MAX).unwrap();
    store.close();
    assert_eq!(store.next_token("report").unwrap_err(), Error::Closed);

    let store = Store::open(&sqlite_url(&path)).unwrap();
    let status = store.status("report").unwrap();
    assert_eq!((status.counter, status.fence, status.entries), (1, 1, 1));
    assert_eq!(status.lease.unwrap().holder, "a");
    assert_eq!(store.next_token("report").unwrap().get(), 2);
    let entry = store.get("report", "body", None).unwrap().unwrap();
    assert_eq!(
        (entry.value.as_slice(), entry.version, entry.token),
        (&b"v1"[..], 1, lease.token)
    );
    assert_eq!(
        store.next_token("other").unwrap_err(),
        Error::TokenExhausted
    );
}

#[test]
fn two_handles_share_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fence.db");
    let a = Store::open(&sqlite_url(&path)).unwrap();
    let b = Store::open(&sqlite_url(&path)).unwrap();
    let lease = a.acquire("job", "a", Duration::from_secs(60)).unwrap();
    let held = b.acquire("job", "b", Duration::from_secs(60)).unwrap_err();
    assert!(
        matches!(held, Error::LeaseHeld { ref holder, token, .. } if holder == "a" && token == lease.token)
    );
    b.put("job", "k", b"from b", &Fence::new(lease.token))
        .unwrap();
    assert_eq!(a.get("job", "k", None).unwrap().unwrap().value, b"from b");
    assert!(a.release("job", lease.token).unwrap());
    assert_eq!(
        b.acquire("job", "b", Duration::from_secs(60))
            .unwrap()
            .token
            .get(),
        2
    );
    let stale = a
        .put("job", "k", b"late", &Fence::new(lease.token))
        .unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleToken);
}

#[test]
#[cfg(unix)] // File modes; on Windows the files inherit the directory's ACL.
fn the_file_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fence.db");
    let store = Store::open(&sqlite_url(&path)).unwrap();
    store.next_token("s").unwrap();
    for file in ["fence.db", "fence.db-wal", "fence.db-shm"] {
        let p = dir.path().join(file);
        if p.exists() {
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{file} has mode {mode:o}");
        }
    }
}

#[test]
fn a_batch_that_fails_leaves_the_file_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&sqlite_url(&dir.path().join("fence.db"))).unwrap();
    let t = store.next_token("s").unwrap();
    store.put("s", "a", b"1", &Fence::new(t)).unwrap();
    let t2 = store.next_token("s").unwrap();
    let err = store
        .apply(
            "s",
            &Fence::new(t2).with_seq(1),
            vec![
                Op::put("a", b"2".to_vec()),
                Op::put("b", b"2".to_vec()),
                Op::delete("zz"),
            ],
        )
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);
    assert_eq!(store.fence_of("s").unwrap(), t.get());
    assert_eq!(store.get("s", "a", None).unwrap().unwrap().version, 1);
    assert_eq!(store.get("s", "b", None).unwrap(), None);
}

#[test]
fn not_an_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let text = "these are my notes, not a database\n".repeat(200);
    std::fs::write(&path, &text).unwrap();
    let err = open_err(&path);
    assert_eq!(err.code(), ErrorCode::Backend, "{err}");
    assert!(
        err.to_string().contains("is not a SQLite database"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn a_database_from_a_newer_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fence.db");
    Store::open(&sqlite_url(&path)).unwrap().close();
    set_user_version(&path, 99);
    let before = std::fs::read(&path).unwrap();
    let err = open_err(&path);
    assert_eq!(err.code(), ErrorCode::Backend);
    assert!(err.to_string().contains("schema version 99"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn someone_elses_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE users (id INTEGER PRIMARY KEY); INSERT INTO users VALUES (1);",
    )
    .unwrap();
    drop(conn);
    let before = std::fs::read(&path).unwrap();
    let err = open_err(&path);
    assert_eq!(err.code(), ErrorCode::Backend);
    assert!(err.to_string().contains("did not create"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_path_in_a_missing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/dir/fence.db");
    let err = open_err(&path);
    assert_eq!(err.code(), ErrorCode::Backend);
    assert!(err.to_string().contains("cannot create"), "{err}");
    assert!(!dir.path().join("no").exists());
}

#[test]
fn a_read_only_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fence.db");
    Store::open(&sqlite_url(&path)).unwrap().close();
    let _unlock = make_read_only(&path);
    if std::fs::OpenOptions::new().write(true).open(&path).is_ok() {
        return; // Said why (make_read_only).
    }
    let before = std::fs::read(&path).unwrap();
    let err = open_err(&path);
    assert_eq!(err.code(), ErrorCode::Backend);
    assert!(err.to_string().contains("read-only"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn opening_a_fresh_file_from_many_threads_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let u = sqlite_url(&dir.path().join("fence.db"));
    let tokens: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| s.spawn(|| Store::open(&u).unwrap().next_token("s").unwrap().get()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut sorted = tokens.clone();
    sorted.sort();
    assert_eq!(sorted, (1..=6).collect::<Vec<_>>(), "{tokens:?}");
}

fn set_user_version(path: &Path, version: i64) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "user_version", version).unwrap();
}

/// Makes `path` unwritable even for root (the immutable attribute), or by
/// permissions for other users; undone when the returned guard drops.
#[cfg(unix)]
fn make_read_only(path: &Path) -> impl Drop + '_ {
    struct Undo<'a>(&'a Path, bool);
    impl Drop for Undo<'_> {
        fn drop(&mut self) {
            if self.1 {
                let _ = Command::new("chattr").arg("-i").arg(self.0).status();
            }
            let _ = std::fs::set_permissions(self.0, std::fs::Permissions::from_mode(0o600));
        }
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o400)).unwrap();
    let writable = std::fs::OpenOptions::new().write(true).open(path).is_ok();
    if writable {
        let ok = Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "running as root: need chattr +i to make a file read-only"
        );
        assert!(std::fs::OpenOptions::new().write(true).open(path).is_err());
    }
    Undo(path, writable)
}

/// Makes `path` unwritable (the read-only attribute, which binds
/// administrators too); undone when the returned guard drops.
#[cfg(windows)]
fn make_read_only(path: &Path) -> impl Drop + '_ {
    struct Undo<'a>(&'a Path);
    impl Drop for Undo<'_> {
        fn drop(&mut self) {
            set_read_only(self.0, false);
        }
    }
    set_read_only(path, true);
    if std::fs::OpenOptions::new().write(true).open(path).is_ok() {
        // Not on Windows: under Wine the attribute is the unix mode, which
        // root writes through.
        eprintln!("skipped: the read-only attribute does not bind here");
    }
    Undo(path)
}

#[cfg(windows)]
fn set_read_only(path: &Path, on: bool) {
    let mut permissions = std::fs::metadata(path).unwrap().permissions();
    permissions.set_readonly(on);
    std::fs::set_permissions(path, permissions).unwrap();
}

/// The sidecar beside a new store holds the store's record as soon as the
/// store is created, before any write is numbered: otherwise, between the
/// first numbered commit and the sidecar's write, another handle's write
/// found a numbered file without a record, read it as a lost sidecar and
/// took the failover step (`opening_a_fresh_file_from_many_threads_at_once`
/// failed so in CI: tokens 1 and 2^48 + 2^40 + 1..).
#[test]
fn a_new_stores_sidecar_knows_it_before_its_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    let _store = Store::open(&sqlite_url(&path)).unwrap();
    let sidecar = std::fs::read(dir.path().join(".new.db-fencing")).unwrap();
    // The record at its place, then the high-water mark (sidecar.rs).
    assert_eq!(sidecar.len(), 128);
    assert_eq!(&sidecar[..8], b"fencing1");
    assert_eq!(&sidecar[64..72], b"fencingH");
}
