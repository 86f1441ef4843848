//! The sidecar: a small file beside the store's (`DIR/.NAME-fencing`) that
//! remembers, outside the store's file, how far this store's history went
//! (docs/semantics.md, "SQLite file identity"): the store's id, the number
//! of its latest library write transaction and a bound on every value that
//! history could have reached. A restored or copied file is behind it.
//!
//! Two parts, written after a COMMIT that moved tokens, outside SQLite's
//! write lock:
//!
//! - the **record**, 48 bytes at offset 0 (the store's id, a number and a
//!   mark, checked by a hash), written with one `pwrite` only when it does
//!   not hold this store's id (none, torn, or another store's: at a store's
//!   start, or past a store made anew where one was deleted). A record
//!   that does not read back whole (torn by a crash, foreign, truncated)
//!   counts as none, which can only make the next write step, never miss
//!   one. It is all that development builds before the high-water mark
//!   read and wrote (such a build, sharing a store with this one, would
//!   read the record of the store's start and miss a restore; none was
//!   released);
//! - the **high-water mark**, three words at offset 64 (a tag, the greatest
//!   number and the greatest mark ever recorded here), raised with atomic
//!   `fetch_max` in a shared mapping of the file after every such COMMIT:
//!   never lowered. A record rewritten at each commit went back: a writer
//!   paused between its COMMIT and its `pwrite` wrote its older record
//!   over newer ones, and a backup of the state in between then passed for
//!   current (`a_late_sidecar_write_from_an_older_commit_never_hides_a_restore`).
//!   What a write reads is the record with the high-water mark's number and
//!   mark where they are greater.
//!
//! No fsync: see the residual in docs/semantics.md. Its name starts with a
//! dot so that `rm store.db*` or `cp store.db* backup/` leaves it alone: it
//! must never come back from a backup, nor go away with the store's files.
//! Like SQLite's own `-shm`, which SQLite maps the same way, it must not be
//! truncated while the store is open: a process touching a mapped page
//! past the end of its file is killed (`SIGBUS`).

use std::fs::{File, OpenOptions};
#[cfg(unix)]
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{BackendErrorKind, Error, Result};

const MAGIC: &[u8; 8] = b"fencing1";
const LEN: usize = 48;
/// The high-water mark's words (8 bytes each, from offset 64): its tag,
/// the greatest mark and the greatest number, in the host's byte order
/// (like SQLite's `-shm`: only processes of one host share a store).
const TAG_WORD: usize = 8;
const MARK_WORD: usize = 9;
const GEN_WORD: usize = 10;
const HIGH_TAG: u64 = u64::from_ne_bytes(*b"fencingH");
/// The file's length, at least: every word above inside it (bytes of a
/// mapped page past the end of its file are not kept).
const FILE_LEN: usize = 128;
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

/// The sidecar of the store at `store`: `.NAME-fencing` in its directory,
/// NAME as the file system has it (two names that are not UTF-8 never share
/// one sidecar, as a lossy conversion made them).
pub(super) fn path_of(store: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(store.file_name().unwrap_or_default());
    name.push("-fencing");
    store.with_file_name(name)
}

