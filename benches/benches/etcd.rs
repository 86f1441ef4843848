//! fencing on `etcd://` beside the classic etcd way of doing the same job on
//! the same three-member cluster, and fencing on `postgres://` and `sqlite:`
//! beside that classic etcd way, at 1, 4 and 16 callers, measured in the
//! same run; and acquisitions with 10^4 and 10^5 scopes in the store.
//!
//! ```text
//! scripts/etcd-cluster run -- scripts/pg-cluster run -- \
//!     cargo bench -p fencing-benches --bench etcd              # full run
//! ... cargo bench -p fencing-benches --bench etcd -- --quick   # shorter
//! ... cargo test -p fencing-benches --bench etcd               # smoke
//! ```
//!
//! The cluster comes from `FENCING_TEST_ETCD_CLUSTER` (`scripts/etcd-cluster
//! run`: three members on this machine, each fsyncing its WAL), or else
//! `FENCING_TEST_ETCD_URL` (`scripts/etcd-server run`: one node); without
//! either the bench says so and measures nothing (and fails with
//! `FENCING_REQUIRE_ETCD=1`). The PostgreSQL server comes from
//! `FENCING_TEST_PG_URL` (`scripts/pg-cluster run`); without it the
//! postgres:// lines are skipped. The SQLite file is in a temporary
//! directory.
//!
//! The classic etcd way is an etcd user's own code on etcd's v3 API, through
//! its JSON gateway with a plain HTTP client (`fencing_benches::etcd`: ureq,
//! no gRPC, no protoc), as the fencing store's own etcd client talks to it;
//! both sides send to the first member of the list. Every caller is a
//! thread with its own scope and lock key; the callers share one store, as
//! the threads of one program do (on etcd:// the store's connection pool, on
//! postgres:// a pool of one connection per caller, on sqlite: the store's
//! one connection), and one HTTP connection pool on the classic side.
//!
//! - acquire (new scope): the acquisition alone, on a scope nobody has held
//!   (a new one each iteration, as each first acquisition of a lock is):
//!   fencing `acquire(scope, 10 s)`; the classic way `LeaseGrant(10 s)` and a
//!   `Txn` that puts the lock key with that lease if it does not exist
//!   (`create_revision == 0`); the revision it commits at, the lock key's
//!   create revision, is the token. On etcd:// fencing's acquisition of a
//!   scope its handle never saw is the lease grant and one transaction, and
//!   a serializable read (a peek) beside the grant unless the handle's last
//!   first contacts found new scopes (docs/etcd.md, "A handle's memory").
//! - acquire + release (postgres://, sqlite:): fencing `acquire` then
//!   `release`; the classic way the same acquisition then `LeaseRevoke`,
//!   which deletes the lock key.
//! - put (fenced): fencing `put(scope, key, 64 B, fence)` with the token of
//!   a lease the caller holds (on etcd:// one transaction, on what the
//!   handle remembers of the scope it acquired); the classic way one `Txn` that puts the data key only if
//!   the caller's lock key still has the create revision of its acquisition.
//! - acquire, 10^4 and 10^5 scopes (etcd://, one client): an acquisition
//!   of one of N scopes that exist (of those the point before did not
//!   touch, `i * 7919` modulo their number: none touched twice),
//!   beside the classic acquisition of that scope's lock key with N data
//!   keys (64 B) in the cluster. The scopes are written in batches straight
//!   through the gateway, as `scale.rs` copies rows in SQL: one template
//!   scope is made through the public API (`next_token`, then a `put` of one
//!   64 B entry) and its keys (its record and its entry, as the store wrote
//!   them) are copied under the other names, 128 puts per transaction
//!   (etcd's default limit), on 8 threads; the classic data keys likewise.
//!   10^5 single calls would take minutes.
//!
//! Durability: etcd with its defaults (a member fsyncs its WAL before it
//! acknowledges an entry; a write is answered once a majority holds it),
//! PostgreSQL with `fsync=on` and `synchronous_commit=on`, SQLite with WAL
//! and `synchronous=FULL`. Each line also prints what each side fsynced per
//! iteration: etcd's `etcd_disk_wal_fsync_duration_seconds_count` summed
//! over the members, and PostgreSQL's `pg_stat_wal.wal_sync`.
//!
//! Each round alternates the two sides chunk by chunk so that both meet the
//! same disk weather; each line prints the medians over the rounds and their
//! ratio. Nothing asserts on timings. The keys the bench wrote to etcd are
//! deleted, a few thousand per request (unmeasured): the scale copies after
//! their lines, the rest at the end.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use fencing::{Fence, Store};
use fencing_benches::etcd::{b64, bytes, int, members_from_env, prefix_end, Gateway};
use fencing_benches::report::{self, Goal, Line};
use fencing_benches::run::Args;
use serde_json::{json, Value};

