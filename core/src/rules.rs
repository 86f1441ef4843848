//! The semantics, as pure functions over one scope's state. Every backend
//! that keeps its state outside the database's own functions loads a
//! `ScopeCore`, runs these rules inside one atomic step, and writes it back,
//! so `memory:` and `sqlite:` cannot disagree.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::token::Token;
use crate::types::{Fence, Lease, OpRef, Receipt};

/// A lease as stored: times in milliseconds on the store's clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LeaseRecord {
    pub holder: String,
    pub token: Token,
    pub ttl_ms: u64,
    pub expires_at_ms: u64,
}

impl LeaseRecord {
    pub fn is_live(&self, now_ms: u64) -> bool {
        now_ms < self.expires_at_ms
    }

    pub fn to_lease(&self, scope: &str, now_ms: u64) -> Lease {
        Lease {
            remaining: Duration::from_millis(self.expires_at_ms.saturating_sub(now_ms)),
            scope: scope.to_owned(),
            holder: self.holder.clone(),
            token: self.token,
            ttl: Duration::from_millis(self.ttl_ms),
            expires_at: crate::events::at_ms(self.expires_at_ms),
        }
    }
}

/// How the fence treats a token equal to it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Mode {
    /// Acquire raises the fence to the new token (on by default:
    /// docs/semantics.md, "Leases").
    pub eager_fencing: bool,
    /// A token may write only once: after its first accepted write, the
    /// same token is stale.
    pub strict: bool,
    /// The store's jumps are unbounded (`jumps=unbounded`): its jump room
    /// becomes the whole token space, from this open on (docs/semantics.md,
    /// "Failover").
    pub unbounded_jumps: bool,
}

/// Counter, fence and lease of one scope.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ScopeCore {
    /// Greatest token issued (0 = none).
    pub counter: u64,
    /// Greatest token accepted (0 = none).
    pub fence: u64,
    /// When set, a token equal to the fence is stale too: the fence's token
    /// has spent its write (strict mode), or the fence is a retirement floor
    /// that tokens from before the retirement must never pass.
    pub sealed: bool,
    /// The last accepted seq of the fence's token.
    pub last_seq: Option<u64>,
    pub lease: Option<LeaseRecord>,
    /// The greatest store time used for this scope: the scope's time never
    /// goes back, so a clock stepped backwards cannot revive an expired lease.
    pub seen_ms: u64,
    /// Who made the last accepted write, for operators (never for safety).
    pub last_write: Option<WriteMark>,
}

/// The last accepted write of a scope: holder label, token, store time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WriteMark {
    pub holder: Option<String>,
    pub token: Token,
    pub at_ms: u64,
}

impl ScopeCore {
    /// A scope seen for the first time, after retirements raised the
    /// store-wide floor to `floor`.
    pub fn fresh(floor: u64) -> ScopeCore {
        ScopeCore {
            counter: floor,
            fence: floor,
            sealed: floor > 0,
            last_seq: None,
            lease: None,
            seen_ms: 0,
            last_write: None,
        }
    }

    /// The scope's time: the store's clock, or the greatest time already
    /// used for this scope if the clock is behind it.
    pub fn time(&self, clock_ms: u64) -> u64 {
        clock_ms.max(self.seen_ms)
    }

    /// [`ScopeCore::time`], remembered for the scope's later operations.
    fn observe(&mut self, clock_ms: u64) -> u64 {
        self.seen_ms = self.time(clock_ms);
        self.seen_ms
    }

    /// Issues a token above every token issued and every token accepted:
    /// a fence raised by a token from outside the counter (a first write
    /// with any valid token) must not leave the next holder stale.
    pub fn next_token(&mut self) -> Result<Token> {
        let token = Token::after(self.counter.max(self.fence))?;
        self.counter = token.get();
        Ok(token)
    }

    /// Raises the counter to at least `floor`; returns the counter.
    pub fn advance_counter(&mut self, floor: Token) -> u64 {
        self.counter = self.counter.max(floor.get());
        self.counter
    }

    /// The live lease at the store's `clock_ms` (on the scope's time).
    pub fn live_lease(&self, clock_ms: u64) -> Option<&LeaseRecord> {
        let now_ms = self.time(clock_ms);
        self.lease.as_ref().filter(|l| l.is_live(now_ms))
    }

