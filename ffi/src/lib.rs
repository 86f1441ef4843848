//! The C ABI of fencing: `libfencing.so`, `libfencing.a` and the committed
//! header `include/fencing.h` (generated from this crate by cbindgen).
//!
//! A thin layer over the core crate: it converts C arguments (checking every
//! pointer, validating every string as UTF-8), maps errors to
//! [`fencing_status`] codes and packages results. It holds no rule of its
//! own: every check of the contract is the core's. The conventions are in
//! `ffi/README.md` ("C API conventions").
//!
//! Every exported function runs inside a panic boundary
//! ([`boundary::boundary`]): a panic becomes `FENCING_PANIC`, never an
//! unwind into C.

#![allow(non_camel_case_types)]

mod args;
mod boundary;
mod cancel;
mod events;
mod hold;
mod log;
mod results;
mod sqlite_check;
mod sqlstate;
mod status;
mod store;
mod token;
mod types;
// After the store's own functions, so that the header declares their types first.
mod hold_write;
mod lease_watch;
mod rejection_watch;
// Fenced objects (docs/objects.md): their own handle, after the store's.
mod objects;

pub use boundary::{
    fencing_error, fencing_last_error, fencing_last_error_message, fencing_status_name,
};
pub use events::*;
pub use hold::*;
pub use hold_write::*;
pub use lease_watch::*;
pub use log::*;
pub use objects::*;
pub use rejection_watch::*;
pub use results::*;
pub use sqlite_check::fencing_error_from_sqlite;
pub use sqlstate::fencing_error_from_sqlstate;
pub use status::fencing_status;
pub use store::*;
pub use token::{fencing_token_format, fencing_token_parse};
pub use types::*;

use std::ffi::{c_char, CStr};

/// The library's major version (the crate version, checked at compile time).
pub const FENCING_VERSION_MAJOR: u32 = 0;
/// The library's minor version.
pub const FENCING_VERSION_MINOR: u32 = 1;
/// The library's patch version.
pub const FENCING_VERSION_PATCH: u32 = 0;

// The two 64-bit constants are written into the header by hand
// (ffi/cbindgen.toml, `after_includes`) as `UINT64_C(...)`: cbindgen would
// write a plain literal, a signed `long`, and `FENCING_MAX_TOKEN + 1` in a
// user's C would overflow.

/// cbindgen:ignore
/// The greatest token, 2^63-1.
pub const FENCING_MAX_TOKEN: u64 = 9_223_372_036_854_775_807;
/// cbindgen:ignore
/// How far above the store's ceiling `fencing_failover` moves every counter,
/// fence and floor: 2^40.
pub const FENCING_FAILOVER_STEP: u64 = 1_099_511_627_776;
/// Scope names: 1..=256 bytes of UTF-8.
pub const FENCING_MAX_SCOPE_BYTES: usize = 256;
/// Holder labels: 1..=256 bytes of UTF-8.
pub const FENCING_MAX_HOLDER_BYTES: usize = 256;
/// Keys: 1..=1024 bytes of UTF-8.
pub const FENCING_MAX_KEY_BYTES: usize = 1024;
/// Values: 0..=1 MiB.
pub const FENCING_MAX_VALUE_BYTES: usize = 1_048_576;
/// A batch (`fencing_apply`) holds 1..=1000 operations.
pub const FENCING_MAX_BATCH_OPS: usize = 1000;
/// A list page holds 1..=1000 keys.
pub const FENCING_MAX_LIST_LIMIT: usize = 1000;
/// The size of `fencing_lease.holder`: the longest holder plus its NUL.
pub const FENCING_HOLDER_CAPACITY: usize = 257;
/// The size of `fencing_lease.scope`: the longest scope plus its NUL.
pub const FENCING_SCOPE_CAPACITY: usize = 257;
/// A buffer of this size holds any token-domain number as text plus its NUL
/// (`fencing_token_format`).
pub const FENCING_TOKEN_TEXT_CAPACITY: usize = 20;

// The header's numbers are the core's and the crate's, or this does not build.
const _: () = {
    use fencing::limits;
    assert!(FENCING_MAX_TOKEN == fencing::Token::MAX.get());
    assert!(FENCING_FAILOVER_STEP == fencing::FAILOVER_STEP);
    assert!(FENCING_MAX_SCOPE_BYTES == limits::MAX_SCOPE_BYTES);
    assert!(FENCING_MAX_HOLDER_BYTES == limits::MAX_HOLDER_BYTES);
    assert!(FENCING_MAX_KEY_BYTES == limits::MAX_KEY_BYTES);
    assert!(FENCING_MAX_VALUE_BYTES == limits::MAX_VALUE_BYTES);
    assert!(FENCING_MAX_BATCH_OPS == limits::MAX_BATCH_OPS);
    assert!(FENCING_MAX_LIST_LIMIT == limits::MAX_LIST_LIMIT);
    assert!(FENCING_HOLDER_CAPACITY == FENCING_MAX_HOLDER_BYTES + 1);
    assert!(FENCING_SCOPE_CAPACITY == FENCING_MAX_SCOPE_BYTES + 1);
    assert!(FENCING_TOKEN_TEXT_CAPACITY == 19 + 1);
    assert!(FENCING_VERSION_MAJOR == parse_u32(env!("CARGO_PKG_VERSION_MAJOR")));
    assert!(FENCING_VERSION_MINOR == parse_u32(env!("CARGO_PKG_VERSION_MINOR")));
    assert!(FENCING_VERSION_PATCH == parse_u32(env!("CARGO_PKG_VERSION_PATCH")));
};

const fn parse_u32(text: &str) -> u32 {
    let bytes = text.as_bytes();
    let mut value = 0u32;
    let mut i = 0;
    while i < bytes.len() {
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}

static VERSION_TEXT: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(text) => text,
        Err(_) => panic!("the crate version contains NUL"),
    };

/// The version of the library linked at run time, e.g. `"0.1.0"`: compare
/// with `FENCING_VERSION`, the version of the header compiled against
/// (`FENCING_VERSION` is spelled from the three numbers above, in
/// `ffi/cbindgen.toml`).
/// Static storage; never NULL, never freed.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_version() -> *const c_char {
    VERSION_TEXT.as_ptr()
}

#[cfg(test)]
mod tests {
    /// The constants cbindgen does not write (ffi/cbindgen.toml) say in the
    /// header what the crate says.
    #[test]
    fn the_hand_written_header_constants_match() {
        let header = include_str!("../../include/fencing.h");
        for (name, value) in [
            ("FENCING_MAX_TOKEN", super::FENCING_MAX_TOKEN),
            ("FENCING_FAILOVER_STEP", super::FENCING_FAILOVER_STEP),
        ] {
            let line = format!("#define {name} UINT64_C({value})\n");
            assert!(header.contains(&line), "the header lacks {line:?}");
        }
    }
}
