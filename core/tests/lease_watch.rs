//! A watch on a scope's lease (docs/semantics.md, "Watching a lease"): the
//! lease as it is, then each change (taken, renewed, released, expired), in
//! order, from another handle than the one that makes them; never a state
//! the store did not have; resumed after the listening connection is lost.
//! Nothing here times a call: the lease's TTL is far longer than the waits,
//! so that only a wake-up (or a read the watch makes because it was not
//! woken) can explain a change seen in time.

use std::sync::mpsc;
use std::time::Duration;

use fencing::{Holding, LeaseWatch, Store};

mod support;
use support::{fresh_schema, postgres_test_url, role_granted_before, sqlite_url, OwnCluster};

const TTL: Duration = Duration::from_secs(120);
/// Shorter than the half of a watch's registration life (30 s) that a
/// PostgreSQL watch sleeps when nothing wakes it.
const SEEN_WITHIN: Duration = Duration::from_secs(10);

/// Two handles on one store: the one that changes the lease, the one that
/// watches.
fn pairs() -> Vec<(&'static str, Store, Store, Option<tempfile::TempDir>)> {
    let mut out = Vec::new();
    let memory = Store::open("memory:").unwrap();
    out.push(("memory", memory.clone(), memory, None));
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir.path().join("w.db"));
    out.push((
        "sqlite",
        Store::open(&url).unwrap(),
        Store::open(&url).unwrap(),
        Some(dir),
    ));
    if let Some(url) = postgres_test_url() {
        let url = format!("{url}?schema={}", fresh_schema("watch"));
        out.push((
            "postgres",
            Store::open(&url).unwrap(),
            Store::open(&url).unwrap(),
            None,
        ));
    }
    out
}

fn next(watch: &mut LeaseWatch, backend: &str, what: &str) -> Holding {
    watch
        .next_within(SEEN_WITHIN)
        .unwrap()
        .unwrap_or_else(|| panic!("{backend}: the watch did not see {what}"))
}

/// A watch running in its own thread, each state sent on: so that the
/// changes below come while it sleeps, and only a wake-up (or a read made
/// because none comes) shows them.
struct Watching(mpsc::Receiver<Holding>);

