//! The file is the store (docs/semantics.md, "SQLite file identity"): every
//! library write transaction starts by asking whether the file at the path
//! holds the latest state of this store, and ends by checking that its
//! connection still writes the file at the path.
//!
//! - [`enter`], right after `BEGIN IMMEDIATE` (under the write lock):
//!   compares the file's record (its id, the file it was last written in,
//!   the number of its latest transaction that moved tokens) with the file
//!   at the path and the sidecar. A restored or copied history takes the
//!   failover step, in this same transaction, before anything else.
//! - [`commit`], after the transaction's own work: numbers a transaction
//!   that moved tokens ([`Moves`]), refuses a connection whose file, `-wal`
//!   or `-shm` was deleted or replaced ([`Files`]), commits, then writes the
//!   sidecar's record.
//! - [`Known`]: what a connection's last commit left in its file, reused
//!   while SQLite's data version says no one has committed since.

use std::cell::Cell;
use std::os::raw::c_int;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::sidecar::{Record, Sidecar};
use super::{backend, run, sql, stored, CeilingRow};
use crate::error::{BackendErrorKind, Error, Result};
use crate::rules::MAX_AUTOMATIC_STEPS;

/// What the file records about itself (`fencing_file`, schema version 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Recorded {
    pub store_id: [u8; 16],
    /// The (st_dev, st_ino) it was last written in; `None` in no file yet.
    pub at: Option<(u64, u64)>,
    /// The latest library write transaction it holds.
    pub gen: u64,
}

/// Whether the file at the path, whose identity is `here`, holds an older
/// or a copied history of its store: written in another file (a rename of
/// a copy, a copy at a new path), behind the sidecar (a copy over the same
/// file, the same file without its WAL), or beside another store's sidecar
/// (a file made anew where one was deleted). No sidecar record: a store
/// that never committed a library write in this file is new, any other was
/// moved here or lost its sidecar.
pub(super) fn restored(file: &Recorded, here: (u64, u64), side: Option<&Record>) -> bool {
    let elsewhere = file.at != Some(here);
    match side {
        None => elsewhere || file.gen > 0,
        Some(s) => elsewhere || s.store_id != file.store_id || file.gen < s.gen,
    }
}

/// A write transaction in flight: what [`commit`] writes to the sidecar.
pub(super) struct Pending {
    store_id: [u8; 16],
    /// The file the connection has open, recorded in it by now.
    here: (u64, u64),
    /// The file's number before this transaction.
    before: u64,
    /// Its number if this transaction takes one.
    gen: u64,
    /// Whether [`enter`] took the failover step: then the number and the
    /// sidecar move whatever the operation did.
    stepped: bool,
}

/// What a library write transaction changed (docs/semantics.md, "SQLite
/// file identity"): only a transaction that moved a counter, fence, floor,
/// sequence number or seal, the ceiling, or took a step, has to be told
/// apart from the state before it, so only such a one takes a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Moves {
    /// `mark`: the sidecar's mark of the state about to commit (the greater
    /// of its ceiling and jump limit), when the operation read it last
    /// already; `None`: [`commit`] reads it.
    Tokens { mark: Option<u64> },
    /// Values, versions, lease deadlines, records for operators: what a
    /// restore loses by definition, and nothing a token's safety rests on.
    OnlyData,
}

/// The (st_dev, st_ino) of the file at `path` (on Windows its volume serial
/// number and file index); a missing file is one that was deleted under
/// this handle.
pub(super) fn identity(path: &Path) -> Result<(u64, u64)> {
    stat(path, || moved(path))
}

