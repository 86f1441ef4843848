//! `etcd://HOST:PORT[,...]/PREFIX`: state in an etcd v3 cluster
//! (docs/etcd.md). Every operation reads what its rules need in one
//! linearizable read, runs `rules.rs` on it, and commits in one etcd
//! transaction that compares the mod revision of every key it read: the
//! transaction applies everything or nothing, and only if nothing it read
//! changed meanwhile (else the operation starts over). A lease is live
//! while its lease key exists: the key is attached to an etcd lease of the
//! lease's TTL, so the cluster's own timekeeping ends it.

mod client;
mod keys;
mod record;
mod resolve;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use super::wakes::{Ticket, Wakes};
use super::{Backend, WatchRead};
use crate::error::{BackendErrorKind as Kind, Error, Result};
use crate::events::{
    at_ms, code_from_str, Events, LastWrite, RecordedRejection, RejectionNote, RECORD_INTERVAL,
};
use crate::rules::{
    ceiling_covering, check_jump, check_op, failover_base, floor_bucket, jump_limit, plan_ops,
    recordable, unix_ms, Mode, ScopeCore, JUMP_ROOM,
};
use crate::token::Token;
use crate::types::{Entry, Fence, Lease, OpRef, Page, Receipt, ScopeStatus};
use crate::url::EtcdOptions;
use crate::waiting::Attempt;
use client::{b64, bytes, int, Client, Repeat};
use keys::{end, Keys};
use record::{Record, StoredEntry};

/// The layout of the keys and values this build writes (`keys.rs`,
/// `record.rs`).
const SCHEMA: &str = "1";
/// Transactions that lost a race start over; past this many, the call
/// fails with `BUSY` (only a scope written without pause by many clients
/// gets near it).
const MAX_TRIES: usize = 64;
/// The most operations one batch may hold on etcd: its transaction also
/// compares the keys it read and puts the scope's record, within etcd's
/// default `--max-txn-ops` of 128 (docs/etcd.md, "Limits").
const MAX_BATCH_OPS: usize = 120;
/// The reads every operation makes before its own keys (`Etcd::tracked`).
const BASE_READS: usize = 6;
/// How many scopes, and entries of a scope, a handle remembers
/// (`Etcd::cached`); past either, it forgets them all and starts again.
const CACHED_SCOPES: usize = 4096;
const CACHED_ENTRIES: usize = 256;
/// The longest a waiter sleeps between attempts on etcd (it polls; a live
/// lease's end is not announced to it).
const WAIT_POLL: Duration = Duration::from_millis(200);

pub(crate) struct Etcd {
    client: Client,
    keys: Keys,
    mode: Mode,
    /// `clock=manual` (tests): leases end on the store's manual clock, a key
    /// that `advance_clock` moves, instead of on etcd leases.
    manual: bool,
    /// How far past the failover step's base jumps may go
    /// (`rules::JUMP_ROOM`, or the whole token space with `jumps=unbounded`).
    jump_room: u64,
    /// Waits and watches of this handle: woken by what it does itself,
    /// polling for what others do.
    wakes: Arc<Wakes>,
    /// What this handle last knew of each scope it wrote (`update`): a
    /// guess its next commit checks, never an answer.
    cache: Mutex<Cache>,
    /// What this handle's last operations on scopes it never saw found
    /// ([`FirstContacts`]).
    first_contacts: FirstContacts,
}

/// Whether an operation on a scope a handle never saw should guess it new
/// (no read: right for a new name's first token or lease) or peek at it
/// first (an acquisition beside its grant; right for a scope that exists, since
/// a wrong guess that leads to a write costs a failed transaction, a
/// proposal). A two-bit saturating counter of what the handle's last such
/// operations found, as a branch predictor keeps
/// one: from either end, two findings in a row turn it. Only cost rides
/// on it; every decision is still checked by the commit's comparisons.
struct FirstContacts(AtomicU8);

impl FirstContacts {
    /// Starts at "exists", one finding from "new": a handle's first
    /// operations are usually on names other processes use too.
    fn new() -> FirstContacts {
        FirstContacts(AtomicU8::new(1))
    }

    fn likely_new(&self) -> bool {
        self.0.load(Ordering::Relaxed) >= 2
    }

    fn found(&self, new: bool) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(if new {
                    (n + 1).min(3)
                } else {
                    n.saturating_sub(1)
                })
            });
    }
}

/// A scope as this handle last knew it: the reads of `Etcd::tracked`'s
/// keys but the entries, and the entries it wrote or read for a write.
#[derive(Default)]
struct Known {
    reads: Vec<Read>,
    entries: HashMap<Vec<u8>, Read>,
}

/// What a handle remembers ([`Etcd::cached`]).
#[derive(Default)]
struct Cache {
    scopes: HashMap<String, Known>,
    /// The store-wide reads (the base, the ceiling, the jumps mark, and the
    /// clock on a manual one) as the handle last saw them, whatever the
    /// scope: a guess or a peek at a scope it never saw takes them, so that
    /// after a failover step one retry teaches every later first contact.
    store_wide: Vec<Read>,
}

/// What an operation's first try on a scope runs on ([`Etcd::first_try`]).
enum FirstTry {
    /// What the handle remembers of the scope, or a guess it trusts.
    Known((Vec<Read>, Source)),
    /// A peek ([`Etcd::peek_unseen`]), which fills in the guess the handle
    /// does not trust (`None`: it has seen no scope yet).
    Peek(Option<Vec<Read>>),
}

/// An etcd lease granted: its id, the TTL etcd granted (whole seconds, at
/// least the one asked for) and when the grant was sent.
#[derive(Clone, Copy)]
struct Grant {
    id: i64,
    ttl: Duration,
    sent: Instant,
}

/// A scope's entries as a read counted them, and the revision it read at.
#[derive(Clone, Copy)]
struct Counted {
    entries: u64,
    at: i64,
}

/// One key as the read found it.
#[derive(Clone)]
struct Read {
    /// Its mod revision; 0 when absent (what etcd compares an absent key's
    /// revision as).
    rev: i64,
    value: Option<Vec<u8>>,
    /// The etcd lease it is attached to (0 = none).
    lease: i64,
}

/// What an operation read of one scope.
struct Loaded {
    record: Record,
    /// Whether the scope has a record (else `record` is a new scope's, at
    /// its bucket's floor).
    exists: bool,
    scope: Read,
    lease: Read,
    floor: Read,
    floor_value: u64,
    /// The store's failover base and ceiling (docs/etcd.md, "Restoring a
    /// backup").
    base: Read,
    ceiling: Read,
    ceiling_value: u64,
    /// `rules::jump_limit` at the base read.
    jump_limit: u64,
    /// The manual clock (read only when the store has one).
    clock: Read,
    /// The time the rules run at: the manual clock's, or 0 (with etcd's
    /// time a lease's end is its lease key's, not a number).
    now_ms: u64,
    /// The other keys asked for, in order.
    extra: Vec<Read>,
    /// Keys of the extra reads, for the commit's comparisons.
    extra_keys: Vec<Vec<u8>>,
    /// The scope's number of entries, when asked for (0 otherwise).
    entries: u64,
    /// The revision they were counted at, when they were.
    counted_at: Option<i64>,
    /// Whether the decision read only the record's counter, fence, seal and
    /// seq (a token, a counter raise, a write, a claim): then the commit
    /// compares neither the lease key nor, on a scope with a record, the
    /// floor (docs/etcd.md, "Every operation is one read and one
    /// transaction"). False unless an operation says so.
    fence_only: bool,
    /// Whether this is a read of the cluster ([`Source::Read`]): a decision
    /// on anything else that writes nothing is asked of the cluster again.
    fresh: bool,
}

/// What one try of an operation decided.
enum Step<T> {
    /// Nothing to write.
    Done(T),
    /// These changes, applied only if nothing read has changed.
    Write(T, Vec<Change>),
}

/// One key put (on an etcd lease, or none) or deleted.
struct Change {
    key: Vec<u8>,
    /// `None`: deleted.
    value: Option<Vec<u8>>,
    lease: Option<i64>,
}

