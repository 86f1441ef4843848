//! The PostgreSQL backend beyond the shared scenarios: `fencing.check` in
//! the caller's own transaction (Rust driver and psql), the grants a worker
//! role needs, hostile names, concurrent first opens, refusals, and a server
//! crash in the middle of a run. Needs `FENCING_TEST_PG_URL` (see
//! `scripts/pg-cluster`); the crash test starts a server of its own.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use fencing::{Error, ErrorCode, Fence, Op, Store, Token};

mod support;
use support::{fresh_schema, postgres_test_url, OwnCluster};

fn client(url: &str) -> postgres::Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

/// The typed error behind a driver error, as a caller would map it.
fn fencing_error(e: &postgres::Error) -> Error {
    let db = e.as_db_error().expect("a server error");
    Error::from_sqlstate(db.code().code(), db.detail())
        .unwrap_or_else(|| panic!("not a fencing SQLSTATE: {db:?}"))
}

/// A fresh schema with a stale holder A and a current holder B on `report`.
struct Story {
    base: String,
    schema: String,
    store: Store,
    a: Token,
    b: Token,
}

fn story(base: &str) -> Story {
    let schema = fresh_schema("check");
    let store = Store::open(&format!("{base}?schema={schema}&clock=manual")).unwrap();
    let a = store
        .acquire("report", "worker-a", Duration::from_secs(10))
        .unwrap()
        .token;
    store.advance_clock(Duration::from_secs(11)).unwrap(); // A pauses past its expiry
    let b = store
        .acquire("report", "worker-b", Duration::from_secs(10))
        .unwrap()
        .token;
    let mut c = client(base);
    c.batch_execute(&format!(
        "CREATE TABLE {schema}.report (id int PRIMARY KEY, body text NOT NULL);
         INSERT INTO {schema}.report VALUES (1, 'original');"
    ))
    .unwrap();
    Story {
        base: base.to_owned(),
        schema,
        store,
        a,
        b,
    }
}

impl Story {
    fn body(&self) -> String {
        client(&self.base)
            .query_one(&format!("SELECT body FROM {}.report", self.schema), &[])
            .unwrap()
            .get(0)
    }

    /// UPDATE, then fence: the order a careless caller would use.
    fn fenced_update(
        &self,
        c: &mut postgres::Client,
        token: Token,
        seq: Option<i64>,
        body: &str,
    ) -> Result<(), postgres::Error> {
        let s = &self.schema;
        let mut tx = c.transaction()?;
        tx.execute(
            &format!("UPDATE {s}.report SET body = $1 WHERE id = 1"),
            &[&body],
        )?;
        let t = token.get() as i64;
        match seq {
            None => tx.execute(&format!("SELECT {s}.check($1, $2)"), &[&"report", &t])?,
            Some(q) => tx.execute(
                &format!("SELECT {s}.check($1, $2, $3)"),
                &[&"report", &t, &q],
            )?,
        };
        tx.commit()
    }
}

#[test]
fn check_fences_the_callers_own_transaction() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let st = story(&base);
    let mut c = client(&base);

    // A's token is older than the fence B's acquire raised: the whole
    // transaction, A's UPDATE included, rolls back.
    let err = st
        .fenced_update(&mut c, st.a, None, "A's report")
        .unwrap_err();
    assert_eq!(err.as_db_error().unwrap().code().code(), "FN001");
    assert_eq!(
        fencing_error(&err),
        Error::StaleToken {
            scope: "report".into(),
            presented: st.a,
            current: st.b.get()
        }
    );
    assert_eq!(st.body(), "original");

    // B's token is current: the transaction commits, and the fence moved.
    st.fenced_update(&mut c, st.b, Some(1), "B's report")
        .unwrap();
    assert_eq!(st.body(), "B's report");
    assert_eq!(st.store.fence_of("report").unwrap(), st.b.get());

    // seq: the same token may write again only with a later seq.
    let err = st
        .fenced_update(&mut c, st.b, Some(1), "replayed")
        .unwrap_err();
    assert_eq!(
        fencing_error(&err),
        Error::SequenceOutOfOrder {
            presented: 1,
            last: 1
        }
    );
    st.fenced_update(&mut c, st.b, Some(2), "B again").unwrap();
    assert_eq!(st.body(), "B again");

    // The library sees what the caller's transactions did: A stays stale.
    let stale = st.store.put("report", "k", b"A", &Fence::new(st.a));
    assert_eq!(stale.unwrap_err().code(), ErrorCode::StaleToken);

    // Bad arguments are INVALID_ARGUMENT (FN008) and change nothing.
    for (scope, token) in [("", 5i64), ("report", 0), ("report", -1)] {
        let err = c
            .execute(
                &format!("SELECT {}.check($1, $2)", st.schema),
                &[&scope, &token],
            )
            .unwrap_err();
        assert_eq!(fencing_error(&err).code(), ErrorCode::InvalidArgument);
    }
    let err = c
        .execute(&format!("SELECT {}.check(NULL, 5)", st.schema), &[])
        .unwrap_err();
    assert_eq!(fencing_error(&err).code(), ErrorCode::InvalidArgument);
    assert_eq!(st.store.fence_of("report").unwrap(), st.b.get());
    st.store.close();
}

