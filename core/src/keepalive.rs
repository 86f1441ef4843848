//! Holding a lease while work runs: renew in the background about every
//! ttl/3, tell the holder when renewal fails, release at the end.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::rules::ttl_ms;
use crate::store::Store;
use crate::token::Token;
use crate::types::Lease;

pub(crate) type OnLost = Box<dyn Fn(&Error) + Send + Sync>;

struct State {
    lease: Lease,
    lost: Option<Error>,
    stopping: bool,
    /// How late the last renewal ran against its schedule.
    last_lateness: Duration,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

/// Keeps a lease alive until dropped (or [`LeaseGuard::release`]d). Check
/// [`LeaseGuard::check`] before each protected step, and always present
/// [`LeaseGuard::token`] with the writes: the fence, not this guard, is
/// what makes a stale write harmless.
pub struct LeaseGuard {
    store: Store,
    shared: Arc<Shared>,
    worker: Option<JoinHandle<()>>,
}

impl LeaseGuard {
    pub(crate) fn start(store: Store, lease: Lease, on_lost: Option<OnLost>) -> LeaseGuard {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                lease,
                lost: None,
                stopping: false,
                last_lateness: Duration::ZERO,
            }),
            wake: Condvar::new(),
        });
        let worker = {
            let (store, shared) = (store.clone(), Arc::clone(&shared));
            std::thread::Builder::new()
                .name("fencing-keepalive".into())
                .spawn(move || renew_loop(&store, &shared, on_lost))
                .ok()
        };
        let guard = LeaseGuard {
            store,
            shared,
            worker,
        };
        if guard.worker.is_none() {
            guard.mark_lost(Error::Backend(
                "could not start the keep-alive thread".into(),
            ));
        }
        guard
    }

    fn mark_lost(&self, error: Error) {
        if let Ok(mut s) = self.shared.state.lock() {
            s.lost.get_or_insert(error);
        }
    }

    /// The lease as last renewed.
    pub fn lease(&self) -> Lease {
        self.shared
            .state
            .lock()
            .map(|s| s.lease.clone())
            .unwrap_or_else(|p| p.into_inner().lease.clone())
    }

    pub fn token(&self) -> Token {
        self.lease().token
    }

    pub fn is_lost(&self) -> bool {
        self.lost().is_some()
    }

    /// Why the lease was lost, if it was.
    pub fn lost(&self) -> Option<Error> {
        self.shared.state.lock().ok().and_then(|s| s.lost.clone())
    }

    /// `Ok` while the lease is held; the loss (usually `LEASE_LOST`) after.
    pub fn check(&self) -> Result<()> {
        self.lost().map_or(Ok(()), Err)
    }

    /// How late the most recent renewal ran against its schedule.
    pub fn last_lateness(&self) -> Duration {
        self.shared
            .state
            .lock()
            .map(|s| s.last_lateness)
            .unwrap_or_default()
    }

    /// Stops renewing and releases the lease; returns whether it was still
    /// current.
    pub fn release(mut self) -> Result<bool> {
        self.stop();
        let lease = self.lease();
        self.store.release(&lease.scope, lease.token)
    }

    fn stop(&mut self) {
        if let Ok(mut s) = self.shared.state.lock() {
            s.stopping = true;
        }
        self.shared.wake.notify_all();
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if self.worker.is_some() {
            self.stop();
            let lease = self.lease();
            let _ = self.store.release(&lease.scope, lease.token);
        }
    }
}

fn renew_loop(store: &Store, shared: &Shared, on_lost: Option<OnLost>) {
    let Ok(mut state) = shared.state.lock() else {
        return;
    };
    let ttl = state.lease.ttl;
    let interval = (ttl / 3).max(Duration::from_millis(1));
    let mut due = Instant::now() + interval;
    loop {
        if state.stopping {
            return;
        }
        let now = Instant::now();
        if now < due {
            state = match shared.wake.wait_timeout(state, due - now) {
                Ok((s, _)) => s,
                Err(_) => return,
            };
            continue;
        }
        // A pause (GC, SIGSTOP, VM suspend) shows up as a late wake-up.
        let lateness = now - due;
        state.last_lateness = lateness;
        let lateness_ms = u64::try_from(lateness.as_millis()).unwrap_or(u64::MAX);
        store
            .metrics_sink()
            .renewal_lateness(lateness_ms, ttl_ms(ttl));
        let (scope, token) = (state.lease.scope.clone(), state.lease.token);
        drop(state);
        let result = store.renew(&scope, token, ttl);
        state = match shared.state.lock() {
            Ok(s) => s,
            Err(_) => return,
        };
        let error = match result {
            Ok(lease) => {
                state.lease = lease;
                due = Instant::now() + interval;
                continue;
            }
            Err(e) => e,
        };
        // Transient failures are retried while the lease may still be live;
        // LEASE_LOST, CLOSED or an expired deadline end the keep-alive.
        let expired = std::time::SystemTime::now() >= state.lease.expires_at;
        let fatal = matches!(
            error,
            Error::LeaseLost { .. } | Error::Closed | Error::InvalidArgument(_)
        );
        if fatal || expired {
            state.lost = Some(error.clone());
            drop(state);
            if let Some(callback) = &on_lost {
                callback(&error);
            }
            return;
        }
        due = Instant::now() + interval;
    }
}
