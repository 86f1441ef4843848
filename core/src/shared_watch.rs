//! A live watch ([`Watch`]) that many callers share, as the faces hand one
//! to threads, tasks and event loops: waits take turns with the watch, and
//! what a wait finds is kept for whichever caller takes it (`pop`), so that
//! taking never waits for a wait in flight. A face whose `pop` holds a lock
//! of its own (Python's GIL, JavaScript's thread) while a waiting thread
//! needs that lock to ask whether its caller gave up would otherwise wait
//! on that thread for good.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::defaults::GIVE_UP_CHECK;
use crate::error::Result;
use crate::watch::Watch;

pub struct SharedWatch<W: Watch> {
    /// Locked only by the wait whose turn it is (so never contended).
    watch: Mutex<W>,
    /// What the waits found, oldest first: locked only to move items in or
    /// out, never across a wait.
    ready: Mutex<VecDeque<W::Item>>,
    /// Whether a wait has its turn.
    busy: Mutex<bool>,
    /// Told when a turn ends.
    turn_ended: Condvar,
}

/// A wait's turn with the watch: ended when dropped, panics included.
struct Turn<'a, W: Watch>(&'a SharedWatch<W>);

impl<W: Watch> Drop for Turn<'_, W> {
    fn drop(&mut self) {
        *lock(&self.0.busy) = false;
        self.0.turn_ended.notify_one();
    }
}

