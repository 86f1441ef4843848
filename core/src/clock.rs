//! Where lease time comes from. Safety never depends on it; liveness does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::error::{Error, Result};
use crate::rules::unix_ms;

/// The end of the year 9999, in milliseconds since the Unix epoch: where a
/// manual clock stops. Every store can keep a time some way past it (SQLite
/// none at or past 2^63), and every system's clock can show it.
pub(crate) const LAST_MS: u64 = 253_402_300_799_999;

/// A manual clock at `now_ms` moved on by `by_ms`: up to [`LAST_MS`],
/// never back (every backend's manual clock moves by this rule; PostgreSQL's
/// `advance_clock` in SQL).
pub(crate) fn advanced(now_ms: u64, by_ms: u64) -> u64 {
    now_ms.saturating_add(by_ms).min(LAST_MS.max(now_ms))
}

/// Milliseconds since the Unix epoch, as the store sees them.
pub(crate) enum Clock {
    /// Monotonic: anchored to wall time once at open, then only moves forward
    /// with `Instant`, so a wall-clock step cannot expire or revive a lease.
    Monotonic { anchor_ms: u64, start: Instant },
    /// The host's wall clock, the one clock that processes on one host share.
    #[cfg(feature = "sqlite")]
    Wall,
    /// Moves only when told to: deterministic expiry for tests.
    Manual { now_ms: AtomicU64 },
}

impl Clock {
    pub fn monotonic() -> Clock {
        Clock::Monotonic {
            anchor_ms: unix_ms(SystemTime::now()),
            start: Instant::now(),
        }
    }

    pub fn manual() -> Clock {
        Clock::Manual {
            now_ms: AtomicU64::new(unix_ms(SystemTime::now())),
        }
    }

    pub fn now_ms(&self) -> u64 {
        match self {
            Clock::Monotonic { .. } => self.at_ms(Instant::now()),
            #[cfg(feature = "sqlite")]
            Clock::Wall => unix_ms(SystemTime::now()),
            Clock::Manual { now_ms } => now_ms.load(Ordering::SeqCst),
        }
    }

    /// The time at `at`, an instant of this process's monotonic clock (a
    /// call's start, read once for its duration too). The wall and manual
    /// clocks cannot be read at an instant: they are read now.
    pub fn at_ms(&self, at: Instant) -> u64 {
        match self {
            Clock::Monotonic { anchor_ms, start } => {
                let since = at.saturating_duration_since(*start).as_millis();
                anchor_ms + u64::try_from(since).unwrap_or(u64::MAX)
            }
            _ => self.now_ms(),
        }
    }

    pub fn advance(&self, by: Duration) -> Result<()> {
        match self {
            Clock::Manual { now_ms } => {
                let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
                let _ = now_ms.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    Some(advanced(n, ms))
                });
                Ok(())
            }
            _ => Err(Error::invalid(
                "advance_clock needs a manual clock (open the store with ?clock=manual)",
            )),
        }
    }
}
