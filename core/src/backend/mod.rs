//! The one internal interface between `Store` and where state lives.
//! Arguments arrive validated; each method is one atomic step.

use std::time::Duration;

use crate::error::Result;
use crate::events::{Events, RejectionNote};
use crate::token::Token;
use crate::types::{Entry, Fence, Lease, OpRef, Page, Receipt, ScopeStatus};

pub(crate) mod memory;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

pub(crate) trait Backend: Send + Sync {
    fn next_token(&self, scope: &str) -> Result<Token>;
    /// Returns the counter after raising it.
    fn advance_counter(&self, scope: &str, floor: Token) -> Result<u64>;
    fn acquire(&self, scope: &str, holder: &str, ttl: Duration) -> Result<Lease>;
    fn renew(&self, scope: &str, token: Token, ttl: Duration) -> Result<Lease>;
    fn release(&self, scope: &str, token: Token) -> Result<bool>;
    /// Blocks for at most `max`, returning early when the scope's lease may
    /// have ended. Must not miss a release that happens after the caller's
    /// failed acquire.
    fn wait_for_release(&self, scope: &str, max: Duration);
    /// Checks the fence once, then applies every operation or none.
    fn write(&self, scope: &str, fence: &Fence, ops: &[OpRef<'_>]) -> Result<Vec<Receipt>>;
    fn claim(&self, scope: &str, fence: &Fence) -> Result<()>;
    fn get(&self, scope: &str, key: &str, fence: Option<&Fence>) -> Result<Option<Entry>>;
    fn list(&self, scope: &str, after: Option<&str>, limit: usize) -> Result<Page>;
    fn status(&self, scope: &str) -> Result<ScopeStatus>;
    fn retire(&self, scope: &str) -> Result<bool>;
    /// `ScopeCore::fail_over` on every scope and every floor, in one step;
    /// returns the number of scopes moved.
    fn failover(&self) -> Result<u64>;
    /// Adds a rejection to the store's record (docs/operations.md), or
    /// merges it into the scope's record of the last interval.
    fn record_rejection(&self, note: &RejectionNote<'_>) -> Result<()>;
    /// The newest `limit` recorded rejections and last writes (of one scope,
    /// or of all).
    fn events(&self, scope: Option<&str>, limit: usize) -> Result<Events>;
    fn advance_clock(&self, by: Duration) -> Result<()>;
    fn close(&self) {}
}
