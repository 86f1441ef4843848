//! What waiting costs on PostgreSQL (docs/postgres.md, "Waiting"), beside
//! its baselines in the same run:
//!
//! - the hand-off: from the holder's `release` returning (its commit made
//!   durable; an advisory unlock writes nothing) to the next waiter
//!   returning with the lease, median and p99, with 1 and 50 waiters (threads
//!   of one process, one handle), beside the same chain on a PostgreSQL
//!   advisory lock (`pg_advisory_lock`, each waiter a session of its own,
//!   woken by the server's own lock queue);
//!   and with 1,000 waiters beside etcd's own lock (`Lock`, each waiter
//!   watching the key ahead of it; called through etcd's JSON gateway, each
//!   waiter a thread blocked in its call) when `FENCING_TEST_ETCD_URL` names
//!   a server (scripts/etcd-server run); the advisory chain stops at 50
//!   waiters: each one holds a server session;
//! - the same hand-off with the waiters in separate processes (1 and 50),
//!   each with its own store handle and listening connection, timed on the
//!   wall clock they share, beside the advisory lock's;
//! - the server's transactions a second while nobody moves, with 50 waiters
//!   on a held lease (threads of one process, and separate processes),
//!   beside the same waiters asking every 10 ms (what a waiting acquire did
//!   before it was woken);
//! - on SQLite, the CPU 50 waiting threads of another handle cost while
//!   nobody moves (they back off), beside the same waiters asking every
//!   10 ms.
//!
//! Needs `FENCING_TEST_PG_URL` (scripts/pg-cluster run).
//!
//! ```text
//! cargo bench -p fencing-benches --bench waiting [-- --quick]
//! cargo test -p fencing-benches --bench waiting      # smoke: once, measuring nothing
//! ```

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fencing::Store;
use fencing_benches::etcd::Gateway;
use fencing_benches::report::{self, Line};
use fencing_benches::run::Args;

const TTL: Duration = Duration::from_secs(120);
const TIMEOUT: Duration = Duration::from_secs(60);

/// The advisory chain's waiters each hold a server session: not past this.
const ADVISORY_MAX: usize = 50;
/// The child that waits in a process of its own (`process_chain`).
const CHILD_ENV: &str = "FENCING_BENCH_WAITER_URL";

struct Plan {
    rounds: usize,
    /// Waiting threads of one process.
    waiters: Vec<usize>,
    /// Waiting processes.
    processes: Vec<usize>,
    /// How long the server's counts are given to catch up before the idle
    /// window opens (`transactions_over`).
    flush: Duration,
    idle: Duration,
    smoke: bool,
}

fn plan() -> Plan {
    let args = Args::from_env();
    let (rounds, waiters, processes, flush, idle) = args.pick(
        (
            1,
            vec![1, 3],
            vec![2],
            Duration::ZERO,
            Duration::from_millis(200),
        ),
        (
            3,
            vec![1, 50, 1000],
            vec![1, 50],
            Duration::from_secs(11),
            Duration::from_secs(3),
        ),
        (
            7,
            vec![1, 50, 1000],
            vec![1, 50],
            Duration::from_secs(11),
            Duration::from_secs(5),
        ),
    );
    Plan {
        rounds,
        waiters,
        processes,
        flush,
        idle,
        smoke: args.smoke(),
    }
}

fn wall_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3
}

/// Each waiter's moments: when it got the lock, and when its letting go
/// returned.
type Moments = Arc<Mutex<Vec<(Instant, Instant)>>>;

/// The hand-offs of a chain of waiters: each one's "got" minus the "let go"
/// before it (the first after the holder's), in ms.
fn hand_offs(holder_let_go: Instant, moments: Vec<(Instant, Instant)>) -> Vec<f64> {
    let ms = |t: Instant| t.saturating_duration_since(holder_let_go).as_secs_f64() * 1e3;
    hand_offs_ms(
        0.0,
        moments.into_iter().map(|(g, l)| (ms(g), ms(l))).collect(),
    )
}

/// [`hand_offs`] of moments in ms on one clock.
fn hand_offs_ms(holder_let_go: f64, mut moments: Vec<(f64, f64)>) -> Vec<f64> {
    moments.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut before = holder_let_go;
    let mut out = Vec::new();
    for (got, let_go) in moments {
        // The next may get it before the release's answer arrives: zero.
        out.push((got - before).max(0.0));
        before = let_go;
    }
    out
}

