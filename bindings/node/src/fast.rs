//! The synchronous write hot paths as plain N-API callbacks, each a
//! function bound to what it writes to: a store's `putSync` function (what
//! `store.putSync(scope, key, value, { token })` and, on `memory:`, the
//! awaited `put` run) and a fence's (`fence.putSync(key, value)`).
//!
//! They are made by hand (`napi_create_function`) rather than through
//! `#[napi]`: napi-rs wraps each call in an argument-vector allocation and a
//! borrow scope, a fifth of a fence write (perf, bench/put.js). Being bound
//! (their state is the function's N-API data), they take no handle to check,
//! which cost a fence write another 8%. Each still converts its arguments
//! with the same checks as the options-object path, in the same order
//! (`convert.rs`), and makes the same core call: every verdict is the core's.
//! The names are read into stack buffers and a `Buffer` value is lent to the
//! core, which copies what it keeps, so an accepted write allocates nothing
//! here. Each returns the new version (a bigint); `fencing.js` builds the
//! receipt.

use std::ffi::{c_void, CStr};
use std::mem::MaybeUninit;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::Arc;

use napi::bindgen_prelude::Unknown;
use napi::{check_status, sys, Env};

use fencing::{Fence, Receipt};

use crate::convert::{self, Js};
use crate::errors::{panicked, Conv, Failure};
use crate::fence::FenceCore;
use crate::store::{closed_store, lock, Shared, State};

/// A name (scope or key) of this many bytes or fewer is read without
/// allocating: the core's limit for keys is 1 KiB.
const NAME_BUFFER: usize = 1040;

type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

fn function(
    env: &Env,
    name: &CStr,
    cb: Callback,
    data: *mut c_void,
) -> napi::Result<sys::napi_value> {
    let mut f = ptr::null_mut();
    check_status!(unsafe {
        sys::napi_create_function(
            env.raw(),
            name.as_ptr(),
            name.count_bytes() as isize,
            Some(cb),
            data,
            &mut f,
        )
    })?;
    Ok(f)
}

/// A store's `putSync(scope, key, value, token)`: a function bound to the
/// store's state (shared with its handle, so closing the store closes it
/// too).
pub(crate) fn store_put_sync_function<'env>(
    env: &'env Env,
    state: Shared,
) -> napi::Result<Unknown<'env>> {
    bound(env, c"putSync", store_put_sync, state)
}

/// A fence's `putSync(key, value)`: a function bound to the fence.
pub(crate) fn fence_put_sync_function<'env>(
    env: &'env Env,
    fence: Arc<FenceCore>,
) -> napi::Result<Unknown<'env>> {
    bound(env, c"putSync", fence_put_sync, fence)
}

/// A function carrying `value` as its N-API data, freed when the function
/// is collected.
fn bound<'env, T: 'static>(
    env: &'env Env,
    name: &CStr,
    cb: Callback,
    value: T,
) -> napi::Result<Unknown<'env>> {
    let data = Box::into_raw(Box::new(value)).cast::<c_void>();
    let made = function(env, name, cb, data).and_then(|f| {
        check_status!(unsafe {
            sys::napi_add_finalizer(
                env.raw(),
                f,
                data,
                Some(free::<T>),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        })?;
        Ok(f)
    });
    match made {
        Ok(f) => Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), f) }),
        Err(e) => {
            // SAFETY: no function holds `data`, or none that will run.
            drop(unsafe { Box::from_raw(data.cast::<T>()) });
            Err(e)
        }
    }
}

unsafe extern "C" fn free<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the box `bound` made for a `T`, freed once.
    drop(unsafe { Box::from_raw(data.cast::<T>()) });
}

