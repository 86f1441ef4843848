//! `torture`: N worker processes on M scopes of one store, churn workers
//! that create, retire and re-create a few short-lived scopes, a nemesis that
//! pauses them past their TTL (SIGSTOP/SIGCONT), kills them (SIGKILL, then
//! respawns) and, with `--pg-dir`, crashes and restarts the PostgreSQL server,
//! or, with `--replicas`, fails a replicated one over (partition a standby,
//! crash the primary, promote the standby, rejoin the old primary), or, with
//! `--etcd-dir`, kills the etcd cluster's leader and restarts it, or pauses
//! a member and resumes it, or, on SQLite, puts an older snapshot of the
//! store's file back at its path;
//! then a final read and the history checker. One summary line; exit 1 on
//! any violation. See tests/torture/README.md.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use fencing::{Error, Fence, Store, Token};
use fencing_torture::history::{Call, OpKind, Record, Returned, Writer};
use fencing_torture::{checker, history, now_ns};

mod churn;
mod etcd;
mod failover;
mod file;

const USAGE: &str = "usage: torture [--url URL] [--workers N] [--scopes M] [--duration 60s] \
[--max-ops N] [--ttl-ms MS] [--churn N] [--churn-scopes K] [--history FILE] [--pg-dir DIR] \
[--replicas DIR [--failovers N] [--failover-step | --failover-step-late | --hide-promotion]] \
[--etcd-dir DIR] [--seed N] [--no-nemesis]
       torture check HISTORY";

/// Keys each scope's holders write.
const KEYS: [&str; 2] = ["a", "b"];

#[derive(Clone, Debug)]
struct Options {
    url: Option<String>,
    workers: usize,
    scopes: usize,
    duration: Duration,
    max_ops: u64,
    ttl_ms: u64,
    churn: usize,
    churn_scopes: usize,
    history: Option<PathBuf>,
    pg_dir: Option<PathBuf>,
    replicas: Option<PathBuf>,
    /// A `scripts/etcd-cluster` cluster the store's `etcd://` URL is on.
    etcd_dir: Option<PathBuf>,
    failovers: u32,
    failover_step: failover::Step,
    seed: u64,
    nemesis: bool,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (num, unit) = text.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("bad duration {text:?}"))?;
    let secs = match unit {
        "ms" => return Ok(Duration::from_millis(n)),
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("bad duration unit in {text:?} (ms, s, m, h)")),
    };
    Ok(Duration::from_secs(secs))
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        url: None,
        workers: 6,
        scopes: 3,
        duration: Duration::from_secs(60),
        max_ops: 2_000_000,
        ttl_ms: 250,
        churn: 2,
        churn_scopes: 2,
        history: None,
        pg_dir: None,
        replicas: None,
        etcd_dir: None,
        failovers: 3,
        failover_step: failover::Step::None,
        seed: now_ns(),
        nemesis: true,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        let num = |v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{a}: bad number {v:?}"))
        };
        match a.as_str() {
            "--url" => o.url = Some(val()?),
            "--workers" => o.workers = num(val()?)?.clamp(1, 64) as usize,
            "--scopes" => o.scopes = num(val()?)?.clamp(1, 1000) as usize,
            "--duration" => o.duration = parse_duration(&val()?)?,
            "--max-ops" => o.max_ops = num(val()?)?,
            "--ttl-ms" => o.ttl_ms = num(val()?)?.max(20),
            "--churn" => o.churn = num(val()?)?.min(64) as usize,
            "--churn-scopes" => o.churn_scopes = num(val()?)?.clamp(1, 1000) as usize,
            "--history" => o.history = Some(PathBuf::from(val()?)),
            "--pg-dir" => o.pg_dir = Some(PathBuf::from(val()?)),
            "--replicas" => o.replicas = Some(PathBuf::from(val()?)),
            "--etcd-dir" => o.etcd_dir = Some(PathBuf::from(val()?)),
            "--failovers" => o.failovers = num(val()?)?.min(100) as u32,
            "--failover-step" => o.failover_step = failover::Step::Closed,
            "--failover-step-late" => o.failover_step = failover::Step::Late,
            "--hide-promotion" => o.failover_step = failover::Step::Hidden,
            "--seed" => o.seed = num(val()?)?,
            "--no-nemesis" => o.nemesis = false,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let servers = [
        o.pg_dir.is_some(),
        o.replicas.is_some(),
        o.etcd_dir.is_some(),
    ];
    if servers.iter().filter(|&&s| s).count() > 1 {
        return Err("--pg-dir, --replicas, --etcd-dir: one server nemesis at a time".into());
    }
    if o.etcd_dir.is_some() && !o.url.as_deref().is_some_and(|u| u.starts_with("etcd://")) {
        return Err("--etcd-dir needs the store on that cluster: --url etcd://...".into());
    }
    Ok(o)
}

