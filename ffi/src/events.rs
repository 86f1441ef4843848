//! The store's own record for operators (docs/operations.md): recent
//! stale-token rejections and who last wrote each scope, as one snapshot
//! the caller owns until `fencing_events_free`. Never any values.

use std::ffi::{c_char, CString};
use std::ptr;
use std::time::{SystemTime, UNIX_EPOCH};

use fencing::{Error, Events, RecordedRejection};

use crate::args;
use crate::boundary::{boundary, boundary_or, c_text, Failure};
use crate::status::fencing_status;
use crate::store::{self, fencing_store};

/// One rejection as the store recorded it; its strings belong to the
/// snapshot it came from.
#[repr(C)]
pub struct fencing_recorded_rejection {
    /// Increases with every row the store recorded.
    pub id: u64,
    /// FENCING_STALE_TOKEN or FENCING_SEQUENCE_OUT_OF_ORDER.
    pub code: fencing_status,
    pub scope: *const c_char,
    /// The key, when the operation named exactly one; else NULL.
    pub key: *const c_char,
    /// The presenting holder, when its fence named one; else NULL.
    pub holder: *const c_char,
    pub presented: u64,
    /// The scope's fence when the rejection was recorded.
    pub current: u64,
    /// The seq presented, when `has_seq`.
    pub seq: u64,
    pub has_seq: bool,
    /// When, in milliseconds since the Unix epoch (the store's clock).
    pub at_ms: u64,
    /// Rejections of the scope counted here instead of recorded one by one.
    pub suppressed: u64,
}

/// The last accepted write of a scope; its strings belong to the snapshot.
#[repr(C)]
pub struct fencing_last_write {
    pub scope: *const c_char,
    /// The writer's holder label, when its fence named one; else NULL.
    pub holder: *const c_char,
    pub token: u64,
    /// When, in milliseconds since the Unix epoch (the store's clock).
    pub at_ms: u64,
}

struct Rejection {
    id: u64,
    code: fencing_status,
    scope: CString,
    key: Option<CString>,
    holder: Option<CString>,
    presented: u64,
    current: u64,
    seq: Option<u64>,
    at_ms: u64,
    suppressed: u64,
}

struct LastWrite {
    scope: CString,
    holder: Option<CString>,
    token: u64,
    at_ms: u64,
}

/// A snapshot of the store's record (`fencing_events_snapshot`), newest
/// first, owned by the caller until `fencing_events_free`.
pub struct fencing_events {
    rejections: Vec<Rejection>,
    last_writes: Vec<LastWrite>,
}

fn ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, args::millis)
}

fn text(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |s| s.as_ptr())
}

impl From<&RecordedRejection> for Rejection {
    fn from(r: &RecordedRejection) -> Rejection {
        Rejection {
            id: r.id,
            code: fencing_status::from_code(r.code),
            scope: c_text(&r.scope),
            key: r.key.as_deref().map(c_text),
            holder: r.holder.as_deref().map(c_text),
            presented: r.presented.get(),
            current: r.current,
            seq: r.seq,
            at_ms: ms(r.at),
            suppressed: r.suppressed,
        }
    }
}

impl fencing_events {
    /// A snapshot of one rejection (`fencing_rejection_watch_next`).
    pub(crate) fn of_rejection(r: &RecordedRejection) -> fencing_events {
        fencing_events {
            rejections: vec![Rejection::from(r)],
            last_writes: Vec::new(),
        }
    }
}

impl From<Events> for fencing_events {
    fn from(e: Events) -> fencing_events {
        fencing_events {
            rejections: e.rejections.iter().map(Rejection::from).collect(),
            last_writes: e
                .last_writes
                .iter()
                .map(|w| LastWrite {
                    scope: c_text(&w.scope),
                    holder: w.holder.as_deref().map(c_text),
                    token: w.token.get(),
                    at_ms: ms(w.at),
                })
                .collect(),
        }
    }
}

fn out_of_range(index: usize, len: usize) -> Failure {
    Error::InvalidArgument(format!(
        "index {index} is out of range: the snapshot holds {len}"
    ))
    .into()
}

/// Writes a snapshot of the store's record, shared by every process using
/// the store, to `*out_events`: the newest `limit` (1..=256) recorded
/// rejections and last writes, of `scope`, or of every scope when `scope` is
/// NULL. Free it with `fencing_events_free`.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_events_snapshot(
    store: *const fencing_store,
    scope: *const c_char,
    limit: usize,
    out_events: *mut *mut fencing_events,
) -> fencing_status {
    boundary(|| {
        let store = store::store(store)?;
        let scope = args::optional_text(scope, "scope")?;
        let out = args::out(out_events, "out_events")?;
        let events = store.events(scope, limit)?;
        out.set(Box::into_raw(Box::new(fencing_events::from(events))));
        Ok(())
    })
}

/// The number of rejections in the snapshot (0 for NULL).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_events_rejection_count(events: *const fencing_events) -> usize {
    boundary_or(0, || {
        args::object(events, "events").map_or(0, |e| e.rejections.len())
    })
}

/// Writes rejection `index` (0 = newest) to `*out`; its strings stay valid
/// until the snapshot is freed. INVALID_ARGUMENT when `index` is out of range.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_events_rejection(
    events: *const fencing_events,
    index: usize,
    out: *mut fencing_recorded_rejection,
) -> fencing_status {
    boundary(|| {
        let events = args::object(events, "events")?;
        let out = args::out(out, "out")?;
        let len = events.rejections.len();
        let r = events
            .rejections
            .get(index)
            .ok_or_else(|| out_of_range(index, len))?;
        out.set(fencing_recorded_rejection {
            id: r.id,
            code: r.code,
            scope: r.scope.as_ptr(),
            key: text(&r.key),
            holder: text(&r.holder),
            presented: r.presented,
            current: r.current,
            seq: r.seq.unwrap_or(0),
            has_seq: r.seq.is_some(),
            at_ms: r.at_ms,
            suppressed: r.suppressed,
        });
        Ok(())
    })
}

/// The number of last writes in the snapshot (0 for NULL).
#[unsafe(no_mangle)]
pub extern "C" fn fencing_events_last_write_count(events: *const fencing_events) -> usize {
    boundary_or(0, || {
        args::object(events, "events").map_or(0, |e| e.last_writes.len())
    })
}

/// Writes last write `index` (0 = newest) to `*out`; its strings stay valid
/// until the snapshot is freed. INVALID_ARGUMENT when `index` is out of range.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_events_last_write(
    events: *const fencing_events,
    index: usize,
    out: *mut fencing_last_write,
) -> fencing_status {
    boundary(|| {
        let events = args::object(events, "events")?;
        let out = args::out(out, "out")?;
        let len = events.last_writes.len();
        let w = events
            .last_writes
            .get(index)
            .ok_or_else(|| out_of_range(index, len))?;
        out.set(fencing_last_write {
            scope: w.scope.as_ptr(),
            holder: text(&w.holder),
            token: w.token,
            at_ms: w.at_ms,
        });
        Ok(())
    })
}

/// Frees a snapshot from `fencing_events_snapshot`. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_events_free(events: *mut fencing_events) {
    boundary_or((), || args::free_box(events))
}
