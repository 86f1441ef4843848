//! The operator's record kept in the store itself (docs/operations.md):
//! recent rejections of stale tokens and who last wrote each scope. Never
//! any values. Bounded in size (a ring of [`REJECTION_LOG`] rows per store)
//! and in write rate: each handle records at most one rejection per scope
//! per [`RECORD_INTERVAL`] and at most [`RECORD_BURST`] per interval in all,
//! counting the ones it skips (`suppressed`) into its next record of the
//! scope, so that a flood of stale writes cannot become a flood of writes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::ErrorCode;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "etcd"))]
use crate::error::{BackendErrorKind, Error, Result};
use crate::token::Token;

/// How many rejections a store keeps (the newest; older ones are
/// overwritten). PostgreSQL's `record_rejection` (functions.sql) keeps the same.
pub const REJECTION_LOG: usize = 256;

/// A handle records at most one rejection per scope in this interval; the
/// store merges records of one scope closer than this (from several
/// handles) into one row. PostgreSQL's `record_rejection` uses the same.
pub const RECORD_INTERVAL: Duration = Duration::from_secs(1);

/// A handle records at most this many rejections per interval, all scopes
/// together.
pub const RECORD_BURST: u32 = 16;

/// How many scopes a handle's rate limiter tracks at once.
const TRACKED_SCOPES: usize = 1024;

/// A tracked scope with no rejection for this long makes room for others
/// (its uncounted skips are lost; the handle's metrics still have them).
const FORGET_AFTER_MS: u64 = 60_000;

/// The largest `limit` [`crate::Store::events`] takes.
pub const MAX_EVENTS_LIMIT: usize = REJECTION_LOG;

/// Which row of a full record a new one replaces, given each row's
/// recording role (PostgreSQL's `session_user`; `None` where the store has
/// no roles) and id, and the row in the ring's next slot (`next`): a row of
/// the role holding the most rows (the role with the oldest row, on a tie),
/// the one in the next slot when it is that role's, else that role's oldest.
/// A role that floods the record overwrites its own rows and never pushes
/// out a role that holds fewer, whatever holder labels it claims. With one
/// recorder (`memory:`, `sqlite:`, a single library role) it is the next
/// slot: a plain ring, and concurrent records take distinct slots.
/// PostgreSQL's `record_rejection` (functions.sql) applies the same.
pub(crate) fn evicted(rows: &[(Option<&str>, u64)], next: Option<usize>) -> Option<usize> {
    let mut per_role: HashMap<Option<&str>, (usize, u64)> = HashMap::new();
    for &(role, id) in rows {
        let e = per_role.entry(role).or_insert((0, id));
        e.0 += 1;
        e.1 = e.1.min(id);
    }
    let (&top, _) = per_role
        .iter()
        .max_by_key(|(_, &(count, oldest))| (count, std::cmp::Reverse(oldest)))?;
    if let Some(i) = next.filter(|&i| rows.get(i).is_some_and(|r| r.0 == top)) {
        return Some(i);
    }
    rows.iter()
        .enumerate()
        .filter(|(_, (role, _))| *role == top)
        .min_by_key(|(_, (_, id))| *id)
        .map(|(i, _)| i)
}

/// One rejection as the store recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedRejection {
    /// Increases with every row the store ever recorded: gaps between
    /// neighbours show rows the ring overwrote.
    pub id: u64,
    /// `STALE_TOKEN` or `SEQUENCE_OUT_OF_ORDER`.
    pub code: ErrorCode,
    pub scope: String,
    /// The key, when the operation named exactly one (a put, a delete, a
    /// checked read); none for a batch or a claim.
    pub key: Option<String>,
    pub presented: Token,
    /// The scope's fence when the rejection was recorded.
    pub current: u64,
    pub seq: Option<u64>,
    /// The presenting holder, when its fence named one.
    pub holder: Option<String>,
    /// When the store recorded it (the store's clock).
    pub at: SystemTime,
    /// Rejections of this scope that were not recorded as rows of their own
    /// (rate limit) and are counted here instead.
    pub suppressed: u64,
}

