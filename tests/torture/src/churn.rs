//! Scope churn: a few names issued tokens (`next_token`, `acquire`), retired
//! and issued tokens again, back to back, so that a retire races the
//! re-creation of the same name (docs/semantics.md, "Retiring scopes").
//! These scopes never hold entries: a retire is refused only while a lease
//! is live, and the checker sees every life of every name. One call in
//! eight is a jump (`advance_counter`, or a claim with an outside token), so
//! that retires and re-creations also race counters and fences moved far
//! past the next token, and jumps over the limit (docs/semantics.md,
//! "Failover").

use std::collections::HashMap;
use std::time::{Duration, Instant};

use fencing::Fence;
use fencing_torture::history::{Call, OpKind, Returned};

use super::{jump_from, token, Rng, Session};

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
    // The greatest token seen per scope (issued, or a jump that held).
    let mut seen: HashMap<String, u64> = HashMap::new();
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
        let last = seen.entry(scope.clone()).or_default();
        // One call in eight moves the counter or fence by a jump.
        if rng.below(8) == 0 {
            jump(s, at, last, rng);
            continue;
        }
        match rng.below(10) {
            0..=4 => {
                if let Ok(t) = s.call(
                    OpKind::NextToken,
                    at,
                    |st, c| st.next_token(&c.scope),
                    |t| issued(t.get()),
                ) {
                    *last = (*last).max(t.get());
                }
            }
            5 => acquire_and_maybe_release(s, at, holder, short, last, rng),
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

/// A jump from the last token seen: `advance_counter`, or a claim with the
/// token as if it came from outside (a fence raised without a write, so the
/// scope stays free of entries and can still be retired).
fn jump(s: &mut Session, at: Call, last: &mut u64, rng: &mut Rng) {
    let v = jump_from(*last, rng);
    if rng.below(2) == 0 {
        if let Ok(counter) = s.call(
            OpKind::AdvanceCounter,
            Call {
                token: Some(v),
                ..at
            },
            |st, c| st.advance_counter(&c.scope, token(v)),
            |c| issued(*c),
        ) {
            *last = (*last).max(counter);
        }
    } else if s
        .call(
            OpKind::Claim,
            Call {
                token: Some(v),
                outside: true,
                ..at
            },
            |st, c| st.claim(&c.scope, &Fence::new(token(v))),
            |_| Returned::default(),
        )
        .is_ok()
    {
        *last = (*last).max(v);
    }
}

/// A lease that is mostly released at once, and otherwise left to expire
/// (a retire meanwhile is refused with `LEASE_HELD`).
fn acquire_and_maybe_release(
    s: &mut Session,
    at: Call,
    holder: &str,
    ttl: Duration,
    last: &mut u64,
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
    *last = (*last).max(lease.token.get());
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