const CHUNKS: usize = 4;
const CALLERS: [usize; 3] = [1, 4, 16];
/// The lease of an acquisition that is released in the same iteration, or
/// never (a new scope each iteration).
const CYCLE_TTL: Duration = Duration::from_secs(10);
/// The lease held through a line of fenced writes.
const HELD_TTL: Duration = Duration::from_secs(600);
const HOLDER: &str = "bench";
/// The goal of fencing on etcd:// beside the classic way on the same cluster.
const GOAL_ON_ETCD: f64 = 0.8;
/// Operation `i` of a scale line touches scope `i * STRIDE mod N`.
const STRIDE: usize = 7919;
/// etcd's default `--max-txn-ops`.
const TXN_OPS: usize = 128;
const WRITERS: usize = 8;
const FSYNCS: &str = "etcd_disk_wal_fsync_duration_seconds_count";

struct Plan {
    rounds: usize,
    /// Iterations per chunk, shared out among the callers (at least one
    /// each), so that a chunk takes about as long at every concurrency.
    chunk: usize,
    scales: Vec<usize>,
    filter: Option<String>,
    smoke: bool,
}

fn plan() -> Plan {
    let args = Args::from_env();
    let (rounds, chunk) = args.pick((1, 1), (3, 24), (5, 64));
    Plan {
        rounds,
        chunk,
        scales: args.pick(vec![10, 100], vec![10_000, 100_000], vec![10_000, 100_000]),
        smoke: args.smoke(),
        filter: args.filter,
    }
}

fn value(i: usize) -> Vec<u8> {
    let mut v = vec![0x5A; 64];
    v[..8].copy_from_slice(&(i as u64).to_le_bytes());
    v
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Backend {
    Etcd,
    Postgres,
    Sqlite,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Etcd => "etcd",
            Backend::Postgres => "postgres",
            Backend::Sqlite => "sqlite",
        }
    }

    /// What the callers share: connections of one pool, or one connection.
    fn concurrency_unit(self) -> &'static str {
        match self {
            Backend::Etcd | Backend::Postgres => "clients",
            Backend::Sqlite => "threads",
        }
    }

    /// The other side of its lines.
    fn baseline(self) -> &'static str {
        match self {
            Backend::Etcd => "classic etcd",
            _ => "etcd",
        }
    }
}

fn put_op(key: &[u8], value: &[u8], lease: Option<i64>) -> Value {
    let mut put = json!({ "key": b64(key), "value": b64(value) });
    if let Some(id) = lease {
        put["lease"] = json!(id.to_string());
    }
    json!({ "request_put": put })
}

/// The classic acquisition: a lease, then the lock key under it if nobody
/// holds it; the lease and the revision the key was created at (the token).
fn classic_acquire(etcd: &Gateway, key: &[u8], ttl: Duration) -> (i64, i64) {
    let lease = etcd.grant(ttl);
    let answer = etcd.txn(&json!({
        "compare": [{ "key": b64(key), "target": "CREATE", "result": "EQUAL",
                      "create_revision": "0" }],
        "success": [put_op(key, HOLDER.as_bytes(), Some(lease))],
    }));
    assert!(
        answer["succeeded"].as_bool() == Some(true),
        "etcd: {} is held by someone else",
        String::from_utf8_lossy(key)
    );
    (lease, int(&answer["header"]["revision"]))
}

