//! The sidecar: a small file beside the store's (`DIR/.NAME-fencing`) that
//! remembers, outside the store's file, how far this store's history went
//! (docs/semantics.md, "SQLite file identity"): the store's id, the number
//! of its latest library write transaction and a bound on every value that
//! history could have reached. A restored or copied file is behind it.
//!
//! One fixed record of 48 bytes at offset 0, written with one `pwrite`
//! inside the write transaction, under the store's write lock, so writers
//! never interleave. A record that does not read back whole (torn by a
//! crash, foreign, truncated) counts as none, which can only make the next
//! write step, never miss one. No fsync: see the residual in
//! docs/semantics.md. Its name starts with a dot so that `rm store.db*` or
//! `cp store.db* backup/` leaves it alone: it must never come back from a
//! backup, nor go away with the store's files.

use std::fs::{File, OpenOptions};
#[cfg(unix)]
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{BackendErrorKind, Error, Result};

const MAGIC: &[u8; 8] = b"fencing1";
const LEN: usize = 48;
/// Reads of a record that fails its check before it counts as none.
const TORN_READS: usize = 3;

/// What the sidecar remembers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Record {
    pub store_id: [u8; 16],
    /// The latest library write transaction that got as far as its commit.
    pub gen: u64,
    /// At or above every counter, fence and floor that history could reach:
    /// the greater of the ceiling and the jump limit at that commit.
    pub mark: u64,
}

impl Record {
    fn encode(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[..8].copy_from_slice(MAGIC);
        b[8..24].copy_from_slice(&self.store_id);
        b[24..32].copy_from_slice(&self.gen.to_le_bytes());
        b[32..40].copy_from_slice(&self.mark.to_le_bytes());
        let check = fnv64(&b[..40]);
        b[40..].copy_from_slice(&check.to_le_bytes());
        b
    }

    fn decode(b: &[u8; LEN]) -> Option<Record> {
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        if &b[..8] != MAGIC || word(40) != fnv64(&b[..40]) {
            return None;
        }
        Some(Record {
            store_id: b[8..24].try_into().unwrap(),
            gen: word(24),
            mark: word(32),
        })
    }
}

fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The sidecar of the store at `store`: `.NAME-fencing` in its directory.
pub(super) fn path_of(store: &Path) -> PathBuf {
    let name = store
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    store.with_file_name(format!(".{name}-fencing"))
}

pub(super) struct Sidecar {
    file: File,
    path: PathBuf,
}

impl Sidecar {
    /// Opens the sidecar of the store at `store`, creating it empty (mode
    /// 0600; on Windows the directory's inherited ACL) if missing; a symlink
    /// there is refused (`O_NOFOLLOW`; on Windows the link itself is opened,
    /// `FILE_FLAG_OPEN_REPARSE_POINT`, and refused), as at the store's own
    /// path. A store reached through a symlink has the sidecar of the file
    /// the link names, the one every path to it shares.
    pub fn open(store: &Path) -> Result<Sidecar> {
        let real = std::fs::canonicalize(store).unwrap_or_else(|_| store.to_owned());
        let path = path_of(&real);
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        #[cfg(windows)]
        {
            use std::os::windows::fs::OpenOptionsExt;
            options.custom_flags(
                windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT,
            );
        }
        let file = options
            .open(&path)
            .map_err(|e| io_error(&path, "open", e))?;
        #[cfg(windows)]
        if file.metadata().is_ok_and(|m| m.file_type().is_symlink()) {
            let e = std::io::Error::other("it is a symlink, which fencing never follows here");
            return Err(io_error(&path, "open", e));
        }
        Ok(Sidecar { file, path })
    }

    /// The record, or `None` when there is none whole.
    pub fn read(&self) -> Result<Option<Record>> {
        // The sidecar is written after COMMIT, outside the write lock, so a
        // reader can meet a write in progress: a record that fails its check
        // is read again before it counts as none (which would step).
        let mut b = [0u8; LEN];
        for _ in 0..TORN_READS {
            match read_exact_at(&self.file, &mut b, 0) {
                Ok(()) => match Record::decode(&b) {
                    Some(r) => return Ok(Some(r)),
                    None if &b[..8] == MAGIC => std::thread::yield_now(),
                    None => return Ok(None),
                },
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
                Err(e) => return Err(io_error(&self.path, "read", e)),
            }
        }
        Ok(None)
    }

    /// Writes `record`, or (`None`) a record that reads as none.
    pub fn write(&self, record: Option<&Record>) -> Result<()> {
        let bytes = record.map_or([0u8; LEN], Record::encode);
        write_all_at(&self.file, &bytes, 0).map_err(|e| io_error(&self.path, "write", e))
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    file.read_exact_at(buf, offset)
}

#[cfg(unix)]
fn write_all_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    file.write_all_at(buf, offset)
}

/// `read_exact_at` with Windows's positioned reads (which also move the
/// file's cursor: nothing here uses it).
#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(windows)]
fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_write(buf, offset) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> Error {
    let kind = match e.kind() {
        std::io::ErrorKind::PermissionDenied => BackendErrorKind::Refused,
        _ => BackendErrorKind::Unreachable,
    };
    let message = format!(
        "sqlite: cannot {what} the store's sidecar {}: {e}",
        path.display()
    );
    Error::backend_from(kind, message, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_a_damaged_one_reads_as_none() {
        let r = Record {
            store_id: [7; 16],
            gen: 42,
            mark: 1 << 50,
        };
        let mut b = r.encode();
        assert_eq!(Record::decode(&b), Some(r));
        b[30] ^= 1;
        assert_eq!(Record::decode(&b), None);
        assert_eq!(Record::decode(&[0; LEN]), None);
    }

    #[test]
    fn the_sidecar_is_a_hidden_file_beside_the_store() {
        assert_eq!(
            path_of(Path::new("/srv/x/store.db")),
            Path::new("/srv/x/.store.db-fencing")
        );
        assert_eq!(path_of(Path::new("a.db")), Path::new(".a.db-fencing"));
    }
}
