//! The async face (`fencing::aio`) inside tokio programs: many tasks on one
//! store, on every backend; a call that blocks in the backend never blocks
//! the executor; a kept-alive lease's loss can be awaited; guards and
//! stores dropped on runtime threads neither panic nor block.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fencing::{aio, Error, ErrorCode, Fence};

mod support;
use support::{fresh_schema, postgres_test_url, sqlite_url};

/// Far above anything these tests wait for: reaching it means a hang.
const HANG: Duration = Duration::from_secs(30);

fn urls(dir: &std::path::Path) -> Vec<String> {
    let mut urls = vec!["memory:".to_owned(), sqlite_url(&dir.join("aio.db"))];
    if let Some(base) = postgres_test_url() {
        urls.push(format!("{base}?schema={}", fresh_schema("aio")));
    }
    urls
}

/// 32 tasks take tokens and write through one handle: tokens distinct, every
/// write lands, the stale ones are told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_share_one_store_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(dir.path()) {
        let store = aio::Store::open(&url).await.unwrap();
        let tasks: Vec<_> = (0..32)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    let mut mine = Vec::new();
                    for j in 0..5 {
                        let token = store.next_token("shared").await.unwrap();
                        let key = format!("{i}-{j}");
                        store
                            .put(
                                "log",
                                &key,
                                token.to_string().as_bytes(),
                                &Fence::new(token),
                            )
                            .await
                            .map(drop)
                            .or_else(|e| match e {
                                // A newer token got there first: told, never overwritten.
                                Error::StaleToken { .. } => Ok(()),
                                e => Err(e),
                            })
                            .unwrap();
                        mine.push(token.get());
                    }
                    mine
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 160, "{url}: a token was handed out twice");
        assert_eq!(store.status("shared").await.unwrap().counter, 160);
        store.close().await;
    }
}

