//! `sqlite:PATH`: its options and their URL grammar.
//!
//! `sqlite:PATH` takes PATH as written: `sqlite:fencing.db` is relative to
//! the working directory, `sqlite:/srv/fencing.db` absolute. `sqlite://...`
//! is refused (see `slashes_after_sqlite`).

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use super::{bad_value, common_setters, parse as parse_url, Options, Query, StoreOptions};
use crate::error::{Error, Result};
use crate::token::clip;

pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// `busy_timeout_ms` is SQLite's `int` of milliseconds.
const MAX_BUSY_TIMEOUT: Duration = Duration::from_millis(u32::MAX as u64);

/// SQLite's durability setting for commits (`synchronous=` in the URL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synchronous {
    /// fsync on every commit: an issued token survives power loss.
    Full,
    /// Faster, but a power loss can roll back the last commits, and with
    /// them the counter: tokens could be issued twice. Never for production.
    Normal,
}

/// The options of an SQLite store: what `sqlite:PATH?...` says, typed.
/// Every option is documented once, on its setter; the URL spelling of
/// each is in docs/semantics.md, "URLs and options" and "The SQLite
/// backend".
///
/// ```
/// use std::time::Duration;
/// use fencing::{ClockKind, SqliteOptions, Store, Synchronous};
///
/// # let dir = std::env::temp_dir().join(format!("fencing-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// # let path = dir.join("options.db");
/// let mut options = SqliteOptions::new(&path)?;
/// options
///     .busy_timeout(Duration::from_millis(250))?
///     .synchronous(Synchronous::Full)
///     .clock(ClockKind::Manual);
/// // The same options as the URL's:
/// let url = format!("sqlite:{}?busy_timeout_ms=250&clock=manual", path.display());
/// assert_eq!(options, url.parse()?);
///
/// let store = Store::open_with(&options)?;
/// assert_eq!(store.next_token("report")?.get(), 1);
/// # drop(store);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), fencing::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    pub(crate) path: PathBuf,
    pub(crate) synchronous: Synchronous,
    pub(crate) busy_timeout: Duration,
    pub(crate) options: Options,
}

impl SqliteOptions {
    /// `sqlite:` and the file's path, made absolute as this process
    /// resolves it: two processes in two directories that both open
    /// `sqlite:fencing.db` open two stores, and this shows which.
    pub(crate) fn location(&self) -> String {
        let path = std::path::absolute(&self.path).unwrap_or_else(|_| self.path.clone());
        format!("sqlite:{}", path.display())
    }

    /// The store in the file at `path` (created on first open), with every
    /// option at its default. Unlike a URL, the path may contain `?`. An
    /// empty path, or one with a NUL byte, is `INVALID_ARGUMENT`.
    pub fn new(path: impl Into<PathBuf>) -> Result<SqliteOptions> {
        let path = path.into();
        if path.as_os_str().is_empty() || path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(Error::invalid(
                "sqlite: needs a file path, e.g. sqlite:fencing.db",
            ));
        }
        Ok(SqliteOptions {
            path,
            synchronous: Synchronous::Full,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            options: Options::default(),
        })
    }

    /// `synchronous=full|normal`: [`Synchronous::Full`] (the default)
    /// fsyncs every commit, so an issued token survives power loss;
    /// [`Synchronous::Normal`] can lose the last commits, and issue a
    /// token twice, on power loss (docs/semantics.md, "The SQLite
    /// backend").
    pub fn synchronous(&mut self, synchronous: Synchronous) -> &mut Self {
        self.synchronous = synchronous;
        self
    }

    /// `busy_timeout_ms=N`: how long a call waits for another process's
    /// write lock on the file before failing with `BACKEND`; 10 s by
    /// default, counted in whole milliseconds. Above `u32::MAX` ms
    /// (about 49 days) is `INVALID_ARGUMENT`, and the options are left as
    /// they were.
    pub fn busy_timeout(&mut self, timeout: Duration) -> Result<&mut Self> {
        if timeout > MAX_BUSY_TIMEOUT {
            return Err(Error::invalid(format!(
                "sqlite busy_timeout of {} ms: expected at most {} ms",
                timeout.as_millis(),
                MAX_BUSY_TIMEOUT.as_millis()
            )));
        }
        self.busy_timeout = timeout;
        Ok(self)
    }

    common_setters!();

    /// The file's path.
    pub fn get_path(&self) -> &Path {
        &self.path
    }

    pub fn get_synchronous(&self) -> Synchronous {
        self.synchronous
    }

    pub fn get_busy_timeout(&self) -> Duration {
        self.busy_timeout
    }
}

impl FromStr for SqliteOptions {
    type Err = Error;

    /// A `sqlite:PATH?...` URL, parsed as [`crate::Store::open`] parses it.
    fn from_str(url: &str) -> Result<SqliteOptions> {
        match parse_url(url)? {
            StoreOptions::Sqlite(options) => Ok(options),
            other => Err(Error::invalid(format!(
                "not an SQLite URL: {:?} names a {} store",
                clip(url),
                other.kind().as_str()
            ))),
        }
    }
}

impl From<SqliteOptions> for StoreOptions {
    fn from(options: SqliteOptions) -> StoreOptions {
        StoreOptions::Sqlite(options)
    }
}

impl From<&SqliteOptions> for StoreOptions {
    fn from(options: &SqliteOptions) -> StoreOptions {
        StoreOptions::Sqlite(options.clone())
    }
}

