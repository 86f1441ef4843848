//! The failover step (docs/semantics.md, "Failover"; docs/postgres.md,
//! "Replication and failover"): after it, no token handed out before is
//! accepted or issued again, on every backend. A restored SQLite backup is a
//! failover too: the copy lacks what the original issued after the copy was
//! made.
//!
//! The numbers: each store keeps a ceiling H (0 at first) at or above every
//! counter, fence and floor; a value above H moves it to that value plus
//! 2^32 (`HEADROOM`), saturating at the maximum token. A presented token
//! moves a counter or fence past its greatest only up to the jump limit J: the latest step's
//! base (0 before any) + 2^48 (`JUMP_ROOM`). The step's base is max(H, J) +
//! `FAILOVER_STEP` (saturating); every counter, fence and floor moves to at
//! least the base, and `failover` returns it.

use std::collections::HashSet;
use std::time::Duration;

use fencing::{Error, Fence, Store, Token, FAILOVER_STEP};

mod support;
use support::{fresh_schema, postgres_test_url, sqlite_url};

/// How far the ceiling goes past the value that moved it (the rules'
/// `CEILING_HEADROOM`): 2^32.
const HEADROOM: u64 = 1 << 32;

/// How far past the latest step's base a jump may go (`JUMP_ROOM`): 2^48.
const JUMP_ROOM: u64 = 1 << 48;

/// memory:, a fresh SQLite file, and PostgreSQL when a server is there.
fn backends(dir: &tempfile::TempDir) -> Vec<String> {
    let mut urls = vec!["memory:".to_owned(), sqlite_url(&dir.path().join("f.db"))];
    if let Some(base) = postgres_test_url() {
        urls.push(format!("{base}?schema={}", fresh_schema("failover")));
    }
    urls
}

#[test]
fn after_failover_no_earlier_token_is_accepted_or_issued_on_any_backend() {
    let dir = tempfile::tempdir().unwrap();
    for url in backends(&dir) {
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

        // The ceiling the first token set (1 + 2^32) is below the jump
        // limit (2^48 before any step).
        let base = JUMP_ROOM + FAILOVER_STEP;
        assert_eq!(store.failover().unwrap(), base, "{url}");

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
        assert_eq!(next.token.get(), base + 1, "{url}");
        assert_eq!(
            store.next_token("outside").unwrap().get(),
            base + 1,
            "{url}"
        );
        // A scope the old history may have created is covered by the floors.
        assert_eq!(store.fence_of("never-seen").unwrap(), base, "{url}");
        let err = store
            .put(
                "never-seen",
                "k",
                b"v",
                &Fence::new(Token::new(base).unwrap()),
            )
            .unwrap_err();
        assert!(matches!(err, Error::StaleToken { .. }), "{url}: {err:?}");
        store.close();
    }
}

/// A backup copied while the store ran, then more tokens on the original:
/// the copy, restored, would hand those tokens out again. A copy of the
/// backup in a file of its own steps by itself (it used to reissue them);
/// the backup with the explicit failover step hands out none of them.
#[test]
fn a_restored_sqlite_backup_never_reissues_tokens() {
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

    // A copy in a file of its own now steps by itself on its first write
    // (docs/semantics.md, "SQLite file identity"); before, it reissued the 5
    // tokens the backup lacked.
    let copied = dir.path().join("copied.db");
    std::fs::copy(&backup, &copied).unwrap();
    let copy = Store::open(&sqlite_url(&copied)).unwrap();
    let again: Vec<u64> = (0..10)
        .map(|_| copy.next_token("job").unwrap().get())
        .collect();
    let twice = again.iter().filter(|t| issued.contains(t)).count();
    assert_eq!(twice, 0, "the restored copy reissues: {again:?}");

    let restored = Store::open(&sqlite_url(&backup)).unwrap();
    restored.failover().unwrap();
    for _ in 0..10 {
        let t = restored.next_token("job").unwrap().get();
        assert!(!issued.contains(&t), "token {t} handed out twice");
        assert!(t > *issued.iter().max().unwrap());
    }
}

