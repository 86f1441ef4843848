//! What the PostgreSQL backend promises whatever the server or its settings
//! do (docs/postgres.md, "Connections and failures" and "Session settings"):
//! every call returns within its deadline, and what safety needs is pinned
//! per session. Real servers only; needs `FENCING_TEST_PG_URL` (see
//! `scripts/pg-cluster`).

use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use fencing::{Error, ErrorCode, Store};

mod support;
use support::{fresh_schema, postgres_test_url};

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
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("sigstop");
    let store = Store::open(&format!(
        "{base}?schema={schema}&pool_size=1&call_timeout_ms=300&application_name={schema}"
    ))
    .unwrap();
    let lease = store
        .acquire("s", "holder", Duration::from_secs(60))
        .unwrap();
    // The one pooled connection is the only session with this name.
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
fn works_from_inside_another_tokio_runtime_and_drops_there() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let url = format!("{base}?schema={}", fresh_schema("in_tokio"));
    // A caller's own runtime on this thread: the store never enters it,
    // so neither its calls nor its drop meet "runtime within a runtime".
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let token = rt.block_on(async move {
        let store = Store::open(&url)?;
        let token = store.next_token("s")?;
        drop(store);
        Ok::<_, Error>(token)
    });
    assert_eq!(token.unwrap().get(), 1);
}
