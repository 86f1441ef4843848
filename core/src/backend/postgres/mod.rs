//! `postgres://...`: PostgreSQL is the lease service, the counter, the fenced
//! store and the one clock. Every rule runs inside the database, in SQL
//! functions the migration installs (`v1.sql`): each operation is one
//! statement, one round trip, atomic, with lease time from the server's clock.
//! Rejections come back as SQLSTATEs of class `FN` (see `crate::sqlstate`).

mod deadline;
mod notices;
mod pool;
mod runtime;
mod session;
mod tls;

use std::time::{Duration, UNIX_EPOCH};

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config, GenericClient, Row};

use super::Backend;
use crate::error::{BackendErrorKind, Error, Result};
use crate::events::{at_ms, code_from_str, Events, LastWrite, RecordedRejection, RejectionNote};
use crate::rules::{ttl_ms, Mode, FAILOVER_STEP};
use crate::token::Token;
use crate::types::{Entry, Fence, Lease, OpRef, Page, Receipt, ScopeStatus};
use crate::url::{Pooler, PostgresTarget};
use pool::{backend_error, Pool};

/// The schema versions this build knows; a newer database is refused.
const MIGRATIONS: [&str; 5] = [
    include_str!("v1.sql"),
    include_str!("v2.sql"),
    include_str!("v3.sql"),
    include_str!("v4.sql"),
    include_str!("v5.sql"),
];

/// How often a waiting `acquire_wait` looks again (other hosts cannot wake it).
const POLL: Duration = Duration::from_millis(10);

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
        }
    }
}

const TEXT: Type = Type::TEXT;
const INT8: Type = Type::INT8;
const BOOL: Type = Type::BOOL;

/// Each statement with its parameters' types (the functions' signatures).
const QUERIES: [(Q, &str, &[Type]); 17] = [
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
    (Q::Failover, "SELECT @schema@.failover($1)", &[INT8]),
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
];

pub(crate) struct Postgres {
    pool: Pool,
    /// The statements of `QUERIES`, with the schema filled in.
    sql: Vec<String>,
    /// Unnamed statements only (`pooler=transaction`).
    unnamed: bool,
    mode: Mode,
}

/// A statement's parameters paired with their declared types.
type Params<'a> = [&'a (dyn ToSql + Sync)];

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
    /// Creates or upgrades the schema, as `open` does, on one connection
    /// that is then closed: no store is opened (`fencing migrate`). The
    /// clock mode is left alone: it belongs to the stores that open it.
    pub fn migrate(target: &PostgresTarget) -> Result<()> {
        let schema = target.schema.as_str();
        let mut config = driver_config(&target.url, target.call_timeout)?;
        config.ssl_mode(tls::driver_mode(target.tls.mode, config.get_hosts()));
        let quoted = format!("\"{schema}\"");
        let pool = Pool::new(
            config,
            tls::connector(&target.tls)?,
            target.pooler == Pooler::None,
            target.sync_replication,
            1,
            target.call_timeout,
        )?;
        pool.with("migrate", async |c| {
            Ok(migrate(&mut c.client, schema, &quoted).await)
        })?
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
                migrate(&mut c.client, schema, &quoted).await?;
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
            pool,
            sql,
            unnamed: target.pooler == Pooler::Transaction,
            mode,
        })
    }

    /// Every row of statement `q`, on a pooled connection.
    fn rows(&self, q: Q, params: &Params<'_>) -> Result<Vec<Row>> {
        let sql = &self.sql[q as usize];
        let types = QUERIES[q as usize].2;
        debug_assert_eq!(params.len(), types.len());
        if self.unnamed {
            let typed: Vec<(&(dyn ToSql + Sync), Type)> = params
                .iter()
                .zip(types)
                .map(|(p, t)| (*p, t.clone()))
                .collect();
            return self
                .pool
                .with(q.name(), async |c| c.client.query_typed(sql, &typed).await);
        }
        self.pool.with(q.name(), async |c| {
            let statement = c.statement(q as usize, sql, types).await?;
            c.client.query(&statement, params).await
        })
    }

    /// The one row statement `q` returns.
    fn one(&self, q: Q, params: &Params<'_>) -> Result<Row> {
        let n = q.name();
        self.rows(q, params)?
            .into_iter()
            .next()
            .ok_or_else(|| corrupt(format!("postgres: {n} returned no row")))
    }
}

