//! `postgres://...`: PostgreSQL is the lease service, the counter, the fenced
//! store and the one clock. Every rule runs inside the database, in SQL
//! functions the migration installs (`v1.sql`): each operation is one
//! statement, one round trip, atomic, with lease time from the server's clock.
//! Rejections come back as SQLSTATEs of class `FN` (see `crate::sqlstate`).

mod deadline;
mod pool;
mod runtime;
mod session;

use std::time::{Duration, UNIX_EPOCH};

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, GenericClient, Row, Statement};

use super::Backend;
use crate::error::{Error, Result};
use crate::rules::{ttl_ms, Mode, FAILOVER_STEP};
use crate::token::Token;
use crate::types::{Entry, Fence, Lease, OpRef, Page, Receipt, ScopeStatus};
use pool::{backend_error, Pool};

/// The schema versions this build knows; a newer database is refused.
const MIGRATIONS: [&str; 4] = [
    include_str!("v1.sql"),
    include_str!("v2.sql"),
    include_str!("v3.sql"),
    include_str!("v4.sql"),
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

/// Every statement the backend runs, prepared once per connection.
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
        }
    }
}

const QUERIES: [(Q, &str); 14] = [
    (Q::NextToken, "SELECT @schema@.next_token($1)"),
    (Q::AdvanceCounter, "SELECT @schema@.advance_counter($1, $2)"),
    (Q::Acquire, "SELECT * FROM @schema@.acquire($1, $2, $3, $4)"),
    (Q::Renew, "SELECT * FROM @schema@.renew($1, $2, $3)"),
    (Q::Release, "SELECT @schema@.release($1, $2)"),
    (
        Q::Apply,
        "SELECT @schema@.apply($1, $2, $3, $4, $5, $6, $7)",
    ),
    (Q::Claim, "SELECT @schema@.claim($1, $2, $3)"),
    (Q::Get, "SELECT * FROM @schema@.get($1, $2)"),
    (
        Q::GetChecked,
        "SELECT * FROM @schema@.get_checked($1, $2, $3)",
    ),
    (Q::List, "SELECT * FROM @schema@.list($1, $2, $3)"),
    (Q::Status, "SELECT * FROM @schema@.status($1)"),
    (Q::Retire, "SELECT @schema@.retire($1)"),
    (Q::AdvanceClock, "SELECT @schema@.advance_clock($1)"),
    (Q::Failover, "SELECT @schema@.failover($1)"),
];

pub(crate) struct Postgres {
    pool: Pool,
    /// The statements of `QUERIES`, with the schema filled in.
    sql: Vec<String>,
    mode: Mode,
}

/// Maps a driver error: fencing's own rejections to their typed errors,
/// anything else to `BACKEND`.
pub(crate) fn to_error(e: &tokio_postgres::Error) -> Error {
    e.as_db_error()
        .and_then(|db| Error::from_sqlstate(db.code().code(), db.detail()))
        .unwrap_or_else(|| backend_error(e))
}

/// Tokens, seqs, versions and times are all below 2^63.
fn sql(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn stored(v: i64) -> Result<u64> {
    u64::try_from(v).map_err(|_| Error::Backend(format!("postgres: corrupt value {v} in store")))
}

fn stored_token(v: i64) -> Result<Token> {
    Token::new(stored(v)?).ok_or_else(|| Error::Backend(format!("postgres: corrupt token {v}")))
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
    /// Connects, migrates the schema if needed (under an advisory lock, so
    /// that processes opening a fresh database at once all succeed), and
    /// checks the clock mode: one call, within `call_timeout`.
    pub fn open(
        url: &str,
        schema: &str,
        pool_size: usize,
        call_timeout: Duration,
        manual_clock: bool,
        mode: Mode,
    ) -> Result<Postgres> {
        let config = driver_config(url, call_timeout)?;
        let quoted = format!("\"{schema}\"");
        let pool = Pool::new(config, pool_size, call_timeout)?;
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
            .map(|(i, (q, text))| {
                debug_assert_eq!(*q as usize, i);
                text.replace("@schema@", &quoted)
            })
            .collect();
        Ok(Postgres { pool, sql, mode })
    }

    /// Runs `f` with the prepared statement `q` on a pooled connection.
    fn run<T>(
        &self,
        q: Q,
        f: impl AsyncFnOnce(&Client, &Statement) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T> {
        let sql = &self.sql[q as usize];
        self.pool.with(q.name(), async |c| {
            let statement = c.statement(q as usize, sql).await?;
            f(&c.client, &statement).await
        })
    }

    fn one(&self, q: Q, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        self.run(q, async |client, s| client.query_one(s, params).await)
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
    to_error(&e)
}

/// The schema's version: -1 when it has no migrations table.
async fn schema_version(client: &impl GenericClient, schema: &str, quoted: &str) -> Result<i32> {
    // A query on the catalog tables, not to_regclass: after waiting for the
    // migration lock, a cached "no such table" must not hide the table the
    // other session just created.
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = 'migrations')",
            &[&schema],
        )
        .await
        .map_err(db)?;
    if !row.get::<_, bool>(0) {
        return Ok(-1);
    }
    let row = client
        .query_one(
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
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('fencing.migrate:' || $1::text, 0))",
        &[&schema],
    )
    .await
    .map_err(db)?;
    let mut current = schema_version(&tx, schema, quoted).await?;
    if current > known {
        return Err(Error::Backend(format!(
            "postgres: schema {schema:?} has version {current}, written by a newer fencing; \
             this build knows versions up to {known}"
        )));
    }
    if current < 0 {
        // A schema someone else made is not ours to take over.
        let foreign: i64 = tx
            .query_one(
                "SELECT (SELECT count(*) FROM pg_class c \
                           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1) \
                      + (SELECT count(*) FROM pg_proc p \
                           JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1)",
                &[&schema],
            )
            .await
            .map_err(db)?
            .get(0);
        if foreign > 0 {
            return Err(Error::Backend(format!(
                "postgres: schema {schema:?} holds objects that fencing did not create: \
                 choose another with ?schema=NAME"
            )));
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
        tx.execute(
            &format!("INSERT INTO {quoted}.migrations (version) VALUES ($1)"),
            &[&(i as i32 + 1)],
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
            .execute(&format!("SELECT {quoted}.stop_clock()"), &[])
            .await
            .map_err(db)?;
    }
    let stopped: bool = client
        .query_one(&format!("SELECT {quoted}.clock_is_manual()"), &[])
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
            ],
        )?;
        let versions: Vec<i64> = row.get(0);
        if versions.len() != ops.len() {
            return Err(Error::Backend(format!(
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
            None => self.run(Q::Get, async |client, s| {
                client.query_opt(s, &[&scope, &key]).await
            })?,
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
        let rows = self.run(Q::List, async |client, s| {
            client
                .query(s, &[&scope, &after, &(limit as i64 + 1)])
                .await
        })?;
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
