//! `fencing.Store`: one handle on a store, every method a call into the core
//! with the GIL released.

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyDict, PyList, PyString, PyType};

use fencing::Op;

use crate::cancel::{flag_of, Flag};
use crate::convert::{self, count, duration, fence, optional_text, text, token};
use crate::errors::{invalid, IntoPyResult};
use crate::keepalive::KeepAlive;
use crate::types::{Delete, Entry, EtcdCheck, Lease, Page, Put, Receipt, ScopeStatus};
use crate::watch::{LeaseWatch, RejectionWatch};

/// A handle on one fencing store, opened from a URL:
///
/// - ``memory:``: in this process only, for threads and tests;
/// - ``sqlite:PATH``: one durable file shared by every process on the host;
/// - ``postgres://...`` (or ``postgresql://``): one schema of a PostgreSQL
///   database, for many hosts.
///
/// Options go in the query, e.g. ``memory:?clock=manual`` or
/// ``sqlite:fence.db?strict=true``; the grammar and every option are in
/// docs/semantics.md, "URLs and options". The handle is thread-safe: threads (and
/// asyncio tasks through ``fencing.aio``) share it, and every call releases
/// the GIL while the store works. Use it as a context manager, or call
/// ``close()``, to close it; later calls raise ClosedError.
#[pyclass(frozen, module = "fencing", name = "Store")]
pub struct Store {
    pub inner: fencing::Store,
}

/// Opens the store a URL names (``memory:``, ``sqlite:PATH``,
/// ``postgres://...``); the same as ``Store(url)``.
#[pyfunction]
pub fn open(py: Python<'_>, url: &Bound<'_, PyAny>) -> PyResult<Store> {
    Store::new(py, url)
}

/// Creates or upgrades the schema of the store a URL names, without opening
/// a store (deploy time; afterwards ``fencing.check`` works on PostgreSQL and
/// ``fencing_check`` on SQLite before any process opened the store).
/// Idempotent; ``memory:`` has no schema and returns at once.
#[pyfunction]
pub fn migrate(py: Python<'_>, url: &Bound<'_, PyAny>) -> PyResult<()> {
    let url = convert::text(py, url, "url")?;
    py.detach(|| fencing::migrate(&url)).py(py)
}