/// The fenced chain: `n` waiters on one handle, the holder on another.
fn fenced_chain(holder: &Store, waiting: &Store, n: usize) -> Vec<f64> {
    let held = holder.acquire("h", "holder", TTL).unwrap();
    let before = waiting.metrics().acquire_conflicts;
    let moments: Moments = Arc::default();
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (store, moments) = (waiting.clone(), moments.clone());
            std::thread::spawn(move || {
                let lease = store
                    .acquire_wait("h", &format!("w{i}"), TTL, TIMEOUT)
                    .unwrap();
                let got = Instant::now();
                store.release("h", lease.token).unwrap();
                moments.lock().unwrap().push((got, Instant::now()));
            })
        })
        .collect();
    // Every waiter in line, and asleep.
    settle(waiting, before + n as u64);
    holder.release("h", held.token).unwrap();
    let let_go = Instant::now();
    for t in threads {
        t.join().unwrap();
    }
    let moments = std::mem::take(&mut *moments.lock().unwrap());
    hand_offs(let_go, moments)
}

/// Waits until the waiters have asked `n` times in all and none asks for
/// 300 ms.
fn settle(store: &Store, n: u64) {
    let start = Instant::now();
    let mut seen = 0;
    while start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(300));
        let now = store.metrics().acquire_conflicts;
        if now >= n && now == seen {
            return;
        }
        seen = now;
    }
}

/// The baseline chain: `n` sessions blocked in `pg_advisory_lock`.
fn advisory_chain(base: &str, n: usize, key: i64) -> Vec<f64> {
    let connect = || {
        base.parse::<postgres::Config>()
            .unwrap()
            .connect(postgres::NoTls)
            .unwrap()
    };
    let mut holder = connect();
    holder
        .execute("SELECT pg_advisory_lock($1)", &[&key])
        .unwrap();
    let moments: Moments = Arc::default();
    let ready = Arc::new(Barrier::new(n + 1));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (moments, ready, mut c) = (moments.clone(), ready.clone(), connect());
            std::thread::spawn(move || {
                ready.wait();
                c.execute("SELECT pg_advisory_lock($1)", &[&key]).unwrap();
                let got = Instant::now();
                c.execute("SELECT pg_advisory_unlock($1)", &[&key]).unwrap();
                moments.lock().unwrap().push((got, Instant::now()));
            })
        })
        .collect();
    ready.wait();
    // Every session blocked in the server's lock queue.
    let start = Instant::now();
    loop {
        let waiting: i64 = holder
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                 AND objid = $1::bigint::oid",
                &[&key],
            )
            .unwrap()
            .get(0);
        if waiting as usize >= n || start.elapsed() > Duration::from_secs(30) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    holder
        .execute("SELECT pg_advisory_unlock($1)", &[&key])
        .unwrap();
    let let_go = Instant::now();
    for t in threads {
        t.join().unwrap();
    }
    let moments = std::mem::take(&mut *moments.lock().unwrap());
    hand_offs(let_go, moments)
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// The server's committed and rolled-back transactions a second over
/// `idle`, while `n` waiters wait on a held lease: woken, or polling every
/// 10 ms with plain acquires.
fn idle_load(
    base: &str,
    url: &str,
    n: usize,
    (flush, idle): (Duration, Duration),
    polling: bool,
) -> f64 {
    waiting_threads(url, "i", n, polling, || {
        transactions_over(&mut admin(base), flush, idle)
    })
}

/// Runs `measure` while `n` threads of one handle wait on `scope`'s lease,
/// held by another handle: waiting (woken, or backing off), or asking every
/// 10 ms with plain acquires; returns what it measured.
fn waiting_threads(
    url: &str,
    scope: &str,
    n: usize,
    polling: bool,
    measure: impl FnOnce() -> f64,
) -> f64 {
    let holder = Store::open(url).unwrap();
    let held = holder.acquire(scope, "holder", TTL).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let waiting = Store::open(url).unwrap();
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (store, stop, scope) = (waiting.clone(), stop.clone(), scope.to_owned());
            std::thread::spawn(move || {
                let holder = format!("w{i}");
                if polling {
                    while !stop.load(Ordering::Relaxed) {
                        let _ = store.acquire(&scope, &holder, TTL);
                        std::thread::sleep(Duration::from_millis(10));
                    }
                } else {
                    let quit = || stop.load(Ordering::Relaxed);
                    let _ = store.acquire_wait_unless(&scope, &holder, TTL, TIMEOUT, &quit);
                }
            })
        })
        .collect();
    // Every waiter asked, and past the back-off's doubling.
    std::thread::sleep(Duration::from_millis(500));
    let measured = measure();
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    holder.release(scope, held.token).unwrap();
    measured
}