    /// The live lease as callers see it, its remaining time on the scope's time.
    pub fn lease_at(&self, scope: &str, clock_ms: u64) -> Option<Lease> {
        let now_ms = self.time(clock_ms);
        self.live_lease(now_ms).map(|l| l.to_lease(scope, now_ms))
    }

    fn held_error(&self, scope: &str, clock_ms: u64) -> Option<Error> {
        let now_ms = self.time(clock_ms);
        self.live_lease(now_ms).map(|l| Error::LeaseHeld {
            scope: scope.to_owned(),
            holder: l.holder.clone(),
            token: l.token,
            remaining: Duration::from_millis(l.expires_at_ms - now_ms),
        })
    }

    pub fn acquire(
        &mut self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        clock_ms: u64,
        mode: Mode,
    ) -> Result<Lease> {
        let now_ms = self.observe(clock_ms);
        if let Some(held) = self.held_error(scope, now_ms) {
            return Err(held);
        }
        let token = self.next_token()?;
        let ttl_ms = ttl_ms(ttl);
        let record = LeaseRecord {
            holder: holder.to_owned(),
            token,
            ttl_ms,
            expires_at_ms: now_ms.saturating_add(ttl_ms),
        };
        let lease = record.to_lease(scope, now_ms);
        self.lease = Some(record);
        if mode.eager_fencing {
            self.raise_fence(token, None);
        }
        Ok(lease)
    }

    pub fn renew(
        &mut self,
        scope: &str,
        token: Token,
        ttl: Duration,
        clock_ms: u64,
    ) -> Result<Lease> {
        // Observed even when the renewal is refused: the store saw the
        // lease expire, and must not see it live again.
        let now_ms = self.observe(clock_ms);
        match self.lease.as_mut() {
            Some(l) if l.token == token && l.is_live(now_ms) => {
                l.ttl_ms = ttl_ms(ttl);
                l.expires_at_ms = now_ms.saturating_add(l.ttl_ms);
                Ok(l.to_lease(scope, now_ms))
            }
            _ => Err(Error::LeaseLost {
                scope: scope.to_owned(),
                current: self.live_lease(now_ms).map(|l| (l.token, l.holder.clone())),
            }),
        }
    }

    /// Ends the lease with `token` if it is still current.
    pub fn release(&mut self, token: Token, clock_ms: u64) -> bool {
        let now_ms = self.observe(clock_ms);
        let current = self.live_lease(now_ms).is_some_and(|l| l.token == token);
        if current {
            self.lease = None;
        }
        current
    }

    /// Check 2 (token against fence) and check 3 (seq) of docs/semantics.md,
    /// "The fenced store".
    pub fn check(&self, scope: &str, fence: &Fence) -> Result<()> {
        self.check_token(scope, fence.token)?;
        if fence.token.get() == self.fence {
            if let (Some(seq), Some(last)) = (fence.seq, self.last_seq) {
                if seq <= last {
                    return Err(Error::SequenceOutOfOrder {
                        presented: seq,
                        last,
                    });
                }
            }
        }
        Ok(())
    }

    /// Check 2 alone: what a read that presents a token must pass.
    pub fn check_token(&self, scope: &str, token: Token) -> Result<()> {
        let t = token.get();
        if t < self.fence || (t == self.fence && self.sealed) {
            return Err(Error::StaleToken {
                scope: scope.to_owned(),
                presented: token,
                current: self.fence,
            });
        }
        Ok(())
    }

    /// The effect of an accepted write (call after every check passed).
    pub fn accept_write(&mut self, fence: &Fence, mode: Mode) {
        self.fence = fence.token.get();
        self.last_seq = fence.seq;
        self.sealed = mode.strict;
    }

    /// Remembers who made the accepted write (call after `accept_write`);
    /// the holder's label is copied only when it changes.
    pub fn note_write(&mut self, fence: &Fence, clock_ms: u64) {
        let at_ms = self.time(clock_ms);
        match &mut self.last_write {
            // The same token and holder again: the time moves at most once
            // per LAST_WRITE_STEP_MS, so that a steady writer's commits
            // leave the scope's row alone (on SQLite a changed row is one
            // more page in the WAL, written and synced with every put).
            Some(w)
                if w.token == fence.token
                    && w.holder.as_deref() == fence.holder.as_deref()
                    && at_ms.saturating_sub(w.at_ms) < LAST_WRITE_STEP_MS => {}
            Some(w) if w.holder.as_deref() == fence.holder.as_deref() => {
                w.token = fence.token;
                w.at_ms = at_ms;
            }
            last => {
                *last = Some(WriteMark {
                    holder: fence.holder.clone(),
                    token: fence.token,
                    at_ms,
                })
            }
        }
    }

