//! A store opened before `fork()` (docs/semantics.md, "Fork"): the parent
//! keeps working, and each child opens connections of its own the first
//! time it uses the store, never using the inherited ones. One test in
//! this file, so that no other test thread runs while the process forks.
// fork(2) exists only on unix.
#![cfg(unix)]

use fencing::{Fence, Store, Token};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};

mod support;
use support::{finish_child, fresh_schema, postgres_test_url, sqlite_url};

const CHILDREN: usize = 4;
const ROUNDS: usize = 100;

/// Each round: a token from the shared counter, logged under its own key
/// (a token handed out twice would land on one key twice), then a write
/// and a read-back in a scope of the worker's own.
fn work(store: &Store, who: &str) {
    let one = Fence::new(Token::FIRST);
    for i in 0..ROUNDS {
        let token = store.next_token("shared").unwrap();
        store
            .put("log", &token.to_string(), who.as_bytes(), &one)
            .unwrap();
        let mine = format!("own-{who}");
        let fence = Fence::new(store.next_token(&mine).unwrap());
        let value = format!("{who}-{i}");
        store.put(&mine, "k", value.as_bytes(), &fence).unwrap();
        let read = store.get(&mine, "k", Some(&fence)).unwrap().unwrap();
        assert_eq!(read.value, value.as_bytes());
    }
}

fn forked_workers_share_one_store(url: &str) {
    let store = Store::open(url).unwrap();
    // The parent's connections exist before the fork.
    store.next_token("shared").unwrap();
    let mut children = Vec::new();
    for c in 0..CHILDREN {
        // SAFETY: the test binary runs this one test on one thread; the
        // child only runs `work` and ends in finish_child.
        match unsafe { fork() }.unwrap() {
            ForkResult::Child => {
                finish_child(&format!("child {c}"), || work(&store, &format!("child{c}")));
            }
            ForkResult::Parent { child } => children.push(child),
        }
    }
    work(&store, "parent");
    for child in children {
        assert_eq!(waitpid(child, None).unwrap(), WaitStatus::Exited(child, 0));
    }
    // The parent still works after its children are gone, and every token
    // was handed out once.
    work(&store, "parent-after");
    let mut keys = 0;
    let mut after = None;
    loop {
        let page = store.list("log", after.as_deref(), 1000).unwrap();
        keys += page.keys.len();
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(keys, (CHILDREN + 2) * ROUNDS);
    store.close();
}

#[test]
fn a_store_opened_before_fork_works_in_the_children_and_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    forked_workers_share_one_store(&sqlite_url(&dir.path().join("fork.db")));
    if let Some(base) = postgres_test_url() {
        let schema = fresh_schema("fork");
        forked_workers_share_one_store(&format!("{base}?schema={schema}&pool_size=2"));
    }
    forked_guard_reports_itself_lost(&sqlite_url(&dir.path().join("guard.db")));
    #[cfg(feature = "objects")]
    {
        objects_opened_before_fork_work_in_the_child(
            &format!("file://{}", dir.path().display()),
            true,
        );
        objects_opened_before_fork_work_in_the_child("memory:", false);
        #[cfg(feature = "s3")]
        if let Ok(bucket) = std::env::var("FENCING_TEST_S3_BUCKET") {
            let prefix = fresh_schema("fork");
            objects_opened_before_fork_work_in_the_child(&format!("s3://{bucket}/{prefix}"), true);
        }
        #[cfg(feature = "azure")]
        if let Ok(container) = std::env::var("FENCING_TEST_AZ_CONTAINER") {
            let prefix = fresh_schema("fork");
            objects_opened_before_fork_work_in_the_child(
                &format!("az://{container}/{prefix}"),
                true,
            );
        }
    }
}

/// Fenced objects opened before `fork()`: the child's first call starts a
/// runtime of its own (the parent's threads do not exist there) and opens
/// the URL again (never the parent's connections); `memory:` keeps the
/// child's copy. A hang would end the child with SIGALRM.
#[cfg(feature = "objects")]
fn objects_opened_before_fork_work_in_the_child(url: &str, shared: bool) {
    use fencing::objects::Objects;
    let fence = |t| Fence::new(Token::new(t).unwrap());
    let objects = Objects::open(url).unwrap();
    objects.put("o", &fence(2), b"parent", None).unwrap();
    // SAFETY: as above (the handle's runtime thread is idle: no call runs).
    match unsafe { fork() }.unwrap() {
        ForkResult::Child => {
            finish_child("child", || {
                // SAFETY: alarm(2) only schedules a signal.
                unsafe { nix::libc::alarm(60) };
                let stale = objects.put("o", &fence(1), b"stale", None).unwrap_err();
                assert_eq!(stale.code(), fencing::ErrorCode::StaleToken, "{stale}");
                assert_eq!(objects.get("o").unwrap().unwrap().bytes, b"parent");
                objects.put("o", &fence(3), b"child", None).unwrap();
                drop(objects);
            });
        }
        ForkResult::Parent { child } => {
            assert_eq!(
                waitpid(child, None).unwrap(),
                WaitStatus::Exited(child, 0),
                "{url}"
            );
        }
    }
    let now = objects.get("o").unwrap().unwrap();
    let want: (&[u8], u64) = if shared {
        (b"child", 3)
    } else {
        (b"parent", 2)
    };
    assert_eq!((now.bytes.as_slice(), now.token.get()), want, "{url}");
}

/// A keep-alive guard does not survive into a child: its threads do not
/// exist there, so the child's guard reports the lease lost, and dropping
/// it does not release the parent's lease.
fn forked_guard_reports_itself_lost(url: &str) {
    let store = Store::open(url).unwrap();
    let guard = store
        .lease("job", "parent", std::time::Duration::from_secs(60))
        .unwrap();
    // SAFETY: as above.
    match unsafe { fork() }.unwrap() {
        ForkResult::Child => {
            finish_child("child", || {
                let lost = guard.check().unwrap_err();
                assert!(
                    matches!(lost, fencing::Error::LeaseLost { current: None, .. }),
                    "{lost:?}"
                );
                drop(guard);
            });
        }
        ForkResult::Parent { child } => {
            assert_eq!(waitpid(child, None).unwrap(), WaitStatus::Exited(child, 0));
        }
    }
    guard.check().unwrap();
    let status = store.status("job").unwrap();
    assert_eq!(status.lease.map(|l| l.holder), Some("parent".to_owned()));
    assert!(guard.release().unwrap());
}
