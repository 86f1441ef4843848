//! The one internal interface between `Store` and where state lives.
//! Arguments arrive validated; each method is one atomic step.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use crate::error::{BackendErrorKind, Error, Result};
use crate::events::{Events, RejectionNote};
use crate::token::Token;
use crate::types::{Entry, Fence, Lease, OpRef, Page, Receipt, ScopeStatus};

#[cfg(feature = "etcd")]
pub(crate) mod etcd;
pub(crate) mod memory;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql_text;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;
pub(crate) mod wakes;

/// Every SQL file of every SQL backend built, for the checks that hold of
/// them all.
#[cfg(all(test, any(feature = "sqlite", feature = "postgres")))]
fn sql_files() -> Vec<(&'static str, &'static str)> {
    #[allow(unused_mut)]
    let mut files = Vec::new();
    #[cfg(feature = "postgres")]
    files.extend(postgres::sql_files());
    #[cfg(feature = "sqlite")]
    files.extend(sqlite::sql_files());
    files
}

/// What a watch's read found ([`Backend::watch_read`]).
pub(crate) struct WatchRead {
    pub lease: Option<Lease>,
    /// The watch's registration with the store, where it has one.
    pub id: Option<u64>,
    /// Whether every change of the lease, from any handle, moves the watch's
    /// ticket while it is pushed; if not, the watch also asks again after a
    /// back-off.
    pub announced: bool,
}

/// A call a backend runs on the caller's task (the async store) instead of
/// a thread. It ends with `None` when it could not start (no connection
/// idle): nothing was sent, and the caller makes the blocking call instead.
pub(crate) type OnTask<'a, T> = Pin<Box<dyn Future<Output = Option<Result<T>>> + Send + 'a>>;

