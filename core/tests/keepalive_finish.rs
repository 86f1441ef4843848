//! Ending a held lease: one verdict from `LeaseGuard::finish` (sync and
//! async), whoever saw the loss first (docs/semantics.md, "Ending a held
//! lease").

use std::time::Duration;

use fencing::{aio, Error, LeaseEnd, Store, Token, WorkOutcome};

const TTL: Duration = Duration::from_secs(60);

fn manual() -> Store {
    Store::open("memory:?clock=manual").unwrap()
}

fn lost_to(scope: &str, token: u64, holder: &str) -> Error {
    Error::LeaseLost {
        scope: scope.into(),
        current: Some((Token::new(token).unwrap(), holder.into())),
    }
}

#[test]
fn a_lease_held_to_the_end_is_released() {
    let store = manual();
    let guard = store.lease("job", "a", TTL).unwrap();
    let end = guard.finish(WorkOutcome::Ok);
    assert!(end.is_released());
    assert_eq!(end.verdict(), Ok(()));
    assert!(!end.attach_work_error());
    assert_eq!(store.status("job").unwrap().lease, None);
    assert_eq!(store.metrics().releases, 1);
}

#[test]
fn a_takeover_during_the_work_is_a_loss_naming_the_new_holder() {
    let store = manual();
    let guard = store.lease("job", "a", TTL).unwrap();
    store.advance_clock(TTL + Duration::from_millis(1)).unwrap();
    store.acquire("job", "b", TTL).unwrap();
    // The keep-alive has not seen it: its deadline is on this process's clock.
    assert_eq!(guard.lost(), None);
    let end = guard.finish(WorkOutcome::Ok);
    assert_eq!(end.verdict(), Err(lost_to("job", 2, "b")));
    assert!(!end.attach_work_error());
    // The new holder's lease is untouched.
    assert_eq!(store.status("job").unwrap().lease.unwrap().holder, "b");
}

#[test]
fn a_loss_seen_only_at_release_names_no_holder_when_none_is_current() {
    let store = manual();
    let guard = store.lease("job", "a", TTL).unwrap();
    store.advance_clock(TTL).unwrap();
    let end = guard.finish(WorkOutcome::Ok);
    assert_eq!(
        end.verdict(),
        Err(Error::LeaseLost {
            scope: "job".into(),
            current: None
        })
    );
}

#[test]
fn a_loss_the_keep_alive_saw_is_reported_like_one_seen_at_release() {
    let store = Store::open("memory:").unwrap();
    let guard = store.lease("job", "a", Duration::from_millis(300)).unwrap();
    // Another party ends the lease and takes the scope: the next renewal
    // fails for good, naming the new holder.
    store.release("job", guard.token()).unwrap();
    store.acquire("job", "b", TTL).unwrap();
    let start = std::time::Instant::now();
    while guard.lost().is_none() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(guard.lost(), Some(lost_to("job", 2, "b")));
    let end = guard.finish(WorkOutcome::Ok);
    assert_eq!(end.verdict(), Err(lost_to("job", 2, "b")));
}

#[test]
fn a_store_closed_during_the_work_is_a_loss_with_closed() {
    let store = manual();
    let guard = store.lease("job", "a", TTL).unwrap();
    store.close();
    let end = guard.finish(WorkOutcome::Ok);
    assert_eq!(end.verdict(), Err(Error::Closed));
    assert!(!end.is_released());
}

#[test]
fn failed_work_keeps_its_own_error_when_the_lease_was_released() {
    let store = manual();
    let end = store
        .lease("job", "a", TTL)
        .unwrap()
        .finish(WorkOutcome::Failed);
    assert!(end.is_released());
    assert!(!end.attach_work_error());
    assert_eq!(store.status("job").unwrap().lease, None);
}

#[test]
fn failed_work_under_a_lost_lease_ends_in_the_loss_with_the_work_as_cause() {
    let store = manual();
    let guard = store.lease("job", "a", TTL).unwrap();
    store.advance_clock(TTL).unwrap();
    store.acquire("job", "b", TTL).unwrap();
    let end = guard.finish(WorkOutcome::Failed);
    assert_eq!(end.verdict(), Err(lost_to("job", 2, "b")));
    assert_eq!(end.work(), WorkOutcome::Failed);
    assert!(end.attach_work_error());
}

fn verdict_of(end: &LeaseEnd) -> Result<(), String> {
    end.verdict().map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_guard_gives_the_same_verdicts() {
    let store = aio::Store::open("memory:?clock=manual").await.unwrap();
    let end = store.lease("job", "a", TTL).await.unwrap();
    let end = end.finish(WorkOutcome::Ok).await;
    assert_eq!(verdict_of(&end), Ok(()));

    let guard = store.lease("job", "a", TTL).await.unwrap();
    store.advance_clock(TTL).await.unwrap();
    store.acquire("job", "b", TTL).await.unwrap();
    let end = guard.finish(WorkOutcome::Failed).await;
    assert_eq!(end.verdict(), Err(lost_to("job", 3, "b")));
    assert!(end.attach_work_error());

    let guard = store.lease("other", "a", TTL).await.unwrap();
    store.close().await;
    assert_eq!(
        guard.finish(WorkOutcome::Ok).await.verdict(),
        Err(Error::Closed)
    );
}

/// When the end cannot ask who holds the scope now (here the store was
/// closed), the loss says "unknown", never "nobody": no current token or
/// holder is invented, and the message says the store could not tell.
#[test]
fn a_loss_whose_current_holder_cannot_be_asked_is_unknown_not_free() {
    let store = manual();
    let mut lease = store.acquire("job", "a", TTL).unwrap();
    // Handed over with nothing left: the keep-alive's deadline has passed,
    // so it knows the lease lost but not who holds the scope now.
    lease.remaining = Duration::ZERO;
    let guard = store.keep_alive(lease);
    assert!(guard.is_lost());
    store.close();
    let lost = guard.finish(WorkOutcome::Ok).verdict().unwrap_err();
    assert_eq!(lost.code(), fencing::ErrorCode::LeaseLost);
    assert_ne!(
        lost,
        Error::LeaseLost {
            scope: "job".into(),
            current: None
        },
        "a failed status must not read as a free scope"
    );
    assert_eq!(lost.details().count(), 0, "{lost:?}");
    assert!(lost.to_string().contains("unknown"), "{lost}");
}
