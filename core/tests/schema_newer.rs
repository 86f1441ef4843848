//! A process that opened a store before a newer fencing migrated it never
//! writes with the older rules (docs/sqlite.md, "A newer fencing migrated
//! the file"; docs/postgres.md, "What the first open creates"). No newer
//! build exists to run, so the tests make what a newer build's migration
//! leaves that an older process can see: SQLite, the file's schema version
//! raised past this build's (a migration raises it in the transaction that
//! changes the tables); PostgreSQL, a newer migration recorded and a
//! function replaced by a newer text, as a newer build's install does in one
//! transaction.

use std::time::Duration;

use fencing::{BackendErrorKind, ErrorCode, Fence, Store, Token};

mod support;
use support::{fresh_schema, postgres_test_url, sqlite_url};

/// Every row of every fencing table, as text.
fn sqlite_contents(conn: &rusqlite::Connection) -> Vec<String> {
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'fencing%' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut out = Vec::new();
    for t in tables {
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..n)
                    .map(|i| r.get::<_, rusqlite::types::Value>(i))
                    .collect::<Result<Vec<_>, _>>()
            })
            .unwrap();
        for row in rows {
            out.push(format!("{t}: {:?}", row.unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn sqlite_a_handle_older_than_the_files_schema_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = Store::open(&sqlite_url(&path)).unwrap();
    let ttl = Duration::from_secs(60);
    assert_eq!(store.next_token("job").unwrap().get(), 1);
    let lease = store.acquire("kv", "h", ttl).unwrap();
    let fence = Fence::new(lease.token);
    store.put("kv", "k", b"v", &fence).unwrap();
    store.next_token("done").unwrap();

    let raw = rusqlite::Connection::open(&path).unwrap();
    let ours: i64 = raw
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    raw.pragma_update(None, "user_version", ours + 1).unwrap();
    let before = sqlite_contents(&raw);

    let refusals = [
        ("next_token", store.next_token("job").map(drop)),
        (
            "advance_counter",
            store
                .advance_counter("job", Token::new(9).unwrap())
                .map(drop),
        ),
        ("acquire", store.acquire("other", "h", ttl).map(drop)),
        ("renew", store.renew("kv", lease.token, ttl).map(drop)),
        ("release", store.release("kv", lease.token).map(drop)),
        ("put", store.put("kv", "k", b"w", &fence).map(drop)),
        ("delete", store.delete("kv", "k", &fence).map(drop)),
        ("claim", store.claim("kv", &fence).map(drop)),
        ("retire", store.retire("done").map(drop)),
        ("failover", store.failover().map(drop)),
    ];
    let written: Vec<&str> = refusals
        .iter()
        .filter(|(_, result)| result.is_ok())
        .map(|(op, _)| *op)
        .collect();
    assert!(
        written.is_empty(),
        "written by a handle older than the file's schema: {written:?}"
    );
    for (op, result) in refusals {
        let err = result.unwrap_err();
        assert_eq!(err.code(), ErrorCode::Backend, "{op}: {err}");
        assert_eq!(
            err.backend_kind(),
            Some(BackendErrorKind::Refused),
            "{op}: {err}"
        );
        assert!(
            err.to_string().contains("migrated by a newer fencing"),
            "{op}: {err}"
        );
    }
    assert_eq!(
        sqlite_contents(&raw),
        before,
        "a refused write changed the file"
    );
    // Reading stays possible; opening again is refused, as before.
    assert_eq!(store.get("kv", "k", None).unwrap().unwrap().value, b"v");
    let reopen = Store::open(&sqlite_url(&path)).unwrap_err();
    assert_eq!(reopen.code(), ErrorCode::Backend, "{reopen}");

    // The version alone made the difference.
    raw.pragma_update(None, "user_version", ours).unwrap();
    assert_eq!(store.next_token("job").unwrap().get(), 2);
    store.close();
}

/// PostgreSQL keeps the rules in the server: one installed set of functions
/// per schema, replaced with the tables in one transaction, which an older
/// build never replaces back (`install.rs`). A handle opened before a newer
/// fencing upgraded the schema therefore runs the newer functions on its
/// next call, on every connection of its pool; it has no rules of its own
/// to run.
#[test]
fn postgres_a_handle_opened_before_a_newer_install_runs_the_newer_functions() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let s = fresh_schema("newer");
    let store = Store::open(&format!("{base}?schema={s}&pool_size=2")).unwrap();
    assert_eq!(store.next_token("job").unwrap().get(), 1);
    let mut admin = base
        .parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap();
    // What a newer build's install leaves: a newer migration, a newer text
    // of a function, recorded as a newer release's.
    admin
        .batch_execute(&format!(
            "BEGIN;
             INSERT INTO {s}.migrations (version) SELECT max(version) + 1 FROM {s}.migrations;
             ALTER FUNCTION {s}.next_token(text) RENAME TO next_token_before;
             CREATE FUNCTION {s}.next_token(p_scope text) RETURNS bigint
             LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
             BEGIN
                 RAISE EXCEPTION USING ERRCODE = '55000', MESSAGE = 'the newer rules ran';
             END
             $$;
             UPDATE {s}.installed_functions SET version = '999.0.0';
             COMMIT;"
        ))
        .unwrap();
    for _ in 0..4 {
        let err = store.next_token("job").unwrap_err();
        assert!(err.to_string().contains("the newer rules ran"), "{err}");
    }
    // A handle opened now is refused at open (the schema is newer).
    let err = Store::open(&format!("{base}?schema={s}")).unwrap_err();
    assert_eq!(err.backend_kind(), Some(BackendErrorKind::Refused), "{err}");
    store.close();
}