impl Change {
    fn json(&self) -> Value {
        match (&self.value, self.lease) {
            (None, _) => json!({ "request_delete_range": { "key": b64(&self.key) } }),
            (Some(v), Some(id)) => json!({ "request_put": {
                "key": b64(&self.key), "value": b64(v), "lease": id.to_string() } }),
            (Some(v), None) => json!({ "request_put": { "key": b64(&self.key), "value": b64(v) } }),
        }
    }

    /// The key as it is once this change committed at `revision`.
    fn read_at(&self, revision: i64) -> Read {
        Read {
            rev: if self.value.is_some() { revision } else { 0 },
            value: self.value.clone(),
            lease: self.lease.unwrap_or(0),
        }
    }
}

/// How a commit ended.
enum Commit {
    /// Applied at this revision, with these changes (the ceiling's too).
    Applied(i64, Vec<Change>),
    /// Not applied: a key read had changed; here is each as it is now, when
    /// the transaction was asked to read them.
    Changed(Option<Vec<Read>>),
}

/// Where the state an operation decides on came from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// A read of the cluster (or a failed commit's other branch).
    Read,
    /// This handle's memory of the scope (what it last wrote or read).
    Remembered,
    /// A guess about a scope this handle never saw: new.
    Guessed,
    /// A serializable read: one member's own copy, which may be behind the
    /// leader's. Taken as a guess is: a decision that writes nothing is
    /// asked of the cluster again, and a commit that fails is followed by a
    /// read.
    Peeked,
}

fn range(key: &[u8]) -> Value {
    json!({ "request_range": { "key": b64(key) } })
}

/// A range the member answers from its own copy, without asking the leader
/// (etcd serves a transaction of such ranges alone locally).
fn peek_range(key: &[u8]) -> Value {
    json!({ "request_range": { "key": b64(key), "serializable": true } })
}

fn put(key: &[u8], value: &[u8], lease: Option<i64>) -> Change {
    Change {
        key: key.to_vec(),
        value: Some(value.to_vec()),
        lease,
    }
}

fn delete(key: &[u8]) -> Change {
    Change {
        key: key.to_vec(),
        value: None,
        lease: None,
    }
}

fn unchanged(key: &[u8], rev: i64) -> Value {
    json!({ "key": b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": rev.to_string() })
}

/// The first `n` answers of a transaction of single-key ranges.
fn ranges(answer: &Value, n: usize) -> Result<Vec<Read>> {
    let answers = answer["responses"]
        .as_array()
        .filter(|a| a.len() >= n)
        .ok_or_else(|| corrupt("a read's answer"))?;
    answers[..n]
        .iter()
        .map(|a| read_one(&a["response_range"]))
        .collect()
}

/// The one key a single-key range answered, if any.
fn read_one(answer: &Value) -> Result<Read> {
    let Some(kv) = answer["kvs"].as_array().and_then(|kvs| kvs.first()) else {
        return Ok(Read {
            rev: 0,
            value: None,
            lease: 0,
        });
    };
    Ok(Read {
        rev: int(&kv["mod_revision"])?,
        value: Some(bytes(&kv["value"])?),
        lease: int(&kv["lease"])?,
    })
}

fn corrupt(what: &str) -> Error {
    Error::backend(
        Kind::Corrupt,
        format!("etcd: {what} is not what fencing writes"),
    )
}

fn now_ms() -> u64 {
    unix_ms(SystemTime::now())
}

/// A decimal number kept as a value (a floor, the manual clock).
fn number_in(value: &[u8], what: &str) -> Result<u64> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| corrupt(what))
}

/// The number a key holds, 0 when it is absent.
fn value_of(read: &Read, what: &str) -> Result<u64> {
    read.value.as_deref().map_or(Ok(0), |v| number_in(v, what))
}

/// A lease as the rules produced it (times counted from 0, the etcd
/// store's rule clock), on this host's wall clock for `expires_at`.
fn with_remaining(mut lease: Lease, remaining: Duration) -> Lease {
    lease.remaining = remaining;
    lease.expires_at = SystemTime::now() + remaining;
    lease
}

impl Etcd {
    pub fn open(options: &EtcdOptions, manual: bool, mode: Mode) -> Result<Etcd> {
        let etcd = Etcd::connect(options, manual, mode)?;
        etcd.stamp()?;
        if manual {
            etcd.start_clock()?;
        } else {
            etcd.refuse_manual_clock(&options.prefix)?;
        }
        if mode.unbounded_jumps {
            etcd.create_once(&etcd.keys.jumps(), b"unbounded")?;
        }
        Ok(etcd)
    }

    /// A handle that has sent nothing yet (`fencing::ping` asks through it
    /// and writes nothing).
    pub fn connect(options: &EtcdOptions, manual: bool, mode: Mode) -> Result<Etcd> {
        Ok(Etcd {
            client: Client::new(options)?,
            keys: Keys::new(&options.prefix),
            mode,
            manual,
            jump_room: if mode.unbounded_jumps {
                Token::MAX.get()
            } else {
                JUMP_ROOM
            },
            wakes: Wakes::new(false),
            cache: Mutex::new(Cache::default()),
            first_contacts: FirstContacts::new(),
        })
    }

    /// Writes the layout's version into a new store; refuses one written
    /// by another layout.
    fn stamp(&self) -> Result<()> {
        // A read first: it may go to any member, and a refusal (TLS,
        // authentication) is told as one, with nothing written.
        let key = self.keys.schema();
        let found = self
            .client
            .call("kv/range", &json!({ "key": b64(&key) }), Repeat::Safe)?;
        if read_one(&found)?.value.is_some() {
            return self.check_schema(&found);
        }
        let answer = self.txn(
            json!({
                "compare": [{ "key": b64(&key), "target": "VERSION", "result": "EQUAL", "version": "0" }],
                "success": [put(&key, SCHEMA.as_bytes(), None).json()],
                "failure": [range(&key)],
            }),
            Repeat::Once,
        )?;
        if answer["succeeded"].as_bool() == Some(true) {
            return Ok(());
        }
        self.check_schema(&answer["responses"][0]["response_range"])
    }

    fn check_schema(&self, answer: &Value) -> Result<()> {
        match read_one(answer)?.value {
            Some(v) if v == SCHEMA.as_bytes() => Ok(()),
            Some(v) => Err(Error::backend(
                Kind::Refused,
                format!(
                    "etcd: the prefix holds a fencing store of layout {:?}, this build \
                     writes layout {SCHEMA} (upgrade fencing, or use another prefix)",
                    String::from_utf8_lossy(&v)
                ),
            )),
            None => Err(Error::backend(
                Kind::Refused,
                "etcd: the prefix holds no fencing store (open it once to create it)",
            )),
        }
    }

    /// The time of operators' records (last writes, rejections): the manual
    /// clock, or this host's wall clock (never used for a lease).
    fn clock_ms(&self, l: &Loaded) -> u64 {
        if self.manual {
            l.now_ms
        } else {
            now_ms()
        }
    }

    /// Starts a new store's manual clock at this host's wall clock, as the
    /// other backends' manual clocks start.
    fn start_clock(&self) -> Result<()> {
        self.create_once(&self.keys.clock(), now_ms().to_string().as_bytes())
    }

    /// A handle on etcd's time refuses a store whose clock a test stopped
    /// (as PostgreSQL's refuses such a schema): a test store never runs
    /// production.
    fn refuse_manual_clock(&self, prefix: &str) -> Result<()> {
        let key = self.keys.clock();
        let found = self
            .client
            .call("kv/range", &json!({ "key": b64(&key) }), Repeat::Safe)?;
        if read_one(&found)?.value.is_none() {
            return Ok(());
        }
        Err(Error::invalid(format!(
            "etcd prefix {prefix:?} runs on a manual clock (a test store): open it with \
             ?clock=manual, or use another prefix"
        )))
    }

    /// Puts `key` unless it exists.
    fn create_once(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.txn(
            json!({
                "compare": [{ "key": b64(key), "target": "VERSION", "result": "EQUAL", "version": "0" }],
                "success": [put(key, value, None).json()],
            }),
            Repeat::Once,
        )
        .map(drop)
    }

    fn txn(&self, body: Value, repeat: Repeat) -> Result<Value> {
        self.client.call("kv/txn", &body, repeat)
    }

