//! fencing on `postgres://` and `sqlite:` beside etcd (v3 API, one node on
//! the same machine) doing the same job the way etcd users do it, at 1, 4
//! and 16 callers, measured in the same run.
//!
//! ```text
//! scripts/etcd-server run -- scripts/pg-cluster run -- \
//!     cargo bench -p fencing-benches --bench etcd              # full run
//! ... cargo bench -p fencing-benches --bench etcd -- --quick   # shorter
//! ... cargo test -p fencing-benches --bench etcd               # smoke
//! ```
//!
//! etcd comes from `FENCING_TEST_ETCD_URL` (`scripts/etcd-server run`), the
//! PostgreSQL server from `FENCING_TEST_PG_URL` (`scripts/pg-cluster run`);
//! without etcd the bench says so and measures nothing, without PostgreSQL
//! only the sqlite: lines run. The SQLite file is in a temporary directory.
//!
//! What one iteration does on each side (every caller on its own scope and
//! its own gRPC connection; the callers share one store, as the threads of
//! one program do: on postgres:// a pool of one connection per caller, on
//! sqlite: the store's one connection):
//!
//! - acquire (new scope): the acquisition alone, on a scope nobody has
//!   held (a new one each iteration, as each first acquisition of a lock
//!   is): fencing `acquire(scope, 10 s)`, one transaction; etcd
//!   `LeaseGrant(10 s)` and the lock key put with that lease in a `Txn`
//!   (`create_revision == 0`), two RPCs, two Raft proposals. The goal
//!   (PostgreSQL at least 3x etcd) is on this line.
//! - acquire + release: fencing `acquire(scope, 10 s)` then `release(scope,
//!   token)`, two calls, each one transaction (on postgres:// one round trip
//!   each). etcd: `LeaseGrant(10 s)`, a `Txn` that puts the lock key with
//!   that lease only if it does not exist (`create_revision == 0`; the
//!   revision it commits at is the fencing token), then `LeaseRevoke`, which
//!   deletes the key so that the next iteration acquires the scope again:
//!   three RPCs, each a Raft proposal.
//! - put (fenced): fencing `put(scope, key, 64 B, fence)` with the token of a
//!   lease the caller holds. etcd: one `Txn` that puts the data key only if
//!   the caller's lock key still has the `create_revision` of its
//!   acquisition (the lock is still its own): one RPC.
//!
//! Durability: PostgreSQL with `fsync=on` and `synchronous_commit=on` (each
//! commit waits for its WAL flush), SQLite with WAL and `synchronous=FULL`
//! (an fsync per commit), etcd with its defaults (the WAL is fsynced before a
//! proposal is applied and answered; the bbolt file is committed in batches
//! off the reply path). Each line also prints what each side fsynced per
//! iteration: etcd's `etcd_disk_wal_fsync_duration_seconds_count`, and
//! PostgreSQL's `pg_stat_wal.wal_sync`.
//!
//! Each round alternates the two sides chunk by chunk so that both meet the
//! same disk weather; each line prints the medians over the rounds and their
//! ratio. Nothing asserts on timings.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};
use fencing::{Fence, Store};
use fencing_benches::report::{self, Goal, Line};
use fencing_benches::run::Args;

const CHUNKS: usize = 4;
const CALLERS: [usize; 3] = [1, 4, 16];
/// The lease of an acquisition that is released in the same iteration.
const CYCLE_TTL: Duration = Duration::from_secs(10);
/// The lease held through a line of fenced writes.
const HELD_TTL: Duration = Duration::from_secs(600);
const HOLDER: &str = "bench";

struct Plan {
    rounds: usize,
    /// Iterations per chunk, shared out among the callers (at least one
    /// each), so that a chunk takes about as long at every concurrency.
    chunk: usize,
    filter: Option<String>,
    smoke: bool,
}

fn plan() -> Plan {
    let args = Args::from_env();
    let (rounds, chunk) = args.pick((1, 1), (3, 24), (5, 64));
    Plan {
        rounds,
        chunk,
        smoke: args.smoke(),
        filter: args.filter,
    }
}

fn value(i: usize) -> Vec<u8> {
    let mut v = vec![0x5A; 64];
    v[..8].copy_from_slice(&(i as u64).to_le_bytes());
    v
}

#[derive(Clone, Copy)]
enum Backend {
    Postgres,
    Sqlite,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Postgres => "postgres",
            Backend::Sqlite => "sqlite",
        }
    }

    /// What the callers share: connections of one pool, or one connection.
    fn concurrency_unit(self) -> &'static str {
        match self {
            Backend::Postgres => "clients",
            Backend::Sqlite => "threads",
        }
    }
}

