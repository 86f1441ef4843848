//! The core's errors as instances of the exception classes defined in
//! `fencing/_errors.py`: one subclass of `FencingError` per code, named by
//! the core (`ErrorCode::type_name`), with the core's details
//! (`Error::details`) as attributes of the same names.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyString, PyType};

use fencing::{Detail, DetailKind, Error, ErrorCode, Field, Token};

/// The class of each code, in the order of `ErrorCode::ALL`.
static CLASSES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

fn class(py: Python<'_>, code: ErrorCode) -> PyResult<&Bound<'_, PyType>> {
    let classes = CLASSES.get_or_try_init(py, || -> PyResult<Vec<Py<PyType>>> {
        let module = py.import("fencing._errors")?;
        ErrorCode::ALL
            .iter()
            .map(|&c| {
                Ok(module
                    .getattr(c.type_name())?
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
    for (field, detail) in error.details() {
        let value = match detail {
            Detail::Text(t) => t.into_pyobject(py)?.into_any(),
            Detail::Number(n) => n.into_pyobject(py)?.into_any(),
            Detail::Duration(d) => d.as_secs_f64().into_pyobject(py)?.into_any(),
            Detail::OptionalNumber(n) => n.into_pyobject(py)?,
            Detail::OptionalText(t) => t.into_pyobject(py)?,
        };
        e.setattr(attribute(py, field), value)?;
    }
    // A rejection known only by its code (SQLite's view): its code's
    // attributes are None, not invented.
    if let Error::Rejected { code, .. } = error {
        for field in code.fields() {
            e.setattr(attribute(py, field), py.None())?;
        }
    }
    Ok(())
}

/// The field's attribute name, interned once (rejections are a hot path).
fn attribute(py: Python<'_>, field: Field) -> &Bound<'_, PyString> {
    static NAMES: PyOnceLock<Vec<Py<PyString>>> = PyOnceLock::new();
    let names = NAMES.get_or_init(py, || {
        let intern = |f: &Field| PyString::intern(py, f.name()).unbind();
        Field::ALL.iter().map(intern).collect()
    });
    let index = Field::ALL.iter().position(|&f| f == field).unwrap_or(0);
    names[index].bind(py)
}

/// `(code, class name, [(field, kind), ...])`.
type SchemaEntry = (
    &'static str,
    &'static str,
    Vec<(&'static str, &'static str)>,
);

/// The core's list of codes and their details, for `fencing._native`:
/// `[(code, class name, [(field, kind), ...]), ...]` with kinds `"text"`,
/// `"number"`, `"duration"` (seconds), `"optional_number"`,
/// `"optional_text"`. The package's tests check its classes against it.
#[pyfunction]
pub fn error_schema() -> Vec<SchemaEntry> {
    ErrorCode::ALL
        .iter()
        .map(|&code| {
            let fields = code.fields().into_iter().map(|f| {
                let kind = match f.kind() {
                    DetailKind::Text => "text",
                    DetailKind::Number => "number",
                    DetailKind::Duration => "duration",
                    DetailKind::OptionalNumber => "optional_number",
                    DetailKind::OptionalText => "optional_text",
                };
                (f.name(), kind)
            });
            (code.as_str(), code.type_name(), fields.collect())
        })
        .collect()
}

/// The attributes of a `LeaseLostError`.
pub fn set_lease_lost(
    e: &Bound<'_, PyAny>,
    scope: &str,
    current: Option<(u64, &str)>,
) -> PyResult<()> {
    let current = current.and_then(|(t, h)| Some((Token::new(t)?, h.to_owned())));
    let scope = scope.to_owned();
    set_details(e, &Error::LeaseLost { scope, current })
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
    /// The core's answer, unless a signal handler raised an exception while
    /// the call logged (`logs::pending`): that one, as Python would raise it
    /// at the call's end.
    fn py(self, py: Python<'_>) -> PyResult<T> {
        if let Some(e) = crate::logs::pending() {
            return Err(e);
        }
        self.map_err(|e| to_py(py, &e))
    }
}
