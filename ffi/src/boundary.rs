//! The panic boundary and the per-thread last error.
//!
//! Every exported function runs its body through [`boundary`] (or
//! [`boundary_or`] for the few infallible accessors): a panic is caught and
//! becomes `FENCING_PANIC` (or the accessor's default), so nothing ever
//! unwinds into C. A failure is recorded for the calling thread, where
//! `fencing_last_error` reads it back with its detail numbers.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use fencing::{Detail, Error, Field};

use crate::args;
use crate::status::fencing_status::{self, *};

/// Why a call failed: the core's error, or the C ABI's own.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Boxed: the error path is cold, and a small `Failure` keeps the
    /// `Result`s of the hot path small.
    Core(Box<Error>),
    /// A pointer argument that must not be NULL was NULL.
    Null(&'static str),
    /// A string argument was not UTF-8.
    Utf8(&'static str),
    /// A caller's buffer is too small: what, the size needed, the size given.
    TooSmall(Box<(&'static str, usize, usize)>),
}

impl From<Error> for Failure {
    #[cold]
    fn from(e: Error) -> Failure {
        Failure::Core(Box::new(e))
    }
}

pub(crate) type Outcome = Result<(), Failure>;

/// Runs `body`, turning its failure or panic into a status (and the
/// thread's last error).
#[inline]
pub(crate) fn boundary(body: impl FnOnce() -> Outcome) -> fencing_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => FENCING_OK,
        Ok(Err(failure)) => {
            catch_unwind(AssertUnwindSafe(|| record(failure))).unwrap_or(FENCING_PANIC)
        }
        Err(payload) => record_panic(payload.as_ref()),
    }
}

/// Like [`boundary`], for the last-error readers: reports a failure without
/// replacing the error the caller is reading.
fn quiet_boundary(body: impl FnOnce() -> Outcome) -> fencing_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => FENCING_OK,
        Ok(Err(failure)) => Record::from_failure(&failure).status,
        Err(_) => FENCING_PANIC,
    }
}

/// For accessors that return a value rather than a status: `default` on a
/// panic.
#[inline]
pub(crate) fn boundary_or<T>(default: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(default)
}

/// One failure, as `fencing_last_error` hands it out.
struct Record {
    status: fencing_status,
    message: CString,
    scope: Option<CString>,
    key: Option<CString>,
    holder: Option<CString>,
    presented: u64,
    current: u64,
    last: u64,
    expected: u64,
    actual: u64,
    token: u64,
    remaining_ms: u64,
    current_token: u64,
    current_holder: Option<CString>,
    kind: Option<CString>,
}

thread_local! {
    static LAST: RefCell<Option<Record>> = const { RefCell::new(None) };
}

/// Text for C: a NUL inside (never expected: names are checked for it)
/// becomes U+FFFD instead of cutting the text short.
pub(crate) fn c_text(text: &str) -> CString {
    CString::new(text)
        .unwrap_or_else(|_| CString::new(text.replace('\0', "\u{fffd}")).unwrap_or_default())
}

impl Record {
    fn new(status: fencing_status, message: String) -> Record {
        Record {
            status,
            message: c_text(&message),
            scope: None,
            key: None,
            holder: None,
            presented: 0,
            current: 0,
            last: 0,
            expected: 0,
            actual: 0,
            token: 0,
            remaining_ms: 0,
            current_token: 0,
            current_holder: None,
            kind: None,
        }
    }

    fn from_failure(failure: &Failure) -> Record {
        match failure {
            Failure::Core(e) => Record::from_error(e),
            Failure::Null(what) => {
                Record::new(FENCING_NULL_PARAMETER, format!("{what} must not be NULL"))
            }
            Failure::Utf8(what) => {
                Record::new(FENCING_INVALID_UTF8, format!("{what} is not valid UTF-8"))
            }
            Failure::TooSmall(small) => {
                let (what, needed, len) = **small;
                Record::new(
                    FENCING_BUFFER_TOO_SMALL,
                    format!("{what} needs a buffer of {needed} bytes (with its NUL), got {len}"),
                )
            }
        }
    }

    /// The core's details, each in its own field (`Error::details`).
    fn from_error(e: &Error) -> Record {
        let mut r = Record::new(fencing_status::from_code(e.code()), e.to_string());
        for (field, detail) in e.details() {
            let text = match detail {
                Detail::Text(t) => Some(c_text(t)),
                Detail::OptionalText(t) => t.map(c_text),
                Detail::Number(_) | Detail::Duration(_) | Detail::OptionalNumber(_) => None,
            };
            let number = match detail {
                Detail::Number(n) | Detail::OptionalNumber(Some(n)) => n,
                Detail::Duration(d) => Detail::millis(d),
                Detail::Text(_) | Detail::OptionalText(_) | Detail::OptionalNumber(None) => 0,
            };
            match field {
                Field::Scope => r.scope = text,
                Field::Key => r.key = text,
                Field::Holder => r.holder = text,
                Field::Presented => r.presented = number,
                Field::Current => r.current = number,
                Field::Last => r.last = number,
                Field::Expected => r.expected = number,
                Field::Actual => r.actual = number,
                Field::Token => r.token = number,
                Field::Remaining => r.remaining_ms = number,
                // Also in `token`/`holder`, where LEASE_LOST put them before
                // 0.2 (deprecated there; ffi/README.md, "Error details").
                Field::CurrentToken => (r.current_token, r.token) = (number, number),
                Field::CurrentHolder => (r.current_holder, r.holder) = (text.clone(), text),
                Field::Kind => r.kind = text,
                // A field this library does not know yet has no C field.
                _ => {}
            }
        }
        r
    }
}

