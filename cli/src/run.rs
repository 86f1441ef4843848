//! `fencing run SCOPE --ttl 30s -- CMD ARGS...`: like flock(1), but fenced.
//! Holds the lease while CMD runs (the core's keep-alive renews it), gives
//! CMD the token in its environment, and stops CMD if the lease is lost.

use std::io::{ErrorKind, Write};
use std::os::unix::process::CommandExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use fencing::{Error, WorkOutcome};
use nix::sys::signal::{kill, killpg, SigSet, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::verbs;

enum Event {
    /// CMD has exited (not yet reaped, so its pid cannot be reused).
    Exited,
    Lost(Error),
}

fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "fencing: {line}");
}

/// Where signals for CMD go: its process group (the default), or only CMD
/// itself with `--foreground`.
#[derive(Clone, Copy)]
struct Target {
    pid: Pid,
    group: bool,
}

impl Target {
    fn signal(self, sig: Signal) {
        let _ = if self.group {
            killpg(self.pid, sig)
        } else {
            kill(self.pid, sig)
        };
    }
}

/// Where `fencing run` is when a termination signal arrives.
enum Phase {
    /// Still acquiring: nothing to clean up, exit at once.
    Acquiring,
    /// Between acquiring and CMD's start: pass it on once CMD runs.
    Starting(Option<Signal>),
    Running(Target),
}

/// Blocks the termination signals in this process (every thread started
/// later inherits the mask; CMD gets a clean one) and passes each one that
/// arrives on to CMD, so that `fencing run` under a supervisor or at a
/// terminal stops CMD, then releases the lease.
fn forward_signals(foreground: bool) -> Arc<Mutex<Phase>> {
    let phase = Arc::new(Mutex::new(Phase::Acquiring));
    let mut set = SigSet::empty();
    set.add(Signal::SIGTERM);
    set.add(Signal::SIGHUP);
    if !foreground {
        // In the foreground, the terminal sends these to CMD itself.
        set.add(Signal::SIGINT);
        set.add(Signal::SIGQUIT);
    }
    if set.thread_block().is_err() {
        return phase;
    }
    let shared = Arc::clone(&phase);
    std::thread::spawn(move || loop {
        let Ok(sig) = set.wait() else { return };
        let mut phase = shared.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *phase {
            Phase::Acquiring => std::process::exit(128 + sig as i32),
            Phase::Starting(pending) => *pending = Some(sig),
            Phase::Running(target) => target.signal(sig),
        }
    });
    phase
}

