//! The keep-alive guard: renews while work runs, reports loss, releases at
//! the end, and notices when the process itself was paused.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime};

use fencing::{Error, ErrorCode, Store};

mod support;
use support::sqlite_url;

/// Polls `done` until it holds or `limit` passes; a bound, not a timing claim.
fn eventually(limit: Duration, done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    done()
}

#[test]
fn guard_keeps_the_lease_past_its_ttl_and_releases_on_drop() {
    let store = Store::open("memory:").unwrap();
    let ttl = Duration::from_millis(90);
    let guard = store.lease("job", "worker-a", ttl).unwrap();
    let token = guard.token();
    std::thread::sleep(ttl * 5);
    guard.check().unwrap();
    let held = store.acquire("job", "worker-b", ttl).unwrap_err();
    assert!(
        matches!(held, Error::LeaseHeld { token: t, .. } if t == token),
        "{held:?}"
    );
    assert!(store.metrics().renewals >= 1);

    drop(guard);
    assert_eq!(store.status("job").unwrap().lease, None);
    let next = store.acquire("job", "worker-b", ttl).unwrap();
    assert!(next.token > token);
}

#[test]
fn release_reports_whether_the_lease_was_current() {
    let store = Store::open("memory:").unwrap();
    let guard = store.lease("job", "a", Duration::from_secs(30)).unwrap();
    assert!(guard.release().unwrap());
    assert_eq!(store.metrics().releases, 1);
}

#[test]
fn loss_is_reported_by_flag_and_callback() {
    let store = Store::open("memory:?clock=manual").unwrap();
    let lease = store
        .acquire("job", "a", Duration::from_millis(600))
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let guard = store.keep_alive_with(lease, move |e| {
        assert_eq!(e.code(), ErrorCode::LeaseLost);
        seen.fetch_add(1, Ordering::SeqCst);
    });
    // The manual clock jumps past expiry between two renewals: the next
    // renewal must fail and say so.
    store.advance_clock(Duration::from_secs(1)).unwrap();
    let b = store.acquire("job", "b", Duration::from_secs(10)).unwrap();
    assert!(eventually(Duration::from_secs(10), || guard.is_lost()));
    let lost = guard.check().unwrap_err();
    assert_eq!(
        lost,
        Error::LeaseLost {
            scope: "job".into(),
            current: Some((b.token, "b".into()))
        }
    );
    // The callback runs on the guard's own thread, just after the loss is
    // recorded.
    assert!(eventually(Duration::from_secs(10), || calls
        .load(Ordering::SeqCst)
        == 1));
    assert!(store.metrics().renewal_failures >= 1);
    // Dropping the lost guard must not release the newer holder's lease.
    drop(guard);
    assert_eq!(store.status("job").unwrap().lease.unwrap().token, b.token);
}

#[test]
fn closing_the_store_ends_the_keep_alive() {
    let store = Store::open("memory:").unwrap();
    let guard = store.lease("job", "a", Duration::from_millis(600)).unwrap();
    store.close();
    assert!(eventually(Duration::from_secs(10), || guard.is_lost()));
    assert_eq!(guard.check().unwrap_err(), Error::Closed);
}

#[cfg(unix)]
/// Runs the test `name` of this binary as a child process with `env` set
/// to `value`, once it printed `child-ready`; its stdout's lines after that.
fn ready_child(
    name: &str,
    env: &str,
    value: &std::ffi::OsStr,
) -> (Child, std::io::Lines<BufReader<ChildStdout>>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(env, value)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.ends_with("child-ready")));
    (child, lines)
}

const CHILD: &str = "FENCING_KEEPALIVE_PAUSE_CHILD";

/// Runs only inside the child process of `a_real_pause_is_detected`.
#[test]
fn pause_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let store = Store::open("memory:").unwrap();
    let guard = store
        .lease("job", "paused", Duration::from_millis(300))
        .unwrap();
    println!("\nchild-ready");
    // The guard reports the loss as soon as its deadline has passed, which
    // can be before the renewer thread wakes and records how late it is.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3)
        && !(guard.is_lost() && store.metrics().pauses_detected >= 1)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let m = store.metrics();
    println!(
        "\nresult pauses={} longest={} lost={}",
        m.pauses_detected,
        m.longest_pause_ms,
        guard.is_lost()
    );
}

