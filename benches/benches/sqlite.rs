//! `sqlite:` beside raw rusqlite running the classic hand-written SQL with the
//! same pragmas (WAL, synchronous=FULL), measured in the same run, at 1, 4
//! and 8 processes on one database file each (the concurrency curve:
//! acquisitions, fenced writes and the user's fenced UPDATE at every point).
//!
//! ```text
//! cargo bench -p fencing-benches --bench sqlite            # full run
//! cargo bench -p fencing-benches --bench sqlite -- --quick # fewer, shorter rounds
//! cargo bench -p fencing-benches --bench sqlite -- batch   # only lines containing "batch"
//! cargo test -p fencing-benches --benches                  # smoke: a few operations
//! ```
//!
//! The work runs in worker processes (this same executable, started again
//! with `FENCING_BENCH_SQLITE_WORKER` set), each with its own library store
//! and its own raw connection, both opened once: 1 process uses one worker,
//! 4 processes four, 8 eight, all on the same two files (`fencing.db`, `raw.db`).
//! The parent tells the workers what to run over pipes and times the wall
//! clock from the command to the last worker's answer.
//!
//! One line fences the user's own table with plain SQL (docs/sqlite.md): an
//! insert into the `fencing_check` view and the user's UPDATE in one
//! `BEGIN IMMEDIATE` transaction, beside the classic `UPDATE ... WHERE
//! fencing_token <= ?`, both through rusqlite on the same file (the
//! library's `fencing.db`, table `user_state`), one row per worker.
//!
//! Each line runs several rounds; each round alternates the library and its
//! baseline in chunks so that both meet the same disk weather (fsync times
//! swing widely), and prints the median rate of each, their ratio and the
//! goal. Results also go to `FENCING_BENCH_OUT` (see `fencing_benches::report`).
//! Nothing here asserts on timings.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use fencing::{Fence, Op, Store, Token};
use fencing_benches::report::{self, Goal, Line};
use fencing_benches::run::{raw_sqlite, Args};
use rusqlite::{params, Connection, Statement};

/// Acquisition scopes per worker: with a 1 ms lease, a scope's lease has
/// long expired when its turn comes round again.
const SCOPES_PER_WORKER: usize = 250;
/// The concurrency curve, in worker processes.
const PROCESSES: [usize; 3] = [1, 4, 8];
const MAX_WORKERS: usize = 8;
const VALUE: [u8; 64] = [0x5A; 64];
const WORKER_ENV: &str = "FENCING_BENCH_SQLITE_WORKER";
/// Chunks per round: the library and the baseline take turns every chunk.
const CHUNKS: usize = 10;

struct Plan {
    rounds: usize,
    ops: usize,
    /// Only lines whose label contains this run (the first free argument).
    filter: Option<String>,
    /// Run by `cargo test` (no `--bench`) or with `--smoke`: exercise the
    /// code, measure nothing.
    smoke: bool,
}

fn plan() -> Plan {
    let args = Args::from_env();
    let (rounds, ops) = args.pick((1, CHUNKS), (3, 200), (9, 1000));
    Plan {
        rounds,
        ops,
        smoke: args.smoke(),
        filter: args.filter,
    }
}

// ----- the worker process -----

fn acquire_scope(worker: usize, i: usize) -> String {
    format!("report:{worker}:{}", i % SCOPES_PER_WORKER)
}

fn write_scope(worker: usize) -> String {
    format!("report-{worker}")
}

/// A value that differs from the previous one: SQLite skips the write (and
/// its fsync) of an UPDATE that changes nothing, which would flatter the
/// baseline.
fn value(i: usize) -> [u8; 64] {
    let mut v = VALUE;
    v[..8].copy_from_slice(&(i as u64).to_le_bytes());
    v
}

struct Worker<'c> {
    id: usize,
    store: Store,
    raw: &'c Connection,
    names: Vec<String>,
    scope: String,
    row: String,
    /// The fence of accepted writes; `old` is the stale one once `stale-setup` ran.
    fence: Fence,
    token: Token,
    old: Option<Fence>,
    counter: Statement<'c>,
    fenced_update: Statement<'c>,
    raise_fence: Statement<'c>,
    upsert: Statement<'c>,
    /// The user's own connection on the library's file, and its statements.
    user: &'c Connection,
    user_check: Statement<'c>,
    user_update: Statement<'c>,
    user_classic: Statement<'c>,
    batches: [Vec<Op>; 3],
}

