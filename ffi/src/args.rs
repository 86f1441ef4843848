//! Reading C arguments and writing out-parameters.
//!
//! These helpers are where raw pointers from C are dereferenced. They check
//! what can be checked (NULL, UTF-8, length bounds) and trust the rest of
//! the C contract, as every C API must: a non-NULL pointer points to a live
//! object of the declared type, a string is NUL-terminated, a buffer holds
//! the length given.

use std::ffi::{c_char, CStr};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::time::Duration;

use fencing::{Error, Token};

use crate::boundary::{Failure, Outcome};

/// An out-parameter: checked for NULL before the operation runs, written
/// only once it succeeded.
pub(crate) struct Out<'a, T> {
    ptr: NonNull<T>,
    _borrow: PhantomData<&'a mut T>,
}

impl<T> Out<'_, T> {
    /// Writes without reading or dropping what the caller's memory held.
    pub(crate) fn set(self, value: T) {
        // SAFETY: non-NULL (checked in `out`), and by the C contract it
        // points to writable memory for one `T`.
        unsafe { self.ptr.as_ptr().write(value) }
    }

    pub(crate) fn as_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }
}

#[inline]
pub(crate) fn out<'a, T>(ptr: *mut T, what: &'static str) -> Result<Out<'a, T>, Failure> {
    NonNull::new(ptr)
        .map(|ptr| Out {
            ptr,
            _borrow: PhantomData,
        })
        .ok_or(Failure::Null(what))
}

/// An out-parameter the caller may pass as NULL when it does not want the
/// value (the receipts of writes).
#[inline]
pub(crate) fn optional_out<'a, T>(ptr: *mut T) -> Option<Out<'a, T>> {
    NonNull::new(ptr).map(|ptr| Out {
        ptr,
        _borrow: PhantomData,
    })
}

/// A handle or input struct the caller passes by pointer.
#[inline]
pub(crate) fn object<'a, T>(ptr: *const T, what: &'static str) -> Result<&'a T, Failure> {
    // SAFETY: by the C contract a non-NULL pointer points to a live `T`.
    unsafe { ptr.as_ref() }.ok_or(Failure::Null(what))
}

/// A NUL-terminated UTF-8 string. Its first NUL ends it, so a C string can
/// never carry a NUL inside.
#[inline]
pub(crate) fn text<'a>(ptr: *const c_char, what: &'static str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(Failure::Null(what));
    }
    // SAFETY: non-NULL, and by the C contract NUL-terminated.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    utf8(bytes).ok_or(Failure::Utf8(what))
}

/// `bytes` as UTF-8. Names are nearly always ASCII, which [`ascii`] checks
/// eight bytes at a time; `str::from_utf8` costs ~190 instructions for two short
/// names (callgrind, docs/performance.md), most of the C ABI's overhead.
#[inline]
pub(crate) fn utf8(bytes: &[u8]) -> Option<&str> {
    if ascii(bytes) {
        // SAFETY: ASCII is UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

/// Like [`text`], where NULL means "none".
#[inline]
pub(crate) fn optional_text<'a>(
    ptr: *const c_char,
    what: &'static str,
) -> Result<Option<&'a str>, Failure> {
    if ptr.is_null() {
        Ok(None)
    } else {
        text(ptr, what).map(Some)
    }
}

/// `len` bytes at `ptr`; `ptr` may be NULL when `len` is 0.
#[inline]
pub(crate) fn bytes<'a>(
    ptr: *const u8,
    len: usize,
    what: &'static str,
) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::Null(what));
    }
    if len > isize::MAX as usize {
        return Err(
            Error::InvalidArgument(format!("{what} length {len} is not a valid size")).into(),
        );
    }
    // SAFETY: non-NULL, length within isize, and by the C contract `ptr`
    // points to `len` readable bytes that stay put during the call.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// `len` items of `T` at `ptr` (input arrays such as batch operations).
#[inline]
pub(crate) fn items<'a, T>(
    ptr: *const T,
    len: usize,
    what: &'static str,
) -> Result<&'a [T], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::Null(what));
    }
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(
            Error::InvalidArgument(format!("{what} count {len} is not a valid size")).into(),
        );
    }
    // SAFETY: as for `bytes`.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// A token from C: the core's conversion (0 and values above 2^63-1 are
