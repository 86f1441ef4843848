//! Store URLs: `memory:`, `sqlite:PATH`, `postgres://...` (or
//! `postgresql://`), each with an optional query of store options
//! (`?clock=manual&strict=true`). The grammar, written once for every face:
//! docs/semantics.md, "URLs and options".
//!
//! A URL parses into [`StoreOptions`]: the typed options of one backend
//! ([`SqliteOptions`], [`PostgresOptions`], or [`Options`] alone for
//! `memory:`), which callers may also build without any URL text. Each
//! backend's URL grammar lives with its options, in `url/sqlite.rs` and
//! `url/postgres.rs`, compiled only with the backend's Cargo feature.

use std::str::FromStr;

use crate::error::{Error, Result};
use crate::store::BackendKind;
use crate::token::clip;

#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "postgres")]
mod pgpass;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "etcd")]
pub(crate) use etcd::EtcdTls;
#[cfg(feature = "etcd")]
pub use etcd::{EtcdOptions, EtcdRoots};
#[cfg(feature = "postgres")]
pub(crate) use postgres::{supply_password, PostgresTarget, Tls};
#[cfg(feature = "postgres")]
pub use postgres::{Pooler, PostgresOptions, RootCert, SslMode};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteOptions, Synchronous};

pub const MAX_URL_BYTES: usize = 4096;

/// The clock a store's leases run on (`clock=` in the URL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClockKind {
    /// The backend's own clock (monotonic in memory, the host's wall clock
    /// for SQLite, the server's for PostgreSQL).
    #[default]
    Default,
    /// Moves only when told ([`crate::Store::advance_clock`]): for tests.
    Manual,
}

/// Options every backend understands (docs/semantics.md, "URLs and
/// options"): the whole configuration of a `memory:` store, and part of
/// [`SqliteOptions`] and [`PostgresOptions`].
///
/// ```
/// use fencing::{ClockKind, Options, Store, StoreOptions};
///
/// let mut options = Options::default();
/// options.clock = ClockKind::Manual;
/// options.strict = true;
/// assert_eq!(StoreOptions::Memory(options), "memory:?clock=manual&strict=true".parse()?);
/// let store = Store::open_with(StoreOptions::Memory(options))?;
/// # Ok::<(), fencing::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// `clock=default|manual`: the clock leases run on.
    pub clock: ClockKind,
    /// `eager_fencing=true|false`: acquire raises the fence to the new
    /// token. On by default.
    pub eager_fencing: bool,
    /// `strict=true|false`: a token equal to the fence is stale once that
    /// token has written. Off by default.
    pub strict: bool,
    /// `jumps=bounded|unbounded`: whether a counter or fence may jump past
    /// its scope's next token beyond the jump limit (docs/semantics.md,
    /// "Failover"). `unbounded` is a property of the store from then on, and
    /// its failover step can then only exhaust every scope. Bounded by
    /// default.
    pub unbounded_jumps: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            clock: ClockKind::Default,
            eager_fencing: true,
            strict: false,
            unbounded_jumps: false,
        }
    }
}

/// What [`crate::Store::open_with`] opens: one backend and its options.
/// Parsed from a store URL (`"sqlite:fencing.db".parse()`) exactly as
/// [`crate::Store::open`] parses it, or built from the typed options
/// (`SqliteOptions::new(path)?.into()`).
///
/// The variants of backends compiled out (Cargo features `sqlite` and
/// `postgres`, both on by default) do not exist; a URL naming one is
/// `INVALID_ARGUMENT`, saying which feature to enable.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreOptions {
    /// `memory:`: one process, gone with it.
    Memory(Options),
    /// `sqlite:PATH`.
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteOptions),
    /// `postgres://...`, `postgresql://...`.
    #[cfg(feature = "postgres")]
    Postgres(PostgresOptions),
    /// `etcd://HOST:PORT[,...]/PREFIX`.
    #[cfg(feature = "etcd")]
    Etcd(EtcdOptions),
}

impl StoreOptions {
    /// The backend these options open.
    pub fn kind(&self) -> BackendKind {
        match self {
            StoreOptions::Memory(_) => BackendKind::Memory,
            #[cfg(feature = "sqlite")]
            StoreOptions::Sqlite(_) => BackendKind::Sqlite,
            #[cfg(feature = "postgres")]
            StoreOptions::Postgres(_) => BackendKind::Postgres,
            #[cfg(feature = "etcd")]
            StoreOptions::Etcd(_) => BackendKind::Etcd,
        }
    }