fn batch_of(n: usize) -> Vec<Op> {
    (0..n)
        .map(|k| Op::put(format!("key-{k}"), VALUE.to_vec()))
        .collect()
}

impl<'c> Worker<'c> {
    fn new(id: usize, dir: &Path, raw: &'c Connection, user: &'c Connection) -> Worker<'c> {
        let store = Store::open(&format!("sqlite:{}", dir.join("fencing.db").display())).unwrap();
        let scope = write_scope(id);
        let token = store.next_token(&scope).unwrap();
        Worker {
            id,
            names: (0..SCOPES_PER_WORKER)
                .map(|i| acquire_scope(id, i))
                .collect(),
            row: format!("report:{id}"),
            fence: Fence::new(token),
            token,
            old: None,
            scope,
            counter: raw
                .prepare(
                    "UPDATE lease_counter SET value = value + 1 WHERE lease_name = ?1 \
                     RETURNING value",
                )
                .unwrap(),
            fenced_update: raw
                .prepare(
                    "UPDATE report_state SET body = ?1, fencing_token = ?2 \
                     WHERE report_id = ?3 AND fencing_token <= ?2",
                )
                .unwrap(),
            raise_fence: raw
                .prepare(
                    "UPDATE report_state SET fencing_token = ?1 \
                     WHERE report_id = ?2 AND fencing_token <= ?1",
                )
                .unwrap(),
            upsert: raw
                .prepare(
                    "INSERT INTO report_kv (report_id, key, body, version) VALUES (?1, ?2, ?3, 1) \
                     ON CONFLICT (report_id, key) DO UPDATE SET body = excluded.body, \
                     version = version + 1",
                )
                .unwrap(),
            user_check: user
                .prepare("INSERT INTO fencing_check (scope, token) VALUES (?1, ?2)")
                .unwrap(),
            user_update: user
                .prepare("UPDATE user_state SET body = ?1, fencing_token = ?2 WHERE id = ?3")
                .unwrap(),
            user_classic: user
                .prepare(
                    "UPDATE user_state SET body = ?1, fencing_token = ?2 \
                     WHERE id = ?3 AND fencing_token <= ?2",
                )
                .unwrap(),
            user,
            batches: [batch_of(1), batch_of(10), batch_of(100)],
            store,
            raw,
        }
    }

    fn run(&mut self, what: &str, ours: bool, count: usize, start: usize) {
        for i in start..start + count {
            match (what, ours) {
                ("acquire", true) => {
                    let name = &self.names[i % SCOPES_PER_WORKER];
                    self.store
                        .acquire(name, "bench", Duration::from_millis(1))
                        .unwrap();
                }
                ("acquire", false) => {
                    // Stepped to the end: only then does the autocommit
                    // transaction commit the shortest way (query_row resets
                    // it mid-statement).
                    let name = &self.names[i % SCOPES_PER_WORKER];
                    let mut rows = self.counter.query([name]).unwrap();
                    let _: i64 = rows.next().unwrap().unwrap().get(0).unwrap();
                    assert!(rows.next().unwrap().is_none());
                }
                ("put", true) => {
                    self.store
                        .put(&self.scope, "body", &value(i), &self.fence)
                        .unwrap();
                }
                ("put", false) => {
                    let n = self
                        .fenced_update
                        .execute(params![&value(i)[..], self.token.get() as i64, &self.row])
                        .unwrap();
                    assert_eq!(n, 1);
                }
                ("user", true) => {
                    // The check and the user's UPDATE, one transaction.
                    self.user.execute_batch("BEGIN IMMEDIATE").unwrap();
                    self.user_check
                        .execute(params![&self.row, USER_TOKEN])
                        .unwrap();
                    let n = self
                        .user_update
                        .execute(params![&value(i)[..], USER_TOKEN, self.id as i64])
                        .unwrap();
                    assert_eq!(n, 1);
                    self.user.execute_batch("COMMIT").unwrap();
                }
                ("user", false) => {
                    let n = self
                        .user_classic
                        .execute(params![&value(i)[..], USER_TOKEN, self.id as i64])
                        .unwrap();
                    assert_eq!(n, 1);
                }
                ("stale", true) => {
                    let old = self.old.as_ref().expect("stale-setup first");
                    assert!(self.store.put(&self.scope, "body", &value(i), old).is_err());
                }
                ("stale", false) => {
                    let n = self
                        .fenced_update
                        .execute(params![
                            &value(i)[..],
                            self.token.get() as i64 - 1,
                            &self.row
                        ])
                        .unwrap();
                    assert_eq!(n, 0);
                }
                (b, true) if b.starts_with("batch") => {
                    let ops = self.batches[batch_index(b)].clone();
                    self.store.apply(&self.scope, &self.fence, ops).unwrap();
                }
                (b, false) if b.starts_with("batch") => {
                    // The classic fenced batch: one transaction that checks
                    // and raises the fence row, then upserts each key.
                    let n = BATCHES[batch_index(b)];
                    self.raw.execute_batch("BEGIN IMMEDIATE").unwrap();
                    let ok = self
                        .raise_fence
                        .execute(params![self.token.get() as i64, &self.row])
                        .unwrap();
                    assert_eq!(ok, 1);
                    let body = value(i);
                    for k in 0..n {
                        self.upsert
                            .execute(params![&self.row, format!("key-{k}"), &body[..]])
                            .unwrap();
                    }
                    self.raw.execute_batch("COMMIT").unwrap();
                }
                ("single100", true) => {
                    for op in &self.batches[2] {
                        self.store
                            .execute(&self.scope, &self.fence, op.clone())
                            .unwrap();
                    }
                }
                _ => panic!("worker {}: unknown command {what}", self.id),
            }
        }
    }

    /// Moves the fence above the current token on both sides: the old
    /// token is then stale, and later lines write with the new one.
    fn stale_setup(&mut self) {
        let newer = self.store.next_token(&self.scope).unwrap();
        self.store.claim(&self.scope, &Fence::new(newer)).unwrap();
        self.old = Some(std::mem::replace(&mut self.fence, Fence::new(newer)));
        let n = self
            .raise_fence
            .execute(params![self.token.get() as i64 + 1, &self.row])
            .unwrap();
        assert_eq!(n, 1);
        // The raw side's accepted writes present the new token from now on.
        self.token = Token::new(self.token.get() + 1).unwrap();
    }
}