fn store_record(record: Record) -> fencing_status {
    let status = record.status;
    // At thread exit the slot may be gone; the status still tells.
    let _ = LAST.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = Some(record);
        }
    });
    status
}

#[cold]
fn record(failure: Failure) -> fencing_status {
    store_record(Record::from_failure(&failure))
}

#[cold]
fn record_panic(payload: &(dyn Any + Send)) -> fencing_status {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    let message = format!("panic inside libfencing (a bug, please report it): {what}");
    // Formatting cannot panic here, but the boundary must not unwind even so.
    catch_unwind(AssertUnwindSafe(|| {
        store_record(Record::new(FENCING_PANIC, message))
    }))
    .unwrap_or(FENCING_PANIC)
}

/// The details of the last failure on the calling thread. Strings are
/// NUL-terminated UTF-8 owned by the library: valid until the next call that
/// fails on this thread (or the thread ends); copy what you keep. A field
/// that does not apply to `status` is NULL (strings) or 0 (numbers).
#[repr(C)]
pub struct fencing_error {
    /// The status of the last failed call on this thread; `FENCING_OK` when
    /// no call has failed on this thread yet.
    pub status: fencing_status,
    /// Human-readable, for logs; never parse it. Never NULL (`""` with
    /// `FENCING_OK`).
    pub message: *const c_char,
    /// STALE_TOKEN, NOT_FOUND, LEASE_HELD, LEASE_LOST: the scope.
    pub scope: *const c_char,
    /// NOT_FOUND: the key.
    pub key: *const c_char,
    /// LEASE_HELD: who holds the lease. (LEASE_LOST: deprecated copy of
    /// `current_holder`.)
    pub holder: *const c_char,
    /// STALE_TOKEN: the token presented. SEQUENCE_OUT_OF_ORDER: the seq
    /// presented.
    pub presented: u64,
    /// STALE_TOKEN: the scope's fence.
    pub current: u64,
    /// SEQUENCE_OUT_OF_ORDER: the last accepted seq.
    pub last: u64,
    /// VERSION_MISMATCH: the version expected (0: "must not exist").
    pub expected: u64,
    /// VERSION_MISMATCH: the entry's version (0: it does not exist).
    pub actual: u64,
    /// LEASE_HELD: the live lease's token. (LEASE_LOST: deprecated copy of
    /// `current_token`.)
    pub token: u64,
    /// LEASE_HELD: milliseconds left on the live lease, on the store's clock.
    pub remaining_ms: u64,
    /// LEASE_LOST: the token of the lease live now (0: none).
    pub current_token: u64,
    /// LEASE_LOST: who holds the lease live now (NULL: none).
    pub current_holder: *const c_char,
    /// BACKEND: how the backend failed, one of `"busy"`, `"timeout"`,
    /// `"unreachable"`, `"refused"`, `"corrupt"`, `"outcome_unknown"`,
    /// `"other"` (docs/semantics.md, "Errors"); more may be added.
    /// NULL for every other status.
    pub kind: *const c_char,
}

/// Writes the details of the calling thread's last failure to `*out`.
/// Reading never changes the last error. Returns `FENCING_NULL_PARAMETER`
/// only when `out` is NULL.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_last_error(out: *mut fencing_error) -> fencing_status {
    quiet_boundary(|| {
        let out = args::out(out, "out")?;
        let text = |s: &Option<CString>| s.as_ref().map_or(ptr::null(), |s| s.as_ptr());
        let details = LAST.with_borrow(|last| match last {
            Some(r) => fencing_error {
                status: r.status,
                message: r.message.as_ptr(),
                scope: text(&r.scope),
                key: text(&r.key),
                holder: text(&r.holder),
                presented: r.presented,
                current: r.current,
                last: r.last,
                expected: r.expected,
                actual: r.actual,
                token: r.token,
                remaining_ms: r.remaining_ms,
                current_token: r.current_token,
                current_holder: text(&r.current_holder),
                kind: text(&r.kind),
            },
            None => fencing_error {
                status: FENCING_OK,
                message: c"".as_ptr(),
                scope: ptr::null(),
                key: ptr::null(),
                holder: ptr::null(),
                presented: 0,
                current: 0,
                last: 0,
                expected: 0,
                actual: 0,
                token: 0,
                remaining_ms: 0,
                current_token: 0,
                current_holder: ptr::null(),
                kind: ptr::null(),
            },
        });
        out.set(details);
        Ok(())
    })
}

