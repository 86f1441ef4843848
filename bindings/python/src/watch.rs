//! The live watches: `fencing.RejectionWatch`, the store's record of
//! rejections (`Store.watch_rejections`), and `fencing.LeaseWatch`, who holds
//! a scope's lease (`Store.watch`). Each is an iterator that blocks, with the
//! GIL released, until the next item; both share [`Steps`].

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use fencing::defaults::GIVE_UP_CHECK;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::cancel::{flag_of, Flag};
use crate::convert::duration;
use crate::store::{interruptible, rejection_dict};
use crate::types::Holding;

/// What both watches do: a step of iteration (Ctrl-C ends its wait and
/// leaves the watch usable; a store's error ends the watch), and `wait` and
/// `pop`, a step split in two for a caller that waits elsewhere
/// (``fencing.aio``): the wait only waits, so a wait given up loses nothing.
///
/// Waits take turns with the core's watch, without the GIL: a wait begun
/// while another runs waits for its turn (within its own timeout, and
/// Ctrl-C or its cancel end it). What a wait finds goes to `ready`, and
/// `pop` takes it from there, so `pop`, which holds the GIL, never waits
/// for a wait in flight: a waiting thread takes the GIL every 20 ms (to
/// ask for signals) while it has the watch, and `pop` never touches the
/// watch or the turn. The one lock both take, `ready`, is held only to move
/// items in or out, never while waiting for anything (the GIL included),
/// so no thread can hold one of the two (the GIL, `ready`) while waiting
/// for the other's holder.
struct Steps<W: fencing::Watch> {
    /// Locked only by the wait whose turn it is (so never contended).
    watch: Mutex<W>,
    /// What the waits found, oldest first, for `pop`.
    ready: Mutex<VecDeque<W::Item>>,
    /// Whether a wait has its turn.
    busy: Mutex<bool>,
    /// Told when a turn ends.
    turn_ended: Condvar,
    ended: AtomicBool,
}

/// A wait's turn with the watch: ended when dropped, panics included.
struct Turn<'a, W: fencing::Watch>(&'a Steps<W>);

impl<W: fencing::Watch> Drop for Turn<'_, W> {
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

impl<W: fencing::Watch> Steps<W> {
    fn new(watch: W) -> Self {
        Steps {
            watch: Mutex::new(watch),
            ready: Mutex::new(VecDeque::new()),
            busy: Mutex::new(false),
            turn_ended: Condvar::new(),
            ended: AtomicBool::new(false),
        }
    }

    fn waited(&self, py: Python<'_>, timeout: Duration, cancel: &Flag) -> PyResult<bool> {
        if self.is_ready() {
            return Ok(true);
        }
        interruptible(py, cancel, |gave_up| self.wait_turn(timeout, gave_up))
    }

    /// Without the GIL: waits for the turn, then on the watch, until an
    /// item is ready, `timeout` passes or `gave_up()` says so; returns
    /// whether one is ready.
    fn wait_turn(&self, timeout: Duration, gave_up: &dyn Fn() -> bool) -> fencing::Result<bool> {
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
        if !watch.wait_unless(left, gave_up)? {
            return Ok(self.is_ready());
        }
        let mut ready = lock(&self.ready);
        while let Some(item) = watch.pop() {
            ready.push_back(item);
        }
        Ok(!ready.is_empty())
    }