/// On Linux, `statx` asking for the inode number alone (the device comes
/// with every answer). A stat that reads a file's times flags its inode
/// (multigrain timestamps, it seems: Linux 6.13 and later): the next write
/// then takes a fine-grained time, so every WAL write dirties the inode and every commit's
/// fsync also commits the file system's journal. With a `stat` of the
/// `-wal` before each commit, a commit took 45-70 us longer on ext4 here.
#[cfg(target_os = "linux")]
fn file_id(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: a zeroed statx is a valid value (plain integers); the call
    // reads the NUL-terminated name and writes only `out`.
    let mut out: libc::statx = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statx(libc::AT_FDCWD, name.as_ptr(), 0, libc::STATX_INO, &mut out) };
    if rc == 0 {
        return Ok((
            libc::makedev(out.stx_dev_major, out.stx_dev_minor),
            out.stx_ino,
        ));
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        // A kernel before 4.11, or a sandbox that refuses the call.
        Some(libc::ENOSYS | libc::EPERM) => {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(path).map(|m| (m.dev(), m.ino()))
        }
        _ => Err(e),
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn file_id(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map(|m| (m.dev(), m.ino()))
}

/// The volume serial number and the 64-bit file index, what Windows offers
/// for (st_dev, st_ino) (std has them on nightly only). The file is opened
/// for no access at all, which no share mode of SQLite's refuses, and its
/// symlinks followed, as `metadata` does on unix.
#[cfg(windows)]
fn file_id(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::windows::fs::OpenOptionsExt;
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{
        GetFileInformationByHandle, BY_HANDLE_FILE_INFORMATION,
    };
    let file = std::fs::OpenOptions::new().access_mode(0).open(path)?;
    // SAFETY: a zeroed BY_HANDLE_FILE_INFORMATION is a valid value (plain
    // integers); the handle is open for the call, which writes only `info`.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    if unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
    Ok((u64::from(info.dwVolumeSerialNumber), index))
}

/// The identity of the file a new connection has open: the one at its path,
/// unless that was replaced while the connection opened.
pub(super) fn opened(conn: &Connection, path: &Path) -> Result<(u64, u64)> {
    let at = identity(path)?;
    if has_moved(conn)? {
        return Err(moved(path));
    }
    Ok(at)
}

/// Records `(dev, ino)` as the file the store lives in (the open that
/// creates or upgrades it, and the step).
pub(super) fn record(tx: &Connection, (dev, ino): (u64, u64)) -> Result<()> {
    tx.prepare_cached("UPDATE fencing_file SET dev = ?1, ino = ?2 WHERE id = 1")
        .and_then(|mut s| s.execute([dev as i64, ino as i64]))
        .map(drop)
        .map_err(backend)
}

/// The sidecar's record of the state `tx` sees (the open that creates or
/// upgrades a store, before anything is numbered).
pub(super) fn current(tx: &Connection) -> Result<Record> {
    let (store_id, gen): (Vec<u8>, i64) = tx
        .query_row(
            "SELECT store_id, gen FROM fencing_file WHERE id = 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(backend)?;
    Ok(Record {
        store_id: store_id
            .try_into()
            .map_err(|_| Error::backend(BackendErrorKind::Corrupt, "sqlite: corrupt store id"))?,
        gen: stored(gen)?,
        mark: mark(tx)?,
    })
}

/// The greater of the ceiling and the jump limit: at or above every value
/// the state `tx` sees could reach.
fn mark(tx: &Connection) -> Result<u64> {
    let row = CeilingRow::read(tx)?;
    Ok(row.ceiling.max(row.limit()))
}

/// Starts a library write transaction (docs/semantics.md, "SQLite file
/// identity") on a connection to the file `here` ([`opened`]); `step` is the
/// failover step, given the sidecar's mark. Whether that file is still the
/// one at `path` is [`commit`]'s question.
///
/// `known`: the file's record as the connection's last commit left it
/// ([`Known::current`]); `None` reads it.
pub(super) fn enter(
    tx: &Connection,
    path: &Path,
    here: (u64, u64),
    sidecar: &Sidecar,
    known: Option<Recorded>,
    step: impl FnOnce(&Connection, u64, u64) -> Result<u64>,
) -> Result<Pending> {
    let file = match known {
        Some(file) => file,
        None => recorded(tx)?,
    };
    // Read on every write, whatever the connection knows: the sidecar is
    // where another file at the path (one renamed away and back, say) shows
    // a history this one does not have.
    let old = sidecar.read()?;
    let mut gen = file.gen + 1;
    let stepped = restored(&file, here, old.as_ref());
    if stepped {
        // A file renamed over this handle's looks like a restore from here:
        // this connection is the one that is out of date.
        if has_moved(tx)? {
            return Err(moved(path));
        }
        // The sidecar of this store bounds what the lost history reached,
        // its own steps included: one step above it. Without it (a copy
        // moved elsewhere, the sidecar lost or another store's) the lost
        // history cannot be bounded: the most steps a store takes by itself
        // (docs/semantics.md, "SQLite file identity"), and above another
        // store's mark still (a store made anew where one was deleted).
        let base = match old {
            Some(r) if r.store_id == file.store_id => step(tx, r.mark, 1)?,
            other => step(tx, other.map_or(0, |r| r.mark), MAX_AUTOMATIC_STEPS)?,
        };
        record(tx, here)?;
        // Logged before the commit that makes it final: a step that rolls
        // back is taken again by the next write, and logged again.
        tracing::warn!(
            target: "fencing",
            store = %path.display(),
            base,
            "sqlite: the store file holds a restored, copied or moved history: failover \
             step taken, every lease ended, every token at or below the base is stale"
        );
        // Past every number the lost history used, so that any other copy
        // of it, a newer backup included, is behind the sidecar too.
        gen = gen.max(old.map_or(0, |r| r.gen) + 1);
    }
    Ok(Pending {
        store_id: file.store_id,
        here,
        before: file.gen,
        gen,
        stepped,
    })
}

/// The file's record (`fencing_file`). A plain read and write: `UPDATE ...
/// RETURNING` fills a temporary table on every call, which cost more than
/// the rest of a put.
fn recorded(tx: &Connection) -> Result<Recorded> {
    let (store_id, dev, ino, gen): (Vec<u8>, Option<i64>, Option<i64>, i64) = tx
        .prepare_cached("SELECT store_id, dev, ino, gen FROM fencing_file WHERE id = 1")
        .and_then(|mut s| s.query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))))
        .map_err(backend)?;
    Ok(Recorded {
        store_id: store_id
            .try_into()
            .map_err(|_| Error::backend(BackendErrorKind::Corrupt, "sqlite: corrupt store id"))?,
        at: dev.zip(ino).map(|(d, i)| (d as u64, i as u64)),
        gen: stored(gen)?,
    })
}

