//! What the PostgreSQL backend promises whatever the server or its settings
//! do (docs/postgres.md, "Connections and failures" and "Session settings"):
//! every call returns within its deadline, and what safety needs is pinned
//! per session. Real servers only; needs `FENCING_TEST_PG_URL` (see
//! `scripts/pg-cluster`). The reload test starts a server of its own.

use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use fencing::{Error, ErrorCode, Store};

mod support;
use support::{fresh_schema, postgres_test_url, OwnCluster};

/// Far above any deadline these tests configure: reaching it means a hang.
const HANG: Duration = Duration::from_secs(30);

fn client(url: &str) -> postgres::Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

/// Runs `f` on a thread and waits at most `HANG` for it: `None` if it hung.
fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(HANG).ok()
}

fn signal(sig: &str, pid: i32) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid}");
}

/// The shared server's URL for a test that stops one of its processes with
/// kill(1); `None` (skipped) on Windows, where that server is a process of
/// the Linux host the test cannot signal.
fn url_to_stop() -> Option<String> {
    if cfg!(windows) {
        eprintln!("skipped: stops a server process with kill(1) (unix)");
        return None;
    }
    postgres_test_url()
}

/// The server processes of the sessions named `application_name`.
fn sessions(url: &str, application_name: &str) -> Vec<i32> {
    client(url)
        .query(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1",
            &[&application_name],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// A PostgreSQL backend process stopped with SIGSTOP (a one-sided
/// partition: its kernel still ACKs TCP); continued when dropped, so a
/// failing test never leaves it stopped.
struct Stopped(i32);

impl Stopped {
    fn new(pid: i32) -> Stopped {
        signal("-STOP", pid);
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

#[test]
fn a_stopped_backend_fails_the_call_with_backend_instead_of_hanging() {
    let Some(base) = url_to_stop() else {
        return;
    };
    let schema = fresh_schema("sigstop");
    // The schema first, without the short limit: migrating a fresh schema
    // on a loaded machine can take longer than the 300 ms this test needs
    // for one call.
    fencing::migrate(&format!("{base}?schema={schema}")).unwrap();
    let store = Store::open(&format!(
        "{base}?schema={schema}&pool_size=1&call_timeout_ms=300&application_name={schema}"
    ))
    .unwrap();
    let lease = store
        .acquire("s", "holder", Duration::from_secs(60))
        .unwrap();
    // The one pooled connection is the only session with this name.
    let pids = sessions(&base, &schema);
    assert_eq!(pids.len(), 1, "{pids:?}");
    let stopped = Stopped::new(pids[0]);

    let s = store.clone();
    let renewed = bounded(move || s.renew("s", lease.token, Duration::from_secs(60)))
        .expect("renew hung on a stopped backend");
    let err = renewed.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Backend, "{err}");
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(err.to_string().contains("outcome is unknown"), "{err}");

    // The timed-out connection is gone: the next call connects afresh and
    // works even while the old backend is still stopped.
    let s = store.clone();
    let token = bounded(move || s.next_token("other"))
        .expect("next_token hung")
        .unwrap();
    assert_eq!(token.get(), 1);

    drop(stopped);
    let s = store.clone();
    let renewed = bounded(move || s.renew("s", lease.token, Duration::from_secs(60)))
        .expect("renew hung after SIGCONT")
        .unwrap();
    assert_eq!(renewed.token, lease.token);
    store.close();
}

/// The async store's write on its caller's task (docs/postgres.md, "Async
/// Rust") keeps the call's deadline on a runtime without timers: the timer
/// is the backend runtime's, and nothing panics in the caller's runtime.
/// The timed-out connection leaves the pool, which serves the next call.
#[test]
fn an_async_write_on_a_stopped_backend_times_out_on_a_runtime_without_timers() {
    let Some(base) = url_to_stop() else {
        return;
    };
    let schema = fresh_schema("aio_sigstop");
    fencing::migrate(&format!("{base}?schema={schema}")).unwrap();
    let url =
        format!("{base}?schema={schema}&pool_size=1&call_timeout_ms=300&application_name={schema}");
    let (err, after) = bounded(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        runtime.block_on(async {
            let store = fencing::aio::Store::open(&url).await.unwrap();
            let fence = fencing::Fence::new(store.next_token("s").await.unwrap());
            store.put("s", "k", b"before", &fence).await.unwrap();
            // The blocking client runs a runtime of its own: not on this one.
            let pids = std::thread::spawn(move || sessions(&base, &schema))
                .join()
                .unwrap();
            assert_eq!(pids.len(), 1, "{pids:?}");
            let stopped = Stopped::new(pids[0]);
            let err = store.put("s", "k", b"during", &fence).await.unwrap_err();
            // A new connection, while the old backend is still stopped.
            let after = store.put("s", "other", b"after", &fence).await;
            drop(stopped);
            store.close().await;
            (err, after)
        })
    })
    .expect("an async put hung on a stopped backend");
    assert_eq!(err.code(), ErrorCode::Backend, "{err}");
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(err.to_string().contains("outcome is unknown"), "{err}");
    assert_eq!(after.unwrap().version, 1);
}

#[test]
fn a_stopped_server_fails_connecting_with_backend_instead_of_hanging() {
    let Some((cluster, base)) = OwnCluster::start() else {
        return;
    };
    let url = format!("{base}?schema=stopped&call_timeout_ms=300");
    fencing::migrate(&format!("{base}?schema=stopped")).unwrap();
    Store::open(&url).unwrap().close();
    // The kernel still completes the TCP handshake for a stopped postmaster;
    // the startup reply never comes (connect_timeout covers only the former).
    let stopped = Stopped::new(cluster.postmaster_pid());
    let u = url.clone();
    let err = bounded(move || Store::open(&u).map(|s| s.close()))
        .expect("open hung on a stopped server")
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Backend, "{err}");
    assert!(err.to_string().contains("timed out"), "{err}");
    drop(stopped);
    let store = bounded(move || Store::open(&url))
        .expect("open hung after SIGCONT")
        .unwrap();
    assert_eq!(store.next_token("s").unwrap().get(), 1);
    store.close();
}

#[test]
fn a_healthy_server_cancels_a_lock_wait_itself_whatever_the_url_says() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("lockwait");
    fencing::migrate(&format!("{base}?schema={schema}")).unwrap();
    // Startup options asking for no limits at all: the session pin wins.
    let store = Store::open(&format!(
        "{base}?schema={schema}&call_timeout_ms=3000\
         &options=-c%20lock_timeout%3D0%20-c%20statement_timeout%3D0"
    ))
    .unwrap();
    let token = store.next_token("held").unwrap();
    // Another transaction holds the scope's row (as fencing.check does).
    let mut other = client(&base);
    let mut tx = other.transaction().unwrap();
    tx.execute(
        &format!("SELECT {schema}.check('held', $1)"),
        &[&(token.get() as i64)],
    )
    .unwrap();
    let s = store.clone();
    let err = bounded(move || s.acquire("held", "h", Duration::from_secs(10)))
        .expect("acquire hung behind a lock")
        .unwrap_err();
    // The server's own limit (a fifth below the deadline) answered, so the
    // outcome is known: rolled back. Both limits are equal; either may fire.
    assert_eq!(err.code(), ErrorCode::Backend, "{err}");
    let text = err.to_string();
    assert!(text.contains("57014") || text.contains("55P03"), "{err}");
    tx.rollback().unwrap();
    let lease = store.acquire("held", "h", Duration::from_secs(10)).unwrap();
    assert_eq!(lease.token.get(), token.get() + 1);
    store.close();
}

