//! `fencing.KeepAlive`: the context manager over the core's `LeaseGuard`.
//! The guard renews on its own thread (no GIL needed); this object only
//! starts it, reports on it, and stops and releases it at exit.

use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;

use fencing::{Error, ErrorCode, LeaseEnd, LeaseGuard, LeaseWriter, Op, WorkOutcome};

use crate::cancel::Flag;
use crate::convert::{self, text};
use crate::errors::{build, set_lease_lost, to_py, IntoPyResult};
use crate::loss_signal;
use crate::store::{interruptible_taking, ops_of};
use crate::types::{Entry, Lease, Receipt};

enum Plan {
    Acquire {
        scope: String,
        holder: String,
        ttl: Duration,
        timeout: Option<Duration>,
        cancel: Flag,
    },
    Keep(fencing::Lease),
}

enum State {
    /// Not entered yet.
    Ready(Plan),
    /// A call on this thread is entering or leaving (the GIL is released
    /// meanwhile); `settled` is told when it is done.
    Busy(ThreadId),
    Running(LeaseGuard),
    /// Left (or released early): the last lease and the core's verdict.
    Done {
        lease: fencing::Lease,
        end: LeaseEnd,
        lateness: Duration,
    },
}

/// Holds a lease while a ``with`` block runs: renews it in the background
/// about every ttl/3 and releases it at exit. Made by ``Store.lease()``
/// (acquires on entry) or ``Store.keep_alive(lease)``.
///
/// Write through it (``put``, ``delete``, ``apply``, ``claim``, ``get``):
/// the lease's own scope and token go with every call. The fence, not this
/// object, is what makes a late write harmless. If a renewal fails (the lease expired
/// during a pause, another holder took over, the store closed), ``lost``
/// turns true, ``check()`` raises, and leaving the block raises
/// LeaseLostError; a loss is never silent.
#[pyclass(frozen, module = "fencing", name = "KeepAlive")]
pub struct KeepAlive {
    store: fencing::Store,
    state: Mutex<State>,
    /// Told when the state leaves `Busy`: a call that finds another's
    /// entry or release in flight waits for its outcome.
    settled: Condvar,
    /// Readable once the lease is lost (a byte from the guard's loss
    /// callback) or the guard has ended (end of file): what `fencing.aio`
    /// waits on with the event loop, never holding a thread or the GIL.
    loss_signal: Option<loss_signal::End>,
    /// The other end, until a guard's callback takes it.
    loss_writer: Mutex<Option<loss_signal::End>>,
}

fn not_active(what: &str) -> PyErr {
    misuse(format!("the lease is not held yet: {what}"))
}

/// A lease used outside its life (before it is held, after it ended, or
/// entered twice): the library's ``InvalidArgumentError``, as in every face.
fn misuse(message: impl Into<String>) -> PyErr {
    Python::attach(|py| to_py(py, &Error::InvalidArgument(message.into())))
}

/// LeaseLostError for a keep-alive that ended with `cause`.
fn lost_error(py: Python<'_>, lease: &fencing::Lease, cause: &Error) -> PyErr {
    if matches!(cause, Error::LeaseLost { .. }) {
        return to_py(py, cause);
    }
    let message = format!(
        "keep-alive of the lease on {:?} (token {}) ended: {cause}",
        lease.scope, lease.token
    );
    let err = build(py, ErrorCode::LeaseLost, &message, |e| {
        set_lease_lost(e, &lease.scope, None)
    });
    err.set_cause(py, Some(to_py(py, cause)));
    err
}

impl KeepAlive {
    pub fn acquiring(
        store: fencing::Store,
        scope: String,
        holder: String,
        ttl: Duration,
        timeout: Option<Duration>,
        cancel: Flag,
    ) -> Self {
        let (loss_signal, writer) = loss_signal::pair().unzip();
        KeepAlive {
            store,
            loss_signal,
            loss_writer: Mutex::new(writer),
            settled: Condvar::new(),
            state: Mutex::new(State::Ready(Plan::Acquire {
                scope,
                holder,
                ttl,
                timeout,
                cancel,
            })),
        }
    }

    pub fn keeping(store: fencing::Store, lease: fencing::Lease) -> Self {
        let (loss_signal, writer) = loss_signal::pair().unzip();
        KeepAlive {
            store,
            loss_signal,
            loss_writer: Mutex::new(writer),
            settled: Condvar::new(),
            state: Mutex::new(State::Ready(Plan::Keep(lease))),
        }
    }

