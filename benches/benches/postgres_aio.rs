//! `fencing::aio::Store` beside the blocking `fencing::Store` on
//! `postgres://`, at 1, 4 and 16 concurrent callers, measured in the same
//! run: the same accepted puts (each caller its own scope), as tasks on a
//! tokio runtime against threads. The ratio is what the hop to tokio's
//! blocking pool costs (or saves) per call.
//!
//! ```text
//! scripts/pg-cluster run -- cargo bench -p fencing-benches --bench postgres_aio            # full run
//! scripts/pg-cluster run -- cargo bench -p fencing-benches --bench postgres_aio -- --quick # shorter
//! cargo test -p fencing-benches --bench postgres_aio                                       # smoke
//! ```
//!
//! Each round runs both sides in alternating chunks, so that both meet the
//! same fsync weather; each line prints the medians and their ratio.
//! Nothing asserts on timings.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use fencing::{aio, Fence, Store};
use fencing_benches::report::{self, Goal, Line};
use fencing_benches::run::Args;

const CHUNKS: usize = 6;

struct Plan {
    rounds: usize,
    /// Puts per caller per chunk.
    chunk: usize,
    smoke: bool,
}

fn plan() -> Plan {
    let args = Args::from_env();
    let (rounds, chunk) = args.pick((1, 2), (3, 20), (7, 50));
    Plan {
        rounds,
        chunk,
        smoke: args.smoke(),
    }
}

fn value(i: usize) -> Vec<u8> {
    let mut v = vec![0x5A; 64];
    v[..8].copy_from_slice(&(i as u64).to_le_bytes());
    v
}

/// `callers` threads, each `chunk` puts on the blocking store.
fn blocking_chunk(store: &Store, fences: &[Fence], chunk: usize) -> Duration {
    let start = Barrier::new(fences.len() + 1);
    std::thread::scope(|s| {
        for (id, fence) in fences.iter().enumerate() {
            let start = &start;
            s.spawn(move || {
                start.wait();
                for i in 0..chunk {
                    store
                        .put(&format!("report-{id}"), "body", &value(i), fence)
                        .unwrap();
                }
            });
        }
        start.wait();
        Instant::now()
    })
    .elapsed()
}

/// `callers` tasks, each `chunk` puts on the async store.
fn aio_chunk(
    runtime: &tokio::runtime::Runtime,
    store: &aio::Store,
    fences: &[Fence],
    chunk: usize,
) -> Duration {
    runtime.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = fences
            .iter()
            .enumerate()
            .map(|(id, fence)| {
                let (store, fence) = (store.clone(), fence.clone());
                tokio::spawn(async move {
                    for i in 0..chunk {
                        store
                            .put(&format!("report-{id}"), "body", &value(i), &fence)
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        start.elapsed()
    })
}

fn main() {
    let plan = plan();
    let Ok(base) = std::env::var("FENCING_TEST_PG_URL") else {
        if std::env::var("FENCING_REQUIRE_PG").as_deref() == Ok("1") {
            panic!("FENCING_REQUIRE_PG=1 but FENCING_TEST_PG_URL is not set");
        }
        println!("postgres_aio bench skipped: no server (run under scripts/pg-cluster run -- ...)");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "postgres: aio::Store (tasks) vs the blocking Store (threads), same puts; \
         {} rounds x {CHUNKS} chunks x {} puts per caller{}",
        plan.rounds,
        plan.chunk,
        if plan.smoke {
            " (smoke: no timing claims)"
        } else {
            ""
        }
    );
    let tag = std::process::id();
    for callers in [1usize, 4, 16] {
        let url = format!("{base}?schema=bench_aio_{tag}_{callers}&pool_size={callers}");
        let store = Store::open(&url).unwrap();
        let async_store = runtime.block_on(aio::Store::open(&url)).unwrap();
        let fences: Vec<Fence> = (0..callers)
            .map(|id| Fence::new(store.next_token(&format!("report-{id}")).unwrap()))
            .collect();
        // Warm up both (connections, prepared statements), unmeasured.
        blocking_chunk(&store, &fences, plan.chunk);
        aio_chunk(&runtime, &async_store, &fences, plan.chunk);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..plan.rounds {
            let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
            for c in 0..CHUNKS {
                if c % 2 == 0 {
                    ta += aio_chunk(&runtime, &async_store, &fences, plan.chunk);
                    tb += blocking_chunk(&store, &fences, plan.chunk);
                } else {
                    tb += blocking_chunk(&store, &fences, plan.chunk);
                    ta += aio_chunk(&runtime, &async_store, &fences, plan.chunk);
                }
            }
            let puts = (plan.chunk * CHUNKS * callers) as f64;
            a.push(puts / ta.as_secs_f64());
            b.push(puts / tb.as_secs_f64());
        }
        let (a, b) = (report::median(a), report::median(b));
        let line = Line::new(
            "postgres",
            "aio put vs blocking put",
            callers as u32,
            "callers",
            "w/s",
            a,
            b,
            "the blocking Store, one thread per caller",
        )
        .rounds(plan.rounds)
        .smoke(plan.smoke)
        // The async store at least as fast as the blocking one where
        // callers are many (docs/performance.md, "Goals").
        .goal_opt((callers == 16).then_some(Goal::ratio_at_least(1.0)));
        println!(
            "aio put vs blocking put {callers:>2} callers  aio {a:>9.0} w/s  blocking {b:>9.0} w/s  ratio {:>6.2}x",
            a / b
        );
        report::record(&line);
        runtime.block_on(async_store.close());
        store.close();
    }
}
