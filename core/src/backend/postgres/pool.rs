//! A small connection pool: at most `size` connections, each with its
//! session settings pinned (`session.rs`) unless a transaction pooler sits
//! in between, over TLS as the URL says (`tls.rs`).
//! Every call has a deadline (`call_timeout_ms`, docs/postgres.md) that
//! covers waiting for a free connection, connecting and the statement.
//! A connection that failed below SQL (I/O, the server went away) is dropped
//! together with every idle one, since a server restart kills them all; one
//! that ran out of time is dropped alone, since its protocol state is
//! unknown. The next operation connects afresh.
//! A call made outside any tokio runtime connects connections with a
//! reactor of their own, in which it waits for its reply; one made inside a
//! runtime (or by an async store) uses connections the backend's runtime
//! thread watches; the first kind of call can use both (`Driver`).

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio_postgres::types::Type;
use tokio_postgres::{Client, Config, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::deadline::wait;
use super::notices::Socket;
use super::runtime::{reactor_here, Reactor, Runtime};
use super::{session, tls, to_error};
use crate::error::{BackendErrorKind as Kind, Error, Result};

/// What a call uses of a connection: its client half.
pub(crate) struct Conn {
    pub client: Client,
    /// Named statements, prepared once per connection (not behind a
    /// transaction pooler, which would not keep them).
    statements: Vec<Option<Statement>>,
}

/// A connection out of the pool for a call on a task: dropped with the
/// task's future before the call ended, it is dropped from the pool too.
/// A task can outlive a `fork` (a thread cannot): in the child the
/// connection is the parent's session and the pool's counts are the
/// child's own, so there it is forgotten, never used, counted or closed.
struct Lent<'a> {
    pool: &'a Pool,
    conn: Option<Pooled>,
    /// The process the connection belongs to.
    pid: u32,
}

impl Lent<'_> {
    /// The connection, back from its call in the process it belongs to.
    fn back(&mut self) -> Option<Pooled> {
        let conn = self.conn.take()?;
        if self.pid == std::process::id() {
            return Some(conn);
        }
        std::mem::forget(conn);
        None
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.back() {
            self.pool.discard_one(conn);
        }
    }
}

/// What tells a call's thread that its reply can be read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Driver {
    /// The connection's own reactor, in which the calling thread waits: a
    /// call made where no tokio runtime is current. Such a thread can use
    /// the other kind too.
    Caller,
    /// The pool's runtime thread, which watches the socket and wakes the
    /// caller: a call made inside a tokio runtime (a task, or its blocking
    /// pool), where another runtime cannot be entered, or by an async
    /// store, whose calls on tasks need this kind.
    Runtime,
}

impl Driver {
    /// The kind of connection a call made on this thread wants.
    fn here() -> Driver {
        match reactor_here() && !crate::aio::runs_in_place() {
            true => Driver::Caller,
            false => Driver::Runtime,
        }
    }
}

/// A connection of the pool: the client half, and the socket that the
/// thread making a call drives while the call runs (`notices::Socket`).
struct Pooled {
    conn: Conn,
    socket: Socket,
    /// `Some` for a [`Driver::Caller`] connection. Declared last: dropped
    /// after the socket registered in it.
    reactor: Option<Reactor>,
}

impl Pooled {
    /// `f` on this connection, the socket driven meanwhile by this thread;
    /// `None` if the deadline passed first. A connection with a reactor
    /// only where [`reactor_here`].
    fn run<T>(&mut self, deadline: Instant, f: impl AsyncFnOnce(&mut Conn) -> T) -> Option<T> {
        let Pooled {
            conn,
            socket,
            reactor,
        } = self;
        let call = socket.run(f(conn));
        match reactor {
            Some(reactor) => reactor.run_until(call, deadline),
            None => wait(call, deadline),
        }
    }

    fn driver(&self) -> Driver {
        match self.reactor {
            Some(_) => Driver::Caller,
            None => Driver::Runtime,
        }
    }