    /// The guard's loss callback: one byte on the loss signal. It writes on
    /// its own copy of the writer; the signal closes (the reader sees the
    /// end) once both the guard's copy and ours are gone, and `stop` drops
    /// ours only after the verdict is stored, so a waiter woken by the end
    /// always finds it.
    fn on_lost(&self) -> Option<fencing::OnLost> {
        let writer = self
            .loss_writer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()?
            .try_clone()
            .ok()?;
        Some(Box::new(move |_: &Error| {
            let _ = (&writer).write(&[1]);
        }))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends a `Busy` state with its outcome, and wakes the calls waiting
    /// for it.
    fn settle(&self, outcome: State) {
        *self.state() = outcome;
        self.settled.notify_all();
    }

    /// The state once no other thread's entry or release is in flight,
    /// waited for without the GIL: the state lock is never held while
    /// waiting for the GIL (the call in flight takes the GIL, then this
    /// lock, to settle), so the wait always ends with the call it waits
    /// for. A `Busy` of this very thread (a signal handler run by its own
    /// wait for the lease) is returned as it is: waiting for it would
    /// never end. Ctrl-C ends the wait, as it ends this face's other waits
    /// (an entry in flight may wait for the lease for its whole timeout).
    fn settled_state(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, State>> {
        let me = std::thread::current().id();
        let other_busy = |state: &State| matches!(state, State::Busy(owner) if *owner != me);
        loop {
            let state = self.state();
            if !other_busy(&state) {
                return Ok(state);
            }
            drop(state);
            // A guard is not Send: the wait ends inside, and the state is
            // locked again (and looked at again) above.
            py.detach(|| {
                let state = self.state();
                if other_busy(&state) {
                    let _ = self
                        .settled
                        .wait_timeout(state, fencing::defaults::GIVE_UP_CHECK);
                }
            });
            py.check_signals()?;
        }
    }

    /// The lease as last renewed, and the loss if any.
    fn snapshot(&self) -> PyResult<(fencing::Lease, Option<Error>, Duration)> {
        match &*self.state() {
            State::Running(guard) => Ok((guard.lease(), guard.lost(), guard.last_lateness())),
            State::Done {
                lease,
                end,
                lateness,
            } => Ok((lease.clone(), end.lost().cloned(), *lateness)),
            State::Ready(Plan::Keep(lease)) => Ok((lease.clone(), None, Duration::ZERO)),
            State::Ready(Plan::Acquire { .. }) => Err(not_active("enter the with block first")),
            State::Busy(_) => Err(not_active("it is being acquired or released")),
        }
    }

    /// Runs one write (or checked read) through the running guard: the
    /// lease's own scope and token (docs/semantics.md, "Writing through a
    /// held lease"). A loss the keep-alive knows raises as ``check()`` does
    /// and writes nothing. The call runs without the GIL and without the
    /// state locked, so other threads read the lease meanwhile.
    fn through<T: Send>(
        &self,
        py: Python<'_>,
        call: impl FnOnce(&LeaseWriter) -> fencing::Result<T> + Send,
    ) -> PyResult<T> {
        let found = match &*self.state() {
            State::Running(guard) => match guard.writer() {
                Ok(writer) => Through::Writer(writer),
                Err(cause) => Through::Lost(guard.lease(), cause),
            },
            State::Done { lease, end, .. } => match end.lost() {
                Some(cause) => Through::Lost(lease.clone(), cause.clone()),
                None => Through::Ended,
            },
            State::Ready(_) | State::Busy(_) => Through::NotHeld,
        };
        match found {
            Through::Writer(writer) => py.detach(|| call(&writer)).py(py),
            Through::Lost(lease, cause) => Err(lost_error(py, &lease, &cause)),
            Through::Ended => Err(misuse(
                "the lease was released: nothing more is written through it",
            )),
            Through::NotHeld => Err(not_active("enter the with block first")),
        }
    }

    /// Ends the held lease through the core (docs/semantics.md, "Ending a
    /// held lease"); `None` if it was not running. An entry or a release in
    /// flight on another thread is waited for first: its outcome is what
    /// this call finds.
    fn stop(&self, py: Python<'_>, work: WorkOutcome) -> PyResult<Option<LeaseEnd>> {
        let guard = {
            let mut state = self.settled_state(py)?;
            let busy = State::Busy(std::thread::current().id());
            match std::mem::replace(&mut *state, busy) {
                State::Running(guard) => guard,
                other => {
                    *state = other;
                    return Ok(None);
                }
            }
        };
        let (lease, lateness) = (guard.lease(), guard.last_lateness());
        let end = py.detach(|| guard.finish(work));
        self.settle(State::Done {
            lease,
            end: end.clone(),
            lateness,
        });
        // The verdict is in place: now the loss signal may close.
        drop(
            self.loss_writer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take(),
        );
        Ok(Some(end))
    }
}

/// What a write through the lease found.
enum Through {
    Writer(LeaseWriter),
    Lost(fencing::Lease, Error),
    Ended,
    NotHeld,
}

#[pymethods]
impl KeepAlive {
    /// Acquires the lease (for ``Store.lease()``) and starts renewing it.
    fn __enter__(slf: &Bound<'_, Self>) -> PyResult<Py<Self>> {
        let py = slf.py();
        let this = slf.get();
        let plan = {
            let mut state = this.state();
            let busy = State::Busy(std::thread::current().id());
            match std::mem::replace(&mut *state, busy) {
                State::Ready(plan) => plan,
                other => {
                    *state = other;
                    return Err(misuse("a KeepAlive can be entered only once"));
                }
            }
        };
        let store = &this.store;
        let on_lost = this.on_lost();
        let started = match &plan {
            Plan::Acquire {
                scope,
                holder,
                ttl,
                timeout,
                cancel,
            } => match timeout {
                // A wait that Ctrl-C or `cancel` can end, as acquire_wait's
                // (a Ctrl-C that lands as the lease arrives releases it).
                Some(timeout) => interruptible_taking(
                    py,
                    cancel,
                    |gave_up| {
                        store.lease_wait_unless(scope, holder, *ttl, *timeout, on_lost, gave_up)
                    },
                    |guard| {
                        guard.finish(WorkOutcome::Ok);
                    },
                ),
                None => py
                    .detach(|| store.lease_wait(scope, holder, *ttl, None, on_lost))
                    .py(py),
            },
            Plan::Keep(lease) => Ok(py.detach(|| match on_lost {
                Some(call) => store.keep_alive_with(lease.clone(), call),
                None => store.keep_alive(lease.clone()),
            })),
        };
        match started {
            Ok(guard) => {
                this.settle(State::Running(guard));
                Ok(slf.clone().unbind())
            }
            Err(e) => {
                this.settle(State::Ready(plan));
                Err(e)
            }
        }
    }

    /// Stops renewing and releases the lease, and ends the block by the
    /// core's rule (docs/semantics.md, "Ending a held lease"): a lost lease
    /// raises the loss (LeaseLostError naming the current holder, or
    /// ClosedError, ...), with the block's own exception as its
    /// ``__cause__``; a released one lets the block's outcome stand.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyType>>,
        exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let work = WorkOutcome::from_failed(exc_type.is_some());
        let end = match self.stop(py, work)? {
            Some(end) => end,
            // Released early: the verdict then, judged with this outcome.
            None => match &*self.settled_state(py)? {
                State::Done { end, .. } => end.clone().with_work(work),
                _ => return Ok(false),
            },
        };
        let Err(loss) = end.verdict() else {
            return Ok(false);
        };
        let err = to_py(py, &loss);
        if end.attach_work_error() {
            if let Some(exc) = exc {
                err.set_cause(py, Some(PyErr::from_value(exc.clone())));
            }
        }
        Err(err)
    }

    /// Stops renewing and releases the lease now (the same end as leaving
    /// the block); returns True if it was held to the end, False if it was
    /// lost (``lost`` turns true), and raises ClosedError (or the store's
    /// failure) when it could not be released. Leaving the block afterwards
    /// releases nothing more, and raises the loss if there was one.
    fn release(&self, py: Python<'_>) -> PyResult<bool> {
        let Some(end) = self.stop(py, WorkOutcome::Ok)? else {
            return Ok(false);
        };
        end.released().map_err(|e| to_py(py, &e))
    }

    /// Raises LeaseLostError if the lease was lost; call it before each
    /// protected step.
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        match self.snapshot()? {
            (lease, Some(cause), _) => Err(lost_error(py, &lease, &cause)),
            _ => Ok(()),
        }
    }