    /// Every key an operation on `scope` reads, in the order of its
    /// `Read`s: the record, the lease key, the floor, the base, the ceiling,
    /// the jumps mark (the first `BASE_READS`), then `extra`, then the
    /// manual clock (when the store has one).
    fn tracked(&self, scope: &str, extra: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut keys = vec![
            self.keys.scope(scope),
            self.keys.lease(scope),
            self.keys.floor(floor_bucket(scope)),
            self.keys.base(),
            self.keys.ceiling(),
            self.keys.jumps(),
        ];
        keys.extend(extra.iter().cloned());
        if self.manual {
            keys.push(self.keys.clock());
        }
        keys
    }

    /// One linearizable read of the tracked keys (one transaction of
    /// ranges, so all at one revision); with the number of entries if
    /// `count`, and the revision they were counted at.
    fn read(
        &self,
        scope: &str,
        keys: &[Vec<u8>],
        count: bool,
    ) -> Result<(Vec<Read>, Option<Counted>)> {
        let mut reads: Vec<Value> = keys.iter().map(|k| range(k)).collect();
        if count {
            let from = self.keys.entries(scope);
            reads.push(json!({ "request_range": {
                "key": b64(&from), "range_end": b64(&end(&from)), "count_only": true } }));
        }
        let answer = self.txn(json!({ "success": reads }), Repeat::Safe)?;
        let found = ranges(&answer, keys.len())?;
        if !count {
            return Ok((found, None));
        }
        let counted = &answer["responses"][keys.len()]["response_range"]["count"];
        Ok((
            found,
            Some(Counted {
                entries: u64::try_from(int(counted)?).unwrap_or(0),
                at: int(&answer["header"]["revision"])?,
            }),
        ))
    }

    /// `keys` as the member asked holds them ([`Source::Peeked`]): no
    /// round of the leader's with the other members, so it costs the
    /// cluster less than [`Etcd::read`], and only a commit that compares
    /// acts on it.
    fn peek(&self, keys: &[Vec<u8>]) -> Result<Vec<Read>> {
        let reads: Vec<Value> = keys.iter().map(|k| peek_range(k)).collect();
        let answer = self.txn(json!({ "success": reads }), Repeat::Safe)?;
        ranges(&answer, keys.len())
    }

    /// A peek at a scope this handle never saw, of [`Etcd::tracked`]'s
    /// keys: the scope's own (its record, lease key, floor and entries)
    /// from one member; the store-wide ones (the base, the ceiling, the
    /// jumps mark) as the handle's `guess` ([`Etcd::cached`]) holds them,
    /// when it has one (each key a peek reads costs the members about 0.08
    /// ms of CPU: docs/performance.md). Stale, they change nothing a commit
    /// applies: the base is compared by every commit, the ceiling by the
    /// one that raises it, and a jumps mark not yet seen only leaves less
    /// room (docs/etcd.md).
    fn peek_unseen(
        &self,
        scope: &str,
        extra: &[Vec<u8>],
        guess: Option<Vec<Read>>,
    ) -> Result<Vec<Read>> {
        let keys = self.tracked(scope, extra);
        let Some(mut reads) = guess.filter(|_| !self.manual) else {
            return self.peek(&keys);
        };
        let own: Vec<usize> = (0..3).chain(BASE_READS..keys.len()).collect();
        let own_keys: Vec<Vec<u8>> = own.iter().map(|&i| keys[i].clone()).collect();
        for (i, read) in own.into_iter().zip(self.peek(&own_keys)?) {
            reads[i] = read;
        }
        Ok(reads)
    }

    /// One linearizable read of the scope ([`Etcd::read`]), assembled.
    fn load(&self, scope: &str, extra: &[Vec<u8>], count: bool) -> Result<Loaded> {
        let (reads, counted) = self.read(scope, &self.tracked(scope, extra), count)?;
        self.assemble(extra, reads, counted)
    }

    /// The scope as `reads` (of [`Etcd::tracked`]'s keys) found it: its
    /// record (a new scope's at its floor), moved by any failover step
    /// since, its lease only while the lease key says it is live.
    fn assemble(
        &self,
        extra: &[Vec<u8>],
        reads: Vec<Read>,
        counted: Option<Counted>,
    ) -> Result<Loaded> {
        let mut reads = reads.into_iter();
        let mut next = || reads.next().ok_or_else(|| corrupt("a read's answer"));
        let (scope_read, lease, floor, base, ceiling) =
            (next()?, next()?, next()?, next()?, next()?);
        // Unbounded for good once any handle said so; a handle that reads
        // it bounded while another marks it decides within less room: safe.
        let jump_room = if next()?.value.is_some() {
            Token::MAX.get()
        } else {
            self.jump_room
        };
        let extra_reads = extra
            .iter()
            .map(|_| next())
            .collect::<Result<Vec<Read>>>()?;
        let clock = if self.manual {
            next()?
        } else {
            read_one(&Value::Null)?
        };
        let base_value = value_of(&base, "the failover base")?;
        let ceiling_value = value_of(&ceiling, "the ceiling")?;
        let floor_value = value_of(&floor, "a floor")?;
        let now_ms = value_of(&clock, "the manual clock")?;
        let exists = scope_read.value.is_some();
        let mut record = match &scope_read.value {
            Some(v) => Record::decode(v)?,
            None => Record {
                core: ScopeCore::fresh(floor_value),
                lease_id: None,
                base: 0,
            },
        };
        // A failover step since the record was written: the record moves
        // now, as every scope did at once on the other backends.
        if record.base < base_value {
            record.core.fail_over(base_value);
            record.lease_id = None;
            record.base = base_value;
        }
        // The lease is live while its key exists, attached to the lease
        // the record names; etcd deleted the key when the lease ran out.
        let live = match (&record.core.lease, lease.value.as_deref()) {
            (Some(l), Some(token)) => {
                token == l.token.to_string().as_bytes() && record.lease_id == Some(lease.lease)
            }
            _ => false,
        };
        if self.manual && record.lease_id.is_none() {
            // A lease a manual-clock handle took: the rules judge it on the
            // manual clock.
        } else if let (true, Some(l)) = (live, record.core.lease.as_mut()) {
            // Counted from the rules' clock (0, or the manual clock for a
            // lease on etcd's time met by a manual handle); the real
            // remaining time is etcd's (`remaining`).
            l.expires_at_ms = now_ms.saturating_add(l.ttl_ms);
        } else {
            record.core.lease = None;
            record.lease_id = None;
        }
        Ok(Loaded {
            record,
            exists,
            scope: scope_read,
            lease,
            floor,
            floor_value,
            base,
            ceiling,
            ceiling_value,
            jump_limit: jump_limit(base_value, jump_room),
            clock,
            now_ms,
            extra: extra_reads,
            extra_keys: extra.to_vec(),
            entries: counted.map_or(0, |c| c.entries),
            counted_at: counted.map(|c| c.at),
            fence_only: false,
            fresh: false,
        })
    }