    /// The turn once no other wait has it; `None` when `deadline` passes or
    /// `gave_up()` says so first (asked every [`GIVE_UP_CHECK`], with no
    /// lock held: it takes the GIL).
    fn turn(&self, deadline: Option<Instant>, gave_up: &dyn Fn() -> bool) -> Option<Turn<'_, W>> {
        loop {
            {
                let mut busy = lock(&self.busy);
                if !*busy {
                    *busy = true;
                    return Some(Turn(self));
                }
                let left = deadline.map_or(Duration::MAX, |d| {
                    d.saturating_duration_since(Instant::now())
                });
                if left.is_zero() {
                    return None;
                }
                busy = self
                    .turn_ended
                    .wait_timeout(busy, left.min(GIVE_UP_CHECK))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                if !*busy {
                    *busy = true;
                    return Some(Turn(self));
                }
            }
            if gave_up() {
                return None;
            }
        }
    }

    fn is_ready(&self) -> bool {
        !lock(&self.ready).is_empty()
    }

    fn next(&self, py: Python<'_>) -> PyResult<Option<W::Item>> {
        if self.ended.load(Ordering::Acquire) {
            return Ok(None);
        }
        loop {
            match self.waited(py, Duration::MAX, &Flag::default()) {
                Ok(_) => {
                    if let Some(item) = self.pop() {
                        return Ok(Some(item));
                    }
                }
                Err(e) => {
                    // A store's error ends the watch; KeyboardInterrupt (a
                    // BaseException only) leaves it usable.
                    if e.is_instance_of::<PyException>(py) {
                        self.ended.store(true, Ordering::Release);
                    }
                    return Err(e);
                }
            }
        }
    }

    fn wait(
        &self,
        py: Python<'_>,
        timeout: Option<&Bound<'_, PyAny>>,
        cancel: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let timeout = match timeout.filter(|t| !t.is_none()) {
            Some(t) => duration(py, t, "timeout")?,
            None => Duration::MAX,
        };
        let cancel = flag_of(py, cancel)?;
        self.waited(py, timeout, &cancel)
    }

    /// The oldest ready item, without waiting (for anything but `ready`,
    /// which no one holds for longer than moving items).
    fn pop(&self) -> Option<W::Item> {
        lock(&self.ready).pop_front()
    }
}

/// Each rejection the store records from the moment the watch began, oldest
/// first, as the dicts of ``Store.events()``. ``for r in watch`` blocks
/// until the next one (Ctrl-C ends it); after an error (the store closed)
/// iteration ends. ``wait`` and ``pop`` split a step in two, for a caller
/// that waits elsewhere (``fencing.aio``).
#[pyclass(frozen, module = "fencing", name = "RejectionWatch")]
pub struct RejectionWatch {
    steps: Steps<fencing::RejectionWatch>,
}

impl RejectionWatch {
    pub fn new(inner: fencing::RejectionWatch) -> Self {
        RejectionWatch {
            steps: Steps::new(inner),
        }
    }
}

#[pymethods]
impl RejectionWatch {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.steps
            .next(py)?
            .map(|r| rejection_dict(py, &r))
            .transpose()
    }

    /// Waits until a rejection is pending, ``timeout`` seconds pass (None:
    /// no limit) or ``cancel`` is fired; returns whether one is pending.
    #[pyo3(signature = (timeout=None, *, cancel=None))]
    fn wait(
        &self,
        py: Python<'_>,
        timeout: Option<&Bound<'_, PyAny>>,
        cancel: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.steps.wait(py, timeout, cancel)
    }

    /// The oldest pending rejection, or None, without waiting.
    fn pop<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.steps.pop().map(|r| rejection_dict(py, &r)).transpose()
    }
}

/// Who holds a scope's lease: first the lease as it is when the watch
/// begins, then the lease after each change (acquired, renewed, released,
/// expired), in order, as ``Holding`` values (``scope``, ``lease``: a
/// ``Lease`` or None). ``for h in watch`` blocks until the next change
/// (Ctrl-C ends it); after an error (the store closed) iteration ends.
/// ``wait`` and ``pop`` split a step in two, for a caller that waits
/// elsewhere (``fencing.aio``).
#[pyclass(frozen, module = "fencing", name = "LeaseWatch")]
pub struct LeaseWatch {
    steps: Steps<fencing::LeaseWatch>,
    scope: String,
}

impl LeaseWatch {
    pub fn new(inner: fencing::LeaseWatch) -> Self {
        LeaseWatch {
            scope: inner.scope().to_owned(),
            steps: Steps::new(inner),
        }
    }
}

#[pymethods]
impl LeaseWatch {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Holding>> {
        Ok(self.steps.next(py)?.map(Holding::from))
    }

    /// Waits until a change is pending, ``timeout`` seconds pass (None: no
    /// limit) or ``cancel`` is fired; returns whether one is pending.
    #[pyo3(signature = (timeout=None, *, cancel=None))]
    fn wait(
        &self,
        py: Python<'_>,
        timeout: Option<&Bound<'_, PyAny>>,
        cancel: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.steps.wait(py, timeout, cancel)
    }

    /// The pending ``Holding``, or None, without waiting.
    fn pop(&self) -> Option<Holding> {
        self.steps.pop().map(Holding::from)
    }

    /// The scope watched.
    #[getter]
    fn scope(&self) -> &str {
        &self.scope
    }
}