    /// Whether renewing failed for good (see ``lost_error``).
    #[getter]
    fn lost(&self) -> PyResult<bool> {
        Ok(self.snapshot()?.1.is_some())
    }

    /// The LeaseLostError that ``check()`` would raise, or None.
    #[getter]
    fn lost_error<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(match self.snapshot()? {
            (lease, Some(cause), _) => {
                Some(lost_error(py, &lease, &cause).value(py).clone().into_any())
            }
            _ => None,
        })
    }

    /// Whether the lease is being kept alive now (inside the block).
    #[getter]
    fn active(&self) -> bool {
        matches!(&*self.state(), State::Running(_))
    }

    /// The lease as last renewed.
    #[getter]
    fn lease(&self) -> PyResult<Lease> {
        Ok(Lease {
            inner: self.snapshot()?.0,
        })
    }

    /// The fencing token to present with every write.
    #[getter]
    fn token(&self) -> PyResult<u64> {
        Ok(self.snapshot()?.0.token.get())
    }

    /// The protected scope.
    #[getter]
    fn scope(&self) -> PyResult<String> {
        Ok(self.snapshot()?.0.scope)
    }

    /// Who holds the lease.
    #[getter]
    fn holder(&self) -> PyResult<String> {
        Ok(self.snapshot()?.0.holder)
    }

    /// When the lease expires unless renewed again (aware datetime, UTC).
    #[getter]
    fn expires_at<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::convert::datetime(py, self.snapshot()?.0.expires_at)
    }

    /// How late the most recent renewal ran against its schedule, in
    /// seconds: a pause (GC, SIGSTOP, VM suspend) shows up here.
    #[getter]
    fn last_lateness(&self) -> PyResult<f64> {
        Ok(self.snapshot()?.2.as_secs_f64())
    }

    /// A file descriptor that turns readable once the lease is lost or the
    /// keep-alive has ended (for ``fencing.aio``'s ``wait_lost``); owned by
    /// this object, never to be read or closed by the caller.
    fn _loss_fd(&self) -> PyResult<i64> {
        self.loss_signal
            .as_ref()
            .map(loss_signal::descriptor)
            .ok_or_else(|| {
                PyRuntimeError::new_err("no loss signal: the process has no socket left")
            })
    }

    /// Stores ``value`` (bytes-like) under ``key`` in the
    /// lease's scope with the lease's token: ``Store.put`` through the lease,
    /// so the scope and the token cannot disagree. Raises the loss
    /// (LeaseLostError) without writing when the lease is known lost, and
    /// StaleTokenError when a newer holder's token was accepted.
    #[pyo3(signature = (key, value, *, expected_version=None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        expected_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Receipt> {
        let key = text(py, key, "key")?;
        let value = convert::bytes(py, value, "value")?;
        let expected = convert::optional_count(py, expected_version, "expected_version")?;
        let op = Op::put(String::from(&*key), value.to_vec());
        let op = match expected {
            Some(v) => op.if_version(v),
            None => op,
        };
        self.through(py, |g| g.execute(op)).map(Receipt::from)
    }

    /// Deletes ``key`` in the lease's scope with the lease's token
    /// (``Store.delete`` through the lease).
    #[pyo3(signature = (key, *, expected_version=None))]
    fn delete(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        expected_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Receipt> {
        let key = text(py, key, "key")?;
        let expected = convert::optional_count(py, expected_version, "expected_version")?;
        let op = Op::delete(String::from(&*key));
        let op = match expected {
            Some(v) => op.if_version(v),
            None => op,
        };
        self.through(py, |g| g.execute(op)).map(Receipt::from)
    }

    /// ``Store.apply`` through the lease: several ``Put``/``Delete`` in the
    /// lease's scope under one check, all or nothing.
    fn apply(&self, py: Python<'_>, ops: &Bound<'_, PyAny>) -> PyResult<Vec<Receipt>> {
        let batch = ops_of(py, ops)?;
        let receipts = self.through(py, |g| g.apply(batch))?;
        Ok(receipts.into_iter().map(Receipt::from).collect())
    }

    /// ``Store.claim`` through the lease: raises the scope's fence to the
    /// lease's token, shutting older holders out before this one reads.
    fn claim(&self, py: Python<'_>) -> PyResult<()> {
        self.through(py, |g| g.claim())
    }

    /// ``Store.get`` in the lease's scope, checked with the lease's token:
    /// StaleTokenError once a newer holder's token was accepted.
    fn get(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<Entry>> {
        let key = text(py, key, "key")?;
        let entry = self.through(py, |g| g.get(&key))?;
        Ok(entry.map(|e| Entry::new(py, e)))
    }

    fn __repr__(&self) -> String {
        match &*self.state() {
            State::Ready(Plan::Acquire { scope, holder, .. }) => {
                format!("<fencing.KeepAlive scope={scope:?} holder={holder:?} not entered>")
            }
            State::Ready(Plan::Keep(l)) => format!(
                "<fencing.KeepAlive scope={:?} token={} not entered>",
                l.scope, l.token
            ),
            State::Busy(_) => "<fencing.KeepAlive busy>".to_owned(),
            State::Running(g) => {
                let l = g.lease();
                let lost = if g.is_lost() { "lost" } else { "held" };
                format!(
                    "<fencing.KeepAlive scope={:?} token={} {lost}>",
                    l.scope, l.token
                )
            }
            State::Done { lease, end, .. } => {
                let lost = if end.is_released() {
                    "released"
                } else {
                    "lost"
                };
                format!(
                    "<fencing.KeepAlive scope={:?} token={} {lost}>",
                    lease.scope, lease.token
                )
            }
        }
    }
}
