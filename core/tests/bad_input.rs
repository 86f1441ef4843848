//! The Rust face of docs/bad-input.md: each hostile input the Rust API can
//! express is INVALID_ARGUMENT (or CLOSED, BACKEND) and changes nothing.
//! NULL, invalid UTF-8, negative numbers, floats and 2^64 cannot reach the
//! API as such (`&str` is UTF-8, tokens are `u64`/`Token`): they can only
//! arrive as text, through the token parser, which is tested here.

use std::time::Duration;

use fencing::{ErrorCode, Fence, Op, Store, Token};

/// A store with a lease (token 1), an accepted write, and everything
/// observable about it.
fn fixture() -> (Store, Token) {
    let store = Store::open("memory:?clock=manual").unwrap();
    let lease = store
        .acquire("s", "holder", Duration::from_secs(10))
        .unwrap();
    store
        .put("s", "k", b"v", &Fence::new(lease.token).with_seq(3))
        .unwrap();
    (store, lease.token)
}

fn snapshot(store: &Store) -> impl PartialEq + std::fmt::Debug {
    let m = store.metrics();
    (
        store.status("s").unwrap(),
        store.get("s", "k", None).unwrap(),
        store.list("s", None, 1000).unwrap(),
        store.status("t").unwrap(),
        (
            m.tokens_issued,
            m.writes_accepted,
            m.stale_rejections,
            m.rejections.len(),
        ),
    )
}

fn invalid<T: std::fmt::Debug>(what: &str, r: fencing::Result<T>) {
    match r {
        Err(e) => assert_eq!(e.code(), ErrorCode::InvalidArgument, "{what}: {e}"),
        Ok(v) => panic!("{what}: accepted, got {v:?}"),
    }
}

/// Every call that takes a name, with `name` in that place.
fn every_name_position(store: &Store, t: Token, name: &str) {
    let f = Fence::new(t);
    let ttl = Duration::from_secs(1);
    invalid("next_token scope", store.next_token(name));
    invalid("advance_counter scope", store.advance_counter(name, t));
    invalid("acquire scope", store.acquire(name, "h", ttl));
    invalid("acquire holder", store.acquire("t", name, ttl));
    invalid("renew scope", store.renew(name, t, ttl));
    invalid("release scope", store.release(name, t));
    invalid("put scope", store.put(name, "k", b"x", &f));
    invalid("put key", store.put("s", name, b"x", &f));
    invalid(
        "put holder",
        store.put("s", "k", b"x", &f.clone().with_holder(name)),
    );
    invalid("delete key", store.delete("s", name, &f));
    invalid("apply key", store.apply("s", &f, vec![Op::put(name, "x")]));
    invalid("claim scope", store.claim(name, &f));
    invalid("get scope", store.get(name, "k", None));
    invalid("get key", store.get("s", name, None));
    invalid("list scope", store.list(name, None, 10));
    invalid("list after", store.list("s", Some(name), 10));
    invalid("fence_of scope", store.fence_of(name));
    invalid("status scope", store.status(name));
    invalid("retire scope", store.retire(name));
}

#[test]
fn empty_names_are_invalid_and_change_nothing() {
    let (store, t) = fixture();
    let before = snapshot(&store);
    every_name_position(&store, t, "");
    assert_eq!(snapshot(&store), before);
}

#[test]
fn names_of_64_kib_are_invalid_and_change_nothing() {
    let (store, t) = fixture();
    let before = snapshot(&store);
    every_name_position(&store, t, &"n".repeat(64 * 1024));
    // Multi-byte text is measured in bytes, not characters.
    every_name_position(&store, t, &"é".repeat(32 * 1024));
    assert_eq!(snapshot(&store), before);
}

#[test]
fn names_with_nul_are_invalid_and_change_nothing() {
    let (store, t) = fixture();
    let before = snapshot(&store);
    every_name_position(&store, t, "a\0b");
    assert_eq!(snapshot(&store), before);
}

#[test]
fn token_zero_and_2_pow_63_cannot_be_made() {
    // `Token` is the only way to present a token: 0 and 2^63 and above are
    // refused when it is made, so no call ever sees them.
    for v in [0, 1u64 << 63, u64::MAX] {
        assert_eq!(Token::new(v), None, "{v}");
        invalid("try_from_u64", Token::try_from_u64(v));
    }
    assert_eq!(Token::new((1 << 63) - 1), Some(Token::MAX));
}

