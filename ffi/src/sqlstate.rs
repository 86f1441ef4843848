//! Fencing's SQLSTATEs, for callers who run `fencing.check(scope, token)`
//! inside their own transaction through their own driver (libpq, ...). The
//! mapping is the core's (`fencing::Error::from_sqlstate`).

use std::ffi::c_char;

use fencing::Error;

use crate::args;
use crate::boundary::boundary;
use crate::status::fencing_status;

/// Maps an error the PostgreSQL server raised to fencing's status: a
/// SQLSTATE of class `FN` (`"FN001"`, from `PQresultErrorField(res,
/// PG_DIAG_SQLSTATE)`) returns its status (`FENCING_STALE_TOKEN`, ...) and
/// records the details that `detail` (the error's DETAIL, JSON, from
/// `PG_DIAG_MESSAGE_DETAIL`; may be NULL) carries for `fencing_last_error`
/// on this thread (scope, presented, current, ...; missing or malformed
/// details leave them NULL or 0). Any other SQLSTATE returns `FENCING_OK`
/// and leaves the last error alone: it is not one of fencing's.
/// `FENCING_NULL_PARAMETER` when `sqlstate` is NULL, `FENCING_INVALID_UTF8`
/// when either text is not UTF-8.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_error_from_sqlstate(
    sqlstate: *const c_char,
    detail: *const c_char,
) -> fencing_status {
    boundary(|| {
        let sqlstate = args::text(sqlstate, "sqlstate")?;
        let detail = args::optional_text(detail, "detail")?;
        match Error::from_sqlstate(sqlstate, detail) {
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
    use std::ffi::CStr;
    use std::ptr;

    fn last() -> fencing_error {
        let mut e = std::mem::MaybeUninit::<fencing_error>::uninit();
        assert_eq!(fencing_last_error(e.as_mut_ptr()), FENCING_OK);
        unsafe { e.assume_init() }
    }

    #[test]
    fn stale_token_details_are_recorded() {
        let detail = c"{\"code\":\"STALE_TOKEN\",\"scope\":\"r'; --\",\"presented\":\"4\",\"current\":\"9\"}";
        assert_eq!(
            fencing_error_from_sqlstate(c"FN001".as_ptr(), detail.as_ptr()),
            FENCING_STALE_TOKEN
        );
        let e = last();
        assert_eq!(e.status, FENCING_STALE_TOKEN);
        assert_eq!(unsafe { CStr::from_ptr(e.scope) }, c"r'; --");
        assert_eq!((e.presented, e.current), (4, 9));
    }

    #[test]
    fn other_states_and_bad_input() {
        assert_eq!(
            fencing_error_from_sqlstate(c"FN002".as_ptr(), ptr::null()),
            FENCING_SEQUENCE_OUT_OF_ORDER
        );
        // Not fencing's: OK, the last error stays.
        assert_eq!(
            fencing_error_from_sqlstate(c"23505".as_ptr(), c"{}".as_ptr()),
            FENCING_OK
        );
        assert_eq!(last().status, FENCING_SEQUENCE_OUT_OF_ORDER);
        assert_eq!(
            fencing_error_from_sqlstate(ptr::null(), ptr::null()),
            FENCING_NULL_PARAMETER
        );
        let bad = [0xffu8 as c_char, 0];
        assert_eq!(
            fencing_error_from_sqlstate(c"FN001".as_ptr(), bad.as_ptr()),
            FENCING_INVALID_UTF8
        );
    }
}
