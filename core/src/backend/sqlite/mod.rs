//! `sqlite:PATH`: one file holds counters, leases, fences and entries, for
//! many processes on one host. Every change runs in a `BEGIN IMMEDIATE`
//! transaction that loads the scope, applies the shared rules and writes
//! back, so the check and the change are one atomic step across processes.
//! A token is returned only after its transaction committed (fsync'd with
//! `synchronous=FULL`, the default).

use std::cell::Cell;
use std::fs::OpenOptions;
#[cfg(unix)]
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use super::sql_text::{fill, hash, should_install, OURS};
use super::wakes::{Ticket, Wakes};
use super::{Backend, WatchRead};
use crate::clock::Clock;
use crate::error::{BackendErrorKind, Error, Result};
use crate::events::{
    at_ms, code_from_str, Events, LastWrite, RecordedRejection, RejectionNote, RECORD_INTERVAL,
    REJECTION_LOG,
};
use crate::rules::{
    ceiling_covering, check_jump, failover_step, floor_bucket, jump_limit, plan_ops, recordable,
    LeaseRecord, Mode, ScopeCore, WriteMark, FLOOR_BUCKETS,
};
use crate::token::Token;
use crate::types::{Entry, Fence, Lease, OpRef, Page, Receipt, ScopeStatus};
use crate::url::Synchronous;
use crate::waiting::{longest_sleep, place_life_ms, refresh_due, turn, Attempt, Turn};

mod failure;
mod identity;
mod newer;
mod schema;
mod sidecar;

use identity::{Files, Known, Moves};
use sidecar::Sidecar;

/// The tables by schema version (`PRAGMA user_version`). Version 4 is every
/// table of the development builds, squashed: a file below it was written
/// before the squash and is refused. Each later file moves tables and data.
const MIGRATIONS: [(i64, &str); 5] = [
    (4, include_str!("tables.sql")),
    (5, include_str!("v5.sql")),
    (6, include_str!("v6.sql")),
    (7, include_str!("v7.sql")),
    (8, include_str!("v8.sql")),
];
const FIRST: i64 = MIGRATIONS[0].0;
/// The version that records the file the store lives in (`identity`).
const IDENTITY: i64 = 7;
/// The schema this build writes; files from a newer build are refused.
const SCHEMA_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// The `fencing_check` view and its trigger, in one file.
const CHECK: &str = include_str!("check.sql");

/// Every SQL file of this backend.
#[cfg(test)]
pub(super) fn sql_files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("sqlite/tables.sql", MIGRATIONS[0].1),
        ("sqlite/v5.sql", MIGRATIONS[1].1),
        ("sqlite/v6.sql", MIGRATIONS[2].1),
        ("sqlite/v7.sql", MIGRATIONS[3].1),
        ("sqlite/v8.sql", MIGRATIONS[4].1),
        ("sqlite/check.sql", CHECK),
    ]
}

/// Prepared statements kept per connection (`Settings::connect`).
const STATEMENT_CACHE: usize = 64;

pub(crate) struct Sqlite {
    /// `None` once closed.
    conn: Mutex<Option<Owned>>,
    settings: Settings,
    clock: Clock,
    mode: Mode,
    /// The callers of this handle waiting for a lease to end: woken by its
    /// own releases; another handle's or process's reach them only by
    /// asking again (`wakes`, not pushed). (Not shared by every handle on
    /// the file in the process: a registry of them outlives the handles,
    /// which valgrind counts against the C tests.)
    wakes: Arc<Wakes>,
}

/// A connection, the store's sidecar and the process that opened them.
struct Owned {
    /// Always `Some` until dropped.
    conn: Option<Connection>,
    /// The (st_dev, st_ino) of the file the connection has open.
    at: (u64, u64),
    sidecar: Sidecar,
    /// What the connection's last write left in the file (`None`: read it).
    known: Cell<Option<Known>>,
    /// The files it writes (the main file, its `-wal` and `-shm`).
    files: Files,
    pid: u32,
}

impl Owned {
    fn new(conn: Connection, path: &Path) -> Result<Owned> {
        Ok(Owned {
            at: identity::opened(&conn, path)?,
            sidecar: Sidecar::open(path)?,
            known: Cell::new(None),
            files: Files::opened(&conn),
            conn: Some(conn),
            pid: std::process::id(),
        })
    }

    fn inherited(&self) -> bool {
        self.pid != std::process::id()
    }

    /// Closes, in a forked child, the connection inherited from the parent,
    /// before the child opens its own. SQLite keeps per-process records of
    /// the locks it holds on each file, and the child inherits them without
    /// the locks themselves (POSIX locks are not inherited): a new connection
    /// in the child would find the record, believe the file locked already,
    /// and take no lock, so the parent's close would see no other user,
    /// checkpoint and delete the `-wal` and `-shm` under the child. Closing
    /// the inherited connection first drops that record (when it was the
    /// file's only connection in the parent). It cannot take anything from
    /// the parent: the child holds no lock to release, and the close deletes
    /// the log only if it gets the file's exclusive lock, which the parent's
    /// own shared lock refuses while the parent has the file open.
    fn close_inherited(&mut self) {
        if let Some(conn) = self.conn.take() {
            let _ = conn.close();
        }
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // Inherited across fork() and not used in the child: the parent's.
        if self.inherited() {
            std::mem::forget(self.conn.take());
        }
    }
}

/// How to open a connection to the store's file.
struct Settings {
    path: PathBuf,
    synchronous: Synchronous,
    busy_timeout: Duration,
}

impl Settings {
    fn connect(&self) -> Result<Connection> {
        self.connect_at(&self.path)
    }

    /// [`Self::connect`] to `path`, the file the store opened.
    fn connect_at(&self, path: &Path) -> Result<Connection> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| {
            let message = format!("sqlite: cannot open {}: {e}", path.display());
            Error::backend_from(failure::kind(&e), message, e)
        })?;
        if conn
            .is_readonly(rusqlite::MAIN_DB)
            .map_err(|e| not_a_store(path, e))?
        {
            return Err(Error::backend(
                BackendErrorKind::Refused,
                format!(
                    "sqlite: {} is read-only: the store needs to write",
                    path.display()
                ),
            ));
        }
        conn.busy_timeout(self.busy_timeout).map_err(backend)?;
        // Every statement of the busiest transactions stays prepared: past
        // rusqlite's default of 16 the least recently used one is parsed
        // again, which costs more than the rest of a put on a fast disk.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let sync = match self.synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        };
        // trusted_schema=OFF: the caller's own views and triggers in the
        // file (docs/sqlite.md) may call no function or virtual table that
        // SQLite does not mark harmless, should one ever run on this
        // connection.
        conn.execute_batch(&format!(
            "PRAGMA synchronous={sync}; PRAGMA foreign_keys=OFF; PRAGMA trusted_schema=OFF;"
        ))
        .map_err(|e| not_a_store(path, e))?;
        Ok(conn)
    }
}

