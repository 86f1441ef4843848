//! The end of a held lease: one verdict, and one rule for combining it with
//! the work's own outcome (docs/semantics.md, "Ending a held lease").

use crate::error::{Error, Result};
use crate::store::Store;
use crate::token::Token;
use crate::types::Lease;

/// How the work done under a lease ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkOutcome {
    Ok,
    Failed,
}

impl WorkOutcome {
    /// `Failed` when `failed`: the shape C and the scenario files use.
    pub fn from_failed(failed: bool) -> WorkOutcome {
        if failed {
            WorkOutcome::Failed
        } else {
            WorkOutcome::Ok
        }
    }
}

/// The verdict on a held lease, from [`crate::LeaseGuard::finish`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseEnd {
    /// `None`: held to the end and released.
    lost: Option<Error>,
    work: WorkOutcome,
}

impl LeaseEnd {
    /// `seen` is the keep-alive's loss, if any; `lease` the lease as last
    /// renewed.
    pub(crate) fn judge(
        store: &Store,
        seen: Option<Error>,
        lease: &Lease,
        work: WorkOutcome,
    ) -> LeaseEnd {
        let lost = match seen {
            // Known lost: the store is not asked to release it, only who
            // holds the scope now, when the keep-alive could not tell.
            Some(Error::LeaseLost { scope, current }) => Some(Error::LeaseLost {
                current: current.or_else(|| current_lease(store, &scope, lease)),
                scope,
            }),
            // CLOSED or a keep-alive that never started: the loss is final,
            // but a lease still live is released all the same.
            Some(other) => {
                let _ = store.release(&lease.scope, lease.token);
                Some(other)
            }
            None => match store.release(&lease.scope, lease.token) {
                Ok(true) => None,
                // Not current at the end: lost during the work, though the
                // keep-alive had not seen it yet.
                Ok(false) => Some(Error::LeaseLost {
                    scope: lease.scope.clone(),
                    current: current_lease(store, &lease.scope, lease),
                }),
                Err(e) => Some(e),
            },
        };
        LeaseEnd { lost, work }
    }

    /// A lease whose end could not be run: lost with `error`.
    pub(crate) fn failed(error: Error, work: WorkOutcome) -> LeaseEnd {
        LeaseEnd {
            lost: Some(error),
            work,
        }
    }

    /// Whether the lease was held to the end and released.
    pub fn is_released(&self) -> bool {
        self.lost.is_none()
    }

    /// `Ok` when released; else the loss: `LEASE_LOST` (naming the current
    /// lease when one is), `CLOSED`, or the backend's failure.
    pub fn verdict(&self) -> Result<()> {
        self.lost.clone().map_or(Ok(()), Err)
    }

    /// The loss, if the lease was lost.
    pub fn lost(&self) -> Option<&Error> {
        self.lost.as_ref()
    }

    pub fn work(&self) -> WorkOutcome {
        self.work
    }

    /// The same verdict for work that ended as `work`: for a face whose
    /// lease was ended early (an explicit release) before the work did.
    pub fn with_work(self, work: WorkOutcome) -> LeaseEnd {
        LeaseEnd { work, ..self }
    }

    /// The rule for "the work failed and the lease was lost": the loss wins,
    /// and the work's error is attached to it as its cause. True exactly
    /// then; when the lease was released the work's own outcome stands.
    pub fn attach_work_error(&self) -> bool {
        self.lost.is_some() && self.work == WorkOutcome::Failed
    }
}

/// The lease current on `scope` now, unless it is `own` (a lease this
/// holder may no longer vouch for is not "another holder").
fn current_lease(store: &Store, scope: &str, own: &Lease) -> Option<(Token, String)> {
    let now = store.status(scope).ok()?.lease?;
    if now.token == own.token {
        return None;
    }
    Some((now.token, now.holder))
}
