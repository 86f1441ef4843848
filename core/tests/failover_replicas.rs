//! Failover of a replicated PostgreSQL (docs/postgres.md, "Replication and
//! failover"), on real servers: a primary and a streaming standby from
//! `scripts/pg-replicas`. The run: 10 tokens; the standby cut off
//! (its walreceiver stopped); 5 more from the primary; the primary crashes;
//! the standby is promoted; 10 tokens from it, through the same store (a
//! multi-host URL, target_session_attrs=read-write). Three ways, one per bed:
//!
//!   FENCING_FAILOVER_MODE=async       asynchronous, no failover step: the
//!                                     test must see tokens handed out twice
//!                                     (proof that it can see the hole)
//!   FENCING_FAILOVER_MODE=async-step  asynchronous, with the failover step
//!                                     on the new primary: none twice
//!   FENCING_FAILOVER_MODE=sync        synchronous standby, sync_replication=required:
//!                                     the calls during the partition fail or
//!                                     time out, none returns a token; none twice
//!
//! Run under `scripts/pg-replicas run [--sync] -- ...` (.ci/failover.sh);
//! skipped without its variables unless FENCING_REQUIRE_REPLICAS=1.

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use fencing::{ErrorCode, Store};

struct Bed {
    dir: String,
    ctl: String,
    multi: String,
    primary: String,
}

