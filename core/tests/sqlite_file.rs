//! The file is the store (docs/sqlite.md, "The file is the store";
//! docs/semantics.md, "SQLite file identity"): a store file deleted or
//! replaced under running handles, or restored and copied while nothing
//! runs, on real files (and real processes for the race).
//!
//! - Deleted or replaced under a handle: its next write fails with `BACKEND`
//!   and commits nothing; a fresh handle on the path never issues a token
//!   again, nor accepts one fenced out before.
//! - Restored (cp over the same inode, rename of an older copy, a copy
//!   without its WAL) or copied to a new path while nothing runs: the first
//!   write steps every scope past the lost history, once, whatever the
//!   number of processes racing it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

#[cfg(unix)]
use fencing::{BackendErrorKind, ErrorCode};
use fencing::{Error, Fence, Store, Token};

mod support;
use support::sqlite_url;

const TTL: Duration = Duration::from_secs(30);

fn open(path: &Path) -> Store {
    Store::open(&sqlite_url(path)).unwrap()
}

fn fence(token: Token) -> Fence {
    Fence::new(token)
}

/// The store file's name with `suffix` added (`-wal`, `-shm`), as SQLite
/// names its logs.
fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    p.into()
}

/// The file, its -wal and its -shm, gone (on Windows only once closed).
fn unlink_all(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(suffixed(path, suffix));
    }
}

/// The file's -wal and -shm, gone.
#[cfg(unix)]
fn unlink_wal(path: &Path) {
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(suffixed(path, suffix));
    }
}

/// A consistent snapshot of a live store, as docs/sqlite.md says to take
/// one (`VACUUM INTO`, on a connection of its own).
fn snapshot(path: &Path, to: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute("VACUUM INTO ?1", [to.to_str().unwrap()])
        .unwrap();
}

#[cfg(unix)]
fn inode(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().ino()
}

/// The failure a write refused for what happened to its files must give:
/// BACKEND (refused), its message naming each of `needles`, nothing
/// committed.
#[cfg(unix)]
fn assert_refused_write(r: fencing::Result<impl std::fmt::Debug>, needles: &[&str]) {
    let e = r.expect_err("a write the handle's files no longer allow");
    assert_eq!(e.code(), ErrorCode::Backend, "{e}");
    assert_eq!(e.backend_kind(), Some(BackendErrorKind::Refused), "{e}");
    let text = e.to_string();
    for needle in needles.iter().chain(&["nothing was committed"]) {
        assert!(text.contains(needle), "{needle:?} not in {text}");
    }
}

/// The failure a handle whose file is gone must give.
#[cfg(unix)]
fn assert_moved(r: fencing::Result<impl std::fmt::Debug>, path: &Path) {
    assert_refused_write(r, &[&path.display().to_string(), "deleted or replaced"]);
}

/// The failure a handle whose `-wal` or `-shm` is gone must give, naming
/// `file` (one of the two).
#[cfg(unix)]
fn assert_log_gone(r: fencing::Result<impl std::fmt::Debug>, file: &str) {
    assert_refused_write(r, &[file, "One SQLite per process"]);
}

fn is_stale(r: fencing::Result<impl std::fmt::Debug>) -> bool {
    matches!(r, Err(Error::StaleToken { .. }))
}

#[test]
#[cfg(unix)] // On Windows an open store file cannot be deleted: see below.
fn a_deleted_file_fails_the_next_write_and_a_fresh_handle_never_reissues() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let old = open(&path);
    let lease = old.acquire("job", "holder", TTL).unwrap();
    old.put("job", "k", b"before", &fence(lease.token)).unwrap();
    let issued = old.next_token("other").unwrap();

    unlink_all(&path);

    assert_moved(old.put("job", "k", b"ghost", &fence(lease.token)), &path);
    assert_moved(old.renew("job", lease.token, TTL), &path);
    assert_moved(old.next_token("other"), &path);
    assert_moved(old.acquire("third", "holder", TTL), &path);
    // Nothing was written anywhere: no file appeared at the path.
    assert!(!path.exists(), "a write recreated the file");

    let fresh = open(&path);
    let next = fresh.acquire("job", "new", TTL).unwrap();
    assert!(next.token > lease.token, "token {} again", next.token);
    let other = fresh.next_token("other").unwrap();
    assert!(other > issued, "token {other} again");
    assert!(is_stale(fresh.put("job", "k", b"x", &fence(lease.token))));
}

