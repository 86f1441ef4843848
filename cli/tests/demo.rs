//! `fencing demo` end to end: real worker processes, a real SIGSTOP.

mod common;

use common::{bare, run, Env};

#[test]
fn demo_with_fencing_rejects_the_stale_write_and_exits_0() {
    let env = Env::new();
    let out = env.run(["demo"]);
    let text = out.text();
    assert_eq!(out.code, 0, "{out:?}\n{text}");
    assert!(out.stderr.is_empty(), "{out:?}");
    // The timeline, in order.
    let steps = [
        "worker A       1  acquired the lease",
        "paused worker A with SIGSTOP",
        "worker A's lease expired",
        "worker B       2  acquired the lease",
        "worker B       2  wrote the report: accepted",
        "resumed worker A with SIGCONT",
        "worker A       1  wrote the report: REJECTED, STALE_TOKEN (fence is at 2)",
        "the report now reads: \"report written by worker B with token 2\"",
        "OUTCOME: the fence held.",
    ];
    let mut at = 0;
    for step in steps {
        let found = text[at..]
            .find(step)
            .unwrap_or_else(|| panic!("missing {step:?} after byte {at}:\n{text}"));
        at += found + step.len();
    }
    // The store agrees with what the demo printed.
    let got = env.run(["get", "demo:report", "body"]);
    assert_eq!(got.text(), "report written by worker B with token 2");
    let status = env.status("demo:report");
    assert_eq!(status["fence"], "2");
    assert_eq!(status["lease"], serde_json::Value::Null);
}

#[test]
fn demo_without_fencing_lets_the_stale_write_win_and_exits_3() {
    let env = Env::new();
    let out = env.run(["demo", "--without-fencing"]);
    let text = out.text();
    assert_eq!(out.code, 3, "{out:?}\n{text}");
    assert!(text.contains("WITHOUT FENCING"), "{text}");
    assert!(
        text.contains("worker A       1  wrote the report file: nothing checked its token"),
        "{text}"
    );
    assert!(
        text.contains("the report now reads: \"report written by worker A with token 1\""),
        "{text}"
    );
    assert!(text.contains("OUTCOME: the report was lost."), "{text}");
    assert!(!text.contains("STALE_TOKEN"), "{text}");
}

#[test]
fn demo_runs_again_on_the_same_store_with_newer_tokens() {
    let env = Env::new();
    assert_eq!(env.run(["demo"]).code, 0);
    let out = env.run(["demo"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.text()
            .contains("worker A       3  wrote the report: REJECTED, STALE_TOKEN (fence is at 4)"),
        "{}",
        out.text()
    );
}

#[test]
fn demo_defaults_to_fencing_db_in_the_working_directory() {
    let env = Env::new();
    let out = run(
        {
            let mut c = bare(env.dir.path());
            c.args(["demo", "--ttl", "300ms"]);
            c
        },
        None,
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.text().contains("store sqlite:fencing.db"));
    assert!(env.path("fencing.db").exists());
}

#[test]
fn demo_refuses_memory_with_one_line() {
    let env = Env::new();
    let mut c = bare(env.dir.path());
    c.args(["--url", "memory:", "demo"]);
    let out = run(c, None);
    out.fails_with("INVALID_ARGUMENT", 17);
    assert!(out.stderr.contains("separate processes"), "{out:?}");
    assert!(out.stdout.is_empty());
}

#[test]
fn demo_with_an_unknown_scheme_fails_before_starting_workers() {
    let env = Env::new();
    let mut c = bare(env.dir.path());
    c.args(["--url", "redis://x", "demo"]);
    let out = run(c, None);
    out.fails_with("INVALID_ARGUMENT", 17);
    assert!(out.stdout.is_empty());
}
