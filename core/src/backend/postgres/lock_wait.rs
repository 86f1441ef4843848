//! A call that waited for a lock until the server gave up (its
//! `lock_timeout` or `statement_timeout`, pinned below the call's deadline):
//! most often behind a caller's open transaction around `fencing.check`
//! (docs/postgres.md, "Lock waits"). The error then says what the call was
//! about and who held what it waited for, asked of the server on the same
//! connection (`lock_holders` in functions.sql), so that an operator can end
//! or bound that transaction instead of guessing.

use tokio_postgres::types::Type;
use tokio_postgres::Client;

use super::pool::backend_error_with;
use crate::error::Error;

/// Who holds the rows a call on a scope (NULL: the store) may wait for.
pub(super) const HOLDERS: &str =
    "SELECT what, pid, role, state, xact_ms FROM @schema@.lock_holders($1)";

/// lock_not_available (`lock_timeout`), query_canceled (`statement_timeout`).
const ENDED_WAITS: [&str; 2] = ["55P03", "57014"];

/// Whether `e` is the server ending a statement that waited too long.
pub(super) fn ended(e: &tokio_postgres::Error) -> bool {
    e.as_db_error()
        .is_some_and(|db| ENDED_WAITS.contains(&db.code().code()))
}

/// One open transaction holding a row the call may have waited for.
pub(super) struct Holder {
    what: String,
    pid: i32,
    role: Option<String>,
    state: Option<String>,
    xact_ms: Option<i64>,
}

/// The holders the server names, or why it named none. Best effort: the
/// call has failed already, and this must not fail it differently.
pub(super) async fn holders(
    client: &Client,
    sql: &str,
    scope: Option<&str>,
) -> Result<Vec<Holder>, String> {
    let rows = client
        .query_typed(sql, &[(&scope, Type::TEXT)])
        .await
        .map_err(|e| match e.as_db_error() {
            Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
            None => e.to_string(),
        })?;
    rows.iter()
        .map(|r| {
            Ok(Holder {
                what: r.try_get(0).map_err(|e| e.to_string())?,
                pid: r.try_get(1).map_err(|e| e.to_string())?,
                role: r.try_get(2).map_err(|e| e.to_string())?,
                state: r.try_get(3).map_err(|e| e.to_string())?,
                xact_ms: r.try_get(4).map_err(|e| e.to_string())?,
            })
        })
        .collect()
}

/// The call's error: the server's words, then what it was about and who
/// held it.
pub(super) fn error(
    call: &str,
    scope: Option<&str>,
    e: tokio_postgres::Error,
    holders: Result<Vec<Holder>, String>,
) -> Error {
    let about = match scope {
        Some(scope) => format!("{call} of scope {scope:?}"),
        None => call.to_owned(),
    };
    let who = match holders {
        Ok(list) if list.is_empty() => "no open transaction holds the scope's row, its bucket's \
             floor or the store's history row now (it ended, or it is creating the scope, and \
             the server names no creator)"
            .to_owned(),
        Ok(list) => list.iter().map(describe).collect::<Vec<_>>().join("; "),
        Err(why) => format!("the server did not say who held it: {why}"),
    };
    backend_error_with(
        e,
        &format!(
            ": {about} waited for a lock until the server gave up; {who}. Nothing was changed. \
             End that transaction, or bound such transactions on the server \
             (idle_in_transaction_session_timeout, lock_timeout: docs/postgres.md, \"Lock waits\")"
        ),
    )
}

fn describe(h: &Holder) -> String {
    let mut text = format!(
        "{} is held by backend pid {} (role {}",
        h.what,
        h.pid,
        h.role.as_deref().unwrap_or("unknown")
    );
    if let Some(state) = &h.state {
        text.push_str(&format!(", {state}"));
    }
    if let Some(ms) = h.xact_ms {
        text.push_str(&format!(", transaction open for {ms} ms"));
    }
    text.push(')');
    text
}
