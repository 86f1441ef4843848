//! Fencing your own SQLite tables with plain SQL (docs/sqlite.md): the
//! `fencing_check` view, driven through rusqlite directly (not through the
//! library), in the caller's own transaction. The paused-worker story and a
//! race run in real processes: children of this test binary.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fencing::{Error, ErrorCode, Fence, Store, Token};
use rusqlite::{params, Connection};

mod support;
use support::{sqlite_url, Rng};

const CHILD: &str = "FENCING_SQLITE_CHECK_CHILD";

/// A store file with the caller's own table beside fencing's.
fn setup(dir: &Path) -> PathBuf {
    let path = dir.join("app.db");
    drop(Store::open(&sqlite_url(&path)).unwrap());
    let c = user(&path);
    c.execute_batch(
        "CREATE TABLE report_state (id INTEGER PRIMARY KEY, body TEXT NOT NULL, token INTEGER NOT NULL,
                                    history TEXT NOT NULL DEFAULT '');
         INSERT INTO report_state (id, body, token) VALUES (7, 'original', 0);",
    )
    .unwrap();
    path
}

/// The caller's own connection: plain rusqlite, nothing of fencing loaded.
fn user(path: &Path) -> Connection {
    let c = Connection::open(path).unwrap();
    c.busy_timeout(Duration::from_secs(10)).unwrap();
    c
}

/// The check and the caller's UPDATE in one transaction; the UPDATE first,
/// the order a careless caller would use, so that only the rollback keeps
/// a stale write out.
fn fenced_update(c: &mut Connection, token: i64, body: &str) -> Result<(), Error> {
    let tx = c
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    tx.execute(
        "UPDATE report_state SET body = ?1, token = ?2, history = history || ',' || ?2 WHERE id = 7",
        params![body, token],
    )
    .unwrap();
    match tx.execute(
        "INSERT INTO fencing_check (scope, token) VALUES ('report:7', ?1)",
        [token],
    ) {
        Ok(_) => {
            tx.commit().unwrap();
            Ok(())
        }
        Err(e) => Err(typed(&e)), // the transaction rolls back when dropped
    }
}

fn typed(e: &rusqlite::Error) -> Error {
    Error::from_sqlite_message(&e.to_string())
        .unwrap_or_else(|| panic!("not a fencing_check rejection: {e}"))
}

