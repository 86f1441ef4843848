//! Where an operation runs, and how its outcome becomes a settled Promise.
//!
//! Durable backends run every operation on the blocking thread pool (tokio's
//! `spawn_blocking`, not libuv's four-thread pool, so a long `acquireWait`
//! never starves Node's own file system work): a slow disk never blocks the
//! event loop. The in-memory backend touches no disk and no network; its
//! operations take microseconds, so they run inline and hand back an
//! already-settled Promise. Either way the caller gets a Promise, and the
//! result is converted on the JavaScript thread. The core's async calls (the
//! fenced objects) run on the same runtime, as futures ([`settle_async`]).

use std::future::{poll_fn, Future};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::Poll;

use napi::bindgen_prelude::{spawn_blocking, PromiseRaw, ToNapiValue};
use napi::Env;

use crate::errors::{panicked, ErrorValue, Failure};

/// Runs `work` here and now (the synchronous methods), a panic becoming
/// the same error `settle` reports for one.
pub(crate) fn now<T>(work: impl FnOnce() -> fencing::Result<T>) -> fencing::Result<T> {
    catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|p| Err(panicked(&*p)))
}

pub(crate) fn settle<'env, T, V, W, C>(
    env: &'env Env,
    inline: bool,
    work: W,
    convert: C,
) -> napi::Result<PromiseRaw<'env, V>>
where
    T: Send + 'static,
    V: ToNapiValue + 'static,
    W: FnOnce() -> fencing::Result<T> + Send + 'static,
    C: FnOnce(&Env, T) -> napi::Result<V> + 'static,
{
    if inline {
        return match now(work) {
            Ok(value) => PromiseRaw::resolve(env, convert(env, value)?),
            Err(e) => PromiseRaw::reject(env, ErrorValue(e)),
        };
    }
    env.spawn_future_with_callback(
        async move {
            Ok(match spawn_blocking(work).await {
                Ok(outcome) => outcome,
                Err(join) => Err(match join.try_into_panic() {
                    Ok(p) => panicked(&*p),
                    Err(e) => fencing::Error::backend_from(
                        fencing::BackendErrorKind::Other,
                        format!("worker thread failed: {e}"),
                        e,
                    ),
                }),
            })
        },
        move |env, outcome| match outcome {
            Ok(value) => convert(env, value),
            Err(e) => Err(Failure::Core(e).into_napi(env)),
        },
    )
}

/// [`settle`] for a future of the core (`fencing::objects::aio`): it runs
/// on napi's tokio runtime, never on the JavaScript thread, and a panic in
/// it becomes the same error `settle` reports for one.
pub(crate) fn settle_async<'env, T, V, F, C>(
    env: &'env Env,
    work: F,
    convert: C,
) -> napi::Result<PromiseRaw<'env, V>>
where
    T: Send + 'static,
    V: ToNapiValue + 'static,
    F: Future<Output = fencing::Result<T>> + Send + 'static,
    C: FnOnce(&Env, T) -> napi::Result<V> + 'static,
{
    let mut work = Box::pin(work);
    let caught = poll_fn(move |cx| {
        catch_unwind(AssertUnwindSafe(|| work.as_mut().poll(cx)))
            .unwrap_or_else(|p| Poll::Ready(Err(panicked(&*p))))
    });
    env.spawn_future_with_callback(async move { Ok(caught.await) }, move |env, outcome| {
        match outcome {
            Ok(value) => convert(env, value),
            Err(e) => Err(Failure::Core(e).into_napi(env)),
        }
    })
}