    /// `changes`, applied only if every key `l` read still has the
    /// revision it read; if one has not, after a read of the cluster the
    /// transaction's other branch reads every key again, so that retry
    /// needs no read of its own.
    fn commit(
        &self,
        scope: &str,
        l: &Loaded,
        mut changes: Vec<Change>,
        source: Source,
    ) -> Result<Commit> {
        let tracked = self.tracked(scope, &l.extra_keys);
        // A record put back as it was read (a holder writing again with
        // its token) is left alone: its comparison below still holds the
        // fence, and etcd writes one key less.
        changes.retain(|c| !(c.key == tracked[0] && c.value.is_some() && c.value == l.scope.value));
        let mut compare = vec![
            unchanged(&tracked[0], l.scope.rev),
            unchanged(&tracked[3], l.base.rev),
        ];
        if !l.fence_only {
            compare.push(unchanged(&tracked[1], l.lease.rev));
        }
        if !(l.fence_only && l.exists) {
            compare.push(unchanged(&tracked[2], l.floor.rev));
        }
        // Counting past the jump limit moves the ceiling, in the same
        // transaction (`rules::ceiling_covering`); below it, the ceiling is
        // left alone and no call waits on it.
        let raised = ceiling_covering(l.ceiling_value, l.jump_limit, l.record.core.top());
        if raised != l.ceiling_value {
            compare.push(unchanged(&tracked[4], l.ceiling.rev));
            changes.push(put(&tracked[4], raised.to_string().as_bytes(), None));
        }
        if self.manual {
            compare.push(unchanged(&self.keys.clock(), l.clock.rev));
        }
        compare.extend(
            l.extra_keys
                .iter()
                .zip(&l.extra)
                .map(|(k, r)| unchanged(k, r.rev)),
        );
        // A decision on the number of entries (retire: none may be left)
        // holds only while no entry was written since they were counted: a
        // write by the token that last wrote leaves the record alone
        // (above), so the record's comparison would not see it. Every key
        // of the range must be older than the count (an empty range is).
        if let Some(at) = l.counted_at {
            let from = self.keys.entries(scope);
            compare.push(json!({ "key": b64(&from), "range_end": b64(&end(&from)),
                "target": "MOD", "result": "LESS", "mod_revision": (at + 1).to_string() }));
        }
        let mut success: Vec<Value> = changes.iter().map(Change::json).collect();
        // A transaction of compares alone (a claim at the fence it has: the
        // record, unchanged, left out above) is not a write, and etcd takes
        // one without a single request for a serializable read
        // (`isTxnSerializable`): whichever member gets it answers from its
        // own copy, which may be behind the leader's, and the compares pass
        // against an old state (a stale claim accepted: docs/etcd.md,
        // "Every operation is one read and one transaction"). A
        // linearizable range of the record makes it a read that member
        // first confirms with the leader.
        if success.is_empty() {
            success.push(range(&tracked[0]));
        }
        let mut body = json!({ "compare": compare, "success": success });
        // Only a commit on a read of the cluster carries reads for a retry:
        // it failed because another writer got in, and the retry needs the
        // keys as that writer left them. One on this handle's memory (a
        // scope has one writer at a time: its holder), on a guess (made
        // while first contacts keep finding new scopes) or on a peek (a
        // member's copy, behind only just after a change) usually holds: it
        // carries none, so every member parses, logs and applies less, and
        // the rare retry reads first.
        let reread = source == Source::Read;
        if reread {
            body["failure"] = tracked.iter().map(|k| range(k)).collect();
        }
        let answer = self.txn(body, Repeat::Once)?;
        if answer["succeeded"].as_bool() == Some(true) {
            return Ok(Commit::Applied(
                int(&answer["header"]["revision"])?,
                changes,
            ));
        }
        Ok(Commit::Changed(match reread {
            true => Some(ranges(&answer, tracked.len())?),
            false => None,
        }))
    }

    /// What this handle guesses of `scope` and of `extra` keys: what it last
    /// knew; an entry it never saw, absent; a scope it never saw, new (no
    /// record, lease or floor), with the store-wide keys as it last saw them
    /// (`Cache::store_wide`). `None` before it has seen any. A wrong guess costs
    /// a failed commit and a read, and applies nothing.
    fn cached(&self, scope: &str, extra: &[Vec<u8>]) -> Option<(Vec<Read>, Source)> {
        let absent = || Read {
            rev: 0,
            value: None,
            lease: 0,
        };
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let (mut reads, entries, source) = match cache.scopes.get(scope) {
            Some(known) => (
                known.reads.clone(),
                Some(&known.entries),
                Source::Remembered,
            ),
            None if cache.store_wide.is_empty() => return None,
            None => {
                let mut reads = vec![absent(), absent(), absent()];
                reads.extend(cache.store_wide.iter().cloned());
                (reads, None, Source::Guessed)
            }
        };
        let clock = if self.manual { reads.pop() } else { None };
        for key in extra {
            let known = entries.and_then(|e| e.get(key));
            reads.push(known.cloned().unwrap_or_else(absent));
        }
        reads.extend(clock);
        Some((reads, source))
    }

