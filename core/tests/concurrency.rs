//! Concurrency test: 8 threads on 3 scopes of one `memory:` store (real
//! monotonic clock, 30 ms leases) acquire, sometimes pause past their TTL,
//! claim, write with their token and seq, read with their token, renew and
//! release. Every outcome goes into a log; a checker then verifies the
//! fencing guarantees from the log alone, without ever asserting on timing:
//!
//! - tokens: per scope, every acquisition and `next_token` got a distinct
//!   token, and together they are exactly `1..=counter`; LEASE_HELD names
//!   one of them;
//! - the store's own order: the versions returned for key "k" of a scope are
//!   exactly `1..=n`, and along them the writers' tokens never decrease
//!   (strictly increase in strict mode), seqs increase within one token, and
//!   the final entry is the last accepted write;
//! - real-time order: an operation that started after an accepted write,
//!   claim or (eager) acquire with a greater token had finished is never
//!   accepted; stamps come from one global `SeqCst` counter taken right
//!   before each call and right after it returns;
//! - every STALE_TOKEN names a current fence greater than the presented token
//!   (or equal, in strict mode) that was actually issued in that scope and is
//!   at least every fence raise that finished before the call started;
//! - a token once rejected as stale never succeeds again (per thread, in
//!   program order);
//! - after a pause longer than the TTL, renew is LEASE_LOST and release
//!   returns false (`thread::sleep` sleeps at least as long as asked);
//! - the handle's metrics count the same issued tokens, leases and stale
//!   rejections as the log;
//! - the test did exercise rejections: at least one STALE_TOKEN, and at
//!   least one of a holder that had paused (with pauses twice the TTL and 8
//!   threads on 3 scopes, hundreds happen in practice).
//!
//! Set `FENCING_CONCURRENCY_STATS=1` to print what a run exercised.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use fencing::{Error, Fence, Op, Store, Token};

mod support;
use support::Rng;

const SCOPES: [&str; 3] = ["c0", "c1", "c2"];
const THREADS: usize = 8;
const ITERATIONS: usize = 40;
/// Every thread runs at least this many iterations, however slow the host,
/// so that the test always has paused holders to catch.
const MIN_ITERATIONS: usize = 6;
/// Threads start no new iteration after this (a bound on the test's
/// duration, never an assertion).
const BUDGET: Duration = Duration::from_millis(1500);
const TTL: Duration = Duration::from_millis(30);
/// Longer than the TTL, so the lease has certainly expired when a paused
/// holder wakes up.
const PAUSE: Duration = Duration::from_millis(55);
const WAIT: Duration = Duration::from_millis(500);
const KEY: &str = "k";
const OTHER_KEY: &str = "k2";

static STAMP: AtomicU64 = AtomicU64::new(0);

fn stamp() -> u64 {
    STAMP.fetch_add(1, Ordering::SeqCst)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Acquire,
    NextToken,
    Claim,
    Put,
    /// `apply([put k, put k2])`.
    Apply,
    /// `get(k)` presenting the token.
    Get,
    Renew,
    Release,
}

#[derive(Clone, Debug)]
enum Outcome {
    /// Acquire or next_token: the new token (also the event's `token`).
    Issued(u64),
    /// Put/apply (with the version returned for key "k"), claim (`None`).
    Accepted {
        version: Option<u64>,
    },
    /// A fenced read passed: the token of the entry it returned.
    Read {
        entry_token: Option<u64>,
    },
    Stale {
        current: u64,
    },
    Renewed,
    LeaseLost {
        current: Option<u64>,
    },
    Released(bool),
    /// A single acquire found the lease taken.
    Held {
        token: u64,
        remaining: Duration,
    },
    Timeout,
    Unexpected(Error),
}

#[derive(Clone, Debug)]
struct Event {
    thread: usize,
    scope: usize,
    kind: Kind,
    /// The presented token, or the one received (`Issued`); 0 for a
    /// failed acquire.
    token: u64,
    seq: Option<u64>,
    /// The holder slept past its TTL since it got this token.
    paused: bool,
    start: u64,
    end: u64,
    outcome: Outcome,
}

impl Event {
    fn accepted(&self) -> bool {
        matches!(
            self.outcome,
            Outcome::Accepted { .. } | Outcome::Read { .. }
        )
    }

    fn stale(&self) -> Option<u64> {
        match self.outcome {
            Outcome::Stale { current } => Some(current),
            _ => None,
        }
    }
}

fn value(thread: usize, token: u64, seq: u64) -> Vec<u8> {
    format!("{thread}:{token}:{seq}").into_bytes()
}

fn stale_or(e: Error, other: impl FnOnce(Error) -> Outcome) -> Outcome {
    match e {
        Error::StaleToken { current, .. } => Outcome::Stale { current },
        e => other(e),
    }
}