/// INVALID_ARGUMENT).
#[inline]
pub(crate) fn token(value: u64) -> Result<Token, Failure> {
    match Token::new(value) {
        Some(token) => Ok(token),
        None => Err(bad_token(value)),
    }
}

#[cold]
fn bad_token(value: u64) -> Failure {
    match Token::try_from_u64(value) {
        Err(e) => e.into(),
        // `Token::new` and `try_from_u64` agree; this arm is unreachable.
        Ok(_) => Error::InvalidArgument(format!("token {value} is out of range")).into(),
    }
}

pub(crate) fn duration(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A duration as whole milliseconds, as the scenario files and the C structs
/// carry it.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Copies `text` and its NUL into `buf` (`len` bytes), its length without
/// the NUL into `out_n`; nothing is written when it does not fit.
pub(crate) fn copy_text(
    text: &CStr,
    buf: Out<'_, c_char>,
    len: usize,
    out_n: Out<'_, usize>,
    what: &'static str,
) -> Outcome {
    let with_nul = text.to_bytes_with_nul();
    if len < with_nul.len() {
        return Err(Failure::TooSmall(Box::new((what, with_nul.len(), len))));
    }
    // SAFETY: `buf` is non-NULL and by the C contract holds `len` bytes,
    // which is enough; the library's text cannot overlap the caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(
            with_nul.as_ptr().cast::<c_char>(),
            buf.as_ptr(),
            with_nul.len(),
        );
    }
    out_n.set(with_nul.len() - 1);
    Ok(())
}

/// Frees what `Box::into_raw` handed to C; NULL is a no-op.
pub(crate) fn free_box<T>(ptr: *mut T) {
    if !ptr.is_null() {
        // SAFETY: by the C contract, a pointer this library made with
        // `Box::into_raw` for this type, freed once, no longer in use.
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// Frees text made by `CString::into_raw` in this library; NULL is a no-op.
pub(crate) fn free_c_string(ptr: *mut c_char) {
    if !ptr.is_null() {
        // SAFETY: by the C contract, text this library handed out, freed once.
        drop(unsafe { std::ffi::CString::from_raw(ptr) });
    }
}

/// Whether every byte is below 0x80: ORs the bytes together eight (then
/// four) at a time. `<[u8]>::is_ascii` goes byte by byte below 8 bytes and
/// is not inlined for these short names.
#[inline]
fn ascii(bytes: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut acc = 0u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        acc |= u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    }
    let rest = chunks.remainder();
    let n = rest.len();
    if n >= 4 {
        // Two overlapping 4-byte reads cover 4..=7 bytes.
        let word = |i: usize| {
            u64::from(u32::from_ne_bytes([
                rest[i],
                rest[i + 1],
                rest[i + 2],
                rest[i + 3],
            ]))
        };
        acc |= word(0) | word(n - 4);
    } else {
        for &b in rest {
            acc |= u64::from(b);
        }
    }
    acc & HIGH == 0
}

#[cfg(test)]
mod tests {
    use super::{ascii, utf8};

    #[test]
    fn ascii_checks_every_byte_at_every_length() {
        for len in 0..40 {
            let clean = vec![b'a'; len];
            assert!(ascii(&clean), "{len}");
            for at in 0..len {
                let mut dirty = clean.clone();
                dirty[at] = 0x80;
                assert!(!ascii(&dirty), "{len} {at}");
            }
        }
    }

    #[test]
    fn utf8_fast_path_agrees_with_the_standard_check() {
        let cases: &[&[u8]] = &[
            b"",
            b"a",
            b"bench-scope-0123456789abcdef",
            "h\u{e9}llo".as_bytes(),
            "\u{1F600}-key".as_bytes(),
            b"\xff",
            b"abc\xc3",
            b"\xc0\xaf",
            b"\xed\xa0\x80",
            b"01234567\x80",
        ];
        for bytes in cases {
            assert_eq!(utf8(bytes), std::str::from_utf8(bytes).ok(), "{bytes:?}");
        }
    }
}
