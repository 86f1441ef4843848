//! The library behind PgBouncer in `pool_mode = transaction` with fewer
//! server connections (3) than clients (`scripts/pgbouncer`), opened with
//! `pooler=transaction` (docs/postgres.md, "Poolers"): a race of separate
//! store handles with a checker, `fencing.check` in a client's own
//! transaction, and no session setting left behind on a server connection.
//! The shared scenarios through it run in tests/runner/tests/postgres.rs.
//! Needs `FENCING_TEST_PGBOUNCER_URL`.

use std::collections::HashSet;
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use fencing::{Error, ErrorCode, Fence, Store};

mod support;
use support::{fresh_schema, pgbouncer_test_url};

const HANDLES: usize = 8;
const ROUNDS: usize = 12;

fn store_url(base: &str, schema: &str) -> String {
    format!("{base}?schema={schema}&pooler=transaction&pool_size=2")
}

/// A plain client through the pooler. The `postgres` crate's `query` and
/// `execute` prepare named statements, which PgBouncer 1.18 does not carry
/// across server connections: only simple queries and `query_typed` here.
fn client(base: &str) -> postgres::Client {
    base.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

/// The first column of the first row of a simple query.
fn scalar(c: &mut postgres::Client, sql: &str) -> String {
    c.simple_query(sql)
        .unwrap()
        .into_iter()
        .find_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap().to_owned()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no row from {sql}"))
}

#[derive(Default)]
struct Seen {
    /// Every token handed out on the scope (acquire and next_token).
    tokens: Vec<u64>,
    /// Accepted writes: (receipt version, token).
    accepted: Vec<(u64, u64)>,
    stale: usize,
}

#[test]
fn separate_handles_race_through_the_pooler_and_the_fence_holds() {
    let Some(base) = pgbouncer_test_url() else {
        return;
    };
    let schema = fresh_schema("bouncer_race");
    let start = Arc::new(Barrier::new(HANDLES));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let workers: Vec<_> = (0..HANDLES)
        .map(|w| {
            let (url, start, seen) = (store_url(&base, &schema), start.clone(), seen.clone());
            std::thread::spawn(move || {
                start.wait();
                // Eight first opens of a fresh schema at once: the migration
                // lock is per transaction, so it holds behind the pooler.
                let store = Store::open(&url).unwrap_or_else(|e| panic!("open: {e}"));
                for round in 0..ROUNDS {
                    let holder = format!("w{w}");
                    let lease = store
                        .acquire_wait(
                            "race",
                            &holder,
                            Duration::from_secs(30),
                            Duration::from_secs(60),
                        )
                        .unwrap_or_else(|e| panic!("acquire: {e}"));
                    let extra = store.next_token("race").unwrap();
                    seen.lock()
                        .unwrap()
                        .tokens
                        .extend([lease.token.get(), extra.get()]);
                    let fence = Fence::new(lease.token);
                    let value = format!("{w}:{round}");
                    let receipt = store.put("race", "k", value.as_bytes(), &fence).unwrap();
                    seen.lock()
                        .unwrap()
                        .accepted
                        .push((receipt.version, lease.token.get()));
                    store.release("race", lease.token).unwrap();
                    // Write again with the released token: stale once another
                    // holder acquired, accepted only while none has.
                    match store.put("race", "k", b"late", &fence) {
                        Ok(r) => seen
                            .lock()
                            .unwrap()
                            .accepted
                            .push((r.version, lease.token.get())),
                        Err(Error::StaleToken { .. }) => seen.lock().unwrap().stale += 1,
                        Err(e) => panic!("late put: {e}"),
                    }
                }
                store.close();
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let seen = seen.lock().unwrap();
    let unique: HashSet<u64> = seen.tokens.iter().copied().collect();
    assert_eq!(
        unique.len(),
        seen.tokens.len(),
        "a token was handed out twice"
    );
    // In the order the store accepted them, tokens never go down: no write
    // was accepted below the fence.
    let mut accepted = seen.accepted.clone();
    accepted.sort();
    let versions: HashSet<u64> = accepted.iter().map(|(v, _)| *v).collect();
    assert_eq!(versions.len(), accepted.len(), "two writes got one version");
    for pair in accepted.windows(2) {
        assert!(pair[0].1 <= pair[1].1, "accepted below the fence: {pair:?}");
    }
    assert!(accepted.len() >= HANDLES * ROUNDS);
    eprintln!(
        "{} tokens, {} accepted writes, {} stale late writes",
        seen.tokens.len(),
        accepted.len(),
        seen.stale
    );
    let store = Store::open(&store_url(&base, &schema)).unwrap();
    let status = store.status("race").unwrap();
    assert_eq!(status.fence, accepted.last().unwrap().1);
    assert_eq!(status.counter, *unique.iter().max().unwrap());
    store.close();
}

#[test]
fn check_fences_a_client_transaction_through_the_pooler() {
    let Some(base) = pgbouncer_test_url() else {
        return;
    };
    let schema = fresh_schema("bouncer_check");
    let store = Store::open(&store_url(&base, &schema)).unwrap();
    let a = store
        .acquire("report", "worker-a", Duration::from_secs(30))
        .unwrap()
        .token;
    store.release("report", a).unwrap();
    let b = store
        .acquire("report", "worker-b", Duration::from_secs(30))
        .unwrap()
        .token;
    let mut c = client(&base);
    c.batch_execute(&format!(
        "CREATE TABLE {schema}.report (id int PRIMARY KEY, body text NOT NULL);
         INSERT INTO {schema}.report VALUES (1, 'original');"
    ))
    .unwrap();
    // BEGIN ... COMMIT keeps one server connection for the transaction.
    let update = |c: &mut postgres::Client, token: u64, body: &str| {
        let mut tx = c.transaction()?;
        tx.query_typed(
            &format!("UPDATE {schema}.report SET body = $1 WHERE id = 1"),
            &[(&body, postgres::types::Type::TEXT)],
        )?;
        tx.query_typed(
            &format!("SELECT {schema}.check($1, $2)"),
            &[
                (&"report", postgres::types::Type::TEXT),
                (&(token as i64), postgres::types::Type::INT8),
            ],
        )?;
        tx.commit()
    };
    let body = |c: &mut postgres::Client| scalar(c, &format!("SELECT body FROM {schema}.report"));

    let err = update(&mut c, a.get(), "A's report").unwrap_err();
    let db = err.as_db_error().expect("a server error");
    assert_eq!(db.code().code(), "FN001");
    assert_eq!(
        Error::from_sqlstate(db.code().code(), db.detail())
            .unwrap()
            .code(),
        ErrorCode::StaleToken
    );
    assert_eq!(body(&mut c), "original");

    update(&mut c, b.get(), "B's report").unwrap();
    assert_eq!(body(&mut c), "B's report");
    // The library, through the same pooler, sees the fence B's check set.
    assert_eq!(store.fence_of("report").unwrap(), b.get());
    let stale = store.put("report", "k", b"A", &Fence::new(a));
    assert_eq!(stale.unwrap_err().code(), ErrorCode::StaleToken);
    store.close();
}

#[test]
fn no_session_setting_is_left_on_the_pools_server_connections() {
    let Some(base) = pgbouncer_test_url() else {
        return;
    };
    let schema = fresh_schema("bouncer_session");
    let store = Store::open(&format!(
        "{}&call_timeout_ms=1234",
        store_url(&base, &schema)
    ))
    .unwrap();
    for _ in 0..20 {
        store.next_token("s").unwrap();
    }
    store.close();
    // Three transactions open at once hold all three server connections
    // (default_pool_size = 3); none carries the pins of session.rs.
    let mut clients: Vec<_> = (0..3).map(|_| client(&base)).collect();
    for c in &mut clients {
        c.batch_execute("BEGIN").unwrap();
    }
    for c in &mut clients {
        assert_eq!(
            scalar(c, "SHOW statement_timeout"),
            "0",
            "a session pin leaked through the pooler"
        );
    }
    for c in &mut clients {
        c.batch_execute("COMMIT").unwrap();
    }
}
