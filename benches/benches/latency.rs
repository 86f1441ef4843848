//! Tail latency: p50, p99 and p99.9 of single calls of `acquire`, `renew`
//! and `put` on `memory:`, `sqlite:` and `postgres://` (when
//! `FENCING_TEST_PG_URL` names a server), each beside the same percentile of
//! its baseline's calls, measured in the same run, one caller.
//!
//! ```text
//! cargo bench -p fencing-benches --bench latency            # full run: 10,000 calls per side and point
//! cargo bench -p fencing-benches --bench latency -- --quick # 2,000
//! scripts/pg-cluster run -- cargo bench -p fencing-benches --bench latency   # with postgres://
//! cargo test -p fencing-benches --bench latency             # smoke: a few calls, no figures
//! ```
//!
//! The baselines are the ones the throughput benches define
//! (docs/performance.md, "The baselines"):
//! - memory: the `Mutex<HashMap>` check-and-set of `memory_put.rs`; for
//!   `acquire`, the same map's counter increment (the classic acquisition is
//!   a counter increment, as on the SQL backends).
//! - sqlite: raw rusqlite with the same pragmas (WAL, `synchronous=FULL`):
//!   `UPDATE lease_counter SET value = value + 1 ... RETURNING value` for
//!   `acquire`, the classic conditional `UPDATE report_state ... WHERE
//!   fencing_token <= ?` for `put`.
//! - postgres: the same classic SQL through the same client (`postgres`),
//!   prepared once.
//!
//! `renew` has no baseline of its own in the project: it is set beside the
//! classic conditional UPDATE (the `put` baseline), which has its shape (check
//! a token, rewrite one row, commit).
//!
//! Each call is timed alone (`Instant` around it, the same on both sides).
//! The library and the baseline alternate in chunks of calls, so that both
//! meet the same machine and disk weather. Nothing asserts on timings.
//! Each percentile is one result line (unit `ns/op`, `stat` p50/p99/p99.9,
//! `series` "<op> latency"; benches/src/report.rs).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use std::hint::black_box;

use fencing::{Fence, Store, Token};
use fencing_benches::report::{self, Line};
use fencing_benches::run::{raw_sqlite, Args};
use postgres::{Client, NoTls};
use rusqlite::params;

/// The percentiles, each a line: name and fraction.
const STATS: [(&str, f64); 3] = [("p50", 0.50), ("p99", 0.99), ("p99.9", 0.999)];
/// Calls per chunk before the other side takes its turn.
const CHUNK: usize = 100;
/// Scopes cycled through by acquisitions with a 1 ms lease on the SQL
/// backends: a scope's lease has long expired when its turn comes again.
const ACQUIRE_SCOPES: usize = 250;
const LONG_TTL: Duration = Duration::from_secs(3600);

struct Plan {
    /// Calls per side and point.
    calls: usize,
    smoke: bool,
}

fn plan() -> Plan {
    let args = Args::from_env();
    Plan {
        calls: args.pick(20, 2_000, 10_000),
        smoke: args.smoke(),
    }
}

fn value(i: usize) -> [u8; 64] {
    // Differs from the previous value: SQLite skips a write that changes
    // nothing, which would flatter either side.
    let mut v = [0x5A; 64];
    v[..8].copy_from_slice(&(i as u64).to_le_bytes());
    v
}

/// Runs `f` and returns how long it took, in nanoseconds.
fn timed(f: impl FnOnce()) -> u64 {
    let start = Instant::now();
    f();
    start.elapsed().as_nanos() as u64
}

/// Per-call latencies of two sides, called alternately chunk by chunk;
/// each side times its own call (with [`timed`]), so that untimed set-up
/// of a call can stay outside the figure.
fn measure(
    plan: &Plan,
    mut fenced: impl FnMut(usize) -> u64,
    mut baseline: impl FnMut(usize) -> u64,
) -> (Vec<u64>, Vec<u64>) {
    let (mut a, mut b) = (
        Vec::with_capacity(plan.calls),
        Vec::with_capacity(plan.calls),
    );
    let chunk = CHUNK.min(plan.calls);
    // Unmeasured warm-up: caches, prepared statements, the first pages.
    for i in 0..chunk {
        fenced(i);
        baseline(i);
    }
    let mut i = chunk;
    while a.len() < plan.calls {
        let turn = chunk.min(plan.calls - a.len());
        let fenced_first = (i / chunk).is_multiple_of(2);
        for side in [fenced_first, !fenced_first] {
            for k in i..i + turn {
                if side {
                    a.push(fenced(k));
                } else {
                    b.push(baseline(k));
                }
            }
        }
        i += turn;
    }
    (a, b)
}

