//! The backend's own tokio runtime: one thread per store handle that
//! connects the connections used inside a caller's tokio runtime or by an
//! async store (and the listener's) and then watches their sockets, waking the thread or task
//! whose call waits on one (that thread reads and writes the socket
//! itself: `notices::Socket::run`), and says goodbye for the ones closed.
//! Callers never enter it: they hand it work with `spawn` and wait from
//! their own thread (`deadline::wait`), so a caller inside another tokio
//! runtime never meets
//! "Cannot start a runtime from within a runtime", and the runtime is
//! created and dropped on its own thread, never in a caller's `Drop`.
//! A connection used outside any tokio runtime has a [`Reactor`] of its
//! own instead, which its callers do enter.

use std::future::Future;

use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::{BackendErrorKind::Other, Error, Result};

pub(crate) struct Runtime {
    handle: Handle,
    /// Dropping it ends the runtime thread, and with it every connection.
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Runtime {
    pub fn start() -> Result<Runtime> {
        let (stop, stopped) = oneshot::channel::<()>();
        let (ready, handle) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("fencing-postgres".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready.send(Err(e.to_string()));
                        return;
                    }
                };
                let _ = ready.send(Ok(rt.handle().clone()));
                // Runs the spawned tasks until the handle is dropped.
                let _ = rt.block_on(stopped);
            })
            .map_err(|e| {
                Error::backend_from(Other, format!("postgres: cannot start its thread: {e}"), e)
            })?;
        let handle = handle
            .recv()
            .map_err(|_| Error::backend(Other, "postgres: its runtime thread died"))?
            .map_err(|e| {
                Error::backend(Other, format!("postgres: cannot start its runtime: {e}"))
            })?;
        Ok(Runtime {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// A timer of this runtime, which its thread fires: a task of another
    /// runtime (perhaps one without timers) can await it.
    pub fn sleep_until(&self, deadline: std::time::Instant) -> tokio::time::Sleep {
        let _here = self.handle.enter();
        tokio::time::sleep_until(deadline.into())
    }

    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(future)
    }
}

impl Drop for Runtime {
    /// Stops the runtime and waits for its thread, which closes every
    /// connection and ends at once: nothing it allocated outlives the store
    /// (a process that exits right after sees no thread still running).
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

/// A connection's own reactor, for calls made outside any tokio runtime:
/// the calling thread waits for the reply in it (`block_on`), so the reply
/// wakes that thread and no other (the `postgres` crate's client does the
/// same). A call made where a runtime is current cannot (tokio refuses to
/// start one inside another) and uses a connection that [`Runtime`]
/// watches instead (`pool.rs`, `Driver`).
pub(crate) struct Reactor(Option<tokio::runtime::Runtime>);

/// Whether this thread can wait in a [`Reactor`]: no tokio runtime is
/// current (and this thread's locals are not being destroyed).
pub(crate) fn reactor_here() -> bool {
    matches!(Handle::try_current(), Err(e) if e.is_missing_context())
}

impl Reactor {
    pub fn new() -> Result<Reactor> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                Error::backend_from(Other, format!("postgres: cannot start a reactor: {e}"), e)
            })?;
        Ok(Reactor(Some(rt)))
    }

    /// `future` run on this thread in this reactor, or `None` if `deadline`
    /// passed first (the future is polled at least once, then dropped).
    /// Only where no tokio runtime is current.
    pub fn run_until<F: Future>(
        &self,
        future: F,
        deadline: std::time::Instant,
    ) -> Option<F::Output> {
        debug_assert!(reactor_here(), "a reactor entered inside a runtime");
        let rt = self.0.as_ref()?;
        rt.block_on(async { tokio::time::timeout_at(deadline.into(), future).await.ok() })
    }
}

impl Reactor {
    /// Dropped without waiting for anything (a resolver that hangs).
    pub fn abandon(mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for Reactor {
    /// Waits, briefly, for the thread that resolved a host name (tokio's,
    /// which lives 10 s unless told to end), so that it does not outlive the
    /// store; inside an async context, where waiting would panic, or on a
    /// thread whose locals are being destroyed, it is told and left.
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            match reactor_here() {
                true => rt.shutdown_timeout(RESOLVER_GRACE),
                false => rt.shutdown_background(),
            }
        }
    }
}

/// How long a reactor's drop waits for a host name's resolution to end.
const RESOLVER_GRACE: std::time::Duration = std::time::Duration::from_millis(100);
