//! `etcd://` on real clusters (docs/etcd.md): leases ending on etcd's time,
//! racing clients, a leader killed under load, a majority stopped. The
//! shared scenarios run in tests/runner/tests/etcd.rs; these are what only
//! a cluster can show. Tests that kill or pause members start a cluster of
//! their own.
#![cfg(feature = "etcd")]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use fencing::{BackendErrorKind, Error, ErrorCode, Fence, Store, Token};

mod support;
use support::{etcd_raw, etcd_test_members, fresh_schema, OwnEtcd};

fn open(members: &str, tag: &str, options: &str) -> Store {
    let url = format!("etcd://{members}/{}{options}", fresh_schema(tag));
    Store::open(&url).unwrap_or_else(|e| panic!("open {url}: {e}"))
}

fn token(t: u64) -> Token {
    Token::new(t).unwrap()
}

#[test]
fn a_lease_ends_on_etcds_time_never_earlier_and_its_holder_is_fenced() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let store = open(&members, "expiry", "");
    let sent = Instant::now();
    let a = store
        .acquire("job", "A", Duration::from_millis(1200))
        .unwrap();
    // TTLs are whole seconds on etcd, rounded up, at least the cluster's
    // minimum; the lease says what it got.
    assert!(
        a.ttl >= Duration::from_secs(2) && a.ttl.subsec_nanos() == 0,
        "{a:?}"
    );
    // The time left counts from when the grant was asked for, before etcd
    // started the TTL: never more than etcd gives the lease (it said the
    // whole TTL, counted from its answer, until 2026-12-07).
    assert!(a.remaining < a.ttl, "{a:?}");
    store.put("job", "k", b"A", &Fence::new(a.token)).unwrap();
    let status = store.status("job").unwrap();
    let live = status.lease.expect("live lease");
    assert_eq!((live.token, live.holder.as_str()), (a.token, "A"));
    assert!(live.remaining <= a.ttl);
    let b = loop {
        match store.acquire("job", "B", Duration::from_secs(5)) {
            Ok(b) => break b,
            Err(Error::LeaseHeld { token, holder, .. }) => {
                assert_eq!((token, holder.as_str()), (a.token, "A"));
                // Never before the TTL counted from before the acquire.
                assert!(
                    sent.elapsed() < Duration::from_secs(60),
                    "A's lease never ended"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert!(
        sent.elapsed() >= a.ttl,
        "B got the lease {:?} after A's",
        sent.elapsed()
    );
    assert_eq!(b.token.get(), a.token.get() + 1);
    let stale = store
        .put("job", "k", b"A late", &Fence::new(a.token))
        .unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleToken);
    let lost = store
        .renew("job", a.token, Duration::from_secs(5))
        .unwrap_err();
    assert_eq!(lost.code(), ErrorCode::LeaseLost);
    assert_eq!(store.get("job", "k", None).unwrap().unwrap().value, b"A");
}

#[test]
fn renew_moves_the_lease_and_release_ends_it_at_once() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let store = open(&members, "renew", "");
    let a = store.acquire("s", "A", Duration::from_secs(2)).unwrap();
    let renewed = store.renew("s", a.token, Duration::from_secs(7)).unwrap();
    assert_eq!(
        (renewed.token, renewed.ttl),
        (a.token, Duration::from_secs(7))
    );
    let live = store.status("s").unwrap().lease.unwrap();
    assert!(live.remaining > Duration::from_secs(4), "{live:?}");
    assert!(store.release("s", a.token).unwrap());
    assert!(!store.release("s", a.token).unwrap());
    assert!(store.status("s").unwrap().lease.is_none());
    let b = store.acquire("s", "B", Duration::from_secs(2)).unwrap();
    assert_eq!(b.token.get(), a.token.get() + 1);
    assert_eq!(
        store
            .renew("s", a.token, Duration::from_secs(2))
            .unwrap_err()
            .code(),
        ErrorCode::LeaseLost
    );
    // A second handle sees the same lease: the state is the cluster's.
    let other = Store::open(store.location()).unwrap();
    let seen = other.status("s").unwrap().lease.unwrap();
    assert_eq!((seen.token, seen.holder.as_str()), (b.token, "B"));
}

#[test]
fn racing_handles_never_share_a_token_and_lose_no_write() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let location = open(&members, "race", "").location().to_owned();
    let accepted = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let location = location.clone();
            let accepted = Arc::clone(&accepted);
            std::thread::spawn(move || {
                let store = Store::open(&location).unwrap();
                let mut mine = Vec::new();
                for i in 0..15 {
                    let token = store.next_token("s").unwrap();
                    mine.push(token.get());
                    let value = format!("{t}-{i}");
                    match store.put("s", "k", value.as_bytes(), &Fence::new(token)) {
                        Ok(r) => accepted.lock().unwrap().push((token.get(), r.version)),
                        Err(e) => assert_eq!(e.code(), ErrorCode::StaleToken, "{e}"),
                    }
                }
                // One handle's tokens only go up.
                assert!(mine.windows(2).all(|w| w[0] < w[1]), "{mine:?}");
                mine
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in threads {
        all.extend(t.join().unwrap());
    }
    let distinct: HashSet<u64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), all.len(), "a token was issued twice");
    let store = Store::open(&location).unwrap();
    let accepted = accepted.lock().unwrap();
    let entry = store.get("s", "k", None).unwrap().unwrap();
    // Every accepted write made a version, and the newest one is the
    // greatest accepted token's: the fence never went back.
    assert_eq!(entry.version, accepted.len() as u64);
    let newest = accepted.iter().max_by_key(|(_, v)| *v).unwrap();
    assert_eq!(entry.token.get(), newest.0);
    assert_eq!(newest.0, accepted.iter().map(|(t, _)| *t).max().unwrap());
    assert_eq!(store.status("s").unwrap().counter, 90);
}

