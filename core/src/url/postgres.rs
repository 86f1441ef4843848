//! `postgres://...`: its options and their URL grammar (docs/postgres.md,
//! "Options").

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use super::{bad_value, common_setters, parse as parse_url, Options, Query, StoreOptions};
use crate::error::{Error, Result};
use crate::token::clip;

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
    /// CA certificates (PEM) in a file.
    File(PathBuf),
    /// The operating system's trust store.
    System,
}

/// libpq's TLS options, taken out of the URL before the driver sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tls {
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

/// What the backend needs to connect: the URL's fencing options, typed.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct PostgresTarget {
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

/// Never the password.
impl std::fmt::Debug for PostgresTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTarget")
            .field("url", &redacted(&self.url))
            .field("schema", &self.schema)
            .field("pool_size", &self.pool_size)
            .field("call_timeout", &self.call_timeout)
            .field("tls", &self.tls)
            .field("pooler", &self.pooler)
            .field("sync_replication", &self.sync_replication)
            .finish()
    }
}

/// The URL with the password of its user info, if any, replaced by `***`
/// (a `password=` in the query is the driver's and is left alone: see
/// docs/postgres.md).
fn redacted(url: &str) -> String {
    super::without_password(url)
}

/// The driver's settings get a password the libpq way when the URL names
/// none (docs/postgres.md, "Credentials"): `PGPASSWORD`, else the first
/// line of the password file (`PGPASSFILE`, else `~/.pgpass`) matching a
/// host of the URL, its port, database and user (the first host with a line
/// gives the one password every host is tried with). A password file that
/// others can read is skipped with a warning on stderr, as libpq does.
pub(crate) fn supply_password(config: &mut tokio_postgres::Config) {
    if config.get_password().is_some_and(|p| !p.is_empty()) {
        return;
    }
    let (password, warning) =
        super::pgpass::lookup(&pgpass_keys(config), |name| std::env::var_os(name));
    if let Some(warning) = warning {
        use std::io::Write;
        let _ = writeln!(std::io::stderr().lock(), "fencing: warning: {warning}");
    }
    if let Some(password) = password {
        config.password(password);
    }
}

/// One password-file key per host, with libpq's defaults: port 5432, the
/// database named after the user, the user this process runs as, and
/// `localhost` for the default socket directory; a host given only by
/// `hostaddr` is keyed by that address.
fn pgpass_keys(config: &tokio_postgres::Config) -> Vec<super::pgpass::Key> {
    use tokio_postgres::config::Host;
    let user = match config.get_user() {
        Some(user) => user.to_owned(),
        None => whoami::username().unwrap_or_default(),
    };
    let dbname = config.get_dbname().unwrap_or(&user).to_owned();
    let ports = config.get_ports();
    let hosts: Vec<String> = if config.get_hosts().is_empty() {
        config
            .get_hostaddrs()
            .iter()
            .map(|a| a.to_string())
            .collect()
    } else {
        config
            .get_hosts()
            .iter()
            .map(|h| match h {
                Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                Host::Unix(dir) => {
                    let dir = dir.to_string_lossy();
                    if matches!(&*dir, "/var/run/postgresql" | "/run/postgresql" | "/tmp") {
                        "localhost".to_owned()
                    } else {
                        dir.into_owned()
                    }
                }
            })
            .collect()
    };
    hosts
        .into_iter()
        .enumerate()
        .map(|(i, host)| super::pgpass::Key {
            host,
            port: match ports {
                [] => 5432,
                [one] => *one,
                many => many.get(i).copied().unwrap_or(5432),
            }
            .to_string(),
            dbname: dbname.clone(),
            user: user.clone(),
        })
        .collect()
}

pub const DEFAULT_SCHEMA: &str = "fencing";
pub const DEFAULT_POOL_SIZE: usize = 4;
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(5);
const POOL_SIZE: std::ops::RangeInclusive<usize> = 1..=64;
/// `call_timeout_ms` bounds: below 10 ms a healthy round trip would not fit;
/// above an hour a hang is indistinguishable from a wait.
const CALL_TIMEOUT_MS: std::ops::RangeInclusive<u64> = 10..=3_600_000;
const SCHEMA_RULE: &str =
    "a lower-case SQL identifier of at most 63 bytes ([a-z_][a-z0-9_]*, not pg_*)";

