//! The operator's record in the store (docs/operations.md, "The store's
//! record"): recent rejections and the last writer of each scope, on every
//! backend; bounded in size and in write rate; never any values.

use std::path::Path;
use std::time::Duration;

use fencing::{ErrorCode, Fence, Store, Token, RECORD_BURST, RECORD_INTERVAL, REJECTION_LOG};

mod support;
use support::{fresh_schema, postgres_test_url, sqlite_url};

const SECRET: &[u8] = b"SECRET-VALUE-never-recorded";

/// One store per backend, each on a manual clock, with a way to dump the
/// raw rows of its record (to look for values in them).
struct Bed {
    url: String,
    /// Stale writes in the flood test: fewer where each is a round trip.
    flood: u64,
    _dir: Option<tempfile::TempDir>,
}

fn beds() -> Vec<Bed> {
    let mut beds = vec![Bed {
        url: "memory:?clock=manual".into(),
        flood: 10_000,
        _dir: None,
    }];
    let dir = tempfile::tempdir().unwrap();
    beds.push(Bed {
        // synchronous=normal: these tests make thousands of commits, and
        // what they check does not depend on fsync.
        url: format!(
            "{}?clock=manual&synchronous=normal",
            sqlite_url(&dir.path().join("e.db"))
        ),
        flood: 10_000,
        _dir: Some(dir),
    });
    if let Some(base) = postgres_test_url() {
        beds.push(Bed {
            url: format!("{base}?schema={}&clock=manual", fresh_schema("events")),
            flood: 2_000,
            _dir: None,
        });
    }
    // Behind PgBouncer in transaction mode (unnamed statements), when the
    // bed runs (scripts/pgbouncer; CI).
    if let Ok(base) = std::env::var("FENCING_TEST_PGBOUNCER_URL") {
        beds.push(Bed {
            url: format!(
                "{base}?schema={}&clock=manual&pooler=transaction",
                fresh_schema("evpool")
            ),
            flood: 500,
            _dir: None,
        });
    }
    beds
}

fn tok(n: u64) -> Token {
    Token::new(n).unwrap()
}

/// Worker A pauses past its lease, B takes over and writes, A writes late.
fn stale_story(store: &Store, scope: &str) -> (Token, Token) {
    let ttl = Duration::from_secs(10);
    let a = store.acquire(scope, "worker-a", ttl).unwrap();
    store.advance_clock(Duration::from_secs(11)).unwrap();
    let b = store.acquire(scope, "worker-b", ttl).unwrap();
    let fence_b = Fence::new(b.token).with_holder("worker-b");
    store.put(scope, "report", b"B's", &fence_b).unwrap();
    let fence_a = Fence::new(a.token).with_holder("worker-a");
    let err = store.put(scope, "report", SECRET, &fence_a).unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleToken);
    (a.token, b.token)
}

#[test]
fn a_stale_write_is_recorded_with_its_fields_and_the_last_writer() {
    for bed in beds() {
        let store = Store::open(&bed.url).unwrap();
        let (a, b) = stale_story(&store, "report:7");
        let ev = store.events(Some("report:7"), 10).unwrap();
        assert_eq!(ev.rejections.len(), 1, "{}: {ev:?}", bed.url);
        let r = &ev.rejections[0];
        assert_eq!(r.code, ErrorCode::StaleToken);
        assert_eq!(r.scope, "report:7");
        assert_eq!(r.key.as_deref(), Some("report"));
        assert_eq!(r.presented, a);
        assert_eq!(r.current, b.get());
        assert_eq!(r.holder.as_deref(), Some("worker-a"));
        assert_eq!((r.seq, r.suppressed), (None, 0));
        assert_eq!(ev.last_writes.len(), 1);
        let w = &ev.last_writes[0];
        assert_eq!(
            (w.scope.as_str(), w.holder.as_deref(), w.token),
            ("report:7", Some("worker-b"), b)
        );
        // A checked read and a claim with the stale token are recorded too
        // (after the interval), without a key for the claim.
        store.advance_clock(RECORD_INTERVAL).unwrap();
        store.claim("report:7", &Fence::new(a)).unwrap_err();
        let ev = store.events(None, 10).unwrap();
        assert_eq!(ev.rejections.len(), 2, "{}", bed.url);
        assert_eq!(ev.rejections[0].key, None);
        assert!(ev.rejections[0].id > ev.rejections[1].id);
        // Another scope's record is not this scope's.
        assert!(store
            .events(Some("other"), 10)
            .unwrap()
            .rejections
            .is_empty());
        store.close();
    }
}

