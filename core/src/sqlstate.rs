//! The SQLSTATEs the PostgreSQL backend raises (class `FN`), and their
//! mapping back to [`Error`]: for the store's own calls, and for callers who
//! run `fencing.check(scope, token)` inside their own transaction through any
//! driver and want the same typed error.

use serde_json::Value;

use crate::error::{DetailSource, Error, ErrorCode, Field};

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
        let json: Value = detail
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(Value::Null);
        Some(Error::from_details(code, &JsonDetails(json)))
    }
}

/// A DETAIL object, read by the fields' JSON names.
struct JsonDetails(Value);

impl DetailSource for JsonDetails {
    fn text(&self, field: Field) -> Option<String> {
        self.0.get(field.json_name())?.as_str().map(str::to_owned)
    }

    fn number(&self, field: Field) -> Option<u64> {
        match self.0.get(field.json_name())? {
            Value::String(s) => s.parse().ok(),
            v => v.as_u64(),
        }
    }

    fn message(&self) -> String {
        let message = self.0.get("message").and_then(Value::as_str);
        message.unwrap_or_default().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::Token;
    use std::time::Duration;

    #[test]
    fn the_details_json_of_every_code_reads_back_the_same() {
        for (state, code) in SQLSTATES {
            let e = Error::example(code);
            let mut json = e.details_json();
            json.insert("message".into(), "example".into());
            let text = Value::Object(json).to_string();
            assert_eq!(Error::from_sqlstate(state, Some(&text)), Some(e), "{code}");
        }
    }

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