/// The options of a PostgreSQL store: what `postgres://...?...` says,
/// typed, like sqlx's `PgConnectOptions`. Built from a URL
/// (`"postgres://app@db/app".parse()`), whose connection part (user,
/// host, database, and every option that is the driver's, such as
/// `connect_timeout` or `application_name`) stays as written; fencing's
/// own options then have setters. Every option is documented once, on its
/// setter; the URL spelling of each is in docs/postgres.md, "Options".
/// `Debug` shows no password.
///
/// ```
/// use std::time::Duration;
/// use fencing::{Pooler, PostgresOptions, RootCert, SslMode};
///
/// let mut options: PostgresOptions = "postgres://app@db.example.com/app".parse()?;
/// options
///     .schema("billing")?
///     .pool_size(8)?
///     .call_timeout(Duration::from_secs(2))?
///     .ssl(SslMode::VerifyFull, Some(RootCert::System))?
///     .pooler(Pooler::Transaction);
/// assert_eq!(
///     options,
///     "postgres://app@db.example.com/app?schema=billing&pool_size=8&call_timeout_ms=2000\
///      &sslrootcert=system&pooler=transaction"
///         .parse()?
/// );
/// // A bad value is refused, and changes nothing.
/// assert!(options.pool_size(0).is_err());
/// assert_eq!(options.get_pool_size(), 8);
/// // fencing::Store::open_with(&options)? connects.
/// # Ok::<(), fencing::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresOptions {
    pub(crate) target: PostgresTarget,
    pub(crate) options: Options,
}

impl PostgresOptions {
    /// The URL without its query (which may hold the driver's `password=`)
    /// and with the password of its user info replaced by `***`.
    pub(crate) fn location(&self) -> String {
        let url = &self.target.url;
        redacted(url.split_once('?').map_or(url.as_str(), |(base, _)| base))
    }

    /// `schema=NAME`: where the tables and functions live; `fencing` by
    /// default. `[a-z_][a-z0-9_]*`, at most 63 bytes, not `pg_*`; anything
    /// else is `INVALID_ARGUMENT`, and the options are left as they were.
    pub fn schema(&mut self, schema: &str) -> Result<&mut Self> {
        if !crate::backend::postgres::valid_schema(schema) {
            return Err(bad_setting("schema", format!("{schema:?}"), SCHEMA_RULE));
        }
        self.target.schema = schema.to_owned();
        Ok(self)
    }

    /// `pool_size=N`: connections per store handle, 1..=64 (4 by default);
    /// callers beyond that wait for a free one. Out of range is
    /// `INVALID_ARGUMENT`, and the options are left as they were.
    pub fn pool_size(&mut self, size: usize) -> Result<&mut Self> {
        if !POOL_SIZE.contains(&size) {
            return Err(bad_setting("pool_size", size, "1..=64"));
        }
        self.target.pool_size = size;
        Ok(self)
    }

    /// `call_timeout_ms=N`: the most any one call may take (waiting for a
    /// free connection, connecting, the statement), 10 ms to 1 hour, 5 s by
    /// default; past it the call fails with `BACKEND` (docs/postgres.md,
    /// "Time limits"). Counted in whole milliseconds. Out of range is
    /// `INVALID_ARGUMENT`, and the options are left as they were.
    pub fn call_timeout(&mut self, timeout: Duration) -> Result<&mut Self> {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        if !CALL_TIMEOUT_MS.contains(&ms) {
            return Err(bad_setting(
                "call_timeout",
                format!("{} ms", timeout.as_millis()),
                "10..=3600000 milliseconds",
            ));
        }
        self.target.call_timeout = Duration::from_millis(ms);
        Ok(self)
    }

    /// `sslmode=MODE` and `sslrootcert=FILE|system`, set together because
    /// each constrains the other, as in libpq (docs/postgres.md, "TLS"):
    /// [`SslMode::VerifyCa`] and [`SslMode::VerifyFull`] need a root
    /// certificate; [`RootCert::System`] needs [`SslMode::VerifyFull`].
    /// The default is [`SslMode::Prefer`] with none. Certificate files are
    /// read at open. A combination libpq would refuse is
    /// `INVALID_ARGUMENT`, and the options are left as they were.
    pub fn ssl(&mut self, mode: SslMode, root_cert: Option<RootCert>) -> Result<&mut Self> {
        if let Some(RootCert::File(path)) = &root_cert {
            check_path("sslrootcert", path)?;
        }
        check_tls(mode, root_cert.as_ref())?;
        self.target.tls.mode = mode;
        self.target.tls.root_cert = root_cert;
        Ok(self)
    }

