//! Giving up a waiting call from another thread (docs/semantics.md, "Giving
//! up a call"): a flag the caller owns, fired from anywhere.

use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::args;
use crate::boundary::boundary_or;

/// A flag another thread fires to end a wait (`fencing_acquire_wait_cancellable`).
/// Safe to share between threads; one flag may serve many waits.
pub struct fencing_cancel {
    fired: AtomicBool,
}

impl fencing_cancel {
    pub(crate) fn fired(&self) -> bool {
        self.fired.load(Ordering::Acquire)
    }
}

/// A new flag, not fired; free it with `fencing_cancel_free` once no call
/// uses it. NULL only when memory runs out.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_cancel_new() -> *mut fencing_cancel {
    boundary_or(ptr::null_mut(), || {
        Box::into_raw(Box::new(fencing_cancel {
            fired: AtomicBool::new(false),
        }))
    })
}

/// Fires the flag, from any thread, any number of times: every wait given it
/// ends within about 20 ms with TIMEOUT, and takes no lease. It stays fired.
/// NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_cancel_fire(cancel: *const fencing_cancel) {
    boundary_or((), || {
        // SAFETY: by the C contract, NULL or a flag from
        // `fencing_cancel_new` that was not freed.
        if let Some(cancel) = unsafe { cancel.as_ref() } {
            cancel.fired.store(true, Ordering::Release);
        }
    })
}

/// Frees a flag from `fencing_cancel_new` (NULL is a no-op); never while a
/// call still waits with it.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_cancel_free(cancel: *mut fencing_cancel) {
    boundary_or((), || args::free_box(cancel))
}
