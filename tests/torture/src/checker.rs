//! Checks a history (see [`crate::history`]) against the promise.
//!
//! Terms. An operation is an `invoke` and its outcome. It *completed before*
//! another *began* when its outcome's `ts` is below the other's invoke `ts`
//! (real-time order; timestamps come from one host-wide monotonic clock, the
//! invoke one taken before the call, the outcome one after it). An operation
//! is *indeterminate* when it has no outcome (its process was killed) or
//! failed with `BACKEND` (e.g. a connection lost during commit): it may or
//! may not have taken effect. A write (put or claim) is *accepted* when its
//! outcome is `ok`.
//!
//! An operation *tells* a lower bound of its scope's fence at its completion:
//! an accepted write with token t (fence >= t); a `STALE_TOKEN` failure
//! (fence >= current); with eager fencing, a successful acquire with token t
//! and a `LEASE_HELD` failure naming token t (fence >= t).
//!
//! Rules, per scope:
//! 1. `token-decreased`: an accepted write never has a token below an
//!    accepted write that completed before it began.
//! 2. `duplicate-token`: no two successful issuances (`acquire`,
//!    `next_token`) of a scope name got the same token, across all the
//!    name's lives; `token-not-increasing`: an issued token is above every
//!    token issued by an issuance that completed before it began.
//! 3. `below-told-fence`: no write is accepted with a token below a fence
//!    bound told by an operation that completed before the write began.
//! 4. Final reads (process `final`, after every worker stopped), per key
//!    written: let M be the greatest (token, seq) of the acknowledged puts
//!    and deletes. The value read must come from a put that was
//!    acknowledged or indeterminate (`phantom-value` otherwise;
//!    `rejected-write-visible` if that put definitely failed), with
//!    (token, seq) >= M (`lost-write`: older than an acknowledged write),
//!    carrying the put's token. No value at all is a `lost-write` when M is
//!    a put and no delete above M may have happened. Acknowledged writes to a
//!    key with no successful final read are `unverified-write`.
//!    After a lossy failover (an asynchronous standby promoted), a put or
//!    delete acknowledged inside its window (completed after `from`, invoked
//!    before `end`) counts as indeterminate here, and only here: the old
//!    primary may have acknowledged it without the standby ever receiving
//!    it, which is the server's durability, not fencing's promise. Rules 1,
//!    2, 3, 5 and 6 still see every acknowledged operation: a token issued
//!    twice or a stale write accepted across a failover is reported.
//! 7. `token-without-standby`: after a failover that is not lossy (a
//!    synchronous standby), no issuance invoked after the standby was cut
//!    off (`cut`) and completed before the primary crashed (`ts`) returned a
//!    token: no standby can have confirmed its commit. Issuances that
//!    returned a token in such a window, lossy or not, are counted
//!    (`partition_tokens`).
//! 5. `paused-write-accepted`: a process paused for longer than the TTL
//!    (`pause`..`resume` longer than `ttl_ms`) whose next write with the
//!    token it acquired before the pause (the first put/claim/delete it invoked
//!    after `resume` with the token of its last successful acquire that
//!    completed before `pause`) must have that write rejected when a newer
//!    token was actually in the scope before that write began: an
//!    acquisition with a greater token (eager fencing) or an accepted write
//!    with a greater token, completed before the write was invoked. Without
//!    such a newer token nothing is demanded (the lease expired, but nobody
//!    took over: the store cannot know, and the write is legitimately
//!    accepted); such pauses are counted as `pauses_without_takeover`.
//! 6. `below-earlier-life`: a retire that returned true ended a life of its
//!    scope name (docs/semantics.md, "Retiring scopes"). A token issued, or a
//!    write accepted, by an operation that began after that retire completed
//!    must be above every token issued or accepted by an operation that
//!    completed before the retire began (the floor is at least those, and
//!    the new life's fence is the floor, sealed).
//!
//! 8. Jumps and outside tokens. An `advance_counter(V)` (a jump) and a
//!    write or claim with a token the store never issued (outside) may move
//!    a counter or fence past the scope's greatest token only up to the jump
//!    limit J = b + 2^48, b the base of the latest failover step
//!    (docs/semantics.md, "Failover"). b is below every token issued since
//!    that step, and a scope's greatest token passes J by at most one per
//!    operation, so a V more than [`OVER_LIMIT`] above a token t issued in the
//!    scope is *provably over the limit* when no failover (whose steps move
//!    b) ended after t's issuance began and crashed before the jump completed
//!    (skipped in a store opened with `jumps=unbounded`).
//!    - `issued-not-above-accepted`: an issued token is above every token
//!      carried by a write accepted, and every counter returned by an
//!      `advance_counter`, that completed before the issuance began (the
//!      counter issues above the counter and the fence), across every life,
//!      restart and failover.
//!    - `jump-over-limit-accepted`: a jump or write provably over the limit
//!      was not refused.
//!    - `refused-jump-took-effect`: after an `INVALID_ARGUMENT` jump or write
//!      to V provably over the limit, no token issued, counter returned or
//!      fence or lease told in the scope (by an operation that completed
//!      after the refused one began, and began before the next failover's
//!      crash) is at least V, unless another operation that may have taken
//!      effect carried a token between V and it.
//!    - `accepted-across-failover`: after a failover (the new primary open,
//!      `end`), no write is accepted with a token at or below one issued,
//!      accepted or returned by `advance_counter` by an operation that
//!      completed before the old primary crashed (`ts`): the step moved
//!      every fence above them and sealed it.
//!
//! Lives. Only a retire known to have returned true draws a life boundary.
//! One refused (`LEASE_HELD`, `INVALID_ARGUMENT`) or returning false changed
//! nothing. One without an outcome or failed with `BACKEND` may or may not
//! have ended a life: no boundary is drawn there (counted as
//! `retires_unknown`). That hides nothing rule 2 sees, as duplicates are
//! sought across every life of a name whatever the retires did, and it
//! invents nothing, as rule 6 only demands what a known retire implies.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::history::{Call, OpKind, Record, Returned};

