//! The values a face uses when its caller leaves one out, and the rules
//! derived from a lease's TTL. Decided here once, like the limits
//! ([`crate::limits`]): faces read them, never restate them.

use std::time::Duration;

use crate::error::{Error, Result};

/// Keys in one `list` page when the caller gives no `limit` (every face,
/// the CLI included; 1..=[`crate::limits::MAX_LIST_LIMIT`] may be asked for).
pub const LIST_LIMIT: usize = 100;

/// Rejections and last writes in one `events` snapshot when the caller gives
/// no `limit` (1..=[`crate::MAX_EVENTS_LIMIT`] may be asked for).
pub const EVENTS_LIMIT: usize = 20;

/// The TTL a renewal asks for: the one given, else the lease's own TTL (when
/// the caller passed the lease itself, not just its scope and token).
/// `INVALID_ARGUMENT` when neither is known.
pub fn renew_ttl(given: Option<Duration>, lease_ttl: Option<Duration>) -> Result<Duration> {
    given.or(lease_ttl).ok_or_else(|| {
        Error::invalid("renewing by scope and token needs a ttl (or pass the lease itself)")
    })
}

/// How long a waiting acquire sleeps before it asks again, when releases
/// do not reach it as a wake-up (another process on the same SQLite file; a
/// PostgreSQL store behind a transaction pooler, or whose listening
/// connection is down): `WAIT_BACKOFF_FIRST` after its first attempt,
/// doubling up to `WAIT_BACKOFF_MAX`, never past the lease's own end.
/// Waiters that are woken sleep until the lease's end instead
/// (docs/semantics.md, "Waiting").
pub const WAIT_BACKOFF_FIRST: Duration = Duration::from_millis(10);
/// See [`WAIT_BACKOFF_FIRST`]: a waiter that is not woken asks at most
/// five times a second once it has waited a while.
pub const WAIT_BACKOFF_MAX: Duration = Duration::from_millis(200);

/// The sleep of a waiter that is not woken, after its `attempt`-th attempt
/// (0 the first).
pub fn wait_backoff(attempt: u32) -> Duration {
    WAIT_BACKOFF_FIRST
        .saturating_mul(1u32.checked_shl(attempt).unwrap_or(u32::MAX))
        .min(WAIT_BACKOFF_MAX)
}

/// How often a wait that its caller may give up (a dropped future, a cancel
/// callback, a deadline of the caller's own) asks whether it did: what a
/// give-up costs in latency, and a cancellable wait in wake-ups.
pub const GIVE_UP_CHECK: Duration = Duration::from_millis(20);

/// How often a keep-alive renews a lease of `ttl`: a third of it, so two
/// renewals may fail before the lease runs out.
pub fn renew_interval(ttl: Duration) -> Duration {
    (ttl / 3).max(Duration::from_millis(1))
}

/// Whether a renewal that ran `lateness` behind its schedule means the
/// process was paused (GC, SIGSTOP, VM suspend) long enough to put a lease of
/// `ttl` at risk: more than a third of the TTL. Counted in the metrics
/// (`pauses_detected`, `longest_pause_ms`).
pub fn is_pause(lateness: Duration, ttl: Duration) -> bool {
    lateness > ttl / 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_backoff_doubles_to_its_cap_and_never_overflows() {
        let naps: Vec<u64> = (0..7).map(|a| wait_backoff(a).as_millis() as u64).collect();
        assert_eq!(naps, [10, 20, 40, 80, 160, 200, 200]);
        assert_eq!(wait_backoff(31), WAIT_BACKOFF_MAX);
        assert_eq!(wait_backoff(u32::MAX), WAIT_BACKOFF_MAX);
    }

    #[test]
    fn renewal_takes_the_given_ttl_then_the_leases_own() {
        let s = Duration::from_secs;
        assert_eq!(renew_ttl(Some(s(5)), Some(s(30))), Ok(s(5)));
        assert_eq!(renew_ttl(None, Some(s(30))), Ok(s(30)));
        let none = renew_ttl(None, None).unwrap_err();
        assert_eq!(none.code(), crate::ErrorCode::InvalidArgument);
    }

    #[test]
    fn a_pause_is_more_than_a_third_of_the_ttl() {
        let ms = Duration::from_millis;
        assert!(!is_pause(ms(100), ms(300)));
        assert!(is_pause(ms(101), ms(300)));
        assert_eq!(renew_interval(ms(300)), ms(100));
        assert_eq!(renew_interval(ms(1)), ms(1));
    }
}
