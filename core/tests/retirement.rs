//! Retiring scopes (docs/semantics.md, "Retiring scopes") on every backend:
//! a retirement racing the re-creation of the same scope never reissues a
//! token, and one retired scope with an outside token does not exhaust the
//! store for every other new scope.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fencing::{Error, Fence, Store, Token};

mod support;
use support::{fresh_schema, postgres_test_url, sqlite_url};

/// The stores to run on: memory:, a fresh sqlite file, and a fresh
/// PostgreSQL schema when a server is there. `query` is appended to each URL.
fn backends(dir: &tempfile::TempDir, query: &str) -> Vec<(String, String)> {
    let mut urls = vec![
        ("memory".to_owned(), format!("memory:?{query}")),
        (
            "sqlite".to_owned(),
            format!("{}?{query}", sqlite_url(&dir.path().join("retire.db"))),
        ),
    ];
    if let Some(base) = postgres_test_url() {
        let schema = fresh_schema("retire");
        urls.push((
            "postgres".to_owned(),
            format!("{base}?schema={schema}&{query}"),
        ));
    }
    urls
}

/// The reproduction: one thread loops `next_token` + `retire`, three
/// loop `next_token`, each on a store of its own (one connection each on
/// PostgreSQL). Every token handed out for the name, across all of its
/// lives, must be distinct. Bounded in count and time.
fn retire_race(url: &str) -> (usize, usize, Vec<u64>) {
    const LIMIT: Duration = Duration::from_secs(4);
    const MAX_CALLS: usize = 20_000;
    let issued = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let retired = Arc::new(Mutex::new(0usize));
    let start = Instant::now();
    // memory: lives in one handle; the others get a handle (a connection) each.
    let shared = Store::open(url).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let store = if url.starts_with("memory:") {
                shared.clone()
            } else {
                Store::open(url).unwrap()
            };
            let (issued, stop, retired) = (issued.clone(), stop.clone(), retired.clone());
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) && start.elapsed() < LIMIT && n < MAX_CALLS {
                    n += 1;
                    match store.next_token("x") {
                        Ok(t) => mine.push(t.get()),
                        Err(e) => panic!("next_token: {e}"),
                    }
                    if i == 0 {
                        match store.retire("x") {
                            Ok(true) => *retired.lock().unwrap() += 1,
                            Ok(false) => {}
                            Err(e) => panic!("retire: {e}"),
                        }
                    }
                }
                issued.lock().unwrap().extend(mine);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let issued = std::mem::take(&mut *issued.lock().unwrap());
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for t in &issued {
        *seen.entry(*t).or_default() += 1;
    }
    let mut twice: Vec<u64> = seen
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(t, _)| t)
        .collect();
    twice.sort_unstable();
    let retired = *retired.lock().unwrap();
    (issued.len(), retired, twice)
}

#[test]
fn retire_racing_a_re_creation_never_reissues_a_token() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in backends(&dir, "pool_size=1") {
        let url = if name == "postgres" {
            url
        } else {
            url.replace("?pool_size=1", "?")
        };
        let (issued, retired, twice) = retire_race(&url);
        eprintln!(
            "{name}: {issued} tokens, {retired} retirements, {} issued twice",
            twice.len()
        );
        assert!(retired > 0, "{name}: the race needs retirements");
        assert!(
            twice.is_empty(),
            "{name}: {} of {issued} tokens issued twice, e.g. {:?}",
            twice.len(),
            &twice[..twice.len().min(10)]
        );
    }
}