    /// Keeps `reads` (of [`Etcd::tracked`]'s keys) as what this handle
    /// knows of `scope`; an entry's value only as far as its version.
    fn remember(&self, scope: &str, extra: &[Vec<u8>], reads: &[Read]) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let cache = &mut *cache;
        if cache.scopes.len() >= CACHED_SCOPES && !cache.scopes.contains_key(scope) {
            cache.scopes.clear();
        }
        let known = cache.scopes.entry(scope.to_owned()).or_default();
        let (base, rest) = reads.split_at(BASE_READS.min(reads.len()));
        known.reads = base.to_vec();
        known
            .reads
            .extend(rest.get(extra.len()..).unwrap_or_default().iter().cloned());
        cache.store_wide = known.reads.get(3..).unwrap_or_default().to_vec();
        if known.entries.len() + extra.len() > CACHED_ENTRIES {
            known.entries.clear();
        }
        for (key, read) in extra.iter().zip(rest) {
            let mut read = read.clone();
            if let Some(v) = read.value.as_mut() {
                v.truncate(16);
            }
            known.entries.insert(key.clone(), read);
        }
    }

    /// Whether this handle saw `scope` before, and what an operation's
    /// first try may run on instead of a read: what [`Etcd::cached`] knows
    /// or guesses, a guess only while the last first contacts found new
    /// scopes ([`FirstContacts`]); else a peek.
    fn first_try(&self, scope: &str, extra: &[Vec<u8>]) -> (bool, FirstTry) {
        let cached = self.cached(scope, extra);
        let seen = matches!(cached, Some((_, Source::Remembered)));
        let first = match cached {
            Some(known) if seen || self.first_contacts.likely_new() => FirstTry::Known(known),
            guess => FirstTry::Peek(guess.map(|(reads, _)| reads)),
        };
        (seen, first)
    }

    /// Forgets what this handle knew of `scope` (after an answer was lost,
    /// its state is unknown).
    fn forget(&self, scope: &str) {
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .scopes
            .remove(scope);
    }

    /// The scope's record put back, as `l` now holds it.
    fn put_record(&self, scope: &str, l: &Loaded) -> Change {
        put(&self.keys.scope(scope), &l.record.encode(), None)
    }

    /// Runs `decide` on the scope until its changes commit on an unchanged
    /// read, or it decides without writing. The first try may run on what
    /// this handle last knew of the scope (its commit compares every key,
    /// so a stale guess applies nothing, and the next try reads); a
    /// decision that writes nothing is taken only on a fresh read.
    fn update<T>(
        &self,
        scope: &str,
        extra: &[Vec<u8>],
        count: bool,
        decide: impl FnMut(&mut Loaded) -> Result<Step<T>>,
    ) -> Result<T> {
        // A scope this handle never saw is guessed new only while its last
        // first contacts found new scopes ([`FirstContacts`]): a wrong guess
        // that leads to a write costs a failed commit, a proposal, where a
        // read costs none. Otherwise it is peeked at, which costs the
        // cluster less than a read and is taken as a guess is.
        let (seen, first) = self.first_try(scope, extra);
        let known = match first {
            _ if count => None,
            FirstTry::Known(known) => Some(known),
            FirstTry::Peek(guess) => Some((self.peek_unseen(scope, extra, guess)?, Source::Peeked)),
        };
        self.update_from(scope, extra, count, seen, known, decide)
    }

    /// [`Etcd::update`], its first try on `known` (with where it came
    /// from: a read of the cluster, or at the revision of a commit that
    /// failed, or this handle's memory or guess); on a read of its own
    /// when `None`. Of a scope not `seen` before, what it found (new or
    /// not) is told to [`FirstContacts`] once it is the truth: the commit
    /// held, or the rule decided on a read.
    fn update_from<T>(
        &self,
        scope: &str,
        extra: &[Vec<u8>],
        count: bool,
        seen: bool,
        known: Option<(Vec<Read>, Source)>,
        mut decide: impl FnMut(&mut Loaded) -> Result<Step<T>>,
    ) -> Result<T> {
        let existed = std::cell::Cell::new(None);
        let outcome = self.tries(scope, extra, count, known, |l| {
            existed.set(Some(l.exists));
            decide(l)
        });
        let decided = !matches!(&outcome, Err(Error::Backend(_)));
        if let (false, true, Some(existed)) = (seen, decided, existed.get()) {
            self.first_contacts.found(!existed);
        }
        outcome
    }

    /// The tries of [`Etcd::update_from`].
    fn tries<T>(
        &self,
        scope: &str,
        extra: &[Vec<u8>],
        count: bool,
        mut known: Option<(Vec<Read>, Source)>,
        mut decide: impl FnMut(&mut Loaded) -> Result<Step<T>>,
    ) -> Result<T> {
        let keys = self.tracked(scope, extra);
        for _ in 0..MAX_TRIES {
            let (reads, counted, source) = match known.take() {
                Some((reads, source)) => (reads, None, source),
                None => {
                    let (reads, counted) = self.read(scope, &keys, count)?;
                    (reads, counted, Source::Read)
                }
            };
            let fresh = source == Source::Read;
            let mut l = self.assemble(extra, reads.clone(), counted)?;
            l.fresh = fresh;
            match decide(&mut l) {
                Ok(Step::Write(out, changes)) => match self.commit(scope, &l, changes, source) {
                    Ok(Commit::Applied(revision, changes)) => {
                        let mut now = reads;
                        for change in &changes {
                            if let Some(i) = keys.iter().position(|k| *k == change.key) {
                                now[i] = change.read_at(revision);
                            }
                        }
                        self.remember(scope, extra, &now);
                        return Ok(out);
                    }
                    Ok(Commit::Changed(Some(now))) => {
                        self.remember(scope, extra, &now);
                        // Counted entries are not in the commit's reads.
                        known = (!count).then_some((now, Source::Read));
                    }
                    // Memory that no longer held: the next try reads.
                    Ok(Commit::Changed(None)) => self.forget(scope),
                    Err(e) => {
                        self.forget(scope);
                        return Err(e);
                    }
                },
                Ok(Step::Done(out)) if fresh => return Ok(out),
                // A failure of the cluster (a grant whose answer was lost)
                // is one whatever the guess was.
                Err(e) if matches!(e, Error::Backend(_)) => {
                    self.forget(scope);
                    return Err(e);
                }
                // A rule's refusal on a read: what was read is what this
                // handle knows (a waiter's next poll starts from it).
                Err(e) if fresh => {
                    self.remember(scope, extra, &reads);
                    return Err(e);
                }
                // A rule decided on a guess without writing: ask the cluster.
                Ok(Step::Done(_)) | Err(_) => {}
            }
        }
        Err(Error::backend(
            Kind::Busy,
            format!(
                "etcd: scope {scope:?} changed under {MAX_TRIES} tries in a row; nothing \
                 took effect, try again"
            ),
        ))
    }

    /// The rule of a write of `ops` (entry `keys` sorted, without repeats)
    /// with `fence`, for [`Etcd::update`].
    fn write_rule<'a>(
        &'a self,
        scope: &'a str,
        fence: &'a Fence,
        ops: &'a [OpRef<'a>],
        keys: &'a [Vec<u8>],
    ) -> impl FnMut(&mut Loaded) -> Result<Step<Vec<Receipt>>> + 'a {
        move |l| {
            l.fence_only = true;
            check_jump(scope, l.record.core.top(), fence.token.get(), l.jump_limit)?;
            l.record.core.check(scope, fence)?;
            let version_of = |key: &str| -> Result<u64> {
                let k = self.keys.entry(scope, key);
                let i = keys
                    .binary_search(&k)
                    .map_err(|_| corrupt("a write's plan"))?;
                match &l.extra[i].value {
                    None => Ok(0),
                    Some(v) => Ok(StoredEntry::decode(v.clone())?.version),
                }
            };
            let receipts = if let [op] = ops {
                vec![check_op(scope, op, version_of(op.key)?, fence.token)?]
            } else {
                plan_ops(scope, ops, fence.token, version_of)?
            };
            l.record.core.accept_write(fence, self.mode);
            l.record.core.note_write(fence, self.clock_ms(l));
            let mut writes = vec![self.put_record(scope, l)];
            // A key written twice in one batch: its last operation is what
            // stays, as the other backends apply them in order.
            let mut last: Vec<(Vec<u8>, Change)> = Vec::new();
            for (op, receipt) in ops.iter().zip(&receipts) {
                let key = self.keys.entry(scope, op.key);
                let request = match op.value {
                    Some(value) => put(
                        &key,
                        &StoredEntry::encode(receipt.token, receipt.version, value),
                        None,
                    ),
                    None => delete(&key),
                };
                last.retain(|(k, _)| *k != key);
                last.push((key, request));
            }
            writes.extend(last.into_iter().map(|(_, r)| r));
            Ok(Step::Write(receipts, writes))
        }
    }

    /// A new etcd lease of at least `ttl` (whole seconds, at least the
    /// cluster's minimum), and when it was asked for.
    fn grant(&self, ttl: Duration) -> Result<Grant> {
        let sent = Instant::now();
        let seconds = ttl.as_millis().div_ceil(1000).max(1);
        let answer = self.client.call(
            "lease/grant",
            &json!({ "TTL": seconds.to_string() }),
            Repeat::Once,
        )?;
        if let Some(why) = answer["error"].as_str().filter(|e| !e.is_empty()) {
            return Err(Error::backend(
                Kind::Refused,
                format!("etcd: lease grant refused: {why}"),
            ));
        }
        let id = int(&answer["ID"])?;
        let granted = int(&answer["TTL"])?;
        if id == 0 || granted <= 0 {
            return Err(corrupt("a lease grant's answer"));
        }
        Ok(Grant {
            id,
            ttl: Duration::from_secs(granted as u64),
            sent,
        })
    }

    /// Ends an etcd lease no key needs any more. Best effort: one left
    /// behind runs out by itself.
    fn revoke(&self, id: i64) {
        let _ = self.client.call(
            "lease/revoke",
            &json!({ "ID": id.to_string() }),
            Repeat::Safe,
        );
    }

    /// What is left of the live lease in `l`, as etcd counts it (whole
    /// seconds, rounded down); `None` if it has run out.
    fn remaining(&self, l: &Loaded) -> Result<Option<Duration>> {
        let Some(id) = l.record.lease_id else {
            return Ok(None);
        };
        let answer = self.client.call(
            "lease/timetolive",
            &json!({ "ID": id.to_string() }),
            Repeat::Safe,
        )?;
        let ttl = int(&answer["TTL"])?;
        Ok((ttl >= 0).then(|| Duration::from_secs(ttl as u64)))
    }

    /// The live lease of `l` for callers, with etcd's remaining time.
    fn current_lease(&self, scope: &str, l: &Loaded) -> Result<Option<Lease>> {
        let Some(lease) = l.record.core.lease_at(scope, l.now_ms) else {
            return Ok(None);
        };
        if self.manual {
            return Ok(Some(lease));
        }
        Ok(self.remaining(l)?.map(|left| with_remaining(lease, left)))
    }

    /// Acquire or renew: `take` runs the rule with the TTL granted; the
    /// lease key is put on the new etcd lease in the same transaction.
    fn lease_step(
        &self,
        scope: &str,
        ttl: Duration,
        take: impl Fn(&mut ScopeCore, Duration, u64) -> Result<Lease>,
    ) -> Result<(Lease, Option<i64>)> {
        if self.manual {
            return self.update(scope, &[], false, |l| {
                let lease = take(&mut l.record.core, ttl, l.now_ms)?;
                Ok(Step::Write((lease, None), vec![self.put_record(scope, l)]))
            });
        }
        // A scope this handle never saw is guessed new, or peeked at while
        // the lease is granted (the two requests at once: neither needs the
        // other), as its last first contacts found ([`FirstContacts`]).
        // A grant that fails here is asked for again when the rule needs
        // it, and its error told then.
        let (seen, first) = self.first_try(scope, &[]);
        let (known, granted) = match first {
            FirstTry::Known(known) => (known, None),
            FirstTry::Peek(guess) => {
                // No thread to spare (the system's limit): the rule grants.
                let (read, granted) = std::thread::scope(|s| {
                    let grant = std::thread::Builder::new().spawn_scoped(s, || self.grant(ttl));
                    let read = self.peek_unseen(scope, &[], guess);
                    let granted = grant.ok().and_then(|g| g.join().ok()?.ok());
                    (read, granted)
                });
                match read {
                    Ok(reads) => ((reads, Source::Peeked), granted),
                    Err(e) => {
                        if let Some(g) = granted {
                            self.revoke(g.id);
                        }
                        return Err(e);
                    }
                }
            }
        };
        self.lease_from(scope, ttl, take, seen, known, granted)
    }

    /// [`Etcd::lease_step`] from its first try's state `known`, with the
    /// etcd lease `granted` for it, if one was.
    fn lease_from(
        &self,
        scope: &str,
        ttl: Duration,
        take: impl Fn(&mut ScopeCore, Duration, u64) -> Result<Lease>,
        seen: bool,
        known: (Vec<Read>, Source),
        mut granted: Option<Grant>,
    ) -> Result<(Lease, Option<i64>)> {
        let outcome = self.update_from(scope, &[], false, seen, Some(known), |l| {
            // Refused before any grant when the rule refuses anyway; a
            // held lease's time left is etcd's, not its TTL, asked only on a
            // read (a refusal on anything else is decided again on one).
            match take(&mut l.record.core.clone(), ttl, 0) {
                Err(Error::LeaseHeld {
                    scope,
                    holder,
                    token,
                    remaining,
                }) if l.fresh => {
                    let remaining = self.remaining(l)?.unwrap_or_default().min(remaining);
                    return Err(Error::LeaseHeld {
                        scope,
                        holder,
                        token,
                        remaining,
                    });
                }
                other => other?,
            };
            let Grant { id, ttl, sent } = match granted {
                Some(g) => g,
                None => *granted.insert(self.grant(ttl)?),
            };
            let old = l.record.lease_id;
            let lease = take(&mut l.record.core, ttl, 0)?;
            l.record.lease_id = Some(id);
            let ops = vec![
                self.put_record(scope, l),
                put(
                    &self.keys.lease(scope),
                    lease.token.to_string().as_bytes(),
                    Some(id),
                ),
            ];
            // The lease to revoke once the key has moved: never the one it
            // moved to.
            let old = old.filter(|old| *old != id);
            // etcd counts the TTL from when the leader applied the grant,
            // after it was sent: counted from the send, the time left this
            // lease reports is never more than etcd gives it.
            let left = ttl.saturating_sub(sent.elapsed());
            Ok(Step::Write((with_remaining(lease, left), old), ops))
        });
        match (&outcome, granted) {
            // Refused for sure: the grant is no one's.
            (Err(e), Some(Grant { id, .. })) if e.backend_kind() != Some(Kind::OutcomeUnknown) => {
                self.revoke(id)
            }
            _ => {}
        }
        outcome
    }

    /// A recorded rejection as its key holds it (`read` must hold a value).
    fn rejection_of(read: &Read, scope: &str) -> Result<(Value, RecordedRejection)> {
        let bad = || corrupt("a recorded rejection");
        let v: Value =
            serde_json::from_slice(read.value.as_deref().unwrap_or_default()).map_err(|_| bad())?;
        let text = |f: &Value| f.as_str().map(str::to_owned);
        let row = RecordedRejection {
            id: read.rev as u64,
            code: code_from_str(v["code"].as_str().ok_or_else(bad)?)?,
            scope: scope.to_owned(),
            key: text(&v["key"]),
            presented: Token::new(v["presented"].as_u64().ok_or_else(bad)?).ok_or_else(bad)?,
            current: v["current"].as_u64().ok_or_else(bad)?,
            seq: v["seq"].as_u64(),
            holder: text(&v["holder"]),
            at: at_ms(v["at_ms"].as_u64().ok_or_else(bad)?),
            suppressed: v["suppressed"].as_u64().ok_or_else(bad)?,
        };
        Ok((v, row))
    }

    /// Every key and value of a range (in key order).
    fn range_all(&self, from: &[u8]) -> Result<Vec<(Vec<u8>, Read)>> {
        let answer = self.client.call(
            "kv/range",
            &json!({ "key": b64(from), "range_end": b64(&end(from)) }),
            Repeat::Safe,
        )?;
        let Some(kvs) = answer["kvs"].as_array() else {
            return Ok(Vec::new());
        };
        kvs.iter()
            .map(|kv| {
                Ok((
                    bytes(&kv["key"])?,
                    Read {
                        rev: int(&kv["mod_revision"])?,
                        value: Some(bytes(&kv["value"])?),
                        lease: int(&kv["lease"])?,
                    },
                ))
            })
            .collect()
    }

    fn name_in(prefix: &[u8], key: &[u8]) -> Result<String> {
        Keys::name_after(prefix, key)
            .and_then(|n| String::from_utf8(n.to_vec()).ok())
            .ok_or_else(|| corrupt("a key's name"))
    }
}