use failure::backend;

fn run(conn: &Connection, statement: &str) -> Result<()> {
    conn.prepare_cached(statement)
        .and_then(|mut s| s.execute([]))
        .map(drop)
        .map_err(backend)
}

/// Stored integers are signed; every value we store is in `0..=i64::MAX`.
fn stored(v: i64) -> Result<u64> {
    u64::try_from(v).map_err(|_| corrupt(format!("sqlite: corrupt value {v} in store")))
}

fn stored_token(v: i64) -> Result<Token> {
    Token::new(stored(v)?).ok_or_else(|| corrupt(format!("sqlite: corrupt token {v}")))
}

fn corrupt(message: String) -> Error {
    Error::backend(BackendErrorKind::Corrupt, message)
}

fn sql(v: u64) -> i64 {
    // Tokens, seqs, versions and times are all below 2^63.
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Sqlite {
    /// Creates the file or upgrades its schema, as `open` does, then
    /// closes it: no store is opened (`fencing migrate`).
    pub fn migrate(path: &Path, synchronous: Synchronous, busy_timeout: Duration) -> Result<()> {
        create_private(path)?;
        let settings = Settings {
            path: path.to_owned(),
            synchronous,
            busy_timeout,
        };
        let mut conn = settings.connect()?;
        migrate(&mut conn, path).map_err(|e| e.at(path.display()))?;
        use_wal(&conn, busy_timeout)
    }

    /// `Store::ping` of the file, without opening a store: no file is
    /// created and no schema migrated (`fencing health`).
    pub fn ping(path: &Path, synchronous: Synchronous, busy_timeout: Duration) -> Result<()> {
        let settings = Settings {
            path: path.to_owned(),
            synchronous,
            busy_timeout,
        };
        newer::refuse_unless_current(&settings.connect()?).map_err(|e| e.at(path.display()))
    }

    pub fn open(
        path: &Path,
        synchronous: Synchronous,
        busy_timeout: Duration,
        clock: Clock,
        mode: Mode,
    ) -> Result<Sqlite> {
        create_private(path)?;
        let settings = Settings {
            path: path.to_owned(),
            synchronous,
            busy_timeout,
        };
        let mut conn = settings.connect()?;
        migrate(&mut conn, path).map_err(|e| e.at(path.display()))?;
        use_wal(&conn, busy_timeout)?;
        if mode.unbounded_jumps {
            conn.execute(
                "UPDATE fencing_ceiling SET jump_room = ?1 WHERE id = 1",
                [sql(Token::MAX.get())],
            )
            .map_err(backend)?;
        }
        Ok(Sqlite {
            conn: Mutex::new(Some(Owned::new(conn, path)?)),
            settings,
            clock,
            mode,
            wakes: Wakes::new(false),
        })
    }

    /// The connection, opened afresh in a process forked from the one that
    /// opened it (docs/semantics.md, "Fork"), after closing the inherited
    /// one (`Owned::close_inherited` says why).
    fn conn(&self) -> Result<MutexGuard<'_, Option<Owned>>> {
        let mut guard = self.conn.lock().map_err(|_| {
            Error::backend(
                BackendErrorKind::Other,
                "sqlite: connection poisoned by a panic",
            )
        })?;
        if let Some(owned) = guard.as_mut().filter(|o| o.inherited()) {
            // The file the parent opened, by the absolute name SQLite gave
            // it: a relative path would name another file after a chdir.
            let path = owned.files.main().unwrap_or(&self.settings.path).to_owned();
            owned.close_inherited();
            let conn = self.settings.connect_at(&path)?;
            *guard = Some(Owned::new(conn, &path)?);
        }
        Ok(guard)
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction; commits only on `Ok`,
    /// and only to the file at the store's path, after the failover step if
    /// that file holds a restored or copied history (`identity`;
    /// docs/semantics.md, "SQLite file identity").
    fn write_tx<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        self.write_tx_moving(|tx| f(tx).map(|out| (out, Moves::Tokens { mark: None })))
    }

    /// [`Self::write_tx`] for an operation that says what it moved
    /// ([`identity::Moves`]); one that moved only data commits unnumbered.
    fn write_tx_moving<T>(&self, f: impl FnOnce(&Connection) -> Result<(T, Moves)>) -> Result<T> {
        let guard = self.conn()?;
        let owned = guard.as_ref().ok_or(Error::Closed)?;
        let conn = owned.conn.as_ref().ok_or(Error::Closed)?;
        let path = &self.settings.path;
        run(conn, "BEGIN IMMEDIATE")?;
        // A build older than the file's schema writes nothing; then the
        // file's identity, before the operation. Neither is read again
        // while the file is as this connection's last write left it.
        let known = owned.known.take();
        let out = known
            .map_or(Ok(None), |k| k.current(conn))
            .and_then(|known| {
                if known.is_none() {
                    newer::refuse_if_newer(conn)?;
                }
                identity::enter(conn, path, owned.at, &owned.sidecar, known, step)
            })
            .and_then(|pending| {
                let (out, moves) = f(conn)?;
                let file =
                    identity::commit(conn, path, &owned.sidecar, &owned.files, pending, moves)?;
                owned.known.set(Known::after_commit(conn, file).ok());
                Ok(out)
            });
        if out.is_err() && !conn.is_autocommit() {
            // Nothing of a failed operation may stay behind.
            let _ = run(conn, "ROLLBACK");
        }
        out
    }

    /// Runs `f` on one consistent snapshot, changing nothing. Transaction
    /// control through cached statements: rusqlite's `Transaction` parses
    /// `BEGIN` and `COMMIT` anew on every call, which shows in the cost of a
    /// single fenced write.
    fn read_tx<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let guard = self.conn()?;
        let conn = guard
            .as_ref()
            .and_then(|o| o.conn.as_ref())
            .ok_or(Error::Closed)?;
        run(conn, "BEGIN DEFERRED")?;
        let out = f(conn).and_then(|out| run(conn, "COMMIT").map(|()| out));
        if out.is_err() && !conn.is_autocommit() {
            let _ = run(conn, "ROLLBACK");
        }
        out
    }

    /// Loads, changes and saves one scope in a write transaction.
    fn with_scope<T>(
        &self,
        scope: &str,
        f: impl FnOnce(&Connection, &mut ScopeCore) -> Result<T>,
    ) -> Result<T> {
        self.write_tx_moving(|tx| {
            let loaded = load_scope(tx, scope)?;
            let mut core = match &loaded {
                Some(core) => core.clone(),
                None => ScopeCore::fresh(floor(tx, scope)?),
            };
            let out = f(tx, &mut core)?;
            // An unchanged row is not written again (a repeat put by the
            // holder): SQLite would keep the identical row anyway, but only
            // after running the 13-column upsert, a fifth of a put's CPU.
            let mut mark = None;
            if loaded.as_ref() != Some(&core) {
                save_scope(tx, scope, &core)?;
                mark = Some(cover(tx, core.top())?);
            }
            Ok((out, moves(loaded.as_ref(), &core, mark)))
        })
    }
}

