//! The etcd nemesis (`--etcd-dir DIR`, a cluster `scripts/etcd-cluster start
//! DIR` started; the store's `--url` is `etcd://` on its members). When a
//! fault is due (3-10 s after the cluster was last whole), the first time
//! and three times in four after that it kills the leader (`kill-leader`:
//! SIGKILL, then the wait for a new leader), leaves the cluster on its two
//! other members for 0.5-3 s and starts the killed member again on its own
//! data (`restart`); otherwise it pauses one member, leader or follower, for
//! 1-4 s (`pause`: SIGSTOP, a partition as the cluster sees it) and resumes
//! it (`resume`). One fault at a time, so a majority always runs.
//!
//! etcd acknowledges a write only once a majority has it in its fsynced
//! WAL: a member killed or cut off loses nothing acknowledged, so each fault
//! is a `restart` record (from the kill or pause to the member serving
//! again), which no rule treats as lossy; the checker holds etcd to every
//! rule. The run's summary counts them (`leader_kills`, `member_pauses`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fencing_torture::history::{Record, Writer};
use fencing_torture::now_ns;

use super::{append, Rng};

/// The shortest and longest calm between two faults, in ms.
const CALM_MS: (u64, u64) = (3_000, 10_000);
/// How long a killed leader stays down, in ms.
const DOWN_MS: (u64, u64) = (500, 3_000);
/// How long a member stays paused, in ms.
const PAUSED_MS: (u64, u64) = (1_000, 4_000);

pub struct EtcdNemesis {
    ctl: PathBuf,
    dir: PathBuf,
    /// The next fault, while the cluster is whole.
    next: Instant,
    /// The fault in progress.
    fault: Option<Fault>,
    pub leader_kills: u32,
    pub member_pauses: u32,
}

struct Fault {
    kind: Kind,
    /// `etcd0`..`etcd2`.
    member: String,
    /// When it began (`CLOCK_MONOTONIC` ns), for the record.
    ts: u64,
    /// When to restart or resume the member.
    until: Instant,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Killed,
    Paused,
}

fn between(rng: &mut Rng, (lo, hi): (u64, u64)) -> Duration {
    Duration::from_millis(lo + rng.below(hi - lo + 1))
}

impl EtcdNemesis {
    pub fn new(dir: &Path, rng: &mut Rng) -> Result<EtcdNemesis, String> {
        let ctl = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/etcd-cluster");
        if !dir.join("token").is_file() {
            return Err(format!(
                "{}: no cluster there (scripts/etcd-cluster start DIR)",
                dir.display()
            ));
        }
        Ok(EtcdNemesis {
            ctl,
            dir: dir.to_owned(),
            next: Instant::now() + between(rng, CALM_MS),
            fault: None,
            leader_kills: 0,
            member_pauses: 0,
        })
    }

    /// Runs `scripts/etcd-cluster VERB DIR [MEMBER]`; its stdout, or why it
    /// failed (its stderr).
    fn ctl(&self, verb: &str, member: Option<&str>) -> Result<String, String> {
        let out = Command::new(&self.ctl)
            .arg(verb)
            .arg(&self.dir)
            .args(member)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", self.ctl.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if out.status.success() {
            Ok(stdout)
        } else {
            Err(format!(
                "etcd-cluster {verb} {}{}: {} ({stdout}{})",
                self.dir.display(),
                member.map_or(String::new(), |m| format!(" {m}")),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// Starts a fault when one is due, ends the one in progress when its
    /// time has come.
    pub fn tick(&mut self, rng: &mut Rng, log: &mut Writer) -> Result<(), String> {
        let now = Instant::now();
        match &self.fault {
            Some(f) if now >= f.until => self.heal(rng, log),
            Some(_) => Ok(()),
            None if now >= self.next => self.strike(rng),
            None => Ok(()),
        }
    }

    fn strike(&mut self, rng: &mut Rng) -> Result<(), String> {
        let ts = now_ns();
        // The first fault kills the leader, so a short round has one too.
        if self.leader_kills == 0 || rng.below(4) < 3 {
            let said = match self.ctl("kill-leader", None) {
                Ok(said) => said,
                // Nobody answered as leader (an election, or etcdctl too
                // slow on a loaded machine): nothing was killed; later.
                Err(e) if e.contains("no leader answers") => {
                    eprintln!("torture: {e}; the fault is put off");
                    self.next = Instant::now() + Duration::from_secs(1);
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            // "killed leader etcdN (SIGKILL, pid P); new leader etcdM after S s"
            let member = said
                .strip_prefix("killed leader ")
                .and_then(|rest| rest.split_whitespace().next())
                .filter(|m| m.starts_with("etcd"))
                .ok_or_else(|| format!("etcd-cluster kill-leader said {said:?}"))?
                .to_owned();
            self.leader_kills += 1;
            self.fault = Some(Fault {
                kind: Kind::Killed,
                member,
                ts,
                until: Instant::now() + between(rng, DOWN_MS),
            });
        } else {
            let member = format!("etcd{}", rng.below(3));
            self.ctl("pause", Some(&member))?;
            self.member_pauses += 1;
            self.fault = Some(Fault {
                kind: Kind::Paused,
                member,
                ts,
                until: Instant::now() + between(rng, PAUSED_MS),
            });
        }
        Ok(())
    }

    /// Restarts or resumes the member of the fault in progress, if any, and
    /// records the fault once the member serves again.
    pub fn heal(&mut self, rng: &mut Rng, log: &mut Writer) -> Result<(), String> {
        let Some(f) = self.fault.take() else {
            return Ok(());
        };
        let verb = match f.kind {
            Kind::Killed => "restart",
            Kind::Paused => "resume",
        };
        self.ctl(verb, Some(&f.member))?;
        append(
            log,
            &Record::Restart {
                ts: f.ts,
                end: now_ns(),
            },
        )?;
        self.next = Instant::now() + between(rng, CALM_MS);
        Ok(())
    }
}
