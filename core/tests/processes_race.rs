//! Many real processes race on three scopes of one store (an SQLite file, or
//! a PostgreSQL schema) while the parent freezes them (SIGSTOP) for longer than their leases last, as a GC
//! pause or a VM suspend would. Every child logs each operation and its
//! outcome to its own file; a checker then proves, from the logs and the
//! file alone, that fencing held:
//!
//! - no token was issued twice in a scope, and an acquire that started after
//!   another one returned got a greater token;
//! - per key, accepted writes ordered by the store's own version never carry
//!   a smaller token than the write before them, versions run 1, 2, 3, ...
//!   without gaps, and the file holds exactly the last accepted write;
//! - a write (or claim) that started after a greater token was handed out or
//!   accepted in its scope was rejected with `STALE_TOKEN`, and every
//!   `STALE_TOKEN` named a current fence that is a real token greater than
//!   the presented one;
//! - in particular, a child whose lease expired while it was frozen, and
//!   whose scope was taken by another child meanwhile, had its writes after
//!   the resume rejected.
//!
//! Timestamps are wall-clock microseconds (`CLOCK_REALTIME`, shared by all
//! processes of the host). They only order events that are separated in real
//! time: an event logged as finished before another one was logged as
//! started really happened first. Nothing is asserted about how long
//! anything takes.

// The parent freezes its children with kill -STOP: unix only.
#![cfg(unix)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fencing::{Error, Fence, Op, Store};

mod support;
use support::sqlite_url;
use support::Rng;

const CHILD: &str = "FENCING_RACE_CHILD";
const CHILD_URL: &str = "FENCING_RACE_URL";
const CHILD_LOG: &str = "FENCING_RACE_LOG";
const CHILD_DEADLINE: &str = "FENCING_RACE_DEADLINE_US";
const CHILD_SEED: &str = "FENCING_RACE_SEED";

const CHILDREN: usize = 8;
const SCOPES: [&str; 3] = ["race-a", "race-b", "race-c"];
const KEYS: [&str; 2] = ["k0", "k1"];
/// How long the children race.
const RUN: Duration = Duration::from_secs(10);
/// How long the parent waits for the children to stop after `RUN`.
const GRACE: Duration = Duration::from_secs(60);
/// Lease TTLs, in ms.
const TTL_MS: (u64, u64) = (150, 300);
/// Pauses, in ms: always longer than the longest TTL.
const PAUSE_MS: (u64, u64) = (600, 900);
/// Gap between the starts of two pauses, in ms.
const PAUSE_GAP_MS: (u64, u64) = (80, 250);
/// At most this many children are frozen at once.
const MAX_PAUSED: usize = 3;

fn seed() -> u64 {
    match std::env::var("FENCING_TEST_SEED") {
        Ok(s) => s.parse().expect("FENCING_TEST_SEED must be a u64"),
        Err(_) => now_us() ^ (u64::from(std::process::id()) << 32),
    }
}

/// Wall-clock microseconds, comparable between processes of one host.
fn now_us() -> u64 {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    u64::try_from(d.as_micros()).unwrap()
}

// ----- the child -----

/// One operation and its outcome, as a child logs it.
#[derive(Clone, Debug, Default)]
struct Rec {
    child: usize,
    pid: u32,
    /// Taken right before the call ("about to ...").
    t0: u64,
    /// Taken right after the call returned.
    t1: u64,
    scope: String,
    /// `acquire`, `claim`, `put`, `apply`, `release`, `done`.
    op: String,
    /// The token presented, or the one an acquire was handed.
    token: u64,
    seq: u64,
    key: String,
    /// `OK` or an error code.
    outcome: String,
    /// The entry's version after an accepted write.
    version: u64,
    /// `STALE_TOKEN`: the current fence; `LEASE_HELD`: the holder's token.
    current: u64,
    ttl_ms: u64,
    released: bool,
}