#[test]
fn check_holds_the_scope_until_commit() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let st = story(&base);
    let s = &st.schema;
    let mut first = client(&base);
    let mut second = client(&base);
    let mut tx = first.transaction().unwrap();
    tx.execute(
        &format!("SELECT {s}.check('report', $1)"),
        &[&(st.b.get() as i64)],
    )
    .unwrap();
    // While the first transaction is open, another check of the scope waits
    // for it: with a lock timeout it gives up instead.
    second.batch_execute("SET lock_timeout = '200ms'").unwrap();
    let err = second
        .execute(
            &format!("SELECT {s}.check('report', $1)"),
            &[&(st.b.get() as i64)],
        )
        .unwrap_err();
    assert_eq!(err.as_db_error().unwrap().code().code(), "55P03", "{err:?}");
    tx.commit().unwrap();
    second
        .execute(
            &format!("SELECT {s}.check('report', $1)"),
            &[&(st.b.get() as i64)],
        )
        .unwrap();
    st.store.close();
}

#[test]
fn a_worker_role_needs_only_usage_and_execute() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let st = story(&base);
    let s = &st.schema;
    let role = format!("{s}_worker");
    let mut admin = client(&base);
    // The grants docs/postgres.md gives a worker that fences its own table.
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} NOLOGIN;
             GRANT USAGE ON SCHEMA {s} TO {role};
             GRANT EXECUTE ON FUNCTION {s}.check(text, bigint), {s}.check(text, bigint, bigint) TO {role};
             GRANT SELECT, UPDATE ON {s}.report TO {role};"
        ))
        .unwrap();
    let mut worker = client(&base);
    worker.batch_execute(&format!("SET ROLE {role}")).unwrap();
    st.fenced_update(&mut worker, st.b, None, "by the worker")
        .unwrap();
    assert_eq!(st.body(), "by the worker");
    let err = st
        .fenced_update(&mut worker, st.a, None, "stale worker")
        .unwrap_err();
    assert_eq!(fencing_error(&err).code(), ErrorCode::StaleToken);
    // Nothing else: not the tables, not the library's functions.
    for sql in [
        format!("UPDATE {s}.scopes SET fence = 0"),
        format!("SELECT {s}.next_token('report')"),
        format!("SELECT * FROM {s}.entries"),
    ] {
        let err = worker.batch_execute(&sql).unwrap_err();
        assert_eq!(
            err.as_db_error().unwrap().code().code(),
            "42501",
            "{sql}: {err:?}"
        );
    }
    assert_eq!(st.store.fence_of("report").unwrap(), st.b.get());
    drop(worker);
    admin
        .batch_execute(&format!(
            "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA {s} FROM {role};
             REVOKE ALL ON SCHEMA {s} FROM {role}; REVOKE ALL ON {s}.report FROM {role};
             DROP ROLE {role};"
        ))
        .unwrap();
    st.store.close();
}

