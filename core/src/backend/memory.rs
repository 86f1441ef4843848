//! `memory:`: state in this process, sharded by scope so that threads on
//! different scopes never wait for one lock.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::hash::BuildHasher;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::wakes::{Ticket, Wakes};
use super::{Backend, WatchRead};
use crate::clock::Clock;
use crate::error::{BackendErrorKind::Other, Error, Result};
use crate::events::{
    at_ms, evicted, Events, LastWrite, RecordedRejection, RejectionNote, RECORD_INTERVAL,
    REJECTION_LOG,
};
use crate::rules::{
    ceiling_covering, check_jump, check_op, failover_step, floor_bucket, jump_limit, lowered_wedge,
    plan_ops, recordable, Mode, ScopeCore, FLOOR_BUCKETS, JUMP_ROOM,
};
use crate::token::Token;
use crate::types::{Entry, Fence, Lease, OpRef, Page, Receipt, ScopeStatus};
use crate::waiting::{longest_sleep, place_life_ms, refresh_due, turn, Attempt, Turn};

const SHARDS: usize = 64;

/// Up to this many entries a scope keeps no ordered copy of its keys: a
/// million one-entry scopes would each carry a B-tree node and a second
/// copy of their key, memory that every lookup's cache misses pay for
/// (docs/performance.md, "Scale").
const SORTED_FROM: usize = 16;

/// Seeded per store, so that hostile scope and key names cannot aim at one
/// bucket; much cheaper than SipHash on short names.
type Hasher = foldhash::fast::RandomState;

/// A scope's or key's name as a map holds it: up to 24 bytes inside the
/// map's own slot, so that a lookup among a million scopes compares the
/// name without a second, dependent cache miss (docs/performance.md,
/// "Scale").
type Name = compact_str::CompactString;

struct StoredEntry {
    value: Vec<u8>,
    version: u64,
    token: Token,
}

#[derive(Default)]
struct Scope {
    core: ScopeCore,
    /// Found by hash: an overwrite costs one lookup and reuses the value's
    /// buffer.
    entries: HashMap<Name, StoredEntry, Hasher>,
    /// The same keys in byte order, for `list`, once the scope has held
    /// more than [`SORTED_FROM`] entries (then touched only when a key is
    /// created or deleted); a smaller scope's keys are sorted when listed.
    keys: Option<BTreeSet<String>>,
    /// The waiters' places (`crate::waiting`) and their deadlines.
    queue: BTreeMap<u64, u64>,
}

impl Scope {
    /// The earliest live place, after dropping the ones that ran out.
    fn head(&mut self, now: u64) -> Option<u64> {
        self.queue.retain(|_, until| *until > now);
        self.queue.keys().next().copied()
    }

    fn fresh(floor: u64) -> Scope {
        Scope {
            core: ScopeCore::fresh(floor),
            ..Scope::default()
        }
    }

    fn version_of(&self, key: &str) -> u64 {
        self.entries.get(key).map_or(0, |e| e.version)
    }

    /// One operation of an already-checked fence: the common case, with a
    /// single lookup for an overwrite.
    fn write_one(
        &mut self,
        scope: &str,
        fence: &Fence,
        op: &OpRef<'_>,
        mode: Mode,
        now_ms: u64,
    ) -> Result<Receipt> {
        let existing = self.entries.get_mut(op.key);
        let actual = existing.as_ref().map_or(0, |e| e.version);
        let receipt = check_op(scope, op, actual, fence.token)?;
        self.core.accept_write(fence, mode);
        self.core.note_write(fence, now_ms);
        if let (Some(e), Some(value)) = (existing, op.value) {
            e.value.clear();
            e.value.extend_from_slice(value);
            e.version = receipt.version;
            e.token = receipt.token;
            return Ok(receipt);
        }
        self.apply(op, receipt);
        Ok(receipt)
    }

    fn apply(&mut self, op: &OpRef<'_>, receipt: Receipt) {
        match op.value {
            Some(value) => match self.entries.get_mut(op.key) {
                Some(e) => {
                    e.value.clear();
                    e.value.extend_from_slice(value);
                    e.version = receipt.version;
                    e.token = receipt.token;
                }
                None => {
                    let stored = StoredEntry {
                        value: value.to_vec(),
                        version: receipt.version,
                        token: receipt.token,
                    };
                    self.entries.insert(Name::from(op.key), stored);
                    match &mut self.keys {
                        Some(keys) => {
                            keys.insert(op.key.to_owned());
                        }
                        None if self.entries.len() > SORTED_FROM => {
                            self.keys = Some(self.entries.keys().map(|k| k.to_string()).collect());
                        }
                        None => {}
                    }
                }
            },
            None => {
                self.entries.remove(op.key);
                if let Some(keys) = &mut self.keys {
                    keys.remove(op.key);
                }
            }
        }
    }