    /// Raises the fence without writing; a raise does not spend the token.
    pub fn claim(&mut self, scope: &str, fence: &Fence) -> Result<()> {
        self.check(scope, fence)?;
        self.raise_fence(fence.token, fence.seq);
        Ok(())
    }

    fn raise_fence(&mut self, token: Token, seq: Option<u64>) {
        if token.get() > self.fence {
            self.fence = token.get();
            self.sealed = false;
        }
        if token.get() == self.fence {
            self.last_seq = seq;
        }
    }

    /// After a failover to a copy that may have lost recent history (an
    /// asynchronous standby, a restored backup): every token the lost
    /// history could have issued or accepted is at or below `base`
    /// ([`failover_base`]), so counter and fence move there, the fence is
    /// sealed (its own token is stale too) and the lease ends
    /// (docs/semantics.md, "Failover").
    pub fn fail_over(&mut self, base: u64) {
        let top = self.counter.max(self.fence).max(base);
        self.counter = top;
        self.fence = top;
        self.sealed = true;
        self.last_seq = None;
        self.lease = None;
    }

    /// Lowers a wedged scope to `bound` ([`lowered_wedge`] said yes):
    /// counter and fence at it, sealed (every token up to it is stale), the
    /// lease ended, as after a failover step.
    pub fn lower_to(&mut self, bound: u64) {
        self.counter = bound;
        self.fence = bound;
        self.sealed = true;
        self.last_seq = None;
        self.lease = None;
    }

    /// The greatest counter or fence value this scope holds: what the
    /// store's ceiling must cover.
    pub fn top(&self) -> u64 {
        self.counter.max(self.fence)
    }

    /// Retirement is allowed only without a live lease and with no entries
    /// left; returns the floor that scopes created later must start from.
    pub fn retire_floor(&self, scope: &str, now_ms: u64, entries: u64) -> Result<u64> {
        if let Some(held) = self.held_error(scope, now_ms) {
            return Err(held);
        }
        if entries > 0 {
            return Err(Error::invalid(format!(
                "scope {scope:?} still has {entries} entries: delete them before retiring it"
            )));
        }
        Ok(self.counter.max(self.fence))
    }
}

/// How far the time of a scope's last write (docs/operations.md, "Last
/// writes") may lag when the same token and holder write again: it moves at
/// most once a second, on every backend (PostgreSQL's `write` function does
/// the same in SQL).
pub const LAST_WRITE_STEP_MS: u64 = 1000;

/// Whether a rejection of `presented` belongs in the store's record
/// (docs/operations.md): only a token the fence would still reject, so that
/// nobody can write a record of a rejection that never happened. Every
/// backend asks this (PostgreSQL's `record_rejection` in SQL).
pub(crate) fn recordable(presented: Token, fence: u64) -> bool {
    presented.get() <= fence
}

/// How far above the store's ceiling a failover moves every counter, fence
/// and floor: 2^40 tokens, more than the commits a lost history can hold
/// (docs/semantics.md, "Failover"), and room for 2^23 failovers.
pub const FAILOVER_STEP: u64 = 1 << 40;

/// How far the store's ceiling goes past the value that made it move: it
/// moves once per 2^32 tokens of the busiest scope, not with every token.
pub(crate) const CEILING_HEADROOM: u64 = 1 << 32;

/// The store's ceiling (docs/semantics.md, "Failover") once `value` is
/// issued or accepted in a store whose jump limit is `limit`: unchanged
/// while the greater of the two covers `value`, else `value` plus
/// [`CEILING_HEADROOM`], saturating at the maximum token. So no value within
/// the jump limit ever writes the ceiling: only issues counting past it do
/// (PostgreSQL's one `history` row stays out of every call's way).
pub(crate) fn ceiling_covering(ceiling: u64, limit: u64, value: u64) -> u64 {
    if value <= ceiling.max(limit) {
        ceiling
    } else {
        value.saturating_add(CEILING_HEADROOM).min(Token::MAX.get())
    }
}