    /// Where these options open a store, as a person should read it (see
    /// [`crate::Store::location`]).
    pub fn location(&self) -> String {
        match self {
            StoreOptions::Memory(_) => "memory:".to_owned(),
            #[cfg(feature = "sqlite")]
            StoreOptions::Sqlite(sqlite) => sqlite.location(),
            #[cfg(feature = "postgres")]
            StoreOptions::Postgres(postgres) => postgres.location(),
            #[cfg(feature = "etcd")]
            StoreOptions::Etcd(etcd) => etcd.location(),
        }
    }

    /// The options every backend understands.
    pub fn options(&self) -> Options {
        match self {
            StoreOptions::Memory(options) => *options,
            #[cfg(feature = "sqlite")]
            StoreOptions::Sqlite(sqlite) => sqlite.get_options(),
            #[cfg(feature = "postgres")]
            StoreOptions::Postgres(postgres) => postgres.get_options(),
            #[cfg(feature = "etcd")]
            StoreOptions::Etcd(etcd) => etcd.get_options(),
        }
    }
}

impl FromStr for StoreOptions {
    type Err = Error;

    fn from_str(url: &str) -> Result<StoreOptions> {
        parse(url)
    }
}

impl From<Options> for StoreOptions {
    /// A `memory:` store with these options.
    fn from(options: Options) -> StoreOptions {
        StoreOptions::Memory(options)
    }
}

pub fn parse(url: &str) -> Result<StoreOptions> {
    if url.len() > MAX_URL_BYTES {
        return Err(Error::invalid(format!(
            "URL is {} bytes, the limit is {MAX_URL_BYTES}",
            url.len()
        )));
    }
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut query = Query::parse(query)?;
    let options = Options {
        clock: match query.take("clock") {
            None | Some("default") => ClockKind::Default,
            Some("manual") => ClockKind::Manual,
            Some(v) => return Err(bad_value("clock", v, "default or manual")),
        },
        eager_fencing: query.boolean("eager_fencing", true)?,
        strict: query.boolean("strict", false)?,
        unbounded_jumps: match query.take("jumps") {
            None | Some("bounded") => false,
            Some("unbounded") => true,
            Some(v) => return Err(bad_value("jumps", v, "bounded or unbounded")),
        },
    };
    let parsed = if base == "memory:" {
        StoreOptions::Memory(options)
    } else if let Some(path) = base.strip_prefix("sqlite:") {
        #[cfg(feature = "sqlite")]
        {
            StoreOptions::Sqlite(sqlite::parse(path, &mut query, options)?)
        }
        #[cfg(not(feature = "sqlite"))]
        {
            let _ = path;
            return Err(not_compiled_in("sqlite"));
        }
    } else if base.starts_with("postgres://") || base.starts_with("postgresql://") {
        #[cfg(feature = "postgres")]
        {
            StoreOptions::Postgres(postgres::parse(base, &mut query, options)?)
        }
        #[cfg(not(feature = "postgres"))]
        {
            return Err(not_compiled_in("postgres"));
        }
    } else if base.starts_with("etcd://") {
        #[cfg(feature = "etcd")]
        {
            StoreOptions::Etcd(etcd::parse(base, &mut query, options)?)
        }
        #[cfg(not(feature = "etcd"))]
        {
            return Err(not_compiled_in("etcd"));
        }
    } else {
        return Err(Error::invalid(format!(
            "unsupported store URL {:?}: expected memory:, sqlite:PATH, postgres://... or etcd://...",
            clip(&without_password(base))
        )));
    };
    query.finish()?;
    Ok(parsed)
}

/// A URL as it may be shown: the password of its user info, if any,
/// replaced by `***` (`scheme://user:***@host...`). Errors and `Debug`
/// print URLs only through this.
pub(crate) fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    // The last '@' before the query: a password may hold a raw '/' or '@'
    // (it should be percent-encoded, but its text must not be shown either
    // way), and a query value an '@' of its own. An option whose name holds
    // an '@' is the rest of a password with a raw '?' (`Query::parse`
    // refuses it): hidden up to that '@'.
    let query = rest.find('?').unwrap_or(rest.len());
    let at = match rest[..query].rfind('@') {
        Some(at) => Some(at),
        None => rest.get(query + 1..).and_then(|q| {
            let name = q.split('&').next()?.split('=').next()?;
            Some(query + 1 + name.rfind('@')?)
        }),
    };
    let Some(at) = at else {
        return url.to_owned();
    };
    match rest[..at].split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***{}", &rest[at..]),
        None => url.to_owned(),
    }
}

