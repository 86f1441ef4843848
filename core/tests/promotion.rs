//! A PostgreSQL store notices by itself that it runs on another server
//! history than the one it recorded (docs/semantics.md, "Failover"): a
//! promoted standby (a new timeline), a point-in-time recovery (a new
//! timeline), a restore into a new cluster (a new system identifier). Its
//! first call there takes the failover step, once, whatever the number of
//! callers racing, with no hook. Here the recorded identity is rewritten as
//! the owner to stand for each case; a dump restored into a cluster of its
//! own is the real thing. The replicated bed (core/tests/failover_replicas.rs)
//! and Patroni (core/tests/failover_patroni.rs) promote for real. Needs
//! `FENCING_TEST_PG_URL`.

mod support;

use std::process::Command;

use fencing::{Error, Fence, Lease, Store, Token};
use support::{fresh_schema, postgres_test_url, OwnCluster};

const STEP: u64 = (1 << 48) + (1 << 40);

fn client(url: &str) -> postgres::Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

/// A store in a fresh schema, a held lease on "job" and a write with it.
fn store_with_history(base: &str, tag: &str) -> (Store, String, Lease) {
    let schema = fresh_schema(tag);
    let store = Store::open(&format!("{base}?schema={schema}")).unwrap();
    for _ in 0..10 {
        store.next_token("job").unwrap();
    }
    let lease = store
        .acquire("job", "worker", std::time::Duration::from_secs(60))
        .unwrap();
    store.put("job", "k", b"v", &Fence::from(&lease)).unwrap();
    (store, schema, lease)
}

/// (epoch, base) of the store's history row.
fn history(c: &mut postgres::Client, schema: &str) -> (i64, i64) {
    let row = c
        .query_one(&format!("SELECT epoch, base FROM {schema}.history"), &[])
        .unwrap();
    (row.get(0), row.get(1))
}

/// Rewrites the server history the store recorded, as the owner.
fn record(c: &mut postgres::Client, schema: &str, set: &str) {
    c.batch_execute(&format!("UPDATE {schema}.history SET {set}"))
        .unwrap();
}

/// After `steps` automatic steps from a store whose ceiling is far below
/// 2^48 and that took no step before: everything at `steps` x STEP, the
/// lease ended, its token stale, and the next token just above.
fn assert_stepped(store: &Store, lease: &Lease, steps: u64) {
    let base = steps * STEP;
    let status = store.status("job").unwrap();
    assert_eq!(status.counter, base, "read before any write, as moved");
    assert!(status.lease.is_none(), "the step ends every lease");
    let err = store
        .put("job", "k", b"again", &Fence::from(lease))
        .unwrap_err();
    assert!(matches!(err, Error::StaleToken { .. }), "{err:?}");
    assert_eq!(store.next_token("job").unwrap().get(), base + 1);
    assert_eq!(store.next_token("never-seen").unwrap().get(), base + 1);
}

#[test]
fn a_new_timeline_steps_once_whatever_the_callers_racing() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let (store, schema, lease) = store_with_history(&base, "promoted");
    let mut c = client(&base);
    let (epoch, _) = history(&mut c, &schema);
    // As a standby promoted from the recorded timeline: one timeline crossed.
    record(&mut c, &schema, "timeline = timeline - 1");

    // Eight handles, each its own connection, call at once.
    let url = format!("{base}?schema={schema}");
    let barrier = std::sync::Barrier::new(8);
    let tokens: Vec<u64> = std::thread::scope(|s| {
        let calls: Vec<_> = (0..8)
            .map(|i| {
                let (url, barrier) = (&url, &barrier);
                s.spawn(move || {
                    let racer = Store::open(url).unwrap();
                    barrier.wait();
                    racer.next_token(&format!("racer{i}")).unwrap().get()
                })
            })
            .collect();
        calls.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let (epoch_after, stepped_to) = history(&mut c, &schema);
    assert_eq!(
        epoch_after,
        epoch + 3,
        "one automatic step of three, not one per caller"
    );
    assert_eq!(stepped_to as u64, 3 * STEP);
    assert!(tokens.iter().all(|t| *t == 3 * STEP + 1), "{tokens:?}");
    assert_stepped(&store, &lease, 3);
    store.close();
}

#[test]
fn every_other_server_history_steps_and_an_unrecorded_one_is_recorded() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let mut c = client(&base);
    for (case, set, steps) in [
        ("two timelines crossed", "timeline = timeline - 2", 5),
        ("another cluster", "system_id = system_id + 1", 3),
        ("a timeline from the future", "timeline = timeline + 1", 3),
    ] {
        let (store, schema, lease) = store_with_history(&base, "elsewhere");
        record(&mut c, &schema, set);
        eprintln!("{case}");
        assert_stepped(&store, &lease, steps);
        store.close();
    }

    // A store whose identity was never recorded records it, moving nothing.
    let (store, schema, lease) = store_with_history(&base, "unrecorded");
    record(&mut c, &schema, "system_id = NULL, timeline = NULL");
    assert_eq!(
        store.next_token("job").unwrap().get(),
        lease.token.get() + 1
    );
    let recorded: Option<i64> = c
        .query_one(&format!("SELECT timeline FROM {schema}.history"), &[])
        .unwrap()
        .get(0);
    assert!(recorded.is_some());
    store.close();
}

/// The explicit step still takes one step more, on top of any automatic one.
#[test]
fn the_explicit_step_adds_one_step_to_the_automatic_ones() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let (store, schema, _lease) = store_with_history(&base, "explicit");
    let mut c = client(&base);
    record(&mut c, &schema, "timeline = timeline - 1");
    assert_eq!(store.failover().unwrap(), 4 * STEP);
    assert_eq!(store.failover().unwrap(), 5 * STEP);
    store.close();
}

/// A dump of the schema restored into another cluster (its own initdb, so
/// another system identifier) steps on its first call, with no operator.
#[test]
fn a_dump_restored_into_a_new_cluster_never_reissues() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    if !support::pg_client_tools("pg_dump") {
        return;
    }
    let (store, schema, lease) = store_with_history(&base, "dumped");
    let dump = Command::new("pg_dump")
        .args([
            "--no-owner",
            "--no-privileges",
            "--schema",
            &schema,
            "--dbname",
            &base,
        ])
        .output()
        .unwrap();
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    // The original goes on after the dump: what the restore lacks.
    let mut issued: Vec<u64> = (0..5)
        .map(|_| store.next_token("job").unwrap().get())
        .collect();
    issued.push(lease.token.get());
    store.close();

    let Some((_cluster, new_url)) = OwnCluster::start() else {
        return;
    };
    let mut restore = Command::new("psql")
        .args(["-q", "-v", "ON_ERROR_STOP=1", "--dbname", &new_url])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    restore
        .stdin
        .take()
        .unwrap()
        .write_all(&dump.stdout)
        .unwrap();
    assert!(restore.wait().unwrap().success());

    let restored = Store::open(&format!("{new_url}?schema={schema}")).unwrap();
    let next = restored.next_token("job").unwrap().get();
    assert!(next > 3 * STEP, "{next}");
    assert!(!issued.contains(&next));
    let err = restored
        .put(
            "job",
            "k",
            b"v",
            &Fence::new(Token::new(*issued.iter().max().unwrap()).unwrap()),
        )
        .unwrap_err();
    assert!(matches!(err, Error::StaleToken { .. }), "{err:?}");
    restored.close();
}