/// A store's `putSync(scope, key, value, token)`: the new version.
unsafe extern "C" fn store_put_sync(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    unsafe {
        call(env, info, |env, data, [scope, key, value, token]| {
            // SAFETY: the data of a function `store_put_sync_function`
            // made, alive while the function is.
            let state = &*data.cast::<Shared>();
            let mut scope_buf = [MaybeUninit::uninit(); NAME_BUFFER];
            let scope = convert::str_in(js(env, scope), "scope", &mut scope_buf)?;
            let mut key_buf = [MaybeUninit::uninit(); NAME_BUFFER];
            let key = convert::str_in(js(env, key), "key", &mut key_buf)?;
            let value = convert::bytes_in(js(env, value), "value")?;
            let fence = Fence::new(convert::token(js(env, token), "options.token")?);
            // SAFETY: no JavaScript ran since the value was read (a token is
            // read without calling into it, or refused).
            let value = value.get();
            put(state, &scope, &key, value, &fence)
        })
    }
}

/// A fence's `putSync(key, value)`: the new version.
unsafe extern "C" fn fence_put_sync(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    unsafe {
        call(env, info, |env, data, [key, value]| {
            // SAFETY: the data of a function `fence_put_sync_function` made,
            // alive while the function is.
            let fence = &*data.cast::<Arc<FenceCore>>();
            let mut key_buf = [MaybeUninit::uninit(); NAME_BUFFER];
            let key = convert::str_in(js(env, key), "key", &mut key_buf)?;
            let value = convert::bytes_in(js(env, value), "value")?;
            // SAFETY: nothing ran since the value was read.
            let value = value.get();
            put(&fence.state, &fence.scope, &key, value, &fence.fence)
        })
    }
}

/// The core's put, under the handle's lock rather than on a clone of the
/// store: only the JavaScript thread takes it, and `close` waits for
/// nothing.
fn put(state: &Shared, scope: &str, key: &str, value: &[u8], fence: &Fence) -> Conv<Receipt> {
    let outcome = match &*lock(state) {
        State::Open(store) => store.put(scope, key, value, fence),
        State::Closed(_) => closed_store().put(scope, key, value, fence),
    };
    Ok(outcome?)
}

fn js(env: sys::napi_env, raw: sys::napi_value) -> Js {
    Js::from_raw(env, raw)
}

/// Reads `N` arguments (missing ones are `undefined`), runs `body`, and
/// returns its version as a bigint or throws its failure; a panic becomes
/// the error `run::now` reports for one.
unsafe fn call<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    body: impl FnOnce(sys::napi_env, *mut c_void, [sys::napi_value; N]) -> Conv<Receipt>,
) -> sys::napi_value {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut argc = N;
        let mut argv = [ptr::null_mut(); N];
        let mut data = ptr::null_mut();
        check_status!(unsafe {
            sys::napi_get_cb_info(
                env,
                info,
                &mut argc,
                argv.as_mut_ptr(),
                ptr::null_mut(),
                &mut data,
            )
        })?;
        let receipt = body(env, data, argv)?;
        let mut out = ptr::null_mut();
        check_status!(unsafe { sys::napi_create_bigint_uint64(env, receipt.version, &mut out) })?;
        Ok(out)
    }));
    let failure = match outcome {
        Ok(Ok(out)) => return out,
        Ok(Err(failure)) => failure,
        Err(payload) => Failure::Core(panicked(&*payload)),
    };
    let error = failure.into_napi(&Env::from(env));
    unsafe { napi::JsError::from(error).throw_into(env) };
    ptr::null_mut()
}

/// A `Uint8Array`'s bytes, lent rather than copied, or a string's UTF-8.
pub(crate) enum Lent {
    View(*const u8, usize),
    Owned(Vec<u8>),
}

impl Lent {
    /// # Safety
    /// No JavaScript may have run since the view was read (it could have
    /// detached or shrunk the buffer).
    pub(crate) unsafe fn get(&self) -> &[u8] {
        match self {
            Lent::View(_, 0) => &[],
            // SAFETY: napi reported `len` bytes at `data`, alive while this
            // call runs on the JavaScript thread and no script ran since.
            Lent::View(data, len) => unsafe { std::slice::from_raw_parts(*data, *len) },
            Lent::Owned(v) => v,
        }
    }
}