fn row(path: &Path) -> (String, i64) {
    user(path)
        .query_row(
            "SELECT body, token FROM report_state WHERE id = 7",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
}

/// Runs `child` in a new process of this test binary.
fn spawn(test: &str, path: &Path, role: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{role}:{}", path.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

fn child_args() -> Option<(String, PathBuf)> {
    let v = std::env::var(CHILD).ok()?;
    let (role, path) = v.split_once(':')?;
    Some((role.to_owned(), PathBuf::from(path)))
}

/// Worker A as a process: takes the lease, says so, "pauses" until told to
/// go on (its lease expires meanwhile), then writes with its old token.
#[test]
fn paused_worker_child() {
    let Some((role, path)) = child_args() else {
        return;
    };
    assert_eq!(role, "A");
    let store = Store::open(&sqlite_url(&path)).unwrap();
    let lease = store
        .acquire("report:7", "worker-a", Duration::from_millis(200))
        .unwrap();
    println!("\nacquired {}", lease.token);
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();
    let outcome = fenced_update(&mut user(&path), lease.token.get() as i64, "by A (stale)");
    println!(
        "\noutcome {}",
        outcome.map_or_else(|e| e.code().to_string(), |()| "committed".into())
    );
}

#[test]
fn a_paused_worker_is_fenced_off_its_own_table() {
    if child_args().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = setup(dir.path());
    let mut a = spawn("paused_worker_child", &path, "A");
    let mut lines = BufReader::new(a.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok);
    let a_token: u64 = lines
        .by_ref()
        .find_map(|l| l.strip_prefix("acquired ").map(|t| t.parse().unwrap()))
        .expect("A reports its token");

    // B waits until A's lease has expired, then takes over and writes.
    let store = Store::open(&sqlite_url(&path)).unwrap();
    let b = store
        .acquire_wait(
            "report:7",
            "worker-b",
            Duration::from_secs(10),
            Duration::from_secs(10),
        )
        .unwrap();
    assert!(b.token.get() > a_token);
    fenced_update(&mut user(&path), b.token.get() as i64, "by B").unwrap();

    // A wakes up and writes with its old token: its whole transaction rolls back.
    writeln!(a.stdin.take().unwrap(), "go").unwrap();
    let outcome = lines.find_map(|l| l.strip_prefix("outcome ").map(str::to_owned));
    assert!(a.wait().unwrap().success());
    assert_eq!(outcome.as_deref(), Some("STALE_TOKEN"));
    assert_eq!(row(&path), ("by B".into(), b.token.get() as i64));
    // One state: the library sees the fence the check raised.
    assert_eq!(store.fence_of("report:7").unwrap(), b.token.get());
}

#[test]
fn the_rules_of_check_on_plain_sql() {
    if child_args().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = setup(dir.path());
    let store = Store::open(&sqlite_url(&path)).unwrap();
    let c = user(&path);
    let check = |scope: &str, token: i64, seq: Option<i64>| {
        c.execute(
            "INSERT INTO fencing_check (scope, token, seq) VALUES (?1, ?2, ?3)",
            params![scope, token, seq],
        )
        .map(drop)
        .map_err(|e| typed(&e).code())
    };
    // A fresh scope accepts any token and raises its fence; equal passes.
    assert_eq!(check("s", 40, None), Ok(()));
    assert_eq!(store.fence_of("s").unwrap(), 40);
    assert_eq!(check("s", 40, None), Ok(()));
    assert_eq!(check("s", 39, None), Err(ErrorCode::StaleToken));
    // Seq: after the last accepted seq of the same token only.
    assert_eq!(check("s", 41, Some(5)), Ok(()));
    assert_eq!(check("s", 41, Some(5)), Err(ErrorCode::SequenceOutOfOrder));
    assert_eq!(check("s", 41, Some(4)), Err(ErrorCode::SequenceOutOfOrder));
    assert_eq!(check("s", 41, Some(6)), Ok(()));
    assert_eq!(check("s", 41, None), Ok(()));
    assert_eq!(check("s", 42, Some(0)), Ok(()));
    // The library's fences hold for the check, and the other way round.
    let fifty = Fence::new(Token::new(50).unwrap());
    store.put("s", "k", b"v", &fifty).unwrap();
    assert_eq!(check("s", 49, None), Err(ErrorCode::StaleToken));
    assert_eq!(check("s", 60, None), Ok(()));
    let stale = store.put("s", "k", b"v", &fifty).unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleToken);
    // A retired scope's floor: tokens of its earlier life never pass, the
    // floor itself included (sealed); the next one does.
    store
        .delete("s", "k", &Fence::new(Token::new(60).unwrap()))
        .unwrap();
    assert!(store.retire("s").unwrap());
    assert_eq!(check("s", 60, None), Err(ErrorCode::StaleToken));
    assert_eq!(check("s", 61, None), Ok(()));
    // A strict store's sealed fence is the library's; check does not seal.
    assert_eq!(check("s", 61, None), Ok(()));
    // Nothing of a rejected check stays behind: a scope the rejected check
    // would have created does not exist.
    assert_eq!(check("never", 0, None), Err(ErrorCode::InvalidArgument));
    assert_eq!(store.status("never").unwrap().counter, 0);
    let count: i64 = c
        .query_row(
            "SELECT count(*) FROM fencing_scopes WHERE scope = 'never'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(count, 0);
}

#[test]
fn bad_input_to_check_is_invalid_argument_and_changes_nothing() {
    if child_args().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = setup(dir.path());
    let c = user(&path);
    let insert = "INSERT INTO fencing_check (scope, token, seq) VALUES (?1, ?2, ?3)";
    let long = "x".repeat(257);
    let cases: Vec<(&str, Vec<rusqlite::types::Value>)> = {
        use rusqlite::types::Value::{Blob, Integer, Null, Real, Text};
        vec![
            ("token 0", vec![Text("s".into()), Integer(0), Null]),
            ("token -1", vec![Text("s".into()), Integer(-1), Null]),
            (
                "token 2^63",
                vec![Text("s".into()), Real(9_223_372_036_854_775_808.0), Null],
            ),
            (
                "token as text",
                vec![Text("s".into()), Text("42".into()), Null],
            ),
            ("token NULL", vec![Text("s".into()), Null, Null]),
            ("token as blob", vec![Text("s".into()), Blob(vec![1]), Null]),
            ("seq -1", vec![Text("s".into()), Integer(1), Integer(-1)]),
            (
                "seq as text",
                vec![Text("s".into()), Integer(1), Text("1".into())],
            ),
            ("scope NULL", vec![Null, Integer(1), Null]),
            ("scope empty", vec![Text(String::new()), Integer(1), Null]),
            ("scope 257 bytes", vec![Text(long), Integer(1), Null]),
            (
                "scope with NUL",
                vec![Text("a\0b".into()), Integer(1), Null],
            ),
            ("scope as integer", vec![Integer(7), Integer(1), Null]),
        ]
    };
    for (what, args) in cases {
        let err = c
            .execute(insert, rusqlite::params_from_iter(args))
            .expect_err(what);
        assert_eq!(
            typed(&err).code(),
            ErrorCode::InvalidArgument,
            "{what}: {err}"
        );
        // The message names what is wrong with the value, nothing else: a
        // 0 bound as an integer is out of range, not "bind it as an integer".
        let says = match what {
            "token 0" | "token -1" => "token must be in 1..=9223372036854775807",
            "token 2^63" | "token as text" | "token NULL" | "token as blob" => {
                "token must be bound as an integer"
            }
            _ => "",
        };
        assert!(err.to_string().contains(says), "{what}: {err}");
    }
    let scopes: i64 = c
        .query_row("SELECT count(*) FROM fencing_scopes", [], |r| r.get(0))
        .unwrap();
    assert_eq!(scopes, 0, "a rejected check created a scope");
}

/// A program in another language may bind a scope's name as bytes that are
/// not UTF-8 (Latin-1, say); `fencing_check` takes it, as SQLite stores any
/// text. The failover step must still move that scope (it read every name
/// as UTF-8, and failed for good: no library write could run, and the
/// stale tokens stayed accepted through plain SQL).
#[test]
fn a_scope_named_in_bytes_that_are_not_utf8_is_stepped_too() {
    if child_args().is_some() {
        return;
    }
    use rusqlite::types::{ToSqlOutput, ValueRef};
    struct Latin1(&'static [u8]);
    impl rusqlite::ToSql for Latin1 {
        fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
            Ok(ToSqlOutput::Borrowed(ValueRef::Text(self.0)))
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = setup(dir.path());
    let c = user(&path);
    let insert = "INSERT INTO fencing_check (scope, token, seq) VALUES (?1, ?2, NULL)";
    c.execute(insert, params![Latin1(b"caf\xe9"), 7]).unwrap();
    let store = Store::open(&sqlite_url(&path)).unwrap();
    let base = store.failover().unwrap();
    assert!(base > 7);
    let stale = c
        .execute(insert, params![Latin1(b"caf\xe9"), 7])
        .expect_err("token 7 was accepted after the step");
    assert_eq!(typed(&stale).code(), ErrorCode::StaleToken, "{stale}");
    assert_eq!(store.next_token("s").unwrap().get(), base + 1);
}

/// A racing worker as a process: loops lease, then a fenced update of the
/// shared row in its own transaction, sometimes "pausing" past its TTL
/// before writing. Prints one line per transaction.
#[test]
fn racing_worker_child() {
    let Some((role, path)) = child_args() else {
        return;
    };
    let seed: u64 = role.trim_start_matches("race").parse().unwrap();
    let mut rng = Rng(seed);
    let store = Store::open(&sqlite_url(&path)).unwrap();
    let mut conn = user(&path);
    let ttl = Duration::from_millis(50);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        let Ok(lease) = store.acquire_wait("report:7", &role, ttl, Duration::from_secs(2)) else {
            continue;
        };
        if rng.below(3) == 0 {
            std::thread::sleep(ttl * 2); // paused past the lease
        }
        let token = lease.token.get() as i64;
        match fenced_update(&mut conn, token, &role) {
            Ok(()) => println!("\ncommitted {token}"),
            Err(e) => println!("\nrejected {token} {}", e.code()),
        }
        let _ = store.release("report:7", lease.token);
    }
}

#[test]
fn racing_processes_never_commit_a_stale_update() {
    if child_args().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = setup(dir.path());
    let children: Vec<_> = (1..=4)
        .map(|i| spawn("racing_worker_child", &path, &format!("race{i}")))
        .collect();
    let (mut committed, mut rejected) = (Vec::new(), 0);
    for mut child in children {
        let out = BufReader::new(child.stdout.take().unwrap());
        for line in out.lines().map_while(Result::ok) {
            if let Some(t) = line.strip_prefix("committed ") {
                committed.push(t.parse::<i64>().unwrap());
            } else if let Some(rest) = line.strip_prefix("rejected ") {
                assert!(rest.ends_with("STALE_TOKEN"), "{rest}");
                rejected += 1;
            }
        }
        assert!(child.wait().unwrap().success());
    }
    // The row's history is every committed update in commit order: the
    // tokens never go down, and no rejected transaction left a trace.
    let history: String = user(&path)
        .query_row("SELECT history FROM report_state WHERE id = 7", [], |r| {
            r.get(0)
        })
        .unwrap();
    let written: Vec<i64> = history
        .split(',')
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().unwrap())
        .collect();
    eprintln!(
        "sqlite_check race: {} committed, {rejected} stale transactions rolled back",
        written.len()
    );
    assert!(written.windows(2).all(|w| w[0] <= w[1]), "{written:?}");
    committed.sort_unstable();
    let mut sorted = written.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted, committed,
        "the row holds exactly the committed updates"
    );
    assert!(
        rejected > 0,
        "the race needs stale holders to mean anything"
    );
}
