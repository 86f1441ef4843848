//! An adversarial review of the etcd backend (docs/etcd.md) on real
//! clusters: sequences that try to break its promises (no token twice, no
//! stale write, counter and fence never back, a lease never early and never
//! shared, a write whose answer was lost never resent, clear errors, a
//! handle's memory never deciding on its own). Racing threads run on the
//! shared cluster with a handle each (each handle has its own memory of the
//! scopes it wrote); faults run on a cluster of the test's own (`OwnEtcd`);
//! answers a member can give but a test cannot time (a member stopping
//! after it applied a write, an answer cut in the middle) come from a fake
//! member in front of a real one (`Proxy`).
#![cfg(feature = "etcd")]

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use fencing::{BackendErrorKind, Error, ErrorCode, Fence, Op, Store, Token};
use serde_json::json;

mod support;
use support::{etcd_raw as raw, etcd_test_members, fresh_schema, OwnEtcd, Rng};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn token(t: u64) -> Token {
    Token::new(t).unwrap()
}

fn first(members: &str) -> String {
    members.split(',').next().unwrap().to_owned()
}

fn url(members: &str, prefix: &str, options: &str) -> String {
    format!("etcd://{members}/{prefix}{options}")
}

fn open_url(url: &str) -> Store {
    Store::open(url).unwrap_or_else(|e| panic!("open {url}: {e}"))
}

/// A key of the store under `prefix` (docs/etcd.md, "Keys").
fn raw_key(prefix: &str, kind: u8, parts: &[&str]) -> Vec<u8> {
    let mut key = prefix.as_bytes().to_vec();
    key.push(0);
    key.push(kind);
    for part in parts {
        key.push(0);
        key.extend_from_slice(part.as_bytes());
    }
    key
}

/// A key's mod revision and value, as etcd holds it now.
fn raw_get(member: &str, key: &[u8]) -> Option<(i64, Vec<u8>)> {
    let answer = raw(member, "kv/range", &json!({ "key": B64.encode(key) }));
    let kv = answer["kvs"].as_array()?.first()?.clone();
    let rev = kv["mod_revision"].as_str().unwrap().parse().unwrap();
    let value = B64.decode(kv["value"].as_str().unwrap_or("")).unwrap();
    Some((rev, value))
}

fn raw_delete(member: &str, key: &[u8]) {
    raw(member, "kv/deleterange", &json!({ "key": B64.encode(key) }));
}

/// `rules::floor_bucket`: the top 12 bits of the scope's 32-bit FNV-1a.
fn floor_bucket(scope: &str) -> u32 {
    let hash = scope.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    hash >> 20
}

fn kind(e: &Error) -> Option<BackendErrorKind> {
    e.backend_kind()
}

// ---------------------------------------------------------------------------
// A fake member
// ---------------------------------------------------------------------------

/// What the fake member does with the one request it was armed for, after
/// passing it to the real member (so it applied).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lie {
    /// Answers 503 with etcd's own `ErrGRPCStopped` (code 14, "etcdserver:
    /// server stopped"): what `processInternalRaftRequestOnce` answers when
    /// the member stops while it waits for the proposal it made to apply;
    /// the proposal may have committed on the others.
    ServerStopped,
    /// Closes the connection without answering (a member that died after
    /// applying).
    Drop,
    /// Sends the real answer's head and half of its body, then closes (a
    /// member that died while answering).
    CutBody,
    /// Answers 502 with an HTML page (a proxy or load balancer in front of
    /// the member, whose upstream failed after the request was passed on).
    BadGateway,
    /// Holds the request until released ([`Proxy::held`],
    /// [`Proxy::release`]), then passes it and its answer as they are (a
    /// caller paused between its read and its commit).
    Hold,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// A transaction with comparisons: every commit of the store.
    Write,
    /// A transaction without comparisons (the store's reads) or a range.
    Read,
    /// `lease/grant`: a write (a Raft proposal) outside any transaction.
    Grant,
}

/// A member in front of a real one: passes every request through, one per
/// connection, except the one it is armed for.
struct Proxy {
    addr: String,
    plan: Arc<Mutex<Option<(Lie, Target)>>>,
    lies: Arc<AtomicUsize>,
    /// For [`Lie::Hold`]: 0 nothing held, 1 a request held, 2 released.
    gate: Arc<(Mutex<u8>, std::sync::Condvar)>,
}

impl Proxy {
    fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let plan: Arc<Mutex<Option<(Lie, Target)>>> = Arc::new(Mutex::new(None));
        let lies = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new((Mutex::new(0), std::sync::Condvar::new()));
        let (p, l, g, up) = (
            Arc::clone(&plan),
            Arc::clone(&lies),
            Arc::clone(&gate),
            upstream.to_owned(),
        );
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (p, l, g, up) = (Arc::clone(&p), Arc::clone(&l), Arc::clone(&g), up.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &up, &p, &l, &g);
                });
            }
        });
        Proxy {
            addr,
            plan,
            lies,
            gate,
        }
    }

    /// Waits until the armed [`Lie::Hold`] holds its request.
    fn held(&self) {
        let (state, changed) = &*self.gate;
        let state = state.lock().unwrap();
        let (state, timeout) = changed
            .wait_timeout_while(state, Duration::from_secs(30), |s| *s != 1)
            .unwrap();
        assert!(
            !timeout.timed_out(),
            "no request was held (state {})",
            *state
        );
    }

    fn release(&self) {
        let (state, changed) = &*self.gate;
        *state.lock().unwrap() = 2;
        changed.notify_all();
    }

    fn arm(&self, lie: Lie, target: Target) {
        *self.plan.lock().unwrap() = Some((lie, target));
    }

    fn lies(&self) -> usize {
        self.lies.load(Ordering::SeqCst)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// One HTTP/1.1 request: its head (text) and body.
fn read_request(conn: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let head_end = loop {
        if let Some(at) = find(&buf, b"\r\n\r\n") {
            break at + 4;
        }
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut body = buf[head_end..].to_vec();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    };
    if let Some(len) = header("content-length") {
        let len: usize = len.parse().unwrap();
        while body.len() < len {
            let n = conn.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        // Read to the last chunk, then decode.
        while find(&body, b"0\r\n\r\n").is_none() {
            let n = conn.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            body.extend_from_slice(&chunk[..n]);
        }
        let mut decoded = Vec::new();
        let mut at = 0;
        loop {
            let line_end = at + find(&body[at..], b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&body[at..line_end]).unwrap().trim(), 16)
                    .unwrap();
            if size == 0 {
                break;
            }
            decoded.extend_from_slice(&body[line_end + 2..line_end + 2 + size]);
            at = line_end + 2 + size + 2;
        }
        body = decoded;
    }
    Ok((head, body))
}

fn serve(
    mut client: TcpStream,
    upstream: &str,
    plan: &Mutex<Option<(Lie, Target)>>,
    lies: &AtomicUsize,
    gate: &(Mutex<u8>, std::sync::Condvar),
) -> std::io::Result<()> {
    client.set_read_timeout(Some(Duration::from_secs(60)))?;
    let (head, body) = read_request(&mut client)?;
    let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
    let txn = path.ends_with("/kv/txn");
    let write = txn && find(&body, b"\"compare\"").is_some();
    let read = (txn && !write) || path.ends_with("/kv/range");
    let grant = path.ends_with("/lease/grant");
    let lie = {
        let mut plan = plan.lock().unwrap();
        match *plan {
            Some((lie, Target::Write)) if write => {
                *plan = None;
                Some(lie)
            }
            Some((lie, Target::Read)) if read => {
                *plan = None;
                Some(lie)
            }
            Some((lie, Target::Grant)) if grant => {
                *plan = None;
                Some(lie)
            }
            _ => None,
        }
    };
    let auth = head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim()
            .eq_ignore_ascii_case("authorization")
            .then(|| v.trim().to_owned())
    });
    let lie = match lie {
        Some(Lie::Hold) => {
            let (state, changed) = gate;
            let mut held = state.lock().unwrap();
            *held = 1;
            changed.notify_all();
            drop(changed.wait_while(held, |s| *s != 2).unwrap());
            lies.fetch_add(1, Ordering::SeqCst);
            None
        }
        lie => lie,
    };
    let mut up = TcpStream::connect(upstream)?;
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {upstream}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(a) = auth {
        request.push_str(&format!("Authorization: {a}\r\n"));
    }
    request.push_str("\r\n");
    up.write_all(request.as_bytes())?;
    up.write_all(&body)?;
    let mut answer = Vec::new();
    up.read_to_end(&mut answer)?;
    match lie {
        None => client.write_all(&answer)?,
        Some(lie) => {
            lies.fetch_add(1, Ordering::SeqCst);
            match lie {
                Lie::ServerStopped => {
                    let body = r#"{"error":"etcdserver: server stopped","message":"etcdserver: server stopped","code":14}"#;
                    write!(
                        client,
                        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n\
                         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )?;
                }
                Lie::BadGateway => {
                    let body = "<html><body><h1>502 Bad Gateway</h1></body></html>";
                    write!(
                        client,
                        "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\n\
                         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )?;
                }
                Lie::Drop | Lie::Hold => {}
                Lie::CutBody => {
                    let head_end = find(&answer, b"\r\n\r\n").unwrap() + 4;
                    let cut = head_end + (answer.len() - head_end) / 2;
                    client.write_all(&answer[..cut])?;
                }
            }
        }
    }
    client.flush()?;
    Ok(())
}

