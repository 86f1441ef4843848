//! The rejections SQLite's `fencing_check` view raises when callers fence
//! their own tables with plain SQL (docs/sqlite.md), and their mapping back
//! to [`Error`] for callers who run that SQL through any driver.

use crate::error::{Error, ErrorCode};
use crate::token::Token;

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
    /// message. Details the message does not carry are left at neutral
    /// values: empty scope, token [`Token::MAX`], fence and seqs 0.
    pub fn from_sqlite_message(message: &str) -> Option<Error> {
        let (name, text) = message.trim_start().split_once(':')?;
        let code = ErrorCode::from_name(name).filter(|c| RAISED.contains(c))?;
        Some(match code {
            ErrorCode::StaleToken => Error::StaleToken {
                scope: String::new(),
                presented: Token::MAX,
                current: 0,
            },
            ErrorCode::SequenceOutOfOrder => Error::SequenceOutOfOrder {
                presented: 0,
                last: 0,
            },
            _ => Error::InvalidArgument(text.trim().to_owned()),
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
            assert_eq!(Error::from_sqlite_message(&message).unwrap().code(), code);
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
