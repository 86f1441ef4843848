//! `fencing run`: the lease held while a real command runs, and lost when the
//! CLI itself is paused (SIGSTOP from the test) past the TTL.

mod common;

use std::process::Stdio;

use common::{finish, is_gone, wait_until, Env, Reaper, LIMIT};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

fn read_number(env: &Env, file: &str) -> Option<i64> {
    std::fs::read_to_string(env.path(file))
        .ok()
        .filter(|s| s.ends_with('\n'))
        .and_then(|s| s.trim().parse().ok())
}

/// Pauses the `fencing run` process until the store no longer counts its
/// lease as live, then resumes it.
fn pause_past_the_lease(env: &Env, fencing: i32, scope: &str) {
    kill(Pid::from_raw(fencing), Signal::SIGSTOP).unwrap();
    wait_until("the paused holder's lease expired", || {
        env.status(scope)["lease"].is_null()
    });
    kill(Pid::from_raw(fencing), Signal::SIGCONT).unwrap();
}

/// `fencing run ARGS` started, its output piped, once CMD's script has
/// written `ready` (its last file: `child.pid`, CMD's pid, before it);
/// with a reaper for both, which the test may give more pids.
fn started(env: &Env, args: &[&str], ready: &str) -> (std::process::Child, Reaper) {
    let child = env
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reaper = Reaper(vec![child.id() as i32]);
    wait_until("the command started", || read_number(env, ready).is_some());
    reaper.0.push(read_number(env, "child.pid").unwrap() as i32);
    (child, reaper)
}

/// `fencing run job --ttl TTL --grace 30s` holding while its command, a
/// long sleep, runs: started, with the command's pid and the token it was
/// given.
fn holding(env: &Env, ttl: &str) -> (std::process::Child, Reaper, i32, i64) {
    let script = "echo $$ > child.pid; echo \"$FENCING_TOKEN\" > token; exec sleep 300";
    let args = [
        "run", "job", "--ttl", ttl, "--grace", "30s", "--", "sh", "-c", script,
    ];
    let (child, reaper) = started(env, &args, "token");
    let cmd_pid = read_number(env, "child.pid").unwrap() as i32;
    let token = read_number(env, "token").unwrap();
    (child, reaper, cmd_pid, token)
}

