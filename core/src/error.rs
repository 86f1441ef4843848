//! One error type with a stable code per outcome (SPEC section 5).

use std::fmt;
use std::time::Duration;

use crate::token::Token;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The stable codes. Their text (`as_str`) and meaning never change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    StaleToken,
    SequenceOutOfOrder,
    VersionMismatch,
    NotFound,
    LeaseHeld,
    LeaseLost,
    TokenExhausted,
    InvalidArgument,
    Timeout,
    Backend,
    Closed,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 11] = [
        ErrorCode::StaleToken,
        ErrorCode::SequenceOutOfOrder,
        ErrorCode::VersionMismatch,
        ErrorCode::NotFound,
        ErrorCode::LeaseHeld,
        ErrorCode::LeaseLost,
        ErrorCode::TokenExhausted,
        ErrorCode::InvalidArgument,
        ErrorCode::Timeout,
        ErrorCode::Backend,
        ErrorCode::Closed,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::StaleToken => "STALE_TOKEN",
            ErrorCode::SequenceOutOfOrder => "SEQUENCE_OUT_OF_ORDER",
            ErrorCode::VersionMismatch => "VERSION_MISMATCH",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::LeaseHeld => "LEASE_HELD",
            ErrorCode::LeaseLost => "LEASE_LOST",
            ErrorCode::TokenExhausted => "TOKEN_EXHAUSTED",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::Backend => "BACKEND",
            ErrorCode::Closed => "CLOSED",
        }
    }

    /// The code for its text, e.g. `"STALE_TOKEN"`.
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every failure and rejection. Rejections (`StaleToken`, `SequenceOutOfOrder`,
/// `VersionMismatch`, `NotFound`, `LeaseHeld`) are normal outcomes: match on
/// the variant or on [`Error::code`], never on the message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The presented token is older than the scope's fence (or equal, where
    /// equal is not accepted). Retrying with the same token can never succeed.
    #[error("stale token for scope {scope:?}: presented {presented}, fence is at {current}")]
    StaleToken {
        scope: String,
        presented: Token,
        current: u64,
    },
    #[error("sequence out of order: presented {presented}, last accepted {last}")]
    SequenceOutOfOrder { presented: u64, last: u64 },
    /// `actual` is 0 when the entry does not exist.
    #[error("version mismatch: expected {expected}, actual {actual}")]
    VersionMismatch { expected: u64, actual: u64 },
    #[error("no entry {key:?} in scope {scope:?}")]
    NotFound { scope: String, key: String },
    #[error("lease on {scope:?} is held by {holder:?} with token {token}, {} ms left", remaining.as_millis())]
    LeaseHeld {
        scope: String,
        holder: String,
        token: Token,
        remaining: Duration,
    },
    /// The lease is no longer current; `current` names the lease that is, if any.
    #[error("lease lost on {scope:?}{}", lost_detail(current))]
    LeaseLost {
        scope: String,
        current: Option<(Token, String)>,
    },
    #[error("token counter exhausted: the maximum token has been issued")]
    TokenExhausted,
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("timed out waiting for the lease")]
    Timeout,
    #[error("backend failure: {0}")]
    Backend(String),
    #[error("the store is closed")]
    Closed,
}

fn lost_detail(current: &Option<(Token, String)>) -> String {
    match current {
        Some((token, holder)) => format!(": now held by {holder:?} with token {token}"),
        None => ": no lease is current".to_owned(),
    }
}

impl Error {
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::StaleToken { .. } => ErrorCode::StaleToken,
            Error::SequenceOutOfOrder { .. } => ErrorCode::SequenceOutOfOrder,
            Error::VersionMismatch { .. } => ErrorCode::VersionMismatch,
            Error::NotFound { .. } => ErrorCode::NotFound,
            Error::LeaseHeld { .. } => ErrorCode::LeaseHeld,
            Error::LeaseLost { .. } => ErrorCode::LeaseLost,
            Error::TokenExhausted => ErrorCode::TokenExhausted,
            Error::InvalidArgument(_) => ErrorCode::InvalidArgument,
            Error::Timeout => ErrorCode::Timeout,
            Error::Backend(_) => ErrorCode::Backend,
            Error::Closed => ErrorCode::Closed,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::InvalidArgument(message.into())
    }
}
