//! `fencing_watch_open`: who holds a scope's lease, live (the core's
//! `Store::watch`): the lease as it is when the watch begins, then the lease
//! after each change (taken, renewed, released, expired), in order, polled
//! with `fencing_watch_next`. A wait that ends with nothing new is not a
//! failure: FENCING_OK with `*out_changed` false.

use std::ffi::c_char;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use fencing::defaults::GIVE_UP_CHECK;
use fencing::{Holding, LeaseWatch};

use crate::args;
use crate::boundary::{boundary, boundary_or, Failure};
use crate::cancel::fencing_cancel;
use crate::status::fencing_status;
use crate::store::{self as stores, fencing_store};
use crate::types::{self, fencing_lease};
use crate::FENCING_SCOPE_CAPACITY;

/// A watch on one scope's lease (`fencing_watch_open`), freed with
/// `fencing_watch_free`. It keeps the store open for itself: the store
/// handle may be freed first. Calls on one watch take turns: a
/// `fencing_watch_next` made while another waits on the same watch waits
/// for its turn within its own timeout, and each state goes to one call.
pub struct fencing_watch {
    /// Locked only by the call whose turn it is (so never contended).
    watch: Mutex<LeaseWatch>,
    /// Whether a call has its turn.
    busy: Mutex<bool>,
    /// Told when a turn ends.
    ended: Condvar,
}

/// A call's turn with the watch: ended when dropped, panics included.
struct Turn<'a>(&'a fencing_watch);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *lock(&self.0.busy) = false;
        self.0.ended.notify_one();
    }
}

/// A lock whose data no panic leaves half-written (a flag, or the watch
/// between two of its calls).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl fencing_watch {
    /// The turn once no other call has it; `None` when `deadline` passes
    /// or `gave_up()` says so first (asked every [`GIVE_UP_CHECK`]; without
    /// it, the wait sleeps until a turn ends or the deadline).
    fn turn(
        &self,
        deadline: Option<Instant>,
        gave_up: Option<&dyn Fn() -> bool>,
    ) -> Option<Turn<'_>> {
        let mut busy = lock(&self.busy);
        loop {
            if !*busy {
                *busy = true;
                return Some(Turn(self));
            }
            let left = deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            });
            if left.is_zero() || gave_up.is_some_and(|g| g()) {
                return None;
            }
            let slice = match gave_up {
                Some(_) => left.min(GIVE_UP_CHECK),
                None => left,
            };
            busy = self
                .ended
                .wait_timeout(busy, slice)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// A scope's lease as a watch saw it (`fencing_watch_next`). Self-contained
/// like `fencing_lease`: no pointer, nothing to free.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fencing_holding {
    /// The scope watched, NUL-terminated UTF-8.
    pub scope: [c_char; FENCING_SCOPE_CAPACITY],
    /// Whether a lease is live; `lease` is meaningful only then (zeroed
    /// otherwise: never taken, released, expired, or ended by a failover
    /// step).
    pub has_lease: bool,
    pub lease: fencing_lease,
}

/// Starts watching `scope`'s lease and writes the new watch to
/// `*out_watch`; its first `fencing_watch_next` returns the lease as it is
/// then. Fails like the store's other calls on a scope (INVALID_ARGUMENT for
/// an empty or oversized scope, CLOSED on a closed store), writing nothing.
/// Free the watch with `fencing_watch_free`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_watch_open(
    store: *const fencing_store,
    scope: *const c_char,
    out_watch: *mut *mut fencing_watch,
) -> fencing_status {
    boundary(|| {
        let store = stores::store(store)?;
        let scope = args::text(scope, "scope")?;
        let out = args::out(out_watch, "out_watch")?;
        let watch = store.watch(scope)?;
        out.set(Box::into_raw(Box::new(fencing_watch {
            watch: Mutex::new(watch),
            busy: Mutex::new(false),
            ended: Condvar::new(),
        })));
        Ok(())
    })
}