/// The reproduction on SQLite: 10 tokens; a backup (`VACUUM INTO`);
/// on the original, a counter advanced to 5 * 2^40 and a write with the
/// outside token 7 * 2^40, each followed by next_token; the backup restored,
/// the step, and the same calls replayed. Before the jump limit the step
/// moved each scope 2^40 above its own value in the copy, and both tokens
/// were handed out a second time.
#[test]
fn a_restored_sqlite_backup_never_reissues_after_jumps() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("live.db");
    let store = Store::open(&sqlite_url(&original)).unwrap();
    for _ in 0..10 {
        store.next_token("a").unwrap();
    }
    let backup = dir.path().join("backup.db");
    rusqlite::Connection::open(&original)
        .unwrap()
        .execute("VACUUM INTO ?1", [backup.to_str().unwrap()])
        .unwrap();
    let migrated = Token::new(5 << 40).unwrap();
    let outside = Fence::new(Token::new(7 << 40).unwrap());
    store.advance_counter("migrated", migrated).unwrap();
    let mut issued = vec![("migrated", store.next_token("migrated").unwrap())];
    store.put("outside", "k", b"v", &outside).unwrap();
    issued.push(("outside", store.next_token("outside").unwrap()));
    issued.push(("a", store.next_token("a").unwrap()));
    store.close();

    let copy = Store::open(&sqlite_url(&backup)).unwrap();
    copy.failover().unwrap();
    copy.advance_counter("migrated", migrated).unwrap();
    let err = copy.put("outside", "k", b"v", &outside).unwrap_err();
    assert!(matches!(err, Error::StaleToken { .. }), "{err:?}");
    for (scope, earlier) in issued {
        let again = copy.next_token(scope).unwrap();
        assert!(again > earlier, "{scope}: {again} after {earlier}");
        let err = copy
            .put(scope, "k", b"v", &Fence::new(earlier))
            .unwrap_err();
        assert!(matches!(err, Error::StaleToken { .. }), "{scope}: {err:?}");
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
    // The copy's ceiling, the one the jump set (2^45 + 2^32), is below the
    // jump limit: the step goes above the limit, so above anything the
    // original can have reached since the copy.
    // The copy, in a file of its own and without its store's sidecar,
    // steps by itself at the first write (here the explicit step's, which
    // then steps once more): 64 steps, since nothing bounds the history it
    // lacks (docs/semantics.md, "SQLite file identity").
    let base = 65 * (JUMP_ROOM + FAILOVER_STEP);
    assert_eq!(restored.failover().unwrap(), base);
    let err = restored
        .put(&t, "k", b"late", &Fence::new(token))
        .unwrap_err();
    assert!(
        matches!(err, Error::StaleToken { .. }),
        "{t}: the token taken after the backup was accepted again: {err:?}"
    );
    let next = restored.next_token(&t).unwrap().get();
    assert!(next > token.get(), "{t}: {next} issued again");
    assert_eq!(next, base + 1);
}

/// A token from outside the counter, accepted by SQLite's `fencing_check`
/// view in the caller's own transaction, raises the ceiling too: the step
/// afterwards moves every scope above it.
#[test]
fn a_token_the_check_view_accepted_is_under_the_base() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.db");
    let store = Store::open(&sqlite_url(&path)).unwrap();
    store.next_token("s").unwrap();
    // The highest token from outside the view takes: the jump limit.
    let outside = JUMP_ROOM;
    let conn = rusqlite::Connection::open(&path).unwrap();
    let err = conn
        .execute(
            "INSERT INTO fencing_check (scope, token) VALUES ('report:8', ?1)",
            [(outside + 2) as i64],
        )
        .unwrap_err();
    assert!(err.to_string().contains("INVALID_ARGUMENT"), "{err}");
    conn.execute(
        "INSERT INTO fencing_check (scope, token) VALUES ('report:7', ?1)",
        [outside as i64],
    )
    .unwrap();
    drop(conn);
    assert_eq!(store.fence_of("report:7").unwrap(), outside);
    assert_eq!(store.fence_of("report:8").unwrap(), 0);
    // At the jump limit, the token is covered by the limit itself: the
    // ceiling stays, and the step goes 2^40 above the limit.
    let base = outside + FAILOVER_STEP;
    assert_eq!(store.failover().unwrap(), base);
    for scope in ["report:7", "s", "never-seen"] {
        assert_eq!(store.next_token(scope).unwrap().get(), base + 1, "{scope}");
    }
}

