//! Writes through a held lease (`fencing_hold_put` and the rest): the
//! core's `LeaseGuard` presents the lease's own scope and token, so a write
//! cannot name one scope and carry another's token (docs/semantics.md,
//! "Writing through a held lease"). A loss the keep-alive already knows is
//! returned (LEASE_LOST, CLOSED or BACKEND) and nothing is written.

use std::ffi::c_char;

use crate::args;
use crate::boundary::boundary;
use crate::hold::fencing_hold;
use crate::results::fencing_entry;
use crate::status::fencing_status;
use crate::types::{self, fencing_op, fencing_receipt};

/// `fencing_put` in the hold's scope with the hold's token: stores
/// `value_len` bytes at `value` (NULL allowed when `value_len` is 0) under
/// `key`; STALE_TOKEN once a newer holder's token was accepted.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_hold_put(
    hold: *const fencing_hold,
    key: *const c_char,
    value: *const u8,
    value_len: usize,
    out_receipt: *mut fencing_receipt,
) -> fencing_status {
    boundary(|| {
        let hold = args::object(hold, "hold")?;
        let key = args::text(key, "key")?;
        let value = args::bytes(value, value_len, "value")?;
        let out = args::out(out_receipt, "out_receipt")?;
        out.set(hold.guard.put(key, value)?.into());
        Ok(())
    })
}

/// `fencing_delete` in the hold's scope with the hold's token (NOT_FOUND
/// when the key does not exist; the receipt's version is 0).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_hold_delete(
    hold: *const fencing_hold,
    key: *const c_char,
    out_receipt: *mut fencing_receipt,
) -> fencing_status {
    boundary(|| {
        let hold = args::object(hold, "hold")?;
        let key = args::text(key, "key")?;
        let out = args::out(out_receipt, "out_receipt")?;
        out.set(hold.guard.delete(key)?.into());
        Ok(())
    })
}

/// `fencing_execute` through the hold: one put or delete with its condition.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_hold_execute(
    hold: *const fencing_hold,
    op: *const fencing_op,
    out_receipt: *mut fencing_receipt,
) -> fencing_status {
    boundary(|| {
        let hold = args::object(hold, "hold")?;
        let op = types::op(args::object(op, "op")?)?;
        let out = args::out(out_receipt, "out_receipt")?;
        out.set(hold.guard.execute(op)?.into());
        Ok(())
    })
}

/// `fencing_apply` through the hold: `ops_len` puts and deletes (1..=1000)
/// under one check, all or nothing; one receipt per op in `out_receipts`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_hold_apply(
    hold: *const fencing_hold,
    ops: *const fencing_op,
    ops_len: usize,
    out_receipts: *mut fencing_receipt,
) -> fencing_status {
    boundary(|| {
        let hold = args::object(hold, "hold")?;
        let raw = args::items(ops, ops_len, "ops")?;
        let out = if ops_len == 0 {
            None
        } else {
            Some(args::out(out_receipts, "out_receipts")?)
        };
        let ops = raw.iter().map(types::op).collect::<Result<Vec<_>, _>>()?;
        let receipts = hold.guard.apply(ops)?;
        if let Some(out) = out {
            let base = out.as_ptr();
            for (i, r) in receipts.into_iter().take(ops_len).enumerate() {
                // SAFETY: by the contract `out_receipts` holds `ops_len`
                // receipts, and the core returns one per op.
                unsafe { base.add(i).write(r.into()) };
            }
        }
        Ok(())
    })
}

/// `fencing_claim` through the hold: raises its scope's fence to its token.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_hold_claim(hold: *const fencing_hold) -> fencing_status {
    boundary(|| {
        let hold = args::object(hold, "hold")?;
        hold.guard.claim()?;
        Ok(())
    })
}

/// `fencing_get` in the hold's scope, checked with the hold's token
/// (STALE_TOKEN once a newer one was accepted). Writes a new entry to
/// `*out_entry`, or NULL when there is none (free it with
/// `fencing_entry_free`).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_hold_get(
    hold: *const fencing_hold,
    key: *const c_char,
    out_entry: *mut *mut fencing_entry,
) -> fencing_status {
    boundary(|| {
        let hold = args::object(hold, "hold")?;
        let key = args::text(key, "key")?;
        let out = args::out(out_entry, "out_entry")?;
        let entry = hold.guard.get(key)?;
        out.set(entry.map_or(std::ptr::null_mut(), fencing_entry::boxed));
        Ok(())
    })
}
