//! Holding a lease while work runs: renew in the background about every
//! ttl/3, tell the holder as soon as the lease is or may be gone, release at
//! the end (docs/semantics.md, Leases: Keep-alive).
//!
//! Loss is judged on this process's monotonic clock only: the lease is
//! surely live until `sent + remaining`, where `sent` is when the last
//! successful renewal (or the acquire) was sent and `remaining` is what the
//! store answered on its own clock. A renewal can block inside the backend
//! for as long as the backend lets it, so the renewer and the watchdog that
//! judges that deadline are two threads (`threads.rs`).

mod end;
mod threads;
mod write;

pub use end::{LeaseEnd, WorkOutcome};
pub use write::LeaseWriter;

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{BackendErrorKind, Error, Result};
use crate::store::Store;
use crate::token::Token;
use crate::types::Lease;

/// A loss callback: called once, on the guard's own thread.
pub type OnLost = Box<dyn Fn(&Error) + Send + Sync>;

struct State {
    lease: Lease,
    /// Until this instant the lease is live on the store's clock.
    deadline: Instant,
    lost: Option<Error>,
    /// Dropped or released: nothing more is renewed or reported.
    ended: bool,
    on_lost: Option<OnLost>,
    /// The watchdog is inside `on_lost`.
    calling: bool,
    /// How late the last renewal ran against its schedule.
    last_lateness: Duration,
    /// The process whose threads keep the lease alive.
    pid: u32,
    /// The loss was logged (once, by whoever sees it first).
    logged: bool,
    renewer: Phase,
    watchdog: Phase,
}

/// Where one of the guard's threads is, for ending the guard: a thread
/// that is `Running` returns as soon as it sees `ended` (it holds or is
/// about to take the state's lock, nothing else), so it is waited for and
/// joined; one that is `Away` may block (a store call, a log handler,
/// `on_lost`) and ends on its own later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Running,
    Away,
    Exited,
}

impl State {
    /// In a child forked from the guard's process: no thread of the guard
    /// runs here (docs/semantics.md, "Fork").
    fn forked(&self) -> bool {
        self.pid != std::process::id()
    }

    /// The loss, judging the deadline on the spot: whoever looks first
    /// records it, so it never depends on a thread having woken up.
    fn loss(&mut self) -> Option<Error> {
        let expired = Instant::now() >= self.deadline || self.forked();
        if self.lost.is_none() && !self.ended && expired {
            // The holder cannot know who holds the lease now.
            self.lost = Some(Error::LeaseLost {
                scope: self.lease.scope.clone(),
                current: None,
            });
        }
        self.lost.clone()
    }

    /// The loss, once, for the log: called with the state locked, logged
    /// after it is unlocked ([`log_lost`]).
    fn unlogged_loss(&mut self) -> Option<(Lease, Error)> {
        if self.logged || self.forked() {
            return None;
        }
        let lost = self.lost.clone()?;
        self.logged = true;
        Some((self.lease.clone(), lost))
    }
}

/// Logs a lost lease. Never with the state locked: a log handler may block
/// (Python's takes the GIL, whose holder may be waiting for that lock).
fn log_lost(loss: Option<(Lease, Error)>) {
    if let Some((lease, error)) = loss {
        tracing::warn!(
            target: "fencing",
            scope = lease.scope.as_str(),
            token = lease.token.get(),
            holder = lease.holder.as_str(),
            reason = error.code().as_str(),
            "lease lost: {error}"
        );
    }
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    /// The state, even after a panic elsewhere: it stays consistent, since
    /// no code panics while holding it (the callback runs without it).
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(
        &'a self,
        state: MutexGuard<'a, State>,
        at_most: Duration,
    ) -> MutexGuard<'a, State> {
        match self.wake.wait_timeout(state, at_most) {
            Ok((s, _)) => s,
            Err(p) => p.into_inner().0,
        }
    }
}

/// Keeps a lease alive until dropped (or [`LeaseGuard::release`]d). Check
/// [`LeaseGuard::check`] before each protected step, and write through the
/// guard ([`LeaseGuard::put`], `delete`, `apply`, `claim`, `get`), which
/// presents the lease's own scope and token: the fence, not this guard, is
/// what makes a stale write harmless.
pub struct LeaseGuard {
    store: Store,
    shared: Arc<Shared>,
    threads: threads::Handles,
    ended: bool,
}

