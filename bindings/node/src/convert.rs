//! JavaScript values in: type and losslessness checks only. Every domain
//! rule (token range, sizes, TTL bounds, ...) is the core's; token text goes
//! through the core's parser.
//!
//! - wrong JavaScript type (including `undefined` and `null` where a value
//!   is required): `TypeError`, `code: 'INVALID_ARGUMENT'`;
//! - right type, but not representable without loss (a `number` that is not
//!   a safe integer, a negative or over-64-bit `bigint`, a string with a lone
//!   surrogate): `RangeError`, `code: 'INVALID_ARGUMENT'`.

use std::borrow::Cow;
use std::mem::MaybeUninit;
use std::ptr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use napi::bindgen_prelude::Unknown;
use napi::{sys, Env, JsValue, ValueType};

use crate::errors::{Conv, Failure};
use crate::fast::Lent;

/// Strings up to this many UTF-16 units are transcoded in one pass.
const SHORT_STRING: usize = 256;

/// The largest integer a JavaScript `number` holds exactly (2^53-1).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// A JavaScript value with the environment it lives in.
#[derive(Clone, Copy)]
pub(crate) struct Js {
    env: sys::napi_env,
    raw: sys::napi_value,
}

impl Js {
    pub fn new(env: &Env, value: &Unknown) -> Js {
        Js {
            env: env.raw(),
            raw: value.raw(),
        }
    }

    pub fn from_raw(env: sys::napi_env, raw: sys::napi_value) -> Js {
        Js { env, raw }
    }

    fn kind(self) -> Conv<ValueType> {
        let mut t = 0;
        napi::check_status!(unsafe { sys::napi_typeof(self.env, self.raw, &mut t) })?;
        Ok(ValueType::from(t))
    }

    pub fn is_undefined(self) -> Conv<bool> {
        Ok(self.kind()? == ValueType::Undefined)
    }

    /// Whether an object has a property (own or inherited).
    fn has(self, name: &str) -> Conv<bool> {
        let key = std::ffi::CString::new(name).map_err(|_| Failure::Type(name.to_owned()))?;
        let mut out = false;
        napi::check_status!(unsafe {
            sys::napi_has_named_property(self.env, self.raw, key.as_ptr(), &mut out)
        })?;
        Ok(out)
    }

    /// A property of an object (`undefined` when missing).
    fn property(self, name: &str) -> Conv<Js> {
        let key = std::ffi::CString::new(name).map_err(|_| Failure::Type(name.to_owned()))?;
        let mut out = ptr::null_mut();
        napi::check_status!(unsafe {
            sys::napi_get_named_property(self.env, self.raw, key.as_ptr(), &mut out)
        })?;
        Ok(Js {
            env: self.env,
            raw: out,
        })
    }
}

/// How a value's type reads in messages.
fn describe(t: ValueType) -> &'static str {
    match t {
        ValueType::Undefined => "undefined",
        ValueType::Null => "null",
        ValueType::Boolean => "a boolean",
        ValueType::Number => "a number",
        ValueType::String => "a string",
        ValueType::Symbol => "a symbol",
        ValueType::Object => "an object",
        ValueType::Function => "a function",
        ValueType::External => "an external",
        ValueType::BigInt => "a bigint",
        _ => "a value of unknown type",
    }
}

fn wrong_type(what: &str, expected: &str, got: ValueType) -> Failure {
    Failure::Type(format!("{what} must be {expected}, got {}", describe(got)))
}

pub(crate) fn text(env: &Env, value: Unknown, what: &str) -> Conv<String> {
    string(Js::new(env, &value), what)
}

/// A JavaScript string as UTF-8. A lone surrogate (which UTF-8 cannot
/// carry) is refused rather than replaced, so that two different strings
/// never name the same scope or key.
pub(crate) fn string(v: Js, what: &str) -> Conv<String> {
    let t = v.kind()?;
    if t != ValueType::String {
        return Err(wrong_type(what, "a string", t));
    }
    // One transcoding pass for short strings (a UTF-16 unit is at most three
    // UTF-8 bytes); an exact-size buffer for long ones (values).
    let mut units = 0usize;
    napi::check_status!(unsafe {
        sys::napi_get_value_string_utf16(v.env, v.raw, ptr::null_mut(), 0, &mut units)
    })?;
    let len = if units <= SHORT_STRING {
        units * 3
    } else {
        let mut len = 0usize;
        napi::check_status!(unsafe {
            sys::napi_get_value_string_utf8(v.env, v.raw, ptr::null_mut(), 0, &mut len)
        })?;
        len
    };
    let mut buf = vec![0u8; len + 1];
    let mut written = 0usize;
    napi::check_status!(unsafe {
        sys::napi_get_value_string_utf8(
            v.env,
            v.raw,
            buf.as_mut_ptr().cast(),
            len + 1,
            &mut written,
        )
    })?;
    buf.truncate(written);
    let s = String::from_utf8(buf)
        .map_err(|_| Failure::Range(format!("{what} is not well-formed Unicode")))?;
    // V8 writes U+FFFD for a lone surrogate; only then look at the UTF-16.
    if s.contains('\u{FFFD}') && has_lone_surrogate(v)? {
        return Err(lone_surrogate(what));
    }
    Ok(s)
}