/// A store whose first member is a fake one in front of the real cluster's
/// first member, the real members after it; and its prefix.
fn through_proxy(members: &str, tag: &str) -> (Proxy, Store, String) {
    let proxy = Proxy::start(&first(members));
    let prefix = fresh_schema(tag);
    let store = open_url(&url(&format!("{},{members}", proxy.addr), &prefix, ""));
    (proxy, store, prefix)
}

// ---------------------------------------------------------------------------
// A decision on what a read counted
// ---------------------------------------------------------------------------

/// `retire` refuses a scope with entries. A retire that counted none, and
/// was paused before its commit, must not commit over an entry written
/// meanwhile by the token that last wrote: such a write leaves the scope's
/// record as it was (nothing in it changes), so the record's comparison
/// cannot see it; the retire's transaction compares the entries as well.
#[test]
fn a_retire_never_commits_over_an_entry_written_after_it_counted() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let (proxy, retiring, prefix) = through_proxy(&members, "retire_count");
    let writer = open_url(&url(&members, &prefix, ""));
    let fence = Fence::new(writer.next_token("s").unwrap());
    writer.put("s", "a", b"x", &fence).unwrap();
    writer.delete("s", "a", &fence).unwrap();
    proxy.arm(Lie::Hold, Target::Write);
    let retire = std::thread::spawn(move || retiring.retire("s"));
    proxy.held();
    let put = writer.put("s", "b", b"y", &fence);
    proxy.release();
    let retired = retire.join().unwrap();
    assert!(put.is_ok(), "{put:?}");
    assert!(
        !matches!(retired, Ok(true)),
        "retired with an entry written after its count: {retired:?}"
    );
    assert!(writer.get("s", "b", None).unwrap().is_some());
}

/// A proxy in front of a member (members may be named by host) that
/// passed a write on and then answers 502 with a page of its own: the write
/// applied, so the answer is OUTCOME_UNKNOWN, never a refusal (which would
/// say it did not).
#[test]
fn a_write_answered_by_a_proxys_error_page_is_outcome_unknown() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let (proxy, a, _prefix) = through_proxy(&members, "bad_gateway");
    let t = a.next_token("s").unwrap();
    proxy.arm(Lie::BadGateway, Target::Write);
    let answer = a.put("s", "k", b"once", &Fence::new(t));
    assert_eq!(proxy.lies(), 1);
    let e = answer.expect_err("the proxy's page was read as success");
    assert_eq!(kind(&e), Some(BackendErrorKind::OutcomeUnknown), "{e}");
    assert_eq!(a.get("s", "k", None).unwrap().unwrap().value, b"once");
}

// ---------------------------------------------------------------------------
// (e) A write whose answer is lost is OUTCOME_UNKNOWN, never resent
// ---------------------------------------------------------------------------

/// A member that stops while waiting for a proposal it made answers
/// "etcdserver: server stopped" (gRPC UNAVAILABLE), whether or not the
/// proposal committed on the others. The renew's commit applied (the lease
/// key moved to the renew's new etcd lease); what must not happen is that
/// the lease ends: A's lease is live for its TTL from its acquire whatever
/// the renew's outcome, so B must not get it now.
#[test]
fn a_renew_answered_server_stopped_after_it_applied_does_not_end_the_lease() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let (proxy, a, prefix) = through_proxy(&members, "stopped_renew");
    let lease = a.acquire("s", "A", Duration::from_secs(20)).unwrap();
    proxy.arm(Lie::ServerStopped, Target::Write);
    let renewed = a.renew("s", lease.token, Duration::from_secs(20));
    assert_eq!(
        proxy.lies(),
        1,
        "the renew's commit went through the fake member"
    );
    let b = open_url(&url(&members, &prefix, ""));
    let status = b.status("s").unwrap();
    let taken = b.acquire("s", "B", Duration::from_secs(2));
    assert!(
        matches!(taken, Err(Error::LeaseHeld { .. })),
        "A's renew answered {renewed:?}; then status says lease {:?} and B's acquire got {taken:?} \
         within a second of A's 20 s acquire",
        status.lease.map(|l| (l.holder, l.token))
    );
}

/// The same answer when no other member answers (the cluster's other
/// members listed are down): the call fails UNREACHABLE, "nothing took
/// effect" (`store::nothing_took_effect`), and the backend revokes the etcd
/// lease it granted as "refused for sure" -- the lease the applied renew
/// moved the key onto. A's lease must still be live for its TTL from its
/// acquire.
#[test]
fn a_renew_answered_server_stopped_with_no_other_member_up_does_not_end_the_lease() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let proxy = Proxy::start(&first(&members));
    let prefix = fresh_schema("stopped_alone");
    let a = open_url(&url(&format!("{},127.0.0.1:1", proxy.addr), &prefix, ""));
    let lease = a.acquire("s", "A", Duration::from_secs(20)).unwrap();
    proxy.arm(Lie::ServerStopped, Target::Write);
    let renewed = a.renew("s", lease.token, Duration::from_secs(20));
    assert_eq!(proxy.lies(), 1);
    let b = open_url(&url(&members, &prefix, ""));
    let taken = b.acquire("s", "B", Duration::from_secs(2));
    assert!(
        matches!(taken, Err(Error::LeaseHeld { .. })),
        "A's renew answered {:?}; then B's acquire got {taken:?} within a second of A's 20 s \
         acquire",
        renewed.map_err(|e| (e.backend_kind(), e.to_string()))
    );
}

