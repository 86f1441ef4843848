//! Crash safety of the SQLite backend: `kill -9` at any moment loses nothing
//! that was acknowledged and never lets a token be issued twice.
//!
//! Round after round, a child process opens the file and hammers two scopes
//! with `next_token`, `acquire`, `put`, `apply` and `release`, appending to
//! its own log (one write(2) per line) every token it was handed and every
//! write that was acknowledged, each only after the call returned `Ok`, and
//! a `begin` marker before every call. The parent kills it with SIGKILL a
//! random few to ~40 ms after it started working, mostly in the middle of an
//! operation, then reopens the file itself and checks:
//!
//! - the next token of each scope is greater than every token any process
//!   (killed children and the parent itself) was ever handed;
//! - the fence is at least every acknowledged write's token;
//! - `PRAGMA integrity_check` is `ok`;
//! - every acknowledged write is still there: keys written once (unique to
//!   their round) with exactly the acknowledged version and token, keys
//!   overwritten within a round at the acknowledged version or later.
//!
//! At the end, every acknowledgement of every round is checked once more.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
#[cfg(unix)]
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fencing::{Error, Fence, Op, Store};

mod support;
use support::{sqlite_url, Rng};

const CHILD: &str = "FENCING_SQLITE_CRASH_CHILD";
const CHILD_DB: &str = "FENCING_SQLITE_CRASH_DB";
const CHILD_LOG: &str = "FENCING_SQLITE_CRASH_LOG";
const READY: &str = "CRASH-CHILD-READY";

const SCOPES: [&str; 2] = ["crash-a", "crash-b"];
/// Rounds by default; `FENCING_CRASH_ROUNDS` overrides.
const ROUNDS: usize = 300;
/// Kill delay after the child reports it is working, in microseconds. The
/// upper bound grows to six commits where one commit (an fsync) is slow, so
/// that a slow disk still lets many rounds acknowledge something first.
const DELAY_US: (u64, u64) = (2_000, 40_000);
const DELAY_COMMITS: u64 = 6;
/// A child that was never killed stops by itself after this long.
const CHILD_LIMIT: Duration = Duration::from_secs(20);

// ----- the child -----

/// Appends one line with a single write(2): once `write_all` returns, the
/// line is in the file even if the process is killed right after.
struct Log(File);

impl Log {
    fn line(&mut self, text: String) {
        self.0.write_all(format!("{text}\n").as_bytes()).unwrap();
    }
}

/// Runs only inside the children of `kill_9_never_loses_acknowledged_state`.
#[test]
fn crash_child() {
    let Some(round) = std::env::var_os(CHILD) else {
        return;
    };
    let round: usize = round.to_str().unwrap().parse().unwrap();
    let db = PathBuf::from(std::env::var_os(CHILD_DB).unwrap());
    let mut log = Log(OpenOptions::new()
        .create(true)
        .append(true)
        .open(std::env::var_os(CHILD_LOG).unwrap())
        .unwrap());
    let store = Store::open(&sqlite_url(&db)).unwrap();
    let holder = format!("crash-{round}@{}", std::process::id());
    let ttl = Duration::from_millis(20);
    println!("\n{READY}");
    std::io::stdout().flush().unwrap();

    let started = Instant::now();
    let mut i = 0u64;
    while started.elapsed() < CHILD_LIMIT {
        let scope = SCOPES[(i % 2) as usize];
        // Overwritten on every iteration: checked as "this version or later".
        let last = format!("round-{round}-last");

        log.line(format!("B next_token {scope}"));
        let t = store.next_token(scope).unwrap();
        log.line(format!("T {scope} {t}"));

        let key = format!("round-{round}-{i}-p");
        log.line(format!("B put {scope} {key}"));
        let r = store
            .put(scope, &key, key.as_bytes(), &Fence::new(t))
            .unwrap();
        log.line(format!("A {scope} {key} {} {}", r.version, r.token));

        log.line(format!("B put {scope} {last}"));
        let r = store
            .put(scope, &last, last.as_bytes(), &Fence::new(t).with_seq(1))
            .unwrap();
        log.line(format!("O {scope} {last} {} {}", r.version, r.token));

        log.line(format!("B acquire {scope}"));
        match store.acquire(scope, &holder, ttl) {
            Ok(lease) => {
                let token = lease.token;
                log.line(format!("T {scope} {token}"));
                let keys = [
                    format!("round-{round}-{i}-a"),
                    format!("round-{round}-{i}-b"),
                ];
                let mut ops: Vec<Op> = keys.iter().map(|k| Op::put(k, k.as_bytes())).collect();
                ops.push(Op::put(&last, last.as_bytes()));
                log.line(format!("B apply {scope}"));
                let receipts = store.apply(scope, &Fence::new(token), ops).unwrap();
                for (k, r) in keys.iter().zip(&receipts) {
                    log.line(format!("A {scope} {k} {} {}", r.version, r.token));
                }
                let r = receipts[2];
                log.line(format!("O {scope} {last} {} {}", r.version, r.token));
                log.line(format!("B release {scope}"));
                let released = store.release(scope, token).unwrap();
                log.line(format!("R {scope} {token} {released}"));
            }
            // A lease left behind by a killed child: wait it out next time.
            Err(Error::LeaseHeld { .. }) => log.line(format!("H {scope}")),
            Err(e) => panic!("acquire: {e}"),
        }
        i += 1;
    }
}

