//! One listening connection per store handle (docs/postgres.md, "Waiting"):
//! the functions announce the leases they end where a waiter marked the
//! scope (`NOTIFY fencing`, payload the schema and the scope, or the schema
//! alone when every lease of the store ended), and this connection wakes
//! the handle's waiters (`backend::wakes`). It is made at the first wait,
//! never taken from the pool, and shared by every waiter of the handle.
//!
//! While it is down (not yet listening, lost, a ping unanswered) the
//! waiters are told releases are not pushed, so they ask again after the
//! bounded back-off; once it listens again every waiter asks once more,
//! which finds any release announced while nobody listened.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout};
use tokio_postgres::AsyncMessage;

use super::pool::Pool;
use crate::backend::wakes::Wakes;

/// The channel every fencing schema announces on; the payload names the
/// schema, so that stores in other schemas of the database ignore it.
pub(super) const CHANNEL: &str = "fencing";

/// How often the listening connection proves it is still there: a
/// connection silently cut (a partition, a server that froze) would
/// otherwise leave waiters trusting wake-ups that never come.
const PING: Duration = Duration::from_secs(5);
/// Waits between attempts to listen again, doubling up to the second.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(2);

pub(super) struct Listener {
    wakes: Arc<Wakes>,
    schema: String,
    /// `None` behind a transaction pooler, where `LISTEN` does not work:
    /// waiters always back off there.
    enabled: bool,
    /// The running task, and the process that started it (a forked child
    /// starts its own).
    task: Mutex<Option<(u32, JoinHandle<()>)>>,
    /// Whether `cannot_queue` has warned.
    warned: AtomicBool,
    /// Whether `cannot_register` has warned.
    warned_watch: AtomicBool,
}

impl Listener {
    pub fn new(schema: &str, enabled: bool) -> Listener {
        Listener {
            wakes: Wakes::new(false),
            schema: schema.to_owned(),
            enabled,
            task: Mutex::new(None),
            warned: AtomicBool::new(false),
            warned_watch: AtomicBool::new(false),
        }
    }

    pub fn wakes(&self) -> &Arc<Wakes> {
        &self.wakes
    }

    /// Starts listening if nobody does yet in this process. Best effort:
    /// until it listens, waiters back off.
    pub fn ensure(&self, pool: &Pool) {
        if !self.enabled {
            return;
        }
        let mut task = self.task.lock().unwrap_or_else(|p| p.into_inner());
        let pid = std::process::id();
        match task.as_ref() {
            Some((started, _)) if *started == pid => return,
            // The parent's task does not exist here; its waiters' state was
            // copied with the memory, and is not this process's to trust.
            Some(_) => {
                self.wakes.set_pushed(false);
                if let Some((_, parent)) = task.take() {
                    std::mem::forget(parent);
                }
            }
            None => {}
        }
        let (mut config, tls) = pool.connector();
        // So that an operator can tell it from the pool's connections
        // (the server keeps the first 63 bytes).
        if config.get_application_name().is_none() {
            config.application_name(format!("fencing listener {}", self.schema));
        }
        let call_timeout = pool.call_timeout();
        let wakes = self.wakes.clone();
        let schema = self.schema.clone();
        let suspect = pool.suspect();
        if let Some(handle) = pool.spawn(async move {
            let mut retry = RETRY_FIRST;
            loop {
                let listened = listen(&config, &tls, call_timeout, &schema, &wakes).await;
                // Before the waiters wake: the server may have gone away
                // (a restart, a failover), and a waiter's attempt on a dead
                // pooled connection would end with an unknown outcome.
                suspect.store(true, Ordering::SeqCst);
                wakes.set_pushed(false);
                tracing::debug!(target: "fencing", cause = listened, "postgres: listening connection lost; waiters back off until it listens again");
                sleep(retry).await;
                retry = (retry * 2).min(RETRY_MAX);
            }
        }) {
            *task = Some((pid, handle));
        }
    }

    /// A waiting acquire was refused `acquire_waiting` (a grant older than
    /// it): said once per handle, at WARN.
    pub fn cannot_queue(&self, e: &crate::error::Error) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(target: "fencing", schema = %self.schema, error = %e, "postgres: this role may not wait in line (no EXECUTE on acquire_waiting), so its waiters poll with a back-off and are served out of order; grant EXECUTE on the schema's functions again after an upgrade (docs/postgres.md, \"Waiting\")");
        }
    }

    /// A watch was refused `watch` (a grant older than it): said once per
    /// handle, at WARN.
    pub fn cannot_register(&self, e: &crate::error::Error) {
        if !self.warned_watch.swap(true, Ordering::Relaxed) {
            tracing::warn!(target: "fencing", schema = %self.schema, error = %e, "postgres: this role may not register a watch (no EXECUTE on watch), so its watches poll with a back-off; grant EXECUTE on the schema's functions again after an upgrade (docs/postgres.md, \"Watching a lease\")");
        }
    }

    /// Stops listening (the store closes).
    pub fn stop(&self) {
        let mut task = self.task.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((pid, handle)) = task.take() {
            if pid == std::process::id() {
                handle.abort();
            } else {
                std::mem::forget(handle);
            }
        }
        self.wakes.set_pushed(false);
    }
}

