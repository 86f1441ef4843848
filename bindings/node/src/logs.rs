//! The core's log records (target `fencing`, docs/operations.md, "Logs")
//! to JavaScript: `fencing.js` registers one callback per thread (the main
//! one and each worker that loads the package) and publishes what it gets
//! on `diagnostics_channel` `fencing:log`.
//!
//! The core logs through `tracing`, which hands its events to the `log`
//! crate when no `tracing` subscriber is installed; this module is the
//! addon's one `log::Log`, for the whole process. A record is queued to
//! every registered thread without blocking the thread that logged (a
//! keep-alive, the blocking pool, or JavaScript's own thread for
//! `memory:`); the callbacks are weak, so they never keep a process or a
//! worker alive. Records of other targets (the PostgreSQL driver's, which
//! may print a statement's parameters) are never passed on.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Once, PoisonError};

use log::{LevelFilter, Log, Metadata, Record};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;

/// `[level, target, message]`.
type Entry = (u32, String, String);
/// Records a thread has not taken yet, at most `QUEUE_LIMIT`.
type Queue = Arc<Mutex<VecDeque<Entry>>>;
/// Wakes the thread up to take its records.
type Wake = ThreadsafeFunction<(), Unknown<'static>, (), Status, false, true>;

/// A thread that stops taking its records (busy for long) loses the
/// oldest beyond this many rather than growing without bound.
const QUEUE_LIMIT: usize = 1000;

/// One per registered thread.
static SINKS: Mutex<Vec<(Queue, Wake)>> = Mutex::new(Vec::new());
/// The most detailed level passed on: 1 error .. 5 trace, 0 none.
static MAX_LEVEL: AtomicU32 = AtomicU32::new(0);

struct JsLogger;

static LOGGER: JsLogger = JsLogger;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Log for JsLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        let target = metadata.target();
        (metadata.level() as u32) <= MAX_LEVEL.load(Ordering::Relaxed)
            && (target == "fencing" || target.starts_with("fencing::"))
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        // Never a panic into the thread that logged.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let entry = (
                record.level() as u32,
                record.target().to_owned(),
                record.args().to_string(),
            );
            // A thread whose environment is gone answers Closing: forget it.
            lock(&SINKS).retain(|(queue, wake)| {
                let mut queue = lock(queue);
                if queue.len() == QUEUE_LIMIT {
                    queue.pop_front();
                }
                queue.push_back(entry.clone());
                drop(queue);
                wake.call((), ThreadsafeFunctionCallMode::NonBlocking) != Status::Closing
            });
        }));
    }

    fn flush(&self) {}
}

/// One thread's records, taken on that thread.
#[napi]
pub struct NativeLogQueue {
    queue: Queue,
}

#[napi]
impl NativeLogQueue {
    /// The records logged since the last call, oldest first, as
    /// `[level, target, message]`.
    #[napi(catch_unwind, ts_return_type = "Array<[number, string, string]>")]
    pub fn take(&self) -> Vec<Entry> {
        lock(&self.queue).drain(..).collect()
    }
}

/// Registers this thread for the records up to `maxLevel` (1 error .. 5
/// trace, 0 none; for the whole process): `wake()` is called (weakly: it
/// never keeps the thread alive) when there are records to `take()` from
/// the queue returned. A record logged on this very thread (an inline
/// `memory:` call) waits in the queue until then, or until the thread
/// takes it itself, say before it exits.
#[napi(catch_unwind, ts_args_type = "wake: () => void, maxLevel: number")]
pub fn set_log_callback(
    wake: Function<(), Unknown<'static>>,
    max_level: u32,
) -> Result<NativeLogQueue> {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _ = log::set_logger(&LOGGER);
    });
    let wake: Wake = wake
        .build_threadsafe_function::<()>()
        .callee_handled::<false>()
        .weak::<true>()
        .build_callback(|_| Ok(()))?;
    let queue = Queue::default();
    lock(&SINKS).push((Arc::clone(&queue), wake));
    set_log_level(max_level);
    Ok(NativeLogQueue { queue })
}
/// The process's level: records up to `maxLevel` (1 error .. 5 trace, 0
/// none) go to the registered threads.
#[napi(catch_unwind)]
pub fn set_log_level(max_level: u32) {
    let level = max_level.min(5);
    MAX_LEVEL.store(level, Ordering::Relaxed);
    // Off, Error, Warn, Info, Debug, Trace: level n is the n-th.
    log::set_max_level(
        LevelFilter::iter()
            .nth(level as usize)
            .unwrap_or(LevelFilter::Trace),
    );
}