    /// Up to `take` keys after `after`, in byte order.
    fn keys_after(&self, after: Option<&str>, take: usize) -> Vec<String> {
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        if let Some(keys) = &self.keys {
            return keys
                .range::<str, _>((start, Bound::Unbounded))
                .take(take)
                .cloned()
                .collect();
        }
        let mut keys: Vec<&Name> = self
            .entries
            .keys()
            .filter(|k| after.is_none_or(|a| k.as_str() > a))
            .collect();
        keys.sort_unstable();
        keys.into_iter().take(take).map(|k| k.to_string()).collect()
    }
}

/// Aligned so that two shards never share a cache line.
#[derive(Default)]
#[repr(align(128))]
struct Shard {
    scopes: Mutex<HashMap<Name, Scope, Hasher>>,
}

pub(crate) struct Memory {
    shards: Box<[Shard]>,
    hasher: Hasher,
    /// Floors left by retired scopes, per bucket of names
    /// (`rules::floor_bucket`); scopes created later start at their bucket's.
    floors: Box<[AtomicU64]>,
    /// The store's ceiling (`rules::ceiling_covering`): at or above every
    /// counter, fence and floor. Raised under the lock of the shard whose
    /// scope moved, so the failover step, which holds every shard's lock,
    /// sees every value it must cover.
    ceiling: AtomicU64,
    /// Where the latest failover step moved everything (0 before any): the
    /// jump limit follows it (`rules::jump_limit`). Changed only while every
    /// shard is locked.
    base: AtomicU64,
    /// How far past the base jumps may go: `rules::JUMP_ROOM`, or the whole
    /// token space once opened with `jumps=unbounded`.
    jump_room: u64,
    clock: Clock,
    mode: Mode,
    /// The operator's record of rejections (docs/operations.md), newest last.
    rejections: Mutex<Ring>,
    /// The callers waiting for a lease to end; every end happens here.
    wakes: Arc<Wakes>,
    /// The last waiter's place given (`crate::waiting`).
    last_place: AtomicU64,
}

#[derive(Default)]
struct Ring {
    rows: VecDeque<RecordedRejection>,
    last_id: u64,
}

impl Memory {
    pub fn new(clock: Clock, mode: Mode) -> Memory {
        Memory {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            hasher: Hasher::default(),
            floors: (0..FLOOR_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            ceiling: AtomicU64::new(0),
            base: AtomicU64::new(0),
            jump_room: if mode.unbounded_jumps {
                Token::MAX.get()
            } else {
                JUMP_ROOM
            },
            clock,
            mode,
            rejections: Mutex::new(Ring::default()),
            wakes: Wakes::new(true),
            last_place: AtomicU64::new(0),
        }
    }

    /// The store's jump limit now (`rules::jump_limit`).
    fn jump_limit(&self) -> u64 {
        jump_limit(self.base.load(Ordering::SeqCst), self.jump_room)
    }

    fn shard(&self, scope: &str) -> &Shard {
        &self.shards[(self.hasher.hash_one(scope) as usize) % SHARDS]
    }

    fn lock(&self, scope: &str) -> Result<MutexGuard<'_, HashMap<Name, Scope, Hasher>>> {
        self.shard(scope)
            .scopes
            .lock()
            .map_err(|_| Error::backend(Other, "memory shard poisoned by a panic"))
    }

    fn floor(&self, scope: &str) -> &AtomicU64 {
        &self.floors[floor_bucket(scope)]
    }

    /// Runs `f` on the scope, creating it (at the floor) if it is new, and
    /// raises the store's ceiling over its counter and fence, while the
    /// shard is still locked.
    fn with_scope<T>(&self, scope: &str, f: impl FnOnce(&mut Scope) -> Result<T>) -> Result<T> {
        let mut scopes = self.lock(scope)?;
        if let Some(s) = scopes.get_mut(scope) {
            let out = f(s)?;
            self.cover(s.core.top());
            return Ok(out);
        }
        let mut fresh = Scope::fresh(self.floor(scope).load(Ordering::SeqCst));
        let out = f(&mut fresh)?;
        self.cover(fresh.core.top());
        // Only an operation that succeeded leaves a new scope behind.
        scopes.insert(Name::from(scope), fresh);
        Ok(out)
    }

