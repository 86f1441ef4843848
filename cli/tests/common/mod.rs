//! Runs the real `fencing` binary, bounded in time, in a temporary directory,
//! with no FENCING_* variable inherited from the environment.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_fencing");
/// No single CLI call in these tests should come near this.
pub const LIMIT: Duration = Duration::from_secs(60);

/// A temporary directory with a SQLite store in it.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub url: String,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite:{}", dir.path().join("store.db").display());
        Env { dir, url }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `fencing --url <this store> ARGS...`, run in the temporary directory.
    pub fn cmd<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = bare(self.dir.path());
        c.arg("--url").arg(&self.url).args(args);
        c
    }

    pub fn run<I, S>(&self, args: I) -> Out
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        run(self.cmd(args), None)
    }

    pub fn run_stdin<I, S>(&self, args: I, stdin: &[u8]) -> Out
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        run(self.cmd(args), Some(stdin))
    }

    /// `status SCOPE --json`, for before/after comparisons.
    pub fn status(&self, scope: &str) -> Value {
        let out = self.run(["--json", "status", scope]);
        assert_eq!(out.code, 0, "{out:?}");
        let mut v = out.json();
        // Time left moves on its own; the rest must not.
        if let Some(lease) = v.get_mut("lease").and_then(Value::as_object_mut) {
            lease.remove("remaining_ms");
        }
        // Accepted writes between the two move the last writer (and only they do).
        if let Some(status) = v.as_object_mut() {
            status.remove("last_write");
        }
        v
    }
}

/// `fencing` with a clean environment and the given working directory.
pub fn bare(cwd: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(cwd)
        .env_remove("FENCING_URL")
        .env_remove("FENCING_URL_FILE")
        .env_remove("FENCING_TOKEN")
        .env_remove("FENCING_SCOPE")
        .env_remove("FENCING_HOLDER");
    c
}

#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Out {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("not one JSON object ({e}): {self:?}"))
    }

    /// The failure contract: this exit status and exactly one stderr line
    /// `fencing: CODE: ...`.
    pub fn fails_with(&self, code: &str, status: i32) {
        assert_eq!(self.code, status, "{self:?}");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one stderr line: {self:?}");
        assert!(
            lines[0].starts_with(&format!("fencing: {code}: ")),
            "{self:?}"
        );
    }
}

/// Kills the process (resuming it first) if a test fails while it runs.
pub struct Reaper(pub Vec<i32>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for &pid in &self.0 {
            let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Runs to completion, or kills the process and fails after `LIMIT`.
pub fn run(mut cmd: Command, stdin: Option<&[u8]>) -> Out {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn fencing");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    finish(child, LIMIT)
}

/// Waits for a spawned child with piped output, killing it after `limit`.
pub fn finish(child: Child, limit: Duration) -> Out {
    let pid = child.id() as i32;
    let reaper = Reaper(vec![pid]);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output: Output = match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait for fencing"),
        Err(_) => panic!("fencing (pid {pid}) did not finish within {limit:?}"),
    };
    std::mem::forget(reaper);
    Out {
        code: output.status.code().unwrap_or(-1),
        stdout: output.stdout,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Polls `cond` every 10 ms until it holds, failing after `LIMIT`.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The process no longer runs (gone, or a zombie nobody reaped yet).
pub fn is_gone(pid: i32) -> bool {
    if kill(Pid::from_raw(pid), None).is_err() {
        return true;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}
