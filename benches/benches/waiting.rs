//! What waiting costs on PostgreSQL (docs/postgres.md, "Waiting"), beside
//! its baselines in the same run:
//!
//! - the hand-off: from the holder's `release` returning (its commit made
//!   durable; an advisory unlock writes nothing) to the next waiter
//!   returning with the lease, median and p99, with 1 and 50 waiters (threads
//!   of one process, one handle), beside the same chain on a PostgreSQL
//!   advisory lock (`pg_advisory_lock`, each waiter a session of its own,
//!   woken by the server's own lock queue);
//! - the server's transactions a second while nobody moves, with 50 waiters
//!   on a held lease, beside the same waiters asking every 10 ms (what a
//!   waiting acquire did before it was woken).
//!
//! Needs `FENCING_TEST_PG_URL` (scripts/pg-cluster run).
//!
//! ```text
//! cargo bench -p fencing-benches --bench waiting [-- --quick]
//! cargo test -p fencing-benches --bench waiting      # smoke: once, measuring nothing
//! ```

use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use fencing::Store;
use fencing_benches::report::{self, Line};
use fencing_benches::run::Args;

const TTL: Duration = Duration::from_secs(120);
const TIMEOUT: Duration = Duration::from_secs(60);

struct Plan {
    rounds: usize,
    waiters: Vec<usize>,
    idle: Duration,
    smoke: bool,
}

fn plan() -> Plan {
    let args = Args::from_env();
    let (rounds, waiters, idle) = args.pick(
        (1, vec![1, 3], Duration::from_millis(200)),
        (3, vec![1, 50], Duration::from_secs(3)),
        (7, vec![1, 50], Duration::from_secs(5)),
    );
    Plan {
        rounds,
        waiters,
        idle,
        smoke: args.smoke(),
    }
}

/// Each waiter's moments: when it got the lock, and when its letting go
/// returned.
type Moments = Arc<Mutex<Vec<(Instant, Instant)>>>;

/// The hand-offs of a chain of waiters: each one's "got" minus the "let go"
/// before it (the first after the holder's).
fn hand_offs(holder_let_go: Instant, mut moments: Vec<(Instant, Instant)>) -> Vec<f64> {
    moments.sort_by_key(|(got, _)| *got);
    let mut before = holder_let_go;
    let mut out = Vec::new();
    for (got, let_go) in moments {
        // The next may get it before the release's answer arrives: zero.
        out.push(got.saturating_duration_since(before).as_secs_f64() * 1e3);
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
fn idle_load(base: &str, url: &str, n: usize, idle: Duration, polling: bool) -> f64 {
    let holder = Store::open(url).unwrap();
    let held = holder.acquire("i", "holder", TTL).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waiting = Store::open(url).unwrap();
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (store, stop) = (waiting.clone(), stop.clone());
            std::thread::spawn(move || {
                let holder = format!("w{i}");
                if polling {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let _ = store.acquire("i", &holder, TTL);
                        std::thread::sleep(Duration::from_millis(10));
                    }
                } else {
                    let quit = || stop.load(std::sync::atomic::Ordering::Relaxed);
                    let _ = store.acquire_wait_unless("i", &holder, TTL, TIMEOUT, &quit);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut admin = base
        .parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap();
    let count = |c: &mut postgres::Client| -> i64 {
        c.query_one(
            "SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database \
             WHERE datname = current_database()",
            &[],
        )
        .unwrap()
        .get(0)
    };
    // pg_stat_database is updated when a backend reports, at most every
    // second or so: read it after a pause on both sides.
    let before = count(&mut admin);
    std::thread::sleep(idle);
    let after = count(&mut admin);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    holder.release("i", held.token).unwrap();
    // The two reads are transactions of their own.
    ((after - before - 2).max(0)) as f64 / idle.as_secs_f64()
}

fn main() {
    let plan = plan();
    let Ok(base) = std::env::var("FENCING_TEST_PG_URL") else {
        println!("waiting   skipped: no server (run under scripts/pg-cluster run -- ...)");
        return;
    };
    if base.is_empty() {
        println!("waiting   skipped: no server (run under scripts/pg-cluster run -- ...)");
        return;
    }
    println!(
        "waiting: {} rounds, hand-offs with {:?} waiters, idle load over {:?}{}",
        plan.rounds,
        plan.waiters,
        plan.idle,
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
        let (mut fenced, mut advisory) = (Vec::new(), Vec::new());
        for round in 0..plan.rounds {
            fenced.extend(fenced_chain(&holder, &waiting, n));
            advisory.extend(advisory_chain(&base, n, 7_000 + round as i64));
        }
        for (stat, p) in [("p50", 0.5), ("p99", 0.99)] {
            let (a, b) = (
                percentile(fenced.clone(), p),
                percentile(advisory.clone(), p),
            );
            println!(
                "postgres  hand-off {stat} with {n:>3} waiters: {a:>8.2} ms  advisory lock {b:>8.2} ms  ratio {:>6.2}x",
                a / b
            );
            let line = Line::new(
                "postgres",
                "hand-off: release to the next waiter's lease",
                n as u32,
                "waiters",
                "ms",
                a,
                b,
                "the same chain on pg_advisory_lock (the server's lock queue)",
            )
            .stat(stat)
            .rounds(plan.rounds)
            .smoke(plan.smoke);
            report::record(&line);
        }
    }
    let n = *plan.waiters.last().unwrap();
    let woken = idle_load(&base, &url, n, plan.idle, false);
    let polling = idle_load(&base, &url, n, plan.idle, true);
    println!(
        "postgres  server transactions/s with {n} waiters and nobody moving: {woken:>8.1}  polling every 10 ms {polling:>8.1}"
    );
    let line = Line::new(
        "postgres",
        "server transactions while nobody moves",
        n as u32,
        "waiters",
        "tx/s",
        woken,
        polling,
        "the same waiters asking every 10 ms (a waiting acquire before it was woken)",
    )
    .rounds(1)
    .smoke(plan.smoke);
    report::record(&line);
    let mut admin = base
        .parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap();
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}