/// One listening session: connects, listens, wakes waiters on each
/// announcement and pings now and then; returns why it ended.
async fn listen(
    config: &tokio_postgres::Config,
    tls: &tokio_postgres_rustls::MakeRustlsConnect,
    call_timeout: Duration,
    schema: &str,
    wakes: &Wakes,
) -> String {
    let (client, mut wire) = match timeout(call_timeout, config.connect(tls.clone())).await {
        Err(_) => return "connecting timed out".to_owned(),
        Ok(Err(e)) => return format!("cannot connect: {e}"),
        Ok(Ok(connected)) => connected,
    };
    // The socket is read here, in the same task as the statements below.
    let read = async {
        while let Some(message) = poll_fn(|cx| wire.poll_message(cx)).await {
            match message {
                Ok(AsyncMessage::Notification(n)) if n.channel() == CHANNEL => {
                    announced(n.payload(), schema, wakes)
                }
                Ok(_) => {}
                Err(e) => return format!("connection failed: {e}"),
            }
        }
        "connection closed".to_owned()
    };
    let talk = async {
        let listen = format!("LISTEN {CHANNEL}");
        match timeout(call_timeout, client.batch_execute(&listen)).await {
            Err(_) => return "LISTEN timed out".to_owned(),
            Ok(Err(e)) => return format!("LISTEN failed: {e}"),
            Ok(Ok(())) => {}
        }
        // From here every release reaches the waiters; this wakes them all
        // once, for any release announced before the LISTEN took effect.
        wakes.set_pushed(true);
        loop {
            sleep(PING).await;
            match timeout(call_timeout, client.batch_execute("")).await {
                Err(_) => return "ping timed out".to_owned(),
                Ok(Err(e)) => return format!("ping failed: {e}"),
                Ok(Ok(())) => {}
            }
        }
    };
    // Whichever ends first: the connection, or a statement on it.
    let (mut read, mut talk) = (pin!(read), pin!(talk));
    poll_fn(|cx| match read.as_mut().poll(cx) {
        Poll::Ready(why) => Poll::Ready(why),
        Poll::Pending => talk.as_mut().poll(cx),
    })
    .await
}

/// An announcement: `SCHEMA PLACE SCOPE` (a lease ended, and `PLACE` is
/// the earliest waiter queued for it), `SCHEMA 0 SCOPE` (the lease changed
/// and no waiter is next: only its watches wake) or `SCHEMA` (every lease
/// of the store ended). Schema names and places have no spaces; a scope may.
fn announced(payload: &str, schema: &str, wakes: &Wakes) {
    let Some((s, rest)) = payload.split_once(' ') else {
        if payload == schema {
            wakes.all_ended();
        }
        return;
    };
    if s != schema {
        return;
    }
    if let Some((head, scope)) = rest.split_once(' ') {
        match head.parse::<u64>() {
            Ok(0) => wakes.changed(scope),
            Ok(head) => wakes.ended(scope, Some(head)),
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_functions_announce_on_the_channel_listened_to() {
        let announce = format!("pg_notify('{CHANNEL}', btrim('@schema@', '\"')");
        assert!(super::super::install::FUNCTIONS.contains(&announce));
    }

    #[test]
    fn an_announcement_wakes_the_next_waiter_of_its_schema_and_scope() {
        let wakes = Wakes::new(true);
        let (next, behind, other) = (wakes.ticket("a b"), wakes.ticket("a b"), wakes.ticket("c"));
        next.queued_at(7);
        behind.queued_at(9);
        other.queued_at(8);
        announced("other 7 a b", "fencing", &wakes);
        announced("fencing x a b", "fencing", &wakes);
        // A scope may hold spaces: only the first two split.
        announced("fencing 7 a b", "fencing", &wakes);
        next.wait(Duration::from_secs(60));
        let started = std::time::Instant::now();
        behind.wait(Duration::from_millis(30));
        other.wait(Duration::from_millis(1));
        assert!(started.elapsed() >= Duration::from_millis(30));
        announced("fencing", "fencing", &wakes);
        behind.wait(Duration::from_secs(60));
        other.wait(Duration::from_secs(60));
    }

    #[test]
    fn a_change_wakes_the_watches_of_its_scope_and_no_waiter() {
        let wakes = Wakes::new(true);
        let (waiter, watch) = (wakes.ticket("a b"), wakes.watch_ticket("a b"));
        waiter.queued_at(7);
        announced("fencing 0 a b", "fencing", &wakes);
        watch.wait(Duration::from_secs(60));
        let started = std::time::Instant::now();
        waiter.wait(Duration::from_millis(30));
        assert!(started.elapsed() >= Duration::from_millis(30));
    }
}