#[test]
fn a_batch_is_one_transaction_and_lists_come_in_key_order() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let store = open(&members, "batch", "");
    let fence = Fence::new(token(3));
    let ops = ["b", "a", "c"]
        .iter()
        .map(|k| fencing::Op::put(*k, k.as_bytes().to_vec()))
        .collect();
    let receipts = store.apply("s", &fence, ops).unwrap();
    assert!(receipts.iter().all(|r| r.version == 1));
    // One bad op refuses the whole batch.
    let ops = vec![
        fencing::Op::put("a", b"new".to_vec()),
        fencing::Op::put("d", b"d".to_vec()).if_version(7),
    ];
    let refused = store.apply("s", &fence, ops).unwrap_err();
    assert_eq!(refused.code(), ErrorCode::VersionMismatch);
    assert_eq!(store.get("s", "a", None).unwrap().unwrap().value, b"a");
    let page = store.list("s", None, 2).unwrap();
    assert_eq!(page.keys, ["a", "b"]);
    let rest = store.list("s", page.next.as_deref(), 2).unwrap();
    assert_eq!(
        (rest.keys.as_slice(), rest.next.as_deref()),
        (&["c".to_owned()][..], None)
    );
    assert_eq!(store.status("s").unwrap().entries, 3);
}

#[test]
fn a_store_of_another_layout_and_an_unreachable_cluster_are_refused_clearly() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let e = Store::open("etcd://127.0.0.1:1/p?call_timeout_ms=500").unwrap_err();
    assert_eq!(e.backend_kind(), Some(BackendErrorKind::Unreachable), "{e}");
    assert!(e.to_string().contains("127.0.0.1:1"), "{e}");
    // A store whose layout key says 9: written by a newer build.
    let prefix = fresh_schema("layout");
    let first = members.split(',').next().unwrap();
    let key = base64(format!("{prefix}\0v").as_bytes());
    let put = format!(r#"{{"key":"{key}","value":"{}"}}"#, base64(b"9"));
    let out = std::process::Command::new("curl")
        .args([
            "-sf",
            "-X",
            "POST",
            &format!("http://{first}/v3/kv/put"),
            "-d",
            &put,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let e = Store::open(&format!("etcd://{members}/{prefix}")).unwrap_err();
    assert_eq!(e.backend_kind(), Some(BackendErrorKind::Refused), "{e}");
    assert!(e.to_string().contains("layout"), "{e}");
}

fn base64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// Workers acquire, write and release while the leader is killed and
/// restarted, three times: every token they got is distinct, every failure
/// is `BACKEND`, and after the cluster heals nothing acknowledged is lost.
#[test]
fn leaders_killed_under_load_issue_no_token_twice() {
    let Some(cluster) = OwnEtcd::start() else {
        return;
    };
    let location = open(&cluster.members, "kill", "?call_timeout_ms=3000")
        .location()
        .to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (location, stop) = (location.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let store = Store::open(&location).unwrap();
                let (mut got, mut written, mut failures) = (Vec::new(), Vec::new(), 0u32);
                while !stop.load(Ordering::Relaxed) {
                    let scope = format!("s{}", w % 2);
                    match store.acquire(&scope, "w", Duration::from_secs(2)) {
                        Ok(lease) => {
                            got.push((scope.clone(), lease.token.get()));
                            let fence = Fence::new(lease.token);
                            match store.put(&scope, "k", &lease.token.get().to_be_bytes(), &fence) {
                                Ok(r) => {
                                    written.push((scope.clone(), lease.token.get(), r.version))
                                }
                                Err(e) if e.code() == ErrorCode::Backend => failures += 1,
                                Err(e) => assert_eq!(e.code(), ErrorCode::StaleToken, "{e}"),
                            }
                            let _ = store.release(&scope, lease.token);
                        }
                        Err(e) if e.code() == ErrorCode::LeaseHeld => {
                            std::thread::sleep(Duration::from_millis(20))
                        }
                        Err(e) => {
                            assert_eq!(e.code(), ErrorCode::Backend, "{e}");
                            failures += 1;
                        }
                    }
                }
                (got, written, failures)
            })
        })
        .collect();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(700));
        let killed = cluster.run(&["kill-leader"]);
        let name = killed.split_whitespace().nth(2).unwrap().to_owned();
        std::thread::sleep(Duration::from_millis(700));
        cluster.run(&["restart", &name]);
    }
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let (mut got, mut written, mut failures) = (Vec::new(), Vec::new(), 0);
    for w in workers {
        let (g, wr, f) = w.join().unwrap();
        got.extend(g);
        written.extend(wr);
        failures += f;
    }
    let distinct: HashSet<&(String, u64)> = got.iter().collect();
    assert_eq!(distinct.len(), got.len(), "a token was issued twice");
    assert!(got.len() > 10, "too little got through: {}", got.len());
    let store = Store::open(&location).unwrap();
    for scope in ["s0", "s1"] {
        let status = store.status(scope).unwrap();
        let newest = written
            .iter()
            .filter(|(s, ..)| s == scope)
            .max_by_key(|(_, _, v)| *v);
        let Some((_, token, version)) = newest else {
            continue;
        };
        // Acknowledged writes survived the kills: the entry is at or past
        // the newest acknowledged version, and so is the fence.
        let entry = store.get(scope, "k", None).unwrap().unwrap();
        assert!(
            entry.version >= *version && status.fence >= *token,
            "{scope}"
        );
        assert!(status.counter >= status.fence);
    }
    eprintln!(
        "{} tokens, {} writes, {failures} BACKEND failures across 3 leader kills",
        got.len(),
        written.len()
    );
}