/// One violation, with the operations involved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub rule: &'static str,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.rule, self.detail)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Invocations by workers (final reads excluded).
    pub operations: u64,
    pub indeterminate: u64,
    pub accepted_writes: u64,
    pub stale_rejections: u64,
    pub pauses: u64,
    pub kills: u64,
    pub restarts: u64,
    /// Standbys promoted (`failover` records).
    pub failovers: u64,
    /// Puts and deletes acknowledged inside a lossy failover's window.
    pub lossy_writes: u64,
    /// Tokens returned while a failover's standby was cut off (rule 7).
    pub partition_tokens: u64,
    /// Pauses longer than the TTL.
    pub paused_past_ttl: u64,
    /// Of those, the ones after which rule 5 demanded a rejection.
    pub pauses_with_takeover: u64,
    /// ... and the ones where nothing was demanded (no newer token, or the
    /// process never wrote with its old token again).
    pub pauses_without_takeover: u64,
    pub final_reads: u64,
    /// Successful acquire and next_token calls.
    pub tokens_issued: u64,
    /// Retires that returned true (a life ended).
    pub retires_accepted: u64,
    /// Retires that returned false (no state to drop).
    pub retires_empty: u64,
    /// Retires rejected (`LEASE_HELD`, `INVALID_ARGUMENT`, ...).
    pub retires_refused: u64,
    /// Retires without an outcome or failed with `BACKEND`.
    pub retires_unknown: u64,
    /// Per scope name used: one life, plus one per accepted retire.
    pub lives: u64,
    /// `duplicate-token` violations: a token issued twice for one name.
    pub duplicates: u64,
    /// `advance_counter` calls that returned.
    pub jumps_accepted: u64,
    /// Jumps and outside writes refused with `INVALID_ARGUMENT`.
    pub jumps_refused: u64,
    /// Jumps and writes provably over the jump limit, whatever their
    /// outcome (rule 8).
    pub jumps_over_limit: u64,
    /// Writes and claims with an outside token that were accepted.
    pub outside_accepted: u64,
    pub violations: Vec<Violation>,
}

#[derive(Clone, Debug)]
enum Outcome {
    Ok(Returned),
    Fail { code: String, current: Option<u64> },
}

#[derive(Clone, Debug)]
struct Op {
    p: String,
    n: u64,
    kind: OpKind,
    call: Call,
    invoke: u64,
    /// None: no outcome recorded.
    done: Option<(u64, Outcome)>,
}

impl Op {
    fn ok(&self) -> Option<&Returned> {
        match &self.done {
            Some((_, Outcome::Ok(r))) => Some(r),
            _ => None,
        }
    }

    fn fail_code(&self) -> Option<&str> {
        match &self.done {
            Some((_, Outcome::Fail { code, .. })) => Some(code),
            _ => None,
        }
    }

    fn indeterminate(&self) -> bool {
        self.done.is_none() || self.fail_code() == Some("BACKEND")
    }

