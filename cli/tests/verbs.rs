//! Every verb through the real binary: success, each error code with its
//! exit status, plain and `--json` output.

mod common;

use common::{bare, run, Env};
use serde_json::{json, Value};

#[test]
fn acquire_renew_release_and_lease_errors() {
    let env = Env::new();
    let out = env.run(["acquire", "s", "--ttl", "30s", "--holder", "a"]);
    assert_eq!((out.code, out.text().as_str()), (0, "1\n"), "{out:?}");

    let held = env.run(["--json", "acquire", "s", "--ttl", "30s", "--holder", "b"]);
    held.fails_with("LEASE_HELD", 14);
    let e = &held.json()["error"];
    assert_eq!(e["code"], "LEASE_HELD");
    assert_eq!(e["holder"], "a");
    assert_eq!(e["token"], "1");
    assert!(e["remaining_ms"].as_u64().unwrap() <= 30_000);

    let renewed = env.run(["--json", "renew", "s", "--token", "1", "--ttl", "60s"]);
    assert_eq!(renewed.code, 0, "{renewed:?}");
    let lease = renewed.json();
    assert_eq!(lease["token"], "1");
    assert_eq!(lease["holder"], "a");
    assert_eq!(lease["ttl_ms"], 60_000);

    let lost = env.run(["--json", "renew", "s", "--token", "2", "--ttl", "1s"]);
    lost.fails_with("LEASE_LOST", 15);
    assert_eq!(lost.json()["error"]["current_token"], "1");
    assert_eq!(lost.json()["error"]["current_holder"], "a");

    let out = env.run(["release", "s", "--token", "2"]);
    assert_eq!((out.code, out.text().as_str()), (0, "not released\n"));
    let out = env.run(["--json", "release", "s", "--token", "1"]);
    assert_eq!(out.json(), json!({ "released": true }));
    let out = env.run(["renew", "s", "--token", "1", "--ttl", "1s"]);
    out.fails_with("LEASE_LOST", 15);

    let out = env.run(["--json", "acquire", "s", "--ttl", "1s", "--holder", "b"]);
    assert_eq!(out.json()["token"], "2");
}

#[test]
fn acquire_wait_times_out_or_gets_the_lease() {
    let env = Env::new();
    assert_eq!(env.run(["acquire", "s", "--ttl", "60s"]).code, 0);
    let out = env.run(["acquire", "s", "--ttl", "1s", "--wait", "100ms"]);
    out.fails_with("TIMEOUT", 18);
    let out = env.run(["--json", "acquire", "s", "--ttl", "1s", "--wait", "100ms"]);
    assert_eq!(out.json()["error"]["code"], "TIMEOUT");

    let env = Env::new();
    assert_eq!(env.run(["acquire", "s", "--ttl", "200ms"]).code, 0);
    let out = env.run(["acquire", "s", "--ttl", "1s", "--wait", "30s"]);
    assert_eq!((out.code, out.text().as_str()), (0, "2\n"), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "no progress line off a terminal: {out:?}"
    );
}