/// One caller: the fencing store (shared) and the classic side's client
/// (one pool, shared), its scope and its keys.
struct Caller {
    store: Store,
    etcd: Gateway,
    scope: String,
    lock_key: String,
    data_key: String,
    /// What the caller holds during the put line: the fencing token, and
    /// the classic lease and lock key revision.
    held: Option<(Fence, i64, i64)>,
}

impl Caller {
    fn fencing_acquire_new(&mut self, i: usize) {
        let scope = format!("{}/new/{i}", self.scope);
        self.store.acquire(&scope, HOLDER, CYCLE_TTL).unwrap();
    }

    fn classic_acquire_new(&mut self, i: usize) {
        let key = format!("{}/new/{i}", self.lock_key);
        classic_acquire(&self.etcd, key.as_bytes(), CYCLE_TTL);
    }

    fn fencing_cycle(&mut self) {
        let lease = self.store.acquire(&self.scope, HOLDER, CYCLE_TTL).unwrap();
        assert!(self.store.release(&self.scope, lease.token).unwrap());
    }

    fn classic_cycle(&mut self) {
        let (lease, _token) = classic_acquire(&self.etcd, self.lock_key.as_bytes(), CYCLE_TTL);
        self.etcd.revoke(lease);
    }

    fn hold(&mut self) {
        let lease = self.store.acquire(&self.scope, HOLDER, HELD_TTL).unwrap();
        let (etcd_lease, revision) =
            classic_acquire(&self.etcd, self.lock_key.as_bytes(), HELD_TTL);
        self.held = Some((Fence::new(lease.token), etcd_lease, revision));
    }

    fn let_go(&mut self) {
        if let Some((fence, etcd_lease, _)) = self.held.take() {
            self.store.release(&self.scope, fence.token).unwrap();
            self.etcd.revoke(etcd_lease);
        }
    }

    fn fencing_put(&mut self, i: usize) {
        let (fence, _, _) = self.held.as_ref().unwrap();
        self.store
            .put(&self.scope, "body", &value(i), fence)
            .unwrap();
    }

    fn classic_put(&mut self, i: usize) {
        let (_, _, revision) = *self.held.as_ref().unwrap();
        let answer = self.etcd.txn(&json!({
            "compare": [{ "key": b64(self.lock_key.as_bytes()), "target": "CREATE",
                          "result": "EQUAL", "create_revision": revision.to_string() }],
            "success": [put_op(self.data_key.as_bytes(), &value(i), None)],
        }));
        assert!(
            answer["succeeded"].as_bool() == Some(true),
            "etcd: the lock {} is no longer ours",
            self.lock_key
        );
    }
}

type Step = dyn Fn(&mut Caller, usize) + Sync;

/// Every caller runs `f` `n` times on its own thread; the wall time from the
/// common start to the last one's end.
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

/// PostgreSQL's WAL syncs so far. Backends report them when idle or on
/// exit, so this is read after the line's stores are closed.
fn pg_syncs(url: Option<&str>) -> Option<f64> {
    let mut c = url?
        .parse::<postgres::Config>()
        .ok()?
        .connect(postgres::NoTls)
        .ok()?;
    let row = c
        .query_one("SELECT wal_sync::float8 FROM pg_stat_wal", &[])
        .ok()?;
    Some(row.get(0))
}

struct Bench {
    plan: Plan,
    members: Vec<String>,
    /// The classic side's client (and the fsync counters).
    etcd: Gateway,
    /// Every etcd key of this run starts with it.
    root: String,
    pg_url: Option<String>,
    sqlite_url: String,
    /// This run's PostgreSQL schema.
    schema: String,
    /// Keeps every line's scopes and keys apart.
    tag: u32,
}

struct Shape<'a> {
    /// The line's name after the backend's, without its baseline.
    line: &'a str,
    unit: &'a str,
    baseline_name: &'a str,
    goal: Option<Goal>,
    /// A point of a curve along the scopes in the store.
    scopes: Option<usize>,
    /// Run before and after the measured chunks (unmeasured).
    setup: Option<&'a (dyn Fn(&mut Caller) + Sync)>,
    teardown: Option<&'a (dyn Fn(&mut Caller) + Sync)>,
    fencing: &'a Step,
    etcd: &'a Step,
}