struct Worker {
    store: Store,
    thread: usize,
    log: Vec<Event>,
}

impl Worker {
    fn record(
        &mut self,
        scope: usize,
        kind: Kind,
        token: u64,
        seq: Option<u64>,
        paused: bool,
        call: impl FnOnce(&Store) -> Outcome,
    ) -> Outcome {
        let start = stamp();
        let outcome = call(&self.store);
        let end = stamp();
        let token = match outcome {
            Outcome::Issued(t) => t,
            _ => token,
        };
        self.log.push(Event {
            thread: self.thread,
            scope,
            kind,
            token,
            seq,
            paused,
            start,
            end,
            outcome: outcome.clone(),
        });
        outcome
    }

    fn run(&mut self, deadline: Instant) {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((self.thread as u64 + 1) * 0x2545_F491));
        let me = self.thread;
        let holder = format!("worker-{me}");
        for iteration in 0..ITERATIONS {
            if iteration >= MIN_ITERATIONS && Instant::now() > deadline {
                break;
            }
            let sc = rng.below(SCOPES.len() as u64) as usize;
            let scope = SCOPES[sc];
            // One time in eight, fence without a lease (a batch job taking a
            // token straight from the counter); otherwise take the lease.
            let leased = rng.below(8) != 0;
            let issued = if leased {
                // Mostly wait for the lease; sometimes just try once.
                let wait = rng.below(4) != 0;
                self.record(sc, Kind::Acquire, 0, None, false, |s| {
                    let result = if wait {
                        s.acquire_wait(scope, &holder, TTL, WAIT)
                    } else {
                        s.acquire(scope, &holder, TTL)
                    };
                    match result {
                        Ok(l) => Outcome::Issued(l.token.get()),
                        Err(Error::Timeout) => Outcome::Timeout,
                        Err(Error::LeaseHeld {
                            token, remaining, ..
                        }) if !wait => Outcome::Held {
                            token: token.get(),
                            remaining,
                        },
                        Err(e) => Outcome::Unexpected(e),
                    }
                })
            } else {
                self.record(sc, Kind::NextToken, 0, None, false, |s| {
                    match s.next_token(scope) {
                        Ok(t) => Outcome::Issued(t.get()),
                        Err(e) => Outcome::Unexpected(e),
                    }
                })
            };
            let Outcome::Issued(t) = issued else {
                continue;
            };
            let token = Token::new(t).expect("issued token in range");
            // Where (if anywhere) this holder pauses past its TTL.
            let pause_at = match rng.below(3) {
                0 => Some(rng.below(3)),
                _ => None,
            };
            let mut paused = false;
            let pause_if = |at: u64, paused: &mut bool| {
                if pause_at == Some(at) {
                    thread::sleep(PAUSE);
                    *paused = true;
                }
            };

            pause_if(0, &mut paused);
            let fence = Fence::new(token).with_holder(holder.clone());
            self.record(sc, Kind::Claim, t, Some(0), paused, |s| {
                match s.claim(scope, &fence.clone().with_seq(0)) {
                    Ok(()) => Outcome::Accepted { version: None },
                    Err(e) => stale_or(e, Outcome::Unexpected),
                }
            });

            pause_if(1, &mut paused);
            self.record(sc, Kind::Put, t, Some(1), paused, |s| {
                match s.put(scope, KEY, &value(me, t, 1), &fence.clone().with_seq(1)) {
                    Ok(r) => Outcome::Accepted {
                        version: Some(r.version),
                    },
                    Err(e) => stale_or(e, Outcome::Unexpected),
                }
            });
            if rng.below(2) == 0 {
                self.record(sc, Kind::Apply, t, Some(2), paused, |s| {
                    let ops = vec![
                        Op::put(KEY, value(me, t, 2)),
                        Op::put(OTHER_KEY, value(me, t, 2)),
                    ];
                    match s.apply(scope, &fence.clone().with_seq(2), ops) {
                        Ok(r) => Outcome::Accepted {
                            version: Some(r[0].version),
                        },
                        Err(e) => stale_or(e, Outcome::Unexpected),
                    }
                });
            } else {
                self.record(sc, Kind::Put, t, Some(2), paused, |s| {
                    match s.put(scope, KEY, &value(me, t, 2), &fence.clone().with_seq(2)) {
                        Ok(r) => Outcome::Accepted {
                            version: Some(r.version),
                        },
                        Err(e) => stale_or(e, Outcome::Unexpected),
                    }
                });
            }

            pause_if(2, &mut paused);
            self.record(sc, Kind::Get, t, None, paused, |s| {
                match s.get(scope, KEY, Some(&fence)) {
                    Ok(e) => Outcome::Read {
                        entry_token: e.map(|e| e.token.get()),
                    },
                    Err(e) => stale_or(e, Outcome::Unexpected),
                }
            });

            if leased {
                if paused || rng.below(2) == 0 {
                    self.record(sc, Kind::Renew, t, None, paused, |s| {
                        match s.renew(scope, token, TTL) {
                            Ok(_) => Outcome::Renewed,
                            Err(Error::LeaseLost { current, .. }) => Outcome::LeaseLost {
                                current: current.map(|(t, _)| t.get()),
                            },
                            Err(e) => Outcome::Unexpected(e),
                        }
                    });
                }
                self.record(sc, Kind::Release, t, None, paused, |s| {
                    match s.release(scope, token) {
                        Ok(b) => Outcome::Released(b),
                        Err(e) => Outcome::Unexpected(e),
                    }
                });
            }
        }
    }
}

