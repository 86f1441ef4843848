//! Argument validation (check 1 of docs/semantics.md, "The fenced store";
//! the limits are its "Limits"): every input is checked
//! here, before any backend sees it.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::token::clip;
use crate::types::{Fence, OpRef};

pub const MAX_SCOPE_BYTES: usize = 256;
pub const MAX_HOLDER_BYTES: usize = 256;
pub const MAX_KEY_BYTES: usize = 1024;
pub const MAX_VALUE_BYTES: usize = 1 << 20;
pub const MAX_BATCH_OPS: usize = 1000;
pub const MAX_LIST_LIMIT: usize = 1000;
/// Sequence numbers share the token's storage type (signed 64-bit).
pub const MAX_SEQ: u64 = i64::MAX as u64;
pub const MIN_TTL: Duration = Duration::from_millis(1);
pub const MAX_TTL: Duration = Duration::from_secs(366 * 24 * 3600);

fn name(what: &str, text: &str, max: usize) -> Result<()> {
    if text.is_empty() {
        return Err(Error::invalid(format!("{what} must not be empty")));
    }
    if text.len() > max {
        return Err(Error::invalid(format!(
            "{what} is {} bytes, the limit is {max}",
            text.len()
        )));
    }
    if text.as_bytes().contains(&0) {
        return Err(Error::invalid(format!(
            "{what} {:?} contains NUL",
            clip(text)
        )));
    }
    Ok(())
}

pub fn scope(text: &str) -> Result<()> {
    name("scope", text, MAX_SCOPE_BYTES)
}

pub fn holder(text: &str) -> Result<()> {
    name("holder", text, MAX_HOLDER_BYTES)
}

pub fn key(text: &str) -> Result<()> {
    name("key", text, MAX_KEY_BYTES)
}

/// A fenced object's path: a key's limits, named as what it is.
#[cfg(feature = "objects")]
pub(crate) fn object_path(text: &str) -> Result<()> {
    name("object path", text, MAX_KEY_BYTES)
}

pub fn value(bytes: &[u8]) -> Result<()> {
    if bytes.len() > MAX_VALUE_BYTES {
        return Err(Error::invalid(format!(
            "value is {} bytes, the limit is {MAX_VALUE_BYTES}",
            bytes.len()
        )));
    }
    Ok(())
}

/// In milliseconds, the unit of every face but Python's (which says
/// seconds itself): a C or Node caller's `ttl_ms: 0` is told "0 ms".
pub fn ttl(ttl: Duration) -> Result<()> {
    if ttl < MIN_TTL || ttl > MAX_TTL {
        return Err(Error::invalid(format!(
            "ttl {} ms is outside {}..={} ms (1 ms to 366 days)",
            millis(ttl),
            millis(MIN_TTL),
            millis(MAX_TTL)
        )));
    }
    Ok(())
}

/// `d` in milliseconds as a person writes them: `0`, `1500`, `0.5`.
fn millis(d: Duration) -> String {
    let nanos = d.as_nanos();
    let (whole, part) = (nanos / 1_000_000, nanos % 1_000_000);
    if part == 0 {
        whole.to_string()
    } else {
        let part = format!("{part:06}");
        format!("{whole}.{}", part.trim_end_matches('0'))
    }
}

pub fn fence(f: &Fence) -> Result<()> {
    if let Some(seq) = f.seq {
        if seq > MAX_SEQ {
            return Err(Error::invalid(format!("seq {seq} is above {MAX_SEQ}")));
        }
    }
    if let Some(h) = &f.holder {
        holder(h)?;
    }
    Ok(())
}

pub(crate) fn op(op: &OpRef<'_>) -> Result<()> {
    key(op.key)?;
    if let Some(v) = op.value {
        value(v)?;
    }
    expected_version(op.expected_version)
}

/// An expected version, when given, is in the token domain (1..=2^63-1, or
/// 0: must not exist).
pub(crate) fn expected_version(version: Option<u64>) -> Result<()> {
    match version {
        Some(v) if v > MAX_SEQ => Err(Error::invalid(format!(
            "expected_version {v} is out of range"
        ))),
        _ => Ok(()),
    }
}

pub(crate) fn batch(ops: &[OpRef<'_>]) -> Result<()> {
    if ops.is_empty() {
        return Err(Error::invalid(
            "a batch needs at least one operation (use claim to only raise the fence)",
        ));
    }
    if ops.len() > MAX_BATCH_OPS {
        return Err(Error::invalid(format!(
            "a batch of {} operations is over the limit of {MAX_BATCH_OPS}",
            ops.len()
        )));
    }
    ops.iter().try_for_each(op)
}

pub fn list_limit(limit: usize) -> Result<()> {
    if limit == 0 || limit > MAX_LIST_LIMIT {
        return Err(Error::invalid(format!(
            "list limit {limit} is outside 1..={MAX_LIST_LIMIT}"
        )));
    }
    Ok(())
}