#[test]
fn bad_time_limit_options_are_invalid_and_never_show_the_password() {
    let Some(_) = postgres_test_url() else {
        return;
    };
    let base = "postgres://u:sekrit@127.0.0.1:1/db";
    for bad in [
        "call_timeout_ms=0",
        "call_timeout_ms=9",
        "call_timeout_ms=-5",
        "call_timeout_ms=x",
        "call_timeout_ms=",
        "call_timeout_ms=1.5",
        "call_timeout_ms=3600001",
        "call_timeout_ms=99999999999999999999",
        "call_timeout_ms=500&call_timeout_ms=500",
        "tcp_user_timeout=x",
        "keepalives=maybe",
    ] {
        let err = Store::open(&format!("{base}?{bad}")).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{bad}: {err}");
        assert!(!err.to_string().contains("sekrit"), "{bad}: {err}");
    }
    // A good value is taken: the open gets as far as connecting (nothing
    // listens on port 1).
    for good in ["call_timeout_ms=10", "call_timeout_ms=3600000"] {
        let err = Store::open(&format!("{base}?{good}&connect_timeout=2")).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Backend, "{good}: {err}");
        assert!(!err.to_string().contains("sekrit"), "{good}: {err}");
    }
}

#[test]
fn a_reload_to_synchronous_commit_off_never_reissues_tokens_after_a_crash() {
    let Some((cluster, base)) = OwnCluster::start() else {
        return;
    };
    let url = format!("{base}?schema=reload&pool_size=1");
    let store = Store::open(&url).unwrap();
    assert_eq!(store.next_token("r").unwrap().get(), 1);

    // The operator turns durability off for the whole server, and makes
    // the WAL writer lazy so that unflushed commits are surely lost.
    let mut admin = client(&base);
    for sql in [
        "ALTER SYSTEM SET synchronous_commit = off",
        "ALTER SYSTEM SET wal_writer_delay = '10s'",
        "SELECT pg_reload_conf()",
    ] {
        admin.batch_execute(sql).unwrap();
    }
    drop(admin);
    // Backends apply a reload between commands: give the signal time to land.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        client(&base)
            .query_one("SHOW synchronous_commit", &[])
            .unwrap()
            .get::<_, String>(0),
        "off",
        "the reload did not take"
    );

    let handed_out: Vec<u64> = (0..5)
        .map(|_| store.next_token("r").unwrap().get())
        .collect();
    assert_eq!(handed_out, vec![2, 3, 4, 5, 6]);
    cluster.run("crash"); // pg_ctl stop -m immediate
    cluster.run("start");

    let after = Store::open(&url).unwrap();
    let next = after.next_token("r").unwrap().get();
    assert!(
        next > 6,
        "token {next} was issued again after the crash (handed out: 1..=6)"
    );
    after.close();
    store.close();
}