/// Two of three members paused: no majority. Calls fail with `BACKEND`
/// within their deadline, change nothing, and work again once the members
/// resume.
#[test]
fn a_stopped_majority_fails_calls_with_backend_and_they_resume() {
    let Some(cluster) = OwnEtcd::start() else {
        return;
    };
    let store = open(&cluster.members, "majority", "?call_timeout_ms=1500");
    let before = store.next_token("s").unwrap();
    let lease = store.acquire("l", "A", Duration::from_secs(30)).unwrap();
    cluster.run(&["pause", "1"]);
    cluster.run(&["pause", "2"]);
    for _ in 0..3 {
        let e = store.next_token("s").unwrap_err();
        assert_eq!(e.code(), ErrorCode::Backend, "{e}");
        let e = store.status("s").unwrap_err();
        assert_eq!(e.code(), ErrorCode::Backend, "{e}");
    }
    cluster.run(&["resume", "1"]);
    cluster.run(&["resume", "2"]);
    let after = store.next_token("s").unwrap();
    // A call that failed may have been applied (outcome unknown), never
    // applied twice and never lost once acknowledged.
    assert!(
        after.get() > before.get() && after.get() <= before.get() + 4,
        "{after}"
    );
    let held = store.acquire("l", "B", Duration::from_secs(2)).unwrap_err();
    assert_eq!(held.code(), ErrorCode::LeaseHeld);
    assert!(store.release("l", lease.token).unwrap());
}