#[test]
fn token_text_that_is_not_canonical_decimal_is_invalid() {
    for text in [
        "",
        "0",
        "-1",
        "+1",
        "1.0",
        "1.5",
        "1e3",
        "NaN",
        "9223372036854775808",  // 2^63
        "18446744073709551615", // 2^64 - 1
        "18446744073709551616", // 2^64
        "-9223372036854775808",
        " 1",
        "0x10",
        "1\0",
    ] {
        invalid("parse", text.parse::<Token>());
    }
    // 2^53 + 1 (not a JavaScript number) is an ordinary token here.
    assert_eq!(
        "9007199254740993".parse::<Token>().unwrap().get(),
        (1 << 53) + 1
    );
}

#[test]
fn the_largest_token_is_accepted_and_exhausts_the_counter() {
    // Past the jump limit (docs/semantics.md, "Failover"): refused, nothing
    // changed, unless the store's jumps are unbounded.
    let (store, _) = fixture();
    invalid("a jump to 2^63-1", store.advance_counter("x", Token::MAX));
    invalid(
        "a write at 2^63-1",
        store.put("x", "k", b"v", &Fence::new(Token::MAX)),
    );
    assert_eq!(store.status("x").unwrap().counter, 0);
    let store = Store::open("memory:?jumps=unbounded").unwrap();
    store.advance_counter("x", Token::MAX).unwrap();
    assert_eq!(
        store.next_token("x").unwrap_err().code(),
        ErrorCode::TokenExhausted
    );
    store.put("x", "k", b"v", &Fence::new(Token::MAX)).unwrap();
    assert_eq!(store.fence_of("x").unwrap(), Token::MAX.get());
}

#[test]
fn seq_2_pow_63_and_bad_sizes_are_invalid_and_change_nothing() {
    let (store, t) = fixture();
    let before = snapshot(&store);
    let f = Fence::new(t);
    invalid(
        "seq 2^63",
        store.put("s", "k", b"x", &f.clone().with_seq(1 << 63)),
    );
    invalid("seq max", store.claim("s", &f.clone().with_seq(u64::MAX)));
    invalid(
        "expected_version 2^63",
        store.execute("s", &f, Op::put("k", "x").if_version(1 << 63)),
    );
    invalid(
        "value over 1 MiB",
        store.put("s", "k", &vec![0; (1 << 20) + 1], &f),
    );
    invalid("empty batch", store.apply("s", &f, vec![]));
    invalid(
        "batch of 1001",
        store.apply("s", &f, vec![Op::put("k", "x"); 1001]),
    );
    invalid("list limit 0", store.list("s", None, 0));
    invalid("list limit 1001", store.list("s", None, 1001));
    invalid("ttl 0", store.acquire("t", "h", Duration::ZERO));
    invalid(
        "ttl below 1 ms",
        store.acquire("t", "h", Duration::from_micros(999)),
    );
    invalid(
        "ttl 367 days",
        store.renew("s", t, Duration::from_secs(367 * 86400)),
    );
    invalid("ttl max", store.acquire("t", "h", Duration::MAX));
    // In the unit C and Node callers pass (Python says seconds itself).
    for (ttl, says) in [
        (Duration::ZERO, "ttl 0 ms is outside 1..=31622400000 ms"),
        (Duration::from_micros(999), "ttl 0.999 ms is outside"),
        (
            Duration::from_secs(367 * 86400),
            "ttl 31708800000 ms is outside",
        ),
    ] {
        let err = store.acquire("t", "h", ttl).unwrap_err().to_string();
        assert!(err.contains(says), "{err}");
    }
    assert_eq!(snapshot(&store), before);
}

#[test]
fn bad_urls_are_invalid() {
    for url in [
        "",
        "memory",
        "MEMORY:",
        "memory:?x=1",
        "sqlite:",
        "redis://x",
        &format!("memory:?{}", "a".repeat(64 * 1024)),
    ] {
        invalid("open", Store::open(url));
    }
}

/// Where other faces say "pass lease.token", Rust has no runtime mistake to
/// report (`Fence::new` takes a `Token`, and a `Lease` is not one): the
/// natural spelling is `Fence::from(&lease)` or `Fence::from(&guard)`, which
/// carry the lease's token and holder.
#[test]
fn a_lease_and_a_guard_become_fences_with_their_token_and_holder() {
    let store = Store::open("memory:").unwrap();
    let lease = store.acquire("s", "a", Duration::from_secs(10)).unwrap();
    let fence = Fence::from(&lease);
    assert_eq!(
        (fence.token, fence.holder.as_deref()),
        (lease.token, Some("a"))
    );
    store.put("s", "k", b"v", &fence).unwrap();
    store.release("s", lease.token).unwrap();
    let guard = store.lease("s", "b", Duration::from_secs(10)).unwrap();
    let receipt = store.put("s", "k", b"w", &(&guard).into()).unwrap();
    assert_eq!(receipt.token, guard.token());
    assert_eq!(Fence::from(&guard).holder.as_deref(), Some("b"));
}