/// The same, for a store far along: one that took more failover steps than
/// a file without its own sidecar takes (64). The store made anew at the
/// path must step past what the deleted one reached (its sidecar's mark),
/// not only take as many steps from nothing.
#[test]
fn a_store_made_where_one_far_along_was_deleted_steps_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let old = open(&path);
    for _ in 0..65 {
        old.failover().unwrap();
    }
    let issued = old.next_token("job").unwrap();
    old.close();
    unlink_all(&path);
    let fresh = open(&path);
    let next = fresh.next_token("job").unwrap();
    assert!(
        next > issued,
        "token {next} at or below the deleted store's {issued}"
    );
}

/// Where SQLite cannot ask whether its file moved (its Windows VFS has no
/// SQLITE_FCNTL_HAS_MOVED), it holds the file open without
/// FILE_SHARE_DELETE: the file can be neither deleted nor renamed over.
#[test]
#[cfg(windows)]
fn an_open_store_file_can_be_neither_deleted_nor_renamed_over() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let snap = dir.path().join("snap.db");
    let store = open(&path);
    let first = store.next_token("s").unwrap();
    snapshot(&path, &snap);
    assert!(std::fs::remove_file(&path).is_err(), "deleted while open");
    assert!(
        std::fs::rename(&snap, &path).is_err(),
        "renamed over while open"
    );
    assert!(store.next_token("s").unwrap() > first);
}

#[test]
#[cfg(unix)] // On Windows an open store file cannot be renamed over: see above.
fn a_snapshot_renamed_over_the_file_fails_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let snap = dir.path().join("snap.db");
    let old = open(&path);
    let first = old.acquire("job", "a", Duration::from_millis(1)).unwrap();
    snapshot(&path, &snap);
    std::thread::sleep(Duration::from_millis(5));
    let second = old.acquire("job", "b", TTL).unwrap();
    old.put("job", "k", b"v", &fence(second.token)).unwrap();

    std::fs::rename(&snap, &path).unwrap();

    assert_moved(old.put("job", "k", b"ghost", &fence(second.token)), &path);
    assert_moved(old.renew("job", second.token, TTL), &path);
    old.close();

    // The old file's -wal is still at the path, and SQLite reads it over the
    // renamed file (docs/sqlite.md, "Replacing the file"): the mixture is
    // refused as corrupt or stepped, and never issues a token again.
    match Store::open(&sqlite_url(&path)).and_then(|s| s.next_token("job")) {
        Err(e) => assert_eq!(e.code(), ErrorCode::Backend, "{e}"),
        Ok(next) => assert!(next > second.token, "token {next} again (first {first:?})"),
    }

    // With the -wal moved away with the old file, the snapshot opens and
    // steps past everything the old file issued.
    let dir2 = tempfile::tempdir().unwrap();
    let path2 = dir2.path().join("store.db");
    let snap2 = dir2.path().join("snap.db");
    let old2 = open(&path2);
    let t = old2.next_token("job").unwrap();
    snapshot(&path2, &snap2);
    let newer = old2.next_token("job").unwrap();
    old2.put("job", "k", b"v", &fence(newer)).unwrap();
    std::fs::rename(&snap2, &path2).unwrap();
    unlink_wal(&path2);
    assert_moved(old2.next_token("job"), &path2);
    let fresh = open(&path2);
    let next = fresh.next_token("job").unwrap();
    assert!(next > newer, "token {next} again after {newer} ({t})");
    assert!(is_stale(fresh.put("job", "k", b"x", &fence(newer))));
}

