//! The store handle and every operation of the contract.
//!
//! Each function checks all its pointers and strings first, then makes one
//! call to the core, then writes its out-parameters: a call that fails has
//! changed nothing that the core did not decide to change (and the core
//! changes nothing on a failure either).

use std::ffi::c_char;

use fencing::Store;

use crate::args;
use crate::boundary::{boundary, Failure};
use crate::cancel::fencing_cancel;
use crate::results::{fencing_entry, fencing_page, fencing_rejection_list, owned_text};
use crate::status::fencing_status;
use crate::types::{
    self, fencing_fence, fencing_lease, fencing_metrics, fencing_op, fencing_receipt,
    fencing_scope_info,
};

/// A handle on one fencing store. Safe to share between threads: any number
/// of threads may call functions on one handle at once. Free it exactly
/// once, after every other call on it has returned.
pub struct fencing_store {
    store: Store,
}

pub(crate) fn store<'a>(ptr: *const fencing_store) -> Result<&'a Store, Failure> {
    args::object(ptr, "store").map(|s| &s.store)
}

/// Opens the store `url` names and writes a new handle to `*out`:
/// `memory:` (this process only), `sqlite:PATH` (processes on one host) or
/// `postgres://...` / `postgresql://...` (many hosts), with options in the
/// query (`?clock=manual&strict=true`); the grammar and every option are in
/// docs/semantics.md, "URLs and options". A bad URL is INVALID_ARGUMENT; a
/// store that cannot be opened is BACKEND.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_store_open(
    url: *const c_char,
    out: *mut *mut fencing_store,
) -> fencing_status {
    boundary(|| {
        let url = args::text(url, "url")?;
        let out = args::out(out, "out")?;
        let store = Store::open(url)?;
        out.set(Box::into_raw(Box::new(fencing_store { store })));
        Ok(())
    })
}

/// Creates or upgrades the schema of the store `url` names without opening
/// a store (deploy time: `fencing.check` on PostgreSQL and `fencing_check` on
/// SQLite then work before any process opened the store). Idempotent;
/// `memory:` has no schema (FENCING_OK). The same refusals as
/// `fencing_store_open`: a bad URL is INVALID_ARGUMENT, a file or schema
/// fencing did not make (or a newer one) is BACKEND and is left alone.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_migrate(url: *const c_char) -> fencing_status {
    boundary(|| {
        let url = args::text(url, "url")?;
        fencing::migrate(url)?;
        Ok(())
    })
}

/// Frees a handle from `fencing_store_open` (NULL is a no-op). It does not
/// release leases; other handles on the same SQLite file are unaffected.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_store_free(store: *mut fencing_store) {
    crate::boundary::boundary_or((), || args::free_box(store))
}

/// Closes the store: every later call on this handle fails with CLOSED.
/// The handle must still be freed with `fencing_store_free`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_store_close(store: *const fencing_store) -> fencing_status {
    boundary(|| {
        self::store(store)?.close();
        Ok(())
    })
}

/// Writes whether `fencing_store_close` was called on this store (by any
/// handle to it) to `*out_closed`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_store_is_closed(
    store: *const fencing_store,
    out_closed: *mut bool,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        args::out(out_closed, "out_closed")?.set(store.is_closed());
        Ok(())
    })
}

/// Increments the scope's counter and writes the new token to `*out_token`
/// (the first is 1). TOKEN_EXHAUSTED at `FENCING_MAX_TOKEN`; never wraps.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_next_token(
    store: *const fencing_store,
    scope: *const c_char,
    out_token: *mut u64,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let out = args::out(out_token, "out_token")?;
        out.set(store.next_token(scope)?.get());
        Ok(())
    })
}

/// Raises the scope's counter to at least `floor` (never lowers it) and
/// writes the counter to `*out_counter`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_advance_counter(
    store: *const fencing_store,
    scope: *const c_char,
    floor: u64,
    out_counter: *mut u64,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let out = args::out(out_counter, "out_counter")?;
        let floor = args::token(floor)?;
        out.set(store.advance_counter(scope, floor)?);
        Ok(())
    })
}

fn write_lease(out: args::Out<'_, fencing_lease>, lease: &fencing::Lease) -> Result<(), Failure> {
    out.set(types::lease(lease)?);
    Ok(())
}

/// Takes the scope's lease for `holder` for `ttl_ms` (1 ms..=366 days): a
/// new token, and (with eager fencing, the default) the fence raised to it,
/// in one atomic step. LEASE_HELD while another lease is live.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_acquire(
    store: *const fencing_store,
    scope: *const c_char,
    holder: *const c_char,
    ttl_ms: u64,
    out_lease: *mut fencing_lease,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let holder = args::text(holder, "holder")?;
        let out = args::out(out_lease, "out_lease")?;
        write_lease(out, &store.acquire(scope, holder, args::duration(ttl_ms))?)
    })
}