#[test]
fn a_paused_cli_loses_its_lease_stops_the_command_and_a_new_run_gets_a_newer_token() {
    let env = Env::new();
    let (child, _reaper, cmd_pid, first) = holding(&env, "1s");
    let fencing = child.id() as i32;

    pause_past_the_lease(&env, fencing, "job");
    let out = finish(child, LIMIT);

    assert_eq!(out.code, 15, "{out:?}");
    assert!(out.stderr.contains("fencing: LEASE_LOST: "), "{out:?}");
    assert!(out.stderr.contains("sending SIGTERM"), "{out:?}");
    assert!(out.stderr.contains("killed by SIGTERM"), "{out:?}");
    assert!(!out.stderr.contains("SIGKILL"), "{out:?}");
    assert!(is_gone(cmd_pid), "the command still runs");

    let again = env.run([
        "run",
        "job",
        "--ttl",
        "5s",
        "--",
        "sh",
        "-c",
        "echo $FENCING_TOKEN",
    ]);
    assert_eq!(again.code, 0, "{again:?}");
    let second: i64 = again.text().trim().parse().unwrap();
    assert!(second > first, "{second} after {first}");
    // The old token is fenced off for good.
    let stale = env.run([
        "put",
        "job",
        "k",
        "--value",
        "x",
        "--token",
        &first.to_string(),
    ]);
    stale.fails_with("STALE_TOKEN", 10);
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_after_the_grace_with_its_children() {
    let env = Env::new();
    // The shell ignores SIGTERM (and so does its background child).
    let script = "trap '' TERM; sleep 300 & echo $! > sleep.pid; echo $$ > child.pid; wait";
    let args = [
        "run", "job", "--ttl", "1s", "--grace", "200ms", "--", "sh", "-c", script,
    ];
    let (child, mut reaper) = started(&env, &args, "child.pid");
    let fencing = child.id() as i32;
    let sh = read_number(&env, "child.pid").unwrap() as i32;
    let sleeper = read_number(&env, "sleep.pid").unwrap() as i32;
    reaper.0.push(sleeper);

    pause_past_the_lease(&env, fencing, "job");
    let out = finish(child, LIMIT);

    assert_eq!(out.code, 15, "{out:?}");
    assert!(out.stderr.contains("sending SIGKILL"), "{out:?}");
    assert!(out.stderr.contains("killed by SIGKILL"), "{out:?}");
    assert!(is_gone(sh), "the shell still runs");
    wait_until("the process group's other member is gone", || {
        is_gone(sleeper)
    });
}

#[test]
fn the_command_gets_the_lease_in_its_environment_and_its_status_is_passed_on() {
    let env = Env::new();
    let script = "echo \"$FENCING_SCOPE $FENCING_TOKEN $FENCING_HOLDER $FENCING_URL\"; exit 7";
    let out = env.run([
        "run", "job", "--ttl", "30s", "--holder", "me", "--", "sh", "-c", script,
    ]);
    assert_eq!(out.code, 7, "{out:?}");
    assert_eq!(out.text(), format!("job 1 me {}\n", env.url));
    assert!(out.stderr.is_empty(), "{out:?}");
    // Released at the end: the next holder gets it at once.
    assert!(env.status("job")["lease"].is_null());
    assert_eq!(env.run(["acquire", "job", "--ttl", "1s"]).text(), "2\n");
}

#[test]
fn writes_inside_the_command_are_fenced_with_the_run_token() {
    let env = Env::new();
    let script = format!(
        "{} put \"$FENCING_SCOPE\" report --value 'from the run'",
        common::BIN
    );
    let out = env.run(["run", "job", "--ttl", "30s", "--", "sh", "-c", &script]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.text(), "version=1 token=1\n");
    let got = env.run(["--json", "get", "job", "report"]).json();
    assert_eq!(got["value"], "from the run");
    assert_eq!(got["token"], "1");
}

#[test]
fn signal_deaths_and_spawn_failures_map_like_a_shell() {
    let env = Env::new();
    let out = env.run([
        "run",
        "job",
        "--ttl",
        "30s",
        "--",
        "sh",
        "-c",
        "kill -TERM $$",
    ]);
    assert_eq!(out.code, 143, "{out:?}");
    let out = env.run([
        "run",
        "job",
        "--ttl",
        "30s",
        "--",
        "sh",
        "-c",
        "kill -KILL $$",
    ]);
    assert_eq!(out.code, 137, "{out:?}");
    let missing = env.path("no-such-command");
    let out = env.run([
        "run".as_ref(),
        "job".as_ref(),
        "--ttl".as_ref(),
        "30s".as_ref(),
        "--".as_ref(),
        missing.as_os_str(),
    ]);
    assert_eq!(out.code, 127, "{out:?}");
    assert!(out.stderr.starts_with("fencing: cannot run"), "{out:?}");
    let not_exec = env.path("not-executable");
    std::fs::write(&not_exec, "#!/bin/sh\n").unwrap();
    let out = env.run([
        "run".as_ref(),
        "job".as_ref(),
        "--ttl".as_ref(),
        "30s".as_ref(),
        "--".as_ref(),
        not_exec.as_os_str(),
    ]);
    assert_eq!(out.code, 126, "{out:?}");
    // Every run released its lease: four runs, four tokens, no lease left.
    let status = env.status("job");
    assert_eq!(status["counter"], "4");
    assert!(status["lease"].is_null());
}

#[test]
fn sigterm_to_fencing_reaches_the_command_and_the_lease_is_released() {
    let env = Env::new();
    let script = "echo $$ > child.pid; exec sleep 300";
    let args = ["run", "job", "--ttl", "30s", "--", "sh", "-c", script];
    let (child, _reaper) = started(&env, &args, "child.pid");
    let fencing = child.id() as i32;
    kill(Pid::from_raw(fencing), Signal::SIGTERM).unwrap();
    let out = finish(child, LIMIT);
    assert_eq!(out.code, 143, "{out:?}");
    assert!(env.status("job")["lease"].is_null());
}

#[test]
fn a_held_lease_stops_the_run_before_the_command_starts() {
    let env = Env::new();
    assert_eq!(
        env.run(["acquire", "job", "--ttl", "60s", "--holder", "other"])
            .code,
        0
    );
    let marker = env.path("ran");
    let script = format!("touch {}", marker.display());
    let out = env.run(["run", "job", "--ttl", "30s", "--", "sh", "-c", &script]);
    out.fails_with("LEASE_HELD", 14);
    assert!(out.stderr.contains("\"other\""), "{out:?}");
    let out = env.run([
        "run", "job", "--ttl", "30s", "--wait", "200ms", "--", "sh", "-c", &script,
    ]);
    out.fails_with("TIMEOUT", 18);
    assert!(!marker.exists(), "the command ran without the lease");
}

#[test]
fn run_waits_for_a_lease_that_expires() {
    let env = Env::new();
    assert_eq!(env.run(["acquire", "job", "--ttl", "300ms"]).code, 0);
    let out = env.run([
        "run",
        "job",
        "--ttl",
        "30s",
        "--wait",
        "30s",
        "--",
        "sh",
        "-c",
        "echo $FENCING_TOKEN",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.text(), "2\n");
    // Not on a terminal: no progress line.
    assert!(out.stderr.is_empty(), "{out:?}");
}

#[test]
fn run_rejects_bad_arguments_before_acquiring() {
    let env = Env::new();
    let out = env.run(["run", "", "--ttl", "30s", "--", "true"]);
    out.fails_with("INVALID_ARGUMENT", 17);
    let out = env.run(["run", "job", "--ttl", "0s", "--", "true"]);
    out.fails_with("INVALID_ARGUMENT", 17);
    // A missing command or TTL is a usage error.
    assert_eq!(env.run(["run", "job", "--ttl", "30s"]).code, 2);
    assert_eq!(env.run(["run", "job", "--", "true"]).code, 2);
    assert_eq!(env.status("job")["counter"], "0");
}

#[test]
fn a_loss_found_only_at_release_ends_the_run_with_lease_lost() {
    // The command ends its own lease and another holder takes the scope
    // before any renewal ran: only the release at the end can see it
    // (docs/semantics.md, "Ending a held lease").
    let env = Env::new();
    let script = format!(
        "{bin} release \"$FENCING_SCOPE\" --token \"$FENCING_TOKEN\" >/dev/null && \
         {bin} acquire \"$FENCING_SCOPE\" --ttl 60s --holder other >/dev/null",
        bin = common::BIN
    );
    let out = env.run(["run", "job", "--ttl", "60s", "--", "sh", "-c", &script]);
    assert_eq!(out.code, 15, "{out:?} (15: LEASE_LOST)");
    assert!(out.stderr.contains("LEASE_LOST"), "{out:?}");
    // The other holder's lease is untouched.
    assert_eq!(env.status("job")["lease"]["holder"], "other");
}

/// The store's file deleted under a running holder (issue: it kept renewing
/// the deleted file, exited 0 "held through the work", and the next acquire
/// got token 1 again): its renewals fail, the lease is lost within the TTL,
/// the command is stopped and fencing exits 15; the next holder's token is
/// newer.
#[test]
fn a_holder_whose_store_file_is_deleted_stops_its_command_and_exits_15() {
    let env = Env::new();
    let (child, _reaper, cmd_pid, first) = holding(&env, "3s");

    for file in ["store.db", "store.db-wal", "store.db-shm"] {
        let _ = std::fs::remove_file(env.path(file));
    }
    let out = finish(child, LIMIT);

    assert_eq!(out.code, 15, "{out:?}");
    assert!(out.stderr.contains("fencing: LEASE_LOST: "), "{out:?}");
    assert!(out.stderr.contains("killed by SIGTERM"), "{out:?}");
    assert!(is_gone(cmd_pid), "the command still runs");

    let again = env.run(["acquire", "job", "--ttl", "5s"]);
    assert_eq!(again.code, 0, "{again:?}");
    let second: i64 = again.text().trim().parse().unwrap();
    assert!(second > first, "token {second} again after {first}");
}

/// stderr a closed pipe (its reader gone) when the lease is lost: writing
/// the report must not kill fencing (SIGPIPE) before CMD is stopped, which
/// would leave CMD running without the lease.
#[test]
fn a_lost_lease_stops_the_command_even_when_stderr_is_a_closed_pipe() {
    let env = Env::new();
    let script = "echo $$ > child.pid; exec sleep 300";
    let args = [
        "run", "job", "--ttl", "1s", "--grace", "30s", "--", "sh", "-c", script,
    ];
    let (mut child, _reaper) = started(&env, &args, "child.pid");
    let fencing = child.id() as i32;
    let cmd_pid = read_number(&env, "child.pid").unwrap() as i32;
    // The read ends of fencing's stdout and stderr, closed.
    drop(child.stdout.take());
    drop(child.stderr.take());

    pause_past_the_lease(&env, fencing, "job");
    let out = finish(child, LIMIT);

    assert_eq!(out.code, 15, "{out:?}");
    wait_until("the command is gone", || is_gone(cmd_pid));
}

/// Linux only: it reads CMD's ignored signals from /proc.
#[cfg(target_os = "linux")]
#[test]
fn the_command_starts_with_sigpipe_at_its_default_action() {
    // fencing ignores SIGPIPE while it supervises; an ignored signal would
    // stay ignored across exec. SigIgn is a hex mask: SIGPIPE (13) is 0x1000.
    let env = Env::new();
    let out = env.run([
        "run",
        "job",
        "--ttl",
        "30s",
        "--",
        "grep",
        "SigIgn",
        "/proc/self/status",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let mask = out.text();
    let mask = u64::from_str_radix(mask.trim().trim_start_matches("SigIgn:").trim(), 16).unwrap();
    assert_eq!(
        mask & (1 << 12),
        0,
        "SIGPIPE ignored in the command: {out:?}"
    );
}

/// With --foreground, the terminal sends SIGINT and SIGQUIT to CMD itself:
/// fencing must outlive them, release the lease when CMD ends and exit with
/// CMD's status (it used to die at once, leaving the lease held).
#[test]
fn sigint_to_a_foreground_run_leaves_fencing_supervising_until_the_command_ends() {
    let env = Env::new();
    let script = "trap 'echo int >> got.int' INT; echo $$ > child.pid; \
                  while [ ! -e stop ]; do sleep 0.05; done; exit 3";
    let args = [
        "run",
        "job",
        "--ttl",
        "30s",
        "--foreground",
        "--",
        "sh",
        "-c",
        script,
    ];
    let (child, _reaper) = started(&env, &args, "child.pid");
    let fencing = child.id() as i32;
    for sig in [Signal::SIGINT, Signal::SIGQUIT] {
        kill(Pid::from_raw(fencing), sig).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!is_gone(fencing), "fencing died of SIGINT or SIGQUIT");
    assert!(
        !env.status("job")["lease"].is_null(),
        "the lease is not held"
    );
    std::fs::write(env.path("stop"), "").unwrap();
    let out = finish(child, LIMIT);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        env.status("job")["lease"].is_null(),
        "the lease is still held"
    );
}

/// A waiter stopped by a signal leaves the line at once (docs/semantics.md,
/// "Waiting": "left ... at once"): the waiter behind it gets the lease as
/// soon as the holder releases it, not after the dead place ran out (the
/// stopped waiter's TTL, two minutes here).
#[test]
fn sigterm_to_a_waiting_run_leaves_its_place_in_line() {
    let env = Env::new();
    let held = env.run(["acquire", "job", "--ttl", "120s", "--holder", "holder"]);
    assert_eq!(held.code, 0, "{held:?}");
    let token = held.text().trim().to_owned();
    let waiter = |wait: &str| {
        env.cmd([
            "run", "job", "--ttl", "120s", "--wait", wait, "--", "sh", "-c", "echo ran",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
    };
    let first = waiter("120s");
    let mut reaper = Reaper(vec![first.id() as i32]);
    // Its place first, then the second waiter's behind it.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let second = waiter("30s");
    reaper.0.push(second.id() as i32);
    std::thread::sleep(std::time::Duration::from_secs(1));

    kill(Pid::from_raw(first.id() as i32), Signal::SIGTERM).unwrap();
    let out = finish(first, LIMIT);
    assert_eq!(out.code, 143, "{out:?}");
    assert!(!out.stdout.starts_with(b"ran"), "{out:?}");

    let released = std::time::Instant::now();
    let out = env.run(["release", "job", "--token", &token]);
    assert_eq!(out.code, 0, "{out:?}");
    let out = finish(second, LIMIT);
    assert_eq!(out.code, 0, "{out:?} (18: it queued behind the dead place)");
    assert_eq!(out.text(), "ran\n");
    assert!(
        released.elapsed() < std::time::Duration::from_secs(10),
        "served {:?} after the release",
        released.elapsed()
    );
}
