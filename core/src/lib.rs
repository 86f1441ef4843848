//! Fencing tokens, leases and a fenced store.
//!
//! A lease holder can pause (GC, VM suspend, a slow network) past its expiry
//! and wake up still believing it owns the resource. Fencing closes that hole
//! at the resource: every acquisition gets a strictly increasing [`Token`],
//! every protected write carries it in a [`Fence`], and the store atomically
//! rejects a token older than the greatest it has accepted.
//!
//! ```
//! use std::time::Duration;
//! use fencing::{Fence, Store, ErrorCode};
//!
//! let store = Store::open("memory:?clock=manual")?;
//! let a = store.acquire("report", "worker-a", Duration::from_secs(10))?;
//! store.advance_clock(Duration::from_secs(11))?;          // A pauses past its expiry
//! let b = store.acquire("report", "worker-b", Duration::from_secs(10))?;
//! store.put("report", "body", b"B's report", &Fence::new(b.token))?;
//! let stale = store.put("report", "body", b"A's report", &Fence::new(a.token));
//! assert_eq!(stale.unwrap_err().code(), ErrorCode::StaleToken);
//! assert_eq!(store.get("report", "body", None)?.unwrap().value, b"B's report");
//! # Ok::<(), fencing::Error>(())
//! ```

pub mod aio;
mod backend;
mod clock;
pub mod defaults;
mod error;
#[cfg(feature = "etcd")]
mod etcd_check;
mod events;
mod keepalive;
mod lease_watch;
pub mod limits;
mod metrics;
#[cfg(feature = "objects")]
pub mod objects;
mod rules;
mod shared_watch;
mod sqlite_check;
mod sqlstate;
mod store;
#[cfg(any(
    feature = "postgres",
    feature = "s3",
    feature = "azure",
    feature = "etcd"
))]
mod system_roots;
mod token;
mod types;
mod url;
mod waiting;
mod watch;
mod worker_role;

pub use error::{
    BackendError, BackendErrorKind, BackendSource, Detail, DetailKind, Error, ErrorCode, Field,
    Result,
};
#[cfg(feature = "etcd")]
pub use etcd_check::EtcdCheck;
pub use events::{
    Events, LastWrite, RecordedRejection, MAX_EVENTS_LIMIT, RECORD_BURST, RECORD_INTERVAL,
    REJECTION_LOG,
};
pub use keepalive::{LeaseEnd, LeaseGuard, LeaseWriter, OnLost, WorkOutcome};
pub use lease_watch::{Holding, LeaseWatch};
pub use metrics::{
    prometheus_text, CallDurations, MetricsSnapshot, Rejection, CALL_BUCKETS_NS, CALL_OPS,
    REJECTION_HISTORY,
};
pub use rules::FAILOVER_STEP;
pub use shared_watch::SharedWatch;
pub use sqlstate::SQLSTATES;
pub use store::{migrate, ping, BackendKind, Store};
pub use token::{parse_token_value, Token};
pub use types::{Entry, Fence, Lease, Op, Page, Receipt, ScopeStatus};
pub use url::{ClockKind, Options, StoreOptions};
#[cfg(feature = "etcd")]
pub use url::{EtcdOptions, EtcdRoots};
#[cfg(feature = "postgres")]
pub use url::{Pooler, PostgresOptions, RootCert, SslMode};
#[cfg(feature = "sqlite")]
pub use url::{SqliteOptions, Synchronous};
pub use watch::{RejectionWatch, Watch, WATCH_POLL};
pub use worker_role::{bound_worker_role, WorkerTimeouts};

/// Compiles the README's examples, so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExamples;
