//! The async face for Rust: [`Store`] has the operations, names and
//! arguments of [`crate::Store`], each `async`. Inside a tokio runtime a
//! call runs on the runtime's blocking pool, so the executor's threads never
//! wait for a lock, a file or the network; under any other executor (or
//! none) it runs in place, blocking its caller. On PostgreSQL the writes and
//! reads run on the calling task itself when a connection the backend's
//! runtime watches is idle (docs/postgres.md, "Async Rust"). Cheap to clone, usable from many tasks
//! at once. Every backend works through it.
//!
//!
//! **Cancelling** (dropping a future: `tokio::time::timeout`, a lost
//! `select!` branch): a call that takes a lease (`acquire`, `acquire_wait`,
//! `lease`) leaves none behind: a wait stops within 20 ms and sends no
//! further acquire, and a lease that arrived anyway is released at once. A
//! `RejectionWatch::next` or `LeaseWatch::next` stops its wait and loses no
//! item. Dropping any other call is like losing its answer: its write may or
//! may not have happened (read to find out). On the blocking pool it runs to
//! its end; on the calling task (PostgreSQL) it stops, and its connection
//! is dropped with it.
//! docs/semantics.md, "Giving up a call".
//!
//! ```no_run
//! # async fn demo() -> fencing::Result<()> {
//! use std::time::Duration;
//! use fencing::aio;
//!
//! let store = aio::Store::open("sqlite:fencing.db").await?;
//! let guard = store.lease("report:7", "worker-a", Duration::from_secs(30)).await?;
//! guard.put("body", b"the report").await?; // the lease's scope and token
//! guard.check()?; // or race the work against `guard.lost()`
//! guard.release().await?;
//! # Ok(()) }
//! ```

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::{oneshot, watch};

use crate::error::{BackendErrorKind, Error, Result};
use crate::events::RecordedRejection;
use crate::keepalive::{LeaseEnd, WorkOutcome};
use crate::metrics::{Call, MetricsSnapshot};
use crate::token::Token;
use crate::types::{Entry, Fence, Lease, Op, OpRef, Page, Receipt, ScopeStatus};

/// Runs a blocking call off the executor when there is a tokio runtime.
pub(crate) async fn off_executor<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T> {
    match Handle::try_current() {
        Ok(runtime) => runtime.spawn_blocking(f).await.map_err(unfinished),
        Err(_) => Ok(in_place(f)),
    }
}

/// `f`, a blocking call of an async store run in place on this thread
/// (under an executor other than tokio's, or none), marked as such.
fn in_place<T>(f: impl FnOnce() -> T) -> T {
    let _marked = InPlace::enter();
    f()
}

thread_local! {
    /// Set while an async store's call runs in place, on a thread of an
    /// executor other than tokio's: what it connects must serve the
    /// store's calls on tasks too (PostgreSQL: `pool.rs`, `Driver`).
    static IN_PLACE: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread runs an async store's call in place.
#[cfg(feature = "postgres")]
pub(crate) fn runs_in_place() -> bool {
    IN_PLACE.try_with(Cell::get).unwrap_or(false)
}

/// [`IN_PLACE`] set until dropped, then as it was (also if the call panics).
struct InPlace(bool);

impl InPlace {
    fn enter() -> InPlace {
        InPlace(IN_PLACE.try_with(|c| c.replace(true)).unwrap_or(false))
    }
}

impl Drop for InPlace {
    fn drop(&mut self) {
        let _ = IN_PLACE.try_with(|c| c.set(self.0));
    }
}

/// What a call that takes a lease hands back when its caller gave up.
trait Taken: Send + 'static {
    /// Ends the lease at once instead of holding it to its TTL (on a
    /// blocking thread: a release is a call to the store).
    fn give_back(self, store: &crate::Store);
}

impl Taken for Lease {
    fn give_back(self, store: &crate::Store) {
        let _ = store.release(&self.scope, self.token);
    }
}

impl Taken for crate::LeaseGuard {
    fn give_back(self, _: &crate::Store) {
        // Dropping the guard stops its renewals and releases the lease.
        drop(self);
    }
}