/// The last accepted write of a scope through the library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastWrite {
    pub scope: String,
    /// The writer's holder label, when its fence named one.
    pub holder: Option<String>,
    pub token: Token,
    /// When (the store's clock). Writes by the same token and holder move it
    /// at most once per [`RECORD_INTERVAL`], so it can be that much behind.
    pub at: SystemTime,
}

/// A snapshot of the store's record, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Events {
    pub rejections: Vec<RecordedRejection>,
    pub last_writes: Vec<LastWrite>,
}

/// What a handle asks its backend to record (the backend adds the id, the
/// current fence and the time).
#[derive(Clone, Debug)]
pub(crate) struct RejectionNote<'a> {
    pub code: ErrorCode,
    pub scope: &'a str,
    pub key: Option<&'a str>,
    pub presented: Token,
    pub seq: Option<u64>,
    pub holder: Option<&'a str>,
    /// Rejections of the scope this handle skipped since its last record.
    pub suppressed: u64,
}

/// The time `ms` milliseconds after the Unix epoch, at most the end of the
/// year 9999 (`clock::LAST_MS`): every system's clock holds that, where
/// Windows's cannot hold the largest millisecond count.
pub(crate) fn at_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.min(crate::clock::LAST_MS))
}

#[cfg(any(feature = "sqlite", feature = "postgres", feature = "etcd"))]
/// The code a recorded rejection's stored name stands for. Only the two
/// rejections the log records are read back; any other text is not guessed
/// at: it is a `BACKEND` error of kind `corrupt`.
pub(crate) fn code_from_str(code: &str) -> Result<ErrorCode> {
    match ErrorCode::from_name(code) {
        Some(c @ (ErrorCode::StaleToken | ErrorCode::SequenceOutOfOrder)) => Ok(c),
        _ => Err(Error::backend(
            BackendErrorKind::Corrupt,
            format!("the rejection log holds an unknown code {code:?}"),
        )),
    }
}

#[derive(Clone, Copy)]
struct Window {
    /// When this handle last recorded a rejection of the scope.
    recorded_ms: u64,
    /// Rejections skipped since.
    suppressed: u64,
    /// When this handle last saw a rejection of the scope.
    seen_ms: u64,
}

#[derive(Default)]
struct State {
    scopes: HashMap<String, Window>,
    /// Start of the current burst window, and records made in it.
    burst_start_ms: u64,
    burst_used: u32,
}

/// One handle's rate limit on recording rejections. Times come from the
/// caller (the handle's limiter clock), so tests on a manual clock are exact.
#[derive(Default)]
pub(crate) struct Limiter {
    state: Mutex<State>,
}

impl Limiter {
    /// Whether to record a rejection of `scope` now; if so, how many were
    /// skipped before it. A skipped one is counted for the next record.
    pub fn admit(&self, scope: &str, now_ms: u64) -> Option<u64> {
        let interval = RECORD_INTERVAL.as_millis() as u64;
        let Ok(mut st) = self.state.lock() else {
            return None;
        };
        let st = &mut *st;
        if now_ms.saturating_sub(st.burst_start_ms) >= interval {
            st.burst_start_ms = now_ms;
            st.burst_used = 0;
        }
        let burst_left = st.burst_used < RECORD_BURST;
        if let Some(w) = st.scopes.get_mut(scope) {
            w.seen_ms = now_ms;
            if now_ms.saturating_sub(w.recorded_ms) < interval || !burst_left {
                w.suppressed += 1;
                return None;
            }
            let skipped = w.suppressed;
            *w = Window {
                recorded_ms: now_ms,
                suppressed: 0,
                seen_ms: now_ms,
            };
            st.burst_used += 1;
            return Some(skipped);
        }
        if st.scopes.len() >= TRACKED_SCOPES {
            st.scopes
                .retain(|_, w| now_ms.saturating_sub(w.seen_ms) < FORGET_AFTER_MS);
        }
        if st.scopes.len() >= TRACKED_SCOPES {
            // Nowhere to count it: skipped without a count (the handle's
            // metrics still count every rejection).
            return None;
        }
        let window = if burst_left {
            st.burst_used += 1;
            Window {
                recorded_ms: now_ms,
                suppressed: 0,
                seen_ms: now_ms,
            }
        } else {
            Window {
                recorded_ms: 0,
                suppressed: 1,
                seen_ms: now_ms,
            }
        };
        st.scopes.insert(scope.to_owned(), window);
        burst_left.then_some(0)
    }

