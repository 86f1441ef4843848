//! The status every fallible call returns.

use std::ffi::CStr;

use fencing::ErrorCode;

/// What a call did. `FENCING_OK` is 0; 1..=99 are the contract's error codes
/// (one per code of docs/semantics.md, "Errors", same meaning in every
/// language); 100 and up belong to
/// the C ABI itself. A code never changes meaning once released; new codes
/// get new numbers. After any status other than `FENCING_OK`,
/// `fencing_last_error` tells the details on the same thread.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum fencing_status {
    /// Success: the out-parameters have been written.
    FENCING_OK = 0,
    /// The token is older than the scope's fence (or equal to a sealed
    /// fence). Details: scope, presented, current. Retrying with the same
    /// token can never succeed.
    FENCING_STALE_TOKEN = 1,
    /// The seq is not after the last accepted seq of this token. Details:
    /// presented, last.
    FENCING_SEQUENCE_OUT_OF_ORDER = 2,
    /// The entry's version is not the expected one. Details: expected,
    /// actual (0: the entry does not exist).
    FENCING_VERSION_MISMATCH = 3,
    /// Delete of a missing entry. Details: scope, key.
    FENCING_NOT_FOUND = 4,
    /// A lease is live. Details: scope, holder, token, remaining_ms.
    FENCING_LEASE_HELD = 5,
    /// The lease is no longer the live one. Details: scope; token and holder
    /// of the lease that is live now (token 0 and holder NULL: none).
    FENCING_LEASE_LOST = 6,
    /// The scope's counter is at `FENCING_MAX_TOKEN`.
    FENCING_TOKEN_EXHAUSTED = 7,
    /// A bad token, scope, key, holder, ttl, URL, size, option or index.
    FENCING_INVALID_ARGUMENT = 8,
    /// `fencing_acquire_wait` ran out of time.
    FENCING_TIMEOUT = 9,
    /// I/O, database or connection failure; the message says which.
    FENCING_BACKEND = 10,
    /// The store was closed (`fencing_store_close`).
    FENCING_CLOSED = 11,
    /// A pointer argument that must not be NULL was NULL; the message names it.
    FENCING_NULL_PARAMETER = 100,
    /// A string argument was not valid UTF-8; the message names it.
    FENCING_INVALID_UTF8 = 101,
    /// The caller's buffer is too small for the text and its NUL.
    FENCING_BUFFER_TOO_SMALL = 102,
    /// The library panicked (a bug); the call had no effect that can be
    /// relied on, and the message says where.
    FENCING_PANIC = 103,
}

use fencing_status::*;

impl fencing_status {
    /// Every status, in numeric order.
    pub const ALL: [fencing_status; 16] = [
        FENCING_OK,
        FENCING_STALE_TOKEN,
        FENCING_SEQUENCE_OUT_OF_ORDER,
        FENCING_VERSION_MISMATCH,
        FENCING_NOT_FOUND,
        FENCING_LEASE_HELD,
        FENCING_LEASE_LOST,
        FENCING_TOKEN_EXHAUSTED,
        FENCING_INVALID_ARGUMENT,
        FENCING_TIMEOUT,
        FENCING_BACKEND,
        FENCING_CLOSED,
        FENCING_NULL_PARAMETER,
        FENCING_INVALID_UTF8,
        FENCING_BUFFER_TOO_SMALL,
        FENCING_PANIC,
    ];

    pub(crate) fn from_code(code: ErrorCode) -> fencing_status {
        match code {
            ErrorCode::StaleToken => FENCING_STALE_TOKEN,
            ErrorCode::SequenceOutOfOrder => FENCING_SEQUENCE_OUT_OF_ORDER,
            ErrorCode::VersionMismatch => FENCING_VERSION_MISMATCH,
            ErrorCode::NotFound => FENCING_NOT_FOUND,
            ErrorCode::LeaseHeld => FENCING_LEASE_HELD,
            ErrorCode::LeaseLost => FENCING_LEASE_LOST,
            ErrorCode::TokenExhausted => FENCING_TOKEN_EXHAUSTED,
            ErrorCode::InvalidArgument => FENCING_INVALID_ARGUMENT,
            ErrorCode::Timeout => FENCING_TIMEOUT,
            ErrorCode::Backend => FENCING_BACKEND,
            ErrorCode::Closed => FENCING_CLOSED,
            // A code this library has no status for is a bug in it (a test
            // checks that every code has its own status).
            _ => FENCING_PANIC,
        }
    }

    /// The stable name: the contract's code text (`"STALE_TOKEN"`, the same
    /// in every language) or the C ABI's own (`"NULL_PARAMETER"`, ...).
    pub(crate) fn name(self) -> &'static CStr {
        match self {
            FENCING_OK => c"OK",
            FENCING_STALE_TOKEN => c"STALE_TOKEN",
            FENCING_SEQUENCE_OUT_OF_ORDER => c"SEQUENCE_OUT_OF_ORDER",
            FENCING_VERSION_MISMATCH => c"VERSION_MISMATCH",
            FENCING_NOT_FOUND => c"NOT_FOUND",
            FENCING_LEASE_HELD => c"LEASE_HELD",
            FENCING_LEASE_LOST => c"LEASE_LOST",
            FENCING_TOKEN_EXHAUSTED => c"TOKEN_EXHAUSTED",
            FENCING_INVALID_ARGUMENT => c"INVALID_ARGUMENT",
            FENCING_TIMEOUT => c"TIMEOUT",
            FENCING_BACKEND => c"BACKEND",
            FENCING_CLOSED => c"CLOSED",
            FENCING_NULL_PARAMETER => c"NULL_PARAMETER",
            FENCING_INVALID_UTF8 => c"INVALID_UTF8",
            FENCING_BUFFER_TOO_SMALL => c"BUFFER_TOO_SMALL",
            FENCING_PANIC => c"PANIC",
        }
    }

    pub(crate) fn from_u32(code: u32) -> Option<fencing_status> {
        fencing_status::ALL.into_iter().find(|s| *s as u32 == code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_never_change() {
        let numbers: Vec<(u32, &str)> = fencing_status::ALL
            .iter()
            .map(|s| (*s as u32, s.name().to_str().unwrap()))
            .collect();
        assert_eq!(
            numbers,
            [
                (0, "OK"),
                (1, "STALE_TOKEN"),
                (2, "SEQUENCE_OUT_OF_ORDER"),
                (3, "VERSION_MISMATCH"),
                (4, "NOT_FOUND"),
                (5, "LEASE_HELD"),
                (6, "LEASE_LOST"),
                (7, "TOKEN_EXHAUSTED"),
                (8, "INVALID_ARGUMENT"),
                (9, "TIMEOUT"),
                (10, "BACKEND"),
                (11, "CLOSED"),
                (100, "NULL_PARAMETER"),
                (101, "INVALID_UTF8"),
                (102, "BUFFER_TOO_SMALL"),
                (103, "PANIC"),
            ]
        );
    }

    #[test]
    fn every_core_code_has_its_own_status_named_alike() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            let status = fencing_status::from_code(code);
            assert!(seen.insert(status), "{code} shares a status");
            assert_eq!(status.name().to_str().unwrap(), code.as_str());
            assert_eq!(fencing_status::from_u32(status as u32), Some(status));
        }
        assert_eq!(fencing_status::from_u32(12), None);
    }
}