/// Creates a missing database file with owner-only permissions before
/// SQLite opens it (SQLite gives its -wal and -shm files the same mode; on
/// Windows all three get the directory's inherited ACL: docs/packaging.md,
/// "Windows"). `create_new` never follows a symlink (`O_EXCL`; on Windows
/// `FILE_FLAG_OPEN_REPARSE_POINT`): an existing path is left to `migrate`,
/// which decides whether a store may be created in it, but a symlink to
/// nothing is refused here, before SQLite would fail to open it.
fn create_private(path: &Path) -> Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        options.custom_flags(windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let link = std::fs::symlink_metadata(path).map_err(|e| cannot_create(path, e))?;
            if link.file_type().is_symlink() && std::fs::metadata(path).is_err() {
                return Err(Error::backend(
                    BackendErrorKind::Refused,
                    format!(
                    "sqlite: {} is a symlink to a missing file: fencing creates a store only at \
                     a path that is not a symlink (name the file itself)",
                    path.display()
                ),
                ));
            }
            Ok(())
        }
        Err(e) => Err(cannot_create(path, e)),
    }
}

fn cannot_create(path: &Path, e: std::io::Error) -> Error {
    // Say what to change: the path as the process resolved it, a missing
    // directory, a `~` no shell expanded.
    let why = if path.starts_with("~") {
        format!("{e}; `~` is not expanded in a URL: write the home directory out")
    } else {
        match path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) if e.kind() == std::io::ErrorKind::NotFound && !dir.exists() => {
                format!(
                    "its directory {} does not exist: create it first",
                    dir.display()
                )
            }
            _ => e.to_string(),
        }
    };
    Error::backend_from(
        BackendErrorKind::Unreachable,
        format!("sqlite: cannot create {}: {why}", shown(path)),
        e,
    )
}

/// A failure on the first statements of a file: most often a file that is
/// not a SQLite database at all. Names the file, which the driver does not.
fn not_a_store(path: &Path, e: rusqlite::Error) -> Error {
    let what = if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) {
        format!(
            "sqlite: {} is not a SQLite database (name a new file or a fencing store)",
            shown(path)
        )
    } else {
        format!("sqlite: {}: {e}", shown(path))
    };
    Error::backend_from(failure::kind(&e), what, e)
}

/// A path as given, and as this process resolves it when relative (two
/// processes in two directories name two stores with one relative path).
fn shown(path: &Path) -> String {
    match std::path::absolute(path) {
        Ok(abs) if path.is_relative() => format!("{} ({})", path.display(), abs.display()),
        _ => path.display().to_string(),
    }
}

/// Whether a store may be created in the file at `path`, which holds no
/// schema yet: only in a file of this user's own, reached without a symlink.
/// A symlink to an existing store is fine (its schema is checked like any
/// store's); one to an empty file would write the store into whatever file
/// the link names, someone else's included. On Windows only the symlink is
/// checked: who may write the file is its ACL's question (docs/packaging.md,
/// "Windows").
fn may_create(path: &Path) -> Result<()> {
    let link = std::fs::symlink_metadata(path).map_err(|e| cannot_create(path, e))?;
    if link.file_type().is_symlink() {
        return Err(Error::backend(
            BackendErrorKind::Refused,
            "sqlite: the path is a symlink to a file that holds no fencing store: fencing \
             creates a store only at a path that is not a symlink (name the file itself)",
        ));
    }
    #[cfg(unix)]
    owned_by_me(&link)?;
    Ok(())
}

#[cfg(unix)]
fn owned_by_me(link: &std::fs::Metadata) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid(2) cannot fail and touches no memory of ours.
    let euid = unsafe { libc::geteuid() };
    if link.uid() != euid {
        return Err(Error::backend(
            BackendErrorKind::Refused,
            format!(
                "sqlite: the file is owned by uid {}, not by this user (uid {euid}): fencing \
             creates a store only in a file of its own",
                link.uid()
            ),
        ));
    }
    Ok(())
}