/// The step's numbers, on every backend: token 1 puts the ceiling at
/// 1 + 2^32, and tokens 2..=10 leave it there (it covers them), below the
/// jump limit (2^48): the base is the limit + 2^40. A second step starts
/// from the new limit (the first base + 2^48), above the ceiling the first
/// left (its base + 2^32).
#[test]
fn the_base_is_the_step_above_the_ceiling_and_steps_repeat_from_it() {
    let dir = tempfile::tempdir().unwrap();
    for url in backends(&dir) {
        let store = Store::open(&url).unwrap();
        for _ in 0..10 {
            store.next_token("s").unwrap();
        }
        let first = JUMP_ROOM + FAILOVER_STEP;
        assert_eq!(store.failover().unwrap(), first, "{url}");
        assert_eq!(store.next_token("s").unwrap().get(), first + 1, "{url}");
        assert_eq!(store.fence_of("s").unwrap(), first, "{url}");
        let second = first + JUMP_ROOM + FAILOVER_STEP;
        assert_eq!(store.failover().unwrap(), second, "{url}");
        assert_eq!(store.next_token("s").unwrap().get(), second + 1, "{url}");
        assert_eq!(store.next_token("new").unwrap().get(), second + 1, "{url}");
        store.close();
    }
}

/// A token a caller presents (a write, a claim, an `advance_counter`)
/// moves no fence or counter past the jump limit, not even one past the
/// scope's greatest token: only the store's own issues count past it. Else
/// a caller could step a fence past the limit one token at a time, and the
/// owner's `lower_wedged`, which takes every value above the limit for a
/// wedge from before the limit existed, would lower the fence below tokens
/// this store accepted (docs/semantics.md, "Lowering a wedged scope").
#[test]
fn a_presented_token_never_steps_a_fence_past_the_jump_limit() {
    let dir = tempfile::tempdir().unwrap();
    let t = |v: u64| Fence::new(Token::new(v).unwrap());
    let j = JUMP_ROOM;
    for url in backends(&dir) {
        let store = Store::open(&url).unwrap();
        store.claim("s", &t(j)).unwrap();
        let refused = [
            store.put("s", "k", b"a", &t(j + 1)).map(drop),
            store.claim("s", &t(j + 1)),
            store
                .advance_counter("s", Token::new(j + 1).unwrap())
                .map(drop),
        ];
        for r in refused {
            let err = r.unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{url}: {err:?}");
        }
        let status = store.status("s").unwrap();
        assert_eq!((status.counter, status.fence), (0, j), "{url}");
        // Nothing above the limit: nothing to take for a wedge.
        let err = store.lower_wedged("s", Token::new(1).unwrap()).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{url}: {err:?}");
        // The store's own next token counts past the limit, and is taken.
        let issued = store.next_token("s").unwrap();
        assert_eq!(issued.get(), j + 1, "{url}");
        store.put("s", "k", b"b", &Fence::new(issued)).unwrap();
        let err = store.put("s", "k", b"c", &t(j + 2)).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{url}: {err:?}");
        // The counter past the limit: a lowering is refused, as before.
        let err = store.lower_wedged("s", Token::new(j).unwrap()).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{url}: {err:?}");
        assert_eq!(store.get("s", "k", None).unwrap().unwrap().value, b"b");
        store.close();
    }
}