/// docs/postgres.md, "Grants": a role that runs the library needs only
/// USAGE on the schema and EXECUTE on its functions. It can run every
/// operation, and cannot change fencing's tables with plain SQL.
#[test]
fn a_library_role_needs_only_usage_and_execute() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let s = fresh_schema("least");
    let role = format!("{s}_app");
    let owner = Store::open(&format!("{base}?schema={s}")).unwrap();
    let mut admin = client(&base);
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN;
             GRANT USAGE ON SCHEMA {s} TO {role};
             GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {s} TO {role};"
        ))
        .unwrap();
    let as_role = base.replacen("postgres@", &format!("{role}@"), 1);
    assert_ne!(as_role, base, "the test URL names its user");
    let store = Store::open(&format!("{as_role}?schema={s}")).unwrap();

    let ttl = Duration::from_secs(30);
    assert_eq!(store.next_token("job").unwrap().get(), 1);
    assert_eq!(
        store
            .advance_counter("job", Token::new(5).unwrap())
            .unwrap(),
        5
    );
    let lease = store.acquire("job", "app", ttl).unwrap();
    assert_eq!(lease.token.get(), 6);
    store.renew("job", lease.token, ttl).unwrap();
    let fence = Fence::new(lease.token);
    store.put("job", "a", b"1", &fence).unwrap();
    store
        .apply(
            "job",
            &fence,
            vec![Op::put("b", b"2".to_vec()), Op::delete("a")],
        )
        .unwrap();
    store.claim("job", &fence).unwrap();
    assert_eq!(
        store.get("job", "b", Some(&fence)).unwrap().unwrap().value,
        b"2"
    );
    assert!(store.get("job", "a", None).unwrap().is_none());
    assert_eq!(
        store.list("job", None, 10).unwrap().keys,
        vec!["b".to_owned()]
    );
    assert_eq!(store.status("job").unwrap().entries, 1);
    store.delete("job", "b", &fence).unwrap();
    assert!(store.release("job", lease.token).unwrap());
    assert!(store.retire("job").unwrap());
    assert_eq!(store.fence_of("job").unwrap(), 6);
    let err = store.advance_clock(Duration::from_secs(1)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);

    let mut direct = client(&as_role);
    for sql in [
        format!("UPDATE {s}.scopes SET fence = 0"),
        format!("UPDATE {s}.floors SET floor = 0"),
        format!("INSERT INTO {s}.entries VALUES ('job', 'k', '', 1, 1)"),
        format!("DELETE FROM {s}.entries"),
        format!("UPDATE {s}.meta SET manual_now_ms = 0"),
        format!("SELECT {s}.stop_clock()"),
        format!("SELECT {s}.lock_scope('job', {s}.history_now())"),
        format!("UPDATE {s}.history SET ceiling = 9223372036854775807"),
        format!("SELECT {s}.failover()"),
    ] {
        let err = direct.batch_execute(&sql).unwrap_err();
        assert_eq!(
            err.as_db_error().map(|e| e.code().code()),
            Some("42501"),
            "{sql}: {err:?}"
        );
    }
    assert_eq!(owner.fence_of("job").unwrap(), 6);
    store.close();
    drop(direct);
    admin
        .batch_execute(&format!(
            "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA {s} FROM {role};
             REVOKE ALL ON SCHEMA {s} FROM {role};
             REVOKE ALL ON ALL TABLES IN SCHEMA {s} FROM {role};
             DROP ROLE {role};"
        ))
        .unwrap();
}

fn pg_binary(name: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs.into_iter()
        .rev()
        .map(|d| d.join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from(name))
}

#[test]
fn psql_sees_stale_token_and_rolls_back() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    if !support::pg_client_tools("psql") {
        return;
    }
    let st = story(&base);
    let s = &st.schema;
    let psql = |script: String| {
        let out = Command::new(pg_binary("psql"))
            .args([
                base.as_str(),
                "-X",
                "-q",
                "-v",
                "VERBOSITY=verbose",
                "-c",
                &script,
            ])
            .output()
            .expect("psql runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, stderr) = psql(format!(
        "BEGIN; UPDATE {s}.report SET body = 'A via psql' WHERE id = 1; \
         SELECT {s}.check('report', {}); COMMIT;",
        st.a
    ));
    assert!(!ok, "a stale token must fail the psql transaction");
    assert!(stderr.contains("FN001"), "{stderr}");
    assert!(stderr.contains("stale token"), "{stderr}");
    assert_eq!(st.body(), "original");
    let (ok, stderr) = psql(format!(
        "BEGIN; SELECT {s}.check('report', {}); \
         UPDATE {s}.report SET body = 'B via psql' WHERE id = 1; COMMIT;",
        st.b
    ));
    assert!(ok, "{stderr}");
    assert_eq!(st.body(), "B via psql");
    st.store.close();
}