impl LeaseGuard {
    /// Starts keeping `lease` alive; `sent` is when the call that produced
    /// it was sent (or, when unknown, now: see [`Store::keep_alive`]).
    pub(crate) fn start(
        store: Store,
        lease: Lease,
        sent: Instant,
        on_lost: Option<OnLost>,
    ) -> LeaseGuard {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                deadline: threads::deadline(sent, &lease),
                lease,
                lost: None,
                ended: false,
                on_lost,
                calling: false,
                last_lateness: Duration::ZERO,
                pid: std::process::id(),
                logged: false,
                renewer: Phase::Running,
                watchdog: Phase::Running,
            }),
            wake: Condvar::new(),
        });
        let threads = threads::spawn(&store, &shared, sent);
        if !threads.started() {
            let mut s = shared.lock();
            s.lost.get_or_insert(Error::backend(
                BackendErrorKind::Other,
                "could not start the keep-alive threads",
            ));
            shared.wake.notify_all();
        }
        LeaseGuard {
            store,
            shared,
            threads,
            ended: false,
        }
    }

    /// The lease as last renewed.
    pub fn lease(&self) -> Lease {
        self.shared.lock().lease.clone()
    }

    pub fn token(&self) -> Token {
        self.lease().token
    }

    pub fn is_lost(&self) -> bool {
        self.lost().is_some()
    }

    /// Why the lease was lost, if it was: `LEASE_LOST` (with `current: None`
    /// once the deadline passed without a successful renewal, even while one
    /// is still running, and in a process forked from the guard's, where
    /// nothing renews it), `CLOSED`, or the error that ended renewing.
    pub fn lost(&self) -> Option<Error> {
        let mut s = self.shared.lock();
        let known = s.lost.is_some();
        let lost = s.loss();
        if !known && lost.is_some() {
            self.shared.wake.notify_all();
        }
        lost
    }

    /// `Ok` while the lease is held; the loss (usually `LEASE_LOST`) after.
    pub fn check(&self) -> Result<()> {
        self.lost().map_or(Ok(()), Err)
    }

    /// How late the most recent renewal ran against its schedule.
    pub fn last_lateness(&self) -> Duration {
        self.shared.lock().last_lateness
    }

    /// Stops renewing (without waiting for a renewal in flight) and releases
    /// the lease with one backend call, bounded like any call (the store's
    /// call deadline); returns whether it was still current. A lease known
    /// lost (`LEASE_LOST`) is not released: `Ok(false)` at once.
    pub fn release(mut self) -> Result<bool> {
        match self.end() {
            Some(end) if end.releases() => self.store.release(&end.lease.scope, end.lease.token),
            _ => Ok(false),
        }
    }

    /// Ends the held lease: stops renewing, releases, and returns the one
    /// verdict every face translates (docs/semantics.md, "Ending a held
    /// lease"): released, or lost (`LEASE_LOST` naming the current lease
    /// when one is, `CLOSED`, or the backend's failure). A loss the
    /// keep-alive saw and one found only at release (`release` false) are
    /// reported alike. `work` is how the work under the lease ended; it
    /// changes no call made here, only which error the caller ends with
    /// ([`LeaseEnd::attach_work_error`]). Waits for the verdict at most the
    /// store's call deadline (`call_timeout_ms`, SQLite's busy timeout),
    /// counted from this call, never behind a hung renewal: a release still
    /// running then goes on in the background and the verdict is a
    /// `BACKEND` failure whose outcome is unknown.
    pub fn finish(mut self, work: WorkOutcome) -> LeaseEnd {
        match self.end() {
            Some(end) => LeaseEnd::judge(&self.store, end.lost, &end.lease, work),
            None => LeaseEnd::judge(&self.store, Some(Error::Closed), &self.lease(), work),
        }
    }

    /// Ends the guard once: the last lease and the loss seen, unless the
    /// guard already ended. Never waits for a renewal; waits only for an
    /// `on_lost` call already running, so that none runs after drop,
    /// release or finish return, and for the guard's threads that can end
    /// at once, so that none outlives the guard (with its clone of the
    /// store) unless it is blocked in a call.
    fn end(&mut self) -> Option<Ended> {
        if std::mem::replace(&mut self.ended, true) {
            return None;
        }
        let mut s = self.shared.lock();
        let lost = s.loss();
        s.ended = true;
        let on_lost = s.on_lost.take();
        self.shared.wake.notify_all();
        // In a forked child none of the threads runs.
        let forked = s.forked();
        if !forked {
            // On the watchdog's own thread (`on_lost` ending the guard) the
            // callback is this very call.
            if !self.threads.is_watchdog(std::thread::current().id()) {
                while s.calling {
                    s = self.shared.wait(s, Duration::from_secs(1));
                }
            }
            s = self.await_running_threads(s);
        }
        let exited = (s.renewer == Phase::Exited, s.watchdog == Phase::Exited);
        let lease = s.lease.clone();
        // A loss the watchdog had no time to log (it stops at `ended`).
        let loss = s.unlogged_loss();
        drop(s);
        self.threads.finish(exited, forked);
        drop(on_lost);
        log_lost(loss);
        Some(Ended { lease, lost })
    }

    /// Waits until neither thread is `Running`: each has exited or is away
    /// in a call it may block in. They exit within microseconds of seeing
    /// `ended`; the bound only keeps a bug from hanging the caller.
    fn await_running_threads<'a>(&'a self, mut s: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        let give_up = Instant::now() + Duration::from_secs(1);
        while s.renewer == Phase::Running || s.watchdog == Phase::Running {
            let left = give_up.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = self.shared.wait(s, left);
        }
        s
    }
}

/// What ending a guard found.
struct Ended {
    lease: Lease,
    lost: Option<Error>,
}

impl Ended {
    /// A lease known lost to `LEASE_LOST` is left alone (a newer holder's,
    /// or one this holder can no longer vouch for); other losses (`CLOSED`,
    /// a thread that did not start) still try.
    fn releases(&self) -> bool {
        !matches!(self.lost, Some(Error::LeaseLost { .. }))
    }
}

/// Dropping never waits for the store: the release runs on a thread of its
/// own, bounded by the store's call deadline, and is counted in the store's
/// metrics (`releases`) when it ends the lease (docs/semantics.md, "Ending
/// a held lease").
impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if let Some(end) = self.end().filter(Ended::releases) {
            end::release_in_background(&self.store, end.lease);
        }
    }
}