#[test]
fn put_get_delete_with_versions_seq_and_stale_tokens() {
    let env = Env::new();
    let out = env.run(["put", "s", "k", "--token", "5", "--value", "one"]);
    assert_eq!(out.text(), "version=1 token=5\n", "{out:?}");
    // From stdin, binary-safe.
    let bytes = [0u8, 159, 146, 150, b'\n'];
    let out = env.run_stdin(["--json", "put", "s", "k", "--token", "5"], &bytes);
    assert_eq!(out.json(), json!({ "version": "2", "token": "5" }));
    let got = env.run(["get", "s", "k"]);
    assert_eq!(got.stdout, bytes);
    let got = env.run(["--json", "get", "s", "k"]).json();
    assert_eq!(got["value_hex"], "009f92960a");
    assert_eq!(got["value_len"], 5);
    assert_eq!(got["version"], "2");
    assert_eq!(got.get("value"), None, "not UTF-8, so no text form");

    // Stale token: rejected, with details, nothing changes.
    let before = env.status("s");
    let out = env.run(["--json", "put", "s", "k", "--token", "4", "--value", "old"]);
    out.fails_with("STALE_TOKEN", 10);
    assert_eq!(
        out.json()["error"],
        json!({
            "code": "STALE_TOKEN", "scope": "s", "presented": "4", "current": "5",
            "message": "stale token for scope \"s\": presented 4, fence is at 5",
        })
    );
    // Nothing changed but the store's record of the rejection (docs/operations.md).
    let mut after = env.status("s");
    assert_eq!(after["rejections"][0]["presented"], "4");
    after["rejections"] = json!([]);
    assert_eq!(after, before);
    assert_eq!(env.run(["get", "s", "k"]).stdout, bytes);
    // A checked read with a stale token.
    env.run(["get", "s", "k", "--token", "4"])
        .fails_with("STALE_TOKEN", 10);
    assert_eq!(env.run(["get", "s", "k", "--token", "5"]).stdout, bytes);

    // Sequence numbers.
    let out = env.run([
        "put", "s", "k", "--token", "6", "--seq", "3", "--value", "a",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let out = env.run([
        "--json", "put", "s", "k", "--token", "6", "--seq", "3", "--value", "b",
    ]);
    out.fails_with("SEQUENCE_OUT_OF_ORDER", 11);
    assert_eq!(out.json()["error"]["last"], "3");

    // Versions.
    let out = env.run([
        "--json",
        "put",
        "s",
        "k",
        "--token",
        "6",
        "--if-version",
        "9",
        "--value",
        "c",
    ]);
    out.fails_with("VERSION_MISMATCH", 12);
    assert_eq!(out.json()["error"]["expected"], "9");
    assert_eq!(out.json()["error"]["actual"], "3");
    let out = env.run([
        "put",
        "s",
        "new",
        "--token",
        "6",
        "--if-version",
        "0",
        "--value",
        "c",
    ]);
    assert_eq!(out.text(), "version=1 token=6\n");
    let out = env.run(["delete", "s", "new", "--token", "6", "--if-version", "2"]);
    out.fails_with("VERSION_MISMATCH", 12);
    let out = env.run([
        "--json",
        "delete",
        "s",
        "new",
        "--token",
        "6",
        "--if-version",
        "1",
    ]);
    assert_eq!(out.json(), json!({ "version": "0", "token": "6" }));

    // Missing entries.
    let out = env.run(["--json", "get", "s", "new"]);
    out.fails_with("NOT_FOUND", 13);
    assert_eq!(out.json()["error"]["key"], "new");
    env.run(["delete", "s", "new", "--token", "6"])
        .fails_with("NOT_FOUND", 13);
    let out = env.run(["delete", "s", "k", "--token", "6", "--holder", "me"]);
    assert_eq!((out.code, out.text().as_str()), (0, "deleted\n"));
}

#[test]
fn token_and_holder_come_from_the_environment() {
    let env = Env::new();
    let out = run(
        {
            let mut c = env.cmd(["put", "s", "k", "--value", "v"]);
            c.env("FENCING_TOKEN", "7")
                .env("FENCING_HOLDER", "env-holder");
            c
        },
        None,
    );
    assert_eq!(out.text(), "version=1 token=7\n", "{out:?}");
    // The URL too.
    let mut c = bare(env.dir.path());
    c.env("FENCING_URL", &env.url).args(["fence", "s"]);
    assert_eq!(run(c, None).text(), "7\n");
    // No token anywhere: a usage error.
    assert_eq!(env.run(["put", "s", "k", "--value", "v"]).code, 2);
}

#[test]
fn claim_fence_next_token_advance_counter_and_exhaustion() {
    let env = Env::new();
    assert_eq!(env.run(["fence", "s"]).text(), "0\n");
    assert_eq!(env.run(["next-token", "s"]).text(), "1\n");
    let out = env.run(["--json", "next-token", "s"]);
    assert_eq!(out.json(), json!({ "token": "2" }));
    let out = env.run(["--json", "claim", "s", "--token", "2"]);
    assert_eq!(out.json(), json!({ "claimed": true, "token": "2" }));
    assert_eq!(
        env.run(["--json", "fence", "s"]).json(),
        json!({ "scope": "s", "fence": "2" })
    );
    env.run(["claim", "s", "--token", "1"])
        .fails_with("STALE_TOKEN", 10);

    // Past the jump limit only in a store whose jumps are unbounded
    // (docs/semantics.md, "Failover").
    env.run(["advance-counter", "s", "9007199254740993"])
        .fails_with("INVALID_ARGUMENT", 17);
    let mut env = env;
    env.url.push_str("?jumps=unbounded");
    let out = env.run(["advance-counter", "s", "9007199254740993"]);
    assert_eq!(out.text(), "9007199254740993\n");
    assert_eq!(env.run(["next-token", "s"]).text(), "9007199254740994\n");
    let max = "9223372036854775807";
    assert_eq!(
        env.run(["--json", "advance-counter", "s", max]).json()["counter"],
        max
    );
    let before = env.status("s");
    env.run(["next-token", "s"])
        .fails_with("TOKEN_EXHAUSTED", 16);
    env.run(["acquire", "s", "--ttl", "1s"])
        .fails_with("TOKEN_EXHAUSTED", 16);
    assert_eq!(env.status("s"), before);
    // The greatest token still writes.
    let out = env.run(["put", "s", "k", "--token", max, "--value", "v"]);
    assert_eq!(out.text(), format!("version=1 token={max}\n"));
}

#[test]
fn status_list_and_retire() {
    let env = Env::new();
    let out = env.run(["status", "s"]);
    assert_eq!(
        out.text(),
        "scope    s\nlease    none\ncounter  0\nfence    0\nentries  0\n\
         written  none recorded\nrejected none recorded\n"
    );
    assert_eq!(
        env.run(["acquire", "s", "--ttl", "60s", "--holder", "h"])
            .code,
        0
    );
    for key in ["b", "a", "c"] {
        assert_eq!(
            env.run(["put", "s", key, "--token", "1", "--value", "x"])
                .code,
            0
        );
    }
    let text = env.run(["status", "s"]).text();
    assert!(
        text.contains("lease    held by \"h\" with token 1,"),
        "{text}"
    );
    assert!(
        text.contains(
            "counter  1\nfence    1\nentries  3\nwritten  token 1 by an unnamed holder at "
        ),
        "{text}"
    );
    let st = env.run(["--json", "status", "s"]).json();
    assert_eq!(st["lease"]["holder"], "h");
    assert_eq!(st["entries"], "3");

    assert_eq!(env.run(["list", "s"]).text(), "a\nb\nc\n");
    let page = env.run(["--json", "list", "s", "--limit", "2"]);
    assert_eq!(page.json(), json!({ "keys": ["a", "b"], "next": "b" }));
    assert!(page.stderr.is_empty());
    let plain = env.run(["list", "s", "--limit", "2"]);
    assert_eq!(plain.text(), "a\nb\n");
    assert!(plain.stderr.contains("--after \"b\""), "{plain:?}");
    assert_eq!(
        env.run(["list", "s", "--limit", "2", "--after", "b"])
            .text(),
        "c\n"
    );
    let all = env.run(["--json", "list", "s", "--limit", "1", "--all"]);
    assert_eq!(all.json(), json!({ "keys": ["a", "b", "c"], "next": null }));

    // Retire: refused while leased, then while entries remain.
    let out = env.run(["retire", "s"]);
    out.fails_with("LEASE_HELD", 14);
    assert_eq!(
        env.run(["release", "s", "--token", "1"]).text(),
        "released\n"
    );
    env.run(["retire", "s"]).fails_with("INVALID_ARGUMENT", 17);
    for key in ["a", "b", "c"] {
        assert_eq!(env.run(["delete", "s", key, "--token", "1"]).code, 0);
    }
    assert_eq!(env.run(["retire", "s"]).text(), "retired\n");
    assert_eq!(
        env.run(["--json", "retire", "s"]).json(),
        json!({ "retired": false })
    );
    // Created again, the scope starts above every token of its retired life.
    assert_eq!(env.run(["next-token", "s"]).text(), "2\n");
}

#[test]
fn metrics_print_prometheus_text_and_json() {
    let env = Env::new();
    let out = env.run(["metrics"]);
    assert_eq!(out.code, 0);
    let text = out.text();
    assert!(
        text.contains("# TYPE fencing_stale_rejections_total counter\n"),
        "{text}"
    );
    // Labelled with the store's location: the sqlite: URL of the test's file.
    let pause = format!("fencing_longest_pause_seconds{{store=\"{}\"}} 0\n", env.url);
    assert!(text.contains(&pause), "{text}");
    let m: Value = env.run(["--json", "metrics"]).json();
    assert_eq!(m["writes_accepted"], "0");
    assert_eq!(m["rejections"], json!([]));
}

#[test]
fn help_documents_every_exit_status() {
    let env = Env::new();
    let out = env.run(["--help"]);
    assert_eq!(out.code, 0);
    let text = out.text();
    for (status, code) in [
        (10, "STALE_TOKEN"),
        (11, "SEQUENCE_OUT_OF_ORDER"),
        (12, "VERSION_MISMATCH"),
        (13, "NOT_FOUND"),
        (14, "LEASE_HELD"),
        (15, "LEASE_LOST"),
        (16, "TOKEN_EXHAUSTED"),
        (17, "INVALID_ARGUMENT"),
        (18, "TIMEOUT"),
        (19, "BACKEND"),
        (20, "CLOSED"),
    ] {
        assert!(
            text.contains(&format!("{status:>4}  {code}")),
            "{code}: {text}"
        );
    }
    assert!(env.run(["run", "--help"]).text().contains("FENCING_TOKEN"));
}

#[test]
fn memory_store_works_within_one_invocation() {
    let env = Env::new();
    let mut c = bare(env.dir.path());
    c.args(["--url", "memory:", "next-token", "s"]);
    assert_eq!(run(c, None).text(), "1\n");
    // A new process, a new empty store.
    let mut c = bare(env.dir.path());
    c.args(["--url", "memory:", "get", "s", "k"]);
    run(c, None).fails_with("NOT_FOUND", 13);
}

#[test]
fn a_long_wait_shows_progress_on_a_terminal_only() {
    let env = Env::new();
    assert_eq!(
        env.run(["acquire", "s", "--ttl", "300s", "--holder", "h"])
            .code,
        0
    );
    // On a terminal (script(1) gives the command a pseudo-terminal).
    let mut c = std::process::Command::new("script");
    c.current_dir(env.dir.path())
        .env("SHELL", "/bin/sh")
        .env("FENCING_URL", &env.url)
        .env("FENCING_BIN", common::BIN)
        .args([
            "-qec",
            "\"$FENCING_BIN\" acquire s --ttl 1s --wait 1500ms",
            "/dev/null",
        ]);
    let out = run(c, None);
    assert_eq!(out.code, 18, "{out:?}");
    let screen = out.text();
    assert!(
        screen.contains("fencing: waiting for the lease on \"s\""),
        "{screen:?}"
    );
    assert!(screen.contains("fencing: TIMEOUT: "), "{screen:?}");
    // Not on a terminal: only the error line.
    let out = env.run(["acquire", "s", "--ttl", "1s", "--wait", "1500ms"]);
    out.fails_with("TIMEOUT", 18);
    assert!(!out.stderr.contains("waiting for the lease on"), "{out:?}");
}

#[test]
fn wait_forever_waits_until_the_lease_is_free() {
    let env = Env::new();
    assert_eq!(
        env.run(["acquire", "s", "--ttl", "700ms", "--holder", "h"])
            .code,
        0
    );
    // No deadline: it gets the lease once the first expires (as `flock`
    // and `etcdctl lock` wait), under either spelling.
    let out = env.run(["acquire", "s", "--ttl", "700ms", "--wait", "forever"]);
    assert_eq!(out.code, 0, "{out:?}");
    let out = env.run(["acquire", "s", "--ttl", "1s", "--wait", "inf"]);
    assert_eq!(out.code, 0, "{out:?}");
    // Anything else still names what it takes.
    let out = env.run(["acquire", "s", "--ttl", "1s", "--wait", "always"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("or forever"), "{out:?}");
}

#[test]
fn failover_moves_every_token_past_the_lost_history() {
    let env = Env::new();
    assert_eq!(env.run(["next-token", "s"]).text(), "1\n");
    assert_eq!(env.run(["next-token", "s"]).text(), "2\n");
    let out = env.run(["--json", "failover"]).json();
    // The store's ceiling (1 + 2^32 after token 1) is below its jump limit
    // (2^48 before any step): the base is 2^40 above the limit.
    let base: u64 = (1 << 48) + (1 << 40);
    assert_eq!(out, json!({ "stale_through": base.to_string() }));
    // Token 2 and everything up to the base are stale now; the next is above.
    env.run(["put", "s", "k", "--token", "2", "--value", "late"])
        .fails_with("STALE_TOKEN", 10);
    assert_eq!(
        env.run(["next-token", "s"]).text(),
        format!("{}\n", base + 1)
    );
    assert_eq!(env.run(["fence", "never-seen"]).text(), format!("{base}\n"));
    // The plain form names the base too.
    // Then the limit is the base + 2^48, above the ceiling (base + 2^32).
    let second = base + (1 << 48) + (1 << 40);
    assert_eq!(
        env.run(["failover"]).text(),
        format!(
            "failed over: every counter, fence and floor now stands at {second} or above \
             (every earlier token is stale)\n"
        )
    );
}

#[test]
fn a_write_without_a_token_names_fencing_token_and_fencing_run() {
    let env = Env::new();
    for args in [
        vec!["put", "s", "k", "--value", "x"],
        vec!["delete", "s", "k"],
    ] {
        let out = env.run(&args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains("$FENCING_TOKEN"), "{out:?}");
        assert!(out.stderr.contains("fencing run"), "{out:?}");
    }
    // Nothing was created.
    assert!(!env.path("store.db").exists());
}

#[test]
fn lease_verbs_say_which_store_and_warn_when_it_is_the_implicit_default() {
    let env = Env::new();
    let here = env.dir.path().canonicalize().unwrap().join("fencing.db");
    let warned = |out: &common::Out| {
        out.stderr
            .contains("warning: no --url, --url-file, $FENCING_URL or $FENCING_URL_FILE")
            && out
                .stderr
                .contains(&format!("FENCING_URL=sqlite:{}", here.display()))
            && out.stderr.lines().count() == 1
    };
    let mut c = bare(env.dir.path());
    c.args(["acquire", "s", "--ttl", "30s"]);
    let out = run(c, None);
    assert_eq!((out.code, out.text().as_str()), (0, "1\n"), "{out:?}");
    assert!(warned(&out), "{out:?}");
    let mut c = bare(env.dir.path());
    c.args(["release", "s", "--token", "1"]);
    assert!(warned(&run(c, None)));
    let mut c = bare(env.dir.path());
    c.args(["run", "s", "--ttl", "30s", "--", "true"]);
    let out = run(c, None);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(warned(&out), "{out:?}");
    // The read verbs stay quiet; so does a named store off a terminal.
    let mut c = bare(env.dir.path());
    c.args(["status", "s"]);
    assert_eq!(run(c, None).stderr, "");
    let mut c = bare(env.dir.path());
    c.env("FENCING_URL", "sqlite:other.db")
        .args(["acquire", "s", "--ttl", "30s"]);
    let out = run(c, None);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out:?}");
}

#[test]
fn migrate_makes_the_file_and_is_idempotent() {
    let env = Env::new();
    for _ in 0..2 {
        let out = env.run(["migrate"]);
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(out.text(), format!("schema ready: {}\n", env.url));
    }
    assert!(env.path("store.db").exists());
    let out = env.run(["--json", "migrate"]);
    assert_eq!(out.json()["migrated"], true);
    // A file fencing did not make is refused, as open refuses it.
    std::fs::write(
        env.path("other.db"),
        b"not a database at all, not even close",
    )
    .unwrap();
    let mut c = bare(env.dir.path());
    c.args(["--url", "sqlite:other.db", "migrate"]);
    run(c, None).fails_with("BACKEND", 19);
}

/// One HTTP/1.1 request to the server at `addr`; the whole answer.
fn http(addr: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    // Bounded: a server that never answers fails the test instead of hanging it.
    conn.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    conn.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn metrics_serve_answers_scrapes_on_the_address_it_prints() {
    use std::io::BufRead;
    let env = Env::new();
    let mut child = env
        .cmd(["metrics", "--serve", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Killed even when an assertion fails, so no server outlives the test.
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stderr = child.stderr.take().unwrap();
    let child = Kill(child);
    let mut first = String::new();
    std::io::BufReader::new(stderr)
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.strip_suffix("/metrics\n"))
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_owned();

    let ok = http(&addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    let (head, body) = ok.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
        "{head}"
    );
    assert!(
        head.contains(&format!("\r\nContent-Length: {}\r\n", body.len())),
        "{head}"
    );
    let label = format!("{{store=\"{}\"}}", env.url);
    assert!(
        body.contains(&format!("\nfencing_writes_accepted_total{label} 0\n")),
        "{body}"
    );

    let missing = http(&addr, "GET /other HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(
        missing.starts_with("HTTP/1.1 404 Not Found\r\n"),
        "{missing}"
    );
    let post = http(&addr, "POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(
        post.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{post}"
    );
    drop(child);
}

/// `fencing apply`: a batch from stdin or --file, all or nothing; a stale
/// token, a failing op and a malformed document change nothing.
#[test]
fn apply_writes_a_batch_all_or_nothing() {
    let env = Env::new();
    env.run(["next-token", "s"]);
    env.run(["next-token", "s"]);
    let ops =
        br#"[{"put": "a", "value": "one"}, {"put": "b", "value": "two", "expected_version": "0"}]"#;
    let out = env.run_stdin(["apply", "s", "--token", "2"], ops);
    assert_eq!(
        (out.code, out.text().as_str()),
        (0, "version=1 token=2\nversion=1 token=2\n"),
        "{out:?}"
    );
    std::fs::write(
        env.path("ops.json"),
        br#"[{"delete": "a"}, {"put": "b", "value": "2"}]"#,
    )
    .unwrap();
    let file = env.path("ops.json");
    let out = env.run([
        "--json",
        "apply",
        "s",
        "-t",
        "2",
        "--file",
        file.to_str().unwrap(),
    ]);
    assert_eq!(
        out.json(),
        json!({ "receipts": [ { "version": "0", "token": "2" }, { "version": "2", "token": "2" } ] }),
        "{out:?}"
    );
    let again = br#"[{"delete": "b"}, {"put": "b", "value": "2"}]"#;
    let out = env.run_stdin(["apply", "s", "-t", "2"], again);
    assert_eq!(
        (out.code, out.text().as_str()),
        (0, "deleted\nversion=1 token=2\n"),
        "{out:?}"
    );

    // A later op that fails undoes the earlier ones; a stale token writes nothing.
    let failing = br#"[{"put": "c", "value": "3"}, {"delete": "missing"}]"#;
    env.run_stdin(["apply", "s", "-t", "2"], failing)
        .fails_with("NOT_FOUND", 13);
    let stale = br#"[{"put": "c", "value": "3"}]"#;
    env.run_stdin(["apply", "s", "-t", "1"], stale)
        .fails_with("STALE_TOKEN", 10);
    let conflict =
        br#"[{"put": "c", "value": "3"}, {"put": "b", "value": "x", "expected_version": "5"}]"#;
    env.run_stdin(["apply", "s", "-t", "2"], conflict)
        .fails_with("VERSION_MISMATCH", 12);
    for bad in [
        &b"not json"[..],
        br#"{"put": "c", "value": "3"}"#,
        br#"[]"#,
        br#"[{"put": "c"}]"#,
        br#"[{"put": "c", "value": 3}]"#,
        br#"[{"put": "c", "value": "3", "delete": "b"}]"#,
        br#"[{"put": "c", "value": "3", "extra": true}]"#,
        br#"[{"put": "c", "value": "3", "expected_version": 1}]"#,
        br#"[{"put": "c", "value": "3", "expected_version": "-1"}]"#,
        br#"[17]"#,
    ] {
        let out = env.run_stdin(["apply", "s", "-t", "3"], bad);
        out.fails_with("INVALID_ARGUMENT", 17);
    }
    // Nothing above changed the scope: still fence 2, only b.
    let status = env.status("s");
    assert_eq!(status["fence"], "2", "{status}");
    assert_eq!(status["entries"], "1", "{status}");
    assert_eq!(env.run(["get", "s", "b"]).text(), "2");
}
