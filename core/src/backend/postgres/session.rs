//! The settings safety needs, pinned per session when a connection opens
//! (docs/postgres.md, "Session settings"). A session-level SET outranks
//! the server's configuration file (and so a reload), role and database
//! defaults and startup options, so nothing but this code changes them
//! for the life of the connection.

use std::time::Duration;

use tokio_postgres::Client;

/// The server's own limits (`statement_timeout`, `lock_timeout`) for a
/// client deadline: a fifth below it, so that a healthy server cancels a
/// statement stuck on a lock, frees its locks and answers with an error
/// before the client gives up and must call the outcome unknown.
pub(crate) fn server_timeout(call: Duration) -> Duration {
    (call - call / 5).max(Duration::from_millis(1))
}

/// One round trip, run before the connection's first statement.
pub(crate) async fn pin(
    client: &Client,
    server_timeout: Duration,
) -> Result<(), tokio_postgres::Error> {
    let ms = server_timeout.as_millis();
    client
        .batch_execute(&format!(
            // A token is handed out only after its commit is durable: `on`,
            // or `remote_apply` (stronger) when the session starts with it.
            // Set even when it reads `on` already, so a reload cannot move it.
            "SELECT set_config('synchronous_commit', \
                 CASE current_setting('synchronous_commit') \
                     WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END, false); \
             SET default_transaction_isolation = 'read committed'; \
             SET statement_timeout = {ms}; \
             SET lock_timeout = {ms};"
        ))
        .await
}
