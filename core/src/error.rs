//! One error type with a stable code per outcome (docs/semantics.md,
//! "Errors"), and its details as one list of named, typed fields
//! ([`Error::details`]) from which every face derives its attributes.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::token::Token;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The stable codes. Their text (`as_str`) and meaning never change; new
/// codes may be added, so a `match` needs a `_` arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
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

    /// The name of this code's error type in every language that has one
    /// class per code (Python, JavaScript): `"StaleTokenError"`.
    pub const fn type_name(self) -> &'static str {
        match self {
            ErrorCode::StaleToken => "StaleTokenError",
            ErrorCode::SequenceOutOfOrder => "SequenceOutOfOrderError",
            ErrorCode::VersionMismatch => "VersionMismatchError",
            ErrorCode::NotFound => "NotFoundError",
            ErrorCode::LeaseHeld => "LeaseHeldError",
            ErrorCode::LeaseLost => "LeaseLostError",
            ErrorCode::TokenExhausted => "TokenExhaustedError",
            ErrorCode::InvalidArgument => "InvalidArgumentError",
            ErrorCode::Timeout => "TimeoutError",
            ErrorCode::Backend => "BackendError",
            ErrorCode::Closed => "ClosedError",
        }
    }

    /// The details an error of this code carries, in the order
    /// [`Error::details`] gives them.
    pub fn fields(self) -> Vec<Field> {
        Error::example(self).details().map(|(f, _)| f).collect()
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
/// the variant or on [`Error::code`], never on the message. New variants may
/// be added, so a `match` needs a `_` arm.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The presented token is older than the scope's fence (or equal, where
    /// equal is not accepted). Retrying with the same token can never succeed.
    StaleToken {
        scope: String,
        presented: Token,
        current: u64,
    },
    SequenceOutOfOrder {
        presented: u64,
        last: u64,
    },
    /// `actual` is 0 when the entry does not exist.
    VersionMismatch {
        expected: u64,
        actual: u64,
    },
    NotFound {
        scope: String,
        key: String,
    },
    LeaseHeld {
        scope: String,
        holder: String,
        token: Token,
        remaining: Duration,
    },
    /// The lease is no longer current; `current` names the lease that is, if any.
    LeaseLost {
        scope: String,
        current: Option<(Token, String)>,
    },
    TokenExhausted,
    InvalidArgument(String),
    Timeout,
    /// The backend failed; [`BackendError::kind`] tells how, and
    /// [`std::error::Error::source`] gives the driver's error when there is one.
    Backend(BackendError),
    Closed,
    /// A rejection known only by its code and message, without the details
    /// its code's variant carries: SQLite's `fencing_check` view raises a
    /// literal message (`"STALE_TOKEN: ..."`) that names no scope, token or
    /// fence ([`Error::from_sqlite_message`]), and the end of a held lease
    /// that cannot tell who holds the scope now (a `LEASE_LOST` whose
    /// current lease is unknown, not absent). `code` is `STALE_TOKEN`,
    /// `SEQUENCE_OUT_OF_ORDER` or `LEASE_LOST`; [`Error::details`] gives nothing, and the
    /// faces leave the code's detail attributes absent (`None`, `null`,
    /// NULL / 0 in C).
    Rejected {
        code: ErrorCode,
        message: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::StaleToken {
                scope,
                presented,
                current,
            } => write!(
                f,
                "stale token for scope {scope:?}: presented {presented}, fence is at {current}"
            ),
            Error::SequenceOutOfOrder { presented, last } => write!(
                f,
                "sequence out of order: presented {presented}, last accepted {last}"
            ),
            Error::VersionMismatch { expected, actual } => {
                write!(f, "version mismatch: expected {expected}, actual {actual}")
            }
            Error::NotFound { scope, key } => write!(f, "no entry {key:?} in scope {scope:?}"),
            Error::LeaseHeld {
                scope,
                holder,
                token,
                remaining,
            } => write!(
                f,
                "lease on {scope:?} is held by {holder:?} with token {token}, {} ms left",
                remaining.as_millis()
            ),
            Error::LeaseLost { scope, current } => {
                write!(f, "lease lost on {scope:?}{}", lost_detail(current))
            }
            Error::TokenExhausted => {
                f.write_str("token counter exhausted: the maximum token has been issued")
            }
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::Timeout => f.write_str("timed out waiting for the lease"),
            Error::Backend(b) => write!(f, "backend failure: {}", b.message),
            Error::Closed => f.write_str("the store is closed"),
            Error::Rejected { code, message } => write!(f, "{code}: {message}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Backend(b) => b.source(),
            _ => None,
        }
    }
}