/// Like `fencing_acquire`, but blocks the calling thread (without spinning)
/// until the lease is free or `timeout_ms` of real time passed (TIMEOUT).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_acquire_wait(
    store: *const fencing_store,
    scope: *const c_char,
    holder: *const c_char,
    ttl_ms: u64,
    timeout_ms: u64,
    out_lease: *mut fencing_lease,
) -> fencing_status {
    boundary(|| acquire_waiting(store, scope, holder, ttl_ms, timeout_ms, None, out_lease))
}

/// `fencing_acquire_wait` and its cancellable twin: the wait ends early
/// once `gave_up()` says so (asking it costs a wake-up every 20 ms, so the
/// plain wait does not).
fn acquire_waiting(
    store: *const fencing_store,
    scope: *const c_char,
    holder: *const c_char,
    ttl_ms: u64,
    timeout_ms: u64,
    gave_up: Option<&dyn Fn() -> bool>,
    out_lease: *mut fencing_lease,
) -> Result<(), Failure> {
    let store = self::store(store)?;
    let scope = args::text(scope, "scope")?;
    let holder = args::text(holder, "holder")?;
    let out = args::out(out_lease, "out_lease")?;
    let ttl = args::duration(ttl_ms);
    let timeout = args::duration(timeout_ms);
    let lease = match gave_up {
        Some(gave_up) => store.acquire_wait_unless(scope, holder, ttl, timeout, gave_up)?,
        None => store.acquire_wait(scope, holder, ttl, timeout)?,
    };
    write_lease(out, &lease)
}

/// `fencing_acquire_wait` that another thread can end: once `cancel` is
/// fired (`fencing_cancel_fire`), the wait ends within about 20 ms with
/// TIMEOUT and no lease taken; given a flag already fired, it returns
/// TIMEOUT at once, even for a free scope. A lease it returns is the
/// caller's, as with `fencing_acquire_wait`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_acquire_wait_cancellable(
    store: *const fencing_store,
    scope: *const c_char,
    holder: *const c_char,
    ttl_ms: u64,
    timeout_ms: u64,
    cancel: *const fencing_cancel,
    out_lease: *mut fencing_lease,
) -> fencing_status {
    boundary(|| {
        let cancel = args::object(cancel, "cancel")?;
        let gave_up = || cancel.fired();
        acquire_waiting(
            store,
            scope,
            holder,
            ttl_ms,
            timeout_ms,
            Some(&gave_up),
            out_lease,
        )
    })
}

/// Extends the lease with `token` to expire `ttl_ms` from now, only while it
/// is still the live lease; else LEASE_LOST (naming the live lease, if any).
/// Keep-alive in C is a loop calling this about every ttl/3.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_renew(
    store: *const fencing_store,
    scope: *const c_char,
    token: u64,
    ttl_ms: u64,
    out_lease: *mut fencing_lease,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let out = args::out(out_lease, "out_lease")?;
        let token = args::token(token)?;
        write_lease(out, &store.renew(scope, token, args::duration(ttl_ms))?)
    })
}

/// Ends the lease with `token` if it is still live; `*out_released` tells
/// whether it was. Never touches a newer lease, the counter or the fence.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_release(
    store: *const fencing_store,
    scope: *const c_char,
    token: u64,
    out_released: *mut bool,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let out = args::out(out_released, "out_released")?;
        let token = args::token(token)?;
        out.set(store.release(scope, token)?);
        Ok(())
    })
}

/// Stores `value_len` bytes at `value` (NULL allowed when `value_len` is 0)
/// under `key`, checked against the scope's fence: STALE_TOKEN,
/// SEQUENCE_OUT_OF_ORDER. On success the fence is the token and the receipt
/// goes to `*out_receipt`, which may be NULL when it is not wanted.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_put(
    store: *const fencing_store,
    scope: *const c_char,
    key: *const c_char,
    value: *const u8,
    value_len: usize,
    fence: *const fencing_fence,
    out_receipt: *mut fencing_receipt,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let key = args::text(key, "key")?;
        let value = args::bytes(value, value_len, "value")?;
        let fence = types::fence(fence, "fence")?;
        let receipt = store.put(scope, key, value, &fence)?;
        if let Some(out) = args::optional_out(out_receipt) {
            out.set(receipt.into());
        }
        Ok(())
    })
}