#[test]
#[cfg(unix)] // Paused with kill -STOP.
fn a_real_pause_is_detected() {
    let (mut child, lines) = ready_child("pause_child", CHILD, "1".as_ref());
    let pid = child.id().to_string();
    // Pause the whole process (keep-alive thread included) for far longer
    // than the TTL, as a GC pause or VM suspend would.
    assert!(Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .unwrap()
        .success());
    std::thread::sleep(Duration::from_millis(1200));
    assert!(Command::new("kill")
        .args(["-CONT", &pid])
        .status()
        .unwrap()
        .success());
    // Read to the end so the child never writes into a closed pipe.
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let result = rest
        .iter()
        .find(|l| l.starts_with("result "))
        .expect("child reports");
    assert!(child.wait().unwrap().success());
    let field = |name: &str| -> String {
        result
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .unwrap()
            .to_owned()
    };
    assert!(field("pauses").parse::<u64>().unwrap() >= 1, "{result}");
    // Late by more than a third of the 300 ms TTL, or it is not a pause.
    assert!(field("longest").parse::<u64>().unwrap() > 100, "{result}");
    // The lease expired during the pause: the holder must be told.
    assert_eq!(field("lost"), "true", "{result}");
}

const NAMED_CHILD: &str = "FENCING_KEEPALIVE_NAMED_CHILD";

/// Runs only inside the child process of
/// `a_paused_holder_is_told_who_holds_the_lease_now`: holds a lease on the
/// SQLite file it is given and reports what its guard says once lost.
#[test]
fn named_child() {
    let Some(path) = std::env::var_os(NAMED_CHILD) else {
        return;
    };
    let store = Store::open(&sqlite_url(Path::new(&path))).unwrap();
    let (tx, rx) = mpsc::channel();
    let lease = store
        .acquire("job", "paused", Duration::from_millis(300))
        .unwrap();
    let guard = store.keep_alive_with(lease, move |e| {
        let _ = tx.send(e.to_string());
    });
    println!("\nchild-ready");
    let start = Instant::now();
    let named = |e: &Error| {
        matches!(
            e,
            Error::LeaseLost {
                current: Some(_),
                ..
            }
        )
    };
    while start.elapsed() < Duration::from_secs(5)
        && !guard.check().err().as_ref().is_some_and(named)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let told = rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
    println!("\ncheck={:?}", guard.check().err().map(|e| e.to_string()));
    println!("\ncallback={told:?}");
}

#[test]
#[cfg(unix)] // Paused with kill -STOP.
fn a_paused_holder_is_told_who_holds_the_lease_now() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("named.db");
    let store = Store::open(&sqlite_url(&path)).unwrap();
    let (mut child, lines) = ready_child("named_child", NAMED_CHILD, path.as_os_str());
    let pid = child.id().to_string();
    let signal = |sig: &str| {
        assert!(Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success())
    };
    // The holder sleeps through its TTL; another takes the lease meanwhile.
    // Stopped between two renewals: stopped inside one, it would keep the
    // file's write lock, and the acquire below would wait for it in vain.
    loop {
        signal("-STOP");
        if !write_locked(&path) {
            break;
        }
        signal("-CONT");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(600));
    let b = store.acquire("job", "b", Duration::from_secs(30)).unwrap();
    signal("-CONT");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(child.wait().unwrap().success());
    let check = rest.iter().find(|l| l.starts_with("check=")).unwrap();
    let callback = rest.iter().find(|l| l.starts_with("callback=")).unwrap();
    // The store answers once the holder wakes: the loss names who holds
    // the lease now, never "nobody".
    let named = format!("now held by \\\"b\\\" with token {}", b.token);
    assert!(check.contains(&named), "{check} (expected {named})");
    // The callback runs at the deadline, before the store is asked: it
    // must not claim that nobody holds the lease.
    assert!(callback.contains("lease lost on"), "{callback}");
    assert!(!callback.contains("no lease is current"), "{callback}");
}