/// The same answer to a put: the put applied once; the store must not
/// apply it a second time (one write, one version).
#[test]
fn a_put_answered_server_stopped_after_it_applied_is_not_written_twice() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let (proxy, a, prefix) = through_proxy(&members, "stopped_put");
    let t = a.next_token("s").unwrap();
    proxy.arm(Lie::ServerStopped, Target::Write);
    let answer = a.put("s", "k", b"once", &Fence::new(t));
    assert_eq!(proxy.lies(), 1);
    let other = open_url(&url(&members, &prefix, ""));
    let entry = other.get("s", "k", None).unwrap().expect("the put applied");
    assert_eq!(
        entry.version, 1,
        "one put was applied {} times; the call answered {answer:?} (expected OUTCOME_UNKNOWN, \
         or version 1)",
        entry.version
    );
}

/// A create-only put (`if_version(0)`) answered "server stopped" after it
/// created the key: the caller must not be told VERSION_MISMATCH (the key
/// exists because of its own write).
#[test]
fn a_create_only_put_answered_server_stopped_is_not_told_version_mismatch() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let (proxy, a, _prefix) = through_proxy(&members, "stopped_create");
    let t = a.next_token("s").unwrap();
    proxy.arm(Lie::ServerStopped, Target::Write);
    let answer = a.apply(
        "s",
        &Fence::new(t),
        vec![Op::put("k", b"mine".to_vec()).if_version(0)],
    );
    assert_eq!(proxy.lies(), 1);
    match &answer {
        Ok(r) => assert_eq!(r[0].version, 1),
        Err(e) => assert_eq!(
            kind(e),
            Some(BackendErrorKind::OutcomeUnknown),
            "the create applied, the caller was told {e}"
        ),
    }
}

/// A lease grant (a Raft proposal: a write) whose answer is lost, in an
/// acquire decided on the handle's memory of the scope: "a write's answer
/// lost: fails, never resent, outcome_unknown" (docs/etcd.md, "Failures").
#[test]
fn a_grant_whose_answer_is_lost_is_not_sent_again() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let (proxy, a, _prefix) = through_proxy(&members, "lost_grant");
    let first = a.acquire("s", "A", Duration::from_secs(5)).unwrap();
    assert!(a.release("s", first.token).unwrap());
    // The handle remembers the scope (free); the next acquire decides on
    // that memory and asks for a grant, whose answer is lost.
    proxy.arm(Lie::Drop, Target::Grant);
    let again = a.acquire("s", "A", Duration::from_secs(5));
    assert_eq!(proxy.lies(), 1);
    let e = again.expect_err("the grant's answer was lost: the acquire cannot know its fate");
    assert_eq!(kind(&e), Some(BackendErrorKind::OutcomeUnknown), "{e}");
}

/// A connection closed after the write applied: OUTCOME_UNKNOWN, applied
/// once, not resent.
#[test]
fn a_write_whose_connection_closed_after_it_applied_is_outcome_unknown_and_applied_once() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let (proxy, a, prefix) = through_proxy(&members, "dropped_put");
    let t = a.next_token("s").unwrap();
    proxy.arm(Lie::Drop, Target::Write);
    let e = a.put("s", "k", b"once", &Fence::new(t)).unwrap_err();
    assert_eq!(proxy.lies(), 1);
    assert_eq!(kind(&e), Some(BackendErrorKind::OutcomeUnknown), "{e}");
    let other = open_url(&url(&members, &prefix, ""));
    assert_eq!(other.get("s", "k", None).unwrap().unwrap().version, 1);
    // The handle's memory was dropped with the lost answer: its next write
    // decides on the scope as it is.
    assert_eq!(
        a.put("s", "k", b"again", &Fence::new(t)).unwrap().version,
        2
    );
}

/// A batch's answer (large enough to come chunked) cut in the middle after
/// the batch applied: the answer was lost, which is OUTCOME_UNKNOWN.
#[test]
fn a_batch_whose_answer_is_cut_after_it_applied_is_outcome_unknown() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let (proxy, a, prefix) = through_proxy(&members, "cut_batch");
    let t = a.next_token("s").unwrap();
    let ops: Vec<Op> = (0..100)
        .map(|i| Op::put(format!("k{i:03}"), vec![b'x'; 8]))
        .collect();
    proxy.arm(Lie::CutBody, Target::Write);
    let answer = a.apply("s", &Fence::new(t), ops);
    assert_eq!(proxy.lies(), 1);
    let other = open_url(&url(&members, &prefix, ""));
    assert_eq!(other.status("s").unwrap().entries, 100, "the batch applied");
    let e = answer.expect_err("its answer was cut");
    assert_eq!(kind(&e), Some(BackendErrorKind::OutcomeUnknown), "{e}");
}

/// A read's answer cut in the middle: "a read failed any way: tried on the
/// next member" (docs/etcd.md, "Failures").
#[test]
fn a_read_whose_answer_is_cut_is_asked_again_of_another_member() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let (proxy, a, _prefix) = through_proxy(&members, "cut_read");
    let t = a.next_token("s").unwrap();
    // Large enough that the gateway sends the answer chunked.
    let value = vec![b'v'; 6000];
    a.put("s", "k", &value, &Fence::new(t)).unwrap();
    proxy.arm(Lie::CutBody, Target::Read);
    let got = a.get("s", "k", None);
    assert_eq!(proxy.lies(), 1);
    match got {
        Ok(entry) => assert_eq!(entry.unwrap().value, value),
        Err(e) => panic!("a read cut mid-answer was not asked again elsewhere: {e}"),
    }
}

/// The same cut in a small answer (sent with a Content-Length, not
/// chunked): asked again of the next member, as the doc says.
#[test]
fn a_small_read_whose_answer_is_cut_is_asked_again_of_another_member() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let (proxy, a, _prefix) = through_proxy(&members, "cut_small_read");
    let t = a.next_token("s").unwrap();
    proxy.arm(Lie::CutBody, Target::Read);
    let got = a.status("s");
    assert_eq!(proxy.lies(), 1);
    assert_eq!(
        got.map_err(|e| e.to_string()).map(|s| s.counter),
        Ok(t.get())
    );
}

/// The fake member passes everything through: the store works through it
/// as on the cluster (so the tests above fail only where it lied).
#[test]
fn the_fake_member_alone_changes_nothing() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let (proxy, a, _prefix) = through_proxy(&members, "honest_proxy");
    let lease = a.acquire("s", "A", Duration::from_secs(5)).unwrap();
    let fence = Fence::new(lease.token);
    assert_eq!(a.put("s", "k", b"1", &fence).unwrap().version, 1);
    assert_eq!(a.put("s", "k", b"2", &fence).unwrap().version, 2);
    a.renew("s", lease.token, Duration::from_secs(5)).unwrap();
    assert!(a.release("s", lease.token).unwrap());
    assert!(a.status("s").unwrap().lease.is_none());
    assert_eq!(proxy.lies(), 0);
}

