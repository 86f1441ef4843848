//! Token text: canonical decimal both ways, by the core's rules.

use std::ffi::{c_char, CString};

use fencing::Token;

use crate::args;
use crate::boundary::boundary;
use crate::status::fencing_status;

/// Parses canonical decimal text (`0|[1-9][0-9]*`, at most 19 digits, at
/// most `FENCING_MAX_TOKEN`) into `*out`. Anything else (a sign, a leading
/// zero, spaces, an exponent, a value out of range) is INVALID_ARGUMENT.
/// `"0"` parses to 0 ("none"), which every call taking a token refuses;
/// the same text form serves seq and version numbers.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_token_parse(text: *const c_char, out: *mut u64) -> fencing_status {
    boundary(|| {
        let text = args::text(text, "text")?;
        let out = args::out(out, "out")?;
        out.set(fencing::parse_token_value(text)?);
        Ok(())
    })
}

/// Writes `value` (`0..=FENCING_MAX_TOKEN`) as canonical decimal text and a
/// NUL into `buf` (`len` bytes; `FENCING_TOKEN_TEXT_CAPACITY` always
/// suffices) and its length without the NUL to `*out_n`. INVALID_ARGUMENT
/// above `FENCING_MAX_TOKEN`; BUFFER_TOO_SMALL (nothing written) when the
/// text does not fit.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_token_format(
    value: u64,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> fencing_status {
    boundary(|| {
        let buf = args::out(buf, "buf")?;
        let out_n = args::out(out_n, "out_n")?;
        let text = match value {
            0 => "0".to_owned(),
            v => Token::try_from_u64(v)?.to_string(),
        };
        let text = CString::new(text).unwrap_or_default();
        args::copy_text(&text, buf, len, out_n, "the token text")
    })
}
