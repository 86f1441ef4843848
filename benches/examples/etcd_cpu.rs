//! CPU per operation on etcd, counted instead of timed: the members' CPU
//! time (every process named `etcd` on this machine, from `/proc`) and this
//! process's own, summed around N operations of each kind, one caller. On a
//! machine whose cores the members share with the client, CPU is what bounds
//! both sides of `benches/etcd.rs`, and these counts swing far less than its
//! timings do (docs/performance.md, "etcd side by side"). Linux only.
//!
//! ```text
//! scripts/etcd-cluster run -- \
//!     cargo run --release -p fencing-benches --example etcd_cpu -- [N] [reads]
//! ```
//!
//! Without `reads`: three rounds of the classic acquisition (a lease grant
//! and a transaction creating a new lock key), fencing's acquisition of a
//! new scope, of a scope that exists but the handle never saw, `status`, and
//! a put to a scope that exists but the handle never saw.
//! With `reads`: a linearizable and a serializable read of six keys, in
//! turn, three rounds. N defaults to 400.

use std::time::{Duration, Instant};

use fencing::{Fence, Store};
use fencing_benches::etcd::{b64, members_from_env, Gateway};
use serde_json::{json, Value};

/// User and system time of one `/proc/PID/stat`, in ms (USER_HZ is 100).
fn cpu_ms(stat: &str) -> f64 {
    let fields: Vec<&str> = stat[stat.rfind(')').map_or(0, |i| i + 2)..]
        .split(' ')
        .collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    (ticks(11).unwrap_or(0.0) + ticks(12).unwrap_or(0.0)) * 10.0
}

fn members_cpu_ms() -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    dir.flatten()
        .filter(|e| {
            std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == "etcd")
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .map(|stat| cpu_ms(&stat))
        .sum()
}

fn own_cpu_ms() -> f64 {
    std::fs::read_to_string("/proc/self/stat").map_or(0.0, |s| cpu_ms(&s))
}

fn measure(name: &str, n: usize, mut op: impl FnMut(usize)) {
    let (members, own, started) = (members_cpu_ms(), own_cpu_ms(), Instant::now());
    for i in 0..n {
        op(i);
    }
    let per_op = |ms: f64| ms / n as f64;
    println!(
        "{name:36} members' CPU {:6.3} ms/op  client CPU {:6.3} ms/op  wall {:6.3} ms/op",
        per_op(members_cpu_ms() - members),
        per_op(own_cpu_ms() - own),
        per_op(started.elapsed().as_secs_f64() * 1000.0),
    );
}

fn main() {
    let Some(members) = members_from_env() else {
        eprintln!("etcd_cpu: no cluster (run under scripts/etcd-cluster run)");
        std::process::exit(2);
    };
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(400);
    let reads = args.next().as_deref() == Some("reads");
    let run = format!("fencing-etcd-cpu-{}", std::process::id());
    let etcd = Gateway::new(&members);
    if reads {
        read_lines(&etcd, &run, n);
    } else {
        acquire_lines(&etcd, &members, &run, n);
    }
    let _ = etcd.delete_prefix(run.as_bytes());
}

fn read_lines(etcd: &Gateway, run: &str, n: usize) {
    let keys: Vec<String> = (0..6).map(|k| format!("{run}/r/{k}")).collect();
    for k in &keys {
        etcd.txn(&json!({ "success": [{ "request_put": {
            "key": b64(k.as_bytes()), "value": b64(b"v") } }] }));
    }
    let read = |serializable: bool| -> Value {
        let ranges: Vec<Value> = keys
            .iter()
            .map(|k| json!({ "request_range": { "key": b64(k.as_bytes()), "serializable": serializable } }))
            .collect();
        json!({ "success": ranges })
    };
    for _ in 0..3 {
        let body = read(false);
        measure("linearizable read of 6 keys", n, |_| drop(etcd.txn(&body)));
        let body = read(true);
        measure("serializable read of 6 keys", n, |_| drop(etcd.txn(&body)));
    }
}

fn acquire_lines(etcd: &Gateway, members: &[String], run: &str, n: usize) {
    let url = |store: &str| format!("etcd://{}/{run}/{store}", members.join(","));
    let ttl = Duration::from_secs(10);
    for round in 0..3 {
        measure("classic acquire (new lock key)", n, |i| {
            let lease = etcd.grant(ttl);
            let key = format!("{run}/classic/{round}/{i}");
            let answer = etcd.txn(&json!({
                "compare": [{ "key": b64(key.as_bytes()), "target": "CREATE", "result": "EQUAL",
                              "create_revision": "0" }],
                "success": [{ "request_put": { "key": b64(key.as_bytes()), "value": b64(b"h"),
                                               "lease": lease.to_string() } }],
            }));
            assert_eq!(answer["succeeded"].as_bool(), Some(true), "{answer}");
        });
        let store = Store::open(&url("new")).unwrap();
        measure("fencing acquire (new scope)", n, |i| {
            store.acquire(&format!("{round}/{i}"), "h", ttl).unwrap();
        });
        // Scopes that exist, made by another handle: first contacts that
        // find a scope (the handle peeks beside the grant).
        let maker = Store::open(&url("seen")).unwrap();
        for i in 0..n {
            maker.next_token(&format!("{round}/{i}")).unwrap();
        }
        let fresh = Store::open(&url("seen")).unwrap();
        measure("fencing acquire (existing, unseen)", n, |i| {
            fresh.acquire(&format!("{round}/{i}"), "h", ttl).unwrap();
        });
        measure("fencing status", n, |i| {
            fresh.status(&format!("{round}/{i}")).unwrap();
        });
        // Writes with tokens another handle took: a worker's first write.
        let fences: Vec<Fence> = (0..n)
            .map(|i| Fence::new(maker.next_token(&format!("{round}/w{i}")).unwrap()))
            .collect();
        let writer = Store::open(&url("seen")).unwrap();
        measure("fencing put (existing, unseen)", n, |i| {
            writer
                .put(&format!("{round}/w{i}"), "k", b"v", &fences[i])
                .unwrap();
        });
    }
}