/// On a one-thread runtime, a put that blocks in SQLite (another process's
/// connection holds the write lock) must leave the executor free: a ticker
/// task keeps running, and only then is the lock let go. Were the put
/// blocking the thread, the ticker could not run, the lock would never be
/// let go and the put would fail with BACKEND at its busy timeout.
#[test]
fn a_call_that_blocks_in_the_backend_does_not_block_the_executor() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.db");
    let url = format!("{}?busy_timeout_ms=10000", sqlite_url(&path));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = aio::Store::open(&url).await.unwrap();
        let token = store.next_token("s").await.unwrap();
        let holder = rusqlite::Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();

        let put = tokio::spawn({
            let store = store.clone();
            async move { store.put("s", "k", b"v", &Fence::new(token)).await }
        });
        let ticks = Arc::new(AtomicU64::new(0));
        let ticker = tokio::spawn({
            let ticks = ticks.clone();
            async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    ticks.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        tokio::time::timeout(HANG, async {
            while ticks.load(Ordering::SeqCst) < 50 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("the executor was blocked");
        assert!(!put.is_finished(), "the put should still wait for the lock");
        holder.execute_batch("COMMIT").unwrap();
        let receipt = tokio::time::timeout(HANG, put).await.unwrap().unwrap();
        assert_eq!(receipt.unwrap().version, 1);
        ticker.abort();
    });
}

/// A lease kept alive across many renewals while other tasks run; then its
/// loss, awaited: the clock jumps past the expiry and another holder takes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_alive_lease_and_its_awaited_loss() {
    let store = aio::Store::open("memory:?clock=manual").await.unwrap();
    let ttl = Duration::from_secs(3);
    let guard = store.lease("job", "a", ttl).await.unwrap();
    let token = guard.token();
    let others = tokio::spawn({
        let store = store.clone();
        async move {
            for _ in 0..200 {
                store.next_token("elsewhere").await.unwrap();
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });
    // Past its TTL in real time: only renewals keep it.
    tokio::time::sleep(ttl + Duration::from_secs(1)).await;
    guard.check().unwrap();
    assert!(store.metrics().renewals >= 1);
    others.await.unwrap();
    let held = store.acquire("job", "b", ttl).await.unwrap_err();
    assert_eq!(held.code(), ErrorCode::LeaseHeld);

    store.advance_clock(Duration::from_secs(5)).await.unwrap();
    let b = store
        .acquire("job", "b", Duration::from_secs(60))
        .await
        .unwrap();
    let lost = tokio::time::timeout(HANG, guard.lost())
        .await
        .expect("loss never came");
    assert_eq!(lost.code(), ErrorCode::LeaseLost);
    assert!(guard.is_lost());
    assert!(b.token > token);
    // Releasing a lost guard leaves the new holder alone.
    assert!(!guard.release().await.unwrap());
    assert_eq!(
        store.status("job").await.unwrap().lease.map(|l| l.holder),
        Some("b".to_owned())
    );
}

/// Guards, async stores and blocking stores dropped on runtime threads, and
/// blocking calls made there: no panic ("cannot start a runtime from within
/// a runtime", "cannot drop a runtime in a context where blocking is not
/// allowed"), on every backend.
#[tokio::test(flavor = "current_thread")]
async fn blocking_calls_and_drops_inside_the_runtime_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(dir.path()) {
        let blocking = fencing::Store::open(&url).unwrap();
        blocking.next_token("b").unwrap();
        let guard = blocking
            .lease("held", "x", Duration::from_secs(60))
            .unwrap();
        drop(guard);
        drop(blocking.clone());
        drop(blocking);

        let store = aio::Store::open(&url).await.unwrap();
        // The blocking guard's release runs on a thread of its own: wait.
        let guard = tokio::time::timeout(HANG, async {
            loop {
                match store.lease("held", "y", Duration::from_secs(60)).await {
                    Err(Error::LeaseHeld { .. }) => {
                        tokio::time::sleep(Duration::from_millis(5)).await
                    }
                    other => break other,
                }
            }
        })
        .await
        .expect("the dropped blocking guard's lease was never released")
        .unwrap();
        drop(guard); // its release runs on the blocking pool
        let again = tokio::time::timeout(HANG, async {
            loop {
                match store.acquire("held", "z", Duration::from_secs(60)).await {
                    Err(Error::LeaseHeld { .. }) => {
                        tokio::time::sleep(Duration::from_millis(5)).await
                    }
                    other => break other,
                }
            }
        })
        .await
        .expect("the dropped guard's lease was never released");
        again.unwrap();
        drop(store);
    }
}

/// A caller that gives up on a waiting acquire (its future dropped by a
/// timeout) leaves no lease behind: the wait stops, or a lease that arrives
/// after it left is released at once, so the next caller gets the scope
/// instead of waiting out the quitter's TTL (docs/semantics.md, "Giving up a call").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_acquire_takes_no_lease_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let mut given_up = 0;
    for url in urls(dir.path()) {
        let store = aio::Store::open(&url).await.unwrap();
        let scope = "quitter";
        let first = store
            .acquire(scope, "first", Duration::from_millis(300))
            .await
            .unwrap();
        // Gives up long before the first lease expires.
        let quit = tokio::time::timeout(
            Duration::from_millis(50),
            store.acquire_wait(
                scope,
                "quitter",
                Duration::from_secs(60),
                Duration::from_secs(5),
            ),
        )
        .await;
        assert!(quit.is_err(), "{url}: the wait was meant to be given up");
        // A plain acquire given up once started: the lease it took when its
        // call ran is released, not held for its 60 s.
        // (It may finish within its first poll: then it is the caller's, and
        // the next scope tries again.)
        let mut other = None;
        for i in 0..100 {
            let name = format!("other-{i}");
            let call = store.acquire(&name, "quitter", Duration::from_secs(60));
            if tokio::time::timeout(Duration::ZERO, call).await.is_err() {
                other = Some(name);
                break;
            }
        }
        // On memory a call may always finish within the first poll; SQLite's
        // and PostgreSQL's take long enough to be given up.
        let Some(other) = other else {
            assert!(url.starts_with("memory:"), "{url}: no acquire was given up");
            store.close().await;
            continue;
        };
        given_up += 1;
        let mut released = false;
        for _ in 0..500 {
            let status = store.status(&other).await.unwrap();
            if status.lease.is_none() && status.counter == 1 {
                released = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(released, "{url}: the given-up acquire kept its lease");
        let next = store
            .acquire_wait(
                scope,
                "next",
                Duration::from_secs(60),
                Duration::from_secs(5),
            )
            .await
            .unwrap_or_else(|e| panic!("{url}: the quitter kept the lease: {e}"));
        assert!(next.token > first.token, "{url}");
        let holder = store.status(scope).await.unwrap().lease.unwrap().holder;
        assert_eq!(holder, "next", "{url}");
        store.close().await;
    }
    assert!(given_up >= 1, "no backend gave up a plain acquire");
}

/// The instant the test could only hit by luck: the lease arrives
/// (sent to a future still alive) and the future is dropped before it is
/// polled again. Polled by hand, so the order is certain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_that_arrived_just_before_its_future_was_dropped_is_released() {
    let store = aio::Store::open("memory:").await.unwrap();
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    // The first poll starts the blocking call; on a busy machine that call
    // can finish before the poll looks for its answer, and the future is
    // ready at once: then try again on another scope (a first poll that
    // returns the lease is an ordinary acquire, released here).
    let scopes: Vec<String> = (0..100).map(|i| format!("late-{i}")).collect();
    let mut tries = scopes.iter();
    let (scope, acquiring) = loop {
        let scope = tries
            .next()
            .expect("the first poll never left the call running");
        let mut acquiring = Box::pin(store.acquire(scope, "quitter", Duration::from_secs(3600)));
        match acquiring.as_mut().poll(&mut cx) {
            std::task::Poll::Pending => break (scope, acquiring),
            std::task::Poll::Ready(lease) => {
                drop(acquiring);
                store.release(scope, lease.unwrap().token).await.unwrap();
            }
        }
    };
    // The blocking call took the lease and sent it; nobody polled since.
    let held = || store.blocking().status(scope).unwrap().lease.is_some();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !held() {
        assert!(
            std::time::Instant::now() < deadline,
            "the acquire never ran"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    drop(acquiring);
    // Bounded far above the release's few microseconds: a hang, not a speed claim.
    while held() {
        assert!(
            std::time::Instant::now() < deadline,
            "the quitter kept the lease"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// `lease_wait` waits for a lease and keeps it alive; given up (its future
/// dropped) it stops waiting and takes no lease, on every backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waited_lease_is_kept_and_a_dropped_wait_takes_none() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(dir.path()) {
        let store = aio::Store::open(&url).await.unwrap();
        let scope = "waited";
        let first = store
            .acquire(scope, "first", Duration::from_millis(300))
            .await
            .unwrap();
        let quit = tokio::time::timeout(
            Duration::from_millis(50),
            store.lease_wait(
                scope,
                "quitter",
                Duration::from_secs(60),
                Duration::from_secs(5),
            ),
        )
        .await;
        assert!(quit.is_err(), "{url}: the wait was meant to be given up");
        // The quitter is gone: the next waiter gets the lease once the
        // first one's 300 ms run out, and keeps it.
        let guard = store
            .lease_wait(
                scope,
                "next",
                Duration::from_secs(60),
                Duration::from_secs(5),
            )
            .await
            .unwrap_or_else(|e| panic!("{url}: the quitter kept the lease: {e}"));
        // The next token after the first's: the quitter never held one.
        assert_eq!(guard.token().get(), first.token.get() + 1, "{url}");
        guard.check().unwrap();
        let holder = store.status(scope).await.unwrap().lease.unwrap().holder;
        assert_eq!(holder, "next", "{url}");
        // A wait that runs out is TIMEOUT, with no lease.
        let timed_out = store
            .lease_wait(
                scope,
                "late",
                Duration::from_secs(60),
                Duration::from_millis(100),
            )
            .await
            .err()
            .expect("the lease is held: the wait must time out");
        assert_eq!(timed_out.code(), ErrorCode::Timeout, "{url}");
        assert!(guard.release().await.unwrap(), "{url}");
        assert!(store.status(scope).await.unwrap().lease.is_none(), "{url}");
        store.close().await;
    }
}

/// `keep_alive` renews a lease the caller acquired past its TTL, and its
/// `lost()` resolves when the lease is taken from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_acquired_then_kept_alive_outlives_its_ttl() {
    let store = aio::Store::open("memory:").await.unwrap();
    let ttl = Duration::from_secs(1);
    let lease = store.acquire("kept", "a", ttl).await.unwrap();
    let token = lease.token;
    let guard = store.keep_alive(lease);
    // Past its TTL in real time: only renewals keep it.
    tokio::time::sleep(ttl * 2).await;
    guard.check().unwrap();
    assert!(store.metrics().renewals >= 1);
    let held = store.acquire("kept", "b", ttl).await.unwrap_err();
    assert_eq!(held.code(), ErrorCode::LeaseHeld);
    assert!(guard.release().await.unwrap());

    // Released behind the guard's back: its next renewal finds it gone.
    let lease = store.acquire("kept", "c", ttl).await.unwrap();
    assert!(lease.token > token);
    let guard = store.keep_alive(lease.clone());
    assert!(store.release("kept", lease.token).await.unwrap());
    let lost = tokio::time::timeout(HANG, guard.lost())
        .await
        .expect("loss never came");
    assert_eq!(lost.code(), ErrorCode::LeaseLost);
    assert!(guard.check().is_err());
}

/// The deploy-time and recovery calls on the blocking pool: `migrate`
/// creates a store's schema, `failover` moves every token past the base.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_and_failover_run_off_the_executor() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir.path().join("migrated.db"));
    aio::Store::migrate(&url).await.unwrap();
    assert!(dir.path().join("migrated.db").exists());
    let bad = aio::Store::migrate("nosuch:x").await.unwrap_err();
    assert_eq!(bad.code(), ErrorCode::InvalidArgument);

    let store = aio::Store::open(&url).await.unwrap();
    let old = store.next_token("s").await.unwrap();
    let base = store.failover().await.unwrap();
    assert!(base >= old.get());
    let stale = store
        .put("s", "k", b"v", &Fence::new(old))
        .await
        .unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleToken);
    assert!(store.next_token("s").await.unwrap().get() > base);
    store.close().await;
}

/// `etcd_check` is the etcd backend's; on any other store it is refused.
#[cfg(feature = "etcd")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_check_on_another_backend_is_refused() {
    let store = aio::Store::open("memory:").await.unwrap();
    let token = store.next_token("s").await.unwrap();
    let refused = store.etcd_check("s", &Fence::new(token)).await.unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidArgument);
}