/// Switches the file to WAL. The switch needs the file to itself, and SQLite
/// answers "database is locked" at once, without its busy handler, while
/// another connection (another process opening the same fresh file) reads
/// it: so retry, within the busy timeout.
fn use_wal(conn: &Connection, busy_timeout: Duration) -> Result<()> {
    let deadline = std::time::Instant::now() + busy_timeout;
    loop {
        let mode = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0))
            .and_then(|mode| {
                if mode.eq_ignore_ascii_case("wal") {
                    Ok(mode)
                } else {
                    conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
                }
            });
        // A switch that cannot happen yet may also just answer the old mode.
        let busy = match mode {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => format!("journal mode is still {mode}"),
            Err(rusqlite::Error::SqliteFailure(e, m))
                if e.code == rusqlite::ErrorCode::DatabaseBusy =>
            {
                m.unwrap_or_else(|| e.to_string())
            }
            Err(e) => return Err(backend(e)),
        };
        if std::time::Instant::now() >= deadline {
            return Err(Error::backend(
                BackendErrorKind::Busy,
                format!("sqlite: cannot switch to WAL: {busy}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Creates or upgrades the store in the file, after checking that the file
/// holds nothing fencing did not create (`schema::verify`): all in one
/// transaction, which a refusal rolls back, leaving the file as it was.
fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    // The view hashes and measures a scope's bytes in the database's
    // encoding, the library its UTF-8 (`rules::floor_bucket`, `limits`),
    // and SQLite orders keys by the bytes of that encoding: in UTF-16 they
    // disagree. A file's encoding is fixed when it is created.
    let encoding: String = tx
        .query_row("PRAGMA encoding", [], |r| r.get(0))
        .map_err(backend)?;
    if encoding != "UTF-8" {
        return Err(Error::backend(
            BackendErrorKind::Refused,
            format!(
                "sqlite: the file's text encoding is {encoding}; fencing stores need UTF-8 \
             (move the data to a new file)"
            ),
        ));
    }
    let version: i64 = tx
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(backend)?;
    if version > SCHEMA_VERSION {
        return Err(newer::file_refused(version));
    }
    let file = schema::read(&tx)?;
    if version == 0 {
        // A database someone else made is not ours to take over.
        if let Some(o) = file.first() {
            return Err(Error::backend(
                BackendErrorKind::Refused,
                format!(
                    "sqlite: the file is an SQLite database that fencing did not create (it has a \
                 {} \"{}\")",
                    o.kind(),
                    o.name()
                ),
            ));
        }
        may_create(path)?;
    }
    if version > 0 && version < FIRST {
        return Err(Error::backend(
            BackendErrorKind::Refused,
            format!(
                "sqlite: the file has schema version {version}, written by a development build \
             before fencing 0.1; this build upgrades files from version {FIRST}: move its data \
             to a new file"
            ),
        ));
    }
    let check = fill(CHECK);
    let ours = hash(&check);
    let installed = if file.iter().any(|o| o.name() == "fencing_installed") {
        tx.query_row("SELECT hash, version FROM fencing_installed", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()
        .map_err(backend)?
    } else {
        None
    };
    if version > 0 {
        schema::verify(&file, version, installed.clone(), &ours)?;
    }
    for (v, migration) in MIGRATIONS.iter().filter(|(v, _)| *v > version) {
        tx.execute_batch(&fill(migration)).map_err(backend)?;
        tx.pragma_update(None, "user_version", v).map_err(backend)?;
    }
    if version < IDENTITY {
        // The store starts (or, upgraded, starts being watched) in this
        // file: its first write finds itself at home (identity::restored).
        identity::record(&tx, identity::identity(path)?)?;
        // And the sidecar knows it before any write is numbered: else,
        // between the first numbered commit and its sidecar write, another
        // writer would find a numbered file and no record, which reads as
        // a lost sidecar, and step. Another store's record is left: a store
        // made anew where one was deleted must step past it.
        let sidecar = Sidecar::open(path)?;
        if sidecar.read()?.is_none() {
            sidecar.write(&identity::current(&tx)?)?;
        }
    }
    install_check(&tx, &check, &ours, installed)?;
    tx.commit().map_err(backend)
}

/// Installs the `fencing_check` view and trigger (`text`, whose hash is
/// `ours`) unless the file has them as this build writes them (`installed`,
/// what the file records; `schema::verify` has checked the text against it).
fn install_check(
    tx: &Connection,
    text: &str,
    ours: &str,
    installed: Option<(String, String)>,
) -> Result<()> {
    if !should_install(ours, installed) {
        return Ok(());
    }
    tx.execute_batch(&format!("DROP VIEW IF EXISTS fencing_check;\n{text}"))
        .map_err(backend)?;
    tx.execute(
        "INSERT OR REPLACE INTO fencing_installed (id, hash, version) VALUES (1, ?1, ?2)",
        params![ours, OURS],
    )
    .map(drop)
    .map_err(backend)
}

/// The retirement floor of the scope's bucket (0 until a retirement there).
fn floor(tx: &Connection, scope: &str) -> Result<u64> {
    floor_of_bucket(tx, floor_bucket(scope))
}

fn floor_of_bucket(tx: &Connection, bucket: usize) -> Result<u64> {
    let v: Option<i64> = tx
        .prepare_cached("SELECT floor FROM fencing_floors WHERE bucket = ?1")
        .and_then(|mut s| s.query_row([bucket as i64], |r| r.get(0)).optional())
        .map_err(backend)?;
    v.map_or(Ok(0), stored)
}

/// Raises a bucket's floor to at least `floor`.
fn set_floor(tx: &Connection, bucket: usize, floor: u64) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO fencing_floors (bucket, floor) VALUES (?1, ?2) \
         ON CONFLICT (bucket) DO UPDATE SET floor = max(floor, excluded.floor)",
    )
    .and_then(|mut s| s.execute([bucket as i64, sql(floor)]))
    .map(drop)
    .map_err(backend)
}

/// The store's ceiling (`rules::ceiling_covering`), the latest failover
/// step's base (0 before any) and its jump room, as `tx` sees them.
pub(super) struct CeilingRow {
    pub ceiling: u64,
    pub base: u64,
    pub room: u64,
}

impl CeilingRow {
    pub fn read(tx: &Connection) -> Result<CeilingRow> {
        let (ceiling, base, room): (i64, i64, i64) = tx
            .prepare_cached("SELECT ceiling, base, jump_room FROM fencing_ceiling WHERE id = 1")
            .and_then(|mut s| s.query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))))
            .map_err(backend)?;
        Ok(CeilingRow {
            ceiling: stored(ceiling)?,
            base: stored(base)?,
            room: stored(room)?,
        })
    }

    /// The store's jump limit (`rules::jump_limit`).
    pub fn limit(&self) -> u64 {
        jump_limit(self.base, self.room)
    }
}

/// The store's jump limit (`rules::jump_limit`): the latest failover
/// step's base (0 before any) plus the store's jump room.
fn jump_limit_of(tx: &Connection) -> Result<u64> {
    Ok(CeilingRow::read(tx)?.limit())
}

fn set_ceiling(tx: &Connection, ceiling: u64) -> Result<()> {
    tx.prepare_cached("UPDATE fencing_ceiling SET ceiling = ?1 WHERE id = 1")
        .and_then(|mut s| s.execute([sql(ceiling)]))
        .map(drop)
        .map_err(backend)
}