// ---------------------------------------------------------------------------
// (f) Bad input: clear errors, never an echoed password
// ---------------------------------------------------------------------------

/// A password written without percent-encoding a `/` or a `?` (a mistake,
/// but the kind the promise is for): no message may show any of it.
#[test]
fn a_password_with_a_raw_slash_or_question_mark_is_never_echoed() {
    let mut echoed = Vec::new();
    for (url, secret) in [
        ("etcd://root:s3cr3tpw/x@127.0.0.1:1/p", "s3cr3tpw"),
        ("etcd://root:abc/s3cr3tpw@127.0.0.1:1/p", "s3cr3tpw"),
        ("etcd://root:abc?s3cr3tpw@127.0.0.1:1/p", "s3cr3tpw"),
        ("etcd://root:s3cr3tpw@127.0.0.1:1/p?x", "s3cr3tpw"),
    ] {
        let e = Store::open(url).unwrap_err();
        if e.to_string().contains(secret) {
            echoed.push(format!("{url} -> {e}"));
        }
        let e = fencing::ping(url).unwrap_err();
        if e.to_string().contains(secret) {
            echoed.push(format!("ping {url} -> {e}"));
        }
    }
    assert!(
        echoed.is_empty(),
        "passwords echoed:\n{}",
        echoed.join("\n")
    );
}

/// Inputs at the limits the other backends take: the same answer on etcd.
#[test]
fn inputs_at_the_limits_work_on_etcd_as_on_memory() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let etcd = open_url(&url(&members, &fresh_schema("limits"), ""));
    let memory = Store::open("memory:").unwrap();
    let long_scope = "é".repeat(128); // 256 bytes
    let long_key = "k/".repeat(512); // 1024 bytes
    for store in [&etcd, &memory] {
        let kind = store.backend_kind();
        let a = store
            .acquire(&long_scope, "h", fencing::limits::MAX_TTL)
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let f = Fence::new(a.token);
        store
            .put(&long_scope, &long_key, &vec![7u8; 1 << 20], &f)
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        store.put(&long_scope, "empty", b"", &f).unwrap();
        let e = store.get(&long_scope, "empty", None).unwrap().unwrap();
        assert!(e.value.is_empty());
        let page = store.list(&long_scope, None, 10).unwrap();
        assert_eq!(page.keys.len(), 2, "{kind:?}");
        let b = store
            .acquire("min", "h", fencing::limits::MIN_TTL)
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert!(b.ttl >= fencing::limits::MIN_TTL);
        assert!(store.release(&long_scope, a.token).unwrap());
    }
}

// ---------------------------------------------------------------------------
// jumps=unbounded, "for good (a property of the store)"
// ---------------------------------------------------------------------------

/// docs/semantics.md: a store opened once with `jumps=unbounded` keeps the
/// whole token space "for good (a property of the store)"; SQLite and
/// PostgreSQL record it. A later handle without the option must take the
/// same jumps.
#[test]
fn jumps_unbounded_stays_a_property_of_the_store() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let prefix = fresh_schema("unbounded");
    let u = open_url(&url(&members, &prefix, "?jumps=unbounded"));
    u.advance_counter("s", token(1 << 50)).unwrap();
    u.close();
    let later = open_url(&url(&members, &prefix, ""));
    let etcd = later.advance_counter("t", token(1 << 52));
    #[cfg(feature = "sqlite")]
    {
        let dir = tempfile::tempdir().unwrap();
        let path = support::sqlite_url(&dir.path().join("u.db"));
        let u = open_url(&format!("{path}?jumps=unbounded"));
        u.advance_counter("s", token(1 << 50)).unwrap();
        u.close();
        let later = open_url(&path);
        let sqlite = later.advance_counter("t", token(1 << 52));
        assert_eq!(
            etcd.as_ref().map_err(Error::code),
            sqlite.as_ref().map_err(Error::code),
            "etcd: {etcd:?}, sqlite: {sqlite:?}"
        );
    }
    assert_eq!(etcd.map_err(|e| e.to_string()), Ok(1 << 52));
}

/// The failover step is for a cluster restored from a snapshot (history
/// lost). A store opened with `jumps=unbounded` issued a token past the
/// jump limit; the restore lost it (here: the scope's record deleted, as a
/// snapshot from before held it); an operator runs `fencing failover` with
/// the store's usual URL. No token may be issued again.
#[test]
fn a_failover_step_stays_above_tokens_an_unbounded_handle_issued() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let prefix = fresh_schema("unbounded_step");
    let u = open_url(&url(&members, &prefix, "?jumps=unbounded"));
    // Where a step from an empty ceiling lands: J(0) + 2^40.
    let landing = (1u64 << 48) + (1u64 << 40);
    u.advance_counter("s", token(landing)).unwrap();
    let lost = u.next_token("s").unwrap();
    u.close();
    // The restore: a snapshot from before the scope existed.
    raw_delete(&first(&members), &raw_key(&prefix, b's', &["s"]));
    let operator = open_url(&url(&members, &prefix, ""));
    let base = operator.failover().unwrap();
    match operator.next_token("s") {
        Ok(next) => assert!(
            next.get() > lost.get(),
            "token {next} issued again after the failover step (base {base}); the lost history \
             had issued {lost}"
        ),
        Err(e) => assert_eq!(e.code(), ErrorCode::TokenExhausted, "{e}"),
    }
}

// ---------------------------------------------------------------------------
// (a)-(c) and (g): racing handles, each with its own memory
// ---------------------------------------------------------------------------

/// One call as a thread saw it: when it was sent and answered, and the token.
#[derive(Clone, Debug)]
struct Issued {
    scope: String,
    sent: Instant,
    answered: Instant,
    token: u64,
}

/// Tokens of one scope, checked for linearizability of the counter: no
/// token twice, and a call answered before another was sent got a smaller
/// token.
fn check_issued(all: &[Issued]) {
    let mut seen = HashSet::new();
    for i in all {
        assert!(
            seen.insert((i.scope.clone(), i.token)),
            "token {} of {} issued twice",
            i.token,
            i.scope
        );
    }
    for a in all {
        for b in all {
            if a.scope == b.scope && a.answered < b.sent {
                assert!(
                    a.token < b.token,
                    "{}: token {} answered before the call that got {} was sent",
                    a.scope,
                    a.token,
                    b.token
                );
            }
        }
    }
}

/// Two scopes of one floor bucket, issued, acquired, released and retired
/// by four handles at once: every handle's memory goes stale all the time
/// (the other handles write, retire and re-create the scopes), and no token
/// is issued twice, across incarnations too.
#[test]
fn stale_memories_never_reissue_a_token_across_retirements() {
    retirement_race(false);
}

/// The same with the four threads on one handle: one memory of the scopes,
/// written by every thread.
#[test]
fn one_shared_memory_never_reissues_a_token_across_retirements() {
    retirement_race(true);
}