/// The driver's settings from the URL, with the time limits fencing needs
/// where the URL names none (docs/postgres.md, "Options").
fn driver_config(url: &str, call_timeout: Duration) -> Result<Config> {
    let mut config: Config = url
        .parse()
        .map_err(|e| Error::invalid(format!("postgres URL: {e}")))?;
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

/// The schema's version: -1 when it has no migrations table.
async fn schema_version(client: &impl GenericClient, schema: &str, quoted: &str) -> Result<i32> {
    // A query on the catalog tables, not to_regclass: after waiting for the
    // migration lock, a cached "no such table" must not hide the table the
    // other session just created.
    let row = client
        .query_typed_one(
            "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = 'migrations')",
            &[(&schema, Type::TEXT)],
        )
        .await
        .map_err(db)?;
    if !row.get::<_, bool>(0) {
        return Ok(-1);
    }
    let row = client
        .query_typed_one(
            &format!("SELECT coalesce(max(version), 0) FROM {quoted}.migrations"),
            &[],
        )
        .await
        .map_err(db)?;
    Ok(row.get(0))
}

async fn migrate(client: &mut Client, schema: &str, quoted: &str) -> Result<()> {
    let known = MIGRATIONS.len() as i32;
    if schema_version(client, schema, quoted).await? == known {
        return Ok(());
    }
    let tx = client.transaction().await.map_err(db)?;
    // A transaction-level lock: it holds behind a transaction pooler too.
    tx.query_typed(
        "SELECT pg_advisory_xact_lock(hashtextextended('fencing.migrate:' || $1::text, 0))",
        &[(&schema, Type::TEXT)],
    )
    .await
    .map_err(db)?;
    let mut current = schema_version(&tx, schema, quoted).await?;
    if current > known {
        return Err(Error::backend(
            BackendErrorKind::Refused,
            format!(
                "postgres: schema {schema:?} has version {current}, written by a newer \
                 fencing; this build knows versions up to {known}"
            ),
        ));
    }
    if current < 0 {
        // A schema someone else made is not ours to take over.
        let foreign: i64 = tx
            .query_typed_one(
                "SELECT (SELECT count(*) FROM pg_class c \
                           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1) \
                      + (SELECT count(*) FROM pg_proc p \
                           JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1)",
                &[(&schema, Type::TEXT)],
            )
            .await
            .map_err(db)?
            .get(0);
        if foreign > 0 {
            return Err(Error::backend(
                BackendErrorKind::Refused,
                format!(
                    "postgres: schema {schema:?} holds objects that fencing did not create: \
                     choose another with ?schema=NAME"
                ),
            ));
        }
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {quoted}"))
            .await
            .map_err(db)?;
        current = 0;
    }
    for (i, migration) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.batch_execute(&migration.replace("@schema@", quoted))
            .await
            .map_err(db)?;
        tx.query_typed(
            &format!("INSERT INTO {quoted}.migrations (version) VALUES ($1)"),
            &[(&(i as i32 + 1), Type::INT4)],
        )
        .await
        .map_err(db)?;
    }
    tx.commit().await.map_err(db)
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
        .map_err(db)?
        .get(0);
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
    let expires_ms = stored(row.get("expires_ms"))?;
    let now_ms = stored(row.get("now_ms"))?;
    Ok(Lease {
        scope: scope.to_owned(),
        holder: row.get("holder"),
        token: stored_token(row.get("token"))?,
        ttl: Duration::from_millis(stored(row.get("ttl_ms"))?),
        expires_at: UNIX_EPOCH + Duration::from_millis(expires_ms),
        remaining: Duration::from_millis(expires_ms.saturating_sub(now_ms)),
    })
}

fn ms(d: Duration) -> i64 {
    sql(ttl_ms(d))
}

impl Backend for Postgres {
    fn next_token(&self, scope: &str) -> Result<Token> {
        stored_token(self.one(Q::NextToken, &[&scope])?.get(0))
    }

    fn advance_counter(&self, scope: &str, floor: Token) -> Result<u64> {
        stored(
            self.one(Q::AdvanceCounter, &[&scope, &sql(floor.get())])?
                .get(0),
        )
    }

    fn acquire(&self, scope: &str, holder: &str, ttl: Duration) -> Result<Lease> {
        let row = self.one(
            Q::Acquire,
            &[&scope, &holder, &ms(ttl), &self.mode.eager_fencing],
        )?;
        lease_from(scope, &row)
    }

    fn renew(&self, scope: &str, token: Token, ttl: Duration) -> Result<Lease> {
        let row = self.one(Q::Renew, &[&scope, &sql(token.get()), &ms(ttl)])?;
        // A refused renewal returns no token (and commits the time it saw).
        if row.get::<_, Option<i64>>("token").is_none() {
            let current = match row.get::<_, Option<i64>>("current_token") {
                Some(t) => Some((stored_token(t)?, row.get("current_holder"))),
                None => None,
            };
            return Err(Error::LeaseLost {
                scope: scope.to_owned(),
                current,
            });
        }
        lease_from(scope, &row)
    }

    fn release(&self, scope: &str, token: Token) -> Result<bool> {
        Ok(self.one(Q::Release, &[&scope, &sql(token.get())])?.get(0))
    }