/// How far past the latest failover step's base (0 before any) a counter
/// or fence may jump beyond its scope's next token: 2^48, room for tokens
/// from outside (a millisecond timestamp is below 2^41), and a bound the
/// next step can stay above whatever a lost history did.
pub(crate) const JUMP_ROOM: u64 = 1 << 48;

/// The greatest value a counter or fence may jump to in a store whose
/// latest failover step moved everything to `base` and whose jump room is
/// `room` ([`JUMP_ROOM`], or the maximum token in a store opened with
/// `jumps=unbounded`).
pub(crate) fn jump_limit(base: u64, room: u64) -> u64 {
    base.saturating_add(room).min(Token::MAX.get())
}

/// A value a caller presents (a write's, a claim's or a check's token, an
/// `advance_counter` floor) may move a counter or fence of `scope` (whose
/// greatest token is `top`) when it is at most `top` or within the jump
/// limit `limit`: above both, `INVALID_ARGUMENT`, nothing changed. Only the
/// store's own issues count past the limit (one past `top` each), so a value
/// above it that the store did not issue was there before the limit
/// (docs/semantics.md, "Failover" and "Lowering a wedged scope").
pub(crate) fn check_jump(scope: &str, top: u64, value: u64, limit: u64) -> Result<()> {
    if value > top && value > limit {
        return Err(Error::invalid(format!(
            "token {value} for scope {scope:?} is above the store's jump limit {limit}: a \
             token the store did not issue moves a counter or fence only up to it \
             (docs/semantics.md, \"Failover\")"
        )));
    }
    Ok(())
}

/// The owner's recovery of a scope wedged before the jump limit existed
/// (docs/semantics.md, "Lowering a wedged scope"): its counter and fence may
/// go down to `bound`, which the owner names, when
/// - the store's jumps are bounded (`unbounded`: every value is allowed, so
///   none is a wedge), and the scope's greater value is more than
///   [`FAILOVER_STEP`] above the jump limit `limit`: no caller can put it
///   above the limit now, and callers of earlier releases, which took a
///   presented token one past the greatest, could step a fence past it
///   only by fewer commits than that, each step a token they had accepted;
/// - its counter is within the limit: a counter past it was moved there by
///   a jump and may have issued tokens after it that the store did not
///   keep, so nothing proves a lower bound;
/// - `bound` is at most `limit` and at least the counter and every token
///   the store saw in use within the limit (`seen`: the lease's token, the
///   last write's, the entries' tokens, the record's presented and current
///   tokens). Values above the limit came from outside before it existed,
///   and the wedge is one of them: the store cannot tell an outside
///   issuer's token from it, so the owner's bound answers for those.
///
/// Returns the bound, which becomes counter and (sealed) fence.
pub(crate) fn lowered_wedge(
    scope: &str,
    core: &ScopeCore,
    seen: &[u64],
    limit: u64,
    unbounded: bool,
    bound: u64,
) -> Result<u64> {
    let top = core.top();
    if unbounded || top <= limit.saturating_add(FAILOVER_STEP) {
        return Err(Error::invalid(format!(
            "scope {scope:?} is not wedged: its counter {} and fence {} are within the jump \
             limit {limit}{}",
            core.counter,
            core.fence,
            if unbounded {
                " (jumps are unbounded)"
            } else {
                " or less than 2^40 above it, where callers could step one token at a time"
            }
        )));
    }
    if core.counter > limit {
        return Err(Error::invalid(format!(
            "scope {scope:?}: its counter {} jumped past the jump limit {limit}, and the tokens \
             it issued since are not recorded: nothing proves a lower bound",
            core.counter
        )));
    }
    let proven = seen
        .iter()
        .copied()
        .filter(|&t| t <= limit)
        .fold(core.counter, u64::max);
    if bound < proven || bound > limit {
        return Err(Error::invalid(format!(
            "bound {bound} for scope {scope:?} is outside {proven}..={limit}: not below a token \
             the store saw handed out, not above the jump limit"
        )));
    }
    Ok(bound)
}

