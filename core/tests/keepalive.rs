//! The keep-alive guard: renews while work runs, reports loss, releases at
//! the end, and notices when the process itself was paused.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fencing::{Error, ErrorCode, Store};

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
        .acquire("job", "a", Duration::from_millis(60))
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
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(store.metrics().renewal_failures >= 1);
    // Dropping the lost guard must not release the newer holder's lease.
    drop(guard);
    assert_eq!(store.status("job").unwrap().lease.unwrap().token, b.token);
}

#[test]
fn closing_the_store_ends_the_keep_alive() {
    let store = Store::open("memory:").unwrap();
    let guard = store.lease("job", "a", Duration::from_millis(30)).unwrap();
    store.close();
    assert!(eventually(Duration::from_secs(10), || guard.is_lost()));
    assert_eq!(guard.check().unwrap_err(), Error::Closed);
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
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) && !guard.is_lost() {
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
fn a_real_pause_is_detected() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "pause_child", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.ends_with("child-ready")));
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
