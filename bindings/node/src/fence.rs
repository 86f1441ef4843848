//! `NativeFence` (`store.fence(scope, token)`): the hot path's shape. The
//! scope and the token are converted once, when the fence is made; each
//! write then converts only its key and value, runs the core's `execute`
//! with the same `Fence` the options-object `put` would build, and returns
//! just the new version (a bigint): `fencing.js` builds the receipt around
//! it with the fence's token, which is the token the write was accepted with
//! (docs/semantics.md, "The fenced store"). Every verdict is the core's, so
//! the errors are those of `store.put` with `{ token }`.

use std::sync::Arc;

use napi::bindgen_prelude::{External, FromNapiRef, PromiseRaw, Unknown};
use napi::{Env, JsValue};
use napi_derive::napi;

use fencing::{Fence, Op, Token};

use crate::convert::{self, Js};
use crate::errors::{Conv, Failure};
use crate::store::{store_of, Shared};
use crate::{fast, run};

/// What a fence binds. Closing the store it came from closes it too (its
/// writes then fail with CLOSED).
pub struct FenceCore {
    pub(crate) state: Shared,
    inline: bool,
    pub(crate) scope: String,
    pub(crate) fence: Fence,
}

/// A fence as `store.fence` returns it: what it binds, and `handle`, which
/// the package passes to `fencePut`, and its bound `putSyncFunction`.
#[napi]
pub struct NativeFence {
    core: Arc<FenceCore>,
}

impl NativeFence {
    pub(crate) fn new(state: Shared, inline: bool, scope: String, token: Token) -> NativeFence {
        NativeFence {
            core: Arc::new(FenceCore {
                state,
                inline,
                scope,
                fence: Fence::new(token),
            }),
        }
    }
}

#[napi]
impl NativeFence {
    #[napi(getter, catch_unwind)]
    pub fn scope(&self) -> String {
        self.core.scope.clone()
    }

    #[napi(getter, catch_unwind)]
    pub fn token(&self) -> u64 {
        self.core.fence.token.get()
    }

    /// Whether the store runs its calls on the JavaScript thread (`memory:`),
    /// so that an awaited `put` may run as `putSync` does.
    #[napi(getter, catch_unwind)]
    pub fn inline(&self) -> bool {
        self.core.inline
    }

    /// The fence for `fencePut`, a free function taking it rather than a
    /// method: a napi-rs method registers a borrow of `this` on every call,
    /// some 17% of a fence write (perf, bench/put.js).
    #[napi(getter, catch_unwind, ts_return_type = "ExternalObject<'FenceCore'>")]
    pub fn handle(&self) -> External<Arc<FenceCore>> {
        External::new(self.core.clone())
    }

    /// `putSync(key, value)` bound to this fence (`fast.rs`): the same
    /// checks and core call as `store.putSync` with `{ token }`, and only
    /// the new version back.
    #[napi(
        getter,
        catch_unwind,
        ts_return_type = "(key: string, value: Buffer | Uint8Array | string) => bigint"
    )]
    pub fn put_sync_function<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        fast::fence_put_sync_function(env, self.core.clone())
    }
}

/// The fence behind a handle; anything else is a TypeError.
fn core<'a>(env: &Env, handle: &Unknown) -> Conv<&'a Arc<FenceCore>> {
    // SAFETY: `handle` is a value of this call's scope; the External's type
    // is checked (napi-rs compares its TypeId) before it is read.
    unsafe { <External<Arc<FenceCore>> as FromNapiRef>::from_napi_ref(env.raw(), handle.raw()) }
        .map(|external| &**external)
        .map_err(|_| Failure::Type("fence handle must be what store.fence made".into()))
}

fn put_op(env: &Env, key: &Unknown, value: &Unknown) -> Conv<Op> {
    let key = convert::string(Js::new(env, key), "key")?;
    let value = convert::bytes(Js::new(env, value), "value")?;
    Ok(Op::put(key, value))
}

/// A fence's `put` where the store's calls run (the blocking pool on a
/// durable backend): resolves to the new version.
#[napi(
    catch_unwind,
    ts_args_type = "handle: ExternalObject<'FenceCore'>, key: string, value: Buffer | Uint8Array | string",
    ts_return_type = "Promise<bigint>"
)]
pub fn fence_put<'env>(
    env: &'env Env,
    handle: Unknown,
    key: Unknown,
    value: Unknown,
) -> napi::Result<PromiseRaw<'env, u64>> {
    let (fence, op) = core(env, &handle)
        .and_then(|fence| Ok((fence.clone(), put_op(env, &key, &value)?)))
        .map_err(|f| f.into_napi(env))?;
    let store = store_of(&fence.state);
    run::settle(
        env,
        fence.inline,
        move || store.execute(&fence.scope, &fence.fence, op),
        |_env, receipt| Ok(receipt.version),
    )
}
