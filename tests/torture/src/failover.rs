//! The failover nemesis (`--replicas DIR`), on a `scripts/pg-replicas` bed:
//! the standby is cut off (its walreceiver stopped) while the workers carry
//! on, so that the primary acknowledges commits the standby never gets
//! (asynchronous), or cannot acknowledge any (synchronous); then the primary
//! crashes, the standby is promoted and the old primary rejoins as its
//! standby. No hook is needed: the store notices the promotion by itself
//! (docs/semantics.md, "Failover"). With `--failover-step` the new primary is
//! promoted closed to clients (read-only by default, which
//! target_session_attrs=read-write passes by), the explicit failover step
//! runs on it, and only then is it opened. With `--hide-promotion` the store's
//! recorded server history is overwritten with the new primary's while it is
//! closed: the checker must then see tokens handed out twice (proof that it
//! can see the hole the automatic step closes).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fencing::{Error, Store};
use fencing_torture::history::{Record, Writer};
use fencing_torture::now_ns;

/// How long the standby stays cut off before the primary crashes: long
/// enough for the workers to be handed many tokens the standby never sees,
/// shorter than the calls' timeout (so that no synchronous commit's wait is
/// given up, which would make it visible on the old primary alone).
const PARTITION: Duration = Duration::from_millis(800);

/// The step's connection overrides the closed node's default.
const STEP_OPTIONS: &str = "options=-c%20default_transaction_read_only%3Doff";

/// Whether and how the failover step runs on each new primary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    None,
    /// Promoted closed, the step, then opened: what a hook must do.
    Closed,
    /// Promoted open, the step right after.
    Late,
    /// Promoted closed, the promotion hidden from the store, then opened.
    Hidden,
}

#[derive(Clone)]
pub struct Replicas {
    ctl: PathBuf,
    dir: PathBuf,
    step: Step,
    /// Asynchronous standbys: acknowledged commits may be lost.
    lossy: bool,
}

impl Replicas {
    pub fn new(dir: &Path, step: Step) -> Result<Replicas, String> {
        let ctl = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-replicas");
        let mode = std::fs::read_to_string(dir.join("mode"))
            .map_err(|e| format!("{}: not a pg-replicas bed ({e})", dir.display()))?;
        Ok(Replicas {
            ctl,
            dir: dir.to_owned(),
            step,
            lossy: mode.trim() == "async",
        })
    }

    /// `pg-replicas VERB DIR ARGS...`; its output.
    fn ctl(&self, verb: &str, args: &[&str]) -> Result<String, String> {
        let out = Command::new("bash")
            .arg(&self.ctl)
            .arg(verb)
            .arg(&self.dir)
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("{}: {e}", self.ctl.display()))?;
        if !out.status.success() {
            return Err(format!(
                "pg-replicas {verb} {args:?} failed: {}",
                out.status
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// One failover, recorded. The old primary (and any other standby)
    /// then rejoins as the new one's standby, in the background: the
    /// returned handle says how that went (wait for it before the next
    /// failover, and before the final read).
    pub fn failover(
        &self,
        log: &mut Writer,
    ) -> Result<std::thread::JoinHandle<Result<(), String>>, String> {
        let old = self.ctl("primary", &[])?;
        let nodes = std::fs::read_to_string(self.dir.join("nodes")).map_err(|e| e.to_string())?;
        let nodes: Vec<&str> = nodes.split_whitespace().collect();
        let new = *nodes
            .iter()
            .find(|n| **n != old)
            .ok_or("pg-replicas bed without a standby")?;
        let from = now_ns();
        let began = Instant::now();
        self.ctl("catch-up", &[])?;
        self.ctl("partition", &[new])?;
        let cut = now_ns();
        std::thread::sleep(PARTITION);
        let ts = now_ns();
        self.ctl("crash-primary", &[])?;
        match self.step {
            Step::Closed => {
                self.ctl("promote", &[new, "--closed"])?;
                let base = self.run_step(new)?;
                self.ctl("open", &[new])?;
                eprintln!("torture: failover to node{new}, every token up to {base} stale");
            }
            Step::Late => {
                self.ctl("promote", &[new])?;
                let base = self.run_step(new)?;
                eprintln!(
                    "torture: failover to node{new}, open, then every token up to {base} stale"
                );
            }
            Step::Hidden => {
                self.ctl("promote", &[new, "--closed"])?;
                self.hide_promotion(new)?;
                self.ctl("open", &[new])?;
                eprintln!("torture: failover to node{new}, the promotion hidden from the store");
            }
            Step::None => {
                self.ctl("promote", &[new])?;
                eprintln!("torture: failover to node{new}, no hook (the store steps by itself)");
            }
        }
        crate::append(
            log,
            &Record::Failover {
                from,
                cut,
                ts,
                end: now_ns(),
                lossy: self.lossy,
                step: matches!(self.step, Step::Closed | Step::Late),
            },
        )?;
        let others: Vec<String> = nodes
            .iter()
            .filter(|n| **n != new)
            .map(|n| n.to_string())
            .collect();
        eprintln!(
            "torture: node{new} open {:.1} s after the failover began",
            began.elapsed().as_secs_f64()
        );
        let me = self.clone();
        Ok(std::thread::spawn(move || {
            let began = Instant::now();
            for n in &others {
                me.ctl("rejoin", &[n])?;
            }
            eprintln!(
                "torture: rejoined in {:.1} s",
                began.elapsed().as_secs_f64()
            );
            Ok(())
        }))
    }

    /// The URL of node N for the only client while it is closed.
    fn closed_url(&self, node: &str) -> Result<String, String> {
        let urls = self.ctl("urls", &[])?;
        let index: usize = node.parse().map_err(|_| format!("bad node {node:?}"))?;
        let url = urls.lines().nth(index).ok_or("pg-replicas urls: too few")?;
        Ok(format!("{url}?{STEP_OPTIONS}"))
    }

    /// The failover step on node N, the only client while it is closed;
    /// returns its base (every token at or below it is stale).
    fn run_step(&self, node: &str) -> Result<u64, String> {
        let url = self.closed_url(node)?;
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            match Store::open(&url).and_then(|s| s.failover()) {
                Ok(base) => return Ok(base),
                Err(e @ Error::Backend(_)) if Instant::now() < until => {
                    eprintln!("torture: the failover step: {e}; again");
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(format!("the failover step on node{node}: {e}")),
            }
        }
    }

    /// Overwrites the server history the store recorded with node N's, so
    /// that the store cannot notice its promotion.
    fn hide_promotion(&self, node: &str) -> Result<(), String> {
        let url = self.closed_url(node)?;
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let out = Command::new("psql")
                .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "--dbname", &url, "-c"])
                .arg(
                    "UPDATE fencing.history SET (system_id, timeline) = \
                     (SELECT system_id, timeline FROM fencing.server_history())",
                )
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("psql: {e}"))?;
            if out.status.success() {
                return Ok(());
            }
            if Instant::now() >= until {
                return Err(format!(
                    "hiding the promotion on node{node}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
