//! Fenced objects and files (docs/objects.md): the object and the pointer of
//! the paused-worker story, fenced where they are stored. Each object path
//! remembers the greatest token accepted for it, and a write with a smaller
//! one is refused, as the fenced store refuses it; the store's own
//! create-only writes enforce it (docs/semantics.md, "Fenced objects"),
//! never a read followed by an unconditional write.
//!
//! ```
//! use fencing::objects::Objects;
//! use fencing::{Fence, Token};
//!
//! let objects = Objects::open("memory:")?;
//! let t = |n| Fence::new(Token::new(n).unwrap());
//! objects.put("reports/today.csv", &t(2), b"a,b\n", None)?;
//! let stale = objects.put("reports/today.csv", &t(1), b"old", None);
//! assert_eq!(stale.unwrap_err().code(), fencing::ErrorCode::StaleToken);
//! let now = objects.get("reports/today.csv")?.unwrap();
//! assert_eq!((now.bytes.as_slice(), now.token.get()), (&b"a,b\n"[..], 2));
//! # Ok::<(), fencing::Error>(())
//! ```

pub mod aio;
#[cfg(feature = "azure")]
mod azure;
#[cfg(any(feature = "s3", feature = "azure"))]
mod cloud;
mod layout;
#[cfg(feature = "s3")]
mod s3;

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStore;

use crate::error::{BackendErrorKind, Error, Result};
use crate::token::Token;
use crate::types::{Fence, Receipt};

/// An object as read: its bytes, and the token and version of the write
/// that stored them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    pub bytes: Vec<u8>,
    pub token: Token,
    /// Grows with every write of the path, deletes included; never reused.
    pub version: u64,
}

/// Fenced objects, blocking: each call runs on the handle's own runtime
/// thread and waits for it, so it may be called from any thread, inside
/// another async runtime too (where [`aio::Objects`] is the better fit).
/// After `fork()` the child's first call starts a runtime of its own and
/// opens the URL again, never using the parent's connections
/// (docs/semantics.md, "Fork"); `memory:` keeps the child's copy.
pub struct Objects {
    running: Mutex<Running>,
    /// What a child process opens again (`None`: `memory:`).
    url: Option<String>,
}

/// The handle as one process runs it.
struct Running {
    pid: u32,
    inner: aio::Objects,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Objects {
    /// Opens `memory:` (this handle's own, empty), `file:///DIR` (an
    /// existing directory), `s3://BUCKET[/PREFIX]` or
    /// `az://CONTAINER[/PREFIX]` (docs/objects.md).
    pub fn open(url: &str) -> Result<Objects> {
        let inner = aio::Objects::open(url)?;
        Ok(Objects {
            running: Mutex::new(Running {
                pid: std::process::id(),
                inner,
                runtime: Some(runtime()?),
            }),
            url: (url != "memory:").then(|| url.to_owned()),
        })
    }

    /// [`aio::Objects::put`].
    pub fn put(
        &self,
        path: &str,
        fence: &Fence,
        bytes: &[u8],
        expected_version: Option<u64>,
    ) -> Result<Receipt> {
        let (path, fence, bytes) = (path.to_owned(), fence.clone(), bytes.to_vec());
        self.run(|inner| async move { inner.put(&path, &fence, &bytes, expected_version).await })
    }

    /// [`aio::Objects::delete`].
    pub fn delete(
        &self,
        path: &str,
        fence: &Fence,
        expected_version: Option<u64>,
    ) -> Result<Receipt> {
        let (path, fence) = (path.to_owned(), fence.clone());
        self.run(|inner| async move { inner.delete(&path, &fence, expected_version).await })
    }

    /// [`aio::Objects::get`].
    pub fn get(&self, path: &str) -> Result<Option<Object>> {
        let path = path.to_owned();
        self.run(|inner| async move { inner.get(&path).await })
    }

    /// The async handle on the same store (in this process: after `fork()`,
    /// the child's own).
    pub fn aio(&self) -> Result<aio::Objects> {
        self.current().map(|(inner, _)| inner)
    }

    /// This process's handle and runtime: a child of `fork()` makes its own
    /// the first time (the parent's runtime threads do not exist in it).
    fn current(&self) -> Result<(aio::Objects, tokio::runtime::Handle)> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let pid = std::process::id();
        if running.pid != pid {
            let inner = match &self.url {
                Some(url) => aio::Objects::open(url)?,
                None => running.inner.clone(),
            };
            let runtime = runtime()?;
            // The parent's: its threads are gone, and dropping it here
            // would wait for them or touch the parent's connections.
            std::mem::forget(running.runtime.replace(runtime));
            running.inner = inner;
            running.pid = pid;
        }
        let Some(runtime) = &running.runtime else {
            return Err(Error::Closed);
        };
        Ok((running.inner.clone(), runtime.handle().clone()))
    }

