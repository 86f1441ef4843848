//! The live watches: `fencing.RejectionWatch`, the store's record of
//! rejections (`Store.watch_rejections`), and `fencing.LeaseWatch`, who holds
//! a scope's lease (`Store.watch`). Each is an iterator that blocks, with the
//! GIL released, until the next item; both share [`Steps`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use fencing::SharedWatch;
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
/// The waits run without the GIL and take turns with the core's watch; a
/// waiting thread takes the GIL every 20 ms to ask for signals, and `pop`,
/// which holds the GIL, never waits for it (`fencing::SharedWatch`).
struct Steps<W: fencing::Watch> {
    shared: SharedWatch<W>,
    ended: AtomicBool,
}

impl<W: fencing::Watch> Steps<W> {
    fn new(watch: W) -> Self {
        Steps {
            shared: SharedWatch::new(watch),
            ended: AtomicBool::new(false),
        }
    }

    fn waited(&self, py: Python<'_>, timeout: Duration, cancel: &Flag) -> PyResult<bool> {
        interruptible(py, cancel, |gave_up| {
            self.shared.wait(timeout, Some(gave_up))
        })
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

    /// The oldest ready item, without waiting.
    fn pop(&self) -> Option<W::Item> {
        self.shared.pop()
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