const BATCHES: [usize; 3] = [1, 10, 100];

/// The token both sides of the `user` line present: equal to the fence (or
/// the row's token) every time, so every write is accepted and commits.
const USER_TOKEN: i64 = 1;

fn batch_index(what: &str) -> usize {
    match what {
        "batch1" => 0,
        "batch10" => 1,
        "batch100" => 2,
        _ => panic!("unknown batch {what}"),
    }
}

/// The worker's main loop: one command per line on stdin, `ok` per command
/// on stdout; ends at EOF (the parent is done or gone).
fn worker_main(spec: &str) {
    let (id, dir) = spec.split_once(':').expect("id:dir");
    let id: usize = id.parse().unwrap();
    let dir = Path::new(dir);
    let raw = raw_sqlite(&dir.join("raw.db"));
    let user = raw_sqlite(&dir.join("fencing.db"));
    let mut worker = Worker::new(id, dir, &raw, &user);
    // The raw side's token for this row matches the library's.
    let n = raw
        .execute(
            "UPDATE report_state SET fencing_token = 0 WHERE report_id = ?1",
            [&worker.row],
        )
        .unwrap();
    assert_eq!(n, 1);
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let parts: Vec<&str> = line.split_whitespace().collect();
        match parts.as_slice() {
            ["stale-setup"] => worker.stale_setup(),
            [what, side, count, start] => worker.run(
                what,
                *side == "fencing",
                count.parse().unwrap(),
                start.parse().unwrap(),
            ),
            _ => panic!("worker {id}: bad command {line:?}"),
        }
        writeln!(out, "ok").unwrap();
        out.flush().unwrap();
    }
}

// ----- the parent -----