    fn run<T, F>(&self, call: impl FnOnce(aio::Objects) -> F) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let (inner, runtime) = self.current()?;
        let (done, result) = std::sync::mpsc::channel();
        let call = call(inner);
        runtime.spawn(async move {
            let _ = done.send(call.await);
        });
        result.recv().unwrap_or_else(|_| {
            Err(Error::backend(
                BackendErrorKind::Other,
                "objects: its runtime stopped",
            ))
        })
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("fencing-objects")
        .enable_all()
        .build()
        .map_err(|e| {
            let message = format!("objects: cannot start its runtime: {e}");
            Error::backend_from(BackendErrorKind::Other, message, e)
        })
}

impl Drop for Objects {
    /// Waits for the runtime's threads to end (a C program may unload the
    /// library next), on a thread of its own: dropping a runtime inside a
    /// caller's async runtime would panic. A call still in flight is
    /// abandoned at its next await, and a blocking file operation waited
    /// for at most 5 s.
    fn drop(&mut self) {
        let running = self
            .running
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(runtime) = running.runtime.take() else {
            return;
        };
        if running.pid != std::process::id() {
            // The parent's: its threads do not exist in this child.
            std::mem::forget(runtime);
            return;
        }
        let handed = Arc::new(Mutex::new(Some(runtime)));
        let theirs = handed.clone();
        let stopping = std::thread::Builder::new()
            .name("fencing-objects-stop".into())
            .spawn(move || {
                let runtime = theirs.lock().ok().and_then(|mut r| r.take());
                if let Some(runtime) = runtime {
                    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
                }
            });
        match stopping {
            Ok(thread) => {
                let _ = thread.join();
            }
            // No thread to spare: its threads end by themselves.
            Err(_) => {
                let runtime = handed.lock().ok().and_then(|mut r| r.take());
                if let Some(runtime) = runtime {
                    runtime.shutdown_background();
                }
            }
        }
    }
}

struct Opened {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    local_root: Option<std::path::PathBuf>,
    /// Whether to check, before the first write, that the store refuses a
    /// second create-only write of one object.
    probe: bool,
}

fn open_url(url: &str) -> Result<Opened> {
    if url.len() > crate::url::MAX_URL_BYTES {
        return Err(Error::invalid(format!(
            "objects URL is {} bytes, the limit is {}",
            url.len(),
            crate::url::MAX_URL_BYTES
        )));
    }
    if url.contains('\0') {
        return Err(Error::invalid("objects URL contains NUL"));
    }
    if url == "memory:" {
        return Ok(Opened {
            store: Arc::new(InMemory::new()),
            prefix: Path::default(),
            local_root: None,
            probe: false,
        });
    }
    if let Some(dir) = url.strip_prefix("file://") {
        if !dir.starts_with('/') {
            return Err(Error::invalid(format!(
                "objects URL {:?}: a file URL names an absolute directory, file:///DIR",
                crate::url::without_password(url)
            )));
        }
        let dir = local_dir(dir);
        // Synced before a write is answered, the directory too: an accepted
        // claim must survive a power loss, or an older token would pass.
        let store = LocalFileSystem::new_with_prefix(dir)
            .map_err(|e| {
                let message = format!(
                    "objects: cannot use the directory {dir:?} ({e}); create it, or name another"
                );
                Error::backend_from(BackendErrorKind::Unreachable, message, e)
            })?
            .with_fsync(true);
        return Ok(Opened {
            store: Arc::new(store),
            prefix: Path::default(),
            local_root: Some(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.into())),
            probe: false,
        });
    }
    if let Some(rest) = url.strip_prefix("s3://") {
        #[cfg(feature = "s3")]
        return s3::open(rest);
        #[cfg(not(feature = "s3"))]
        {
            let _ = rest;
            return Err(Error::invalid(
                "s3: support for S3 is not compiled in: enable the `s3` feature of the fencing crate",
            ));
        }
    }
    if let Some(rest) = url.strip_prefix("az://") {
        #[cfg(feature = "azure")]
        return azure::open(rest);
        #[cfg(not(feature = "azure"))]
        {
            let _ = rest;
            return Err(Error::invalid(
                "az: support for Azure is not compiled in: enable the `azure` feature of the fencing crate",
            ));
        }
    }
    Err(Error::invalid(format!(
        "objects URL {:?}: expected memory:, file:///DIR, s3://BUCKET[/PREFIX] or az://CONTAINER[/PREFIX]",
        crate::url::without_password(url)
    )))
}

