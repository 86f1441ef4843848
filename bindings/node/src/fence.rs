//! `NativeFence` (`store.fence(scope, token)`): the hot path's shape. The
//! scope and the token are converted once, when the fence is made; each
//! write then converts only its key and value, runs the core's `execute`
//! with the same `Fence` the options-object `put` would build, and returns
//! just the new version (a bigint): `fencing.js` builds the receipt around
//! it with the fence's token, which is the token the write was accepted with
//! (docs/semantics.md, "The fenced store"). Every verdict is the core's, so
//! the errors are those of `store.put` with `{ token }`.

use napi::bindgen_prelude::{PromiseRaw, Unknown};
use napi::Env;
use napi_derive::napi;

use fencing::{Fence, Op, Token};

use crate::convert::{self, Js};
use crate::errors::{Conv, Failure};
use crate::run;
use crate::store::{closed_store, lock, store_of, Shared, State};

/// A scope and a token bound once; made by `NativeStore.fence`. Closing the
/// store it came from closes it too (its writes then fail with CLOSED).
#[napi]
pub struct NativeFence {
    state: Shared,
    inline: bool,
    scope: String,
    fence: Fence,
}

impl NativeFence {
    pub(crate) fn new(state: Shared, inline: bool, scope: String, token: Token) -> NativeFence {
        NativeFence {
            state,
            inline,
            scope,
            fence: Fence::new(token),
        }
    }

    fn put_op(env: &Env, key: &Unknown, value: &Unknown) -> Conv<Op> {
        let key = convert::string(Js::new(env, key), "key")?;
        let value = convert::bytes(Js::new(env, value), "value")?;
        Ok(Op::put(key, value))
    }
}

#[napi]
impl NativeFence {
    #[napi(getter, catch_unwind)]
    pub fn scope(&self) -> String {
        self.scope.clone()
    }

    #[napi(getter, catch_unwind)]
    pub fn token(&self) -> u64 {
        self.fence.token.get()
    }

    /// Whether the store runs its calls on the JavaScript thread (`memory:`),
    /// so that an awaited `put` may run as `putSync` does.
    #[napi(getter, catch_unwind)]
    pub fn inline(&self) -> bool {
        self.inline
    }

    /// `put` on the calling thread: the new version, or a throw.
    #[napi(
        catch_unwind,
        ts_args_type = "key: string, value: Buffer | Uint8Array | string",
        ts_return_type = "bigint"
    )]
    pub fn put_sync(&self, env: &Env, key: Unknown, value: Unknown) -> napi::Result<u64> {
        let op = Self::put_op(env, &key, &value).map_err(|f| f.into_napi(env))?;
        // Run under the handle's lock rather than on a clone of the store:
        // only the JavaScript thread takes it, and `close` waits for nothing.
        run::now(|| match &*lock(&self.state) {
            State::Open(store) => store.execute(&self.scope, &self.fence, op),
            State::Closed(_) => closed_store().execute(&self.scope, &self.fence, op),
        })
        .map(|receipt| receipt.version)
        .map_err(|e| Failure::Core(e).into_napi(env))
    }

    /// `put` where the store's calls run (the blocking pool on a durable
    /// backend): resolves to the new version.
    #[napi(
        catch_unwind,
        ts_args_type = "key: string, value: Buffer | Uint8Array | string",
        ts_return_type = "Promise<bigint>"
    )]
    pub fn put<'env>(
        &self,
        env: &'env Env,
        key: Unknown,
        value: Unknown,
    ) -> napi::Result<PromiseRaw<'env, u64>> {
        let op = Self::put_op(env, &key, &value).map_err(|f| f.into_napi(env))?;
        let store = store_of(&self.state);
        let scope = self.scope.clone();
        let fence = self.fence.clone();
        run::settle(
            env,
            self.inline,
            move || store.execute(&scope, &fence, op),
            |_env, receipt| Ok(receipt.version),
        )
    }
}
