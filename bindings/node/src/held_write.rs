//! Writes through a held lease (`HeldLease.put` and the rest): the core's
//! `LeaseWriter`, so the lease's own scope and token go with every call
//! (docs/semantics.md, "Writing through a held lease"). Arguments are
//! converted on the JavaScript thread; the loss check and the call follow
//! the store's own methods (`run::settle`, or `run::now` for `putSync`).

use napi::bindgen_prelude::{PromiseRaw, Unknown};
use napi::Env;
use napi_derive::napi;

use fencing::{LeaseWriter, Op};

use crate::convert::{self, Js};
use crate::errors::{Conv, Failure};
use crate::keepalive::NativeKeepAlive;
use crate::run;
use crate::types::{Entry, Receipt};

fn js(env: &Env, v: &Unknown) -> Js {
    Js::new(env, v)
}

/// `undefined` or `{ expectedVersion? }`.
fn expected_version(v: Js) -> Conv<Option<u64>> {
    match convert::options(v, "options", &["expectedVersion"], false)? {
        Some(o) => o.optional_number("expectedVersion"),
        None => Ok(None),
    }
}

fn with_version(op: Op, version: Option<u64>) -> Op {
    match version {
        Some(v) => op.if_version(v),
        None => op,
    }
}

fn put_op(env: &Env, key: &Unknown, value: &Unknown, options: &Unknown) -> Conv<Op> {
    let key = convert::string(js(env, key), "key")?;
    let value = convert::bytes(js(env, value), "value")?;
    let version = expected_version(js(env, options))?;
    Ok(with_version(Op::put(key, value), version))
}

impl NativeKeepAlive {
    /// Converts on this thread, then checks the lease and runs `work`
    /// through its writer where the store's calls run.
    fn through<'env, A, T, V, W, C>(
        &self,
        env: &'env Env,
        args: impl FnOnce() -> Conv<A>,
        work: W,
        convert: C,
    ) -> napi::Result<PromiseRaw<'env, V>>
    where
        A: Send + 'static,
        T: Send + 'static,
        V: napi::bindgen_prelude::ToNapiValue + 'static,
        W: FnOnce(&LeaseWriter, A) -> fencing::Result<T> + Send + 'static,
        C: FnOnce(T) -> V + 'static,
    {
        let args = args().map_err(|f| f.into_napi(env))?;
        let writer = self.writer();
        run::settle(
            env,
            self.inline(),
            move || work(&writer?, args),
            move |_env, value| Ok(convert(value)),
        )
    }
}

#[napi]
impl NativeKeepAlive {
    #[napi(
        catch_unwind,
        ts_args_type = "key: string, value: Buffer | Uint8Array | string, options?: { expectedVersion?: TokenLike }",
        ts_return_type = "Promise<Receipt>"
    )]
    pub fn put<'env>(
        &self,
        env: &'env Env,
        key: Unknown,
        value: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Receipt>> {
        self.through(
            env,
            || put_op(env, &key, &value, &options),
            |w, op| w.execute(op),
            Receipt::from,
        )
    }

    /// `put` on the calling thread, like `NativeStore.putSync`.
    #[napi(
        catch_unwind,
        ts_args_type = "key: string, value: Buffer | Uint8Array | string, options?: { expectedVersion?: TokenLike }",
        ts_return_type = "Receipt"
    )]
    pub fn put_sync(
        &self,
        env: &Env,
        key: Unknown,
        value: Unknown,
        options: Unknown,
    ) -> napi::Result<Receipt> {
        let op = put_op(env, &key, &value, &options).map_err(|f| f.into_napi(env))?;
        run::now(|| self.writer()?.execute(op))
            .map(Receipt::from)
            .map_err(|e| Failure::Core(e).into_napi(env))
    }

    #[napi(
        catch_unwind,
        ts_args_type = "key: string, options?: { expectedVersion?: TokenLike }",
        ts_return_type = "Promise<Receipt>"
    )]
    pub fn delete<'env>(
        &self,
        env: &'env Env,
        key: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Receipt>> {
        self.through(
            env,
            || {
                let key = convert::string(js(env, &key), "key")?;
                let version = expected_version(js(env, &options))?;
                Ok(with_version(Op::delete(key), version))
            },
            |w, op| w.execute(op),
            Receipt::from,
        )
    }

    #[napi(
        catch_unwind,
        ts_args_type = "ops: BatchOp[]",
        ts_return_type = "Promise<Receipt[]>"
    )]
    pub fn apply<'env>(
        &self,
        env: &'env Env,
        ops: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Vec<Receipt>>> {
        self.through(
            env,
            || convert::batch(js(env, &ops), "ops"),
            |w, ops| w.apply(ops),
            |receipts| receipts.into_iter().map(Receipt::from).collect(),
        )
    }

    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn claim<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        self.through(env, || Ok(()), |w, ()| w.claim(), |()| ())
    }

    #[napi(
        catch_unwind,
        ts_args_type = "key: string",
        ts_return_type = "Promise<Entry | null>"
    )]
    pub fn get<'env>(
        &self,
        env: &'env Env,
        key: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Option<Entry>>> {
        self.through(
            env,
            || convert::string(js(env, &key), "key"),
            |w, key| w.get(&key),
            |entry| entry.map(Entry::from),
        )
    }
}