/// An object path: what `object_store` takes as it is (no empty, `.` or
/// `..` segment, no leading or trailing `/`), none of whose segments is a
/// folder of the library's.
fn check_path(path: &str) -> Result<()> {
    crate::limits::object_path(path)?;
    let bad = |why: &str| Err(Error::invalid(format!("object path {path:?} {why}")));
    match Path::parse(path) {
        Ok(parsed) if parsed.as_ref() == path => {}
        _ => return bad("is not a plain relative path (a/b.txt: no empty, . or .. segment)"),
    }
    // Stored as written, so that its folder is where docs/objects.md says.
    if Path::from(path).as_ref() != path {
        return bad("has a character object stores escape (# % * ? \" < > | \\ { } [ ] ^ ~ `)");
    }
    if path.split('/').any(|s| s.ends_with(layout::FOLDER_SUFFIX)) {
        return bad("names a folder of the library's (a segment ending in .fenced)");
    }
    // A file name holds 255 bytes, and the folder adds ".fenced".
    if path
        .split('/')
        .any(|s| s.len() + layout::FOLDER_SUFFIX.len() > 255)
    {
        return bad("has a segment longer than 248 bytes");
    }
    Ok(())
}

/// A number no other writer picks: the process's random hasher keys, a
/// counter and the time.
fn nonce() -> u64 {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
}

/// A request that failed, with what to check first.
fn backend_error(what: &str, e: object_store::Error) -> Error {
    use object_store::Error as E;
    let (kind, fix) = match &e {
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => (
            BackendErrorKind::Refused,
            "check the credentials (for S3: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; for \
             Azure: AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY) and their right to \
             read and write here",
        ),
        E::NotSupported { .. } | E::NotImplemented { .. } => (
            BackendErrorKind::Refused,
            "this store cannot do what fencing needs",
        ),
        // Where nothing may be missing but the bucket or directory itself
        // (S3 and Azure say so in their answers, which object_store passes
        // on as text).
        _ if e.to_string().contains("NoSuchBucket") => (
            BackendErrorKind::Unreachable,
            "check that the bucket exists",
        ),
        _ if e.to_string().contains("ContainerNotFound") => (
            BackendErrorKind::Unreachable,
            "check that the container exists",
        ),
        E::NotFound { .. } => (
            BackendErrorKind::Unreachable,
            "check that the bucket (or directory) exists",
        ),
        _ => (
            BackendErrorKind::Unreachable,
            "check that the store answers at its endpoint",
        ),
    };
    // The causes too: the one that says what happened is often deep.
    let mut message = format!("objects: cannot {what} ({fix}): {e}");
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        cause = c.source();
    }
    Error::backend_from(kind, message, e)
}

/// The directory of a `file:///DIR` URL, as written (not percent-decoded).
/// On Windows an absolute path starts with a drive, which the URL puts after
/// the third slash (`file:///C:/data`, as Node's `url.pathToFileURL` and
/// Python's `Path.as_uri` write it): the slash is not part of the path.
fn local_dir(dir: &str) -> &str {
    let b = dir.as_bytes();
    if cfg!(windows) && b.len() >= 3 && b[0] == b'/' && b[1].is_ascii_alphabetic() && b[2] == b':' {
        return &dir[1..];
    }
    dir
}

#[cfg(test)]
mod tests {
    use super::local_dir;

    #[test]
    fn a_drive_letter_after_the_third_slash_is_a_windows_path() {
        assert_eq!(local_dir("/srv/objects"), "/srv/objects");
        let drive = if cfg!(windows) { "C:/data" } else { "/C:/data" };
        assert_eq!(local_dir("/C:/data"), drive);
        // Not a drive: left as written everywhere.
        assert_eq!(local_dir("/CC:/data"), "/CC:/data");
        assert_eq!(local_dir("/1:/data"), "/1:/data");
    }
}
