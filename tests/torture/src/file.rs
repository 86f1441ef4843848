//! The file nemesis (SQLite): the store's file replaced by an older snapshot
//! of itself mid-run, as an operator restoring a backup does
//! (docs/sqlite.md, "The file is the store"). A snapshot is taken while the
//! workers run (`VACUUM INTO`, a consistent copy); later the parent stops
//! every worker, puts the snapshot back at the path, and starts them again.
//! The store must notice on its own (no failover step is run): no token the
//! lost history issued is issued again, no write it fenced out is accepted.
//!
//! Each replacement is a lossy `failover` record (from the snapshot to the
//! restore), so the checker counts acknowledged writes of that window as
//! indeterminate for the final reads only; every token rule sees every call.
//! The restore alternates between a rename of the snapshot over the path and
//! a copy over the file itself (`cp` keeps the inode: only the store's
//! history tells it apart).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fencing_torture::history::{Record, Writer};
use fencing_torture::now_ns;

/// Replacements per run, spread over it.
pub const REPLACEMENTS: u32 = 2;

pub struct FileNemesis {
    path: PathBuf,
    snapshot: PathBuf,
    started: Instant,
    duration: Duration,
    /// When the pending snapshot was taken (`CLOCK_MONOTONIC` ns).
    taken: Option<u64>,
    pub done: u32,
}

/// What the parent is to do now.
pub enum Due {
    Nothing,
    /// Stop every worker, then call [`FileNemesis::restore`], then respawn.
    Restore,
}

impl FileNemesis {
    /// For an `sqlite:PATH` store without options; `None` for any other.
    pub fn new(url: &str, started: Instant, duration: Duration) -> Option<FileNemesis> {
        let path = PathBuf::from(url.strip_prefix("sqlite:")?);
        if url.contains('?') {
            return None;
        }
        let snapshot = path.with_extension("snapshot");
        Some(FileNemesis {
            path,
            snapshot,
            started,
            duration,
            taken: None,
            done: 0,
        })
    }

    /// Replacement k: snapshot at (4k+1)/10 of the run, restore at (4k+3)/10.
    fn at(&self, tenths: u32) -> Instant {
        self.started + self.duration.mul_f64(f64::from(tenths) / 10.0)
    }

    /// Takes the snapshot when its time has come; says when to restore.
    pub fn tick(&mut self) -> Result<Due, String> {
        if self.done >= REPLACEMENTS {
            return Ok(Due::Nothing);
        }
        let now = Instant::now();
        match self.taken {
            None if now >= self.at(4 * self.done + 1) => {
                let ts = now_ns();
                snapshot(&self.path, &self.snapshot)?;
                self.taken = Some(ts);
                Ok(Due::Nothing)
            }
            Some(_) if now >= self.at(4 * self.done + 3) => Ok(Due::Restore),
            _ => Ok(Due::Nothing),
        }
    }

    /// Puts the snapshot back at the path, every worker stopped: their
    /// `-wal` and `-shm` go (what they hold is the history being lost), and
    /// the snapshot takes the file's place.
    pub fn restore(&mut self, log: &mut Writer) -> Result<(), String> {
        let from = self.taken.take().ok_or("restore without a snapshot")?;
        let ts = now_ns();
        for suffix in ["-wal", "-shm"] {
            let mut p = self.path.as_os_str().to_owned();
            p.push(suffix);
            let _ = std::fs::remove_file(&p);
        }
        let failed = |e: std::io::Error| format!("restoring {}: {e}", self.path.display());
        if self.done % 2 == 0 {
            std::fs::rename(&self.snapshot, &self.path).map_err(failed)?;
        } else {
            std::fs::copy(&self.snapshot, &self.path).map_err(failed)?;
            std::fs::remove_file(&self.snapshot).map_err(failed)?;
        }
        self.done += 1;
        let end = now_ns();
        crate::append(
            log,
            &Record::Failover {
                from,
                cut: ts,
                ts,
                end,
                lossy: true,
                step: false,
            },
        )
    }
}

/// A consistent copy of the live store (docs/sqlite.md: never `cp` a live
/// store), retried while the workers keep the file busy.
fn snapshot(path: &Path, to: &Path) -> Result<(), String> {
    let _ = std::fs::remove_file(to);
    let conn = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    conn.execute("VACUUM INTO ?1", [to.to_string_lossy()])
        .map(drop)
        .map_err(|e| format!("snapshot of {}: {e}", path.display()))
}