/// Medians and fsyncs of one side of a line.
#[derive(Default)]
struct Side {
    rates: Vec<f64>,
    fsyncs: Option<f64>,
    iterations: usize,
}

impl Side {
    fn fsyncs_per_iteration(&self) -> String {
        match self.fsyncs {
            Some(f) if self.iterations > 0 => format!("{:.2}", f / self.iterations as f64),
            _ => "-".to_owned(),
        }
    }
}

impl Bench {
    /// The store every caller of a line shares.
    fn store(&self, backend: Backend, n: usize) -> Store {
        Store::open(&match backend {
            Backend::Etcd => format!("etcd://{}/{}/store", self.members.join(","), self.root),
            Backend::Postgres => format!(
                "{}?schema={}&pool_size={n}",
                self.pg_url.as_ref().unwrap(),
                self.schema
            ),
            Backend::Sqlite => self.sqlite_url.clone(),
        })
        .unwrap()
    }

    fn callers(&self, backend: Backend, n: usize, line: &str) -> Vec<Caller> {
        let store = self.store(backend, n);
        let slug: String = line
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        (0..n)
            .map(|id| {
                let name = format!("{}/{}/{slug}/{n}/{id}", self.tag, backend.name());
                Caller {
                    store: store.clone(),
                    etcd: self.etcd.clone(),
                    lock_key: format!("{}/classic/{name}/lock", self.root),
                    data_key: format!("{}/classic/{name}/body", self.root),
                    scope: name,
                    held: None,
                }
            })
            .collect()
    }

    /// Runs `f` over one chunk and adds its rate and etcd fsyncs to `side`.
    fn measure(
        &self,
        callers: &mut [Caller],
        from: usize,
        calls: usize,
        f: &Step,
        side: &mut Side,
    ) -> Duration {
        let before = self.etcd.metric_sum(FSYNCS);
        let took = chunk(callers, from, calls, f);
        let after = self.etcd.metric_sum(FSYNCS);
        side.fsyncs = match (side.fsyncs, before, after) {
            (Some(sum), Some(b), Some(a)) => Some(sum + (a - b)),
            _ => None,
        };
        side.iterations += calls * callers.len();
        took
    }