/// Runs a call that takes a lease off the executor. A caller that gives up
/// (drops the future: a timeout, a lost `select!` branch) leaves no lease
/// behind: `call` is told through its `gave_up` argument (a waiting acquire
/// stops waiting), and a lease it took anyway is released at once instead
/// of being held to its TTL (docs/semantics.md, "Giving up a call").
async fn taking_lease<T: Taken>(
    store: crate::Store,
    call: impl FnOnce(&crate::Store, &dyn Fn() -> bool) -> Result<T> + Send + 'static,
) -> Result<T> {
    let Ok(runtime) = Handle::try_current() else {
        return in_place(|| call(&store, &|| false));
    };
    let (tx, rx) = oneshot::channel();
    let taker = store.clone();
    drop(runtime.spawn_blocking(move || {
        let taken = call(&taker, &|| tx.is_closed());
        if let Err(Ok(taken)) = tx.send(taken) {
            taken.give_back(&taker);
        }
    }));
    let mut answer = Answer { rx, store };
    // Dropped without an answer: the call panicked, perhaps after its write.
    (&mut answer.rx).await.map_err(unfinished)?
}

struct Answer<T: Taken> {
    rx: oneshot::Receiver<Result<T>>,
    store: crate::Store,
}

impl<T: Taken> Drop for Answer<T> {
    fn drop(&mut self) {
        // After `close`, a send fails and the sender gives the lease back; a
        // value sent before it is still here.
        self.rx.close();
        if let Ok(Ok(taken)) = self.rx.try_recv() {
            let store = self.store.clone();
            let give_back = move || taken.give_back(&store);
            match Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn_blocking(give_back)),
                Err(_) => in_place(give_back),
            }
        }
    }
}

/// A call off the executor that never answered: it may have panicked after
/// its write, so the outcome is unknown.
fn unfinished(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    let message = format!("fencing call did not finish: {e}");
    Error::backend_from(BackendErrorKind::OutcomeUnknown, message, e)
}

/// The callback a blocking guard calls on a loss, and the receiver that an
/// async guard's `lost()` waits on.
fn lost_channel() -> (crate::OnLost, watch::Receiver<Option<Error>>) {
    let (tx, rx) = watch::channel(None);
    let on_lost: crate::OnLost = Box::new(move |e: &Error| {
        let _ = tx.send(Some(e.clone()));
    });
    (on_lost, rx)
}

/// An async handle on a store; clones share it, as [`crate::Store`]'s do.
#[derive(Clone)]
pub struct Store {
    inner: crate::Store,
}

impl Store {
    /// Opens a store by URL, as [`crate::Store::open`] does.
    pub async fn open(url: &str) -> Result<Store> {
        let url = url.to_owned();
        let inner = off_executor(move || crate::Store::open(&url)).await??;
        Ok(Store { inner })
    }

    /// Opens the store that typed options describe, as
    /// [`crate::Store::open_with`] does.
    pub async fn open_with(options: impl Into<crate::StoreOptions>) -> Result<Store> {
        let options = options.into();
        let inner = off_executor(move || crate::Store::open_with(options)).await??;
        Ok(Store { inner })
    }

    /// Creates or upgrades the schema of the store `url` names, as
    /// [`crate::Store::migrate`] does, on the blocking pool.
    pub async fn migrate(url: &str) -> Result<()> {
        let url = url.to_owned();
        off_executor(move || crate::Store::migrate(&url)).await?
    }

    /// [`Store::migrate`] for typed options.
    pub async fn migrate_with(options: impl Into<crate::StoreOptions>) -> Result<()> {
        let options = options.into();
        off_executor(move || crate::Store::migrate_with(options)).await?
    }

    /// The blocking handle on the same store (shares state and metrics).
    pub fn blocking(&self) -> &crate::Store {
        &self.inner
    }

    // Each operation below is [`crate::Store`]'s of the same name, with its
    // arguments owned (they move to the blocking pool).

    pub async fn next_token(&self, scope: &str) -> Result<Token> {
        let (s, scope) = (self.inner.clone(), scope.to_owned());
        off_executor(move || s.next_token(&scope)).await?
    }

    pub async fn advance_counter(&self, scope: &str, floor: Token) -> Result<u64> {
        let (s, scope) = (self.inner.clone(), scope.to_owned());
        off_executor(move || s.advance_counter(&scope, floor)).await?
    }