// ----- the parent -----

/// One acknowledged write.
#[derive(Clone, Debug)]
struct Ack {
    scope: String,
    key: String,
    version: u64,
    token: u64,
    /// Written once (exact) or overwritten within its round (at least).
    once: bool,
}

#[derive(Default)]
struct RoundLog {
    tokens: Vec<(String, u64)>,
    acks: Vec<Ack>,
    /// The last complete line was a `begin` marker: killed inside a call.
    mid_op: bool,
    /// A trailing line without its newline (a write(2) cut short).
    torn: bool,
}

fn parse_log(round: usize, text: &str) -> RoundLog {
    let mut out = RoundLog::default();
    let complete = match text.rfind('\n') {
        Some(end) => &text[..=end],
        None => "",
    };
    out.torn = complete.len() != text.len();
    for line in complete.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        out.mid_op = f[0] == "B";
        match f[0] {
            "T" => out.tokens.push((f[1].to_owned(), f[2].parse().unwrap())),
            "A" | "O" => out.acks.push(Ack {
                scope: f[1].to_owned(),
                key: f[2].to_owned(),
                version: f[3].parse().unwrap(),
                token: f[4].parse().unwrap(),
                once: f[0] == "A",
            }),
            "B" | "R" | "H" => {}
            _ => panic!("round {round}: bad log line {line:?}"),
        }
    }
    out
}

/// Every acknowledged write is in the store; returns the problems.
fn verify(store: &Store, acks: &[Ack]) -> Vec<String> {
    let mut bad = Vec::new();
    // An overwritten key counts at its last acknowledgement.
    let mut latest: HashMap<(&str, &str), &Ack> = HashMap::new();
    for a in acks {
        let slot = latest.entry((&a.scope, &a.key)).or_insert(a);
        if a.version > slot.version {
            *slot = a;
        }
    }
    for a in latest.values() {
        match store.get(&a.scope, &a.key, None).unwrap() {
            None => bad.push(format!("acknowledged write lost: {a:?}")),
            Some(e) => {
                let (version, token) = (e.version, e.token.get());
                let ok = if a.once {
                    version == a.version && token == a.token && e.value == a.key.as_bytes()
                } else {
                    version > a.version
                        || (version == a.version && token == a.token && e.value == a.key.as_bytes())
                };
                if !ok {
                    bad.push(format!(
                        "acknowledged {a:?}, the file holds version {version} token {token}"
                    ));
                }
            }
        }
    }
    bad
}