    fn line(&mut self, backend: Backend, n: usize, shape: &Shape<'_>) {
        let label = format!(
            "{} {} vs {}",
            backend.name(),
            shape.line,
            backend.baseline()
        );
        if let Some(f) = &self.plan.filter {
            if !label.contains(f.as_str()) {
                return;
            }
        }
        let mut callers = self.callers(backend, n, shape.line);
        if let Some(f) = shape.setup {
            callers.iter_mut().for_each(f);
        }
        let pg = self
            .pg_url
            .as_deref()
            .filter(|_| backend == Backend::Postgres);
        let pg_before = pg_syncs(pg);
        let calls = (self.plan.chunk / n).max(1);
        // Warm-up, unmeasured (connections, the servers' caches).
        let mut next = 0;
        chunk(&mut callers, next, calls, shape.fencing);
        chunk(&mut callers, next, calls, shape.etcd);
        next += calls;
        let (mut a, mut b) = (
            Side {
                fsyncs: Some(0.0),
                ..Side::default()
            },
            Side {
                fsyncs: Some(0.0),
                ..Side::default()
            },
        );
        for _ in 0..self.plan.rounds {
            let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
            for c in 0..CHUNKS {
                // Alternate who goes first, chunk by chunk.
                if c % 2 == 0 {
                    ta += self.measure(&mut callers, next, calls, shape.fencing, &mut a);
                    tb += self.measure(&mut callers, next, calls, shape.etcd, &mut b);
                } else {
                    tb += self.measure(&mut callers, next, calls, shape.etcd, &mut b);
                    ta += self.measure(&mut callers, next, calls, shape.fencing, &mut a);
                }
                next += calls;
            }
            let units = (calls * CHUNKS * n) as f64;
            a.rates.push(units / ta.as_secs_f64());
            b.rates.push(units / tb.as_secs_f64());
        }
        if let Some(f) = shape.teardown {
            callers.iter_mut().for_each(f);
        }
        callers[0].store.close();
        drop(callers);
        let pg_after = pg.and_then(|url| {
            // Give the closed backends a moment to report their stats.
            std::thread::sleep(Duration::from_millis(300));
            pg_syncs(Some(url))
        });
        let fsyncs = match backend {
            Backend::Etcd => format!(
                "etcd WAL fsyncs per iteration, all members: fencing {}, classic {}",
                a.fsyncs_per_iteration(),
                b.fsyncs_per_iteration()
            ),
            Backend::Postgres => format!(
                "fsyncs per iteration: etcd WAL (all members) {}, PostgreSQL WAL {}",
                b.fsyncs_per_iteration(),
                match (pg_before, pg_after) {
                    (Some(x), Some(y)) => format!("{:.2}", (y - x) / (next * n) as f64),
                    _ => "-".to_owned(),
                }
            ),
            Backend::Sqlite => format!(
                "fsyncs per iteration: etcd WAL (all members) {}",
                b.fsyncs_per_iteration()
            ),
        };
        let (ra, rb) = (report::median(a.rates), report::median(b.rates));
        let mut line = Line::new(
            "etcd",
            &label,
            n as u32,
            backend.concurrency_unit(),
            shape.unit,
            ra,
            rb,
            shape.baseline_name,
        )
        .goal_opt(shape.goal)
        .rounds(self.plan.rounds)
        .smoke(self.plan.smoke);
        if let Some(scopes) = shape.scopes {
            line = line
                .at("scopes", scopes as f64)
                .series(&format!("etcd acquire vs {}", backend.baseline()));
        }
        let verdict = line.verdict();
        let who = backend.concurrency_unit();
        let who = if n == 1 {
            who.trim_end_matches('s')
        } else {
            who
        };
        println!(
            "{label:<48} {n:>2} {who:<7} fencing {ra:>6.0} {unit}  {base} {rb:>6.0} {unit}  ratio {:>5.2}x  ({verdict}; {fsyncs})",
            ra / rb,
            unit = shape.unit,
            base = backend.baseline(),
        );
        report::record(&line);
        self.tag += 1;
    }

    /// Grows the scale set-up to `to` scopes: copies of the template
    /// scope's keys for fencing and data keys for the classic side, written
    /// in transactions of `TXN_OPS` puts on `WRITERS` threads.
    fn grow(&self, template: &[(Vec<u8>, Vec<u8>)], from: usize, to: usize) {
        let name = template_name().into_bytes();
        let mut puts: Vec<Value> = Vec::new();
        for i in from..to {
            let scope = scale_scope(i).into_bytes();
            for (key, val) in template {
                puts.push(put_op(&replace(key, &name, &scope), val, None));
            }
            puts.push(put_op(
                scale_data_key(&self.root, i).as_bytes(),
                &value(i),
                None,
            ));
        }
        let batches: Vec<&[Value]> = puts.chunks(TXN_OPS).collect();
        let per = batches.len().div_ceil(WRITERS).max(1);
        std::thread::scope(|s| {
            for share in batches.chunks(per) {
                let etcd = self.etcd.clone();
                s.spawn(move || {
                    for batch in share {
                        etcd.txn(&json!({ "success": batch }));
                    }
                });
            }
        });
    }

    /// Deletes this run's keys under `prefix` (unmeasured); a failure is
    /// told, not fatal: the lines are measured and recorded.
    fn clean(&self, prefix: &[u8]) {
        let started = Instant::now();
        let shown = String::from_utf8_lossy(prefix).replace('\0', "\\0");
        let shown = format!("\"{shown}\"");
        match self.etcd.delete_prefix(prefix) {
            Ok(()) => println!(
                "etcd: the bench's keys under {shown} deleted in {:.1} s",
                started.elapsed().as_secs_f64()
            ),
            Err(e) => println!("etcd: the bench's keys under {shown} not all deleted: {e}"),
        }
    }

