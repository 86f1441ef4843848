//! Hostile SQLite files (issue 35 item 7, issue 26 item 1): a store file
//! someone else crafted or edited, a `sqlite:` path that is a symlink, a
//! file in another text encoding. Every open compares the file's schema
//! with what this build creates and refuses what fencing did not create,
//! leaving the file untouched; creating a store never writes into a file
//! the path merely points at; a file whose text is not UTF-8 is refused.

use std::path::Path;

use fencing::{Error, ErrorCode, Store};
use rusqlite::Connection;

mod support;
use support::sqlite_url;

/// A store with one scope that has issued tokens 1..=3, closed.
fn store_with_tokens(path: &Path) {
    let store = Store::open(&sqlite_url(path)).unwrap();
    for _ in 0..3 {
        store.next_token("s").unwrap();
    }
}

/// Applies `sql` to the file as an attacker with write access to it would,
/// with any SQLite library: `writable_schema` edits the stored text.
fn tamper(path: &Path, sql: &str) {
    let c = Connection::open(path).unwrap();
    c.execute_batch(sql).unwrap();
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// Opening (and migrating) `path` is refused with `BACKEND` and a message
/// containing every one of `words`, and neither call changes the file. If
/// the store opens, what it then does is shown in the panic.
fn refused(path: &Path, words: &[&str]) {
    let before = bytes(path);
    let url = sqlite_url(path);
    match Store::open(&url) {
        Ok(store) => {
            let tokens: Vec<u64> = (0..3)
                .map(|_| store.next_token("s").unwrap().get())
                .collect();
            panic!("the crafted file opened; next tokens of \"s\" (3 issued before): {tokens:?}");
        }
        Err(e) => {
            assert_eq!(e.code(), ErrorCode::Backend, "{e}");
            for w in words {
                assert!(e.to_string().contains(w), "{w:?} not in: {e}");
            }
        }
    }
    let e = fencing::migrate(&url).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Backend, "{e}");
    assert!(e.to_string().contains(words[0]), "{e}");
    assert!(before == bytes(path), "a refused open changed the file");
}

#[test]
fn an_extra_trigger_is_refused_and_the_file_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    store_with_tokens(&path);
    // The reproduction of issue 35: resets counter and fence after every
    // update of a scope.
    tamper(
        &path,
        "CREATE TRIGGER evil AFTER UPDATE ON fencing_scopes BEGIN
           UPDATE fencing_scopes SET counter = 0, fence = 0 WHERE scope = NEW.scope AND counter > 1;
         END;",
    );
    refused(
        &path,
        &["trigger \"evil\"", "fencing did not create", "AFTER UPDATE"],
    );
}

/// A fresh store with tokens, tampered with `sql`, then `refused`.
fn tampered_store_is_refused(sql: &str, words: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    store_with_tokens(&path);
    tamper(&path, sql);
    refused(&path, words);
}

#[test]
fn a_trigger_on_the_callers_table_that_writes_fencing_tables_is_refused() {
    tampered_store_is_refused(
        "CREATE TABLE mine (x);
         CREATE TRIGGER sneaky AFTER INSERT ON mine BEGIN
           UPDATE \"FENCING_SCOPES\" SET fence = 0;
         END;",
        &["trigger \"sneaky\"", "FENCING_SCOPES"],
    );
}

#[test]
fn a_fencing_table_with_another_definition_is_refused() {
    // A default lease for every scope the view creates.
    tampered_store_is_refused(
        "PRAGMA writable_schema = ON;
         UPDATE sqlite_schema SET sql = replace(sql, 'lease_holder   TEXT,', 'lease_holder TEXT DEFAULT ''mallory'',')
          WHERE name = 'fencing_scopes';
         PRAGMA writable_schema = OFF;",
        &["table \"fencing_scopes\"", "mallory"],
    );
}

#[test]
fn extra_or_missing_objects_in_fencing_names_are_refused() {
    let cases: [(&str, &[&str]); 4] = [
        (
            "CREATE INDEX fencing_scopes_fence ON fencing_scopes (fence)",
            &["index \"fencing_scopes_fence\""],
        ),
        (
            "CREATE TABLE fencing_extra (x)",
            &["table \"fencing_extra\"", "fencing did not create"],
        ),
        (
            "CREATE INDEX mine ON fencing_floors (floor)",
            &["index \"mine\"", "fencing did not create"],
        ),
        (
            // The view without its trigger accepts every token.
            "DROP TRIGGER fencing_check_insert",
            &["trigger \"fencing_check_insert\"", "lacks"],
        ),
    ];
    for (sql, words) in cases {
        tampered_store_is_refused(sql, words);
    }
}

#[test]
fn the_check_trigger_with_another_text_than_the_file_records_is_refused() {
    // The text differs; the record still says it is this build's.
    tampered_store_is_refused(
        "DROP VIEW fencing_check;
         CREATE VIEW fencing_check (scope, token, seq) AS SELECT NULL, NULL, NULL WHERE 0;
         CREATE TRIGGER fencing_check_insert INSTEAD OF INSERT ON fencing_check BEGIN SELECT 1; END;",
        &["trigger \"fencing_check_insert\"", "differs"],
    );
}