    fn definitely_failed(&self) -> bool {
        matches!(self.fail_code(), Some(c) if c != "BACKEND")
    }

    fn completed(&self) -> Option<u64> {
        self.done.as_ref().map(|(ts, _)| *ts)
    }

    fn name(&self) -> String {
        format!(
            "{} #{} {}(scope={}, token={})",
            self.p,
            self.n,
            self.kind.as_str(),
            self.call.scope,
            self.call
                .token
                .or(self.ok().and_then(|r| r.token))
                .map_or("-".to_owned(), |t| t.to_string())
        )
    }
}

/// Values known at completion times; answers "the greatest value among
/// those completed strictly before t".
struct Timeline {
    /// (completion ts, running max of value, index of the op giving it).
    points: Vec<(u64, u64, usize)>,
}

impl Timeline {
    fn new(mut items: Vec<(u64, u64, usize)>) -> Timeline {
        items.sort_unstable();
        let mut best: Option<(u64, usize)> = None;
        let points = items
            .into_iter()
            .map(|(ts, v, i)| {
                if best.is_none_or(|(b, _)| v > b) {
                    best = Some((v, i));
                }
                let (b, bi) = best.unwrap();
                (ts, b, bi)
            })
            .collect();
        Timeline { points }
    }

    fn max_before(&self, t: u64) -> Option<(u64, usize)> {
        let k = self.points.partition_point(|(ts, _, _)| *ts < t);
        k.checked_sub(1)
            .map(|i| (self.points[i].1, self.points[i].2))
    }
}

/// How far above a token issued since the latest failover step a jump goes
/// to be provably above the jump limit (rule 8): 2^48 of jump room, and
/// 2^40 for a scope's greatest token to pass the limit one by one (more
/// operations than any run makes).
pub const OVER_LIMIT: u64 = (1 << 48) + (1 << 40);

pub fn check(records: &[Record]) -> Report {
    let mut report = Report::default();
    let mut eager = true;
    let mut unbounded = false;
    // (ts, end) per failover.
    let mut failovers: Vec<(u64, u64)> = Vec::new();
    let mut ttl_ms = None;
    let mut ops: Vec<Op> = Vec::new();
    let mut index: HashMap<(String, u64), usize> = HashMap::new();
    let mut pauses: Vec<(String, u64)> = Vec::new();
    let mut resumes: Vec<(String, u64, u64)> = Vec::new();
    let mut lossy: Vec<(u64, u64)> = Vec::new();
    // (cut, crash, lossy) per failover.
    let mut partitions: Vec<(u64, u64, bool)> = Vec::new();
    for r in records {
        match r {
            Record::Meta {
                url,
                eager: e,
                ttl_ms: t,
            } => {
                eager = *e;
                ttl_ms = Some(*t);
                unbounded = url.contains("jumps=unbounded");
            }
            Record::Invoke { p, n, ts, op, call } => {
                if index.insert((p.clone(), *n), ops.len()).is_some() {
                    report.violations.push(Violation {
                        rule: "malformed-history",
                        detail: format!("{p} #{n} invoked twice"),
                    });
                }
                ops.push(Op {
                    p: p.clone(),
                    n: *n,
                    kind: *op,
                    call: call.clone(),
                    invoke: *ts,
                    done: None,
                });
            }
            Record::Ok { p, n, ts, ret } => complete(
                &mut ops,
                &index,
                &mut report,
                p,
                *n,
                *ts,
                Outcome::Ok(ret.clone()),
            ),
            Record::Fail {
                p,
                n,
                ts,
                code,
                current,
            } => complete(
                &mut ops,
                &index,
                &mut report,
                p,
                *n,
                *ts,
                Outcome::Fail {
                    code: code.clone(),
                    current: *current,
                },
            ),
            Record::Pause { p, ts } => {
                report.pauses += 1;
                pauses.push((p.clone(), *ts));
            }
            Record::Resume { p, ts } => match pauses.iter().rposition(|(q, _)| q == p) {
                Some(i) => {
                    let (_, start) = pauses.remove(i);
                    resumes.push((p.clone(), start, *ts));
                }
                None => report.violations.push(Violation {
                    rule: "malformed-history",
                    detail: format!("{p} resumed without a pause"),
                }),
            },
            Record::Kill { .. } => report.kills += 1,
            Record::Restart { .. } => report.restarts += 1,
            Record::Failover {
                from,
                cut,
                ts,
                end,
                lossy: l,
                ..
            } => {
                report.failovers += 1;
                failovers.push((*ts, *end));
                partitions.push((*cut, *ts, *l));
                if *l {
                    lossy.push((*from, *end));
                }
            }
        }
    }

    for op in &ops {
        if op.p == "final" {
            continue;
        }
        report.operations += 1;
        if op.indeterminate() {
            report.indeterminate += 1;
        }
        if op.kind.is_write() && op.ok().is_some() {
            report.accepted_writes += 1;
        }
        if op.fail_code() == Some("STALE_TOKEN") {
            report.stale_rejections += 1;
        }
        if op.kind.issues() && op.ok().is_some() {
            report.tokens_issued += 1;
        }
        if op.kind == OpKind::AdvanceCounter && op.ok().is_some() {
            report.jumps_accepted += 1;
        }
        if op.fail_code() == Some("INVALID_ARGUMENT")
            && (op.kind == OpKind::AdvanceCounter || op.kind.is_write())
        {
            report.jumps_refused += 1;
        }
        if op.call.outside && op.kind.is_write() && op.ok().is_some() {
            report.outside_accepted += 1;
        }
        if op.kind == OpKind::Retire {
            match op.ok().map(|r| r.retired) {
                Some(Some(true)) => report.retires_accepted += 1,
                Some(_) => report.retires_empty += 1,
                None if op.indeterminate() => report.retires_unknown += 1,
                None => report.retires_refused += 1,
            }
        }
    }

    let mut by_scope: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        by_scope.entry(&op.call.scope).or_default().push(i);
    }
    let mut newer: HashMap<&str, Timeline> = HashMap::new();
    for (scope, idx) in &by_scope {
        check_scope(&ops, idx, eager, &mut report);
        check_lives(&ops, idx, &mut report);
        check_jumps(&ops, idx, &failovers, unbounded, &mut report);
        // Tokens in the scope (rule 5): acquisitions (eager) and accepted writes.
        let items = idx
            .iter()
            .filter_map(|&i| {
                let op = &ops[i];
                let t = match op.kind {
                    OpKind::Acquire if eager => op.ok()?.token?,
                    k if k.is_write() => op.ok().and(op.call.token)?,
                    _ => return None,
                };
                Some((op.completed()?, t, i))
            })
            .collect();
        newer.insert(scope, Timeline::new(items));
    }
    check_final_reads(&ops, &lossy, &mut report);
    check_partitions(&ops, &partitions, &mut report);
    if let Some(ttl_ms) = ttl_ms {
        check_pauses(&ops, &resumes, ttl_ms, &newer, &mut report);
    }
    report
}

