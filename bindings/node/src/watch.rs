//! The live watches, each made an async iterator by fencing.js:
//! `NativeRejectionWatch`, the store's record of rejections
//! (`store.watchRejections()`), and `NativeLeaseWatch`, who holds a scope's
//! lease (`store.watch(scope)`). The wait runs off the JavaScript thread and
//! only waits; the item is taken on the JavaScript thread (`pop`), so a wait
//! given up loses none.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use fencing::defaults::GIVE_UP_CHECK;
use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::cancel::NativeCancel;
use crate::run;
use crate::types::{Holding, RecordedRejection};

/// What both watches share. Waits take turns with the core's watch (one at
/// a time: a wait begun while another runs waits for its turn, giving up as
/// its cancel says); the items a wait finds go to `ready`, and `pop` takes
/// them from there. `pop` runs on the JavaScript thread, so it never waits
/// for a wait in flight: `ready` is locked only to move items in or out,
/// never across a wait.
struct Steps<W: fencing::Watch> {
    /// Locked only by the wait whose turn it is (so never contended).
    watch: Mutex<W>,
    /// What the waits found, oldest first, for `pop`.
    ready: Mutex<VecDeque<W::Item>>,
    /// Whether a wait has its turn.
    busy: Mutex<bool>,
    /// Told when a turn ends.
    turn_ended: Condvar,
}

/// A wait's turn with the watch: ended when dropped, panics included.
struct Turn<'a, W: fencing::Watch>(&'a Steps<W>);

impl<W: fencing::Watch> Drop for Turn<'_, W> {
    fn drop(&mut self) {
        *lock(&self.0.busy) = false;
        self.0.turn_ended.notify_one();
    }
}

/// A lock whose data no panic leaves half-written (a flag, a queue, or the
/// watch between two of its calls).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<W: fencing::Watch> Steps<W> {
    fn new(watch: W) -> Arc<Self> {
        Arc::new(Steps {
            watch: Mutex::new(watch),
            ready: Mutex::new(VecDeque::new()),
            busy: Mutex::new(false),
            turn_ended: Condvar::new(),
        })
    }

    /// Waits (off the JavaScript thread) until an item is ready, `timeout`
    /// passes or `gave_up()` says so; returns whether one is ready.
    fn wait(&self, timeout: Duration, gave_up: &dyn Fn() -> bool) -> fencing::Result<bool> {
        if self.is_ready() {
            return Ok(true);
        }
        let deadline = Instant::now().checked_add(timeout);
        let Some(_turn) = self.turn(deadline, gave_up) else {
            return Ok(self.is_ready());
        };
        // A wait that had the turn before this one may have found an item.
        if self.is_ready() {
            return Ok(true);
        }
        let mut watch = lock(&self.watch);
        let left = deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        });
        if !watch.wait_unless(left, gave_up)? {
            return Ok(self.is_ready());
        }
        let mut ready = lock(&self.ready);
        while let Some(item) = watch.pop() {
            ready.push_back(item);
        }
        Ok(!ready.is_empty())
    }

    /// The turn once no other wait has it; `None` when `deadline` passes or
    /// `gave_up()` says so first (asked every [`GIVE_UP_CHECK`], with no
    /// lock held).
    fn turn(&self, deadline: Option<Instant>, gave_up: &dyn Fn() -> bool) -> Option<Turn<'_, W>> {
        loop {
            {
                let mut busy = lock(&self.busy);
                if !*busy {
                    *busy = true;
                    return Some(Turn(self));
                }
                let left = deadline.map_or(Duration::MAX, |d| {
                    d.saturating_duration_since(Instant::now())
                });
                if left.is_zero() {
                    return None;
                }
                busy = self
                    .turn_ended
                    .wait_timeout(busy, left.min(GIVE_UP_CHECK))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                if !*busy {
                    *busy = true;
                    return Some(Turn(self));
                }
            }
            if gave_up() {
                return None;
            }
        }
    }

    fn is_ready(&self) -> bool {
        !lock(&self.ready).is_empty()
    }

    /// The oldest ready item, without waiting.
    fn pop(&self) -> Option<W::Item> {
        lock(&self.ready).pop_front()
    }
}

/// Both watches' `wait`: resolves whether an item is pending, once one is
/// or `cancel` fires.
fn wait<'env, W: fencing::Watch>(
    env: &'env Env,
    steps: &Arc<Steps<W>>,
    cancel: &NativeCancel,
) -> napi::Result<PromiseRaw<'env, bool>> {
    let (steps, gave_up) = (steps.clone(), cancel.gave_up());
    run::settle(
        env,
        false,
        move || steps.wait(Duration::MAX, &gave_up),
        |_env, pending| Ok(pending),
    )
}

#[napi]
pub struct NativeRejectionWatch {
    inner: Arc<Steps<fencing::RejectionWatch>>,
}

impl NativeRejectionWatch {
    pub(crate) fn new(watch: fencing::RejectionWatch) -> Self {
        NativeRejectionWatch {
            inner: Steps::new(watch),
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
    inner: Arc<Steps<fencing::LeaseWatch>>,
    scope: String,
}

impl NativeLeaseWatch {
    pub(crate) fn new(watch: fencing::LeaseWatch) -> Self {
        NativeLeaseWatch {
            scope: watch.scope().to_owned(),
            inner: Steps::new(watch),
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
