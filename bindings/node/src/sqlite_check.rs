//! The rejections of SQLite's `fencing_check` view as the package's errors,
//! for callers who fence their own tables with plain SQL through their own
//! driver (better-sqlite3, `node:sqlite`; docs/sqlite.md). The mapping is
//! the core's (`Error::from_sqlite_message`); `fromSqliteError` in
//! fencing.js reads a driver's error and calls this.

use napi::bindgen_prelude::Unknown;
use napi::{Env, Result};
use napi_derive::napi;

use crate::convert;
use crate::errors::ErrorValue;

/// The error an SQLite error message stands for when the `fencing_check`
/// view raised it (`'STALE_TOKEN: ...'`), its details `null` (the message
/// carries none); `null` for any other message. Returned, not thrown.
#[napi(
    catch_unwind,
    ts_args_type = "message: string",
    ts_return_type = "Error | null"
)]
pub fn error_from_sqlite_message(env: &Env, message: Unknown) -> Result<Option<ErrorValue>> {
    let message = convert::text(env, message, "message").map_err(|f| f.into_napi(env))?;
    Ok(fencing::Error::from_sqlite_message(&message).map(ErrorValue))
}
