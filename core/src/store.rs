//! `Store`: the one public entry point. Validates every argument (check 1),
//! hands the operation to the backend, and records the outcome in metrics.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tracing::Instrument;

#[cfg(feature = "etcd")]
use crate::backend::etcd::Etcd;
use crate::backend::memory::Memory;
#[cfg(feature = "postgres")]
use crate::backend::postgres::Postgres;
#[cfg(feature = "sqlite")]
use crate::backend::sqlite::Sqlite;
use crate::backend::wakes::Slept;
use crate::backend::Backend;
use crate::clock::Clock;
use crate::error::{Error, ErrorCode, Result};
use crate::events::{Events, Limiter, RejectionNote, MAX_EVENTS_LIMIT};
use crate::limits;
use crate::metrics::{prometheus_text, Call, CallTimer, Metrics, MetricsSnapshot, Rejection};
use crate::rules::Mode;
use crate::token::Token;
use crate::types::{Entry, Fence, Lease, Op, OpRef, Page, Receipt, ScopeStatus};
use crate::url::{self, ClockKind, StoreOptions};
use crate::waiting::Attempt;

/// A backend failure after which asking again is safe: nothing was sent.
pub(crate) fn nothing_took_effect(kind: crate::error::BackendErrorKind) -> bool {
    use crate::error::BackendErrorKind::{Busy, Timeout, Unreachable};
    matches!(kind, Busy | Timeout | Unreachable)
}

/// A handle on one fencing store. `Send + Sync`; clones share the backend,
/// the metrics and the closed state.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

/// Where a store keeps its state, as the store itself knows it (faces ask
/// this instead of reading the URL's text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// `memory:`: one process, gone with it.
    Memory,
    /// `sqlite:PATH`: processes on one host.
    Sqlite,
    /// `postgres://...`, `postgresql://...`: many hosts.
    Postgres,
    /// `etcd://...`: many hosts, on a consensus cluster.
    Etcd,
}

impl BackendKind {
    /// `"memory"`, `"sqlite"`, `"postgres"`, `"etcd"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            BackendKind::Memory => "memory",
            BackendKind::Sqlite => "sqlite",
            BackendKind::Postgres => "postgres",
            BackendKind::Etcd => "etcd",
        }
    }

    /// The kind of store a URL names, checked as `Store::open` checks it
    /// (`INVALID_ARGUMENT` for a bad URL), without opening anything.
    pub fn of_url(url: &str) -> Result<BackendKind> {
        Ok(url::parse(url)?.kind())
    }
}

