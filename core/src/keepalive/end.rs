//! The end of a held lease: one verdict, and one rule for combining it with
//! the work's own outcome (docs/semantics.md, "Ending a held lease").

use std::sync::mpsc;
use std::time::Instant;

use crate::error::{BackendErrorKind, Error, ErrorCode, Result};
use crate::store::{BackendKind, Store};
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
    /// renewed. Waits at most the store's call deadline from now for the
    /// release and the question of who holds the scope, whatever runs
    /// before them on the backend (a hung renewal, a busy pool).
    pub(crate) fn judge(
        store: &Store,
        seen: Option<Error>,
        lease: &Lease,
        work: WorkOutcome,
    ) -> LeaseEnd {
        let by = store.call_bound().map(|bound| Instant::now() + bound);
        let lost = match seen {
            // Known lost: the store is not asked to release it, only who
            // holds the scope now, when the keep-alive could not tell.
            Some(Error::LeaseLost {
                scope,
                current: Some(current),
            }) => Some(Error::LeaseLost {
                scope,
                current: Some(current),
            }),
            Some(Error::LeaseLost { scope, .. }) => Some(lost_to_current(store, &scope, lease, by)),
            // CLOSED or a keep-alive that never started: the loss is final,
            // but a lease still live is released all the same (not waited
            // for: it changes nothing in the verdict).
            Some(other) => {
                release_in_background(store, lease.clone());
                Some(other)
            }
            None => {
                let (scope, token) = (lease.scope.clone(), lease.token);
                match within(store, by, move |s| s.release(&scope, token)) {
                    Ok(true) => None,
                    // Not current at the end: lost during the work, though the
                    // keep-alive had not seen it yet.
                    Ok(false) => Some(lost_to_current(store, &lease.scope, lease, by)),
                    Err(e) => Some(e),
                }
            }
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

    /// What an explicit `release()` of a held lease answers in every face:
    /// true when it was held to the end, false when it was lost
    /// (`LEASE_LOST`, whether or not the store could tell who holds the
    /// scope now), and the error when it could not be released (`CLOSED`,
    /// the backend's failure).
    pub fn released(&self) -> Result<bool> {
        match &self.lost {
            None => Ok(true),
            Some(e) if e.code() == ErrorCode::LeaseLost => Ok(false),
            Some(e) => Err(e.clone()),
        }
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

/// `LEASE_LOST` naming the lease current on `scope` now, unless it is
/// `own` (a lease this holder may no longer vouch for is not "another
/// holder"). When the store cannot tell by `by` (its `status` failed or did
/// not answer), the loss says so instead of claiming the scope is free: a
/// `LEASE_LOST` with no details, whose message says who holds it now is
/// unknown, and why.
fn lost_to_current(store: &Store, scope: &str, own: &Lease, by: Option<Instant>) -> Error {
    let asked = scope.to_owned();
    match within(store, by, move |s| s.status(&asked)) {
        Ok(status) => Error::LeaseLost {
            scope: scope.to_owned(),
            current: status
                .lease
                .filter(|now| now.token != own.token)
                .map(|now| (now.token, now.holder)),
        },
        Err(why) => Error::Rejected {
            code: ErrorCode::LeaseLost,
            message: format!(
                "lease lost on {scope:?}: who holds it now is unknown (the store could not \
                 tell: {why})"
            ),
        },
    }
}

/// Runs one store call on a thread of its own and waits for it until `by`;
/// past it, the call goes on in the background and this is a `BACKEND`
/// failure whose outcome is unknown. Without a bound (`memory:`, whose
/// calls never wait on I/O) the call runs here.
fn within<T: Send + 'static>(
    store: &Store,
    by: Option<Instant>,
    call: impl FnOnce(&Store) -> Result<T> + Send + 'static,
) -> Result<T> {
    let Some(by) = by else {
        return call(store);
    };
    let (tx, rx) = mpsc::channel();
    let own = store.clone();
    std::thread::Builder::new()
        .name("fencing-end".into())
        .spawn(move || {
            let _ = tx.send(call(&own));
        })
        .map_err(|_| {
            Error::backend(
                BackendErrorKind::Other,
                "could not start a thread to end the held lease",
            )
        })?;
    let left = by.saturating_duration_since(Instant::now());
    match rx.recv_timeout(left) {
        Ok(answer) => answer,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(Error::backend(
            BackendErrorKind::OutcomeUnknown,
            format!(
                "ending the held lease: the store did not answer within its call deadline \
                 ({} ms); the release goes on in the background and its outcome is unknown",
                store.call_bound().unwrap_or_default().as_millis()
            ),
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(Error::backend(
            BackendErrorKind::Other,
            "ending the held lease: the call failed without an answer",
        )),
    }
}

/// Releases `lease` without waiting for the store: on a thread of its own,
/// bounded by the store's call deadline like any call, and counted in the
/// store's metrics (`releases`) when it ends the lease. On `memory:`, whose
/// calls never wait on I/O, the release runs here, so it has happened when
/// this returns. If no thread can start, nothing is sent: the lease ends
/// by its TTL.
pub(crate) fn release_in_background(store: &Store, lease: Lease) {
    if store.backend_kind() == BackendKind::Memory {
        let _ = store.release(&lease.scope, lease.token);
        return;
    }
    let store = store.clone();
    let _ = std::thread::Builder::new()
        .name("fencing-release".into())
        .spawn(move || {
            let _ = store.release(&lease.scope, lease.token);
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loss is a loss for an explicit release too, also when the store
    /// could not tell who holds the scope now (a `LEASE_LOST` without
    /// details): the faces' `release()` answers false instead of raising.
    #[test]
    fn release_answers_false_for_every_loss_and_fails_otherwise() {
        let end = |lost| LeaseEnd::failed(lost, WorkOutcome::Ok);
        let unknown = Error::Rejected {
            code: ErrorCode::LeaseLost,
            message: "lease lost on \"s\": who holds it now is unknown".into(),
        };
        assert_eq!(end(unknown).released(), Ok(false));
        let named = Error::LeaseLost {
            scope: "s".into(),
            current: None,
        };
        assert_eq!(end(named).released(), Ok(false));
        assert_eq!(end(Error::Closed).released(), Err(Error::Closed));
        let held = LeaseEnd {
            lost: None,
            work: WorkOutcome::Ok,
        };
        assert_eq!(held.released(), Ok(true));
    }
}