/// A counter advanced as far as the jump limit moves the ceiling with it
/// (to the limit + 2^32): the step's base is above the jump, for that scope
/// and for every other. Past the limit, the jump is refused.
#[test]
fn after_an_advance_counter_jump_the_base_is_above_the_jump() {
    let dir = tempfile::tempdir().unwrap();
    for url in backends(&dir) {
        let store = Store::open(&url).unwrap();
        store.next_token("small").unwrap();
        let err = store
            .advance_counter("far", Token::new(JUMP_ROOM + 2).unwrap())
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{url}: {err:?}");
        assert_eq!(store.status("far").unwrap().counter, 0, "{url}");
        let jump = JUMP_ROOM;
        store
            .advance_counter("far", Token::new(jump).unwrap())
            .unwrap();
        // Within the jump limit the ceiling stays (the limit covers it); the
        // next token counts past the limit and raises it, by the headroom.
        assert_eq!(store.next_token("far").unwrap().get(), jump + 1, "{url}");
        let base = jump + 1 + HEADROOM + FAILOVER_STEP;
        assert_eq!(store.failover().unwrap(), base, "{url}");
        for scope in ["far", "small", "never-seen"] {
            assert_eq!(
                store.next_token(scope).unwrap().get(),
                base + 1,
                "{url} {scope}"
            );
        }
        let err = store
            .put("small", "k", b"v", &Fence::new(Token::new(jump).unwrap()))
            .unwrap_err();
        assert!(matches!(err, Error::StaleToken { .. }), "{url}: {err:?}");
        store.close();
    }
}

/// In a store whose jumps are unbounded (`jumps=unbounded`) the jump limit
/// is the maximum token: the step moves everything there, and issuing
/// fails with TOKEN_EXHAUSTED rather than wrapping.
#[test]
fn the_base_saturates_at_the_maximum_token() {
    let dir = tempfile::tempdir().unwrap();
    for url in backends(&dir) {
        let sep = if url.contains('?') { '&' } else { '?' };
        let store = Store::open(&format!("{url}{sep}jumps=unbounded")).unwrap();
        store
            .advance_counter("s", Token::new(Token::MAX.get() - FAILOVER_STEP).unwrap())
            .unwrap();
        assert_eq!(store.failover().unwrap(), Token::MAX.get(), "{url}");
        assert!(
            matches!(store.next_token("s"), Err(Error::TokenExhausted)),
            "{url}"
        );
        assert!(
            matches!(store.next_token("other"), Err(Error::TokenExhausted)),
            "{url}"
        );
        assert_eq!(store.failover().unwrap(), Token::MAX.get(), "{url}");
        store.close();
    }
}

/// The case of the restored backup, in one store (memory: has no backup):
/// a retired scope's floor, then a scope of the same bucket that starts
/// there. The step's base is above both, and every bucket's floor with it.
#[test]
fn a_retirement_and_the_scope_after_it_are_under_the_base() {
    let dir = tempfile::tempdir().unwrap();
    for url in backends(&dir) {
        let store = Store::open(&url).unwrap();
        let jump = 1u64 << 45;
        store
            .advance_counter("s", Token::new(jump).unwrap())
            .unwrap();
        assert!(store.retire("s").unwrap(), "{url}");
        let t = same_bucket(&store, "s", jump);
        let token = store.next_token(&t).unwrap();
        assert_eq!(token.get(), jump + 1, "{url}");
        // The jump set the ceiling to 2^45 + 2^32 (which covers 2^45 + 1),
        // below the jump limit.
        let base = JUMP_ROOM + FAILOVER_STEP;
        assert_eq!(store.failover().unwrap(), base, "{url}");
        let err = store.put(&t, "k", b"late", &Fence::new(token)).unwrap_err();
        assert!(matches!(err, Error::StaleToken { .. }), "{url}: {err:?}");
        assert_eq!(store.next_token(&t).unwrap().get(), base + 1, "{url}");
        // Every floor moved to the base: the retired name starts there too.
        assert_eq!(store.fence_of("s").unwrap(), base, "{url}");
        assert_eq!(store.next_token("s").unwrap().get(), base + 1, "{url}");
        store.close();
    }
}
