//! `fencing watch SCOPE`: who holds the scope's lease, live, one line per
//! state: the lease as it is, then each change that other processes make,
//! until a signal ends it (as `events --follow`) or the store fails.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{Env, Reaper};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

/// Bounded far above the watch's back-off between reads (a SQLite store is
/// not pushed across processes): a hang, not a speed claim.
const LINE_WITHIN: Duration = Duration::from_secs(60);

/// `fencing watch` running, its stdout read line by line on a thread.
struct Watching {
    child: Child,
    lines: mpsc::Receiver<String>,
    _reaper: Reaper,
}

impl Watching {
    fn start(env: &Env, args: &[&str]) -> Watching {
        Watching::spawn(env.cmd(args))
    }

    fn spawn(mut cmd: std::process::Command) -> Watching {
        let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let reaper = Reaper(vec![child.id() as i32]);
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if tx.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        Watching {
            child,
            lines,
            _reaper: reaper,
        }
    }

    fn line(&self, what: &str) -> String {
        self.lines
            .recv_timeout(LINE_WITHIN)
            .unwrap_or_else(|_| panic!("no line for {what}"))
    }

    fn json(&self, what: &str) -> Value {
        let line = self.line(what);
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {line}"))
    }

    /// SIGTERM ends it as it ends the CLI's other long-running commands:
    /// by the signal's default action (the shell's status 143).
    fn terminate(mut self) {
        let pid = Pid::from_raw(self.child.id() as i32);
        kill(pid, Signal::SIGTERM).unwrap();
        let status = self.child.wait().unwrap();
        assert_eq!(status.signal(), Some(Signal::SIGTERM as i32), "{status:?}");
        assert!(
            self.lines.recv_timeout(Duration::from_secs(10)).is_err(),
            "nothing after the signal"
        );
    }
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

#[test]
fn watch_json_prints_the_lease_then_each_change_by_other_processes() {
    json_story(&Env::new());
}

/// The same on `postgres://` (a fresh schema), where the changes of other
/// processes are announced. Skipped without a server (FENCING_REQUIRE_PG=1:
/// failed), as tests/postgres.rs is.
#[test]
fn watch_json_on_postgres() {
    let Some(base) = fencing_scenarios::postgres_test_url() else {
        return;
    };
    let url = format!(
        "{base}?schema={}",
        fencing_scenarios::fresh_schema("cli_watch")
    );
    json_story(&Env {
        dir: tempfile::tempdir().unwrap(),
        url,
    });
}

fn json_story(env: &Env) {
    // The store exists before the watch opens it, as the acquire's would.
    assert_eq!(env.run(["fence", "s"]).code, 0);
    let watch = Watching::start(env, &["--json", "watch", "s"]);
    let free = watch.json("the start");
    assert_eq!(free["scope"], "s", "{free}");
    assert_eq!(free["holder"], Value::Null, "{free}");
    assert_eq!(free["token"], Value::Null, "{free}");
    assert_eq!(free["expires_at_ms"], Value::Null, "{free}");
    assert_eq!(free["remaining_ms"], Value::Null, "{free}");

    let out = env.run([
        "--json", "acquire", "s", "--ttl", "2m", "--holder", "worker-a",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let acquired = out.json();
    let held = watch.json("the acquire");
    assert_eq!(held["scope"], "s", "{held}");
    assert_eq!(held["holder"], "worker-a", "{held}");
    assert_eq!(held["token"], acquired["token"], "{held}");
    assert_eq!(held["token"], "1", "a canonical decimal string: {held}");
    assert_eq!(held["ttl_ms"], 120_000, "{held}");
    assert_eq!(held["expires_at_ms"], acquired["expires_at_ms"], "{held}");
    let left = held["remaining_ms"].as_u64().unwrap();
    assert!(left > 0 && left <= 120_000, "{held}");
    // The lease as `acquire --json` prints it; free: the same keys.
    assert_eq!(keys(&held), keys(&acquired));
    assert_eq!(keys(&free), keys(&acquired));

    let out = env.run(["release", "s", "--token", "1"]);
    assert_eq!(out.text(), "released\n", "{out:?}");
    let released = watch.json("the release");
    assert_eq!(released, free, "free again");

    // Another scope's changes are not this watch's.
    assert_eq!(env.run(["acquire", "t", "--ttl", "2m"]).code, 0);
    assert!(
        watch.lines.recv_timeout(Duration::from_secs(1)).is_err(),
        "nothing for another scope"
    );
    watch.terminate();
}

#[test]
fn watch_plain_prints_one_line_per_state() {
    let env = Env::new();
    assert_eq!(env.run(["fence", "report:7"]).code, 0);
    let watch = Watching::start(&env, &["watch", "report:7"]);
    assert_eq!(watch.line("the start"), "report:7  free");
    let out = env.run(["acquire", "report:7", "--ttl", "2m", "--holder", "worker-a"]);
    assert_eq!(out.text(), "1\n", "{out:?}");
    let held = watch.line("the acquire");
    assert!(
        held.starts_with("report:7  held by \"worker-a\" with token 1, ")
            && held.ends_with(" left (ttl 2m)"),
        "{held}"
    );
    // A renewal moves the expiry: a new state.
    let out = env.run(["renew", "report:7", "--token", "1", "--ttl", "3m"]);
    assert_eq!(out.code, 0, "{out:?}");
    let renewed = watch.line("the renewal");
    assert!(renewed.ends_with(" left (ttl 3m)"), "{renewed}");
    watch.terminate();
}

#[test]
fn watch_refuses_a_bad_scope_and_reports_a_store_it_cannot_open() {
    let env = Env::new();
    env.run(["watch", ""]).fails_with("INVALID_ARGUMENT", 17);
    let long = "s".repeat(257);
    env.run(["watch", long.as_str()])
        .fails_with("INVALID_ARGUMENT", 17);
    let out = env.run(["--json", "watch", ""]);
    assert_eq!(out.json()["error"]["code"], "INVALID_ARGUMENT", "{out:?}");
    // The store's failure: its usual line and status.
    let mut c = common::bare(env.dir.path());
    c.args(["--url", "sqlite:no/such/dir/x.db", "watch", "s"]);
    common::run(c, None).fails_with("BACKEND", 19);
}

/// Like the lease verbs, it says which store it watches when none was
/// given: on another directory's default store it would show a free lease
/// forever.
#[test]
fn watch_warns_when_the_store_is_the_implicit_default() {
    let env = Env::new();
    let mut c = common::bare(env.dir.path());
    c.args(["watch", "s"]).stderr(Stdio::piped());
    let mut watch = Watching::spawn(c);
    assert_eq!(watch.line("the start"), "s  free");
    let mut stderr = watch.child.stderr.take().unwrap();
    let pid = Pid::from_raw(watch.child.id() as i32);
    kill(pid, Signal::SIGTERM).unwrap();
    watch.child.wait().unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
    assert!(
        text.contains("warning: no --url, --url-file, $FENCING_URL or $FENCING_URL_FILE"),
        "{text}"
    );
}