impl Backend for Etcd {
    fn next_token(&self, scope: &str) -> Result<Token> {
        self.update(scope, &[], false, |l| {
            l.fence_only = true;
            let token = l.record.core.next_token()?;
            Ok(Step::Write(token, vec![self.put_record(scope, l)]))
        })
    }

    fn advance_counter(&self, scope: &str, floor: Token) -> Result<u64> {
        self.update(scope, &[], false, |l| {
            l.fence_only = true;
            check_jump(scope, l.record.core.top(), floor.get(), l.jump_limit)?;
            let counter = l.record.core.advance_counter(floor);
            Ok(Step::Write(counter, vec![self.put_record(scope, l)]))
        })
    }

    fn acquire(&self, scope: &str, holder: &str, ttl: Duration, _called: Instant) -> Result<Lease> {
        let mode = self.mode;
        let (lease, _) = self.lease_step(scope, ttl, |core, ttl, now| {
            core.acquire(scope, holder, ttl, now, mode)
        })?;
        self.wakes.changed(scope);
        Ok(lease)
    }

    fn renew(&self, scope: &str, token: Token, ttl: Duration, _called: Instant) -> Result<Lease> {
        let (lease, old) = self.lease_step(scope, ttl, |core, ttl, now| {
            core.renew(scope, token, ttl, now)
        })?;
        // The key now hangs on the new etcd lease.
        if let Some(old) = old {
            self.revoke(old);
        }
        self.wakes.changed(scope);
        Ok(lease)
    }

    fn release(&self, scope: &str, token: Token, _called: Instant) -> Result<bool> {
        let ended = self.update(scope, &[], false, |l| {
            let id = l.record.lease_id;
            if !l.exists || !l.record.core.release(token, l.now_ms) {
                return Ok(Step::Done(None));
            }
            l.record.lease_id = None;
            let ops = vec![self.put_record(scope, l), delete(&self.keys.lease(scope))];
            Ok(Step::Write(Some(id), ops))
        })?;
        let Some(id) = ended else {
            return Ok(false);
        };
        if let Some(id) = id {
            self.revoke(id);
        }
        self.wakes.ended(scope, None);
        Ok(true)
    }

    fn release_watch(&self, scope: &str) -> Ticket {
        self.wakes.ticket(scope)
    }

    fn change_watch(&self, scope: &str) -> Ticket {
        self.wakes.watch_ticket(scope)
    }

    fn watch_read(&self, scope: &str, _id: Option<u64>) -> Result<WatchRead> {
        let l = self.load(scope, &[], false)?;
        Ok(WatchRead {
            lease: self.current_lease(scope, &l)?,
            id: None,
            announced: false,
        })
    }

    /// No places on etcd yet: a waiter polls (docs/etcd.md, "Waiting").
    fn acquire_waiting(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        _place: Option<u64>,
    ) -> Result<Attempt> {
        match self.acquire(scope, holder, ttl, Instant::now()) {
            Ok(lease) => Ok(Attempt::Got(lease)),
            Err(Error::LeaseHeld { remaining, .. }) => Ok(Attempt::Unqueued {
                wait: remaining.min(WAIT_POLL),
            }),
            Err(e) => Err(e),
        }
    }

    fn leave_queue(&self, _scope: &str, _place: u64) -> Result<()> {
        Ok(())
    }