/// The sequence: an outside token at the maximum, then retire. From
/// then on, new scopes elsewhere in the store must still get small tokens;
/// the retired name itself must never accept that token again.
#[test]
fn one_retired_scope_does_not_exhaust_the_store() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in backends(&dir, "") {
        let store = Store::open(url.trim_end_matches(['?', '&'])).unwrap();
        // The highest token from outside a fresh store accepts: its jump
        // limit (docs/semantics.md, "Failover").
        let high = Token::new(1 << 48).unwrap();
        store.put("typo", "k", b"v", &Fence::new(high)).unwrap();
        store.delete("typo", "k", &Fence::new(high)).unwrap();
        assert!(store.retire("typo").unwrap());

        // The promise still holds for the retired name.
        assert!(store.next_token("typo").unwrap() > high, "{name}");
        let err = store.put("typo", "k", b"v", &Fence::new(high)).unwrap_err();
        assert!(matches!(err, Error::StaleToken { .. }), "{name}: {err:?}");

        let mut small = 0;
        for i in 0..1000 {
            let scope = format!("fresh-{i}");
            match store.next_token(&scope) {
                Ok(t) if t.get() < 1_000 => small += 1,
                Ok(_) | Err(Error::TokenExhausted) => {}
                Err(e) => panic!("{name}: next_token({scope}): {e}"),
            }
        }
        eprintln!("{name}: {small} of 1000 new scopes got small tokens");
        assert!(
            small >= 990,
            "{name}: only {small} of 1000 new scopes got small tokens"
        );
    }
}

/// Every backend puts a name in the same floor bucket (PostgreSQL computes
/// it in SQL, the others in Rust): after the same retirement, the same
/// names report the raised floors, including names that are not ASCII.
#[test]
fn floor_buckets_agree_across_backends() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..3000)
        .map(|i| match i % 3 {
            0 => format!("scope-{i}"),
            1 => format!("résumé/{i}/日本"),
            _ => format!("{i}\t🦀"),
        })
        .collect();
    let mut raised: Vec<(String, Vec<usize>)> = Vec::new();
    for (name, url) in backends(&dir, "") {
        let store = Store::open(url.trim_end_matches(['?', '&'])).unwrap();
        for i in 0..64 {
            let old = format!("old-{i}");
            store
                .advance_counter(&old, Token::new(1_000).unwrap())
                .unwrap();
            assert!(store.retire(&old).unwrap());
        }
        let hits: Vec<usize> = names
            .iter()
            .enumerate()
            .filter(|(_, n)| store.fence_of(n).unwrap() == 1_000)
            .map(|(i, _)| i)
            .collect();
        // 64 of 4096 buckets raised: about 47 of the 3000 names.
        assert_eq!(store.fence_of("old-7").unwrap(), 1_000);
        assert!(
            (10..150).contains(&hits.len()),
            "{name}: {} names share the floor",
            hits.len()
        );
        raised.push((name, hits));
    }
    for (name, hits) in &raised[1..] {
        assert_eq!(
            hits, &raised[0].1,
            "{name} and {} put names in other buckets",
            raised[0].0
        );
    }
}

/// `fencing.check` inside a caller's REPEATABLE READ transaction whose
/// snapshot predates a whole life of the scope (created, fenced at 100,
/// retired): the snapshot knows neither, but the check must not accept a
/// token of that life. It fails (a serialization failure the caller
/// retries, or STALE_TOKEN); it never commits.
#[test]
fn check_in_an_old_snapshot_never_accepts_a_retired_life_token() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("rrcheck");
    let store = Store::open(&format!("{base}?schema={schema}")).unwrap();
    let connect = || {
        base.parse::<postgres::Config>()
            .unwrap()
            .connect(postgres::NoTls)
            .unwrap()
    };
    let mut caller = connect();
    let mut tx = caller
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .start()
        .unwrap();
    tx.query_one(&format!("SELECT count(*) FROM {schema}.scopes"), &[])
        .unwrap(); // the snapshot is taken here

    let hundred = Token::new(100).unwrap();
    store.put("x", "k", b"v", &Fence::new(hundred)).unwrap();
    store.delete("x", "k", &Fence::new(hundred)).unwrap();
    assert!(store.retire("x").unwrap());

    let outcome = tx.execute(&format!("SELECT {schema}.check('x', 50)"), &[]);
    let err = outcome.expect_err("a token of a retired life passed check");
    let code = err.code().map(|c| c.code().to_owned());
    assert!(
        matches!(code.as_deref(), Some("40001" | "FN001")),
        "expected a serialization failure or STALE_TOKEN, got {err:?}"
    );
    drop(tx);
    // And in a fresh transaction the floor holds.
    let err = connect()
        .execute(&format!("SELECT {schema}.check('x', 100)"), &[])
        .unwrap_err();
    assert_eq!(err.code().map(|c| c.code()), Some("FN001"));
}
