//! `NativeKeepAlive`: the core's `LeaseGuard` as a JavaScript object. The
//! guard renews on its own thread (about every ttl/3, recording pauses in
//! the store's metrics); this object reads its state and ends it through
//! the core's `finish`, whose verdict it only translates (docs/semantics.md,
//! "Ending a held lease").

use std::sync::{Arc, Mutex, PoisonError};

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use fencing::{LeaseEnd, WorkOutcome};

use crate::errors::{ErrorValue, Failure};
use crate::run;
use crate::store::OnLost;

/// The loss callback, shared by the guard's thread and this object.
pub(crate) type SharedOnLost = Arc<Mutex<OnLost>>;
use crate::types::Lease;

struct State {
    guard: Option<fencing::LeaseGuard>,
    /// The lease as last seen (kept once the guard has ended).
    lease: fencing::Lease,
    /// The verdict, once the guard has ended.
    end: Option<LeaseEnd>,
}

/// A lease held alive in the background. Made by `NativeStore.lease()`
/// and `NativeStore.keepAlive()`.
#[napi]
pub struct NativeKeepAlive {
    state: Arc<Mutex<State>>,
    inline: bool,
    /// The loss callback, which keeps the process alive while renewing;
    /// dropped when the guard ends, so that an ended lease does not.
    on_lost: Mutex<Option<SharedOnLost>>,
}

/// The verdict on a held lease: `released`, or the loss (`lost`), and
/// whether the work's error is to be attached to it as its cause.
#[napi(object, object_from_js = false)]
pub struct LeaseVerdict {
    pub released: bool,
    #[napi(ts_type = "Error | null")]
    pub lost: Option<ErrorValue>,
    pub attach_work_error: bool,
}

impl From<&LeaseEnd> for LeaseVerdict {
    fn from(end: &LeaseEnd) -> LeaseVerdict {
        LeaseVerdict {
            released: end.is_released(),
            lost: end.lost().cloned().map(ErrorValue),
            attach_work_error: end.attach_work_error(),
        }
    }
}

impl NativeKeepAlive {
    pub(crate) fn new(
        guard: fencing::LeaseGuard,
        inline: bool,
        on_lost: Option<SharedOnLost>,
    ) -> NativeKeepAlive {
        let lease = guard.lease();
        NativeKeepAlive {
            state: Arc::new(Mutex::new(State {
                guard: Some(guard),
                lease,
                end: None,
            })),
            inline,
            on_lost: Mutex::new(on_lost),
        }
    }

    fn on_lost_slot(&self) -> std::sync::MutexGuard<'_, Option<SharedOnLost>> {
        self.on_lost.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut state)
    }

    pub(crate) fn inline(&self) -> bool {
        self.inline
    }

    /// The writer for one call through the lease (the core checks the
    /// loss); once ended, the loss, or a refusal after a release.
    pub(crate) fn writer(&self) -> fencing::Result<fencing::LeaseWriter> {
        self.with(|s| match (&s.guard, &s.end) {
            (Some(g), _) => g.writer(),
            (None, Some(end)) => Err(end.lost().cloned().unwrap_or_else(|| {
                fencing::Error::InvalidArgument(
                    "the lease was released: nothing more is written through it".into(),
                )
            })),
            (None, None) => Err(fencing::Error::InvalidArgument(
                "the lease is being ended by another call".into(),
            )),
        })
    }

    /// Ends the guard through the core once; later calls get the same
    /// verdict, judged with their own work outcome.
    fn end<'env, T: napi::bindgen_prelude::ToNapiValue + 'static>(
        &self,
        env: &'env Env,
        work: WorkOutcome,
        translate: impl FnOnce(&Env, LeaseEnd) -> napi::Result<T> + 'static,
    ) -> napi::Result<PromiseRaw<'env, T>> {
        let (guard, earlier) = self.with(|s| {
            let guard = s.guard.take();
            if let Some(g) = &guard {
                s.lease = g.lease();
            }
            (guard, s.end.clone())
        });
        drop(self.on_lost_slot().take());
        let state = Arc::clone(&self.state);
        run::settle(
            env,
            self.inline || guard.is_none(),
            move || {
                Ok(match (guard, earlier) {
                    (Some(g), _) => {
                        let end = g.finish(work);
                        let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
                        s.end = Some(end.clone());
                        end
                    }
                    (None, Some(end)) => end.with_work(work),
                    (None, None) => {
                        return Err(fencing::Error::InvalidArgument(
                            "the lease is being ended by another call".into(),
                        ))
                    }
                })
            },
            translate,
        )
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

    /// The error that ended the keep-alive (usually LEASE_LOST), or the
    /// loss found at the end; null while the lease is held.
    #[napi(getter, catch_unwind, ts_return_type = "Error | null")]
    pub fn lost(&self) -> Option<ErrorValue> {
        self.with(|s| match &s.guard {
            Some(g) => g.lost(),
            None => s.end.as_ref().and_then(|e| e.lost().cloned()),
        })
        .map(ErrorValue)
    }

    /// Ends the held lease (stop renewing, release) and resolves to the
    /// core's verdict, judged with whether the work failed.
    #[napi(catch_unwind, ts_return_type = "Promise<LeaseVerdict>")]
    pub fn finish<'env>(
        &self,
        env: &'env Env,
        work_failed: bool,
    ) -> napi::Result<PromiseRaw<'env, LeaseVerdict>> {
        self.end(env, WorkOutcome::from_failed(work_failed), |_env, end| {
            Ok(LeaseVerdict::from(&end))
        })
    }

    /// Ends the held lease and resolves to true if it was held to the end,
    /// false if it was lost (or already ended); rejects with CLOSED or the
    /// store's failure when it could not be released.
    #[napi(catch_unwind, ts_return_type = "Promise<boolean>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        let first = self.with(|s| s.guard.is_some());
        if !first {
            return PromiseRaw::resolve(env, false);
        }
        self.end(env, WorkOutcome::Ok, |env, end| {
            end.released().map_err(|e| Failure::Core(e).into_napi(env))
        })
    }

    /// Stops the keep-alive from holding the process open (the lease is
    /// still renewed while the process runs).
    #[napi(catch_unwind)]
    pub fn unref(&self, env: Env) -> napi::Result<()> {
        match &*self.on_lost_slot() {
            Some(tsfn) => {
                let mut tsfn = tsfn.lock().unwrap_or_else(PoisonError::into_inner);
                #[allow(deprecated)] // napi 3's only unref (its function is not Clone)
                tsfn.unref(&env)
            }
            None => Ok(()),
        }
    }
}
