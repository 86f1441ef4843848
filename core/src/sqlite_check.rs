//! The rejections SQLite's `fencing_check` view raises when callers fence
//! their own tables with plain SQL (docs/sqlite.md), and their mapping back
//! to [`Error`] for callers who run that SQL through any driver.

use crate::error::{Error, ErrorCode};

/// The codes the view raises. Its messages are literals (a trigger's
/// `RAISE` cannot build one from values in the SQLite versions still in
/// use), so the details are not in them: `scope` and `presented` are what
/// the caller passed, and `fence_of(scope)` tells the current fence.
const RAISED: [ErrorCode; 3] = [
    ErrorCode::StaleToken,
    ErrorCode::SequenceOutOfOrder,
    ErrorCode::InvalidArgument,
];

impl Error {
    /// The error an SQLite message from `fencing_check` stands for (the
    /// message starts with the code and a colon), or `None` for any other
    /// message. The message names no scope, token or fence, so a
    /// `STALE_TOKEN` or `SEQUENCE_OUT_OF_ORDER` is an [`Error::Rejected`]
    /// with its code and the message's text, and no details; an
    /// `INVALID_ARGUMENT` is [`Error::InvalidArgument`] with the text.
    pub fn from_sqlite_message(message: &str) -> Option<Error> {
        let (name, text) = message.trim_start().split_once(':')?;
        let code = ErrorCode::from_name(name).filter(|c| RAISED.contains(c))?;
        let text = text.trim().to_owned();
        Some(match code {
            ErrorCode::InvalidArgument => Error::InvalidArgument(text),
            code => Error::Rejected {
                code,
                message: text,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_raised_code_maps_back_and_nothing_else_does() {
        for code in RAISED {
            let message = format!("{code}: whatever the trigger says");
            let e = Error::from_sqlite_message(&message).unwrap();
            assert_eq!(e.code(), code);
            assert_eq!(e.details().count(), 0, "{code}: no invented details");
            if code != ErrorCode::InvalidArgument {
                assert_eq!(e.to_string(), message);
            }
        }
        assert_eq!(
            Error::from_sqlite_message("INVALID_ARGUMENT: token must be an integer"),
            Some(Error::InvalidArgument("token must be an integer".into()))
        );
        for other in [
            "UNIQUE constraint failed: t.id",
            "database is locked",
            "LEASE_HELD: not raised by the view",
            "STALE_TOKEN without a colon",
            "",
        ] {
            assert_eq!(Error::from_sqlite_message(other), None, "{other}");
        }
    }
}