/// Where a failover moves every counter, fence and floor of a store whose
/// ceiling is `ceiling` and whose jump limit is `limit`: 2^40 above the
/// greater of the two (saturating at the maximum token: a scope there fails
/// with TOKEN_EXHAUSTED rather than wrapping; so does every scope of a
/// store whose jumps are unbounded).
pub(crate) fn failover_base(ceiling: u64, limit: u64) -> u64 {
    ceiling
        .max(limit)
        .saturating_add(FAILOVER_STEP)
        .min(Token::MAX.get())
}

/// One failover step of a store whose ceiling is `ceiling` and whose jump
/// limit is `limit`: the step's base ([`failover_base`]) and the ceiling
/// that then covers it ([`ceiling_covering`]).
pub(crate) fn failover_step(ceiling: u64, limit: u64) -> (u64, u64) {
    let base = failover_base(ceiling, limit);
    (base, ceiling_covering(ceiling, limit, base))
}

/// The failover steps a PostgreSQL store takes by itself when it finds
/// itself on a later timeline of the cluster it recorded
/// (docs/semantics.md, "How many steps"): this many per timeline crossed,
/// less one. A promotion that crossed one timeline then takes 2, and a
/// history it lacks holds at most 3 per timeline (such a promotion and one
/// explicit step) and one explicit step more, so a copy always takes one
/// more step than the history it lacks.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) const STEPS_PER_TIMELINE: u64 = 3;

/// The most failover steps a store takes by itself, and what it takes where
/// it cannot bound the history it lacks: on PostgreSQL another cluster, an
/// earlier timeline or a schema made anew; on SQLite a file restored without
/// its store's sidecar (about 0.2% of the tokens: a lost history of up to
/// 20 promotions, each with an explicit step); past it, an operator who
/// knows of more lost steps runs `fencing failover` for each.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) const MAX_AUTOMATIC_STEPS: u64 = 64;

/// Retirement floors are kept per bucket of scope names
/// (docs/semantics.md, "Retiring scopes"), so that one retired scope
/// raises the start of 1/4096 of new names, not of all of them.
pub(crate) const FLOOR_BUCKETS: usize = 4096;

/// The floor bucket of a scope: the top 12 bits of the 32-bit FNV-1a hash
/// of its UTF-8 bytes. Stable across hosts, builds and backends, and simple
/// enough to compute in plain SQL: PostgreSQL's `floor_bucket` function and
/// SQLite's `fencing_check` trigger compute the same.
pub(crate) fn floor_bucket(scope: &str) -> usize {
    let hash = scope.bytes().fold(FNV32_OFFSET, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(FNV32_PRIME)
    });
    (hash >> (32 - FLOOR_BUCKETS.trailing_zeros())) as usize
}

/// The 32-bit FNV-1a parameters of `floor_bucket` (the SQL reads them too).
pub(crate) const FNV32_OFFSET: u32 = 0x811c_9dc5;
pub(crate) const FNV32_PRIME: u32 = 0x0100_0193;

pub(crate) fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

pub(crate) fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Check 4 for one operation against the entry's current version (0 when
/// missing): its receipt, or why it fails.
pub(crate) fn check_op(scope: &str, op: &OpRef<'_>, actual: u64, token: Token) -> Result<Receipt> {
    if let Some(expected) = op.expected_version {
        if expected != actual {
            return Err(Error::VersionMismatch { expected, actual });
        }
    }
    let version = match op.value {
        Some(_) => actual + 1,
        None if actual == 0 => {
            return Err(Error::NotFound {
                scope: scope.to_owned(),
                key: op.key.to_owned(),
            })
        }
        None => 0,
    };
    Ok(Receipt { version, token })
}