/// One caller: its fencing store and its etcd connection (on a runtime of
/// its own, driven by the caller's thread, as a blocking client would be).
struct Caller {
    store: Store,
    rt: tokio::runtime::Runtime,
    etcd: Client,
    scope: String,
    lock_key: String,
    data_key: String,
    /// What the caller holds during the put line: the fencing token and the
    /// etcd lease and lock key revision.
    held: Option<(Fence, i64, i64)>,
}

impl Caller {
    fn new(store: Store, etcd_url: &str, name: &str) -> Caller {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let etcd = rt.block_on(Client::connect([etcd_url], None)).unwrap();
        Caller {
            store,
            rt,
            etcd,
            scope: name.to_owned(),
            lock_key: format!("/fencing-bench/{name}/lock"),
            data_key: format!("/fencing-bench/{name}/body"),
            held: None,
        }
    }

    fn fencing_cycle(&mut self) {
        let lease = self.store.acquire(&self.scope, HOLDER, CYCLE_TTL).unwrap();
        assert!(self.store.release(&self.scope, lease.token).unwrap());
    }

    /// An etcd acquisition: a lease, then the lock key under it if nobody
    /// holds it; returns the lease and the revision (the token).
    fn etcd_acquire(&mut self, ttl: Duration) -> (i64, i64) {
        let (etcd, key) = (&mut self.etcd, &self.lock_key);
        self.rt.block_on(async {
            let lease = etcd
                .lease_grant(ttl.as_secs() as i64, None)
                .await
                .unwrap()
                .id();
            let txn = Txn::new()
                .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(
                    key.as_str(),
                    HOLDER,
                    Some(PutOptions::new().with_lease(lease)),
                )]);
            let reply = etcd.txn(txn).await.unwrap();
            assert!(reply.succeeded(), "etcd: {key} is held by someone else");
            (lease, reply.header().unwrap().revision())
        })
    }

    /// The issue's acquisition, alone: a lease on a scope nobody has held
    /// (the `i`-th of this caller's), as the first acquisition of a lock is.
    fn fencing_acquire_new(&mut self, i: usize) {
        let scope = format!("{}/new/{i}", self.scope);
        self.store.acquire(&scope, HOLDER, CYCLE_TTL).unwrap();
    }

    /// etcd's: LeaseGrant, then the lock key under that lease (two Raft
    /// proposals, each fsynced), on a key nobody has held.
    fn etcd_acquire_new(&mut self, i: usize) {
        let new_key = format!("{}/new/{i}", self.lock_key);
        let lock_key = std::mem::replace(&mut self.lock_key, new_key);
        self.etcd_acquire(CYCLE_TTL);
        self.lock_key = lock_key;
    }

    fn etcd_release(&mut self, lease: i64) {
        let etcd = &mut self.etcd;
        self.rt.block_on(etcd.lease_revoke(lease)).unwrap();
    }

    fn etcd_cycle(&mut self) {
        let (lease, _token) = self.etcd_acquire(CYCLE_TTL);
        self.etcd_release(lease);
    }

    fn hold(&mut self) {
        let lease = self.store.acquire(&self.scope, HOLDER, HELD_TTL).unwrap();
        let (etcd_lease, revision) = self.etcd_acquire(HELD_TTL);
        self.held = Some((Fence::new(lease.token), etcd_lease, revision));
    }

    fn let_go(&mut self) {
        if let Some((fence, etcd_lease, _)) = self.held.take() {
            self.store.release(&self.scope, fence.token).unwrap();
            self.etcd_release(etcd_lease);
        }
    }

    fn fencing_put(&mut self, i: usize) {
        let (fence, _, _) = self.held.as_ref().unwrap();
        self.store
            .put(&self.scope, "body", &value(i), fence)
            .unwrap();
    }

    fn etcd_put(&mut self, i: usize) {
        let (_, _, revision) = *self.held.as_ref().unwrap();
        let (etcd, lock, data) = (&mut self.etcd, &self.lock_key, &self.data_key);
        let txn = Txn::new()
            .when([Compare::create_revision(
                lock.as_str(),
                CompareOp::Equal,
                revision,
            )])
            .and_then([TxnOp::put(data.as_str(), value(i), None)]);
        let reply = self.rt.block_on(etcd.txn(txn)).unwrap();
        assert!(reply.succeeded(), "etcd: the lock {lock} is no longer ours");
    }
}

type Step = dyn Fn(&mut Caller, usize) + Sync;

/// Every caller runs `f` `chunk` times on its own thread; the wall time from
/// the common start to the last one's end.
fn chunk(callers: &mut [Caller], from: usize, n: usize, f: &Step) -> Duration {
    let start = Barrier::new(callers.len() + 1);
    std::thread::scope(|s| {
        for c in callers.iter_mut() {
            let start = &start;
            s.spawn(move || {
                start.wait();
                for i in from..from + n {
                    f(c, i);
                }
            });
        }
        start.wait();
        Instant::now()
    })
    .elapsed()
}

