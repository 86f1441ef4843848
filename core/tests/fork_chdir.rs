//! A store opened by a relative path before `fork()`, used first in a child
//! that changed its working directory: the child's own connection opens the
//! file the store opened, not a namesake in the new directory (which would
//! be another store, with counters of its own). One test in this file: the
//! working directory is the process's, and no other test thread may run
//! while the process forks.
// fork(2) exists only on unix.
#![cfg(unix)]

use fencing::Store;
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};

mod support;
use support::{finish_child, sqlite_url};

#[test]
fn a_forked_child_that_changed_directory_writes_the_store_its_parent_opened() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let namesake = Store::open(&sqlite_url(&elsewhere.path().join("store.db"))).unwrap();
    assert_eq!(namesake.next_token("job").unwrap().get(), 1);
    namesake.close();

    std::env::set_current_dir(dir.path()).unwrap();
    let store = Store::open("sqlite:store.db").unwrap();
    assert_eq!(store.next_token("job").unwrap().get(), 1);
    // SAFETY: one test in this file, on one thread; the child ends in
    // finish_child.
    match unsafe { fork() }.unwrap() {
        ForkResult::Child => {
            finish_child("child", || {
                std::env::set_current_dir(elsewhere.path()).unwrap();
                assert_eq!(
                    store.next_token("job").unwrap().get(),
                    2,
                    "the child's token"
                );
            });
        }
        ForkResult::Parent { child } => {
            assert_eq!(waitpid(child, None).unwrap(), WaitStatus::Exited(child, 0));
            assert_eq!(
                store.next_token("job").unwrap().get(),
                3,
                "after the child's"
            );
            store.close();
            let namesake = Store::open(&sqlite_url(&elsewhere.path().join("store.db"))).unwrap();
            assert_eq!(
                namesake.next_token("job").unwrap().get(),
                2,
                "the namesake, untouched"
            );
        }
    }
}