/// Check 4 for a batch: walks the operations in order against the current
/// versions (`version_of` answers 0 for a missing key) and returns the
/// receipts, or the first failure. Nothing is changed here; the caller
/// applies the receipts only when every operation passed.
pub(crate) fn plan_ops(
    scope: &str,
    ops: &[OpRef<'_>],
    token: Token,
    mut version_of: impl FnMut(&str) -> Result<u64>,
) -> Result<Vec<Receipt>> {
    // Later operations of a batch see the effect of earlier ones on the same key.
    let mut planned: HashMap<&str, u64> = HashMap::new();
    let mut receipts = Vec::with_capacity(ops.len());
    for op in ops {
        let actual = match planned.get(op.key) {
            Some(v) => *v,
            None => version_of(op.key)?,
        };
        let receipt = check_op(scope, op, actual, token)?;
        if ops.len() > 1 {
            planned.insert(op.key, receipt.version);
        }
        receipts.push(receipt);
    }
    Ok(receipts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn at(core: &ScopeCore) -> (u64, u64) {
        let w = core.last_write.as_ref().expect("a last write");
        (w.token.get(), w.at_ms)
    }

    #[test]
    fn a_wedged_scope_goes_down_only_to_a_bound_the_store_cannot_refute() {
        let limit = JUMP_ROOM;
        let max = Token::MAX.get();
        let wedged = ScopeCore {
            counter: 3,
            fence: max,
            ..ScopeCore::fresh(0)
        };
        let lower = |core: &ScopeCore, seen: &[u64], unbounded: bool, bound: u64| {
            lowered_wedge("s", core, seen, limit, unbounded, bound).map_err(|e| e.code())
        };
        // Not below the counter or a token seen in use within the limit;
        // tokens above the limit (the wedge's own) prove nothing.
        assert_eq!(lower(&wedged, &[7, max], false, 7), Ok(7));
        assert_eq!(
            lower(&wedged, &[7, max], false, 6),
            Err(ErrorCode::InvalidArgument)
        );
        assert_eq!(
            lower(&wedged, &[], false, 2),
            Err(ErrorCode::InvalidArgument)
        );
        assert_eq!(lower(&wedged, &[], false, limit), Ok(limit));
        assert_eq!(
            lower(&wedged, &[], false, limit + 1),
            Err(ErrorCode::InvalidArgument)
        );
        // Nothing to lower: within the limit, or less than 2^40 above it
        // (where earlier releases' callers could step), or jumps unbounded.
        for fence in [limit, limit + 3, limit + FAILOVER_STEP] {
            let fine = ScopeCore {
                counter: 3,
                fence,
                ..ScopeCore::fresh(0)
            };
            assert_eq!(lower(&fine, &[], false, 5), Err(ErrorCode::InvalidArgument));
        }
        let far = ScopeCore {
            counter: 3,
            fence: limit + FAILOVER_STEP + 1,
            ..ScopeCore::fresh(0)
        };
        assert_eq!(lower(&far, &[], false, 5), Ok(5));
        assert_eq!(
            lower(&wedged, &[], true, 5),
            Err(ErrorCode::InvalidArgument)
        );
        // A counter that jumped may have issued tokens nobody recorded.
        let jumped = ScopeCore {
            counter: limit + 10,
            fence: max,
            ..ScopeCore::fresh(0)
        };
        assert_eq!(
            lower(&jumped, &[], false, limit),
            Err(ErrorCode::InvalidArgument)
        );

        let mut core = wedged.clone();
        core.lower_to(7);
        assert_eq!((core.counter, core.fence, core.sealed), (7, 7, true));
        assert_eq!(core.next_token().unwrap().get(), 8);
    }

    #[test]
    fn a_repeat_writer_moves_the_last_write_time_at_most_once_a_step() {
        let mut core = ScopeCore::fresh(0);
        let t1 = Fence::new(Token::new(1).unwrap()).with_holder("a");
        core.note_write(&t1, 10_000);
        assert_eq!(at(&core), (1, 10_000));
        // The same token and holder within the step: the row stays as it was.
        core.note_write(&t1, 10_000 + LAST_WRITE_STEP_MS - 1);
        assert_eq!(at(&core), (1, 10_000));
        // A full step later it moves.
        core.note_write(&t1, 10_000 + LAST_WRITE_STEP_MS);
        assert_eq!(at(&core), (1, 10_000 + LAST_WRITE_STEP_MS));
        // A new token or another holder moves it at once.
        let t2 = Fence::new(Token::new(2).unwrap()).with_holder("a");
        core.note_write(&t2, 11_001);
        assert_eq!(at(&core), (2, 11_001));
        core.note_write(&Fence::new(Token::new(2).unwrap()).with_holder("b"), 11_002);
        assert_eq!(at(&core), (2, 11_002));
        assert_eq!(
            core.last_write.as_ref().unwrap().holder.as_deref(),
            Some("b")
        );
    }
}