    /// Closes the socket now, without a goodbye the server may never read.
    fn kill(self) {
        drop(self);
    }
}

impl Conn {
    /// The statement `sql` (query number `id`), prepared once per connection.
    pub async fn statement(
        &mut self,
        id: usize,
        sql: &str,
        types: &[Type],
    ) -> Result<Statement, tokio_postgres::Error> {
        if let Some(Some(s)) = self.statements.get(id) {
            return Ok(s.clone());
        }
        let prepared = self.client.prepare_typed(sql, types).await?;
        if self.statements.len() <= id {
            self.statements.resize(id + 1, None);
        }
        self.statements[id] = Some(prepared.clone());
        Ok(prepared)
    }
}

struct State {
    idle: Vec<Pooled>,
    /// Connections handed out or idle.
    open: usize,
    closed: bool,
    /// The process the connections belong to.
    pid: u32,
    /// A connection failed and the pool was emptied: the next connection
    /// made is a reconnect, logged at INFO.
    reconnecting: bool,
}

pub(crate) struct Pool {
    config: Config,
    tls: MakeRustlsConnect,
    /// Pin the session's settings on connect (not behind a transaction
    /// pooler, where they would stay on a server connection others share).
    pin_session: bool,
    /// `sync_replication=required`: refuse a server without synchronous
    /// standbys, and a commit it warned about (`notices.rs`).
    sync_replication: bool,
    size: usize,
    /// Each call's deadline (`call_timeout_ms`).
    call_timeout: Duration,
    state: Mutex<State>,
    freed: Condvar,
    /// Set by the listening connection when it lost the server
    /// (`listener.rs`): the idle connections are likely dead too, and are
    /// dropped before the next call rather than failing it with an
    /// unknown outcome.
    suspect: Arc<AtomicBool>,
    /// Declared last: dropped after every connection whose socket it
    /// watches (it connects them, and wakes a caller when its socket is
    /// ready). Replaced in a forked child, where its thread does not exist.
    runtime: Mutex<Arc<Runtime>>,
}

impl Drop for Pool {
    /// In a forked child that never made a call (its first call forgets
    /// them, `leave_the_parent`): the parent's connections and runtime
    /// thread are the parent's, forgotten, never closed or joined
    /// (docs/semantics.md, "Fork").
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if state.pid != std::process::id() {
            std::mem::forget(std::mem::take(&mut state.idle));
            std::mem::forget(self.runtime());
        }
    }
}

