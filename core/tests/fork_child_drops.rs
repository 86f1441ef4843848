//! A store opened before `fork()` whose child drops its copy without ever
//! using it (docs/semantics.md, "Fork"): the parent's connections, whose
//! sockets and reactors the child shares, are the parent's, so the child
//! forgets them instead of closing them, and the parent goes on. One test
//! in this file, so that no other test thread runs while the process forks.
// fork(2) exists only on unix.
#![cfg(unix)]

use std::time::{Duration, Instant};

use fencing::Store;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult};

mod support;
use support::{finish_child, fresh_schema, postgres_test_url};

#[test]
fn a_child_that_drops_the_store_unused_leaves_the_parent_s_connections_alone() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("fork_drop");
    let url = format!("{base}?schema={schema}&pool_size=1&call_timeout_ms=5000");
    let store = Store::open(&url).unwrap();
    // The parent's connection exists before the fork.
    let first = store.next_token("s").unwrap();
    // SAFETY: the child only drops the store and exits (`finish_child`).
    match unsafe { fork() }.unwrap() {
        ForkResult::Child => finish_child("child", move || drop(store)),
        ForkResult::Parent { child } => {
            let until = Instant::now() + Duration::from_secs(30);
            loop {
                match waitpid(child, Some(WaitPidFlag::WNOHANG)).unwrap() {
                    WaitStatus::StillAlive if Instant::now() < until => {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    WaitStatus::StillAlive => {
                        let _ = kill(child, Signal::SIGKILL);
                        panic!("the child hung dropping the store");
                    }
                    WaitStatus::Exited(_, 0) => break,
                    other => panic!("the child failed: {other:?}"),
                }
            }
            // On the connection the child saw: still the parent's.
            assert!(store.next_token("s").unwrap() > first);
        }
    }
}
