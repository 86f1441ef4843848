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
        epoch + 2,
        "one automatic step of two, not one per caller"
    );
    assert_eq!(stepped_to as u64, 2 * STEP);
    assert!(tokens.iter().all(|t| *t == 2 * STEP + 1), "{tokens:?}");
    assert_stepped(&store, &lease, 2);
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
        ("another cluster", "system_id = system_id + 1", 64),
        ("a timeline from the future", "timeline = timeline + 1", 64),
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

/// What a history the copy lacks did, after the copy was taken.
#[derive(Clone, Copy, Debug)]
enum Lost {
    /// A standby promoted: one timeline crossed, the automatic steps.
    Promotion,
    /// An operator's `fencing failover`.
    Explicit,
}

/// Where the copy runs, against the server history its record names.
#[derive(Clone, Copy, Debug)]
enum Copy {
    /// The same cluster, this many timelines later (a point-in-time
    /// recovery starts one past every timeline the lost history made).
    Later(i64),
    /// Another cluster (a dump restored, a new initdb).
    Another,
}

/// A copy of the store (a backup, a dump, a standby's data) taken before a
/// history of promotions and explicit steps, and run after them, must take
/// more steps than that history took: each step is a function of the
/// history row alone, so a copy that takes as many lands on the same base
/// and hands out the same tokens again. Every history with at most one
/// explicit step per timeline, as docs/semantics.md ("How many steps")
/// counts them; the copy here is the store's own rows, saved and written
/// back.
#[test]
fn a_copy_takes_more_steps_than_the_history_it_lacks() {
    use Lost::{Explicit, Promotion};
    let Some(base) = postgres_test_url() else {
        return;
    };
    let mut c = client(&base);
    let cases: &[(&[Lost], Copy)] = &[
        (&[Explicit], Copy::Later(1)),
        (&[Promotion], Copy::Later(2)),
        (&[Promotion], Copy::Another),
        (&[Explicit, Promotion, Explicit], Copy::Later(2)),
        (&[Promotion, Promotion, Promotion], Copy::Later(4)),
        (
            &[Explicit, Promotion, Explicit, Promotion, Explicit],
            Copy::Later(3),
        ),
        (
            &[
                Explicit, Promotion, Explicit, Promotion, Explicit, Promotion, Explicit,
            ],
            Copy::Another,
        ),
    ];
    let mut reissued = Vec::new();
    for (lost, copy) in cases {
        let (store, schema, lease) = store_with_history(&base, "copied");
        let tables = ["history", "scopes", "floors"];
        for t in tables {
            c.batch_execute(&format!(
                "CREATE TABLE {schema}.saved_{t} AS SELECT * FROM {schema}.{t}"
            ))
            .unwrap();
        }
        let mut issued = vec![lease.token.get()];
        for event in *lost {
            match event {
                Promotion => record(&mut c, &schema, "timeline = timeline - 1"),
                Explicit => {
                    store.failover().unwrap();
                }
            }
            issued.push(store.next_token("job").unwrap().get());
        }
        store.close();
        for t in tables {
            c.batch_execute(&format!(
                "DELETE FROM {schema}.{t}; INSERT INTO {schema}.{t} SELECT * FROM {schema}.saved_{t}"
            ))
            .unwrap();
        }
        match copy {
            Copy::Later(d) => record(&mut c, &schema, &format!("timeline = timeline - {d}")),
            Copy::Another => record(&mut c, &schema, "system_id = system_id + 1"),
        }
        let restored = Store::open(&format!("{base}?schema={schema}")).unwrap();
        let greatest = *issued.iter().max().unwrap();
        let next = restored.next_token("job").unwrap().get();
        let stale = restored.put("job", "k", b"v", &Fence::new(Token::new(greatest).unwrap()));
        if next <= greatest || !matches!(stale, Err(Error::StaleToken { .. })) {
            reissued.push(format!(
                "{lost:?} then a copy on {copy:?}: next token {next}, the lost history's greatest \
                 {greatest} {}",
                if stale.is_ok() { "accepted" } else { "refused" }
            ));
        }
        restored.close();
    }
    assert!(reissued.is_empty(), "{reissued:#?}");
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
    assert_eq!(store.failover().unwrap(), 3 * STEP);
    assert_eq!(store.failover().unwrap(), 4 * STEP);
    store.close();
}

/// A dump of the schema restored into another cluster (its own initdb, so
/// another system identifier) steps on its first call, with no operator.
#[test]
fn a_dump_restored_into_a_new_cluster_never_reissues() {
    dump_restored_never_reissues(false);
}

/// A dump restored into the cluster it was taken from, on the same
/// timeline (the schema dropped, or lost, and restored): the schema is made
/// anew, and the store steps on its first call as well.
#[test]
fn a_dump_restored_into_the_cluster_it_came_from_never_reissues() {
    dump_restored_never_reissues(true);
}

fn dump_restored_never_reissues(same_cluster: bool) {
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
    // The original goes on after the dump, through a promotion (its own
    // automatic steps) unless it stays where it is: what the restore lacks.
    if !same_cluster {
        record(&mut client(&base), &schema, "timeline = timeline - 1");
    }
    let mut issued: Vec<u64> = (0..5)
        .map(|_| store.next_token("job").unwrap().get())
        .collect();
    issued.push(lease.token.get());
    store.close();

    // Another cluster lives as long as the test.
    let mut _cluster = None;
    let into = if same_cluster {
        client(&base)
            .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
            .unwrap();
        base.clone()
    } else {
        let Some((own, new_url)) = OwnCluster::start() else {
            return;
        };
        _cluster = Some(own);
        new_url
    };
    let mut restore = Command::new("psql")
        .args(["-q", "-v", "ON_ERROR_STOP=1", "--dbname", &into])
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

    let restored = Store::open(&format!("{into}?schema={schema}")).unwrap();
    let next = restored.next_token("job").unwrap().get();
    let greatest = *issued.iter().max().unwrap();
    assert!(
        next > greatest,
        "the restored store handed out {next} again (issued after the dump: {issued:?})"
    );
    let err = restored
        .put("job", "k", b"v", &Fence::new(Token::new(greatest).unwrap()))
        .unwrap_err();
    assert!(matches!(err, Error::StaleToken { .. }), "{err:?}");
    restored.close();
}