impl Pool {
    pub fn new(
        config: Config,
        tls: MakeRustlsConnect,
        pin_session: bool,
        sync_replication: bool,
        size: usize,
        call_timeout: Duration,
    ) -> Result<Pool> {
        Ok(Pool {
            config,
            tls,
            pin_session,
            sync_replication,
            size,
            call_timeout,
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
                closed: false,
                pid: std::process::id(),
                reconnecting: false,
            }),
            freed: Condvar::new(),
            suspect: Arc::new(AtomicBool::new(false)),
            runtime: Mutex::new(Arc::new(Runtime::start()?)),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent even if a holder panicked.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on a pooled connection within the call's deadline; maps its
    /// failure to the store's errors. `what` names the call in a timeout.
    pub fn with<T>(
        &self,
        what: &str,
        f: impl AsyncFnOnce(&mut Conn) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T> {
        let deadline = Instant::now() + self.call_timeout;
        let mut conn = self.checkout(deadline, Driver::here())?;
        conn.socket.take_warning();
        let out = conn.run(deadline, f);
        self.settle(what, conn, out)
    }

    /// [`Pool::with`] on the calling task instead of its thread (the async
    /// store): the socket is driven by the task's polls, woken by the
    /// pool's runtime as for a thread, and the deadline is a timer of that
    /// runtime (the caller's may have none). `None` when no connection that
    /// runtime watches is idle: nothing was sent, and the caller runs the
    /// blocking call (as an async store's: `Driver::Runtime`), which
    /// connects or waits for one. A future dropped mid-call drops its
    /// connection, whose state is unknown, as a call past its deadline does.
    pub async fn with_on_task<T>(
        &self,
        what: &str,
        f: impl AsyncFnOnce(&mut Conn) -> Result<T, tokio_postgres::Error>,
    ) -> Option<Result<T>> {
        let deadline = Instant::now() + self.call_timeout;
        let (conn, pid) = {
            let mut state = self.lock();
            match self.take_idle(&mut state, Driver::Runtime) {
                Ok(idle) => (idle?, state.pid),
                Err(e) => return Some(Err(e)),
            }
        };
        // After `take_idle`, which gives a forked child a runtime of its own.
        let runtime = self.runtime();
        let mut lent = Lent {
            pool: self,
            conn: Some(conn),
            pid,
        };
        let out = {
            let Pooled { conn, socket, .. } = lent.conn.as_mut()?;
            socket.take_warning();
            let mut call = pin!(socket.run(f(conn)));
            let mut timer = pin!(runtime.sleep_until(deadline));
            poll_fn(|cx| match call.as_mut().poll(cx) {
                Poll::Ready(out) => Poll::Ready(Some(out)),
                Poll::Pending => timer.as_mut().poll(cx).map(|()| None),
            })
            .await
        };
        let Some(conn) = lent.back() else {
            return Some(Err(Error::backend(
                Kind::OutcomeUnknown,
                format!(
                    "postgres: {what}: the process forked during the call, which went on in \
                     the parent's session: the outcome is unknown"
                ),
            )));
        };
        Some(self.settle(what, conn, out))
    }

    /// A call's end (`None`: its deadline passed first): the connection
    /// back to the pool, or dropped (alone when its state is unknown, with
    /// every idle one when the server went away), and the answer mapped to
    /// the store's errors.
    fn settle<T>(
        &self,
        what: &str,
        mut conn: Pooled,
        out: Option<Result<T, tokio_postgres::Error>>,
    ) -> Result<T> {
        let Some(out) = out else {
            self.discard_one(conn);
            return Err(self.timed_out(what));
        };
        if let (true, Some(warning)) = (self.sync_replication, conn.socket.take_warning()) {
            // Committed locally, perhaps not on any standby: a promoted
            // standby may not have it, so it is no answer to hand on.
            self.discard_one(conn);
            return Err(Error::backend(
                Kind::OutcomeUnknown,
                format!(
                    "postgres: {what}: the server warned \"{warning}\"; with \
                     sync_replication=required a commit no synchronous standby confirmed is a \
                     failure: the outcome is unknown"
                ),
            ));
        }
        if conn.conn.client.is_closed() || matches!(&out, Err(e) if is_connection_failure(e)) {
            self.discard(conn);
            let cause = match &out {
                Err(e) => describe(e, Kind::Unreachable).1,
                Ok(_) => "the connection closed".to_owned(),
            };
            // A read-only server (25006) is an old primary that came back
            // as a standby: a failover happened.
            tracing::warn!(
                target: "fencing",
                server = endpoints(&self.config),
                call = what,
                "postgres: connection lost ({cause}); the pool is emptied and the next call \
                 reconnects"
            );
        } else {
            self.checkin(conn);
        }
        out.map_err(to_error)
    }

    /// A call whose answer did not come in time: it was sent, so it may
    /// have taken effect.
    fn timed_out(&self, what: &str) -> Error {
        Error::backend(
            Kind::OutcomeUnknown,
            format!(
                "postgres: {what} timed out after {} ms; the outcome is unknown",
                self.call_timeout.as_millis()
            ),
        )
    }

    /// A connection not made in time: nothing of the call was sent.
    fn connect_timed_out(&self) -> Error {
        Error::backend(
            Kind::Timeout,
            format!(
                "postgres: connecting to {} timed out after {} ms",
                endpoints(&self.config),
                self.call_timeout.as_millis()
            ),
        )
    }

    /// In a process forked from the one that made the pool (docs/semantics.md,
    /// "Fork"): the parent's connections are forgotten, never used, closed
    /// or written to (their sockets are the parent's sessions), and a new
    /// runtime drives the child's own.
    fn leave_the_parent(&self, state: &mut State) -> Result<()> {
        let pid = std::process::id();
        if state.pid == pid {
            return Ok(());
        }
        std::mem::forget(std::mem::take(&mut state.idle));
        state.open = 0;
        let fresh = Arc::new(Runtime::start()?);
        let mut runtime = self.runtime.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::forget(std::mem::replace(&mut *runtime, fresh));
        state.pid = pid;
        Ok(())
    }

    /// An idle connection a call that wants `driver` can use, its own kind
    /// first, if one is (after forgetting a parent's, and the idle ones the
    /// listener found suspect).
    fn take_idle(&self, state: &mut State, driver: Driver) -> Result<Option<Pooled>> {
        self.leave_the_parent(state)?;
        if self.suspect.swap(false, Ordering::SeqCst) {
            let stale = std::mem::take(&mut state.idle);
            state.open -= stale.len();
            state.reconnecting |= !stale.is_empty();
            drop(stale);
        }
        if state.closed {
            return Err(Error::Closed);
        }
        let last = state.idle.iter().rposition(|c| c.driver() == driver);
        Ok(match (last, driver) {
            (Some(at), _) => Some(state.idle.remove(at)),
            (None, Driver::Caller) => state.idle.pop(),
            (None, Driver::Runtime) => None,
        })
    }

    /// A connection for a call that wants `driver`: an idle one it can use,
    /// or a new one (when the pool is full, in place of an idle one of the
    /// other kind, said goodbye to: a store used both ways).
    fn checkout(&self, deadline: Instant, driver: Driver) -> Result<Pooled> {
        let mut state = self.lock();
        loop {
            if let Some(conn) = self.take_idle(&mut state, driver)? {
                return Ok(conn);
            }
            // Full, with only connections this call cannot use idle: one
            // of them makes room.
            let spare = match state.open == self.size {
                true => state.idle.pop(),
                false => None,
            };
            state.open -= usize::from(spare.is_some());
            if state.open < self.size {
                state.open += 1;
                drop(state);
                self.goodbye(spare);
                return self.connect(deadline, driver).inspect_err(|_| {
                    self.lock().open -= 1;
                    self.freed.notify_one();
                });
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Err(Error::backend(
                    Kind::Timeout,
                    format!(
                        "postgres: no free connection within {} ms (pool_size={}); nothing was \
                         sent",
                        self.call_timeout.as_millis(),
                        self.size
                    ),
                ));
            };
            state = self
                .freed
                .wait_timeout(state, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// A failed connection (or session setup), naming where it went (hosts
    /// and ports, never the user's password) and the driver's cause: the
    /// server's refusal, or `unreachable` when no server answered.
    fn unreachable(&self, e: tokio_postgres::Error) -> Error {
        let (kind, cause) = match (e.as_db_error(), std::error::Error::source(&e)) {
            (None, Some(cause)) => (Kind::Unreachable, cause.to_string()),
            _ => describe(&e, Kind::Unreachable),
        };
        let message = format!(
            "postgres: cannot connect to {}: {cause}",
            endpoints(&self.config)
        );
        Error::backend_from(kind, message, e)
    }

    /// Connects in the reactor that will watch the socket (`driver`'s: the
    /// driver needs one for sockets and its `connect_timeout`) and pins the
    /// session's settings.
    fn connect(&self, deadline: Instant, driver: Driver) -> Result<Pooled> {
        let (connected, reactor) = match driver {
            Driver::Caller => {
                let reactor = Reactor::new()?;
                let connect = self.config.connect(self.tls.clone());
                match reactor.run_until(connect, deadline) {
                    Some(connected) => (connected, Some(reactor)),
                    None => {
                        // Its resolver may hang past the deadline: not waited for.
                        reactor.abandon();
                        return Err(self.connect_timed_out());
                    }
                }
            }
            Driver::Runtime => match self.connect_on_runtime(deadline)? {
                Some(connected) => (connected, None),
                None => return Err(self.connect_timed_out()),
            },
        };
        let (client, wire) = connected.map_err(|e| match tls::explain(&e) {
            Some(tls) => Error::backend_from(Kind::Refused, tls, e),
            None => self.unreachable(e),
        })?;
        let mut conn = Pooled {
            conn: Conn {
                client,
                statements: Vec::new(),
            },
            socket: Socket::new(wire, endpoints(&self.config)),
            reactor,
        };
        if self.sync_replication {
            if let Err(e) = self.require_standbys(&mut conn, deadline) {
                conn.kill();
                return Err(e);
            }
        }
        if !self.pin_session {
            return Ok(self.connected(conn));
        }
        let server_timeout = session::server_timeout(self.call_timeout);
        let sync = self.sync_replication;
        match conn.run(deadline, async |c| {
            session::pin(&c.client, server_timeout, sync).await
        }) {
            None => {
                conn.kill();
                Err(self.connect_timed_out())
            }
            Some(Err(e)) => Err(self.unreachable(e)),
            Some(Ok(())) => Ok(self.connected(conn)),
        }
    }

    /// `Config::connect` on the pool's runtime, which then watches the
    /// socket; `None` if the deadline passed first.
    fn connect_on_runtime(
        &self,
        deadline: Instant,
    ) -> Result<Option<Result<(Client, super::notices::Wire), tokio_postgres::Error>>> {
        let config = self.config.clone();
        let tls = self.tls.clone();
        let task = self
            .runtime()
            .spawn(async move { config.connect(tls).await });
        let abort = task.abort_handle();
        match wait(task, deadline) {
            None => {
                abort.abort();
                Ok(None)
            }
            Some(Err(e)) => {
                let message = format!("postgres: connect task: {e}");
                Err(Error::backend_from(Kind::Other, message, e))
            }
            Some(Ok(connected)) => Ok(Some(connected)),
        }
    }

    /// A connection made: a reconnect after a loss is logged at INFO, the
    /// pool's ordinary growth at DEBUG.
    fn connected(&self, conn: Pooled) -> Pooled {
        let reconnect = std::mem::take(&mut self.lock().reconnecting);
        let server = endpoints(&self.config);
        if reconnect {
            tracing::info!(target: "fencing", server, "postgres: reconnected");
        } else {
            tracing::debug!(target: "fencing", server, "postgres: connected");
        }
        conn
    }

    /// With `sync_replication=required`, a server that would commit without
    /// waiting for a standby is refused: a misconfiguration fails loudly
    /// instead of silently handing out tokens only one server has.
    fn require_standbys(&self, conn: &mut Pooled, deadline: Instant) -> Result<()> {
        let names = conn
            .run(deadline, async |c| {
                c.client
                    .query_one("SELECT current_setting('synchronous_standby_names')", &[])
                    .await
            })
            .ok_or_else(|| self.connect_timed_out())?
            .map_err(|e| self.unreachable(e))?;
        let names: String = names.try_get(0).map_err(|e| {
            Error::backend_from(
                Kind::Corrupt,
                format!("postgres: reading synchronous_standby_names: {e}"),
                e,
            )
        })?;
        if names.trim().is_empty() {
            return Err(Error::backend(
                Kind::Refused,
                "postgres: sync_replication=required, but the server has no synchronous \
                 standby (synchronous_standby_names is empty): set it on the primary, or \
                 drop the option",
            ));
        }
        Ok(())
    }

    fn checkin(&self, conn: Pooled) {
        let mut state = self.lock();
        if state.closed {
            state.open -= 1;
        } else {
            state.idle.push(conn);
        }
        drop(state);
        self.freed.notify_one();
    }

    /// A connection whose call ran out of time: never reused.
    fn discard_one(&self, conn: Pooled) {
        conn.kill();
        self.lock().open -= 1;
        self.freed.notify_one();
    }

    fn discard(&self, conn: Pooled) {
        conn.kill();
        let mut state = self.lock();
        let stale = std::mem::take(&mut state.idle);
        state.open -= 1 + stale.len();
        state.reconnecting = true;
        drop(state);
        drop(stale);
        self.freed.notify_all();
    }

    pub fn close(&self) {
        let mut state = self.lock();
        if state.pid != std::process::id() {
            // A forked child's close: the parent's connections stay its own.
            std::mem::forget(std::mem::take(&mut state.idle));
            state.open = 0;
        }
        state.closed = true;
        let idle = std::mem::take(&mut state.idle);
        state.open -= idle.len();
        drop(state);
        self.goodbye(idle);
        self.freed.notify_all();
    }

    /// Closes connections taken out of the pool, each with its goodbye: its
    /// client gone, the socket sends the server its Terminate and closes.
    /// The pool's runtime waits for that; a connection's own reactor gets
    /// one turn to write it, on this thread, or where this thread cannot
    /// enter it (inside a runtime) on a thread of its own, waited for.
    fn goodbye(&self, conns: impl IntoIterator<Item = Pooled>) {
        let runtime = self.runtime();
        // The socket first, then the reactor it is registered in.
        let mut own: Vec<(super::notices::Wire, Reactor)> = Vec::new();
        for Pooled {
            conn,
            socket,
            reactor,
        } in conns
        {
            drop(conn);
            let Some(wire) = socket.into_wire() else {
                continue;
            };
            match reactor {
                None => drop(runtime.spawn(async move {
                    let _ = wire.await;
                })),
                Some(reactor) => own.push((wire, reactor)),
            }
        }
        if own.is_empty() {
            return;
        }
        let turns = move || {
            for (wire, reactor) in own {
                let _ = reactor.run_until(wire, Instant::now());
            }
        };
        if reactor_here() {
            return turns();
        }
        std::thread::scope(|s| {
            // Without a thread, no goodbye: the sockets just close.
            if let Ok(thread) = std::thread::Builder::new().spawn_scoped(s, turns) {
                let _ = thread.join();
            }
        });
    }

    fn runtime(&self) -> Arc<Runtime> {
        Arc::clone(&self.runtime.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The driver's settings and TLS, for a connection outside the pool
    /// (`listener.rs`).
    pub fn connector(&self) -> (Config, MakeRustlsConnect) {
        (self.config.clone(), self.tls.clone())
    }

    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// The flag that tells the pool its idle connections may be dead.
    pub fn suspect(&self) -> Arc<AtomicBool> {
        self.suspect.clone()
    }

    /// Runs `task` on this process's runtime (a forked child's own); `None`
    /// once the pool is closed.
    pub fn spawn<F>(&self, task: F) -> Option<tokio::task::JoinHandle<()>>
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let mut state = self.lock();
        if state.closed || self.leave_the_parent(&mut state).is_err() {
            return None;
        }
        drop(state);
        Some(self.runtime().spawn(task))
    }
}

/// A failure of the connection rather than of the statement: I/O, a closed
/// socket, the server shutting the session down (SQLSTATE class 57P, 08),
/// or a server that is a read-only standby now (25006: after a failover the
/// old primary may come back as one), so that the next call connects afresh
/// and, with several hosts in the URL, finds the primary.
fn is_connection_failure(e: &tokio_postgres::Error) -> bool {
    match e.as_db_error() {
        None => true,
        Some(db) => {
            let code = db.code().code();
            code.starts_with("57P") || code.starts_with("08") || code == READ_ONLY
        }
    }
}

/// `host:port` for each host the URL lists (a socket directory for a Unix
/// socket), as libpq pairs them: one port for all, or one per host.
fn endpoints(config: &Config) -> String {
    use tokio_postgres::config::Host;
    let ports = config.get_ports();
    let hosts = config.get_hosts();
    if hosts.is_empty() {
        return "the default host (no host in the URL)".to_owned();
    }
    let port = |i: usize| match ports.len() {
        0 => 5432,
        1 => ports[0],
        _ => ports.get(i).copied().unwrap_or(5432),
    };
    let listed: Vec<String> = hosts
        .iter()
        .enumerate()
        .map(|(i, host)| match host {
            Host::Tcp(name) => format!("{name}:{}", port(i)),
            #[cfg(unix)]
            Host::Unix(dir) => format!("{}:{} (Unix socket)", dir.display(), port(i)),
        })
        .collect();
    listed.join(", ")
}

/// SQLSTATE read_only_sql_transaction: a write sent to a standby.
const READ_ONLY: &str = "25006";

/// A driver error that is not one of fencing's rejections, with the
/// driver's error as source. An error without an answer from the server
/// came mid-call: its outcome is unknown.
pub(crate) fn backend_error(e: tokio_postgres::Error) -> Error {
    let (kind, text) = describe(&e, Kind::OutcomeUnknown);
    Error::backend_from(kind, format!("postgres: {text}"), e)
}

/// `backend_error` with `context` after the server's words.
pub(crate) fn backend_error_with(e: tokio_postgres::Error, context: &str) -> Error {
    let (kind, text) = describe(&e, Kind::OutcomeUnknown);
    Error::backend_from(kind, format!("postgres: {text}{context}"), e)
}

/// A driver error's kind and words: the server's message and SQLSTATE, or
/// the driver's kind and cause; `lost` is the kind when no server answered.
fn describe(e: &tokio_postgres::Error, lost: Kind) -> (Kind, String) {
    match e.as_db_error() {
        Some(db) if db.code().code() == READ_ONLY => (
            Kind::Refused,
            format!(
                "the server is a read-only standby ({}, SQLSTATE 25006): point the URL at the \
                 primary, or list every host with target_session_attrs=read-write",
                db.message()
            ),
        ),
        Some(db) => {
            let code = db.code().code();
            // A named statement that vanished or collided: the sign of a
            // transaction pooler the URL did not mention.
            let hint = if code == "26000" || code == "42P05" {
                "; behind a transaction pooler (PgBouncer pool_mode=transaction) \
                 open the store with ?pooler=transaction"
            } else {
                ""
            };
            let text = format!("{} (SQLSTATE {code}){hint}", db.message());
            (sqlstate_kind(code), text)
        }
        // The driver's Display names only the kind ("error connecting to
        // server"); its source says what happened. Neither holds the URL.
        None => match std::error::Error::source(e) {
            Some(cause) => (lost, format!("{e}: {cause}")),
            None => (lost, e.to_string()),
        },
    }
}

/// The kind of a server's error (its SQLSTATE): the server answered, so the
/// statement did not take effect.
fn sqlstate_kind(code: &str) -> Kind {
    match code {
        // serialization_failure, deadlock_detected, lock_not_available,
        // too_many_connections: someone else holds what the call needs.
        "40001" | "40P01" | "55P03" | "53300" => Kind::Busy,
        // query_canceled: the server's statement_timeout.
        "57014" => Kind::Timeout,
        // data_corrupted, index_corrupted.
        "XX001" | "XX002" => Kind::Corrupt,
        // Connection exceptions; the server shutting down or starting up.
        c if c.starts_with("08") || c.starts_with("57P") => Kind::Unreachable,
        // Authentication, permissions, a missing database, a bad statement.
        _ => Kind::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_for_a_free_connection_ends_at_the_deadline() {
        // Every connection busy (nothing listens: it must not even connect).
        let tls = tls::connector(&crate::url::Tls {
            mode: crate::url::SslMode::Disable,
            root_cert: None,
            client_cert: None,
        })
        .unwrap();
        let pool = Pool::new(
            Config::new(),
            tls,
            true,
            false,
            1,
            Duration::from_millis(50),
        )
        .unwrap();
        pool.lock().open = 1;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(pool.with("get", async |_| Ok(())));
        });
        let err = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("checkout waited past its deadline")
            .unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::Backend, "{err}");
        assert_eq!(err.backend_kind(), Some(Kind::Timeout), "{err}");
        assert!(err.to_string().contains("no free connection"), "{err}");
    }
}