/// History after a backup, then the backup back at the path by `how` while
/// nothing runs: returns the tokens issued and the token accepted after the
/// backup, and the store reopened.
fn restored(how: impl FnOnce(&Path, &Path)) -> (tempfile::TempDir, PathBuf, Token, Token) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let backup = dir.path().join("backup.db");
    {
        let store = open(&path);
        let t = store.next_token("job").unwrap();
        store.put("job", "k", b"old", &fence(t)).unwrap();
        snapshot(&path, &backup);
        let older = store.next_token("job").unwrap();
        let newer = store.next_token("job").unwrap();
        store.put("job", "k", b"new", &fence(newer)).unwrap();
        store.close();
        how(&backup, &path);
        (dir, path, older, newer)
    }
}

fn assert_stepped(path: &Path, older: Token, newer: Token) {
    let store = open(path);
    // Every token the lost history issued or accepted is refused...
    assert!(
        is_stale(store.put("job", "k", b"x", &fence(older))),
        "older"
    );
    assert!(
        is_stale(store.put("job", "k", b"x", &fence(newer))),
        "newer"
    );
    assert!(is_stale(store.claim("job", &fence(newer))), "claim");
    // ... and never issued again.
    let next = store.next_token("job").unwrap();
    assert!(next > newer, "token {next} again after {newer}");
    let fresh = store.next_token("never-seen").unwrap();
    assert!(fresh.get() > newer.get(), "new scope token {fresh}");
}

#[test]
fn a_backup_copied_over_the_same_inode_while_nothing_runs_is_stepped() {
    let (_dir, path, older, newer) = restored(|backup, path| {
        #[cfg(unix)]
        let before = inode(path);
        // cp keeps the destination's inode: only the history can tell.
        std::fs::copy(backup, path).unwrap();
        #[cfg(unix)]
        assert_eq!(inode(path), before);
    });
    assert_stepped(&path, older, newer);
}

/// A read that presents a token, the first call after a restore (no
/// library write since): against the restored file's fence it would pass
/// with the token the backup holds, which the lost history had fenced out
/// (a stale reader told it is current). It is checked after the step.
#[test]
fn a_fenced_read_first_after_a_restore_is_checked_after_the_step() {
    let (_dir, path, _older, newer) = restored(|backup, path| {
        std::fs::copy(backup, path).unwrap();
    });
    let store = open(&path);
    let in_backup = Token::new(1).unwrap();
    assert!(
        is_stale(store.get("job", "k", Some(&fence(in_backup)))),
        "the backup's own fence"
    );
    assert!(
        is_stale(store.get("job", "k", Some(&fence(newer)))),
        "the lost history's"
    );
}

/// One backup restored twice: over the original, where its store's sidecar
/// is (one step above the sidecar's mark), and then, that copy's history
/// lost with its disk, in a directory of its own, without the sidecar. The
/// second must not take the first one's step from the same values, land on
/// the same base and hand out the same tokens again.
#[test]
fn one_backup_restored_twice_never_issues_the_first_restores_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let backup = dir.path().join("backup.db");
    let store = open(&path);
    store.next_token("job").unwrap();
    snapshot(&path, &backup);
    store.next_token("job").unwrap();
    store.close();
    std::fs::copy(&backup, &path).unwrap();
    let first = open(&path);
    let issued: Vec<u64> = (0..5)
        .map(|_| first.next_token("job").unwrap().get())
        .collect();
    first.close();
    let elsewhere = tempfile::tempdir().unwrap();
    let second_path = elsewhere.path().join("store.db");
    std::fs::copy(&backup, &second_path).unwrap();
    let second = open(&second_path);
    let next = second.next_token("job").unwrap().get();
    assert!(
        next > *issued.iter().max().unwrap(),
        "the second restore handed out {next} again (the first: {issued:?})"
    );
}

#[test]
fn an_older_copy_renamed_over_the_path_while_nothing_runs_is_stepped() {
    let (_dir, path, older, newer) = restored(|backup, path| {
        std::fs::rename(backup, path).unwrap();
    });
    assert_stepped(&path, older, newer);
}