/// [`string`], read into `buf` when it fits (no allocation): the same
/// checks and messages, for the hot paths (`fast.rs`).
pub(crate) fn str_in<'b>(v: Js, what: &str, buf: &'b mut [MaybeUninit<u8>]) -> Conv<Cow<'b, str>> {
    let mut written = 0usize;
    let status = unsafe {
        sys::napi_get_value_string_utf8(
            v.env,
            v.raw,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut written,
        )
    };
    if status != sys::Status::napi_ok {
        // Not a string (or napi failed): the exact path says which.
        return string(v, what).map(Cow::Owned);
    }
    // V8 writes whole characters (at most 4 bytes each) and keeps one byte
    // for the NUL: with 4 bytes of room left, nothing was cut off.
    if buf.len() - 1 - written < 4 {
        return string(v, what).map(Cow::Owned);
    }
    // SAFETY: napi wrote `written` bytes (and a NUL after them).
    let utf8 = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), written) };
    let s = std::str::from_utf8(utf8)
        .map_err(|_| Failure::Range(format!("{what} is not well-formed Unicode")))?;
    // U+FFFD is EF BF BD: no 0xEF byte, no replacement character.
    if utf8.contains(&0xEF) && s.contains('\u{FFFD}') && has_lone_surrogate(v)? {
        return Err(lone_surrogate(what));
    }
    Ok(Cow::Borrowed(s))
}

fn lone_surrogate(what: &str) -> Failure {
    Failure::Range(format!(
        "{what} is not well-formed Unicode (it contains a lone surrogate)"
    ))
}

fn has_lone_surrogate(v: Js) -> Conv<bool> {
    let mut len = 0usize;
    napi::check_status!(unsafe {
        sys::napi_get_value_string_utf16(v.env, v.raw, ptr::null_mut(), 0, &mut len)
    })?;
    let mut units = vec![0u16; len + 1];
    let mut written = 0usize;
    napi::check_status!(unsafe {
        sys::napi_get_value_string_utf16(v.env, v.raw, units.as_mut_ptr(), len + 1, &mut written)
    })?;
    units.truncate(written);
    Ok(char::decode_utf16(units).any(|c| c.is_err()))
}

/// A number of the token domain (token, seq, version, floor), without loss:
/// a `bigint` in `0..2^64`, canonical decimal text (the core's parser), or
/// a `number` that is a non-negative safe integer. Range is the core's
/// business (a token must be `1..=2^63-1`, a seq at most 2^63-1, ...).
pub(crate) fn number(v: Js, what: &str) -> Conv<u64> {
    match v.kind()? {
        ValueType::BigInt => {
            // One word read in place: `count` comes back as the number of
            // words the bigint needs (0 for 0n), so more than one is 2^64
            // or above.
            let mut sign = 0;
            let mut count = 1usize;
            let mut value = 0u64;
            napi::check_status!(unsafe {
                sys::napi_get_value_bigint_words(v.env, v.raw, &mut sign, &mut count, &mut value)
            })?;
            if sign != 0 {
                return Err(Failure::Range(format!("{what} must not be negative")));
            }
            if count > 1 {
                return Err(Failure::Range(format!(
                    "{what} is above 2^64 and outside the token domain"
                )));
            }
            Ok(value)
        }
        ValueType::String => {
            let text = string(v, what)?;
            Ok(fencing::parse_token_value(&text)?)
        }
        ValueType::Number => safe_integer(v, what, "pass a bigint or a decimal string"),
        // A lease (or a HeldLease) where its token goes: name the fix.
        ValueType::Object if v.has("token")? => Err(Failure::Type(format!(
            "{what} must be a bigint, a decimal string or a safe integer, \
             got a lease: pass lease.token"
        ))),
        other => Err(wrong_type(
            what,
            "a bigint, a decimal string or a safe integer",
            other,
        )),
    }
}