struct Proc {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Proc {
    fn spawn(id: usize, dir: &Path) -> Proc {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(WORKER_ENV, format!("{id}:{}", dir.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start a worker process");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut p = Proc {
            child,
            stdin,
            stdout,
        };
        p.expect("ready");
        p
    }

    fn send(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").expect("a worker exited");
        self.stdin.flush().expect("a worker exited");
    }

    fn expect(&mut self, what: &str) {
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("read from a worker");
        assert_eq!(
            line.trim_end(),
            what,
            "a worker failed (see its stderr above)"
        );
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // Done or failed: a worker holds nothing that needs a clean exit.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Bench {
    plan: Plan,
    procs: Vec<Proc>,
    /// The next operation index (values differ from write to write).
    next: usize,
}

struct Spec<'a> {
    group_line: &'a str,
    what: &'a str,
    /// The baseline side's command: the same command on the raw side, or
    /// another library command (`single100`).
    base: (&'a str, bool),
    unit: &'a str,
    per_call: f64,
    goal: Option<Goal>,
    baseline_name: &'a str,
    /// Calls per worker per round (a multiple of CHUNKS is best).
    ops: usize,
}

impl Bench {
    /// Runs `command` on the first `n` workers at once; the wall time.
    fn on_workers(&mut self, n: usize, command: &str) -> Duration {
        let start = Instant::now();
        for p in &mut self.procs[..n] {
            p.send(command);
        }
        for p in &mut self.procs[..n] {
            p.expect("ok");
        }
        start.elapsed()
    }

    fn compare(&mut self, spec: &Spec<'_>, processes: usize) {
        if self
            .plan
            .filter
            .as_ref()
            .is_some_and(|f| !spec.group_line.contains(f.as_str()))
        {
            return;
        }
        let chunk = (spec.ops / CHUNKS).max(1);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..self.plan.rounds {
            let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
            for c in 0..CHUNKS {
                for side in [c % 2, 1 - c % 2] {
                    let (what, ours) = if side == 0 {
                        (spec.what, true)
                    } else {
                        spec.base
                    };
                    let command = format!(
                        "{what} {} {chunk} {}",
                        if ours { "fencing" } else { "raw" },
                        self.next
                    );
                    let spent = self.on_workers(processes, &command);
                    if side == 0 {
                        ta += spent
                    } else {
                        tb += spent
                    }
                }
                self.next += chunk;
            }
            let units = spec.per_call * (chunk * CHUNKS * processes) as f64;
            a.push(units / ta.as_secs_f64());
            b.push(units / tb.as_secs_f64());
        }
        let (a, b) = (report::median(a), report::median(b));
        let line = Line::new(
            "sqlite",
            spec.group_line,
            processes as u32,
            "processes",
            spec.unit,
            a,
            b,
            spec.baseline_name,
        )
        .goal_opt(spec.goal)
        .rounds(self.plan.rounds)
        .smoke(self.plan.smoke);
        let goal = line.verdict();
        println!(
            "{:<36} {processes} proc  fencing {a:>9.0} {u}  baseline {b:>9.0} {u}  ratio {:>6.2}x  ({goal})",
            spec.group_line,
            a / b,
            u = spec.unit,
        );
        report::record(&line);
    }
}

fn setup(dir: &Path) {
    // The library creates its schema; the raw side gets the classic tables.
    drop(Store::open(&format!("sqlite:{}", dir.join("fencing.db").display())).unwrap());
    let raw = raw_sqlite(&dir.join("raw.db"));
    raw.execute_batch(
        "CREATE TABLE lease_counter (lease_name TEXT PRIMARY KEY, value INTEGER NOT NULL);
         CREATE TABLE report_state (report_id TEXT PRIMARY KEY, body BLOB,
                                    fencing_token INTEGER NOT NULL);
         CREATE TABLE report_kv (report_id TEXT NOT NULL, key TEXT NOT NULL, body BLOB,
                                 version INTEGER NOT NULL, PRIMARY KEY (report_id, key));
         BEGIN;",
    )
    .unwrap();
    for w in 0..MAX_WORKERS {
        for i in 0..SCOPES_PER_WORKER {
            raw.execute(
                "INSERT INTO lease_counter VALUES (?1, 0)",
                [acquire_scope(w, i)],
            )
            .unwrap();
        }
        raw.execute(
            "INSERT INTO report_state VALUES (?1, NULL, 0)",
            [format!("report:{w}")],
        )
        .unwrap();
    }
    raw.execute_batch("COMMIT").unwrap();
    // The user's own table, in the library's file.
    let user = raw_sqlite(&dir.join("fencing.db"));
    user.execute_batch(
        "CREATE TABLE user_state (id INTEGER PRIMARY KEY, body BLOB,
                                  fencing_token INTEGER NOT NULL);",
    )
    .unwrap();
    for w in 0..MAX_WORKERS {
        user.execute("INSERT INTO user_state VALUES (?1, NULL, 0)", [w as i64])
            .unwrap();
    }
    drop(user);
    // The library's scopes exist too (a first acquisition creates a row).
    let store = Store::open(&format!("sqlite:{}", dir.join("fencing.db").display())).unwrap();
    for w in 0..MAX_WORKERS {
        for i in 0..SCOPES_PER_WORKER {
            store.next_token(&acquire_scope(w, i)).unwrap();
        }
    }
}

fn checkpoint(dir: &Path) {
    // Neither write-ahead log holds pages from the setup.
    for db in ["fencing.db", "raw.db"] {
        Connection::open(dir.join(db))
            .unwrap()
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
    }
}

fn main() {
    if let Ok(spec) = std::env::var(WORKER_ENV) {
        worker_main(&spec);
        return;
    }
    let plan = plan();
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    println!(
        "sqlite: {} rounds of {} operations per process each, median of rounds \
         (WAL, synchronous=FULL){}",
        plan.rounds,
        plan.ops,
        if plan.smoke {
            "\nsmoke run: every path runs once; these figures are not measurements"
        } else {
            ""
        }
    );
    let procs = (0..MAX_WORKERS)
        .map(|id| Proc::spawn(id, dir.path()))
        .collect();
    checkpoint(dir.path());
    let ops = plan.ops;
    let mut bench = Bench {
        plan,
        procs,
        next: 0,
    };
    let goal = Some(Goal::ratio_at_least(0.9));

    // Acquisitions: a 1 ms lease on each of a worker's scopes in turn. The
    // baseline is the classic counter increment alone.
    let acquire = Spec {
        group_line: "acquire",
        what: "acquire",
        base: ("acquire", false),
        unit: "acq/s",
        per_call: 1.0,
        goal,
        baseline_name: "UPDATE lease_counter SET value = value + 1 ... RETURNING value",
        ops,
    };
    // Fenced writes with the current token: accepted, one commit each.
    let put = Spec {
        group_line: "put (accepted)",
        what: "put",
        base: ("put", false),
        unit: "w/s",
        per_call: 1.0,
        goal,
        baseline_name: "UPDATE report_state SET body = ?, fencing_token = ? \
                        WHERE report_id = ? AND fencing_token <= ?",
        ops,
    };
    // The user's own table fenced with the view, beside the classic
    // conditional UPDATE, on the same file.
    let user = Spec {
        group_line: "user UPDATE fenced by fencing_check",
        what: "user",
        base: ("user", false),
        unit: "w/s",
        per_call: 1.0,
        goal,
        baseline_name: "UPDATE user_state SET body = ?, fencing_token = ? \
                        WHERE id = ? AND fencing_token <= ? (same file)",
        ops,
    };
    for processes in PROCESSES {
        // Past 4 processes, as many calls per chunk in all as at 4, so
        // that the full run stays within minutes.
        let ops = ops * 4.min(processes) / processes;
        for spec in [&acquire, &put, &user] {
            bench.compare(&Spec { ops, ..*spec }, processes);
        }
    }

    // Stale writes: rejected, nothing committed (one process).
    for p in &mut bench.procs {
        p.send("stale-setup");
        p.expect("ok");
    }
    bench.compare(
        &Spec {
            group_line: "put (stale, rejected)",
            what: "stale",
            base: ("stale", false),
            unit: "w/s",
            per_call: 1.0,
            goal: None,
            baseline_name: "the same UPDATE matching 0 rows (neither side commits)",
            ops: ops * 10,
        },
        1,
    );

    // Batches of 1, 10 and 100 puts in one apply, beside the classic
    // fenced batch in one transaction, in puts per second.
    let batch_ops = |n: usize| (ops * 2 / n).max(CHUNKS);
    for (what, n) in [("batch1", 1usize), ("batch10", 10), ("batch100", 100)] {
        let label = format!("apply, batch of {n}");
        bench.compare(
            &Spec {
                group_line: &label,
                what,
                base: (what, false),
                unit: "puts/s",
                per_call: n as f64,
                goal: None,
                baseline_name: "BEGIN IMMEDIATE; UPDATE the fence row WHERE fencing_token <= ?; \
                                n x INSERT ... ON CONFLICT DO UPDATE; COMMIT",
                ops: batch_ops(n),
            },
            1,
        );
    }
    // The batch goal: 100 puts in one apply against 100 single puts, both
    // through the library.
    bench.compare(
        &Spec {
            group_line: "apply, batch of 100 vs single puts",
            what: "batch100",
            base: ("single100", true),
            unit: "puts/s",
            per_call: 100.0,
            goal: Some(Goal::ratio_at_least(20.0)),
            baseline_name: "100 single fenced puts through the library",
            ops: (ops / 20).max(CHUNKS),
        },
        1,
    );
}