fn run_workload(url: &str) -> (Store, Vec<Event>) {
    let store = Store::open(url).expect("open");
    let deadline = Instant::now() + BUDGET;
    let log = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (store, log) = (store.clone(), Arc::clone(&log));
            thread::spawn(move || {
                let mut w = Worker {
                    store,
                    thread,
                    log: Vec::new(),
                };
                w.run(deadline);
                log.lock().unwrap().extend(w.log);
            })
        })
        .collect();
    for h in handles {
        h.join().expect("worker panicked");
    }
    let log = Arc::try_unwrap(log).unwrap().into_inner().unwrap();
    (store, log)
}

/// A fence raise that finished at `end`: an accepted write or claim, or an
/// eager acquire.
struct Raise {
    token: u64,
    end: u64,
    /// An accepted write in strict mode: the same token is stale after it.
    seals: bool,
}

fn check(store: &Store, log: &[Event], strict: bool) {
    let fail = |what: &str, e: &Event| panic!("{what}: {e:?}");

    // Nothing but the expected outcomes.
    for e in log {
        if let Outcome::Unexpected(err) = &e.outcome {
            panic!("unexpected error {:?} ({err}) in {e:?}", err.code());
        }
    }

    for (sc, scope) in SCOPES.iter().enumerate() {
        let events: Vec<&Event> = log.iter().filter(|e| e.scope == sc).collect();
        let status = store.status(scope).expect("status");

        // Tokens: each issued once, and together exactly 1..=counter.
        let issued: Vec<u64> = events
            .iter()
            .filter(|e| matches!(e.outcome, Outcome::Issued(_)))
            .map(|e| e.token)
            .collect();
        let distinct: BTreeSet<u64> = issued.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            issued.len(),
            "{scope}: a token was issued twice: {issued:?}"
        );
        let expected: BTreeSet<u64> = (1..=status.counter).collect();
        assert_eq!(
            distinct, expected,
            "{scope}: issued tokens are not 1..=counter"
        );
        for e in &events {
            if let Outcome::Held { token, remaining } = e.outcome {
                if !distinct.contains(&token) || remaining > TTL {
                    fail("LEASE_HELD names a lease that was never granted", e);
                }
            }
        }

        // The store's own order of writes to "k": returned versions.
        let mut writes: BTreeMap<u64, &Event> = BTreeMap::new();
        for e in &events {
            if let Outcome::Accepted { version: Some(v) } = e.outcome {
                if let Some(prev) = writes.insert(v, e) {
                    panic!("{scope}: version {v} returned twice: {prev:?} and {e:?}");
                }
            }
        }
        let versions: Vec<u64> = writes.keys().copied().collect();
        assert_eq!(
            versions,
            (1..=versions.len() as u64).collect::<Vec<_>>(),
            "{scope}: accepted writes to {KEY:?} did not get versions 1..=n"
        );
        for pair in writes.values().collect::<Vec<_>>().windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let ordered = if strict {
                a.token < b.token
            } else {
                a.token < b.token || (a.token == b.token && a.seq < b.seq)
            };
            assert!(
                ordered,
                "{scope}: write order went backwards:\n  {a:?}\n  {b:?}"
            );
        }
        let last = store.get(scope, KEY, None).expect("get");
        match (writes.values().last(), last) {
            (None, None) => {}
            (Some(w), Some(entry)) => {
                assert_eq!(
                    entry.version,
                    versions.len() as u64,
                    "{scope}: final version"
                );
                assert_eq!(entry.token.get(), w.token, "{scope}: final token");
                assert_eq!(
                    entry.value,
                    value(w.thread, w.token, w.seq.unwrap()),
                    "{scope}: final value is not the last accepted write"
                );
            }
            (w, entry) => panic!("{scope}: last write {w:?} but entry {entry:?}"),
        }

        // Raises, in the order they finished.
        let mut raises: Vec<Raise> = events
            .iter()
            .filter_map(|e| match (&e.outcome, e.kind) {
                (Outcome::Issued(_), Kind::Acquire) => Some(Raise {
                    token: e.token,
                    end: e.end,
                    seals: false,
                }),
                (Outcome::Accepted { .. }, kind) => Some(Raise {
                    token: e.token,
                    end: e.end,
                    seals: strict && kind != Kind::Claim,
                }),
                _ => None,
            })
            .collect();
        raises.sort_by_key(|r| r.end);

        for e in &events {
            if !matches!(e.kind, Kind::Claim | Kind::Put | Kind::Apply | Kind::Get) {
                continue;
            }
            // Every raise that had finished before this call started.
            let before = raises.iter().take_while(|r| r.end < e.start);
            let floor = before.clone().map(|r| r.token).max().unwrap_or(0);
            let sealed_at_floor = before.clone().any(|r| r.seals && r.token == floor);
            if e.accepted() && (e.token < floor || (e.token == floor && sealed_at_floor)) {
                fail(
                    &format!("{scope}: accepted although fence {floor} (sealed: {sealed_at_floor}) was in place before it started"),
                    e,
                );
            }
            if let Outcome::Read {
                entry_token: Some(et),
            } = e.outcome
            {
                if et > e.token {
                    fail(
                        &format!("{scope}: a fenced read returned an entry of newer token {et}"),
                        e,
                    );
                }
            }
            if let Some(current) = e.stale() {
                let ok = if strict {
                    current >= e.token
                } else {
                    current > e.token
                };
                if !ok {
                    fail(&format!("{scope}: STALE_TOKEN names current {current}"), e);
                }
                if !distinct.contains(&current) {
                    fail(
                        &format!("{scope}: STALE_TOKEN names current {current}, never issued"),
                        e,
                    );
                }
                if current < floor {
                    fail(&format!("{scope}: STALE_TOKEN names current {current}, below the fence {floor} raised before the call"), e);
                }
            }
        }
    }

    // Per thread, in program order: a stale token never succeeds again; a
    // lease slept past its TTL cannot be renewed or released.
    for thread in 0..THREADS {
        let mut stale: BTreeSet<(usize, u64)> = BTreeSet::new();
        for e in log.iter().filter(|e| e.thread == thread) {
            if e.stale().is_some() {
                stale.insert((e.scope, e.token));
            }
            if e.accepted() && stale.contains(&(e.scope, e.token)) {
                fail("accepted after the same token was rejected as stale", e);
            }
            if e.paused {
                match (e.kind, &e.outcome) {
                    (Kind::Renew, Outcome::LeaseLost { current: None })
                    | (Kind::Release, Outcome::Released(false)) => {}
                    (Kind::Renew, Outcome::LeaseLost { current: Some(c) }) if *c > e.token => {}
                    (Kind::Renew, Outcome::LeaseLost { .. }) => {
                        fail("LEASE_LOST names an older lease as current", e)
                    }
                    (Kind::Renew | Kind::Release, _) => {
                        fail("a lease outlived a pause longer than its TTL", e)
                    }
                    _ => {}
                }
            }
        }
    }

    // Cross-check with the handle's metrics (docs/semantics.md, "Metrics").
    let m = store.metrics();
    let count = |f: &dyn Fn(&Event) -> bool| log.iter().filter(|e| f(e)).count() as u64;
    assert_eq!(
        m.tokens_issued,
        count(&|e| matches!(e.outcome, Outcome::Issued(_))),
        "tokens_issued"
    );
    assert_eq!(
        m.leases_acquired,
        count(&|e| e.kind == Kind::Acquire && matches!(e.outcome, Outcome::Issued(_))),
        "leases_acquired"
    );
    assert_eq!(
        m.stale_rejections,
        count(&|e| e.stale().is_some()),
        "stale_rejections"
    );

    // Not vacuous: the workload made stale holders and the store caught them.
    let stale = count(&|e| e.stale().is_some());
    let accepted = count(&|e| matches!(e.outcome, Outcome::Accepted { version: Some(_) }));
    let paused_stale = count(&|e| e.paused && e.stale().is_some());
    assert!(accepted > 0, "no write was accepted");
    assert!(stale > 0, "no STALE_TOKEN rejection happened");
    assert!(paused_stale > 0, "no paused holder was fenced off");
    if std::env::var_os("FENCING_CONCURRENCY_STATS").is_some() {
        eprintln!(
            "strict={strict}: {} events, {accepted} accepted writes, {stale} stale ({paused_stale} after a pause), {} lease held, {} timeouts",
            log.len(),
            count(&|e| matches!(e.outcome, Outcome::Held { .. })),
            count(&|e| matches!(e.outcome, Outcome::Timeout)),
        );
    }
}

#[test]
fn stale_holders_are_fenced_off() {
    let (store, log) = run_workload("memory:");
    check(&store, &log, false);
}

#[test]
fn stale_holders_are_fenced_off_strict() {
    let (store, log) = run_workload("memory:?strict=true");
    check(&store, &log, true);
}
