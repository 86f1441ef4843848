//! `Cancel`: a flag that gives up waits from another thread, or from a
//! cancelled `fencing.aio` task, so that the wait itself stops within 20 ms
//! instead of running on to its timeout (docs/semantics.md, "Giving up a
//! call").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pyo3::prelude::*;

use crate::convert::type_name;
use crate::errors::invalid;

/// A flag to give up waits: ``store.acquire_wait(..., cancel=flag)`` ends
/// with TimeoutError and no lease within about 20 ms of ``flag.fire()``,
/// from any thread; a wait given a fired flag sends no acquire at all. It
/// stays fired; one flag may serve many waits.
#[pyclass(frozen, module = "fencing", name = "Cancel")]
#[derive(Default)]
pub struct Cancel {
    fired: Arc<AtomicBool>,
}

#[pymethods]
impl Cancel {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Gives up every wait this flag was given.
    fn fire(&self) {
        self.fired.store(true, Ordering::Release);
    }

    /// Whether ``fire`` was called.
    #[getter]
    fn fired(&self) -> bool {
        self.fired.load(Ordering::Acquire)
    }

    fn __repr__(&self) -> String {
        format!(
            "<fencing.Cancel fired={}>",
            if self.fired() { "True" } else { "False" }
        )
    }
}

/// A wait's `cancel=` argument: a `Cancel`'s flag, none for `None`.
pub(crate) fn flag_of(py: Python<'_>, cancel: Option<&Bound<'_, PyAny>>) -> PyResult<Flag> {
    let Some(c) = cancel.filter(|c| !c.is_none()) else {
        return Ok(Flag(None));
    };
    let c = c.cast::<Cancel>().map_err(|_| {
        invalid(
            py,
            format!("cancel must be a fencing.Cancel, got {}", type_name(c)),
        )
    })?;
    Ok(Flag(Some(c.get().fired.clone())))
}

/// What a wait without the GIL asks, beside Python's signal handlers.
#[derive(Default)]
pub struct Flag(Option<Arc<AtomicBool>>);

impl Flag {
    pub(crate) fn fired(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Acquire))
    }
}