/// A record that claims a newer fencing wrote the trigger: this build
/// cannot check a text it does not know, so it refuses the file rather
/// than trust it (or downgrade it).
#[test]
fn a_check_trigger_claimed_by_a_newer_build_is_refused() {
    tampered_store_is_refused(
        "DROP VIEW fencing_check;
         CREATE VIEW fencing_check (scope, token, seq) AS SELECT NULL, NULL, NULL WHERE 0;
         CREATE TRIGGER fencing_check_insert INSTEAD OF INSERT ON fencing_check BEGIN SELECT 1; END;
         UPDATE fencing_installed SET hash = 'x', version = '999.0.0';",
        &["999.0.0", "newer"],
    );
}

#[test]
fn a_version_4_file_with_an_extra_trigger_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let dump = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sqlite-schema-v4.sql");
    tamper(&path, &std::fs::read_to_string(dump).unwrap());
    tamper(
        &path,
        "INSERT INTO fencing_scopes (scope, counter, fence, sealed) VALUES ('s', 3, 3, 0);
         CREATE TRIGGER evil AFTER UPDATE ON fencing_scopes BEGIN
           UPDATE fencing_scopes SET counter = 0, fence = 0 WHERE scope = NEW.scope AND counter > 1;
         END;",
    );
    refused(&path, &["trigger \"evil\""]);
}

/// What the caller may keep in the store's file (docs/sqlite.md): their
/// own tables, indexes, views and triggers, one that fences its writes
/// through `fencing_check` included; and SQLite's statistics.
#[test]
fn the_callers_own_objects_and_statistics_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    store_with_tokens(&path);
    tamper(
        &path,
        "CREATE TABLE report (id INTEGER PRIMARY KEY, body TEXT, token INTEGER NOT NULL);
         CREATE INDEX report_token ON report (token);
         CREATE VIEW report_fences AS SELECT r.id, s.fence FROM report r JOIN fencing_scopes s ON s.scope = 'report:' || r.id;
         CREATE TRIGGER report_fenced BEFORE UPDATE ON report BEGIN
           INSERT INTO fencing_check (scope, token) VALUES ('report:' || NEW.id, NEW.token);
         END;
         CREATE TABLE my_fencing_notes (x);
         ANALYZE;",
    );
    let store = Store::open(&sqlite_url(&path)).unwrap();
    assert_eq!(store.next_token("s").unwrap().get(), 4);
    let old = store.next_token("report:1").unwrap().get() as i64;
    let t = store.next_token("report:1").unwrap().get() as i64;
    drop(store);
    let c = Connection::open(&path).unwrap();
    c.execute(
        "INSERT INTO report (id, body, token) VALUES (1, 'a', 0)",
        [],
    )
    .unwrap();
    c.execute("UPDATE report SET body = 'b', token = ?1 WHERE id = 1", [t])
        .unwrap();
    let stale = c
        .execute(
            "UPDATE report SET body = 'c', token = ?1 WHERE id = 1",
            [old],
        )
        .unwrap_err();
    assert!(stale.to_string().starts_with("STALE_TOKEN"), "{stale}");
    drop(c);
    fencing::migrate(&sqlite_url(&path)).unwrap();
    drop(Store::open(&sqlite_url(&path)).unwrap());
}

// ---- symlinks ------------------------------------------------------------

#[test]
fn a_symlink_to_an_empty_file_is_refused_and_the_target_left_empty() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("someone-elses");
    std::fs::write(&target, b"").unwrap();
    let link = dir.path().join("store.db");
    if !symlink(&target, &link) {
        return;
    }
    let e = Store::open(&sqlite_url(&link)).expect_err("opened through a symlink");
    assert_eq!(e.code(), ErrorCode::Backend, "{e}");
    assert!(e.to_string().contains("symlink"), "{e}");
    let e = fencing::migrate(&sqlite_url(&link)).unwrap_err();
    assert!(e.to_string().contains("symlink"), "{e}");
    assert_eq!(std::fs::metadata(&target).unwrap().len(), 0);

    // An empty SQLite database (a header, no tables) is the same.
    let header = dir.path().join("header-only");
    Connection::open(&header)
        .unwrap()
        .execute_batch("PRAGMA user_version = 0; CREATE TABLE t (x); DROP TABLE t;")
        .unwrap();
    let before = bytes(&header);
    assert!(!before.is_empty());
    let link2 = dir.path().join("store2.db");
    assert!(symlink(&header, &link2));
    let e = Store::open(&sqlite_url(&link2)).expect_err("opened through a symlink");
    assert!(e.to_string().contains("symlink"), "{e}");
    assert!(before == bytes(&header));

    // A dangling symlink: nothing is created at its target.
    let link3 = dir.path().join("store3.db");
    let nowhere = dir.path().join("nowhere");
    assert!(symlink(&nowhere, &link3));
    let e = Store::open(&sqlite_url(&link3)).expect_err("opened a dangling symlink");
    assert!(e.to_string().contains("symlink"), "{e}");
    assert!(!nowhere.exists());
}

