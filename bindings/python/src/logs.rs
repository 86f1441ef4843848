//! The core's log records (target `fencing`, docs/operations.md, "Logs")
//! to Python's `logging`: logger `fencing`, through pyo3-log.
//!
//! pyo3-log caches each logger's effective level the first time it sends
//! a record, so that a DEBUG record Python would drop costs no GIL;
//! `reset_log_cache` makes it read the levels again after `logging` is
//! reconfigured.

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use log::{LevelFilter, Log, Metadata, Record};
use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;
use pyo3_log::{Caching, Logger, ResetHandle};

static RESET: OnceLock<ResetHandle> = OnceLock::new();

thread_local! {
    /// An exception a signal handler raised while this thread logged in a
    /// call that runs without the GIL (a `SystemExit` from `sys.exit` in a
    /// SIGTERM handler): the call raises it when it returns (`pending`).
    static PENDING: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// The exception a signal handler raised while this thread logged, if any
/// (taken: raised once).
pub(crate) fn pending() -> Option<PyErr> {
    PENDING.with(|p| p.borrow_mut().take())
}

/// Whether a signal handler raised one while this thread logged.
pub(crate) fn has_pending() -> bool {
    PENDING.with(|p| p.borrow().is_some())
}

/// pyo3-log's logger, made safe to call from the keep-alive's threads at
/// any time: it never attaches to an interpreter that is shutting down
/// (`try_attach`), and a panic inside it ends there, not in the thread
/// that logged (which may be about to call a loss callback).
struct Bridge(Logger);

impl Log for Bridge {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.0.enabled(metadata)
    }

    fn log(&self, record: &Record<'_>) {
        if !self.0.enabled(record.metadata()) {
            return;
        }
        let _ = catch_unwind(AssertUnwindSafe(|| {
            Python::try_attach(|py| {
                // pyo3-log leaves an exception raised while it logged set
                // on the thread; in a call that logs without the GIL, that
                // call would then return a value with an exception set
                // (SystemError). Python's code here (logging's) can also
                // run a signal handler: a Ctrl-C it raised is delivered
                // again, at the call's next check for signals; another of
                // its exceptions (SystemExit) when the call returns. An
                // error of a logging handler itself is reported, as
                // `logging` reports those.
                let before = PyErr::take(py);
                self.0.log(record);
                let during = PyErr::take(py);
                if let Some(e) = before {
                    e.restore(py);
                }
                if let Some(e) = during {
                    if e.is_instance_of::<PyKeyboardInterrupt>(py) {
                        // SAFETY: the GIL is held; it only sets a flag.
                        unsafe { pyo3::ffi::PyErr_SetInterrupt() };
                    } else if e.is_instance_of::<PyException>(py) {
                        e.write_unraisable(py, None);
                    } else {
                        PENDING.with(|p| *p.borrow_mut() = Some(e));
                    }
                }
            });
        }));
    }

    fn flush(&self) {}
}

/// Installs the bridge, once per process. Another extension that already
/// installed a Rust logger keeps it: `log` has one logger per process
/// image, and this module's is its own.
pub fn install(py: Python<'_>) -> PyResult<()> {
    if RESET.get().is_some() {
        return Ok(());
    }
    // Only fencing's own records: the PostgreSQL driver logs statements'
    // parameters (values) at DEBUG.
    let logger = Logger::new(py, Caching::LoggersAndLevels)?
        .filter(LevelFilter::Off)
        .filter_target("fencing".to_owned(), LevelFilter::Debug);
    let reset = logger.reset_handle();
    if log::set_boxed_logger(Box::new(Bridge(logger))).is_ok() {
        log::set_max_level(LevelFilter::Debug);
        let _ = RESET.set(reset);
    }
    Ok(())
}

/// Forgets the levels cached from Python's `logging` (and the loggers), so
/// that a `logging` configuration changed after fencing first logged takes
/// effect.
#[pyfunction]
pub fn reset_log_cache() {
    if let Some(reset) = RESET.get() {
        reset.reset();
    }
}