/// On PostgreSQL the async store's writes and reads run on their caller's
/// task (docs/postgres.md, "Async Rust"): with the runtime's one blocking
/// thread taken, they still finish. Through the blocking pool they would
/// wait for that thread.
#[test]
fn postgres_writes_and_reads_need_no_thread_of_the_blocking_pool() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(1)
        .build()
        .unwrap();
    runtime.block_on(async {
        let url = format!("{base}?schema={}", fresh_schema("aio_task"));
        let store = aio::Store::open(&url).await.unwrap();
        let fence = Fence::new(store.next_token("s").await.unwrap());
        // A connection made, and idle for the calls below.
        store.put("s", "k", b"warm", &fence).await.unwrap();
        let (free, freed) = std::sync::mpsc::channel::<()>();
        let taken = tokio::task::spawn_blocking(move || freed.recv_timeout(HANG));
        let calls = tokio::time::timeout(Duration::from_secs(10), async {
            let put = store.put("s", "k", b"v", &fence).await.unwrap();
            let got = store.get("s", "k", Some(&fence)).await.unwrap().unwrap();
            let plain = store.get("s", "k", None).await.unwrap().unwrap();
            let ops = vec![fencing::Op::put("a", b"1"), fencing::Op::put("b", b"2")];
            let applied = store.apply("s", &fence, ops).await.unwrap();
            let deleted = store.delete("s", "a", &fence).await.unwrap();
            (put, got, plain, applied, deleted)
        })
        .await;
        free.send(()).unwrap();
        taken.await.unwrap().unwrap();
        let (put, got, plain, applied, deleted) =
            calls.expect("an async call waited for the blocking pool's thread");
        assert_eq!((put.version, put.token), (2, fence.token));
        assert_eq!((got.value.as_slice(), got.version), (&b"v"[..], 2));
        assert_eq!(plain, got);
        assert_eq!(
            applied.iter().map(|r| r.version).collect::<Vec<_>>(),
            [1, 1]
        );
        assert_eq!((deleted.version, deleted.token), (0, fence.token));
        store.close().await;
    });
}

