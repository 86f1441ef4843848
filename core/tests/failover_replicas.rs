//! Failover of a replicated PostgreSQL (docs/postgres.md, "Replication and
//! failover"), on real servers: a primary and a streaming standby from
//! `scripts/pg-replicas`. The run: 10 tokens; the standby cut off
//! (its walreceiver stopped); more from the primary; the primary crashes;
//! the standby is promoted; tokens from it, through the same store (a
//! multi-host URL, target_session_attrs=read-write). No hook anywhere: the
//! store notices the promotion by itself. Three ways, one per bed:
//!
//!   FENCING_FAILOVER_MODE=async         asynchronous: four clients take tokens
//!                                       and write with them while the primary
//!                                       crashes and the standby is promoted;
//!                                       none twice, none accepted below its fence,
//!                                       every token of the lost history stale
//!   FENCING_FAILOVER_MODE=async-hidden  asynchronous, the promotion hidden from
//!                                       the store (its recorded server history
//!                                       overwritten with the new one's): the test
//!                                       must see tokens handed out twice (proof
//!                                       that it can see the hole)
//!   FENCING_FAILOVER_MODE=sync          synchronous standby, sync_replication=required:
//!                                       the calls during the partition fail or
//!                                       time out, none returns a token; none twice
//!
//! Run under `scripts/pg-replicas run [--sync] -- ...` (.ci/failover.sh);
//! skipped without its variables unless FENCING_REQUIRE_REPLICAS=1.

use std::collections::HashMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fencing::{Error, ErrorCode, Fence, Store, Token};

struct Bed {
    dir: String,
    ctl: String,
    multi: String,
    primary: String,
    standby: String,
}

