//! `postgres://...`: PostgreSQL is the lease service, the counter, the fenced
//! store and the one clock. Every rule runs inside the database, in SQL
//! functions installed from `functions.sql` (`install`): each operation is one
//! statement, one round trip, atomic, with lease time from the server's clock.
//! Rejections come back as SQLSTATEs of class `FN` (see `crate::sqlstate`).

mod deadline;
mod install;
mod listener;
mod lock_wait;
mod notices;
mod pool;
mod runtime;
mod session;
mod tls;

#[cfg(test)]
pub(super) use install::sql_files;

use std::fmt;
use std::time::{Duration, Instant};

use tokio_postgres::row::RowIndex;
use tokio_postgres::types::{FromSql, ToSql, Type};
use tokio_postgres::{Client, Config, Row};

use super::wakes::Ticket;
use super::{Backend, OnTask, WatchRead};
use crate::error::{BackendErrorKind, Error, Result};
use crate::events::{at_ms, code_from_str, Events, LastWrite, RecordedRejection, RejectionNote};
use crate::rules::{ttl_ms, Mode};
use crate::token::Token;
use crate::types::{Entry, Fence, Lease, OpRef, Page, Receipt, ScopeStatus};
use crate::url::{Pooler, PostgresTarget};
use crate::waiting::Attempt;
use pool::{backend_error, Pool};

/// Unless the URL says otherwise (`connect_timeout=`, in seconds).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// TCP keepalive probes on idle connections, unless the URL sets
/// `keepalives_idle`: with `tcp_user_timeout`, a peer that vanished is
/// noticed in about 35 s rather than the kernel's two hours.
const KEEPALIVES_IDLE: Duration = Duration::from_secs(30);
const KEEPALIVES_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVES_RETRIES: u32 = 3;

/// Every statement the backend runs: prepared once per connection, or,
/// behind a transaction pooler, sent unnamed with its parameters' types and
/// parsed, bound and run in one round trip (`query_typed`), since a named
/// statement does not follow the client from one server connection to the
/// next (docs/postgres.md, "Poolers").
#[derive(Clone, Copy)]
enum Q {
    NextToken,
    AdvanceCounter,
    Acquire,
    Renew,
    Release,
    Apply,
    Claim,
    Get,
    GetChecked,
    List,
    Status,
    Retire,
    AdvanceClock,
    Failover,
    RecordRejection,
    Rejections,
    LastWrites,
    LowerWedged,
    AcquireWaiting,
    LeaveQueue,
    Watch,
}

impl Q {
    /// The call's name in a timeout message.
    fn name(self) -> &'static str {
        match self {
            Q::NextToken => "next_token",
            Q::AdvanceCounter => "advance_counter",
            Q::Acquire => "acquire",
            Q::Renew => "renew",
            Q::Release => "release",
            Q::Apply => "apply",
            Q::Claim => "claim",
            Q::Get => "get",
            Q::GetChecked => "get",
            Q::List => "list",
            Q::Status => "status",
            Q::Retire => "retire",
            Q::AdvanceClock => "advance_clock",
            Q::Failover => "failover",
            Q::RecordRejection => "record_rejection",
            Q::Rejections => "events",
            Q::LastWrites => "events",
            Q::LowerWedged => "lower_wedged",
            Q::AcquireWaiting => "acquire_wait",
            Q::LeaveQueue => "leave_queue",
            Q::Watch => "watch",
        }
    }
}

const TEXT: Type = Type::TEXT;
const INT8: Type = Type::INT8;
const BOOL: Type = Type::BOOL;