/// A caller that gives up on a PostgreSQL write running on its task (its
/// future dropped while the call waits for a row another session holds)
/// takes the call's connection out of the pool: with a pool of one, the
/// next write connects afresh instead of finding none free. Each call is
/// timed once, and a stale write is refused, logged and recorded in the
/// store as on the blocking pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_up_postgres_write_leaves_its_pool_usable() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("aio_drop");
    let url = format!("{base}?schema={schema}&pool_size=1");
    let store = aio::Store::open(&url).await.unwrap();
    let old = Fence::new(store.next_token("s").await.unwrap());
    let fence = Fence::new(store.next_token("s").await.unwrap());
    store.put("s", "k", b"1", &fence).await.unwrap();

    let (locked, is_locked) = std::sync::mpsc::channel();
    let (unlock, until_unlocked) = std::sync::mpsc::channel::<()>();
    let locker = std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&base, postgres::NoTls).unwrap();
        let mut tx = c.transaction().unwrap();
        let sql = format!("SELECT 1 FROM {schema}.scopes WHERE scope = 's' FOR UPDATE");
        tx.query(&sql, &[]).unwrap();
        locked.send(()).unwrap();
        let _ = until_unlocked.recv_timeout(HANG);
        tx.rollback().unwrap();
    });
    is_locked.recv_timeout(HANG).unwrap();
    let given_up = tokio::time::timeout(
        Duration::from_millis(300),
        store.put("s", "k", b"2", &fence),
    )
    .await;
    assert!(given_up.is_err(), "the put was meant to wait for the row");
    unlock.send(()).unwrap();
    locker.join().unwrap();

    let next = tokio::time::timeout(HANG, store.put("s", "other", b"3", &fence))
        .await
        .expect("the given-up call's connection was never returned or dropped")
        .unwrap();
    assert_eq!(next.version, 1);
    let stale = store.put("s", "k", b"old", &old).await.unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleToken, "{stale}");

    let metrics = store.metrics();
    let puts = metrics.calls.iter().find(|c| c.op == "put").unwrap().count;
    assert_eq!(puts, 4, "each put timed once");
    assert_eq!(metrics.writes_accepted, 2);
    assert_eq!(metrics.rejections.len(), 1);
    let recorded = store.events(Some("s"), 10).await.unwrap().rejections;
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0].presented, old.token);
    store.close().await;
}

/// A write or read through the async store is timed once, on every
/// backend and on a closed store too: the calling task's path (PostgreSQL)
/// starts its timer only once it runs the call, and leaves the call to the
/// blocking pool (which times it) otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_async_call_is_timed_once_on_every_backend_and_when_closed() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(dir.path()) {
        let store = aio::Store::open(&url).await.unwrap();
        let fence = Fence::new(store.next_token("s").await.unwrap());
        store.put("s", "k", b"v", &fence).await.unwrap();
        store.get("s", "k", None).await.unwrap();
        store.close().await;
        let err = store.put("s", "k", b"w", &fence).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::Closed, "{url}");
        let err = store.get("s", "k", None).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::Closed, "{url}");
        let calls = store.metrics().calls;
        let count = |op: &str| calls.iter().find(|c| c.op == op).map_or(0, |c| c.count);
        assert_eq!((count("put"), count("get")), (2, 2), "{url}");
    }
}
