//! Turning failures into JavaScript `Error` objects: `code` is the code
//! string, details are properties (64-bit numbers as `bigint`). The package's
//! `fencing.js` re-creates them as instances of its error classes; a marker
//! (`Symbol.for('fencing.native')`) tells it which errors came from here.

use std::ptr;

use fencing::{Detail, DetailKind, ErrorCode, Field};
use napi::bindgen_prelude::{Null, Object, ToNapiValue, TypeName, Unknown};
use napi::{check_status, sys, Env, ValueType};
use napi_derive::napi;

/// Every way an operation can fail before or inside the core.
pub(crate) enum Failure {
    /// An argument of the wrong JavaScript type: `TypeError`,
    /// `code: 'INVALID_ARGUMENT'`.
    Type(String),
    /// An argument of the right type but outside its domain (a lossy or
    /// negative number, a lone surrogate): `RangeError`,
    /// `code: 'INVALID_ARGUMENT'`.
    Range(String),
    /// The core refused or failed. Its `INVALID_ARGUMENT` is a `RangeError`.
    Core(fencing::Error),
    /// A JavaScript exception is already pending (a throwing getter on an
    /// options object), or napi itself failed: passed through unchanged.
    Napi(napi::Error),
}

impl From<napi::Error> for Failure {
    fn from(e: napi::Error) -> Failure {
        Failure::Napi(e)
    }
}

impl From<fencing::Error> for Failure {
    fn from(e: fencing::Error) -> Failure {
        Failure::Core(e)
    }
}

pub(crate) type Conv<T> = std::result::Result<T, Failure>;

impl Failure {
    /// The error napi throws (synchronously) or rejects with: the JavaScript
    /// error object itself, kept by reference.
    pub fn into_napi(self, env: &Env) -> napi::Error {
        if let Failure::Napi(e) = self {
            return e;
        }
        match unsafe { self.to_js(env.raw()) } {
            Ok(raw) => napi::Error::from(unsafe { Unknown::from_raw_unchecked(env.raw(), raw) }),
            Err(e) => e,
        }
    }

