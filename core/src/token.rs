//! The token domain: u64 in `1..=2^63-1`, canonical decimal text.

use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A lease generation. Strictly increasing per scope; `0` ("none yet") is
/// never a token. The upper bound is `i64::MAX` so that every backend can
/// store a token as a signed 64-bit integer without loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Token(NonZeroU64);

impl Token {
    /// The greatest token: `2^63 - 1`.
    pub const MAX: Token = Token(NonZeroU64::new(i64::MAX as u64).unwrap());
    /// The first token a scope issues.
    pub const FIRST: Token = Token(NonZeroU64::MIN);

    /// `Some` when `value` is in `1..=Token::MAX`.
    pub const fn new(value: u64) -> Option<Token> {
        if value > i64::MAX as u64 {
            return None;
        }
        match NonZeroU64::new(value) {
            Some(v) => Some(Token(v)),
            None => None,
        }
    }

    /// Like [`Token::new`], but an out-of-range value is `INVALID_ARGUMENT`.
    pub fn try_from_u64(value: u64) -> Result<Token> {
        Token::new(value).ok_or_else(|| {
            Error::invalid(format!(
                "token {value} is out of range 1..={}",
                Token::MAX.get()
            ))
        })
    }

    pub const fn get(self) -> u64 {
        self.0.get()
    }

    /// The next token, or `None` at [`Token::MAX`] (tokens never wrap).
    pub const fn checked_next(self) -> Option<Token> {
        Token::new(self.get() + 1)
    }

    /// The token after `counter` (0 = nothing issued yet), or `TOKEN_EXHAUSTED`.
    pub(crate) fn after(counter: u64) -> Result<Token> {
        Token::new(counter.saturating_add(1)).ok_or(Error::TokenExhausted)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.get(), f)
    }
}

impl From<Token> for u64 {
    fn from(t: Token) -> u64 {
        t.get()
    }
}

impl TryFrom<u64> for Token {
    type Error = Error;
    fn try_from(value: u64) -> Result<Token> {
        Token::try_from_u64(value)
    }
}

/// Parses canonical decimal text (`0|[1-9][0-9]*`, at most 19 digits, in
/// range). Returns the raw value, so `"0"` ("none") parses to 0.
pub fn parse_token_value(text: &str) -> Result<u64> {
    let bad = || Error::invalid(format!("not a canonical decimal token: {:?}", clip(text)));
    // Numbers outside the range say so, with the range: the fix is another
    // number, not another spelling.
    let out_of_range = || {
        Error::invalid(format!(
            "token {} is out of range: tokens are 1..={}",
            clip(text),
            Token::MAX.get()
        ))
    };
    let bytes = text.as_bytes();
    let digits = |b: &[u8]| !b.is_empty() && b.iter().all(u8::is_ascii_digit) && b[0] != b'0';
    if let Some(rest) = bytes.strip_prefix(b"-") {
        return Err(if digits(rest) { out_of_range() } else { bad() });
    }
    if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    if bytes.len() > 1 && bytes[0] == b'0' {
        return Err(bad());
    }
    if bytes.len() > 19 {
        return Err(out_of_range());
    }
    // At most 19 digits always fit in u64 (which has 20), so this cannot overflow.
    let value: u64 = text.parse().map_err(|_| bad())?;
    if value > Token::MAX.get() {
        return Err(out_of_range());
    }
    Ok(value)
}

impl FromStr for Token {
    type Err = Error;
    /// Canonical decimal only; `"0"` is not a token and is `INVALID_ARGUMENT`.
    fn from_str(text: &str) -> Result<Token> {
        let value = parse_token_value(text)?;
        Token::new(value).ok_or_else(|| Error::invalid("token 0 means \"none\" and is never valid"))
    }
}

/// Shortens hostile input before it is echoed in an error message.
pub(crate) fn clip(text: &str) -> String {
    const LIMIT: usize = 64;
    if text.len() <= LIMIT {
        return text.to_owned();
    }
    let mut end = LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_canonical_text_only() {
        assert_eq!("1".parse::<Token>().unwrap().get(), 1);
        assert_eq!(
            "9007199254740993".parse::<Token>().unwrap().get(),
            (1u64 << 53) + 1
        );
        assert_eq!("9223372036854775807".parse::<Token>().unwrap(), Token::MAX);
        for bad in [
            "",
            "0",
            "00",
            "01",
            "+1",
            "-1",
            " 1",
            "1 ",
            "1e3",
            "1.0",
            "0x10",
            "١",
            "9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999",
        ] {
            let err = bad.parse::<Token>().unwrap_err();
            assert_eq!(err.code(), crate::ErrorCode::InvalidArgument, "{bad:?}");
        }
        assert_eq!(parse_token_value("0").unwrap(), 0);
    }

    #[test]
    fn a_number_out_of_range_names_the_range() {
        for (text, says) in [
            (
                "9223372036854775808",
                "out of range: tokens are 1..=9223372036854775807",
            ),
            ("99999999999999999999", "out of range"),
            ("-1", "out of range"),
            ("01", "not a canonical decimal token"),
            ("-01", "not a canonical decimal token"),
            ("1e3", "not a canonical decimal token"),
        ] {
            let err = text.parse::<Token>().unwrap_err().to_string();
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }

    #[test]
    fn display_round_trips() {
        for v in [1, 42, (1u64 << 53) + 1, i64::MAX as u64] {
            let t = Token::new(v).unwrap();
            assert_eq!(t.to_string().parse::<Token>().unwrap(), t);
        }
    }

    #[test]
    fn range_and_increment() {
        assert!(Token::new(0).is_none());
        assert!(Token::new(i64::MAX as u64 + 1).is_none());
        assert_eq!(Token::MAX.checked_next(), None);
        assert_eq!(Token::FIRST.checked_next().unwrap().get(), 2);
        assert_eq!(Token::after(0).unwrap(), Token::FIRST);
        assert_eq!(
            Token::after(Token::MAX.get()).unwrap_err(),
            Error::TokenExhausted
        );
    }
}