    fn wait_for_release(&self, _scope: &str, max: Duration) {
        std::thread::sleep(max.min(POLL));
    }

    fn write(&self, scope: &str, fence: &Fence, ops: &[OpRef<'_>]) -> Result<Vec<Receipt>> {
        let keys: Vec<&str> = ops.iter().map(|op| op.key).collect();
        let values: Vec<Option<&[u8]>> = ops.iter().map(|op| op.value).collect();
        let expected: Vec<Option<i64>> =
            ops.iter().map(|op| op.expected_version.map(sql)).collect();
        let row = self.one(
            Q::Apply,
            &[
                &scope,
                &sql(fence.token.get()),
                &fence.seq.map(sql),
                &self.mode.strict,
                &keys,
                &values,
                &expected,
                &fence.holder,
            ],
        )?;
        let versions: Vec<i64> = row.get(0);
        if versions.len() != ops.len() {
            return Err(corrupt(format!(
                "postgres: apply returned {} receipts for {} operations",
                versions.len(),
                ops.len()
            )));
        }
        versions
            .into_iter()
            .map(|v| {
                Ok(Receipt {
                    version: stored(v)?,
                    token: fence.token,
                })
            })
            .collect()
    }

    fn claim(&self, scope: &str, fence: &Fence) -> Result<()> {
        self.one(
            Q::Claim,
            &[&scope, &sql(fence.token.get()), &fence.seq.map(sql)],
        )
        .map(drop)
    }

    fn get(&self, scope: &str, key: &str, fence: Option<&Fence>) -> Result<Option<Entry>> {
        let row = match fence {
            None => self.rows(Q::Get, &[&scope, &key])?.into_iter().next(),
            Some(f) => Some(self.one(Q::GetChecked, &[&scope, &key, &sql(f.token.get())])?),
        };
        let Some(row) = row else { return Ok(None) };
        let Some(value) = row.get::<_, Option<Vec<u8>>>(0) else {
            return Ok(None);
        };
        Ok(Some(Entry {
            key: key.to_owned(),
            value,
            version: stored(row.get(1))?,
            token: stored_token(row.get(2))?,
        }))
    }

    fn list(&self, scope: &str, after: Option<&str>, limit: usize) -> Result<Page> {
        let after = after.unwrap_or("");
        let rows = self.rows(Q::List, &[&scope, &after, &(limit as i64 + 1)])?;
        let keys = rows.iter().map(|r| r.get(0)).collect();
        Ok(Page::from_keys(keys, limit))
    }

    fn status(&self, scope: &str) -> Result<ScopeStatus> {
        let row = self.one(Q::Status, &[&scope])?;
        let lease = match row.get::<_, Option<String>>("holder") {
            Some(_) => Some(lease_from(scope, &row)?),
            None => None,
        };
        Ok(ScopeStatus {
            counter: stored(row.get("counter"))?,
            fence: stored(row.get("fence"))?,
            lease,
            entries: stored(row.get("entries"))?,
        })
    }

    fn retire(&self, scope: &str) -> Result<bool> {
        Ok(self.one(Q::Retire, &[&scope])?.get(0))
    }

    fn failover(&self) -> Result<u64> {
        let step = sql(FAILOVER_STEP);
        stored(self.one(Q::Failover, &[&step])?.get(0))
    }

    fn record_rejection(&self, note: &RejectionNote<'_>) -> Result<()> {
        self.one(
            Q::RecordRejection,
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
            .rows(Q::Rejections, &[&scope, &limit])?
            .iter()
            .map(|r| {
                Ok(RecordedRejection {
                    id: stored(r.get("id"))?,
                    code: code_from_str(r.get("code"))?,
                    scope: r.get("scope"),
                    key: r.get("key"),
                    presented: stored_token(r.get("presented"))?,
                    current: stored(r.get("current"))?,
                    seq: r.get::<_, Option<i64>>("seq").map(stored).transpose()?,
                    holder: r.get("holder"),
                    at: at_ms(stored(r.get("at_ms"))?),
                    suppressed: stored(r.get("suppressed"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let last_writes = self
            .rows(Q::LastWrites, &[&scope, &limit])?
            .iter()
            .map(|r| {
                Ok(LastWrite {
                    scope: r.get("scope"),
                    holder: r.get("holder"),
                    token: stored_token(r.get("token"))?,
                    at: at_ms(stored(r.get("at_ms"))?),
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
        let moved: bool = self.one(Q::AdvanceClock, &[&by])?.get(0);
        if !moved {
            return Err(Error::invalid(
                "advance_clock needs a manual clock (open the store with ?clock=manual)",
            ));
        }
        Ok(())
    }

    fn close(&self) {
        self.pool.close();
    }
}
