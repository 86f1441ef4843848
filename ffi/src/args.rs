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
    let text = unsafe { CStr::from_ptr(ptr) };
    text.to_str().map_err(|_| Failure::Utf8(what))
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