impl Bed {
    fn from_env() -> Option<Bed> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        match (
            var("FENCING_TEST_PG_REPLICAS_DIR"),
            var("FENCING_TEST_PG_REPLICAS_CTL"),
            var("FENCING_TEST_PG_MULTI_URL"),
            var("FENCING_TEST_PG_PRIMARY_URL"),
        ) {
            (Some(dir), Some(ctl), Some(multi), Some(primary)) => Some(Bed {
                dir,
                ctl,
                multi,
                primary,
            }),
            _ if std::env::var("FENCING_REQUIRE_REPLICAS").as_deref() == Ok("1") => {
                panic!("FENCING_REQUIRE_REPLICAS=1 but no scripts/pg-replicas bed is set up")
            }
            _ => {
                eprintln!("skipped: no replicated bed (run under scripts/pg-replicas run -- ...)");
                None
            }
        }
    }

    fn ctl(&self, args: &[&str]) {
        let status = Command::new("bash")
            .arg(&self.ctl)
            .args(&args[..1])
            .arg(&self.dir)
            .args(&args[1..])
            .status()
            .unwrap();
        assert!(status.success(), "pg-replicas {args:?}");
    }

    /// Cancels the first backend found waiting for a synchronous standby.
    fn cancel_sync_wait(&self) {
        let mut c = self
            .primary
            .parse::<postgres::Config>()
            .unwrap()
            .connect(postgres::NoTls)
            .unwrap();
        let start = Instant::now();
        loop {
            let cancelled = c
                .query(
                    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'",
                    &[],
                )
                .unwrap();
            if !cancelled.is_empty() {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(2),
                "no commit waits for the standby"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// An operator (or Patroni's non-strict synchronous mode) empties
    /// synchronous_standby_names and reloads while the store's connections
    /// stay open: its next commit must be refused, not made local only.
    /// Then the setting comes back and the store works again.
    fn sync_holds_on_every_commit(&self, store: &Store) {
        let mut c = self.admin();
        let names: String = c
            .query_one("SHOW synchronous_standby_names", &[])
            .unwrap()
            .get(0);
        assert!(!names.is_empty(), "the sync bed has no synchronous standby");
        let set = |c: &mut postgres::Client, value: &str| {
            c.batch_execute(&format!(
                "ALTER SYSTEM SET synchronous_standby_names = '{value}'"
            ))
            .unwrap();
            c.batch_execute("SELECT pg_reload_conf()").unwrap();
            // The postmaster has reloaded once a new session sees it; then
            // give its signal a moment to reach the store's sessions.
            let start = Instant::now();
            while self
                .admin()
                .query_one("SHOW synchronous_standby_names", &[])
                .unwrap()
                .get::<_, String>(0)
                != value
            {
                assert!(start.elapsed() < Duration::from_secs(10), "reload not seen");
                std::thread::sleep(Duration::from_millis(20));
            }
            std::thread::sleep(Duration::from_millis(300));
        };
        set(&mut c, "");
        for _ in 0..3 {
            let refused = store
                .next_token("job")
                .expect_err("a token committed without a synchronous standby was handed out");
            assert_eq!(refused.code(), ErrorCode::Backend, "{refused}");
            assert!(
                refused.to_string().contains("no synchronous standby"),
                "{refused}"
            );
        }
        set(&mut c, &names);
    }

    fn admin(&self) -> postgres::Client {
        self.primary
            .parse::<postgres::Config>()
            .unwrap()
            .connect(postgres::NoTls)
            .unwrap()
    }

    /// Waits until the standby has replayed everything the primary wrote.
    fn caught_up(&self) {
        let mut c = self
            .primary
            .parse::<postgres::Config>()
            .unwrap()
            .connect(postgres::NoTls)
            .unwrap();
        let start = Instant::now();
        loop {
            let lag: i64 = c
                .query_one(
                    "SELECT coalesce(max(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)), -1)::bigint \
                     FROM pg_stat_replication",
                    &[],
                )
                .unwrap()
                .get(0);
            if lag == 0 {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the standby never caught up"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Tokens handed out, and how many of them twice.
#[derive(Default)]
struct Ledger(HashMap<u64, usize>);

impl Ledger {
    fn take(&mut self, store: &Store, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| {
                let t = store.next_token("job").unwrap().get();
                *self.0.entry(t).or_default() += 1;
                t
            })
            .collect()
    }

    fn twice(&self) -> usize {
        self.0.values().filter(|n| **n > 1).count()
    }

    fn handed_out(&self) -> usize {
        self.0.values().sum()
    }
}

#[test]
fn tokens_across_a_failover() {
    let Some(bed) = Bed::from_env() else {
        return;
    };
    let mode = std::env::var("FENCING_FAILOVER_MODE").unwrap_or_else(|_| "async".into());
    let sync = mode == "sync";
    let options = if sync {
        "&call_timeout_ms=3000&sync_replication=required"
    } else {
        "&call_timeout_ms=2000"
    };
    let store = Store::open(&format!("{}{options}", bed.multi)).unwrap();
    let mut ledger = Ledger::default();

    ledger.take(&store, 10);
    if sync {
        bed.sync_holds_on_every_commit(&store);
        ledger.take(&store, 1);
    }
    bed.caught_up();
    bed.ctl(&["partition", "1"]);
    let mut during = Vec::new();
    if sync {
        // The first call's wait for the standby is cancelled (as a client's
        // timeout or an operator's pg_cancel_backend does): PostgreSQL then
        // answers success with a WARNING, the commit being local only.
        let s = store.clone();
        let call = std::thread::spawn(move || s.next_token("job"));
        bed.cancel_sync_wait();
        let answer = call.join().unwrap();
        let err = answer.expect_err("a commit no standby confirmed was handed out");
        assert_eq!(err.code(), ErrorCode::Backend, "{err}");
        assert!(err.to_string().contains("synchronous"), "{err}");
    }
    for _ in 0..if sync { 4 } else { 5 } {
        match store.next_token("job") {
            Ok(t) => {
                *ledger.0.entry(t.get()).or_default() += 1;
                during.push(t.get());
            }
            Err(e) => {
                assert!(sync, "{mode}: the primary refused a token: {e}");
                assert_eq!(e.code(), ErrorCode::Backend, "{e}");
            }
        }
    }
    if sync {
        assert!(
            during.is_empty(),
            "sync: tokens returned during the partition: {during:?}"
        );
    } else {
        assert_eq!(during.len(), 5);
    }
    bed.ctl(&["crash-primary"]);
    bed.ctl(&["promote", "1"]);
    if mode == "async-step" {
        // What a failover manager's hook (Patroni's on_role_change) runs.
        let moved = bounded_retry(|| store.failover());
        assert!(moved >= 1);
    }
    // The promoted standby runs alone until another joins it (the bed
    // clears its synchronous_standby_names), so a store that requires a
    // synchronous standby refuses it, as it should: the clients after the
    // failover run without the option.
    let after_store = if sync {
        Store::open(&format!("{}&call_timeout_ms=3000", bed.multi)).unwrap()
    } else {
        store.clone()
    };
    if sync {
        let refused = bounded_refusal(|| store.next_token("job"));
        assert!(
            refused.to_string().contains("no synchronous standby"),
            "{refused}"
        );
    }
    let after: Vec<u64> = (0..10)
        .map(|_| bounded_retry(|| after_store.next_token("job")).get())
        .collect();
    for t in &after {
        *ledger.0.entry(*t).or_default() += 1;
    }
    println!(
        "failover {mode}: {} handed out, {} of them twice; during the partition {during:?}; after {after:?}",
        ledger.handed_out(),
        ledger.twice()
    );
    if mode == "async" {
        assert!(
            ledger.twice() > 0,
            "the unprotected asynchronous failover must show the hole"
        );
    } else {
        assert_eq!(ledger.twice(), 0, "{mode}: a token was handed out twice");
    }
}

/// The error a store gives once the dead primary's connections are gone.
fn bounded_refusal<T: std::fmt::Debug>(
    mut f: impl FnMut() -> fencing::Result<T>,
) -> fencing::Error {
    let start = Instant::now();
    loop {
        let err = f().expect_err("the store must refuse a primary without a synchronous standby");
        if err.to_string().contains("no synchronous standby")
            || start.elapsed() > Duration::from_secs(60)
        {
            return err;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The first calls after the promotion may meet the dead primary's
/// connections (BACKEND): the pool drops them and connects again. Bounded.
fn bounded_retry<T>(mut f: impl FnMut() -> fencing::Result<T>) -> T {
    let start = Instant::now();
    loop {
        match f() {
            Ok(v) => return v,
            Err(e)
                if e.code() == ErrorCode::Backend && start.elapsed() < Duration::from_secs(60) =>
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("after the failover: {e}"),
        }
    }
}