#[test]
fn hostile_names_round_trip_and_harm_nothing() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("hostile");
    let store = Store::open(&format!("{base}?schema={schema}")).unwrap();
    let names = [
        "it's",
        "say \"hi\"",
        "back\\slash",
        "'; DROP TABLE entries; --",
        "\"; DROP SCHEMA public CASCADE; --",
        "$1 $$ %s %I",
        "Grüße, 世界 🦀",
        "tab\tnew\nline",
    ];
    for (i, scope) in names.iter().enumerate() {
        let lease = store
            .acquire(scope, scope, Duration::from_secs(30))
            .unwrap();
        assert_eq!(&lease.holder, scope);
        let fence = Fence::new(lease.token).with_holder(*scope);
        for key in names {
            let value = format!("{scope} => {key}");
            store.put(scope, key, value.as_bytes(), &fence).unwrap();
        }
        for key in names {
            let entry = store.get(scope, key, Some(&fence)).unwrap().unwrap();
            assert_eq!(entry.value, format!("{scope} => {key}").into_bytes());
            assert_eq!(entry.key, key);
        }
        let mut sorted: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        sorted.sort(); // byte order, as every backend lists
        assert_eq!(store.list(scope, None, 100).unwrap().keys, sorted);
        let status = store.status(scope).unwrap();
        assert_eq!(status.entries, names.len() as u64);
        assert_eq!(status.lease.unwrap().holder, *scope);
        assert_eq!(store.fence_of(scope).unwrap(), lease.token.get());
        assert!(i < names.len());
    }
    // Every table is still there and holds exactly what was written.
    let mut c = client(&base);
    let n: i64 = c
        .query_one(&format!("SELECT count(*) FROM {schema}.entries"), &[])
        .unwrap()
        .get(0);
    assert_eq!(n, (names.len() * names.len()) as i64);
    let public: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'public'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(public, 1);
    store.close();
}

#[test]
fn processes_opening_a_fresh_schema_at_once_all_succeed() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    // Each opener is its own session (its own connection), as separate
    // processes would be; the advisory lock serializes the migration.
    let url = format!("{base}?schema={}", fresh_schema("first_open"));
    let start = Arc::new(Barrier::new(8));
    let openers: Vec<_> = (0..8)
        .map(|_| {
            let (url, start) = (url.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let store = Store::open(&url)?;
                let t = store.next_token("shared")?;
                store.close();
                Ok::<Token, Error>(t)
            })
        })
        .collect();
    let mut tokens: Vec<u64> = openers
        .into_iter()
        .map(|h| h.join().unwrap().unwrap().get())
        .collect();
    tokens.sort();
    assert_eq!(
        tokens,
        (1..=8).collect::<Vec<_>>(),
        "one token each, none twice"
    );
}

