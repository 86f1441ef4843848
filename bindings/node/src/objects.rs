//! `NativeObjects` (`openObjects(url)`): the fenced objects of
//! `fencing::objects` (docs/objects.md), with the store's conventions: a
//! path is converted as a key is, the options are the store's `put`'s, and
//! the receipts and errors are the same. Every rule is the core's. Calls run
//! the core's async objects on napi's tokio runtime (`run::settle_async`).

use std::future::Future;
use std::sync::{Mutex, MutexGuard, PoisonError};

use fencing::objects::aio::Objects;
use napi::bindgen_prelude::{PromiseRaw, ToNapiValue, Unknown};
use napi::Env;
use napi_derive::napi;

use crate::convert::{self, Js};
use crate::errors::Conv;
use crate::run;
use crate::store::write_options;
use crate::types::{Receipt, StoredObject};

/// A handle on fenced objects. Made by `openObjects()`.
#[napi]
pub struct NativeObjects {
    /// `None` once closed.
    objects: Mutex<Option<Objects>>,
}

/// Opens the fenced objects a URL names: `memory:`, `file:///DIR`,
/// `s3://BUCKET[/PREFIX]` or `az://CONTAINER[/PREFIX]` (docs/objects.md).
/// Resolves to a native handle.
#[napi(
    catch_unwind,
    ts_args_type = "url: string",
    ts_return_type = "Promise<NativeObjects>"
)]
pub fn open_objects<'env>(
    env: &'env Env,
    url: Unknown,
) -> napi::Result<PromiseRaw<'env, NativeObjects>> {
    let url = convert::text(env, url, "url").map_err(|f| f.into_napi(env))?;
    // A file:// URL reads its directory, an s3:// or az:// one the certificates.
    run::settle(
        env,
        false,
        move || Objects::open(&url),
        |_env, objects| {
            Ok(NativeObjects {
                objects: Mutex::new(Some(objects)),
            })
        },
    )
}

impl NativeObjects {
    fn state(&self) -> MutexGuard<'_, Option<Objects>> {
        self.objects.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Converts on this thread, then runs `work` with the objects (CLOSED
    /// once closed, after the same argument checks).
    fn call<'env, A, T, V, W, F, C>(
        &self,
        env: &'env Env,
        args: impl FnOnce() -> Conv<A>,
        work: W,
        convert: C,
    ) -> napi::Result<PromiseRaw<'env, V>>
    where
        A: Send + 'static,
        T: Send + 'static,
        V: ToNapiValue + 'static,
        W: FnOnce(Objects, A) -> F + Send + 'static,
        F: Future<Output = fencing::Result<T>> + Send + 'static,
        C: FnOnce(T) -> V + 'static,
    {
        let args = args().map_err(|f| f.into_napi(env))?;
        let objects = self.state().clone();
        run::settle_async(
            env,
            async move {
                match objects {
                    Some(objects) => work(objects, args).await,
                    None => Err(fencing::Error::Closed),
                }
            },
            move |_env, value| Ok(convert(value)),
        )
    }
}

fn js(env: &Env, v: &Unknown) -> Js {
    Js::new(env, v)
}

#[napi]
impl NativeObjects {
    #[napi(
        catch_unwind,
        ts_args_type = "path: string, value: Buffer | Uint8Array | string, options: WriteOptions",
        ts_return_type = "Promise<Receipt>"
    )]
    pub fn put<'env>(
        &self,
        env: &'env Env,
        path: Unknown,
        value: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Receipt>> {
        self.call(
            env,
            || {
                let path = convert::string(js(env, &path), "path")?;
                let value = convert::bytes(js(env, &value), "value")?;
                let (fence, version) = write_options(js(env, &options))?;
                Ok((path, value, fence, version))
            },
            |o, (path, value, fence, version)| async move {
                o.put(&path, &fence, &value, version).await
            },
            Receipt::from,
        )
    }

    #[napi(
        catch_unwind,
        ts_args_type = "path: string, options: WriteOptions",
        ts_return_type = "Promise<Receipt>"
    )]
    pub fn delete<'env>(
        &self,
        env: &'env Env,
        path: Unknown,
        options: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Receipt>> {
        self.call(
            env,
            || {
                let path = convert::string(js(env, &path), "path")?;
                let (fence, version) = write_options(js(env, &options))?;
                Ok((path, fence, version))
            },
            |o, (path, fence, version)| async move { o.delete(&path, &fence, version).await },
            Receipt::from,
        )
    }

    #[napi(
        catch_unwind,
        ts_args_type = "path: string",
        ts_return_type = "Promise<StoredObject | null>"
    )]
    pub fn get<'env>(
        &self,
        env: &'env Env,
        path: Unknown,
    ) -> napi::Result<PromiseRaw<'env, Option<StoredObject>>> {
        self.call(
            env,
            || convert::string(js(env, &path), "path"),
            |o, path| async move { o.get(&path).await },
            |object| object.map(StoredObject::from),
        )
    }

    /// Lets go of the objects; later calls reject with CLOSED. Calls already
    /// made finish.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let objects = self.state().take();
        run::settle(
            env,
            true,
            move || {
                drop(objects);
                Ok(())
            },
            |_env, ()| Ok(()),
        )
    }

    #[napi(getter, catch_unwind)]
    pub fn closed(&self) -> bool {
        self.state().is_none()
    }
}