#[test]
fn a_flood_of_stale_writes_adds_one_row_per_interval_with_a_count() {
    for bed in beds() {
        let store = Store::open(&bed.url).unwrap();
        let (a, _) = stale_story(&store, "flood");
        let fence_a = Fence::new(a);
        for _ in 1..bed.flood {
            store.put("flood", "report", b"x", &fence_a).unwrap_err();
        }
        let ev = store.events(Some("flood"), 10).unwrap();
        assert_eq!(ev.rejections.len(), 1, "{}", bed.url);
        assert_eq!(ev.rejections[0].suppressed, 0);
        // The next interval's first rejection carries the flood's others.
        store.advance_clock(RECORD_INTERVAL).unwrap();
        store.put("flood", "report", b"x", &fence_a).unwrap_err();
        let ev = store.events(Some("flood"), 10).unwrap();
        assert_eq!(ev.rejections.len(), 2, "{}", bed.url);
        assert_eq!(ev.rejections[0].suppressed, bed.flood - 1);
        // Every handle's metrics still count every rejection.
        assert_eq!(store.metrics().stale_rejections, bed.flood + 1);

        // Across many scopes at once: at most RECORD_BURST rows per interval.
        store.advance_clock(RECORD_INTERVAL).unwrap();
        let before = store.events(None, REJECTION_LOG).unwrap().rejections.len();
        for i in 0..100 {
            let scope = format!("wide:{i}");
            let t = store.next_token(&scope).unwrap();
            let newer = store.next_token(&scope).unwrap();
            store.claim(&scope, &Fence::new(newer)).unwrap();
            store.claim(&scope, &Fence::new(t)).unwrap_err();
        }
        let after = store.events(None, REJECTION_LOG).unwrap().rejections.len();
        assert_eq!(after - before, RECORD_BURST as usize, "{}", bed.url);
        store.close();
    }
}

#[test]
fn the_record_keeps_the_newest_rows_only() {
    // Not behind the pooler: its path is the plain server's, and slow there.
    for bed in beds().into_iter().take(3) {
        let store = Store::open(&bed.url).unwrap();
        let n = REJECTION_LOG + 44;
        for i in 0..n {
            if i % RECORD_BURST as usize == 0 {
                store.advance_clock(RECORD_INTERVAL).unwrap();
            }
            let scope = format!("ring:{i}");
            let t = store.next_token(&scope).unwrap();
            store
                .claim(&scope, &Fence::new(store.next_token(&scope).unwrap()))
                .unwrap();
            store.claim(&scope, &Fence::new(t)).unwrap_err();
        }
        let ev = store.events(None, REJECTION_LOG).unwrap();
        assert_eq!(ev.rejections.len(), REJECTION_LOG, "{}", bed.url);
        assert_eq!(ev.rejections[0].scope, format!("ring:{}", n - 1));
        assert_eq!(ev.rejections[REJECTION_LOG - 1].scope, "ring:44");
        store.close();
    }
}

#[test]
fn several_handles_on_one_scope_share_one_row_per_interval() {
    for bed in beds().into_iter().skip(1) {
        let one = Store::open(&bed.url).unwrap();
        let two = Store::open(&bed.url).unwrap();
        let (a, _) = stale_story(&one, "shared");
        two.put("shared", "k", b"x", &Fence::new(a)).unwrap_err();
        two.put("shared", "k", b"x", &Fence::new(a)).unwrap_err();
        let ev = one.events(Some("shared"), 10).unwrap();
        assert_eq!(ev.rejections.len(), 1, "{}", bed.url);
        // Handle two's first rejection merged into the row; its second is
        // held back by its own rate limit.
        assert_eq!(ev.rejections[0].suppressed, 1, "{}", bed.url);
    }
}