/// Parses a token's canonical decimal text (``"42"`` -> 42). ``"0"`` parses
/// to 0 ("none yet"), which no operation accepts as a token. Anything that
/// is not canonical decimal within 0..=MAX_TOKEN raises InvalidArgumentError.
#[pyfunction]
pub fn parse_token(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<u64> {
    let text = convert::text(py, text, "token text")?;
    fencing::parse_token_value(&text).py(py)
}

/// Runs a wait with the GIL released that a signal handler's exception
/// (KeyboardInterrupt) ends, as it would `time.sleep`: that exception is
/// raised, and the wait takes nothing. Python runs handlers on the main
/// thread only, so on other threads no signal ends it; a fired `cancel`
/// ends it on any thread (TimeoutError).
pub(crate) fn interruptible<T: Send>(
    py: Python<'_>,
    cancel: &Flag,
    wait: impl FnOnce(&dyn Fn() -> bool) -> fencing::Result<T> + Send,
) -> PyResult<T> {
    interruptible_taking(py, cancel, wait, drop)
}

/// [`interruptible`] for a wait that takes something (a lease): a signal
/// handler's exception that came while the attempt that won was on its way
/// (after the wait last asked, or in a log record it wrote) is still the
/// caller's. It is raised, and what the wait took is given back first
/// (`undo`, without the GIL), so that it never outlives a call that did
/// not return it (docs/semantics.md, "Giving up a call").
pub(crate) fn interruptible_taking<T: Send>(
    py: Python<'_>,
    cancel: &Flag,
    wait: impl FnOnce(&dyn Fn() -> bool) -> fencing::Result<T> + Send,
    undo: impl FnOnce(T) + Send,
) -> PyResult<T> {
    let interrupted = std::sync::Mutex::new(None);
    let gave_up = || {
        cancel.fired()
            || crate::logs::has_pending()
            || Python::attach(|py| py.check_signals())
                .map_err(|e| *interrupted.lock().unwrap_or_else(|p| p.into_inner()) = Some(e))
                .is_err()
    };
    let waited = py.detach(|| wait(&gave_up));
    let raised = interrupted.into_inner().unwrap_or_else(|p| p.into_inner());
    let raised = raised
        .or_else(crate::logs::pending)
        .or_else(|| py.check_signals().err());
    match (raised, waited) {
        (Some(e), Ok(taken)) => {
            py.detach(|| undo(taken));
            Err(e)
        }
        (Some(e), Err(_)) => Err(e),
        (None, waited) => waited.py(py),
    }
}

/// Where a lease operation names its lease: a `Lease`, or a scope and token.
fn lease_target(
    py: Python<'_>,
    lease: &Bound<'_, PyAny>,
    token_arg: Option<&Bound<'_, PyAny>>,
) -> PyResult<(PyBackedStr, fencing::Token, Option<fencing::Lease>)> {
    if let Ok(l) = lease.cast::<Lease>() {
        if token_arg.is_some() {
            return Err(invalid(
                py,
                "pass either a Lease, or a scope with token=, not both",
            ));
        }
        let l = &l.get().inner;
        let scope = PyBackedStr::try_from(PyString::new(py, &l.scope))?;
        return Ok((scope, l.token, Some(l.clone())));
    }
    if lease.is_instance_of::<PyString>() {
        let scope = text(py, lease, "scope")?;
        let Some(t) = token_arg else {
            return Err(invalid(py, "a scope needs token="));
        };
        return Ok((scope, token(py, t, "token")?, None));
    }
    Err(invalid(
        py,
        format!(
            "expected a Lease or a scope (str), got {}",
            lease.get_type().qualname()?
        ),
    ))
}

impl Store {
    fn new(py: Python<'_>, url: &Bound<'_, PyAny>) -> PyResult<Store> {
        let url = text(py, url, "url")?;
        let inner = py.detach(|| fencing::Store::open(&url)).py(py)?;
        Ok(Store { inner })
    }
}

#[pymethods]
impl Store {
    #[new]
    #[pyo3(signature = (url))]
    fn py_new(py: Python<'_>, url: &Bound<'_, PyAny>) -> PyResult<Store> {
        Store::new(py, url)
    }

    fn __repr__(&self) -> String {
        let state = if self.inner.is_closed() {
            "closed"
        } else {
            "open"
        };
        format!("<fencing.Store {} {state}>", self.inner.location())
    }

    /// Where the store is: ``memory:``; ``sqlite:`` and the file's absolute
    /// path (a relative path as this process resolved it at open); or the
    /// PostgreSQL URL without its query and its password. For logs.
    #[getter]
    fn location(&self) -> &str {
        self.inner.location()
    }

    /// The kind of store: ``"memory"``, ``"sqlite"``, ``"postgres"`` or
    /// ``"etcd"``.
    #[getter]
    fn backend_kind(&self) -> &'static str {
        self.inner.backend_kind().as_str()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Closes the store.
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

    /// Closes the store for every user of this handle; later calls raise
    /// ClosedError. Closing twice is harmless.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.inner.close());
    }

    /// Whether ``close()`` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    // ----- the counter -----

    /// Increments the scope's counter and returns the new token (first: 1).
    fn next_token(&self, py: Python<'_>, scope: &Bound<'_, PyAny>) -> PyResult<u64> {
        let scope = text(py, scope, "scope")?;
        py.detach(|| self.inner.next_token(&scope))
            .py(py)
            .map(fencing::Token::get)
    }

    /// Raises the scope's counter to at least ``floor`` (never lowers it) and
    /// returns the counter: for moving from another lease service.
    fn advance_counter(
        &self,
        py: Python<'_>,
        scope: &Bound<'_, PyAny>,
        floor: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        let scope = text(py, scope, "scope")?;
        let floor = token(py, floor, "floor")?;
        py.detach(|| self.inner.advance_counter(&scope, floor))
            .py(py)
    }

    // ----- leases -----

    /// Takes the scope's lease for ``ttl`` (seconds, or a timedelta) and
    /// returns it with a new token. Raises LeaseHeldError (with the holder,
    /// its token and the time left) while another lease is live.
    #[pyo3(signature = (scope, *, holder, ttl))]
    fn acquire(
        &self,
        py: Python<'_>,
        scope: &Bound<'_, PyAny>,
        holder: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
    ) -> PyResult<Lease> {
        let scope = text(py, scope, "scope")?;
        let holder = text(py, holder, "holder")?;
        let ttl = convert::ttl(py, ttl)?;
        let inner = py
            .detach(|| self.inner.acquire(&scope, &holder, ttl))
            .py(py)?;
        Ok(Lease { inner })
    }

    /// Like ``acquire``, but waits (without spinning, the GIL released) until
    /// the lease is free or ``timeout`` seconds pass: then TimeoutError. A
    /// signal ends the wait as it would ``time.sleep`` (Ctrl-C raises
    /// KeyboardInterrupt), with no lease taken; so does ``cancel.fire()``
    /// from another thread (TimeoutError), given a ``Cancel``.
    #[pyo3(signature = (scope, *, holder, ttl, timeout, cancel=None))]
    fn acquire_wait(
        &self,
        py: Python<'_>,
        scope: &Bound<'_, PyAny>,
        holder: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
        timeout: &Bound<'_, PyAny>,
        cancel: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lease> {
        let scope = text(py, scope, "scope")?;
        let holder = text(py, holder, "holder")?;
        let ttl = convert::ttl(py, ttl)?;
        let timeout = duration(py, timeout, "timeout")?;
        let cancel = flag_of(py, cancel)?;
        let inner = interruptible_taking(
            py,
            &cancel,
            |gave_up| {
                self.inner
                    .acquire_wait_unless(&scope, &holder, ttl, timeout, gave_up)
            },
            |lease| {
                let _ = self.inner.release(&lease.scope, lease.token);
            },
        )?;
        Ok(Lease { inner })
    }

    /// Extends a lease by ``ttl`` from now (default: the lease's own ttl),
    /// only while it is still the live lease; else LeaseLostError, naming
    /// the lease that is current, if any. Takes a Lease, or a scope with
    /// ``token=`` (then ``ttl`` is required).
    #[pyo3(signature = (lease, *, token=None, ttl=None))]
    fn renew(
        &self,
        py: Python<'_>,
        lease: &Bound<'_, PyAny>,
        token: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lease> {
        let (scope, token, known) = lease_target(py, lease, token)?;
        let ttl = ttl.map(|t| convert::ttl(py, t)).transpose()?;
        let ttl = fencing::defaults::renew_ttl(ttl, known.map(|l| l.ttl)).py(py)?;
        let inner = py.detach(|| self.inner.renew(&scope, token, ttl)).py(py)?;
        Ok(Lease { inner })
    }

    /// Ends a lease early if it is still live; returns whether it did. Never
    /// touches a newer lease, the counter or the fence. Takes a Lease, or a
    /// scope with ``token=``.
    #[pyo3(signature = (lease, *, token=None))]
    fn release(
        &self,
        py: Python<'_>,
        lease: &Bound<'_, PyAny>,
        token: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let (scope, token, _) = lease_target(py, lease, token)?;
        py.detach(|| self.inner.release(&scope, token)).py(py)
    }

    /// A context manager that acquires the lease on entry (waiting up to
    /// ``timeout`` seconds, as ``acquire_wait`` does, when given), renews it
    /// in the background about every ttl/3 while the block runs, and
    /// releases it at exit. A lease lost during the block raises the loss
    /// at exit (docs/semantics.md, "Ending a held lease").
    #[pyo3(signature = (scope, *, holder, ttl, timeout=None, cancel=None))]
    fn lease(
        slf: &Bound<'_, Self>,
        scope: &Bound<'_, PyAny>,
        holder: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
        timeout: Option<&Bound<'_, PyAny>>,
        cancel: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<KeepAlive> {
        let py = slf.py();
        let scope = text(py, scope, "scope")?;
        let holder = text(py, holder, "holder")?;
        let ttl = convert::ttl(py, ttl)?;
        let timeout = match timeout {
            Some(t) if !t.is_none() => Some(duration(py, t, "timeout")?),
            _ => None,
        };
        Ok(KeepAlive::acquiring(
            slf.get().inner.clone(),
            String::from(&*scope),
            String::from(&*holder),
            ttl,
            timeout,
            flag_of(py, cancel)?,
        ))
    }

    /// A context manager that keeps an already acquired lease alive while
    /// the block runs and releases it at exit, like ``lease()``.
    fn keep_alive(&self, py: Python<'_>, lease: &Bound<'_, PyAny>) -> PyResult<KeepAlive> {
        let lease = lease.cast::<Lease>().map_err(|_| {
            invalid(
                py,
                format!(
                    "keep_alive needs a Lease, got {}",
                    lease
                        .get_type()
                        .qualname()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ),
            )
        })?;
        Ok(KeepAlive::keeping(
            self.inner.clone(),
            lease.get().inner.clone(),
        ))
    }

    // ----- the fenced store -----

    /// Stores ``value`` (bytes-like) under ``key`` if ``token`` is not older
    /// than the scope's fence; raises StaleTokenError otherwise. ``seq``
    /// orders writes within one token, ``holder`` is recorded with
    /// rejections, ``expected_version`` makes it conditional (0: must not
    /// exist yet).
    #[pyo3(signature = (scope, key, value, *, token, seq=None, holder=None, expected_version=None))]
    #[allow(clippy::too_many_arguments)]
    fn put(
        &self,
        py: Python<'_>,
        scope: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        token: &Bound<'_, PyAny>,
        seq: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
        expected_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Receipt> {
        let scope = text(py, scope, "scope")?;
        let key = text(py, key, "key")?;
        let value = convert::bytes(py, value, "value")?;
        let fence = fence(py, token, seq, holder)?;
        let expected = convert::optional_count(py, expected_version, "expected_version")?;
        let receipt = match expected {
            None => py.detach(|| self.inner.put(&scope, &key, &value, &fence)),
            Some(v) => py.detach(|| {
                let op = Op::put(String::from(&*key), value.to_vec()).if_version(v);
                self.inner.execute(&scope, &fence, op)
            }),
        };
        receipt.py(py).map(Receipt::from)
    }

    /// Deletes the entry under ``key`` with the same checks as ``put``;
    /// NotFoundError if it does not exist. The receipt's version is 0.
    #[pyo3(signature = (scope, key, *, token, seq=None, holder=None, expected_version=None))]
    #[allow(clippy::too_many_arguments)]
    fn delete(
        &self,
        py: Python<'_>,
        scope: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        token: &Bound<'_, PyAny>,
        seq: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
        expected_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Receipt> {
        let scope = text(py, scope, "scope")?;
        let key = text(py, key, "key")?;
        let fence = fence(py, token, seq, holder)?;
        let expected = convert::optional_count(py, expected_version, "expected_version")?;
        let receipt = match expected {
            None => py.detach(|| self.inner.delete(&scope, &key, &fence)),
            Some(v) => py.detach(|| {
                let op = Op::delete(String::from(&*key)).if_version(v);
                self.inner.execute(&scope, &fence, op)
            }),
        };
        receipt.py(py).map(Receipt::from)
    }

    /// Applies several ``Put``/``Delete`` operations under one fence check,
    /// in order, all or nothing (1 to MAX_BATCH_OPS of them). Returns one
    /// receipt per operation.
    #[pyo3(signature = (scope, ops, *, token, seq=None, holder=None))]
    fn apply(
        &self,
        py: Python<'_>,
        scope: &Bound<'_, PyAny>,
        ops: &Bound<'_, PyAny>,
        token: &Bound<'_, PyAny>,
        seq: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Receipt>> {
        let scope = text(py, scope, "scope")?;
        let batch = ops_of(py, ops)?;
        let fence = fence(py, token, seq, holder)?;
        let receipts = py
            .detach(|| self.inner.apply(&scope, &fence, batch))
            .py(py)?;
        Ok(receipts.into_iter().map(Receipt::from).collect())
    }

    /// Runs one ``Put`` or ``Delete`` (an operation as ``apply`` takes
    /// them) with the checks of ``put`` and ``delete``: the fence, ``seq``,
    /// and the op's ``expected_version``. Returns its receipt.
    #[pyo3(signature = (scope, op, *, token, seq=None, holder=None))]
    fn execute(
        &self,
        py: Python<'_>,
        scope: &Bound<'_, PyAny>,
        op: &Bound<'_, PyAny>,
        token: &Bound<'_, PyAny>,
        seq: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Receipt> {
        let scope = text(py, scope, "scope")?;
        let Some(op) = op_of(op) else {
            return Err(invalid(
                py,
                format!(
                    "op must be a fencing.Put or a fencing.Delete, got {}",
                    op.get_type().qualname()?
                ),
            ));
        };
        let fence = fence(py, token, seq, holder)?;
        py.detach(|| self.inner.execute(&scope, &fence, op))
            .py(py)
            .map(Receipt::from)
    }

    /// Raises the scope's fence to ``token`` without writing, so that older
    /// holders are shut out before the new one reads.
    #[pyo3(signature = (scope, *, token, seq=None, holder=None))]
    fn claim(
        &self,
        py: Python<'_>,
        scope: &Bound<'_, PyAny>,
        token: &Bound<'_, PyAny>,
        seq: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let scope = text(py, scope, "scope")?;
        let fence = fence(py, token, seq, holder)?;
        py.detach(|| self.inner.claim(&scope, &fence)).py(py)
    }

    /// Fences one's own etcd keys (docs/etcd.md, "Fence your own etcd
    /// keys"): checks ``token`` against the scope's fence now
    /// (StaleTokenError, SequenceOutOfOrderError as a write would) and
    /// returns what one's own etcd transaction must compare and put so that
    /// it commits only while the token is current, raising the fence with
    /// it. InvalidArgumentError on a store that is not ``etcd://``.
    #[pyo3(signature = (scope, *, token, seq=None, holder=None))]
    fn etcd_check(
        &self,
        py: Python<'_>,
        scope: &Bound<'_, PyAny>,
        token: &Bound<'_, PyAny>,
        seq: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<EtcdCheck> {
        let scope = text(py, scope, "scope")?;
        let fence = fence(py, token, seq, holder)?;
        py.detach(|| self.inner.etcd_check(&scope, &fence))
            .py(py)
            .map(EtcdCheck::from)
    }

    /// Reads an entry: an Entry, or None when there is none. Needs no token;
    /// with ``token=`` the read is checked like a write (StaleTokenError for
    /// a stale reader) but raises nothing.
    #[pyo3(signature = (scope, key, *, token=None, holder=None))]
    fn get(
        &self,
        py: Python<'_>,
        scope: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        token: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Entry>> {
        let scope = text(py, scope, "scope")?;
        let key = text(py, key, "key")?;
        let fence = match token {
            Some(t) => Some(fence(py, t, None, holder)?),
            None if holder.is_some() => {
                return Err(invalid(py, "holder= is only recorded with token="))
            }
            None => None,
        };
        let entry = py
            .detach(|| self.inner.get(&scope, &key, fence.as_ref()))
            .py(py)?;
        Ok(entry.map(|e| Entry::new(py, e)))
    }

    /// Up to ``limit`` keys (default ``DEFAULT_LIST_LIMIT``) of the scope
    /// after ``after``, in byte order; pass the page's ``next`` as ``after``
    /// for the following page.
    #[pyo3(signature = (scope, *, after=None, limit=None))]
    fn list(
        &self,
        py: Python<'_>,
        scope: &Bound<'_, PyAny>,
        after: Option<&Bound<'_, PyAny>>,
        limit: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Page> {
        let scope = text(py, scope, "scope")?;
        let after = optional_text(py, after, "after")?;
        let limit = match limit {
            Some(l) => usize::try_from(count(py, l, "limit")?).unwrap_or(usize::MAX),
            None => fencing::defaults::LIST_LIMIT,
        };
        let page = py
            .detach(|| self.inner.list(&scope, after.as_deref(), limit))
            .py(py)?;
        Ok(page.into())
    }

    /// The greatest token the scope has accepted (0: none).
    fn fence_of(&self, py: Python<'_>, scope: &Bound<'_, PyAny>) -> PyResult<u64> {
        let scope = text(py, scope, "scope")?;
        py.detach(|| self.inner.fence_of(&scope)).py(py)
    }

    /// The scope's counter, fence, live lease and number of entries.
    fn status(&self, py: Python<'_>, scope: &Bound<'_, PyAny>) -> PyResult<ScopeStatus> {
        let scope = text(py, scope, "scope")?;
        let status = py.detach(|| self.inner.status(&scope)).py(py)?;
        Ok(status.into())
    }

    /// Drops a scope that has no live lease and no entries; a scope created
    /// afterwards starts above every token this one issued or accepted.
    /// Returns whether there was state to drop.
    fn retire(&self, py: Python<'_>, scope: &Bound<'_, PyAny>) -> PyResult<bool> {
        let scope = text(py, scope, "scope")?;
        py.detach(|| self.inner.retire(&scope)).py(py)
    }

    /// The failover step: run once on a new primary promoted from an
    /// asynchronous standby (or a restored backup) before anything else uses
    /// it. Every counter, fence and floor moves to ``FAILOVER_STEP`` tokens
    /// above the store's ceiling (above every value the store held) and
    /// every lease ends, so no earlier token is accepted or issued again.
    /// Returns that base: every token at or below it is stale (not a number
    /// of scopes).
    fn failover(&self, py: Python<'_>) -> PyResult<u64> {
        py.detach(|| self.inner.failover()).py(py)
    }

    /// Moves a manual clock (``?clock=manual``) forward by ``by`` seconds
    /// (or a timedelta): for tests.
    fn advance_clock(&self, py: Python<'_>, by: &Bound<'_, PyAny>) -> PyResult<()> {
        let by = duration(py, by, "by")?;
        py.detach(|| self.inner.advance_clock(by)).py(py)
    }

    // ----- observability -----

    /// One cheap round trip that changes nothing, for health checks: returns
    /// while the store answers and its schema is this build's. ``ClosedError``
    /// once closed; ``BackendError`` when unreachable, or (kind ``refused``)
    /// when its schema is older (run ``fencing migrate``) or newer.
    fn ping(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.ping()).py(py)
    }

    /// This handle's counters (ints, by name), plus ``rejections``: the last
    /// 64 fence rejections as dicts (code, scope, key, presented, current,
    /// seq, holder, at), and ``call_durations``: per operation, ``buckets``
    /// (cumulative ``(upper bound in seconds, calls)``), ``count`` and ``sum``
    /// (seconds). Never any values.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let snap = py.detach(|| self.inner.metrics());
        let out = PyDict::new(py);
        for (name, _, value) in snap.counters() {
            out.set_item(name, value)?;
        }
        let rejections = PyList::empty(py);
        for r in &snap.rejections {
            let d = PyDict::new(py);
            d.set_item("code", r.code.as_str())?;
            d.set_item("scope", &r.scope)?;
            d.set_item("key", r.key.as_deref())?;
            d.set_item("presented", r.presented.get())?;
            d.set_item("current", r.current)?;
            d.set_item("seq", r.seq)?;
            d.set_item("holder", r.holder.as_deref())?;
            d.set_item("at", convert::datetime(py, r.at)?)?;
            rejections.append(d)?;
        }
        out.set_item("rejections", rejections)?;
        // Per operation: cumulative (upper bound in seconds, calls) buckets
        // without +Inf, the call count, and the durations' sum in seconds:
        // what prometheus_client's HistogramMetricFamily takes. Every
        // operation, called or not, as the Prometheus text has them (the
        // core's snapshot leaves out the ones never called).
        let calls = PyDict::new(py);
        for op in fencing::CALL_OPS {
            let c = snap.calls.iter().find(|c| c.op == op).cloned();
            let c = c.unwrap_or(fencing::CallDurations {
                op,
                ..Default::default()
            });
            let d = PyDict::new(py);
            let buckets: Vec<(f64, u64)> = fencing::CALL_BUCKETS_NS
                .iter()
                .zip(c.buckets)
                .map(|(&ns, n)| (ns as f64 / 1e9, n))
                .collect();
            d.set_item("buckets", buckets)?;
            d.set_item("count", c.count)?;
            d.set_item("sum", c.sum_ns as f64 / 1e9)?;
            calls.set_item(c.op, d)?;
        }
        out.set_item("call_durations", calls)?;
        Ok(out)
    }

    /// The metrics in the Prometheus text format, labelled ``store``.
    fn metrics_text(&self, py: Python<'_>) -> String {
        py.detach(|| self.inner.metrics_text())
    }

    /// Each rejection the store records from now on (of ``scope``, or of
    /// every scope), oldest first, as ``events()`` gives them: ``for r in
    /// store.watch_rejections(): ...`` blocks until the next (Ctrl-C ends
    /// it). No backend pushes them: the watch reads the record about every
    /// 0.25 s while nothing is pending.
    #[pyo3(signature = (scope=None))]
    fn watch_rejections(
        &self,
        py: Python<'_>,
        scope: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<RejectionWatch> {
        let scope = optional_text(py, scope, "scope")?;
        let watch = py
            .detach(|| self.inner.watch_rejections(scope.as_deref()))
            .py(py)?;
        Ok(RejectionWatch::new(watch))
    }

    /// Who holds ``scope``'s lease, live (docs/semantics.md, "Watching a
    /// lease"): a ``LeaseWatch`` that yields the lease as it is now, then
    /// after each change (acquired, renewed, released, expired), as
    /// ``Holding`` values; ``for h in store.watch(scope): ...`` blocks until
    /// the next change (Ctrl-C ends it). Changes closer together than the
    /// watch reads are seen as the last of them.
    fn watch(&self, py: Python<'_>, scope: &Bound<'_, PyAny>) -> PyResult<LeaseWatch> {
        let scope = text(py, scope, "scope")?;
        let watch = py.detach(|| self.inner.watch(&scope)).py(py)?;
        Ok(LeaseWatch::new(watch))
    }

    /// The store's own record, shared by every process that uses the store
    /// (docs/operations.md): ``rejections``, the newest recorded stale-token
    /// rejections as dicts (id, code, scope, key, presented, current, seq,
    /// holder, at, suppressed), and ``last_writes``, who last wrote each
    /// scope (scope, holder, token, at); newest first, up to ``limit``
    /// (1..=256) each, of ``scope`` or of every scope. Never any values.
    #[pyo3(signature = (scope=None, *, limit=None), text_signature = "(self, scope=None, *, limit=20)")]
    fn events<'py>(
        &self,
        py: Python<'py>,
        scope: Option<&Bound<'py, PyAny>>,
        limit: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let scope = optional_text(py, scope, "scope")?;
        let limit = match limit {
            Some(l) => usize::try_from(count(py, l, "limit")?).unwrap_or(usize::MAX),
            None => fencing::defaults::EVENTS_LIMIT,
        };
        let ev = py
            .detach(|| self.inner.events(scope.as_deref(), limit))
            .py(py)?;
        let rejections = PyList::empty(py);
        for r in &ev.rejections {
            rejections.append(rejection_dict(py, r)?)?;
        }
        let last_writes = PyList::empty(py);
        for w in &ev.last_writes {
            let d = PyDict::new(py);
            d.set_item("scope", &w.scope)?;
            d.set_item("holder", w.holder.as_deref())?;
            d.set_item("token", w.token.get())?;
            d.set_item("at", convert::datetime(py, w.at)?)?;
            last_writes.append(d)?;
        }
        let out = PyDict::new(py);
        out.set_item("rejections", rejections)?;
        out.set_item("last_writes", last_writes)?;
        Ok(out)
    }
}

/// One recorded rejection as ``events()`` and a ``RejectionWatch`` give it.
pub(crate) fn rejection_dict<'py>(
    py: Python<'py>,
    r: &fencing::RecordedRejection,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", r.id)?;
    d.set_item("code", r.code.as_str())?;
    d.set_item("scope", &r.scope)?;
    d.set_item("key", r.key.as_deref())?;
    d.set_item("presented", r.presented.get())?;
    d.set_item("current", r.current)?;
    d.set_item("seq", r.seq)?;
    d.set_item("holder", r.holder.as_deref())?;
    d.set_item("at", convert::datetime(py, r.at)?)?;
    d.set_item("suppressed", r.suppressed)?;
    Ok(d)
}

/// The operations of an ``apply`` call: an iterable of ``Put`` and
/// ``Delete``. At most one past the core's limit is taken from it, so that
/// an endless iterable is refused by the core's own check ("over the
/// limit") instead of being collected until the memory runs out.
pub(crate) fn ops_of(py: Python<'_>, ops: &Bound<'_, PyAny>) -> PyResult<Vec<Op>> {
    let not_ops = || {
        invalid(
            py,
            "ops must be an iterable of fencing.Put and fencing.Delete",
        )
    };
    if ops.is_instance_of::<PyString>() {
        return Err(not_ops());
    }
    let mut batch = Vec::new();
    let most = fencing::limits::MAX_BATCH_OPS + 1;
    for item in ops.try_iter().map_err(|_| not_ops())?.take(most) {
        let item = item?;
        let Some(op) = op_of(&item) else {
            return Err(invalid(
                py,
                format!(
                    "ops must hold fencing.Put and fencing.Delete, got {}",
                    item.get_type().qualname()?
                ),
            ));
        };
        batch.push(op);
    }
    Ok(batch)
}

/// One operation, a ``Put`` or a ``Delete``; None for anything else.
pub(crate) fn op_of(item: &Bound<'_, PyAny>) -> Option<Op> {
    if let Ok(p) = item.cast::<Put>() {
        Some(p.get().op.clone())
    } else {
        item.cast::<Delete>().ok().map(|d| d.get().op.clone())
    }
}