/// A member cut off from its leader answers no claim. A claim at the fence
/// the record already has writes nothing: its transaction is the
/// comparisons alone, and etcd answers a transaction without requests as a
/// serializable read, from the member's own copy, leader or not. Cut off
/// from the majority (here: the two others paused), that copy may lack a
/// put with a newer token the majority accepted meanwhile, and the claim
/// passed on it: the torture soak found a stale claim accepted so
/// (docs/etcd.md, "Every operation is one read and one transaction"). The
/// member must ask the leader first, and fail (`BACKEND`) without one.
#[test]
fn a_member_cut_off_from_its_leader_never_answers_a_claim() {
    let Some(cluster) = OwnEtcd::start() else {
        return;
    };
    let members: Vec<&str> = cluster.members.split(',').collect();
    let prefix = fresh_schema("cutoff");
    let on = |hosts: &str| {
        Store::open(&format!("etcd://{hosts}/{prefix}?call_timeout_ms=1500")).unwrap()
    };
    let alone = on(members[2]);
    let t = alone.next_token("s").unwrap();
    alone.claim("s", &Fence::new(t)).unwrap();
    // Again at the same fence: nothing to write, and it passes while the
    // member has its leader.
    alone.claim("s", &Fence::new(t)).unwrap();

    cluster.run(&["pause", "0"]);
    cluster.run(&["pause", "1"]);
    let e = alone
        .claim("s", &Fence::new(t))
        .expect_err("a claim passed on a member without a leader");
    assert_eq!(e.code(), ErrorCode::Backend, "{e}");
    cluster.run(&["resume", "0"]);
    cluster.run(&["resume", "1"]);

    // With the majority back, a newer token's put, then the same claim:
    // stale, wherever it is asked.
    let others = on(&format!("{},{}", members[0], members[1]));
    let newer = others.next_token("s").unwrap();
    others.put("s", "k", b"newer", &Fence::new(newer)).unwrap();
    let stale = (0..20)
        .find_map(|_| match alone.claim("s", &Fence::new(t)) {
            Err(e) if e.code() == ErrorCode::Backend => {
                std::thread::sleep(Duration::from_millis(250));
                None
            }
            other => Some(other),
        })
        .expect("the cluster serves again");
    assert_eq!(stale.unwrap_err().code(), ErrorCode::StaleToken);
}

#[test]
fn a_batch_over_etcds_transaction_limit_is_refused_and_changes_nothing() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let store = open(&members, "bigbatch", "");
    let fence = Fence::new(token(1));
    let ops = |n: usize| {
        (0..n)
            .map(|i| fencing::Op::put(format!("k{i:03}"), vec![1]))
            .collect()
    };
    let e = store.apply("s", &fence, ops(121)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    assert_eq!(store.status("s").unwrap().fence, 0);
    assert_eq!(store.apply("s", &fence, ops(120)).unwrap().len(), 120);
    assert_eq!(store.status("s").unwrap().entries, 120);
}