fn complete(
    ops: &mut [Op],
    index: &HashMap<(String, u64), usize>,
    report: &mut Report,
    p: &str,
    n: u64,
    ts: u64,
    outcome: Outcome,
) {
    match index.get(&(p.to_owned(), n)) {
        Some(&i) if ops[i].done.is_none() => ops[i].done = Some((ts, outcome)),
        _ => report.violations.push(Violation {
            rule: "malformed-history",
            detail: format!("outcome of {p} #{n} without a single invoke"),
        }),
    }
}

fn check_scope(ops: &[Op], idx: &[usize], eager: bool, report: &mut Report) {
    // Rule 2: issuances, across every life of the name.
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let mut acquired = Vec::new();
    for &i in idx {
        let op = &ops[i];
        if !op.kind.issues() {
            continue;
        }
        if let (Some(t), Some(done)) = (op.ok().and_then(|r| r.token), op.completed()) {
            if let Some(&j) = seen.get(&t) {
                report.duplicates += 1;
                report.violations.push(Violation {
                    rule: "duplicate-token",
                    detail: format!(
                        "token {t} issued to {} ({}) and {} ({})",
                        ops[j].name(),
                        life_of(ops, idx, j),
                        op.name(),
                        life_of(ops, idx, i)
                    ),
                });
            } else {
                seen.insert(t, i);
            }
            acquired.push((done, t, i));
        }
    }
    let acquired = Timeline::new(acquired);
    for &i in idx {
        let op = &ops[i];
        if !op.kind.issues() {
            continue;
        }
        if let Some(t) = op.ok().and_then(|r| r.token) {
            if let Some((max, j)) = acquired.max_before(op.invoke) {
                // Equal is a duplicate, reported above.
                if t < max {
                    report.violations.push(Violation {
                        rule: "token-not-increasing",
                        detail: format!(
                            "{} got {t} after {} had got {max}",
                            op.name(),
                            ops[j].name()
                        ),
                    });
                }
            }
        }
    }

    // Rules 1 and 3.
    let mut accepted = Vec::new();
    let mut told = Vec::new();
    for &i in idx {
        let op = &ops[i];
        let Some((done, outcome)) = &op.done else {
            continue;
        };
        let bound = match outcome {
            Outcome::Ok(r) if op.kind.is_write() => {
                if let Some(t) = op.call.token {
                    accepted.push((*done, t, i));
                }
                op.call.token
            }
            Outcome::Ok(r) if op.kind == OpKind::Acquire && eager => r.token,
            Outcome::Fail { code, current } if code == "STALE_TOKEN" => *current,
            Outcome::Fail { code, current } if code == "LEASE_HELD" && eager => *current,
            _ => None,
        };
        if let Some(b) = bound {
            told.push((*done, b, i));
        }
    }
    let accepted_tl = Timeline::new(accepted.clone());
    let told = Timeline::new(told);
    for &(_, t, i) in &accepted {
        let op = &ops[i];
        if let Some((max, j)) = accepted_tl.max_before(op.invoke) {
            if t < max {
                report.violations.push(Violation {
                    rule: "token-decreased",
                    detail: format!(
                        "{} accepted after {} had been accepted",
                        op.name(),
                        ops[j].name()
                    ),
                });
            }
        }
        if let Some((max, j)) = told.max_before(op.invoke) {
            if t < max {
                report.violations.push(Violation {
                    rule: "below-told-fence",
                    detail: format!(
                        "{} accepted, but {} had already been told the fence is at least {max}",
                        op.name(),
                        ops[j].name()
                    ),
                });
            }
        }
    }
}

