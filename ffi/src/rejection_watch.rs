//! `fencing_rejection_watch_open`: the store's record, live (the core's
//! `Store::watch_rejections`, docs/operations.md): each stale-token
//! rejection recorded after the watch began, oldest first, polled with
//! `fencing_rejection_watch_next`. A wait that ends with nothing new is not
//! a failure: FENCING_OK with `*out_events` NULL.

use std::ffi::c_char;
use std::ptr;

use fencing::RejectionWatch;

use crate::args;
use crate::boundary::{boundary, boundary_or, Failure};
use crate::cancel::fencing_cancel;
use crate::events::fencing_events;
use crate::status::fencing_status;
use crate::store::{self as stores, fencing_store};

/// A watch on the store's record of rejections
/// (`fencing_rejection_watch_open`), freed with `fencing_rejection_watch_free`.
/// It keeps the store open for itself: the store handle may be freed first.
/// Calls on one watch take turns, as on a `fencing_watch`; each rejection
/// goes to one call.
pub struct fencing_rejection_watch {
    turns: fencing::SharedWatch<RejectionWatch>,
}

/// Starts watching the rejections of `scope`, or of every scope when
/// `scope` is NULL, recorded from now on, and writes the new watch to
/// `*out_watch`. Fails like `fencing_events_snapshot` (INVALID_ARGUMENT for
/// an empty or oversized scope, CLOSED on a closed store), writing nothing.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_rejection_watch_open(
    store: *const fencing_store,
    scope: *const c_char,
    out_watch: *mut *mut fencing_rejection_watch,
) -> fencing_status {
    boundary(|| {
        let store = stores::store(store)?;
        let scope = args::optional_text(scope, "scope")?;
        let out = args::out(out_watch, "out_watch")?;
        let watch = store.watch_rejections(scope)?;
        out.set(Box::into_raw(Box::new(fencing_rejection_watch {
            turns: fencing::SharedWatch::new(watch),
        })));
        Ok(())
    })
}

/// Waits up to `timeout_ms` of real time (0: only what is pending or read
/// at once) for the next rejection. FENCING_OK with `*out_events` set: a new
/// snapshot holding that one rejection (read it with
/// `fencing_events_rejection(events, 0, &r)`, free it with
/// `fencing_events_free`). FENCING_OK with `*out_events` NULL: none came
/// within the timeout; call again. The store is read every 250 ms while
/// nothing is pending; its errors (CLOSED, BACKEND) are returned, and a
/// watch whose store failed yields nothing more. A watch that falls more
/// than 256 rows behind skips the rows overwritten meanwhile (their ids
/// show the gap).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_rejection_watch_next(
    watch: *const fencing_rejection_watch,
    timeout_ms: u64,
    out_events: *mut *mut fencing_events,
) -> fencing_status {
    boundary(|| next(watch, timeout_ms, None, out_events))
}

/// `fencing_rejection_watch_next` that another thread can end: once
/// `cancel` is fired (`fencing_cancel_fire`), the wait ends within about
/// 20 ms as a timeout does (FENCING_OK, `*out_events` NULL). No rejection is
/// lost: the next call carries on.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_rejection_watch_next_cancellable(
    watch: *const fencing_rejection_watch,
    timeout_ms: u64,
    cancel: *const fencing_cancel,
    out_events: *mut *mut fencing_events,
) -> fencing_status {
    boundary(|| {
        let cancel = args::object(cancel, "cancel")?;
        next(watch, timeout_ms, Some(&|| cancel.fired()), out_events)
    })
}

fn next(
    watch: *const fencing_rejection_watch,
    timeout_ms: u64,
    gave_up: Option<&dyn Fn() -> bool>,
    out_events: *mut *mut fencing_events,
) -> Result<(), Failure> {
    let watch = args::object(watch, "watch")?;
    let out = args::out(out_events, "out_events")?;
    out.set(
        match watch
            .turns
            .next(std::time::Duration::from_millis(timeout_ms), gave_up)?
        {
            Some(r) => Box::into_raw(Box::new(fencing_events::of_rejection(&r))),
            None => ptr::null_mut(),
        },
    );
    Ok(())
}

/// Frees a watch from `fencing_rejection_watch_open` (NULL is a no-op);
/// never while a `fencing_rejection_watch_next` on it still waits (end that
/// wait first, e.g. with `fencing_rejection_watch_next_cancellable`).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_rejection_watch_free(watch: *mut fencing_rejection_watch) {
    boundary_or((), || args::free_box(watch))
}