#[test]
fn a_copy_at_a_new_path_never_issues_what_the_original_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let copy = dir.path().join("copy.db");
    let store = open(&path);
    let t = store.next_token("job").unwrap();
    store.put("job", "k", b"v", &fence(t)).unwrap();
    store.close();
    std::fs::copy(&path, &copy).unwrap();

    let original = open(&path).next_token("job").unwrap();
    let copied = open(&copy);
    let from_copy = copied.next_token("job").unwrap();
    assert_ne!(original, from_copy);
    assert!(from_copy > original, "{from_copy} vs {original}");
    assert!(is_stale(copied.put("job", "k", b"x", &fence(t))));
}

#[test]
fn a_copy_without_its_wal_restored_over_the_path_is_stepped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let backup = dir.path().join("backup.db");
    let store = open(&path);
    let t = store.next_token("job").unwrap();
    store.put("job", "k", b"v", &fence(t)).unwrap();
    // The main file alone, while the store runs: its commits are in the WAL.
    std::fs::copy(&path, &backup).unwrap();
    let newer = store.next_token("job").unwrap();
    store.put("job", "k", b"w", &fence(newer)).unwrap();
    store.close();
    assert!(!Path::new(&format!("{}-wal", path.display())).exists());
    std::fs::copy(&backup, &path).unwrap();
    assert_stepped(&path, t, newer);
}

#[test]
fn a_backup_whose_only_later_change_raised_a_fence_is_stepped() {
    // No token was issued after the backup: only a write with a newer token
    // the backup had already issued, which moved the fence.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let backup = dir.path().join("backup.db");
    let store = open(&path);
    let older = store.next_token("job").unwrap();
    let newer = store.next_token("job").unwrap();
    store.put("job", "k", b"v", &fence(older)).unwrap();
    snapshot(&path, &backup);
    store.put("job", "k", b"w", &fence(newer)).unwrap();
    store.close();
    std::fs::copy(&backup, &path).unwrap();
    assert_stepped(&path, older, newer);
}

#[test]
fn a_backup_whose_only_later_writes_changed_data_is_not_stepped() {
    // Repeat puts, a renewal and a release move no counter, fence, floor or
    // sequence number: the restored file has the store's token state, and
    // keeps it (docs/semantics.md, "SQLite file identity").
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let backup = dir.path().join("backup.db");
    let store = open(&path);
    let lease = store.acquire("job", "a", TTL).unwrap();
    let f = Fence::from(&lease);
    store.put("job", "k", b"v", &f).unwrap();
    snapshot(&path, &backup);
    store.put("job", "k", b"w", &f).unwrap();
    store.renew("job", lease.token, TTL).unwrap();
    assert!(store.release("job", lease.token).unwrap());
    store.close();
    std::fs::copy(&backup, &path).unwrap();

    let again = open(&path);
    let entry = again.get("job", "k", None).unwrap().unwrap();
    assert_eq!(entry.value, b"v", "the backup's data");
    assert_eq!(entry.version, 1);
    // Not stepped: the lease, its token and the counter are the backup's.
    again.put("job", "k", b"x", &f).unwrap();
    assert_eq!(
        again.status("job").unwrap().lease.unwrap().token,
        lease.token
    );
    assert_eq!(
        again.next_token("job").unwrap().get(),
        lease.token.get() + 1
    );
}

#[test]
fn an_unchanged_store_reopened_is_not_stepped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = open(&path);
    let t = store.next_token("job").unwrap();
    store.put("job", "k", b"v", &fence(t)).unwrap();
    store.close();
    let again = open(&path);
    assert_eq!(again.next_token("job").unwrap().get(), t.get() + 1);
    let other = open(&path);
    assert_eq!(other.next_token("job").unwrap().get(), t.get() + 2);
    other.put("job", "k", b"w", &fence(t)).unwrap();
}