pub(super) struct Sidecar {
    file: File,
    path: PathBuf,
    map: Map,
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
        // Longer, never shorter: a record written by an earlier version
        // stays where it is.
        let len = file
            .metadata()
            .map_err(|e| io_error(&path, "open", e))?
            .len();
        if len < FILE_LEN as u64 {
            file.set_len(FILE_LEN as u64)
                .map_err(|e| io_error(&path, "extend", e))?;
        }
        let map = Map::new(&file).map_err(|e| io_error(&path, "map", e))?;
        Ok(Sidecar { file, path, map })
    }

    /// The record, or `None` when there is none whole; its number and
    /// mark raised to the high-water mark's.
    pub fn read(&self) -> Result<Option<Record>> {
        let Some(mut record) = self.record() else {
            return Ok(None);
        };
        // The number last, as `raise` writes it last: a number seen comes
        // with a mark at least the one written with it.
        let words = self.map.words();
        if words[TAG_WORD].load(Ordering::Acquire) == HIGH_TAG {
            let gen = words[GEN_WORD].load(Ordering::Acquire);
            let mark = words[MARK_WORD].load(Ordering::Acquire);
            record.gen = record.gen.max(gen);
            record.mark = record.mark.max(mark);
        }
        Ok(Some(record))
    }

    /// The record alone.
    fn record(&self) -> Option<Record> {
        // The record is written after COMMIT, outside the write lock, so a
        // reader can meet a write in progress: a record that fails its check
        // is read again before it counts as none (which would step).
        let words = self.map.words();
        for _ in 0..TORN_READS {
            let mut b = [0u8; LEN];
            for (chunk, word) in b.chunks_exact_mut(8).zip(&words[..LEN / 8]) {
                chunk.copy_from_slice(&word.load(Ordering::Acquire).to_ne_bytes());
            }
            match Record::decode(&b) {
                Some(r) => return Some(r),
                None if &b[..8] == MAGIC => std::thread::yield_now(),
                None => return None,
            }
        }
        None
    }

    /// Raises the high-water mark to `record`'s number and mark, and writes
    /// the record itself only where the one there is not this store's (none,
    /// torn, another store's): a record of this store's id is read with the
    /// high-water mark's number and mark, so it need not follow them. A
    /// store's every write after its first is then two atomic maximums in
    /// the mapping, no system call (the `pwrite` was 2.7% of a `next_token`
    /// on disk: docs/performance.md).
    pub fn write(&self, record: &Record) -> Result<()> {
        self.raise(record);
        if self.record().is_some_and(|r| r.store_id == record.store_id) {
            return Ok(());
        }
        write_all_at(&self.file, &record.encode(), 0).map_err(|e| io_error(&self.path, "write", e))
    }

    /// The high-water mark to at least `record`'s number and mark: the
    /// mark first, so that whoever reads the number reads a mark at least
    /// as high with it.
    fn raise(&self, record: &Record) {
        let words = self.map.words();
        words[MARK_WORD].fetch_max(record.mark, Ordering::AcqRel);
        words[GEN_WORD].fetch_max(record.gen, Ordering::AcqRel);
        words[TAG_WORD].store(HIGH_TAG, Ordering::Release);
    }
}

/// The sidecar's first bytes, mapped shared (`FILE_LEN` of them, in one
/// page): other processes' writes show in it, and its words are updated
/// with atomic instructions that hold across processes.
struct Map {
    base: NonNull<AtomicU64>,
    #[cfg(windows)]
    section: windows_sys::Win32::Foundation::HANDLE,
}

// SAFETY: the mapping lives as long as the `Map` and is only ever touched
// through atomics.
unsafe impl Send for Map {}
unsafe impl Sync for Map {}

impl Map {
    #[cfg(unix)]
    fn new(file: &File) -> std::io::Result<Map> {
        use std::os::fd::AsRawFd;
        // SAFETY: a fresh shared mapping of an open file at least FILE_LEN
        // long; checked for failure below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                FILE_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast()).ok_or_else(|| std::io::Error::other("null mapping"))?;
        Ok(Map { base })
    }

    #[cfg(windows)]
    fn new(file: &File) -> std::io::Result<Map> {
        use std::os::windows::io::AsRawHandle;
        use windows_sys::Win32::Foundation::CloseHandle;
        use windows_sys::Win32::System::Memory::{
            CreateFileMappingW, MapViewOfFile, FILE_MAP_READ, FILE_MAP_WRITE, PAGE_READWRITE,
        };
        // SAFETY: plain calls on an open handle; each result checked.
        unsafe {
            let section = CreateFileMappingW(
                file.as_raw_handle(),
                std::ptr::null(),
                PAGE_READWRITE,
                0,
                FILE_LEN as u32,
                std::ptr::null(),
            );
            if section.is_null() {
                return Err(std::io::Error::last_os_error());
            }
            let view = MapViewOfFile(section, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, FILE_LEN);
            let Some(base) = NonNull::new(view.Value.cast()) else {
                let e = std::io::Error::last_os_error();
                CloseHandle(section);
                return Err(e);
            };
            Ok(Map { base, section })
        }
    }