fn retirement_race(shared: bool) {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let prefix = fresh_schema("retire_race");
    let location = url(&members, &prefix, "");
    let one = open_url(&location);
    let s0 = "r0".to_owned();
    let s1 = (1..)
        .map(|i| format!("r{i}"))
        .find(|s| floor_bucket(s) == floor_bucket(&s0))
        .unwrap();
    let scopes = [s0, s1];
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (location, scopes, one) = (location.clone(), scopes.clone(), one.clone());
            std::thread::spawn(move || {
                let store = if shared { one } else { open_url(&location) };
                let mut rng = Rng(t + 1);
                let (mut issued, mut retired) = (Vec::new(), 0);
                for _ in 0..60 {
                    let scope = &scopes[rng.below(2) as usize];
                    let sent = Instant::now();
                    match rng.below(10) {
                        0..=4 => {
                            let tok = store.next_token(scope).unwrap();
                            issued.push(Issued {
                                scope: scope.clone(),
                                sent,
                                answered: Instant::now(),
                                token: tok.get(),
                            });
                        }
                        5..=6 => match store.acquire(scope, "h", Duration::from_secs(5)) {
                            Ok(lease) => {
                                issued.push(Issued {
                                    scope: scope.clone(),
                                    sent,
                                    answered: Instant::now(),
                                    token: lease.token.get(),
                                });
                                assert!(store.release(scope, lease.token).unwrap());
                            }
                            Err(e) => assert_eq!(e.code(), ErrorCode::LeaseHeld, "{e}"),
                        },
                        _ => match store.retire(scope) {
                            Ok(r) => retired += usize::from(r),
                            Err(e) => assert_eq!(e.code(), ErrorCode::LeaseHeld, "{e}"),
                        },
                    }
                }
                (issued, retired)
            })
        })
        .collect();
    let (mut issued, mut retired) = (Vec::new(), 0);
    for t in threads {
        let (i, r) = t.join().unwrap();
        issued.extend(i);
        retired += r;
    }
    check_issued(&issued);
    let store = open_url(&location);
    for scope in &scopes {
        let top = issued
            .iter()
            .filter(|i| &i.scope == scope)
            .map(|i| i.token)
            .max()
            .unwrap_or(0);
        let next = store.next_token(scope).unwrap().get();
        assert!(next > top, "{scope}: next {next}, but {top} was issued");
    }
    assert!(
        retired > 5,
        "too few retirements to mean anything: {retired}"
    );
    eprintln!("{} tokens, {retired} retirements", issued.len());
}

/// Writers with tokens of their own, while another handle takes failover
/// steps: once a step returned its base B, no call sent after it gets a
/// token at or below B, and no write sent after it is accepted with one.
#[test]
fn failover_steps_racing_writers_leave_nothing_at_or_below_the_base() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let location = url(&members, &fresh_schema("step_race"), "");
    open_url(&location);
    let steps: Arc<Mutex<Vec<(Instant, u64)>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..3u64)
        .map(|t| {
            let (location, stop) = (location.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let store = open_url(&location);
                let mut rng = Rng(100 + t);
                let (mut issued, mut accepted) = (Vec::new(), Vec::new());
                let mut held: Vec<Token> = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let sent = Instant::now();
                    let tok = if rng.below(3) == 0 {
                        match store.acquire("s", "w", Duration::from_secs(1)) {
                            Ok(l) => {
                                let _ = store.release("s", l.token);
                                l.token
                            }
                            Err(e) => {
                                assert_eq!(e.code(), ErrorCode::LeaseHeld, "{e}");
                                continue;
                            }
                        }
                    } else {
                        store.next_token("s").unwrap()
                    };
                    issued.push(Issued {
                        scope: "s".into(),
                        sent,
                        answered: Instant::now(),
                        token: tok.get(),
                    });
                    held.push(tok);
                    // Write with a token of ours, often an old one.
                    let pick = held[rng.below(held.len() as u64) as usize];
                    let sent = Instant::now();
                    match store.put("s", "k", &pick.get().to_be_bytes(), &Fence::new(pick)) {
                        Ok(_) => accepted.push((sent, pick.get())),
                        Err(e) => assert_eq!(e.code(), ErrorCode::StaleToken, "{e}"),
                    }
                }
                (issued, accepted)
            })
        })
        .collect();
    let operator = open_url(&location);
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(300));
        let base = operator.failover().unwrap();
        steps.lock().unwrap().push((Instant::now(), base));
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let (mut issued, mut accepted) = (Vec::new(), Vec::new());
    for w in writers {
        let (i, a) = w.join().unwrap();
        issued.extend(i);
        accepted.extend(a);
    }
    check_issued(&issued);
    let steps = steps.lock().unwrap();
    for (at, base) in steps.iter() {
        for i in issued.iter().filter(|i| i.sent > *at) {
            assert!(
                i.token > *base,
                "token {} issued after the step to {base}",
                i.token
            );
        }
        for (sent, tok) in accepted.iter().filter(|(s, _)| s > at) {
            let _ = sent;
            assert!(
                *tok > *base,
                "token {tok} accepted after the step to {base}"
            );
        }
    }
    let status = operator.status("s").unwrap();
    assert!(status.counter >= status.fence);
    assert!(
        issued.len() > 20 && accepted.len() > 5,
        "too little ran: {} issued, {} accepted",
        issued.len(),
        accepted.len()
    );
}