/// Whether a process holds the SQLite write lock of the file at `path` now
/// (this process takes it, without waiting, and gives it back at once).
#[cfg(unix)]
fn write_locked(path: &Path) -> bool {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(Duration::ZERO).unwrap();
    match conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK") {
        Ok(()) => false,
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => true,
        Err(e) => panic!("probing the write lock: {e}"),
    }
}

// ----- a renewal that hangs (docs/semantics.md, Leases: Keep-alive) -----

const LOCK_CHILD: &str = "FENCING_KEEPALIVE_LOCK_CHILD";

/// Runs only inside the child process of `WriteLock::take`: holds the
/// SQLite write lock of the file it is given until its stdin closes.
#[test]
fn lock_holder_child() {
    let Some(path) = std::env::var_os(LOCK_CHILD) else {
        return;
    };
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(20)).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    println!("\nlocked");
    std::io::stdout().flush().unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    conn.execute_batch("COMMIT").unwrap();
}

/// Another process holding the write lock of an SQLite file: every write
/// of the store waits in SQLite's busy handler until `release`. Dropping it
/// kills the process, so a failing test never leaves it behind.
struct WriteLock {
    child: Child,
    stdout: Option<std::io::Lines<BufReader<ChildStdout>>>,
}

impl WriteLock {
    fn take(path: &Path) -> WriteLock {
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "lock_holder_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(LOCK_CHILD, path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lock = WriteLock {
            child,
            stdout: None,
        };
        let mut lines = BufReader::new(lock.child.stdout.take().unwrap()).lines();
        assert!(
            lines
                .by_ref()
                .map_while(Result::ok)
                .any(|l| l.ends_with("locked")),
            "the lock holder did not start"
        );
        lock.stdout = Some(lines);
        lock
    }

    /// Commits (the child exits when its stdin closes): the store's writes
    /// go through again.
    fn release(mut self) {
        drop(self.child.stdin.take());
        self.stdout.take().into_iter().flatten().for_each(drop);
        let _ = self.child.wait();
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An `on_lost` callback that counts its calls. The closure owns a clone of
/// the counter, so `Arc::strong_count(&calls) == 1` proves the guard's
/// threads have dropped it: from then on it can never be called again.
fn counting_callback() -> (Arc<AtomicUsize>, impl Fn(&Error) + Send + Sync + 'static) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    (calls, move |_: &Error| {
        seen.fetch_add(1, Ordering::SeqCst);
    })
}

fn lost_unknown(scope: &str) -> Error {
    Error::LeaseLost {
        scope: scope.into(),
        current: None,
    }
}