pub(crate) trait Backend: Send + Sync {
    fn next_token(&self, scope: &str) -> Result<Token>;
    /// Returns the counter after raising it.
    fn advance_counter(&self, scope: &str, floor: Token) -> Result<u64>;
    /// `called`, here and in `renew`, `release` and `write`: when the API
    /// call began. A backend on this process's clock (`memory:`) takes the
    /// store's time from it instead of reading the clock again (a read of
    /// this VM's clock is ~15 ns, a twentieth of an acquire and release).
    fn acquire(&self, scope: &str, holder: &str, ttl: Duration, called: Instant) -> Result<Lease>;
    fn renew(&self, scope: &str, token: Token, ttl: Duration, called: Instant) -> Result<Lease>;
    fn release(&self, scope: &str, token: Token, called: Instant) -> Result<bool>;
    /// A waiter's ticket for the scope, taken before the acquire that may
    /// find its lease held (`wakes`): every lease this handle ends, and
    /// every one it learns of, moves it.
    fn release_watch(&self, scope: &str) -> wakes::Ticket;
    /// A watch's ticket for the scope (`crate::lease_watch`), taken before
    /// its read: every change of the lease this handle makes or learns of
    /// (taken, renewed, ended) moves it.
    fn change_watch(&self, scope: &str) -> wakes::Ticket;
    /// A watch's read of the scope's lease. A backend that announces changes
    /// only to the watches it knows of (PostgreSQL) also keeps the watch's
    /// registration `id` alive, or makes a new one, and returns it.
    fn watch_read(&self, scope: &str, id: Option<u64>) -> Result<WatchRead>;
    /// A waiting caller's attempt (`crate::waiting`): the lease if it has
    /// ended and no live place earlier than `place` is queued; else the
    /// caller's place, kept (its deadline moved on when due) or new.
    fn acquire_waiting(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        place: Option<u64>,
    ) -> Result<crate::waiting::Attempt>;
    /// A waiter that gave up leaves its place at once (best effort: a place
    /// left behind runs out by itself).
    fn leave_queue(&self, scope: &str, place: u64) -> Result<()>;
    /// Checks the fence once, then applies every operation or none.
    fn write(
        &self,
        scope: &str,
        fence: &Fence,
        ops: &[OpRef<'_>],
        called: Instant,
    ) -> Result<Vec<Receipt>>;
    /// [`Backend::write`] of one operation: a backend that can answer it
    /// without the batch's `Vec` does (an allocation is 2% of a put from
    /// Node on `memory:`).
    fn write_one(
        &self,
        scope: &str,
        fence: &Fence,
        op: &OpRef<'_>,
        called: Instant,
    ) -> Result<Receipt> {
        let receipts = self.write(scope, fence, std::slice::from_ref(op), called)?;
        receipts.first().copied().ok_or_else(|| {
            Error::backend(
                BackendErrorKind::Other,
                "a write of one operation gave no receipt",
            )
        })
    }
    /// [`Backend::write`] on the caller's task, where the backend can wait
    /// for its answer without a thread (PostgreSQL); `None` elsewhere.
    fn write_on_task<'a>(
        &'a self,
        _scope: &'a str,
        _fence: &'a Fence,
        _ops: &'a [OpRef<'a>],
    ) -> Option<OnTask<'a, Vec<Receipt>>> {
        None
    }
    fn claim(&self, scope: &str, fence: &Fence) -> Result<()>;
    fn get(&self, scope: &str, key: &str, fence: Option<&Fence>) -> Result<Option<Entry>>;
    /// [`Backend::get`] on the caller's task, as `write_on_task`.
    fn get_on_task<'a>(
        &'a self,
        _scope: &'a str,
        _key: &'a str,
        _fence: Option<&'a Fence>,
    ) -> Option<OnTask<'a, Option<Entry>>> {
        None
    }
    fn list(&self, scope: &str, after: Option<&str>, limit: usize) -> Result<Page>;
    fn status(&self, scope: &str) -> Result<ScopeStatus>;
    fn retire(&self, scope: &str) -> Result<bool>;
    /// The failover step, in one atomic step: `rules::failover_base` of the
    /// store's ceiling, `ScopeCore::fail_over` to it on every scope, every
    /// floor raised to it, the ceiling raised over it; returns the base.
    fn failover(&self) -> Result<u64>;
    /// Adds a rejection to the store's record (docs/operations.md), or
    /// merges it into the scope's record of the last interval.
    fn record_rejection(&self, note: &RejectionNote<'_>) -> Result<()>;
    /// The newest `limit` recorded rejections and last writes (of one scope,
    /// or of all).
    fn events(&self, scope: Option<&str>, limit: usize) -> Result<Events>;
    fn advance_clock(&self, by: Duration) -> Result<()>;
    /// One cheap round trip that changes nothing: `Ok` when the store
    /// answers and its schema is the one this build writes.
    fn ping(&self) -> Result<()>;
    /// The owner's recovery of a wedged scope (`rules::lowered_wedge`):
    /// counter and fence down to `bound`, sealed, the lease ended. A backend
    /// that has no such recovery yet refuses.
    fn lower_wedged(&self, scope: &str, bound: Token) -> Result<u64> {
        let _ = (scope, bound);
        Err(Error::invalid(
            "lowering a wedged scope is not available on this backend (docs/semantics.md, \
             \"Lowering a wedged scope\")",
        ))
    }
    /// What a caller's own etcd transaction compares and puts so that it
    /// commits only while `fence` passes the scope's fence, raising it
    /// (`crate::EtcdCheck`). Only an etcd store has it.
    #[cfg(feature = "etcd")]
    fn etcd_check(&self, scope: &str, fence: &Fence) -> Result<crate::EtcdCheck> {
        let _ = (scope, fence);
        Err(Error::invalid(
            "etcd_check: only an etcd:// store fences etcd keys (docs/etcd.md, \"Fence your own \
             etcd keys\")",
        ))
    }
    fn close(&self) {}
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::error::ErrorCode;
    use crate::rules::Mode;

    /// Every backend but PostgreSQL (whose `record_rejection` is tested in
    /// tests/events.rs): a rejection of a token the fence would accept is
    /// not recorded, one it would reject is (`rules::recordable`).
    #[test]
    fn a_token_the_fence_accepts_is_never_recorded_as_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let backends: Vec<Box<dyn Backend>> = vec![
            Box::new(memory::Memory::new(Clock::manual(), Mode::default())),
            Box::new(
                sqlite::Sqlite::open(
                    &dir.path().join("s.db"),
                    crate::url::Synchronous::Normal,
                    Duration::from_secs(5),
                    Clock::manual(),
                    Mode::default(),
                )
                .unwrap(),
            ),
        ];
        for backend in backends {
            let token = |t| Token::new(t).unwrap();
            backend.claim("s", &Fence::new(token(5))).unwrap();
            let note = |presented| RejectionNote {
                code: ErrorCode::StaleToken,
                scope: "s",
                key: None,
                presented: token(presented),
                seq: None,
                holder: None,
                suppressed: 0,
            };
            backend.record_rejection(&note(6)).unwrap();
            assert!(backend.events(None, 10).unwrap().rejections.is_empty());
            backend.record_rejection(&note(4)).unwrap();
            let recorded = backend.events(None, 10).unwrap().rejections;
            assert_eq!(recorded.len(), 1);
            assert_eq!((recorded[0].presented, recorded[0].current), (token(4), 5));
        }
    }
}