/// Commits a library write transaction begun with [`enter`], unless its
/// connection no longer writes the file at `path`; one that `moves` tokens
/// (or stepped) takes the next number, here and in the sidecar. Returns the
/// file's record as committed.
pub(super) fn commit(
    tx: &Connection,
    path: &Path,
    sidecar: &Sidecar,
    files: &Files,
    pending: Pending,
    moves: Moves,
) -> Result<Recorded> {
    // A state that differs from the one before it only in data need not be
    // told apart from it: no number, no sidecar write (a repeat put; they
    // were a third of its cost on tmpfs, one more page and a write).
    let record = match moves {
        Moves::Tokens { mark } => Some(number(tx, &pending, mark)?),
        Moves::OnlyData if pending.stepped => Some(number(tx, &pending, None)?),
        Moves::OnlyData => None,
    };
    // As late as possible: COMMIT follows at once.
    files.check(tx, path, pending.here)?;
    run(tx, "COMMIT")?;
    // After the commit, never before it: a process killed in between (or a
    // sidecar that cannot be written) leaves the sidecar behind the file,
    // which is never read as a restore. Ahead of it, a process killed during
    // its commit's fsync would make the next write step the whole store,
    // ending every lease. What this leaves open: a restore of exactly the
    // state before a commit whose process died in the microseconds between
    // its COMMIT and this write (docs/semantics.md, "SQLite file identity").
    let gen = record.map_or(pending.before, |r| r.gen);
    if let Some(record) = record {
        let _ = sidecar.write(&record);
    }
    Ok(Recorded {
        store_id: pending.store_id,
        at: Some(pending.here),
        gen,
    })
}

/// Writes the transaction's number into the file; returns the sidecar's
/// record of the state about to be committed (its `mark` read here unless
/// the operation knows it). Here rather than in `enter`: an operation
/// refused (a stale write) rolls back having written nothing.
fn number(tx: &Connection, pending: &Pending, mark: Option<u64>) -> Result<Record> {
    tx.prepare_cached("UPDATE fencing_file SET gen = ?1 WHERE id = 1")
        .and_then(|mut s| s.execute([sql(pending.gen)]))
        .map_err(backend)?;
    let mark = match mark {
        Some(mark) => mark,
        None => self::mark(tx)?,
    };
    Ok(Record {
        store_id: pending.store_id,
        gen: pending.gen,
        mark,
    })
}

/// What a connection's last commit left in its file's record, and SQLite's
/// data version of the file just after it (`SQLITE_FCNTL_DATA_VERSION`: it
/// changes with every commit to the file, this connection's or another's
/// that this connection has noticed, and whenever SQLite drops its cached
/// pages). While the version is unchanged, the file's record and schema
/// version are what that commit left, and a write need not read them again:
/// a version that changed, an error or a rollback means read them.
#[derive(Clone, Copy, Debug)]
pub(super) struct Known {
    data_version: u32,
    file: Recorded,
}

impl Known {
    /// Taken right after a commit that left `file`.
    pub fn after_commit(tx: &Connection, file: Recorded) -> Result<Known> {
        Ok(Known {
            data_version: data_version(tx)?,
            file,
        })
    }