/// Whether the op is a retire known to have ended a life.
fn ended_life(op: &Op) -> bool {
    op.kind == OpKind::Retire && op.ok().and_then(|r| r.retired) == Some(true)
}

/// "life N" (N-1 retires of the name ended before the op began), or
/// "life N to M" when retires that overlap the op may have come first.
fn life_of(ops: &[Op], idx: &[usize], i: usize) -> String {
    let op = &ops[i];
    let ends = || idx.iter().map(|&k| &ops[k]).filter(|r| ended_life(r));
    let before = ends()
        .filter(|r| r.completed().is_some_and(|d| d < op.invoke))
        .count();
    let until = op.completed().unwrap_or(u64::MAX);
    let overlapping = ends()
        .filter(|r| r.completed().is_some_and(|d| d >= op.invoke) && r.invoke < until)
        .count();
    if overlapping == 0 {
        format!("life {}", before + 1)
    } else {
        format!("life {} to {}", before + 1, before + 1 + overlapping)
    }
}

/// Rule 6: after a retire known to have ended a life, tokens issued and
/// writes accepted are above everything issued or accepted before it.
fn check_lives(ops: &[Op], idx: &[usize], report: &mut Report) {
    let retires: Vec<usize> = idx
        .iter()
        .copied()
        .filter(|&i| ended_life(&ops[i]))
        .collect();
    report.lives += 1 + retires.len() as u64;
    if retires.is_empty() {
        return;
    }
    let token_of = |op: &Op| match op.kind {
        k if k.issues() => op.ok()?.token,
        k if k.is_write() => op.ok().and(op.call.token),
        _ => None,
    };
    // Tokens issued or accepted, and counters advance_counter returned (the
    // floor covers the counter too), by completion time.
    let known = Timeline::new(
        idx.iter()
            .filter_map(|&i| {
                let op = &ops[i];
                let v = token_of(op).or_else(|| advanced_to(op))?;
                Some((op.completed()?, v, i))
            })
            .collect(),
    );
    // Per retire, as of its completion: the greatest token known before it began.
    let floors = Timeline::new(
        retires
            .iter()
            .filter_map(|&r| {
                let (bound, _) = known.max_before(ops[r].invoke)?;
                Some((ops[r].completed()?, bound, r))
            })
            .collect(),
    );
    for &i in idx {
        let op = &ops[i];
        let (Some(t), Some((floor, r))) = (token_of(op), floors.max_before(op.invoke)) else {
            continue;
        };
        if t <= floor {
            let what = if op.kind.issues() {
                "got"
            } else {
                "was accepted with"
            };
            report.violations.push(Violation {
                rule: "below-earlier-life",
                detail: format!(
                    "{} {what} {t}, after {} ended a life in which {floor} had been issued or accepted",
                    op.name(),
                    ops[r].name()
                ),
            });
        }
    }
}