/// A login role of the test's own, dropped with what it owns at the end.
struct Role {
    base: String,
    name: String,
}

impl Drop for Role {
    fn drop(&mut self) {
        let n = &self.name;
        if let Ok(mut c) = std::panic::catch_unwind(|| client(&self.base)) {
            let _ = c.batch_execute(&format!(
                "DROP OWNED BY {n} CASCADE; REVOKE ALL ON DATABASE postgres FROM {n}; DROP ROLE {n}"
            ));
        }
    }
}

#[test]
fn a_repeatable_read_default_never_turns_a_held_lease_into_a_backend_error() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    // A role whose default isolation is REPEATABLE READ, so that no other
    // test on the shared server sees it.
    let role = Role {
        base: base.clone(),
        name: fresh_schema("rr"),
    };
    let r = &role.name;
    client(&base)
        .batch_execute(&format!(
            "CREATE ROLE {r} LOGIN;
             GRANT CREATE ON DATABASE postgres TO {r};
             ALTER ROLE {r} SET default_transaction_isolation = 'repeatable read';"
        ))
        .unwrap();
    let url = format!("{base}?user={r}&schema={r}&pool_size=4");
    let store = Store::open(&url).unwrap();

    let workers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut outcomes: Vec<Result<(), Error>> = Vec::new();
                for i in 0..200 {
                    let scope = format!("scope-{}", (i + w) % 5);
                    let got = store.acquire(&scope, &format!("w{w}"), Duration::from_millis(5));
                    outcomes.push(got.map(drop));
                }
                outcomes
            })
        })
        .collect();
    let (mut acquired, mut held, mut other) = (0, 0, Vec::new());
    for w in workers {
        for outcome in w.join().unwrap() {
            match outcome {
                Ok(()) => acquired += 1,
                Err(Error::LeaseHeld { .. }) => held += 1,
                Err(e) => other.push(e.to_string()),
            }
        }
    }
    println!(
        "repeatable read default: {acquired} acquired, {held} LEASE_HELD, {} other",
        other.len()
    );
    assert!(
        other.is_empty(),
        "{} failures other than LEASE_HELD, e.g. {:?}",
        other.len(),
        other.first()
    );
    // The run had conflicts to get wrong, and leases to win.
    assert!(held > 0 && acquired > 0, "{acquired} acquired, {held} held");
    store.close();
}

#[test]
fn works_from_inside_another_tokio_runtime_and_drops_there() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let url = format!("{base}?schema={}", fresh_schema("in_tokio"));
    // A caller's own runtime on this thread: the store never enters it,
    // so neither its calls nor its drop meet "runtime within a runtime".
    let rt = current_thread_runtime();
    let token = rt.block_on(async move {
        let store = Store::open(&url)?;
        let token = store.next_token("s")?;
        drop(store);
        Ok::<_, Error>(token)
    });
    assert_eq!(token.unwrap().get(), 1);
}