    /// A record the backend could not make: its rejection and the skipped
    /// ones go back to be counted in the next.
    pub fn restore(&self, scope: &str, skipped: u64) {
        if let Ok(mut st) = self.state.lock() {
            if let Some(w) = st.scopes.get_mut(scope) {
                w.suppressed += skipped + 1;
                w.recorded_ms = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_record_evicts_a_row_of_the_largest_role() {
        assert_eq!(evicted(&[], None), None);
        // One recorder: the ring's next slot.
        assert_eq!(
            evicted(&[(None, 7), (None, 3), (None, 9)], Some(1)),
            Some(1)
        );
        assert_eq!(evicted(&[(None, 7), (None, 3), (None, 9)], None), Some(1));
        // A flood by "app" overwrites its own rows, not "ops" 's older one,
        // even when the next slot holds it.
        let rows = [(Some("ops"), 1), (Some("app"), 5), (Some("app"), 4)];
        assert_eq!(evicted(&rows, Some(0)), Some(2));
        assert_eq!(evicted(&rows, Some(1)), Some(1));
        // A tie: the role with the oldest row gives one up.
        let rows = [
            (Some("a"), 8),
            (Some("b"), 2),
            (Some("a"), 9),
            (Some("b"), 6),
        ];
        assert_eq!(evicted(&rows, Some(0)), Some(1));
    }

    #[test]
    fn one_record_per_scope_per_interval_with_the_skipped_count() {
        let l = Limiter::default();
        assert_eq!(l.admit("a", 10_000), Some(0));
        for _ in 0..99 {
            assert_eq!(l.admit("a", 10_500), None);
        }
        assert_eq!(l.admit("a", 11_000), Some(99));
        assert_eq!(l.admit("a", 11_001), None);
    }

    #[test]
    fn a_burst_bounds_records_across_scopes() {
        let l = Limiter::default();
        let recorded = (0..1000)
            .filter(|i| l.admit(&format!("s{i}"), 5_000).is_some())
            .count();
        assert_eq!(recorded, RECORD_BURST as usize);
        // A scope skipped by the burst limit carries its count.
        assert_eq!(l.admit("s999", 6_000), Some(1));
    }

    #[test]
    fn tracked_scopes_stay_bounded_and_make_room_after_a_while() {
        let l = Limiter::default();
        for i in 0..10 * TRACKED_SCOPES as u64 {
            l.admit(&format!("s{i}"), i * 100);
        }
        assert!(l.state.lock().unwrap().scopes.len() <= TRACKED_SCOPES);
        // A full tracker takes no new scope until its entries go quiet.
        let l = Limiter::default();
        for i in 0..TRACKED_SCOPES {
            l.admit(&format!("s{i}"), 0);
        }
        assert_eq!(l.admit("new", 1), None);
        assert_eq!(l.admit("new", FORGET_AFTER_MS), Some(0));
    }

    #[test]
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    fn only_the_recorded_codes_read_back() {
        assert_eq!(code_from_str("STALE_TOKEN"), Ok(ErrorCode::StaleToken));
        assert_eq!(
            code_from_str("SEQUENCE_OUT_OF_ORDER"),
            Ok(ErrorCode::SequenceOutOfOrder)
        );
        for other in ["", "stale_token", "LEASE_HELD", "NEW_CODE"] {
            let e = code_from_str(other).unwrap_err();
            assert_eq!(e.backend_kind(), Some(BackendErrorKind::Corrupt), "{other}");
        }
    }

    #[test]
    fn a_failed_record_is_counted_in_the_next() {
        let l = Limiter::default();
        assert_eq!(l.admit("a", 1_000), Some(0));
        l.restore("a", 0);
        assert_eq!(l.admit("a", 1_001), Some(1));
    }
}
