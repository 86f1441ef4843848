//! Node bindings of fencing: napi-rs glue over the core crate.
//!
//! Thin by design: every rule lives in the `fencing` crate. This crate only
//! converts JavaScript values to the core's types (tokens through the core's
//! own parser), runs each operation off the JavaScript thread (or, for the
//! in-memory backend, inline), and turns results and errors back into
//! JavaScript values. The package's `fencing.js` adds the error classes and
//! `withLease` on top; users never load this module directly.

#![deny(clippy::all)]

mod cancel;
mod convert;
mod errors;
mod fast;
mod fence;
mod held_write;
mod keepalive;
mod logs;
mod objects;
mod run;
mod sqlite_check;
mod sqlstate;
mod store;
mod types;
mod watch;

use napi::bindgen_prelude::{Unknown, *};
use napi_derive::napi;

pub use errors::{error_schema, ErrorSchemaEntry};
pub use fence::{fence_put, NativeFence};
pub use keepalive::NativeKeepAlive;
pub use logs::{set_log_callback, set_log_level};
pub use objects::{open_objects, NativeObjects};
pub use sqlite_check::error_from_sqlite_message;
pub use sqlstate::error_from_sqlstate;
pub use store::NativeStore;

/// The greatest token, 2^63-1.
#[napi]
pub const MAX_TOKEN: u64 = fencing::Token::MAX.get();

/// Parses the token text form (canonical decimal, `0|[1-9][0-9]*`, at most
/// 2^63-1) with the core's parser. `"0"` parses to `0n` ("none").
#[napi(catch_unwind, ts_args_type = "text: string", ts_return_type = "bigint")]
pub fn parse_token(env: &Env, text: Unknown) -> Result<u64> {
    let text = convert::text(env, text, "token text").map_err(|f| f.into_napi(env))?;
    fencing::parse_token_value(&text).map_err(|e| errors::Failure::Core(e).into_napi(env))
}

/// Opens the store a URL names (`memory:`, `sqlite:PATH`, `postgres://...`,
/// with options in the query; docs/semantics.md, "URLs and options"). Resolves to a native store handle.
#[napi(
    catch_unwind,
    ts_args_type = "url: string",
    ts_return_type = "Promise<NativeStore>"
)]
pub fn open<'env>(env: &'env Env, url: Unknown) -> Result<PromiseRaw<'env, NativeStore>> {
    let url = convert::text(env, url, "url").map_err(|f| f.into_napi(env))?;
    // `memory:` never touches disk or network and never blocks for long: its
    // operations run inline and return settled promises. Every other backend
    // runs on the blocking thread pool.
    let inline = fencing::BackendKind::of_url(&url) == Ok(fencing::BackendKind::Memory);
    run::settle(
        env,
        inline,
        move || fencing::Store::open(&url),
        move |_env, store| Ok(NativeStore::new(store, inline)),
    )
}

/// Creates or upgrades the schema of the store a URL names, without opening
/// a store (deploy time: `fencing.check` and `fencing_check` then work before
/// any process opened the store). Idempotent; `memory:` has no schema.
#[napi(
    catch_unwind,
    ts_args_type = "url: string",
    ts_return_type = "Promise<void>"
)]
pub fn migrate<'env>(env: &'env Env, url: Unknown) -> Result<PromiseRaw<'env, ()>> {
    let url = convert::text(env, url, "url").map_err(|f| f.into_napi(env))?;
    run::settle(
        env,
        false,
        move || fencing::migrate(&url),
        |_env, ()| Ok(()),
    )
}
