//! `fencing_set_log_callback`: the core's log records (target `fencing`,
//! docs/operations.md, "Logs") to a C function.
//!
//! The core logs through `tracing`, which hands its events to the `log`
//! crate when no `tracing` subscriber is installed; this module is the
//! library's one `log::Log`, installed the first time a callback is set.
//! Records of other targets (the PostgreSQL driver's, which may print a
//! statement's parameters) are never passed on.

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Once, RwLock};

use fencing::Error;
use log::{LevelFilter, Log, Metadata, Record};

use crate::boundary::{boundary, c_text};
use crate::status::fencing_status;

/// An error: the library cannot do what it was asked (none yet).
pub const FENCING_LOG_ERROR: u32 = 1;
/// Something an operator should look at: a stale or out-of-order
/// rejection, a lease the keep-alive lost, a renewal that failed, a
/// failover step, a lost PostgreSQL connection.
pub const FENCING_LOG_WARN: u32 = 2;
/// A PostgreSQL reconnect. Quiet at this level in normal operation.
pub const FENCING_LOG_INFO: u32 = 3;
/// Normal operation: acquisitions, renewals, releases, renewal retries.
pub const FENCING_LOG_DEBUG: u32 = 4;
/// Reserved for finer detail (none yet).
pub const FENCING_LOG_TRACE: u32 = 5;

/// Receives one log record: `level` 1 (`FENCING_LOG_ERROR`) to 5
/// (`FENCING_LOG_TRACE`), `message` the record's NUL-terminated UTF-8 text
/// (fields as `name=value`; scopes, tokens, holders and keys, never a value
/// or a password), valid only during the call; `user_data` what
/// `fencing_set_log_callback` was given. Called on the thread that logged:
/// the caller's, or a keep-alive's. It must return promptly and must not
/// unwind (a C++ exception); fencing calls it makes log nothing.
pub type fencing_log_callback =
    Option<unsafe extern "C" fn(level: u32, message: *const c_char, user_data: *mut c_void)>;

struct Sink {
    callback: unsafe extern "C" fn(u32, *const c_char, *mut c_void),
    user_data: *mut c_void,
}

// SAFETY: documented at `fencing_set_log_callback`: `user_data` must be
// usable from any thread; this library only passes it back to the callback.
unsafe impl Send for Sink {}
// SAFETY: as above; the pointer is only copied, never dereferenced here.
unsafe impl Sync for Sink {}

/// The callback. Held for reading while it runs, so that replacing it
/// waits for every call in flight.
static SINK: RwLock<Option<Sink>> = RwLock::new(None);
/// The most detailed level passed on (0: none), read before any work.
static MAX_LEVEL: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// This thread is inside the callback: what it logs is dropped rather
    /// than taking the lock again.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

struct CLogger;

static LOGGER: CLogger = CLogger;

fn ours(target: &str) -> bool {
    target == "fencing" || target.starts_with("fencing::")
}

impl Log for CLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        (metadata.level() as u32) <= MAX_LEVEL.load(Ordering::Relaxed) && ours(metadata.target())
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) || IN_CALLBACK.with(Cell::get) {
            return;
        }
        // A panic (formatting, a poisoned lock) ends here, never in the
        // thread that logged, which may be a keep-alive about to report.
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let sink = SINK.read().unwrap_or_else(|p| p.into_inner());
            let Some(sink) = sink.as_ref() else {
                return;
            };
            let message = c_text(&record.args().to_string());
            IN_CALLBACK.with(|c| c.set(true));
            // SAFETY: the caller's function, with the caller's pointer, as
            // `fencing_set_log_callback`'s contract says; the text lives
            // until it returns.
            unsafe { (sink.callback)(record.level() as u32, message.as_ptr(), sink.user_data) };
            IN_CALLBACK.with(|c| c.set(false));
        }));
    }

    fn flush(&self) {}
}

/// Sends the library's log records of level `max_level` or more severe
/// (`FENCING_LOG_WARN` for what needs attention, `FENCING_LOG_INFO` adds
/// reconnects, `FENCING_LOG_DEBUG` every acquisition, renewal and release)
/// to `callback` with `user_data`, replacing any callback set before. A
/// NULL `callback` or a `max_level` of 0 turns logging off (the default);
/// a `max_level` above 5 means 5.
///
/// Thread-safe; the callback may be called from any thread, at once from
/// several, so `user_data` must be usable from all of them. When this call
/// returns, the previous callback is no longer running and is never called
/// again. It must not be called from inside the callback (INVALID_ARGUMENT).
///
/// Fails with INVALID_ARGUMENT also when the process already has another
/// Rust `log` logger in this copy of the library (a Rust program linking
/// the static library and installing its own); logs then go there.
#[unsafe(no_mangle)]
pub extern "C" fn fencing_set_log_callback(
    callback: fencing_log_callback,
    max_level: u32,
    user_data: *mut c_void,
) -> fencing_status {
    boundary(|| {
        if IN_CALLBACK.with(Cell::get) {
            return Err(Error::InvalidArgument(
                "fencing_set_log_callback called from inside the log callback".into(),
            )
            .into());
        }
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| {
            let _ = log::set_logger(&LOGGER);
        });
        if !is_ours(log::logger()) {
            return Err(Error::InvalidArgument(
                "another Rust logger is installed in this process: fencing logs there".into(),
            )
            .into());
        }
        let level = match callback {
            Some(_) => max_level.min(FENCING_LOG_TRACE),
            None => 0,
        };
        let mut sink = SINK.write().unwrap_or_else(|p| p.into_inner());
        // Lowered first, so that no record starts formatting for a
        // callback that is going away.
        MAX_LEVEL.store(0, Ordering::Relaxed);
        *sink = callback.filter(|_| level > 0).map(|callback| Sink {
            callback,
            user_data,
        });
        MAX_LEVEL.store(level, Ordering::Relaxed);
        // Off, Error, Warn, Info, Debug, Trace: level n is the n-th.
        log::set_max_level(
            LevelFilter::iter()
                .nth(level as usize)
                .unwrap_or(LevelFilter::Trace),
        );
        Ok(())
    })
}

/// Whether the process's `log` logger is this module's.
fn is_ours(logger: &dyn Log) -> bool {
    std::ptr::addr_eq(logger as *const dyn Log, &LOGGER as *const CLogger)
}
