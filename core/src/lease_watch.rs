//! A watch on who holds a scope's lease (docs/semantics.md, "Watching a
//! lease"): the lease as the store has it when the watch begins, then the
//! lease after each change (taken, renewed, released, expired), in order.
//!
//! Each read of the lease comes after the watch took a ticket for its
//! scope (`backend::wakes`), so a change committed after the read moves the
//! ticket and the sleep that follows returns at once. Between changes the
//! watch sleeps until the lease it last saw runs out, or until its
//! registration with the store needs renewing; where changes are not pushed
//! to it (another process on a SQLite file; a PostgreSQL listening
//! connection down, or behind a transaction pooler) it also asks again
//! after the waiters' bounded back-off.

use std::time::{Duration, Instant, SystemTime};

use crate::backend::wakes::Slept;
use crate::defaults::wait_backoff;
use crate::error::Result;
use crate::rules::ttl_ms;
use crate::store::nothing_took_effect;
use crate::token::Token;
use crate::types::Lease;
use crate::waiting::longest_sleep;
use crate::{limits, Store};

/// How long a PostgreSQL store announces a scope's changes for a watch
/// after its last read; the watch reads at least every half of it
/// (`waiting::longest_sleep`), and the read moves it on (`refresh_due`).
pub(crate) const WATCH_LIFE: Duration = Duration::from_secs(60);

/// A scope's lease as a watch saw it ([`Store::watch`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holding {
    pub scope: String,
    /// The live lease; `None` while nobody holds it (never taken,
    /// released, expired, or ended by a failover step).
    pub lease: Option<Lease>,
}

/// What tells one lease state from the next: a renewal moves the expiry.
type Seen = Option<(Token, String, SystemTime)>;

/// The lease of one scope, then each change of it ([`Store::watch`]). As an
/// [`Iterator`], `next` blocks until the lease changes. A store out of
/// reach for a while (a restart, a failover) does not end the watch: it
/// asks again after a back-off and carries on from what it saw last; any
/// other error ends it.
///
/// A watch reports states, not every step between them: changes closer
/// together than its read (or made while the store was out of reach) are
/// seen as the last of them. Every state it yields was the store's at some
/// moment, in the order the store had them (tokens never go back).
pub struct LeaseWatch {
    store: Store,
    scope: String,
    /// The last state yielded; `None` before the first.
    seen: Option<Seen>,
    /// The watch's registration with the store, where it has one.
    id: Option<u64>,
    pending: Option<Holding>,
    /// Reads since the last change seen, for the back-off.
    attempt: u32,
    ended: bool,
}

impl LeaseWatch {
    pub(crate) fn new(store: Store, scope: &str) -> Result<LeaseWatch> {
        limits::scope(scope)?;
        store.backend()?;
        Ok(LeaseWatch {
            store,
            scope: scope.to_owned(),
            seen: None,
            id: None,
            pending: None,
            attempt: 0,
            ended: false,
        })
    }

    /// Waits until a state is pending, `timeout` passes or `gave_up()` says
    /// so (asked at least every 20 ms); returns whether one is pending
    /// ([`LeaseWatch::pop`] takes it). A store out of reach is asked again
    /// until `timeout`; then its error is returned.
    pub fn wait_unless(&mut self, timeout: Duration, gave_up: &dyn Fn() -> bool) -> Result<bool> {
        self.wait(timeout, Some(gave_up))
    }

    /// [`LeaseWatch::wait_unless`]; with no `gave_up`, a sleep lasts until
    /// it is woken or its nap is over.
    fn wait(&mut self, timeout: Duration, gave_up: Option<&dyn Fn() -> bool>) -> Result<bool> {
        let gave_up_now = || gave_up.is_some_and(|g| g());
        let deadline = Instant::now().checked_add(timeout);
        let left = || {
            deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            })
        };
        loop {
            if self.pending.is_some() {
                return Ok(true);
            }
            if gave_up_now() {
                return Ok(false);
            }
            let backend = self.store.backend()?;
            // Before the read, so that a change after it is not missed.
            let ticket = backend.change_watch(&self.scope);
            let nap = match backend.watch_read(&self.scope, self.id) {
                Ok(read) => {
                    self.id = read.id;
                    let now: Seen = read
                        .lease
                        .as_ref()
                        .map(|l| (l.token, l.holder.clone(), l.expires_at));
                    if self.seen.as_ref() != Some(&now) {
                        self.seen = Some(now);
                        self.pending = Some(Holding {
                            scope: self.scope.clone(),
                            lease: read.lease,
                        });
                        self.attempt = 0;
                        return Ok(true);
                    }
                    let mut nap = longest_sleep(ttl_ms(WATCH_LIFE));
                    if let Some(lease) = &read.lease {
                        nap = nap.min(lease.remaining + Duration::from_millis(1));
                    }
                    if !(read.announced && ticket.pushed()) {
                        nap = nap.min(wait_backoff(self.attempt));
                    }
                    nap
                }
                Err(e) if e.backend_kind().is_some_and(nothing_took_effect) => {
                    if left().is_zero() {
                        return Err(e);
                    }
                    tracing::debug!(target: "fencing", scope = %self.scope, error = %e, "watch: the store is out of reach; asking again");
                    wait_backoff(self.attempt)
                }
                Err(e) => return Err(e),
            };
            self.attempt = self.attempt.saturating_add(1);
            let left = left();
            if left.is_zero() {
                return Ok(false);
            }
            if ticket.sleep(nap.min(left), gave_up) == Slept::GaveUp {
                return Ok(false);
            }
        }
    }

    /// The pending state, without waiting.
    pub fn pop(&mut self) -> Option<Holding> {
        self.pending.take()
    }

    /// The next state, waiting up to `timeout`; `None` when none came.
    pub fn next_within(&mut self, timeout: Duration) -> Result<Option<Holding>> {
        Ok(if self.wait(timeout, None)? {
            self.pop()
        } else {
            None
        })
    }

    /// The scope watched.
    pub fn scope(&self) -> &str {
        &self.scope
    }
}

impl Iterator for LeaseWatch {
    type Item = Result<Holding>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ended {
            return None;
        }
        match self.wait(Duration::MAX, None) {
            Ok(_) => self.pop().map(Ok),
            Err(e) => {
                self.ended = true;
                Some(Err(e))
            }
        }
    }
}