/// Makes `link` a symlink to `target`; false where this user may not make
/// one (Windows without the privilege or developer mode): skipped then.
fn symlink(target: &Path, link: &Path) -> bool {
    #[cfg(unix)]
    let made = std::os::unix::fs::symlink(target, link);
    #[cfg(windows)]
    let made = std::os::windows::fs::symlink_file(target, link);
    match made {
        // Wine's CreateSymbolicLinkW answers success and makes nothing.
        Ok(()) if std::fs::symlink_metadata(link).is_err() => {
            eprintln!("skipped: the symlink was not made");
            false
        }
        Ok(()) => true,
        Err(e) if cfg!(windows) => {
            eprintln!("skipped: cannot make a symlink here: {e}");
            false
        }
        Err(e) => panic!("symlink: {e}"),
    }
}

/// A symlink to an existing store is the user pointing at a real store:
/// it opens, and the store's own checks apply.
#[test]
fn a_symlink_to_an_existing_store_opens() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.db");
    store_with_tokens(&real);
    let link = dir.path().join("link.db");
    if !symlink(&real, &link) {
        return;
    }
    let store = Store::open(&sqlite_url(&link)).unwrap();
    assert_eq!(store.next_token("s").unwrap().get(), 4);
}

/// An empty file that another user owns (and left writable) is not ours to
/// turn into a store. Needs root to make such a file; skipped otherwise.
#[test]
#[cfg(unix)] // uid ownership; on Windows the file's ACL decides who may write.
fn an_empty_file_of_another_user_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    std::fs::write(&path, b"").unwrap();
    if std::os::unix::fs::chown(&path, Some(65534), None).is_err() {
        eprintln!("skipped: needs root to give a file to another user");
        return;
    }
    let e = Store::open(&sqlite_url(&path)).expect_err("created a store in another user's file");
    assert_eq!(e.code(), ErrorCode::Backend, "{e}");
    assert!(e.to_string().contains("owned by"), "{e}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

// ---- text encoding (issue 26 item 1) -------------------------------------

/// The reproduction: 200 names, 3 tokens each, each retired; a worker then
/// checks the name's first token through `fencing_check`, and the library's
/// `next_token` follows. Returns how many names were handed a token again.
fn reissued_after_retirement(path: &Path) -> usize {
    let store = Store::open(&sqlite_url(path)).unwrap();
    let names: Vec<String> = (0..200).map(|i| format!("job-{i}-名前")).collect();
    for name in &names {
        for _ in 0..3 {
            store.next_token(name).unwrap();
        }
        assert!(store.retire(name).unwrap());
    }
    let worker = Connection::open(path).unwrap();
    let mut reissued = 0;
    for name in &names {
        let accepted = worker
            .execute(
                "INSERT INTO fencing_check (scope, token) VALUES (?1, 1)",
                [name],
            )
            .is_ok();
        let next = store.next_token(name).unwrap().get();
        if accepted || next <= 3 {
            reissued += 1;
        }
    }
    reissued
}

#[test]
fn the_retirement_reproduction_holds_on_a_utf8_file() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(reissued_after_retirement(&dir.path().join("store.db")), 0);
}

#[test]
fn a_utf16_file_is_refused() {
    for encoding in ["UTF-16le", "UTF-16be"] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        // What `sqlite3_open16` makes: an empty database in UTF-16.
        Connection::open(&path)
            .unwrap()
            .execute_batch(&format!(
                "PRAGMA encoding = '{encoding}'; CREATE TABLE t (x); DROP TABLE t;"
            ))
            .unwrap();
        let before = bytes(&path);
        match Store::open(&sqlite_url(&path)) {
            Ok(store) => {
                drop(store);
                let n = reissued_after_retirement(&path);
                panic!("a {encoding} file opened; {n} of 200 names were handed a token again");
            }
            Err(e) => {
                assert_eq!(e.code(), ErrorCode::Backend, "{e}");
                assert!(e.to_string().contains(encoding), "{e}");
                assert!(e.to_string().contains("UTF-8"), "{e}");
            }
        }
        let e: Error = fencing::migrate(&sqlite_url(&path)).unwrap_err();
        assert!(e.to_string().contains(encoding), "{e}");
        assert!(before == bytes(&path));
    }
}

/// `list` orders keys as Rust orders `str` (UTF-8 bytes), which SQLite's
/// `BINARY` collation does only in a UTF-8 file: in UTF-16, U+1F600 (a
/// surrogate pair) sorts before U+FFFF.
#[test]
fn list_orders_keys_by_their_utf8_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&sqlite_url(&dir.path().join("store.db"))).unwrap();
    let fence = fencing::Fence::new(store.next_token("s").unwrap());
    let mut keys = vec!["z", "a", "\u{FFFF}", "😀", "é", "\u{E000}"];
    for k in &keys {
        store.put("s", k, b"v", &fence).unwrap();
    }
    keys.sort();
    let page = store.list("s", None, 100).unwrap();
    assert_eq!(page.keys, keys);
    let after = store.list("s", Some("\u{FFFF}"), 100).unwrap();
    assert_eq!(after.keys, ["😀"]);
}
