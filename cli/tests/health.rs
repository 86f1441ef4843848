//! `fencing health`, `fencing completions` and `fencing man`.

mod common;

use std::path::Path;
use std::process::Command;

use common::{bare, run, Env};

fn user_version(path: &Path) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn health_says_ok_for_a_current_store() {
    let env = Env::new();
    env.run(["migrate"]);
    let out = env.run(["health"]);
    assert_eq!((out.code, out.text().as_str()), (0, "ok\n"), "{out:?}");
    let out = env.run(["--json", "health"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["ok"], true);
    // The store as an argument instead of --url.
    let mut c = bare(env.dir.path());
    c.args(["health", &env.url]);
    let out = run(c, None);
    assert_eq!((out.code, out.text().as_str()), (0, "ok\n"), "{out:?}");
    let mut c = bare(env.dir.path());
    c.args(["health", "memory:"]);
    assert_eq!(run(c, None).code, 0);
    // STORE is the store: the environment's URL is not read at all.
    let mut c = bare(env.dir.path());
    c.args(["health", &env.url])
        .env("FENCING_URL", "memory:")
        .env("FENCING_URL_FILE", env.path("missing"));
    let out = run(c, None);
    assert_eq!((out.code, out.text().as_str()), (0, "ok\n"), "{out:?}");
}

/// A file of the development builds' schema (4): health refuses it, names
/// the way out, and leaves it as it was (opening it would migrate it).
#[test]
fn health_refuses_an_old_schema_and_changes_nothing() {
    let env = Env::new();
    let path = env.path("store.db");
    let dump =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/data/sqlite-schema-v4.sql");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&std::fs::read_to_string(dump).unwrap())
        .unwrap();
    let out = env.run(["health"]);
    out.fails_with("BACKEND", 19);
    assert!(out.stderr.contains("fencing migrate"), "{out:?}");
    assert!(out.text().is_empty(), "{out:?}");
    let out = env.run(["--json", "health"]);
    assert_eq!(out.code, 19, "{out:?}");
    assert_eq!(out.json()["error"]["code"], "BACKEND");
    assert_eq!(out.json()["error"]["kind"], "refused");
    assert_eq!(user_version(&path), 4);

    env.run(["migrate"]);
    assert_eq!(env.run(["health"]).code, 0);
}

#[test]
fn health_of_a_missing_file_creates_none() {
    let env = Env::new();
    env.run(["health"]).fails_with("BACKEND", 19);
    assert!(!env.path("store.db").exists());
}

#[test]
fn health_of_an_unreachable_postgres_is_backend() {
    let env = Env::new();
    let mut c = bare(env.dir.path());
    c.args(["health", "postgres://127.0.0.1:1/x?connect_timeout=1"]);
    let out = run(c, None);
    out.fails_with("BACKEND", 19);
    assert!(
        out.stderr.contains("unreachable") || out.stderr.contains("connect"),
        "{out:?}"
    );
}

#[test]
fn health_refuses_a_bad_url_or_two_stores() {
    let env = Env::new();
    let mut c = bare(env.dir.path());
    c.args(["health", "nosuch:x"]);
    run(c, None).fails_with("INVALID_ARGUMENT", 17);
    // --url and STORE: which one was meant?
    env.run(["health", "memory:"])
        .fails_with("INVALID_ARGUMENT", 17);
}

fn subcommands() -> Vec<String> {
    use std::io::Read;
    let out = Command::new(common::BIN).arg("--help").output().unwrap();
    let mut help = String::new();
    out.stdout.as_slice().read_to_string(&mut help).unwrap();
    // The lines under "Commands:" name one subcommand each.
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|name| name != "help")
        .collect()
}

#[test]
fn completions_are_valid_bash_with_every_subcommand() {
    let names = subcommands();
    assert!(names.contains(&"health".to_owned()), "{names:?}");
    let env = Env::new();
    let mut c = bare(env.dir.path());
    c.args(["completions", "bash"]);
    let out = run(c, None);
    assert_eq!(out.code, 0, "{out:?}");
    let script = out.text();
    for name in &names {
        assert!(script.contains(name.as_str()), "{name} missing");
    }
    let path = env.path("fencing.bash");
    std::fs::write(&path, &script).unwrap();
    let check = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(check.status.success(), "{check:?}");
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let mut c = bare(env.dir.path());
        c.args(["completions", shell]);
        let out = run(c, None);
        assert_eq!(out.code, 0, "{shell}: {out:?}");
        assert!(out.text().contains("health"), "{shell}");
    }
    let mut c = bare(env.dir.path());
    c.args(["completions", "tcsh"]);
    assert_eq!(run(c, None).code, 2);
}

#[test]
fn the_man_page_renders_and_documents_every_subcommand() {
    let env = Env::new();
    let mut c = bare(env.dir.path());
    c.arg("man");
    let out = run(c, None);
    assert_eq!(out.code, 0, "{out:?}");
    let roff = env.path("fencing.1");
    std::fs::write(&roff, &out.stdout).unwrap();
    let Ok(rendered) = Command::new("groff")
        // Plain text: no escape sequences, no overstriking (grotty -cbou).
        .args(["-man", "-Tutf8", "-ww", "-P-cbou"])
        .arg(&roff)
        .output()
    else {
        eprintln!("skipped rendering: no groff");
        return;
    };
    assert!(rendered.status.success(), "{rendered:?}");
    assert!(
        rendered.stderr.is_empty(),
        "groff warned: {}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let text = String::from_utf8_lossy(&rendered.stdout);
    for name in subcommands() {
        let heading = format!("FENCING {}", name.to_uppercase());
        assert!(
            text.contains(&heading),
            "{heading} missing from the man page"
        );
    }
    assert!(text.contains("EXIT STATUS"));
}
