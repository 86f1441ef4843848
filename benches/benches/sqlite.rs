//! `sqlite:` beside raw rusqlite running the classic hand-written SQL with the
//! same pragmas (WAL, synchronous=FULL), measured in the same run.
//!
//! ```text
//! cargo bench -p fencing-benches --bench sqlite            # full run
//! cargo bench -p fencing-benches --bench sqlite -- --quick # fewer, shorter rounds
//! cargo test -p fencing-benches --benches                  # smoke: a few operations
//! ```
//!
//! Each line runs several rounds, alternating the library and its baseline so
//! that both see the same disk, and prints the median of each, their ratio and
//! the goal. Nothing here asserts on timings.

use std::path::Path;
use std::time::{Duration, Instant};

use fencing::{Fence, Op, Store};
use rusqlite::{params, Connection};

const SCOPES: usize = 1000;
const VALUE: [u8; 64] = [0x5A; 64];

struct Plan {
    rounds: usize,
    ops: usize,
    /// Only lines whose label contains this run (the first free argument).
    filter: Option<String>,
    /// Run by `cargo test`: exercise the code, measure nothing.
    smoke: bool,
}

fn plan() -> Plan {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filter = args.iter().find(|a| !a.starts_with("--")).cloned();
    let smoke = !args.iter().any(|a| a == "--bench");
    let (rounds, ops) = if smoke {
        // `cargo test --benches`: prove every path runs, measure nothing.
        (1, CHUNKS)
    } else if args.iter().any(|a| a == "--quick") {
        (3, 200)
    } else {
        (9, 1000)
    };
    Plan {
        rounds,
        ops,
        filter,
        smoke,
    }
}

