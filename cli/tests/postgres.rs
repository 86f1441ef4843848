//! The demo and a paused `fencing run` on `postgres://` (a fresh schema
//! each). Needs a server: run under `scripts/pg-cluster run -- ...` (the
//! test command and CI do; with FENCING_REQUIRE_PG=1 a missing server fails).

mod common;

use std::process::Stdio;

use common::{bare, finish, run, wait_until, Reaper, LIMIT};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

fn pg_url(tag: &str) -> Option<String> {
    let base = fencing_scenarios::postgres_test_url()?;
    Some(format!(
        "{base}?schema={}",
        fencing_scenarios::fresh_schema(tag)
    ))
}

#[test]
fn demo_on_postgres_with_and_without_fencing() {
    let Some(url) = pg_url("cli_demo") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut c = bare(dir.path());
    c.args(["--url", &url, "demo"]);
    let out = run(c, None);
    assert_eq!(out.code, 0, "{out:?}\n{}", out.text());
    assert!(out
        .text()
        .contains("worker A       1  wrote the report: REJECTED, STALE_TOKEN (fence is at 2)"));
    assert!(out.text().contains("OUTCOME: the fence held."));

    let mut c = bare(dir.path());
    c.args(["--url", &url, "demo", "--without-fencing"]);
    let out = run(c, None);
    assert_eq!(out.code, 3, "{out:?}\n{}", out.text());
    assert!(out.text().contains("OUTCOME: the report was lost."));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_paused_run_on_postgres_loses_its_lease() {
    let Some(url) = pg_url("cli_run") else { return };
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let script = "echo $$ > child.pid; exec sleep 300";
    let child = bare(dir.path())
        .args([
            "--url", &url, "run", "job", "--ttl", "1s", "--", "sh", "-c", script,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let fencing = child.id() as i32;
    let _reaper = Reaper(vec![fencing]);
    wait_until("the command started", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n'))
    });
    kill(Pid::from_raw(fencing), Signal::SIGSTOP).unwrap();
    wait_until("the lease expired on the server's clock", || {
        let mut c = bare(dir.path());
        c.args(["--url", &url, "--json", "status", "job"]);
        run(c, None).json()["lease"].is_null()
    });
    kill(Pid::from_raw(fencing), Signal::SIGCONT).unwrap();
    let out = finish(child, LIMIT);
    assert_eq!(out.code, 15, "{out:?}");
    assert!(out.stderr.contains("fencing: LEASE_LOST: "), "{out:?}");

    let mut c = bare(dir.path());
    c.args([
        "--url",
        &url,
        "run",
        "job",
        "--ttl",
        "5s",
        "--",
        "sh",
        "-c",
        "echo $FENCING_TOKEN",
    ]);
    assert_eq!(run(c, None).text(), "2\n");
}

/// `fencing migrate` makes the schema, and nothing else: psql's
/// `fencing.check` works on it before any store opened it.
#[test]
fn migrate_makes_a_schema_that_check_can_use_before_any_store() {
    let Some(base) = fencing_scenarios::postgres_test_url() else {
        return;
    };
    let schema = fencing_scenarios::fresh_schema("cli_migrate");
    let url = format!("{base}?schema={schema}");
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let mut c = bare(dir.path());
        c.args(["--url", &url, "migrate"]);
        let out = run(c, None);
        assert_eq!(out.code, 0, "{out:?}");
        assert!(out.text().starts_with("schema ready: "), "{out:?}");
    }
    let check = |token: u64| {
        std::process::Command::new("psql")
            .args([&base, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c"])
            .arg(format!("SELECT \"{schema}\".check('s', {token})"))
            .output()
            .unwrap()
    };
    let ok = check(2);
    assert!(ok.status.success(), "{ok:?}");
    let stale = check(1);
    assert!(!stale.status.success());
    assert!(
        String::from_utf8_lossy(&stale.stderr).contains("STALE_TOKEN"),
        "{stale:?}"
    );
}

/// `fencing migrate --worker-timeouts ROLE` sets the time limits of
/// docs/postgres.md, "Lock waits", on the role: its new sessions have them.
#[test]
fn migrate_sets_the_worker_timeouts_when_asked() {
    let Some(base) = fencing_scenarios::postgres_test_url() else {
        return;
    };
    let schema = fencing_scenarios::fresh_schema("cli_workers");
    let role = format!("{schema}_worker");
    let psql = |sql: &str| {
        let out = std::process::Command::new("psql")
            .args([
                &base,
                "-X",
                "-q",
                "-t",
                "-A",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    psql(&format!("CREATE ROLE {role} LOGIN"));
    let url = format!("{base}?schema={schema}");
    let dir = tempfile::tempdir().unwrap();
    let mut c = bare(dir.path());
    c.args([
        "--url",
        &url,
        "--json",
        "migrate",
        "--worker-timeouts",
        &role,
    ]);
    let out = run(c, None);
    assert_eq!(out.code, 0, "{out:?}");
    let json: serde_json::Value = serde_json::from_str(&out.text()).unwrap();
    assert_eq!(
        json["worker_timeouts"],
        serde_json::json!([{
            "role": role,
            "idle_in_transaction_session_timeout_ms": 10000,
            "lock_timeout_ms": 4000,
        }])
    );
    let settings = psql(&format!(
        "SELECT array_to_string(setconfig, ',') FROM pg_db_role_setting s \
         JOIN pg_roles r ON r.oid = s.setrole WHERE r.rolname = '{role}'"
    ));
    assert_eq!(
        settings,
        "idle_in_transaction_session_timeout=10000ms,lock_timeout=4000ms"
    );
    // Not a PostgreSQL store: refused, nothing else done.
    let mut c = bare(dir.path());
    c.args(["--url", "memory:", "migrate", "--worker-timeouts", &role]);
    let out = run(c, None);
    assert_ne!(out.code, 0, "{out:?}");
    psql(&format!("DROP ROLE {role}"));
}

/// `fencing lower-wedged SCOPE --to BOUND`: the owner's recovery of a
/// scope whose fence an old check pushed to the largest token.
#[test]
fn lower_wedged_recovers_a_wedged_scope_as_the_owner() {
    let Some(base) = fencing_scenarios::postgres_test_url() else {
        return;
    };
    let schema = fencing_scenarios::fresh_schema("cli_wedge");
    let url = format!("{base}?schema={schema}");
    let dir = tempfile::tempdir().unwrap();
    let fencing = |args: &[&str]| {
        let mut c = bare(dir.path());
        c.args(["--url", &url]).args(args);
        run(c, None)
    };
    assert_eq!(fencing(&["next-token", "victim:1"]).code, 0);
    // Not wedged: refused.
    let out = fencing(&["lower-wedged", "victim:1", "--to", "5"]);
    assert_ne!(out.code, 0, "{out:?}");
    let wedge = std::process::Command::new("psql")
        .args([&base, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c"])
        .arg(format!(
            "UPDATE \"{schema}\".scopes SET fence = 9223372036854775807 WHERE scope = 'victim:1'"
        ))
        .output()
        .unwrap();
    assert!(wedge.status.success(), "{wedge:?}");
    let out = fencing(&["--json", "lower-wedged", "victim:1", "--to", "5"]);
    assert_eq!(out.code, 0, "{out:?}");
    let json: serde_json::Value = serde_json::from_str(&out.text()).unwrap();
    assert_eq!(json["lowered_to"], "5");
    assert_eq!(fencing(&["next-token", "victim:1"]).text(), "6\n");
}

/// `fencing health` of a schema no fencing made yet is refused, and makes
/// none (an open would have created it); after `fencing migrate`, ok.
#[test]
fn health_on_postgres_refuses_a_schema_never_migrated() {
    let Some(url) = pg_url("cli_health") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let health = || {
        let mut c = bare(dir.path());
        c.args(["health", &url]);
        run(c, None)
    };
    let out = health();
    out.fails_with("BACKEND", 19);
    assert!(out.stderr.contains("fencing migrate"), "{out:?}");
    assert!(health().stderr.contains("no fencing tables"), "still none");
    let mut c = bare(dir.path());
    c.args(["--url", &url, "migrate"]);
    assert_eq!(run(c, None).code, 0);
    let out = health();
    assert_eq!((out.code, out.text().as_str()), (0, "ok\n"), "{out:?}");
}
