//! Store URLs: `memory:`, `sqlite:PATH`, `postgres://...` (or
//! `postgresql://`), each with an optional query of store options
//! (`?clock=manual&strict=true`). The grammar, written once for every face:
//! docs/semantics.md, "URLs and options".
//!
//! `sqlite:PATH` takes PATH as written: `sqlite:fencing.db` is relative to
//! the working directory, `sqlite:/srv/fencing.db` absolute. `sqlite://...`
//! is refused (see `slashes_after_sqlite`).

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::token::clip;

pub const MAX_URL_BYTES: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClockKind {
    /// The backend's own clock (monotonic in memory, the host's wall clock
    /// for SQLite).
    #[default]
    Default,
    Manual,
}

/// Options every backend understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    pub clock: ClockKind,
    /// Acquire raises the fence to the new token. On by default.
    pub eager_fencing: bool,
    /// A token equal to the fence is stale once that token has written.
    pub strict: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            clock: ClockKind::Default,
            eager_fencing: true,
            strict: false,
        }
    }
}

/// SQLite's durability setting for commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synchronous {
    /// fsync on every commit: an issued token survives power loss.
    Full,
    /// Faster, but a power loss can roll back the last commits, and with
    /// them the counter: tokens could be issued twice. Never for production.
    Normal,
}

/// libpq's `sslmode` (docs/postgres.md, "TLS").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    /// TLS when the server offers it, else plaintext (libpq's default).
    Prefer,
    Require,
    /// The chain must lead to `sslrootcert`; the host name is not checked.
    VerifyCa,
    /// The chain and the host name.
    VerifyFull,
}

/// `sslrootcert`: the CAs a server certificate must chain to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootCert {
    File(PathBuf),
    /// The operating system's trust store.
    System,
}

/// libpq's TLS options, taken out of the URL before the driver sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tls {
    pub mode: SslMode,
    pub root_cert: Option<RootCert>,
    /// `sslcert` and `sslkey`: both or neither.
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

/// What sits between the library and PostgreSQL (`pooler=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooler {
    /// Each connection is a server session of its own.
    None,
    /// A transaction pooler (PgBouncer `pool_mode = transaction`): no
    /// session state survives a transaction, so none is set.
    Transaction,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresTarget {
    /// The URL for the driver: fencing's own options and the TLS ones taken out.
    pub url: String,
    pub schema: String,
    pub pool_size: usize,
    /// Each call's deadline (`call_timeout_ms`, docs/postgres.md).
    pub call_timeout: Duration,
    pub tls: Tls,
    pub pooler: Pooler,
    /// `sync_replication=required`: a token only once a synchronous standby
    /// confirmed its commit (docs/postgres.md, "Replication and failover").
    pub sync_replication: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    Memory,
    Postgres(PostgresTarget),
    Sqlite {
        path: PathBuf,
        synchronous: Synchronous,
        busy_timeout: Duration,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub location: Location,
    pub options: Options,
}

pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_SCHEMA: &str = "fencing";
pub const DEFAULT_POOL_SIZE: usize = 4;
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// `call_timeout_ms` bounds: below 10 ms a healthy round trip would not fit;
/// above an hour a hang is indistinguishable from a wait.
const CALL_TIMEOUT_MS: std::ops::RangeInclusive<u64> = 10..=3_600_000;

pub fn parse(url: &str) -> Result<Target> {
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
    };
    let location = if base == "memory:" {
        Location::Memory
    } else if let Some(path) = base.strip_prefix("sqlite:") {
        if path.is_empty() || path.contains('\0') {
            return Err(Error::invalid(
                "sqlite: needs a file path, e.g. sqlite:fencing.db",
            ));
        }
        if let Some(after) = path.strip_prefix("//") {
            return Err(slashes_after_sqlite(after));
        }
        Location::Sqlite {
            path: PathBuf::from(path),
            synchronous: match query.take("synchronous") {
                None | Some("full") => Synchronous::Full,
                Some("normal") => Synchronous::Normal,
                Some(v) => return Err(bad_value("synchronous", v, "full or normal")),
            },
            busy_timeout: match query.take("busy_timeout_ms") {
                None => DEFAULT_BUSY_TIMEOUT,
                Some(v) => Duration::from_millis(
                    v.parse::<u32>()
                        .map_err(|_| bad_value("busy_timeout_ms", v, "milliseconds"))?
                        .into(),
                ),
            },
        }
    } else if base.starts_with("postgres://") || base.starts_with("postgresql://") {
        let schema = query.take("schema").unwrap_or(DEFAULT_SCHEMA);
        if !crate::backend::postgres::valid_schema(schema) {
            return Err(bad_value(
                "schema",
                schema,
                "a lower-case SQL identifier of at most 63 bytes ([a-z_][a-z0-9_]*, not pg_*)",
            ));
        }
        let pool_size = match query.take("pool_size") {
            None => DEFAULT_POOL_SIZE,
            Some(v) => match v.parse::<usize>() {
                Ok(n @ 1..=64) => n,
                _ => return Err(bad_value("pool_size", v, "1..=64")),
            },
        };
        let call_timeout = match query.take("call_timeout_ms") {
            None => DEFAULT_CALL_TIMEOUT,
            Some(v) => match v.parse::<u64>() {
                Ok(ms) if CALL_TIMEOUT_MS.contains(&ms) => Duration::from_millis(ms),
                _ => return Err(bad_value("call_timeout_ms", v, "10..=3600000 milliseconds")),
            },
        };
        let pooler = match query.take("pooler") {
            None | Some("none") => Pooler::None,
            Some("transaction") => Pooler::Transaction,
            Some(v) => return Err(bad_value("pooler", v, "none or transaction")),
        };
        let sync_replication = match query.take("sync_replication") {
            None | Some("off") => false,
            Some("required") => true,
            Some(v) => return Err(bad_value("sync_replication", v, "off or required")),
        };
        let tls = tls_options(&mut query)?;
        // Every other option is the driver's (connect_timeout, hostaddr, ...).
        let rest = query.rest();
        let url = if rest.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{rest}")
        };
        Location::Postgres(PostgresTarget {
            url,
            schema: schema.to_owned(),
            pool_size,
            call_timeout,
            tls,
            pooler,
            sync_replication,
        })
    } else {
        return Err(Error::invalid(format!(
            "unsupported store URL {:?}: expected memory:, sqlite:PATH or postgres://...",
            clip(base)
        )));
    };
    query.finish()?;
    Ok(Target { location, options })
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

