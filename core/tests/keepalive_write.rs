//! Writing through a held lease: the guard presents its own scope and
//! token (docs/semantics.md, "Writing through a held lease"), on every
//! backend.

mod support;

use std::time::Duration;

use fencing::{aio, Error, ErrorCode, Op, Store};
use support::{fresh_schema, postgres_test_url, sqlite_url};

const TTL: Duration = Duration::from_secs(60);

/// Every write through the guard lands in the lease's scope, under its token.
fn writes_land_in_the_leases_scope(store: &Store) {
    let guard = store.lease("sc", "a", TTL).unwrap();
    let token = guard.token();
    let r = guard.put("k", b"v").unwrap();
    assert_eq!(r.version, 1);
    let e = store.get("sc", "k", None).unwrap().unwrap();
    assert_eq!((e.value.as_slice(), e.token), (&b"v"[..], token));
    assert_eq!(store.get("other", "k", None).unwrap(), None);
    assert_eq!(store.fence_of("sc").unwrap(), token.get());

    guard
        .apply(vec![Op::put("k2", b"w".to_vec()), Op::delete("k")])
        .unwrap();
    assert_eq!(guard.get("k").unwrap(), None);
    assert_eq!(guard.get("k2").unwrap().unwrap().value, b"w");
    guard.delete("k2").unwrap();
    assert_eq!(store.get("sc", "k2", None).unwrap(), None);
    guard.claim().unwrap();
    assert!(guard.finish(fencing::WorkOutcome::Ok).is_released());
}

/// After a takeover the keep-alive has not seen, the store judges the
/// write: `STALE_TOKEN`, and nothing changes.
fn a_write_after_a_takeover_is_stale_and_changes_nothing(store: &Store) {
    let guard = store.lease("job", "a", TTL).unwrap();
    guard.put("k", b"old").unwrap();
    store.advance_clock(TTL).unwrap();
    let b = store.acquire("job", "b", TTL).unwrap();
    store.claim("job", &b.token.into()).unwrap();
    assert_eq!(guard.lost(), None, "the keep-alive has not seen it");

    let stale = |e: Error| assert_eq!(e.code(), ErrorCode::StaleToken, "{e}");
    stale(guard.put("k", b"new").unwrap_err());
    stale(guard.delete("k").unwrap_err());
    stale(
        guard
            .apply(vec![Op::put("k", b"new".to_vec())])
            .unwrap_err(),
    );
    stale(guard.get("k").unwrap_err());
    let e = store.get("job", "k", None).unwrap().unwrap();
    assert_eq!(e.value, b"old");
    assert_eq!(store.fence_of("job").unwrap(), b.token.get());
}

fn each_backend(check: fn(&Store)) {
    check(&Store::open("memory:?clock=manual").unwrap());
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir.path().join("f.db"));
    check(&Store::open(&format!("{url}?clock=manual")).unwrap());
    if let Some(base) = postgres_test_url() {
        let schema = fresh_schema("through");
        check(&Store::open(&format!("{base}?schema={schema}&clock=manual")).unwrap());
    }
}

#[test]
fn a_write_through_the_guard_lands_in_the_leases_scope() {
    each_backend(writes_land_in_the_leases_scope);
}

#[test]
fn a_write_through_the_guard_after_a_takeover_is_stale() {
    each_backend(a_write_after_a_takeover_is_stale_and_changes_nothing);
}

#[test]
fn a_guard_that_knows_its_loss_writes_nothing() {
    // Without eager fencing an acquire raises no fence: the store alone
    // would still accept the old token after the takeover below.
    let store = Store::open("memory:?eager_fencing=false").unwrap();
    let guard = store.lease("job", "a", Duration::from_millis(300)).unwrap();
    // Another party ends the lease and takes the scope.
    store.release("job", guard.token()).unwrap();
    store.acquire("job", "b", TTL).unwrap();
    let start = std::time::Instant::now();
    while guard.lost().is_none() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let lost = guard.lost().expect("the renewal saw the takeover");
    assert_eq!(lost.code(), ErrorCode::LeaseLost);
    assert_eq!(guard.put("k", b"v").unwrap_err(), lost);
    assert_eq!(guard.delete("k").unwrap_err(), lost);
    assert_eq!(guard.claim().unwrap_err(), lost);
    assert_eq!(guard.get("k").unwrap_err(), lost);
    assert_eq!(store.get("job", "k", None).unwrap(), None);
    assert_eq!(store.fence_of("job").unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_guard_writes_through_its_lease() {
    let store = aio::Store::open("memory:?clock=manual").await.unwrap();
    let guard = store.lease("sc", "a", TTL).await.unwrap();
    guard.put("k", b"v").await.unwrap();
    guard
        .apply(vec![Op::put("k2", b"w".to_vec())])
        .await
        .unwrap();
    assert_eq!(guard.get("k").await.unwrap().unwrap().value, b"v");
    guard.delete("k2").await.unwrap();
    guard.claim().await.unwrap();
    let e = store.get("sc", "k", None).await.unwrap().unwrap();
    assert_eq!(e.token, guard.token());
    assert_eq!(store.get("sc", "k2", None).await.unwrap(), None);

    store.advance_clock(TTL).await.unwrap();
    let b = store.acquire("sc", "b", TTL).await.unwrap();
    store.claim("sc", &b.token.into()).await.unwrap();
    let err = guard.put("k", b"new").await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleToken);
    assert_eq!(
        store.get("sc", "k", None).await.unwrap().unwrap().value,
        b"v"
    );
}