/// Each statement with its parameters' types (the functions' signatures).
const QUERIES: [(Q, &str, &[Type]); 21] = [
    (Q::NextToken, "SELECT @schema@.next_token($1)", &[TEXT]),
    (
        Q::AdvanceCounter,
        "SELECT @schema@.advance_counter($1, $2)",
        &[TEXT, INT8],
    ),
    (
        Q::Acquire,
        "SELECT * FROM @schema@.acquire($1, $2, $3, $4)",
        &[TEXT, TEXT, INT8, BOOL],
    ),
    (
        Q::Renew,
        "SELECT * FROM @schema@.renew($1, $2, $3)",
        &[TEXT, INT8, INT8],
    ),
    (Q::Release, "SELECT @schema@.release($1, $2)", &[TEXT, INT8]),
    (
        Q::Apply,
        "SELECT @schema@.apply($1, $2, $3, $4, $5, $6, $7, $8)",
        &[
            TEXT,
            INT8,
            INT8,
            BOOL,
            Type::TEXT_ARRAY,
            Type::BYTEA_ARRAY,
            Type::INT8_ARRAY,
            TEXT,
        ],
    ),
    (
        Q::Claim,
        "SELECT @schema@.claim($1, $2, $3)",
        &[TEXT, INT8, INT8],
    ),
    (Q::Get, "SELECT * FROM @schema@.get($1, $2)", &[TEXT, TEXT]),
    (
        Q::GetChecked,
        "SELECT * FROM @schema@.get_checked($1, $2, $3)",
        &[TEXT, TEXT, INT8],
    ),
    (
        Q::List,
        "SELECT * FROM @schema@.list($1, $2, $3)",
        &[TEXT, TEXT, INT8],
    ),
    (Q::Status, "SELECT * FROM @schema@.status($1)", &[TEXT]),
    (Q::Retire, "SELECT @schema@.retire($1)", &[TEXT]),
    (
        Q::AdvanceClock,
        "SELECT @schema@.advance_clock($1)",
        &[INT8],
    ),
    (Q::Failover, "SELECT @schema@.failover()", &[]),
    (
        Q::RecordRejection,
        "SELECT @schema@.record_rejection($1, $2, $3, $4, $5, $6, $7)",
        &[TEXT, TEXT, TEXT, INT8, INT8, TEXT, INT8],
    ),
    (
        Q::Rejections,
        "SELECT id, code, scope, key, presented, current, seq, holder, at_ms, suppressed \
         FROM @schema@.rejections($1, $2)",
        &[TEXT, INT8],
    ),
    (
        Q::LastWrites,
        "SELECT scope, holder, token, at_ms FROM @schema@.last_writes($1, $2)",
        &[TEXT, INT8],
    ),
    (
        Q::LowerWedged,
        "SELECT @schema@.lower_wedged($1, $2)",
        &[TEXT, INT8],
    ),
    (
        Q::AcquireWaiting,
        "SELECT * FROM @schema@.acquire_waiting($1, $2, $3, $4, $5)",
        &[TEXT, TEXT, INT8, BOOL, INT8],
    ),
    (
        Q::LeaveQueue,
        "SELECT @schema@.leave_queue($1, $2)",
        &[TEXT, INT8],
    ),
    (
        Q::Watch,
        "SELECT * FROM @schema@.watch($1, $2)",
        &[TEXT, INT8],
    ),
];

pub(crate) struct Postgres {
    /// Wakes the handle's waiters when the server announces a lease ended.
    listener: listener::Listener,
    pool: Pool,
    /// The statements of `QUERIES`, with the schema filled in.
    sql: Vec<String>,
    /// `lock_wait::HOLDERS`, with the schema filled in.
    holders_sql: String,
    /// Unnamed statements only (`pooler=transaction`).
    unnamed: bool,
    mode: Mode,
    /// The schema's name, and quoted for SQL text (`ping`).
    schema: String,
    quoted: String,
}

/// A statement's parameters paired with their declared types.
type Params<'a> = [&'a (dyn ToSql + Sync)];

/// Column `idx` of a row: a column missing or of another type than this
/// build expects (a schema changed under it) is `BACKEND`, never a panic.
fn col<'a, T: FromSql<'a>>(row: &'a Row, idx: impl RowIndex + fmt::Display + Copy) -> Result<T> {
    row.try_get(idx).map_err(|e| {
        Error::backend_from(
            BackendErrorKind::Corrupt,
            format!("postgres: reading column {idx}: {e}"),
            e,
        )
    })
}

/// Maps a driver error: fencing's own rejections to their typed errors,
/// anything else to `BACKEND`.
pub(crate) fn to_error(e: tokio_postgres::Error) -> Error {
    let fenced = e
        .as_db_error()
        .and_then(|db| Error::from_sqlstate(db.code().code(), db.detail()));
    fenced.unwrap_or_else(|| backend_error(e))
}