/// A waiter in a process of its own (`process_chain`, `process_idle_load`):
/// waits on its own handle for the scope, then prints when it got the lease
/// and when its release returned (the wall clock, ms) and exits; or, with
/// `FENCING_BENCH_WAITER_POLL`, asks every 10 ms until killed.
fn child(url: &str) {
    let store = Store::open(url).unwrap();
    let scope = std::env::var("FENCING_BENCH_WAITER_SCOPE").unwrap();
    let holder = format!("p{}", std::process::id());
    if std::env::var_os("FENCING_BENCH_WAITER_POLL").is_some() {
        loop {
            let _ = store.acquire(&scope, &holder, TTL);
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let lease = store.acquire_wait(&scope, &holder, TTL, TIMEOUT).unwrap();
    let got = wall_ms();
    store.release(&scope, lease.token).unwrap();
    println!("{got} {}", wall_ms());
}

fn spawn_children(url: &str, scope: &str, n: usize, polling: bool) -> Vec<std::process::Child> {
    let exe = std::env::current_exe().unwrap();
    (0..n)
        .map(|_| {
            let mut c = Command::new(&exe);
            c.env(CHILD_ENV, url)
                .env("FENCING_BENCH_WAITER_SCOPE", scope)
                .stdout(Stdio::piped());
            if polling {
                c.env("FENCING_BENCH_WAITER_POLL", "1");
            }
            c.spawn().unwrap()
        })
        .collect()
}

/// Waits until `n` places are queued for `scope` (every waiter asked once
/// and sleeps).
fn queued(admin: &mut postgres::Client, schema: &str, scope: &str, n: usize) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        let places: i64 = admin
            .query_one(
                &format!("SELECT count(*) FROM {schema}.waiting WHERE scope = $1"),
                &[&scope],
            )
            .unwrap()
            .get(0);
        if places as usize >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn admin(base: &str) -> postgres::Client {
    base.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

/// The fenced chain with each of `n` waiters in a process of its own.
fn process_chain(base: &str, url: &str, schema: &str, n: usize, scope: &str) -> Vec<f64> {
    let holder = Store::open(url).unwrap();
    let held = holder.acquire(scope, "holder", TTL).unwrap();
    let mut children = spawn_children(url, scope, n, false);
    queued(&mut admin(base), schema, scope, n);
    holder.release(scope, held.token).unwrap();
    let let_go = wall_ms();
    let moments = children
        .iter_mut()
        .map(|c| {
            let mut line = String::new();
            BufReader::new(c.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            c.wait().unwrap();
            let (got, done) = line.trim().split_once(' ').unwrap();
            (got.parse().unwrap(), done.parse().unwrap())
        })
        .collect();
    hand_offs_ms(let_go, moments)
}

/// [`idle_load`] with each waiter a process of its own.
fn process_idle_load(
    base: &str,
    url: &str,
    schema: &str,
    n: usize,
    (flush, idle): (Duration, Duration),
    polling: bool,
) -> f64 {
    let holder = Store::open(url).unwrap();
    let scope = if polling { "ip-poll" } else { "ip" };
    let held = holder.acquire(scope, "holder", TTL).unwrap();
    let mut children = spawn_children(url, scope, n, polling);
    let mut admin = admin(base);
    if polling {
        std::thread::sleep(Duration::from_secs(1));
    } else {
        queued(&mut admin, schema, scope, n);
    }
    std::thread::sleep(Duration::from_millis(500));
    let per_second = transactions_over(&mut admin, flush, idle);
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }
    holder.release(scope, held.token).unwrap();
    per_second
}

/// The server's committed and rolled-back transactions a second over `idle`.
fn transactions_over(admin: &mut postgres::Client, flush: Duration, idle: Duration) -> f64 {
    let count = |c: &mut postgres::Client| -> i64 {
        c.query_one(
            "SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database \
             WHERE datname = current_database()",
            &[],
        )
        .unwrap()
        .get(0)
    };
    // A backend reports its counts at most once a second while busy, and up
    // to 10 s after it went idle (PostgreSQL 15's PGSTAT_IDLE_INTERVAL): the
    // window opens after that, so the waiters' first attempts (and their
    // attempts while the listening connection started) are not in it.
    std::thread::sleep(flush);
    let before = count(admin);
    std::thread::sleep(idle);
    let after = count(admin);
    // The two reads are transactions of their own.
    ((after - before - 2).max(0)) as f64 / idle.as_secs_f64()
}

/// etcd's lock recipe (`Lock`, through its JSON gateway: the server keys
/// each waiter under its lease and makes it wait for the keys ahead of it);
/// the same chain as `fenced_chain`, each waiter a thread blocked in its
/// own call, all on one client.
fn etcd_chain(etcd: &Gateway, n: usize, name: &str) -> Vec<f64> {
    let (lease, held) = etcd_lock(etcd, name);
    let moments: Moments = Arc::default();
    let let_go = std::thread::scope(|s| {
        for _ in 0..n {
            let (etcd, moments) = (etcd.clone(), moments.clone());
            std::thread::Builder::new()
                .stack_size(512 << 10)
                .spawn_scoped(s, move || {
                    let (lease, mine) = etcd_lock(&etcd, name);
                    let got = Instant::now();
                    etcd.unlock(&mine);
                    moments.lock().unwrap().push((got, Instant::now()));
                    etcd.revoke(lease);
                })
                .unwrap();
        }
        // Every waiter's key written, so every one is in line.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if etcd.count_prefix(format!("{name}/").as_bytes()) as usize > n {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        etcd.unlock(&held);
        Instant::now()
    });
    etcd.revoke(lease);
    let moments = std::mem::take(&mut *moments.lock().unwrap());
    hand_offs(let_go, moments)
}

/// etcd's `Lock` of `name` under a lease of its own (so that a lock left
/// behind runs out): the lease, and the lock's key.
fn etcd_lock(etcd: &Gateway, name: &str) -> (i64, Vec<u8>) {
    let lease = etcd.grant(Duration::from_secs(60));
    (lease, etcd.lock(name, lease))
}

/// This process's CPU time so far (/proc/self/stat: utime and stime, in
/// clock ticks of 1/100 s, Linux's USER_HZ).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// The CPU `n` waiting threads of one SQLite handle cost, in % of one core,
/// over `idle` while another handle holds the lease: waiting (they back
/// off), or asking every 10 ms.
fn sqlite_cpu(n: usize, idle: Duration, polling: bool) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("w.db").display());
    waiting_threads(&url, "c", n, polling, || {
        let before = cpu_seconds();
        std::thread::sleep(idle);
        (cpu_seconds() - before) / idle.as_secs_f64() * 100.0
    })
}

fn hand_off_lines(
    what: &str,
    n: usize,
    rounds: usize,
    smoke: bool,
    fenced: &[f64],
    base: (&str, &[f64]),
) {
    let (base_name, baseline) = base;
    for (stat, p) in [("p50", 0.5), ("p99", 0.99)] {
        let (a, b) = (
            percentile(fenced.to_vec(), p),
            percentile(baseline.to_vec(), p),
        );
        println!(
            "postgres  {what} {stat} with {n:>4} waiters: {a:>8.2} ms  {base_name} {b:>8.2} ms  ratio {:>6.2}x",
            a / b
        );
        let line = Line::new(
            "postgres",
            &format!("{what}: release to the next waiter's lease"),
            n as u32,
            "waiters",
            "ms",
            a,
            b,
            base_name,
        )
        .stat(stat)
        .rounds(rounds)
        .smoke(smoke);
        report::record(&line);
    }
}

fn idle_line(
    backend: &str,
    what: &str,
    n: usize,
    unit: &str,
    woken: f64,
    polling: f64,
    smoke: bool,
) {
    println!("{backend:<9} {what} with {n} waiters: {woken:>8.1} {unit}  polling every 10 ms {polling:>8.1}");
    let line = Line::new(
        backend,
        what,
        n as u32,
        "waiters",
        unit,
        woken,
        polling,
        "the same waiters asking every 10 ms (a waiting acquire before it was woken)",
    )
    .rounds(1)
    .smoke(smoke);
    report::record(&line);
}

fn main() {
    if let Ok(url) = std::env::var(CHILD_ENV) {
        return child(&url);
    }
    let plan = plan();
    let n = plan.waiters[1.min(plan.waiters.len() - 1)];
    let cpu = (
        sqlite_cpu(n, plan.idle, false),
        sqlite_cpu(n, plan.idle, true),
    );
    idle_line(
        "sqlite",
        "waiters' CPU while nobody moves",
        n,
        "% of a core",
        cpu.0,
        cpu.1,
        plan.smoke,
    );
    let Some(base) = std::env::var("FENCING_TEST_PG_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        println!("waiting   postgres skipped: no server (run under scripts/pg-cluster run -- ...)");
        return;
    };
    let etcd = std::env::var("FENCING_TEST_ETCD_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .map(|url| {
            let members: Vec<String> = url
                .split(',')
                .map(|m| m.trim().trim_start_matches("http://").to_owned())
                .collect();
            Gateway::new(&members)
        });
    println!(
        "waiting: {} rounds, hand-offs with {:?} waiting threads and {:?} processes, idle load over {:?}{}{}",
        plan.rounds,
        plan.waiters,
        plan.processes,
        plan.idle,
        if etcd.is_none() { " (no etcd: FENCING_TEST_ETCD_URL unset)" } else { "" },
        if plan.smoke {
            " (smoke: these figures are not measurements)"
        } else {
            ""
        }
    );
    let schema = format!("bench_wait_{}", std::process::id());
    let url = format!("{base}?schema={schema}");
    let (holder, waiting) = (Store::open(&url).unwrap(), Store::open(&url).unwrap());
    // One chain first, unmeasured: the waiting handle's pool and listening
    // connection made.
    fenced_chain(&holder, &waiting, 1);
    for &n in &plan.waiters {
        let (mut fenced, mut advisory, mut locked) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..plan.rounds {
            fenced.extend(fenced_chain(&holder, &waiting, n));
            if n <= ADVISORY_MAX {
                advisory.extend(advisory_chain(&base, n, 7_000 + round as i64));
            }
            if let Some(etcd) = &etcd {
                locked.extend(etcd_chain(
                    etcd,
                    n,
                    &format!("bench-wait-{}-{n}-{round}", std::process::id()),
                ));
            }
        }
        if !advisory.is_empty() {
            let base = ("advisory lock", advisory.as_slice());
            hand_off_lines("hand-off", n, plan.rounds, plan.smoke, &fenced, base);
        }
        if !locked.is_empty() {
            let base = ("etcd lock", locked.as_slice());
            hand_off_lines(
                "hand-off vs etcd",
                n,
                plan.rounds,
                plan.smoke,
                &fenced,
                base,
            );
        }
        if advisory.is_empty() && locked.is_empty() {
            println!(
                "postgres  hand-off p50 with {n:>4} waiters: {:>8.2} ms (no baseline in this run: no etcd)",
                percentile(fenced, 0.5)
            );
        }
    }
    for &n in &plan.processes {
        let (mut fenced, mut advisory) = (Vec::new(), Vec::new());
        for round in 0..plan.rounds {
            fenced.extend(process_chain(&base, &url, &schema, n, &format!("p{round}")));
            advisory.extend(advisory_chain(&base, n, 8_000 + round as i64));
        }
        let base = ("advisory lock", advisory.as_slice());
        hand_off_lines(
            "hand-off (processes)",
            n,
            plan.rounds,
            plan.smoke,
            &fenced,
            base,
        );
    }
    let n = plan.waiters[1.min(plan.waiters.len() - 1)];
    let window = (plan.flush, plan.idle);
    let woken = idle_load(&base, &url, n, window, false);
    let polling = idle_load(&base, &url, n, window, true);
    idle_line(
        "postgres",
        "server transactions/s while nobody moves",
        n,
        "tx/s",
        woken,
        polling,
        plan.smoke,
    );
    let n = *plan.processes.last().unwrap();
    let woken = process_idle_load(&base, &url, &schema, n, window, false);
    let polling = process_idle_load(&base, &url, &schema, n, window, true);
    idle_line(
        "postgres",
        "server transactions/s while nobody moves (processes)",
        n,
        "tx/s",
        woken,
        polling,
        plan.smoke,
    );
    admin(&base)
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}