/// A caller's own transaction through etcd's gateway (as any client of any
/// language sends it): its own put, and what `etcd_check` said.
fn own_txn(members: &str, check: &fencing::EtcdCheck, key: &str, value: &str) -> bool {
    let mut body = check.to_gateway_json();
    body["success"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "request_put": { "key": base64(key.as_bytes()), "value": base64(value.as_bytes()) }
        }));
    let first = members.split(',').next().unwrap();
    let out = std::process::Command::new("curl")
        .args([
            "-sf",
            "-X",
            "POST",
            &format!("http://{first}/v3/kv/txn"),
            "-d",
        ])
        .arg(body.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    answer["succeeded"].as_bool() == Some(true)
}

fn own_value(members: &str, key: &str) -> Option<String> {
    let first = members.split(',').next().unwrap();
    let out = std::process::Command::new("curl")
        .args([
            "-sf",
            "-X",
            "POST",
            &format!("http://{first}/v3/kv/range"),
            "-d",
        ])
        .arg(format!(r#"{{"key":"{}"}}"#, base64(key.as_bytes())))
        .output()
        .unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let value = answer["kvs"][0]["value"].as_str()?;
    let decoded = B64.decode(value).unwrap();
    Some(String::from_utf8(decoded).unwrap())
}

#[test]
fn a_callers_own_etcd_key_is_written_only_with_a_current_token() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let store = open(&members, "own", "");
    let own = format!("app/{}", fresh_schema("doc"));
    let a = store.next_token("s").unwrap();
    let b = store.next_token("s").unwrap();
    // A checks first, B then checks and commits: A's transaction, built on
    // the scope as it was, applies nothing.
    let a_check = store.etcd_check("s", &Fence::new(a)).unwrap();
    let b_check = store.etcd_check("s", &Fence::new(b)).unwrap();
    assert!(own_txn(&members, &b_check, &own, "B"));
    assert!(!own_txn(&members, &a_check, &own, "A"));
    assert_eq!(own_value(&members, &own).as_deref(), Some("B"));
    // The fence moved with B's own write: A is refused at the check, and
    // the store's own writes see B's token.
    assert_eq!(store.status("s").unwrap().fence, b.get());
    let stale = store.etcd_check("s", &Fence::new(a)).unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleToken);
    let e = store.put("s", "k", b"A", &Fence::new(a)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StaleToken);
    // B again, after its own write: still current.
    let again = store.etcd_check("s", &Fence::new(b)).unwrap();
    assert!(own_txn(&members, &again, &own, "B2"));
    assert_eq!(own_value(&members, &own).as_deref(), Some("B2"));
    // Other stores have nothing to fence etcd keys with.
    let memory = Store::open("memory:").unwrap();
    let e = memory.etcd_check("s", &Fence::new(a)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
}

#[test]
fn ping_asks_and_writes_nothing() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let url = format!("etcd://{members}/{}", fresh_schema("ping"));
    // No store under the prefix yet: refused, and still none after.
    for _ in 0..2 {
        let e = fencing::ping(&url).unwrap_err();
        assert_eq!(e.backend_kind(), Some(BackendErrorKind::Refused), "{e}");
    }
    let store = Store::open(&url).unwrap();
    fencing::ping(&url).unwrap();
    store.ping().unwrap();
    store.close();
    assert_eq!(store.ping().unwrap_err().code(), ErrorCode::Closed);
    let e = fencing::ping("etcd://127.0.0.1:1/p?call_timeout_ms=300").unwrap_err();
    assert_eq!(e.backend_kind(), Some(BackendErrorKind::Unreachable), "{e}");
}