/// xorshift64*: deterministic per seed, good enough to pick actions.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("worker") => worker(&args[1..]).map(|()| true),
        Some("check") => check_file(&args[1..]),
        _ => parse_options(&args).and_then(|o| run(&o)),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("torture: {e}");
            ExitCode::from(2)
        }
    }
}

fn check_file(args: &[String]) -> Result<bool, String> {
    let path = args.first().ok_or(USAGE)?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let report = checker::check(&history::parse(&text)?);
    print_violations(&report);
    println!("{}", summary_line("check", None, &report, None, None));
    Ok(report.violations.is_empty())
}

fn print_violations(report: &checker::Report) {
    for v in report.violations.iter().take(50) {
        eprintln!("VIOLATION {v}");
    }
    if report.violations.len() > 50 {
        eprintln!("... and {} more", report.violations.len() - 50);
    }
    let mut by_rule = std::collections::BTreeMap::new();
    for v in &report.violations {
        *by_rule.entry(v.rule).or_insert(0) += 1;
    }
    if !by_rule.is_empty() {
        let counts: Vec<String> = by_rule.iter().map(|(r, n)| format!("{r}={n}")).collect();
        eprintln!("torture: violations by rule: {}", counts.join(" "));
    }
}

/// `files`: the file replacements of this run, recorded as failovers (`None`
/// when re-checking a history, which cannot tell them apart). `etcd`: the
/// etcd leader kills and member pauses of this run, recorded as restarts.
fn summary_line(
    backend: &str,
    elapsed: Option<Duration>,
    r: &checker::Report,
    files: Option<u32>,
    etcd: Option<(u32, u32)>,
) -> String {
    let failovers = r.failovers - u64::from(files.unwrap_or(0));
    let files = files.map_or(String::new(), |n| format!(" file_replacements={n}"));
    let etcd = etcd.map_or(String::new(), |(kills, pauses)| {
        format!(" leader_kills={kills} member_pauses={pauses}")
    });
    format!(
        "torture: backend={backend} operations={} pauses={} kills={} restarts={}{etcd} failovers={failovers}{files} violations={} \
         tokens_issued={} duplicates={} retires_accepted={} retires_refused={} lives={} \
         (time={}, retires_empty={}, retires_unknown={}, accepted_writes={}, stale_rejections={}, \
         indeterminate={}, paused_past_ttl={}, paused_then_rejected={}, \
         pauses_without_takeover={}, final_reads={}, lossy_writes={}, partition_tokens={}, \
         jumps_accepted={}, jumps_refused={}, jumps_over_limit={}, outside_accepted={})",
        r.operations,
        r.pauses,
        r.kills,
        r.restarts,
        r.violations.len(),
        r.tokens_issued,
        r.duplicates,
        r.retires_accepted,
        r.retires_refused,
        r.lives,
        elapsed.map_or("-".to_owned(), |d| format!("{:.1}s", d.as_secs_f64())),
        r.retires_empty,
        r.retires_unknown,
        r.accepted_writes,
        r.stale_rejections,
        r.indeterminate,
        r.paused_past_ttl,
        r.pauses_with_takeover,
        r.pauses_without_takeover,
        r.final_reads,
        r.lossy_writes,
        r.partition_tokens,
        r.jumps_accepted,
        r.jumps_refused,
        r.jumps_over_limit,
        r.outside_accepted,
    )
}

// ----- the parent: workers, nemesis, final read, check -----

struct Worker {
    id: usize,
    role: Role,
    incarnation: u32,
    child: Child,
    /// Resume at this instant (paused).
    paused_until: Option<Instant>,
}

impl Worker {
    fn name(&self) -> String {
        format!("w{}.{}", self.id, self.incarnation)
    }
}

