//! `fencing run SCOPE --ttl 30s -- CMD ARGS...`: like flock(1), but fenced.
//! Holds the lease while CMD runs (the core's keep-alive renews it), gives
//! CMD the token in its environment, and stops CMD if the lease is lost.

use std::io::{ErrorKind, Write};
use std::process::Command;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use fencing::{Error, WorkOutcome};

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::verbs;

// How CMD is started, signalled, stopped and watched: process groups and
// signals on unix, a job object and console control events on Windows.
#[cfg(unix)]
#[path = "run/unix.rs"]
pub mod sys;
#[cfg(windows)]
#[path = "run/windows.rs"]
pub mod sys;

use sys::{describe, shell_status, Sig, Target};

pub enum Event {
    /// CMD has exited (not yet reaped, so its pid cannot be reused).
    Exited,
    Lost(Error),
}

fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "fencing: {line}");
}

/// Where `fencing run` is when a termination signal arrives.
pub enum Phase {
    /// Opening the store: nothing to clean up, exit at once.
    Opening,
    /// Acquiring: the first signal makes the acquire give up (a waiting one
    /// leaves its place in line), a lease taken anyway is released, and
    /// `fencing run` exits as the signal says ([`sys::signal_status`]); a
    /// second signal exits at once.
    Acquiring(Option<Sig>),
    /// Between acquiring and CMD's start: pass it on once CMD runs.
    Starting(Option<Sig>),
    Running(Target),
}

pub fn main(url_arg: Option<&str>, args: RunArgs) -> Result<u8, Failure> {
    let url = verbs::announced_url(url_arg)?;
    let scope = verbs::text("the scope", &args.scope)?.to_owned();
    let holder = verbs::holder(args.holder.as_deref())?;
    // Before any other thread starts, so that every thread blocks them.
    let phase = Arc::new(Mutex::new(Phase::Opening));
    sys::forward_signals(args.foreground, &phase);
    let store = verbs::open(&url)?;
    set_phase(&phase, Phase::Acquiring(None));

    let (tx, events) = mpsc::channel::<Event>();
    let on_lost = tx.clone();
    let on_lost: fencing::OnLost = Box::new(move |e| {
        let _ = on_lost.send(Event::Lost(e.clone()));
    });
    // The core's lease, not acquire then keep_alive: the keep-alive's first
    // deadline counts from when the acquire that took the lease was sent
    // (docs/semantics.md, "Keep-alive").
    let held = match args.wait {
        None => store.lease_wait(&scope, &holder, args.ttl, None, Some(on_lost)),
        Some(timeout) => verbs::with_progress(&scope, timeout, || {
            let gave_up = || matches!(&*lock(&phase), Phase::Acquiring(Some(_)));
            store.lease_wait_unless(&scope, &holder, args.ttl, timeout, Some(on_lost), &gave_up)
        }),
    };
    if let Phase::Acquiring(Some(sig)) = set_phase(&phase, Phase::Starting(None)) {
        // Given up: the wait has left its place in line; a lease that came
        // anyway is released before exiting (an exit would leave it held to
        // its TTL, with no CMD).
        if let Ok(guard) = held {
            let _ = guard.finish(WorkOutcome::Failed);
        }
        return Ok(sys::signal_status(sig));
    }
    let guard = held?;
    let token = guard.token();

    let mut command = Command::new(&args.command[0]);
    sys::prepare(&mut command, args.foreground);
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
    let target = match sys::started(&child, args.foreground) {
        Ok(target) => target,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            let _ = guard.finish(WorkOutcome::Failed);
            say(&format!("cannot run {:?}: {e}", args.command[0]));
            return Ok(126);
        }
    };
    let pid = target.pid();
    if let Phase::Starting(Some(sig)) = set_phase(&phase, Phase::Running(target)) {
        target.forward(sig);
    }
    sys::watch_exit(target, tx);

    let lost = match events.recv() {
        Ok(Event::Lost(e)) => Some(e),
        Ok(Event::Exited) | Err(_) => None,
    };
    if let Some(e) = lost {
        // CMD first: nothing printed may delay stopping it (stderr may be a
        // slow or closed pipe).
        target.terminate();
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
            "lease lost with token {token}: {} {:?} (pid {pid})",
            target.terminating(),
            args.command[0]
        ));
        if !exited_within(&events, args.grace) {
            say(&format!(
                "{:?} still running after {}: {}",
                args.command[0],
                humantime::format_duration(args.grace),
                sys::KILL
            ));
            target.kill();
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

fn lock(phase: &Mutex<Phase>) -> std::sync::MutexGuard<'_, Phase> {
    phase.lock().unwrap_or_else(|p| p.into_inner())
}

fn set_phase(phase: &Mutex<Phase>, next: Phase) -> Phase {
    std::mem::replace(&mut *lock(phase), next)
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