fn lost_detail(current: &Option<(Token, String)>) -> String {
    match current {
        Some((token, holder)) => format!(": now held by {holder:?} with token {token}"),
        // Not "nobody holds it": a holder's own deadline finds the loss
        // without asking the store.
        None => ": no current holder is known".to_owned(),
    }
}

/// How a backend failed (docs/semantics.md, "Errors"): what a caller
/// may conclude and whether a retry can help. Its text (`as_str`) is the
/// `kind` detail of a `BACKEND` error in every face. New kinds may be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendErrorKind {
    /// Another connection or process holds what the call needs (SQLite's
    /// `SQLITE_BUSY`/`SQLITE_LOCKED` past its busy timeout, PostgreSQL's
    /// lock and connection limits). Nothing took effect; retrying later can
    /// succeed.
    Busy,
    /// The call's deadline passed before anything was sent (waiting for a
    /// pooled connection, connecting). Nothing took effect.
    Timeout,
    /// The backend could not be reached: no connection (refused, no route,
    /// name not resolved, a socket closed before the call was sent), or an
    /// SQLite file that cannot be opened. Nothing took effect.
    Unreachable,
    /// The backend was reached and declined: authentication, TLS, a
    /// read-only standby, a missing permission, a server error, a setting
    /// that forbids the call. Retrying unchanged will fail again.
    Refused,
    /// What the store holds is not what fencing wrote: not a database, a
    /// damaged file, a value out of range, an unknown code. Needs an operator.
    Corrupt,
    /// The call was sent and its answer was lost (the connection broke or
    /// the deadline passed mid-call, a commit no synchronous standby
    /// confirmed): it may or may not have taken effect. Read before redoing
    /// anything that is not idempotent.
    OutcomeUnknown,
    /// Anything else: a failure inside the library (a lock poisoned by a
    /// panic, a thread that could not start).
    Other,
}

impl BackendErrorKind {
    pub const ALL: [BackendErrorKind; 7] = [
        BackendErrorKind::Busy,
        BackendErrorKind::Timeout,
        BackendErrorKind::Unreachable,
        BackendErrorKind::Refused,
        BackendErrorKind::Corrupt,
        BackendErrorKind::OutcomeUnknown,
        BackendErrorKind::Other,
    ];

    /// The stable text, lower_snake: `"outcome_unknown"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            BackendErrorKind::Busy => "busy",
            BackendErrorKind::Timeout => "timeout",
            BackendErrorKind::Unreachable => "unreachable",
            BackendErrorKind::Refused => "refused",
            BackendErrorKind::Corrupt => "corrupt",
            BackendErrorKind::OutcomeUnknown => "outcome_unknown",
            BackendErrorKind::Other => "other",
        }
    }

    /// The kind for its text, e.g. `"busy"`.
    pub fn from_name(name: &str) -> Option<BackendErrorKind> {
        BackendErrorKind::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
    }
}

impl fmt::Display for BackendErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The driver's error behind a backend failure, shared so that [`Error`]
/// stays `Clone`.
pub type BackendSource = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// A backend failure: its kind, its message and, when a driver reported it,
/// its source. Build one with [`Error::backend`] or [`Error::backend_from`].
/// Two are equal when kind and message are, and both have no source or the
/// same one.
#[derive(Clone)]
#[non_exhaustive]
pub struct BackendError {
    kind: BackendErrorKind,
    message: String,
    source: Option<BackendSource>,
}

impl BackendError {
    pub fn kind(&self) -> BackendErrorKind {
        self.kind
    }

    /// What failed, for people (the source's text included, since the other
    /// faces carry only the message); never parse it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The driver's error (`rusqlite::Error`, `tokio_postgres::Error`,
    /// `std::io::Error`, ...), for `downcast_ref`.
    pub fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl fmt::Debug for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendError")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("source", &self.source)
            .finish()
    }
}