/// A lock whose data no panic leaves half-written (a flag, a queue, or the
/// watch between two of its calls).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<W: Watch> SharedWatch<W> {
    pub fn new(watch: W) -> SharedWatch<W> {
        SharedWatch {
            watch: Mutex::new(watch),
            ready: Mutex::new(VecDeque::new()),
            busy: Mutex::new(false),
            turn_ended: Condvar::new(),
        }
    }

    /// Waits until an item is ready, `timeout` passes (`Duration::MAX`:
    /// never) or `gave_up()` says so; returns whether one is. A wait begun
    /// while another has the turn waits for it within its own timeout.
    /// `gave_up` is asked at once and then every [`GIVE_UP_CHECK`]; it may
    /// take a face's own lock (Python's GIL), since nothing that takes an
    /// item (`pop`) waits on what the waiting thread holds meanwhile (the
    /// turn, and the watch while it has it). Without it, the wait sleeps
    /// until woken.
    pub fn wait(&self, timeout: Duration, gave_up: Option<&dyn Fn() -> bool>) -> Result<bool> {
        if self.is_ready() {
            return Ok(true);
        }
        let deadline = Instant::now().checked_add(timeout);
        let Some(_turn) = self.turn(deadline, gave_up) else {
            return Ok(self.is_ready());
        };
        // A wait that had the turn before this one may have found an item.
        if self.is_ready() {
            return Ok(true);
        }
        let mut watch = lock(&self.watch);
        let left = deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        });
        let first = match gave_up {
            Some(gave_up) => {
                if !watch.wait_unless(left, gave_up)? {
                    return Ok(self.is_ready());
                }
                None
            }
            None => match watch.next_within(left)? {
                Some(item) => Some(item),
                None => return Ok(self.is_ready()),
            },
        };
        let mut ready = lock(&self.ready);
        ready.extend(first);
        while let Some(item) = watch.pop() {
            ready.push_back(item);
        }
        Ok(!ready.is_empty())
    }

    /// The oldest ready item, without waiting.
    pub fn pop(&self) -> Option<W::Item> {
        lock(&self.ready).pop_front()
    }

    /// The next item, waited for as [`SharedWatch::wait`] does; `None` when
    /// none came in time (or the caller gave up). Each item goes to one
    /// caller: one that another caller took first is waited for again.
    pub fn next(
        &self,
        timeout: Duration,
        gave_up: Option<&dyn Fn() -> bool>,
    ) -> Result<Option<W::Item>> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            let left = deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            });
            if !self.wait(left, gave_up)? {
                return Ok(None);
            }
            if let Some(item) = self.pop() {
                return Ok(Some(item));
            }
            if left.is_zero() {
                return Ok(None);
            }
        }
    }

    fn is_ready(&self) -> bool {
        !lock(&self.ready).is_empty()
    }

    /// The turn once no other wait has it; `None` when `deadline` passes or
    /// `gave_up()` says so first (asked every [`GIVE_UP_CHECK`], with no
    /// lock held; without it, the wait sleeps until a turn ends).
    fn turn(
        &self,
        deadline: Option<Instant>,
        gave_up: Option<&dyn Fn() -> bool>,
    ) -> Option<Turn<'_, W>> {
        loop {
            let mut busy = lock(&self.busy);
            if !*busy {
                *busy = true;
                return Some(Turn(self));
            }
            drop(busy);
            // Before each wait, with no lock held: a caller that gave up
            // already is told at once.
            if gave_up.is_some_and(|g| g()) {
                return None;
            }
            let left = deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return None;
            }
            let slice = match gave_up {
                Some(_) => left.min(GIVE_UP_CHECK),
                None => left,
            };
            busy = lock(&self.busy);
            if *busy {
                let _ = self.turn_ended.wait_timeout(busy, slice);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// A watch whose items come when the test sends them.
    struct Fed {
        items: std::sync::mpsc::Receiver<u32>,
        pending: VecDeque<u32>,
    }

    impl Watch for Fed {
        type Item = u32;
        fn wait_unless(&mut self, timeout: Duration, gave_up: &dyn Fn() -> bool) -> Result<bool> {
            let deadline = Instant::now().checked_add(timeout);
            loop {
                if !self.pending.is_empty() {
                    return Ok(true);
                }
                if gave_up() {
                    return Ok(false);
                }
                let left = deadline.map_or(GIVE_UP_CHECK, |d| {
                    d.saturating_duration_since(Instant::now())
                });
                if left.is_zero() {
                    return Ok(false);
                }
                if let Ok(item) = self.items.recv_timeout(left.min(GIVE_UP_CHECK)) {
                    self.pending.push_back(item);
                }
            }
        }
        fn pop(&mut self) -> Option<u32> {
            self.pending.pop_front()
        }
    }

    fn fed() -> (std::sync::mpsc::Sender<u32>, Arc<SharedWatch<Fed>>) {
        let (tx, items) = std::sync::mpsc::channel();
        let watch = Fed {
            items,
            pending: VecDeque::new(),
        };
        (tx, Arc::new(SharedWatch::new(watch)))
    }

    /// A caller whose wait has the turn for 300 ms (nothing comes), begun
    /// 50 ms before this returns.
    fn holding_the_turn(shared: &Arc<SharedWatch<Fed>>) -> std::thread::JoinHandle<Result<bool>> {
        let shared = shared.clone();
        let holder = std::thread::spawn(move || shared.wait(Duration::from_millis(300), None));
        std::thread::sleep(Duration::from_millis(50));
        holder
    }

    #[test]
    fn pop_never_waits_for_a_wait_in_flight() {
        let (tx, shared) = fed();
        let stop = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (shared, stop) = (shared.clone(), stop.clone());
            std::thread::spawn(move || {
                let gave_up = || stop.load(Ordering::SeqCst);
                shared.wait(Duration::MAX, Some(&gave_up))
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        // The waiter holds the watch; taking finds nothing, at once.
        assert_eq!(shared.pop(), None);
        tx.send(7).unwrap();
        assert!(waiter.join().unwrap().unwrap());
        assert_eq!(shared.pop(), Some(7));
        assert_eq!(shared.pop(), None);
        stop.store(true, Ordering::SeqCst);
    }

    #[test]
    fn waits_take_turns_and_each_item_goes_to_one_caller() {
        let (tx, shared) = fed();
        let takers: Vec<_> = (0..4)
            .map(|_| {
                let shared = shared.clone();
                std::thread::spawn(move || shared.next(Duration::from_secs(30), None))
            })
            .collect();
        for i in 0..4 {
            tx.send(i).unwrap();
        }
        let mut got: Vec<u32> = takers
            .into_iter()
            .map(|t| t.join().unwrap().unwrap().unwrap())
            .collect();
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2, 3]);
    }

    #[test]
    fn a_caller_that_gave_up_takes_no_turn_and_nothing_while_another_waits() {
        let (_tx, shared) = fed();
        let holder = holding_the_turn(&shared);
        let asked = std::sync::atomic::AtomicU32::new(0);
        let gave_up = || {
            asked.fetch_add(1, Ordering::SeqCst);
            true
        };
        assert_eq!(
            shared
                .next(Duration::from_secs(10), Some(&gave_up))
                .unwrap(),
            None
        );
        // Asked once, before any wait for the turn.
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        assert!(!holder.join().unwrap().unwrap());
    }

    #[test]
    fn a_wait_for_the_turn_ends_at_its_timeout_or_when_given_up() {
        let (_tx, shared) = fed();
        let holder = holding_the_turn(&shared);
        assert!(!shared.wait(Duration::from_millis(20), None).unwrap());
        assert!(!shared.wait(Duration::MAX, Some(&|| true)).unwrap());
        assert!(!holder.join().unwrap().unwrap());
    }
}