impl Rec {
    fn line(&self) -> String {
        format!(
            "REC child={} pid={} t0={} t1={} scope={} op={} token={} seq={} key={} outcome={} \
             version={} current={} ttl_ms={} released={}\n",
            self.child,
            self.pid,
            self.t0,
            self.t1,
            self.scope,
            self.op,
            self.token,
            self.seq,
            if self.key.is_empty() { "-" } else { &self.key },
            self.outcome,
            self.version,
            self.current,
            self.ttl_ms,
            self.released,
        )
    }

    fn parse(line: &str) -> Option<Rec> {
        let rest = line.strip_prefix("REC ")?;
        let fields: HashMap<&str, &str> = rest
            .split_whitespace()
            .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
            .collect();
        let num = |name: &str| -> Option<u64> { fields.get(name)?.parse().ok() };
        let text = |name: &str| -> Option<String> { Some((*fields.get(name)?).to_owned()) };
        let key = text("key")?;
        Some(Rec {
            child: usize::try_from(num("child")?).ok()?,
            pid: u32::try_from(num("pid")?).ok()?,
            t0: num("t0")?,
            t1: num("t1")?,
            scope: text("scope")?,
            op: text("op")?,
            token: num("token")?,
            seq: num("seq")?,
            key: if key == "-" { String::new() } else { key },
            outcome: text("outcome")?,
            version: num("version")?,
            current: num("current")?,
            ttl_ms: num("ttl_ms")?,
            released: text("released")? == "true",
        })
    }
}

fn outcome<T>(r: &Result<T, Error>) -> String {
    match r {
        Ok(_) => "OK".to_owned(),
        Err(e) => e.code().as_str().to_owned(),
    }
}

fn stale_current<T>(r: &Result<T, Error>) -> u64 {
    match r {
        Err(Error::StaleToken { current, .. }) => *current,
        _ => 0,
    }
}

