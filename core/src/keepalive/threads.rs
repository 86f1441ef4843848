//! The guard's two threads. The renewer may block inside `store.renew` for
//! as long as the backend lets a call run; the watchdog never calls the
//! store, so it can judge the deadline and call `on_lost` meanwhile. Both
//! end on their own once the guard is lost or ended. Each says where it is
//! ([`Phase`]): ending the guard joins those that are not away in a call
//! that may block.

use std::sync::{Arc, MutexGuard};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use super::{log_lost, Phase, Shared, State};
use crate::error::Error;
use crate::rules::ttl_ms;
use crate::store::Store;
use crate::types::Lease;

/// The guard's two threads, while nobody has joined them.
pub(super) struct Handles {
    renewer: Option<JoinHandle<()>>,
    watchdog: Option<JoinHandle<()>>,
}

impl Handles {
    pub(super) fn started(&self) -> bool {
        self.renewer.is_some() && self.watchdog.is_some()
    }

    pub(super) fn is_watchdog(&self, thread: ThreadId) -> bool {
        self.watchdog
            .as_ref()
            .is_some_and(|w| w.thread().id() == thread)
    }

    /// Joins the threads that `exited` (renewer, watchdog) says returned:
    /// what is left of them is a return, so this does not wait. The others
    /// end on their own. In a forked child the handles name threads of
    /// the parent: they are left untouched.
    pub(super) fn finish(&mut self, exited: (bool, bool), forked: bool) {
        for (handle, exited) in [
            (self.renewer.take(), exited.0),
            (self.watchdog.take(), exited.1),
        ] {
            match handle {
                Some(handle) if forked => std::mem::forget(handle),
                // A panic in the thread was its own; nothing to report here.
                Some(handle) if exited => drop(handle.join()),
                _ => {}
            }
        }
    }
}

/// Starts the renewer and the watchdog. The first renewal is due
/// `interval` after `sent`, whenever the renewer gets to run. A thread
/// that cannot start counts as exited.
pub(super) fn spawn(store: &Store, shared: &Arc<Shared>, sent: Instant) -> Handles {
    let due = sent + interval(&shared.lock().lease);
    let renewer = {
        let (store, shared) = (store.clone(), Arc::clone(shared));
        std::thread::Builder::new()
            .name("fencing-keepalive".into())
            .spawn(move || {
                let exit = Exit(shared, |s| &mut s.renewer);
                // Declared after `exit`, so dropped before it, even in a
                // panic: an exited renewer holds no store.
                let store = store;
                renew_loop(&store, &exit.0, due);
            })
            .ok()
    };
    let watchdog = {
        let shared = Arc::clone(shared);
        std::thread::Builder::new()
            .name("fencing-keepalive-watch".into())
            .spawn(move || {
                let exit = Exit(shared, |s| &mut s.watchdog);
                watch(&exit.0);
            })
            .ok()
    };
    let mut s = shared.lock();
    if renewer.is_none() {
        s.renewer = Phase::Exited;
    }
    if watchdog.is_none() {
        s.watchdog = Phase::Exited;
    }
    Handles { renewer, watchdog }
}

/// Marks a thread `Exited` when it returns or unwinds.
struct Exit(Arc<Shared>, fn(&mut State) -> &mut Phase);

impl Drop for Exit {
    fn drop(&mut self) {
        *(self.1)(&mut self.0.lock()) = Phase::Exited;
        self.0.wake.notify_all();
    }
}

/// Unlocks the state for a call that may block (the store, a log
/// handler): the renewer is away until it locks the state again.
fn renewer_away(mut s: MutexGuard<'_, State>) {
    s.renewer = Phase::Away;
}

/// Locks the state again after [`renewer_away`].
fn renewer_back(shared: &Shared) -> MutexGuard<'_, State> {
    let mut s = shared.lock();
    s.renewer = Phase::Running;
    s
}

/// Until when a lease answered to a call sent at `sent` is surely live:
/// the store measured `remaining` after the call arrived.
pub(super) fn deadline(sent: Instant, lease: &Lease) -> Instant {
    // Out of range only for absurd values; then count it as expired.
    sent.checked_add(lease.remaining).unwrap_or(sent)
}

/// About ttl/3, or a third of what is left if that is less (a lease handed
/// to `keep_alive` some time after it was acquired).
fn interval(lease: &Lease) -> Duration {
    crate::defaults::renew_interval(lease.ttl.min(lease.remaining))
}

/// Waits for the deadline, records the loss, and tells `on_lost` once,
/// unless the guard ends first.
fn watch(shared: &Shared) {
    let mut s = shared.lock();
    let error = loop {
        if s.ended {
            return;
        }
        if let Some(error) = s.loss() {
            break error;
        }
        let left = s.deadline.saturating_duration_since(Instant::now());
        s = shared.wait(s, left);
    };
    let loss = s.unlogged_loss();
    // A log handler and the callback may block: not waited for.
    s.watchdog = Phase::Away;
    let Some(on_lost) = s.on_lost.take() else {
        drop(s);
        log_lost(loss);
        return;
    };
    s.calling = true;
    drop(s);
    log_lost(loss);
    // Cleared even if the callback panics, so that ending the guard does
    // not wait forever.
    let _calling = Calling(shared);
    on_lost(&error);
}