    /// Dropping the future before it resolves releases the lease its call
    /// took, if it took one.
    pub async fn acquire(&self, scope: &str, holder: &str, ttl: Duration) -> Result<Lease> {
        let (scope, holder) = (scope.to_owned(), holder.to_owned());
        taking_lease(self.inner.clone(), move |s, _| {
            s.acquire(&scope, &holder, ttl)
        })
        .await
    }

    /// Waits on the blocking pool, holding one of its threads meanwhile.
    /// Dropping the future stops the wait within a few milliseconds, and a
    /// lease taken meanwhile is released at once.
    pub async fn acquire_wait(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        timeout: Duration,
    ) -> Result<Lease> {
        let (scope, holder) = (scope.to_owned(), holder.to_owned());
        taking_lease(self.inner.clone(), move |s, gave_up| {
            s.acquire_wait_unless(&scope, &holder, ttl, timeout, gave_up)
        })
        .await
    }

    pub async fn renew(&self, scope: &str, token: Token, ttl: Duration) -> Result<Lease> {
        let (s, scope) = (self.inner.clone(), scope.to_owned());
        off_executor(move || s.renew(&scope, token, ttl)).await?
    }

    pub async fn release(&self, scope: &str, token: Token) -> Result<bool> {
        let (s, scope) = (self.inner.clone(), scope.to_owned());
        off_executor(move || s.release(&scope, token)).await?
    }

    /// Acquires a lease and keeps it alive (docs/semantics.md, Keep-alive)
    /// until the guard is released or dropped. Dropping the future before
    /// it resolves releases the lease its call took, if it took one.
    pub async fn lease(&self, scope: &str, holder: &str, ttl: Duration) -> Result<LeaseGuard> {
        self.guarded(scope, holder, ttl, None).await
    }

    /// [`Store::lease`], waiting up to `timeout` for the lease as
    /// [`Store::acquire_wait`] does. Dropping the future gives up the wait
    /// within a few milliseconds, taking no lease (the blocking API's
    /// `lease_wait_unless`).
    pub async fn lease_wait(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        timeout: Duration,
    ) -> Result<LeaseGuard> {
        self.guarded(scope, holder, ttl, Some(timeout)).await
    }

    async fn guarded(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        timeout: Option<Duration>,
    ) -> Result<LeaseGuard> {
        let (scope, holder) = (scope.to_owned(), holder.to_owned());
        let (on_lost, lost) = lost_channel();
        let guard = taking_lease(self.inner.clone(), move |s, gave_up| match timeout {
            Some(timeout) => {
                s.lease_wait_unless(&scope, &holder, ttl, timeout, Some(on_lost), gave_up)
            }
            None => s.lease_wait(&scope, &holder, ttl, None, Some(on_lost)),
        })
        .await?;
        Ok(LeaseGuard {
            guard: Some(guard),
            lost,
        })
    }

    /// Keeps a lease already acquired alive until the guard is released or
    /// dropped, as [`crate::Store::keep_alive`] does (with its caveat: the
    /// guard counts the lease's `remaining` from now, so call this right
    /// after the acquire, or use [`Store::lease`]).
    pub fn keep_alive(&self, lease: Lease) -> LeaseGuard {
        let (on_lost, lost) = lost_channel();
        LeaseGuard {
            guard: Some(self.inner.keep_alive_with(lease, on_lost)),
            lost,
        }
    }

    // The arguments are borrowed, as in the blocking API. On PostgreSQL the
    // writes and reads below run on the calling task when a connection the
    // backend's runtime watches is idle (no thread of the blocking pool; dropping the future then drops
    // the connection, and the write may or may not have happened); else,
    // and on the other backends, on the blocking pool with copies of the
    // arguments.

    pub async fn put(
        &self,
        scope: &str,
        key: &str,
        value: &[u8],
        fence: &Fence,
    ) -> Result<Receipt> {
        let op = OpRef {
            key,
            value: Some(value),
            expected_version: None,
        };
        if let Some(done) = self
            .inner
            .write_one_on_task(Call::Put, scope, fence, op)
            .await
        {
            return done;
        }
        let (s, scope, key) = (self.inner.clone(), scope.to_owned(), key.to_owned());
        let (value, fence) = (value.to_vec(), fence.clone());
        off_executor(move || s.put(&scope, &key, &value, &fence)).await?
    }