    /// The acquisition at 10^4 and 10^5 scopes (or the smoke's sizes).
    fn scale_lines(&mut self) {
        let label = |n: usize| format!("etcd acquire, {n} scopes vs classic etcd");
        if let Some(f) = &self.plan.filter {
            if !self
                .plan
                .scales
                .iter()
                .any(|&n| label(n).contains(f.as_str()))
            {
                return;
            }
        }
        // The template: made through the public API, then its keys as the
        // store wrote them (every key whose name part is the template's).
        let store = self.store(Backend::Etcd, 1);
        let t = store.next_token(&template_name()).unwrap();
        store
            .put(&template_name(), "k", &value(0), &Fence::new(t))
            .unwrap();
        store.close();
        let prefix = format!("{}/store\0", self.root).into_bytes();
        let answer = self.etcd.call(
            "kv/range",
            &json!({ "key": b64(&prefix), "range_end": b64(&prefix_end(&prefix)) }),
        );
        let template: Vec<(Vec<u8>, Vec<u8>)> = answer["kvs"]
            .as_array()
            .map(|kvs| {
                kvs.iter()
                    .map(|kv| (bytes(&kv["key"]), bytes(&kv["value"])))
                    .filter(|(k, _)| names_template(k))
                    .collect()
            })
            .unwrap_or_default();
        assert!(
            template.len() >= 2,
            "etcd: the template scope's record and entry not found under {}/store",
            self.root
        );
        let mut have = 0;
        for &n in &self.plan.scales.clone() {
            let started = Instant::now();
            self.grow(&template, have, n);
            // The scopes added for this point: those of the points before
            // may still be held (leases of whole seconds).
            let (lo, fresh) = (have, n - have);
            have = n;
            println!(
                "etcd: {n} scopes in the store ({} keys of fencing's, {n} classic data keys), \
                 written in {:.1} s ({TXN_OPS} puts per transaction, {WRITERS} threads)",
                n * template.len(),
                started.elapsed().as_secs_f64()
            );
            let line = format!("acquire, {n} scopes");
            let root = self.root.clone();
            self.line(
                Backend::Etcd,
                1,
                &Shape {
                    line: &line,
                    unit: "acq/s",
                    baseline_name: "classic etcd on the same cluster, as many data keys as scopes: \
                        LeaseGrant, Txn(create_revision == 0: put the scope's lock key with the lease)",
                    goal: Some(Goal::ratio_at_least(GOAL_ON_ETCD)),
                    scopes: Some(n),
                    setup: None,
                    teardown: None,
                    fencing: &move |c, i| {
                        let scope = scale_scope(lo + i.wrapping_mul(STRIDE) % fresh);
                        c.store.acquire(&scope, HOLDER, CYCLE_TTL).unwrap();
                    },
                    etcd: &move |c, i| {
                        let key = scale_lock_key(&root, lo + i.wrapping_mul(STRIDE) % fresh);
                        classic_acquire(&c.etcd, key.as_bytes(), CYCLE_TTL);
                    },
                },
            );
        }
        // The copies go before the lines that follow (unmeasured): the
        // template's keys up to its name, and the classic data keys.
        let mut prefixes: Vec<Vec<u8>> = template
            .iter()
            .map(|(key, _)| {
                let at = key
                    .windows(TEMPLATE.len() + 1)
                    .position(|w| w[0] == 0 && &w[1..] == TEMPLATE.as_bytes())
                    .unwrap_or(0);
                [&key[..=at], b"scale/".as_slice()].concat()
            })
            .collect();
        prefixes.dedup();
        prefixes.push(format!("{}/classic/scale/", self.root).into_bytes());
        for p in prefixes {
            self.clean(&p);
        }
    }
}

const TEMPLATE: &str = "scale/template";

fn template_name() -> String {
    TEMPLATE.to_owned()
}

fn scale_scope(i: usize) -> String {
    format!("scale/{i:07}")
}

fn scale_data_key(root: &str, i: usize) -> String {
    format!("{root}/classic/scale/{i:07}/body")
}

fn scale_lock_key(root: &str, i: usize) -> String {
    format!("{root}/classic/scale/{i:07}/lock")
}

/// Whether a key of the store is one of the template scope's: its name
/// part is the template's, whole (the store separates parts with NUL).
fn names_template(key: &[u8]) -> bool {
    let name = format!("\0{}", template_name()).into_bytes();
    key.windows(name.len())
        .enumerate()
        .any(|(at, w)| w == name.as_slice() && matches!(key.get(at + name.len()), None | Some(0)))
}

