//! `fencing run` on unix: CMD in a process group of its own, termination
//! signals forwarded to it, SIGTERM then SIGKILL after a loss.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::{mpsc, Arc, Mutex};

use nix::sys::signal::{kill, killpg, signal, SigHandler, SigSet, Signal};
use nix::unistd::Pid;

use super::{Event, Phase};

/// A termination signal sent to `fencing run`.
pub type Sig = Signal;

/// What a loss does to CMD after `--grace`.
pub const KILL: &str = "sending SIGKILL";

/// Where signals for CMD go: its process group (the default), or only CMD
/// itself with `--foreground`.
#[derive(Clone, Copy)]
pub struct Target {
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

    /// Passes on a termination signal sent to `fencing run`.
    pub fn forward(self, sig: Sig) {
        self.signal(sig);
    }

    /// What [`Target::terminate`] does, as the report of a loss says it.
    pub fn terminating(self) -> &'static str {
        "sending SIGTERM to"
    }

    pub fn terminate(self) {
        self.signal(Signal::SIGTERM);
    }

    pub fn kill(self) {
        self.signal(Signal::SIGKILL);
    }

    pub fn pid(self) -> i32 {
        self.pid.as_raw()
    }
}

/// Blocks the termination signals in this process (every thread started
/// later inherits the mask; CMD gets a clean one) and passes each one that
/// arrives on to CMD, so that `fencing run` under a supervisor or at a
/// terminal stops CMD, then releases the lease.
///
/// Also ignores SIGPIPE (main restores its default action for the other
/// commands): a write to a closed stderr must never kill `fencing run`
/// while it holds a lease and supervises CMD; such writes fail, and are
/// dropped. CMD gets the default action back ([`prepare`]).
pub fn forward_signals(foreground: bool, phase: &Arc<Mutex<Phase>>) {
    // SAFETY: ignoring a signal installs no handler code.
    unsafe {
        let _ = signal(Signal::SIGPIPE, SigHandler::SigIgn);
    }
    let mut set = SigSet::empty();
    for sig in [
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
    ] {
        set.add(sig);
    }
    if set.thread_block().is_err() {
        return;
    }
    let shared = Arc::clone(phase);
    std::thread::spawn(move || loop {
        let Ok(sig) = set.wait() else { return };
        let mut phase = shared.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *phase {
            Phase::Opening => std::process::exit(i32::from(signal_status(sig))),
            // A second signal while the first waits for the call in flight
            // (up to the store's call deadline): exit now.
            Phase::Acquiring(Some(_)) => std::process::exit(i32::from(signal_status(sig))),
            Phase::Acquiring(gave_up) => *gave_up = Some(sig),
            Phase::Starting(pending) => *pending = Some(sig),
            // In the foreground, the terminal sends these to CMD itself
            // (CMD is in its process group): fencing outlives them, and
            // stays until CMD ends, then releases the lease.
            Phase::Running(_) if foreground && matches!(sig, Signal::SIGINT | Signal::SIGQUIT) => {}
            Phase::Running(target) => target.forward(sig),
        }
    });
}

/// `fencing run`'s status when a signal stopped it before CMD started: as a
/// shell reports a death by that signal.
pub fn signal_status(sig: Sig) -> u8 {
    u8::try_from(128 + sig as i32).unwrap_or(255)
}

/// CMD starts with no signal blocked, SIGPIPE at its default action (an
/// ignored signal stays ignored across exec) and, unless in the foreground,
/// in a process group of its own, so that a lost lease stops its children
/// too.
pub fn prepare(command: &mut Command, foreground: bool) {
    // SAFETY: between fork and exec the closure only calls
    // pthread_sigmask and sigaction, which are async-signal-safe, and
    // allocates nothing.
    unsafe {
        command.pre_exec(|| {
            signal(Signal::SIGPIPE, SigHandler::SigDfl).map_err(std::io::Error::from)?;
            // std does not reset the mask.
            SigSet::all().thread_unblock().map_err(std::io::Error::from)
        });
    }
    if !foreground {
        command.process_group(0);
    }
}

/// CMD, spawned: where its signals go.
pub fn started(child: &Child, foreground: bool) -> std::io::Result<Target> {
    Ok(Target {
        pid: Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX)),
        group: !foreground,
    })
}

/// Sends `Event::Exited` when CMD has exited, without reaping it: until we
/// reap it, its pid stays ours, so a signal sent after a loss can never hit
/// another process.
pub fn watch_exit(target: Target, tx: mpsc::Sender<Event>) {
    std::thread::spawn(move || {
        while let Err(nix::errno::Errno::EINTR) = wait_exited(target.pid) {}
        let _ = tx.send(Event::Exited);
    });
}

/// Waits until `pid` has exited and leaves it unreaped: `waitid` with
/// `WNOWAIT`, called through libc because nix offers `waitid` on Linux and
/// a few BSDs only, and macOS has it too.
fn wait_exited(pid: Pid) -> nix::Result<()> {
    use nix::libc;
    let id = libc::id_t::try_from(pid.as_raw()).map_err(|_| nix::errno::Errno::EINVAL)?;
    // SAFETY: a zeroed siginfo_t is a valid value (plain integers and a
    // union of them); waitid writes only `info`.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT) };
    nix::errno::Errno::result(rc).map(drop)
}

/// The status a shell would report: the exit code, or 128+N for signal N.
pub fn shell_status(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(255),
        (None, None) => 1,
    }
}

pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => match Signal::try_from(sig) {
            Ok(s) => format!("killed by {s}"),
            Err(_) => format!("killed by signal {sig}"),
        },
        _ => status.to_string(),
    }
}

/// Stops a process where it is (the demo's worker A): SIGSTOP.
pub fn pause(child: &Child) -> std::io::Result<()> {
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    kill(pid, Signal::SIGSTOP).map_err(std::io::Error::from)
}

/// Resumes a process [`pause`] stopped: SIGCONT.
pub fn resume(child: &Child) -> std::io::Result<()> {
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    kill(pid, Signal::SIGCONT).map_err(std::io::Error::from)
}

/// How the demo says it paused and resumed a worker.
pub const PAUSED_WITH: &str = "SIGSTOP";
pub const RESUMED_WITH: &str = "SIGCONT";