/// Deletes `key`, checked like a put; NOT_FOUND when it does not exist. The
/// receipt's version is 0 (`out_receipt` may be NULL).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_delete(
    store: *const fencing_store,
    scope: *const c_char,
    key: *const c_char,
    fence: *const fencing_fence,
    out_receipt: *mut fencing_receipt,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let key = args::text(key, "key")?;
        let fence = types::fence(fence, "fence")?;
        let receipt = store.delete(scope, key, &fence)?;
        if let Some(out) = args::optional_out(out_receipt) {
            out.set(receipt.into());
        }
        Ok(())
    })
}

/// One put or delete with its condition (`op->has_expected_version`):
/// VERSION_MISMATCH when the entry is not at the expected version
/// (`out_receipt` may be NULL).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_execute(
    store: *const fencing_store,
    scope: *const c_char,
    fence: *const fencing_fence,
    op: *const fencing_op,
    out_receipt: *mut fencing_receipt,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let fence = types::fence(fence, "fence")?;
        let op = types::op(args::object(op, "op")?)?;
        let receipt = store.execute(scope, &fence, op)?;
        if let Some(out) = args::optional_out(out_receipt) {
            out.set(receipt.into());
        }
        Ok(())
    })
}

/// Applies `ops_len` puts and deletes (1..=1000) under one check of the
/// fence, in order, all or nothing. On success writes one receipt per op to
/// `out_receipts` (an array of `ops_len`), or nothing when it is NULL.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_apply(
    store: *const fencing_store,
    scope: *const c_char,
    fence: *const fencing_fence,
    ops: *const fencing_op,
    ops_len: usize,
    out_receipts: *mut fencing_receipt,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let fence = types::fence(fence, "fence")?;
        let raw = args::items(ops, ops_len, "ops")?;
        let out = args::optional_out(out_receipts);
        let ops = raw.iter().map(types::op).collect::<Result<Vec<_>, _>>()?;
        let receipts = store.apply(scope, &fence, ops)?;
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

/// Raises the scope's fence to `fence->token` without writing (checks as a
/// write, seq included), so a new holder shuts out older ones before it reads.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_claim(
    store: *const fencing_store,
    scope: *const c_char,
    fence: *const fencing_fence,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let fence = types::fence(fence, "fence")?;
        store.claim(scope, &fence)?;
        Ok(())
    })
}

/// On an etcd store: checks `fence` against the scope's fence now (as
/// `fencing_claim` does) and writes to `*out_txn` new NUL-terminated text
/// (free it with `fencing_string_free`): the body of an etcd transaction,
/// `POST /v3/kv/txn` on etcd's JSON gateway, whose compares and puts let it
/// commit only while the token is still current, raising the fence with it.
/// Add your own requests to its "success" list and send it with any HTTP
/// client (docs/etcd.md, "Fence your own etcd keys"); `succeeded: false`
/// means the scope changed meanwhile: check again. Other stores:
/// INVALID_ARGUMENT.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_etcd_check(
    store: *const fencing_store,
    scope: *const c_char,
    fence: *const fencing_fence,
    out_txn: *mut *mut c_char,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let fence = types::fence(fence, "fence")?;
        let out = args::out(out_txn, "out_txn")?;
        let txn = store.etcd_check(scope, &fence)?.to_gateway_json();
        out.set(owned_text(&txn.to_string()));
        Ok(())
    })
}

/// Reads `key`. Writes a new entry to `*out_entry`, or NULL when there is no
/// such entry (free it with `fencing_entry_free`). With a non-NULL `fence`
/// the read is checked like a write (STALE_TOKEN) but raises nothing; NULL
/// reads without a token.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_get(
    store: *const fencing_store,
    scope: *const c_char,
    key: *const c_char,
    fence: *const fencing_fence,
    out_entry: *mut *mut fencing_entry,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let key = args::text(key, "key")?;
        let fence = if fence.is_null() {
            None
        } else {
            Some(types::fence(fence, "fence")?)
        };
        let out = args::out(out_entry, "out_entry")?;
        let entry = store.get(scope, key, fence.as_ref())?;
        out.set(entry.map_or(std::ptr::null_mut(), fencing_entry::boxed));
        Ok(())
    })
}

/// Up to `limit` (1..=1000) keys of the scope after `after` (NULL: from the
/// start), in byte order. Writes a new page to `*out_page` (free it with
/// `fencing_page_free`).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_list(
    store: *const fencing_store,
    scope: *const c_char,
    after: *const c_char,
    limit: usize,
    out_page: *mut *mut fencing_page,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let after = args::optional_text(after, "after")?;
        let out = args::out(out_page, "out_page")?;
        out.set(fencing_page::boxed(store.list(scope, after, limit)?)?);
        Ok(())
    })
}

/// Writes the scope's fence (the greatest token accepted; 0: none) to
/// `*out_fence`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_fence_of(
    store: *const fencing_store,
    scope: *const c_char,
    out_fence: *mut u64,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let out = args::out(out_fence, "out_fence")?;
        out.set(store.fence_of(scope)?);
        Ok(())
    })
}

