//! `NativeRejectionWatch`: the store's record of rejections, live
//! (`store.watchRejections()`; fencing.js makes it an async iterator). The
//! wait runs off the JavaScript thread and only waits; the rejection is
//! taken on the JavaScript thread (`pop`), so a wait given up loses none.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::cancel::NativeCancel;
use crate::run;
use crate::types::RecordedRejection;

#[napi]
pub struct NativeRejectionWatch {
    inner: Arc<Mutex<fencing::RejectionWatch>>,
}

impl NativeRejectionWatch {
    pub(crate) fn new(watch: fencing::RejectionWatch) -> Self {
        NativeRejectionWatch {
            inner: Arc::new(Mutex::new(watch)),
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
        let (inner, gave_up) = (self.inner.clone(), cancel.gave_up());
        run::settle(
            env,
            false,
            move || {
                let mut w = inner.lock().unwrap_or_else(PoisonError::into_inner);
                w.wait_unless(Duration::MAX, &gave_up)
            },
            |_env, pending| Ok(pending),
        )
    }

    /// The oldest pending rejection, or null, without waiting.
    #[napi(catch_unwind)]
    pub fn pop(&self) -> Option<RecordedRejection> {
        let mut w = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        w.pop().map(Into::into)
    }
}
