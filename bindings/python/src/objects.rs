//! `fencing.Objects`: fenced objects and files (docs/objects.md), every
//! method a call into the core's `fencing::objects::Objects` with the GIL
//! released, converted as `fencing.Store`'s writes are.

use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::convert::{self, fence, text};
use crate::errors::{to_py, IntoPyResult};
use crate::types::{Object, Receipt};

type Core = fencing::objects::Objects;

/// Fenced objects on the store a URL names (docs/objects.md):
///
/// - ``memory:``: this handle's own, in memory (tests, examples);
/// - ``file:///DIR``: files under the existing directory ``DIR``;
/// - ``s3://BUCKET[/PREFIX]``: S3 and compatible servers, configured by the
///   ``AWS_*`` variables (and ``?endpoint=URL&region=R&allow_http=true``);
/// - ``az://CONTAINER[/PREFIX]``: Azure Blob Storage, configured by the
///   ``AZURE_*`` variables (and ``?endpoint=URL&allow_http=true``).
///
/// Each object path remembers the greatest token accepted for it, and a
/// write with a smaller one raises StaleTokenError, as ``Store.put`` does
/// for a scope. The handle is thread-safe, and every call releases the GIL
/// while the store works. Use it as a context manager, or call ``close()``,
/// to close it; later calls raise ClosedError.
#[pyclass(frozen, module = "fencing", name = "Objects")]
pub struct Objects {
    /// None once closed. A call holds its own reference while it runs, so
    /// ``close()`` never waits for one.
    inner: Mutex<Option<Arc<Core>>>,
}

/// Opens the fenced objects a URL names (``memory:``, ``file:///DIR``,
/// ``s3://BUCKET[/PREFIX]``, ``az://CONTAINER[/PREFIX]``); the same as
/// ``Objects(url)``.
#[pyfunction]
pub fn open_objects(py: Python<'_>, url: &Bound<'_, PyAny>) -> PyResult<Objects> {
    Objects::new(py, url)
}

impl Objects {
    fn new(py: Python<'_>, url: &Bound<'_, PyAny>) -> PyResult<Objects> {
        let url = text(py, url, "url")?;
        let inner = py.detach(|| Core::open(&url)).py(py)?;
        Ok(Objects {
            inner: Mutex::new(Some(Arc::new(inner))),
        })
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<Core>>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The open handle, or ClosedError.
    fn open_handle(&self, py: Python<'_>) -> PyResult<Arc<Core>> {
        self.slot()
            .clone()
            .ok_or_else(|| to_py(py, &fencing::Error::Closed))
    }
}

#[pymethods]
impl Objects {
    #[new]
    #[pyo3(signature = (url))]
    fn py_new(py: Python<'_>, url: &Bound<'_, PyAny>) -> PyResult<Objects> {
        Objects::new(py, url)
    }

    fn __repr__(&self) -> &'static str {
        // Never the URL: an S3 URL's options stay out of logs.
        if self.slot().is_some() {
            "<fencing.Objects open>"
        } else {
            "<fencing.Objects closed>"
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the handle.
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyType>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close(py);
        false
    }

    /// Closes the handle for every user of it; later calls raise
    /// ClosedError (a call already running finishes). Closing twice is
    /// harmless.
    fn close(&self, py: Python<'_>) {
        let handle = self.slot().take();
        py.detach(|| drop(handle));
    }

    /// Whether ``close()`` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.slot().is_none()
    }

    /// Stores ``value`` (bytes-like) as the object at ``path`` if ``token``
    /// is not older than the greatest token accepted for the path; raises
    /// StaleTokenError otherwise. ``seq`` orders writes within one token,
    /// ``holder`` is recorded with rejections, ``expected_version`` makes it
    /// conditional (0: must not exist yet).
    #[pyo3(signature = (path, value, *, token, seq=None, holder=None, expected_version=None))]
    #[allow(clippy::too_many_arguments)]
    fn put(
        &self,
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        token: &Bound<'_, PyAny>,
        seq: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
        expected_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Receipt> {
        let path = text(py, path, "path")?;
        let value = convert::bytes(py, value, "value")?;
        let fence = fence(py, token, seq, holder)?;
        let expected = convert::optional_count(py, expected_version, "expected_version")?;
        let objects = self.open_handle(py)?;
        py.detach(|| objects.put(&path, &fence, &value, expected))
            .py(py)
            .map(Receipt::from)
    }

    /// Deletes the object at ``path`` with the same checks as ``put``;
    /// NotFoundError if there is none. The path keeps its fence. The
    /// receipt's version is 0.
    #[pyo3(signature = (path, *, token, seq=None, holder=None, expected_version=None))]
    fn delete(
        &self,
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        token: &Bound<'_, PyAny>,
        seq: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
        expected_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Receipt> {
        let path = text(py, path, "path")?;
        let fence = fence(py, token, seq, holder)?;
        let expected = convert::optional_count(py, expected_version, "expected_version")?;
        let objects = self.open_handle(py)?;
        py.detach(|| objects.delete(&path, &fence, expected))
            .py(py)
            .map(Receipt::from)
    }

    /// Reads the object at ``path``: an Object (its bytes, and the token and
    /// version of the write that stored them), or None when there is none.
    fn get(&self, py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<Option<Object>> {
        let path = text(py, path, "path")?;
        let objects = self.open_handle(py)?;
        let object = py.detach(|| objects.get(&path)).py(py)?;
        Ok(object.map(|o| Object::new(py, o)))
    }
}
