//! The token text form: `parse_token_value` and `Token::from_str` agree,
//! accept exactly the canonical decimal form (`0|[1-9][0-9]*`, at most 19
//! digits, at most 2^63-1), and parse -> Display -> parse round-trips.
#![no_main]

use fencing::{parse_token_value, ErrorCode, Token};
use libfuzzer_sys::fuzz_target;

/// The grammar, written out independently of the parser under test.
fn canonical(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let digits = !b.is_empty() && b.len() <= 19 && b.iter().all(u8::is_ascii_digit);
    if !digits || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    let mut v: u64 = 0;
    for d in b {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    (v <= i64::MAX as u64).then_some(v)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let raw = parse_token_value(text);
    let token = text.parse::<Token>();
    match canonical(text) {
        Some(v) => {
            assert_eq!(raw.as_ref().ok(), Some(&v), "{text:?}");
            // Canonical form: printing gives back exactly the input.
            assert_eq!(v.to_string(), text);
            if v == 0 {
                assert_eq!(token.unwrap_err().code(), ErrorCode::InvalidArgument);
            } else {
                let t = token.expect("a canonical non-zero value is a token");
                assert_eq!(t.get(), v);
                assert_eq!(t.to_string(), text);
                assert_eq!(t.to_string().parse::<Token>().unwrap(), t);
                assert_eq!(Token::new(v), Some(t));
            }
        }
        None => {
            assert_eq!(
                raw.unwrap_err().code(),
                ErrorCode::InvalidArgument,
                "{text:?}"
            );
            assert_eq!(
                token.unwrap_err().code(),
                ErrorCode::InvalidArgument,
                "{text:?}"
            );
        }
    }
    // The numeric side: any u64 either is a token that prints canonically or
    // is refused by every constructor.
    if data.len() >= 8 {
        let n = u64::from_le_bytes(data[..8].try_into().unwrap());
        match Token::new(n) {
            Some(t) => {
                assert!((1..=i64::MAX as u64).contains(&n));
                assert_eq!(t.to_string().parse::<Token>().unwrap(), t);
                assert_eq!(parse_token_value(&n.to_string()).unwrap(), n);
            }
            None => {
                assert!(n == 0 || n > i64::MAX as u64);
                assert_eq!(
                    Token::try_from_u64(n).unwrap_err().code(),
                    ErrorCode::InvalidArgument
                );
            }
        }
    }
});
