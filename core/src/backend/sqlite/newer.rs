//! A write by a process whose build is older than the file's schema is
//! refused inside the write (docs/sqlite.md, "A newer fencing migrated the
//! file"). `open` refuses a file a newer fencing wrote; this covers a handle
//! opened before a newer fencing migrated the file underneath it, whose SQL
//! was written for the older tables and would run against the newer ones
//! (an old retire would update a floor row the newer schema no longer has,
//! and delete the scope anyway). `Store::ping` asks the same question, and
//! also refuses a file whose schema is older than this build's.

use rusqlite::Connection;

use super::failure::backend;
use super::SCHEMA_VERSION;
use crate::error::{BackendErrorKind, Error, Result};

/// The file's schema version: one read of its header page.
fn version(conn: &Connection) -> Result<i64> {
    conn.prepare_cached("PRAGMA user_version")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .map_err(backend)
}

/// Refuses the write when the file's schema version (`PRAGMA user_version`,
/// which every migration raises in its own transaction) is newer than this
/// build's. Called first inside the write's `BEGIN IMMEDIATE`: the write
/// lock keeps any migration out until the write commits, so the version read
/// is the one the write runs against. One read of the file's header page.
pub(super) fn refuse_if_newer(tx: &Connection) -> Result<()> {
    let version = version(tx)?;
    if version <= SCHEMA_VERSION {
        return Ok(());
    }
    Err(newer(version))
}

/// `Store::ping`: the file's schema is the one this build writes. Newer is
/// `open`'s refusal (a ping may come from a handle or from no handle at all,
/// so not the write's, which speaks of the handle); older means the file at the store's path is not
/// the one `open` migrated (replaced or restored underneath the store), and
/// only a migration makes it usable again.
pub(super) fn refuse_unless_current(conn: &Connection) -> Result<()> {
    let version = version(conn)?;
    if version > SCHEMA_VERSION {
        return Err(file_refused(version));
    }
    if version < SCHEMA_VERSION {
        return Err(Error::backend(
            BackendErrorKind::Refused,
            format!(
                "sqlite: the file has schema version {version}, older than this build's \
                 {SCHEMA_VERSION}: run `fencing migrate` on it (or reopen the store)"
            ),
        ));
    }
    Ok(())
}

/// How `open` refuses a file a newer fencing wrote.
pub(super) fn file_refused(version: i64) -> Error {
    Error::backend(
        BackendErrorKind::Refused,
        format!(
            "sqlite: the file has schema version {version}, written by a newer fencing; this \
             build knows versions up to {SCHEMA_VERSION}"
        ),
    )
}

fn newer(version: i64) -> Error {
    Error::backend(
        BackendErrorKind::Refused,
        format!(
            "sqlite: the store was migrated by a newer fencing (schema {version}) while this \
             process had it open; this build writes schema {SCHEMA_VERSION}: reopen it with that \
             newer fencing (nothing was written)"
        ),
    )
}