fn integrity(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn kill_9_never_loses_acknowledged_state() {
    let rounds: usize = std::env::var("FENCING_CRASH_ROUNDS")
        .map(|s| s.parse().expect("FENCING_CRASH_ROUNDS must be a number"))
        .unwrap_or(ROUNDS);
    let seed: u64 = match std::env::var("FENCING_TEST_SEED") {
        Ok(s) => s.parse().expect("FENCING_TEST_SEED must be a u64"),
        Err(_) => {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
            now.as_nanos() as u64 ^ u64::from(std::process::id())
        }
    };
    println!("sqlite_crash: seed {seed} (set FENCING_TEST_SEED to replay the delays)");
    let mut rng = Rng(seed);

    let dir = tempfile::Builder::new()
        .prefix("fencing-crash-")
        .tempdir()
        .unwrap();
    let db = dir.path().join("crash.db");
    // What one committed operation costs here (mostly its fsync).
    let store = Store::open(&sqlite_url(&db)).unwrap();
    let probe = Instant::now();
    for _ in 0..10 {
        store.next_token("crash-probe").unwrap();
    }
    let commit_us = u64::try_from(probe.elapsed().as_micros()).unwrap() / 10;
    store.close();
    let delay_us = (DELAY_US.0, DELAY_US.1.max(DELAY_COMMITS * commit_us));

    let exe = std::env::current_exe().unwrap();
    let started = Instant::now();
    // Per scope, the greatest token anyone was handed so far.
    let mut handed: HashMap<String, u64> = HashMap::new();
    // Per scope, the greatest token of an acknowledged write.
    let mut acked: HashMap<String, u64> = HashMap::new();
    let mut all_acks: Vec<Ack> = Vec::new();
    let (mut mid_op, mut torn, mut tokens, mut no_ack_rounds, mut unreported) = (0, 0, 0, 0, 0);
    let mut bad: Vec<String> = Vec::new();

    for round in 0..rounds {
        let log_path = dir.path().join(format!("round-{round}.log"));
        let err_path = dir.path().join(format!("round-{round}.err"));
        let mut child = spawn(
            Command::new(&exe)
                .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
                .env(CHILD, round.to_string())
                .env(CHILD_DB, &db)
                .env(CHILD_LOG, &log_path)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(File::create(&err_path).unwrap()),
        );
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l.ends_with(READY));
        let delay = Duration::from_micros(rng.range(delay_us));
        if ready {
            std::thread::sleep(delay);
        }
        // SIGKILL (std's kill is SIGKILL on Unix, TerminateProcess with
        // exit code 1 on Windows).
        let _ = child.kill();
        // Read to the end so the child never writes into a closed pipe.
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        let status = child.wait().unwrap();
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        assert!(
            ready && killed(&status),
            "round {round}: the child did not run until killed ({status}):\n{}\n{stderr}",
            rest.join("\n")
        );

        let log = parse_log(round, &std::fs::read_to_string(&log_path).unwrap());
        mid_op += usize::from(log.mid_op);
        torn += usize::from(log.torn);
        tokens += log.tokens.len();
        no_ack_rounds += usize::from(log.acks.is_empty());
        for (scope, t) in &log.tokens {
            let max = handed.entry(scope.clone()).or_default();
            *max = (*max).max(*t);
        }
        for a in &log.acks {
            let max = acked.entry(a.scope.clone()).or_default();
            *max = (*max).max(a.token);
        }

        // Reopen after the crash, as the next process would.
        let store = Store::open(&sqlite_url(&db)).unwrap();
        for scope in SCOPES {
            let max_ack = acked.get(scope).copied().unwrap_or(0);
            let fence = store.fence_of(scope).unwrap();
            if fence < max_ack {
                bad.push(format!(
                    "round {round}: {scope} fence {fence} below acknowledged token {max_ack}"
                ));
            }
            let max = handed.entry(scope.to_owned()).or_default();
            // The child was killed after a token was committed but before
            // it could report it: the counter is ahead of what was seen.
            let counter = store.status(scope).unwrap().counter;
            unreported += usize::from(counter > *max);
            let next = store.next_token(scope).unwrap().get();
            if next <= *max {
                bad.push(format!(
                    "round {round}: {scope} issued {next} after token {max} was handed out"
                ));
            }
            *max = (*max).max(next);
        }
        bad.extend(
            verify(&store, &log.acks)
                .into_iter()
                .map(|b| format!("round {round}: {b}")),
        );
        store.close();
        let check = integrity(&db);
        if check != "ok" {
            bad.push(format!("round {round}: integrity_check: {check}"));
        }
        all_acks.extend(log.acks);
        if !bad.is_empty() {
            break;
        }
    }

    // Later crashes must not have lost earlier rounds' writes either.
    if bad.is_empty() {
        let store = Store::open(&sqlite_url(&db)).unwrap();
        bad.extend(verify(&store, &all_acks));
        store.close();
        let check = integrity(&db);
        if check != "ok" {
            bad.push(format!("final integrity_check: {check}"));
        }
    }

    let elapsed = started.elapsed();
    println!(
        "sqlite_crash: {rounds} rounds (processes killed), kill delays {}..={} us (one commit \
         {commit_us} us), {tokens} tokens handed out, {} \
         acknowledged writes, {mid_op} kills inside a call, {no_ack_rounds} rounds killed \
         before their first acknowledgement, {unreported} kills between committing a token and \
         reporting it, {torn} torn log lines, {} violations, {elapsed:?}",
        delay_us.0,
        delay_us.1,
        all_acks.len(),
        bad.len()
    );
    if !bad.is_empty() {
        let kept = dir.keep();
        panic!(
            "seed {seed}; file and logs kept in {}:\n{}",
            kept.display(),
            bad.join("\n")
        );
    }
    // The rounds really crashed in the middle of work.
    assert!(
        mid_op * 2 >= rounds,
        "only {mid_op} of {rounds} kills landed inside a call"
    );
    assert!(
        (rounds - no_ack_rounds) * 4 >= rounds,
        "only {} of {rounds} rounds acknowledged a write",
        rounds - no_ack_rounds
    );
}

#[cfg(unix)]
fn killed(status: &std::process::ExitStatus) -> bool {
    status.signal() == Some(9)
}

#[cfg(windows)]
fn killed(status: &std::process::ExitStatus) -> bool {
    status.code() == Some(1)
}

/// Starts a child. Under Wine, CreateProcess now and then fails with
/// ERROR_INTERNAL_ERROR (1359) when hundreds are started in a row
/// (docs/packaging.md, "Windows"): such a call started nothing, so it is
/// made again, a few times. Any other failure fails the test.
fn spawn(command: &mut Command) -> std::process::Child {
    const ERROR_INTERNAL_ERROR: i32 = 1359;
    let mut tries = 0;
    loop {
        match command.spawn() {
            Ok(child) => return child,
            Err(e)
                if cfg!(windows) && e.raw_os_error() == Some(ERROR_INTERNAL_ERROR) && tries < 5 =>
            {
                tries += 1;
                eprintln!("spawn failed ({e}): trying again");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("cannot start a child: {e}"),
        }
    }
}