    pub async fn delete(&self, scope: &str, key: &str, fence: &Fence) -> Result<Receipt> {
        let op = OpRef {
            key,
            value: None,
            expected_version: None,
        };
        if let Some(done) = self
            .inner
            .write_one_on_task(Call::Delete, scope, fence, op)
            .await
        {
            return done;
        }
        let (s, scope, key, fence) = (
            self.inner.clone(),
            scope.to_owned(),
            key.to_owned(),
            fence.clone(),
        );
        off_executor(move || s.delete(&scope, &key, &fence)).await?
    }

    pub async fn execute(&self, scope: &str, fence: &Fence, op: Op) -> Result<Receipt> {
        if let Some(done) = self
            .inner
            .write_one_on_task(Call::of(&op.as_ref()), scope, fence, op.as_ref())
            .await
        {
            return done;
        }
        let (s, scope, fence) = (self.inner.clone(), scope.to_owned(), fence.clone());
        off_executor(move || s.execute(&scope, &fence, op)).await?
    }

    pub async fn apply(&self, scope: &str, fence: &Fence, ops: Vec<Op>) -> Result<Vec<Receipt>> {
        let refs: Vec<OpRef<'_>> = ops.iter().map(Op::as_ref).collect();
        if let Some(done) = self.inner.apply_on_task(scope, fence, &refs).await {
            return done;
        }
        drop(refs);
        let (s, scope, fence) = (self.inner.clone(), scope.to_owned(), fence.clone());
        off_executor(move || s.apply(&scope, &fence, ops)).await?
    }

    pub async fn claim(&self, scope: &str, fence: &Fence) -> Result<()> {
        let (s, scope, fence) = (self.inner.clone(), scope.to_owned(), fence.clone());
        off_executor(move || s.claim(&scope, &fence)).await?
    }

    pub async fn get(
        &self,
        scope: &str,
        key: &str,
        fence: Option<&Fence>,
    ) -> Result<Option<Entry>> {
        if let Some(done) = self.inner.get_on_task(scope, key, fence).await {
            return done;
        }
        let (s, scope, key) = (self.inner.clone(), scope.to_owned(), key.to_owned());
        let fence = fence.cloned();
        off_executor(move || s.get(&scope, &key, fence.as_ref())).await?
    }

    pub async fn list(&self, scope: &str, after: Option<&str>, limit: usize) -> Result<Page> {
        let (s, scope) = (self.inner.clone(), scope.to_owned());
        let after = after.map(str::to_owned);
        off_executor(move || s.list(&scope, after.as_deref(), limit)).await?
    }

    pub async fn fence_of(&self, scope: &str) -> Result<u64> {
        let (s, scope) = (self.inner.clone(), scope.to_owned());
        off_executor(move || s.fence_of(&scope)).await?
    }

    pub async fn status(&self, scope: &str) -> Result<ScopeStatus> {
        let (s, scope) = (self.inner.clone(), scope.to_owned());
        off_executor(move || s.status(&scope)).await?
    }

    pub async fn events(&self, scope: Option<&str>, limit: usize) -> Result<crate::Events> {
        let (s, scope) = (self.inner.clone(), scope.map(str::to_owned));
        off_executor(move || s.events(scope.as_deref(), limit)).await?
    }

    /// [`crate::Store::watch_rejections`]: each rejection recorded from now
    /// on, as a [`RejectionWatch`] (`next().await`, or a `Stream`).
    pub async fn watch_rejections(&self, scope: Option<&str>) -> Result<RejectionWatch> {
        let (s, scope) = (self.inner.clone(), scope.map(str::to_owned));
        let watch = off_executor(move || s.watch_rejections(scope.as_deref())).await??;
        Ok(RejectionWatch {
            driven: Driven::new(watch),
        })
    }

    /// [`crate::Store::watch`]: the scope's lease as it is now, then after
    /// each change, as a [`LeaseWatch`] (`next().await`, or a `Stream`).
    pub async fn watch(&self, scope: &str) -> Result<LeaseWatch> {
        Ok(LeaseWatch {
            driven: Driven::new(self.inner.watch(scope)?),
        })
    }

    pub async fn retire(&self, scope: &str) -> Result<bool> {
        let (s, scope) = (self.inner.clone(), scope.to_owned());
        off_executor(move || s.retire(&scope)).await?
    }

    /// [`crate::Store::failover`]: the failover step, on the blocking pool.
    pub async fn failover(&self) -> Result<u64> {
        let s = self.inner.clone();
        off_executor(move || s.failover()).await?
    }