#[test]
fn refuses_foreign_newer_and_manual_schemas_and_bad_urls() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let mut c = client(&base);

    // A schema someone else made is not ours: refused, and left as it was.
    let foreign = fresh_schema("foreign");
    c.batch_execute(&format!(
        "CREATE SCHEMA {foreign}; CREATE TABLE {foreign}.mine (x int); INSERT INTO {foreign}.mine VALUES (7);"
    ))
    .unwrap();
    let err = Store::open(&format!("{base}?schema={foreign}")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Backend, "{err}");
    assert!(err.to_string().contains("did not create"), "{err}");
    let objects: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1",
            &[&foreign],
        )
        .unwrap()
        .get(0);
    assert_eq!(objects, 1);

    // A schema from a newer fencing is refused, and not touched.
    let newer = fresh_schema("newer");
    let url = format!("{base}?schema={newer}");
    let store = Store::open(&url).unwrap();
    store.next_token("s").unwrap();
    store.close();
    c.batch_execute(&format!(
        "INSERT INTO {newer}.migrations (version) VALUES (99)"
    ))
    .unwrap();
    let err = Store::open(&url).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Backend, "{err}");
    assert!(err.to_string().contains("newer"), "{err}");
    let counter: i64 = c
        .query_one(&format!("SELECT counter FROM {newer}.scopes"), &[])
        .unwrap()
        .get(0);
    assert_eq!(counter, 1);

    // A test schema on a stopped clock is refused by a handle on the server's clock.
    let manual = fresh_schema("manual");
    Store::open(&format!("{base}?schema={manual}&clock=manual"))
        .unwrap()
        .close();
    let err = Store::open(&format!("{base}?schema={manual}")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    // ... and advance_clock needs a manual clock.
    let server = Store::open(&format!("{base}?schema={}", fresh_schema("server"))).unwrap();
    let err = server.advance_clock(Duration::from_secs(1)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    server.close();

    for bad in [
        format!("{base}?schema=Upper"),
        format!("{base}?schema=pg_catalog"),
        format!("{base}?schema=a-b"),
        format!("{base}?schema=x%22;DROP"),
        format!("{base}?schema={}", "a".repeat(64)),
        format!("{base}?pool_size=0"),
        format!("{base}?pool_size=65"),
        format!("{base}?pool_size=x"),
        format!("{base}?no_such_option=1"),
        format!("{base}?schema=a&schema=b"),
        "postgres://user@127.0.0.1:notaport/db".to_owned(),
    ] {
        let err = Store::open(&bad).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{bad}: {err}");
    }
    // A password never shows in an error.
    let err = Store::open("postgres://u:sekrit@127.0.0.1:1/db?connect_timeout=2").unwrap_err();
    assert_eq!(err.code(), ErrorCode::Backend, "{err}");
    assert!(!err.to_string().contains("sekrit"), "{err}");
}

#[derive(Default)]
struct Outcomes {
    /// Every token handed out, per worker, in order.
    tokens: Vec<Vec<u64>>,
    /// Batches acknowledged: (id, token).
    acked: Vec<(String, u64)>,
    /// Batches attempted, acknowledged or not.
    attempted: Vec<String>,
    backend_errors: u64,
    stale: u64,
    other: Vec<String>,
}

#[test]
fn server_crash_fails_in_flight_operations_then_work_resumes() {
    let Some((cluster, base)) = OwnCluster::start() else {
        return;
    };
    let url = format!("{base}?schema=crash&pool_size=2");
    Store::open(&url).unwrap().close();
    let store = Store::open(&url).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let after_restart = Arc::new(AtomicU64::new(0));
    let restarted = Arc::new(AtomicBool::new(false));
    let outcomes = Arc::new(Mutex::new(Outcomes {
        tokens: vec![Vec::new(); 4],
        ..Outcomes::default()
    }));
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (store, stop, outcomes) = (store.clone(), stop.clone(), outcomes.clone());
            let (restarted, after_restart) = (restarted.clone(), after_restart.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let id = format!("w{w}-{n}");
                    let result = store.next_token("crash").and_then(|t| {
                        outcomes.lock().unwrap().tokens[w].push(t.get());
                        outcomes.lock().unwrap().attempted.push(id.clone());
                        let ops = vec![
                            Op::put(format!("{id}-a"), id.clone()),
                            Op::put(format!("{id}-b"), id.clone()),
                        ];
                        store.apply("crash", &Fence::new(t), ops).map(|_| t)
                    });
                    let mut o = outcomes.lock().unwrap();
                    match result {
                        Ok(t) => {
                            o.acked.push((id, t.get()));
                            if restarted.load(Ordering::Relaxed) {
                                after_restart.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Err(Error::Backend(_)) => {
                            o.backend_errors += 1;
                            drop(o);
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Err(Error::StaleToken { .. }) => o.stale += 1,
                        Err(e) => o.other.push(e.to_string()),
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    cluster.run("restart"); // pg_ctl stop -m immediate, then start
    restarted.store(true, Ordering::Relaxed);
    // Work resumes: wait (bounded) until some batches went through again.
    let limit = Instant::now() + Duration::from_secs(30);
    while after_restart.load(Ordering::Relaxed) < 20 && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let o = outcomes.lock().unwrap();
    println!(
        "postgres crash: {} batches acknowledged ({} after the restart), {} BACKEND errors, {} stale",
        o.acked.len(),
        after_restart.load(Ordering::Relaxed),
        o.backend_errors,
        o.stale
    );
    assert!(o.other.is_empty(), "unexpected errors: {:?}", o.other);
    assert!(o.backend_errors >= 1, "the crash failed no operation");
    assert!(
        after_restart.load(Ordering::Relaxed) >= 20,
        "work did not resume"
    );

    // No token was ever handed out twice, and each worker's only grew.
    let mut all: Vec<u64> = o.tokens.iter().flatten().copied().collect();
    for t in &o.tokens {
        assert!(t.windows(2).all(|w| w[0] < w[1]), "{t:?}");
    }
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), n, "a token was handed out twice");

    // Every acknowledged batch is there whole; no batch is there in half.
    let check = Store::open(&url).unwrap();
    let acked: std::collections::HashSet<&str> =
        o.acked.iter().map(|(id, _)| id.as_str()).collect();
    for id in &o.attempted {
        let a = check.get("crash", &format!("{id}-a"), None).unwrap();
        let b = check.get("crash", &format!("{id}-b"), None).unwrap();
        assert_eq!(a.is_some(), b.is_some(), "batch {id} half applied");
        if acked.contains(id.as_str()) {
            // A later batch cannot have replaced it: every key is its own.
            assert_eq!(
                a.unwrap().value,
                id.as_bytes(),
                "acknowledged batch {id} lost"
            );
        }
    }
    check.close();
    store.close();
}

/// Random batches (distinct and repeated keys, puts, deletes, expected
/// versions, stale and equal tokens) give the same receipts, errors and
/// final state on postgres:// as on memory:, which runs the Rust rules.
#[test]
fn batches_agree_with_memory() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let pg = Store::open(&format!("{base}?schema={}", fresh_schema("batches"))).unwrap();
    let mem = Store::open("memory:").unwrap();
    let mut rng = support::Rng(0x5eed_u64 ^ u64::from(std::process::id()));
    let keys = ["a", "b", "c", "d", "e", "f"];
    let mut token = 1u64;
    let mut seen = std::collections::BTreeMap::new();
    for round in 0..300 {
        if rng.below(4) == 0 {
            token += 1;
        }
        // Now and then an older token, to see the stale path.
        let presented = Token::new(token.saturating_sub(rng.below(2)).max(1)).unwrap();
        let ops: Vec<Op> = (0..1 + rng.below(8))
            .map(|_| {
                let key = keys[rng.below(keys.len() as u64) as usize];
                let op = if rng.below(4) == 0 {
                    Op::delete(key)
                } else {
                    Op::put(key, format!("{round}-{key}"))
                };
                match rng.below(5) {
                    0 => op.if_version(rng.below(4)),
                    _ => op,
                }
            })
            .collect();
        let fence = Fence::new(presented);
        let want = mem.apply("s", &fence, ops.clone());
        let got = pg.apply("s", &fence, ops.clone());
        assert_eq!(got, want, "round {round}: {ops:?} with {presented}");
        *seen
            .entry(want.map(|_| "ok").unwrap_or_else(|e| e.code().as_str()))
            .or_insert(0) += 1;
    }
    // The rounds reached every outcome, not only the happy path.
    for outcome in ["ok", "STALE_TOKEN", "VERSION_MISMATCH", "NOT_FOUND"] {
        assert!(seen.get(outcome).is_some_and(|n| *n >= 5), "{seen:?}");
    }
    for key in keys {
        assert_eq!(
            pg.get("s", key, None).unwrap(),
            mem.get("s", key, None).unwrap(),
            "{key}"
        );
    }
    assert_eq!(pg.fence_of("s").unwrap(), mem.fence_of("s").unwrap());
    pg.close();
}
