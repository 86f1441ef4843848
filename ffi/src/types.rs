//! The plain structs that cross the C ABI, and their conversions.

use std::ffi::c_char;
use std::time::UNIX_EPOCH;

use fencing::{Error, Fence, Lease, MetricsSnapshot, Op, Receipt, ScopeStatus};

use crate::args;
use crate::boundary::Failure;
use crate::{FENCING_HOLDER_CAPACITY, FENCING_SCOPE_CAPACITY};

/// What a write (or a checked read) presents. Zero-initialise it and set
/// `token`: `fencing_fence f = { .token = t };` presents no seq and no
/// holder.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fencing_fence {
    /// The lease's token, `1..=FENCING_MAX_TOKEN`.
    pub token: u64,
    /// Operation number inside this token's generation
    /// (`0..=FENCING_MAX_TOKEN`), used only when `has_seq` is true.
    pub seq: u64,
    pub has_seq: bool,
    /// Who presents it (1..=256 bytes of UTF-8), recorded with rejections and
    /// never trusted; NULL for none.
    pub holder: *const c_char,
}

/// `fencing_op.kind`: store `value` under `key`.
pub const FENCING_OP_PUT: u32 = 1;
/// `fencing_op.kind`: delete `key`.
pub const FENCING_OP_DELETE: u32 = 2;

/// One write of a batch (`fencing_apply`) or a conditional write
/// (`fencing_execute`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fencing_op {
    /// `FENCING_OP_PUT` or `FENCING_OP_DELETE`; anything else (0 included)
    /// is INVALID_ARGUMENT.
    pub kind: u32,
    /// 1..=1024 bytes of UTF-8, NUL-terminated.
    pub key: *const c_char,
    /// Put only: `value_len` bytes (NULL allowed when `value_len` is 0).
    pub value: *const u8,
    pub value_len: usize,
    /// Apply only when the entry is at `expected_version` (0: must not
    /// exist); used only when `has_expected_version` is true.
    pub has_expected_version: bool,
    pub expected_version: u64,
}

/// The outcome of one accepted put or delete.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct fencing_receipt {
    /// The entry's version after the write; 0 after a delete.
    pub version: u64,
    /// The token the write was accepted with.
    pub token: u64,
}

/// A lease: permission with a deadline.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fencing_lease {
    pub token: u64,
    pub ttl_ms: u64,
    /// Time left when the store produced this value, on the store's own
    /// clock (client clock skew does not distort it).
    pub remaining_ms: u64,
    /// The expiry as wall-clock time, milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
    /// The holder label, NUL-terminated UTF-8.
    pub holder: [c_char; FENCING_HOLDER_CAPACITY],
    /// The scope the lease is on, NUL-terminated UTF-8: the struct is
    /// self-contained (no pointer, nothing to free), like `holder`.
    pub scope: [c_char; FENCING_SCOPE_CAPACITY],
}

/// Everything known about one scope (`fencing_scope_status`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct fencing_scope_info {
    /// The greatest token issued (0: none).
    pub counter: u64,
    /// The greatest token accepted (0: none).
    pub fence: u64,
    /// The number of entries in the scope.
    pub entries: u64,
    /// Whether a lease is live; `lease` is meaningful only then.
    pub has_lease: bool,
    pub lease: fencing_lease,
}

/// A point-in-time copy of a store handle's counters
/// (`fencing_metrics_snapshot`); the rejection history is read with
/// `fencing_rejections`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct fencing_metrics {
    /// Tokens issued by next_token and acquire.
    pub tokens_issued: u64,
    pub leases_acquired: u64,
    /// Acquisitions refused because a lease was held.
    pub acquire_conflicts: u64,
    pub renewals: u64,
    pub renewal_failures: u64,
    /// Leases released early.
    pub releases: u64,
    /// Fenced writes accepted (a batch counts once).
    pub writes_accepted: u64,
    /// Operations rejected with STALE_TOKEN.
    pub stale_rejections: u64,
    /// Operations rejected with SEQUENCE_OUT_OF_ORDER.
    pub sequence_rejections: u64,
    /// Writes rejected with VERSION_MISMATCH.
    pub version_conflicts: u64,
    /// Keep-alive renewals late by more than a third of the TTL.
    pub pauses_detected: u64,
    /// The longest such lateness, in milliseconds.
    pub longest_pause_ms: u64,
}

#[inline(always)]
pub(crate) fn fence(ptr: *const fencing_fence, what: &'static str) -> Result<Fence, Failure> {
    let raw = args::object(ptr, what)?;
    // A zero-initialised `fencing_fence` is the likely mistake: say so.
    if raw.token == 0 {
        return Err(
            Error::InvalidArgument("token 0 means none: did you set fence.token?".into()).into(),
        );
    }
    let mut fence = Fence::new(args::token(raw.token)?);
    if raw.has_seq {
        fence.seq = Some(raw.seq);
    }
    if let Some(holder) = args::optional_text(raw.holder, "fence.holder")? {
        fence.holder = Some(holder.to_owned());
    }
    Ok(fence)
}

pub(crate) fn op(raw: &fencing_op) -> Result<Op, Failure> {
    let key = args::text(raw.key, "op.key")?;
    let op = match raw.kind {
        FENCING_OP_PUT => Op::put(key, args::bytes(raw.value, raw.value_len, "op.value")?),
        FENCING_OP_DELETE => Op::delete(key),
        other => {
            return Err(Error::InvalidArgument(format!(
                "op.kind {other} is neither FENCING_OP_PUT nor FENCING_OP_DELETE"
            ))
            .into())
        }
    };
    Ok(if raw.has_expected_version {
        op.if_version(raw.expected_version)
    } else {
        op
    })
}

