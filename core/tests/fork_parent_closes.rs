//! A store opened before `fork()` whose parent closes its handle while the
//! child keeps writing (docs/semantics.md, "Fork"): the child closes the
//! connection it inherited before it opens its own, so that its own takes
//! real locks. One test in this file, so that no other test thread runs
//! while the process forks.
// fork(2) exists only on unix.
#![cfg(unix)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use fencing::Store;
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};

mod support;
use support::{finish_child, sqlite_url};

fn signal(s: &mut UnixStream) {
    s.write_all(b"x").unwrap();
}

fn wait_for(s: &mut UnixStream) {
    let mut b = [0u8; 1];
    s.read_exact(&mut b).unwrap();
}

/// A pre-fork server whose parent closes its handle while the children
/// keep serving. The child's new connection used to find SQLite's record of
/// the locks of the connection it inherited (the record is inherited, the
/// POSIX locks are not) and take none of its own; the parent's close then
/// believed itself the last connection and deleted the -wal and -shm under
/// the child, whose writes were reported done and lost (later: refused).
#[test]
fn a_forked_child_keeps_writing_after_the_parent_closes_its_handle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = Store::open(&sqlite_url(&path)).unwrap();
    store.next_token("job").unwrap();
    let (mut parent_end, mut child_end) = UnixStream::pair().unwrap();
    // SAFETY: one test in this file, on one thread; the child ends in
    // finish_child.
    match unsafe { fork() }.unwrap() {
        ForkResult::Child => {
            finish_child("child", || {
                // The child's own connection.
                let a = store.next_token("job").unwrap();
                signal(&mut child_end);
                // The parent closes its handle.
                wait_for(&mut child_end);
                let b = store.next_token("job");
                assert!(
                    matches!(&b, Ok(t) if t.get() == a.get() + 1),
                    "the child's write after the parent closed: {b:?}"
                );
            });
        }
        ForkResult::Parent { child } => {
            wait_for(&mut parent_end);
            store.close();
            let gone = !Path::new(&format!("{}-wal", path.display())).exists();
            eprintln!("parent closed; -wal deleted under the child: {gone}");
            signal(&mut parent_end);
            assert_eq!(waitpid(child, None).unwrap(), WaitStatus::Exited(child, 0));
            // The child's last token is 3: a fresh handle continues at 4, no
            // step (a lost commit would show as a step past the sidecar).
            let fresh = Store::open(&sqlite_url(&path)).unwrap();
            let next = fresh.next_token("job").unwrap();
            assert_eq!(next.get(), 4, "the child's committed write was lost");
        }
    }
}