/// Raises the store's ceiling to cover `value` (a scope's counter or fence
/// just saved), in the same transaction.
/// Returns the sidecar's mark of the state it leaves: the greater of the
/// ceiling and the jump limit (`identity::Moves`).
fn cover(tx: &Connection, value: u64) -> Result<u64> {
    let row = CeilingRow::read(tx)?;
    let limit = row.limit();
    let raised = ceiling_covering(row.ceiling, limit, value);
    if raised != row.ceiling {
        set_ceiling(tx, raised)?;
    }
    Ok(raised.max(limit))
}

/// `steps` failover steps (docs/semantics.md, "Failover") in the
/// transaction `tx`: every scope, floor and the ceiling to the last one's
/// base. The first goes 2^40 above the greater of the jump limit, the
/// ceiling and `at_least` (the sidecar's mark when a restored file takes the
/// step: "SQLite file identity"); each next one 2^40 above the jump limit
/// and ceiling the one before left. Returns the base.
fn step(tx: &Connection, at_least: u64, steps: u64) -> Result<u64> {
    let mut row = CeilingRow::read(tx)?;
    row.ceiling = row.ceiling.max(at_least);
    for _ in 0..steps.max(1) {
        (row.base, row.ceiling) = failover_step(row.ceiling, row.limit());
    }
    let CeilingRow { ceiling, base, .. } = row;
    let scopes: Vec<StoredName> = tx
        .prepare_cached("SELECT CAST(scope AS BLOB) FROM fencing_scopes")
        .and_then(|mut s| s.query_map([], |r| r.get(0).map(StoredName))?.collect())
        .map_err(backend)?;
    for scope in &scopes {
        if let Some(mut core) = load_scope(tx, scope)? {
            core.fail_over(base);
            save_scope(tx, scope, &core)?;
        }
    }
    for bucket in 0..FLOOR_BUCKETS {
        set_floor(tx, bucket, base)?;
    }
    set_ceiling(tx, ceiling)?;
    tx.prepare_cached("UPDATE fencing_ceiling SET base = ?1 WHERE id = 1")
        .and_then(|mut s| s.execute([sql(base)]))
        .map_err(backend)?;
    Ok(base)
}

/// The entry at `scope`/`key`, if any.
fn read_entry(tx: &Connection, scope: &str, key: &str) -> Result<Option<Entry>> {
    let row: Option<(Vec<u8>, i64, i64)> = tx
        .prepare_cached(
            "SELECT value, version, token FROM fencing_entries WHERE scope = ?1 AND key = ?2",
        )
        .and_then(|mut s| {
            s.query_row([scope, key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()
        })
        .map_err(backend)?;
    row.map(|(value, version, token)| {
        Ok(Entry {
            key: key.to_owned(),
            value,
            version: stored(version)?,
            token: stored_token(token)?,
        })
    })
    .transpose()
}

/// A scope's name as the file stores it, bound again as text byte for byte:
/// `fencing_check` takes a name from plain SQL that need not be UTF-8 (a
/// program binding Latin-1), and the step must move that scope too.
struct StoredName(Vec<u8>);

impl rusqlite::ToSql for StoredName {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(ValueRef::Text(&self.0)))
    }
}

/// The earliest live place queued for `scope` (`crate::waiting`).
fn head(tx: &Connection, scope: &str, now: u64) -> Result<Option<u64>> {
    let place: Option<i64> = tx
        .prepare_cached(
            "SELECT place FROM fencing_waiters WHERE scope = ?1 AND until_ms > ?2 \
             ORDER BY place LIMIT 1",
        )
        .and_then(|mut st| {
            st.query_row(params![scope, sql(now)], |r| r.get(0))
                .optional()
        })
        .map_err(backend)?;
    place.map(stored).transpose()
}

/// Removes a waiter's place.
fn leave(tx: &Connection, place: u64) -> Result<()> {
    tx.prepare_cached("DELETE FROM fencing_waiters WHERE place = ?1")
        .and_then(|mut st| st.execute([sql(place)]))
        .map(drop)
        .map_err(backend)
}

fn load_scope(tx: &Connection, scope: impl rusqlite::ToSql) -> Result<Option<ScopeCore>> {
    type Row = (
        i64,
        i64,
        bool,
        Option<i64>,
        Option<String>,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        i64,
        (Option<String>, Option<i64>, Option<i64>),
    );
    let row: Option<Row> = tx
        .prepare_cached(
            "SELECT counter, fence, sealed, last_seq, lease_holder, lease_token, lease_ttl_ms, \
             lease_expires, seen_ms, last_holder, last_token, last_write_ms \
             FROM fencing_scopes WHERE scope = ?1",
        )
        .and_then(|mut s| {
            s.query_row([scope], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    (r.get(9)?, r.get(10)?, r.get(11)?),
                ))
            })
            .optional()
        })
        .map_err(backend)?;
    let Some((counter, fence, sealed, last_seq, holder, token, ttl_ms, expires, seen_ms, last)) =
        row
    else {
        return Ok(None);
    };
    let last_write = match last {
        (holder, Some(token), Some(at)) => Some(WriteMark {
            holder,
            token: stored_token(token)?,
            at_ms: stored(at)?,
        }),
        _ => None,
    };
    let lease = match (holder, token, ttl_ms, expires) {
        (Some(holder), Some(token), Some(ttl_ms), Some(expires)) => Some(LeaseRecord {
            holder,
            token: stored_token(token)?,
            ttl_ms: stored(ttl_ms)?,
            expires_at_ms: stored(expires)?,
        }),
        _ => None,
    };
    Ok(Some(ScopeCore {
        counter: stored(counter)?,
        fence: stored(fence)?,
        sealed,
        last_seq: last_seq.map(stored).transpose()?,
        lease,
        seen_ms: stored(seen_ms)?,
        last_write,
    }))
}

fn load_or_fresh(tx: &Connection, scope: &str) -> Result<ScopeCore> {
    match load_scope(tx, scope)? {
        Some(core) => Ok(core),
        None => Ok(ScopeCore::fresh(floor(tx, scope)?)),
    }
}