/// Runs only inside the children of the race tests below.
#[test]
fn race_child() {
    let Some(child) = std::env::var_os(CHILD) else {
        return;
    };
    let child: usize = child.to_str().unwrap().parse().unwrap();
    let url = std::env::var(CHILD_URL).unwrap();
    let log_path = PathBuf::from(std::env::var_os(CHILD_LOG).unwrap());
    let deadline: u64 = std::env::var(CHILD_DEADLINE).unwrap().parse().unwrap();
    let mut rng = Rng(std::env::var(CHILD_SEED).unwrap().parse().unwrap());

    let store = Store::open(&url).unwrap();
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .unwrap();
    // One write(2) per line: a line is in the file as soon as it is logged.
    let pid = std::process::id();
    let mut emit = |rec: &Rec| {
        let rec = Rec { pid, ..rec.clone() };
        log.write_all(rec.line().as_bytes()).unwrap();
    };
    let holder = format!("child-{child}@{pid}");

    while now_us() < deadline {
        let scope = SCOPES[rng.below(SCOPES.len() as u64) as usize];
        let ttl_ms = rng.range(TTL_MS);
        let ttl = Duration::from_millis(ttl_ms);
        let base = Rec {
            child,
            scope: scope.to_owned(),
            ttl_ms,
            ..Rec::default()
        };

        let t0 = now_us();
        let acquired = if rng.below(2) == 0 {
            store.acquire(scope, &holder, ttl)
        } else {
            let timeout = Duration::from_millis(rng.range((20, 300)));
            store.acquire_wait(scope, &holder, ttl, timeout)
        };
        let t1 = now_us();
        emit(&Rec {
            t0,
            t1,
            op: "acquire".into(),
            token: acquired.as_ref().map_or(0, |l| l.token.get()),
            outcome: outcome(&acquired),
            current: match &acquired {
                Err(Error::LeaseHeld { token, .. }) => token.get(),
                _ => 0,
            },
            ..base.clone()
        });
        let lease = match acquired {
            Ok(lease) => lease,
            Err(Error::LeaseHeld { .. } | Error::Timeout) => {
                std::thread::sleep(Duration::from_millis(rng.range((1, 20))));
                continue;
            }
            // Unexpected: logged above, the checker reports it.
            Err(_) => continue,
        };
        let token = lease.token;
        let base = Rec {
            token: token.get(),
            ..base
        };

        // Shut older holders out before reading (a no-op with eager fencing,
        // unless this child was frozen right after acquiring).
        let t0 = now_us();
        let claimed = store.claim(scope, &Fence::new(token).with_holder(&holder));
        let t1 = now_us();
        emit(&Rec {
            t0,
            t1,
            op: "claim".into(),
            outcome: outcome(&claimed),
            current: stale_current(&claimed),
            ..base.clone()
        });

        // At least two writes with this token: a child frozen between them
        // writes again with its old token right after it is resumed. Every
        // write is attempted even after a rejection, since a stale token must
        // stay stale.
        let writes = rng.range((2, 4));
        for seq in 1..=writes {
            if seq > 1 && rng.below(4) != 0 {
                std::thread::sleep(Duration::from_millis(rng.range((1, 50))));
            }
            let fence = Fence::new(token).with_seq(seq).with_holder(&holder);
            let value = format!("{holder}:{token}:{seq}");
            let base = Rec {
                seq,
                ..base.clone()
            };
            if rng.below(4) == 0 {
                let ops: Vec<Op> = KEYS
                    .iter()
                    .map(|k| Op::put(*k, value.clone().into_bytes()))
                    .collect();
                let t0 = now_us();
                let result = store.apply(scope, &fence, ops);
                let t1 = now_us();
                for (i, key) in KEYS.iter().enumerate() {
                    emit(&Rec {
                        t0,
                        t1,
                        op: "apply".into(),
                        key: (*key).to_owned(),
                        outcome: outcome(&result),
                        version: result.as_ref().map_or(0, |r| r[i].version),
                        current: stale_current(&result),
                        ..base.clone()
                    });
                }
            } else {
                let key = KEYS[rng.below(KEYS.len() as u64) as usize];
                let t0 = now_us();
                let result = store.put(scope, key, value.as_bytes(), &fence);
                let t1 = now_us();
                emit(&Rec {
                    t0,
                    t1,
                    op: "put".into(),
                    key: key.to_owned(),
                    outcome: outcome(&result),
                    version: result.as_ref().map_or(0, |r| r.version),
                    current: stale_current(&result),
                    ..base.clone()
                });
            }
        }

        let t0 = now_us();
        let released = store.release(scope, token);
        let t1 = now_us();
        emit(&Rec {
            t0,
            t1,
            op: "release".into(),
            outcome: outcome(&released),
            released: released == Ok(true),
            ..base
        });
    }
    let t = now_us();
    emit(&Rec {
        child,
        t0: t,
        t1: t,
        scope: "-".into(),
        op: "done".into(),
        outcome: "OK".into(),
        ..Rec::default()
    });
}

// ----- the parent -----

/// Follows one child's log as it grows, to tell whether the child holds a
/// lease right now (its last line is a successful acquire, a claim or a
/// write). Only used to aim some pauses at holders; the checker never relies
/// on it.
struct Tail {
    path: PathBuf,
    offset: u64,
    partial: String,
    holding: bool,
}

impl Tail {
    fn holding(&mut self) -> bool {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut file) = File::open(&self.path) else {
            return false;
        };
        file.seek(SeekFrom::Start(self.offset)).unwrap();
        let mut fresh = String::new();
        self.offset += file.read_to_string(&mut fresh).unwrap() as u64;
        self.partial.push_str(&fresh);
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            if let Some(r) = Rec::parse(line.trim_end()) {
                self.holding = match r.op.as_str() {
                    "acquire" => r.outcome == "OK",
                    "claim" | "put" | "apply" => true,
                    _ => false,
                };
            }
        }
        self.holding
    }
}

/// A window during which the parent had one child frozen: `stop` is taken
/// before `kill -STOP` was sent, `cont` after `kill -CONT` returned.
#[derive(Clone, Copy, Debug)]
struct Pause {
    child: usize,
    stop: u64,
    cont: u64,
}

fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {sig} {} failed", child.id());
}

