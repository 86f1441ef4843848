//! A fenced put on `memory:` beside a bare `Mutex<HashMap>` doing the same
//! check-and-set, at 1 thread, 2 threads on distinct scopes and 2 threads on
//! one scope. After the benchmarks, prints the ratios measured in this run
//! (read back from criterion's `estimates.json`, median point estimate).
//!
//! ```text
//! cargo bench -p fencing-benches --bench memory_put              # full run
//! cargo bench -p fencing-benches --bench memory_put -- --quick   # CI smoke, < ~30 s
//! FENCING_BENCH_QUICK=1 cargo bench -p fencing-benches --bench memory_put
//! FENCING_BENCH_SMOKE=1 cargo bench -p fencing-benches --bench memory_put  # seconds
//! FENCING_BENCH_OUT=results.jsonl cargo bench ...  # also append the lines as JSON
//! cargo test -p fencing-benches --benches                        # one iteration each
//! FENCING_BENCH_KEYS=1 cargo bench -p fencing-benches --bench memory_put  # keys per thread
//! ```
//!
//! Every time is per operation at that concurrency: with N threads each doing
//! `iters` puts, the wall time from the first thread's start to the last
//! thread's end is divided by N, so criterion reports wall / (N * iters),
//! the inverse of the aggregate throughput. Nothing here asserts on timings.

use std::collections::HashMap;
use std::env;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{mpsc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use fencing::{ErrorCode, Fence, Store, Token};
use fencing_benches::report::{self, Goal, Line};

const GROUP: &str = "memory_put";
const CONTROL: &str = "control_private_maps";
/// Keys each thread cycles through, unless `FENCING_BENCH_KEYS` says
/// otherwise (rounded up to a power of two, so that picking one is a mask).
const DEFAULT_KEYS_PER_THREAD: usize = 1024;
const KEY_BYTES: usize = 16;
const VALUE: [u8; 64] = [0xA5; 64];
const TTL: Duration = Duration::from_secs(3600);

const GOAL_RATIO_1T: f64 = 1.5;
const GOAL_SCALING: f64 = 1.6;

// ----- the baseline: the same check-and-set with nothing else -----

#[derive(Default)]
struct BaselineScope {
    fence: u64,
    entries: HashMap<String, (Vec<u8>, u64)>,
}

#[derive(Default)]
struct Baseline {
    scopes: Mutex<HashMap<String, BaselineScope>>,
}

#[derive(Debug)]
struct Stale;

impl Baseline {
    /// Rejects a token below the fence, else raises the fence and stores the
    /// value at version + 1. Takes borrowed arguments and allocates the owned
    /// key and value, as `Store::put` has to.
    fn put(&self, scope: &str, key: &str, value: &[u8], token: u64) -> Result<u64, Stale> {
        let key = key.to_owned();
        let value = value.to_vec();
        let mut scopes = self.scopes.lock().unwrap();
        if !scopes.contains_key(scope) {
            scopes.insert(scope.to_owned(), BaselineScope::default());
        }
        let s = scopes.get_mut(scope).unwrap();
        if token < s.fence {
            return Err(Stale);
        }
        s.fence = token;
        match s.entries.get_mut(&key) {
            Some(e) => {
                e.0 = value;
                e.1 += 1;
                Ok(e.1)
            }
            None => {
                s.entries.insert(key, (value, 1));
                Ok(1)
            }
        }
    }
}

// ----- the configurations -----

#[derive(Clone, Copy)]
enum Config {
    OneThread,
    TwoThreadsDistinctScopes,
    TwoThreadsOneScope,
}

impl Config {
    const ALL: [Config; 3] = [
        Config::OneThread,
        Config::TwoThreadsDistinctScopes,
        Config::TwoThreadsOneScope,
    ];

    /// The criterion parameter (and directory) name.
    fn id(self) -> &'static str {
        match self {
            Config::OneThread => "1_thread",
            Config::TwoThreadsDistinctScopes => "2_threads_distinct_scopes",
            Config::TwoThreadsOneScope => "2_threads_one_scope",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Config::OneThread => "1 thread",
            Config::TwoThreadsDistinctScopes => "2 threads, distinct scopes",
            Config::TwoThreadsOneScope => "2 threads, one scope",
        }
    }

    fn threads(self) -> usize {
        match self {
            Config::OneThread => 1,
            _ => 2,
        }
    }

    /// The scope each thread writes to.
    fn scopes(self) -> Vec<String> {
        (0..self.threads())
            .map(|t| match self {
                Config::TwoThreadsOneScope => "bench-scope-0".to_owned(),
                _ => format!("bench-scope-{t}"),
            })
            .collect()
    }
}

