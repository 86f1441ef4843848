//! Scope churn: a few names issued tokens (`next_token`, `acquire`), retired
//! and issued tokens again, back to back, so that a retire races the
//! re-creation of the same name (docs/semantics.md, "Retiring scopes").
//! These scopes never hold entries: a retire is refused only while a lease
//! is live, and the checker sees every life of every name.

use std::time::{Duration, Instant};

use fencing_torture::history::{Call, OpKind, Returned};

use super::{Rng, Session};

pub(crate) fn run(
    s: &mut Session,
    scopes: &[String],
    holder: &str,
    ttl: Duration,
    deadline: Instant,
    rng: &mut Rng,
) {
    // Short leases: they end soon, so retires are refused only now and then.
    let short = (ttl / 25).max(Duration::from_millis(1));
    while Instant::now() < deadline && !s.done() {
        // A breath now and then leaves the lease workers their share of
        // the store (a SQLite writer waits for every other one).
        if rng.below(2) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let scope = &scopes[rng.below(scopes.len() as u64) as usize];
        let at = Call {
            scope: scope.clone(),
            ..Call::default()
        };
        match rng.below(10) {
            0..=4 => {
                let _ = s.call(
                    OpKind::NextToken,
                    at,
                    |st, c| st.next_token(&c.scope),
                    |t| issued(t.get()),
                );
            }
            5 => acquire_and_maybe_release(s, at, holder, short, rng),
            _ => {
                let _ = s.call(
                    OpKind::Retire,
                    at,
                    |st, c| st.retire(&c.scope),
                    |r| Returned {
                        retired: Some(*r),
                        ..Returned::default()
                    },
                );
            }
        }
    }
}

fn issued(token: u64) -> Returned {
    Returned {
        token: Some(token),
        ..Returned::default()
    }
}

/// A lease that is mostly released at once, and otherwise left to expire
/// (a retire meanwhile is refused with `LEASE_HELD`).
fn acquire_and_maybe_release(
    s: &mut Session,
    at: Call,
    holder: &str,
    ttl: Duration,
    rng: &mut Rng,
) {
    let Ok(lease) = s.call(
        OpKind::Acquire,
        at.clone(),
        |st, c| st.acquire(&c.scope, holder, ttl),
        |l| issued(l.token.get()),
    ) else {
        return;
    };
    if rng.below(4) != 0 {
        let t = lease.token;
        let _ = s.call(
            OpKind::Release,
            Call {
                token: Some(t.get()),
                ..at
            },
            |st, c| st.release(&c.scope, t),
            |r| Returned {
                released: Some(*r),
                ..Returned::default()
            },
        );
    }
}
