//! Pause-and-crash torture of the fencing store, and the checker of the
//! histories it records.
//!
//! [`history`] is the record format (one JSON object per line, appended by
//! every worker and by the nemesis); [`checker`] reads a history and reports
//! every violation of the promise: a stale holder never overwrites newer
//! state, a token is never issued twice, an acknowledged write is never lost.
//! The binary (`src/main.rs`) runs the workers and the nemesis.

pub mod checker;
pub mod history;

/// Nanoseconds on `CLOCK_MONOTONIC`: one clock for every process on the host,
/// so timestamps written by different processes order real time.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}
