//! The values that cross the API: immutable Python objects over the core's
//! types.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::convert;

fn str_repr(py: Python<'_>, s: &str) -> String {
    PyString::new(py, s)
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| format!("{s:?}"))
}

fn opt_repr<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "None".to_owned(), |v| v.to_string())
}

/// A lease: permission with a deadline. `token` is the fencing token to
/// present with every write made under this lease.
#[pyclass(frozen, eq, module = "fencing", name = "Lease")]
#[derive(Clone, PartialEq, Eq)]
pub struct Lease {
    pub inner: fencing::Lease,
}

#[pymethods]
impl Lease {
    /// The protected scope.
    #[getter]
    fn scope(&self) -> &str {
        &self.inner.scope
    }

    /// Who acquired it (a label, never trusted for safety).
    #[getter]
    fn holder(&self) -> &str {
        &self.inner.holder
    }

    /// The fencing token (an int in 1..=MAX_TOKEN).
    #[getter]
    fn token(&self) -> u64 {
        self.inner.token.get()
    }

    /// The time to live it was acquired or last renewed with, in seconds.
    #[getter]
    fn ttl(&self) -> f64 {
        self.inner.ttl.as_secs_f64()
    }

    /// Seconds left when the store produced this value, on the store's own
    /// clock (so a skewed client clock does not distort it).
    #[getter]
    fn remaining(&self) -> f64 {
        self.inner.remaining.as_secs_f64()
    }

    /// When it expires unless renewed: an aware `datetime` in UTC.
    #[getter]
    fn expires_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::datetime(py, self.inner.expires_at)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Lease(scope={}, holder={}, token={}, ttl={:?}, remaining={:?})",
            str_repr(py, &self.inner.scope),
            str_repr(py, &self.inner.holder),
            self.inner.token,
            self.inner.ttl.as_secs_f64(),
            self.inner.remaining.as_secs_f64(),
        )
    }
}

/// A scope's lease as a watch saw it (``Store.watch``): ``scope``, and
/// ``lease``, the live lease or None while nobody holds it.
#[pyclass(frozen, eq, module = "fencing", name = "Holding")]
#[derive(PartialEq, Eq)]
pub struct Holding {
    /// The scope watched.
    #[pyo3(get)]
    scope: String,
    lease: Option<Lease>,
}

impl From<fencing::Holding> for Holding {
    fn from(h: fencing::Holding) -> Holding {
        Holding {
            scope: h.scope,
            lease: h.lease.map(|inner| Lease { inner }),
        }
    }
}

#[pymethods]
impl Holding {
    /// The live lease, or None (never taken, released, expired, or ended by
    /// a failover step).
    #[getter]
    fn lease(&self) -> Option<Lease> {
        self.lease.clone()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Holding(scope={}, lease={})",
            str_repr(py, &self.scope),
            self.lease
                .as_ref()
                .map_or_else(|| "None".to_owned(), |l| l.__repr__(py))
        )
    }
}

/// The outcome of one accepted put or delete.
#[pyclass(frozen, eq, hash, module = "fencing", name = "Receipt")]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Receipt {
    /// The entry's version after the write (1 on create, +1 per write; 0
    /// after a delete).
    #[pyo3(get)]
    version: u64,
    /// The token the write was accepted with.
    #[pyo3(get)]
    token: u64,
}

impl From<fencing::Receipt> for Receipt {
    fn from(r: fencing::Receipt) -> Receipt {
        Receipt {
            version: r.version,
            token: r.token.get(),
        }
    }
}

#[pymethods]
impl Receipt {
    fn __repr__(&self) -> String {
        format!("Receipt(version={}, token={})", self.version, self.token)
    }
}

/// A stored value and the generation that wrote it.
#[pyclass(frozen, module = "fencing", name = "Entry")]
pub struct Entry {
    /// The entry's key.
    #[pyo3(get)]
    key: String,
    /// The stored bytes.
    #[pyo3(get)]
    value: Py<PyBytes>,
    /// 1 on create, +1 on every accepted write.
    #[pyo3(get)]
    version: u64,
    /// The token of the write that stored this version.
    #[pyo3(get)]
    token: u64,
}

impl Entry {
    pub fn new(py: Python<'_>, e: fencing::Entry) -> Entry {
        Entry {
            value: PyBytes::new(py, &e.value).unbind(),
            key: e.key,
            version: e.version,
            token: e.token.get(),
        }
    }
}

