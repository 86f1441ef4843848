//! `fencing events` and the record in `fencing status`: what other
//! processes were refused, and who last wrote (docs/operations.md).

mod common;

use common::Env;
use serde_json::Value;

/// Worker B (token 2) writes; worker A comes back with token 1 and is refused.
fn stale_story(env: &Env) {
    let out = env.run([
        "put", "r:7", "report", "--token", "2", "--holder", "worker-b", "--value", "B",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let out = env.run([
        "put", "r:7", "report", "--token", "1", "--holder", "worker-a", "--value", "SECRET",
    ]);
    out.fails_with("STALE_TOKEN", 10);
}

#[test]
fn events_json_shows_the_rejection_and_the_last_writer_of_another_process() {
    let env = Env::new();
    stale_story(&env);
    let out = env.run(["--json", "events"]);
    assert_eq!(out.code, 0, "{out:?}");
    let v = out.json();
    assert_eq!(v["scope"], Value::Null);
    let r = &v["rejections"].as_array().unwrap()[..];
    assert_eq!(r.len(), 1, "{v}");
    assert_eq!(r[0]["code"], "STALE_TOKEN");
    assert_eq!(r[0]["scope"], "r:7");
    assert_eq!(r[0]["key"], "report");
    assert_eq!(r[0]["presented"], "1");
    assert_eq!(r[0]["current"], "2");
    assert_eq!(r[0]["holder"], "worker-a");
    assert_eq!(r[0]["suppressed"], "0");
    assert_eq!(r[0]["id"], "1");
    assert!(r[0]["at_ms"].as_u64().unwrap() > 0);
    let w = &v["last_writes"].as_array().unwrap()[..];
    assert_eq!(w.len(), 1, "{v}");
    assert_eq!(
        (&w[0]["scope"], &w[0]["token"], &w[0]["holder"]),
        (&"r:7".into(), &"2".into(), &"worker-b".into())
    );
    assert!(!out.text().contains("SECRET"), "never values");

    // One scope, and the plain form.
    let v = env.run(["--json", "events", "other"]).json();
    assert_eq!(v["rejections"].as_array().unwrap().len(), 0);
    let text = env.run(["events", "r:7"]).text();
    assert!(
        text.contains("STALE_TOKEN  token 1 (fence 2) from \"worker-a\", key \"report\""),
        "{text}"
    );
    assert!(text.contains("r:7  token 2 by \"worker-b\""), "{text}");
}

#[test]
fn status_shows_the_last_writer_and_recent_rejections() {
    let env = Env::new();
    stale_story(&env);
    let v = env.run(["--json", "status", "r:7"]).json();
    assert_eq!(v["last_write"]["holder"], "worker-b");
    assert_eq!(v["last_write"]["token"], "2");
    assert_eq!(v["rejections"][0]["presented"], "1");
    let text = env.run(["status", "r:7"]).text();
    assert!(
        text.contains("written  token 2 by \"worker-b\" at "),
        "{text}"
    );
    assert!(text.contains("rejected (newest first)\n  "), "{text}");
    let text = env.run(["status", "quiet"]).text();
    assert!(
        text.contains("written  none recorded\nrejected none recorded\n"),
        "{text}"
    );
}

#[test]
fn events_refuses_a_bad_limit_or_scope() {
    let env = Env::new();
    for limit in ["0", "257", "-1", "x"] {
        let out = env.run(["events", "--limit", limit]);
        out.fails_with("INVALID_ARGUMENT", 17);
    }
    env.run(["events", ""]).fails_with("INVALID_ARGUMENT", 17);
}

#[test]
fn events_follow_prints_each_rejection_as_it_is_recorded() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::time::Duration;

    let env = Env::new();
    stale_story(&env); // shown by the snapshot, not again
    let mut child = env
        .cmd(["--json", "events", "--follow"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    // Bounded far above a poll interval: a hang, not a speed claim.
    let next = || -> Value {
        let line = rx.recv_timeout(Duration::from_secs(60)).expect("a line");
        serde_json::from_str(&line).unwrap()
    };
    let snapshot = next();
    assert_eq!(
        snapshot["rejections"].as_array().unwrap().len(),
        1,
        "{snapshot}"
    );
    // Another process is refused on another scope: it arrives as one line.
    let out = env.run(["put", "r:8", "k", "--token", "5", "--value", "v"]);
    assert_eq!(out.code, 0, "{out:?}");
    env.run([
        "put", "r:8", "k", "--token", "4", "--holder", "late", "--value", "SECRET",
    ])
    .fails_with("STALE_TOKEN", 10);
    let r = next();
    assert_eq!(
        (r["scope"].as_str(), r["presented"].as_str()),
        (Some("r:8"), Some("4")),
        "{r}"
    );
    assert_eq!(
        (r["current"].as_str(), r["holder"].as_str()),
        (Some("5"), Some("late"))
    );
    assert!(!r.to_string().contains("SECRET"));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        rx.recv_timeout(Duration::from_secs(10)).is_err(),
        "nothing else"
    );
}