    /// [`crate::Store::etcd_check`]: what one's own etcd transaction must
    /// compare and put (docs/etcd.md, "Fence your own etcd keys").
    #[cfg(feature = "etcd")]
    pub async fn etcd_check(&self, scope: &str, fence: &Fence) -> Result<crate::EtcdCheck> {
        let (s, scope, fence) = (self.inner.clone(), scope.to_owned(), fence.clone());
        off_executor(move || s.etcd_check(&scope, &fence)).await?
    }

    pub async fn advance_clock(&self, by: Duration) -> Result<()> {
        let s = self.inner.clone();
        off_executor(move || s.advance_clock(by)).await?
    }

    /// [`crate::Store::ping`].
    pub async fn ping(&self) -> Result<()> {
        let s = self.inner.clone();
        off_executor(move || s.ping()).await?
    }

    pub fn metrics(&self) -> MetricsSnapshot {
        self.inner.metrics()
    }

    pub fn metrics_text(&self) -> String {
        self.inner.metrics_text()
    }

    pub async fn close(&self) {
        let s = self.inner.clone();
        let _ = off_executor(move || s.close()).await;
    }

    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}

/// A lease kept alive in the background, for async callers: `lost()` is a
/// future that resolves when the lease is lost, so work can race it.
pub struct LeaseGuard {
    /// `None` once released.
    guard: Option<crate::LeaseGuard>,
    lost: watch::Receiver<Option<Error>>,
}

impl LeaseGuard {
    fn inner(&self) -> &crate::LeaseGuard {
        // Only `release` (which consumes self) and `Drop` take it.
        self.guard
            .as_ref()
            .expect("a live async lease guard holds its guard")
    }

    pub fn lease(&self) -> Lease {
        self.inner().lease()
    }

    pub fn token(&self) -> Token {
        self.inner().token()
    }

    pub fn is_lost(&self) -> bool {
        self.inner().is_lost()
    }

    /// `Ok` while the lease is held; the loss after ([`crate::LeaseGuard::check`]).
    pub fn check(&self) -> Result<()> {
        self.inner().check()
    }

    // Writes through the lease ([`crate::LeaseGuard::put`] and the rest):
    // the lease's own scope and token, or the loss already known, with
    // nothing written; the call runs on the blocking pool.

    pub async fn put(&self, key: &str, value: &[u8]) -> Result<Receipt> {
        let (t, key, value) = (self.inner().writer()?, key.to_owned(), value.to_vec());
        off_executor(move || t.put(&key, &value)).await?
    }

    pub async fn delete(&self, key: &str) -> Result<Receipt> {
        let (t, key) = (self.inner().writer()?, key.to_owned());
        off_executor(move || t.delete(&key)).await?
    }

    pub async fn execute(&self, op: Op) -> Result<Receipt> {
        let t = self.inner().writer()?;
        off_executor(move || t.execute(op)).await?
    }

    pub async fn apply(&self, ops: Vec<Op>) -> Result<Vec<Receipt>> {
        let t = self.inner().writer()?;
        off_executor(move || t.apply(ops)).await?
    }

    pub async fn claim(&self) -> Result<()> {
        let t = self.inner().writer()?;
        off_executor(move || t.claim()).await?
    }

    /// A read checked with the lease's fence (`STALE_TOKEN` once a newer
    /// token was accepted in the scope).
    pub async fn get(&self, key: &str) -> Result<Option<Entry>> {
        let (t, key) = (self.inner().writer()?, key.to_owned());
        off_executor(move || t.get(&key)).await?
    }

    /// Resolves with the loss once the lease is lost (at once if it is).
    pub async fn lost(&self) -> Error {
        let mut rx = self.lost.clone();
        loop {
            if let Some(e) = self.inner().lost() {
                return e;
            }
            if let Some(e) = rx.borrow_and_update().clone() {
                return e;
            }
            if rx.changed().await.is_err() {
                // The guard's callback is gone: only a check can tell now.
                return self.inner().lost().unwrap_or(Error::Closed);
            }
        }
    }