/// A caller's own etcd transaction: `check`'s compares, and a put of `tok`
/// at `key`; the revision it committed at, `None` if its compare failed.
fn own_txn(member: &str, check: fencing::EtcdCheck, key: &str, tok: Token) -> Option<i64> {
    let mut body = check.to_gateway_json();
    body["success"].as_array_mut().unwrap().push(json!({
        "request_put": { "key": B64.encode(key.as_bytes()), "value": B64.encode(tok.get().to_string()) }
    }));
    let answer = raw(member, "kv/txn", &body);
    if answer["succeeded"].as_bool() != Some(true) {
        return None;
    }
    Some(
        answer["header"]["revision"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap(),
    )
}

/// `etcd_check` (a caller's own etcd transaction) racing the store's own
/// writes, each thread with its own handle and tokens: in the order etcd
/// committed them, the tokens that wrote (the store's puts and the callers'
/// own transactions together) never go down.
#[test]
fn own_etcd_writes_and_store_writes_commit_in_token_order() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let prefix = fresh_schema("own_race");
    let location = url(&members, &prefix, "");
    open_url(&location);
    let member = first(&members);
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (location, prefix, member) = (location.clone(), prefix.clone(), member.clone());
            std::thread::spawn(move || {
                let store = open_url(&location);
                let mut rng = Rng(200 + t);
                let mut committed: Vec<(i64, u64, &'static str)> = Vec::new();
                let mut mine: Vec<Token> = Vec::new();
                for i in 0..25 {
                    if mine.is_empty() || rng.below(2) == 0 {
                        mine.push(store.next_token("s").unwrap());
                    }
                    let tok = mine[rng.below(mine.len() as u64) as usize];
                    if t % 2 == 0 {
                        // The store's own write, to a key of its own so that
                        // its mod revision is its commit's.
                        let key = format!("w{t}-{i}");
                        match store.put("s", &key, b"x", &Fence::new(tok)) {
                            Ok(_) => {
                                let (rev, _) =
                                    raw_get(&member, &raw_key(&prefix, b'e', &["s", &key]))
                                        .unwrap();
                                committed.push((rev, tok.get(), "store put"));
                            }
                            Err(e) => assert_eq!(e.code(), ErrorCode::StaleToken, "{e}"),
                        }
                    } else {
                        match store.etcd_check("s", &Fence::new(tok)) {
                            Ok(check) => {
                                let own = format!("{prefix}/own/{t}-{i}");
                                if let Some(rev) = own_txn(&member, check, &own, tok) {
                                    committed.push((rev, tok.get(), "own txn"));
                                }
                            }
                            Err(e) => assert_eq!(e.code(), ErrorCode::StaleToken, "{e}"),
                        }
                    }
                }
                committed
            })
        })
        .collect();
    let mut committed = Vec::new();
    for t in threads {
        committed.extend(t.join().unwrap());
    }
    // Under load every racing own transaction may lose to a store write
    // (its compare then fails, as it must): one more after the race, with
    // the next token, commits for sure, after all of them and above.
    let store = open_url(&location);
    let tok = store.next_token("s").unwrap();
    let check = store.etcd_check("s", &Fence::new(tok)).unwrap();
    let own = format!("{prefix}/own/last");
    let rev = own_txn(&member, check, &own, tok).expect("the last own transaction failed");
    committed.push((rev, tok.get(), "own txn"));
    committed.sort();
    for w in committed.windows(2) {
        assert!(
            w[0].1 <= w[1].1,
            "{} with token {} committed at revision {} after {} with token {} at {}",
            w[1].2,
            w[1].1,
            w[1].0,
            w[0].2,
            w[0].1,
            w[0].0
        );
    }
    let kinds: HashSet<&str> = committed.iter().map(|c| c.2).collect();
    assert_eq!(
        kinds.len(),
        2,
        "both kinds of write committed: {committed:?}"
    );
    let fence = open_url(&location).status("s").unwrap().fence;
    assert_eq!(fence, committed.last().unwrap().1);
}

/// A handle's memory of a lease it held: after the lease ran out on etcd's
/// time and another handle took the scope, its release, renew and acquire
/// decide on the scope as it is (never on the memory), and touch nothing.
#[test]
fn a_handles_memory_of_an_expired_lease_never_touches_the_next_one() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let location = url(&members, &fresh_schema("stale_lease"), "");
    let h = open_url(&location);
    let g = open_url(&location);
    let old = h.acquire("s", "H", Duration::from_millis(800)).unwrap();
    // H's memory now says: H holds the lease.
    let started = Instant::now();
    let new = loop {
        match g.acquire("s", "G", Duration::from_secs(30)) {
            Ok(l) => break l,
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::LeaseHeld, "{e}");
                assert!(started.elapsed() < Duration::from_secs(20));
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    assert!(!h.release("s", old.token).unwrap());
    let e = h.renew("s", old.token, Duration::from_secs(5)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::LeaseLost, "{e}");
    let e = h.acquire("s", "H", Duration::from_secs(5)).unwrap_err();
    assert!(
        matches!(&e, Error::LeaseHeld { holder, token, .. } if holder == "G" && *token == new.token),
        "{e}"
    );
    // H's write with its old token is stale.
    let e = h.put("s", "k", b"H", &Fence::new(old.token)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StaleToken, "{e}");
    let live = g
        .status("s")
        .unwrap()
        .lease
        .expect("G's lease is untouched");
    assert_eq!((live.holder.as_str(), live.token), ("G", new.token));
    assert!(g.release("s", new.token).unwrap());
}

/// A handle whose memory says the fence is its own token, after another
/// holder raised the fence through its own etcd transaction (no call of
/// this handle saw it): its write with the old token is refused.
#[test]
fn a_handles_memory_never_lets_a_write_past_a_fence_raised_outside_it() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let prefix = fresh_schema("outside_raise");
    let location = url(&members, &prefix, "");
    let h = open_url(&location);
    let other = open_url(&location);
    let a = h.next_token("s").unwrap();
    let b = h.next_token("s").unwrap();
    h.put("s", "k", b"A", &Fence::new(a)).unwrap();
    let check = other.etcd_check("s", &Fence::new(b)).unwrap();
    let answer = raw(&first(&members), "kv/txn", &check.to_gateway_json());
    assert_eq!(answer["succeeded"], true);
    let e = h.put("s", "k", b"A again", &Fence::new(a)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StaleToken, "{e}");
    let e = h
        .apply("s", &Fence::new(a), vec![Op::delete("k")])
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::StaleToken, "{e}");
    assert_eq!(h.get("s", "k", None).unwrap().unwrap().value, b"A");
}

// ---------------------------------------------------------------------------
// (d) A lease never early, never shared
// ---------------------------------------------------------------------------

/// A holder's calls that succeeded, for its deadline: the latest of
/// (sent + TTL granted) over its acquire and its renewals.
fn deadline(calls: &[(Instant, Duration)]) -> Instant {
    calls.iter().map(|(s, ttl)| *s + *ttl).max().unwrap()
}

/// A renews every 200 ms (each renew a new etcd lease, the old one revoked)
/// while B polls from another handle; A stops; B gets the lease no earlier
/// than A's last renew was sent plus its TTL.
#[test]
fn renewals_keep_the_lease_until_the_last_renews_ttl_from_its_send() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let location = url(&members, &fresh_schema("renewals"), "");
    let a = open_url(&location);
    let b = open_url(&location);
    let ttl = Duration::from_secs(1);
    let sent = Instant::now();
    let lease = a.acquire("s", "A", ttl).unwrap();
    let calls = Arc::new(Mutex::new(vec![(sent, lease.ttl)]));
    let renewing = {
        let (a, calls) = (a.clone(), Arc::clone(&calls));
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_millis(2500);
            while Instant::now() < until {
                std::thread::sleep(Duration::from_millis(200));
                let sent = Instant::now();
                let r = a.renew("s", lease.token, ttl).unwrap();
                calls.lock().unwrap().push((sent, r.ttl));
            }
        })
    };
    let (got, when) = loop {
        match b.acquire("s", "B", Duration::from_secs(5)) {
            Ok(l) => break (l, Instant::now()),
            Err(Error::LeaseHeld { token, .. }) => {
                assert_eq!(token, lease.token);
                assert!(sent.elapsed() < Duration::from_secs(20), "never ended");
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("{e}"),
        }
    };
    renewing.join().unwrap();
    let due = deadline(&calls.lock().unwrap());
    assert!(
        when >= due,
        "B got the lease {:?} before A's deadline",
        due.duration_since(when)
    );
    assert!(got.token > lease.token);
    let e = a.renew("s", lease.token, ttl).unwrap_err();
    assert_eq!(e.code(), ErrorCode::LeaseLost);
}