impl PartialEq for BackendError {
    fn eq(&self, other: &BackendError) -> bool {
        self.kind == other.kind
            && self.message == other.message
            && match (&self.source, &other.source) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            }
    }
}

impl Eq for BackendError {}

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
            Error::Rejected { code, .. } => *code,
        }
    }

    /// A backend failure of `kind` without a source.
    pub fn backend(kind: BackendErrorKind, message: impl Into<String>) -> Error {
        Error::Backend(BackendError {
            kind,
            message: message.into(),
            source: None,
        })
    }

    /// A backend failure of `kind` caused by `source` (a driver's error).
    pub fn backend_from(
        kind: BackendErrorKind,
        message: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Error {
        Error::Backend(BackendError {
            kind,
            message: message.into(),
            source: Some(Arc::from(source.into())),
        })
    }

    /// The kind of a `BACKEND` error; `None` for every other code.
    pub fn backend_kind(&self) -> Option<BackendErrorKind> {
        match self {
            Error::Backend(b) => Some(b.kind),
            _ => None,
        }
    }

    /// The same error with `place` (a file, a host) added to a backend
    /// failure's message as `" ({place})"`; other errors are returned
    /// unchanged.
    #[cfg(feature = "sqlite")]
    pub(crate) fn at(self, place: impl fmt::Display) -> Error {
        match self {
            Error::Backend(mut b) => {
                b.message = format!("{} ({place})", b.message);
                Error::Backend(b)
            }
            other => other,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::InvalidArgument(message.into())
    }
}

/// One detail an error carries. This list, with [`Error::details`], is the
/// one place the details are written down: every face (C, Python, Node, the
/// CLI's JSON, the scenario runner) derives its fields from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    Scope,
    Key,
    Holder,
    Presented,
    Current,
    Last,
    Expected,
    Actual,
    Token,
    Remaining,
    CurrentToken,
    CurrentHolder,
    /// `BACKEND`: the [`BackendErrorKind`] as its text (`"outcome_unknown"`).
    Kind,
}

/// What a field holds, and so how each face spells its value.
// Exhaustive on purpose: each face spells each kind of value its own way,
// so a new one must fail their builds, not fall into a `_` arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DetailKind {
    /// Text: a scope, key or holder.
    Text,
    /// A token, seq or version (0..=2^63-1): decimal text in JSON, `bigint`
    /// in JavaScript, `uint64_t` in C, `int` in Python.
    Number,
    /// A duration: milliseconds in C, JSON and JavaScript (the name gains
    /// `_ms` / `Ms`), seconds as a float in Python.
    Duration,
    /// A number that may be absent: `null`/`None`, 0 in C.
    OptionalNumber,
    /// Text that may be absent: `null`/`None`, NULL in C.
    OptionalText,
}

/// A detail's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail<'a> {
    Text(&'a str),
    Number(u64),
    Duration(Duration),
    OptionalNumber(Option<u64>),
    OptionalText(Option<&'a str>),
}

impl Field {
    pub const ALL: [Field; 13] = [
        Field::Scope,
        Field::Key,
        Field::Holder,
        Field::Presented,
        Field::Current,
        Field::Last,
        Field::Expected,
        Field::Actual,
        Field::Token,
        Field::Remaining,
        Field::CurrentToken,
        Field::CurrentHolder,
        Field::Kind,
    ];

    /// The name, snake_case, as Python spells the attribute.
    pub const fn name(self) -> &'static str {
        match self {
            Field::Scope => "scope",
            Field::Key => "key",
            Field::Holder => "holder",
            Field::Presented => "presented",
            Field::Current => "current",
            Field::Last => "last",
            Field::Expected => "expected",
            Field::Actual => "actual",
            Field::Token => "token",
            Field::Remaining => "remaining",
            Field::CurrentToken => "current_token",
            Field::CurrentHolder => "current_holder",
            Field::Kind => "kind",
        }
    }

    /// The name where durations are milliseconds (JSON, C, and in camelCase
    /// JavaScript): `remaining_ms`; other fields keep [`Field::name`].
    pub const fn json_name(self) -> &'static str {
        match self.kind() {
            DetailKind::Duration => match self {
                Field::Remaining => "remaining_ms",
                _ => self.name(),
            },
            _ => self.name(),
        }
    }

    pub const fn kind(self) -> DetailKind {
        match self {
            Field::Scope | Field::Key | Field::Holder | Field::Kind => DetailKind::Text,
            Field::Presented
            | Field::Current
            | Field::Last
            | Field::Expected
            | Field::Actual
            | Field::Token => DetailKind::Number,
            Field::Remaining => DetailKind::Duration,
            Field::CurrentToken => DetailKind::OptionalNumber,
            Field::CurrentHolder => DetailKind::OptionalText,
        }
    }
}