    /// Ends the held lease with one verdict ([`crate::LeaseGuard::finish`],
    /// docs/semantics.md, "Ending a held lease"); the release runs on the
    /// blocking pool.
    pub async fn finish(mut self, work: WorkOutcome) -> LeaseEnd {
        let guard = self
            .guard
            .take()
            .expect("a live async lease guard holds its guard");
        match off_executor(move || guard.finish(work)).await {
            Ok(end) => end,
            // The blocking pool did not run it (a runtime shutting down).
            Err(e) => LeaseEnd::failed(e, work),
        }
    }

    /// Stops renewing and releases the lease; whether it was still current.
    pub async fn release(mut self) -> Result<bool> {
        match self.guard.take() {
            Some(guard) => off_executor(move || guard.release()).await?,
            None => Ok(false),
        }
    }
}

impl Drop for LeaseGuard {
    /// The release call goes to the blocking pool when there is a runtime,
    /// so dropping a guard never blocks an executor thread.
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            match Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn_blocking(move || drop(guard))),
                Err(_) => in_place(|| drop(guard)),
            }
        }
    }
}

type NextItem<T> = Pin<Box<dyn Future<Output = Result<T>> + Send>>;

/// A blocking watch as a stream: dropping a `next` future (a timeout, a
/// lost `select!` branch) stops its wait within 20 ms and loses no item:
/// the wait off the executor only waits, and the item is taken here, by the
/// future that returns it.
struct Driven<W: crate::Watch> {
    inner: Arc<Mutex<W>>,
    in_flight: Option<NextItem<W::Item>>,
    ended: bool,
}

impl<W: crate::Watch> Driven<W> {
    fn new(watch: W) -> Self {
        Driven {
            inner: Arc::new(Mutex::new(watch)),
            in_flight: None,
            ended: false,
        }
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<W::Item>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let inner = &self.inner;
        let next = self
            .in_flight
            .get_or_insert_with(|| Box::pin(next_of(inner.clone())));
        let item = std::task::ready!(next.as_mut().poll(cx));
        self.in_flight = None;
        self.ended = item.is_err();
        Poll::Ready(Some(item))
    }
}

async fn next_of<W: crate::Watch>(inner: Arc<Mutex<W>>) -> Result<W::Item> {
    let pop = |w: &Mutex<W>| w.lock().unwrap_or_else(PoisonError::into_inner).pop();
    loop {
        if let Some(item) = pop(&inner) {
            return Ok(item);
        }
        let shared = inner.clone();
        let Ok(runtime) = Handle::try_current() else {
            let mut w = shared.lock().unwrap_or_else(PoisonError::into_inner);
            in_place(|| w.wait_unless(Duration::MAX, &|| false))?;
            continue;
        };
        let (tx, rx) = oneshot::channel();
        drop(runtime.spawn_blocking(move || {
            let mut w = shared.lock().unwrap_or_else(PoisonError::into_inner);
            let waited = w.wait_unless(Duration::MAX, &|| tx.is_closed());
            let _ = tx.send(waited);
        }));
        rx.await.map_err(unfinished)??;
    }
}

/// [`crate::RejectionWatch`] for async code: `watch.next().await`, or a
/// [`futures_core::Stream`] of the same items that ends after an error.
/// Dropping a `next()` future (a timeout, a lost `select!` branch) stops
/// its wait within 20 ms and loses no rejection.
pub struct RejectionWatch {
    driven: Driven<crate::RejectionWatch>,
}

impl RejectionWatch {
    /// The next rejection recorded, oldest first, waiting as long as it takes.
    pub async fn next(&mut self) -> Result<RecordedRejection> {
        next_of(self.driven.inner.clone()).await
    }
}

impl futures_core::Stream for RejectionWatch {
    type Item = Result<RecordedRejection>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.driven.poll_next(cx)
    }
}

/// [`crate::LeaseWatch`] for async code: `watch.next().await`, or a
/// [`futures_core::Stream`] of the same items that ends after an error.
/// Dropping a `next()` future stops its wait within 20 ms and loses no
/// change.
pub struct LeaseWatch {
    driven: Driven<crate::LeaseWatch>,
}

impl LeaseWatch {
    /// The lease after the next change (the first call: as it is now),
    /// waiting as long as it takes.
    pub async fn next(&mut self) -> Result<crate::Holding> {
        next_of(self.driven.inner.clone()).await
    }
}

impl futures_core::Stream for LeaseWatch {
    type Item = Result<crate::Holding>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.driven.poll_next(cx)
    }
}
