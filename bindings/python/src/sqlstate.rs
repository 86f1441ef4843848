//! Fencing's SQLSTATEs (class `FN`) as typed exceptions, for callers who run
//! `SELECT fencing.check(scope, token)` in their own transaction through
//! their own driver. The mapping is the core's (`Error::from_sqlstate`);
//! `fencing.from_postgres_error` (Python) reads a driver's exception and
//! calls this.

use pyo3::exceptions::PyBaseException;
use pyo3::prelude::*;

use crate::convert;
use crate::errors::to_py;

/// The fencing exception a PostgreSQL error describes: its SQLSTATE
/// (``"FN001"``) and DETAIL (JSON, may be None) give the subclass and its
/// attributes (``StaleTokenError`` with ``scope``, ``presented``,
/// ``current``, ...). None for any SQLSTATE that is not fencing's. The
/// exception is returned, not raised.
#[pyfunction]
#[pyo3(signature = (sqlstate, detail=None))]
pub fn error_from_sqlstate(
    py: Python<'_>,
    sqlstate: &Bound<'_, PyAny>,
    detail: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Py<PyBaseException>>> {
    let sqlstate = convert::text(py, sqlstate, "sqlstate")?;
    let detail = convert::optional_text(py, detail.filter(|d| !d.is_none()), "detail")?;
    Ok(fencing::Error::from_sqlstate(&sqlstate, detail.as_deref())
        .map(|e| to_py(py, &e).into_value(py)))
}