/// The rest of `sqlite:PATH?...` after the options every backend takes.
pub(super) fn parse(path: &str, query: &mut Query<'_>, options: Options) -> Result<SqliteOptions> {
    if path.is_empty() || path.contains('\0') {
        return Err(Error::invalid(
            "sqlite: needs a file path, e.g. sqlite:fencing.db",
        ));
    }
    if let Some(after) = path.strip_prefix("//") {
        return Err(slashes_after_sqlite(after));
    }
    let mut sqlite = SqliteOptions::new(path)?;
    sqlite.options(options);
    match query.take("synchronous") {
        None | Some("full") => {}
        Some("normal") => {
            sqlite.synchronous(Synchronous::Normal);
        }
        Some(v) => return Err(bad_value("synchronous", v, "full or normal")),
    }
    if let Some(v) = query.take("busy_timeout_ms") {
        let ms = v
            .parse::<u32>()
            .map_err(|_| bad_value("busy_timeout_ms", v, "milliseconds"))?;
        sqlite.busy_timeout(Duration::from_millis(ms.into()))?;
    }
    Ok(sqlite)
}

/// `sqlite://...`: other tools read the slashes differently (SQLAlchemy's
/// `sqlite:///rel.db` is relative, `sqlite:////abs.db` absolute; taken as a
/// path, `sqlite://rel.db` would be `/rel.db` at the filesystem root), so no
/// reading of it is safe. The message spells the path both ways.
fn slashes_after_sqlite(after: &str) -> Error {
    let name = clip(after.trim_start_matches('/'));
    if name.is_empty() {
        return Error::invalid("sqlite: needs a file path, e.g. sqlite:fencing.db");
    }
    Error::invalid(format!(
        "sqlite://{} is ambiguous (is it {name:?} or \"/{name}\"?): write sqlite:PATH \
         with no slashes after the colon: sqlite:{name} (relative to the working \
         directory) or sqlite:/{name} (absolute)",
        clip(after)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClockKind, ErrorCode};

    fn sqlite(url: &str) -> SqliteOptions {
        url.parse().unwrap()
    }

    #[test]
    fn sqlite_paths_and_options() {
        let t = sqlite("sqlite:dir/fence.db?synchronous=normal&busy_timeout_ms=250&clock=manual");
        assert_eq!(t.get_path(), Path::new("dir/fence.db"));
        assert_eq!(t.get_synchronous(), Synchronous::Normal);
        assert_eq!(t.get_busy_timeout(), Duration::from_millis(250));
        assert_eq!(t.get_options().clock, ClockKind::Manual);
        let t = sqlite("sqlite:/tmp/x.db");
        assert_eq!(t.get_synchronous(), Synchronous::Full);
        assert_eq!(t.get_busy_timeout(), DEFAULT_BUSY_TIMEOUT);
        assert_eq!(t.get_options(), Options::default());
    }

    #[test]
    fn the_setters_build_what_the_url_says() {
        let mut built = SqliteOptions::new("dir/fence.db").unwrap();
        built
            .synchronous(Synchronous::Normal)
            .busy_timeout(Duration::from_millis(250))
            .unwrap()
            .clock(ClockKind::Manual)
            .strict(true)
            .eager_fencing(false);
        assert_eq!(
            built,
            sqlite(
                "sqlite:dir/fence.db?synchronous=normal&busy_timeout_ms=250&clock=manual\
                 &strict=true&eager_fencing=false"
            )
        );
        assert_ne!(built, sqlite("sqlite:dir/fence.db"));
        // As a store URL too.
        assert_eq!(
            StoreOptions::from(&built),
            parse_url(
                "sqlite:dir/fence.db?busy_timeout_ms=250&strict=true&synchronous=normal\
                 &eager_fencing=false&clock=manual"
            )
            .unwrap()
        );
    }

    #[test]
    fn a_bad_value_is_refused_and_changes_nothing() {
        let mut options = sqlite("sqlite:x.db?busy_timeout_ms=250");
        let before = options.clone();
        let error = options
            .busy_timeout(Duration::from_millis(u64::from(u32::MAX) + 1))
            .unwrap_err();
        assert_eq!(error.code(), ErrorCode::InvalidArgument);
        assert!(
            error.to_string().contains("busy_timeout of 4294967296 ms"),
            "{error}"
        );
        assert_eq!(options, before);
        // The largest the URL can say is taken.
        options.busy_timeout(MAX_BUSY_TIMEOUT).unwrap();
        assert_eq!(options.get_busy_timeout(), MAX_BUSY_TIMEOUT);
        for empty in ["", "a\0b"] {
            assert_eq!(
                SqliteOptions::new(empty).unwrap_err().code(),
                ErrorCode::InvalidArgument
            );
        }
        // A path a URL cannot name is fine here.
        assert_eq!(
            SqliteOptions::new("what?.db").unwrap().get_path(),
            Path::new("what?.db")
        );
    }

    #[test]
    fn another_backend_s_url_is_not_sqlite_options() {
        let message = "memory:".parse::<SqliteOptions>().unwrap_err().to_string();
        assert!(message.contains("names a memory store"), "{message}");
    }

    #[test]
    fn sqlite_double_slash_is_refused_with_both_spellings() {
        let message = parse_url("sqlite://rel.db").unwrap_err().to_string();
        assert!(message.contains("sqlite:rel.db"), "{message}");
        assert!(message.contains("sqlite:/rel.db"), "{message}");
        let message = parse_url("sqlite:///srv/f.db").unwrap_err().to_string();
        assert!(message.contains("sqlite:srv/f.db"), "{message}");
        assert!(message.contains("sqlite:/srv/f.db"), "{message}");
        // One slash is an absolute path, as it always was.
        assert_eq!(
            sqlite("sqlite:/srv/f.db").get_path(),
            Path::new("/srv/f.db")
        );
    }
}