    /// `sslcert=FILE` and `sslkey=FILE`: a client certificate and its
    /// private key (PEM), for servers that authenticate clients by
    /// certificate (docs/postgres.md, "TLS"); none by default. Read at
    /// open. An empty path is `INVALID_ARGUMENT`, and the options are left
    /// as they were.
    pub fn ssl_client_cert(
        &mut self,
        cert_and_key: Option<(PathBuf, PathBuf)>,
    ) -> Result<&mut Self> {
        if let Some((cert, key)) = &cert_and_key {
            check_path("sslcert", cert)?;
            check_path("sslkey", key)?;
        }
        self.target.tls.client_cert = cert_and_key;
        Ok(self)
    }

    /// `pooler=none|transaction`: [`Pooler::Transaction`] when a
    /// transaction pooler (PgBouncer `pool_mode = transaction`) sits in
    /// between: unnamed statements, no session settings (docs/postgres.md,
    /// "Poolers").
    pub fn pooler(&mut self, pooler: Pooler) -> &mut Self {
        self.target.pooler = pooler;
        self
    }

    /// `sync_replication=off|required`: with `true`, a token only once a
    /// synchronous standby has its commit; refuses a server without
    /// `synchronous_standby_names` (docs/postgres.md, "Replication and
    /// failover"). Off by default.
    pub fn sync_replication(&mut self, required: bool) -> &mut Self {
        self.target.sync_replication = required;
        self
    }

    common_setters!();

    pub fn get_schema(&self) -> &str {
        &self.target.schema
    }

    pub fn get_pool_size(&self) -> usize {
        self.target.pool_size
    }

    pub fn get_call_timeout(&self) -> Duration {
        self.target.call_timeout
    }

    pub fn get_ssl_mode(&self) -> SslMode {
        self.target.tls.mode
    }

    pub fn get_ssl_root_cert(&self) -> Option<&RootCert> {
        self.target.tls.root_cert.as_ref()
    }

    /// The client certificate and key files.
    pub fn get_ssl_client_cert(&self) -> Option<(&PathBuf, &PathBuf)> {
        self.target.tls.client_cert.as_ref().map(|(c, k)| (c, k))
    }

    pub fn get_pooler(&self) -> Pooler {
        self.target.pooler
    }

    pub fn get_sync_replication(&self) -> bool {
        self.target.sync_replication
    }
}

impl FromStr for PostgresOptions {
    type Err = Error;

    /// A `postgres://...` URL, parsed as [`crate::Store::open`] parses it.
    fn from_str(url: &str) -> Result<PostgresOptions> {
        match parse_url(url)? {
            StoreOptions::Postgres(options) => Ok(options),
            other => Err(Error::invalid(format!(
                "not a PostgreSQL URL: {:?} names a {} store",
                clip(url),
                other.kind().as_str()
            ))),
        }
    }
}

impl From<PostgresOptions> for StoreOptions {
    fn from(options: PostgresOptions) -> StoreOptions {
        StoreOptions::Postgres(options)
    }
}

impl From<&PostgresOptions> for StoreOptions {
    fn from(options: &PostgresOptions) -> StoreOptions {
        StoreOptions::Postgres(options.clone())
    }
}

fn bad_setting(name: &str, value: impl std::fmt::Display, allowed: &str) -> Error {
    Error::invalid(format!(
        "postgres {name} {}: expected {allowed}",
        clip(&value.to_string())
    ))
}

fn check_path(name: &str, path: &std::path::Path) -> Result<()> {
    if path.as_os_str().is_empty() || path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(Error::invalid(format!(
            "postgres {name}: expected a file path, got {path:?}"
        )));
    }
    Ok(())
}

