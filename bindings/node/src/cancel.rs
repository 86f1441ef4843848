//! `NativeCancel`: the flag an `AbortSignal` sets (fencing.js), so that a
//! wait its caller gave up stops within 20 ms instead of running on to its
//! timeout and taking a lease nobody wants (docs/semantics.md, "Giving up a
//! call").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use napi_derive::napi;

#[napi]
#[derive(Default)]
pub struct NativeCancel {
    fired: Arc<AtomicBool>,
}

#[napi]
impl NativeCancel {
    #[napi(constructor)]
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives up every wait this flag was passed to.
    #[napi]
    pub fn fire(&self) {
        self.fired.store(true, Ordering::Release);
    }
}

impl NativeCancel {
    /// The question a waiting core call asks: has the caller given up?
    pub(crate) fn gave_up(&self) -> impl Fn() -> bool + Send + 'static {
        let fired = self.fired.clone();
        move || fired.load(Ordering::Acquire)
    }
}
