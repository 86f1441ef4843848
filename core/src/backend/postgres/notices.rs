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

/// Runs the connection until it closes, recording warnings.
pub(crate) async fn drive<S, T>(mut connection: Connection<S, T>, warnings: Warnings)
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: AsyncRead + AsyncWrite + Unpin,
{
    while let Some(Ok(message)) = poll_fn(|cx| connection.poll_message(cx)).await {
        if let AsyncMessage::Notice(notice) = message {
            // SQLSTATE class 01 is a warning, in any locale of the server.
            if notice.code().code().starts_with("01") {
                let detail = notice
                    .detail()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default();
                warnings.record(format!("{}{detail}", notice.message()));
            }
        }
    }
}