/// A URL for a backend this build left out.
#[cfg(not(all(feature = "sqlite", feature = "postgres", feature = "etcd")))]
fn not_compiled_in(feature: &str) -> Error {
    Error::invalid(format!(
        "{feature}: support for this backend is not compiled in: enable the `{feature}` \
         feature of the fencing crate"
    ))
}

/// The `name=value` pairs of a URL query, consumed one by one so that an
/// unknown or misplaced option is an error rather than ignored.
struct Query<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Query<'a> {
    fn parse(query: &'a str) -> Result<Query<'a>> {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            // No option's name holds an '@': this is the rest of a user
            // info whose password has a raw '?', not to be shown.
            if pair
                .split('=')
                .next()
                .is_some_and(|name| name.contains('@'))
            {
                return Err(Error::invalid(
                    "the URL's password holds a raw '?': percent-encode it (%3F)",
                ));
            }
            let (name, value) = pair.split_once('=').ok_or_else(|| {
                Error::invalid(format!("URL option {:?} has no value", clip(pair)))
            })?;
            if pairs.iter().any(|(n, _)| *n == name) {
                return Err(Error::invalid(format!(
                    "URL option {:?} given twice",
                    clip(name)
                )));
            }
            pairs.push((name, value));
        }
        Ok(Query(pairs))
    }

    fn take(&mut self, name: &str) -> Option<&'a str> {
        let at = self.0.iter().position(|(n, _)| *n == name)?;
        Some(self.0.remove(at).1)
    }

    fn boolean(&mut self, name: &str, default: bool) -> Result<bool> {
        match self.take(name) {
            None => Ok(default),
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            Some(v) => Err(bad_value(name, v, "true or false")),
        }
    }

    /// The options nobody took, as query text.
    #[cfg(feature = "postgres")]
    fn rest(&mut self) -> String {
        let rest: Vec<String> = self.0.drain(..).map(|(n, v)| format!("{n}={v}")).collect();
        rest.join("&")
    }

    fn finish(self) -> Result<()> {
        match self.0.first() {
            None => Ok(()),
            Some((name, _)) => Err(Error::invalid(format!(
                "unknown URL option {:?} for this backend",
                clip(name)
            ))),
        }
    }
}

fn bad_value(name: &str, value: &str, allowed: &str) -> Error {
    Error::invalid(format!(
        "URL option {name}={:?}: expected {allowed}",
        clip(value)
    ))
}