/// What a worker process does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// acquire, claim, get, put, renew, release on the lease scopes.
    Lease,
    /// next_token, acquire/release and retire on the churn scopes.
    Churn,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::Lease => "lease",
            Role::Churn => "churn",
        }
    }
}

/// Kills and reaps every worker, whatever happens to the parent.
struct Crew(Vec<Worker>);

impl Drop for Crew {
    fn drop(&mut self) {
        for w in &mut self.0 {
            let _ = w.child.kill();
            let _ = w.child.wait();
        }
    }
}

struct Plan {
    url: String,
    history: PathBuf,
    scopes: Vec<String>,
    churn_scopes: Vec<String>,
    ttl_ms: u64,
    deadline: Instant,
    ops_per_worker: u64,
}

fn spawn(
    plan: &Plan,
    id: usize,
    role: Role,
    incarnation: u32,
    seed: u64,
) -> Result<Worker, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let left = plan.deadline.saturating_duration_since(Instant::now());
    let scopes = match role {
        Role::Lease => &plan.scopes,
        Role::Churn => &plan.churn_scopes,
    };
    let child = Command::new(exe)
        .arg("worker")
        .arg(role.as_str())
        .arg(&plan.url)
        .arg(&plan.history)
        .arg(format!("w{id}.{incarnation}"))
        .arg(scopes.join(","))
        .arg(plan.ttl_ms.to_string())
        .arg(left.as_millis().to_string())
        .arg(plan.ops_per_worker.to_string())
        .arg(seed.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawning a worker: {e}"))?;
    Ok(Worker {
        id,
        role,
        incarnation,
        child,
        paused_until: None,
    })
}

/// Kills a worker (paused or not) and records it.
fn kill(w: &mut Worker, log: &mut Writer) -> Result<(), String> {
    let name = w.name();
    let was_paused = w.paused_until.take().is_some();
    let _ = w.child.kill();
    let _ = w.child.wait();
    if was_paused {
        // It never resumes: close its pause at the kill.
        append(
            log,
            &Record::Resume {
                p: name.clone(),
                ts: now_ns(),
            },
        )?;
    }
    append(
        log,
        &Record::Kill {
            p: name,
            ts: now_ns(),
        },
    )
}

fn signal(child: &Child, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(pid, sig) };
    }
}