/// A `number` that `Number.isSafeInteger` accepts and that is not negative;
/// `fix` says what to pass instead (it depends on what the argument takes).
fn safe_integer(v: Js, what: &str, fix: &str) -> Conv<u64> {
    let mut x = 0f64;
    napi::check_status!(unsafe { sys::napi_get_value_double(v.env, v.raw, &mut x) })?;
    if !x.is_finite() || x.trunc() != x || x.abs() > MAX_SAFE_INTEGER {
        return Err(Failure::Range(format!(
            "{what} {x} is not a safe integer: {fix}"
        )));
    }
    if x < 0.0 {
        return Err(Failure::Range(format!(
            "{what} must not be negative, got {x}"
        )));
    }
    Ok(x as u64)
}

/// A token: as [`number`], then the core's range (`1..=2^63-1`).
pub(crate) fn token(v: Js, what: &str) -> Conv<fencing::Token> {
    Ok(fencing::Token::try_from_u64(number(v, what)?)?)
}

/// A duration in milliseconds: a non-negative safe integer `number` (or a
/// `bigint`). Bounds are the core's.
pub(crate) fn millis(v: Js, what: &str) -> Conv<Duration> {
    Ok(Duration::from_millis(unsigned(
        v,
        what,
        "a number of milliseconds",
        "pass a whole number of milliseconds",
    )?))
}

/// A count (a list limit): a non-negative safe integer `number` (or a
/// `bigint`). Bounds are the core's.
pub(crate) fn count(v: Js, what: &str) -> Conv<u64> {
    unsigned(v, what, "a number", "pass a whole number")
}

fn unsigned(v: Js, what: &str, expected: &str, fix: &str) -> Conv<u64> {
    match v.kind()? {
        ValueType::Number => safe_integer(v, what, fix),
        ValueType::BigInt => number(v, what),
        other => Err(wrong_type(what, expected, other)),
    }
}

/// Bytes: a `Buffer`/`Uint8Array` (copied) or a string (as UTF-8).
pub(crate) fn bytes(v: Js, what: &str) -> Conv<Vec<u8>> {
    match v.kind()? {
        ValueType::String => Ok(string(v, what)?.into_bytes()),
        ValueType::Object => {
            let mut is_typed = false;
            napi::check_status!(unsafe { sys::napi_is_typedarray(v.env, v.raw, &mut is_typed) })?;
            if is_typed {
                let mut kind = 0;
                let mut len = 0usize;
                let mut data = ptr::null_mut();
                let mut buffer = ptr::null_mut();
                let mut offset = 0usize;
                napi::check_status!(unsafe {
                    sys::napi_get_typedarray_info(
                        v.env,
                        v.raw,
                        &mut kind,
                        &mut len,
                        &mut data,
                        &mut buffer,
                        &mut offset,
                    )
                })?;
                if kind == sys::TypedarrayType::uint8_array {
                    if len == 0 || data.is_null() {
                        return Ok(Vec::new());
                    }
                    // SAFETY: napi reports `len` bytes at `data`, alive while
                    // this call runs on the JavaScript thread.
                    let slice = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
                    return Ok(slice.to_vec());
                }
            }
            Err(Failure::Type(format!(
                "{what} must be a Buffer, a Uint8Array or a string"
            )))
        }
        other => Err(wrong_type(
            what,
            "a Buffer, a Uint8Array or a string",
            other,
        )),
    }
}

/// [`bytes`], with a `Uint8Array`'s bytes lent rather than copied, for the
/// hot paths (`fast.rs`): the same checks and messages.
pub(crate) fn bytes_in(v: Js, what: &str) -> Conv<Lent> {
    let mut kind = 0;
    let mut len = 0usize;
    let mut data = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    let mut offset = 0usize;
    let status = unsafe {
        sys::napi_get_typedarray_info(
            v.env,
            v.raw,
            &mut kind,
            &mut len,
            &mut data,
            &mut buffer,
            &mut offset,
        )
    };
    if status == sys::Status::napi_ok && kind == sys::TypedarrayType::uint8_array {
        if len == 0 || data.is_null() {
            return Ok(Lent::Owned(Vec::new()));
        }
        return Ok(Lent::View(data.cast_const().cast(), len));
    }
    // A string, or anything else: the exact path converts or says why not.
    bytes(v, what).map(Lent::Owned)
}

/// An options object: `undefined` (when allowed) or an object whose own
/// enumerable keys are all known, so that a misspelt option
/// (`expected_version`) is an error instead of a check silently skipped.
pub(crate) struct Options {
    what: &'static str,
    source: Source,
}

enum Source {
    /// An options bag, read in one pass over its own keys.
    Read(Vec<(String, Js)>),
    /// An object read by name (a lease, which carries more than we need).
    Object(Js),
}