#[test]
fn a_hung_renewal_neither_hides_the_loss_nor_blocks_drop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hung.db");
    // A renewal waits up to a minute for the lock: far past every bound below.
    let url = format!("{}?busy_timeout_ms=60000", sqlite_url(&path));
    let store = Store::open(&url).unwrap();
    let lease = store
        .acquire("job", "a", Duration::from_millis(600))
        .unwrap();
    let (calls, on_lost) = counting_callback();
    let guard = store.keep_alive_with(lease, on_lost);
    let lock = WriteLock::take(&path);

    // No renewal can return while the lock is held: the guard must judge the
    // loss by its own deadline, with the renewal still blocked.
    assert!(
        eventually(Duration::from_secs(10), || guard.is_lost()),
        "the guard still reports the lease held: {:?}",
        guard.check()
    );
    assert_eq!(store.metrics().renewal_failures, 0);
    assert_eq!(guard.check().unwrap_err(), lost_unknown("job"));
    assert_eq!(guard.lost(), Some(lost_unknown("job")));
    assert!(eventually(Duration::from_secs(10), || calls
        .load(Ordering::SeqCst)
        == 1));

    // Dropping must return while the renewal is still blocked.
    let (dropped, done) = mpsc::channel();
    std::thread::spawn(move || {
        drop(guard);
        let _ = dropped.send(());
    });
    let returned = done.recv_timeout(Duration::from_secs(10));
    lock.release();
    assert_eq!(returned, Ok(()), "drop waited for the hung renewal");

    // The renewal returns now (LEASE_LOST: the lease expired meanwhile).
    // Once it has, and the guard's threads let go of the callback, nothing
    // can call it any more: it was still called only once.
    assert!(eventually(Duration::from_secs(60), || {
        store.metrics().renewal_failures >= 1 && Arc::strong_count(&calls) == 1
    }));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn the_callback_runs_once_even_when_the_hung_renewal_returns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("once.db");
    let url = format!("{}?busy_timeout_ms=60000", sqlite_url(&path));
    let store = Store::open(&url).unwrap();
    let lease = store
        .acquire("job", "a", Duration::from_millis(600))
        .unwrap();
    let (calls, on_lost) = counting_callback();
    let guard = store.keep_alive_with(lease, on_lost);
    let lock = WriteLock::take(&path);
    assert!(eventually(Duration::from_secs(10), || calls
        .load(Ordering::SeqCst)
        == 1));
    // Let the blocked renewal fail with its own LEASE_LOST: the first loss
    // stands, and nobody is told twice.
    lock.release();
    assert!(eventually(Duration::from_secs(60), || store
        .metrics()
        .renewal_failures
        >= 1));
    assert_eq!(guard.check().unwrap_err(), lost_unknown("job"));
    drop(guard);
    assert!(eventually(Duration::from_secs(10), || Arc::strong_count(
        &calls
    ) == 1));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn the_callback_never_runs_after_release_or_drop() {
    for release in [true, false] {
        let store = Store::open("memory:?clock=manual").unwrap();
        let lease = store
            .acquire("job", "a", Duration::from_millis(300))
            .unwrap();
        let (calls, on_lost) = counting_callback();
        let guard = store.keep_alive_with(lease, on_lost);
        if release {
            assert!(guard.release().unwrap());
        } else {
            drop(guard);
        }
        // Everything that could end a running keep-alive happens now: its
        // deadline passes and another holder takes the lease.
        store.advance_clock(Duration::from_secs(1)).unwrap();
        store.acquire("job", "b", Duration::from_secs(60)).unwrap();
        assert!(
            eventually(Duration::from_secs(10), || Arc::strong_count(&calls) == 1),
            "the guard's threads still hold the callback (release: {release})"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 0, "release: {release}");
    }
}

#[test]
fn loss_is_judged_on_the_guards_own_clock_not_against_expires_at() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("skew.db");
    // Renewals fail at once (a short busy timeout): a transient failure,
    // retried while the lease may still be live.
    let url = format!("{}?clock=manual&busy_timeout_ms=20", sqlite_url(&path));
    let store = Store::open(&url).unwrap();
    // The store's clock runs a day ahead of this client's.
    store.advance_clock(Duration::from_secs(24 * 3600)).unwrap();
    let lease = store
        .acquire("job", "a", Duration::from_millis(600))
        .unwrap();
    assert!(lease.expires_at > SystemTime::now() + Duration::from_secs(3600));
    let (calls, on_lost) = counting_callback();
    let guard = store.keep_alive_with(lease, on_lost);
    let lock = WriteLock::take(&path);
    // Judged by the wall clock against expires_at, the lease would look live
    // for another day; no renewal has succeeded for far longer than the
    // time the store said was left, so it may be gone.
    assert!(
        eventually(Duration::from_secs(10), || guard.is_lost()),
        "the guard still reports the lease held: {:?}",
        guard.check()
    );
    assert_eq!(guard.check().unwrap_err(), lost_unknown("job"));
    assert!(eventually(Duration::from_secs(10), || calls
        .load(Ordering::SeqCst)
        == 1));
    lock.release();
}
