//! One error type with a stable code per outcome (docs/semantics.md,
//! "Error codes"), and its details as one list of named, typed fields
//! ([`Error::details`]) from which every face derives its attributes.

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

/// One detail an error carries. This list, with [`Error::details`], is the
/// one place the details are written down: every face (C, Python, Node, the
/// CLI's JSON, the scenario runner) derives its fields from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
}

/// What a field holds, and so how each face spells its value.
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
    pub const ALL: [Field; 12] = [
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
            Field::Scope | Field::Key | Field::Holder => DetailKind::Text,
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
            Error::TokenExhausted
            | Error::InvalidArgument(_)
            | Error::Timeout
            | Error::Backend(_)
            | Error::Closed => [None, None, None, None],
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
            ErrorCode::Backend => Error::Backend(source.message()),
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