    /// The file's record, if nothing has changed the file since; called
    /// inside the write transaction (after `BEGIN IMMEDIATE`, which is where
    /// SQLite notices another connection's commit).
    pub fn current(self, tx: &Connection) -> Result<Option<Recorded>> {
        Ok((data_version(tx)? == self.data_version).then_some(self.file))
    }
}

fn data_version(tx: &Connection) -> Result<u32> {
    let mut version: u32 = 0;
    // SAFETY: SQLITE_FCNTL_DATA_VERSION writes one unsigned int.
    let rc = unsafe { file_control(tx, rusqlite::ffi::SQLITE_FCNTL_DATA_VERSION, &mut version) };
    if rc != rusqlite::ffi::SQLITE_OK {
        return Err(Error::backend(
            BackendErrorKind::Other,
            format!("sqlite: cannot read the file's data version (code {rc})"),
        ));
    }
    Ok(version)
}

/// `sqlite3_file_control` on the main database of `tx`.
///
/// # Safety
/// `op` must be an opcode that writes at most one `T` through its argument.
unsafe fn file_control<T>(tx: &Connection, op: c_int, out: &mut T) -> c_int {
    // SAFETY: the handle is open for the connection's lifetime, and the
    // caller vouches for what `op` writes.
    unsafe {
        rusqlite::ffi::sqlite3_file_control(
            tx.handle(),
            c"main".as_ptr(),
            op,
            (out as *mut T).cast(),
        )
    }
}

/// Whether the connection's main file is no longer the file at its path
/// (unlinked, or another file renamed over it): SQLite compares the inode
/// it has open with the one at its path.
fn has_moved(tx: &Connection) -> Result<bool> {
    let mut moved: c_int = 0;
    // SAFETY: SQLITE_FCNTL_HAS_MOVED writes one int.
    let rc = unsafe { file_control(tx, rusqlite::ffi::SQLITE_FCNTL_HAS_MOVED, &mut moved) };
    // SQLite's Windows VFS does not implement it: it opens the file without
    // FILE_SHARE_DELETE, so while a connection has it open the file can be
    // neither deleted nor renamed over (SQLite assumes the same when it
    // asks itself, in databaseIsUnmoved).
    #[cfg(windows)]
    if rc == rusqlite::ffi::SQLITE_NOTFOUND {
        return Ok(false);
    }
    if rc != rusqlite::ffi::SQLITE_OK {
        return Err(Error::backend(
            BackendErrorKind::Other,
            format!("sqlite: cannot ask whether the file moved (code {rc})"),
        ));
    }
    Ok(moved != 0)
}

/// The files a connection writes, checked before each commit: the main file
/// is still the one at its path (what `SQLITE_FCNTL_HAS_MOVED` asks, without
/// its `stat`, which reads the file's times: [`file_id`] says why that
/// costs), and its write-ahead log (`-wal`) and the log's index (`-shm`)
/// are the ones it first wrote. SQLite keeps both while any connection has
/// the store open, so one gone or replaced since was deleted under the
/// connection: it would commit to a log no one reads (what another copy of
/// SQLite in the same process does when it closes the file: docs/sqlite.md,
/// "One SQLite per process"), or, with the index gone, take a write lock no
/// new connection sees and write the log beside another writer.
pub(super) struct Files {
    /// The main file, `-wal` and `-shm` as SQLite names them (an absolute
    /// path, symlinks resolved: a later `chdir` changes nothing). `None` on
    /// Windows, where an open file can be neither deleted nor renamed over.
    names: Option<[PathBuf; 3]>,
    /// The `-wal` and `-shm` as first seen.
    seen: Cell<Option<[(u64, u64); 2]>>,
}

impl Files {
    /// The files a new connection has open (the log and its index if they
    /// are there yet: SQLite may create them at the first write).
    pub fn opened(conn: &Connection) -> Files {
        let names = opened_path(conn).map(|db| {
            let with = |suffix: &str| {
                let mut name = db.clone().into_os_string();
                name.push(suffix);
                PathBuf::from(name)
            };
            [with("-wal"), with("-shm"), db]
        });
        let seen = names.as_ref().and_then(|n| logs(n).ok());
        Files {
            names,
            seen: Cell::new(seen),
        }
    }

    /// The main file's absolute name, as SQLite opened it (`None` on
    /// Windows).
    pub fn main(&self) -> Option<&Path> {
        self.names.as_ref().map(|n| n[2].as_path())
    }