    /// Builds the JavaScript error object.
    ///
    /// # Safety
    /// `env` must be the current, live environment on the JavaScript thread.
    pub unsafe fn to_js(&self, env: sys::napi_env) -> napi::Result<sys::napi_value> {
        const INVALID: &str = "INVALID_ARGUMENT";
        match self {
            Failure::Type(message) => unsafe { make(env, Kind::Type, INVALID, message) },
            Failure::Range(message) => unsafe { make(env, Kind::Range, INVALID, message) },
            Failure::Core(e) => unsafe { core_error(env, e) },
            Failure::Napi(e) => Err(napi::Error::new(e.status, e.reason.clone())),
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Plain,
    Type,
    Range,
}

/// Creates `Error`/`TypeError`/`RangeError` with `code` and the marker.
unsafe fn make(
    env: sys::napi_env,
    kind: Kind,
    code: &str,
    message: &str,
) -> napi::Result<sys::napi_value> {
    let code_value = unsafe { <&str>::to_napi_value(env, code) }?;
    let message_value = unsafe { <&str>::to_napi_value(env, message) }?;
    let mut error = ptr::null_mut();
    check_status!(unsafe {
        match kind {
            Kind::Plain => sys::napi_create_error(env, code_value, message_value, &mut error),
            Kind::Type => sys::napi_create_type_error(env, code_value, message_value, &mut error),
            Kind::Range => sys::napi_create_range_error(env, code_value, message_value, &mut error),
        }
    })?;
    let marker = unsafe { marker_symbol(env) }?;
    let mut yes = ptr::null_mut();
    check_status!(unsafe { sys::napi_get_boolean(env, true, &mut yes) })?;
    check_status!(unsafe { sys::napi_set_property(env, error, marker, yes) })?;
    Ok(error)
}

/// `Symbol.for('fencing.native')`, looked up through the global object
/// (`node_api_symbol_for` needs Node-API 9; this works from 6 on).
unsafe fn marker_symbol(env: sys::napi_env) -> napi::Result<sys::napi_value> {
    let mut global = ptr::null_mut();
    check_status!(unsafe { sys::napi_get_global(env, &mut global) })?;
    let mut symbol = ptr::null_mut();
    check_status!(unsafe {
        sys::napi_get_named_property(env, global, c"Symbol".as_ptr(), &mut symbol)
    })?;
    let mut symbol_for = ptr::null_mut();
    check_status!(unsafe {
        sys::napi_get_named_property(env, symbol, c"for".as_ptr(), &mut symbol_for)
    })?;
    let name = unsafe { <&str>::to_napi_value(env, "fencing.native") }?;
    let mut marker = ptr::null_mut();
    check_status!(unsafe {
        sys::napi_call_function(env, symbol, symbol_for, 1, [name].as_ptr(), &mut marker)
    })?;
    Ok(marker)
}

/// The core's error with its details (`Error::details`) as properties,
/// named in camelCase (`currentToken`, `remainingMs`).
unsafe fn core_error(env: sys::napi_env, e: &fencing::Error) -> napi::Result<sys::napi_value> {
    let kind = match e {
        fencing::Error::InvalidArgument(_) => Kind::Range,
        _ => Kind::Plain,
    };
    let raw = unsafe { make(env, kind, e.code().as_str(), &e.to_string()) }?;
    let mut obj = Object::from_raw(env, raw);
    for (field, detail) in e.details() {
        let name = property_name(field);
        match detail {
            Detail::Text(t) => obj.set(name, t)?,
            Detail::Number(n) => obj.set(name, n)?,
            Detail::Duration(d) => obj.set(name, crate::types::millis(d))?,
            Detail::OptionalNumber(n) => obj.set(name, n)?,
            Detail::OptionalText(t) => obj.set(name, t)?,
        }
    }
    // A rejection known only by its code (SQLite's view): its code's
    // details are null, not invented.
    if let fencing::Error::Rejected { code, .. } = e {
        for field in code.fields() {
            obj.set(property_name(field), Null)?;
        }
    }
    Ok(raw)
}

/// A field's JavaScript name: its JSON name in camelCase.
fn property_name(field: Field) -> String {
    let mut words = field.json_name().split('_');
    let first = words.next().unwrap_or_default().to_owned();
    words.fold(first, |mut name, word| {
        let mut chars = word.chars();
        name.extend(chars.next().map(|c| c.to_ascii_uppercase()));
        name.push_str(chars.as_str());
        name
    })
}

fn kind_name(field: Field) -> String {
    match field.kind() {
        DetailKind::Text => "text",
        DetailKind::Number => "bigint",
        DetailKind::Duration => "ms",
        DetailKind::OptionalNumber => "bigint|null",
        DetailKind::OptionalText => "text|null",
    }
    .to_owned()
}

/// One code of the core's list, for `fencing.js` (which makes a class of
/// each) and the tests (which check that every field arrives).
#[napi(object)]
pub struct ErrorSchemaEntry {
    /// The code text: `'STALE_TOKEN'`.
    pub code: String,
    /// The class name: `'StaleTokenError'`.
    pub name: String,
    /// The details' property names: `['scope', 'presented', 'current']`.
    pub fields: Vec<String>,
    /// Each detail's kind, in the same order: `'text'`, `'bigint'`,
    /// `'ms'` (a number of milliseconds), `'bigint|null'`, `'text|null'`.
    pub kinds: Vec<String>,
}

/// Every error code with its class name and details, from the core.
#[napi]
pub fn error_schema() -> Vec<ErrorSchemaEntry> {
    ErrorCode::ALL
        .iter()
        .map(|&code| ErrorSchemaEntry {
            code: code.as_str().to_owned(),
            name: code.type_name().to_owned(),
            fields: code.fields().into_iter().map(property_name).collect(),
            kinds: code.fields().into_iter().map(kind_name).collect(),
        })
        .collect()
}

/// A core error handed to JavaScript as a value (a keep-alive's loss, passed
/// to the `onLost` callback or read from `lost`).
pub struct ErrorValue(pub fencing::Error);

impl TypeName for ErrorValue {
    fn type_name() -> &'static str {
        "Error"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for ErrorValue {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        unsafe { core_error(env, &val.0) }
    }
}

/// A panic inside the binding or the core: reported, never unwound into
/// Node. Not an outcome of the contract (docs/semantics.md, "Errors"), so
/// it carries the BACKEND code and says what
/// happened.
pub(crate) fn panicked(payload: &(dyn std::any::Any + Send)) -> fencing::Error {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    let kind = fencing::BackendErrorKind::Other;
    fencing::Error::backend(kind, format!("internal error (panic): {what}"))
}