/// The counter an `advance_counter` that returned reported.
fn advanced_to(op: &Op) -> Option<u64> {
    match op.kind {
        OpKind::AdvanceCounter => op.ok()?.token,
        _ => None,
    }
}

/// Rule 8, per scope.
fn check_jumps(
    ops: &[Op],
    idx: &[usize],
    failovers: &[(u64, u64)],
    unbounded: bool,
    report: &mut Report,
) {
    // issued-not-above-accepted: writes accepted and counters advanced.
    let raised = Timeline::new(
        idx.iter()
            .filter_map(|&i| {
                let op = &ops[i];
                let v = match op.kind {
                    k if k.is_write() => op.ok().and(op.call.token)?,
                    _ => advanced_to(op)?,
                };
                Some((op.completed()?, v, i))
            })
            .collect(),
    );
    for &i in idx {
        let op = &ops[i];
        let Some(t) = op.kind.issues().then(|| op.ok()?.token).flatten() else {
            continue;
        };
        if let Some((max, j)) = raised.max_before(op.invoke) {
            if t <= max {
                report.violations.push(Violation {
                    rule: "issued-not-above-accepted",
                    detail: format!(
                        "{} got {t} after {} had taken the scope to {max}",
                        op.name(),
                        ops[j].name()
                    ),
                });
            }
        }
    }

    // accepted-across-failover: what was known before each crash.
    let known = Timeline::new(
        idx.iter()
            .filter_map(|&i| {
                let op = &ops[i];
                let v = match op.kind {
                    k if k.issues() => op.ok()?.token?,
                    k if k.is_write() => op.ok().and(op.call.token)?,
                    _ => advanced_to(op)?,
                };
                Some((op.completed()?, v, i))
            })
            .collect(),
    );
    let mut by_end = failovers.to_vec();
    by_end.sort_unstable_by_key(|&(_, end)| end);
    for &i in idx {
        let op = &ops[i];
        let (true, Some(t)) = (op.kind.is_write() && op.ok().is_some(), op.call.token) else {
            continue;
        };
        // The latest failover open before the write began knows the most.
        let k = by_end.partition_point(|&(_, end)| end < op.invoke);
        let Some(&(crash, _)) = k.checked_sub(1).map(|k| &by_end[k]) else {
            continue;
        };
        if let Some((max, j)) = known.max_before(crash) {
            if t <= max {
                report.violations.push(Violation {
                    rule: "accepted-across-failover",
                    detail: format!(
                        "{} accepted after a failover, but {} had {max} before the old primary crashed",
                        op.name(),
                        ops[j].name()
                    ),
                });
            }
        }
    }

    if unbounded {
        return;
    }
    // Issuances by invoke time: (invoke, done, token, index).
    let mut issued: Vec<(u64, u64, u64, usize)> = idx
        .iter()
        .filter_map(|&i| {
            let op = &ops[i];
            if !op.kind.issues() {
                return None;
            }
            Some((op.invoke, op.completed()?, op.ok()?.token?, i))
        })
        .collect();
    issued.sort_unstable();
    let Some(lowest) = issued.iter().map(|e| e.2).min() else {
        return;
    };
    // The lowest token issued since the latest failover that could have moved
    // the limit before `op` completed, by an issuance completed before `op`
    // began (the earliest few suffice: tokens grow with time).
    let over_limit = |op: &Op, v: u64| -> Option<(u64, usize)> {
        if v <= lowest.saturating_add(OVER_LIMIT) {
            return None;
        }
        let done = op.completed()?;
        let gate = failovers
            .iter()
            .filter(|&&(ts, _)| ts < done)
            .map(|&(_, end)| end)
            .max()
            .unwrap_or(0);
        let from = issued.partition_point(|e| e.0 < gate);
        issued[from..]
            .iter()
            .take_while(|e| e.0 < op.invoke)
            .filter(|e| e.1 < op.invoke)
            .take(64)
            .map(|e| (e.2, e.3))
            .min()
            .filter(|&(t, _)| v > t.saturating_add(OVER_LIMIT))
    };
    // What the store reported in the scope: (invoke, done, value, index).
    let told: Vec<(u64, u64, u64, usize)> = idx
        .iter()
        .filter_map(|&i| {
            let op = &ops[i];
            let v = match &op.done {
                Some((_, Outcome::Ok(r))) if op.kind.issues() => r.token?,
                Some((_, Outcome::Ok(_))) => advanced_to(op)?,
                Some((_, Outcome::Fail { code, current }))
                    if code == "STALE_TOKEN" || code == "LEASE_HELD" =>
                {
                    (*current)?
                }
                _ => return None,
            };
            Some((op.invoke, op.completed()?, v, i))
        })
        .collect();
    // Tokens carried by operations that may have taken effect.
    let mut carried: Vec<u64> = idx
        .iter()
        .map(|&i| &ops[i])
        .filter(|op| !op.definitely_failed())
        .filter_map(|op| op.call.token)
        .collect();
    carried.sort_unstable();
    for &i in idx {
        let op = &ops[i];
        if op.kind != OpKind::AdvanceCounter && !op.kind.is_write() {
            continue;
        }
        let Some(v) = op.call.token else {
            continue;
        };
        let Some((t, k)) = over_limit(op, v) else {
            continue;
        };
        report.jumps_over_limit += 1;
        if op.ok().is_some() {
            report.violations.push(Violation {
                rule: "jump-over-limit-accepted",
                detail: format!(
                    "{} to {v} accepted, more than 2^48 + 2^40 above {} ({t}) with no failover between",
                    op.name(),
                    ops[k].name()
                ),
            });
            continue;
        }
        if op.fail_code() != Some("INVALID_ARGUMENT") {
            continue;
        }
        let crash = failovers
            .iter()
            .map(|&(ts, _)| ts)
            .filter(|&ts| ts > op.invoke)
            .min()
            .unwrap_or(u64::MAX);
        let from = op.invoke;
        for &(invoke, done, seen, o) in &told {
            if done <= from || invoke >= crash || seen < v {
                continue;
            }
            let explained = carried[carried.partition_point(|&c| c < v)..]
                .first()
                .is_some_and(|&c| c <= seen);
            if !explained {
                report.violations.push(Violation {
                    rule: "refused-jump-took-effect",
                    detail: format!(
                        "{} to {v} was refused, but {} saw {seen}",
                        op.name(),
                        ops[o].name()
                    ),
                });
            }
        }
    }
}