    /// [`Memory::with_scope`] for a write: the fence checked first (its
    /// jump, then the scope's rule); `f` gets the scope and the store's time
    /// at `called`.
    fn with_fence<T>(
        &self,
        scope: &str,
        fence: &Fence,
        called: Instant,
        f: impl FnOnce(&mut Scope, u64) -> Result<T>,
    ) -> Result<T> {
        let now = self.clock.at_ms(called);
        let limit = self.jump_limit();
        self.with_scope(scope, |s| {
            check_jump(scope, s.core.top(), fence.token.get(), limit)?;
            s.core.check(scope, fence)?;
            f(s, now)
        })
    }

    /// Raises the ceiling to cover `value` (a scope's counter or fence).
    fn cover(&self, value: u64) {
        let limit = self.jump_limit();
        if value <= self.ceiling.load(Ordering::SeqCst).max(limit) {
            return;
        }
        let _ = self
            .ceiling
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |h| {
                let raised = ceiling_covering(h, limit, value);
                (raised != h).then_some(raised)
            });
    }

    /// Runs `f` on the scope as it is, or as a new one would be, without creating it.
    fn read_scope<T>(&self, scope: &str, f: impl FnOnce(&Scope) -> Result<T>) -> Result<T> {
        let scopes = self.lock(scope)?;
        match scopes.get(scope) {
            Some(s) => f(s),
            None => f(&Scope::fresh(self.floor(scope).load(Ordering::SeqCst))),
        }
    }
}

impl Backend for Memory {
    fn next_token(&self, scope: &str) -> Result<Token> {
        self.with_scope(scope, |s| s.core.next_token())
    }

    fn advance_counter(&self, scope: &str, floor: Token) -> Result<u64> {
        let limit = self.jump_limit();
        self.with_scope(scope, |s| {
            check_jump(scope, s.core.top(), floor.get(), limit)?;
            Ok(s.core.advance_counter(floor))
        })
    }

    fn acquire(&self, scope: &str, holder: &str, ttl: Duration, called: Instant) -> Result<Lease> {
        let now = self.clock.at_ms(called);
        let lease = self.with_scope(scope, |s| {
            s.core.acquire(scope, holder, ttl, now, self.mode)
        })?;
        self.wakes.changed(scope);
        Ok(lease)
    }

    fn renew(&self, scope: &str, token: Token, ttl: Duration, called: Instant) -> Result<Lease> {
        let now = self.clock.at_ms(called);
        let renewed = match self.lock(scope)?.get_mut(scope) {
            Some(s) => s.core.renew(scope, token, ttl, now)?,
            None => {
                return Err(Error::LeaseLost {
                    scope: scope.to_owned(),
                    current: None,
                })
            }
        };
        self.wakes.changed(scope);
        Ok(renewed)
    }

    fn release(&self, scope: &str, token: Token, called: Instant) -> Result<bool> {
        let now = self.clock.at_ms(called);
        let mut scopes = self.lock(scope)?;
        let Some(s) = scopes.get_mut(scope) else {
            return Ok(false);
        };
        let released = s.core.release(token, now);
        if released {
            let head = s.head(now);
            self.wakes.ended(scope, head);
        }
        Ok(released)
    }

    fn release_watch(&self, scope: &str) -> Ticket {
        self.wakes.ticket(scope)
    }

    fn change_watch(&self, scope: &str) -> Ticket {
        self.wakes.watch_ticket(scope)
    }

    fn watch_read(&self, scope: &str, _id: Option<u64>) -> Result<WatchRead> {
        let now = self.clock.now_ms();
        self.read_scope(scope, |s| {
            Ok(WatchRead {
                lease: s.core.lease_at(scope, now),
                id: None,
                announced: true,
            })
        })
    }