/// The nearest-rank percentile of sorted `v`.
fn percentile(sorted: &[u64], p: f64) -> f64 {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

/// Prints and records the three percentiles of one operation.
fn report(
    plan: &Plan,
    group: &str,
    op: &str,
    baseline_name: &str,
    (mut a, mut b): (Vec<u64>, Vec<u64>),
) {
    a.sort_unstable();
    b.sort_unstable();
    for (stat, p) in STATS {
        let (fa, fb) = (percentile(&a, p), percentile(&b, p));
        let line = Line::new(
            group,
            &format!("{op} {stat}"),
            1,
            "threads",
            "ns/op",
            fa,
            fb,
            baseline_name,
        )
        .smoke(plan.smoke)
        .series(&format!("{op} latency"))
        .stat(stat)
        .note(&format!("{} calls per side, one caller", a.len()));
        println!(
            "{group:<9} {op:<8} {stat:<6} fencing {fa:>11.0} ns  baseline {fb:>11.0} ns  ratio {:>6.2}x",
            fa / fb
        );
        report::record(&line);
    }
}

// ----- memory: -----

/// `memory_put.rs`'s baseline: one global lock, a fence per scope, version + 1.
/// A scope of the baseline: its fence and its entries (value, version).
type BaselineScope = (u64, HashMap<String, (Vec<u8>, u64)>);

#[derive(Default)]
struct MutexMap {
    scopes: Mutex<HashMap<String, BaselineScope>>,
    counters: Mutex<HashMap<String, u64>>,
}

impl MutexMap {
    fn put(&self, scope: &str, key: &str, value: &[u8], token: u64) -> Option<u64> {
        let (key, value) = (key.to_owned(), value.to_vec());
        let mut scopes = self.scopes.lock().unwrap();
        if !scopes.contains_key(scope) {
            scopes.insert(scope.to_owned(), Default::default());
        }
        let (fence, entries) = scopes.get_mut(scope).unwrap();
        if token < *fence {
            return None;
        }
        *fence = token;
        let e = entries.entry(key).or_insert((Vec::new(), 0));
        e.0 = value;
        e.1 += 1;
        Some(e.1)
    }

    fn next(&self, scope: &str) -> u64 {
        let mut counters = self.counters.lock().unwrap();
        let c = match counters.get_mut(scope) {
            Some(c) => c,
            None => counters.entry(scope.to_owned()).or_insert(0),
        };
        *c += 1;
        *c
    }
}

const MEMORY_BASELINE: &str = "Mutex<HashMap> check-and-set (one global lock)";

fn memory(plan: &Plan) {
    let store = Store::open("memory:").unwrap();
    let base = MutexMap::default();
    let scopes: Vec<String> = (0..ACQUIRE_SCOPES)
        .map(|i| format!("acquire:{i}"))
        .collect();
    // A free lease each time: the previous one is released first, untimed.
    let mut last: Option<(usize, Token)> = None;
    let m = measure(
        plan,
        |i| {
            if let Some((s, token)) = last.take() {
                store.release(&scopes[s], token).unwrap();
            }
            let s = i % ACQUIRE_SCOPES;
            let mut token = None;
            let ns =
                timed(|| token = Some(store.acquire(&scopes[s], "bench", LONG_TTL).unwrap().token));
            last = token.map(|t| (s, t));
            ns
        },
        |i| {
            timed(|| {
                black_box(base.next(&scopes[i % ACQUIRE_SCOPES]));
            })
        },
    );
    report(
        plan,
        "memory",
        "acquire",
        "Mutex<HashMap> counter increment (one global lock)",
        m,
    );

    let lease = store.acquire("renewed", "bench", LONG_TTL).unwrap();
    let fence = Fence::new(lease.token);
    let token = lease.token.get();
    let m = measure(
        plan,
        |_| {
            timed(|| {
                black_box(store.renew("renewed", lease.token, LONG_TTL).unwrap());
            })
        },
        |i| {
            timed(|| {
                black_box(base.put("renewed", "lease", &value(i), token).unwrap());
            })
        },
    );
    report(plan, "memory", "renew", MEMORY_BASELINE, m);

    let m = measure(
        plan,
        |i| {
            let v = value(i);
            timed(|| {
                black_box(store.put("report", "body", &v, &fence).unwrap());
            })
        },
        |i| {
            let v = value(i);
            timed(|| {
                black_box(base.put("report", "body", &v, token).unwrap());
            })
        },
    );
    report(plan, "memory", "put", MEMORY_BASELINE, m);
}

// ----- sqlite: -----

const SQL_ACQUIRE_BASELINE: &str = "UPDATE lease_counter SET value = value + 1 ... RETURNING value";

fn sqlite(plan: &Plan) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!(
        "sqlite:{}",
        dir.path().join("fencing.db").display()
    ))
    .unwrap();
    let raw = raw_sqlite(&dir.path().join("raw.db"));
    raw.execute_batch(
        "CREATE TABLE lease_counter (lease_name TEXT PRIMARY KEY, value INTEGER NOT NULL);
         CREATE TABLE report_state (report_id TEXT PRIMARY KEY, body BLOB,
                                    fencing_token INTEGER NOT NULL);
         INSERT INTO report_state VALUES ('report', NULL, 0);",
    )
    .unwrap();
    let scopes: Vec<String> = (0..ACQUIRE_SCOPES)
        .map(|i| format!("acquire:{i}"))
        .collect();
    for s in &scopes {
        raw.execute("INSERT INTO lease_counter VALUES (?1, 0)", [s])
            .unwrap();
        store.next_token(s).unwrap();
    }
    let mut counter = raw
        .prepare("UPDATE lease_counter SET value = value + 1 WHERE lease_name = ?1 RETURNING value")
        .unwrap();
    let mut fenced_update = raw
        .prepare(
            "UPDATE report_state SET body = ?1, fencing_token = ?2 \
             WHERE report_id = ?3 AND fencing_token <= ?2",
        )
        .unwrap();
    let m = measure(
        plan,
        |i| {
            timed(|| {
                // A 1 ms lease: expired when the scope's turn comes round again.
                store
                    .acquire(
                        &scopes[i % ACQUIRE_SCOPES],
                        "bench",
                        Duration::from_millis(1),
                    )
                    .unwrap();
            })
        },
        |i| {
            timed(|| {
                // Stepped to the end, as the throughput bench does: only then
                // does the autocommit transaction commit the shortest way.
                let mut rows = counter.query([&scopes[i % ACQUIRE_SCOPES]]).unwrap();
                let _: i64 = rows.next().unwrap().unwrap().get(0).unwrap();
                assert!(rows.next().unwrap().is_none());
            })
        },
    );
    report(plan, "sqlite", "acquire", SQL_ACQUIRE_BASELINE, m);

    let lease = store.acquire("report", "bench", LONG_TTL).unwrap();
    let fence = Fence::new(lease.token);
    let token = lease.token.get() as i64;
    let mut fenced_put = |i: usize| {
        let v = value(i);
        timed(|| {
            let n = fenced_update
                .execute(params![&v[..], token, "report"])
                .unwrap();
            assert_eq!(n, 1);
        })
    };
    let m = measure(
        plan,
        |_| {
            timed(|| {
                store.renew("report", lease.token, LONG_TTL).unwrap();
            })
        },
        &mut fenced_put,
    );
    report(plan, "sqlite", "renew", SQL_PUT_BASELINE, m);
    let m = measure(
        plan,
        |i| {
            let v = value(i);
            timed(|| {
                store.put("report", "body", &v, &fence).unwrap();
            })
        },
        &mut fenced_put,
    );
    report(plan, "sqlite", "put", SQL_PUT_BASELINE, m);
}

