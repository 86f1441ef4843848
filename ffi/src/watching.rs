//! What the C watches share (`fencing_watch` on a lease,
//! `fencing_rejection_watch` on the store's record): calls on one watch
//! take turns. A call made while another waits on the same watch waits for
//! its turn within its own timeout, and each item goes to one call.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use fencing::defaults::GIVE_UP_CHECK;
use fencing::Watch;

use crate::boundary::Failure;

pub(crate) struct Turns<W> {
    /// Locked only by the call whose turn it is (so never contended).
    watch: Mutex<W>,
    /// Whether a call has its turn.
    busy: Mutex<bool>,
    /// Told when a turn ends.
    ended: Condvar,
}

/// A call's turn with the watch: ended when dropped, panics included.
struct Turn<'a, W>(&'a Turns<W>);

impl<W> Drop for Turn<'_, W> {
    fn drop(&mut self) {
        *lock(&self.0.busy) = false;
        self.0.ended.notify_one();
    }
}

/// A lock whose data no panic leaves half-written (a flag, or the watch
/// between two of its calls).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<W: Watch> Turns<W> {
    pub(crate) fn new(watch: W) -> Turns<W> {
        Turns {
            watch: Mutex::new(watch),
            busy: Mutex::new(false),
            ended: Condvar::new(),
        }
    }

    /// The next item, waited for `timeout_ms` of real time (0: only what is
    /// pending or read at once) or until `gave_up()` says so; without
    /// `gave_up` the wait sleeps until woken or the timeout. `None`: nothing
    /// came, or the turn did not.
    pub(crate) fn next(
        &self,
        timeout_ms: u64,
        gave_up: Option<&dyn Fn() -> bool>,
    ) -> Result<Option<W::Item>, Failure> {
        let timeout = Duration::from_millis(timeout_ms);
        let deadline = Instant::now().checked_add(timeout);
        let Some(_turn) = self.turn(deadline, gave_up) else {
            return Ok(None);
        };
        let mut watch = lock(&self.watch);
        let left = deadline.map_or(timeout, |d| d.saturating_duration_since(Instant::now()));
        Ok(match gave_up {
            None => watch.next_within(left)?,
            Some(gave_up) => {
                if watch.wait_unless(left, gave_up)? {
                    watch.pop()
                } else {
                    None
                }
            }
        })
    }

    /// The turn once no other call has it; `None` when `deadline` passes
    /// or `gave_up()` says so first (asked every [`GIVE_UP_CHECK`]; without
    /// it, the wait sleeps until a turn ends or the deadline).
    fn turn(
        &self,
        deadline: Option<Instant>,
        gave_up: Option<&dyn Fn() -> bool>,
    ) -> Option<Turn<'_, W>> {
        let mut busy = lock(&self.busy);
        loop {
            if !*busy {
                *busy = true;
                return Some(Turn(self));
            }
            let left = deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            });
            if left.is_zero() || gave_up.is_some_and(|g| g()) {
                return None;
            }
            let slice = match gave_up {
                Some(_) => left.min(GIVE_UP_CHECK),
                None => left,
            };
            busy = self
                .ended
                .wait_timeout(busy, slice)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
