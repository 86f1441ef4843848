//! The failover step (docs/postgres.md, "Replication and failover"): after
//! it, no token handed out before is accepted or issued again, on every
//! backend. A restored SQLite backup is a failover too: the copy lacks what
//! the original issued after the copy was made.

use std::collections::HashSet;
use std::time::Duration;

use fencing::{Error, Fence, Store, Token, FAILOVER_STEP};

mod support;
use support::{fresh_schema, postgres_test_url, sqlite_url};

#[test]
fn after_failover_no_earlier_token_is_accepted_or_issued_on_any_backend() {
    let dir = tempfile::tempdir().unwrap();
    let mut urls = vec!["memory:".to_owned(), sqlite_url(&dir.path().join("f.db"))];
    if let Some(base) = postgres_test_url() {
        urls.push(format!("{base}?schema={}", fresh_schema("failover")));
    }
    for url in urls {
        let store = Store::open(&url).unwrap();
        let lease = store
            .acquire("held", "a", Duration::from_secs(600))
            .unwrap();
        let t = store.next_token("s").unwrap();
        store.put("s", "k", b"v", &Fence::new(t)).unwrap();
        let outside = Token::new(1_000_000).unwrap();
        store
            .put("outside", "k", b"v", &Fence::new(outside))
            .unwrap();

        assert_eq!(store.failover().unwrap(), 3, "{url}");

        // Every earlier token is stale, the fence's own included.
        for (scope, token) in [("s", t), ("held", lease.token), ("outside", outside)] {
            let err = store
                .put(scope, "k", b"late", &Fence::new(token))
                .unwrap_err();
            assert!(
                matches!(err, Error::StaleToken { .. }),
                "{url} {scope}: {err:?}"
            );
        }
        // The lease ended; new tokens start above the step.
        assert_eq!(store.status("held").unwrap().lease, None, "{url}");
        let next = store.acquire("held", "b", Duration::from_secs(60)).unwrap();
        assert_eq!(
            next.token.get(),
            lease.token.get() + FAILOVER_STEP + 1,
            "{url}"
        );
        assert_eq!(
            store.next_token("outside").unwrap().get(),
            1_000_000 + FAILOVER_STEP + 1,
            "{url}"
        );
        // A scope the old history may have created is covered by the floors.
        assert_eq!(
            store.fence_of("never-seen").unwrap(),
            FAILOVER_STEP,
            "{url}"
        );
        let err = store
            .put(
                "never-seen",
                "k",
                b"v",
                &Fence::new(Token::new(FAILOVER_STEP).unwrap()),
            )
            .unwrap_err();
        assert!(matches!(err, Error::StaleToken { .. }), "{url}: {err:?}");
        store.close();
    }
}

/// A backup copied while the store ran, then more tokens on the original:
/// the copy, restored, would hand those tokens out again; after the
/// failover step it hands out none of them. The test sees the hole first,
/// on a second copy without the step.
#[test]
fn a_restored_sqlite_backup_reissues_tokens_unless_failed_over() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("live.db");
    let store = Store::open(&sqlite_url(&original)).unwrap();
    let mut issued = HashSet::new();
    for _ in 0..10 {
        issued.insert(store.next_token("job").unwrap().get());
    }
    // A consistent copy (VACUUM INTO), like a backup taken while running.
    let backup = dir.path().join("backup.db");
    rusqlite::Connection::open(&original)
        .unwrap()
        .execute("VACUUM INTO ?1", [backup.to_str().unwrap()])
        .unwrap();
    for _ in 0..5 {
        issued.insert(store.next_token("job").unwrap().get()); // lost with the original
    }
    store.close();

    let unprotected = dir.path().join("unprotected.db");
    std::fs::copy(&backup, &unprotected).unwrap();
    let copy = Store::open(&sqlite_url(&unprotected)).unwrap();
    let again: Vec<u64> = (0..10)
        .map(|_| copy.next_token("job").unwrap().get())
        .collect();
    let twice = again.iter().filter(|t| issued.contains(t)).count();
    assert_eq!(
        twice, 5,
        "without the step the restored copy reissues: {again:?}"
    );

    let restored = Store::open(&sqlite_url(&backup)).unwrap();
    restored.failover().unwrap();
    for _ in 0..10 {
        let t = restored.next_token("job").unwrap().get();
        assert!(!issued.contains(&t), "token {t} handed out twice");
        assert!(t > *issued.iter().max().unwrap());
    }
}

/// A name other than `scope` that `store` puts in `scope`'s floor bucket,
/// found by search: after `scope` retired at `floor`, a name not seen yet
/// reports its bucket's floor as its fence, and only names of that bucket
/// report `floor`.
fn same_bucket(store: &Store, scope: &str, floor: u64) -> String {
    (0..1_000_000)
        .map(|i| format!("{scope}-{i}"))
        .find(|name| store.fence_of(name).unwrap() == floor)
        .expect("a name in the same bucket")
}

/// A backup copied before a scope retired; on the original, another scope
/// of the same floor bucket then starts at the retirement's floor and takes
/// a token above everything the copy holds. After the copy is restored and
/// failed over, that token must be stale and never issued again: the step
/// has to move every counter, fence and floor above anything the original
/// ever held, not only above what the copy's own values were.
#[test]
fn a_restored_backup_refuses_tokens_of_a_scope_created_after_a_retirement() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("live.db");
    let store = Store::open(&sqlite_url(&original)).unwrap();
    let jump = 1u64 << 45;
    store
        .advance_counter("s", Token::new(jump).unwrap())
        .unwrap();
    let backup = dir.path().join("backup.db");
    rusqlite::Connection::open(&original)
        .unwrap()
        .execute("VACUUM INTO ?1", [backup.to_str().unwrap()])
        .unwrap();
    // Lost with the original: the retirement, and a new scope of the same
    // bucket starting at its floor.
    assert!(store.retire("s").unwrap());
    let t = same_bucket(&store, "s", jump);
    let token = store.next_token(&t).unwrap();
    assert_eq!(token.get(), jump + 1);
    store.put(&t, "k", b"v", &Fence::new(token)).unwrap();
    store.close();

    let restored = Store::open(&sqlite_url(&backup)).unwrap();
    restored.failover().unwrap();
    let err = restored
        .put(&t, "k", b"late", &Fence::new(token))
        .unwrap_err();
    assert!(
        matches!(err, Error::StaleToken { .. }),
        "{t}: the token taken after the backup was accepted again: {err:?}"
    );
    let next = restored.next_token(&t).unwrap().get();
    assert!(next > token.get(), "{t}: {next} issued again");
}