fn check_final_reads(ops: &[Op], lossy: &[(u64, u64)], report: &mut Report) {
    // Acknowledged, but maybe on an old primary only (see rule 4).
    let maybe_lost = |op: &Op| {
        op.completed()
            .is_some_and(|d| lossy.iter().any(|&(from, end)| d > from && op.invoke < end))
    };
    report.lossy_writes = ops
        .iter()
        .filter(|o| matches!(o.kind, OpKind::Put | OpKind::Delete) && o.ok().is_some())
        .filter(|o| maybe_lost(o))
        .count() as u64;
    // (scope, key) -> puts and deletes
    let mut puts: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    let mut by_value: HashMap<&str, usize> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        if matches!(op.kind, OpKind::Put | OpKind::Delete) && op.p != "final" {
            if let Some(key) = &op.call.key {
                puts.entry((&op.call.scope, key)).or_default().push(i);
            }
            if let Some(v) = &op.call.value {
                by_value.insert(v, i);
            }
        }
    }
    let mut finals: HashMap<(&str, &str), &Returned> = HashMap::new();
    for op in ops
        .iter()
        .filter(|o| o.p == "final" && o.kind == OpKind::Get)
    {
        if let (Some(key), Some(r)) = (&op.call.key, op.ok()) {
            report.final_reads += 1;
            finals.insert((&op.call.scope, key), r);
        }
    }
    let order = |op: &Op| (op.call.token.unwrap_or(0), op.call.seq.unwrap_or(0));
    for ((scope, key), list) in &puts {
        let acked = list
            .iter()
            .copied()
            .filter(|&i| ops[i].ok().is_some() && !maybe_lost(&ops[i]))
            .max_by_key(|&i| order(&ops[i]));
        let Some(read) = finals.get(&(*scope, *key)) else {
            if let Some(a) = acked {
                report.violations.push(Violation {
                    rule: "unverified-write",
                    detail: format!(
                        "{} acknowledged, but {scope}/{key} was never read at the end",
                        ops[a].name()
                    ),
                });
            }
            continue;
        };
        let Some(value) = &read.value else {
            // Empty is right after a delete at or above M (one acknowledged,
            // or one that may have taken effect).
            let deleted = |a: usize| {
                list.iter().any(|&i| {
                    let d = &ops[i];
                    d.kind == OpKind::Delete && !d.definitely_failed() && order(d) >= order(&ops[a])
                })
            };
            if let Some(a) = acked.filter(|&a| !deleted(a)) {
                report.violations.push(Violation {
                    rule: "lost-write",
                    detail: format!(
                        "{} acknowledged, but {scope}/{key} is empty at the end",
                        ops[a].name()
                    ),
                });
            }
            continue;
        };
        let Some(&w) = by_value.get(value.as_str()) else {
            report.violations.push(Violation {
                rule: "phantom-value",
                detail: format!("{scope}/{key} holds {value:?}, which no put wrote"),
            });
            continue;
        };
        let writer = &ops[w];
        if writer.call.scope != *scope || writer.call.key.as_deref() != Some(*key) {
            report.violations.push(Violation {
                rule: "phantom-value",
                detail: format!(
                    "{scope}/{key} holds {value:?}, written by {} to another key",
                    writer.name()
                ),
            });
            continue;
        }
        if writer.definitely_failed() {
            report.violations.push(Violation {
                rule: "rejected-write-visible",
                detail: format!(
                    "{scope}/{key} holds {value:?} from {}, which failed",
                    writer.name()
                ),
            });
            continue;
        }
        if read.wtoken != writer.call.token {
            report.violations.push(Violation {
                rule: "phantom-value",
                detail: format!(
                    "{scope}/{key}: entry token {:?}, but {} wrote it",
                    read.wtoken,
                    writer.name()
                ),
            });
        }
        if let Some(a) = acked {
            let newest = &ops[a];
            if order(writer) < order(newest) || (order(writer) == order(newest) && a != w) {
                report.violations.push(Violation {
                    rule: "lost-write",
                    detail: format!(
                        "{} acknowledged, but {scope}/{key} holds the value of {}",
                        newest.name(),
                        writer.name()
                    ),
                });
            }
        }
    }
}