/// What an operation that turned `before` (`None`: no row) into `after`
/// moved: a new row counts as moving tokens, a lease's deadline does not.
/// `mark`: what [`cover`] returned, if it ran last.
fn moves(before: Option<&ScopeCore>, after: &ScopeCore, mark: Option<u64>) -> Moves {
    let tokens = |c: &ScopeCore| (c.counter, c.fence, c.sealed, c.last_seq);
    match before {
        Some(b) if tokens(b) == tokens(after) => Moves::OnlyData,
        _ => Moves::Tokens { mark },
    }
}

fn save_scope(tx: &Connection, scope: impl rusqlite::ToSql, core: &ScopeCore) -> Result<()> {
    let lease = core.lease.as_ref();
    let last = core.last_write.as_ref();
    tx.prepare_cached(
        "INSERT INTO fencing_scopes (scope, counter, fence, sealed, last_seq, lease_holder, \
         lease_token, lease_ttl_ms, lease_expires, seen_ms, last_holder, last_token, \
         last_write_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
         ON CONFLICT (scope) DO UPDATE SET counter = excluded.counter, fence = excluded.fence, \
         sealed = excluded.sealed, last_seq = excluded.last_seq, \
         lease_holder = excluded.lease_holder, lease_token = excluded.lease_token, \
         lease_ttl_ms = excluded.lease_ttl_ms, lease_expires = excluded.lease_expires, \
         seen_ms = excluded.seen_ms, last_holder = excluded.last_holder, \
         last_token = excluded.last_token, last_write_ms = excluded.last_write_ms",
    )
    .and_then(|mut s| {
        s.execute(params![
            scope,
            sql(core.counter),
            sql(core.fence),
            core.sealed,
            core.last_seq.map(sql),
            lease.map(|l| l.holder.as_str()),
            lease.map(|l| sql(l.token.get())),
            lease.map(|l| sql(l.ttl_ms)),
            lease.map(|l| sql(l.expires_at_ms)),
            sql(core.seen_ms),
            last.and_then(|w| w.holder.as_deref()),
            last.map(|w| sql(w.token.get())),
            last.map(|w| sql(w.at_ms)),
        ])
    })
    .map_err(backend)?;
    Ok(())
}

fn entry_count(tx: &Connection, scope: &str) -> Result<u64> {
    let n: i64 = tx
        .prepare_cached("SELECT count(*) FROM fencing_entries WHERE scope = ?1")
        .and_then(|mut s| s.query_row([scope], |r| r.get(0)))
        .map_err(backend)?;
    stored(n)
}

impl Backend for Sqlite {
    fn next_token(&self, scope: &str) -> Result<Token> {
        self.with_scope(scope, |_, core| core.next_token())
    }

    fn advance_counter(&self, scope: &str, floor: Token) -> Result<u64> {
        self.with_scope(scope, |tx, core| {
            check_jump(scope, core.top(), floor.get(), jump_limit_of(tx)?)?;
            Ok(core.advance_counter(floor))
        })
    }

    fn acquire(&self, scope: &str, holder: &str, ttl: Duration, _called: Instant) -> Result<Lease> {
        let mode = self.mode;
        let lease = self.with_scope(scope, |_, core| {
            core.acquire(scope, holder, ttl, self.clock.now_ms(), mode)
        })?;
        self.wakes.changed(scope);
        Ok(lease)
    }

    fn renew(&self, scope: &str, token: Token, ttl: Duration, _called: Instant) -> Result<Lease> {
        // A refused renewal commits too: the scope's time it saw stays.
        let renewed = self.write_tx_moving(|tx| {
            let now = self.clock.now_ms();
            let Some(mut core) = load_scope(tx, scope)? else {
                let lost = Error::LeaseLost {
                    scope: scope.to_owned(),
                    current: None,
                };
                return Ok((Err(lost), Moves::OnlyData));
            };
            let before = core.clone();
            let renewed = core.renew(scope, token, ttl, now);
            save_scope(tx, scope, &core)?;
            Ok((renewed, moves(Some(&before), &core, None)))
        })??;
        self.wakes.changed(scope);
        Ok(renewed)
    }

    fn release(&self, scope: &str, token: Token, _called: Instant) -> Result<bool> {
        // Whom to wake is read in the release's own transaction, and only
        // when this handle has someone to wake.
        let waited = self.wakes.any();
        let (released, head) = self.write_tx_moving(|tx| {
            let Some(mut core) = load_scope(tx, scope)? else {
                return Ok(((false, None), Moves::OnlyData));
            };
            let before = core.clone();
            let released = core.release(token, self.clock.now_ms());
            save_scope(tx, scope, &core)?;
            // Only the next waiter need wake; an unknown head wakes all.
            let head = if released && waited {
                head(tx, scope, core.seen_ms).ok().flatten()
            } else {
                None
            };
            Ok(((released, head), moves(Some(&before), &core, None)))
        })?;
        if released {
            self.wakes.ended(scope, head);
        }
        Ok(released)
    }

    fn release_watch(&self, scope: &str) -> Ticket {
        self.wakes.ticket(scope)
    }

    fn change_watch(&self, scope: &str) -> Ticket {
        self.wakes.watch_ticket(scope)
    }

    fn watch_read(&self, scope: &str, _id: Option<u64>) -> Result<WatchRead> {
        self.read_tx(|tx| {
            let lease =
                load_scope(tx, scope)?.and_then(|core| core.lease_at(scope, self.clock.now_ms()));
            // Another process's changes reach no ticket of this handle.
            Ok(WatchRead {
                lease,
                id: None,
                announced: false,
            })
        })
    }