    /// The mapped words: the record's six, then the high-water mark's.
    fn words(&self) -> &[AtomicU64; FILE_LEN / 8] {
        // SAFETY: FILE_LEN bytes mapped at a page boundary (so aligned for
        // u64), valid until `drop`.
        unsafe { &*self.base.as_ptr().cast::<[AtomicU64; FILE_LEN / 8]>() }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        #[cfg(unix)]
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), FILE_LEN);
        }
        #[cfg(windows)]
        unsafe {
            use windows_sys::Win32::System::Memory::{UnmapViewOfFile, MEMORY_MAPPED_VIEW_ADDRESS};
            UnmapViewOfFile(MEMORY_MAPPED_VIEW_ADDRESS {
                Value: self.base.as_ptr().cast(),
            });
            windows_sys::Win32::Foundation::CloseHandle(self.section);
        }
    }
}

#[cfg(unix)]
fn write_all_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    file.write_all_at(buf, offset)
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

    fn record(gen: u64, mark: u64) -> Record {
        Record {
            store_id: [7; 16],
            gen,
            mark,
        }
    }

    #[test]
    fn a_late_older_record_never_lowers_what_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("s.db");
        let (a, b) = (
            Sidecar::open(&store).unwrap(),
            Sidecar::open(&store).unwrap(),
        );
        b.write(&record(6, 900)).unwrap();
        // A writer that committed number 5 before 6 writes last.
        a.write(&record(5, 800)).unwrap();
        for side in [&a, &b] {
            assert_eq!(side.read().unwrap(), Some(record(6, 900)));
        }
        // And a record that went back (a build that rewrote it at every
        // commit, paused before its write) changes nothing either.
        write_all_at(&a.file, &record(5, 800).encode(), 0).unwrap();
        assert_eq!(b.record(), Some(record(5, 800)));
        for side in [&a, &b] {
            assert_eq!(side.read().unwrap(), Some(record(6, 900)));
        }
        // Number and mark each at their greatest.
        a.write(&record(7, 850)).unwrap();
        assert_eq!(b.read().unwrap(), Some(record(7, 900)));
    }

    #[test]
    fn the_record_is_written_only_where_it_is_not_this_stores() {
        let dir = tempfile::tempdir().unwrap();
        let side = Sidecar::open(&dir.path().join("s.db")).unwrap();
        side.write(&record(3, 10)).unwrap();
        assert_eq!(side.record(), Some(record(3, 10)), "none there: written");
        side.write(&record(4, 20)).unwrap();
        assert_eq!(side.record(), Some(record(3, 10)), "this store's: kept");
        assert_eq!(side.read().unwrap(), Some(record(4, 20)));
        // Another store's id (a store made anew where one was deleted, its
        // first write past the step): written.
        let other = Record {
            store_id: [8; 16],
            gen: 5,
            mark: 30,
        };
        side.write(&other).unwrap();
        assert_eq!(side.record(), Some(other));
        assert_eq!(side.read().unwrap(), Some(other));
    }

    #[test]
    fn a_sidecar_an_earlier_version_wrote_reads_as_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("s.db");
        std::fs::write(path_of(&store), record(4, 70).encode()).unwrap();
        let side = Sidecar::open(&store).unwrap();
        assert_eq!(std::fs::metadata(path_of(&store)).unwrap().len(), 128);
        assert_eq!(side.read().unwrap(), Some(record(4, 70)));
        // No record whole (here: zeroed): nothing, whatever the high-water
        // mark says.
        side.write(&record(9, 90)).unwrap();
        write_all_at(&side.file, &[0u8; LEN], 0).unwrap();
        assert_eq!(side.read().unwrap(), None);
    }

    #[test]
    fn the_sidecar_is_a_hidden_file_beside_the_store() {
        assert_eq!(
            path_of(Path::new("/srv/x/store.db")),
            Path::new("/srv/x/.store.db-fencing")
        );
        assert_eq!(path_of(Path::new("a.db")), Path::new(".a.db-fencing"));
    }

    /// Names that are not UTF-8 keep their own bytes: two stores never
    /// share a sidecar (each would find the other's id and step at every
    /// write turn by turn).
    #[cfg(unix)]
    #[test]
    fn names_that_are_not_utf8_have_sidecars_of_their_own() {
        use std::os::unix::ffi::OsStrExt;
        let name = |bytes: &[u8]| path_of(Path::new(std::ffi::OsStr::from_bytes(bytes)));
        assert_ne!(name(b"a\xff.db"), name(b"a\xfe.db"));
        assert_eq!(
            name(b"a\xff.db").as_os_str().as_bytes(),
            b".a\xff.db-fencing"
        );
    }
}