    /// Fails with `BACKEND` (`refused`) if the main file at the path is no
    /// longer `here` (the file the connection opened), or the log or its
    /// index is not the one this connection wrote before; called inside a
    /// write transaction, where the connection has all three open. `path`
    /// names the store in the error.
    pub fn check(&self, tx: &Connection, path: &Path, here: (u64, u64)) -> Result<()> {
        let Some(names) = &self.names else {
            return if has_moved(tx)? {
                Err(moved(path))
            } else {
                Ok(())
            };
        };
        if stat(&names[2], || moved(path))? != here {
            return Err(moved(path));
        }
        let now = [
            stat(&names[0], || wal_gone(path))?,
            stat(&names[1], || wal_gone(path))?,
        ];
        match self.seen.get() {
            Some(seen) if seen != now => Err(wal_gone(path)),
            _ => {
                self.seen.set(Some(now));
                Ok(())
            }
        }
    }
}

/// The identities of the `-wal` and `-shm` in `names`.
fn logs(names: &[PathBuf; 3]) -> std::io::Result<[(u64, u64); 2]> {
    Ok([file_id(&names[0])?, file_id(&names[1])?])
}

/// [`file_id`], a missing file being `gone`.
fn stat(name: &Path, gone: impl FnOnce() -> Error) -> Result<(u64, u64)> {
    match file_id(name) {
        Ok(id) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(gone()),
        Err(e) => Err(Error::backend_from(
            BackendErrorKind::Unreachable,
            format!("sqlite: cannot stat {}: {e}", name.display()),
            e,
        )),
    }
}

/// The main file's name as SQLite opened it (`sqlite3_db_filename`).
#[cfg(unix)]
fn opened_path(conn: &Connection) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: the handle is open; SQLite returns NULL or a NUL-terminated
    // name that lives as long as the connection.
    let name = unsafe { rusqlite::ffi::sqlite3_db_filename(conn.handle(), c"main".as_ptr()) };
    if name.is_null() {
        return None;
    }
    // SAFETY: not NULL, NUL-terminated, alive while `conn` is borrowed.
    let bytes = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
    (!bytes.is_empty()).then(|| PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

#[cfg(windows)]
fn opened_path(_conn: &Connection) -> Option<PathBuf> {
    None
}

fn wal_gone(path: &Path) -> Error {
    tracing::warn!(
        target: "fencing",
        store = %path.display(),
        "sqlite: the store's -wal or -shm file was deleted under an open handle"
    );
    Error::backend(
        BackendErrorKind::Refused,
        format!(
            "sqlite: the write-ahead log {0}-wal or its index {0}-shm was deleted or replaced \
             while this handle had the store open (another copy of SQLite in this process \
             closing the file does that: docs/sqlite.md, \"One SQLite per process\"); nothing \
             was committed; reopen the store",
            path.display()
        ),
    )
}

fn moved(path: &Path) -> Error {
    tracing::warn!(
        target: "fencing",
        store = %path.display(),
        "sqlite: the store file was deleted or replaced under an open handle"
    );
    Error::backend(
        BackendErrorKind::Refused,
        format!(
            "sqlite: the store file at {} was deleted or replaced while this handle had it \
             open; nothing was committed; reopen the store",
            path.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const HERE: (u64, u64) = (1, 100);

    fn file(at: Option<(u64, u64)>, gen: u64) -> Recorded {
        Recorded {
            store_id: [1; 16],
            at,
            gen,
        }
    }

    fn side(id: u8, gen: u64) -> Record {
        Record {
            store_id: [id; 16],
            gen,
            mark: 0,
        }
    }

    #[test]
    fn only_the_latest_state_in_its_own_file_is_not_restored() {
        // A new store, or one upgraded from version 6: no step.
        assert!(!restored(&file(Some(HERE), 0), HERE, None));
        assert!(!restored(&file(Some(HERE), 5), HERE, Some(&side(1, 5))));
        // A sidecar behind the file (its update lost in an OS crash).
        assert!(!restored(&file(Some(HERE), 6), HERE, Some(&side(1, 5))));

        // cp of an older copy over the same inode; the file without its WAL.
        assert!(restored(&file(Some(HERE), 4), HERE, Some(&side(1, 5))));
        // Renamed over the path, or copied to a new path.
        assert!(restored(&file(Some((1, 7)), 5), HERE, Some(&side(1, 5))));
        assert!(restored(&file(Some((1, 7)), 5), HERE, None));
        // Another store's sidecar: a file made anew where one was deleted.
        assert!(restored(&file(Some(HERE), 0), HERE, Some(&side(2, 5))));
        // Written before, but no sidecar: it was moved here or lost it.
        assert!(restored(&file(Some(HERE), 3), HERE, None));
        assert!(restored(&file(None, 0), HERE, None));
    }
}