/// Waits (up to 2 s) until the kernel shows the process stopped.
fn wait_stopped(child: &Child) -> bool {
    let stat = format!("/proc/{}/stat", child.id());
    for _ in 0..200 {
        match std::fs::read_to_string(&stat) {
            Ok(s) => {
                let state = s
                    .rsplit_once(')')
                    .and_then(|(_, r)| r.split_whitespace().next());
                if matches!(state, Some("T") | Some("t")) {
                    return true;
                }
            }
            Err(_) => return false,
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn backend_name(url: &str) -> &str {
    url.split(':').next().unwrap_or("?")
}

fn run(o: &Options) -> Result<bool, String> {
    let started = Instant::now();
    let scratch = std::env::temp_dir().join(format!(
        "fencing-torture-{}-{}",
        std::process::id(),
        now_ns()
    ));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let url = o
        .url
        .clone()
        .unwrap_or_else(|| format!("sqlite:{}", scratch.join("torture.db").display()));
    let history_path = o
        .history
        .clone()
        .unwrap_or_else(|| scratch.join("history.jsonl"));
    // etcd grants leases in whole seconds (a 250 ms lease lasts a second):
    // the TTL rounded up, so that pauses of 1.5-3x the TTL outlast leases
    // there too and the checker judges them on the lease they had.
    let ttl_ms = if url.starts_with("etcd://") {
        let whole = o.ttl_ms.div_ceil(1000) * 1000;
        if whole != o.ttl_ms {
            eprintln!(
                "torture: etcd leases last whole seconds: a TTL of {whole} ms, not {} ms",
                o.ttl_ms
            );
        }
        whole
    } else {
        o.ttl_ms
    };
    let _ = std::fs::remove_file(&history_path);
    let mut log =
        Writer::open(&history_path).map_err(|e| format!("{}: {e}", history_path.display()))?;
    let eager = !url.contains("eager_fencing=false");
    append(
        &mut log,
        &Record::Meta {
            url: url.clone(),
            eager,
            ttl_ms,
        },
    )?;

    // Opening once creates the schema before the workers race for it.
    let store = open_retrying(&url, Duration::from_secs(30))?;
    store.close();

    // A run id keeps scopes apart from earlier runs on the same database.
    let run_id = now_ns() % 1_000_000_007;
    let scopes: Vec<String> = (0..o.scopes)
        .map(|j| format!("torture-{run_id}-s{j}"))
        .collect();
    // A few names, created, retired and created again all run long.
    let churn_scopes: Vec<String> = (0..o.churn_scopes)
        .map(|j| format!("torture-{run_id}-c{j}"))
        .collect();
    let roles: Vec<Role> = (0..o.workers)
        .map(|_| Role::Lease)
        .chain((0..o.churn).map(|_| Role::Churn))
        .collect();
    let plan = Plan {
        url: url.clone(),
        history: history_path.clone(),
        scopes: scopes.clone(),
        churn_scopes,
        ttl_ms,
        // With failovers the run lasts until they are all done (bounded
        // below): the parent stops the workers (SIGTERM) at its end.
        deadline: started + o.duration * if o.replicas.is_some() { 3 } else { 1 },
        ops_per_worker: (o.max_ops / roles.len() as u64).max(1),
    };
    let mut rng = Rng::new(o.seed);
    let mut crew = Crew(Vec::new());
    for (id, &role) in roles.iter().enumerate() {
        crew.0.push(spawn(&plan, id, role, 0, rng.next())?);
    }
    let pg_cluster = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-cluster");
    let ttl = Duration::from_millis(ttl_ms);
    let mut next_action = Instant::now() + Duration::from_millis(200);
    let mut next_restart = Instant::now() + Duration::from_secs(5 + rng.below(10));
    let replicas = o
        .replicas
        .as_ref()
        .map(|dir| failover::Replicas::new(dir, o.failover_step))
        .transpose()?;
    let mut failovers_done = 0;
    // The etcd cluster's leader killed, or a member paused (src/etcd.rs).
    let mut etcd = match &o.etcd_dir {
        Some(dir) if o.nemesis => Some(etcd::EtcdNemesis::new(dir, &mut rng)?),
        _ => None,
    };
    // SQLite's file replaced by an older snapshot (src/file.rs).
    let mut files =
        if o.nemesis && o.pg_dir.is_none() && o.replicas.is_none() && o.etcd_dir.is_none() {
            file::FileNemesis::new(&url, started, o.duration)
        } else {
            None
        };
    // Failover k at (2k+1)/(2N+1) of the run, or once the previous one's
    // rejoin is over (each takes several seconds): the last one leaves the
    // workers some time on the new primary.
    let failover_at = |k: u32| {
        started
            + o.duration
                .mul_f64(f64::from(2 * k + 1) / f64::from(2 * o.failovers + 1))
    };
    // The old primary rejoining in the background.
    let mut rejoining: Option<std::thread::JoinHandle<Result<(), String>>> = None;
    // The end of the run: moved on by each failover, so that the workers
    // have time on the last new primary too, but never past the workers'
    // own deadline.
    let tail = o.duration / (2 * o.failovers + 1);
    let mut run_end = started + o.duration;
    let hard_end = if o.replicas.is_some() {
        plan.deadline - o.duration / 2
    } else {
        plan.deadline
    };
    let going = |run_end: Instant, failovers_done: u32| {
        let now = Instant::now();
        now < hard_end && (now < run_end || (replicas_wanted(o) && failovers_done < o.failovers))
    };

    // The nemesis.
    while going(run_end, failovers_done) {
        std::thread::sleep(Duration::from_millis(10));
        let now = Instant::now();
        // Resume the workers whose pause is over.
        for w in &mut crew.0 {
            if w.paused_until.is_some_and(|t| t <= now) {
                append(
                    &mut log,
                    &Record::Resume {
                        p: w.name(),
                        ts: now_ns(),
                    },
                )?;
                signal(&w.child, libc::SIGCONT);
                w.paused_until = None;
            }
        }
        // Respawn the workers that ended early (max ops reached: not respawned).
        for i in 0..crew.0.len() {
            if let Ok(Some(status)) = crew.0[i].child.try_wait() {
                if !status.success() && Instant::now() + Duration::from_millis(500) < run_end {
                    let w = &crew.0[i];
                    let (id, role, inc) = (w.id, w.role, w.incarnation + 1);
                    crew.0[i] = spawn(&plan, id, role, inc, rng.next())?;
                }
            }
        }
        if let Some(r) = &replicas {
            let due =
                o.nemesis && failovers_done < o.failovers && now >= failover_at(failovers_done);
            if due && rejoining.as_ref().is_none_or(|h| h.is_finished()) {
                if let Some(h) = rejoining.take() {
                    h.join().map_err(|_| "the rejoin panicked")??;
                }
                rejoining = Some(r.failover(&mut log)?);
                failovers_done += 1;
                run_end = run_end.max(Instant::now() + tail);
                continue;
            }
        }
        if let Some(e) = etcd.as_mut() {
            e.tick(&mut rng, &mut log)?;
        }
        if let Some(f) = files.as_mut() {
            if let file::Due::Restore = f.tick()? {
                // Nothing may run while the file is put back (docs/sqlite.md).
                for w in &mut crew.0 {
                    kill(w, &mut log)?;
                }
                f.restore(&mut log)?;
                for w in &mut crew.0 {
                    let (id, role, inc) = (w.id, w.role, w.incarnation + 1);
                    *w = spawn(&plan, id, role, inc, rng.next())?;
                }
                continue;
            }
        }
        if !o.nemesis || now < next_action {
            continue;
        }
        next_action = now + Duration::from_millis(100 + rng.below(300));
        let i = rng.below(crew.0.len() as u64) as usize;
        match rng.below(10) {
            // Pause past the TTL: 1.5x to 3x.
            0..=5 => {
                let w = &mut crew.0[i];
                if w.paused_until.is_some() || w.child.try_wait().ok().flatten().is_some() {
                    continue;
                }
                signal(&w.child, libc::SIGSTOP);
                if wait_stopped(&w.child) {
                    append(
                        &mut log,
                        &Record::Pause {
                            p: w.name(),
                            ts: now_ns(),
                        },
                    )?;
                    let span = ttl.mul_f64(1.5 + rng.below(1500) as f64 / 1000.0);
                    w.paused_until = Some(Instant::now() + span);
                } else {
                    signal(&w.child, libc::SIGCONT);
                }
            }
            // Kill (paused or not) and respawn.
            6..=8 => {
                kill(&mut crew.0[i], &mut log)?;
                let w = &crew.0[i];
                let (id, role, inc) = (w.id, w.role, w.incarnation + 1);
                crew.0[i] = spawn(&plan, id, role, inc, rng.next())?;
            }
            _ => {
                if let Some(dir) = &o.pg_dir {
                    if now >= next_restart {
                        let ts = now_ns();
                        let status = Command::new(&pg_cluster)
                            .arg("restart")
                            .arg(dir)
                            .stdin(Stdio::null())
                            .status()
                            .map_err(|e| format!("{}: {e}", pg_cluster.display()))?;
                        if !status.success() {
                            return Err(format!(
                                "pg-cluster restart {} failed: {status}",
                                dir.display()
                            ));
                        }
                        append(&mut log, &Record::Restart { ts, end: now_ns() })?;
                        next_restart = Instant::now() + Duration::from_secs(5 + rng.below(10));
                    }
                }
            }
        }
    }

    // The cluster whole again for the workers' last calls and the final read.
    if let Some(e) = etcd.as_mut() {
        e.heal(&mut rng, &mut log)?;
    }

    // Stop: resume the paused, ask everyone to stop after its call, give
    // them a moment, then kill what is left (its call in flight stays
    // indeterminate).
    for w in &mut crew.0 {
        if w.child.try_wait().ok().flatten().is_none() {
            signal(&w.child, libc::SIGTERM);
        }
        if w.paused_until.take().is_some() {
            append(
                &mut log,
                &Record::Resume {
                    p: w.name(),
                    ts: now_ns(),
                },
            )?;
            signal(&w.child, libc::SIGCONT);
        }
    }
    let grace = Instant::now() + Duration::from_secs(15);
    for w in &mut crew.0 {
        while w.child.try_wait().ok().flatten().is_none() && Instant::now() < grace {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    drop(crew);
    if let Some(h) = rejoining.take() {
        h.join().map_err(|_| "the rejoin panicked")??;
    }

    // The final read, as process "final".
    let store = open_retrying(&url, Duration::from_secs(30))?;
    let mut n = 0;
    for scope in &scopes {
        for key in KEYS {
            n += 1;
            let call = Call {
                scope: scope.clone(),
                key: Some(key.to_owned()),
                ..Call::default()
            };
            append(&mut log, &invoke("final", n, OpKind::Get, call))?;
            let mut tries = 0;
            let result = loop {
                match store.get(scope, key, None) {
                    Err(Error::Backend(_)) if tries < 50 => {
                        tries += 1;
                        std::thread::sleep(Duration::from_millis(200));
                    }
                    other => break other,
                }
            };
            let record = match result {
                Ok(entry) => Record::Ok {
                    p: "final".into(),
                    n,
                    ts: now_ns(),
                    ret: Returned {
                        value: entry
                            .as_ref()
                            .map(|e| String::from_utf8_lossy(&e.value).into_owned()),
                        wtoken: entry.map(|e| e.token.get()),
                        ..Returned::default()
                    },
                },
                Err(e) => failure("final", n, &e),
            };
            append(&mut log, &record)?;
        }
    }
    store.close();

    let text = std::fs::read_to_string(&history_path).map_err(|e| e.to_string())?;
    let report = checker::check(&history::parse(&text)?);
    print_violations(&report);
    let ok = report.violations.is_empty();
    if ok && o.history.is_none() {
        let _ = std::fs::remove_dir_all(&scratch);
    } else {
        // Nothing of ours in it when --url and --history name other places.
        let _ = std::fs::remove_dir(&scratch);
        eprintln!("torture: history kept in {}", history_path.display());
    }
    println!(
        "{}",
        summary_line(
            backend_name(&url),
            Some(started.elapsed()),
            &report,
            files.as_ref().map(|f| f.done),
            etcd.as_ref().map(|e| (e.leader_kills, e.member_pauses)),
        )
    );
    if replicas.is_some() && o.nemesis && failovers_done < o.failovers {
        return Err(format!(
            "only {failovers_done} of {} failovers fit in --duration",
            o.failovers
        ));
    }
    Ok(ok)
}

fn open_retrying(url: &str, patience: Duration) -> Result<Store, String> {
    let until = Instant::now() + patience;
    loop {
        match Store::open(url) {
            Ok(s) => return Ok(s),
            Err(Error::Backend(_)) if Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(format!("opening {url}: {e}")),
        }
    }
}

pub(crate) fn append(log: &mut Writer, record: &Record) -> Result<(), String> {
    log.append(record)
        .map_err(|e| format!("writing the history: {e}"))
}

fn invoke(p: &str, n: u64, op: OpKind, call: Call) -> Record {
    Record::Invoke {
        p: p.to_owned(),
        n,
        ts: now_ns(),
        op,
        call,
    }
}

fn failure(p: &str, n: u64, e: &Error) -> Record {
    let current = match e {
        Error::StaleToken { current, .. } => Some(*current),
        Error::LeaseHeld { token, .. } => Some(token.get()),
        _ => None,
    };
    Record::Fail {
        p: p.to_owned(),
        n,
        ts: now_ns(),
        code: e.code().as_str().to_owned(),
        current,
    }
}

// ----- a worker -----

struct Session {
    name: String,
    url: String,
    store: Store,
    log: Writer,
    n: u64,
    max_ops: u64,
}

impl Session {
    /// Records the invocation, runs `f`, records the outcome.
    fn call<T>(
        &mut self,
        op: OpKind,
        call: Call,
        f: impl FnOnce(&Store, &Call) -> Result<T, Error>,
        ret: impl FnOnce(&T) -> Returned,
    ) -> Result<T, Error> {
        self.n += 1;
        let n = self.n;
        self.log
            .append(&invoke(&self.name, n, op, call.clone()))
            .expect("history write");
        let result = f(&self.store, &call);
        let record = match &result {
            Ok(v) => Record::Ok {
                p: self.name.clone(),
                n,
                ts: now_ns(),
                ret: ret(v),
            },
            Err(e) => failure(&self.name, n, e),
        };
        self.log.append(&record).expect("history write");
        if let Err(Error::Backend(_)) = &result {
            // A lost connection (a server restart): a fresh handle.
            std::thread::sleep(Duration::from_millis(50));
            if let Ok(s) = Store::open(&self.url) {
                self.store.close();
                self.store = s;
            }
        }
        result
    }

    fn done(&self) -> bool {
        self.n >= self.max_ops || STOP.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Set by SIGTERM: the parent's end of the run.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_sigterm(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn replicas_wanted(o: &Options) -> bool {
    o.replicas.is_some() && o.nemesis
}

/// `torture worker ROLE URL HISTORY NAME SCOPES TTL_MS RUN_MS MAX_OPS SEED`
fn worker(args: &[String]) -> Result<(), String> {
    let [role, url, history, name, scopes, ttl_ms, run_ms, max_ops, seed] = args else {
        return Err("worker: bad arguments".into());
    };
    // Die with the parent, whatever happens to it.
    // SAFETY: prctl(PR_SET_PDEATHSIG) only sets a flag on this process.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe { libc::signal(libc::SIGTERM, on_sigterm as *const () as libc::sighandler_t) };
    let num = |s: &str| {
        s.parse::<u64>()
            .map_err(|_| format!("worker: bad number {s:?}"))
    };
    let ttl = Duration::from_millis(num(ttl_ms)?);
    let deadline = Instant::now() + Duration::from_millis(num(run_ms)?);
    let scopes: Vec<String> = scopes.split(',').map(str::to_owned).collect();
    let mut rng = Rng::new(num(seed)?);
    let store = open_retrying(url, Duration::from_secs(30))?;
    let log = Writer::open(Path::new(history)).map_err(|e| e.to_string())?;
    let mut s = Session {
        name: name.clone(),
        url: url.clone(),
        store,
        log,
        n: 0,
        max_ops: num(max_ops)?,
    };
    let holder = format!("{name}@{}", std::process::id());
    match role.as_str() {
        "lease" => lease_loop(&mut s, &scopes, &holder, ttl, deadline, &mut rng),
        "churn" => churn::run(&mut s, &scopes, &holder, ttl, deadline, &mut rng),
        other => return Err(format!("worker: unknown role {other:?}")),
    }
    s.store.close();
    Ok(())
}

/// The lease cycle: acquire, claim, get, put (once or twice), renew, release;
/// one time in four the holder deletes its keys before renewing and retires
/// the scope after releasing. One cycle in eight is instead a put with an
/// outside token (no lease), above the last token this process acquired.
fn lease_loop(
    s: &mut Session,
    scopes: &[String],
    holder: &str,
    ttl: Duration,
    deadline: Instant,
    rng: &mut Rng,
) {
    let name = s.name.clone();
    let nap = |rng: &mut Rng, max_ms: u64| {
        std::thread::sleep(Duration::from_millis(rng.below(max_ms + 1)))
    };
    // The greatest token this process acquired, per scope.
    let mut seen: HashMap<String, u64> = HashMap::new();
    while Instant::now() < deadline && !s.done() {
        let scope = scopes[rng.below(scopes.len() as u64) as usize].clone();
        let at = |scope: &str| Call {
            scope: scope.to_owned(),
            ..Call::default()
        };
        // Now and then a writer with a token of its own (no lease): if
        // accepted, it fences out the holders and the next token is above it.
        if rng.below(8) == 0 {
            let v = jump_from(seen.get(&scope).copied().unwrap_or(0), rng);
            let key = KEYS[rng.below(KEYS.len() as u64) as usize];
            let value = format!("{name}:{}", s.n + 1);
            let fence = Fence::new(token(v)).with_seq(1);
            let _ = s.call(
                OpKind::Put,
                Call {
                    scope: scope.clone(),
                    key: Some(key.to_owned()),
                    token: Some(v),
                    seq: Some(1),
                    value: Some(value.clone()),
                    outside: true,
                },
                |st, c| st.put(&c.scope, key, value.as_bytes(), &fence),
                |r| Returned {
                    version: Some(r.version),
                    ..Returned::default()
                },
            );
            continue;
        }
        let lease = match s.call(
            OpKind::Acquire,
            at(&scope),
            |st, c| st.acquire(&c.scope, holder, ttl),
            |l| Returned {
                token: Some(l.token.get()),
                ..Returned::default()
            },
        ) {
            Ok(l) => l,
            Err(Error::LeaseHeld { remaining, .. }) => {
                std::thread::sleep(remaining.min(Duration::from_millis(30)));
                continue;
            }
            Err(_) => continue,
        };
        let t = lease.token;
        let top = seen.entry(scope.clone()).or_default();
        *top = (*top).max(t.get());
        let with_token = |key: Option<&str>, seq: Option<u64>, value: Option<String>| Call {
            scope: scope.clone(),
            key: key.map(str::to_owned),
            token: Some(t.get()),
            seq,
            value,
            outside: false,
        };
        if s.call(
            OpKind::Claim,
            with_token(None, None, None),
            |st, c| st.claim(&c.scope, &Fence::new(t)),
            |_| Returned::default(),
        )
        .is_err()
        {
            continue;
        }
        // Hold the lease a while (up to half the TTL): most pauses then
        // strike a holder, as a GC pause would.
        nap(rng, s_ttl_tenth(ttl) * 5);
        let key = KEYS[rng.below(KEYS.len() as u64) as usize];
        let _ = s.call(
            OpKind::Get,
            with_token(Some(key), None, None),
            |st, c| st.get(&c.scope, key, Some(&Fence::new(t))),
            |e| Returned {
                value: e
                    .as_ref()
                    .map(|e| String::from_utf8_lossy(&e.value).into_owned()),
                wtoken: e.as_ref().map(|e| e.token.get()),
                ..Returned::default()
            },
        );
        let mut ok = true;
        let puts = 1 + rng.below(2);
        for seq in 1..=puts {
            let key = KEYS[rng.below(KEYS.len() as u64) as usize];
            let value = format!("{name}:{}", s.n + 1);
            let fence = Fence::new(t).with_seq(seq).with_holder(holder);
            if s.call(
                OpKind::Put,
                with_token(Some(key), Some(seq), Some(value.clone())),
                |st, c| st.put(&c.scope, key, value.as_bytes(), &fence),
                |r| Returned {
                    version: Some(r.version),
                    ..Returned::default()
                },
            )
            .is_err()
            {
                ok = false;
                break;
            }
            nap(rng, s_ttl_tenth(ttl) / 2);
        }
        if !ok {
            continue;
        }
        // Now and then the holder tidies up: it deletes the keys, so that
        // the scope can be retired once the lease is released.
        let tidy = rng.below(4) == 0;
        if tidy {
            for (seq, key) in (puts + 1..).zip(KEYS) {
                let fence = Fence::new(t).with_seq(seq).with_holder(holder);
                let _ = s.call(
                    OpKind::Delete,
                    with_token(Some(key), Some(seq), None),
                    |st, c| st.delete(&c.scope, key, &fence),
                    |r| Returned {
                        version: Some(r.version),
                        ..Returned::default()
                    },
                );
            }
        }
        if s.call(
            OpKind::Renew,
            with_token(None, None, None),
            |st, c| st.renew(&c.scope, t, ttl),
            |_| Returned::default(),
        )
        .is_err()
        {
            continue;
        }
        let _ = s.call(
            OpKind::Release,
            with_token(None, None, None),
            |st, c| st.release(&c.scope, t),
            |r| Returned {
                released: Some(*r),
                ..Returned::default()
            },
        );
        if tidy {
            // Refused if someone took the lease or wrote meanwhile; else
            // the next acquire creates the scope again, above the floor.
            let _ = s.call(
                OpKind::Retire,
                with_token(None, None, None),
                |st, c| st.retire(&c.scope),
                |r| Returned {
                    retired: Some(*r),
                    ..Returned::default()
                },
            );
        }
    }
}

/// A token for a jump (`advance_counter`) or an outside write, from the
/// greatest token `last` this process saw in the scope: mostly a modest jump
/// or a millisecond timestamp (about 2^41, what an outside clock hands out),
/// sometimes far (up to 2^47: within the jump limit of 2^48 unless the
/// scope is near it already), and now and then provably over the limit,
/// which must be refused with INVALID_ARGUMENT (checker rule 8).
fn jump_from(last: u64, rng: &mut Rng) -> u64 {
    let v = match rng.below(10) {
        0..=4 => last.saturating_add(1 + rng.below(1000)),
        5..=6 => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_millis() as u64),
        7..=8 => last.saturating_add(1 + rng.below(1 << 47)),
        _ => last
            .saturating_add(checker::OVER_LIMIT + 1)
            .saturating_add(rng.below(1 << 40)),
    };
    v.min(Token::MAX.get())
}

/// `v` as a token (`jump_from` never returns 0).
fn token(v: u64) -> Token {
    Token::new(v).unwrap_or(Token::FIRST)
}

fn s_ttl_tenth(ttl: Duration) -> u64 {
    (ttl.as_millis() / 10) as u64
}