/// The rest of `postgres://...?...` after the options every backend takes.
pub(super) fn parse(
    base: &str,
    query: &mut Query<'_>,
    options: Options,
) -> Result<PostgresOptions> {
    let schema = query.take("schema").unwrap_or(DEFAULT_SCHEMA);
    if !crate::backend::postgres::valid_schema(schema) {
        return Err(bad_value("schema", schema, SCHEMA_RULE));
    }
    let pool_size = match query.take("pool_size") {
        None => DEFAULT_POOL_SIZE,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if POOL_SIZE.contains(&n) => n,
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
    let tls = tls_options(query)?;
    // Every other option is the driver's (connect_timeout, hostaddr, ...).
    let rest = query.rest();
    let url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{rest}")
    };
    Ok(PostgresOptions {
        target: PostgresTarget {
            url,
            schema: schema.to_owned(),
            pool_size,
            call_timeout,
            tls,
            pooler,
            sync_replication,
        },
        options,
    })
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
    check_tls(mode, root_cert.as_ref())?;
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

/// The combinations of `sslmode` and `sslrootcert` libpq refuses.
fn check_tls(mode: SslMode, root_cert: Option<&RootCert>) -> Result<()> {
    if root_cert == Some(&RootCert::System) && mode != SslMode::VerifyFull {
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
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClockKind, ErrorCode};

    fn target(url: &str) -> PostgresTarget {
        url.parse::<PostgresOptions>().unwrap().target
    }

    #[test]
    fn postgres_call_timeout() {
        let timeout = |url: &str| target(url).call_timeout;
        assert_eq!(timeout("postgres://h/db"), DEFAULT_CALL_TIMEOUT);
        assert_eq!(
            timeout("postgres://h/db?call_timeout_ms=250"),
            Duration::from_millis(250)
        );
        // Taken out of the driver's URL, which would refuse it.
        assert_eq!(
            target("postgres://h/db?call_timeout_ms=250&application_name=x").url,
            "postgres://h/db?application_name=x"
        );
    }

    #[test]
    fn postgres_tls_and_pooler_options() {
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
    fn the_setters_build_what_the_url_says() {
        let mut built: PostgresOptions = "postgresql://u@h:5433/db?application_name=x"
            .parse()
            .unwrap();
        let defaults = built.clone();
        assert_eq!(defaults.get_schema(), DEFAULT_SCHEMA);
        assert_eq!(defaults.get_pool_size(), DEFAULT_POOL_SIZE);
        assert_eq!(defaults.get_call_timeout(), DEFAULT_CALL_TIMEOUT);
        assert_eq!(defaults.get_ssl_mode(), SslMode::Prefer);
        assert_eq!(defaults.get_ssl_root_cert(), None);
        assert_eq!(defaults.get_ssl_client_cert(), None);
        assert_eq!(defaults.get_pooler(), Pooler::None);
        assert!(!defaults.get_sync_replication());
        assert_eq!(defaults.get_options(), Options::default());
        built
            .schema("app_fencing")
            .unwrap()
            .pool_size(64)
            .unwrap()
            .call_timeout(Duration::from_millis(10))
            .unwrap()
            .ssl(
                SslMode::VerifyCa,
                Some(RootCert::File("/etc/ca s.crt".into())),
            )
            .unwrap()
            .ssl_client_cert(Some(("c.crt".into(), "c.key".into())))
            .unwrap()
            .pooler(Pooler::Transaction)
            .sync_replication(true)
            .clock(ClockKind::Manual)
            .strict(true)
            .eager_fencing(false);
        let url = "postgresql://u@h:5433/db?schema=app_fencing&pool_size=64\
                   &call_timeout_ms=10&sslmode=verify-ca&sslrootcert=/etc/ca%20s.crt\
                   &sslcert=c.crt&sslkey=c.key&pooler=transaction&sync_replication=required\
                   &clock=manual&strict=true&eager_fencing=false&application_name=x";
        assert_eq!(built, url.parse().unwrap());
        assert_ne!(built, defaults);
        // Back to the defaults, one setter at a time.
        built
            .schema(DEFAULT_SCHEMA)
            .unwrap()
            .pool_size(DEFAULT_POOL_SIZE)
            .unwrap()
            .call_timeout(DEFAULT_CALL_TIMEOUT)
            .unwrap()
            .ssl(SslMode::Prefer, None)
            .unwrap()
            .ssl_client_cert(None)
            .unwrap()
            .pooler(Pooler::None)
            .sync_replication(false)
            .options(Options::default());
        assert_eq!(built, defaults);
    }

    #[test]
    fn a_bad_value_is_refused_and_changes_nothing() {
        let mut options: PostgresOptions =
            "postgres://h/db?schema=s&pool_size=8&call_timeout_ms=250&sslmode=require"
                .parse()
                .unwrap();
        let before = options.clone();
        let refusals: Vec<(Error, &str)> = vec![
            (
                options.schema("Bad-Name").unwrap_err(),
                "schema \"Bad-Name\": expected",
            ),
            (options.schema("pg_x").unwrap_err(), "pg_x"),
            (
                options.pool_size(0).unwrap_err(),
                "pool_size 0: expected 1..=64",
            ),
            (options.pool_size(65).unwrap_err(), "pool_size 65"),
            (
                options.call_timeout(Duration::from_millis(9)).unwrap_err(),
                "call_timeout 9 ms",
            ),
            (
                options.call_timeout(Duration::MAX).unwrap_err(),
                "expected 10..=3600000 milliseconds",
            ),
            (
                options.ssl(SslMode::VerifyFull, None).unwrap_err(),
                "need sslrootcert",
            ),
            (
                options
                    .ssl(SslMode::Require, Some(RootCert::System))
                    .unwrap_err(),
                "sslrootcert=system needs sslmode=verify-full",
            ),
            (
                options
                    .ssl(SslMode::VerifyCa, Some(RootCert::File("".into())))
                    .unwrap_err(),
                "sslrootcert: expected a file path",
            ),
            (
                options
                    .ssl_client_cert(Some(("c.crt".into(), "".into())))
                    .unwrap_err(),
                "sslkey: expected a file path",
            ),
        ];
        for (error, says) in refusals {
            assert_eq!(error.code(), ErrorCode::InvalidArgument, "{error}");
            assert!(error.to_string().contains(says), "{error} lacks {says}");
        }
        assert_eq!(options, before);
    }

    #[test]
    fn debug_shows_no_password() {
        let options: PostgresOptions = "postgres://app:s3cret@h/db?application_name=x"
            .parse()
            .unwrap();
        let debug = format!("{options:?}");
        assert!(!debug.contains("s3cret"), "{debug}");
        assert!(
            debug.contains("postgres://app:***@h/db?application_name=x"),
            "{debug}"
        );
        assert_eq!(redacted("postgres://app@h/db"), "postgres://app@h/db");
        assert_eq!(redacted("postgres://h/db?x=a@b"), "postgres://h/db?x=a@b");
        assert_eq!(redacted("postgres://a:b:c@h/"), "postgres://a:***@h/");
    }

    #[test]
    fn password_file_keys_follow_libpq_defaults() {
        let keys = |conninfo: &str| {
            pgpass_keys(&conninfo.parse::<tokio_postgres::Config>().unwrap())
                .into_iter()
                .map(|k| format!("{}:{}:{}:{}", k.host, k.port, k.dbname, k.user))
                .collect::<Vec<_>>()
        };
        assert_eq!(keys("postgres://alice@db/app"), ["db:5432:app:alice"]);
        assert_eq!(
            keys("postgres://alice@db1:5433,db2:5434/app"),
            ["db1:5433:app:alice", "db2:5434:app:alice"]
        );
        // The database defaults to the user; the default socket directory is
        // `localhost`, another one its path.
        #[cfg(unix)] // Elsewhere no socket directory: a path is a host name.
        assert_eq!(
            keys("host=/var/run/postgresql user=bob"),
            ["localhost:5432:bob:bob"]
        );
        assert_eq!(
            keys("host=/tmp/pg port=6000 user=bob dbname=x"),
            ["/tmp/pg:6000:x:bob"]
        );
        assert_eq!(
            keys("hostaddr=127.0.0.1 user=bob dbname=x"),
            ["127.0.0.1:5432:x:bob"]
        );
        // Without a user, the one this process runs as (as the driver).
        let me = whoami::username().unwrap();
        assert_eq!(keys("postgres://db/app"), [format!("db:5432:app:{me}")]);
    }

    #[test]
    fn bad_urls_never_echo_the_password() {
        for url in [
            "postgress://app:s3cret@h/db",
            "postgres://app:s3cret@h:notaport/db",
            "postgres://app:s3cret@h/db?connect_timeout=x",
            "postgres://app:s3cret@h/db?schema=Bad",
            "postgres://app:s3cret@h/db?nonsense=1",
            "postgres://app:s3cr%zzet@h/db",
        ] {
            let message = match crate::Store::open(url) {
                Ok(_) => panic!("{url} opened"),
                Err(e) => e.to_string(),
            };
            assert!(!message.contains("s3cr"), "{message}");
        }
    }

    #[test]
    fn another_backend_s_url_is_not_postgres_options() {
        let message = "memory:"
            .parse::<PostgresOptions>()
            .unwrap_err()
            .to_string();
        assert!(message.contains("names a memory store"), "{message}");
    }
}