/// The same with the leader killed twice while A renews: a renew may fail
/// (BACKEND), but no holder gets the lease before the deadline of A's last
/// call that succeeded.
#[test]
fn leader_kills_never_end_a_renewed_lease_early() {
    let Some(cluster) = OwnEtcd::start() else {
        return;
    };
    let location = url(
        &cluster.members,
        &fresh_schema("renew_kill"),
        "?call_timeout_ms=2000",
    );
    let a = open_url(&location);
    let ttl = Duration::from_secs(2);
    let sent = Instant::now();
    let lease = a.acquire("s", "A", ttl).unwrap();
    let calls = Arc::new(Mutex::new(vec![(sent, lease.ttl)]));
    let stop = Arc::new(AtomicBool::new(false));
    let renewing = {
        let (a, calls, stop) = (a.clone(), Arc::clone(&calls), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut failures = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(150));
                let sent = Instant::now();
                match a.renew("s", lease.token, ttl) {
                    Ok(r) => calls.lock().unwrap().push((sent, r.ttl)),
                    Err(e) if e.code() == ErrorCode::Backend => failures.push(e.to_string()),
                    Err(e) if e.code() == ErrorCode::LeaseLost => break,
                    Err(e) => panic!("{e}"),
                }
            }
            failures
        })
    };
    let polled = Arc::new(Mutex::new(None));
    let polling = {
        let (location, polled, stop) = (location.clone(), Arc::clone(&polled), Arc::clone(&stop));
        std::thread::spawn(move || {
            let b = open_url(&location);
            while !stop.load(Ordering::Relaxed) {
                match b.acquire("s", "B", Duration::from_secs(5)) {
                    Ok(l) => {
                        *polled.lock().unwrap() = Some((Instant::now(), l.token));
                        return;
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(30)),
                }
            }
        })
    };
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(800));
        let killed = cluster.run(&["kill-leader"]);
        let name = killed.split_whitespace().nth(2).unwrap().to_owned();
        std::thread::sleep(Duration::from_millis(500));
        cluster.run(&["restart", &name]);
    }
    std::thread::sleep(Duration::from_millis(800));
    stop.store(true, Ordering::Relaxed);
    let failures = renewing.join().unwrap();
    polling.join().unwrap();
    let due = deadline(&calls.lock().unwrap());
    if let Some((when, token)) = *polled.lock().unwrap() {
        assert!(
            when >= due,
            "B got the lease (token {token}) {:?} before A's deadline; A's renew failures: \
             {failures:?}",
            due.duration_since(when)
        );
    }
    eprintln!(
        "{} renewals succeeded, {} failed",
        calls.lock().unwrap().len() - 1,
        failures.len()
    );
}

// ---------------------------------------------------------------------------
// record_rejection beside writers
// ---------------------------------------------------------------------------

/// Stale writers (each rejection recorded in the store, rate limited per
/// handle) beside a current writer: the current writer's writes all pass,
/// and the record holds a rejection.
#[test]
fn recorded_rejections_never_fail_a_current_writer() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let location = url(&members, &fresh_schema("rejections"), "");
    let store = open_url(&location);
    let old = store.next_token("s").unwrap();
    let current = store.next_token("s").unwrap();
    store.put("s", "k", b"c", &Fence::new(current)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stale: Vec<_> = (0..3)
        .map(|_| {
            let (location, stop) = (location.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let store = open_url(&location);
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let e = store.put("s", "k", b"old", &Fence::new(old)).unwrap_err();
                    assert_eq!(e.code(), ErrorCode::StaleToken, "{e}");
                    n += 1;
                }
                n
            })
        })
        .collect();
    for i in 0..40 {
        let value = format!("c{i}");
        store
            .put("s", "k", value.as_bytes(), &Fence::new(current))
            .unwrap_or_else(|e| panic!("write {i}: {e}"));
    }
    std::thread::sleep(Duration::from_millis(1100));
    stop.store(true, Ordering::Relaxed);
    let rejected: usize = stale.into_iter().map(|t| t.join().unwrap()).sum();
    let events = store.events(Some("s"), 10).unwrap();
    assert!(rejected > 0);
    let r = events.rejections.first().expect("a recorded rejection");
    assert_eq!((r.presented, r.current), (old, current.get()));
    assert_eq!(store.get("s", "k", None).unwrap().unwrap().value, b"c39");
}

// ---------------------------------------------------------------------------
// (e) Failures on a cluster of the test's own
// ---------------------------------------------------------------------------

/// A follower killed (the handle's pooled connections to it dead) before a
/// write is sent: the write cannot have reached it. docs/etcd.md,
/// "Failures": "a member cannot be reached ... tried on the next member".
/// (A killed leader is another matter: a follower that has not yet noticed
/// forwards the proposal into the void, and the write's fate is unknown.)
#[test]
fn a_follower_killed_before_a_write_hands_the_write_to_the_next_member() {
    let Some(cluster) = OwnEtcd::start() else {
        return;
    };
    // The URL lists a follower first: the handle's calls go to it.
    let status = cluster.run(&["status"]);
    let ports: Vec<&str> = cluster.members.split(',').collect();
    let follower = status
        .lines()
        .position(|l| l.contains("follower"))
        .expect("a follower");
    let mut order = vec![ports[follower]];
    order.extend(
        ports
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != follower)
            .map(|(_, p)| *p),
    );
    let location = url(&order.join(","), &fresh_schema("killed"), "");
    let store = open_url(&location);
    for _ in 0..5 {
        store.next_token("s").unwrap();
    }
    let before = store.status("s").unwrap().counter;
    cluster.run(&["kill", &follower.to_string()]);
    std::thread::sleep(Duration::from_millis(200));
    let mut answers = Vec::new();
    for _ in 0..3 {
        let sent = Instant::now();
        answers.push((
            store.next_token("s").map_err(|e| e.to_string()),
            sent.elapsed(),
        ));
    }
    let after = store.status("s").unwrap().counter;
    assert!(
        answers
            .iter()
            .all(|(r, took)| r.is_ok() && *took < Duration::from_secs(1)),
        "writes after a follower was killed: {answers:?} (counter {before} -> {after})"
    );
    assert_eq!(after, before + 3);
}

/// A paused member that is the handle's current one: a read moves on to
/// the next member within its share of the deadline, and nothing is lost
/// or doubled.
#[test]
fn a_paused_member_delays_a_read_by_its_share_only() {
    let Some(cluster) = OwnEtcd::start() else {
        return;
    };
    let location = url(
        &cluster.members,
        &fresh_schema("paused"),
        "?call_timeout_ms=3000",
    );
    let store = open_url(&location);
    let t = store.next_token("s").unwrap();
    cluster.run(&["pause", "0"]);
    let started = Instant::now();
    let status = store.status("s");
    let took = started.elapsed();
    cluster.run(&["resume", "0"]);
    let status = status.unwrap_or_else(|e| panic!("a read with one member paused: {e}"));
    assert_eq!(status.counter, t.get());
    assert!(took < Duration::from_millis(2500), "{took:?}");
    // The handle moved on; no write lost or doubled.
    let u = store.next_token("s").unwrap();
    assert_eq!(u.get(), t.get() + 1);
}

