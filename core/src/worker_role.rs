//! The server's time limits for a worker role: a role that fences its own
//! tables with `fencing.check` inside its own transactions (docs/postgres.md,
//! "Lock waits"). Such a transaction holds the scope's row until it ends, so
//! one that idles stalls every acquire, renewal and write of that scope, and
//! the failover step when its check raised the store's ceiling. The
//! library's own sessions pin their limits (docs/postgres.md, "Session
//! settings"); a worker's sessions are the operator's, and these are the
//! limits `fencing migrate --worker-timeouts ROLE` sets on them.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::url;

/// What [`bound_worker_role`] sets, as role defaults (`ALTER ROLE ... SET`):
/// they apply to the role's sessions that start afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerTimeouts {
    /// `idle_in_transaction_session_timeout`: the server ends a session
    /// whose transaction idles longer, which releases the scope rows it
    /// holds. 10 s: two library call deadlines (`call_timeout_ms`, 5 s by
    /// default), so a stall outlives at most a couple of failed calls, and
    /// below a third of a 30 s lease, so a keep-alive renewal still finds
    /// the scope free before the lease runs out.
    pub idle_in_transaction: Duration,
    /// `lock_timeout`: a worker's check that waits longer for a scope's row
    /// fails instead of waiting forever (the server's default), holding the
    /// rows of its own earlier checks all the while. 4 s: what the library
    /// pins on its own sessions at the default deadline.
    pub lock: Duration,
}

impl WorkerTimeouts {
    pub const RECOMMENDED: WorkerTimeouts = WorkerTimeouts {
        idle_in_transaction: Duration::from_secs(10),
        lock: Duration::from_secs(4),
    };
}

/// Sets [`WorkerTimeouts::RECOMMENDED`] on `role` in the PostgreSQL server
/// `url` names (run it as a role that may `ALTER ROLE` it: a superuser, or
/// one with `CREATEROLE` and admin of it), and returns them. Other stores
/// have no roles: `INVALID_ARGUMENT`.
pub fn bound_worker_role(url: &str, role: &str) -> Result<WorkerTimeouts> {
    // A PostgreSQL name: quoted by the server (`%I`), so only its size matters.
    if role.is_empty() || role.len() > 63 || role.contains('\0') {
        return Err(Error::invalid(format!(
            "worker role {role:?}: a PostgreSQL role name is 1..=63 bytes without NUL"
        )));
    }
    // Parsed first, so that a bad URL is refused as everywhere else.
    #[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
    let options = url::parse(url)?;
    #[cfg(feature = "postgres")]
    if let url::StoreOptions::Postgres(pg) = options {
        let timeouts = WorkerTimeouts::RECOMMENDED;
        crate::backend::postgres::Postgres::bound_role(&pg.target, role, &timeouts)?;
        return Ok(timeouts);
    }
    Err(Error::invalid(
        "worker timeouts are PostgreSQL role settings: the URL names no PostgreSQL store",
    ))
}
