//! The core's errors as instances of the exception classes defined in
//! `fencing/_errors.py` (one subclass of `FencingError` per SPEC code, with
//! the details as attributes).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use fencing::{Error, ErrorCode};

/// The class of each code, in the order of `ErrorCode::ALL`.
static CLASSES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

/// The Python class name for each code.
fn class_name(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::StaleToken => "StaleTokenError",
        ErrorCode::SequenceOutOfOrder => "SequenceError",
        ErrorCode::VersionMismatch => "VersionMismatchError",
        ErrorCode::NotFound => "NotFoundError",
        ErrorCode::LeaseHeld => "LeaseHeldError",
        ErrorCode::LeaseLost => "LeaseLostError",
        ErrorCode::TokenExhausted => "TokenExhaustedError",
        ErrorCode::InvalidArgument => "InvalidArgumentError",
        ErrorCode::Timeout => "TimeoutError",
        ErrorCode::Backend => "BackendError",
        ErrorCode::Closed => "ClosedError",
    }
}

fn class(py: Python<'_>, code: ErrorCode) -> PyResult<&Bound<'_, PyType>> {
    let classes = CLASSES.get_or_try_init(py, || -> PyResult<Vec<Py<PyType>>> {
        let module = py.import("fencing._errors")?;
        ErrorCode::ALL
            .iter()
            .map(|&c| {
                Ok(module
                    .getattr(class_name(c))?
                    .cast_into::<PyType>()?
                    .unbind())
            })
            .collect()
    })?;
    let index = ErrorCode::ALL.iter().position(|&c| c == code).unwrap_or(0);
    Ok(classes[index].bind(py))
}

/// An instance of the code's class with `message` and the attributes that
/// `details` sets.
///
/// Rejections are normal outcomes, so this is on a hot path: the instance is
/// made by `BaseException.__new__` (which stores the message as `args`) and
/// its attributes are set here, skipping the Python `__init__` (it exists for
/// callers who build these errors themselves). `TimeoutError` derives from
/// `OSError`, whose `__new__` leaves `args` to `__init__`: it is called.
pub fn build(
    py: Python<'_>,
    code: ErrorCode,
    message: &str,
    details: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<()>,
) -> PyErr {
    let make = || -> PyResult<PyErr> {
        let cls = class(py, code)?;
        let instance = if code == ErrorCode::Timeout {
            cls.call1((message,))?
        } else {
            cls.call_method1(intern!(py, "__new__"), (cls, message))?
        };
        details(&instance)?;
        Ok(PyErr::from_value(instance))
    };
    make().unwrap_or_else(|e| e)
}

fn set_details(e: &Bound<'_, PyAny>, error: &Error) -> PyResult<()> {
    let py = e.py();
    match error {
        Error::StaleToken {
            scope,
            presented,
            current,
        } => {
            e.setattr(intern!(py, "scope"), scope)?;
            e.setattr(intern!(py, "presented"), presented.get())?;
            e.setattr(intern!(py, "current"), current)?;
        }
        Error::SequenceOutOfOrder { presented, last } => {
            e.setattr(intern!(py, "presented"), presented)?;
            e.setattr(intern!(py, "last"), last)?;
        }
        Error::VersionMismatch { expected, actual } => {
            e.setattr(intern!(py, "expected"), expected)?;
            e.setattr(intern!(py, "actual"), actual)?;
        }
        Error::NotFound { scope, key } => {
            e.setattr(intern!(py, "scope"), scope)?;
            e.setattr(intern!(py, "key"), key)?;
        }
        Error::LeaseHeld {
            scope,
            holder,
            token,
            remaining,
        } => {
            e.setattr(intern!(py, "scope"), scope)?;
            e.setattr(intern!(py, "holder"), holder)?;
            e.setattr(intern!(py, "token"), token.get())?;
            e.setattr(intern!(py, "remaining"), remaining.as_secs_f64())?;
        }
        Error::LeaseLost { scope, current } => {
            set_lease_lost(
                e,
                scope,
                current.as_ref().map(|(t, h)| (t.get(), h.as_str())),
            )?;
        }
        Error::TokenExhausted
        | Error::InvalidArgument(_)
        | Error::Timeout
        | Error::Backend(_)
        | Error::Closed => {}
    }
    Ok(())
}

/// The attributes of a `LeaseLostError`.
pub fn set_lease_lost(
    e: &Bound<'_, PyAny>,
    scope: &str,
    current: Option<(u64, &str)>,
) -> PyResult<()> {
    let py = e.py();
    e.setattr(intern!(py, "scope"), scope)?;
    e.setattr(intern!(py, "current_token"), current.map(|(t, _)| t))?;
    e.setattr(intern!(py, "current_holder"), current.map(|(_, h)| h))?;
    Ok(())
}

/// The Python exception for a core error.
pub fn to_py(py: Python<'_>, error: &Error) -> PyErr {
    build(py, error.code(), &message(error), |e| set_details(e, error))
}

/// The core's message, except where it names a unit Python does not use:
/// `LeaseHeldError.remaining` is seconds, so its message says seconds.
fn message(error: &Error) -> String {
    match error {
        Error::LeaseHeld {
            scope,
            holder,
            token,
            remaining,
        } => format!(
            "lease on {scope:?} is held by {holder:?} with token {token}, {:.3} s left",
            remaining.as_secs_f64()
        ),
        other => other.to_string(),
    }
}

/// `INVALID_ARGUMENT` for a value the binding cannot convert (wrong type,
/// negative, not representable): `fencing.InvalidArgumentError`.
pub fn invalid(py: Python<'_>, message: impl Into<String>) -> PyErr {
    to_py(py, &Error::InvalidArgument(message.into()))
}

/// Maps a core result onto Python.
pub trait IntoPyResult<T> {
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for fencing::Result<T> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, &e))
    }
}