/// Waits up to `timeout_ms` of real time (0: only what is pending or read at
/// once) for the next state of the watched lease. FENCING_OK with
/// `*out_changed` true: the next state is in `*out_holding` (the first call
/// gives the lease as it is). FENCING_OK with `*out_changed` false: nothing
/// changed within the timeout, and `*out_holding` is left alone; call again.
/// Changes closer together than the watch's reads are seen as the last of
/// them; every state given was the store's, in the store's order. A store
/// out of reach is asked again until the timeout, then its error (BACKEND)
/// is returned and the watch stays usable: the next call carries on from the
/// last state given. Other failures (CLOSED, ...) are the store's. A call
/// made while another waits on the watch waits for its turn within its own
/// timeout (FENCING_OK, `*out_changed` false when it does not come).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_watch_next(
    watch: *const fencing_watch,
    timeout_ms: u64,
    out_holding: *mut fencing_holding,
    out_changed: *mut bool,
) -> fencing_status {
    boundary(|| next(watch, timeout_ms, None, out_holding, out_changed))
}

/// `fencing_watch_next` that another thread can end: once `cancel` is fired
/// (`fencing_cancel_fire`), the wait ends within about 20 ms as a timeout
/// does (FENCING_OK, `*out_changed` false); given a flag already fired, it
/// returns so at once, without reading. No state is lost: the next call
/// reads the lease again. The watch stays usable.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_watch_next_cancellable(
    watch: *const fencing_watch,
    timeout_ms: u64,
    cancel: *const fencing_cancel,
    out_holding: *mut fencing_holding,
    out_changed: *mut bool,
) -> fencing_status {
    boundary(|| {
        let cancel = args::object(cancel, "cancel")?;
        next(
            watch,
            timeout_ms,
            Some(&|| cancel.fired()),
            out_holding,
            out_changed,
        )
    })
}

/// The next state, waited for until the timeout or until `gave_up()` says
/// so; without `gave_up` the wait sleeps until woken or the timeout.
fn next(
    watch: *const fencing_watch,
    timeout_ms: u64,
    gave_up: Option<&dyn Fn() -> bool>,
    out_holding: *mut fencing_holding,
    out_changed: *mut bool,
) -> Result<(), Failure> {
    let watch = args::object(watch, "watch")?;
    let out_holding = args::out(out_holding, "out_holding")?;
    let out_changed = args::out(out_changed, "out_changed")?;
    let timeout = args::duration(timeout_ms);
    let deadline = Instant::now().checked_add(timeout);
    let Some(_turn) = watch.turn(deadline, gave_up) else {
        out_changed.set(false);
        return Ok(());
    };
    let mut watch = lock(&watch.watch);
    let left = deadline.map_or(timeout, |d| d.saturating_duration_since(Instant::now()));
    let holding = match gave_up {
        None => watch.next_within(left)?,
        Some(gave_up) => {
            if watch.wait_unless(left, gave_up)? {
                watch.pop()
            } else {
                None
            }
        }
    };
    match holding {
        Some(holding) => {
            out_holding.set(holding_of(&holding)?);
            out_changed.set(true);
        }
        None => out_changed.set(false),
    }
    Ok(())
}

fn holding_of(h: &Holding) -> Result<fencing_holding, Failure> {
    let mut scope = [0 as c_char; FENCING_SCOPE_CAPACITY];
    // The scope was checked (1..=256 bytes of UTF-8, no NUL) when the watch began.
    for (dst, src) in scope.iter_mut().zip(h.scope.as_bytes()) {
        *dst = *src as c_char;
    }
    let (has_lease, lease) = match &h.lease {
        Some(l) => (true, types::lease(l)?),
        None => (false, types::no_lease()),
    };
    Ok(fencing_holding {
        scope,
        has_lease,
        lease,
    })
}

/// Frees a watch from `fencing_watch_open` (NULL is a no-op); never while a
/// `fencing_watch_next` on it still waits (end that wait first, e.g. with
/// `fencing_watch_next_cancellable`).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_watch_free(watch: *mut fencing_watch) {
    boundary_or((), || args::free_box(watch))
}