const SQL_PUT_BASELINE: &str =
    "UPDATE report_state SET body = ?, fencing_token = ? WHERE report_id = ? AND fencing_token <= ?";

// ----- postgres:// -----

fn connect(url: &str) -> Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(NoTls)
        .unwrap()
}

fn postgres(plan: &Plan, base: &str) {
    let tag = std::process::id();
    let (schema, raw_schema) = (format!("bench_lat_{tag}"), format!("bench_lat_raw_{tag}"));
    let mut raw = connect(base);
    raw.batch_execute(&format!(
        "CREATE SCHEMA {raw_schema}; SET search_path = {raw_schema};
         CREATE TABLE lease_counter (lease_name text PRIMARY KEY, value bigint NOT NULL);
         CREATE TABLE report_state (report_id text PRIMARY KEY, body bytea NOT NULL,
                                    fencing_token bigint NOT NULL);
         INSERT INTO report_state VALUES ('report', '', 0);"
    ))
    .unwrap();
    let store = Store::open(&format!("{base}?schema={schema}&pool_size=1")).unwrap();
    let scopes: Vec<String> = (0..ACQUIRE_SCOPES)
        .map(|i| format!("acquire:{i}"))
        .collect();
    for s in &scopes {
        raw.execute("INSERT INTO lease_counter VALUES ($1, 0)", &[s])
            .unwrap();
        store.next_token(s).unwrap();
    }
    let counter = raw
        .prepare("UPDATE lease_counter SET value = value + 1 WHERE lease_name = $1 RETURNING value")
        .unwrap();
    let fenced_sql = raw
        .prepare(
            "UPDATE report_state SET body = $1, fencing_token = $2 \
             WHERE report_id = $3 AND fencing_token <= $2",
        )
        .unwrap();
    let raw = std::cell::RefCell::new(raw);
    let m = measure(
        plan,
        |i| {
            timed(|| {
                store
                    .acquire(
                        &scopes[i % ACQUIRE_SCOPES],
                        "bench",
                        Duration::from_millis(1),
                    )
                    .unwrap();
            })
        },
        |i| {
            timed(|| {
                let _: i64 = raw
                    .borrow_mut()
                    .query_one(&counter, &[&scopes[i % ACQUIRE_SCOPES]])
                    .unwrap()
                    .get(0);
            })
        },
    );
    report(plan, "postgres", "acquire", SQL_ACQUIRE_BASELINE, m);

    let lease = store.acquire("report", "bench", LONG_TTL).unwrap();
    let fence = Fence::new(lease.token);
    let token = lease.token.get() as i64;
    let fenced_put = |i: usize| {
        let v = value(i).to_vec();
        timed(|| {
            let n = raw
                .borrow_mut()
                .execute(&fenced_sql, &[&v, &token, &"report"])
                .unwrap();
            assert_eq!(n, 1);
        })
    };
    let m = measure(
        plan,
        |_| {
            timed(|| {
                store.renew("report", lease.token, LONG_TTL).unwrap();
            })
        },
        fenced_put,
    );
    report(plan, "postgres", "renew", PG_PUT_BASELINE, m);
    let m = measure(
        plan,
        |i| {
            let v = value(i);
            timed(|| {
                store.put("report", "body", &v, &fence).unwrap();
            })
        },
        fenced_put,
    );
    report(plan, "postgres", "put", PG_PUT_BASELINE, m);
    store.close();
    raw.borrow_mut()
        .batch_execute(&format!(
            "DROP SCHEMA {raw_schema} CASCADE; DROP SCHEMA {schema} CASCADE"
        ))
        .unwrap();
}

const PG_PUT_BASELINE: &str = "UPDATE report_state ... WHERE fencing_token <= $2 (prepared once)";

fn main() {
    let plan = plan();
    println!(
        "latency: p50, p99, p99.9 of {} single calls per side and point, one caller{}",
        plan.calls,
        if plan.smoke {
            " (smoke: these figures are not measurements)"
        } else {
            ""
        }
    );
    memory(&plan);
    sqlite(&plan);
    match std::env::var("FENCING_TEST_PG_URL") {
        Ok(url) => postgres(&plan, &url),
        Err(_) if std::env::var("FENCING_REQUIRE_PG").as_deref() == Ok("1") => {
            panic!("FENCING_REQUIRE_PG=1 but FENCING_TEST_PG_URL is not set")
        }
        Err(_) => {
            println!("postgres: skipped: no server (run under scripts/pg-cluster run -- ...)")
        }
    }
}
