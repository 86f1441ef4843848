//! Waits for a future on the caller's own thread, up to a deadline. A call
//! made inside a caller's tokio runtime polls its client half and its socket
//! here (`notices::Socket::run`), with no runtime entered: the socket was made on `runtime::Runtime`, whose
//! thread only watches it and wakes this one when a reply can be read.
//! Dropping the future at the deadline is what gives up the call.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Instant;

struct Unpark {
    thread: Thread,
    woken: AtomicBool,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

/// The future's output, or `None` if the deadline passed first (the future
/// is dropped unfinished then).
pub(crate) fn wait<F: Future>(future: F, deadline: Instant) -> Option<F::Output> {
    let unpark = Arc::new(Unpark {
        thread: std::thread::current(),
        woken: AtomicBool::new(false),
    });
    let waker = Waker::from(unpark.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return Some(out);
        }
        // park_timeout may return early (a stray unpark): sleep until woken.
        while !unpark.woken.swap(false, Ordering::Acquire) {
            let left = deadline.checked_duration_since(Instant::now())?;
            if left.is_zero() {
                return None;
            }
            std::thread::park_timeout(left);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ready_futures_finish_and_pending_ones_time_out() {
        let soon = Instant::now() + Duration::from_secs(5);
        assert_eq!(wait(async { 7 }, soon), Some(7));
        let now = Instant::now() + Duration::from_millis(20);
        assert_eq!(wait(std::future::pending::<()>(), now), None);
    }

    #[test]
    fn a_wake_from_another_thread_is_seen() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            let _ = tx.send(5);
        });
        let later = Instant::now() + Duration::from_secs(30);
        assert_eq!(wait(rx, later), Some(Ok(5)));
    }
}
