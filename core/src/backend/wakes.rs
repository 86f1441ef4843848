//! Waking the callers that wait for a lease to end (docs/semantics.md,
//! "Waiting"). A waiter takes a [`Ticket`] for its scope *before* the
//! acquire that may find the lease held, and sleeps on it after: a lease
//! that ends between the two has already moved the ticket's marks, so the
//! sleep returns at once and no wake-up is lost.
//!
//! What moves the marks is the backend's business: the memory and SQLite
//! backends say so after their own releases; the PostgreSQL backend after
//! every release the server announces (`LISTEN`, `postgres/listener.rs`).
//! A watch of a scope's lease (`crate::lease_watch`) takes a ticket too,
//! woken by every change of the lease, not only by its end.
//! `pushed` tells a waiter whether every release reaches it this way; if
//! not (another process on the same SQLite file, a PostgreSQL store whose
//! listening connection is down or behind a transaction pooler), the store
//! also asks again after a bounded back-off (`defaults::WAIT_BACKOFF_*`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::defaults::GIVE_UP_CHECK;

/// The waiters of one backend handle.
pub(crate) struct Wakes {
    state: Mutex<State>,
    /// Tickets out: a release with none skips the lock (the memory
    /// backend's releases are a few hundred nanoseconds).
    tickets: AtomicUsize,
}

struct State {
    /// Moved when every lease may have ended (a failover step, a clock
    /// moved, the listening connection lost or regained).
    all: u64,
    /// Whether every release reaches this handle's waiters.
    pushed: bool,
    /// The scopes waited on, with their tickets.
    scopes: HashMap<String, Waiting>,
    next_ticket: u64,
}

struct Waiting {
    tickets: HashMap<u64, Place>,
}

impl State {
    /// Wakes every sleeping ticket, to look at `all`.
    fn notify_all(&self) {
        for p in self.scopes.values().flat_map(|w| w.tickets.values()) {
            p.cond.notify_all();
        }
    }
}

/// A ticket's place in its scope's queue, once an attempt gave it one, and
/// whether an end of the scope's lease has woken it.
/// Each ticket sleeps on a condition variable of its own, so that a
/// hand-off wakes the one thread it is for, not every waiter of the scope.
#[derive(Default)]
struct Place {
    place: Option<u64>,
    woken: bool,
    /// A watch's ticket: every change of the lease wakes it.
    watch: bool,
    cond: Arc<Condvar>,
}

impl Place {
    fn wake(&mut self) {
        self.woken = true;
        self.cond.notify_all();
    }
}