#[test]
fn the_record_survives_reopening_and_holds_no_values() {
    for bed in beds().into_iter().skip(1) {
        let store = Store::open(&bed.url).unwrap();
        stale_story(&store, "kept");
        let before = store.events(Some("kept"), 10).unwrap();
        store.close();
        let store = Store::open(&bed.url).unwrap();
        assert_eq!(store.events(Some("kept"), 10).unwrap(), before);
        let secret = String::from_utf8_lossy(SECRET).into_owned();
        let dump = raw_record(&bed.url);
        assert!(dump.contains("worker-a"), "{}", bed.url);
        assert!(!dump.contains(&secret), "{}", bed.url);
    }
}

/// Every row of the rejection ring and the last writes, as text.
fn raw_record(url: &str) -> String {
    if let Some(path) = url.strip_prefix("sqlite:") {
        let path = path.split('?').next().unwrap();
        return file_text(Path::new(path));
    }
    let (base, query) = url.split_once('?').unwrap();
    let schema = query
        .split('&')
        .find_map(|p| p.strip_prefix("schema="))
        .unwrap();
    // A simple query: it also goes through a transaction pooler.
    let mut c = pg(base);
    let messages = c
        .simple_query(&format!(
            "SELECT r::text FROM \"{schema}\".rejections r UNION ALL \
             SELECT concat_ws(',', scope, last_holder, last_token, last_write_ms) \
             FROM \"{schema}\".scopes"
        ))
        .unwrap();
    messages
        .iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn file_text(path: &Path) -> String {
    // The sqlite3 shell is not assumed: read the file's bytes, where every
    // stored text is in the clear.
    let mut bytes = std::fs::read(path).unwrap();
    if let Ok(wal) = std::fs::read(format!("{}-wal", path.display())) {
        bytes.extend(wal);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn pg(base: &str) -> postgres::Client {
    base.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

#[test]
fn events_refuses_bad_arguments() {
    let store = Store::open("memory:").unwrap();
    for limit in [0, REJECTION_LOG + 1] {
        let err = store.events(None, limit).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{limit}");
        assert!(err.to_string().contains("1..=256"), "{err}");
    }
    let err = store.events(Some(""), 10).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    let empty = store.events(Some("never"), 10).unwrap();
    assert!(empty.rejections.is_empty() && empty.last_writes.is_empty());
    store.close();
    assert_eq!(
        store.events(None, 10).unwrap_err().code(),
        ErrorCode::Closed
    );
}

/// Checks in the caller's own transaction are not recorded: the rejection
/// rolls the transaction back, and a record with it (docs/operations.md).
#[test]
fn sqlite_fencing_check_rejections_are_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let store = Store::open(&sqlite_url(&path)).unwrap();
    let t = store.next_token("own").unwrap();
    store.claim("own", &Fence::new(tok(t.get() + 5))).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let stale = conn.execute(
        "INSERT INTO fencing_check (scope, token) VALUES ('own', ?1)",
        [t.get() as i64],
    );
    assert!(stale.is_err());
    assert!(store.events(None, 10).unwrap().rejections.is_empty());
}

#[test]
fn postgres_record_is_checked_in_the_database_and_needs_only_execute() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let s = fresh_schema("evgrant");
    let role = format!("{s}_app");
    let owner = Store::open(&format!("{base}?schema={s}")).unwrap();
    let mut admin = pg(&base);
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN;
             GRANT USAGE ON SCHEMA {s} TO {role};
             GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {s} TO {role};"
        ))
        .unwrap();
    let as_role = base.replacen("postgres@", &format!("{role}@"), 1);
    let store = Store::open(&format!("{as_role}?schema={s}")).unwrap();
    let old = store.next_token("g").unwrap();
    let new = store.next_token("g").unwrap();
    store
        .put("g", "k", b"v", &Fence::new(new).with_holder("app"))
        .unwrap();
    store.put("g", "k", b"v", &Fence::new(old)).unwrap_err();
    let ev = store.events(Some("g"), 5).unwrap();
    assert_eq!(ev.rejections.len(), 1);
    assert_eq!(ev.last_writes[0].holder.as_deref(), Some("app"));

    let mut app = pg(&as_role);
    // No plain SQL on the record: only through the functions.
    let direct = app.batch_execute(&format!("DELETE FROM {s}.rejections"));
    assert!(direct.is_err());
    // The function refuses a token the fence would accept, and bad input.
    for (scope, token) in [("g", new.get() + 1), ("", 1), ("fresh", 1)] {
        let added: bool = app
            .query_one(
                &format!("SELECT {s}.record_rejection($1, NULL, 'STALE_TOKEN', $2, NULL, NULL, 0)"),
                &[&scope, &(token as i64)],
            )
            .unwrap()
            .get(0);
        assert!(!added, "{scope} {token}");
    }
    // fencing.check in the caller's transaction: rolled back, not recorded.
    let mut tx = app.transaction().unwrap();
    let stale = tx.execute(
        &format!("SELECT {s}.check('g', $1::bigint)"),
        &[&(old.get() as i64)],
    );
    assert!(stale.is_err());
    drop(tx);
    assert_eq!(store.events(None, 10).unwrap().rejections.len(), 1);
    store.close();
    owner.close();
}