/// `key` with the first `from` replaced by `to`.
fn replace(key: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let at = key
        .windows(from.len())
        .position(|w| w == from)
        .expect("the template's name in its key");
    [&key[..at], to, &key[at + from.len()..]].concat()
}

fn main() {
    let plan = plan();
    let Some(members) = members_from_env() else {
        if std::env::var("FENCING_REQUIRE_ETCD").as_deref() == Ok("1") {
            panic!("FENCING_REQUIRE_ETCD=1 but neither FENCING_TEST_ETCD_CLUSTER nor FENCING_TEST_ETCD_URL is set");
        }
        println!("etcd bench skipped: no etcd (run under scripts/etcd-cluster run -- ...)");
        return;
    };
    let pg_url = std::env::var("FENCING_TEST_PG_URL")
        .ok()
        .filter(|u| !u.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let etcd = Gateway::new(&members);
    println!(
        "etcd: fencing beside the classic etcd way on {} member{} ({}); {} rounds x {CHUNKS} chunks x {} iterations shared out among the callers{}",
        members.len(),
        if members.len() == 1 { "" } else { "s" },
        members.join(","),
        plan.rounds,
        plan.chunk,
        if plan.smoke {
            " (smoke: no timing claims)"
        } else {
            ""
        }
    );
    let root = format!("fencing-bench-etcd-{}", std::process::id());
    let mut bench = Bench {
        plan,
        members,
        etcd,
        root: root.clone(),
        pg_url: pg_url.clone(),
        sqlite_url: format!("sqlite:{}", dir.path().join("fencing.db").display()),
        schema: format!("bench_etcd_{}", std::process::id()),
        tag: std::process::id(),
    };
    let acquire_new = Shape {
        line: "acquire (new scope)",
        unit: "acq/s",
        baseline_name: "etcd: LeaseGrant, Txn(create_revision == 0: put the lock key with the lease), on a new key",
        goal: None,
        scopes: None,
        setup: None,
        teardown: None,
        fencing: &|c, i| c.fencing_acquire_new(i),
        etcd: &|c, i| c.classic_acquire_new(i),
    };
    let cycle = Shape {
        line: "acquire + release",
        unit: "acq/s",
        baseline_name: "etcd: LeaseGrant, Txn(create_revision == 0: put the lock key with the lease), LeaseRevoke",
        fencing: &|c, _| c.fencing_cycle(),
        etcd: &|c, _| c.classic_cycle(),
        ..acquire_new
    };
    let put = Shape {
        line: "put (fenced)",
        unit: "w/s",
        baseline_name:
            "etcd: Txn(the lock key's create_revision == the holder's: put the data key)",
        setup: Some(&|c| c.hold()),
        teardown: Some(&|c| c.let_go()),
        fencing: &|c, i| c.fencing_put(i),
        etcd: &|c, i| c.classic_put(i),
        ..acquire_new
    };
    // fencing on etcd:// beside the classic way on the same cluster.
    let on_etcd = Some(Goal::ratio_at_least(GOAL_ON_ETCD));
    for n in CALLERS {
        for shape in [&acquire_new, &put] {
            let baseline_name = format!("classic {} on the same cluster", shape.baseline_name);
            bench.line(
                Backend::Etcd,
                n,
                &Shape {
                    goal: on_etcd,
                    baseline_name: &baseline_name,
                    ..*shape
                },
            );
        }
    }
    bench.scale_lines();
    // fencing on postgres:// and sqlite: beside the classic way on etcd.
    let mut backends = Vec::new();
    if pg_url.is_some() {
        backends.push(Backend::Postgres);
    } else {
        println!("postgres lines skipped: no server (run under scripts/pg-cluster run -- ...)");
    }
    backends.push(Backend::Sqlite);
    for backend in backends {
        for n in CALLERS {
            let goal = (backend == Backend::Postgres).then_some(Goal::ratio_at_least(3.0));
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
            bench.line(backend, n, &cycle);
            bench.line(backend, n, &put);
        }
    }
    bench.clean(format!("{root}/").as_bytes());
}
