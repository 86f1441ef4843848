//! The harness end to end: a short bounded round on a fresh SQLite file
//! passes the checker, and `torture check` fails on a history with a
//! violation. Each run bounds itself (--duration, --max-ops) and kills its
//! workers before it returns.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_torture");

#[test]
fn a_short_sqlite_round_has_no_violation() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history.jsonl");
    let out = Command::new(BIN)
        .args([
            "--workers",
            "3",
            "--scopes",
            "2",
            "--duration",
            "3s",
            "--max-ops",
            "3000",
        ])
        .arg("--url")
        .arg(format!("sqlite:{}", dir.path().join("t.db").display()))
        .arg("--history")
        .arg(&history)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let line = stdout.lines().last().unwrap();
    assert!(
        line.starts_with("torture: backend=sqlite operations="),
        "{line}"
    );
    assert!(line.contains(" violations=0 "), "{line}");
    // The churn workers retired scopes and issued tokens to them again.
    let count = |name: &str| -> u64 {
        let rest = &line[line.find(&format!(" {name}=")).unwrap() + name.len() + 2..];
        rest.split([' ', ',', ')']).next().unwrap().parse().unwrap()
    };
    assert_eq!(count("duplicates"), 0, "{line}");
    assert!(count("retires_accepted") > 0, "{line}");
    assert!(count("lives") > count("retires_accepted"), "{line}");
    // The history it checked is there, and the checker agrees when re-run.
    let again = Command::new(BIN)
        .arg("check")
        .arg(&history)
        .output()
        .unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

#[test]
fn check_fails_on_a_violating_history() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"ev":"meta","url":"sqlite:x.db","eager":true,"ttl_ms":100}"#,
            "\n",
            r#"{"ev":"invoke","p":"w1.0","n":1,"ts":10,"op":"acquire","scope":"s"}"#,
            "\n",
            r#"{"ev":"ok","p":"w1.0","n":1,"ts":11,"token":3}"#,
            "\n",
            r#"{"ev":"invoke","p":"w2.0","n":1,"ts":20,"op":"acquire","scope":"s"}"#,
            "\n",
            r#"{"ev":"ok","p":"w2.0","n":1,"ts":21,"token":3}"#,
            "\n",
        ),
    )
    .unwrap();
    let out = Command::new(BIN).arg("check").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("VIOLATION duplicate-token"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains(" violations=1 "));
}
