//! Drives a connection's socket and keeps what the server warned about.
//! A commit whose wait for a synchronous standby was cancelled comes back
//! as success with a WARNING ("canceling wait for synchronous replication
//! ... committed locally"); with `sync_replication=required` that is a
//! failure (docs/postgres.md, "Replication and failover"), so the pool must
//! see the warning before it hands the result on. The socket task reads
//! messages in order, so a warning sent before a reply is recorded before
//! the reply reaches the caller.

use std::future::poll_fn;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::{AsyncMessage, Connection};

/// The last warning notice (SQLSTATE class 01), until taken.
#[derive(Clone, Default)]
pub(crate) struct Warnings(Arc<Mutex<Option<String>>>);

impl Warnings {
    pub fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn record(&self, text: String) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(text);
    }
}

/// The warning the functions raise when they take the automatic failover
/// step (functions.sql, `durable`).
const STEPPED: &str = "FN100";

/// Runs the connection to `server` until it closes, recording warnings and
/// logging automatic failover steps.
pub(crate) async fn drive<S, T>(
    mut connection: Connection<S, T>,
    warnings: Warnings,
    server: String,
) where
    S: AsyncRead + AsyncWrite + Unpin,
    T: AsyncRead + AsyncWrite + Unpin,
{
    while let Some(Ok(message)) = poll_fn(|cx| connection.poll_message(cx)).await {
        if let AsyncMessage::Notice(notice) = message {
            if notice.code().code() == STEPPED {
                log_step(&notice, &server);
            // SQLSTATE class 01 is a warning, in any locale of the server.
            } else if notice.code().code().starts_with("01") {
                let detail = notice
                    .detail()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default();
                warnings.record(format!("{}{detail}", notice.message()));
            }
        }
    }
}

/// An automatic failover step, as the WARNING of `durable` tells it (its
/// detail: `{"schema": ..., "steps": n, "base": b}`).
fn log_step(notice: &tokio_postgres::error::DbError, server: &str) {
    let detail: serde_json::Value = notice
        .detail()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default();
    tracing::warn!(
        target: "fencing",
        server,
        schema = detail["schema"].as_str().unwrap_or_default(),
        steps = detail["steps"].as_u64().unwrap_or_default(),
        base = detail["base"].as_u64().unwrap_or_default(),
        "postgres: the store found itself on another server history (a promotion, a recovery \
         or a restore): automatic failover steps taken, every lease ended, every token at or \
         below the base is stale"
    );
}