impl From<Receipt> for fencing_receipt {
    fn from(r: Receipt) -> fencing_receipt {
        fencing_receipt {
            version: r.version,
            token: r.token.get(),
        }
    }
}

pub(crate) fn lease(l: &Lease) -> Result<fencing_lease, Failure> {
    Ok(fencing_lease {
        token: l.token.get(),
        ttl_ms: args::millis(l.ttl),
        remaining_ms: args::millis(l.remaining),
        expires_at_ms: l
            .expires_at
            .duration_since(UNIX_EPOCH)
            .map_or(0, args::millis),
        holder: c_text(&l.holder, "holder")?,
        scope: c_text(&l.scope, "scope")?,
    })
}

/// A lease the caller hands back (`fencing_keep_alive`): the token checked
/// as any token from C, the names as any text from C.
pub(crate) fn lease_from(c: &fencing_lease) -> Result<Lease, Failure> {
    Ok(Lease {
        scope: owned_text(&c.scope, "lease.scope")?,
        holder: owned_text(&c.holder, "lease.holder")?,
        token: args::token(c.token)?,
        ttl: args::duration(c.ttl_ms),
        // Checked: a system time far from the epoch overflows on Windows.
        expires_at: UNIX_EPOCH
            .checked_add(args::duration(c.expires_at_ms))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "lease.expires_at_ms {} is past what this system's clock can hold",
                    c.expires_at_ms
                ))
            })?,
        remaining: args::duration(c.remaining_ms),
    })
}

/// The text of a fixed array up to its NUL, which must be inside it.
fn owned_text(array: &[c_char], what: &'static str) -> Result<String, Failure> {
    let bytes: Vec<u8> = array
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    if bytes.len() == array.len() {
        let message = format!("{what} has no NUL within its {} bytes", array.len());
        return Err(Error::InvalidArgument(message).into());
    }
    String::from_utf8(bytes).map_err(|_| Failure::Utf8(what))
}

/// A name from the store in a fixed NUL-terminated array.
fn c_text<const N: usize>(text: &str, what: &str) -> Result<[c_char; N], Failure> {
    let mut out = [0 as c_char; N];
    let bytes = text.as_bytes();
    if bytes.len() >= N || bytes.contains(&0) {
        return Err(Error::backend(
            fencing::BackendErrorKind::Corrupt,
            format!(
                "the store returned a {what} of {} bytes that is not a valid {what}",
                bytes.len()
            ),
        )
        .into());
    }
    for (dst, src) in out.iter_mut().zip(bytes) {
        *dst = *src as c_char;
    }
    Ok(out)
}

/// The zeroed lease of a struct whose `has_lease` is false.
pub(crate) fn no_lease() -> fencing_lease {
    fencing_lease {
        token: 0,
        ttl_ms: 0,
        remaining_ms: 0,
        expires_at_ms: 0,
        holder: [0; FENCING_HOLDER_CAPACITY],
        scope: [0; FENCING_SCOPE_CAPACITY],
    }
}

pub(crate) fn scope_info(s: &ScopeStatus) -> Result<fencing_scope_info, Failure> {
    let (has_lease, lease) = match &s.lease {
        Some(l) => (true, lease(l)?),
        None => (false, no_lease()),
    };
    Ok(fencing_scope_info {
        counter: s.counter,
        fence: s.fence,
        entries: s.entries,
        has_lease,
        lease,
    })
}

impl fencing_metrics {
    /// The field of the core's counter `name`, if this struct has one (a
    /// test checks that it has one for each).
    fn slot(&mut self, name: &str) -> Option<&mut u64> {
        Some(match name {
            "tokens_issued" => &mut self.tokens_issued,
            "leases_acquired" => &mut self.leases_acquired,
            "acquire_conflicts" => &mut self.acquire_conflicts,
            "renewals" => &mut self.renewals,
            "renewal_failures" => &mut self.renewal_failures,
            "releases" => &mut self.releases,
            "writes_accepted" => &mut self.writes_accepted,
            "stale_rejections" => &mut self.stale_rejections,
            "sequence_rejections" => &mut self.sequence_rejections,
            "version_conflicts" => &mut self.version_conflicts,
            "pauses_detected" => &mut self.pauses_detected,
            "longest_pause_ms" => &mut self.longest_pause_ms,
            _ => return None,
        })
    }
}

/// Filled from the core's list of counters (`MetricsSnapshot::counters`).
impl From<&MetricsSnapshot> for fencing_metrics {
    fn from(m: &MetricsSnapshot) -> fencing_metrics {
        let mut out = fencing_metrics::default();
        for (name, _, value) in m.counters() {
            if let Some(slot) = out.slot(name) {
                *slot = value;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_of_the_core_has_its_field() {
        let core = MetricsSnapshot::default().counters();
        let mut m = fencing_metrics::default();
        for (name, _, _) in &core {
            assert!(m.slot(name).is_some(), "fencing_metrics lacks {name}");
        }
        // And no field the core does not fill.
        let fields = std::mem::size_of::<fencing_metrics>() / std::mem::size_of::<u64>();
        assert_eq!(fields, core.len());
    }
}
