//! Waiting in order (docs/semantics.md, "Waiting"): the rule every backend
//! applies to a waiting caller's attempt (PostgreSQL's `acquire_waiting`
//! in SQL, with these constants filled in).
//!
//! A waiter that finds the scope taken gets a *place*: a number from the
//! store's one increasing sequence, kept with the scope until a deadline
//! that each of its later attempts moves on. Its attempt takes the lease
//! only when the lease has ended and no live place is earlier than its
//! own; so waiters are served in the order they first found the scope
//! taken, and one that died or gave up without leaving stops holding up
//! the others when its place runs out. A plain `acquire` takes no place and
//! is not held up by any (it "barges", as a fair lock's `tryLock` does).

use std::time::Duration;

use crate::rules::ttl_ms;
use crate::types::Lease;

/// A place lasts the waiter's TTL past each of its attempts, at least this
/// long (a waiter with a tiny TTL does not have to ask many times a
/// second) ...
pub(crate) const PLACE_LIFE_MIN: Duration = Duration::from_secs(1);
/// ... and at most this long, so that a waiter that died holds up the
/// ones behind it one TTL at most, and ten minutes however long the lease
/// it wanted.
pub(crate) const PLACE_LIFE_MAX: Duration = Duration::from_secs(600);

/// A waiter sleeps at most `1 / SLEEP_PARTS` of its place's life ...
pub(crate) const SLEEP_PARTS: u64 = 2;
/// ... and an attempt moves its place on once less than
/// `REFRESH_QUARTERS / 4` of its life is left: every attempt after a full
/// sleep does. A waiter late to wake keeps at least a quarter of the life
/// as its margin (half after a sleep that followed a move). So a waiter on
/// a lease that never ends asks twice per place life (twice per TTL, for a
/// TTL within the bounds above).
pub(crate) const REFRESH_QUARTERS: u64 = 3;

/// How long a place lasts past an attempt of a waiter that asked for `ttl`.
pub(crate) fn place_life_ms(ttl: Duration) -> u64 {
    ttl_ms(ttl.clamp(PLACE_LIFE_MIN, PLACE_LIFE_MAX))
}

/// The longest a waiter with a place of `life_ms` sleeps before it asks
/// again (a watch with a registration of that life too): half its life.
pub(crate) fn longest_sleep(life_ms: u64) -> Duration {
    Duration::from_millis(life_ms / SLEEP_PARTS)
}

/// Whether an attempt should move its place's deadline on (less than three
/// quarters of its life left): the other attempts only read.
pub(crate) fn refresh_due(until_ms: u64, now_ms: u64, life_ms: u64) -> bool {
    until_ms.saturating_sub(now_ms) < life_ms / 4 * REFRESH_QUARTERS
}

/// Whose turn it is, for a waiting attempt at `now_ms`: `lease_expires_ms`
/// is the live lease's end, if one is live; `earlier_until_ms` the deadline
/// of the earliest live place before the caller's, if any.
pub(crate) fn turn(
    lease_expires_ms: Option<u64>,
    earlier_until_ms: Option<u64>,
    now_ms: u64,
) -> Turn {
    match (lease_expires_ms, earlier_until_ms) {
        (Some(end), _) => Turn::Wait(end.saturating_sub(now_ms)),
        (None, Some(until)) => Turn::Wait(until.saturating_sub(now_ms)),
        (None, None) => Turn::Yours,
    }
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Not yet: ask again after at most this many ms, or when woken.
    Wait(u64),
    Yours,
}

/// What a waiting attempt got.
#[derive(Debug)]
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) enum Attempt {
    Got(Lease),
    /// The caller's place (kept or new) and how long it may sleep before
    /// it asks again, unless woken.
    Queued {
        place: u64,
        wait: Duration,
    },
    /// Not yet, and no place was taken (a PostgreSQL role granted before
    /// places existed): the caller polls with the back-off, out of line.
    Unqueued {
        wait: Duration,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_lasts_the_ttl_within_its_bounds() {
        assert_eq!(place_life_ms(Duration::from_millis(1)), 1_000);
        assert_eq!(place_life_ms(Duration::from_secs(5)), 5_000);
        assert_eq!(place_life_ms(Duration::from_secs(3600)), 600_000);
        assert_eq!(longest_sleep(60_000), Duration::from_secs(30));
    }

    #[test]
    fn a_waiter_that_keeps_asking_never_loses_its_place() {
        // Attempts at most `longest_sleep` apart, from a fresh place.
        for life in [1_000, 5_000, 60_000] {
            let step = longest_sleep(life).as_millis() as u64;
            let (mut until, mut now) = (life, 0);
            for _ in 0..100 {
                now += step;
                assert!(until > now, "life {life}: the place ran out at {now}");
                if refresh_due(until, now, life) {
                    until = now + life;
                }
            }
        }
    }

    #[test]
    fn a_place_is_moved_on_only_past_a_quarter_of_its_life() {
        assert!(!refresh_due(10_000, 5_000, 6_000));
        assert!(!refresh_due(10_000, 5_500, 6_000));
        assert!(refresh_due(10_000, 5_501, 6_000));
        assert!(refresh_due(10_000, 20_000, 6_000));
    }

    #[test]
    fn the_lease_first_then_any_earlier_place() {
        assert_eq!(turn(Some(150), Some(120), 100), Turn::Wait(50));
        assert_eq!(turn(None, Some(120), 100), Turn::Wait(20));
        assert_eq!(turn(None, None, 100), Turn::Yours);
    }
}
