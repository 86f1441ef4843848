//! What the store's record (docs/operations.md) costs a stale write: a
//! stale put that the store records, beside one that the rate limit lets
//! through unrecorded (what every other stale write of a flood costs), on
//! `memory:`, `sqlite:` and, with `FENCING_TEST_PG_URL`, `postgres://`.
//! Both sides run on one handle, in alternating chunks, in the same run.
//!
//! The handle runs on a manual clock: moving it a whole interval before
//! each put makes every stale put the first of its interval (recorded);
//! not moving it keeps every one inside the interval (counted, not
//! recorded). Both sides call `advance_clock`, so that call's own cost is
//! on both.
//!
//! ```text
//! cargo bench -p fencing-benches --bench stale_record [-- --quick]
//! cargo test -p fencing-benches --bench stale_record      # smoke: once, measuring nothing
//! ```

use std::time::{Duration, Instant};

use fencing::{Fence, Store, RECORD_INTERVAL};
use fencing_benches::report::{self, Line};
use fencing_benches::run::Args;

const CHUNKS: usize = 10;

struct Plan {
    rounds: usize,
    ops: usize,
    smoke: bool,
}

fn plan() -> Plan {
    let args = Args::from_env();
    let (rounds, ops) = args.pick((1, CHUNKS), (3, 200), (9, 1000));
    Plan {
        rounds,
        ops,
        smoke: args.smoke(),
    }
}

/// One side's chunk: `n` stale puts, each after moving the clock by `step`.
fn stale_puts(store: &Store, old: &Fence, step: Duration, n: usize) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        store.advance_clock(step).unwrap();
        assert!(store.put("s", "k", b"stale value", old).is_err());
    }
    start.elapsed()
}

fn compare(group: &str, url: &str, unit: &str, plan: &Plan) {
    let store = Store::open(url).unwrap();
    let old = store.next_token("s").unwrap();
    let new = store.next_token("s").unwrap();
    store.put("s", "k", b"v", &Fence::new(new)).unwrap();
    let old = Fence::new(old).with_holder("bench-stale-holder");
    let chunk = (plan.ops / CHUNKS).max(1);
    let (mut recorded, mut limited) = (Vec::new(), Vec::new());
    for _ in 0..plan.rounds {
        let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
        for c in 0..CHUNKS {
            // Alternate which side goes first, so neither always follows the other.
            for side in [c % 2, 1 - c % 2] {
                if side == 0 {
                    ta += stale_puts(&store, &old, RECORD_INTERVAL, chunk);
                } else {
                    tb += stale_puts(&store, &old, Duration::ZERO, chunk);
                }
            }
        }
        let n = (chunk * CHUNKS) as f64;
        recorded.push(n / ta.as_secs_f64());
        limited.push(n / tb.as_secs_f64());
    }
    let rows = store.events(Some("s"), 1).unwrap().rejections;
    assert!(!rows.is_empty(), "the recorded side recorded nothing");
    store.close();
    let (a, b) = (report::median(recorded), report::median(limited));
    let line = Line::new(
        group,
        "put (stale), recorded in the store",
        1,
        unit,
        "w/s",
        a,
        b,
        "the same stale put, not recorded (rate limit: one record per scope per second)",
    )
    .rounds(plan.rounds)
    .smoke(plan.smoke);
    println!(
        "{group:<9} stale put, recorded {a:>9.0} w/s  not recorded {b:>9.0} w/s  ratio {:>6.2}x",
        a / b
    );
    report::record(&line);
}

fn main() {
    let plan = plan();
    println!(
        "stale_record: {} rounds x {CHUNKS} chunks x {} stale puts, median of rounds{}",
        plan.rounds,
        (plan.ops / CHUNKS).max(1),
        if plan.smoke {
            " (smoke: these figures are not measurements)"
        } else {
            ""
        }
    );
    compare("memory", "memory:?clock=manual", "threads", &plan);
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!(
        "sqlite:{}?clock=manual",
        dir.path().join("stale.db").display()
    );
    compare("sqlite", &sqlite, "processes", &plan);
    match std::env::var("FENCING_TEST_PG_URL") {
        Ok(base) if !base.is_empty() => {
            let schema = format!("bench_stale_{}", std::process::id());
            let url = format!("{base}?schema={schema}&pool_size=1&clock=manual");
            compare("postgres", &url, "clients", &plan);
            let mut admin = base
                .parse::<postgres::Config>()
                .unwrap()
                .connect(postgres::NoTls)
                .unwrap();
            admin
                .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
                .unwrap();
        }
        _ => println!("postgres  skipped: no server (run under scripts/pg-cluster run -- ...)"),
    }
}
