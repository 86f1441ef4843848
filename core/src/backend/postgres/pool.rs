//! A small blocking connection pool: at most `size` connections, each with
//! its prepared statements. A connection that failed below SQL (I/O, the
//! server went away) is dropped together with every idle one, since a server
//! restart kills them all; the next operation connects afresh.

use std::sync::{Condvar, Mutex, MutexGuard};

use postgres::{Client, Config, NoTls, Statement};

use super::to_error;
use crate::error::{Error, Result};

pub(crate) struct Conn {
    pub client: Client,
    statements: Vec<Option<Statement>>,
}

impl Conn {
    /// The statement `sql` (query number `id`), prepared once per connection.
    pub fn statement(&mut self, id: usize, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(Some(s)) = self.statements.get(id) {
            return Ok(s.clone());
        }
        let prepared = self.client.prepare(sql)?;
        if self.statements.len() <= id {
            self.statements.resize(id + 1, None);
        }
        self.statements[id] = Some(prepared.clone());
        Ok(prepared)
    }
}

struct State {
    idle: Vec<Conn>,
    /// Connections handed out or idle.
    open: usize,
    closed: bool,
}

pub(crate) struct Pool {
    config: Config,
    size: usize,
    state: Mutex<State>,
    freed: Condvar,
}

impl Pool {
    pub fn new(config: Config, size: usize) -> Pool {
        Pool {
            config,
            size,
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
                closed: false,
            }),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent even if a holder panicked.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on a pooled connection; maps its failure to the store's errors.
    pub fn with<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T, postgres::Error>) -> Result<T> {
        let mut conn = self.checkout()?;
        let out = f(&mut conn);
        match &out {
            Err(e) if is_connection_failure(e) || conn.client.is_closed() => self.discard(conn),
            _ => self.checkin(conn),
        }
        out.map_err(|e| to_error(&e))
    }

    fn checkout(&self) -> Result<Conn> {
        let mut state = self.lock();
        loop {
            if state.closed {
                return Err(Error::Closed);
            }
            if let Some(conn) = state.idle.pop() {
                return Ok(conn);
            }
            if state.open < self.size {
                state.open += 1;
                drop(state);
                return self.connect().map_err(|e| {
                    self.lock().open -= 1;
                    self.freed.notify_one();
                    to_error(&e)
                });
            }
            state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn connect(&self) -> Result<Conn, postgres::Error> {
        let mut client = self.config.connect(NoTls)?;
        // Tokens are handed out only after their commit is durable: a session
        // with synchronous_commit=off could lose an issued token in a crash.
        client.batch_execute(
            "SELECT set_config('synchronous_commit', 'on', false) \
             WHERE current_setting('synchronous_commit') = 'off'",
        )?;
        Ok(Conn {
            client,
            statements: Vec::new(),
        })
    }

    fn checkin(&self, conn: Conn) {
        let mut state = self.lock();
        if state.closed {
            state.open -= 1;
        } else {
            state.idle.push(conn);
        }
        drop(state);
        self.freed.notify_one();
    }

    fn discard(&self, conn: Conn) {
        drop(conn);
        let mut state = self.lock();
        let stale = std::mem::take(&mut state.idle);
        state.open -= 1 + stale.len();
        drop(state);
        drop(stale);
        self.freed.notify_all();
    }

    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        let idle = std::mem::take(&mut state.idle);
        state.open -= idle.len();
        drop(state);
        drop(idle);
        self.freed.notify_all();
    }
}

/// A failure of the connection rather than of the statement: I/O, a closed
/// socket, or the server shutting the session down (SQLSTATE class 57P, 08).
fn is_connection_failure(e: &postgres::Error) -> bool {
    match e.as_db_error() {
        None => true,
        Some(db) => {
            let code = db.code().code();
            code.starts_with("57P") || code.starts_with("08")
        }
    }
}

pub(crate) fn backend_error(e: &postgres::Error) -> Error {
    match e.as_db_error() {
        Some(db) => Error::Backend(format!(
            "postgres: {} (SQLSTATE {})",
            db.message(),
            db.code().code()
        )),
        None => Error::Backend(format!("postgres: {e}")),
    }
}