/// Tokens, seqs, versions and times are all below 2^63.
fn sql(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn stored(v: i64) -> Result<u64> {
    u64::try_from(v).map_err(|_| corrupt(format!("postgres: corrupt value {v} in store")))
}

fn stored_token(v: i64) -> Result<Token> {
    Token::new(stored(v)?).ok_or_else(|| corrupt(format!("postgres: corrupt token {v}")))
}

fn corrupt(message: String) -> Error {
    Error::backend(BackendErrorKind::Corrupt, message)
}

/// A schema name: a plain lower-case SQL identifier, so that it never needs
/// quoting rules beyond the double quotes we put around it anyway.
pub(crate) fn valid_schema(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z' | '_'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        && name.len() <= 63
        && !name.starts_with("pg_")
}

impl Postgres {
    /// A pool of one connection to `target` (made at its first call), and
    /// the quoted schema name: for the calls that open no store.
    fn one_connection(target: &PostgresTarget) -> Result<(Pool, String)> {
        let mut config = driver_config(&target.url, target.call_timeout)?;
        config.ssl_mode(tls::driver_mode(target.tls.mode, config.get_hosts()));
        let pool = Pool::new(
            config,
            tls::connector(&target.tls)?,
            target.pooler == Pooler::None,
            target.sync_replication,
            1,
            target.call_timeout,
        )?;
        Ok((pool, format!("\"{}\"", target.schema)))
    }

    /// Creates or upgrades the schema, as `open` does, on one connection
    /// that is then closed: no store is opened (`fencing migrate`). The
    /// clock mode is left alone: it belongs to the stores that open it.
    pub fn migrate(target: &PostgresTarget) -> Result<()> {
        let schema = target.schema.as_str();
        let (pool, quoted) = Self::one_connection(target)?;
        pool.with("migrate", async |c| {
            Ok(install::migrate(&mut c.client, schema, &quoted).await)
        })?
    }

    /// `Store::ping` of the schema, on one connection that is then closed:
    /// no store is opened and nothing is migrated (`fencing health`).
    pub fn ping(target: &PostgresTarget) -> Result<()> {
        let schema = target.schema.as_str();
        let (pool, quoted) = Self::one_connection(target)?;
        let out = pool.with("ping", async |c| {
            Ok(install::refuse_unless_current(&c.client, schema, &quoted).await)
        });
        pool.close();
        out?
    }

    /// Sets the worker time limits on `role` (`crate::worker_role`), on one
    /// connection that is then closed.
    pub fn bound_role(
        target: &PostgresTarget,
        role: &str,
        timeouts: &crate::worker_role::WorkerTimeouts,
    ) -> Result<()> {
        let (pool, _) = Self::one_connection(target)?;
        let idle = format!("{}ms", timeouts.idle_in_transaction.as_millis());
        let lock = format!("{}ms", timeouts.lock.as_millis());
        // The server quotes the name (%I) and the values (%L).
        let out = pool.with("worker timeouts", async |c| {
            let row = c
                .client
                .query_typed_one(
                    "SELECT format('ALTER ROLE %1$I SET idle_in_transaction_session_timeout = %2$L; \
                                    ALTER ROLE %1$I SET lock_timeout = %3$L', $1::text, $2::text, $3::text)",
                    &[(&role, Type::TEXT), (&idle, Type::TEXT), (&lock, Type::TEXT)],
                )
                .await?;
            let sql: String = row.try_get(0)?;
            c.client.batch_execute(&sql).await
        });
        pool.close();
        out
    }

    /// Connects, migrates the schema if needed (under an advisory lock, so
    /// that processes opening a fresh database at once all succeed), and
    /// checks the clock mode: one call, within `call_timeout`.
    pub fn open(target: &PostgresTarget, manual_clock: bool, mode: Mode) -> Result<Postgres> {
        let schema = target.schema.as_str();
        let mut config = driver_config(&target.url, target.call_timeout)?;
        config.ssl_mode(tls::driver_mode(target.tls.mode, config.get_hosts()));
        let quoted = format!("\"{schema}\"");
        let pool = Pool::new(
            config,
            tls::connector(&target.tls)?,
            target.pooler == Pooler::None,
            target.sync_replication,
            target.pool_size,
            target.call_timeout,
        )?;
        pool.with("open", async |c| {
            // fencing's own refusals are the call's answer, not a failure of it.
            Ok(async {
                install::migrate(&mut c.client, schema, &quoted).await?;
                if mode.unbounded_jumps {
                    c.client
                        .query_typed(&format!("SELECT {quoted}.unbound_jumps()"), &[])
                        .await
                        .map_err(db)?;
                }
                set_clock(&c.client, schema, &quoted, manual_clock).await
            }
            .await)
        })??;
        let sql = QUERIES
            .iter()
            .enumerate()
            .map(|(i, (q, text, _))| {
                debug_assert_eq!(*q as usize, i);
                text.replace("@schema@", &quoted)
            })
            .collect();
        Ok(Postgres {
            listener: listener::Listener::new(schema, target.pooler != Pooler::Transaction),
            pool,
            sql,
            holders_sql: lock_wait::HOLDERS.replace("@schema@", &quoted),
            unnamed: target.pooler == Pooler::Transaction,
            mode,
            schema: schema.to_owned(),
            quoted,
        })
    }

    /// Every row of statement `q` about `scope` (None: the whole store), on
    /// a pooled connection.
    fn rows(&self, q: Q, scope: Option<&str>, params: &Params<'_>) -> Result<Vec<Row>> {
        self.pool
            .with(q.name(), async |c| self.query(c, q, scope, params).await)?
    }

    /// [`Postgres::rows`] on the calling task (the async store); `None`
    /// when no connection the backend's runtime watches was idle and
    /// nothing was sent.
    async fn rows_on_task(
        &self,
        q: Q,
        scope: Option<&str>,
        params: &Params<'_>,
    ) -> Option<Result<Vec<Row>>> {
        let answer = self
            .pool
            .with_on_task(q.name(), async |c| self.query(c, q, scope, params).await)
            .await?;
        Some(answer.and_then(|rows| rows))
    }

    /// Statement `q` on connection `c`. A lock wait that the server ended
    /// says who held what the call waited for (`waited`).
    async fn query(
        &self,
        c: &mut pool::Conn,
        q: Q,
        scope: Option<&str>,
        params: &Params<'_>,
    ) -> Result<Result<Vec<Row>>, tokio_postgres::Error> {
        let sql = &self.sql[q as usize];
        let types = QUERIES[q as usize].2;
        debug_assert_eq!(params.len(), types.len());
        let out = if self.unnamed {
            let typed: Vec<(&(dyn ToSql + Sync), Type)> = params
                .iter()
                .zip(types)
                .map(|(p, t)| (*p, t.clone()))
                .collect();
            c.client.query_typed(sql, &typed).await
        } else {
            match c.statement(q as usize, sql, types).await {
                Ok(statement) => c.client.query(&statement, params).await,
                Err(e) => Err(e),
            }
        };
        match out {
            Err(e) if lock_wait::ended(&e) => {
                let holders = lock_wait::holders(&c.client, &self.holders_sql, scope).await;
                Ok(Err(lock_wait::error(q.name(), scope, e, holders)))
            }
            out => out.map(Ok),
        }
    }

    /// The first column of the one row statement `q` returns.
    fn first<T: for<'a> FromSql<'a>>(
        &self,
        q: Q,
        scope: Option<&str>,
        params: &Params<'_>,
    ) -> Result<T> {
        col(&self.one(q, scope, params)?, 0)
    }

    /// The one row statement `q` returns.
    fn one(&self, q: Q, scope: Option<&str>, params: &Params<'_>) -> Result<Row> {
        only_row(q, self.rows(q, scope, params)?)
    }

    /// [`Postgres::one`] on the calling task; `None`: nothing was sent.
    async fn one_on_task(
        &self,
        q: Q,
        scope: Option<&str>,
        params: &Params<'_>,
    ) -> Option<Result<Row>> {
        let rows = self.rows_on_task(q, scope, params).await?;
        Some(rows.and_then(|rows| only_row(q, rows)))
    }
}

/// `apply`'s arguments as the statement takes them, and its answer read.
struct Apply<'a> {
    keys: Vec<&'a str>,
    values: Vec<Option<&'a [u8]>>,
    expected: Vec<Option<i64>>,
    token: i64,
    seq: Option<i64>,
    /// The token each receipt names.
    fence: Token,
}