#[test]
fn a_watch_yields_each_rejection_recorded_after_it_began_oldest_first() {
    for bed in beds() {
        let store = Store::open(&bed.url).unwrap();
        stale_story(&store, "before"); // recorded before the watch: not yielded
        let mut all = store.watch_rejections(None).unwrap();
        let mut only_b = store.watch_rejections(Some("b")).unwrap();
        assert_eq!(
            all.next_within(Duration::ZERO).unwrap(),
            None,
            "{}",
            bed.url
        );
        let (a_token, _) = stale_story(&store, "a");
        stale_story(&store, "b");
        let first = all.next().unwrap().unwrap();
        let second = all.next().unwrap().unwrap();
        assert_eq!(
            (first.scope.as_str(), second.scope.as_str()),
            ("a", "b"),
            "{}",
            bed.url
        );
        assert!(first.id < second.id);
        assert_eq!(
            (first.presented, first.code),
            (a_token, ErrorCode::StaleToken)
        );
        assert_eq!(only_b.next().unwrap().unwrap().scope, "b");
        // Nothing more was recorded: a bounded wait ends empty.
        assert_eq!(all.next_within(Duration::from_millis(50)).unwrap(), None);
        assert_eq!(only_b.next_within(Duration::ZERO).unwrap(), None);
        // A closed store ends the watch with CLOSED, once.
        store.close();
        assert_eq!(all.next().unwrap().unwrap_err().code(), ErrorCode::Closed);
        assert!(all.next().is_none());
        let bad = store.watch_rejections(Some("")).err().map(|e| e.code());
        assert_eq!(bad, Some(ErrorCode::InvalidArgument));
    }
}

#[test]
fn an_async_watch_is_a_stream_and_outlives_a_given_up_wait() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = fencing::aio::Store::open("memory:?clock=manual")
            .await
            .unwrap();
        let mut watch = store.watch_rejections(None).await.unwrap();
        // Given up while nothing is recorded: the wait stops, takes nothing.
        let gave_up = tokio::time::timeout(Duration::from_millis(50), watch.next()).await;
        assert!(gave_up.is_err());
        stale_story(store.blocking(), "a");
        stale_story(store.blocking(), "b");
        assert_eq!(watch.next().await.unwrap().scope, "a");
        let mut stream = std::pin::pin!(watch);
        let next = std::future::poll_fn(|cx| futures_core::Stream::poll_next(stream.as_mut(), cx));
        assert_eq!(next.await.unwrap().unwrap().scope, "b");
        store.close().await;
        let end = std::future::poll_fn(|cx| futures_core::Stream::poll_next(stream.as_mut(), cx));
        assert_eq!(end.await.unwrap().unwrap_err().code(), ErrorCode::Closed);
        let after = std::future::poll_fn(|cx| futures_core::Stream::poll_next(stream.as_mut(), cx));
        assert!(after.await.is_none());
    });
}
