//! The SQLSTATEs the PostgreSQL backend raises (class `FN`), and their
//! mapping back to [`Error`]: for the store's own calls, and for callers who
//! run `fencing.check(scope, token)` inside their own transaction through any
//! driver and want the same typed error.

use std::time::Duration;

use serde_json::Value;

use crate::error::{Error, ErrorCode};
use crate::token::Token;

/// `(SQLSTATE, code)`: never renumbered once released.
pub const SQLSTATES: [(&str, ErrorCode); 8] = [
    ("FN001", ErrorCode::StaleToken),
    ("FN002", ErrorCode::SequenceOutOfOrder),
    ("FN003", ErrorCode::VersionMismatch),
    ("FN004", ErrorCode::NotFound),
    ("FN005", ErrorCode::LeaseHeld),
    ("FN006", ErrorCode::LeaseLost),
    ("FN007", ErrorCode::TokenExhausted),
    ("FN008", ErrorCode::InvalidArgument),
];

impl ErrorCode {
    /// The code a fencing SQLSTATE stands for (`"FN001"` is `STALE_TOKEN`).
    pub fn from_sqlstate(sqlstate: &str) -> Option<ErrorCode> {
        SQLSTATES
            .iter()
            .find(|(s, _)| *s == sqlstate)
            .map(|(_, code)| *code)
    }

    /// The SQLSTATE the PostgreSQL backend raises for this code, if any.
    pub fn sqlstate(self) -> Option<&'static str> {
        SQLSTATES.iter().find(|(_, c)| *c == self).map(|(s, _)| *s)
    }
}

impl Error {
    /// The error a fencing SQLSTATE and its DETAIL (JSON) describe, or `None`
    /// for any other SQLSTATE. Missing or malformed details leave the typed
    /// fields at their neutral values (empty text, 0) rather than failing.
    pub fn from_sqlstate(sqlstate: &str, detail: Option<&str>) -> Option<Error> {
        let code = ErrorCode::from_sqlstate(sqlstate)?;
        let d: Value = detail
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(Value::Null);
        let text = |name: &str| d.get(name).and_then(Value::as_str).unwrap_or("").to_owned();
        let number = |name: &str| match d.get(name) {
            Some(Value::String(s)) => s.parse::<u64>().ok(),
            Some(v) => v.as_u64(),
            None => None,
        };
        let token = |name: &str| number(name).and_then(Token::new);
        Some(match code {
            ErrorCode::StaleToken => Error::StaleToken {
                scope: text("scope"),
                presented: token("presented").unwrap_or(Token::MAX),
                current: number("current").unwrap_or(0),
            },
            ErrorCode::SequenceOutOfOrder => Error::SequenceOutOfOrder {
                presented: number("presented").unwrap_or(0),
                last: number("last").unwrap_or(0),
            },
            ErrorCode::VersionMismatch => Error::VersionMismatch {
                expected: number("expected").unwrap_or(0),
                actual: number("actual").unwrap_or(0),
            },
            ErrorCode::NotFound => Error::NotFound {
                scope: text("scope"),
                key: text("key"),
            },
            ErrorCode::LeaseHeld => Error::LeaseHeld {
                scope: text("scope"),
                holder: text("holder"),
                token: token("token").unwrap_or(Token::MAX),
                remaining: Duration::from_millis(number("remaining_ms").unwrap_or(0)),
            },
            ErrorCode::LeaseLost => Error::LeaseLost {
                scope: text("scope"),
                current: token("current_token").map(|t| (t, text("current_holder"))),
            },
            ErrorCode::TokenExhausted => Error::TokenExhausted,
            _ => Error::InvalidArgument(text("message")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sqlstate_maps_both_ways() {
        for (state, code) in SQLSTATES {
            assert_eq!(ErrorCode::from_sqlstate(state), Some(code));
            assert_eq!(code.sqlstate(), Some(state));
            assert_eq!(Error::from_sqlstate(state, None).unwrap().code(), code);
        }
        assert_eq!(ErrorCode::from_sqlstate("23505"), None);
        assert_eq!(Error::from_sqlstate("40001", Some("{}")), None);
        assert_eq!(ErrorCode::Timeout.sqlstate(), None);
    }

    #[test]
    fn details_come_back_typed() {
        let stale = Error::from_sqlstate(
            "FN001",
            Some(
                r#"{"code":"STALE_TOKEN","scope":"r'; DROP","presented":"9223372036854775806","current":"9223372036854775807"}"#,
            ),
        );
        assert_eq!(
            stale,
            Some(Error::StaleToken {
                scope: "r'; DROP".into(),
                presented: Token::new(9223372036854775806).unwrap(),
                current: 9223372036854775807,
            })
        );
        let held = Error::from_sqlstate(
            "FN005",
            Some(r#"{"scope":"s","holder":"b","token":"7","remaining_ms":250}"#),
        );
        assert_eq!(
            held,
            Some(Error::LeaseHeld {
                scope: "s".into(),
                holder: "b".into(),
                token: Token::new(7).unwrap(),
                remaining: Duration::from_millis(250),
            })
        );
        let lost = Error::from_sqlstate(
            "FN006",
            Some(r#"{"scope":"s","current_token":null,"current_holder":null}"#),
        );
        assert_eq!(
            lost,
            Some(Error::LeaseLost {
                scope: "s".into(),
                current: None
            })
        );
        // Garbage details still give the right code.
        let garbled = Error::from_sqlstate("FN003", Some("not json")).unwrap();
        assert_eq!(garbled.code(), ErrorCode::VersionMismatch);
    }
}