impl<'a> Apply<'a> {
    fn new(fence: &Fence, ops: &[OpRef<'a>]) -> Apply<'a> {
        Apply {
            keys: ops.iter().map(|op| op.key).collect(),
            values: ops.iter().map(|op| op.value).collect(),
            expected: ops.iter().map(|op| op.expected_version.map(sql)).collect(),
            token: sql(fence.token.get()),
            seq: fence.seq.map(sql),
            fence: fence.token,
        }
    }

    fn params<'p>(
        &'p self,
        scope: &'p &str,
        pg: &'p Postgres,
        fence: &'p Fence,
    ) -> [&'p (dyn ToSql + Sync); 8] {
        [
            scope,
            &self.token,
            &self.seq,
            &pg.mode.strict,
            &self.keys,
            &self.values,
            &self.expected,
            &fence.holder,
        ]
    }

    /// A receipt per operation, each with the version the row gives it.
    fn receipts(&self, row: &Row) -> Result<Vec<Receipt>> {
        let versions: Vec<i64> = col(row, 0)?;
        if versions.len() != self.keys.len() {
            return Err(corrupt(format!(
                "postgres: apply returned {} receipts for {} operations",
                versions.len(),
                self.keys.len()
            )));
        }
        versions
            .into_iter()
            .map(|v| {
                Ok(Receipt {
                    version: stored(v)?,
                    token: self.fence,
                })
            })
            .collect()
    }
}

/// What `get` or `get_checked` returned for `key`: nothing, or its entry.
fn entry_from(key: &str, row: Option<Row>) -> Result<Option<Entry>> {
    let Some(row) = row else { return Ok(None) };
    let Some(value) = col::<Option<Vec<u8>>>(&row, 0)? else {
        return Ok(None);
    };
    Ok(Some(Entry {
        key: key.to_owned(),
        value,
        version: stored(col(&row, 1)?)?,
        token: stored_token(col(&row, 2)?)?,
    }))
}

/// The first of the rows statement `q` returned, which always returns one.
fn only_row(q: Q, rows: Vec<Row>) -> Result<Row> {
    rows.into_iter()
        .next()
        .ok_or_else(|| corrupt(format!("postgres: {} returned no row", q.name())))
}

/// A host that is a path (`/run/postgresql`, or `C:\\pg` as libpq reads it
/// on Windows) names a Unix socket directory. The driver reaches those on
/// unix only; elsewhere it would look the path up as a host name.
#[cfg(not(unix))]
fn refuse_socket_hosts(config: &Config) -> Result<()> {
    use tokio_postgres::config::Host;
    for host in config.get_hosts() {
        let Host::Tcp(name) = host;
        let b = name.as_bytes();
        let drive = b.len() > 2
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && matches!(b[2], b'/' | b'\\');
        if name.starts_with('/') || drive {
            return Err(Error::invalid(format!(
                "postgres URL: host {name} is a Unix socket directory, and fencing reaches \
                 PostgreSQL over TCP only on this platform: name the server by host name or \
                 address"
            )));
        }
    }
    Ok(())
}

/// The driver's settings from the URL, with the time limits fencing needs
/// where the URL names none (docs/postgres.md, "Options"), and a password
/// from the environment or the password file when it names none
/// (docs/postgres.md, "Credentials").
fn driver_config(url: &str, call_timeout: Duration) -> Result<Config> {
    let mut config: Config = url
        .parse()
        .map_err(|e| Error::invalid(format!("postgres URL: {e}")))?;
    #[cfg(not(unix))]
    refuse_socket_hosts(&config)?;
    crate::url::supply_password(&mut config);
    let given = |name: &str| {
        url.split_once('?')
            .is_some_and(|(_, q)| q.split('&').any(|p| p.split('=').next() == Some(name)))
    };
    if config.get_connect_timeout().is_none() {
        // Without it, connecting to an unreachable host hangs for minutes.
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_tcp_user_timeout().is_none() {
        // Sent data nobody acknowledges for a whole call: the path is gone.
        config.tcp_user_timeout(call_timeout);
    }
    if !given("keepalives_idle") {
        config.keepalives_idle(KEEPALIVES_IDLE);
    }
    if config.get_keepalives_interval().is_none() {
        config.keepalives_interval(KEEPALIVES_INTERVAL);
    }
    if config.get_keepalives_retries().is_none() {
        config.keepalives_retries(KEEPALIVES_RETRIES);
    }
    Ok(config)
}

fn db(e: tokio_postgres::Error) -> Error {
    to_error(e)
}

/// `?clock=manual` stops the schema's clock (it then moves only with
/// `advance_clock`, for every handle); a handle on the server's clock refuses
/// a schema whose clock was stopped, so a test schema never runs production.
async fn set_clock(client: &Client, schema: &str, quoted: &str, manual: bool) -> Result<()> {
    if manual {
        client
            .query_typed(&format!("SELECT {quoted}.stop_clock()"), &[])
            .await
            .map_err(db)?;
    }
    let stopped: bool = client
        .query_typed_one(&format!("SELECT {quoted}.clock_is_manual()"), &[])
        .await
        .map_err(db)
        .and_then(|row| col(&row, 0))?;
    if stopped && !manual {
        return Err(Error::invalid(format!(
            "schema {schema:?} runs on a manual clock (a test schema): open it with \
             ?clock=manual, or use another schema"
        )));
    }
    Ok(())
}

/// A lease row: holder, token, ttl_ms, expires_ms, now_ms (server clock).
fn lease_from(scope: &str, row: &Row) -> Result<Lease> {
    let expires_ms = stored(col(row, "expires_ms")?)?;
    let now_ms = stored(col(row, "now_ms")?)?;
    Ok(Lease {
        scope: scope.to_owned(),
        holder: col(row, "holder")?,
        token: stored_token(col(row, "token")?)?,
        ttl: Duration::from_millis(stored(col(row, "ttl_ms")?)?),
        expires_at: at_ms(expires_ms),
        remaining: Duration::from_millis(expires_ms.saturating_sub(now_ms)),
    })
}

/// Whether the server refused a call for want of a privilege (SQLSTATE
/// 42501): a function this role was never granted.
fn denied(e: &Error) -> bool {
    let Error::Backend(b) = e else { return false };
    b.source()
        .and_then(|s| s.downcast_ref::<tokio_postgres::Error>())
        .and_then(|p| p.as_db_error())
        .is_some_and(|db| db.code().code() == "42501")
}

fn ms(d: Duration) -> i64 {
    sql(ttl_ms(d))
}

impl Backend for Postgres {
    fn next_token(&self, scope: &str) -> Result<Token> {
        stored_token(self.first(Q::NextToken, Some(scope), &[&scope])?)
    }

    fn advance_counter(&self, scope: &str, floor: Token) -> Result<u64> {
        stored(self.first(Q::AdvanceCounter, Some(scope), &[&scope, &sql(floor.get())])?)
    }

    fn acquire(&self, scope: &str, holder: &str, ttl: Duration, _called: Instant) -> Result<Lease> {
        let row = self.one(
            Q::Acquire,
            Some(scope),
            &[&scope, &holder, &ms(ttl), &self.mode.eager_fencing],
        )?;
        lease_from(scope, &row)
    }

    fn renew(&self, scope: &str, token: Token, ttl: Duration, _called: Instant) -> Result<Lease> {
        let row = self.one(
            Q::Renew,
            Some(scope),
            &[&scope, &sql(token.get()), &ms(ttl)],
        )?;
        // A refused renewal returns no token (and commits the time it saw).
        if col::<Option<i64>>(&row, "token")?.is_none() {
            let current = match col::<Option<i64>>(&row, "current_token")? {
                Some(t) => Some((stored_token(t)?, col(&row, "current_holder")?)),
                None => None,
            };
            return Err(Error::LeaseLost {
                scope: scope.to_owned(),
                current,
            });
        }
        lease_from(scope, &row)
    }

    fn release(&self, scope: &str, token: Token, _called: Instant) -> Result<bool> {
        // The waiters, here and elsewhere, hear of it from the server: it
        // knows which of them is next.
        self.first(Q::Release, Some(scope), &[&scope, &sql(token.get())])
    }

    fn release_watch(&self, scope: &str) -> Ticket {
        self.listener.ensure(&self.pool);
        self.listener.wakes().ticket(scope)
    }

    fn change_watch(&self, scope: &str) -> Ticket {
        self.listener.ensure(&self.pool);
        self.listener.wakes().watch_ticket(scope)
    }

    fn watch_read(&self, scope: &str, id: Option<u64>) -> Result<WatchRead> {
        let row = match self.one(Q::Watch, Some(scope), &[&scope, &id.map(sql)]) {
            Ok(row) => row,
            // A role granted before `watch` existed reads the lease through
            // `status`, unregistered: its watches ask again after a back-off.
            Err(e) if denied(&e) => {
                self.listener.cannot_register(&e);
                return Ok(WatchRead {
                    lease: self.status(scope)?.lease,
                    id: None,
                    announced: false,
                });
            }
            Err(e) => return Err(e),
        };
        let lease = match col::<Option<String>>(&row, "holder")? {
            Some(_) => Some(lease_from(scope, &row)?),
            None => None,
        };
        Ok(WatchRead {
            lease,
            id: Some(stored(col(&row, "id")?)?),
            announced: true,
        })
    }

    fn acquire_waiting(
        &self,
        scope: &str,
        holder: &str,
        ttl: Duration,
        place: Option<u64>,
    ) -> Result<Attempt> {
        let place = place.map(sql);
        let row = match self.one(
            Q::AcquireWaiting,
            Some(scope),
            &[&scope, &holder, &ms(ttl), &self.mode.eager_fencing, &place],
        ) {
            Ok(row) => row,
            // A role granted EXECUTE before the function existed: it waits
            // as before places, polling, until an operator grants it again.
            Err(e) if denied(&e) => {
                self.listener.cannot_queue(&e);
                return match self.acquire(scope, holder, ttl, Instant::now()) {
                    Ok(lease) => Ok(Attempt::Got(lease)),
                    Err(Error::LeaseHeld { remaining, .. }) => {
                        Ok(Attempt::Unqueued { wait: remaining })
                    }
                    Err(e) => Err(e),
                };
            }
            Err(e) => return Err(e),
        };
        if col::<Option<i64>>(&row, "token")?.is_some() {
            return lease_from(scope, &row).map(Attempt::Got);
        }
        Ok(Attempt::Queued {
            place: stored(col(&row, "place")?)?,
            wait: Duration::from_millis(stored(col(&row, "wait_ms")?)?),
        })
    }

    fn leave_queue(&self, scope: &str, place: u64) -> Result<()> {
        self.rows(Q::LeaveQueue, Some(scope), &[&scope, &sql(place)])
            .map(drop)
    }

    fn write(
        &self,
        scope: &str,
        fence: &Fence,
        ops: &[OpRef<'_>],
        _called: Instant,
    ) -> Result<Vec<Receipt>> {
        let args = Apply::new(fence, ops);
        let row = self.one(Q::Apply, Some(scope), &args.params(&scope, self, fence))?;
        args.receipts(&row)
    }

    fn write_on_task<'a>(
        &'a self,
        scope: &'a str,
        fence: &'a Fence,
        ops: &'a [OpRef<'a>],
    ) -> Option<OnTask<'a, Vec<Receipt>>> {
        Some(Box::pin(async move {
            let args = Apply::new(fence, ops);
            let params = args.params(&scope, self, fence);
            let row = self.one_on_task(Q::Apply, Some(scope), &params).await?;
            Some(row.and_then(|row| args.receipts(&row)))
        }))
    }