#[test]
fn a_handle_on_etcds_time_refuses_a_store_whose_clock_a_test_stopped() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let url = format!("etcd://{members}/{}", fresh_schema("manual"));
    let test = Store::open(&format!("{url}?clock=manual")).unwrap();
    test.advance_clock(Duration::from_secs(1)).unwrap();
    let e = Store::open(&url).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    assert!(e.to_string().contains("manual clock"), "{e}");
    // And advance_clock needs the manual clock.
    let real = open(&members, "realclock", "");
    assert_eq!(
        real.advance_clock(Duration::from_secs(1))
            .unwrap_err()
            .code(),
        ErrorCode::InvalidArgument
    );
}

/// A fencing decision compares neither the lease key nor, beside a record,
/// the floor (docs/etcd.md, "What a fencing decision does not compare").
/// What makes that safe, shown on the paths that skip a read: a handle
/// that remembers a record another handle retired meanwhile is refused on
/// the floor, and a lease that ran out between a handle's writes stays dead
/// after its holder's next write.
#[test]
fn fencing_decisions_on_a_remembered_record_stay_safe_without_the_lease_and_floor_compares() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let url = format!("etcd://{members}/{}", fresh_schema("fence_only"));
    let (a, b) = (Store::open(&url).unwrap(), Store::open(&url).unwrap());

    // A claims (its handle now remembers the record); B retires the scope.
    let t = a.next_token("s").unwrap();
    a.claim("s", &Fence::new(t)).unwrap();
    assert!(b.retire("s").unwrap());
    // A's next claim runs on its memory; the record is gone, so its
    // comparison fails and the retry builds the scope at its floor.
    let stale = a.claim("s", &Fence::new(t)).unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleToken, "{stale}");
    let next = a.next_token("s").unwrap();
    assert!(next > t, "{next} after {t}: a token issued twice");

    // A holds a lease and writes; etcd ends the lease; A writes again with
    // its token (the fence still accepts it) and the lease stays ended.
    let lease = a.acquire("job", "A", Duration::from_secs(1)).unwrap();
    a.put("job", "k", b"1", &Fence::new(lease.token)).unwrap();
    let start = Instant::now();
    while b.status("job").unwrap().lease.is_some() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the lease never ended"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    a.put("job", "k", b"2", &Fence::new(lease.token)).unwrap();
    assert_eq!(b.status("job").unwrap().lease, None);
    let taken = b.acquire("job", "B", Duration::from_secs(30)).unwrap();
    assert!(taken.token > lease.token);
    b.claim("job", &Fence::new(taken.token)).unwrap();
    let old = a
        .put("job", "k", b"3", &Fence::new(lease.token))
        .unwrap_err();
    assert_eq!(old.code(), ErrorCode::StaleToken, "{old}");
    assert_eq!(b.get("job", "k", None).unwrap().unwrap().value, b"2");
}