/// The setters shared by [`SqliteOptions`] and [`PostgresOptions`]: the
/// options every backend understands.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
macro_rules! common_setters {
    () => {
        /// `clock=default|manual`: the clock leases run on;
        /// [`ClockKind::Manual`](crate::ClockKind::Manual) is for tests
        /// (docs/semantics.md, "URLs and options").
        pub fn clock(&mut self, clock: crate::ClockKind) -> &mut Self {
            self.options.clock = clock;
            self
        }

        /// `strict=true|false`: a token equal to the fence is stale once
        /// that token has written. Off by default (docs/semantics.md).
        pub fn strict(&mut self, strict: bool) -> &mut Self {
            self.options.strict = strict;
            self
        }

        /// `eager_fencing=true|false`: acquire raises the fence to the new
        /// token. On by default (docs/semantics.md).
        pub fn eager_fencing(&mut self, eager: bool) -> &mut Self {
            self.options.eager_fencing = eager;
            self
        }

        /// `jumps=bounded|unbounded`: unbounded lets a counter or fence jump
        /// anywhere, from this open on, and leaves the failover step only
        /// the maximum token to move to (docs/semantics.md, "Failover").
        pub fn unbounded_jumps(&mut self, unbounded: bool) -> &mut Self {
            self.options.unbounded_jumps = unbounded;
            self
        }

        /// All the options every backend understands at once
        /// ([`Options`](crate::Options)).
        pub fn options(&mut self, options: crate::Options) -> &mut Self {
            self.options = options;
            self
        }

        /// The options every backend understands.
        pub fn get_options(&self) -> crate::Options {
            self.options
        }
    };
}
#[cfg(any(feature = "sqlite", feature = "postgres"))]
use common_setters;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    /// The user info ends at the last '@' before the query: a raw '/' or
    /// '@' in a password is hidden, an '@' in a query value is not taken
    /// for the end of one, and a raw '?' in a password is hidden too.
    #[test]
    fn a_shown_url_hides_the_password_wherever_its_at_signs_are() {
        for (url, shown) in [
            ("postgres://app:se/cret@db/f", "postgres://app:***@db/f"),
            ("etcd://root:hun/t@er@h:1/p", "etcd://root:***@h:1/p"),
            (
                "postgres://u:pw@h/db?application_name=x@replica",
                "postgres://u:***@h/db?application_name=x@replica",
            ),
            (
                "postgres://h:5432/db?application_name=a@b",
                "postgres://h:5432/db?application_name=a@b",
            ),
            ("postgres://u:a?b@h/db?x=1", "postgres://u:***@h/db?x=1"),
            ("postgres://u@h/db", "postgres://u@h/db"),
        ] {
            assert_eq!(without_password(url), shown, "{url}");
        }
    }

    #[test]
    fn memory_with_options() {
        let t = parse("memory:?clock=manual&strict=true&eager_fencing=false").unwrap();
        assert_eq!(
            t,
            StoreOptions::Memory(Options {
                clock: ClockKind::Manual,
                eager_fencing: false,
                strict: true,
                unbounded_jumps: false,
            })
        );
        assert_eq!(
            parse("memory:").unwrap(),
            StoreOptions::Memory(Options::default())
        );
        assert_eq!(parse("memory:").unwrap().kind(), BackendKind::Memory);
    }

    #[test]
    fn rejects_bad_urls() {
        for bad in [
            "",
            "memory",
            "mem:",
            "memory:x",
            "redis://x",
            "memory:?clock",
            "memory:?clock=fast",
            "memory:?strict=yes",
            "memory:?strict=true&strict=false",
            "memory:?color=red",
            "memory:?synchronous=normal",
            "sqlite:",
            "sqlite:?clock=manual",
            "sqlite://rel.db",
            "sqlite:///abs/path.db",
            "sqlite:////abs/path.db",
            "sqlite://",
            "sqlite:x.db?synchronous=off",
            "sqlite:x.db?busy_timeout_ms=-1",
            "sqlite:x.db?call_timeout_ms=500",
            "memory:?call_timeout_ms=500",
            "postgres://h/db?call_timeout_ms=9",
            "postgres://h/db?call_timeout_ms=3600001",
            "postgres://h/db?call_timeout_ms=5s",
            "postgres://h/db?sslmode=allow",
            "postgres://h/db?sslmode=verify-ca",
            "postgres://h/db?sslmode=verify-full",
            "postgres://h/db?sslmode=require&sslrootcert=system",
            "postgres://h/db?sslcert=c.crt",
            "postgres://h/db?sslkey=c.key",
            "postgres://h/db?sslrootcert=%zz",
            "postgres://h/db?pooler=session",
            "memory:?sslmode=require",
        ] {
            assert_eq!(
                parse(bad).unwrap_err().code(),
                ErrorCode::InvalidArgument,
                "{bad:?}"
            );
        }
        let long = format!("memory:?{}", "a".repeat(MAX_URL_BYTES));
        assert_eq!(parse(&long).unwrap_err().code(), ErrorCode::InvalidArgument);
    }

    /// Only in a build without the backend (`cargo test -p fencing
    /// --no-default-features --features sqlite --lib`).
    #[cfg(not(feature = "postgres"))]
    #[test]
    fn a_postgres_url_without_the_feature_names_the_feature() {
        for url in ["postgres://h/db", "postgresql://h/db?schema=x"] {
            let error = parse(url).unwrap_err();
            assert_eq!(error.code(), ErrorCode::InvalidArgument, "{url}");
            let message = error.to_string();
            assert!(
                message.contains(
                    "postgres: support for this backend is not compiled in: enable the \
                     `postgres` feature of the fencing crate"
                ),
                "{url}: {message}"
            );
        }
        // The other schemes are unchanged.
        assert!(parse("memory:").is_ok());
    }

    /// Only in a build without the backend (`cargo test -p fencing
    /// --no-default-features --features postgres --lib`).
    #[cfg(not(feature = "sqlite"))]
    #[test]
    fn a_sqlite_url_without_the_feature_names_the_feature() {
        let message = parse("sqlite:fencing.db").unwrap_err().to_string();
        assert!(
            message.contains(
                "sqlite: support for this backend is not compiled in: enable the `sqlite` feature"
            ),
            "{message}"
        );
    }
}