/// `sslmode`, `sslrootcert`, `sslcert`, `sslkey` with libpq's meanings. The
/// driver knows only three modes and no files, so they never reach it.
fn tls_options(query: &mut Query<'_>) -> Result<Tls> {
    let root_cert = match query.take("sslrootcert") {
        None => None,
        Some("system") => Some(RootCert::System),
        Some(v) => Some(RootCert::File(path_value("sslrootcert", v)?)),
    };
    let mode = match query.take("sslmode") {
        // As libpq 16: the system's CAs vouch for any name, so only a
        // checked name means anything; that is the default with them.
        None if root_cert == Some(RootCert::System) => SslMode::VerifyFull,
        None | Some("prefer") => SslMode::Prefer,
        Some("disable") => SslMode::Disable,
        Some("require") => SslMode::Require,
        Some("verify-ca") => SslMode::VerifyCa,
        Some("verify-full") => SslMode::VerifyFull,
        Some(v) => {
            return Err(bad_value(
                "sslmode",
                v,
                "disable, prefer, require, verify-ca or verify-full",
            ))
        }
    };
    if root_cert == Some(RootCert::System) && mode != SslMode::VerifyFull {
        return Err(Error::invalid(
            "sslrootcert=system needs sslmode=verify-full (any CA of the system vouches for \
             any name, so the name must be checked)",
        ));
    }
    if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) && root_cert.is_none() {
        return Err(Error::invalid(
            "sslmode=verify-ca and verify-full need sslrootcert=FILE (or sslrootcert=system); \
             fencing does not look for ~/.postgresql/root.crt",
        ));
    }
    let client_cert = match (query.take("sslcert"), query.take("sslkey")) {
        (None, None) => None,
        (Some(cert), Some(key)) => Some((path_value("sslcert", cert)?, path_value("sslkey", key)?)),
        _ => {
            return Err(Error::invalid(
                "sslcert and sslkey go together: give both files or neither",
            ))
        }
    };
    Ok(Tls {
        mode,
        root_cert,
        client_cert,
    })
}

/// A file path from the query, percent-decoded as libpq does.
fn path_value(name: &str, value: &str) -> Result<PathBuf> {
    let bad = || bad_value(name, value, "a file path (percent-encoded where needed)");
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or_else(bad)?;
            let hex = std::str::from_utf8(hex).map_err(|_| bad())?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let path = String::from_utf8(out).map_err(|_| bad())?;
    if path.is_empty() || path.contains('\0') {
        return Err(bad());
    }
    Ok(PathBuf::from(path))
}

