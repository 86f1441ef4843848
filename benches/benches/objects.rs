//! Fenced objects on a real S3 server beside plain requests of the same
//! bytes through the same `object_store` client, in the same run: 1 KiB and
//! 1 MiB objects, 1, 4 and 16 writers (or readers).
//!
//! ```text
//! scripts/s3-server run -- cargo bench -p fencing-benches --bench objects              # full run
//! scripts/s3-server run -- cargo bench -p fencing-benches --bench objects -- --quick   # shorter
//! scripts/s3-server run -- cargo test -p fencing-benches --bench objects               # smoke
//! ```
//!
//! The server comes from `FENCING_TEST_S3_BUCKET` and the `AWS_*` variables
//! (`scripts/s3-server run`: Ceph's RADOS Gateway on 127.0.0.1); without
//! one the bench says so and measures nothing.
//!
//! What one iteration does (each writer on a path of its own, the steady
//! state of one holder writing its object again and again):
//!
//! - put: `Objects::put(path, fence, bytes)` (list the path's folder and
//!   put the data at once, no claim read while the handle knows the head;
//!   create the next claim; list again; every eighth write a floor and one
//!   bulk delete) beside one plain `PUT` of the same bytes.
//! - get: `Objects::get(path)` from another handle, as another process
//!   reads (list, read the head claim, read the data beside a second
//!   listing; from its third read of an unchanged object, the listing and
//!   the data read together) beside one plain `GET`.
//!
//! Each round alternates the two sides chunk by chunk; each line prints the
//! medians over the rounds and their ratio. Nothing asserts on timings.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fencing::objects::aio::Objects;
use fencing::{Fence, Token};
use fencing_benches::report::{self, Goal, Line};
use fencing_benches::run::Args;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

const CHUNKS: usize = 4;
const WORKERS: [usize; 3] = [1, 4, 16];
const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

struct Plan {
    rounds: usize,
    /// Requests per chunk, shared out among the workers (at least one each).
    chunk: usize,
    smoke: bool,
    filter: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Put,
    Get,
}

struct Bench {
    plan: Plan,
    rt: tokio::runtime::Runtime,
    objects: Objects,
    /// Another handle on the same objects, as another process's reader.
    reader: Objects,
    store: Arc<dyn ObjectStore>,
    /// Where the plain requests go, beside the fenced objects' paths.
    plain: Path,
    fence: Fence,
}