pub(crate) fn options(
    v: Js,
    what: &'static str,
    known: &[&str],
    required: bool,
) -> Conv<Option<Options>> {
    let t = v.kind()?;
    if t == ValueType::Undefined && !required {
        return Ok(None);
    }
    if t != ValueType::Object {
        return Err(wrong_type(what, "an object", t));
    }
    let mut names = ptr::null_mut();
    napi::check_status!(unsafe {
        sys::napi_get_all_property_names(
            v.env,
            v.raw,
            sys::KeyCollectionMode::own_only,
            sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
            sys::KeyConversion::numbers_to_strings,
            &mut names,
        )
    })?;
    let mut len = 0u32;
    napi::check_status!(unsafe { sys::napi_get_array_length(v.env, names, &mut len) })?;
    let mut read = Vec::with_capacity(len as usize);
    for i in 0..len {
        let mut key = ptr::null_mut();
        napi::check_status!(unsafe { sys::napi_get_element(v.env, names, i, &mut key) })?;
        let name = string(
            Js {
                env: v.env,
                raw: key,
            },
            "option name",
        )?;
        if !known.contains(&name.as_str()) {
            return Err(Failure::Type(format!(
                "{what} has an unknown option {name:?} (known: {})",
                known.join(", ")
            )));
        }
        let mut value = ptr::null_mut();
        napi::check_status!(unsafe { sys::napi_get_property(v.env, v.raw, key, &mut value) })?;
        read.push((
            name,
            Js {
                env: v.env,
                raw: value,
            },
        ));
    }
    Ok(Some(Options {
        what,
        source: Source::Read(read),
    }))
}

impl Options {
    /// A field; `None` when absent or `undefined`.
    pub fn get(&self, name: &str) -> Conv<Option<(Js, String)>> {
        let v = match &self.source {
            Source::Read(read) => match read.iter().find(|(n, _)| n == name) {
                Some((_, v)) => *v,
                None => return Ok(None),
            },
            Source::Object(obj) => obj.property(name)?,
        };
        if v.is_undefined()? {
            return Ok(None);
        }
        Ok(Some((v, format!("{}.{name}", self.what))))
    }

    pub fn required(&self, name: &str) -> Conv<(Js, String)> {
        match self.get(name)? {
            Some(v) => Ok(v),
            None => Err(Failure::Type(format!("{}.{name} is required", self.what))),
        }
    }

    pub fn token(&self, name: &str) -> Conv<fencing::Token> {
        let (v, what) = self.required(name)?;
        token(v, &what)
    }

    pub fn optional_number(&self, name: &str) -> Conv<Option<u64>> {
        match self.get(name)? {
            Some((v, what)) => number(v, &what).map(Some),
            None => Ok(None),
        }
    }

    pub fn optional_string(&self, name: &str) -> Conv<Option<String>> {
        match self.get(name)? {
            Some((v, what)) => string(v, &what).map(Some),
            None => Ok(None),
        }
    }

    pub fn string(&self, name: &str) -> Conv<String> {
        let (v, what) = self.required(name)?;
        string(v, &what)
    }

    pub fn millis(&self, name: &str) -> Conv<Duration> {
        let (v, what) = self.required(name)?;
        millis(v, &what)
    }

    pub fn optional_millis(&self, name: &str) -> Conv<Option<Duration>> {
        match self.get(name)? {
            Some((v, what)) => millis(v, &what).map(Some),
            None => Ok(None),
        }
    }
}

/// `{ token, seq?, holder? }`: what a write presents.
pub(crate) const FENCE_KEYS: [&str; 3] = ["token", "seq", "holder"];

pub(crate) fn fence(o: &Options) -> Conv<fencing::Fence> {
    let mut fence = fencing::Fence::new(o.token("token")?);
    fence.seq = o.optional_number("seq")?;
    fence.holder = o.optional_string("holder")?;
    Ok(fence)
}

/// The operations of a batch (`apply`): an array of what [`op`] takes. At
/// most one past the core's limit is read, so that a huge array (even a
/// sparse one of 2^32 - 1 holes) is refused by the core's own check
/// (INVALID_ARGUMENT, "over the limit") without reading every element.
pub(crate) fn batch(v: Js, what: &str) -> Conv<Vec<fencing::Op>> {
    let mut is_array = false;
    napi::check_status!(unsafe { sys::napi_is_array(v.env, v.raw, &mut is_array) })?;
    if !is_array {
        return Err(wrong_type(what, "an array", v.kind()?));
    }
    let mut len = 0u32;
    napi::check_status!(unsafe { sys::napi_get_array_length(v.env, v.raw, &mut len) })?;
    let most = u32::try_from(fencing::limits::MAX_BATCH_OPS + 1).unwrap_or(u32::MAX);
    (0..len.min(most))
        .map(|i| {
            let mut item = ptr::null_mut();
            napi::check_status!(unsafe { sys::napi_get_element(v.env, v.raw, i, &mut item) })?;
            let item = Js {
                env: v.env,
                raw: item,
            };
            op(item, Some(i as usize))
        })
        .collect()
}