    fn acquire_waiting(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        place: Option<u64>,
    ) -> Result<Attempt> {
        let now = self.clock.now_ms();
        let life = place_life_ms(ttl);
        let attempt = self.with_scope(scope, |s| {
            s.head(now);
            let lease_end = s.core.live_lease(now).map(|l| l.expires_at_ms);
            let earlier = s
                .queue
                .range(..place.unwrap_or(u64::MAX))
                .next()
                .map(|(_, until)| *until);
            match turn(lease_end, earlier, now) {
                Turn::Yours => {
                    let lease = s.core.acquire(scope, holder, ttl, now, self.mode)?;
                    if let Some(place) = place {
                        s.queue.remove(&place);
                    }
                    Ok(Attempt::Got(lease))
                }
                Turn::Wait(ms) => {
                    let place = match place.and_then(|p| s.queue.get_mut(&p).map(|u| (p, u))) {
                        Some((p, until)) => {
                            if refresh_due(*until, now, life) {
                                *until = now.saturating_add(life);
                            }
                            p
                        }
                        None => {
                            let p = self.last_place.fetch_add(1, Ordering::SeqCst) + 1;
                            s.queue.insert(p, now.saturating_add(life));
                            p
                        }
                    };
                    let wait = Duration::from_millis(ms).min(longest_sleep(life));
                    Ok(Attempt::Queued { place, wait })
                }
            }
        })?;
        if let Attempt::Got(_) = attempt {
            self.wakes.changed(scope);
        }
        Ok(attempt)
    }

    fn leave_queue(&self, scope: &str, place: u64) -> Result<()> {
        let now = self.clock.now_ms();
        let mut scopes = self.lock(scope)?;
        if let Some(s) = scopes.get_mut(scope) {
            if s.queue.remove(&place).is_some() && s.core.live_lease(now).is_none() {
                // It may have been next: the one after it is now.
                let head = s.head(now);
                self.wakes.ended(scope, head);
            }
        }
        Ok(())
    }