/// Counters read around a line, to say what each side fsynced per iteration.
struct Counters {
    etcd_url: String,
    pg_url: Option<String>,
}

impl Counters {
    /// etcd's WAL fsyncs so far (its Prometheus endpoint, plain HTTP on the
    /// client port).
    fn etcd_fsyncs(&self) -> Option<f64> {
        let addr = self.etcd_url.strip_prefix("http://")?;
        let mut s = TcpStream::connect(addr).ok()?;
        write!(
            s,
            "GET /metrics HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("etcd_disk_wal_fsync_duration_seconds_count "))
            .and_then(|v| v.trim().parse().ok())
    }

    /// PostgreSQL's WAL syncs so far. Backends report them when idle or on
    /// exit, so this is read after the line's stores are closed.
    fn pg_syncs(&self) -> Option<f64> {
        let url = self.pg_url.as_ref()?;
        let mut c = url
            .parse::<postgres::Config>()
            .ok()?
            .connect(postgres::NoTls)
            .ok()?;
        let row = c
            .query_one("SELECT wal_sync::float8 FROM pg_stat_wal", &[])
            .ok()?;
        Some(row.get(0))
    }
}

struct Bench {
    plan: Plan,
    etcd_url: String,
    pg_url: Option<String>,
    sqlite_url: String,
    counters: Counters,
    /// This run's PostgreSQL schema.
    schema: String,
    /// Keeps every line's scopes and keys apart.
    tag: u32,
}

struct Shape<'a> {
    line: &'a str,
    unit: &'a str,
    baseline_name: &'a str,
    goal: Option<Goal>,
    /// Run before and after the measured chunks (unmeasured).
    setup: Option<&'a (dyn Fn(&mut Caller) + Sync)>,
    teardown: Option<&'a (dyn Fn(&mut Caller) + Sync)>,
    fencing: &'a Step,
    etcd: &'a Step,
}

impl Bench {
    fn callers(&self, backend: Backend, n: usize, line: &str) -> Vec<Caller> {
        let tag = self.tag;
        // One store for all callers, as one program would have: on
        // postgres:// a pool of one connection per caller; on sqlite: its
        // one connection, taken in turn (no busy-waiting on the file lock).
        let store = Store::open(&match backend {
            Backend::Postgres => format!(
                "{}?schema={}&pool_size={n}",
                self.pg_url.as_ref().unwrap(),
                self.schema
            ),
            Backend::Sqlite => self.sqlite_url.clone(),
        })
        .unwrap();
        let slug: String = line
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        (0..n)
            .map(|id| {
                Caller::new(
                    store.clone(),
                    &self.etcd_url,
                    &format!("{tag}/{}/{slug}/{n}/{id}", backend.name()),
                )
            })
            .collect()
    }

    fn line(&mut self, backend: Backend, n: usize, shape: &Shape<'_>) {
        let label = format!("{} {} vs etcd", backend.name(), shape.line);
        if let Some(f) = &self.plan.filter {
            if !label.contains(f.as_str()) {
                return;
            }
        }
        let mut callers = self.callers(backend, n, shape.line);
        let setup = |cs: &mut [Caller]| {
            if let Some(f) = shape.setup {
                cs.iter_mut().for_each(f);
            }
        };
        setup(&mut callers);
        let pg_before = self.counters.pg_syncs();
        let etcd_before = self.counters.etcd_fsyncs();
        let calls = (self.plan.chunk / n).max(1);
        // Warm-up, unmeasured (connections, the server's caches).
        let mut next = 0;
        chunk(&mut callers, next, calls, shape.fencing);
        chunk(&mut callers, next, calls, shape.etcd);
        next += calls;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..self.plan.rounds {
            let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
            for c in 0..CHUNKS {
                // Alternate who goes first, chunk by chunk.
                if c % 2 == 0 {
                    ta += chunk(&mut callers, next, calls, shape.fencing);
                    tb += chunk(&mut callers, next, calls, shape.etcd);
                } else {
                    tb += chunk(&mut callers, next, calls, shape.etcd);
                    ta += chunk(&mut callers, next, calls, shape.fencing);
                }
                next += calls;
            }
            let units = (calls * CHUNKS * n) as f64;
            a.push(units / ta.as_secs_f64());
            b.push(units / tb.as_secs_f64());
        }
        let iterations = (next * n) as f64;
        let etcd_after = self.counters.etcd_fsyncs();
        if let Some(f) = shape.teardown {
            callers.iter_mut().for_each(f);
        }
        callers[0].store.close();
        drop(callers);
        let pg_after = match backend {
            Backend::Postgres => {
                // Give the closed backends a moment to report their stats.
                std::thread::sleep(Duration::from_millis(300));
                self.counters.pg_syncs()
            }
            Backend::Sqlite => None,
        };
        let per = |before: Option<f64>, after: Option<f64>| match (before, after) {
            (Some(x), Some(y)) => format!("{:.2}", (y - x) / iterations),
            _ => "-".to_owned(),
        };
        let fsyncs = format!(
            "fsyncs per iteration: etcd WAL {}{}",
            per(etcd_before, etcd_after),
            match backend {
                Backend::Postgres => format!(", PostgreSQL WAL {}", per(pg_before, pg_after)),
                Backend::Sqlite => String::new(),
            }
        );
        let (a, b) = (report::median(a), report::median(b));
        let line = Line::new(
            "etcd",
            &label,
            n as u32,
            backend.concurrency_unit(),
            shape.unit,
            a,
            b,
            shape.baseline_name,
        )
        .goal_opt(shape.goal)
        .rounds(self.plan.rounds)
        .smoke(self.plan.smoke);
        let verdict = line.verdict();
        let who = backend.concurrency_unit();
        let who = if n == 1 {
            who.trim_end_matches('s')
        } else {
            who
        };
        println!(
            "{label:<36} {n:>2} {who:<7} fencing {a:>6.0} {unit}  etcd {b:>6.0} {unit}  ratio {:>5.2}x  ({verdict}; {fsyncs})",
            a / b,
            unit = shape.unit,
        );
        report::record(&line);
        self.tag += 1;
    }
}