/// Chunks per round: the library and the baseline take turns every chunk,
/// so that both meet the same disk weather (fsync times swing widely).
const CHUNKS: usize = 10;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Times `ours` and `base` (each called with the operation's index) in
/// alternating chunks, and prints the median rates of the rounds, their
/// ratio and the goal. `per_call` is how many units one call does.
fn compare(
    plan: &Plan,
    label: &str,
    unit: &str,
    per_call: f64,
    goal: &str,
    mut ours: impl FnMut(usize),
    mut base: impl FnMut(usize),
) {
    if plan
        .filter
        .as_ref()
        .is_some_and(|f| !label.contains(f.as_str()))
    {
        return;
    }
    let chunk = (plan.ops / CHUNKS).max(1);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut i = 0;
    for _ in 0..plan.rounds {
        let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
        for c in 0..CHUNKS {
            for side in [c % 2, 1 - c % 2] {
                let start = Instant::now();
                for k in i..i + chunk {
                    if side == 0 {
                        ours(k)
                    } else {
                        base(k)
                    }
                }
                let spent = start.elapsed();
                if side == 0 {
                    ta += spent
                } else {
                    tb += spent
                }
            }
            i += chunk;
        }
        let units = per_call * (chunk * CHUNKS) as f64;
        a.push(units / ta.as_secs_f64());
        b.push(units / tb.as_secs_f64());
    }
    let (a, b) = (median(a), median(b));
    println!(
        "{label:<44} fencing {a:>9.0} {unit}  baseline {b:>9.0} {unit}  ratio {:.2}x  ({goal})",
        a / b
    );
}

fn raw_connection(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
        .unwrap();
    conn.execute_batch(
        "PRAGMA synchronous=FULL;
         CREATE TABLE lease_counter (lease_name TEXT PRIMARY KEY, value INTEGER NOT NULL);
         CREATE TABLE report_state (report_id TEXT PRIMARY KEY, body BLOB,
                                    fencing_token INTEGER NOT NULL);",
    )
    .unwrap();
    conn
}

/// A value that differs from the previous one: SQLite skips the write (and
/// its fsync) of an UPDATE that changes nothing, which would flatter the
/// baseline.
fn value(i: usize) -> [u8; 64] {
    let mut v = VALUE;
    v[..8].copy_from_slice(&(i as u64).to_le_bytes());
    v
}

fn scope(i: usize) -> String {
    format!("report:{}", i % SCOPES)
}

fn main() {
    let plan = plan();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!(
        "sqlite:{}",
        dir.path().join("fencing.db").display()
    ))
    .unwrap();
    let raw = raw_connection(&dir.path().join("raw.db"));
    let names: Vec<String> = (0..SCOPES).map(scope).collect();
    raw.execute_batch("BEGIN").unwrap();
    for name in &names {
        raw.execute("INSERT INTO lease_counter VALUES (?1, 0)", [name])
            .unwrap();
        raw.execute("INSERT INTO report_state VALUES (?1, NULL, 0)", [name])
            .unwrap();
    }
    raw.execute_batch("COMMIT").unwrap();
    // Both files start from the same place: the library's scopes exist, and
    // neither write-ahead log holds pages from the setup.
    for name in &names {
        store.next_token(name).unwrap();
    }
    for db in ["fencing.db", "raw.db"] {
        Connection::open(dir.path().join(db))
            .unwrap()
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
    }
    println!(
        "sqlite: {} rounds of {} operations each, median of rounds (WAL, synchronous=FULL){}",
        plan.rounds,
        plan.ops,
        if plan.smoke {
            "\nsmoke run (cargo test): every path runs once; these figures are not measurements"
        } else {
            ""
        }
    );

    // Acquisitions: a 1 ms lease on each of 1000 scopes in turn, so every
    // lease has expired before its scope comes round again. The baseline is
    // the classic counter increment alone.
    let ttl = Duration::from_millis(1);
    let mut counter = raw
        .prepare("UPDATE lease_counter SET value = value + 1 WHERE lease_name = ?1 RETURNING value")
        .unwrap();
    compare(
        &plan,
        "acquire vs UPDATE lease_counter ... RETURNING",
        "acq/s",
        1.0,
        "goal >= 0.9x",
        |i| {
            store.acquire(&names[i % SCOPES], "bench", ttl).unwrap();
        },
        |i| {
            // Stepped to the end: only then does the autocommit transaction
            // commit the shortest way (query_row resets it mid-statement).
            let mut rows = counter.query([&names[i % SCOPES]]).unwrap();
            let _: i64 = rows.next().unwrap().unwrap().get(0).unwrap();
            assert!(rows.next().unwrap().is_none());
        },
    );

    // Fenced writes with the current token: accepted, one commit each.
    let mut fenced_update = raw
        .prepare(
            "UPDATE report_state SET body = ?1, fencing_token = ?2 \
             WHERE report_id = ?3 AND fencing_token <= ?2",
        )
        .unwrap();
    let token = store.next_token("report").unwrap();
    let fence = Fence::new(token);
    compare(
        &plan,
        "put (accepted) vs UPDATE ... fencing_token <=",
        "w/s",
        1.0,
        "goal >= 0.9x",
        |i| {
            store.put("report", "body", &value(i), &fence).unwrap();
        },
        |i| {
            let n = fenced_update
                .execute(params![&value(i)[..], token.get() as i64, "report:0"])
                .unwrap();
            assert_eq!(n, 1);
        },
    );

    // Stale writes: rejected, nothing committed.
    let newer = store.next_token("report").unwrap();
    store.claim("report", &Fence::new(newer)).unwrap();
    raw.execute(
        "UPDATE report_state SET fencing_token = ?1 WHERE report_id = 'report:0'",
        [newer.get() as i64],
    )
    .unwrap();
    compare(
        &plan,
        "put (stale) vs UPDATE matching 0 rows",
        "w/s",
        1.0,
        "no goal: neither commits",
        |i| {
            assert!(store.put("report", "body", &value(i), &fence).is_err());
        },
        |i| {
            let n = fenced_update
                .execute(params![&value(i)[..], token.get() as i64, "report:0"])
                .unwrap();
            assert_eq!(n, 0);
        },
    );

    // Batches: 100 puts in one apply against 100 single puts, both through
    // the library, in puts per second.
    let fence = Fence::new(newer);
    let batch: Vec<Op> = (0..100)
        .map(|k| Op::put(format!("key-{k}"), VALUE.to_vec()))
        .collect();
    let batch_plan = Plan {
        ops: (plan.ops / 20).max(CHUNKS),
        ..plan
    };
    compare(
        &batch_plan,
        "apply(100 puts) vs 100 single puts",
        "puts/s",
        100.0,
        "goal >= 20x",
        |_| {
            store.apply("batch", &fence, batch.clone()).unwrap();
        },
        |_| {
            for op in &batch {
                store.execute("batch", &fence, op.clone()).unwrap();
            }
        },
    );
}