    fn acquire_waiting(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        place: Option<u64>,
    ) -> Result<Attempt> {
        let mode = self.mode;
        let life = place_life_ms(ttl);
        let attempt = self.with_scope(scope, |tx, core| {
            // Places are judged by the scope's time, as its leases are: a
            // clock behind it must not bring a run-out place back.
            let now = core.time(self.clock.now_ms());
            let lease_end = core.live_lease(now).map(|l| l.expires_at_ms);
            let earlier: Option<i64> = tx
                .prepare_cached(
                    "SELECT until_ms FROM fencing_waiters WHERE scope = ?1 AND place < ?2 \
                     AND until_ms > ?3 ORDER BY place LIMIT 1",
                )
                .and_then(|mut st| {
                    st.query_row(
                        params![scope, sql(place.unwrap_or(u64::MAX >> 1)), sql(now)],
                        |r| r.get(0),
                    )
                    .optional()
                })
                .map_err(backend)?;
            match turn(lease_end, earlier.map(stored).transpose()?, now) {
                Turn::Yours => {
                    let lease = core.acquire(scope, holder, ttl, now, mode)?;
                    if let Some(place) = place {
                        leave(tx, place)?;
                    }
                    Ok(Attempt::Got(lease))
                }
                Turn::Wait(ms) => {
                    let kept: Option<i64> = match place {
                        Some(p) => tx
                            .prepare_cached(
                                "SELECT until_ms FROM fencing_waiters WHERE place = ?1 AND scope = ?2",
                            )
                            .and_then(|mut st| st.query_row(params![sql(p), scope], |r| r.get(0)).optional())
                            .map_err(backend)?,
                        None => None,
                    };
                    let place = match (place, kept) {
                        (Some(p), Some(until)) if stored(until)? > now => {
                            if refresh_due(stored(until)?, now, life) {
                                tx.prepare_cached("UPDATE fencing_waiters SET until_ms = ?1 WHERE place = ?2")
                                    .and_then(|mut st| st.execute(params![sql(now.saturating_add(life)), sql(p)]))
                                    .map_err(backend)?;
                            }
                            p
                        }
                        _ => {
                            // Places run out are gone for good: cleared here,
                            // so the killed waiters' do not pile up.
                            tx.prepare_cached(
                                "DELETE FROM fencing_waiters WHERE scope = ?1 AND until_ms <= ?2",
                            )
                            .and_then(|mut st| st.execute(params![scope, sql(now)]))
                            .map_err(backend)?;
                            tx.prepare_cached(
                                "INSERT INTO fencing_waiters (scope, until_ms) VALUES (?1, ?2)",
                            )
                            .and_then(|mut st| st.execute(params![scope, sql(now.saturating_add(life))]))
                            .map_err(backend)?;
                            stored(tx.last_insert_rowid())?
                        }
                    };
                    let wait = Duration::from_millis(ms).min(longest_sleep(life));
                    Ok(Attempt::Queued { place, wait })
                }
            }
        })?;
        if let Attempt::Got(_) = attempt {
            self.wakes.changed(scope);
        }
        Ok(attempt)
    }

    fn leave_queue(&self, scope: &str, place: u64) -> Result<()> {
        let head = self.write_tx(|tx| {
            leave(tx, place)?;
            let clock = self.clock.now_ms();
            let core = load_scope(tx, scope)?;
            // The scope's time, as its leases are judged (`ScopeCore::time`).
            let now = core.as_ref().map_or(clock, |c| c.time(clock));
            let free = core.is_none_or(|core| core.live_lease(now).is_none());
            Ok(if free {
                Some(head(tx, scope, now)?)
            } else {
                None
            })
        })?;
        // It may have been next: the one after it is now.
        if let Some(head) = head {
            self.wakes.ended(scope, head);
        }
        Ok(())
    }

