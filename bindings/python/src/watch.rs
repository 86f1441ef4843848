//! `fencing.RejectionWatch`: the store's record of rejections, live
//! (`Store.watch_rejections`): an iterator that blocks, with the GIL
//! released, until the store records the next one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::cancel::{flag_of, Flag};
use crate::convert::duration;
use crate::store::{interruptible, rejection_dict};

/// Each rejection the store records from the moment the watch began, oldest
/// first, as the dicts of ``Store.events()``. ``for r in watch`` blocks
/// until the next one (Ctrl-C ends it); after an error (the store closed)
/// iteration ends. ``wait`` and ``pop`` split a step in two, for a caller
/// that waits elsewhere (``fencing.aio``).
#[pyclass(frozen, module = "fencing", name = "RejectionWatch")]
pub struct RejectionWatch {
    inner: Mutex<fencing::RejectionWatch>,
    ended: AtomicBool,
}

impl RejectionWatch {
    pub fn new(inner: fencing::RejectionWatch) -> Self {
        RejectionWatch {
            inner: Mutex::new(inner),
            ended: AtomicBool::new(false),
        }
    }

    fn waited(&self, py: Python<'_>, timeout: Duration, cancel: &Flag) -> PyResult<bool> {
        interruptible(py, cancel, |gave_up| {
            let mut w = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            w.wait_unless(timeout, gave_up)
        })
    }
}

#[pymethods]
impl RejectionWatch {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        if self.ended.load(Ordering::Acquire) {
            return Ok(None);
        }
        loop {
            match self.waited(py, Duration::MAX, &Flag::default()) {
                Ok(_) => {
                    if let Some(r) = self.pop(py)? {
                        return Ok(Some(r));
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

    /// Waits until a rejection is pending, ``timeout`` seconds pass (None:
    /// no limit) or ``cancel`` is fired; returns whether one is pending.
    #[pyo3(signature = (timeout=None, *, cancel=None))]
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

    /// The oldest pending rejection, or None, without waiting.
    fn pop<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let r = self
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        r.map(|r| rejection_dict(py, &r)).transpose()
    }
}
