//! Python bindings of fencing: the extension module `fencing._native`.
//!
//! The binding is thin. It links the `fencing` core crate directly, converts
//! Python values to the core's types and back, maps the core's errors onto the
//! `fencing.FencingError` tree (defined in `python/fencing/_errors.py`), and
//! releases the GIL around every call into the core. Every rule (argument
//! limits, token order, sequence numbers, versions, leases) is the core's.
//!
//! Everything here is behind the `python` feature, which maturin turns on
//! (`pyproject.toml`): without it the crate is empty, so the workspace's
//! `cargo build`, `clippy` and `nextest` never link against Python.

#[cfg(feature = "python")]
mod cancel;
#[cfg(feature = "python")]
mod convert;
#[cfg(feature = "python")]
mod errors;
#[cfg(feature = "python")]
mod keepalive;
#[cfg(feature = "python")]
mod logs;
#[cfg(feature = "python")]
mod loss_signal;
#[cfg(feature = "python")]
mod objects;
#[cfg(feature = "python")]
mod sqlite_check;
#[cfg(feature = "python")]
mod sqlstate;
#[cfg(feature = "python")]
mod store;
#[cfg(feature = "python")]
mod types;
#[cfg(feature = "python")]
mod watch;

/// Native part of the `fencing` package: import `fencing`, not this module.
#[cfg(feature = "python")]
#[pyo3::pymodule]
mod _native {
    use pyo3::prelude::*;

    #[pymodule_export]
    use crate::cancel::Cancel;
    #[pymodule_export]
    use crate::errors::error_schema;
    #[pymodule_export]
    use crate::keepalive::KeepAlive;
    #[pymodule_export]
    use crate::logs::reset_log_cache;
    #[pymodule_export]
    use crate::objects::{open_objects, Objects};
    #[pymodule_export]
    use crate::sqlite_check::error_from_sqlite_message;
    #[pymodule_export]
    use crate::sqlstate::error_from_sqlstate;
    #[pymodule_export]
    use crate::store::{migrate, open, parse_token, Store};
    #[pymodule_export]
    use crate::types::{
        Delete, Entry, EtcdCheck, Holding, Lease, Object, Page, Put, Receipt, ScopeStatus,
    };
    #[pymodule_export]
    use crate::watch::{LeaseWatch, RejectionWatch};

    /// The greatest token: 2**63 - 1.
    #[pymodule_export]
    const MAX_TOKEN: u64 = fencing::Token::MAX.get();
    /// How far above the store's ceiling ``Store.failover`` moves every
    /// counter, fence and floor: 2**40.
    #[pymodule_export]
    const FAILOVER_STEP: u64 = fencing::FAILOVER_STEP;
    /// Longest scope name, in UTF-8 bytes.
    #[pymodule_export]
    const MAX_SCOPE_BYTES: usize = fencing::limits::MAX_SCOPE_BYTES;
    /// Longest holder label, in UTF-8 bytes.
    #[pymodule_export]
    const MAX_HOLDER_BYTES: usize = fencing::limits::MAX_HOLDER_BYTES;
    /// Longest key, in UTF-8 bytes.
    #[pymodule_export]
    const MAX_KEY_BYTES: usize = fencing::limits::MAX_KEY_BYTES;
    /// Largest value, in bytes (1 MiB).
    #[pymodule_export]
    const MAX_VALUE_BYTES: usize = fencing::limits::MAX_VALUE_BYTES;
    /// Most operations in one `apply` batch.
    #[pymodule_export]
    const MAX_BATCH_OPS: usize = fencing::limits::MAX_BATCH_OPS;
    /// Largest `limit` of one `list` page.
    #[pymodule_export]
    const MAX_LIST_LIMIT: usize = fencing::limits::MAX_LIST_LIMIT;
    /// Keys in one `list` page when no `limit` is given.
    #[pymodule_export]
    const DEFAULT_LIST_LIMIT: usize = fencing::defaults::LIST_LIMIT;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        // The core's logs go to `logging.getLogger("fencing")` from import on.
        crate::logs::install(m.py())?;
        m.add("__version__", env!("CARGO_PKG_VERSION"))
    }
}
