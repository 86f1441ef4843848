//! A write by a process whose build is older than the file's schema is
//! refused inside the write (docs/sqlite.md, "A newer fencing migrated the
//! file"). `open` refuses a file a newer fencing wrote; this covers a handle
//! opened before a newer fencing migrated the file underneath it, whose SQL
//! was written for the older tables and would run against the newer ones
//! (an old retire would update a floor row the newer schema no longer has,
//! and delete the scope anyway).

use rusqlite::Connection;

use super::failure::backend;
use super::SCHEMA_VERSION;
use crate::error::{BackendErrorKind, Error, Result};

/// Refuses the write when the file's schema version (`PRAGMA user_version`,
/// which every migration raises in its own transaction) is newer than this
/// build's. Called first inside the write's `BEGIN IMMEDIATE`: the write
/// lock keeps any migration out until the write commits, so the version read
/// is the one the write runs against. One read of the file's header page.
pub(super) fn refuse_if_newer(tx: &Connection) -> Result<()> {
    let version: i64 = tx
        .prepare_cached("PRAGMA user_version")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .map_err(backend)?;
    if version <= SCHEMA_VERSION {
        return Ok(());
    }
    Err(Error::backend(
        BackendErrorKind::Refused,
        format!(
            "sqlite: the store was migrated by a newer fencing (schema {version}) while this \
             process had it open; this build writes schema {SCHEMA_VERSION}: reopen it with that \
             newer fencing (nothing was written)"
        ),
    ))
}
