//! A store opened by a relative path keeps writing to the file it opened
//! after the process changes its working directory (a daemon's `chdir("/")`
//! after start-up), even where the new directory holds a file of the same
//! name: the per-commit checks use the absolute name SQLite resolved at
//! open. One test in this file: the working directory is the process's.
#![cfg(unix)]

use fencing::{Fence, Store};

mod support;
use support::sqlite_url;

#[test]
fn a_store_opened_by_a_relative_path_keeps_writing_its_file_after_chdir() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let namesake = Store::open(&sqlite_url(&elsewhere.path().join("store.db"))).unwrap();
    namesake.next_token("job").unwrap();
    namesake.close();

    std::env::set_current_dir(dir.path()).unwrap();
    let store = Store::open("sqlite:store.db").unwrap();
    let first = store.next_token("job").unwrap();
    store.put("job", "k", b"v", &Fence::new(first)).unwrap();

    std::env::set_current_dir(elsewhere.path()).unwrap();
    assert!(store.get("job", "k", None).unwrap().is_some());
    let next = store.next_token("job");
    assert!(
        matches!(&next, Ok(t) if t.get() == first.get() + 1),
        "a write after chdir: {next:?}"
    );
    store.put("job", "k", b"w", &Fence::new(first)).unwrap();
    store.close();
    // The namesake was never written.
    let namesake = Store::open(&sqlite_url(&elsewhere.path().join("store.db"))).unwrap();
    assert_eq!(namesake.next_token("job").unwrap().get(), 2);
}
