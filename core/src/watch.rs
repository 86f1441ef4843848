//! The store's record, live (docs/operations.md, "Watching rejections"):
//! rejections yielded as the store records them, oldest first, from the
//! moment the watch began. No backend pushes them, so the watch reads the
//! record every [`WATCH_POLL`] while nothing is pending; the record is
//! rate-limited already (one row per scope per second and handle), so this
//! costs one small read per interval per watch.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::defaults::GIVE_UP_CHECK;
use crate::error::Result;
use crate::events::{RecordedRejection, MAX_EVENTS_LIMIT};
use crate::Store;

/// How often a watch with nothing pending reads the record again.
pub const WATCH_POLL: Duration = Duration::from_millis(250);

/// What the store's live watches share ([`RejectionWatch`],
/// [`crate::LeaseWatch`]): a wait that only waits, then a take, so that a
/// face can wait elsewhere (a thread, an executor's blocking pool) and give
/// up without losing an item.
pub trait Watch: Send + 'static {
    type Item: Send + 'static;
    /// Waits until an item is pending, `timeout` passes or `gave_up()` says
    /// so; returns whether one is pending.
    fn wait_unless(&mut self, timeout: Duration, gave_up: &dyn Fn() -> bool) -> Result<bool>;
    /// The pending item, without waiting.
    fn pop(&mut self) -> Option<Self::Item>;
    /// The next item, waiting up to `timeout`; `None` when none came.
    fn next_within(&mut self, timeout: Duration) -> Result<Option<Self::Item>> {
        Ok(if self.wait_unless(timeout, &|| false)? {
            self.pop()
        } else {
            None
        })
    }
}

impl Watch for RejectionWatch {
    type Item = RecordedRejection;
    fn wait_unless(&mut self, timeout: Duration, gave_up: &dyn Fn() -> bool) -> Result<bool> {
        RejectionWatch::wait_unless(self, timeout, gave_up)
    }
    fn pop(&mut self) -> Option<RecordedRejection> {
        RejectionWatch::pop(self)
    }
}

impl Watch for crate::LeaseWatch {
    type Item = crate::Holding;
    fn wait_unless(&mut self, timeout: Duration, gave_up: &dyn Fn() -> bool) -> Result<bool> {
        crate::LeaseWatch::wait_unless(self, timeout, gave_up)
    }
    fn pop(&mut self) -> Option<crate::Holding> {
        crate::LeaseWatch::pop(self)
    }
    // Its own: with no one to ask whether they gave up, it sleeps until woken.
    fn next_within(&mut self, timeout: Duration) -> Result<Option<crate::Holding>> {
        crate::LeaseWatch::next_within(self, timeout)
    }
}

/// Rejections recorded after the watch began, oldest first
/// ([`Store::watch_rejections`]). As an [`Iterator`], `next` blocks until
/// one is recorded; after an error (the store closed, unreachable) it ends.
///
/// The record keeps the newest 256 rows: a watch that falls further behind
/// skips the rows overwritten meanwhile (their ids show the gap). A record
/// that later absorbs skipped rejections of its scope (`suppressed`) is not
/// yielded again.
pub struct RejectionWatch {
    store: Store,
    scope: Option<String>,
    /// The greatest id seen: rows above it are new.
    after: u64,
    pending: VecDeque<RecordedRejection>,
    ended: bool,
}

impl RejectionWatch {
    pub(crate) fn new(store: Store, scope: Option<&str>) -> Result<RejectionWatch> {
        let newest = store
            .events(scope, 1)?
            .rejections
            .first()
            .map_or(0, |r| r.id);
        Ok(RejectionWatch {
            store,
            scope: scope.map(str::to_owned),
            after: newest,
            pending: VecDeque::new(),
            ended: false,
        })
    }

    /// Waits until a rejection is pending, `timeout` passes or `gave_up()`
    /// says so (asked at least every 20 ms); returns whether one is pending
    /// ([`RejectionWatch::pop`] takes it).
    pub fn wait_unless(&mut self, timeout: Duration, gave_up: &dyn Fn() -> bool) -> Result<bool> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if !self.pending.is_empty() {
                return Ok(true);
            }
            if gave_up() {
                return Ok(false);
            }
            self.read()?;
            if !self.pending.is_empty() {
                return Ok(true);
            }
            let next_read = Instant::now() + WATCH_POLL;
            loop {
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    return Ok(false);
                }
                if now >= next_read {
                    break;
                }
                if gave_up() {
                    return Ok(false);
                }
                let until = deadline.map_or(next_read, |d| d.min(next_read));
                std::thread::sleep(until.saturating_duration_since(now).min(GIVE_UP_CHECK));
            }
        }
    }

    /// The oldest pending rejection, without waiting.
    pub fn pop(&mut self) -> Option<RecordedRejection> {
        self.pending.pop_front()
    }

    /// The next rejection, waiting up to `timeout`; `None` when none came.
    pub fn next_within(&mut self, timeout: Duration) -> Result<Option<RecordedRejection>> {
        Watch::next_within(self, timeout)
    }

    /// Reads the rows recorded since the last read, oldest first.
    fn read(&mut self) -> Result<()> {
        let events = self.store.events(self.scope.as_deref(), MAX_EVENTS_LIMIT)?;
        let mut new: Vec<RecordedRejection> = events
            .rejections
            .into_iter()
            .filter(|r| r.id > self.after)
            .collect();
        new.sort_by_key(|r| r.id);
        if let Some(last) = new.last() {
            self.after = last.id;
        }
        self.pending.extend(new);
        Ok(())
    }
}

impl Iterator for RejectionWatch {
    type Item = Result<RecordedRejection>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        match self.wait_unless(Duration::MAX, &|| false) {
            Ok(_) => self.pop().map(Ok),
            Err(e) => {
                self.ended = true;
                Some(Err(e))
            }
        }
    }
}
