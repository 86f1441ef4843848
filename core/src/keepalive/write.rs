//! Writing through a held lease: the guard supplies its own scope and
//! token, so a write cannot name one scope and present another's token
//! (docs/semantics.md, "Writing through a held lease").

use super::LeaseGuard;
use crate::error::Result;
use crate::store::Store;
use crate::types::{Entry, Fence, Op, Receipt};

/// One write (or checked read) through a held lease, made by
/// [`LeaseGuard::writer`] after its loss check: the store, the lease's
/// scope, and the fence of the lease as last renewed. Owned, so a face can
/// run it on another thread without holding the guard.
pub struct LeaseWriter {
    store: Store,
    scope: String,
    fence: Fence,
}

impl LeaseWriter {
    pub fn scope(&self) -> &str {
        &self.scope
    }

    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// [`Store::put`] in the lease's scope with the lease's token.
    pub fn put(&self, key: &str, value: &[u8]) -> Result<Receipt> {
        self.store.put(&self.scope, key, value, &self.fence)
    }

    /// [`Store::delete`] in the lease's scope with the lease's token.
    pub fn delete(&self, key: &str) -> Result<Receipt> {
        self.store.delete(&self.scope, key, &self.fence)
    }

    /// [`Store::execute`]: one operation with its conditions.
    pub fn execute(&self, op: Op) -> Result<Receipt> {
        self.store.execute(&self.scope, &self.fence, op)
    }

    /// [`Store::apply`]: all or nothing.
    pub fn apply(&self, ops: Vec<Op>) -> Result<Vec<Receipt>> {
        self.store.apply(&self.scope, &self.fence, ops)
    }

    /// [`Store::claim`]: raises the scope's fence to the lease's token.
    pub fn claim(&self) -> Result<()> {
        self.store.claim(&self.scope, &self.fence)
    }

    /// [`Store::get`] checked with the lease's fence: `STALE_TOKEN` once a
    /// newer token was accepted in the scope.
    pub fn get(&self, key: &str) -> Result<Option<Entry>> {
        self.store.get(&self.scope, key, Some(&self.fence))
    }
}

impl LeaseGuard {
    /// The writer for one call through the lease, or the loss the
    /// keep-alive already knows (then nothing is to be written: the guard
    /// no longer vouches for the lease, and the store would reject the
    /// token or soon will).
    pub fn writer(&self) -> Result<LeaseWriter> {
        self.check()?;
        let lease = self.lease();
        Ok(LeaseWriter {
            store: self.store.clone(),
            fence: Fence::new(lease.token).with_holder(lease.holder),
            scope: lease.scope,
        })
    }

    /// [`Store::put`] in the lease's scope with the lease's token.
    pub fn put(&self, key: &str, value: &[u8]) -> Result<Receipt> {
        self.writer()?.put(key, value)
    }

    /// [`Store::delete`] in the lease's scope with the lease's token.
    pub fn delete(&self, key: &str) -> Result<Receipt> {
        self.writer()?.delete(key)
    }

    /// [`Store::execute`] (one operation with its conditions) through the lease.
    pub fn execute(&self, op: Op) -> Result<Receipt> {
        self.writer()?.execute(op)
    }

    /// [`Store::apply`] (all or nothing) through the lease.
    pub fn apply(&self, ops: Vec<Op>) -> Result<Vec<Receipt>> {
        self.writer()?.apply(ops)
    }

    /// [`Store::claim`]: raises the scope's fence to the lease's token.
    pub fn claim(&self) -> Result<()> {
        self.writer()?.claim()
    }

    /// [`Store::get`] checked with the lease's fence: `STALE_TOKEN` once a
    /// newer token was accepted in the scope.
    pub fn get(&self, key: &str) -> Result<Option<Entry>> {
        self.writer()?.get(key)
    }
}