/// Copies the message of the calling thread's last failure, NUL-terminated,
/// into `buf` (`len` bytes) and its length without the NUL to `*out_n`.
/// `FENCING_BUFFER_TOO_SMALL` (nothing written) when it does not fit.
/// Reading never changes the last error.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_last_error_message(
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> fencing_status {
    quiet_boundary(|| {
        let buf = args::out(buf, "buf")?;
        let out_n = args::out(out_n, "out_n")?;
        LAST.with_borrow(|last| {
            let message = last.as_ref().map_or(c"", |r| r.message.as_c_str());
            args::copy_text(message, buf, len, out_n, "the message")
        })
    })
}

/// The stable name of a status: `"OK"`, `"STALE_TOKEN"`, ...,
/// `"NULL_PARAMETER"`; `"UNKNOWN"` for a number that is no status. Static
/// storage; never NULL, never freed.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_status_name(status: u32) -> *const c_char {
    boundary_or(c"UNKNOWN".as_ptr(), || {
        fencing_status::from_u32(status)
            .map_or(c"UNKNOWN", fencing_status::name)
            .as_ptr()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> (fencing_status, String) {
        let mut e = std::mem::MaybeUninit::<fencing_error>::uninit();
        assert_eq!(fencing_last_error(e.as_mut_ptr()), FENCING_OK);
        let e = unsafe { e.assume_init() };
        let msg = unsafe { CStr::from_ptr(e.message) }
            .to_str()
            .unwrap()
            .to_owned();
        (e.status, msg)
    }

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let status = boundary(|| panic!("boom {}", 42));
        assert_eq!(status, FENCING_PANIC);
        let (status, msg) = last();
        assert_eq!(status, FENCING_PANIC);
        assert!(msg.contains("boom 42"), "{msg}");
        assert_eq!(boundary_or(7u32, || panic!("x")), 7);
    }

    /// Whether `field` has a value in `e` (a string that is not NULL, a
    /// number that is not 0).
    fn is_set(e: &fencing_error, field: Field) -> bool {
        match field {
            Field::Scope => !e.scope.is_null(),
            Field::Key => !e.key.is_null(),
            Field::Holder => !e.holder.is_null(),
            Field::Presented => e.presented != 0,
            Field::Current => e.current != 0,
            Field::Last => e.last != 0,
            Field::Expected => e.expected != 0,
            Field::Actual => e.actual != 0,
            Field::Token => e.token != 0,
            Field::Remaining => e.remaining_ms != 0,
            Field::CurrentToken => e.current_token != 0,
            Field::CurrentHolder => !e.current_holder.is_null(),
            Field::Kind => !e.kind.is_null(),
            _ => false,
        }
    }

    #[test]
    fn every_code_reports_every_field_of_the_core() {
        for code in fencing::ErrorCode::ALL {
            let error = Error::example(code);
            assert_eq!(
                boundary(|| Err(error.clone().into())),
                fencing_status::from_code(code)
            );
            let mut e = std::mem::MaybeUninit::<fencing_error>::uninit();
            assert_eq!(fencing_last_error(e.as_mut_ptr()), FENCING_OK);
            let e = unsafe { e.assume_init() };
            for (field, detail) in error.details() {
                assert!(is_set(&e, field), "{code}: {field:?} missing");
                if let Detail::Text(t) | Detail::OptionalText(Some(t)) = detail {
                    let name = match field {
                        Field::Scope => e.scope,
                        Field::Key => e.key,
                        Field::Holder => e.holder,
                        Field::Kind => e.kind,
                        _ => e.current_holder,
                    };
                    assert_eq!(unsafe { CStr::from_ptr(name) }.to_str().unwrap(), t);
                }
            }
        }
    }

    #[test]
    fn readers_do_not_replace_the_last_error() {
        assert_eq!(
            boundary(|| Err(Failure::Null("scope"))),
            FENCING_NULL_PARAMETER
        );
        assert_eq!(fencing_last_error(ptr::null_mut()), FENCING_NULL_PARAMETER);
        assert_eq!(
            fencing_last_error_message(ptr::null_mut(), 0, ptr::null_mut()),
            FENCING_NULL_PARAMETER
        );
        let mut small = [0 as c_char; 4];
        let mut n = 99usize;
        assert_eq!(
            fencing_last_error_message(small.as_mut_ptr(), small.len(), &mut n),
            FENCING_BUFFER_TOO_SMALL
        );
        assert_eq!(n, 99);
        assert_eq!(
            last(),
            (FENCING_NULL_PARAMETER, "scope must not be NULL".to_owned())
        );
    }
}
