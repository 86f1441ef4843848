//! The rejections of SQLite's `fencing_check` view as typed exceptions, for
//! callers who fence their own tables with plain SQL through their own
//! driver (docs/sqlite.md). The mapping is the core's
//! (`Error::from_sqlite_message`); `fencing.from_sqlite_error` (Python) reads
//! a driver's exception and calls this.

use pyo3::exceptions::PyBaseException;
use pyo3::prelude::*;

use crate::convert;
use crate::errors::to_py;

/// The fencing exception an SQLite error message stands for, when the
/// ``fencing_check`` view raised it (the message starts with the code and a
/// colon: ``"STALE_TOKEN: ..."``): ``StaleTokenError``, ``SequenceOutOfOrderError`` or
/// ``InvalidArgumentError``. The message carries no details, so ``scope``
/// and the numbers are None. None for any other message. The exception
/// is returned, not raised.
#[pyfunction]
pub fn error_from_sqlite_message(
    py: Python<'_>,
    message: &Bound<'_, PyAny>,
) -> PyResult<Option<Py<PyBaseException>>> {
    let message = convert::text(py, message, "message")?;
    Ok(fencing::Error::from_sqlite_message(&message).map(|e| to_py(py, &e).into_value(py)))
}
