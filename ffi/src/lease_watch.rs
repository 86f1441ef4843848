//! `fencing_watch_open`: who holds a scope's lease, live (the core's
//! `Store::watch`): the lease as it is when the watch begins, then the lease
//! after each change (taken, renewed, released, expired), in order, polled
//! with `fencing_watch_next`. A wait that ends with nothing new is not a
//! failure: FENCING_OK with `*out_changed` false.

use std::ffi::c_char;

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
    turns: fencing::SharedWatch<LeaseWatch>,
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
            turns: fencing::SharedWatch::new(watch),
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
    match watch
        .turns
        .next(std::time::Duration::from_millis(timeout_ms), gave_up)?
    {
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