impl Bench {
    /// `n` workers each run `one(worker, i)` for `calls` values of `i` at
    /// once; the wall time from the start to the last one's end.
    fn chunk<F, Fut>(&self, n: usize, calls: usize, from: usize, one: F) -> Duration
    where
        F: Fn(usize, usize) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let tasks: Vec<Vec<Fut>> = (0..n)
            .map(|w| (from..from + calls).map(|i| one(w, i)).collect())
            .collect();
        self.rt.block_on(async {
            let start = Instant::now();
            let handles: Vec<_> = tasks
                .into_iter()
                .map(|calls| {
                    tokio::spawn(async move {
                        for call in calls {
                            call.await;
                        }
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
            start.elapsed()
        })
    }

    fn fenced(&self, kind: Kind, path: String, bytes: Arc<Vec<u8>>) -> impl Future<Output = ()> {
        let (objects, reader, fence) = (
            self.objects.clone(),
            self.reader.clone(),
            self.fence.clone(),
        );
        async move {
            match kind {
                Kind::Put => {
                    objects.put(&path, &fence, &bytes, None).await.unwrap();
                }
                Kind::Get => {
                    let got = reader.get(&path).await.unwrap().unwrap();
                    assert_eq!(got.bytes.len(), bytes.len());
                }
            }
        }
    }

    fn plain(&self, kind: Kind, path: Path, bytes: Arc<Vec<u8>>) -> impl Future<Output = ()> {
        let store = self.store.clone();
        async move {
            match kind {
                Kind::Put => {
                    let payload = PutPayload::from(bytes.as_ref().clone());
                    store.put(&path, payload).await.unwrap();
                }
                Kind::Get => {
                    let got = store.get(&path).await.unwrap().bytes().await.unwrap();
                    assert_eq!(got.len(), bytes.len());
                }
            }
        }
    }

    fn line(&self, kind: Kind, size: usize, n: usize, goal: Option<Goal>) {
        let (verb, unit, request) = match kind {
            Kind::Put => ("put", "w/s", "PUT"),
            Kind::Get => ("get", "r/s", "GET"),
        };
        let size_name = if size >= MIB { "1 MiB" } else { "1 KiB" };
        let label = format!("s3 {verb} {size_name} (fenced) vs plain {request}");
        if let Some(f) = &self.plan.filter {
            if !label.contains(f.as_str()) {
                return;
            }
        }
        let bytes = Arc::new(vec![0x5Au8; size]);
        let fenced_path = |w: usize| format!("{verb}/{size}/{n}/{w}");
        let plain_path = |w: usize| self.plain.clone().join(format!("{verb}-{size}-{n}-{w}"));
        let fenced = |w: usize, _i: usize| self.fenced(kind, fenced_path(w), bytes.clone());
        let plain = |w: usize, _i: usize| self.plain(kind, plain_path(w), bytes.clone());
        let calls = (self.plan.chunk / n).max(1);
        // Warm-up, unmeasured; for reads it writes what they read.
        let mut next = 0;
        for side in [Kind::Put, kind] {
            self.chunk(n, 1, next, |w, _| {
                self.fenced(side, fenced_path(w), bytes.clone())
            });
            self.chunk(n, 1, next, |w, _| {
                self.plain(side, plain_path(w), bytes.clone())
            });
            next += 1;
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..self.plan.rounds {
            let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
            for c in 0..CHUNKS {
                // Alternate who goes first, chunk by chunk.
                if c % 2 == 0 {
                    ta += self.chunk(n, calls, next, fenced);
                    tb += self.chunk(n, calls, next, plain);
                } else {
                    tb += self.chunk(n, calls, next, plain);
                    ta += self.chunk(n, calls, next, fenced);
                }
                next += calls;
            }
            let units = (calls * CHUNKS * n) as f64;
            a.push(units / ta.as_secs_f64());
            b.push(units / tb.as_secs_f64());
        }
        let (a, b) = (report::median(a), report::median(b));
        let who = if kind == Kind::Put {
            "writers"
        } else {
            "readers"
        };
        let line = Line::new(
            "objects",
            &label,
            n as u32,
            who,
            unit,
            a,
            b,
            &format!("one {request} of the same bytes through the same object_store client"),
        )
        .goal_opt(goal)
        .rounds(self.plan.rounds)
        .smoke(self.plan.smoke);
        let verdict = line.verdict();
        println!(
            "{label:<40} {n:>2} {who:<7} fenced {a:>7.1} {unit}  plain {b:>7.1} {unit}  ratio {:>5.2}x  ({verdict})",
            a / b
        );
        report::record(&line);
    }
}

fn main() {
    let args = Args::from_env();
    let (rounds, chunk) = args.pick((1, 1), (3, 32), (5, 96));
    let plan = Plan {
        rounds,
        chunk,
        smoke: args.smoke(),
        filter: args.filter,
    };
    let bucket = match std::env::var("FENCING_TEST_S3_BUCKET") {
        Ok(b) if !b.is_empty() => b,
        _ => {
            if std::env::var("FENCING_REQUIRE_S3").as_deref() == Ok("1") {
                panic!("FENCING_REQUIRE_S3=1 but FENCING_TEST_S3_BUCKET is not set");
            }
            println!(
                "objects bench skipped: no S3 server (run under scripts/s3-server run -- ...)"
            );
            return;
        }
    };
    let run = format!("bench-objects-{}", std::process::id());
    let objects = Objects::open(&format!("s3://{bucket}/{run}")).unwrap();
    let reader = Objects::open(&format!("s3://{bucket}/{run}")).unwrap();
    let (store, _) = objects.object_store();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "objects: fenced objects on s3://{bucket} beside plain requests; {} rounds x {CHUNKS} chunks x {} requests shared out among the workers{}",
        plan.rounds,
        plan.chunk,
        if plan.smoke { " (smoke: no timing claims)" } else { "" }
    );
    let bench = Bench {
        plan,
        rt,
        objects,
        reader,
        store,
        plain: Path::from(format!("{run}-plain")),
        fence: Fence::new(Token::new(1).unwrap()),
    };
    for n in WORKERS {
        bench.line(Kind::Put, KIB, n, Some(Goal::ratio_at_least(0.5)));
        bench.line(Kind::Put, MIB, n, Some(Goal::ratio_at_least(0.8)));
    }
    for n in WORKERS {
        bench.line(Kind::Get, KIB, n, None);
        bench.line(Kind::Get, MIB, n, Some(Goal::ratio_at_least(0.9)));
    }
}