    fn write(
        &self,
        scope: &str,
        fence: &Fence,
        ops: &[OpRef<'_>],
        _called: Instant,
    ) -> Result<Vec<Receipt>> {
        if ops.len() > MAX_BATCH_OPS {
            return Err(Error::invalid(format!(
                "a batch of {} operations: an etcd store takes at most {MAX_BATCH_OPS} in one \
                 batch (one etcd transaction; docs/etcd.md, \"Limits\")",
                ops.len()
            )));
        }
        let mut keys: Vec<Vec<u8>> = ops
            .iter()
            .map(|op| self.keys.entry(scope, op.key))
            .collect();
        keys.sort();
        keys.dedup();
        self.update(
            scope,
            &keys,
            false,
            self.write_rule(scope, fence, ops, &keys),
        )
    }

    fn claim(&self, scope: &str, fence: &Fence) -> Result<()> {
        self.update(scope, &[], false, |l| {
            l.fence_only = true;
            check_jump(scope, l.record.core.top(), fence.token.get(), l.jump_limit)?;
            l.record.core.claim(scope, fence)?;
            Ok(Step::Write((), vec![self.put_record(scope, l)]))
        })
    }

    fn get(&self, scope: &str, key: &str, fence: Option<&Fence>) -> Result<Option<Entry>> {
        let mut l = self.load(scope, &[self.keys.entry(scope, key)], false)?;
        if let Some(f) = fence {
            l.record.core.check_token(scope, f.token)?;
        }
        let Some(value) = l.extra.pop().and_then(|r| r.value) else {
            return Ok(None);
        };
        let stored = StoredEntry::decode(value)?;
        Ok(Some(Entry {
            key: key.to_owned(),
            value: stored.value,
            version: stored.version,
            token: stored.token,
        }))
    }

    fn list(&self, scope: &str, after: Option<&str>, limit: usize) -> Result<Page> {
        let prefix = self.keys.entries(scope);
        let mut from = prefix.clone();
        if let Some(after) = after {
            // The first key after `after`: names hold no NUL.
            from.extend_from_slice(after.as_bytes());
            from.push(0);
        }
        let answer = self.client.call(
            "kv/range",
            &json!({ "key": b64(&from), "range_end": b64(&end(&prefix)),
                     "limit": (limit + 1).to_string(), "keys_only": true }),
            Repeat::Safe,
        )?;
        let keys = answer["kvs"]
            .as_array()
            .map(|kvs| {
                kvs.iter()
                    .map(|kv| Etcd::name_in(&prefix, &bytes(&kv["key"])?))
                    .collect::<Result<Vec<String>>>()
            })
            .transpose()?
            .unwrap_or_default();
        Ok(Page::from_keys(keys, limit))
    }

    fn status(&self, scope: &str) -> Result<ScopeStatus> {
        let l = self.load(scope, &[], true)?;
        Ok(ScopeStatus {
            counter: l.record.core.counter,
            fence: l.record.core.fence,
            lease: self.current_lease(scope, &l)?,
            entries: l.entries,
        })
    }

    fn retire(&self, scope: &str) -> Result<bool> {
        let bucket = floor_bucket(scope);
        self.update(scope, &[], true, |l| {
            if !l.exists {
                return Ok(Step::Done(false));
            }
            let floor = l.record.core.retire_floor(scope, l.now_ms, l.entries)?;
            let ops = vec![
                delete(&self.keys.scope(scope)),
                put(
                    &self.keys.floor(bucket),
                    floor.max(l.floor_value).to_string().as_bytes(),
                    None,
                ),
            ];
            Ok(Step::Write(true, ops))
        })
    }

    /// The failover step, for a cluster restored from a backup (etcd's own
    /// failovers need none: docs/etcd.md, "No failover step"): the base and
    /// the ceiling move in one transaction; each scope follows when next
    /// read (`load`).
    fn failover(&self) -> Result<u64> {
        let (base_key, ceiling_key) = (self.keys.base(), self.keys.ceiling());
        for _ in 0..MAX_TRIES {
            let answer = self.txn(
                json!({ "success": [range(&base_key), range(&ceiling_key), range(&self.keys.jumps())] }),
                Repeat::Safe,
            )?;
            let read = |i: usize| read_one(&answer["responses"][i]["response_range"]);
            let (base, ceiling) = (read(0)?, read(1)?);
            let room = if read(2)?.value.is_some() {
                Token::MAX.get()
            } else {
                self.jump_room
            };
            let ceiling_value = value_of(&ceiling, "the ceiling")?;
            let limit = jump_limit(value_of(&base, "the failover base")?, room);
            let moved = failover_base(ceiling_value, limit);
            let covering = ceiling_covering(ceiling_value, jump_limit(moved, room), moved);
            let answer = self.txn(
                json!({
                    "compare": [unchanged(&base_key, base.rev), unchanged(&ceiling_key, ceiling.rev)],
                    "success": [
                        put(&base_key, moved.to_string().as_bytes(), None).json(),
                        put(&ceiling_key, covering.to_string().as_bytes(), None).json(),
                    ],
                }),
                Repeat::Once,
            )?;
            if answer["succeeded"].as_bool() == Some(true) {
                self.wakes.all_ended();
                return Ok(moved);
            }
        }
        Err(Error::backend(
            Kind::Busy,
            "etcd: the failover base kept moving; try again",
        ))
    }

    fn record_rejection(&self, note: &RejectionNote<'_>) -> Result<()> {
        let scope = note.scope;
        let key = self.keys.rejection(scope);
        self.update(scope, std::slice::from_ref(&key), false, |l| {
            let current = l.record.core.fence;
            if !recordable(note.presented, current) {
                return Ok(Step::Done(()));
            }
            let now = self.clock_ms(l);
            let since = now.saturating_sub(RECORD_INTERVAL.as_millis() as u64);
            let earlier = match &l.extra[0].value {
                Some(_) => Some(Etcd::rejection_of(&l.extra[0], scope)?),
                None => None,
            };
            let row = match earlier {
                // Merged into the scope's record of the interval.
                Some((mut row, before)) if at_ms(since) < before.at => {
                    row["suppressed"] = json!(before.suppressed + note.suppressed + 1);
                    row
                }
                _ => json!({
                    "code": note.code.as_str(),
                    "key": note.key,
                    "presented": note.presented.get(),
                    "current": current,
                    "seq": note.seq,
                    "holder": note.holder,
                    "at_ms": now,
                    "suppressed": note.suppressed,
                }),
            };
            Ok(Step::Write(
                (),
                vec![put(&key, row.to_string().as_bytes(), None)],
            ))
        })
    }

    fn events(&self, scope: Option<&str>, limit: usize) -> Result<Events> {
        let mut rejections = Vec::new();
        let mut last_writes = Vec::new();
        let mark = |name: String, record: &Record| {
            record.core.last_write.as_ref().map(|w| LastWrite {
                scope: name,
                holder: w.holder.clone(),
                token: w.token,
                at: at_ms(w.at_ms),
            })
        };
        match scope {
            Some(name) => {
                let key = self.keys.rejection(name);
                let l = self.load(name, std::slice::from_ref(&key), false)?;
                if l.extra[0].value.is_some() {
                    rejections.push(Etcd::rejection_of(&l.extra[0], name)?.1);
                }
                if l.exists {
                    last_writes.extend(mark(name.to_owned(), &l.record));
                }
            }
            None => {
                let prefix = self.keys.rejections();
                for (key, read) in self.range_all(&prefix)? {
                    rejections.push(Etcd::rejection_of(&read, &Etcd::name_in(&prefix, &key)?)?.1);
                }
                let prefix = self.keys.scopes();
                for (key, read) in self.range_all(&prefix)? {
                    let record = Record::decode(read.value.as_deref().unwrap_or_default())?;
                    last_writes.extend(mark(Etcd::name_in(&prefix, &key)?, &record));
                }
            }
        }
        rejections.sort_by_key(|r| std::cmp::Reverse(r.id));
        rejections.truncate(limit);
        last_writes.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| a.scope.cmp(&b.scope)));
        last_writes.truncate(limit);
        Ok(Events {
            rejections,
            last_writes,
        })
    }

    fn advance_clock(&self, by: Duration) -> Result<()> {
        if !self.manual {
            return Err(Error::invalid(
                "advance_clock needs a store opened with clock=manual (docs/semantics.md, \
                 \"URLs and options\")",
            ));
        }
        let key = self.keys.clock();
        let by = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        for _ in 0..MAX_TRIES {
            let answer =
                self.client
                    .call("kv/range", &json!({ "key": b64(&key) }), Repeat::Safe)?;
            let read = read_one(&answer)?;
            let now = match &read.value {
                None => 0,
                Some(v) => number_in(v, "the manual clock")?,
            };
            let moved = crate::clock::advanced(now, by).to_string();
            let answer = self.txn(
                json!({ "compare": [unchanged(&key, read.rev)],
                        "success": [put(&key, moved.as_bytes(), None).json()] }),
                Repeat::Once,
            )?;
            if answer["succeeded"].as_bool() == Some(true) {
                self.wakes.all_ended();
                return Ok(());
            }
        }
        Err(Error::backend(
            Kind::Busy,
            "etcd: the manual clock kept moving; try again",
        ))
    }

    fn ping(&self) -> Result<()> {
        let answer = self.client.call(
            "kv/range",
            &json!({ "key": b64(&self.keys.schema()) }),
            Repeat::Safe,
        )?;
        self.check_schema(&answer)
    }

    fn close(&self) {
        self.wakes.all_ended();
    }

    fn etcd_check(&self, scope: &str, fence: &Fence) -> Result<crate::EtcdCheck> {
        let mut l = self.load(scope, &[], false)?;
        check_jump(scope, l.record.core.top(), fence.token.get(), l.jump_limit)?;
        l.record.core.claim(scope, fence)?;
        let mut check = crate::EtcdCheck {
            // The lease key is left out: a write needs only the fence.
            unchanged: vec![
                (self.keys.scope(scope), l.scope.rev),
                (self.keys.floor(floor_bucket(scope)), l.floor.rev),
                (self.keys.base(), l.base.rev),
            ],
            puts: vec![(self.keys.scope(scope), l.record.encode())],
        };
        let raised = ceiling_covering(l.ceiling_value, l.jump_limit, l.record.core.top());
        if raised != l.ceiling_value {
            check.unchanged.push((self.keys.ceiling(), l.ceiling.rev));
            check
                .puts
                .push((self.keys.ceiling(), raised.to_string().into_bytes()));
        }
        Ok(check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handle on the cluster of `FENCING_TEST_ETCD_CLUSTER`, under a
    /// prefix of its own; `None` (the test skipped) without one.
    fn on_cluster(tag: &str) -> Option<(Etcd, Etcd)> {
        let members = std::env::var("FENCING_TEST_ETCD_CLUSTER")
            .ok()
            .filter(|m| !m.is_empty());
        let Some(members) = members else {
            assert_ne!(
                std::env::var("FENCING_REQUIRE_ETCD").as_deref(),
                Ok("1"),
                "FENCING_REQUIRE_ETCD=1 but FENCING_TEST_ETCD_CLUSTER is not set"
            );
            return None;
        };
        let url = format!(
            "etcd://{members}/unit-{tag}-{}-{}",
            std::process::id(),
            now_ms()
        );
        let crate::url::StoreOptions::Etcd(options) = crate::url::parse(&url).unwrap() else {
            unreachable!("an etcd URL")
        };
        let open = || Etcd::open(&options, false, Mode::default()).unwrap();
        Some((open(), open()))
    }

    /// A peek is a member's own copy, which may be behind the cluster; it
    /// is acted on only through a commit that compares. Here each peek is
    /// made stale for sure: taken before another handle changed the scope.
    #[test]
    fn an_acquisition_on_a_stale_peek_decides_on_the_cluster() {
        let Some((a, b)) = on_cluster("peek") else {
            return;
        };
        let ttl = Duration::from_secs(30);
        let keys = b.tracked("s", &[]);
        let by = |holder: &'static str| {
            move |core: &mut ScopeCore, ttl: Duration, now: u64| {
                core.acquire("s", holder, ttl, now, Mode::default())
            }
        };
        let free = b.peek(&keys).unwrap();
        let lease = a.acquire("s", "A", ttl, Instant::now()).unwrap();
        // Read, not peeked, so that it surely shows A's lease.
        let (held, _) = b.read("s", &keys, false).unwrap();

        // Peeked free, held by A: the commit fails its compares; no lease.
        let e = b
            .lease_from("s", ttl, by("B"), false, (free, Source::Peeked), None)
            .unwrap_err();
        assert!(
            matches!(&e, Error::LeaseHeld { holder, token, .. } if holder == "A" && *token == lease.token),
            "{e}"
        );

        // Peeked held, released since: no refusal on the peek, the lease.
        assert!(a.release("s", lease.token, Instant::now()).unwrap());
        let (taken, _) = b
            .lease_from("s", ttl, by("B"), false, (held, Source::Peeked), None)
            .unwrap();
        assert!(taken.token > lease.token, "{taken:?}");
        assert_eq!(taken.holder, "B");
    }

    /// A write to a scope its handle never saw peeks at it too, and acts on
    /// the peek only through a commit that compares: peeked before a newer
    /// holder raised the fence, the older token is refused all the same and
    /// nothing is written; on a peek that is current, the write lands.
    #[test]
    fn a_write_on_a_stale_peek_decides_on_the_cluster() {
        let Some((a, b)) = on_cluster("peek-write") else {
            return;
        };
        let ttl = Duration::from_secs(30);
        let entry = vec![b.keys.entry("s", "k")];
        let ops = [OpRef {
            key: "k",
            value: Some(b"late"),
            expected_version: None,
        }];
        let write_on = |peek: Vec<Read>, token: Token| {
            let fence = Fence::new(token);
            let rule = b.write_rule("s", &fence, &ops, &entry);
            let known = Some((peek, Source::Peeked));
            b.update_from("s", &entry, false, false, known, rule)
        };
        let old = a.acquire("s", "A", ttl, Instant::now()).unwrap();
        let stale = b.peek(&b.tracked("s", &entry)).unwrap();
        assert!(a.release("s", old.token, Instant::now()).unwrap());
        let new = a.acquire("s", "A2", ttl, Instant::now()).unwrap();
        // The fence raised, no entry written: only the record shows it.
        a.claim("s", &Fence::new(new.token)).unwrap();

        // Peeked when the fence was below the old token: refused anyway.
        let e = write_on(stale, old.token).unwrap_err();
        assert!(
            matches!(&e, Error::StaleToken { presented, current, .. }
                if *presented == old.token && *current == new.token.get()),
            "{e}"
        );
        assert_eq!(a.get("s", "k", None).unwrap(), None);

        // A fresh peek (were its member behind, the write would retry on
        // a read): the write lands.
        let fresh = b.peek(&b.tracked("s", &entry)).unwrap();
        write_on(fresh, new.token).unwrap();
        let written = a.get("s", "k", None).unwrap().unwrap();
        assert_eq!(
            (written.value.as_slice(), written.token, written.version),
            (&b"late"[..], new.token, 1)
        );
    }

    /// A peek at a scope its handle never saw takes the store-wide keys as
    /// the handle last saw them: after a failover step the handle did not
    /// see, its commit fails on the base, and the retry reads, so the token
    /// issued is above the step's base.
    #[test]
    fn a_first_contact_after_a_step_it_did_not_see_issues_above_the_base() {
        let Some((a, b)) = on_cluster("peek-base") else {
            return;
        };
        for scope in ["x", "y", "z"] {
            a.next_token(scope).unwrap();
        }
        // Scopes that exist: b's first contacts peek, from the second on
        // with the store-wide keys it remembers.
        b.next_token("x").unwrap();
        b.next_token("y").unwrap();
        let base = a.failover().unwrap();
        let token = b.next_token("z").unwrap();
        assert!(token.get() > base, "{token:?}, the step's base {base}");
    }

    #[test]
    fn first_contacts_turn_after_two_findings_in_a_row() {
        let f = FirstContacts::new();
        assert!(!f.likely_new(), "a new handle reads");
        f.found(true);
        assert!(f.likely_new());
        for _ in 0..5 {
            f.found(true);
        }
        // One scope that exists among new ones does not turn it...
        f.found(false);
        assert!(f.likely_new());
        f.found(true);
        // ...two in a row do, and two new ones turn it back.
        f.found(false);
        f.found(false);
        assert!(!f.likely_new());
        for _ in 0..5 {
            f.found(false);
        }
        f.found(true);
        assert!(!f.likely_new());
        f.found(true);
        assert!(f.likely_new());
    }
}
