//! SQLite's failures as `BACKEND` errors of the kind each one is
//! (docs/semantics.md, "Errors"), with the driver's error as source.

use rusqlite::ErrorCode as Code;

use crate::error::{BackendErrorKind as Kind, Error};

/// The kind of a driver error: what a caller may conclude from it.
pub(super) fn kind(e: &rusqlite::Error) -> Kind {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            Code::DatabaseBusy | Code::DatabaseLocked => Kind::Busy,
            Code::DatabaseCorrupt | Code::NotADatabase => Kind::Corrupt,
            Code::CannotOpen => Kind::Unreachable,
            Code::PermissionDenied | Code::ReadOnly | Code::AuthorizationForStatementDenied => {
                Kind::Refused
            }
            _ => Kind::Other,
        },
        // A stored value that is not what fencing wrote.
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::InvalidColumnType(..) => Kind::Corrupt,
        _ => Kind::Other,
    }
}

/// A driver error as the store's error: `"sqlite: {e}"`, its kind, and the
/// driver's error as source.
pub(super) fn backend(e: rusqlite::Error) -> Error {
    Error::backend_from(kind(&e), format!("sqlite: {e}"), e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(code: std::ffi::c_int) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn result_codes_map_to_their_kinds() {
        use rusqlite::ffi;
        for (code, want) in [
            (ffi::SQLITE_BUSY, Kind::Busy),
            (ffi::SQLITE_LOCKED, Kind::Busy),
            (ffi::SQLITE_CORRUPT, Kind::Corrupt),
            (ffi::SQLITE_NOTADB, Kind::Corrupt),
            (ffi::SQLITE_CANTOPEN, Kind::Unreachable),
            (ffi::SQLITE_READONLY, Kind::Refused),
            (ffi::SQLITE_PERM, Kind::Refused),
            (ffi::SQLITE_CONSTRAINT, Kind::Other),
        ] {
            let e = backend(failure(code));
            assert_eq!(e.backend_kind(), Some(want), "{e}");
            let source = std::error::Error::source(&e).expect("the driver's error");
            assert!(source.downcast_ref::<rusqlite::Error>().is_some());
        }
        let range = rusqlite::Error::IntegralValueOutOfRange(0, -1);
        assert_eq!(kind(&range), Kind::Corrupt);
    }
}