/// Owns the children: if the parent fails half-way, none of them is left
/// frozen or running.
struct Reaper(Vec<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = Command::new("kill")
                    .args(["-CONT", &c.id().to_string()])
                    .status();
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// The greatest token among `events` (sorted by `t1`, with running maxima)
/// that finished strictly before `t`; 0 if none.
fn max_before(events: &[(u64, u64)], t: u64) -> u64 {
    let n = events.partition_point(|&(t1, _)| t1 < t);
    if n == 0 {
        0
    } else {
        events[n - 1].1
    }
}

/// `(t1, token)` sorted by `t1`, the token replaced by the running maximum.
fn running_max(mut events: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    events.sort_unstable();
    let mut max = 0;
    for e in &mut events {
        max = max.max(e.1);
        e.1 = max;
    }
    events
}

#[derive(Debug, Default)]
struct Figures {
    records: usize,
    acquires: usize,
    lease_held: usize,
    timeouts: usize,
    claims: usize,
    writes: usize,
    accepted: usize,
    stale: usize,
    pauses: usize,
    frozen_holders: usize,
    stale_after_resume: usize,
    released: usize,
}

fn check(recs: &[Rec], pauses: &[Pause], store: &Store) -> (Figures, Vec<String>) {
    let mut f = Figures {
        records: recs.len(),
        pauses: pauses.len(),
        ..Figures::default()
    };
    let mut bad = Vec::new();

    for r in recs {
        let expected: &[&str] = match r.op.as_str() {
            "acquire" => &["OK", "LEASE_HELD", "TIMEOUT"],
            "claim" | "put" | "apply" => &["OK", "STALE_TOKEN"],
            "release" | "done" => &["OK"],
            _ => &[],
        };
        if !expected.contains(&r.outcome.as_str()) {
            bad.push(format!("unexpected outcome: {r:?}"));
        }
    }

    for scope in SCOPES {
        let in_scope: Vec<&Rec> = recs.iter().filter(|r| r.scope == scope).collect();
        let acquires: Vec<&Rec> = in_scope
            .iter()
            .copied()
            .filter(|r| r.op == "acquire" && r.outcome == "OK")
            .collect();
        f.acquires += acquires.len();
        f.lease_held += in_scope
            .iter()
            .filter(|r| r.op == "acquire" && r.outcome == "LEASE_HELD")
            .count();
        f.timeouts += in_scope
            .iter()
            .filter(|r| r.op == "acquire" && r.outcome == "TIMEOUT")
            .count();
        f.released += in_scope
            .iter()
            .filter(|r| r.op == "release" && r.released)
            .count();

        // No token issued twice.
        let mut issued: HashMap<u64, &Rec> = HashMap::new();
        for a in &acquires {
            if let Some(first) = issued.insert(a.token, a) {
                bad.push(format!(
                    "{scope}: token {} issued twice: {first:?} and {a:?}",
                    a.token
                ));
            }
        }
        // An acquire that started after another returned got a greater token.
        let acquired_by = running_max(acquires.iter().map(|a| (a.t1, a.token)).collect());
        for a in &acquires {
            let before = max_before(&acquired_by, a.t0);
            if a.token <= before {
                bad.push(format!(
                    "{scope}: acquire got {} after token {before} was handed out: {a:?}",
                    a.token
                ));
            }
        }
        // A held lease is one that was handed out.
        for r in in_scope.iter().filter(|r| r.outcome == "LEASE_HELD") {
            if !issued.contains_key(&r.current) {
                bad.push(format!(
                    "{scope}: LEASE_HELD names a token never issued: {r:?}"
                ));
            }
        }

        // Writes and claims against everything that finished before them.
        let fenced: Vec<&Rec> = in_scope
            .iter()
            .copied()
            .filter(|r| matches!(r.op.as_str(), "claim" | "put" | "apply"))
            .collect();
        // An apply is logged once per key; count and judge it once.
        let mut calls: Vec<&Rec> = Vec::new();
        let mut seen_calls = HashSet::new();
        for r in &fenced {
            if seen_calls.insert((r.child, r.t0, r.token, r.seq, r.op.clone())) {
                calls.push(r);
            }
        }
        let accepted_by = running_max(
            calls
                .iter()
                .filter(|r| r.outcome == "OK")
                .map(|r| (r.t1, r.token))
                .collect(),
        );
        for r in &calls {
            if r.op == "claim" {
                f.claims += 1;
            } else {
                f.writes += 1;
            }
            let floor = max_before(&acquired_by, r.t0).max(max_before(&accepted_by, r.t0));
            match r.outcome.as_str() {
                "OK" => {
                    if r.op != "claim" {
                        f.accepted += 1;
                    }
                    if r.token < floor {
                        bad.push(format!(
                            "{scope}: stale {} accepted: token {} after token {floor} was \
                             handed out or accepted: {r:?}",
                            r.op, r.token
                        ));
                    }
                }
                "STALE_TOKEN" => {
                    f.stale += 1;
                    if r.current <= r.token {
                        bad.push(format!(
                            "{scope}: STALE_TOKEN names current {} not greater than presented \
                             {}: {r:?}",
                            r.current, r.token
                        ));
                    }
                    if r.current < floor {
                        bad.push(format!(
                            "{scope}: STALE_TOKEN names current {} below token {floor} that was \
                             already handed out or accepted: {r:?}",
                            r.current
                        ));
                    }
                    if !issued.contains_key(&r.current) {
                        bad.push(format!(
                            "{scope}: STALE_TOKEN names current {} that no acquire returned: \
                             {r:?}",
                            r.current
                        ));
                    }
                }
                _ => {}
            }
        }

        // Writes by a child that was frozen while it held its lease, after
        // the lease expired, issued after the resume, once another child had
        // taken the scope: each must have been rejected.
        let mut frozen_leases = HashSet::new();
        for r in calls.iter().filter(|r| r.op != "claim") {
            let Some(acq) = issued.get(&r.token).filter(|a| a.child == r.child) else {
                bad.push(format!(
                    "{scope}: write with a token its child never acquired: {r:?}"
                ));
                continue;
            };
            let frozen = pauses.iter().any(|p| {
                p.child == r.child
                    && acq.t1 < p.stop
                    && p.cont < r.t0
                    && acq.t1 + acq.ttl_ms * 1000 < p.cont
            });
            let superseded = max_before(&acquired_by, r.t0) > r.token;
            if frozen && superseded {
                frozen_leases.insert((r.child, r.token));
                if r.outcome == "STALE_TOKEN" {
                    f.stale_after_resume += 1;
                } else {
                    bad.push(format!(
                        "{scope}: a write after a pause past the lease and a takeover was \
                         accepted: {r:?}"
                    ));
                }
            }
        }
        f.frozen_holders += frozen_leases.len();

        // Per key, in the store's own order (the version), tokens never
        // decrease; versions have no gaps; the file holds the last write.
        for key in KEYS {
            let mut by_version: BTreeMap<u64, &Rec> = BTreeMap::new();
            for r in fenced
                .iter()
                .filter(|r| r.op != "claim" && r.key == key && r.outcome == "OK")
            {
                if let Some(other) = by_version.insert(r.version, r) {
                    bad.push(format!(
                        "{scope}/{key}: version {} acknowledged twice: {other:?} and {r:?}",
                        r.version
                    ));
                }
            }
            let mut last_token = 0;
            for (i, (version, r)) in by_version.iter().enumerate() {
                if *version != i as u64 + 1 {
                    bad.push(format!(
                        "{scope}/{key}: versions have a gap: expected {}, found {version}",
                        i + 1
                    ));
                    break;
                }
                if r.token < last_token {
                    bad.push(format!(
                        "{scope}/{key}: version {version} has token {} below the token \
                         {last_token} of the version before it: {r:?}",
                        r.token
                    ));
                }
                last_token = r.token;
            }
            let stored = store.get(scope, key, None).unwrap();
            match (by_version.last_key_value(), stored) {
                (None, None) => {}
                (Some((version, r)), Some(e)) => {
                    let value = format!("child-{}@{}:{}:{}", r.child, r.pid, r.token, r.seq);
                    if e.version != *version
                        || e.token.get() != r.token
                        || e.value != value.as_bytes()
                    {
                        bad.push(format!(
                            "{scope}/{key}: the file holds version {} token {} value {:?}, the \
                             last acknowledged write is {r:?}",
                            e.version,
                            e.token,
                            String::from_utf8_lossy(&e.value)
                        ));
                    }
                }
                (last, stored) => bad.push(format!(
                    "{scope}/{key}: last acknowledged write {last:?}, file holds {stored:?}"
                )),
            }
        }
    }
    (f, bad)
}

#[test]
fn processes_race_on_one_sqlite_file() {
    let dir = tempfile::Builder::new()
        .prefix("fencing-race-")
        .tempdir()
        .unwrap();
    let db = dir.path().join("race.db");
    let _dir = race("sqlite_processes", &sqlite_url(&db), dir);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
}

#[test]
fn processes_race_on_postgres() {
    let Some(base) = support::postgres_test_url() else {
        return;
    };
    let dir = tempfile::Builder::new()
        .prefix("fencing-race-")
        .tempdir()
        .unwrap();
    let url = format!("{base}?schema={}", support::fresh_schema("race"));
    race("postgres_processes", &url, dir);
}

/// Runs the race on `url`, checks it, and prints one summary line. The logs
/// go to `dir`, which is kept when the check fails.
fn race(label: &str, url: &str, dir: tempfile::TempDir) -> tempfile::TempDir {
    // Create the store's schema once, before the race.
    Store::open(url).unwrap().close();

    let seed = seed();
    println!("{label}: seed {seed} (set FENCING_TEST_SEED to replay the choices)");
    let mut rng = Rng(seed);
    let started = Instant::now();
    let deadline = now_us() + u64::try_from(RUN.as_micros()).unwrap();

    let exe = std::env::current_exe().unwrap();
    let mut children = Reaper(
        (0..CHILDREN)
            .map(|i| {
                let out = File::create(dir.path().join(format!("child-{i}.out"))).unwrap();
                Command::new(&exe)
                    .args(["--exact", "race_child", "--nocapture", "--test-threads=1"])
                    .env(CHILD, i.to_string())
                    .env(CHILD_URL, url)
                    .env(CHILD_LOG, dir.path().join(format!("child-{i}.log")))
                    .env(CHILD_DEADLINE, deadline.to_string())
                    .env(CHILD_SEED, rng.next().to_string())
                    .stdin(Stdio::null())
                    .stdout(out.try_clone().unwrap())
                    .stderr(out)
                    .spawn()
                    .unwrap()
            })
            .collect(),
    );

    // Freeze random children at random moments, each for longer than any
    // lease lasts, a few at a time. Two pauses in three go to a child that
    // seems to hold a lease, when there is one, so that frozen holders are
    // common rather than lucky.
    let mut tails: Vec<Tail> = (0..CHILDREN)
        .map(|i| Tail {
            path: dir.path().join(format!("child-{i}.log")),
            offset: 0,
            partial: String::new(),
            holding: false,
        })
        .collect();
    let mut pauses = Vec::new();
    let mut frozen: Vec<Option<(u64, Instant)>> = vec![None; CHILDREN];
    let mut next_pause = Instant::now() + Duration::from_millis(rng.range(PAUSE_GAP_MS));
    while now_us() < deadline {
        let now = Instant::now();
        for (i, slot) in frozen.iter_mut().enumerate() {
            if let Some((stop, until)) = *slot {
                if now >= until {
                    signal(&children.0[i], "-CONT");
                    pauses.push(Pause {
                        child: i,
                        stop,
                        cont: now_us(),
                    });
                    *slot = None;
                }
            }
        }
        if now >= next_pause {
            let running: Vec<usize> = (0..CHILDREN).filter(|&i| frozen[i].is_none()).collect();
            if CHILDREN - running.len() < MAX_PAUSED {
                let holders: Vec<usize> = running
                    .iter()
                    .copied()
                    .filter(|&i| tails[i].holding())
                    .collect();
                let pool = if !holders.is_empty() && rng.below(3) != 0 {
                    &holders
                } else {
                    &running
                };
                let i = pool[rng.below(pool.len() as u64) as usize];
                let stop = now_us();
                signal(&children.0[i], "-STOP");
                let until = Instant::now() + Duration::from_millis(rng.range(PAUSE_MS));
                frozen[i] = Some((stop, until));
            }
            next_pause = now + Duration::from_millis(rng.range(PAUSE_GAP_MS));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    for (i, slot) in frozen.iter_mut().enumerate() {
        if let Some((stop, _)) = slot.take() {
            signal(&children.0[i], "-CONT");
            pauses.push(Pause {
                child: i,
                stop,
                cont: now_us(),
            });
        }
    }

    // Every child stops itself at the deadline; give them a bounded grace.
    let limit = Instant::now() + GRACE;
    let mut statuses = [None; CHILDREN];
    while statuses.iter().any(Option::is_none) && Instant::now() < limit {
        for (i, c) in children.0.iter_mut().enumerate() {
            if statuses[i].is_none() {
                statuses[i] = c.try_wait().unwrap();
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut hung = Vec::new();
    for (i, c) in children.0.iter_mut().enumerate() {
        if statuses[i].is_none() {
            hung.push(i);
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    let output = |i: usize| {
        std::fs::read_to_string(dir.path().join(format!("child-{i}.out"))).unwrap_or_default()
    };
    assert!(
        hung.is_empty(),
        "children {hung:?} did not stop within {GRACE:?} after the run; output of the first:\n{}",
        output(hung[0])
    );
    for (i, s) in statuses.iter().enumerate() {
        let s = s.unwrap();
        assert!(s.success(), "child {i} failed ({s}):\n{}", output(i));
    }
    let elapsed = started.elapsed();

    // Read every log to the end.
    let mut recs = Vec::new();
    for i in 0..CHILDREN {
        let log = std::fs::read_to_string(dir.path().join(format!("child-{i}.log"))).unwrap();
        for line in log.lines() {
            let rec = Rec::parse(line).unwrap_or_else(|| panic!("child {i}: bad line {line:?}"));
            assert_eq!(rec.child, i, "{line}");
            recs.push(rec);
        }
        assert!(
            recs.last().is_some_and(|r| r.op == "done" && r.child == i),
            "child {i} did not finish its log"
        );
    }

    let store = Store::open(url).unwrap();
    let (figures, bad) = check(&recs, &pauses, &store);
    store.close();

    let f = &figures;
    println!(
        "{label}: {CHILDREN} processes, {} log records, {} leases ({} LEASE_HELD, {} \
         TIMEOUT), {} claims, {} writes ({} accepted, {} STALE_TOKEN), {} pauses, {} frozen \
         holders superseded, {} writes rejected after a resume, {} releases, {} violations, \
         run {elapsed:?}",
        f.records,
        f.acquires,
        f.lease_held,
        f.timeouts,
        f.claims,
        f.writes,
        f.accepted,
        f.stale,
        f.pauses,
        f.frozen_holders,
        f.stale_after_resume,
        f.released,
        bad.len()
    );
    if !bad.is_empty() {
        let kept = dir.keep();
        panic!(
            "{} violations (seed {seed}; logs kept in {}):\n{}",
            bad.len(),
            kept.display(),
            bad.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
        );
    }
    // The run really exercised what it checks.
    assert!(figures.pauses >= 5, "too few pauses: {figures:?}");
    assert!(
        figures.stale_after_resume >= 1,
        "no write after a pause was rejected: {figures:?}"
    );
    assert!(
        figures.accepted >= 100,
        "too few accepted writes: {figures:?}"
    );
    assert!(figures.acquires >= 50, "too few leases: {figures:?}");
    dir
}

/// The same race through PgBouncer in transaction mode (docs/postgres.md,
/// "Poolers"): 8 processes, each a connection of its own, over a server
/// pool of 3.
#[test]
fn processes_race_through_pgbouncer() {
    let Some(bouncer) = support::pgbouncer_test_url() else {
        return;
    };
    let dir = tempfile::Builder::new()
        .prefix("fencing-race-")
        .tempdir()
        .unwrap();
    let url = format!(
        "{bouncer}?schema={}&pooler=transaction&pool_size=1",
        support::fresh_schema("bouncerrace")
    );
    race("pgbouncer_processes", &url, dir);
}