struct Calling<'a>(&'a Shared);

impl Drop for Calling<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.calling = false;
        // Only its return is left.
        s.watchdog = Phase::Running;
        drop(s);
        self.0.wake.notify_all();
    }
}

fn renew_loop(store: &Store, shared: &Shared, mut due: Instant) {
    let mut s = shared.lock();
    let ttl = s.lease.ttl;
    // Renewals that failed in a row, for the log.
    let mut failures = 0u32;
    loop {
        if s.ended {
            return;
        }
        let now = Instant::now();
        if now < due {
            if s.lost.is_some() {
                renewer_away(s);
                name_current_holder(store, shared);
                return;
            }
            s = shared.wait(s, due - now);
            continue;
        }
        // A pause (GC, SIGSTOP, VM suspend) shows up as a late wake-up;
        // recorded even when the pause cost the lease, measured after the
        // deadline was judged so that a pause in between still counts.
        let lost = s.loss().is_some();
        let lateness = Instant::now().saturating_duration_since(due);
        s.last_lateness = lateness;
        let lateness_ms = u64::try_from(lateness.as_millis()).unwrap_or(u64::MAX);
        store
            .metrics_sink()
            .renewal_lateness(lateness_ms, ttl_ms(ttl));
        if lost {
            shared.wake.notify_all();
            renewer_away(s);
            name_current_holder(store, shared);
            return;
        }
        let (scope, token) = (s.lease.scope.clone(), s.lease.token);
        renewer_away(s);
        if failures > 0 {
            tracing::debug!(target: "fencing", scope, token = token.get(), attempt = failures + 1, "retrying lease renewal");
        }
        let sent = Instant::now();
        let result = store.renew(&scope, token, ttl);
        s = renewer_back(shared);
        match result {
            Ok(lease) => {
                failures = 0;
                if gave_up(&mut s) {
                    // Too late: the holder ended the guard or was told the
                    // lease is gone. A lost guard releases nothing, so do
                    // not leave the lease this renewal extended in the next
                    // holder's way (an ended one released it itself).
                    let lost = s.lost.is_some();
                    renewer_away(s);
                    shared.wake.notify_all();
                    if lost {
                        let _ = store.release(&scope, token);
                    }
                    return;
                }
                s.deadline = deadline(sent, &lease);
                due = Instant::now() + interval(&lease);
                s.lease = lease;
            }
            Err(e @ (Error::LeaseLost { .. } | Error::Closed | Error::InvalidArgument(_))) => {
                if !gave_up(&mut s) {
                    s.lost = Some(e);
                }
                shared.wake.notify_all();
                return;
            }
            // Transient (a backend hiccup): retried at the next tick; the
            // watchdog ends it if the deadline passes first.
            Err(e) => {
                failures = failures.saturating_add(1);
                let retry_in = interval(&s.lease);
                due = Instant::now() + retry_in;
                let left = s.deadline.saturating_duration_since(Instant::now());
                let holder = s.lease.holder.clone();
                renewer_away(s);
                tracing::warn!(
                    target: "fencing",
                    scope,
                    token = token.get(),
                    holder = holder.as_str(),
                    failures,
                    retry_in_ms = retry_in.as_millis() as u64,
                    lease_left_ms = left.as_millis() as u64,
                    "lease renewal failed: {e}"
                );
                s = renewer_back(shared);
            }
        }
    }
}

/// Whether the guard ended or lost the lease (the deadline judged now)
/// while a renewal ran: its outcome must change nothing the holder sees.
fn gave_up(s: &mut State) -> bool {
    s.ended || s.loss().is_some()
}

/// A loss found by the deadline names nobody: the holder could not ask the
/// store in time. Asks once, now that the renewer is free to (a paused
/// process wakes to a store that answers), so that `check` and the verdict
/// name the lease current instead; a store that cannot tell leaves the
/// loss as it is.
fn name_current_holder(store: &Store, shared: &Shared) {
    let (scope, own) = {
        let s = shared.lock();
        match &s.lost {
            Some(Error::LeaseLost {
                scope,
                current: None,
            }) if !s.ended => (scope.clone(), s.lease.token),
            _ => return,
        }
    };
    let Ok(status) = store.status(&scope) else {
        return;
    };
    let Some(now) = status.lease.filter(|now| now.token != own) else {
        return;
    };
    if let Some(Error::LeaseLost {
        current: current @ None,
        ..
    }) = &mut shared.lock().lost
    {
        *current = Some((now.token, now.holder));
    }
}
