//! The socket half of a connection, driven by the thread that makes the
//! call, and what the server warned about during it. A commit whose wait
//! for a synchronous standby was cancelled comes back as success with a
//! WARNING ("canceling wait for synchronous replication ... committed
//! locally"); with `sync_replication=required` that is a failure
//! (docs/postgres.md, "Replication and failover"), so the pool must see the
//! warning before it hands the result on. The socket reads messages in
//! order, so a warning sent before a reply is recorded before the reply
//! reaches the caller.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;

use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{AsyncMessage, Connection};
use tokio_postgres_rustls::MakeRustlsConnect;

/// A connection's socket half, as `Config::connect` returns it.
pub(crate) type Wire = Connection<
    tokio_postgres::Socket,
    <MakeRustlsConnect as MakeTlsConnect<tokio_postgres::Socket>>::Stream,
>;

/// The socket of one connection and what the server said on it.
pub(crate) struct Socket {
    /// `None` once closed: dropping it fails every reply still awaited.
    wire: Option<Wire>,
    /// The last warning notice (SQLSTATE class 01), until taken.
    warning: Option<String>,
    /// Hosts and ports, for the log.
    server: String,
}

/// The warning the functions raise when they take the automatic failover
/// step (functions.sql, `durable`).
const STEPPED: &str = "FN100";

impl Socket {
    pub fn new(wire: Wire, server: String) -> Socket {
        Socket {
            wire: Some(wire),
            warning: None,
            server,
        }
    }

    pub fn take_warning(&mut self) -> Option<String> {
        self.warning.take()
    }

    /// Runs `call` (which talks to this connection's client) to its end,
    /// driving the socket meanwhile on this thread: the request is written
    /// and the reply read here (that the reply can be read is told by the
    /// connection's own reactor, in which this thread waits, or by the
    /// backend's runtime thread: `pool.rs`, `Driver`).
    pub async fn run<F: Future>(&mut self, call: F) -> F::Output {
        let mut call = pin!(call);
        let mut drive = pin!(self.drive());
        let mut driving = true;
        poll_fn(|cx| {
            // The call queues its request; the socket writes it and reads
            // whatever came, which may complete the call at once.
            if let Poll::Ready(out) = call.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            if driving && drive.as_mut().poll(cx).is_ready() {
                driving = false;
            }
            call.as_mut().poll(cx)
        })
        .await
    }

    /// Reads and writes until the connection closes, recording warnings and
    /// logging automatic failover steps; then drops it.
    async fn drive(&mut self) {
        let Some(wire) = self.wire.as_mut() else {
            return;
        };
        while let Some(Ok(message)) = poll_fn(|cx| wire.poll_message(cx)).await {
            if let AsyncMessage::Notice(notice) = message {
                if notice.code().code() == STEPPED {
                    log_step(&notice, &self.server);
                // SQLSTATE class 01 is a warning, in any locale of the server.
                } else if notice.code().code().starts_with("01") {
                    let detail = notice
                        .detail()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default();
                    self.warning = Some(format!("{}{detail}", notice.message()));
                }
            }
        }
        self.wire = None;
    }

    /// The socket, to close it: dropped at once, or (after its client) run
    /// to its goodbye elsewhere.
    pub fn into_wire(self) -> Option<Wire> {
        self.wire
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
