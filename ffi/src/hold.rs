//! `fencing_hold_start`: a lease kept alive by the core's guard (renewed about
//! every ttl/3 on a thread of its own, pauses counted in the store's
//! metrics), checked with `fencing_hold_check` and ended with
//! `fencing_hold_finish`, whose status is the core's verdict
//! (docs/semantics.md, "Ending a held lease").

use std::ffi::{c_char, c_void};

use fencing::{LeaseGuard, WorkOutcome};

use crate::args;
use crate::boundary::{boundary, boundary_or, Failure};
use crate::cancel::fencing_cancel;
use crate::status::fencing_status;
use crate::store::{self as stores, fencing_store};
use crate::types::{self, fencing_lease};

/// Called once, on the hold's own keep-alive thread (not the caller's),
/// when the lease is lost: `status` is why (LEASE_LOST, CLOSED or BACKEND),
/// `user_data` what `fencing_hold_start` was given. It must return promptly and
/// must not finish or free the hold; set a flag, and let the thread doing
/// the work call `fencing_hold_check` or `fencing_hold_finish`. Never called
/// once `fencing_hold_finish` has returned.
pub type fencing_on_lost =
    Option<unsafe extern "C" fn(status: fencing_status, user_data: *mut c_void)>;

/// A lease held alive in the background. Made by `fencing_hold_start`, ended and
/// freed by `fencing_hold_finish` (or `fencing_hold_free`). Any thread may
/// call `fencing_hold_check` and `fencing_hold_lease` on it at once.
pub struct fencing_hold {
    pub(crate) guard: LeaseGuard,
}

/// `user_data` crosses to the keep-alive thread: by `fencing_hold_start`'s
/// contract the caller made it safe to use from there.
struct UserData(*mut c_void);

impl UserData {
    /// A method, so that closures capture the whole (Send) wrapper.
    fn get(&self) -> *mut c_void {
        self.0
    }
}
// SAFETY: documented at `fencing_hold_start`: `user_data` must be usable from
// another thread; this library only passes it back to the callback.
unsafe impl Send for UserData {}
// SAFETY: as above; the pointer is only copied, never dereferenced here.
unsafe impl Sync for UserData {}

/// Acquires the scope's lease for `holder` (waiting up to `timeout_ms` of
/// real time when it is not 0, as `fencing_acquire_wait` does) and keeps it
/// alive until `fencing_hold_finish`; writes the new hold to `*out_hold`.
/// `on_lost` (may be NULL) is called with `user_data` on the keep-alive
/// thread if the lease is lost (see `fencing_on_lost`); `user_data` must be
/// usable from that thread. The hold keeps the store open for itself: the
/// store handle may be freed before the hold is finished. Fails like
/// `fencing_acquire` (LEASE_HELD, INVALID_ARGUMENT, TIMEOUT, ...), writing
/// nothing.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_hold_start(
    store: *const fencing_store,
    scope: *const c_char,
    holder: *const c_char,
    ttl_ms: u64,
    timeout_ms: u64,
    on_lost: fencing_on_lost,
    user_data: *mut c_void,
    out_hold: *mut *mut fencing_hold,
) -> fencing_status {
    boundary(|| {
        start(
            store, scope, holder, ttl_ms, timeout_ms, None, on_lost, user_data, out_hold,
        )
    })
}

/// `fencing_hold_start` whose wait another thread can end: once `cancel` is
/// fired (`fencing_cancel_fire`), the wait ends within about 20 ms with
/// TIMEOUT and no lease taken, as `fencing_acquire_wait_cancellable`'s does
/// (given a flag already fired, TIMEOUT at once). Waits up to `timeout_ms`
/// of real time (0: TIMEOUT unless the lease is free now).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_hold_start_cancellable(
    store: *const fencing_store,
    scope: *const c_char,
    holder: *const c_char,
    ttl_ms: u64,
    timeout_ms: u64,
    cancel: *const fencing_cancel,
    on_lost: fencing_on_lost,
    user_data: *mut c_void,
    out_hold: *mut *mut fencing_hold,
) -> fencing_status {
    boundary(|| {
        let cancel = Some(args::object(cancel, "cancel")?);
        start(
            store, scope, holder, ttl_ms, timeout_ms, cancel, on_lost, user_data, out_hold,
        )
    })
}

/// `fencing_hold_start` and its cancellable twin: checks the arguments,
/// then acquires (a wait `cancel` can end, when there is one) and writes
/// the hold.
#[allow(clippy::too_many_arguments)]
fn start(
    store: *const fencing_store,
    scope: *const c_char,
    holder: *const c_char,
    ttl_ms: u64,
    timeout_ms: u64,
    cancel: Option<&fencing_cancel>,
    on_lost: fencing_on_lost,
    user_data: *mut c_void,
    out_hold: *mut *mut fencing_hold,
) -> Result<(), Failure> {
    let store = stores::store(store)?;
    let scope = args::text(scope, "scope")?;
    let holder = args::text(holder, "holder")?;
    let out = args::out(out_hold, "out_hold")?;
    let (ttl, timeout) = (args::duration(ttl_ms), args::duration(timeout_ms));
    let on_lost = callback(on_lost, user_data);
    let guard = match cancel {
        Some(cancel) => {
            store.lease_wait_unless(scope, holder, ttl, timeout, on_lost, &|| cancel.fired())?
        }
        None => {
            let timeout = (timeout_ms != 0).then_some(timeout);
            store.lease_wait(scope, holder, ttl, timeout, on_lost)?
        }
    };
    out.set(Box::into_raw(Box::new(fencing_hold { guard })));
    Ok(())
}