/// `sqlite://rel.db` (SQLAlchemy's habit) would be `/rel.db` at the
/// filesystem root if taken as a path: refused, naming both right spellings,
/// and no file appears anywhere.
#[test]
fn sqlite_double_slash_is_refused_with_the_right_spelling() {
    let name = format!("fencing-bad-input-{}.db", std::process::id());
    for url in [
        format!("sqlite://{name}"),
        format!("sqlite:///{name}"),
        format!("sqlite:////{name}"),
    ] {
        let err = Store::open(&url).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{url}");
        let message = err.to_string();
        assert!(message.contains(&format!("sqlite:{name}")), "{message}");
        assert!(message.contains(&format!("sqlite:/{name}")), "{message}");
    }
    assert!(!std::path::Path::new("/").join(&name).exists());
    assert!(!std::path::Path::new(&name).exists());
}

#[test]
fn a_closed_store_is_closed_for_every_call_and_arguments_come_first() {
    let (store, t) = fixture();
    let other = store.clone();
    store.close();
    let f = Fence::new(t);
    let ttl = Duration::from_secs(1);
    let closed = |what: &str, code: ErrorCode| assert_eq!(code, ErrorCode::Closed, "{what}");
    closed("next_token", store.next_token("s").unwrap_err().code());
    closed(
        "advance_counter",
        store.advance_counter("s", t).unwrap_err().code(),
    );
    closed("acquire", store.acquire("s", "h", ttl).unwrap_err().code());
    closed(
        "acquire_wait",
        store.acquire_wait("s", "h", ttl, ttl).unwrap_err().code(),
    );
    closed("renew", store.renew("s", t, ttl).unwrap_err().code());
    closed("release", store.release("s", t).unwrap_err().code());
    closed("put", store.put("s", "k", b"x", &f).unwrap_err().code());
    closed("delete", store.delete("s", "k", &f).unwrap_err().code());
    closed(
        "apply",
        store
            .apply("s", &f, vec![Op::delete("k")])
            .unwrap_err()
            .code(),
    );
    closed("claim", store.claim("s", &f).unwrap_err().code());
    closed("get", store.get("s", "k", None).unwrap_err().code());
    closed("list", store.list("s", None, 10).unwrap_err().code());
    closed("fence_of", store.fence_of("s").unwrap_err().code());
    closed("status", store.status("s").unwrap_err().code());
    closed("retire", store.retire("s").unwrap_err().code());
    closed(
        "advance_clock",
        store.advance_clock(ttl).unwrap_err().code(),
    );
    // Every clone shares the closed state; a bad argument is still reported first.
    closed("clone", other.fence_of("s").unwrap_err().code());
    invalid("empty scope on a closed store", store.fence_of(""));
    assert!(store.is_closed());
}

/// PostgreSQL unreachable: `BACKEND`, naming the host, the port and the
/// driver's cause, never the password. The port is one just bound and
/// closed, so nothing listens there.
#[test]
fn an_unreachable_postgres_names_host_port_and_cause_but_not_the_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = Store::open(&format!(
        "postgres://worker:hunter2@127.0.0.1:{port}/db?password=hunter3"
    ))
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Backend);
    let message = err.to_string();
    assert!(
        message.contains(&format!("cannot connect to 127.0.0.1:{port}")),
        "{message}"
    );
    assert!(message.contains("refused"), "{message}");
    assert!(!message.contains("hunter"), "{message}");
}

/// A PostgreSQL host that is a path names a Unix socket directory: where
/// there are none, the URL is refused at open rather than looked up as a
/// host name.
#[test]
#[cfg(windows)]
fn a_unix_socket_host_is_invalid_where_there_are_none() {
    for url in [
        "postgres://bob@%2Frun%2Fpostgresql/app",
        "postgres://bob@db,%2Ftmp/app",
        "postgres:///app?host=/run/postgresql",
        "postgres:///app?host=C:\\pg",
    ] {
        let e = Store::open(url).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{url}: {e}");
        assert!(e.to_string().contains("Unix socket"), "{url}: {e}");
    }
}