    fn claim(&self, scope: &str, fence: &Fence) -> Result<()> {
        self.one(
            Q::Claim,
            Some(scope),
            &[&scope, &sql(fence.token.get()), &fence.seq.map(sql)],
        )
        .map(drop)
    }

    fn get(&self, scope: &str, key: &str, fence: Option<&Fence>) -> Result<Option<Entry>> {
        let token = fence.map(|f| sql(f.token.get()));
        let row = match &token {
            None => self
                .rows(Q::Get, Some(scope), &[&scope, &key])?
                .into_iter()
                .next(),
            Some(t) => Some(self.one(Q::GetChecked, Some(scope), &[&scope, &key, t])?),
        };
        entry_from(key, row)
    }

    fn get_on_task<'a>(
        &'a self,
        scope: &'a str,
        key: &'a str,
        fence: Option<&'a Fence>,
    ) -> Option<OnTask<'a, Option<Entry>>> {
        Some(Box::pin(async move {
            let token = fence.map(|f| sql(f.token.get()));
            let row = match &token {
                None => self
                    .rows_on_task(Q::Get, Some(scope), &[&scope, &key])
                    .await?
                    .map(|rows| rows.into_iter().next()),
                Some(t) => self
                    .one_on_task(Q::GetChecked, Some(scope), &[&scope, &key, t])
                    .await?
                    .map(Some),
            };
            Some(row.and_then(|row| entry_from(key, row)))
        }))
    }

    fn list(&self, scope: &str, after: Option<&str>, limit: usize) -> Result<Page> {
        let after = after.unwrap_or("");
        let rows = self.rows(Q::List, Some(scope), &[&scope, &after, &(limit as i64 + 1)])?;
        let keys = rows.iter().map(|r| col(r, 0)).collect::<Result<_>>()?;
        Ok(Page::from_keys(keys, limit))
    }

    fn status(&self, scope: &str) -> Result<ScopeStatus> {
        let row = self.one(Q::Status, Some(scope), &[&scope])?;
        let lease = match col::<Option<String>>(&row, "holder")? {
            Some(_) => Some(lease_from(scope, &row)?),
            None => None,
        };
        Ok(ScopeStatus {
            counter: stored(col(&row, "counter")?)?,
            fence: stored(col(&row, "fence")?)?,
            lease,
            entries: stored(col(&row, "entries")?)?,
        })
    }

    fn retire(&self, scope: &str) -> Result<bool> {
        self.first(Q::Retire, Some(scope), &[&scope])
    }

    fn lower_wedged(&self, scope: &str, bound: Token) -> Result<u64> {
        stored(self.first(Q::LowerWedged, Some(scope), &[&scope, &sql(bound.get())])?)
    }

    fn failover(&self) -> Result<u64> {
        stored(self.first(Q::Failover, None, &[])?)
    }

    fn record_rejection(&self, note: &RejectionNote<'_>) -> Result<()> {
        self.one(
            Q::RecordRejection,
            Some(note.scope),
            &[
                &note.scope,
                &note.key,
                &note.code.as_str(),
                &sql(note.presented.get()),
                &note.seq.map(sql),
                &note.holder,
                &sql(note.suppressed),
            ],
        )
        .map(drop)
    }

    fn events(&self, scope: Option<&str>, limit: usize) -> Result<Events> {
        let limit = limit as i64;
        let rejections = self
            .rows(Q::Rejections, scope, &[&scope, &limit])?
            .iter()
            .map(|r| {
                Ok(RecordedRejection {
                    id: stored(col(r, "id")?)?,
                    code: code_from_str(col(r, "code")?)?,
                    scope: col(r, "scope")?,
                    key: col(r, "key")?,
                    presented: stored_token(col(r, "presented")?)?,
                    current: stored(col(r, "current")?)?,
                    seq: col::<Option<i64>>(r, "seq")?.map(stored).transpose()?,
                    holder: col(r, "holder")?,
                    at: at_ms(stored(col(r, "at_ms")?)?),
                    suppressed: stored(col(r, "suppressed")?)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let last_writes = self
            .rows(Q::LastWrites, scope, &[&scope, &limit])?
            .iter()
            .map(|r| {
                Ok(LastWrite {
                    scope: col(r, "scope")?,
                    holder: col(r, "holder")?,
                    token: stored_token(col(r, "token")?)?,
                    at: at_ms(stored(col(r, "at_ms")?)?),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Events {
            rejections,
            last_writes,
        })
    }

    fn advance_clock(&self, by: Duration) -> Result<()> {
        let by = sql(u64::try_from(by.as_millis()).unwrap_or(u64::MAX));
        let moved: bool = self.first(Q::AdvanceClock, None, &[&by])?;
        if !moved {
            return Err(Error::invalid(
                "advance_clock needs a manual clock (open the store with ?clock=manual)",
            ));
        }
        Ok(())
    }

    fn ping(&self) -> Result<()> {
        self.pool.with("ping", async |c| {
            // A schema that is not current is the ping's answer, not a
            // failure of the connection.
            Ok(install::refuse_unless_current(&c.client, &self.schema, &self.quoted).await)
        })?
    }

    fn close(&self) {
        self.listener.stop();
        self.pool.close();
        // Waits and watches of this handle find it closed at once.
        self.listener.wakes().all_ended();
    }
}