/// The highest Raft index any member has: every proposal (a write, a
/// failed transaction with writes, a lease grant or revoke) takes one; a
/// linearizable read takes none.
fn raft_index(members: &str) -> u64 {
    members
        .split(',')
        .map(|member| {
            etcd_raw(member, "maintenance/status", &serde_json::json!({}))["raftIndex"]
                .as_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .max()
        .unwrap()
}

/// How many `method` requests (`LeaseTimeToLive`, ...) the members have
/// handled, summed over the members (etcd's gRPC metrics, which count the
/// JSON gateway's requests too).
fn handled(members: &str, method: &str) -> u64 {
    let label = format!("grpc_method=\"{method}\"");
    members
        .split(',')
        .map(|member| {
            let mut answer = ureq::get(&format!("http://{member}/metrics"))
                .call()
                .unwrap_or_else(|e| panic!("metrics of {member}: {e}"));
            let text = answer.body_mut().read_to_string().unwrap();
            text.lines()
                .filter(|l| l.starts_with("grpc_server_handled_total{") && l.contains(&label))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum::<f64>() as u64
        })
        .sum()
}

/// A handle's first acquisition of a scope that exists costs what the
/// classic etcd acquisition costs, the grant and one transaction: it peeks
/// at the scope beside the grant instead of guessing it new (a guess that
/// fails is a proposal too). Where the read finds the scope held, the
/// grant is revoked, and the handle's next polls grant nothing. A writer's
/// first put on a scope that exists is one transaction.
#[test]
fn a_first_contact_with_an_existing_scope_makes_no_failed_proposal() {
    let Some(cluster) = OwnEtcd::start() else {
        return;
    };
    let members = cluster.members.clone();
    let url = format!("etcd://{members}/{}", fresh_schema("proposals"));
    let a = Store::open(&url).unwrap();
    let ttl = Duration::from_secs(30);
    let freed = a.acquire("freed", "A", ttl).unwrap();
    assert!(a.release("freed", freed.token).unwrap());
    let held = a.acquire("held", "A", ttl).unwrap();
    // B knows one scope, so that it has something to guess from; it
    // existed, so B's next first contact reads (a run of new names would
    // turn it to guessing).
    a.next_token("other").unwrap();
    let b = Store::open(&url).unwrap();
    b.next_token("other").unwrap();

    let before = raft_index(&members);
    let lease = b.acquire("freed", "B", ttl).unwrap();
    assert!(lease.token > freed.token, "{lease:?}");
    assert_eq!(
        raft_index(&members) - before,
        2,
        "a grant and one transaction"
    );

    let before = raft_index(&members);
    let asked = handled(&members, "LeaseTimeToLive");
    let e = b.acquire("held", "B", ttl).unwrap_err();
    assert!(
        matches!(&e, Error::LeaseHeld { holder, token, .. } if holder == "A" && *token == held.token),
        "{e}"
    );
    assert_eq!(raft_index(&members) - before, 2, "a grant and its revoke");
    // The time left is asked once, on the read that decides (the peek's
    // refusal is decided again on a read).
    assert_eq!(handled(&members, "LeaseTimeToLive") - asked, 1);
    let polled = raft_index(&members);
    let asked = handled(&members, "LeaseTimeToLive");
    for _ in 0..3 {
        let e = b.acquire("held", "B", ttl).unwrap_err();
        assert_eq!(e.code(), ErrorCode::LeaseHeld, "{e}");
    }
    assert_eq!(
        raft_index(&members),
        polled,
        "polls of a held scope propose nothing"
    );
    assert_eq!(
        handled(&members, "LeaseTimeToLive") - asked,
        3,
        "a poll asks etcd's time left once"
    );

    // A resource's own handle, that only writes: its first put peeks (its
    // memory is empty), and so does its next on another scope.
    let c = Store::open(&url).unwrap();
    c.put("freed", "k", b"c", &Fence::new(lease.token)).unwrap();
    let before = raft_index(&members);
    c.put("held", "k", b"c", &Fence::new(held.token)).unwrap();
    assert_eq!(
        raft_index(&members) - before,
        1,
        "a first put: one transaction"
    );
    // The revoked grant left no lease behind: only A's and B's are live.
    let first = members.split(',').next().unwrap();
    let leases = etcd_raw(first, "lease/leases", &serde_json::json!({}));
    assert_eq!(
        leases["leases"].as_array().map_or(0, Vec::len),
        2,
        "{leases}"
    );

    // A first contact takes the store-wide keys as its handle last saw
    // them: after a failover step B did not see, the commit of its next
    // one fails on the base and the retry reads (the token is above the
    // step's base); the first contact after that knows the base.
    a.next_token("after-1").unwrap();
    a.next_token("after-2").unwrap();
    let base = a.failover().unwrap();
    for (scope, proposals) in [("after-1", 2), ("after-2", 1)] {
        let before = raft_index(&members);
        let token = b.next_token(scope).unwrap();
        assert!(token.get() > base, "{scope}: {token:?}, the base {base}");
        assert_eq!(raft_index(&members) - before, proposals, "{scope}");
    }
}
