//! The rejections of SQLite's `fencing_check` view, for callers who fence
//! their own tables with plain SQL through their own driver (the `sqlite3`
//! library, ...; docs/sqlite.md). The mapping is the core's
//! (`fencing::Error::from_sqlite_message`).

use std::ffi::c_char;

use fencing::Error;

use crate::args;
use crate::boundary::boundary;
use crate::status::fencing_status;

/// Maps an SQLite error message to fencing's status: a rejection of the
/// `fencing_check` view (the message starts with the code and a colon,
/// `"STALE_TOKEN: ..."`, from `sqlite3_errmsg(db)`) returns its status
/// (`FENCING_STALE_TOKEN`, `FENCING_SEQUENCE_OUT_OF_ORDER` or
/// `FENCING_INVALID_ARGUMENT`) and records it for `fencing_last_error` on
/// this thread. The message carries no details (docs/sqlite.md): the scope
/// and token are the ones the caller passed, so `scope` is NULL and the
/// numbers are 0. Any other message returns `FENCING_OK` and leaves
/// the last error alone: it is not one of fencing's.
/// `FENCING_NULL_PARAMETER` when `message` is NULL, `FENCING_INVALID_UTF8`
/// when it is not UTF-8.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_error_from_sqlite(message: *const c_char) -> fencing_status {
    boundary(|| {
        let message = args::text(message, "message")?;
        match Error::from_sqlite_message(message) {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::{fencing_error, fencing_last_error};
    use crate::status::fencing_status::*;
    use std::ptr;

    fn last() -> fencing_error {
        let mut e = std::mem::MaybeUninit::<fencing_error>::uninit();
        assert_eq!(fencing_last_error(e.as_mut_ptr()), FENCING_OK);
        unsafe { e.assume_init() }
    }

    #[test]
    fn each_raised_code_maps_and_others_leave_the_last_error() {
        for (message, status) in [
            (
                c"STALE_TOKEN: a newer holder has taken over",
                FENCING_STALE_TOKEN,
            ),
            (c"SEQUENCE_OUT_OF_ORDER: seq", FENCING_SEQUENCE_OUT_OF_ORDER),
            (c"INVALID_ARGUMENT: token must be", FENCING_INVALID_ARGUMENT),
        ] {
            assert_eq!(fencing_error_from_sqlite(message.as_ptr()), status);
            assert_eq!(last().status, status);
        }
        for other in [c"database is locked", c"LEASE_HELD: x", c"STALE_TOKEN", c""] {
            assert_eq!(fencing_error_from_sqlite(other.as_ptr()), FENCING_OK);
            assert_eq!(last().status, FENCING_INVALID_ARGUMENT);
        }
        assert_eq!(
            fencing_error_from_sqlite(ptr::null()),
            FENCING_NULL_PARAMETER
        );
        let bad = [0xffu8 as c_char, 0];
        assert_eq!(
            fencing_error_from_sqlite(bad.as_ptr()),
            FENCING_INVALID_UTF8
        );
    }
}