/// Writes the scope's counter, fence, live lease and entry count to `*out`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_scope_status(
    store: *const fencing_store,
    scope: *const c_char,
    out: *mut fencing_scope_info,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let out = args::out(out, "out")?;
        out.set(types::scope_info(&store.status(scope)?)?);
        Ok(())
    })
}

/// Drops the state of a scope that has no live lease (else LEASE_HELD) and
/// no entries (else INVALID_ARGUMENT); scopes created later start above
/// every token it issued or accepted. `*out_retired` tells whether there was
/// state to drop.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_retire(
    store: *const fencing_store,
    scope: *const c_char,
    out_retired: *mut bool,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let scope = args::text(scope, "scope")?;
        let out = args::out(out_retired, "out_retired")?;
        out.set(store.retire(scope)?);
        Ok(())
    })
}

/// The failover step: run once on a new primary promoted from an
/// asynchronous standby (or a restored backup) before anything else uses it.
/// Every counter, fence and floor moves to `FENCING_FAILOVER_STEP` tokens
/// above the store's ceiling (above every value the store held) and every
/// lease ends, so no earlier token is accepted or issued again. Writes that
/// base to `*out_base`: every token at or below it is stale.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_failover(
    store: *const fencing_store,
    out_base: *mut u64,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let out = args::out(out_base, "out_base")?;
        out.set(store.failover()?);
        Ok(())
    })
}

/// Moves a manual clock (`?clock=manual`) forward by `ms`;
/// INVALID_ARGUMENT on any other clock.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_advance_clock(store: *const fencing_store, ms: u64) -> fencing_status {
    boundary(|| {
        self::store(store)?.advance_clock(args::duration(ms))?;
        Ok(())
    })
}

/// One cheap round trip that changes nothing, for health checks: OK when
/// the store answers and its schema is the one this library writes. CLOSED
/// once closed; BACKEND when it cannot be reached, or (kind "refused") when
/// its schema is older (run `fencing migrate`) or newer than this library's.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_ping(store: *const fencing_store) -> fencing_status {
    boundary(|| {
        self::store(store)?.ping()?;
        Ok(())
    })
}

/// Writes a snapshot of the handle's counters to `*out`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_metrics_snapshot(
    store: *const fencing_store,
    out: *mut fencing_metrics,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let out = args::out(out, "out")?;
        out.set((&store.metrics()).into());
        Ok(())
    })
}

/// Writes the handle's last rejections (at most 64, oldest first) as a new
/// list to `*out_list` (free it with `fencing_rejection_list_free`).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_rejections(
    store: *const fencing_store,
    out_list: *mut *mut fencing_rejection_list,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let out = args::out(out_list, "out_list")?;
        out.set(fencing_rejection_list::boxed(&store.metrics().rejections));
        Ok(())
    })
}

/// Writes the handle's metrics in the Prometheus text format (names
/// prefixed `fencing_`, base units, every sample labelled `store` with the
/// store's location, no per-scope labels; the call-duration histogram is
/// only here, not in `fencing_metrics_snapshot`) as new NUL-terminated text
/// to `*out_text` (free it with `fencing_string_free`).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_metrics_text(
    store: *const fencing_store,
    out_text: *mut *mut c_char,
) -> fencing_status {
    store_text(store, out_text, Store::metrics_text)
}

/// Writes where the store is as new NUL-terminated text to `*out_text`
/// (free it with `fencing_string_free`): `memory:`; `sqlite:` and the
/// file's absolute path (a relative path as this process resolved it at
/// open); or the PostgreSQL URL without its query and its password. For
/// logs; also after `fencing_store_close`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_store_location(
    store: *const fencing_store,
    out_text: *mut *mut c_char,
) -> fencing_status {
    store_text(store, out_text, |s| s.location().to_owned())
}

/// Writes the kind of store as new NUL-terminated text to `*out_text`
/// (free it with `fencing_string_free`): `memory`, `sqlite`, `postgres` or
/// `etcd`. Also after `fencing_store_close`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_store_backend_kind(
    store: *const fencing_store,
    out_text: *mut *mut c_char,
) -> fencing_status {
    store_text(store, out_text, |s| s.backend_kind().as_str().to_owned())
}

/// Text about the store, as new NUL-terminated text to `*out_text`.
fn store_text(
    store: *const fencing_store,
    out_text: *mut *mut c_char,
    text: impl FnOnce(&Store) -> String,
) -> fencing_status {
    boundary(|| {
        let store = self::store(store)?;
        let out = args::out(out_text, "out_text")?;
        out.set(owned_text(&text(store)));
        Ok(())
    })
}