fn main() {
    let plan = plan();
    let Ok(etcd_url) = std::env::var("FENCING_TEST_ETCD_URL") else {
        if std::env::var("FENCING_REQUIRE_ETCD").as_deref() == Ok("1") {
            panic!("FENCING_REQUIRE_ETCD=1 but FENCING_TEST_ETCD_URL is not set");
        }
        println!("etcd bench skipped: no etcd (run under scripts/etcd-server run -- ...)");
        return;
    };
    let pg_url = std::env::var("FENCING_TEST_PG_URL").ok();
    let dir = tempfile::tempdir().unwrap();
    println!(
        "etcd: fencing beside etcd v3 at {etcd_url}; {} rounds x {CHUNKS} chunks x {} iterations shared out among the callers{}",
        plan.rounds,
        plan.chunk,
        if plan.smoke {
            " (smoke: no timing claims)"
        } else {
            ""
        }
    );
    let mut backends = Vec::new();
    if pg_url.is_some() {
        backends.push(Backend::Postgres);
    } else {
        println!("postgres lines skipped: no server (run under scripts/pg-cluster run -- ...)");
    }
    backends.push(Backend::Sqlite);
    let mut bench = Bench {
        plan,
        counters: Counters {
            etcd_url: etcd_url.clone(),
            pg_url: pg_url.clone(),
        },
        etcd_url,
        pg_url,
        sqlite_url: format!("sqlite:{}", dir.path().join("fencing.db").display()),
        schema: format!("bench_etcd_{}", std::process::id()),
        tag: std::process::id(),
    };
    let acquire_new = Shape {
        line: "acquire (new scope)",
        unit: "acq/s",
        baseline_name: "etcd: LeaseGrant, Txn(create_revision == 0: put the lock key with the lease), on a new key",
        goal: None,
        setup: None,
        teardown: None,
        fencing: &|c, i| c.fencing_acquire_new(i),
        etcd: &|c, i| c.etcd_acquire_new(i),
    };
    let acquire = Shape {
        line: "acquire + release",
        unit: "acq/s",
        baseline_name: "etcd: LeaseGrant, Txn(create_revision == 0: put the lock key with the lease), LeaseRevoke",
        goal: None,
        setup: None,
        teardown: None,
        fencing: &|c, _| c.fencing_cycle(),
        etcd: &|c, _| c.etcd_cycle(),
    };
    let put = Shape {
        line: "put (fenced)",
        unit: "w/s",
        baseline_name:
            "etcd: Txn(the lock key's create_revision == the holder's: put the data key)",
        goal: None,
        setup: Some(&|c| c.hold()),
        teardown: Some(&|c| c.let_go()),
        fencing: &|c, i| c.fencing_put(i),
        etcd: &|c, i| c.etcd_put(i),
    };
    for backend in backends {
        for n in CALLERS {
            let goal = matches!(backend, Backend::Postgres).then_some(Goal::ratio_at_least(3.0));
            // The goal is on the acquisition as etcd users make it (a lease
            // and a lock key); the cycle with release follows without one.
            bench.line(
                backend,
                n,
                &Shape {
                    goal,
                    ..acquire_new
                },
            );
            bench.line(backend, n, &acquire);
            bench.line(backend, n, &put);
        }
    }
}
