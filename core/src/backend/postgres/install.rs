//! Creating and upgrading a schema: the tables by migration (schema.sql,
//! then one file per later version), the functions from functions.sql,
//! reinstalled whenever their text differs from what the schema records.
//! Both under one advisory lock, so that processes opening a fresh
//! database at once all succeed and the work is done once.

use tokio_postgres::types::Type;
use tokio_postgres::{Client, GenericClient};

use super::db;
use crate::backend::sql_text::{fill, hash, should_install, OURS};
use crate::error::{BackendErrorKind, Error, Result};

/// The tables by schema version. Version 5 is every table of the
/// development builds, squashed: a schema below it was written before the
/// squash and is refused. Each later file moves tables and data only.
const MIGRATIONS: [(i32, &str); 8] = [
    (5, include_str!("schema.sql")),
    (6, include_str!("v6.sql")),
    (7, include_str!("v7.sql")),
    (8, include_str!("v8.sql")),
    (9, include_str!("v9.sql")),
    (10, include_str!("v10.sql")),
    (11, include_str!("v11.sql")),
    (12, include_str!("v12.sql")),
];
const FIRST: i32 = MIGRATIONS[0].0;
const LATEST: i32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Every SQL file of this backend.
#[cfg(test)]
pub(crate) fn sql_files() -> Vec<(&'static str, &'static str)> {
    let mut files: Vec<_> = MIGRATIONS
        .iter()
        .map(|(_, text)| ("postgres migration", *text))
        .collect();
    files.push(("postgres/functions.sql", FUNCTIONS));
    files
}

/// Every function, in one file.
pub(super) const FUNCTIONS: &str = include_str!("functions.sql");

/// The functions' text with the constants filled in, and its hash.
struct Functions {
    text: String,
    hash: String,
}

impl Functions {
    fn ours() -> Functions {
        let text = fill(FUNCTIONS);
        let hash = hash(&text);
        Functions { text, hash }
    }
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
    if !row.try_get::<_, bool>(0).map_err(db)? {
        return Ok(-1);
    }
    let row = client
        .query_typed_one(
            &format!("SELECT coalesce(max(version), 0) FROM {quoted}.migrations"),
            &[],
        )
        .await
        .map_err(db)?;
    row.try_get(0).map_err(db)
}

/// The hash and version of the installed functions (a schema at LATEST).
async fn installed(client: &impl GenericClient, quoted: &str) -> Result<Option<(String, String)>> {
    let rows = client
        .query_typed(
            &format!("SELECT hash, version FROM {quoted}.installed_functions"),
            &[],
        )
        .await
        .map_err(db)?;
    match rows.first() {
        None => Ok(None),
        Some(row) => Ok(Some((
            row.try_get(0).map_err(db)?,
            row.try_get(1).map_err(db)?,
        ))),
    }
}

fn newer(schema: &str, current: i32) -> Error {
    Error::backend(
        BackendErrorKind::Refused,
        format!(
            "postgres: schema {schema:?} has version {current}, written by a newer fencing; \
             this build knows versions up to {LATEST}"
        ),
    )
}

/// `Store::ping`: the schema is the one this build writes. Newer is
/// `migrate`'s own refusal; older (a schema restored or dropped under the
/// open store) is left to a migration, which a ping never runs.
pub(super) async fn refuse_unless_current(
    client: &impl GenericClient,
    schema: &str,
    quoted: &str,
) -> Result<()> {
    let current = schema_version(client, schema, quoted).await?;
    if current > LATEST {
        return Err(newer(schema, current));
    }
    if current < LATEST {
        let has = match current {
            ..0 => "no fencing tables".to_owned(),
            _ => format!("version {current}"),
        };
        return Err(Error::backend(
            BackendErrorKind::Refused,
            format!(
                "postgres: schema {schema:?} has {has}, older than this build's {LATEST}: run \
                 `fencing migrate` on it"
            ),
        ));
    }
    Ok(())
}

pub(super) async fn migrate(client: &mut Client, schema: &str, quoted: &str) -> Result<()> {
    let functions = Functions::ours();
    if schema_version(client, schema, quoted).await? == LATEST
        && !should_install(&functions.hash, installed(client, quoted).await?)
    {
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
    let current = schema_version(&tx, schema, quoted).await?;
    if current > LATEST {
        return Err(newer(schema, current));
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
            .try_get(0)
            .map_err(db)?;
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
    } else if current < FIRST {
        return Err(Error::backend(
            BackendErrorKind::Refused,
            format!(
            "postgres: schema {schema:?} has version {current}, written by a development build \
             before fencing 0.1; this build upgrades schemas from version {FIRST}: move its data \
             to a new schema"
        ),
        ));
    }
    for (version, migration) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
        tx.batch_execute(&fill(migration).replace("@schema@", quoted))
            .await
            .map_err(db)?;
        tx.query_typed(
            &format!("INSERT INTO {quoted}.migrations (version) VALUES ($1)"),
            &[(version, Type::INT4)],
        )
        .await
        .map_err(db)?;
    }
    if should_install(&functions.hash, installed(&tx, quoted).await?) {
        tx.batch_execute(&functions.text.replace("@schema@", quoted))
            .await
            .map_err(db)?;
        tx.query_typed(
            &format!(
                "INSERT INTO {quoted}.installed_functions (hash, version) VALUES ($1, $2) \
                 ON CONFLICT (id) DO UPDATE SET hash = excluded.hash, version = excluded.version"
            ),
            &[(&functions.hash, Type::TEXT), (&OURS, Type::TEXT)],
        )
        .await
        .map_err(db)?;
    }
    tx.commit().await.map_err(db)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_function_is_defined_twice() {
        let mut names: Vec<String> = FUNCTIONS
            .lines()
            .filter_map(|l| l.strip_prefix("CREATE OR REPLACE FUNCTION @schema@."))
            .map(|rest| rest.split(')').next().unwrap_or(rest).to_owned())
            .collect();
        let all = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all, "a signature is defined twice");
        assert!(
            !FUNCTIONS.contains("\nCREATE FUNCTION"),
            "CREATE OR REPLACE only"
        );
        // A migration may drop a function whose signature changed, never
        // define one.
        for (_, migration) in MIGRATIONS {
            assert!(
                !migration.contains("CREATE FUNCTION")
                    && !migration.contains("CREATE OR REPLACE FUNCTION"),
                "functions live in functions.sql"
            );
        }
    }
}