#[pymethods]
impl Entry {
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> bool {
        let Ok(other) = other.cast::<Entry>() else {
            return false;
        };
        let other = other.get();
        self.key == other.key
            && self.version == other.version
            && self.token == other.token
            && self.value.bind(py).as_bytes() == other.value.bind(py).as_bytes()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        // Never the value itself: payloads stay out of logs.
        format!(
            "Entry(key={}, value=<{} bytes>, version={}, token={})",
            str_repr(py, &self.key),
            self.value.bind(py).as_bytes().len(),
            self.version,
            self.token
        )
    }
}

/// A fenced object as read (``Objects.get``): its bytes, and the token and
/// version of the write that stored them.
#[pyclass(frozen, module = "fencing", name = "Object")]
pub struct Object {
    /// The stored bytes.
    #[pyo3(get)]
    value: Py<PyBytes>,
    /// Grows with every write of the path, deletes included; never reused.
    #[pyo3(get)]
    version: u64,
    /// The token of the write that stored these bytes.
    #[pyo3(get)]
    token: u64,
}

impl Object {
    pub fn new(py: Python<'_>, o: fencing::objects::Object) -> Object {
        Object {
            value: PyBytes::new(py, &o.bytes).unbind(),
            version: o.version,
            token: o.token.get(),
        }
    }
}

#[pymethods]
impl Object {
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> bool {
        let Ok(other) = other.cast::<Object>() else {
            return false;
        };
        let other = other.get();
        self.version == other.version
            && self.token == other.token
            && self.value.bind(py).as_bytes() == other.value.bind(py).as_bytes()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        // Never the bytes themselves: payloads stay out of logs.
        format!(
            "Object(value=<{} bytes>, version={}, token={})",
            self.value.bind(py).as_bytes().len(),
            self.version,
            self.token
        )
    }
}

/// One page of a scope's keys, in byte order.
#[pyclass(frozen, eq, module = "fencing", name = "Page")]
#[derive(PartialEq, Eq)]
pub struct Page {
    /// Up to `limit` keys.
    #[pyo3(get)]
    keys: Vec<String>,
    /// Pass as `after=` to read the next page; None on the last page.
    #[pyo3(get)]
    next: Option<String>,
}

impl From<fencing::Page> for Page {
    fn from(p: fencing::Page) -> Page {
        Page {
            keys: p.keys,
            next: p.next,
        }
    }
}

#[pymethods]
impl Page {
    fn __repr__(&self, py: Python<'_>) -> String {
        let keys: Vec<String> = self.keys.iter().map(|k| str_repr(py, k)).collect();
        let next = self.next.as_deref().map(|n| str_repr(py, n));
        format!("Page(keys=[{}], next={})", keys.join(", "), opt_repr(next))
    }
}

/// Everything known about one scope, for operators.
#[pyclass(frozen, eq, module = "fencing", name = "ScopeStatus")]
#[derive(PartialEq, Eq)]
pub struct ScopeStatus {
    /// The greatest token issued (0 = none).
    #[pyo3(get)]
    counter: u64,
    /// The greatest token accepted (0 = none).
    #[pyo3(get)]
    fence: u64,
    /// The number of entries in the scope.
    #[pyo3(get)]
    entries: u64,
    lease: Option<Lease>,
}

impl From<fencing::ScopeStatus> for ScopeStatus {
    fn from(s: fencing::ScopeStatus) -> ScopeStatus {
        ScopeStatus {
            counter: s.counter,
            fence: s.fence,
            entries: s.entries,
            lease: s.lease.map(|inner| Lease { inner }),
        }
    }
}

#[pymethods]
impl ScopeStatus {
    /// The current, unexpired lease, or None.
    #[getter]
    fn lease(&self) -> Option<Lease> {
        self.lease.clone()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "ScopeStatus(counter={}, fence={}, entries={}, lease={})",
            self.counter,
            self.fence,
            self.entries,
            self.lease
                .as_ref()
                .map_or_else(|| "None".to_owned(), |l| l.__repr__(py))
        )
    }
}

fn op_repr(py: Python<'_>, op: &fencing::Op) -> String {
    let version = op
        .expected_version()
        .map(|v| format!(", expected_version={v}"))
        .unwrap_or_default();
    match op {
        fencing::Op::Put { key, value, .. } => {
            format!(
                "Put({}, <{} bytes>{version})",
                str_repr(py, key),
                value.len()
            )
        }
        fencing::Op::Delete { key, .. } => format!("Delete({}{version})", str_repr(py, key)),
    }
}