impl Watching {
    fn start(watcher: &Store, scope: &str) -> Watching {
        let watch = watcher.watch(scope).unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Ends with the store (closed) or with the receiver.
            for h in watch.map_while(Result::ok) {
                if tx.send(h).is_err() {
                    break;
                }
            }
        });
        Watching(rx)
    }

    fn next(&self, backend: &str, what: &str) -> Holding {
        self.0
            .recv_timeout(SEEN_WITHIN)
            .unwrap_or_else(|_| panic!("{backend}: the watch did not see {what}"))
    }

    /// Lets the watch read and fall asleep before the next change.
    fn settle(&self) {
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn holder_token(h: &Holding) -> Option<(String, u64)> {
    h.lease.as_ref().map(|l| (l.holder.clone(), l.token.get()))
}

#[test]
fn a_watch_sees_the_lease_then_each_change_in_order() {
    for (backend, changer, watcher, _dir) in pairs() {
        let watch = Watching::start(&watcher, "s");
        assert_eq!(watch.next(backend, "the start").lease, None, "{backend}");

        watch.settle();
        let a = changer.acquire("s", "a", TTL).unwrap();
        let seen = watch.next(backend, "the acquire");
        assert_eq!(
            holder_token(&seen),
            Some(("a".into(), a.token.get())),
            "{backend}"
        );
        assert_eq!(seen.scope, "s");
        let first_expiry = seen.lease.unwrap().expires_at;

        watch.settle();
        changer.renew("s", a.token, TTL).unwrap();
        let renewed = watch.next(backend, "the renewal").lease.unwrap();
        assert_eq!(renewed.token, a.token, "{backend}");
        assert!(renewed.expires_at > first_expiry, "{backend}");

        watch.settle();
        assert!(changer.release("s", a.token).unwrap());
        assert_eq!(watch.next(backend, "the release").lease, None, "{backend}");

        // An expiry is seen without anyone touching the store.
        watch.settle();
        let b = changer
            .acquire("s", "b", Duration::from_millis(300))
            .unwrap();
        let seen = watch.next(backend, "the second holder");
        assert_eq!(
            holder_token(&seen),
            Some(("b".into(), b.token.get())),
            "{backend}"
        );
        assert_eq!(watch.next(backend, "the expiry").lease, None, "{backend}");

        // Nothing changes: nothing is yielded.
        assert!(
            watch.0.recv_timeout(Duration::from_millis(300)).is_err(),
            "{backend}"
        );
    }
}

/// Changes as fast as they come: the watch yields only states the store
/// had, each differing from the one before, tokens never going back; and
/// when each change waits until the watch saw the one before, it sees every
/// holder.
#[test]
fn a_watch_never_invents_a_state_and_sees_every_holder_it_is_given_time_for() {
    for (backend, changer, watcher, _dir) in pairs() {
        let mut watch = watcher.watch("s").unwrap();
        assert_eq!(next(&mut watch, backend, "the start").lease, None);
        let (tx, rx) = mpsc::channel::<Holding>();
        let collector = std::thread::spawn(move || {
            for h in watch {
                let done = h
                    .as_ref()
                    .is_ok_and(|h| h.lease.as_ref().is_some_and(|l| l.holder == "last"));
                tx.send(h.unwrap()).unwrap();
                if done {
                    break;
                }
            }
        });
        let mut issued = Vec::new();
        for i in 0..30 {
            let lease = changer.acquire("s", &format!("h{i}"), TTL).unwrap();
            issued.push((lease.holder.clone(), lease.token.get()));
            if i % 3 == 0 {
                changer.renew("s", lease.token, TTL).unwrap();
            }
            changer.release("s", lease.token).unwrap();
        }
        let last = changer.acquire("s", "last", TTL).unwrap();
        issued.push(("last".into(), last.token.get()));
        collector.join().unwrap();
        let seen: Vec<Holding> = rx.iter().collect();
        let mut top = 0;
        for pair in seen.windows(2) {
            assert_ne!(
                pair[0], pair[1],
                "{backend}: a state yielded twice in a row"
            );
        }
        for h in &seen {
            if let Some((holder, token)) = holder_token(h) {
                assert!(
                    issued.contains(&(holder.clone(), token)),
                    "{backend}: invented {holder} {token}"
                );
                assert!(token >= top, "{backend}: token {token} after {top}");
                top = token;
            }
        }

        // In step: each change waits for the watch to see the last one.
        let watch = Watching::start(&watcher, "t");
        watch.next(backend, "the start");
        for i in 0..3 {
            watch.settle();
            let lease = changer.acquire("t", &format!("s{i}"), TTL).unwrap();
            let seen = watch.next(backend, "a holder in step");
            assert_eq!(
                holder_token(&seen),
                Some((format!("s{i}"), lease.token.get())),
                "{backend}"
            );
            watch.settle();
            changer.release("t", lease.token).unwrap();
            assert_eq!(
                watch.next(backend, "a release in step").lease,
                None,
                "{backend}"
            );
        }
    }
}

/// Closing the store ends a watch that sleeps, and a waiter, at once:
/// without it, a memory: watch would sleep 15 s and the waiter the TTL.
#[test]
fn closing_the_store_ends_a_sleeping_watch_and_waiter() {
    for (backend, changer, watcher, _dir) in pairs() {
        let held = changer.acquire("c", "h", TTL).unwrap();
        let mut watch = watcher.watch("c").unwrap();
        next(&mut watch, backend, "the start");
        let (tx, rx) = mpsc::channel();
        let (w, tx2) = (watcher.clone(), tx.clone());
        std::thread::spawn(move || tx.send(watch.next().map(|r| r.map(|_| ()))).unwrap());
        std::thread::spawn(move || {
            let waited = w.acquire_wait("c", "w", TTL, Duration::from_secs(100));
            tx2.send(Some(waited.map(drop))).unwrap();
        });
        std::thread::sleep(Duration::from_millis(300));
        watcher.close();
        for _ in 0..2 {
            let ended = rx
                .recv_timeout(SEEN_WITHIN)
                .expect("still sleeping after the close");
            assert_eq!(
                ended.unwrap().unwrap_err().code(),
                fencing::ErrorCode::Closed,
                "{backend}"
            );
        }
        if backend != "memory" {
            changer.release("c", held.token).unwrap();
        }
    }
}

#[test]
fn a_watch_refuses_a_bad_scope_and_a_closed_store() {
    let store = Store::open("memory:").unwrap();
    assert_eq!(
        store.watch("").err().unwrap().code(),
        fencing::ErrorCode::InvalidArgument
    );
    let mut watch = store.watch("s").unwrap();
    store.close();
    assert_eq!(
        watch.next().unwrap().unwrap_err().code(),
        fencing::ErrorCode::Closed
    );
    assert!(watch.next().is_none(), "a watch ends after an error");
    assert!(store.watch("s").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_watch_is_a_stream_and_a_dropped_next_loses_no_change() {
    let store = fencing::aio::Store::open("memory:").await.unwrap();
    let mut watch = store.watch("s").await.unwrap();
    assert_eq!(watch.next().await.unwrap().lease, None);
    // Nothing changes: the next() is dropped by the timeout.
    assert!(
        tokio::time::timeout(Duration::from_millis(100), watch.next())
            .await
            .is_err()
    );
    let lease = store.acquire("s", "a", TTL).await.unwrap();
    let seen = tokio::time::timeout(SEEN_WITHIN, watch.next())
        .await
        .expect("the change after a dropped next()")
        .unwrap();
    assert_eq!(seen.lease.unwrap().token, lease.token);
    store.release("s", lease.token).await.unwrap();
    // The same watch as a Stream.
    let item = tokio::time::timeout(
        SEEN_WITHIN,
        std::future::poll_fn(|cx| {
            futures_core::Stream::poll_next(std::pin::Pin::new(&mut watch), cx)
        }),
    )
    .await
    .unwrap();
    assert_eq!(item.unwrap().unwrap().lease, None);
}

/// PostgreSQL: the listening connection killed, then the server restarted,
/// under a watch: it goes on, and sees the changes after each.
#[test]
fn a_postgres_watch_resumes_after_its_listener_is_killed_and_the_server_restarts() {
    let Some((cluster, url)) = OwnCluster::start() else {
        return;
    };
    let schema = fresh_schema("watchkill");
    let store_url = format!("{url}?schema={schema}");
    let (changer, watcher) = (
        Store::open(&store_url).unwrap(),
        Store::open(&store_url).unwrap(),
    );
    let watch = Watching::start(&watcher, "s");
    assert_eq!(watch.next("postgres", "the start").lease, None);
    watch.settle();
    let a = changer.acquire("s", "a", TTL).unwrap();
    assert_eq!(
        watch.next("postgres", "the acquire").lease.unwrap().token,
        a.token
    );
    watch.settle();

    let killed: i64 = postgres::Client::connect(&url, postgres::NoTls)
        .unwrap()
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = left('fencing listener ' || $1, 63)",
            &[&schema],
        )
        .unwrap()
        .get(0);
    assert_eq!(killed, 1, "one listening connection");
    assert!(changer.release("s", a.token).unwrap());
    assert_eq!(
        watch.next("postgres", "the release after the kill").lease,
        None
    );
    watch.settle();

    cluster.run("restart");
    let b = (0..100)
        .find_map(|_| match changer.acquire("s", "b", TTL) {
            Ok(lease) => Some(lease),
            Err(_) => {
                std::thread::sleep(Duration::from_millis(100));
                None
            }
        })
        .expect("the store answers after the restart");
    let seen = watch.next("postgres", "the acquire after the restart");
    assert_eq!(holder_token(&seen), Some(("b".into(), b.token.get())));
}

/// A library role granted before `watch` existed (docs/postgres.md: run the
/// grant again after an upgrade) still watches: unregistered, reading the
/// lease through `status` after the back-off.
#[test]
fn a_postgres_role_granted_before_watches_existed_still_watches() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("watchgrant");
    let changer = Store::open(&format!("{base}?schema={schema}")).unwrap();
    let (role, as_role) = role_granted_before(&base, &schema, &["watch(text, bigint)"]);
    let watcher = Store::open(&as_role).unwrap();
    let watch = Watching::start(&watcher, "s");
    assert_eq!(watch.next("postgres", "the start").lease, None);
    watch.settle();
    let a = changer.acquire("s", "a", TTL).unwrap();
    assert_eq!(
        watch.next("postgres", "the acquire").lease.unwrap().token,
        a.token
    );
    drop(watch);
    watcher.close();
    changer.close();
    postgres::Client::connect(&base, postgres::NoTls)
        .unwrap()
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE; DROP ROLE {role};"))
        .unwrap();
}