/// A caller's own tokio runtime, with timers and I/O.
fn current_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The one session of `application_name`, once the server lists one only
/// (a session closed a moment ago may still be listed).
fn the_session(url: &str, application_name: &str) -> i32 {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let pids = sessions(url, application_name);
        if let [pid] = pids[..] {
            return pid;
        }
        assert!(
            std::time::Instant::now() < until,
            "sessions of {application_name}: {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One connection (`pool_size=1`) used by turns from a plain thread, which
/// waits for replies in a connection's own reactor, and from inside a
/// runtime, which cannot enter one and needs a connection the store's
/// runtime thread watches: the call inside the runtime closes the plain
/// thread's connection to make its own, the runtime's blocking pool uses
/// that one, and so does a plain thread after them (it can use either
/// kind, so it never closes one). Dropped inside the runtime, the store
/// does not panic.
#[test]
fn one_connection_serves_plain_threads_and_runtimes_by_turns() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("by_turns");
    let url = format!("{base}?schema={schema}&pool_size=1&application_name={schema}");
    let store = Store::open(&url).unwrap();
    let rt = current_thread_runtime();
    let outside = store.next_token("s").unwrap();
    let plain = the_session(&base, &schema);
    let inside = rt.block_on(async { store.next_token("s") }).unwrap();
    let watched = the_session(&base, &schema);
    assert_ne!(
        plain, watched,
        "the runtime's call used the plain thread's connection"
    );
    let blocking_pool = rt
        .block_on(async {
            let store = store.clone();
            tokio::task::spawn_blocking(move || store.next_token("s")).await
        })
        .unwrap()
        .unwrap();
    assert_eq!(the_session(&base, &schema), watched);
    let again = store.next_token("s").unwrap();
    assert_eq!(the_session(&base, &schema), watched);
    assert!(outside < inside && inside < blocking_pool && blocking_pool < again);
    rt.block_on(async move { drop(store) });
}

/// A call of `store` made inside a tokio runtime of its own thread (the
/// kind of call that needs a connection the store's runtime thread
/// watches), or from a plain thread.
fn on_thread(
    store: &Store,
    inside_a_runtime: bool,
    call: fn(&Store) -> fencing::Result<()>,
) -> std::thread::JoinHandle<fencing::Result<()>> {
    let store = store.clone();
    std::thread::spawn(move || match inside_a_runtime {
        true => current_thread_runtime().block_on(async { call(&store) }),
        false => call(&store),
    })
}

/// With `pool_size=1`, a call of one kind holds the one connection while
/// it waits for a row another session holds; a call of the other kind
/// waits for that connection, and runs once it is back (in its place, or
/// on it), both ways round.
#[test]
fn a_call_waits_for_the_connection_a_call_of_the_other_kind_holds() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("cross_wait");
    let url = format!("{base}?schema={schema}&pool_size=1&application_name={schema}");
    let store = Store::open(&url).unwrap();
    let fence = fencing::Fence::new(store.next_token("s").unwrap());
    store.put("s", "k", b"1", &fence).unwrap();
    for holder_in_a_runtime in [false, true] {
        let mut locker = client(&base);
        let mut tx = locker.transaction().unwrap();
        let sql = format!("SELECT 1 FROM {schema}.scopes WHERE scope = 's' FOR UPDATE");
        tx.query(&sql, &[]).unwrap();
        let holder = on_thread(&store, holder_in_a_runtime, |store| {
            let fence = fencing::Fence::new(store.next_token("s")?);
            store.put("s", "k", b"2", &fence).map(drop)
        });
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while client(&base)
            .query(
                "SELECT 1 FROM pg_stat_activity WHERE application_name = $1 \
                 AND wait_event_type = 'Lock'",
                &[&schema],
            )
            .unwrap()
            .is_empty()
        {
            assert!(
                std::time::Instant::now() < until,
                "the holder never waited for the row"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let waiter = on_thread(&store, !holder_in_a_runtime, |store| {
            store.next_token("t").map(drop)
        });
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            !waiter.is_finished(),
            "the waiter did not wait for the one connection"
        );
        tx.rollback().unwrap();
        holder.join().unwrap().unwrap();
        waiter.join().unwrap().unwrap();
    }
    assert_eq!(store.get("s", "k", None).unwrap().unwrap().value, b"2");
}

/// A store closed, or dropped, inside a runtime with a plain thread's
/// connection idle (whose reactor that runtime's thread can neither enter
/// nor wait for): no panic, and the connection is closed.
#[test]
fn closed_or_dropped_inside_a_runtime_with_a_plain_thread_s_connection_idle() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("close_in_rt");
    let url = format!("{base}?schema={schema}&pool_size=1&application_name={schema}");
    let store = Store::open(&url).unwrap();
    store.next_token("s").unwrap();
    the_session(&base, &schema);
    let rt = current_thread_runtime();
    rt.block_on(async { store.close() });
    let gone = |application_name: &str| {
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while !sessions(&base, application_name).is_empty() {
            assert!(
                std::time::Instant::now() < until,
                "the session outlived its store"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    gone(&schema);
    let dropped = format!("{schema}_dropped");
    let store = Store::open(&format!(
        "{base}?schema={schema}&pool_size=1&application_name={dropped}"
    ))
    .unwrap();
    store.next_token("s").unwrap();
    the_session(&base, &dropped);
    rt.block_on(async move { drop(store) });
    gone(&dropped);
}

/// The issue's reproduction of a keep-alive that could not tell it lost: the
/// holder's PostgreSQL backend is stopped (its renewal hangs, here for up to
/// a minute), the lease (600 ms) expires on the server and another holder
/// takes it. The guard must report the loss while its renewal still hangs
/// (docs/semantics.md, "Leases", keep-alive), and dropping it must return
/// while the backend is still stopped.
#[test]
fn a_keep_alive_whose_renewal_hangs_reports_the_loss_and_drops_at_once() {
    let Some(base) = url_to_stop() else {
        return;
    };
    let schema = fresh_schema("hungkeepalive");
    let holder = Store::open(&format!(
        "{base}?schema={schema}&pool_size=2&call_timeout_ms=60000&application_name={schema}"
    ))
    .unwrap();
    let other = Store::open(&format!("{base}?schema={schema}")).unwrap();
    let ttl = Duration::from_millis(600);
    let guard = holder.lease("job", "a", ttl).unwrap();
    let token = guard.token();
    // Renewals run one at a time, so one connection was ever opened.
    let pids: Vec<i32> = client(&base)
        .query(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1",
            &[&schema],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(pids.len(), 1, "{pids:?}");
    let stopped = Stopped::new(pids[0]);

    let taken = other
        .acquire_wait("job", "b", ttl, Duration::from_secs(20))
        .expect("the lease expires on the server and another holder takes it");
    assert!(taken.token > token);
    let start = std::time::Instant::now();
    while !guard.is_lost() && start.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(10));
    }
    let lost = guard.check().unwrap_err();
    assert_eq!(
        lost,
        Error::LeaseLost {
            scope: "job".into(),
            current: None
        }
    );
    // Told by its own deadline, not by a renewal: none has returned yet.
    assert_eq!(holder.metrics().renewal_failures, 0);
    bounded(move || drop(guard)).expect("dropping the guard waited for the hung renewal");
    drop(stopped);
    assert_eq!(
        other.status("job").unwrap().lease.map(|l| l.holder),
        Some("b".into())
    );
}

/// The PostgreSQL backend pids of the connections a store opened with
/// `application_name={name}`.
fn backends_named(base: &str, name: &str) -> Vec<i32> {
    client(base)
        .query(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1",
            &[&name],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Ending a guard never blocks the caller (docs/semantics.md, "Ending a held
/// lease"): the holder's only connection (`pool_size=1`) goes to a stopped
/// backend, so its renewal hangs and a release would wait behind it for the
/// call deadline (10 minutes here). Dropping the guard must return while the
/// backend is still stopped; the release runs in the background and is
/// counted once the backend continues.
#[test]
fn dropping_a_held_guard_whose_renewal_hangs_returns_at_once() {
    let Some(base) = url_to_stop() else {
        return;
    };
    let schema = fresh_schema("hungdrop");
    fencing::migrate(&format!("{base}?schema={schema}")).unwrap();
    let holder = Store::open(&format!(
        "{base}?schema={schema}&pool_size=1&call_timeout_ms=600000&application_name={schema}"
    ))
    .unwrap();
    let other = Store::open(&format!("{base}?schema={schema}")).unwrap();
    // The first renewal is due after 4 s and hangs; the guard's own deadline
    // is 12 s away, far beyond the drop.
    let ttl = Duration::from_secs(12);
    let guard = holder.lease("job", "a", ttl).unwrap();
    let pids = backends_named(&base, &schema);
    assert_eq!(pids.len(), 1, "{pids:?}");
    let stopped = Stopped::new(pids[0]);
    std::thread::sleep(Duration::from_secs(5));
    assert!(
        !guard.is_lost(),
        "the lease must still be held when the guard is dropped"
    );

    let dropped = bounded(move || drop(guard));
    // Still stopped here: the drop did not wait for the backend.
    let still_held = other.status("job").unwrap().lease.map(|l| l.holder);
    drop(stopped);
    assert!(
        dropped.is_some(),
        "dropping the guard waited for the hung renewal or its release"
    );
    assert_eq!(still_held, Some("a".into()));
    // Once the backend continues, the background release ends the lease.
    let start = std::time::Instant::now();
    while other.status("job").unwrap().lease.is_some() && start.elapsed() < HANG {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(other.status("job").unwrap().lease, None);
    assert_eq!(holder.metrics().releases, 1);
}