/// A handle on the manual clock (tests) beside one on etcd's time, on one
/// prefix: the default handle's lease is live on etcd (its key exists), and
/// the manual handle's rules judge the record's expiry, counted from the
/// etcd rules' clock of 0, on a clock that started at the wall clock. It
/// must not grant the lease to a second holder while the first's is live
/// on etcd; compared with SQLite's answer to the same pair of handles.
#[test]
fn a_manual_clock_handle_never_takes_a_lease_live_on_etcd() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let prefix = fresh_schema("mixed_clock");
    let real = open_url(&url(&members, &prefix, ""));
    let held = real.acquire("s", "A", Duration::from_secs(30)).unwrap();
    let manual = open_url(&url(&members, &prefix, "?clock=manual"));
    let taken = manual.acquire("s", "M", Duration::from_secs(30));
    #[cfg(feature = "sqlite")]
    {
        let dir = tempfile::tempdir().unwrap();
        let path = support::sqlite_url(&dir.path().join("m.db"));
        let real = open_url(&path);
        real.acquire("s", "A", Duration::from_secs(30)).unwrap();
        let manual = open_url(&format!("{path}?clock=manual"));
        let sqlite = manual.acquire("s", "M", Duration::from_secs(30));
        eprintln!("sqlite: {sqlite:?}");
        assert_eq!(
            taken.as_ref().map(|_| ()).map_err(Error::code),
            sqlite.as_ref().map(|_| ()).map_err(Error::code),
            "etcd: {taken:?}; sqlite: {sqlite:?}"
        );
    }
    assert!(
        matches!(&taken, Err(Error::LeaseHeld { token, .. }) if *token == held.token),
        "A holds token {} for 30 s on etcd; the manual-clock handle got {taken:?}",
        held.token
    );
}

// ---------------------------------------------------------------------------
// The ceiling and the failover step
// ---------------------------------------------------------------------------

fn ceiling_of(member: &str, prefix: &str) -> u64 {
    raw_get(member, &raw_key(prefix, b'h', &[]))
        .map(|(_, v)| String::from_utf8(v).unwrap().parse().unwrap())
        .unwrap_or(0)
}

/// Handles counting past the jump limit at once, on scopes of their own
/// and through a caller's own transaction (`etcd_check`): the ceiling is
/// compared only by the transactions that raise it, and still ends above
/// every token; a failover step then lands above all of them.
#[test]
fn concurrent_issues_past_the_jump_limit_keep_the_ceiling_above_them() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let prefix = fresh_schema("ceiling");
    let location = url(&members, &prefix, "");
    open_url(&location);
    let member = first(&members);
    let limit = 1u64 << 48;
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let (location, member) = (location.clone(), member.clone());
            std::thread::spawn(move || {
                let store = open_url(&location);
                let scope = format!("c{i}");
                store.advance_counter(&scope, token(limit)).unwrap();
                let mut tokens = Vec::new();
                if i == 3 {
                    // A caller's own transaction with the next token: taken
                    // once the store issued it, refused before (only the
                    // store's own issues count past the limit).
                    let err = store.etcd_check(&scope, &Fence::new(token(limit + 1)));
                    assert_eq!(err.unwrap_err().code(), ErrorCode::InvalidArgument);
                    let t = store.next_token(&scope).unwrap();
                    loop {
                        let check = store.etcd_check(&scope, &Fence::new(t)).unwrap();
                        if raw(&member, "kv/txn", &check.to_gateway_json())["succeeded"] == true {
                            break;
                        }
                    }
                    tokens.push((scope.clone(), t.get()));
                    tokens.push((scope.clone(), store.next_token(&scope).unwrap().get()));
                    let err = store.etcd_check(&scope, &Fence::new(token(t.get() + 2)));
                    assert_eq!(err.unwrap_err().code(), ErrorCode::InvalidArgument);
                } else {
                    for _ in 0..5 {
                        tokens.push((scope.clone(), store.next_token(&scope).unwrap().get()));
                    }
                }
                tokens
            })
        })
        .collect();
    let tokens: Vec<(String, u64)> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let top = tokens.iter().map(|(_, t)| *t).max().unwrap();
    let ceiling = ceiling_of(&member, &prefix);
    assert!(ceiling >= top, "ceiling {ceiling} below token {top}");
    let store = open_url(&location);
    let base = store.failover().unwrap();
    assert!(base > top);
    for i in 0..4 {
        assert!(store.next_token(&format!("c{i}")).unwrap().get() > base);
    }
}

/// The step's own case on a bounded store: history lost (the scope's
/// record and the ceiling a snapshot from before did not hold), then the
/// step: the next token is above every token the lost history issued, a
/// retirement it made included.
#[test]
fn a_failover_step_after_a_lost_history_stays_above_its_tokens() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let prefix = fresh_schema("lost");
    let member = first(&members);
    let store = open_url(&url(&members, &prefix, ""));
    let limit = 1u64 << 48;
    store.next_token("s").unwrap();
    store.next_token("r").unwrap();
    // The lost history: s jumps to the limit and counts past it; r counts
    // on, is retired and re-created.
    store.advance_counter("s", token(limit)).unwrap();
    let mut lost = Vec::new();
    for _ in 0..3 {
        lost.push(store.next_token("s").unwrap().get());
    }
    store.advance_counter("r", token(limit - 10)).unwrap();
    lost.push(store.next_token("r").unwrap().get());
    assert!(store.retire("r").unwrap());
    lost.push(store.next_token("r").unwrap().get());
    store.close();
    // The restore: a snapshot from before all of it.
    for key in [
        raw_key(&prefix, b's', &["s"]),
        raw_key(&prefix, b's', &["r"]),
        raw_key(&prefix, b'h', &[]),
        raw_key(&prefix, b'f', &[&floor_bucket("r").to_string()]),
    ] {
        raw_delete(&member, &key);
    }
    let operator = open_url(&url(&members, &prefix, ""));
    let base = operator.failover().unwrap();
    let top = *lost.iter().max().unwrap();
    for scope in ["s", "r"] {
        let next = operator.next_token(scope).unwrap().get();
        assert!(
            next > top,
            "{scope}: {next} after the step to {base}; lost {lost:?}"
        );
    }
}

/// A failover step ends every lease: the old holder (whose handle still
/// remembers its lease) can renew, release or write nothing, and the next
/// holder's lease is left alone.
#[test]
fn a_failover_step_ends_the_lease_and_the_old_holders_memory_touches_nothing() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let location = url(&members, &fresh_schema("step_lease"), "");
    let a = open_url(&location);
    let old = a.acquire("s", "A", Duration::from_secs(30)).unwrap();
    a.put("s", "k", b"A", &Fence::new(old.token)).unwrap();
    let operator = open_url(&location);
    let base = operator.failover().unwrap();
    let b = open_url(&location);
    let new = b.acquire("s", "B", Duration::from_secs(30)).unwrap();
    assert!(new.token.get() > base);
    let e = a
        .renew("s", old.token, Duration::from_secs(30))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::LeaseLost, "{e}");
    assert!(!a.release("s", old.token).unwrap());
    let e = a.put("s", "k", b"A2", &Fence::new(old.token)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StaleToken, "{e}");
    let e = a.etcd_check("s", &Fence::new(old.token)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StaleToken, "{e}");
    let live = b.status("s").unwrap().lease.unwrap();
    assert_eq!((live.holder.as_str(), live.token), ("B", new.token));
    assert!(live.remaining > Duration::from_secs(20));
}