    fn write(
        &self,
        scope: &str,
        fence: &Fence,
        ops: &[OpRef<'_>],
        called: Instant,
    ) -> Result<Vec<Receipt>> {
        if let [op] = ops {
            return self.write_one(scope, fence, op, called).map(|r| vec![r]);
        }
        let mode = self.mode;
        self.with_fence(scope, fence, called, |s, now| {
            let receipts = plan_ops(scope, ops, fence.token, |key| Ok(s.version_of(key)))?;
            s.core.accept_write(fence, mode);
            s.core.note_write(fence, now);
            for (op, receipt) in ops.iter().zip(&receipts) {
                s.apply(op, *receipt);
            }
            Ok(receipts)
        })
    }

    fn write_one(
        &self,
        scope: &str,
        fence: &Fence,
        op: &OpRef<'_>,
        called: Instant,
    ) -> Result<Receipt> {
        let mode = self.mode;
        self.with_fence(scope, fence, called, |s, now| {
            s.write_one(scope, fence, op, mode, now)
        })
    }

    fn claim(&self, scope: &str, fence: &Fence) -> Result<()> {
        let limit = self.jump_limit();
        self.with_scope(scope, |s| {
            check_jump(scope, s.core.top(), fence.token.get(), limit)?;
            s.core.claim(scope, fence)
        })
    }

    fn get(&self, scope: &str, key: &str, fence: Option<&Fence>) -> Result<Option<Entry>> {
        self.read_scope(scope, |s| {
            if let Some(f) = fence {
                s.core.check_token(scope, f.token)?;
            }
            Ok(s.entries.get(key).map(|e| Entry {
                key: key.to_owned(),
                value: e.value.clone(),
                version: e.version,
                token: e.token,
            }))
        })
    }

    fn list(&self, scope: &str, after: Option<&str>, limit: usize) -> Result<Page> {
        self.read_scope(scope, |s| {
            Ok(Page::from_keys(
                s.keys_after(after, limit.saturating_add(1)),
                limit,
            ))
        })
    }

    fn status(&self, scope: &str) -> Result<ScopeStatus> {
        let now = self.clock.now_ms();
        self.read_scope(scope, |s| {
            Ok(ScopeStatus {
                counter: s.core.counter,
                fence: s.core.fence,
                lease: s.core.lease_at(scope, now),
                entries: s.entries.len() as u64,
            })
        })
    }

    fn retire(&self, scope: &str) -> Result<bool> {
        let now = self.clock.now_ms();
        let mut scopes = self.lock(scope)?;
        let Some(s) = scopes.get(scope) else {
            return Ok(false);
        };
        let floor = s.core.retire_floor(scope, now, s.entries.len() as u64)?;
        // Raised while the shard is locked, so a concurrent re-creation of
        // this scope (same shard) cannot start below the floor.
        self.floor(scope).fetch_max(floor, Ordering::SeqCst);
        scopes.remove(scope);
        Ok(true)
    }

    fn lower_wedged(&self, scope: &str, bound: Token) -> Result<u64> {
        // The record first: its lock is never taken inside a shard's.
        let recorded: Vec<u64> = self
            .rejections
            .lock()
            .map_err(|_| Error::backend(Other, "memory: rejection record poisoned by a panic"))?
            .rows
            .iter()
            .filter(|r| r.scope == scope)
            .flat_map(|r| [r.presented.get(), r.current])
            .collect();
        let limit = self.jump_limit();
        let unbounded = self.jump_room == Token::MAX.get();
        let mut scopes = self.lock(scope)?;
        let Some(s) = scopes.get_mut(scope) else {
            return Err(Error::invalid(format!(
                "scope {scope:?} has no state: nothing to lower"
            )));
        };
        let mut seen = recorded;
        seen.extend(s.core.lease.as_ref().map(|l| l.token.get()));
        seen.extend(s.core.last_write.as_ref().map(|w| w.token.get()));
        seen.extend(s.entries.values().map(|e| e.token.get()));
        let bound = lowered_wedge(scope, &s.core, &seen, limit, unbounded, bound.get())?;
        s.core.lower_to(bound);
        // Its lease ended with the rest.
        let head = s.head(self.clock.now_ms());
        self.wakes.ended(scope, head);
        Ok(bound)
    }

    fn failover(&self) -> Result<u64> {
        // Every shard locked at once, in order, so that no operation sees
        // some scopes moved and others not.
        let mut locked = Vec::with_capacity(SHARDS);
        for shard in self.shards.iter() {
            locked.push(
                shard
                    .scopes
                    .lock()
                    .map_err(|_| Error::backend(Other, "memory shard poisoned by a panic"))?,
            );
        }
        // No operation runs while every shard is locked: the ceiling covers
        // every counter, fence and floor there is.
        let (base, covering) =
            failover_step(self.ceiling.load(Ordering::SeqCst), self.jump_limit());
        for floor in self.floors.iter() {
            floor.fetch_max(base, Ordering::SeqCst);
        }
        for scopes in locked.iter_mut() {
            for scope in scopes.values_mut() {
                scope.core.fail_over(base);
            }
        }
        self.ceiling.store(covering, Ordering::SeqCst);
        self.base.store(base, Ordering::SeqCst);
        drop(locked);
        self.wakes.all_ended();
        Ok(base)
    }

    fn record_rejection(&self, note: &RejectionNote<'_>) -> Result<()> {
        let current = self.read_scope(note.scope, |s| Ok(s.core.fence))?;
        if !recordable(note.presented, current) {
            return Ok(());
        }
        let now = self.clock.now_ms();
        let mut ring = self
            .rejections
            .lock()
            .map_err(|_| Error::backend(Other, "memory: rejection record poisoned by a panic"))?;
        let since = at_ms(now.saturating_sub(RECORD_INTERVAL.as_millis() as u64));
        // Another handle's record of the scope within the interval takes this one's count.
        if let Some(row) = ring
            .rows
            .iter_mut()
            .rev()
            .find(|r| r.scope == note.scope && r.at > since)
        {
            row.suppressed += note.suppressed + 1;
            return Ok(());
        }
        if ring.rows.len() == REJECTION_LOG {
            // One recorder (this process): `evicted` picks the ring's next
            // slot, the oldest row at the front.
            let rows: Vec<(Option<&str>, u64)> = ring.rows.iter().map(|r| (None, r.id)).collect();
            if let Some(i) = evicted(&rows, Some(0)) {
                ring.rows.remove(i);
            }
        }
        ring.last_id += 1;
        let row = RecordedRejection {
            id: ring.last_id,
            code: note.code,
            scope: note.scope.to_owned(),
            key: note.key.map(str::to_owned),
            presented: note.presented,
            current,
            seq: note.seq,
            holder: note.holder.map(str::to_owned),
            at: at_ms(now),
            suppressed: note.suppressed,
        };
        ring.rows.push_back(row);
        Ok(())
    }

    fn events(&self, scope: Option<&str>, limit: usize) -> Result<Events> {
        let rejections = {
            let ring = self.rejections.lock().map_err(|_| {
                Error::backend(Other, "memory: rejection record poisoned by a panic")
            })?;
            ring.rows
                .iter()
                .rev()
                .filter(|r| scope.is_none_or(|s| r.scope == s))
                .take(limit)
                .cloned()
                .collect()
        };
        let mark = |name: &str, s: &Scope| {
            s.core.last_write.as_ref().map(|w| LastWrite {
                scope: name.to_owned(),
                holder: w.holder.clone(),
                token: w.token,
                at: at_ms(w.at_ms),
            })
        };
        let mut last_writes = Vec::new();
        match scope {
            Some(name) => {
                let scopes = self.lock(name)?;
                last_writes.extend(scopes.get(name).and_then(|s| mark(name, s)));
            }
            None => {
                for shard in self.shards.iter() {
                    let scopes = shard
                        .scopes
                        .lock()
                        .map_err(|_| Error::backend(Other, "memory shard poisoned by a panic"))?;
                    last_writes.extend(scopes.iter().filter_map(|(n, s)| mark(n, s)));
                }
                last_writes.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| a.scope.cmp(&b.scope)));
                last_writes.truncate(limit);
            }
        }
        Ok(Events {
            rejections,
            last_writes,
        })
    }

    /// No I/O and no schema: a memory store answers while it is open
    /// (`Store` refuses a closed one before asking).
    fn ping(&self) -> Result<()> {
        Ok(())
    }

    fn close(&self) {
        // Waits and watches of this handle find it closed at once.
        self.wakes.all_ended();
    }

    fn advance_clock(&self, by: Duration) -> Result<()> {
        self.clock.advance(by)?;
        self.wakes.all_ended();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::SORTED_FROM;
    use crate::{Fence, Store};
    use std::collections::BTreeSet;

    /// Every page of scope `s`, from every `after` the model knows and one it
    /// does not, against the model's byte order.
    fn lists_like(store: &Store, model: &BTreeSet<String>) {
        let all: Vec<String> = model.iter().cloned().collect();
        let afters = std::iter::once(None)
            .chain(all.iter().map(|k| Some(k.as_str())))
            .chain([Some("a0~")]);
        for after in afters {
            let expected: Vec<&String> = all
                .iter()
                .filter(|k| after.is_none_or(|a| k.as_str() > a))
                .collect();
            for limit in [1, 3, 1000] {
                let page = store.list("s", after, limit).unwrap();
                let shown: Vec<&String> = expected.iter().take(limit).copied().collect();
                assert_eq!(
                    page.keys.iter().collect::<Vec<_>>(),
                    shown,
                    "after {after:?}"
                );
                let more = expected.len() > limit;
                assert_eq!(page.next.as_ref(), more.then(|| shown[limit - 1]));
            }
        }
    }

    /// Below and above `SORTED_FROM` entries (where the scope starts keeping
    /// its keys in order) and back below it, a scope lists in byte order.
    #[test]
    fn a_scope_lists_in_byte_order_however_many_keys_it_holds() {
        let store = Store::open("memory:").unwrap();
        let fence = Fence::new(store.next_token("s").unwrap());
        // Written out of byte order, with a multi-byte character and a
        // prefix of another name among them.
        let names: Vec<String> = (0..3 * SORTED_FROM)
            .map(|i| format!("{}{}", ["b", "a", "\u{e9}", "Z", "a0"][i % 5], (i * 7) % 11))
            .collect();
        let mut model = BTreeSet::new();
        for name in &names {
            store.put("s", name, b"v", &fence).unwrap();
            model.insert(name.clone());
            lists_like(&store, &model);
        }
        for (i, name) in names.iter().enumerate().filter(|(i, _)| i % 5 != 0) {
            assert!(model.remove(name), "{i}");
            store.delete("s", name, &fence).unwrap();
            lists_like(&store, &model);
        }
        assert!(model.len() < SORTED_FROM);
    }

    /// Names held inside a map's slot (up to 24 bytes) and in their own
    /// allocation (longer) are each their own scope and key, down to the
    /// last byte, and list in byte order among each other.
    #[test]
    fn names_either_side_of_the_inline_length_are_distinct() {
        let store = Store::open("memory:").unwrap();
        let names: Vec<String> = [22, 23, 24, 25, 26, 200]
            .into_iter()
            .flat_map(|len| ['a', 'b', '\u{e9}'].map(|last| format!("{}{last}", "n".repeat(len))))
            .collect();
        for (i, name) in names.iter().enumerate() {
            for _ in 0..=i {
                store.next_token(name).unwrap();
            }
            let fence = Fence::new(store.next_token("s").unwrap());
            store.put("s", name, name.as_bytes(), &fence).unwrap();
        }
        for (i, name) in names.iter().enumerate() {
            assert_eq!(
                store.next_token(name).unwrap().get(),
                i as u64 + 2,
                "{name}"
            );
            let entry = store.get("s", name, None).unwrap().unwrap();
            assert_eq!(entry.value, name.as_bytes());
        }
        let sorted: BTreeSet<String> = names.iter().cloned().collect();
        lists_like(&store, &sorted);
    }
}