pub fn main(url_arg: Option<&str>, args: RunArgs) -> Result<u8, Failure> {
    let url = verbs::announced_url(url_arg)?;
    let scope = verbs::text("the scope", &args.scope)?.to_owned();
    let holder = verbs::holder(args.holder.as_deref())?;
    // Before any other thread starts, so that every thread blocks them.
    let phase = forward_signals(args.foreground);
    let store = verbs::open(&url)?;
    let lease = verbs::acquire(&store, &scope, &holder, args.ttl, args.wait)?;
    set_phase(&phase, Phase::Starting(None));
    let token = lease.token;

    let (tx, events) = mpsc::channel::<Event>();
    let on_lost = tx.clone();
    let guard = store.keep_alive_with(lease, move |e| {
        let _ = on_lost.send(Event::Lost(e.clone()));
    });

    let mut command = Command::new(&args.command[0]);
    // SAFETY: between fork and exec the closure only calls
    // pthread_sigmask, which is async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(|| {
            // CMD starts with no signal blocked (std does not reset the mask).
            SigSet::all().thread_unblock().map_err(std::io::Error::from)
        });
    }
    if !args.foreground {
        // Its own process group, so that a lost lease stops CMD's children too.
        command.process_group(0);
    }
    let mut child = match command
        .args(&args.command[1..])
        .env("FENCING_SCOPE", &scope)
        .env("FENCING_TOKEN", token.to_string())
        .env("FENCING_HOLDER", &holder)
        // Never the password (docs/postgres.md, "Credentials"); and the
        // URL file would contradict FENCING_URL.
        .env("FENCING_URL", verbs::stripped_of_password(&url))
        .env_remove("FENCING_URL_FILE")
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            // Released before the process exits: a dropped guard would
            // release in the background, and the exit would cut that short.
            let _ = guard.finish(WorkOutcome::Failed);
            let status = if e.kind() == ErrorKind::NotFound {
                127
            } else {
                126
            };
            say(&format!("cannot run {:?}: {e}", args.command[0]));
            return Ok(status);
        }
    };
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let target = Target {
        pid,
        group: !args.foreground,
    };
    if let Phase::Starting(Some(sig)) = set_phase(&phase, Phase::Running(target)) {
        target.signal(sig);
    }

    // Wait for CMD's exit without reaping it: until we reap it, its pid
    // stays ours, so a signal sent after a loss can never hit another process.
    std::thread::spawn(move || {
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT;
        while let Err(nix::errno::Errno::EINTR) = waitid(Id::Pid(pid), flags) {}
        let _ = tx.send(Event::Exited);
    });

    let lost = match events.recv() {
        Ok(Event::Lost(e)) => Some(e),
        Ok(Event::Exited) | Err(_) => None,
    };
    if let Some(e) = lost {
        let late = guard.last_lateness();
        say(&format!("{}: {}", e.code(), exit::message(&e)));
        if fencing::defaults::is_pause(late, args.ttl) {
            say(&format!(
                "the keep-alive ran {} late: this process was paused past its lease",
                humantime::format_duration(Duration::from_millis(
                    u64::try_from(late.as_millis()).unwrap_or(u64::MAX)
                ))
            ));
        }
        say(&format!(
            "lease lost with token {token}: sending SIGTERM to {:?} (pid {pid})",
            args.command[0]
        ));
        target.signal(Signal::SIGTERM);
        if !exited_within(&events, args.grace) {
            say(&format!(
                "{:?} still running after {}: sending SIGKILL",
                args.command[0],
                humantime::format_duration(args.grace)
            ));
            target.signal(Signal::SIGKILL);
            exited_within(&events, Duration::MAX);
        }
        // Once reaped, CMD's pid may be reused: signals no longer go to it.
        set_phase(&phase, Phase::Starting(None));
        let status = child.wait();
        if let Ok(s) = status {
            say(&format!("{:?} ended: {}", args.command[0], describe(s)));
        }
        // Stopped for the loss: the work failed, and the verdict is the loss.
        let verdict = guard.finish(WorkOutcome::Failed).verdict().err();
        return Ok(exit::status_of(verdict.unwrap_or(e).code()));
    }

    set_phase(&phase, Phase::Starting(None));
    let status = child
        .wait()
        .map_err(|e| Failure::Other(format!("cannot wait for {:?}: {e}", args.command[0])))?;
    // The core's verdict decides (docs/semantics.md, "Ending a held lease"):
    // released, CMD's own status stands; lost, the loss wins.
    let end = guard.finish(WorkOutcome::from_failed(!status.success()));
    match end.verdict() {
        Ok(()) => Ok(shell_status(status)),
        Err(e) => {
            say(&format!("{}: {}", e.code(), exit::message(&e)));
            say(&format!(
                "the lease with token {token} was lost before {:?} ended ({})",
                args.command[0],
                describe(status)
            ));
            Ok(exit::status_of(e.code()))
        }
    }
}

fn set_phase(phase: &Mutex<Phase>, next: Phase) -> Phase {
    std::mem::replace(&mut *phase.lock().unwrap_or_else(|p| p.into_inner()), next)
}

fn exited_within(events: &mpsc::Receiver<Event>, limit: Duration) -> bool {
    loop {
        let event = if limit == Duration::MAX {
            events
                .recv()
                .map_err(|_| mpsc::RecvTimeoutError::Disconnected)
        } else {
            events.recv_timeout(limit)
        };
        match event {
            Ok(Event::Exited) | Err(mpsc::RecvTimeoutError::Disconnected) => return true,
            Ok(Event::Lost(_)) => continue,
            Err(mpsc::RecvTimeoutError::Timeout) => return false,
        }
    }
}

/// The status a shell would report: the exit code, or 128+N for signal N.
fn shell_status(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(255),
        (None, None) => 1,
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => match Signal::try_from(sig) {
            Ok(s) => format!("killed by {s}"),
            Err(_) => format!("killed by signal {sig}"),
        },
        _ => status.to_string(),
    }
}