impl Detail<'_> {
    /// Milliseconds, saturating: how C, JSON and JavaScript carry a duration.
    pub fn millis(d: Duration) -> u64 {
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
    }
}

/// Where [`Error::from_details`] reads each field: JSON, an example, ...
pub(crate) trait DetailSource {
    fn text(&self, field: Field) -> Option<String>;
    /// Numbers, and durations as milliseconds.
    fn number(&self, field: Field) -> Option<u64>;
    /// The message of an error without details (`INVALID_ARGUMENT`, `BACKEND`).
    fn message(&self) -> String;
}

impl Error {
    /// The details, in order: `(field, value)`. Codes without details give
    /// none.
    pub fn details(&self) -> impl Iterator<Item = (Field, Detail<'_>)> {
        use Detail::*;
        let list: [Option<(Field, Detail<'_>)>; 4] = match self {
            Error::StaleToken {
                scope,
                presented,
                current,
            } => [
                Some((Field::Scope, Text(scope))),
                Some((Field::Presented, Number(presented.get()))),
                Some((Field::Current, Number(*current))),
                None,
            ],
            Error::SequenceOutOfOrder { presented, last } => [
                Some((Field::Presented, Number(*presented))),
                Some((Field::Last, Number(*last))),
                None,
                None,
            ],
            Error::VersionMismatch { expected, actual } => [
                Some((Field::Expected, Number(*expected))),
                Some((Field::Actual, Number(*actual))),
                None,
                None,
            ],
            Error::NotFound { scope, key } => [
                Some((Field::Scope, Text(scope))),
                Some((Field::Key, Text(key))),
                None,
                None,
            ],
            Error::LeaseHeld {
                scope,
                holder,
                token,
                remaining,
            } => [
                Some((Field::Scope, Text(scope))),
                Some((Field::Holder, Text(holder))),
                Some((Field::Token, Number(token.get()))),
                Some((Field::Remaining, Duration(*remaining))),
            ],
            Error::LeaseLost { scope, current } => [
                Some((Field::Scope, Text(scope))),
                Some((
                    Field::CurrentToken,
                    OptionalNumber(current.as_ref().map(|(t, _)| t.get())),
                )),
                Some((
                    Field::CurrentHolder,
                    OptionalText(current.as_ref().map(|(_, h)| h.as_str())),
                )),
                None,
            ],
            Error::Backend(b) => [Some((Field::Kind, Text(b.kind.as_str()))), None, None, None],
            Error::TokenExhausted
            | Error::InvalidArgument(_)
            | Error::Timeout
            | Error::Closed
            | Error::Rejected { .. } => [None, None, None, None],
        };
        list.into_iter().flatten()
    }

    /// The details as a JSON object, as the CLI's `--json`, the scenario
    /// files and the PostgreSQL backend's DETAIL spell them: numbers as
    /// decimal text, durations as milliseconds (`remaining_ms`), absent
    /// values as `null`.
    pub fn details_json(&self) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::Value;
        self.details()
            .map(|(field, detail)| {
                let value = match detail {
                    Detail::Text(t) => Value::from(t),
                    Detail::Number(n) => Value::from(n.to_string()),
                    Detail::Duration(d) => Value::from(Detail::millis(d)),
                    Detail::OptionalNumber(n) => n.map_or(Value::Null, |n| n.to_string().into()),
                    Detail::OptionalText(t) => t.map_or(Value::Null, Value::from),
                };
                (field.json_name().to_owned(), value)
            })
            .collect()
    }