impl Wakes {
    pub fn new(pushed: bool) -> Arc<Wakes> {
        Arc::new(Wakes {
            state: Mutex::new(State {
                all: 0,
                pushed,
                scopes: HashMap::new(),
                next_ticket: 0,
            }),
            tickets: AtomicUsize::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Plain counters: consistent even if a holder panicked.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A waiter's ticket for `scope`, taken before its attempt.
    pub fn ticket(self: &Arc<Self>, scope: &str) -> Ticket {
        self.ticket_of(scope, false)
    }

    /// A watch's ticket for `scope`, taken before its read of the lease.
    pub fn watch_ticket(self: &Arc<Self>, scope: &str) -> Ticket {
        self.ticket_of(scope, true)
    }

    fn ticket_of(self: &Arc<Self>, scope: &str, watch: bool) -> Ticket {
        let mut state = self.lock();
        let (all, pushed) = (state.all, state.pushed);
        state.next_ticket += 1;
        let id = state.next_ticket;
        let waiting = state
            .scopes
            .entry(scope.to_owned())
            .or_insert_with(|| Waiting {
                tickets: HashMap::new(),
            });
        let cond = Arc::new(Condvar::new());
        waiting.tickets.insert(
            id,
            Place {
                watch,
                cond: cond.clone(),
                ..Place::default()
            },
        );
        // Before the attempt the ticket is for, so that a release after
        // that attempt sees it (both are ordered by the backend's own lock
        // or transaction that the attempt and the release go through).
        self.tickets.fetch_add(1, Ordering::SeqCst);
        Ticket {
            wakes: self.clone(),
            scope: scope.to_owned(),
            id,
            all,
            pushed,
            cond,
        }
    }

    /// Whether any ticket is out: a backend may skip finding out whom to
    /// wake when nobody is waiting or watching.
    #[cfg(feature = "sqlite")]
    pub fn any(&self) -> bool {
        self.tickets.load(Ordering::SeqCst) > 0
    }

    /// The lease of `scope` ended, and `head` is the earliest place queued
    /// for it (`None`: unknown, or nobody queued): the waiter with that
    /// place wakes, and any waiter whose attempt has not told it its place
    /// yet; the others are not next (docs/semantics.md, "Waiting").
    pub fn ended(&self, scope: &str, head: Option<u64>) {
        if self.tickets.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut state = self.lock();
        if let Some(waiting) = state.scopes.get_mut(scope) {
            for p in waiting.tickets.values_mut() {
                if head.is_none() || p.place.is_none() || p.place == head {
                    p.wake();
                }
            }
        }
    }

    /// The lease of `scope` was taken or renewed: its watches wake (a
    /// waiter has nothing to do until it ends).
    pub fn changed(&self, scope: &str) {
        if self.tickets.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut state = self.lock();
        if let Some(waiting) = state.scopes.get_mut(scope) {
            for p in waiting.tickets.values_mut().filter(|p| p.watch) {
                p.wake();
            }
        }
    }

    /// Every lease may have ended: every waiter wakes and asks again.
    pub fn all_ended(&self) {
        let mut state = self.lock();
        state.all += 1;
        state.notify_all();
    }

    /// Whether releases reach the waiters from now on. Either way every
    /// waiter wakes: one that slept trusting a push that may have been lost
    /// asks again, and one that polled learns it may stop.
    #[cfg(any(feature = "postgres", test))]
    pub fn set_pushed(&self, pushed: bool) {
        let mut state = self.lock();
        if state.pushed == pushed {
            return;
        }
        state.pushed = pushed;
        state.all += 1;
        state.notify_all();
    }

    /// The number of scopes waited on now (for tests).
    #[cfg(test)]
    fn scopes(&self) -> usize {
        self.lock().scopes.len()
    }
}

/// A waiter's place, from before its attempt until it is dropped.
pub(crate) struct Ticket {
    wakes: Arc<Wakes>,
    scope: String,
    id: u64,
    all: u64,
    pushed: bool,
    cond: Arc<Condvar>,
}

impl Ticket {
    /// Whether every release reaches this waiter as a wake-up (when the
    /// ticket was taken): if not, it must also ask again now and then.
    pub fn pushed(&self) -> bool {
        self.pushed
    }

    /// The attempt gave the waiter `place`: from now on only an end that
    /// names it (or names none) wakes it.
    pub fn queued_at(&self, place: u64) {
        let mut state = self.wakes.lock();
        if let Some(p) = state
            .scopes
            .get_mut(&self.scope)
            .and_then(|w| w.tickets.get_mut(&self.id))
        {
            p.place = Some(place);
        }
    }

    /// Sleeps until the scope's lease may have ended for this waiter since
    /// the ticket was taken (true), or `max` passed (false).
    pub fn wait(&self, max: Duration) -> bool {
        let until = Instant::now().checked_add(max);
        let mut state = self.wakes.lock();
        loop {
            let woken = state.all != self.all
                || state
                    .scopes
                    .get(&self.scope)
                    .and_then(|w| w.tickets.get(&self.id))
                    .is_none_or(|p| p.woken);
            if woken {
                return true;
            }
            let left = match until {
                Some(until) => until.saturating_duration_since(Instant::now()),
                None => Duration::MAX,
            };
            if left.is_zero() {
                return false;
            }
            state = self
                .cond
                .wait_timeout(state, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// How a [`Ticket::sleep`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slept {
    /// Woken: the scope's lease may have changed for this ticket.
    Woken,
    /// The nap passed.
    Out,
    /// The caller gave up.
    GaveUp,
}

impl Ticket {
    /// Sleeps until woken or `nap` passes, asking `gave_up` (if any) every
    /// [`GIVE_UP_CHECK`] but nothing else: a cancellable sleep costs the
    /// store no more than another.
    pub fn sleep(&self, nap: Duration, gave_up: Option<&dyn Fn() -> bool>) -> Slept {
        let until = Instant::now().checked_add(nap);
        loop {
            let left = until.map_or(Duration::MAX, |u| {
                u.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return Slept::Out;
            }
            let slice = match gave_up {
                Some(_) => left.min(GIVE_UP_CHECK),
                None => left,
            };
            if self.wait(slice) {
                return Slept::Woken;
            }
            if gave_up.is_some_and(|g| g()) {
                return Slept::GaveUp;
            }
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut state = self.wakes.lock();
        self.wakes.tickets.fetch_sub(1, Ordering::SeqCst);
        if let Some(waiting) = state.scopes.get_mut(&self.scope) {
            waiting.tickets.remove(&self.id);
            if waiting.tickets.is_empty() {
                state.scopes.remove(&self.scope);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(60);

    #[test]
    fn a_release_between_the_ticket_and_the_wait_is_not_missed() {
        let wakes = Wakes::new(true);
        let ticket = wakes.ticket("s");
        wakes.ended("s", None);
        // Would sleep a minute if the release were missed.
        ticket.wait(LONG);
    }

    #[test]
    fn a_release_of_another_scope_does_not_end_the_wait() {
        let wakes = Wakes::new(true);
        let ticket = wakes.ticket("s");
        wakes.ended("t", None);
        let started = Instant::now();
        ticket.wait(Duration::from_millis(30));
        assert!(started.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn a_waiter_sleeping_in_another_thread_is_woken() {
        let wakes = Wakes::new(true);
        let ticket = wakes.ticket("s");
        let waiter = std::thread::spawn(move || ticket.wait(LONG));
        // Whenever the waiter got to its wait, before or after this.
        std::thread::sleep(Duration::from_millis(20));
        wakes.ended("s", None);
        waiter.join().unwrap();
    }

    #[test]
    fn every_waiter_wakes_when_all_leases_may_have_ended_or_the_push_changes() {
        let wakes = Wakes::new(false);
        let a = wakes.ticket("a");
        let b = wakes.ticket("b");
        assert!(!a.pushed());
        wakes.all_ended();
        a.wait(LONG);
        b.wait(LONG);
        let c = wakes.ticket("c");
        wakes.set_pushed(true);
        c.wait(LONG);
        assert!(wakes.ticket("d").pushed());
    }

    #[test]
    fn an_end_wakes_the_head_and_the_unplaced_but_not_those_behind() {
        let wakes = Wakes::new(true);
        let (head, behind, unplaced) = (wakes.ticket("s"), wakes.ticket("s"), wakes.ticket("s"));
        head.queued_at(3);
        behind.queued_at(5);
        wakes.ended("s", Some(3));
        head.wait(LONG);
        unplaced.wait(LONG);
        let started = Instant::now();
        behind.wait(Duration::from_millis(30));
        assert!(started.elapsed() >= Duration::from_millis(30));
        // An end that names no head wakes every waiter of the scope.
        wakes.ended("s", None);
        behind.wait(LONG);
    }

    #[test]
    fn a_change_wakes_the_watches_and_an_end_wakes_them_too() {
        let wakes = Wakes::new(true);
        let (waiter, watch) = (wakes.ticket("s"), wakes.watch_ticket("s"));
        waiter.queued_at(3);
        wakes.changed("s");
        watch.wait(LONG);
        let started = Instant::now();
        waiter.wait(Duration::from_millis(30));
        assert!(started.elapsed() >= Duration::from_millis(30));
        // A watch is never in line: an end naming the head wakes it.
        let watch = wakes.watch_ticket("s");
        wakes.ended("s", Some(3));
        watch.wait(LONG);
    }

    #[test]
    fn a_scope_is_forgotten_with_its_last_ticket() {
        let wakes = Wakes::new(true);
        let a = wakes.ticket("s");
        let b = wakes.ticket("s");
        drop(a);
        assert_eq!(wakes.scopes(), 1);
        drop(b);
        assert_eq!(wakes.scopes(), 0);
        // A release with nobody waiting leaves nothing behind.
        wakes.ended("s", None);
        assert_eq!(wakes.scopes(), 0);
    }
}