const CHILD: &str = "FENCING_FILE_CHILD";

/// One process of the race: opens the store and takes one token.
#[test]
fn race_child() {
    let Ok(path) = std::env::var(CHILD) else {
        return;
    };
    let store = open(Path::new(&path));
    println!("\ntoken {}", store.next_token("job").unwrap());
}

#[test]
fn processes_racing_the_first_write_after_a_restore_step_once() {
    let (_dir, path, _older, newer) = restored(|backup, path| {
        std::fs::copy(backup, path).unwrap();
    });
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "race_child", "--nocapture", "--test-threads=1"])
                .env(CHILD, &path)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut tokens: Vec<u64> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "{out:?}");
            let text = String::from_utf8(out.stdout).unwrap();
            let line = text.lines().find_map(|l| l.strip_prefix("token ")).unwrap();
            line.trim().parse().unwrap()
        })
        .collect();
    tokens.sort();
    assert!(tokens[0] > newer.get(), "{tokens:?} after {newer}");
    // One step: four tokens in a row above its base (a second step would
    // leave a gap of 2^48).
    assert_eq!(tokens[3] - tokens[0], 3, "{tokens:?}");
}

/// Two backups of one history, restored one after the other: the second
/// (newer than the first, older than the store) holds tokens the first's
/// restore stepped past but its own history never reached.
#[test]
fn a_newer_backup_restored_after_an_older_one_is_stepped_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (first, second) = (dir.path().join("b1.db"), dir.path().join("b2.db"));
    let store = open(&path);
    store.next_token("job").unwrap();
    snapshot(&path, &first);
    for _ in 0..5 {
        store.next_token("job").unwrap();
    }
    snapshot(&path, &second);
    let lost = store.next_token("job").unwrap();
    store.close();

    std::fs::copy(&first, &path).unwrap();
    let after_first = open(&path);
    assert!(after_first.next_token("job").unwrap() > lost);
    after_first.close();

    std::fs::copy(&second, &path).unwrap();
    let after_second = open(&path);
    let next = after_second.next_token("job").unwrap();
    assert!(next > lost, "token {next} again after {lost}");
}

/// A sidecar record that goes back must not take the sidecar back. The
/// sidecar is written after COMMIT, outside SQLite's write lock: a process
/// paused between the two (a GC pause, SIGSTOP) writes after other handles
/// committed and recorded newer ones. When every token-moving commit
/// rewrote the record, that late write took it back; now the record is
/// written only where it is not this store's, but whatever it holds, the
/// high-water mark must decide. Modelled by such a write: the record's
/// bytes as they were at a commit, written again at the record's place
/// after three newer commits. A backup of the state between that commit
/// and theirs, restored, must still be stepped.
#[test]
fn a_late_sidecar_write_from_an_older_commit_never_hides_a_restore() {
    use std::io::{Seek, SeekFrom, Write};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let backup = dir.path().join("backup.db");
    let sidecar = dir.path().join(".store.db-fencing");
    let store = open(&path);
    let t = store.next_token("job").unwrap();
    store.put("job", "k", b"old", &fence(t)).unwrap();
    // The record as it stood at this put's commit.
    let late = std::fs::read(&sidecar).unwrap()[..48].to_vec();
    snapshot(&path, &backup);
    let older = store.next_token("job").unwrap();
    let newer = store.next_token("job").unwrap();
    store.put("job", "k", b"new", &fence(newer)).unwrap();
    // The paused writer resumes: its one write, as it makes it.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&sidecar)
        .unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(&late).unwrap();
    drop(f);
    store.close();
    std::fs::copy(&backup, &path).unwrap();
    assert_stepped(&path, older, newer);
}

