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
    sync_replication: bool,
) -> Result<(), tokio_postgres::Error> {
    let ms = server_timeout.as_millis();
    // Read by the schema's `durable()` on every commit that moves a
    // counter, fence or lease (functions.sql).
    let sync = if sync_replication { "required" } else { "off" };
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
             SET lock_timeout = {ms}; \
             SET fencing.sync_replication = '{sync}';"
        ))
        .await
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use tokio_postgres::{Config, NoTls};

    use super::*;
    use crate::backend::postgres::deadline::wait;
    use crate::backend::postgres::runtime::Runtime;

    /// The session's settings after `pin`, starting from `startup` options
    /// (which outrank role, database and file defaults, as those would).
    fn pinned(url: &str, startup: &str) -> Vec<String> {
        let rt = Runtime::start().unwrap();
        let mut config: Config = url.parse().unwrap();
        config.options(startup);
        let deadline = Instant::now() + Duration::from_secs(30);
        let connect = rt.spawn(async move {
            let (client, connection) = config.connect(NoTls).await?;
            tokio::spawn(connection);
            Ok::<_, tokio_postgres::Error>(client)
        });
        let client = wait(connect, deadline).unwrap().unwrap().unwrap();
        wait(
            async {
                pin(&client, Duration::from_millis(1234), false).await?;
                let mut out = Vec::new();
                for name in [
                    "synchronous_commit",
                    "default_transaction_isolation",
                    "statement_timeout",
                    "lock_timeout",
                ] {
                    let row = client.query_one(&format!("SHOW {name}"), &[]).await?;
                    out.push(row.get(0));
                }
                Ok::<_, tokio_postgres::Error>(out)
            },
            deadline,
        )
        .unwrap()
        .unwrap()
    }

    #[test]
    fn pins_durability_isolation_and_limits_over_any_default() {
        // Unit tests run without a server unless the integration setup gives one.
        let Ok(url) = std::env::var("FENCING_TEST_PG_URL") else {
            return;
        };
        let pinned = |startup: &str| pinned(&url, startup);
        let rest = ["read committed", "1234ms", "1234ms"];
        for (startup, durability) in [
            ("", "on"),
            ("-c synchronous_commit=off", "on"),
            ("-c synchronous_commit=local", "on"),
            ("-c synchronous_commit=remote_write", "on"),
            ("-c synchronous_commit=remote_apply", "remote_apply"),
        ] {
            let want: Vec<&str> = [durability].into_iter().chain(rest).collect();
            assert_eq!(pinned(startup), want, "{startup}");
        }
        let hostile = "-c default_transaction_isolation=serializable \
                       -c statement_timeout=0 -c lock_timeout=0";
        assert_eq!(
            pinned(hostile),
            ["on", "read committed", "1234ms", "1234ms"]
        );
    }
}