/// The `name=value` pairs of a URL query, consumed one by one so that an
/// unknown or misplaced option is an error rather than ignored.
struct Query<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Query<'a> {
    fn parse(query: &'a str) -> Result<Query<'a>> {
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn memory_with_options() {
        let t = parse("memory:?clock=manual&strict=true&eager_fencing=false").unwrap();
        assert_eq!(t.location, Location::Memory);
        assert_eq!(
            t.options,
            Options {
                clock: ClockKind::Manual,
                eager_fencing: false,
                strict: true
            }
        );
        assert_eq!(parse("memory:").unwrap().options, Options::default());
    }

    #[test]
    fn sqlite_paths_and_options() {
        let t = parse("sqlite:dir/fence.db?synchronous=normal&busy_timeout_ms=250&clock=manual")
            .unwrap();
        assert_eq!(
            t.location,
            Location::Sqlite {
                path: PathBuf::from("dir/fence.db"),
                synchronous: Synchronous::Normal,
                busy_timeout: Duration::from_millis(250),
            }
        );
        assert_eq!(t.options.clock, ClockKind::Manual);
        let t = parse("sqlite:/tmp/x.db").unwrap();
        assert!(matches!(
            t.location,
            Location::Sqlite { synchronous: Synchronous::Full, busy_timeout, .. }
                if busy_timeout == DEFAULT_BUSY_TIMEOUT
        ));
    }

    #[test]
    fn sqlite_double_slash_is_refused_with_both_spellings() {
        let message = parse("sqlite://rel.db").unwrap_err().to_string();
        assert!(message.contains("sqlite:rel.db"), "{message}");
        assert!(message.contains("sqlite:/rel.db"), "{message}");
        let message = parse("sqlite:///srv/f.db").unwrap_err().to_string();
        assert!(message.contains("sqlite:srv/f.db"), "{message}");
        assert!(message.contains("sqlite:/srv/f.db"), "{message}");
        // One slash is an absolute path, as it always was.
        assert!(matches!(
            parse("sqlite:/srv/f.db").unwrap().location,
            Location::Sqlite { path, .. } if path == std::path::Path::new("/srv/f.db")
        ));
    }

    #[test]
    fn postgres_call_timeout() {
        let timeout = |url: &str| match parse(url).unwrap().location {
            Location::Postgres(t) => t.call_timeout,
            other => panic!("{other:?}"),
        };
        assert_eq!(timeout("postgres://h/db"), DEFAULT_CALL_TIMEOUT);
        assert_eq!(
            timeout("postgres://h/db?call_timeout_ms=250"),
            Duration::from_millis(250)
        );
        // Taken out of the driver's URL, which would refuse it.
        match parse("postgres://h/db?call_timeout_ms=250&application_name=x")
            .unwrap()
            .location
        {
            Location::Postgres(t) => assert_eq!(t.url, "postgres://h/db?application_name=x"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn postgres_tls_and_pooler_options() {
        let target = |url: &str| match parse(url).unwrap().location {
            Location::Postgres(t) => t,
            other => panic!("{other:?}"),
        };
        let t = target("postgres://h/db");
        assert_eq!(t.tls.mode, SslMode::Prefer);
        assert_eq!(t.pooler, Pooler::None);
        let t = target(
            "postgres://h/db?sslmode=verify-full&sslrootcert=/etc/ca%20s.crt\
             &sslcert=c.crt&sslkey=c.key&pooler=transaction&application_name=x",
        );
        assert_eq!(
            t.tls,
            Tls {
                mode: SslMode::VerifyFull,
                root_cert: Some(RootCert::File("/etc/ca s.crt".into())),
                client_cert: Some(("c.crt".into(), "c.key".into())),
            }
        );
        assert_eq!(t.pooler, Pooler::Transaction);
        // The driver never sees them.
        assert_eq!(t.url, "postgres://h/db?application_name=x");
        let t = target("postgres://h/db?sslrootcert=system");
        assert_eq!(t.tls.mode, SslMode::VerifyFull);
        assert_eq!(
            target("postgres://h/db?sslmode=disable").tls.mode,
            SslMode::Disable
        );
        assert_eq!(
            target("postgres://h/db?sslmode=require").tls.root_cert,
            None
        );
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
}