    /// An error of `code` built from its details. A missing or out-of-range
    /// detail takes its neutral value (empty text, 0; `Token::MAX` for a
    /// token, which must not be 0), never a failure.
    pub(crate) fn from_details(code: ErrorCode, source: &impl DetailSource) -> Error {
        let text = |f| source.text(f).unwrap_or_default();
        let number = |f| source.number(f).unwrap_or(0);
        let token = |f| source.number(f).and_then(Token::new);
        match code {
            ErrorCode::StaleToken => Error::StaleToken {
                scope: text(Field::Scope),
                presented: token(Field::Presented).unwrap_or(Token::MAX),
                current: number(Field::Current),
            },
            ErrorCode::SequenceOutOfOrder => Error::SequenceOutOfOrder {
                presented: number(Field::Presented),
                last: number(Field::Last),
            },
            ErrorCode::VersionMismatch => Error::VersionMismatch {
                expected: number(Field::Expected),
                actual: number(Field::Actual),
            },
            ErrorCode::NotFound => Error::NotFound {
                scope: text(Field::Scope),
                key: text(Field::Key),
            },
            ErrorCode::LeaseHeld => Error::LeaseHeld {
                scope: text(Field::Scope),
                holder: text(Field::Holder),
                token: token(Field::Token).unwrap_or(Token::MAX),
                remaining: Duration::from_millis(number(Field::Remaining)),
            },
            ErrorCode::LeaseLost => Error::LeaseLost {
                scope: text(Field::Scope),
                current: token(Field::CurrentToken).map(|t| (t, text(Field::CurrentHolder))),
            },
            ErrorCode::TokenExhausted => Error::TokenExhausted,
            ErrorCode::InvalidArgument => Error::InvalidArgument(source.message()),
            ErrorCode::Timeout => Error::Timeout,
            // A kind the source does not name is not guessed: `other`.
            ErrorCode::Backend => Error::backend(
                source
                    .text(Field::Kind)
                    .and_then(|k| BackendErrorKind::from_name(&k))
                    .unwrap_or(BackendErrorKind::Other),
                source.message(),
            ),
            ErrorCode::Closed => Error::Closed,
        }
    }

    /// An error of `code` with every detail present and distinct from the
    /// others and from 0 / empty: for the faces' tests that each detail
    /// reaches their callers under its name.
    pub fn example(code: ErrorCode) -> Error {
        struct Example;
        impl DetailSource for Example {
            fn text(&self, field: Field) -> Option<String> {
                if field == Field::Kind {
                    return Some(BackendErrorKind::OutcomeUnknown.as_str().to_owned());
                }
                Some(format!("{}-example", field.name()))
            }
            fn number(&self, field: Field) -> Option<u64> {
                let index = Field::ALL.iter().position(|f| *f == field).unwrap_or(0);
                Some(1000 + index as u64)
            }
            fn message(&self) -> String {
                "example".to_owned()
            }
        }
        Error::from_details(code, &Example)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_belongs_to_a_code_and_examples_fill_every_field() {
        let mut used = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            let e = Error::example(code);
            assert_eq!(e.code(), code);
            for (field, detail) in e.details() {
                used.insert(field);
                let kind = match detail {
                    Detail::Text(t) => {
                        assert!(!t.is_empty());
                        DetailKind::Text
                    }
                    Detail::Number(n) => {
                        assert_ne!(n, 0);
                        DetailKind::Number
                    }
                    Detail::Duration(d) => {
                        assert!(!d.is_zero());
                        DetailKind::Duration
                    }
                    Detail::OptionalNumber(n) => {
                        assert!(n.is_some());
                        DetailKind::OptionalNumber
                    }
                    Detail::OptionalText(t) => {
                        assert!(t.is_some());
                        DetailKind::OptionalText
                    }
                };
                assert_eq!(field.kind(), kind, "{code} {field:?}");
            }
        }
        for field in Field::ALL {
            assert!(used.contains(&field), "{field:?} is in no error");
        }
    }

    #[test]
    fn type_names_are_distinct_and_end_in_error() {
        let names: std::collections::HashSet<_> =
            ErrorCode::ALL.iter().map(|c| c.type_name()).collect();
        assert_eq!(names.len(), ErrorCode::ALL.len());
        assert!(names.iter().all(|n| n.ends_with("Error")));
    }

    #[test]
    fn json_names_are_distinct() {
        let names: std::collections::HashSet<_> =
            Field::ALL.iter().map(|f| f.json_name()).collect();
        assert_eq!(names.len(), Field::ALL.len());
        assert_eq!(Field::Remaining.json_name(), "remaining_ms");
    }
}
