//! The live watches, each made an async iterator by fencing.js:
//! `NativeRejectionWatch`, the store's record of rejections
//! (`store.watchRejections()`), and `NativeLeaseWatch`, who holds a scope's
//! lease (`store.watch(scope)`). The wait runs off the JavaScript thread and
//! only waits; the item is taken on the JavaScript thread (`pop`), so a wait
//! given up loses none.

use std::sync::Arc;
use std::time::Duration;

use fencing::SharedWatch;
use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::cancel::NativeCancel;
use crate::run;
use crate::types::{Holding, RecordedRejection};

/// What both watches share: waits take turns with the core's watch, off
/// the JavaScript thread, and `pop`, on it, never waits for one in flight
/// (`fencing::SharedWatch`).
type Steps<W> = Arc<SharedWatch<W>>;

/// Both watches' `wait`: resolves whether an item is pending, once one is
/// or `cancel` fires.
fn wait<'env, W: fencing::Watch>(
    env: &'env Env,
    steps: &Steps<W>,
    cancel: &NativeCancel,
) -> napi::Result<PromiseRaw<'env, bool>> {
    let (steps, gave_up) = (steps.clone(), cancel.gave_up());
    run::settle(
        env,
        false,
        move || steps.wait(Duration::MAX, Some(&gave_up)),
        |_env, pending| Ok(pending),
    )
}

#[napi]
pub struct NativeRejectionWatch {
    inner: Steps<fencing::RejectionWatch>,
}

impl NativeRejectionWatch {
    pub(crate) fn new(watch: fencing::RejectionWatch) -> Self {
        NativeRejectionWatch {
            inner: Arc::new(SharedWatch::new(watch)),
        }
    }
}

#[napi]
impl NativeRejectionWatch {
    /// Waits until a rejection is pending or `cancel` fires; resolves
    /// whether one is.
    #[napi(catch_unwind, ts_return_type = "Promise<boolean>")]
    pub fn wait<'env>(
        &self,
        env: &'env Env,
        cancel: &NativeCancel,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        wait(env, &self.inner, cancel)
    }

    /// The oldest pending rejection, or null, without waiting.
    #[napi(catch_unwind)]
    pub fn pop(&self) -> Option<RecordedRejection> {
        self.inner.pop().map(Into::into)
    }
}

#[napi]
pub struct NativeLeaseWatch {
    inner: Steps<fencing::LeaseWatch>,
    scope: String,
}

impl NativeLeaseWatch {
    pub(crate) fn new(watch: fencing::LeaseWatch) -> Self {
        NativeLeaseWatch {
            scope: watch.scope().to_owned(),
            inner: Arc::new(SharedWatch::new(watch)),
        }
    }
}

#[napi]
impl NativeLeaseWatch {
    /// Waits until a change is pending or `cancel` fires; resolves whether
    /// one is.
    #[napi(catch_unwind, ts_return_type = "Promise<boolean>")]
    pub fn wait<'env>(
        &self,
        env: &'env Env,
        cancel: &NativeCancel,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        wait(env, &self.inner, cancel)
    }

    /// The pending holding, or null, without waiting.
    #[napi(catch_unwind)]
    pub fn pop(&self) -> Option<Holding> {
        self.inner.pop().map(Into::into)
    }

    /// The scope watched.
    #[napi(getter)]
    pub fn scope(&self) -> String {
        self.scope.clone()
    }
}