impl Bed {
    fn from_env() -> Option<Bed> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        match (
            var("FENCING_TEST_PG_REPLICAS_DIR"),
            var("FENCING_TEST_PG_REPLICAS_CTL"),
            var("FENCING_TEST_PG_MULTI_URL"),
            var("FENCING_TEST_PG_PRIMARY_URL"),
            var("FENCING_TEST_PG_STANDBY_URLS"),
        ) {
            (Some(dir), Some(ctl), Some(multi), Some(primary), Some(standbys)) => Some(Bed {
                dir,
                ctl,
                multi,
                primary,
                standby: standbys.split(' ').next().unwrap().to_owned(),
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

    /// A client of the node that is primary now, once there is one.
    fn new_primary(&self) -> postgres::Client {
        let start = Instant::now();
        loop {
            match self
                .multi
                .parse::<postgres::Config>()
                .unwrap()
                .connect(postgres::NoTls)
            {
                Ok(c) => return c,
                Err(e) => {
                    assert!(
                        start.elapsed() < Duration::from_secs(60),
                        "no new primary: {e}"
                    );
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    /// Hides the promotion from the store: its recorded server history
    /// overwritten with the new primary's, as if nothing had changed.
    fn hide_promotion(&self) {
        self.new_primary()
            .batch_execute(
                "UPDATE fencing.history SET (system_id, timeline) = \
                 (SELECT system_id, timeline FROM fencing.server_history())",
            )
            .unwrap();
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
    fenced_reads_refuse_a_standby(&bed);
    if mode == "async" {
        return clients_racing_a_failover(&bed);
    }
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
    if mode == "async-hidden" {
        bed.hide_promotion();
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
    if mode == "async-hidden" {
        assert!(
            ledger.twice() > 0,
            "a promotion hidden from the store must show the hole"
        );
    } else {
        assert_eq!(ledger.twice(), 0, "{mode}: a token was handed out twice");
    }
}

/// A read that presents a token checks it against the fence; a standby's
/// copy of the fence may lag (a newer holder's claim not replayed yet), so
/// a stale reader could be told it is current. Through a URL that reaches
/// only a standby the fenced read is refused, naming the fix, and the
/// plain read (a replica read, documented as one) still answers.
fn fenced_reads_refuse_a_standby(bed: &Bed) {
    let primary = Store::open(&bed.primary).unwrap();
    let token = primary.next_token("standby-read").unwrap();
    let fence = Fence::new(token);
    primary.put("standby-read", "k", b"v", &fence).unwrap();
    bed.caught_up();
    let standby = Store::open(&bed.standby).unwrap();
    let plain = standby.get("standby-read", "k", None).unwrap().unwrap();
    assert_eq!(plain.value, b"v");
    let refused = standby
        .get("standby-read", "k", Some(&fence))
        .expect_err("a fenced read was checked against a standby's copy of the fence");
    assert_eq!(refused.code(), ErrorCode::Backend, "{refused}");
    assert!(refused.to_string().contains("standby"), "{refused}");
}

/// The asynchronous failover with no hook: four clients, each its own
/// store on the multi-host URL, take tokens and write with them while the
/// standby is cut off, the primary crashes and the standby is promoted;
/// they reconnect at once. None twice; no write accepted after a write with
/// a greater token had been; every token from before the promotion stale.
fn clients_racing_a_failover(bed: &Bed) {
    let url = format!("{}&call_timeout_ms=2000", bed.multi);
    let mut ledger = Ledger::default();
    ledger.take(&Store::open(&url).unwrap(), 10);
    bed.caught_up();
    bed.ctl(&["partition", "1"]);
    let stop = AtomicBool::new(false);
    let promoted = AtomicBool::new(false);
    let handed: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    let after_promotion = std::sync::atomic::AtomicUsize::new(0);
    // Accepted writes: (invoked, returned, token).
    let accepted: Mutex<Vec<(Instant, Instant, u64)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let store = Store::open(&url).unwrap();
                while !stop.load(Ordering::SeqCst) {
                    let t = match store.next_token("job") {
                        Ok(t) => t,
                        Err(e) if e.code() == ErrorCode::Backend => {
                            std::thread::sleep(Duration::from_millis(20));
                            continue;
                        }
                        Err(e) => panic!("next_token: {e}"),
                    };
                    handed.lock().unwrap().push(t.get());
                    if promoted.load(Ordering::SeqCst) {
                        after_promotion.fetch_add(1, Ordering::SeqCst);
                    }
                    let invoked = Instant::now();
                    match store.put("job", "k", b"v", &Fence::new(t)) {
                        Ok(_) => accepted
                            .lock()
                            .unwrap()
                            .push((invoked, Instant::now(), t.get())),
                        Err(Error::StaleToken { .. }) => {}
                        Err(e) if e.code() == ErrorCode::Backend => {}
                        Err(e) => panic!("put: {e}"),
                    }
                }
                store.close();
            });
        }
        // Long enough for tokens the standby never sees.
        std::thread::sleep(Duration::from_millis(800));
        bed.ctl(&["crash-primary"]);
        bed.ctl(&["promote", "1"]);
        promoted.store(true, Ordering::SeqCst);
        let start = Instant::now();
        while after_promotion.load(Ordering::SeqCst) < 40
            && start.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::SeqCst);
    });
    for t in handed.into_inner().unwrap() {
        *ledger.0.entry(t).or_default() += 1;
    }
    let base: i64 = bed
        .new_primary()
        .query_one("SELECT base FROM fencing.history", &[])
        .unwrap()
        .get(0);
    let base = base as u64;
    let before: Vec<u64> = ledger.0.keys().copied().filter(|t| *t <= base).collect();
    let after = ledger.0.keys().filter(|t| **t > base).count();
    let accepted = accepted.into_inner().unwrap();
    let mut out_of_order = Vec::new();
    for a in &accepted {
        for b in &accepted {
            if b.0 > a.1 && b.2 < a.2 {
                out_of_order.push((a.2, b.2));
            }
        }
    }
    let store = Store::open(&url).unwrap();
    let replayed_accepted: Vec<u64> = before
        .iter()
        .copied()
        .filter(|t| {
            !matches!(
                bounded_retry_err(|| store.put(
                    "job",
                    "k",
                    b"replay",
                    &Fence::new(Token::new(*t).unwrap())
                )),
                Error::StaleToken { .. }
            )
        })
        .collect();
    println!(
        "failover async, no hook: {} handed out ({} before the base {base}, {after} after), {} of them \
         twice; {} writes accepted, {} after a greater token; {} replayed tokens accepted",
        ledger.handed_out(),
        before.len(),
        ledger.twice(),
        accepted.len(),
        out_of_order.len(),
        replayed_accepted.len()
    );
    assert!(base > 0, "the store took no step on the promoted standby");
    assert!(after > 0, "no token was handed out after the promotion");
    assert_eq!(ledger.twice(), 0, "a token was handed out twice");
    assert!(
        out_of_order.is_empty(),
        "accepted below the fence: {out_of_order:?}"
    );
    assert!(replayed_accepted.is_empty(), "{replayed_accepted:?}");
}

/// The error of a call expected to fail, past the failover's BACKEND errors.
fn bounded_retry_err<T: std::fmt::Debug>(mut f: impl FnMut() -> fencing::Result<T>) -> Error {
    let start = Instant::now();
    loop {
        match f() {
            Err(e)
                if e.code() == ErrorCode::Backend && start.elapsed() < Duration::from_secs(60) =>
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return e,
            Ok(v) => panic!("expected a refusal, got {v:?}"),
        }
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
