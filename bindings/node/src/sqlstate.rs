//! Fencing's SQLSTATEs (class `FN`) as the package's errors, for callers who
//! run `SELECT fencing.check(scope, token)` in their own transaction through
//! their own driver. The mapping is the core's (`Error::from_sqlstate`);
//! `fromPostgresError` in fencing.js reads a driver's error and calls this.

use napi::bindgen_prelude::Unknown;
use napi::{Env, Result, ValueType};
use napi_derive::napi;

use crate::convert;
use crate::errors::ErrorValue;

/// The error a PostgreSQL error's SQLSTATE (`'FN001'`) and DETAIL (JSON;
/// `null`/`undefined` for none) describe, with its details as properties;
/// `null` for a SQLSTATE that is not fencing's. Returned, not thrown.
#[napi(
    catch_unwind,
    ts_args_type = "sqlstate: string, detail?: string | null",
    ts_return_type = "Error | null"
)]
pub fn error_from_sqlstate(
    env: &Env,
    sqlstate: Unknown,
    detail: Option<Unknown>,
) -> Result<Option<ErrorValue>> {
    let sqlstate = convert::text(env, sqlstate, "sqlstate").map_err(|f| f.into_napi(env))?;
    let detail = match detail {
        Some(d) if !matches!(d.get_type()?, ValueType::Null | ValueType::Undefined) => {
            Some(convert::text(env, d, "detail").map_err(|f| f.into_napi(env))?)
        }
        _ => None,
    };
    Ok(fencing::Error::from_sqlstate(&sqlstate, detail.as_deref()).map(ErrorValue))
}
