//! Failover under a running workload with a real failover manager:
//! `scripts/patroni-bed` (etcd and three Patroni-managed PostgreSQL nodes,
//! asynchronous replication), with no callback: the store notices the new
//! leader's timeline by itself (docs/semantics.md, "Failover"). Four threads
//! take tokens through one store on the multi-host URL
//! (target_session_attrs=read-write) while the leader is killed (Patroni
//! SIGKILLed, PostgreSQL crashed) a second after both replicas were cut off
//! (what they never received is lost); Patroni elects a new leader once the
//! leader key expires. No token may be handed out twice, the same store must
//! reach the new primary (no restart of the client), and every token taken
//! once the new leader is elected must come from after the step.
//!
//! Run under `scripts/patroni-bed run -- ...` (.ci/failover.sh); skipped
//! without the bed unless FENCING_REQUIRE_PATRONI=1.

use std::collections::HashMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fencing::{Store, FAILOVER_STEP};

/// (when the call was invoked, scope, token), for every token handed out.
type Ledger = Arc<Mutex<Vec<(Instant, usize, u64)>>>;

const THREADS: usize = 4;
const SCOPES: usize = 2;

fn bed() -> Option<(String, String, String)> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (
        var("FENCING_TEST_PATRONI_DIR"),
        var("FENCING_TEST_PATRONI_CTL"),
        var("FENCING_TEST_PATRONI_MULTI_URL"),
    ) {
        (Some(dir), Some(ctl), Some(multi)) => Some((dir, ctl, multi)),
        _ if std::env::var("FENCING_REQUIRE_PATRONI").as_deref() == Ok("1") => {
            panic!("FENCING_REQUIRE_PATRONI=1 but no scripts/patroni-bed is set up")
        }
        _ => {
            eprintln!("skipped: no Patroni bed (run under scripts/patroni-bed run -- ...)");
            None
        }
    }
}

fn ctl(ctl: &str, verb: &str, dir: &str) -> String {
    ctl_args(ctl, verb, dir, &[])
}

fn ctl_args(ctl: &str, verb: &str, dir: &str, args: &[&str]) -> String {
    let out = Command::new("bash")
        .args([ctl, verb, dir])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "patroni-bed {verb}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn no_token_twice_across_a_patroni_failover() {
    let Some((dir, bed_ctl, multi)) = bed() else {
        return;
    };
    let store = Store::open(&format!("{multi}&call_timeout_ms=2000")).unwrap();
    let ledger: Ledger = Arc::default();
    let errors = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..THREADS)
        .map(|i| {
            let (store, ledger, errors, stop) =
                (store.clone(), ledger.clone(), errors.clone(), stop.clone());
            std::thread::spawn(move || {
                let scope = i % SCOPES;
                while !stop.load(Ordering::Relaxed) {
                    let invoked = Instant::now();
                    match store.next_token(&format!("patroni-job{scope}")) {
                        Ok(t) => ledger.lock().unwrap().push((invoked, scope, t.get())),
                        Err(e) => {
                            *errors
                                .lock()
                                .unwrap()
                                .entry(e.code().as_str().to_owned())
                                .or_default() += 1;
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                }
            })
        })
        .collect();

    let count = |ledger: &Ledger| ledger.lock().unwrap().len();
    let patience = Instant::now() + Duration::from_secs(30);
    while count(&ledger) < 200 {
        assert!(Instant::now() < patience, "no workload before the failover");
        std::thread::sleep(Duration::from_millis(50));
    }
    let old = ctl(&bed_ctl, "leader", &dir);
    // Both replicas cut off for a second of workload: the leader then dies
    // with commits no replica has (within Patroni's maximum_lag_on_failover,
    // so one is promoted all the same).
    for node in ["node0", "node1", "node2"].iter().filter(|n| **n != old) {
        ctl_args(&bed_ctl, "partition", &dir, &[node]);
    }
    let before = count(&ledger);
    std::thread::sleep(Duration::from_secs(1));
    let unreplicated = count(&ledger) - before;
    let new = ctl(&bed_ctl, "kill-leader", &dir);
    let elected = Instant::now();
    assert_ne!(old, new);
    // The workload carries on by itself, through the same store.
    let after = |ledger: &Ledger| {
        ledger
            .lock()
            .unwrap()
            .iter()
            .filter(|(at, _, _)| *at > elected)
            .count()
    };
    let patience = Instant::now() + Duration::from_secs(60);
    while after(&ledger) < 200 && Instant::now() < patience {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }

    let ledger = ledger.lock().unwrap();
    let mut seen: HashMap<(usize, u64), usize> = HashMap::new();
    for (_, scope, t) in ledger.iter() {
        *seen.entry((*scope, *t)).or_default() += 1;
    }
    let twice = seen.values().filter(|n| **n > 1).count();
    let taken_after: Vec<u64> = ledger
        .iter()
        .filter(|(at, _, _)| *at > elected)
        .map(|(_, _, t)| *t)
        .collect();
    let below_step = taken_after.iter().filter(|t| **t < FAILOVER_STEP).count();
    println!(
        "patroni failover ({old} killed, {new} elected): {} tokens handed out ({unreplicated} \
         while the replicas were cut off), {twice} twice, {} after the election ({below_step} \
         below the step); errors during the failover: {:?}",
        ledger.len(),
        taken_after.len(),
        errors.lock().unwrap()
    );
    assert_eq!(twice, 0, "a token was handed out twice");
    assert!(
        !taken_after.is_empty(),
        "the store never reached the new primary"
    );
    assert_eq!(
        below_step, 0,
        "a client was handed a token below the step on the new primary"
    );
}