    fn write(
        &self,
        scope: &str,
        fence: &Fence,
        ops: &[OpRef<'_>],
        _called: Instant,
    ) -> Result<Vec<Receipt>> {
        let mode = self.mode;
        self.with_scope(scope, |tx, core| {
            check_jump(scope, core.top(), fence.token.get(), jump_limit_of(tx)?)?;
            core.check(scope, fence)?;
            let mut version = tx
                .prepare_cached("SELECT version FROM fencing_entries WHERE scope = ?1 AND key = ?2")
                .map_err(backend)?;
            let receipts = plan_ops(scope, ops, fence.token, |key| {
                let v: Option<i64> = version
                    .query_row([scope, key], |r| r.get(0))
                    .optional()
                    .map_err(backend)?;
                v.map_or(Ok(0), stored)
            })?;
            drop(version);
            core.accept_write(fence, mode);
            core.note_write(fence, self.clock.now_ms());
            let token = sql(fence.token.get());
            // Held for the whole batch: one statement-cache lookup, not one per put.
            let mut upsert = tx
                .prepare_cached(
                    "INSERT INTO fencing_entries (scope, key, value, version, token) \
                     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (scope, key) DO UPDATE \
                     SET value = excluded.value, version = excluded.version, \
                     token = excluded.token",
                )
                .map_err(backend)?;
            for (op, receipt) in ops.iter().zip(&receipts) {
                match op.value {
                    Some(value) => {
                        upsert.execute(params![scope, op.key, value, sql(receipt.version), token])
                    }
                    None => tx
                        .prepare_cached("DELETE FROM fencing_entries WHERE scope = ?1 AND key = ?2")
                        .and_then(|mut s| s.execute(params![scope, op.key])),
                }
                .map_err(backend)?;
            }
            Ok(receipts)
        })
    }

    fn claim(&self, scope: &str, fence: &Fence) -> Result<()> {
        self.with_scope(scope, |tx, core| {
            check_jump(scope, core.top(), fence.token.get(), jump_limit_of(tx)?)?;
            core.claim(scope, fence)
        })
    }

    fn get(&self, scope: &str, key: &str, fence: Option<&Fence>) -> Result<Option<Entry>> {
        let Some(f) = fence else {
            return self.read_tx(|tx| read_entry(tx, scope, key));
        };
        // A read that presents a token checks it where the fence is
        // current: a file restored, copied or moved since the last library
        // write holds a lost history's fence until the step, which only a
        // write transaction takes (docs/semantics.md, "SQLite file
        // identity"). So it runs as one, and writes nothing of its own.
        self.write_tx_moving(|tx| {
            load_or_fresh(tx, scope)?.check_token(scope, f.token)?;
            Ok((read_entry(tx, scope, key)?, Moves::OnlyData))
        })
    }

    fn list(&self, scope: &str, after: Option<&str>, limit: usize) -> Result<Page> {
        self.read_tx(|tx| {
            let keys: Vec<String> = tx
                .prepare_cached(
                    "SELECT key FROM fencing_entries WHERE scope = ?1 AND key > ?2 \
                     ORDER BY key LIMIT ?3",
                )
                .and_then(|mut s| {
                    s.query_map(params![scope, after.unwrap_or(""), limit as i64 + 1], |r| {
                        r.get(0)
                    })?
                    .collect()
                })
                .map_err(backend)?;
            Ok(Page::from_keys(keys, limit))
        })
    }

    fn status(&self, scope: &str) -> Result<ScopeStatus> {
        self.read_tx(|tx| {
            let core = load_or_fresh(tx, scope)?;
            let entries = entry_count(tx, scope)?;
            let now = self.clock.now_ms();
            Ok(ScopeStatus {
                counter: core.counter,
                fence: core.fence,
                lease: core.lease_at(scope, now),
                entries,
            })
        })
    }

    fn retire(&self, scope: &str) -> Result<bool> {
        self.write_tx(|tx| {
            let Some(core) = load_scope(tx, scope)? else {
                return Ok(false);
            };
            let entries = entry_count(tx, scope)?;
            let scope_floor = core.retire_floor(scope, self.clock.now_ms(), entries)?;
            tx.prepare_cached("DELETE FROM fencing_scopes WHERE scope = ?1")
                .and_then(|mut s| s.execute([scope]))
                .map_err(backend)?;
            set_floor(tx, floor_bucket(scope), scope_floor)?;
            Ok(true)
        })
    }

    fn failover(&self) -> Result<u64> {
        let base = self.write_tx(|tx| step(tx, 0, 1))?;
        self.wakes.all_ended();
        Ok(base)
    }

    fn record_rejection(&self, note: &RejectionNote<'_>) -> Result<()> {
        self.write_tx(|tx| {
            let current = load_or_fresh(tx, note.scope)?.fence;
            if !recordable(note.presented, current) {
                return Ok(());
            }
            let now = self.clock.now_ms();
            let since = now.saturating_sub(RECORD_INTERVAL.as_millis() as u64);
            // Another handle's record of the scope within the interval takes this one's count.
            let merged = tx
                .prepare_cached(
                    "UPDATE fencing_rejections SET suppressed = suppressed + ?3 \
                     WHERE id = (SELECT max(id) FROM fencing_rejections \
                                  WHERE scope = ?1 AND at_ms > ?2)",
                )
                .and_then(|mut s| {
                    s.execute(params![note.scope, sql(since), sql(note.suppressed + 1)])
                })
                .map_err(backend)?;
            if merged > 0 {
                return Ok(());
            }
            tx.prepare_cached(
                "INSERT OR REPLACE INTO fencing_rejections (slot, id, scope, key, code, presented, \
                 current, seq, holder, at_ms, suppressed) \
                 SELECT n % ?1, n, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 \
                   FROM (SELECT coalesce(max(id), 0) + 1 AS n FROM fencing_rejections)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    REJECTION_LOG as i64,
                    note.scope,
                    note.key,
                    note.code.as_str(),
                    sql(note.presented.get()),
                    sql(current),
                    note.seq.map(sql),
                    note.holder,
                    sql(now),
                    sql(note.suppressed),
                ])
            })
            .map(drop)
            .map_err(backend)
        })
    }

    fn events(&self, scope: Option<&str>, limit: usize) -> Result<Events> {
        self.read_tx(|tx| {
            let rows = tx
                .prepare_cached(
                    "SELECT id, code, scope, key, presented, current, seq, holder, at_ms, \
                     suppressed FROM fencing_rejections WHERE ?1 IS NULL OR scope = ?1 \
                     ORDER BY id DESC LIMIT ?2",
                )
                .and_then(|mut s| {
                    s.query_map(params![scope, limit as i64], |r| {
                        Ok((
                            (r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get(2)?),
                            (r.get(3)?, r.get::<_, i64>(4)?, r.get::<_, i64>(5)?),
                            (r.get::<_, Option<i64>>(6)?, r.get(7)?),
                            (r.get::<_, i64>(8)?, r.get::<_, i64>(9)?),
                        ))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(backend)?;
            let rejections = rows
                .into_iter()
                .map(
                    |((id, code, scope), (key, presented, current), (seq, holder), (at, n))| {
                        Ok(RecordedRejection {
                            id: stored(id)?,
                            code: code_from_str(&code)?,
                            scope,
                            key,
                            presented: stored_token(presented)?,
                            current: stored(current)?,
                            seq: seq.map(stored).transpose()?,
                            holder,
                            at: at_ms(stored(at)?),
                            suppressed: stored(n)?,
                        })
                    },
                )
                .collect::<Result<Vec<_>>>()?;
            let rows = tx
                .prepare_cached(match scope {
                    // By key when one scope is asked for; a scan of all otherwise.
                    Some(_) => {
                        "SELECT scope, last_holder, last_token, last_write_ms FROM fencing_scopes \
                         WHERE scope = ?1 AND last_token IS NOT NULL LIMIT ?2"
                    }
                    None => {
                        "SELECT scope, last_holder, last_token, last_write_ms FROM fencing_scopes \
                         WHERE ?1 IS NULL AND last_token IS NOT NULL \
                         ORDER BY last_write_ms DESC, scope LIMIT ?2"
                    }
                })
                .and_then(|mut s| {
                    s.query_map(params![scope, limit as i64], |r| {
                        Ok((
                            r.get(0)?,
                            r.get(1)?,
                            r.get::<_, i64>(2)?,
                            r.get::<_, i64>(3)?,
                        ))
                    })?
                    .collect::<rusqlite::Result<Vec<(String, Option<String>, i64, i64)>>>()
                })
                .map_err(backend)?;
            let last_writes = rows
                .into_iter()
                .map(|(scope, holder, token, at)| {
                    Ok(LastWrite {
                        scope,
                        holder,
                        token: stored_token(token)?,
                        at: at_ms(stored(at)?),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Events {
                rejections,
                last_writes,
            })
        })
    }

    fn ping(&self) -> Result<()> {
        self.read_tx(newer::refuse_unless_current)
    }

    fn advance_clock(&self, by: Duration) -> Result<()> {
        self.clock.advance(by)?;
        self.wakes.all_ended();
        Ok(())
    }

    fn close(&self) {
        // Waits and watches of this handle find it closed at once.
        self.wakes.all_ended();
        if let Ok(mut conn) = self.conn.lock() {
            // An inherited connection is left to Owned's drop, which forgets it.
            if let Some(mut o) = conn.take().filter(|o| !o.inherited()) {
                if let Some(c) = o.conn.take() {
                    let _ = c.close();
                }
            }
        }
    }
}
