//! Writing through a held lease: the guard supplies its own scope and
//! token, so a write cannot name one scope and present another's token
//! (docs/semantics.md, "Writing through a held lease").

use super::LeaseGuard;
use crate::error::Result;
use crate::store::Store;
use crate::types::{Entry, Fence, Op, Receipt};

/// What one write through a guard presents: the store, the lease's scope,
/// and the fence of the lease as last renewed.
pub(crate) struct Through {
    pub store: Store,
    pub scope: String,
    pub fence: Fence,
}

impl LeaseGuard {
    /// The scope and fence a write presents, or the loss the keep-alive
    /// already knows (then nothing is written: the guard no longer vouches
    /// for the lease, and the store would reject the token or soon will).
    pub(crate) fn through(&self) -> Result<Through> {
        self.check()?;
        let lease = self.lease();
        Ok(Through {
            store: self.store.clone(),
            fence: Fence::new(lease.token).with_holder(lease.holder),
            scope: lease.scope,
        })
    }

    /// [`Store::put`] in the lease's scope with the lease's token.
    pub fn put(&self, key: &str, value: &[u8]) -> Result<Receipt> {
        let t = self.through()?;
        t.store.put(&t.scope, key, value, &t.fence)
    }

    /// [`Store::delete`] in the lease's scope with the lease's token.
    pub fn delete(&self, key: &str) -> Result<Receipt> {
        let t = self.through()?;
        t.store.delete(&t.scope, key, &t.fence)
    }

    /// [`Store::execute`] (one operation with its conditions) through the lease.
    pub fn execute(&self, op: Op) -> Result<Receipt> {
        let t = self.through()?;
        t.store.execute(&t.scope, &t.fence, op)
    }

    /// [`Store::apply`] (all or nothing) through the lease.
    pub fn apply(&self, ops: Vec<Op>) -> Result<Vec<Receipt>> {
        let t = self.through()?;
        t.store.apply(&t.scope, &t.fence, ops)
    }

    /// [`Store::claim`]: raises the scope's fence to the lease's token.
    pub fn claim(&self) -> Result<()> {
        let t = self.through()?;
        t.store.claim(&t.scope, &t.fence)
    }

    /// [`Store::get`] checked with the lease's fence: `STALE_TOKEN` once a
    /// newer token was accepted in the scope.
    pub fn get(&self, key: &str) -> Result<Option<Entry>> {
        let t = self.through()?;
        t.store.get(&t.scope, key, Some(&t.fence))
    }
}