/// Rule 7.
fn check_partitions(ops: &[Op], partitions: &[(u64, u64, bool)], report: &mut Report) {
    for op in ops.iter().filter(|o| o.kind.issues() && o.p != "final") {
        let (Some(t), Some(done)) = (op.ok().and_then(|r| r.token), op.completed()) else {
            continue;
        };
        let Some(&(_, _, lossy)) = partitions
            .iter()
            .find(|&&(cut, crash, _)| op.invoke > cut && done < crash)
        else {
            continue;
        };
        report.partition_tokens += 1;
        if !lossy {
            report.violations.push(Violation {
                rule: "token-without-standby",
                detail: format!(
                    "{} returned {t} while the synchronous standby was cut off",
                    op.name()
                ),
            });
        }
    }
}

fn check_pauses(
    ops: &[Op],
    resumes: &[(String, u64, u64)],
    ttl_ms: u64,
    newer: &HashMap<&str, Timeline>,
    report: &mut Report,
) {
    let mut by_p: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        by_p.entry(&op.p).or_default().push(i);
    }
    for (p, start, end) in resumes {
        if end.saturating_sub(*start) <= ttl_ms.saturating_mul(1_000_000) {
            continue;
        }
        report.paused_past_ttl += 1;
        let mine = by_p.get(p.as_str()).map_or(&[][..], Vec::as_slice);
        // The token held at the pause: the last acquire completed before it.
        let held = mine
            .iter()
            .filter(|&&i| ops[i].kind == OpKind::Acquire)
            .filter(|&&i| ops[i].completed().is_some_and(|d| d < *start))
            .filter_map(|&i| Some((i, ops[i].ok()?.token?)))
            .next_back();
        let next_write = held.and_then(|(a, t)| {
            mine.iter().copied().find(|&i| {
                let op = &ops[i];
                op.kind.is_write()
                    && op.invoke > *end
                    && op.call.token == Some(t)
                    && op.call.scope == ops[a].call.scope
            })
        });
        let Some(w) = next_write else {
            report.pauses_without_takeover += 1;
            continue;
        };
        let op = &ops[w];
        let token = op.call.token.unwrap_or(0);
        let takeover = newer
            .get(op.call.scope.as_str())
            .and_then(|tl| tl.max_before(op.invoke))
            .filter(|(max, _)| *max > token);
        let Some((max, j)) = takeover else {
            report.pauses_without_takeover += 1;
            continue;
        };
        report.pauses_with_takeover += 1;
        if op.ok().is_some() {
            report.violations.push(Violation {
                rule: "paused-write-accepted",
                detail: format!(
                    "{} resumed after {} ms stopped (ttl {ttl_ms} ms) and {} was accepted, though {} had token {max}",
                    p,
                    (end - start) / 1_000_000,
                    op.name(),
                    ops[j].name()
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests;