/// Store `value` under `key`: one operation of a `Store.apply` batch, or
/// the one of `Store.execute`.
/// With `expected_version`, only when the entry is at that version (0: must
/// not exist yet).
#[pyclass(frozen, eq, module = "fencing", name = "Put")]
#[derive(PartialEq, Eq)]
pub struct Put {
    pub op: fencing::Op,
}

#[pymethods]
impl Put {
    #[new]
    #[pyo3(signature = (key, value, *, expected_version=None))]
    fn new(
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        expected_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Put> {
        let key = convert::text(py, key, "key")?;
        let value = convert::bytes(py, value, "value")?;
        let mut op = fencing::Op::put(String::from(&*key), value.to_vec());
        if let Some(v) = convert::optional_count(py, expected_version, "expected_version")? {
            op = op.if_version(v);
        }
        Ok(Put { op })
    }

    /// The key to write.
    #[getter]
    fn key(&self) -> &str {
        self.op.key()
    }

    /// The bytes to store.
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        match &self.op {
            fencing::Op::Put { value, .. } => PyBytes::new(py, value),
            fencing::Op::Delete { .. } => PyBytes::new(py, b""),
        }
    }

    /// The version the entry must be at, or None.
    #[getter]
    fn expected_version(&self) -> Option<u64> {
        self.op.expected_version()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        op_repr(py, &self.op)
    }
}

/// Delete the entry under `key`: one operation of a `Store.apply` batch, or
/// the one of `Store.execute`. A missing entry fails it with NotFoundError.
#[pyclass(frozen, eq, module = "fencing", name = "Delete")]
#[derive(PartialEq, Eq)]
pub struct Delete {
    pub op: fencing::Op,
}

#[pymethods]
impl Delete {
    #[new]
    #[pyo3(signature = (key, *, expected_version=None))]
    fn new(
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        expected_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Delete> {
        let key = convert::text(py, key, "key")?;
        let mut op = fencing::Op::delete(String::from(&*key));
        if let Some(v) = convert::optional_count(py, expected_version, "expected_version")? {
            op = op.if_version(v);
        }
        Ok(Delete { op })
    }

    /// The key to delete.
    #[getter]
    fn key(&self) -> &str {
        self.op.key()
    }

    /// The version the entry must be at, or None.
    #[getter]
    fn expected_version(&self) -> Option<u64> {
        self.op.expected_version()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        op_repr(py, &self.op)
    }
}

/// What a caller's own etcd transaction must compare and put so that it
/// commits only while its token is current (``Store.etcd_check``;
/// docs/etcd.md, "Fence your own etcd keys"). If that transaction fails on
/// these comparisons, the scope changed meanwhile: check again.
#[pyclass(frozen, eq, module = "fencing", name = "EtcdCheck")]
#[derive(PartialEq, Eq)]
pub struct EtcdCheck {
    inner: fencing::EtcdCheck,
}

impl From<fencing::EtcdCheck> for EtcdCheck {
    fn from(inner: fencing::EtcdCheck) -> EtcdCheck {
        EtcdCheck { inner }
    }
}

#[pymethods]
impl EtcdCheck {
    /// Each key with the mod revision it must still have (0: still absent):
    /// ``(key, mod_revision)`` pairs, one comparison each.
    #[getter]
    fn unchanged<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, i64)> {
        self.inner
            .unchanged
            .iter()
            .map(|(k, rev)| (PyBytes::new(py, k), *rev))
            .collect()
    }

    /// The ``(key, value)`` pairs to put in the same transaction: the
    /// scope's record with the fence raised to the token.
    #[getter]
    fn puts<'py>(&self, py: Python<'py>) -> Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        self.inner
            .puts
            .iter()
            .map(|(k, v)| (PyBytes::new(py, k), PyBytes::new(py, v)))
            .collect()
    }

    /// The same as a request body for etcd's JSON gateway (``POST
    /// /v3/kv/txn``): ``{"compare": [...], "success": [...]}``, keys and
    /// values in base64; add one's own comparisons and requests to the lists.
    #[getter]
    fn gateway_json(&self) -> String {
        self.inner.to_gateway_json().to_string()
    }

    fn __repr__(&self) -> String {
        // Counts only: the record's bytes stay out of logs.
        format!(
            "EtcdCheck(unchanged=<{} keys>, puts=<{} keys>)",
            self.inner.unchanged.len(),
            self.inner.puts.len()
        )
    }
}