/// Keeps alive a lease the caller already acquired (`fencing_acquire` and
/// the rest wrote `*lease`), as a hold: the same hold `fencing_hold_start`
/// makes, checked, written through and ended the same way. The hold counts
/// the lease's `remaining_ms` from this call, so make it right after the
/// acquire (or use `fencing_hold_start`): a lease held a while first may
/// be reported held for that long after the store let it expire. A lease
/// the store does not know is reported lost at the first renewal. A token
/// out of range, or a scope or holder that is not NUL-terminated UTF-8
/// within its array, is refused, writing nothing.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_keep_alive(
    store: *const fencing_store,
    lease: *const fencing_lease,
    on_lost: fencing_on_lost,
    user_data: *mut c_void,
    out_hold: *mut *mut fencing_hold,
) -> fencing_status {
    boundary(|| {
        let store = stores::store(store)?;
        let lease = types::lease_from(args::object(lease, "lease")?)?;
        let out = args::out(out_hold, "out_hold")?;
        let guard = match callback(on_lost, user_data) {
            Some(on_lost) => store.keep_alive_with(lease, on_lost),
            None => store.keep_alive(lease),
        };
        out.set(Box::into_raw(Box::new(fencing_hold { guard })));
        Ok(())
    })
}

/// The caller's loss callback as the core's, called with the status of the
/// loss and the caller's pointer.
fn callback(on_lost: fencing_on_lost, user_data: *mut c_void) -> Option<fencing::OnLost> {
    on_lost.map(|call| -> fencing::OnLost {
        let user_data = UserData(user_data);
        Box::new(move |e| {
            let status = fencing_status::from_code(e.code());
            // SAFETY: the caller's function, with the caller's pointer,
            // as `fencing_hold_start`'s contract says.
            unsafe { call(status, user_data.get()) }
        })
    })
}

/// FENCING_OK while the lease is held; once it is lost, the loss
/// (LEASE_LOST, CLOSED or BACKEND, details in `fencing_last_error`). Call it
/// before each protected step; write through the hold (`fencing_hold_put`
/// and the rest), which presents the lease's own scope and token.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_hold_check(hold: *const fencing_hold) -> fencing_status {
    boundary(|| {
        let hold = args::object(hold, "hold")?;
        hold.guard.check()?;
        Ok(())
    })
}

/// Writes the lease as last renewed (its token is the one to present) to
/// `*out_lease`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_hold_lease(
    hold: *const fencing_hold,
    out_lease: *mut fencing_lease,
) -> fencing_status {
    boundary(|| {
        let hold = args::object(hold, "hold")?;
        let out = args::out(out_lease, "out_lease")?;
        out.set(types::lease(&hold.guard.lease())?);
        Ok(())
    })
}

/// Ends the hold and frees it (also when the verdict is a loss): stops
/// renewing, releases, and returns the verdict. FENCING_OK: the lease was
/// held to the end and released. Otherwise the loss: LEASE_LOST (naming the
/// current lease in `fencing_last_error` when there is one), CLOSED, or
/// BACKEND when the release could not be made. A loss the keep-alive saw and
/// one found only at release are reported alike. `work_failed` says whether
/// the work done under the lease failed; `*out_attach_work_error` (may be
/// NULL) is set to whether the caller's own error belongs to this loss as
/// its cause: by the rule, the loss wins, and the work's error goes with
/// it. Waits for the verdict at most the store's call deadline, never
/// behind a hung renewal (docs/semantics.md, "Ending a held lease"). NULL
/// `hold` is NULL_PARAMETER and frees nothing.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_hold_finish(
    hold: *mut fencing_hold,
    work_failed: bool,
    out_attach_work_error: *mut bool,
) -> fencing_status {
    boundary(|| {
        let hold = take(hold)?;
        let end = hold.guard.finish(WorkOutcome::from_failed(work_failed));
        if let Ok(out) = args::out(out_attach_work_error, "out_attach_work_error") {
            out.set(end.attach_work_error());
        }
        end.verdict()?;
        Ok(())
    })
}

/// Takes back a hold the caller hands over for good.
fn take(hold: *mut fencing_hold) -> Result<Box<fencing_hold>, Failure> {
    args::object(hold.cast_const(), "hold")?;
    // SAFETY: non-NULL, and by the C contract a hold from
    // `fencing_hold_start`, ended once and used by no other call any more.
    Ok(unsafe { Box::from_raw(hold) })
}

/// Frees a hold without a verdict (NULL is a no-op): stops renewing and
/// releases the lease if it is still held, like dropping the guard. Returns
/// at once: the release runs in the background, bounded by the store's call
/// deadline (docs/semantics.md, "Ending a held lease").
#[unsafe(no_mangle)]
pub extern "C" fn fencing_hold_free(hold: *mut fencing_hold) {
    boundary_or((), || args::free_box(hold))
}
