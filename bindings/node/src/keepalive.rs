//! `NativeKeepAlive`: the core's `LeaseGuard` as a JavaScript object. The
//! guard renews on its own thread (about every ttl/3, recording pauses in
//! the store's metrics); this object reads its state and releases it.

use std::sync::{Arc, Mutex, PoisonError};

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::errors::ErrorValue;
use crate::run;
use crate::types::Lease;

struct State {
    guard: Option<fencing::LeaseGuard>,
    /// The lease as last seen (kept once the guard is released).
    lease: fencing::Lease,
    /// Why the lease was lost, if it was before the release.
    lost: Option<fencing::Error>,
}

/// A lease held alive in the background. Made by `NativeStore.lease()`.
#[napi]
pub struct NativeKeepAlive {
    state: Arc<Mutex<State>>,
    inline: bool,
}

impl NativeKeepAlive {
    pub(crate) fn new(guard: fencing::LeaseGuard, inline: bool) -> NativeKeepAlive {
        let lease = guard.lease();
        NativeKeepAlive {
            state: Arc::new(Mutex::new(State {
                guard: Some(guard),
                lease,
                lost: None,
            })),
            inline,
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut state)
    }
}

#[napi]
impl NativeKeepAlive {
    /// The lease as last renewed.
    #[napi(getter, catch_unwind)]
    pub fn lease(&self) -> Lease {
        self.with(|s| match &s.guard {
            Some(g) => g.lease(),
            None => s.lease.clone(),
        })
        .into()
    }

    /// The error that ended the keep-alive (usually LEASE_LOST), or null
    /// while the lease is held.
    #[napi(getter, catch_unwind, ts_return_type = "Error | null")]
    pub fn lost(&self) -> Option<ErrorValue> {
        self.with(|s| match &s.guard {
            Some(g) => g.lost(),
            None => s.lost.clone(),
        })
        .map(ErrorValue)
    }

    /// Stops renewing and releases the lease; resolves to whether it was
    /// still current (false once lost, or when already released).
    #[napi(catch_unwind, ts_return_type = "Promise<boolean>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        let guard = self.with(|s| {
            let guard = s.guard.take();
            if let Some(g) = &guard {
                s.lease = g.lease();
                s.lost = g.lost();
            }
            guard
        });
        run::settle(
            env,
            self.inline || guard.is_none(),
            move || match guard {
                Some(g) => g.release(),
                None => Ok(false),
            },
            |_env, released| Ok(released),
        )
    }
}