#[test]
fn a_handle_numbers_its_write_past_another_handles_on_the_same_file() {
    // A handle reuses what its own last write left in the file only while
    // no one else has committed since (identity::Known): here B commits
    // between two of A's writes. Read stale, A's second write would look
    // like a restore to the sidecar and step the whole store; numbered
    // stale, a backup taken between B's write and A's would read as current.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let backup = dir.path().join("backup.db");
    let a = open(&path);
    let b = open(&path);
    let first = a.next_token("job").unwrap();
    a.put("job", "k", b"a", &fence(first)).unwrap();
    let from_b = b.next_token("job").unwrap();
    snapshot(&path, &backup);
    let from_a = a.next_token("job").unwrap();
    assert_eq!(
        from_a.get(),
        from_b.get() + 1,
        "no step between two handles"
    );
    a.close();
    b.close();
    std::fs::copy(&backup, &path).unwrap();
    assert_stepped(&path, from_b, from_a);
}

#[test]
#[cfg(unix)] // On Windows an open -wal cannot be deleted.
fn a_wal_deleted_under_a_handle_fails_its_next_write_and_nothing_is_lost() {
    // What another copy of SQLite in the same process (Python's sqlite3,
    // better-sqlite3) does when it closes the file: this process's locks go
    // with its descriptors, so it believes itself the last connection,
    // checkpoints and deletes the -wal and -shm (docs/sqlite.md, "One SQLite
    // per process"). Before, the handle went on committing to the deleted
    // log: its writes were reported done and lost.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = open(&path);
    let first = store.next_token("job").unwrap();
    store.put("job", "k", b"kept", &fence(first)).unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    unlink_wal(&path);

    assert_log_gone(store.next_token("job"), "-wal");
    let fence_write = store.put("job", "k", b"lost", &fence(first));
    assert!(fence_write.is_err(), "{fence_write:?}");
    drop(other);
    store.close();

    let fresh = open(&path);
    assert_eq!(fresh.get("job", "k", None).unwrap().unwrap().value, b"kept");
    assert_eq!(fresh.next_token("job").unwrap().get(), first.get() + 1);
}

#[test]
#[cfg(unix)] // On Windows an open -shm cannot be deleted.
fn a_shm_deleted_under_a_handle_fails_its_next_write() {
    // With its -shm gone, a handle would take the write lock in an index no
    // new connection sees, and append to the log beside a new connection's
    // writer.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = open(&path);
    let first = store.next_token("job").unwrap();
    std::fs::remove_file(suffixed(&path, "-shm")).unwrap();

    assert_log_gone(store.next_token("job"), "-shm");
    store.close();
    let fresh = open(&path);
    assert_eq!(fresh.next_token("job").unwrap().get(), first.get() + 1);
}

/// Another file at the `-wal`'s name, the handle's own log gone from it:
/// renamed over, renamed away, or deleted while linked under another name
/// (`cp -al` or `ln` of the live files). Each time the handle would commit
/// to a log no new connection reads. (A link count alone passes the last
/// two: the check looks the name up.)
#[test]
#[cfg(unix)] // On Windows an open -wal can be neither deleted nor renamed.
fn a_wal_no_longer_at_its_name_fails_the_next_write() {
    type Swap = fn(&Path, &Path);
    let swaps: [(&str, Swap); 3] = [
        ("renamed over", |wal, dir| {
            let other = dir.join("other");
            std::fs::copy(wal, &other).unwrap();
            std::fs::rename(&other, wal).unwrap();
        }),
        ("renamed away", |wal, dir| {
            std::fs::rename(wal, dir.join("away")).unwrap();
            std::fs::write(wal, b"").unwrap();
        }),
        ("deleted, linked elsewhere", |wal, dir| {
            std::fs::hard_link(wal, dir.join("snapshot")).unwrap();
            std::fs::remove_file(wal).unwrap();
        }),
    ];
    for (what, swap) in swaps {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let store = open(&path);
        let first = store.next_token("job").unwrap();
        swap(&suffixed(&path, "-wal"), dir.path());
        let r = store.next_token("job");
        assert!(r.is_err(), "{what}: {r:?}");
        assert_log_gone(r, "-wal");
        assert_log_gone(store.put("job", "k", b"v", &fence(first)), "-wal");
    }
}