/// One operation: `{ put: key, value, expectedVersion? }` or
/// `{ delete: key, expectedVersion? }`; `index` is its place in a batch
/// (`apply`), `None` for `execute`'s one operation.
pub(crate) fn op(v: Js, index: Option<usize>) -> Conv<fencing::Op> {
    let (what, name) = match index {
        Some(i) => ("ops[]", format!("ops[{i}]")),
        None => ("op", "op".to_owned()),
    };
    let o = options(
        v,
        what,
        &["put", "delete", "value", "expectedVersion"],
        true,
    )?
    .ok_or_else(|| Failure::Type(format!("{name} must be an object")))?;
    let op = match (o.get("put")?, o.get("delete")?) {
        (Some((key, what)), None) => {
            let key = string(key, &what)?;
            let (value, what) = o.required("value")?;
            fencing::Op::put(key, bytes(value, &what)?)
        }
        (None, Some((key, what))) => {
            if o.get("value")?.is_some() {
                return Err(Failure::Type(format!(
                    "{name} deletes and cannot carry a value"
                )));
            }
            fencing::Op::delete(string(key, &what)?)
        }
        _ => {
            return Err(Failure::Type(format!(
                "{name} must name exactly one of put or delete"
            )))
        }
    };
    Ok(match o.optional_number("expectedVersion")? {
        Some(version) => op.if_version(version),
        None => op,
    })
}

/// A lease as renew and release take it: any object with `scope` and
/// `token` (what acquire returned, or `{ scope, token }`).
pub(crate) fn lease_ref(v: Js, what: &'static str) -> Conv<(String, fencing::Token)> {
    let o = object(v, what, "a lease (an object with scope and token)")?;
    Ok((o.string("scope")?, o.token("token")?))
}

/// An object whose fields are read by name (a lease, which may carry more
/// than is read).
fn object(v: Js, what: &'static str, expected: &str) -> Conv<Options> {
    match v.kind()? {
        ValueType::Object => Ok(Options {
            what,
            source: Source::Object(v),
        }),
        t => Err(wrong_type(what, expected, t)),
    }
}

/// A whole lease, as `acquire` resolved it (`keepAlive`): `scope`,
/// `holder`, `token`, `ttlMs`, `expiresAt` (a Date) and `remainingMs`.
pub(crate) fn lease(v: Js, what: &'static str) -> Conv<fencing::Lease> {
    let o = object(
        v,
        what,
        "a lease as acquire returns it (scope, holder, token, ttlMs, expiresAt, remainingMs)",
    )?;
    Ok(fencing::Lease {
        scope: o.string("scope")?,
        holder: o.string("holder")?,
        token: o.token("token")?,
        ttl: o.millis("ttlMs")?,
        expires_at: o
            .required("expiresAt")
            .and_then(|(v, what)| date(v, &what))?,
        remaining: o.millis("remainingMs")?,
    })
}

/// A `Date` (a valid one) as a point in time.
fn date(v: Js, what: &str) -> Conv<SystemTime> {
    let mut is_date = false;
    napi::check_status!(unsafe { sys::napi_is_date(v.env, v.raw, &mut is_date) })?;
    if !is_date {
        return Err(wrong_type(what, "a Date", v.kind()?));
    }
    let mut ms = 0f64;
    napi::check_status!(unsafe { sys::napi_get_date_value(v.env, v.raw, &mut ms) })?;
    if !ms.is_finite() {
        return Err(Failure::Range(format!("{what} is an invalid Date")));
    }
    let since = Duration::from_millis(ms.abs() as u64);
    // Checked: Windows's clock holds 1601 to about 30828, a Date more.
    let at = if ms < 0.0 {
        UNIX_EPOCH.checked_sub(since)
    } else {
        UNIX_EPOCH.checked_add(since)
    };
    at.ok_or_else(|| {
        Failure::Range(format!(
            "{what} is outside the times this system's clock can hold"
        ))
    })
}

/// The `ttlMs` a lease object carries, if any (renew's default).
pub(crate) fn lease_ttl(v: Js) -> Conv<Option<Duration>> {
    Options {
        what: "lease",
        source: Source::Object(v),
    }
    .optional_millis("ttlMs")
}
