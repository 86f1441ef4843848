//! The verbs on `etcd://` (a fresh key prefix each), and an unreachable
//! cluster. Needs a cluster for the first: run under
//! `scripts/etcd-cluster run -- ...` (CI does; with FENCING_REQUIRE_ETCD=1 a
//! missing cluster fails).

mod common;

use common::{bare, run, Env};
use serde_json::json;

/// A store on the test cluster under a prefix no earlier run used.
fn etcd_env(tag: &str) -> Option<Env> {
    let members = fencing_scenarios::etcd_test_members()?;
    let prefix = fencing_scenarios::fresh_schema(tag);
    Some(Env {
        dir: tempfile::tempdir().unwrap(),
        url: format!("etcd://{members}/{prefix}"),
    })
}

#[test]
fn acquire_put_a_held_lease_a_stale_write_and_status_on_etcd() {
    let Some(env) = etcd_env("cli_verbs") else {
        return;
    };
    // `health` makes no store: a fresh prefix has none until a store opens it.
    let out = env.run(["health"]);
    out.fails_with("BACKEND", 19);
    assert!(out.stderr.contains("no fencing store"), "{out:?}");

    let out = env.run(["acquire", "job", "--ttl", "60s", "--holder", "a"]);
    assert_eq!((out.code, out.text().as_str()), (0, "1\n"), "{out:?}");
    let out = env.run(["health"]);
    assert_eq!((out.code, out.text().as_str()), (0, "ok\n"), "{out:?}");
    let out = env.run(["put", "job", "report", "--token", "1", "--value", "from a"]);
    assert_eq!(
        (out.code, out.text().as_str()),
        (0, "version=1 token=1\n"),
        "{out:?}"
    );

    // A second acquire while a holds the lease.
    let held = env.run(["--json", "acquire", "job", "--ttl", "60s", "--holder", "b"]);
    held.fails_with("LEASE_HELD", 14);
    let e = &held.json()["error"];
    assert_eq!(e["holder"], "a", "{held:?}");
    assert_eq!(e["token"], "1", "{held:?}");
    let left = e["remaining_ms"].as_u64().unwrap();
    assert!(left > 0 && left <= 60_000, "{held:?}");

    // a lets go; b gets the next token and writes; a's late write is refused.
    let out = env.run(["release", "job", "--token", "1"]);
    assert_eq!(
        (out.code, out.text().as_str()),
        (0, "released\n"),
        "{out:?}"
    );
    let out = env.run(["acquire", "job", "--ttl", "60s", "--holder", "b"]);
    assert_eq!((out.code, out.text().as_str()), (0, "2\n"), "{out:?}");
    let out = env.run(["put", "job", "report", "--token", "2", "--value", "from b"]);
    assert_eq!(
        (out.code, out.text().as_str()),
        (0, "version=2 token=2\n"),
        "{out:?}"
    );
    let stale = env.run([
        "--json", "put", "job", "report", "--token", "1", "--value", "late a",
    ]);
    stale.fails_with("STALE_TOKEN", 10);
    assert_eq!(
        stale.json()["error"],
        json!({
            "code": "STALE_TOKEN", "scope": "job", "presented": "1", "current": "2",
            "message": "stale token for scope \"job\": presented 1, fence is at 2",
        })
    );
    let out = env.run(["get", "job", "report"]);
    assert_eq!(
        (out.code, out.stdout.as_slice()),
        (0, &b"from b"[..]),
        "{out:?}"
    );

    let status = env.run(["--json", "status", "job"]);
    assert_eq!(status.code, 0, "{status:?}");
    let s = status.json();
    assert_eq!(s["scope"], "job", "{status:?}");
    assert_eq!(s["counter"], "2", "{status:?}");
    assert_eq!(s["fence"], "2", "{status:?}");
    assert_eq!(s["entries"], "1", "{status:?}");
    assert_eq!(s["lease"]["holder"], "b", "{status:?}");
    assert_eq!(s["lease"]["token"], "2", "{status:?}");
    assert_eq!(s["last_write"]["token"], "2", "{status:?}");
    assert_eq!(s["rejections"][0]["code"], "STALE_TOKEN", "{status:?}");
    assert_eq!(s["rejections"][0]["presented"], "1", "{status:?}");
    let out = env.run(["status", "job"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.text().contains("lease    held by \"b\" with token 2"),
        "{out:?}"
    );
}

/// A prefix is its own store: nothing of another prefix shows.
#[test]
fn each_prefix_is_a_store_of_its_own_on_etcd() {
    let (Some(one), Some(two)) = (etcd_env("cli_one"), etcd_env("cli_two")) else {
        return;
    };
    assert_eq!(one.run(["next-token", "s"]).text(), "1\n");
    assert_eq!(one.run(["next-token", "s"]).text(), "2\n");
    assert_eq!(two.run(["next-token", "s"]).text(), "1\n");
    two.run(["get", "s", "k"]).fails_with("NOT_FOUND", 13);
}

/// No member answers: BACKEND (exit 19), naming the member, in plain text
/// and JSON; the password of the URL appears in neither.
#[test]
fn an_unreachable_etcd_is_backend_and_never_shows_the_password() {
    let dir = tempfile::tempdir().unwrap();
    // The last one percent-encoded: hunter%32 is hunter2.
    let urls = [
        "etcd://127.0.0.1:1/p",
        "etcd://u:hunter2@127.0.0.1:1/p",
        "etcd://u:hunter%32@127.0.0.1:1/p",
    ];
    let shown = |text: &str| text.contains("hunter");
    for url in urls {
        for verb in [&["acquire", "s", "--ttl", "5s"][..], &["status", "s"]] {
            let mut c = bare(dir.path());
            c.args(["--url", url]).args(verb);
            let out = run(c, None);
            out.fails_with("BACKEND", 19);
            assert!(
                out.stderr.contains("etcd: cannot reach member 127.0.0.1:1"),
                "{out:?}"
            );
            assert!(!shown(&out.stderr), "{out:?}");

            let mut c = bare(dir.path());
            c.args(["--url", url, "--json"]).args(verb);
            let out = run(c, None);
            out.fails_with("BACKEND", 19);
            let e = &out.json()["error"];
            assert_eq!(e["code"], "BACKEND", "{out:?}");
            assert_eq!(e["kind"], "unreachable", "{out:?}");
            assert!(!shown(&out.text()), "{out:?}");
            assert!(!shown(&out.stderr), "{out:?}");
        }
        let mut c = bare(dir.path());
        c.args(["health", url]);
        let out = run(c, None);
        out.fails_with("BACKEND", 19);
        assert!(!shown(&out.stderr), "{out:?}");
    }
}

/// Credentials sent to a cluster without authentication: refused by etcd,
/// BACKEND, and the password is not in the message.
#[test]
fn a_password_refused_by_the_cluster_is_not_shown() {
    let Some(members) = fencing_scenarios::etcd_test_members() else {
        return;
    };
    let url = format!(
        "etcd://u:hunter2@{members}/{}",
        fencing_scenarios::fresh_schema("cli_pw")
    );
    let dir = tempfile::tempdir().unwrap();
    let mut c = bare(dir.path());
    c.args(["--url", &url, "acquire", "s", "--ttl", "5s"]);
    let out = run(c, None);
    out.fails_with("BACKEND", 19);
    // The cluster answered (and refused), not a member out of reach.
    assert!(
        out.stderr.starts_with("fencing: BACKEND: etcd: member ")
            && out.stderr.contains(" refused "),
        "{out:?}"
    );
    assert!(!out.stderr.contains("hunter2"), "{out:?}");

    let mut c = bare(dir.path());
    c.args(["--url", &url, "--json", "acquire", "s", "--ttl", "5s"]);
    let out = run(c, None);
    out.fails_with("BACKEND", 19);
    assert_eq!(out.json()["error"]["kind"], "refused", "{out:?}");
    assert!(!out.text().contains("hunter2"), "{out:?}");
    assert!(!out.stderr.contains("hunter2"), "{out:?}");
}

/// `fencing etcd-check` prints the body of an etcd transaction: sent with
/// the caller's own put added (here with curl, to etcd's JSON gateway), it
/// commits while the token is current, and not once a newer one wrote.
#[test]
fn etcd_check_prints_a_transaction_that_commits_only_while_current() {
    let Some(env) = etcd_env("cli_etcd_check") else {
        return;
    };
    let gateway = std::env::var("FENCING_TEST_ETCD_URL").expect("set beside the cluster");
    assert_eq!(env.run(["next-token", "s"]).text(), "1\n");
    assert_eq!(env.run(["next-token", "s"]).text(), "2\n");
    let check = |token: &str| {
        let out = env.run(["etcd-check", "s", "--token", token]);
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(out.text().lines().count(), 1, "{out:?}");
        serde_json::from_str::<serde_json::Value>(&out.text()).unwrap()
    };
    let (old, new) = (check("1"), check("2"));
    assert_eq!(
        env.run(["--json", "etcd-check", "s", "-t", "2"]).json(),
        new
    );
    // base64 of "app/doc" and of each value.
    let own = |txn: &serde_json::Value, value: &str| {
        let mut txn = txn.clone();
        let put = json!({ "request_put": { "key": "YXBwL2RvYw==", "value": value } });
        txn["success"].as_array_mut().unwrap().push(put);
        let out = std::process::Command::new("curl")
            .args(["-sS", "--fail", "-X", "POST", "--data-binary", "@-"])
            .arg(format!("{gateway}/v3/kv/txn"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(txn.to_string().as_bytes())?;
                child.wait_with_output()
            })
            .expect("curl runs");
        assert!(out.status.success(), "{out:?}");
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        answer["succeeded"] == json!(true)
    };
    assert!(own(&new, "Qg=="), "the current token's transaction commits");
    assert!(
        !own(&old, "QQ=="),
        "a check taken before the newer write commits nothing"
    );
    // The fence moved with the caller's own transaction.
    assert_eq!(env.run(["fence", "s"]).text(), "2\n");
    env.run(["etcd-check", "s", "-t", "1"])
        .fails_with("STALE_TOKEN", 10);
    // Another store kind refuses, as a usage of the wrong store.
    Env::new()
        .run(["etcd-check", "s", "-t", "1"])
        .fails_with("INVALID_ARGUMENT", 17);
}