fn keys_per_thread() -> usize {
    env::var("FENCING_BENCH_KEYS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(DEFAULT_KEYS_PER_THREAD)
        .clamp(1, 1 << 20)
        .next_power_of_two()
}

/// Per thread, `keys_per_thread()` distinct keys of exactly `KEY_BYTES` bytes.
fn keys(threads: usize) -> Vec<Vec<String>> {
    (0..threads)
        .map(|t| {
            (0..keys_per_thread())
                .map(|i| {
                    let k = format!("key-{t}-{i:010}");
                    assert_eq!(k.len(), KEY_BYTES);
                    k
                })
                .collect()
        })
        .collect()
}

type Group<'a> = BenchmarkGroup<'a, WallTime>;

/// Benchmarks `op(thread, i)` as `id` on `threads` long-lived worker threads
/// (the same threads for every sample, as a server's workers would be; one
/// thread runs on a worker too, so that all configurations are alike).
///
/// For a sample of `iters` iterations, each worker runs `op(t, i)` for
/// `i in 0..iters`, all released together by a barrier. The time charged is
/// the wall time from the first worker's start to the last one's end,
/// divided by `threads`, so that criterion reports the per-operation time at
/// this concurrency: wall / (threads x iters), the inverse of the throughput.
fn bench_on_workers<F>(group: &mut Group<'_>, id: BenchmarkId, threads: usize, op: F)
where
    F: Fn(usize, u64) + Sync,
{
    let barrier = Barrier::new(threads);
    let (op, barrier) = (&op, &barrier);
    thread::scope(|s| {
        let jobs: Vec<mpsc::Sender<(u64, mpsc::Sender<Span>)>> = (0..threads)
            .map(|t| {
                let (job_tx, job_rx) = mpsc::channel::<(u64, mpsc::Sender<Span>)>();
                s.spawn(move || {
                    // Ends when `jobs` is dropped.
                    for (iters, reply) in job_rx {
                        barrier.wait();
                        let start = Instant::now();
                        for i in 0..iters {
                            op(t, i);
                        }
                        let _ = reply.send((start, Instant::now()));
                    }
                });
                job_tx
            })
            .collect();
        let sample = |iters: u64| -> Duration {
            let (reply_tx, reply_rx) = mpsc::channel();
            for job in &jobs {
                job.send((iters, reply_tx.clone()))
                    .expect("benchmark worker exited");
            }
            drop(reply_tx);
            // A worker that panicked drops its reply sender: fewer spans.
            let spans: Vec<Span> = reply_rx.iter().collect();
            assert_eq!(spans.len(), threads, "a benchmark worker panicked");
            let first = spans.iter().map(|s| s.0).min().unwrap();
            let last = spans.iter().map(|s| s.1).max().unwrap();
            (last - first) / threads as u32
        };
        group.bench_function(id, |b| b.iter_custom(sample));
    });
}

type Span = (Instant, Instant);

/// Thread `t`'s key for iteration `i` (each key list's length is a power of two).
fn key_of(keys: &[Vec<String>], t: usize, i: u64) -> &str {
    let keys = &keys[t];
    &keys[i as usize & (keys.len() - 1)]
}

fn bench_store(group: &mut Group<'_>, config: Config) {
    let store = Store::open("memory:").expect("open memory:");
    let scopes = config.scopes();
    // One lease per distinct scope; threads sharing a scope share its token
    // (a token equal to the fence is accepted outside strict mode).
    let mut tokens: HashMap<&str, Token> = HashMap::new();
    for scope in &scopes {
        if !tokens.contains_key(scope.as_str()) {
            let lease = store.acquire(scope, "bench", TTL).expect("acquire");
            tokens.insert(scope.as_str(), lease.token);
        }
    }
    let tokens: Vec<Token> = scopes.iter().map(|s| tokens[s.as_str()]).collect();
    let keys = keys(config.threads());
    let id = BenchmarkId::new("store", config.id());
    bench_on_workers(group, id, config.threads(), |t, i| {
        let fence = Fence::new(tokens[t]);
        let receipt = store
            .put(&scopes[t], key_of(&keys, t, i), &VALUE, &fence)
            .expect("fenced put rejected");
        black_box(receipt);
    });
}

fn bench_baseline(group: &mut Group<'_>, config: Config) {
    let baseline = Baseline::default();
    let scopes = config.scopes();
    let token = 1u64;
    let keys = keys(config.threads());
    let id = BenchmarkId::new("baseline", config.id());
    bench_on_workers(group, id, config.threads(), |t, i| {
        let version = baseline
            .put(&scopes[t], key_of(&keys, t, i), &VALUE, token)
            .expect("baseline put rejected");
        black_box(version);
    });
}

/// Keeps its content on cache lines of its own (128 bytes: adjacent-line
/// prefetch pairs 64-byte lines on x86).
#[repr(align(128))]
struct CacheLine<T>(T);

/// A control for the scaling figure: the baseline at 2 threads on distinct
/// scopes, but with a private map (and lock) per thread, so that nothing is
/// shared. Its throughput over the 1-thread baseline is the parallelism this
/// machine actually delivered during the run (2 cores may be shared with
/// other work, or be hyperthreads of one core under a hypervisor).
fn bench_control(group: &mut Group<'_>) {
    let config = Config::TwoThreadsDistinctScopes;
    // Padded apart: two bare `Mutex<HashMap>`s side by side share a cache
    // line, and that false sharing alone halves the throughput.
    let baselines: Vec<CacheLine<Baseline>> = (0..config.threads())
        .map(|_| CacheLine(Baseline::default()))
        .collect();
    let scopes = config.scopes();
    let keys = keys(config.threads());
    let id = BenchmarkId::new(CONTROL, config.id());
    bench_on_workers(group, id, config.threads(), |t, i| {
        let version = baselines[t]
            .0
            .put(&scopes[t], key_of(&keys, t, i), &VALUE, 1)
            .expect("baseline put rejected");
        black_box(version);
    });
}

/// Both sides must implement the same semantics, or the ratio means nothing.
fn sanity_check() {
    let store = Store::open("memory:").expect("open memory:");
    let old = store
        .acquire("s", "a", Duration::from_millis(1))
        .unwrap()
        .token;
    let new = store.next_token("s").unwrap();
    store.put("s", "k", &VALUE, &Fence::new(new)).unwrap();
    let v2 = store
        .put("s", "k", &VALUE, &Fence::new(new))
        .unwrap()
        .version;
    let stale = store.put("s", "k", &VALUE, &Fence::new(old)).unwrap_err();
    assert_eq!((v2, stale.code()), (2, ErrorCode::StaleToken));

    let baseline = Baseline::default();
    baseline.put("s", "k", &VALUE, new.get()).unwrap();
    let v2 = baseline.put("s", "k", &VALUE, new.get()).unwrap();
    assert_eq!(v2, 2);
    assert!(baseline.put("s", "k", &VALUE, old.get()).is_err());
}

// ----- configuration, running, summary -----

fn quick_requested() -> bool {
    env::args().any(|a| a == "--quick")
        || env::var("FENCING_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// `FENCING_BENCH_SMOKE=1` (set by `scripts/bench --smoke`): one short
/// round of everything, figures marked as not measurements.
fn smoke_requested() -> bool {
    env::var("FENCING_BENCH_SMOKE").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Whether this process measures (as opposed to `cargo test --benches`,
/// `--list` or `--profile-time`), following criterion's own rule.
fn measuring() -> bool {
    let args: Vec<String> = env::args().collect();
    let has = |flag: &str| {
        args.iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    has("--bench") && !has("--test") && !has("--list") && !has("--profile-time")
}

/// Where criterion writes its results, by criterion 0.5's own rule
/// ($CRITERION_HOME, else $CARGO_TARGET_DIR/criterion, else the target
/// directory `cargo metadata` names, else ./target/criterion). It is pinned
/// on the `Criterion` too, so that writer and reader cannot disagree.
fn criterion_home() -> PathBuf {
    if let Some(home) = env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    let from_metadata = env::var_os("CARGO").and_then(|cargo| {
        let out = Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .output()
            .ok()?;
        let meta: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        Some(PathBuf::from(meta["target_directory"].as_str()?).join("criterion"))
    });
    from_metadata.unwrap_or_else(|| PathBuf::from("target/criterion"))
}

fn criterion(home: &Path) -> Criterion {
    let c = Criterion::default().output_directory(home);
    let c = if smoke_requested() {
        // `scripts/bench --smoke`: every path through criterion and the
        // report, in seconds; the figures are not measurements.
        c.warm_up_time(Duration::from_millis(50))
            .measurement_time(Duration::from_millis(200))
            .sample_size(10)
            .nresamples(1_000)
    } else if quick_requested() {
        // With `--quick`, criterion stops sampling once the estimate is
        // stable, at the latest after `measurement_time`; with only the
        // environment variable, these bound the ordinary sampling.
        c.warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_millis(1000))
            .sample_size(10)
            .nresamples(10_000)
    } else {
        c
    };
    c.configure_from_args()
}

/// The median point estimate (ns per operation) of one benchmark, if this
/// run wrote it.
fn median_ns(home: &Path, function: &str, config: Config, since: SystemTime) -> Option<f64> {
    let path = home
        .join(GROUP)
        .join(function)
        .join(config.id())
        .join("new")
        .join("estimates.json");
    let written = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
    if written < since {
        return None; // left by an earlier run (filtered out or not saved now)
    }
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    json["median"]["point_estimate"].as_f64()
}

/// Samples per criterion benchmark (the median is over these).
fn criterion_samples() -> usize {
    if quick_requested() || smoke_requested() {
        10
    } else {
        100
    }
}

fn fmt_ns(ns: Option<f64>) -> String {
    ns.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1} ns"))
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}

fn summary(home: &Path, since: SystemTime, load_at_start: &str) {
    println!();
    println!("== memory put summary (median per-operation time, this run) ==");
    println!(
        "({KEY_BYTES}-byte keys, {}-byte values, {} keys per thread, overwritten in turn)",
        VALUE.len(),
        keys_per_thread()
    );
    let mut store_ns = Vec::new();
    let mut baseline_ns = Vec::new();
    for config in Config::ALL {
        let s = median_ns(home, "store", config, since);
        let b = median_ns(home, "baseline", config, since);
        store_ns.push(s);
        baseline_ns.push(b);
        if let (Some(s), Some(b)) = (s, b) {
            let (line, goal) = match config {
                Config::OneThread => ("put", Some(Goal::ratio_at_most(GOAL_RATIO_1T))),
                Config::TwoThreadsDistinctScopes => ("put", None),
                Config::TwoThreadsOneScope => ("put, one shared scope", None),
            };
            report::record(
                &Line::new(
                    "memory",
                    line,
                    config.threads() as u32,
                    "threads",
                    "ns/op",
                    s,
                    b,
                    "Mutex<HashMap> check-and-set (one global lock)",
                )
                .goal_opt(goal)
                .rounds(criterion_samples())
                .smoke(smoke_requested()),
            );
        }
        let ratio = match (s, b) {
            (Some(s), Some(b)) if b > 0.0 => {
                let r = s / b;
                match config {
                    Config::OneThread => format!(
                        "ratio {r:.2}x (goal <= {GOAL_RATIO_1T}x: {})",
                        verdict(r <= GOAL_RATIO_1T)
                    ),
                    _ => format!("ratio {r:.2}x"),
                }
            }
            _ => "ratio n/a (benchmark filtered out or its estimates not saved)".to_owned(),
        };
        println!(
            "memory put, {}: store {}, baseline {}, {ratio}",
            config.label(),
            fmt_ns(s),
            fmt_ns(b)
        );
    }
    let scaling = |ns: &[Option<f64>]| match (ns[0], ns[1]) {
        (Some(one), Some(two)) if two > 0.0 => Some((one / two, 1e3 / one, 1e3 / two)),
        _ => None,
    };
    match scaling(&store_ns) {
        Some((x, one, two)) => println!(
            "store scaling, 2 threads on distinct scopes vs 1 thread: throughput {x:.2}x \
             ({two:.1} vs {one:.1} Mops/s) (goal >= {GOAL_SCALING}x: {})",
            verdict(x >= GOAL_SCALING)
        ),
        None => println!("store scaling, 2 threads on distinct scopes vs 1 thread: n/a"),
    }
    if let Some((x, one, two)) = scaling(&baseline_ns) {
        println!(
            "baseline scaling, same (one global mutex, for reference): throughput {x:.2}x \
             ({two:.1} vs {one:.1} Mops/s)"
        );
    }
    let control = median_ns(home, CONTROL, Config::TwoThreadsDistinctScopes, since);
    if let Some((x, one, two)) = scaling(&[baseline_ns[0], control]) {
        println!(
            "machine check, baseline with a private map per thread, 2 threads vs 1: \
             throughput {x:.2}x ({two:.1} vs {one:.1} Mops/s) (what this machine delivered; \
             2.0x is ideal)"
        );
    }
    println!(
        "(available parallelism: {}; load average at start {}, at end {}; \
         times are wall time / (threads x operations))",
        thread::available_parallelism().map_or(0, |n| n.get()),
        load_at_start,
        load_average()
    );
}

/// The 1-minute load average, as a hint of how noisy the machine was.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "n/a".to_owned())
}

fn main() {
    let started = SystemTime::now();
    let load_at_start = load_average();
    sanity_check();
    let home = criterion_home();
    let mut c = criterion(&home);
    {
        let mut group = c.benchmark_group(GROUP);
        group.throughput(Throughput::Elements(1));
        for config in Config::ALL {
            bench_store(&mut group, config);
            if let Config::TwoThreadsDistinctScopes = config {
                // Right after the store's run it checks: the machine's
                // parallelism drifts when the cores are shared.
                bench_control(&mut group);
            }
            bench_baseline(&mut group, config);
        }
        group.finish();
    }
    c.final_summary();
    if measuring() {
        summary(&home, started, &load_at_start);
    }
}