struct Inner {
    backend: Box<dyn Backend>,
    kind: BackendKind,
    metrics: Metrics,
    closed: AtomicBool,
    /// Rate limit on recording rejections in the store (docs/operations.md),
    /// on its own clock: manual when the store's is, so tests are exact.
    limiter: Limiter,
    limiter_clock: Clock,
    /// The most one call may take, when the backend has such a bound: what
    /// ending a held lease waits for at most (docs/semantics.md, "Ending a
    /// held lease"). `None` for `memory:`, whose calls never wait on I/O.
    call_bound: Option<Duration>,
    /// [`Store::location`].
    location: String,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("closed", &self.inner.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// [`Store::migrate`]: creates or upgrades the schema of the store `url`
/// names without opening a store.
pub fn migrate(url: &str) -> Result<()> {
    Store::migrate(url)
}

/// [`Store::ping`] of the store `url` names, without opening a store: so
/// without what opening does to it (creating a missing SQLite file,
/// migrating an older schema), for health checks from outside
/// (`fencing health`). One connection, closed before it returns.
/// `memory:` names no store to reach: `Ok` after the URL is checked.
pub fn ping(url: &str) -> Result<()> {
    match url::parse(url)? {
        StoreOptions::Memory(_) => Ok(()),
        #[cfg(feature = "sqlite")]
        StoreOptions::Sqlite(sqlite) => {
            Sqlite::ping(&sqlite.path, sqlite.synchronous, sqlite.busy_timeout)
        }
        #[cfg(feature = "postgres")]
        StoreOptions::Postgres(pg) => Postgres::ping(&pg.target),
        #[cfg(feature = "etcd")]
        StoreOptions::Etcd(etcd) => Etcd::connect(&etcd, false, Mode::default())?.ping(),
    }
}

impl Store {
    /// Opens the store a URL names: `memory:`, `sqlite:PATH` or
    /// `postgres://...`, optionally with options
    /// (`?clock=manual&strict=true&eager_fencing=false`; for SQLite also
    /// `synchronous=full|normal` and `busy_timeout_ms=N`; for PostgreSQL
    /// `schema=NAME`, `pool_size=N` and the driver's own options). The
    /// same as [`Store::open_with`] of `url.parse()?`.
    pub fn open(url: &str) -> Result<Store> {
        Store::open_with(url::parse(url)?)
    }

    /// Opens the store that typed options describe: [`StoreOptions`], or
    /// what converts into it ([`crate::SqliteOptions`],
    /// [`crate::PostgresOptions`], or [`crate::Options`] for `memory:`).
    ///
    /// ```
    /// use fencing::{ClockKind, Options, Store};
    ///
    /// let mut options = Options::default();
    /// options.clock = ClockKind::Manual;
    /// let store = Store::open_with(options)?; // memory:?clock=manual
    /// store.advance_clock(std::time::Duration::from_secs(1))?;
    /// # Ok::<(), fencing::Error>(())
    /// ```
    pub fn open_with(options: impl Into<StoreOptions>) -> Result<Store> {
        let options = options.into();
        let common = options.options();
        let mode = Mode {
            eager_fencing: common.eager_fencing,
            strict: common.strict,
            unbounded_jumps: common.unbounded_jumps,
        };
        let kind = options.kind();
        let location = options.location();
        let manual = common.clock == ClockKind::Manual;
        let call_bound = match &options {
            StoreOptions::Memory(_) => None,
            #[cfg(feature = "sqlite")]
            StoreOptions::Sqlite(sqlite) => Some(sqlite.busy_timeout),
            #[cfg(feature = "postgres")]
            StoreOptions::Postgres(pg) => Some(pg.target.call_timeout),
            #[cfg(feature = "etcd")]
            StoreOptions::Etcd(etcd) => Some(etcd.call_timeout),
        };
        let limiter_clock = if manual {
            Clock::manual()
        } else {
            Clock::monotonic()
        };
        let backend: Box<dyn Backend> = match options {
            StoreOptions::Memory(_) => {
                let clock = if manual {
                    Clock::manual()
                } else {
                    Clock::monotonic()
                };
                Box::new(Memory::new(clock, mode))
            }
            #[cfg(feature = "sqlite")]
            StoreOptions::Sqlite(sqlite) => {
                let clock = if manual { Clock::manual() } else { Clock::Wall };
                Box::new(Sqlite::open(
                    &sqlite.path,
                    sqlite.synchronous,
                    sqlite.busy_timeout,
                    clock,
                    mode,
                )?)
            }
            #[cfg(feature = "postgres")]
            StoreOptions::Postgres(pg) => Box::new(Postgres::open(&pg.target, manual, mode)?),
            #[cfg(feature = "etcd")]
            StoreOptions::Etcd(etcd) => Box::new(Etcd::open(&etcd, manual, mode)?),
        };
        Ok(Store {
            inner: Arc::new(Inner {
                backend,
                kind,
                metrics: Metrics::for_store(&location),
                closed: AtomicBool::new(false),
                limiter: Limiter::default(),
                limiter_clock,
                call_bound,
                location,
            }),
        })
    }

    /// Where this store keeps its state.
    pub fn backend_kind(&self) -> BackendKind {
        self.inner.kind
    }

    /// Where this store is, as a person should read it: `memory:`;
    /// `sqlite:` and the file's absolute path (a relative path as this
    /// process resolved it when it opened the store); or the PostgreSQL
    /// URL without its query and with its password as `***`. For logs and
    /// the faces' `repr`/`toString`; never parsed.
    ///
    /// ```
    /// let store = fencing::Store::open("memory:?clock=manual")?;
    /// assert_eq!(store.location(), "memory:");
    /// # Ok::<(), fencing::Error>(())
    /// ```
    pub fn location(&self) -> &str {
        &self.inner.location
    }

    /// Creates or upgrades the schema of the store a URL names, without
    /// opening a store: for sites that apply the schema at deploy time, and
    /// so that `fencing.check` (PostgreSQL) and `fencing_check` (SQLite)
    /// work before any process has opened the store. What `open` would do
    /// to the schema, and nothing else: idempotent, safe while stores are
    /// open (the same lock serialises it with their migrations), refuses
    /// the same foreign or newer schemas. `memory:` has no schema: `Ok`.
    pub fn migrate(url: &str) -> Result<()> {
        Store::migrate_with(url::parse(url)?)
    }

    /// [`Store::migrate`] for typed options.
    pub fn migrate_with(options: impl Into<StoreOptions>) -> Result<()> {
        match options.into() {
            StoreOptions::Memory(_) => Ok(()),
            #[cfg(feature = "sqlite")]
            StoreOptions::Sqlite(sqlite) => {
                Sqlite::migrate(&sqlite.path, sqlite.synchronous, sqlite.busy_timeout)
            }
            #[cfg(feature = "postgres")]
            StoreOptions::Postgres(pg) => Postgres::migrate(&pg.target),
            // Its one schema key is written at open.
            #[cfg(feature = "etcd")]
            StoreOptions::Etcd(etcd) => Etcd::open(&etcd, false, Mode::default()).map(drop),
        }
    }

    pub(crate) fn backend(&self) -> Result<&dyn Backend> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(&*self.inner.backend)
    }

    pub(crate) fn metrics_sink(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The most one call may take (`call_timeout_ms` on PostgreSQL, the
    /// busy timeout on SQLite); `None` for `memory:`.
    pub(crate) fn call_bound(&self) -> Option<Duration> {
        self.inner.call_bound
    }

    // ----- the counter -----

    /// Increments the scope's counter and returns the new token (first: 1).
    pub fn next_token(&self, scope: &str) -> Result<Token> {
        let _timer = self.inner.metrics.time(Call::NextToken, Some(scope));
        limits::scope(scope)?;
        let token = self.backend()?.next_token(scope)?;
        self.inner.metrics.token_issued();
        Ok(token)
    }

    /// Raises the scope's counter to at least `floor` (never lowers it);
    /// returns the counter.
    pub fn advance_counter(&self, scope: &str, floor: Token) -> Result<u64> {
        let _timer = self.inner.metrics.time(Call::AdvanceCounter, Some(scope));
        limits::scope(scope)?;
        self.backend()?.advance_counter(scope, floor)
    }

    // ----- leases -----

    pub fn acquire(&self, scope: &str, holder: &str, ttl: Duration) -> Result<Lease> {
        let timer = self.inner.metrics.time(Call::Acquire, Some(scope));
        limits::scope(scope)?;
        limits::holder(holder)?;
        limits::ttl(ttl)?;
        let result = self.backend()?.acquire(scope, holder, ttl, timer.started());
        match &result {
            Ok(lease) => {
                self.inner.metrics.lease_acquired();
                tracing::debug!(target: "fencing", scope, token = lease.token.get(), holder, "lease acquired");
            }
            Err(Error::LeaseHeld { .. }) => self.inner.metrics.acquire_conflict(),
            Err(_) => {}
        }
        result
    }

    /// Like [`Store::acquire`], but waits (blocking, without spinning) until
    /// the lease is free or `timeout` passes (`TIMEOUT`). The timeout is
    /// real time, whatever clock the store's leases run on.
    pub fn acquire_wait(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        timeout: Duration,
    ) -> Result<Lease> {
        self.acquire_wait_sent(scope, holder, ttl, timeout, None)
            .map(|(lease, _)| lease)
    }

    /// [`Store::acquire_wait`] for a caller that may give up (a dropped
    /// future, a signal, another thread's request): the wait ends with
    /// `TIMEOUT` as soon as `gave_up()` says so, asked at least every 20 ms
    /// while the lease is held by another (docs/semantics.md, "Giving up a
    /// call"). A lease it takes is the caller's, as with `acquire_wait`.
    pub fn acquire_wait_unless(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        timeout: Duration,
        gave_up: &dyn Fn() -> bool,
    ) -> Result<Lease> {
        self.acquire_wait_sent(scope, holder, ttl, timeout, Some(gave_up))
            .map(|(lease, _)| lease)
    }

    /// [`Store::acquire_wait`], with when the acquire that succeeded was sent.
    fn acquire_wait_sent(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        timeout: Duration,
        gave_up: Option<&dyn Fn() -> bool>,
    ) -> Result<(Lease, Instant)> {
        let _timer = self.inner.metrics.time(Call::AcquireWait, Some(scope));
        limits::scope(scope)?;
        limits::holder(holder)?;
        limits::ttl(ttl)?;
        let deadline = Instant::now().checked_add(timeout);
        let mut place = None;
        let outcome = self.wait_in_line(scope, holder, ttl, deadline, gave_up, &mut place);
        if let (Err(_), Some(place)) = (&outcome, place) {
            // Gave up, timed out or failed: the ones behind need not wait
            // for the place to run out (docs/semantics.md, "Waiting").
            if let Ok(backend) = self.backend() {
                let _ = backend.leave_queue(scope, place);
            }
        }
        outcome
    }

    /// The waiting attempts of [`Store::acquire_wait_sent`], in line behind
    /// the waiters that came before (docs/semantics.md, "Waiting"); `place`
    /// is this waiter's, once it has one.
    fn wait_in_line(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        deadline: Option<Instant>,
        gave_up: Option<&dyn Fn() -> bool>,
        place: &mut Option<u64>,
    ) -> Result<(Lease, Instant)> {
        let left = || match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => Duration::MAX,
        };
        let mut attempt = 0u32;
        loop {
            // Before every attempt: once the caller gave up, no acquire is
            // sent, so a lease freed meanwhile is never taken for nobody.
            if gave_up.is_some_and(|g| g()) {
                return Err(Error::Timeout);
            }
            // Before the attempt, so that a release after it is not missed.
            let backend = self.backend()?;
            let watch = backend.release_watch(scope);
            let sent = Instant::now();
            let nap = match backend.acquire_waiting(scope, holder, ttl, *place) {
                Ok(Attempt::Got(lease)) => {
                    self.inner.metrics.lease_acquired();
                    tracing::debug!(target: "fencing", scope, token = lease.token.get(), holder, "lease acquired");
                    return Ok((lease, sent));
                }
                Ok(Attempt::Queued { place: at, wait }) => {
                    self.inner.metrics.acquire_conflict();
                    *place = Some(at);
                    watch.queued_at(at);
                    // Until the lease ends by itself, or the place needs
                    // moving on, unless woken first.
                    let mut nap = wait.max(Duration::from_millis(1));
                    if !watch.pushed() {
                        nap = nap.min(crate::defaults::wait_backoff(attempt));
                    }
                    nap
                }
                Ok(Attempt::Unqueued { wait }) => {
                    self.inner.metrics.acquire_conflict();
                    wait.max(Duration::from_millis(1))
                        .min(crate::defaults::wait_backoff(attempt))
                }
                // A store out of reach for a moment (a restart, a failover)
                // does not end the wait: nothing was sent, so the waiter
                // asks again after the back-off until its deadline, then
                // says why it could not ask.
                Err(e) if e.backend_kind().is_some_and(nothing_took_effect) => {
                    if left().is_zero() {
                        return Err(e);
                    }
                    crate::defaults::wait_backoff(attempt)
                }
                Err(e) => return Err(e),
            };
            let left = left();
            if left.is_zero() {
                return Err(Error::Timeout);
            }
            if watch.sleep(nap.min(left), gave_up) == Slept::GaveUp {
                return Err(Error::Timeout);
            }
            attempt = attempt.saturating_add(1);
        }
    }

    /// Extends the lease with `token` by `ttl` from now, only while it is
    /// still current; else `LEASE_LOST`.
    pub fn renew(&self, scope: &str, token: Token, ttl: Duration) -> Result<Lease> {
        let timer = self.inner.metrics.time(Call::Renew, Some(scope));
        limits::scope(scope)?;
        limits::ttl(ttl)?;
        let result = self.backend()?.renew(scope, token, ttl, timer.started());
        self.inner.metrics.renewal(result.is_ok());
        // Normal operation: a renewal the keep-alive could not make is its
        // own WARN (keepalive/threads.rs); a caller's own renew answers it.
        match &result {
            Ok(_) => {
                tracing::debug!(target: "fencing", scope, token = token.get(), "lease renewed")
            }
            Err(e) => {
                tracing::debug!(target: "fencing", scope, token = token.get(), code = e.code().as_str(), "renewal refused")
            }
        }
        result
    }

    /// Ends the lease with `token` early if it is still current; returns
    /// whether it did. Never touches a newer lease, the counter or the fence.
    pub fn release(&self, scope: &str, token: Token) -> Result<bool> {
        let timer = self.inner.metrics.time(Call::Release, Some(scope));
        limits::scope(scope)?;
        let released = self.backend()?.release(scope, token, timer.started())?;
        if released {
            self.inner.metrics.release();
        }
        tracing::debug!(target: "fencing", scope, token = token.get(), released, "lease release");
        Ok(released)
    }

    /// Acquires a lease and keeps it alive until the guard is dropped. The
    /// guard counts the lease's `remaining` from the moment the acquire was
    /// sent.
    pub fn lease(&self, scope: &str, holder: &str, ttl: Duration) -> Result<crate::LeaseGuard> {
        self.lease_guard(scope, holder, ttl, None, None)
    }

    /// Like [`Store::lease`], waiting up to `timeout` for the lease as
    /// [`Store::acquire_wait`] does; with `on_lost`, calls it once if the
    /// lease is lost (see [`Store::keep_alive_with`]). Every face's `lease`
    /// with a timeout is this.
    pub fn lease_wait(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        timeout: Option<Duration>,
        on_lost: Option<crate::OnLost>,
    ) -> Result<crate::LeaseGuard> {
        self.lease_guard(scope, holder, ttl, timeout, on_lost)
    }

    /// [`Store::lease_wait`] that gives up waiting, with no lease taken
    /// (`TIMEOUT`), once `gave_up` returns true, as
    /// [`Store::acquire_wait_unless`] does: a face's blocking `lease` with a
    /// timeout that a signal (Ctrl-C) or a cancellation can end.
    pub fn lease_wait_unless(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        timeout: Duration,
        on_lost: Option<crate::OnLost>,
        gave_up: &dyn Fn() -> bool,
    ) -> Result<crate::LeaseGuard> {
        let (lease, sent) = self.acquire_wait_sent(scope, holder, ttl, timeout, Some(gave_up))?;
        Ok(crate::LeaseGuard::start(self.clone(), lease, sent, on_lost))
    }

    /// Like [`Store::lease`], calling `on_lost` once if the lease is lost
    /// (see [`Store::keep_alive_with`]).
    pub fn lease_with(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        on_lost: impl Fn(&Error) + Send + Sync + 'static,
    ) -> Result<crate::LeaseGuard> {
        self.lease_guard(scope, holder, ttl, None, Some(Box::new(on_lost)))
    }

    fn lease_guard(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        timeout: Option<Duration>,
        on_lost: Option<crate::keepalive::OnLost>,
    ) -> Result<crate::LeaseGuard> {
        let (lease, sent) = match timeout {
            Some(timeout) => self.acquire_wait_sent(scope, holder, ttl, timeout, None)?,
            None => {
                let sent = Instant::now();
                (self.acquire(scope, holder, ttl)?, sent)
            }
        };
        Ok(crate::LeaseGuard::start(self.clone(), lease, sent, on_lost))
    }

    /// Keeps an acquired lease alive in the background (about every ttl/3)
    /// until the guard is dropped, then releases it.
    ///
    /// A `Lease` does not record when it arrived, so the guard counts its
    /// `remaining` from now: its first deadline is late by the lease's age
    /// (the acquire's way back plus whatever ran before this call), and it
    /// may report the lease held for that long after the store let it
    /// expire. Call this right after `acquire`, or use [`Store::lease`].
    pub fn keep_alive(&self, lease: Lease) -> crate::LeaseGuard {
        crate::LeaseGuard::start(self.clone(), lease, Instant::now(), None)
    }

    /// Like [`Store::keep_alive`], calling `on_lost` once if the lease is
    /// lost, on the guard's own thread, and never once the guard is dropped
    /// or released.
    pub fn keep_alive_with(
        &self,
        lease: Lease,
        on_lost: impl Fn(&Error) + Send + Sync + 'static,
    ) -> crate::LeaseGuard {
        crate::LeaseGuard::start(self.clone(), lease, Instant::now(), Some(Box::new(on_lost)))
    }

    // ----- the fenced store -----

    pub fn put(&self, scope: &str, key: &str, value: &[u8], fence: &Fence) -> Result<Receipt> {
        let timer = self.inner.metrics.time(Call::Put, Some(scope));
        self.write_one(
            &timer,
            scope,
            fence,
            OpRef {
                key,
                value: Some(value),
                expected_version: None,
            },
        )
    }

    pub fn delete(&self, scope: &str, key: &str, fence: &Fence) -> Result<Receipt> {
        let timer = self.inner.metrics.time(Call::Delete, Some(scope));
        self.write_one(
            &timer,
            scope,
            fence,
            OpRef {
                key,
                value: None,
                expected_version: None,
            },
        )
    }

    /// One operation, with its conditions (e.g. `Op::put(..).if_version(3)`).
    pub fn execute(&self, scope: &str, fence: &Fence, op: Op) -> Result<Receipt> {
        let timer = self.inner.metrics.time(Call::of(&op.as_ref()), Some(scope));
        self.write_one(&timer, scope, fence, op.as_ref())
    }

    /// Several puts and deletes under one check: all or nothing.
    pub fn apply(&self, scope: &str, fence: &Fence, ops: Vec<Op>) -> Result<Vec<Receipt>> {
        let timer = self.inner.metrics.time(Call::Apply, Some(scope));
        let ops: Vec<OpRef<'_>> = ops.iter().map(Op::as_ref).collect();
        limits::batch(&ops)?;
        self.judged(scope, fence, None, |b| {
            b.write(scope, fence, &ops, timer.started())
        })
    }

    fn write_one(
        &self,
        timer: &CallTimer<'_>,
        scope: &str,
        fence: &Fence,
        op: OpRef<'_>,
    ) -> Result<Receipt> {
        limits::op(&op)?;
        self.judged(scope, fence, Some(op.key), |b| {
            b.write_one(scope, fence, &op, timer.started())
        })
    }

    /// A write's checks of its scope and fence, the backend's verdict, and
    /// that verdict counted (`key`: the one key written, if one).
    fn judged<T>(
        &self,
        scope: &str,
        fence: &Fence,
        key: Option<&str>,
        write: impl FnOnce(&dyn Backend) -> Result<T>,
    ) -> Result<T> {
        write_checks(scope, fence)?;
        let result = write(self.backend()?);
        match &result {
            Ok(_) => self.inner.metrics.write_accepted(),
            Err(e) => self.record_rejection(e, scope, key, fence),
        }
        result
    }

    /// A write's verdict counted, and a rejection logged; `Some(skipped)`
    /// when the store takes a record of it too (`record_in_store`).
    fn count_verdict<T>(
        &self,
        result: &Result<T>,
        scope: &str,
        key: Option<&str>,
        fence: &Fence,
    ) -> Option<u64> {
        match result {
            Ok(_) => {
                self.inner.metrics.write_accepted();
                None
            }
            Err(e) => self.note_rejection(e, scope, key, fence),
        }
    }

    // ----- on the caller's task (the async store) -----

    /// [`Store::put`], `delete` or `execute` (`call`) on the caller's task,
    /// where the backend can await its answer there (PostgreSQL: the async
    /// store's calls need no thread of the blocking pool). `None`: nothing
    /// was done (no such path, or no connection idle); make the blocking
    /// call.
    pub(crate) async fn write_one_on_task(
        &self,
        call: Call,
        scope: &str,
        fence: &Fence,
        op: OpRef<'_>,
    ) -> Option<Result<Receipt>> {
        let ops = [op];
        let checked = limits::op(&op);
        let out = self
            .judged_on_task(call, checked, scope, fence, Some(op.key), &ops)
            .await?;
        Some(out.map(|receipts| receipts[0]))
    }

    /// [`Store::apply`] on the caller's task, as `write_one_on_task`.
    pub(crate) async fn apply_on_task(
        &self,
        scope: &str,
        fence: &Fence,
        ops: &[OpRef<'_>],
    ) -> Option<Result<Vec<Receipt>>> {
        let checked = limits::batch(ops);
        self.judged_on_task(Call::Apply, checked, scope, fence, None, ops)
            .await
    }

    /// [`Store::judged`] on the caller's task, after the operations' own
    /// checks (`checked`). Neither timed nor traced where the backend has
    /// no such path, or the store is closed: the blocking call is.
    async fn judged_on_task(
        &self,
        call: Call,
        checked: Result<()>,
        scope: &str,
        fence: &Fence,
        key: Option<&str>,
        ops: &[OpRef<'_>],
    ) -> Option<Result<Vec<Receipt>>> {
        let answer = self.backend().ok()?.write_on_task(scope, fence, ops)?;
        let (timer, span) = self.inner.metrics.time_on_task(call, Some(scope));
        async {
            if let Err(e) = checked.and_then(|()| write_checks(scope, fence)) {
                return Some(Err(e));
            }
            let Some(result) = answer.await else {
                timer.forget();
                return None;
            };
            if let Some(skipped) = self.count_verdict(&result, scope, key, fence) {
                self.record_in_store_on_task(&result, scope, key, fence, skipped)
                    .await;
            }
            Some(result)
        }
        .instrument(span)
        .await
    }

    /// [`Store::get`] on the caller's task, as `write_one_on_task`.
    pub(crate) async fn get_on_task(
        &self,
        scope: &str,
        key: &str,
        fence: Option<&Fence>,
    ) -> Option<Result<Option<Entry>>> {
        let answer = self.backend().ok()?.get_on_task(scope, key, fence)?;
        let (timer, span) = self.inner.metrics.time_on_task(Call::Get, Some(scope));
        async {
            if let Err(e) = get_checks(scope, key, fence) {
                return Some(Err(e));
            }
            let Some(result) = answer.await else {
                timer.forget();
                return None;
            };
            if let (Err(e), Some(f)) = (&result, fence) {
                if let Some(skipped) = self.note_rejection(e, scope, Some(key), f) {
                    self.record_in_store_on_task(&result, scope, Some(key), f, skipped)
                        .await;
                }
            }
            Some(result)
        }
        .instrument(span)
        .await
    }

    /// `record_in_store` off the executor: it is a call to the store.
    async fn record_in_store_on_task<T>(
        &self,
        result: &Result<T>,
        scope: &str,
        key: Option<&str>,
        fence: &Fence,
        skipped: u64,
    ) {
        let Err(e) = result else { return };
        let (store, code, scope) = (self.clone(), e.code(), scope.to_owned());
        let (key, fence) = (key.map(str::to_owned), fence.clone());
        let _ = crate::aio::off_executor(move || {
            store.record_in_store(code, &scope, key.as_deref(), &fence, skipped)
        })
        .await;
    }

    /// Raises the fence to `fence.token` without writing, so that older
    /// holders are shut out before the new one reads.
    pub fn claim(&self, scope: &str, fence: &Fence) -> Result<()> {
        let _timer = self.inner.metrics.time(Call::Claim, Some(scope));
        limits::scope(scope)?;
        limits::fence(fence)?;
        let result = self.backend()?.claim(scope, fence);
        if let Err(e) = &result {
            self.record_rejection(e, scope, None, fence);
        }
        result
    }

    /// On an etcd store: checks `fence` against the scope's fence now (as
    /// [`Store::claim`] does) and returns what the caller's own etcd
    /// transaction must compare and put so that it commits only if the
    /// token is still current then, raising the fence with it
    /// (docs/etcd.md, "Fence your own etcd keys"). Other stores refuse with
    /// `INVALID_ARGUMENT`.
    #[cfg(feature = "etcd")]
    pub fn etcd_check(&self, scope: &str, fence: &Fence) -> Result<crate::EtcdCheck> {
        let _timer = self.inner.metrics.time(Call::Claim, Some(scope));
        limits::scope(scope)?;
        limits::fence(fence)?;
        let result = self.backend()?.etcd_check(scope, fence);
        if let Err(e) = &result {
            self.record_rejection(e, scope, None, fence);
        }
        result
    }

    /// Reads an entry. With a fence, the read is checked like a write
    /// (`STALE_TOKEN`) but raises nothing.
    pub fn get(&self, scope: &str, key: &str, fence: Option<&Fence>) -> Result<Option<Entry>> {
        let _timer = self.inner.metrics.time(Call::Get, Some(scope));
        get_checks(scope, key, fence)?;
        let result = self.backend()?.get(scope, key, fence);
        if let (Err(e), Some(f)) = (&result, fence) {
            self.record_rejection(e, scope, Some(key), f);
        }
        result
    }

    /// Up to `limit` keys after `after`, in byte order.
    pub fn list(&self, scope: &str, after: Option<&str>, limit: usize) -> Result<Page> {
        let _timer = self.inner.metrics.time(Call::List, Some(scope));
        limits::scope(scope)?;
        if let Some(a) = after {
            limits::key(a)?;
        }
        limits::list_limit(limit)?;
        self.backend()?.list(scope, after, limit)
    }

    /// The greatest token the scope has accepted (0 = none).
    pub fn fence_of(&self, scope: &str) -> Result<u64> {
        Ok(self.status(scope)?.fence)
    }

    pub fn status(&self, scope: &str) -> Result<ScopeStatus> {
        let _timer = self.inner.metrics.time(Call::Status, Some(scope));
        limits::scope(scope)?;
        self.backend()?.status(scope)
    }

    /// Drops a scope that has no live lease and no entries, so that state
    /// does not grow forever. A scope created later starts above every token
    /// this one issued or accepted. Returns whether there was state to drop.
    pub fn retire(&self, scope: &str) -> Result<bool> {
        let _timer = self.inner.metrics.time(Call::Retire, Some(scope));
        limits::scope(scope)?;
        self.backend()?.retire(scope)
    }

    /// The owner's recovery of a scope wedged before the jump limit existed
    /// (docs/semantics.md, "Lowering a wedged scope"): a counter within the
    /// jump limit and a fence above it (pushed there by an old
    /// `fencing.check`, say) go down to `bound`, sealed, and the lease ends,
    /// so every token up to `bound` is stale and the next one issued is
    /// `bound + 1`. Refused with `INVALID_ARGUMENT` unless the scope is
    /// wedged, and unless `bound` is within the jump limit and at least every
    /// token the store saw handed out for it; on PostgreSQL only the
    /// schema's owner may run it. `bound` answers for the tokens from outside
    /// that the store cannot tell from the wedge. Not available on SQLite yet.
    pub fn lower_wedged(&self, scope: &str, bound: Token) -> Result<u64> {
        limits::scope(scope)?;
        self.backend()?.lower_wedged(scope, bound)
    }

    /// The failover step (docs/semantics.md, "Failover"), explicit. A
    /// PostgreSQL store takes it by itself on a promoted standby, after a
    /// point-in-time recovery and in another cluster; run it on a store
    /// restored from a backup any other way (a SQLite file, a PostgreSQL
    /// disk snapshot started in place) before anything else uses it. The store keeps a
    /// ceiling at or above every counter, fence and floor it ever held; the
    /// step moves every counter, fence and floor to at least
    /// [`FAILOVER_STEP`] above that ceiling, seals every fence and ends every
    /// lease, so that no token handed out before (by a history this copy may
    /// have lost, a retirement and the scopes created after it included) is
    /// accepted or issued again.
    ///
    /// Returns that base: every counter and fence now stands at or above it,
    /// and every token at or below it is stale. (Not a number of scopes.)
    ///
    /// [`FAILOVER_STEP`]: crate::FAILOVER_STEP
    pub fn failover(&self) -> Result<u64> {
        let base = self.backend()?.failover()?;
        tracing::warn!(
            target: "fencing",
            store = self.location(),
            base,
            "failover step taken: every lease ended, every token at or below the base is stale"
        );
        Ok(base)
    }

    /// Moves a manual clock forward (`?clock=manual` only).
    pub fn advance_clock(&self, by: Duration) -> Result<()> {
        self.backend()?.advance_clock(by)?;
        // The record's rate limit follows the store's manual clock.
        let _ = self.inner.limiter_clock.advance(by);
        Ok(())
    }

    // ----- observability -----

    /// The store's own record, for operators (docs/operations.md): the
    /// newest `limit` (1..=256) recorded rejections and last writes, of
    /// `scope` or of every scope, newest first. Never any values.
    pub fn events(&self, scope: Option<&str>, limit: usize) -> Result<Events> {
        let _timer = self.inner.metrics.time(Call::Events, scope);
        if let Some(s) = scope {
            limits::scope(s)?;
        }
        if !(1..=MAX_EVENTS_LIMIT).contains(&limit) {
            return Err(Error::invalid(format!(
                "events limit must be 1..={MAX_EVENTS_LIMIT}, got {limit}"
            )));
        }
        self.backend()?.events(scope, limit)
    }

    /// The store's record of rejections, live: a [`crate::RejectionWatch`]
    /// that yields each rejection recorded from now on (of `scope`, or of
    /// every scope), oldest first, as the store records it.
    pub fn watch_rejections(&self, scope: Option<&str>) -> Result<crate::RejectionWatch> {
        if let Some(s) = scope {
            limits::scope(s)?;
        }
        crate::RejectionWatch::new(self.clone(), scope)
    }

    /// Who holds the scope's lease, live (docs/semantics.md, "Watching a
    /// lease"): a [`crate::LeaseWatch`] that yields the lease as it is now,
    /// then after each change (taken, renewed, released, expired). The
    /// recipe of leader election: campaign with [`Store::lease_wait`],
    /// resign with a release, observe with this:
    ///
    /// ```
    /// # fn main() -> fencing::Result<()> {
    /// use std::time::Duration;
    /// let store = fencing::Store::open("memory:")?;
    /// // Observe: any process can tell who leads, and with which token.
    /// let mut observer = store.watch("leader")?;
    /// assert!(observer.next().unwrap()?.lease.is_none());
    /// // Campaign: wait in line for the lease (free here, so at once).
    /// let ttl = Duration::from_secs(10);
    /// let leader = store.lease_wait("leader", "node-a", ttl, Some(Duration::from_secs(60)), None)?;
    /// let seen = observer.next().unwrap()?.lease.unwrap();
    /// assert_eq!((seen.holder.as_str(), seen.token), ("node-a", leader.token()));
    /// // Lead: every write carries the token, so a deposed leader is refused.
    /// leader.put("config", b"v2")?;
    /// // Resign: the next candidate in line takes over.
    /// leader.release()?;
    /// assert!(observer.next().unwrap()?.lease.is_none());
    /// # Ok(()) }
    /// ```
    pub fn watch(&self, scope: &str) -> Result<crate::LeaseWatch> {
        crate::LeaseWatch::new(self.clone(), scope)
    }

    /// One cheap round trip that changes nothing, for health checks: `Ok`
    /// when the store answers and its schema is the one this build writes.
    /// `CLOSED` once closed; `BACKEND` (kind `refused`) when the schema is
    /// older (run `fencing migrate`) or newer than this build's, and the
    /// backend's usual errors when it cannot be reached. `memory:` answers
    /// while it is open.
    pub fn ping(&self) -> Result<()> {
        self.backend()?.ping()
    }

    /// This handle's counters, call durations and recent rejections (its
    /// clones share them); what other handles and processes did is not here.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.inner.metrics.snapshot()
    }

    /// [`Store::metrics`] as Prometheus text, labelled `store` with
    /// [`Store::location`] ([`prometheus_text`]).
    pub fn metrics_text(&self) -> String {
        prometheus_text(self.location(), &self.metrics())
    }

    /// Closes the store for every clone; later calls fail with `CLOSED`.
    pub fn close(&self) {
        if !self.inner.closed.swap(true, Ordering::AcqRel) {
            self.inner.backend.close();
        }
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    fn record_rejection(&self, error: &Error, scope: &str, key: Option<&str>, fence: &Fence) {
        if let Some(skipped) = self.note_rejection(error, scope, key, fence) {
            self.record_in_store(error.code(), scope, key, fence, skipped);
        }
    }

    /// A rejection logged and counted; `Some(skipped)` when the store takes
    /// a record of it too (`record_in_store`).
    fn note_rejection(
        &self,
        error: &Error,
        scope: &str,
        key: Option<&str>,
        fence: &Fence,
    ) -> Option<u64> {
        let metrics = &self.inner.metrics;
        let current = match error {
            Error::StaleToken { current, .. } => *current,
            Error::SequenceOutOfOrder { .. } => fence.token.get(),
            Error::VersionMismatch { .. } => {
                metrics.version_conflict();
                return None;
            }
            _ => return None,
        };
        // The one place every stale or out-of-order refusal passes: names
        // the scope, the tokens, the holder and the key, never a value. At
        // WARN as often as the store's record takes one (once a second per
        // scope): a stale worker retrying in a loop must not flood the log;
        // the rest at DEBUG, counted in the next warning's `suppressed`.
        let inner = &self.inner;
        let admitted = inner.limiter.admit(scope, inner.limiter_clock.now_ms());
        macro_rules! rejected {
            ($level:ident $(, $extra:ident = $value:expr)?) => {
                tracing::$level!(
                    target: "fencing",
                    code = error.code().as_str(),
                    scope,
                    presented = fence.token.get(),
                    current,
                    seq = fence.seq,
                    holder = fence.holder.as_deref(),
                    key,
                    $($extra = $value,)?
                    "fenced operation rejected"
                )
            };
        }
        match admitted {
            Some(suppressed) => rejected!(warn, suppressed = suppressed),
            None => rejected!(debug),
        }
        metrics.reject(Rejection {
            code: error.code(),
            scope: scope.to_owned(),
            key: key.map(str::to_owned),
            presented: fence.token,
            current,
            seq: fence.seq,
            holder: fence.holder.clone(),
            at: SystemTime::now(),
        });
        admitted
    }

    /// Best effort (and admitted by the rate limit, `skipped` since the
    /// last): a record the store cannot take is counted into the scope's
    /// next one, and never changes the answer.
    fn record_in_store(
        &self,
        code: ErrorCode,
        scope: &str,
        key: Option<&str>,
        fence: &Fence,
        skipped: u64,
    ) {
        let inner = &self.inner;
        let note = RejectionNote {
            code,
            scope,
            key,
            presented: fence.token,
            seq: fence.seq,
            holder: fence.holder.as_deref(),
            suppressed: skipped,
        };
        if self
            .backend()
            .and_then(|b| b.record_rejection(&note))
            .is_err()
        {
            inner.limiter.restore(scope, skipped);
        }
    }
}

/// A write's checks of its scope and fence (after its operations' own).
fn write_checks(scope: &str, fence: &Fence) -> Result<()> {
    limits::scope(scope)?;
    limits::fence(fence)
}

/// A read's checks of its scope, key and fence, if any.
fn get_checks(scope: &str, key: &str, fence: Option<&Fence>) -> Result<()> {
    limits::scope(scope)?;
    limits::key(key)?;
    fence.map_or(Ok(()), limits::fence)
}
