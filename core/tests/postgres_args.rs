//! Hostile callers of the SQL functions (docs/postgres.md, "Grants"): every
//! entry point a library role or a worker role can execute checks each of its
//! arguments as the client does (`core/src/limits.rs`), NULLs included, and
//! refuses a bad one with `FN008` (`INVALID_ARGUMENT`), changing nothing.
//! And whatever a function returns, the library decodes it into a value or
//! `BACKEND`, never a panic. Needs `FENCING_TEST_PG_URL` (see
//! `scripts/pg-cluster`).

use std::time::Duration;

use fencing::limits::{
    MAX_BATCH_OPS, MAX_HOLDER_BYTES, MAX_KEY_BYTES, MAX_LIST_LIMIT, MAX_SCOPE_BYTES, MAX_TTL,
    MAX_VALUE_BYTES,
};
use fencing::{ErrorCode, Fence, Op, Store, Token, MAX_EVENTS_LIMIT};

mod support;
use support::{fresh_schema, postgres_test_url};

fn client(url: &str) -> postgres::Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

/// A scope whose state must survive every hostile call.
const VICTIM: &str = "victim:3";
/// A scope nobody holds: a call that slipped through would take it.
const FREE: &str = "free:1";

/// SQL expressions for a name of `max` bytes that break the client's rules:
/// NULL, empty, one byte too long, and too long in bytes though not in
/// characters.
fn bad_names(max: usize, null: bool) -> Vec<String> {
    let mut bad = vec![
        "''".to_owned(),
        format!("repeat('x', {})", max + 1),
        format!("repeat('é', {})", max / 2 + 1),
    ];
    if null {
        bad.insert(0, "NULL".to_owned());
    }
    bad
}

fn bad_scopes() -> Vec<String> {
    bad_names(MAX_SCOPE_BYTES, true)
}

fn bad_tokens() -> Vec<String> {
    ["NULL", "0", "-1", "'-9223372036854775808'::bigint"]
        .map(String::from)
        .to_vec()
}

fn bad_ttls() -> Vec<String> {
    let max = MAX_TTL.as_millis() as u64;
    vec![
        "NULL".into(),
        "0".into(),
        "-1".into(),
        (max + 1).to_string(),
        "9223372036854775000".into(),
    ]
}

/// One function with a valid SQL expression for each argument and the bad
/// ones to put in its place, one at a time.
struct Entry {
    name: &'static str,
    args: Vec<(String, Vec<String>)>,
}

fn arg(valid: &str, bad: Vec<String>) -> (String, Vec<String>) {
    (valid.to_owned(), bad)
}

fn lit(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Every entry point the library role can execute, with the bad values of
/// each argument. `token` is the victim's live lease and fence.
fn entries(token: u64) -> Vec<Entry> {
    let victim = lit(VICTIM);
    let free = lit(FREE);
    let t = token.to_string();
    let seq = vec!["-1".to_owned()];
    let events_limit = vec![
        "NULL".to_owned(),
        "0".to_owned(),
        "-1".to_owned(),
        (MAX_EVENTS_LIMIT + 1).to_string(),
    ];
    vec![
        Entry {
            name: "next_token",
            args: vec![arg(&victim, bad_scopes())],
        },
        Entry {
            name: "advance_counter",
            args: vec![arg(&victim, bad_scopes()), arg("100", bad_tokens())],
        },
        Entry {
            name: "acquire",
            args: vec![
                arg(&free, bad_scopes()),
                arg(
                    "'evil'",
                    [
                        bad_names(MAX_HOLDER_BYTES, true),
                        vec![format!("repeat('h', {})", 1 << 20)],
                    ]
                    .concat(),
                ),
                arg("30000", bad_ttls()),
                arg("true", vec!["NULL".into()]),
            ],
        },
        Entry {
            name: "renew",
            args: vec![
                arg(&victim, bad_scopes()),
                arg(&t, bad_tokens()),
                arg("30000", bad_ttls()),
            ],
        },
        Entry {
            name: "release",
            args: vec![arg(&victim, bad_scopes()), arg(&t, bad_tokens())],
        },
        Entry {
            name: "claim",
            args: vec![
                arg(&victim, bad_scopes()),
                arg(&t, bad_tokens()),
                arg("NULL", seq.clone()),
            ],
        },
        Entry {
            name: "get",
            args: vec![
                arg(&victim, bad_scopes()),
                arg("'k'", bad_names(MAX_KEY_BYTES, true)),
            ],
        },
        Entry {
            name: "get_checked",
            args: vec![
                arg(&victim, bad_scopes()),
                arg("'k'", bad_names(MAX_KEY_BYTES, true)),
                arg(&t, bad_tokens()),
            ],
        },
        Entry {
            name: "list",
            args: vec![
                arg(&victim, bad_scopes()),
                // The client sends '' for the first page.
                arg(
                    "''",
                    vec!["NULL".into(), format!("repeat('k', {})", MAX_KEY_BYTES + 1)],
                ),
                // The client asks for one row more than the page.
                arg(
                    "11",
                    vec![
                        "NULL".into(),
                        "0".into(),
                        "-1".into(),
                        (MAX_LIST_LIMIT + 2).to_string(),
                    ],
                ),
            ],
        },
        Entry {
            name: "status",
            args: vec![arg(&victim, bad_scopes())],
        },
        Entry {
            name: "retire",
            args: vec![arg(&free, bad_scopes())],
        },
        Entry {
            name: "check",
            args: vec![
                arg(&victim, bad_scopes()),
                arg(&t, bad_tokens()),
                arg("NULL", seq.clone()),
            ],
        },
        Entry {
            name: "check",
            args: vec![arg(&victim, bad_scopes()), arg(&t, bad_tokens())],
        },
        Entry {
            name: "rejections",
            args: vec![
                arg(&victim, bad_names(MAX_SCOPE_BYTES, false)),
                arg("10", events_limit.clone()),
            ],
        },
        Entry {
            name: "last_writes",
            args: vec![
                arg(&victim, bad_names(MAX_SCOPE_BYTES, false)),
                arg("10", events_limit),
            ],
        },
        Entry {
            // NULL asks about the store (the failover step).
            name: "lock_holders",
            args: vec![arg(&victim, bad_names(MAX_SCOPE_BYTES, false))],
        },
        Entry {
            name: "advance_clock",
            args: vec![arg("1", vec!["NULL".into(), "-1".into()])],
        },
    ]
}

/// `apply(scope, token, seq, strict, keys, values, expected, holder)`: each
/// argument alone, then the batch's three arrays together.
fn apply_calls(s: &str, token: u64) -> Vec<String> {
    let valid = [
        lit(VICTIM),
        token.to_string(),
        "NULL::bigint".into(),
        "false".into(),
        "ARRAY['k']".into(),
        "ARRAY['v'::bytea]".into(),
        "ARRAY[NULL::bigint]".into(),
        "NULL::text".into(),
    ];
    let mut calls = Vec::new();
    let mut with = |i: usize, bad: String| {
        let mut args = valid.clone();
        args[i] = bad;
        calls.push(format!("SELECT * FROM {s}.apply({})", args.join(", ")));
    };
    for bad in bad_scopes() {
        with(0, bad);
    }
    for bad in bad_tokens() {
        with(1, bad);
    }
    with(2, "-1".into());
    with(3, "NULL".into());
    for bad in bad_names(MAX_HOLDER_BYTES, false) {
        with(7, bad);
    }
    let n = MAX_BATCH_OPS + 1;
    let big = MAX_VALUE_BYTES + 1;
    let batches: Vec<[String; 3]> = vec![
        ["NULL::text[]".into(), valid[5].clone(), valid[6].clone()],
        [valid[4].clone(), "NULL::bytea[]".into(), valid[6].clone()],
        [valid[4].clone(), valid[5].clone(), "NULL::bigint[]".into()],
        [
            "'{}'::text[]".into(),
            "'{}'::bytea[]".into(),
            "'{}'::bigint[]".into(),
        ],
        [
            format!("array_fill('k'::text, ARRAY[{n}])"),
            format!("array_fill('v'::bytea, ARRAY[{n}])"),
            format!("array_fill(NULL::bigint, ARRAY[{n}])"),
        ],
        [
            "ARRAY['k', 'j']".into(),
            valid[5].clone(),
            "ARRAY[NULL, NULL]::bigint[]".into(),
        ],
        [
            "ARRAY['k', 'j']".into(),
            "ARRAY['v', 'w']::bytea[]".into(),
            valid[6].clone(),
        ],
        [
            "ARRAY[NULL::text]".into(),
            valid[5].clone(),
            valid[6].clone(),
        ],
        ["ARRAY['']".into(), valid[5].clone(), valid[6].clone()],
        [
            format!("ARRAY[repeat('k', {})]", MAX_KEY_BYTES + 1),
            valid[5].clone(),
            valid[6].clone(),
        ],
        [
            valid[4].clone(),
            format!("ARRAY[repeat('v', {big})::bytea]"),
            valid[6].clone(),
        ],
        [
            valid[4].clone(),
            valid[5].clone(),
            "ARRAY[-1::bigint]".into(),
        ],
        [
            "'{{k}}'::text[]".into(),
            "'{{v}}'::bytea[]".into(),
            "'{{NULL}}'::bigint[]".into(),
        ],
        [
            "'[0:0]={k}'::text[]".into(),
            "'[0:0]={v}'::bytea[]".into(),
            "'[0:0]={NULL}'::bigint[]".into(),
        ],
    ];
    for [keys, values, expected] in batches {
        let mut args = valid.clone();
        args[4] = keys;
        args[5] = values;
        args[6] = expected;
        calls.push(format!("SELECT * FROM {s}.apply({})", args.join(", ")));
    }
    calls
}

/// Every hostile call of the library role's entry points (record_rejection
/// aside: it answers false).
fn hostile_calls(s: &str, token: u64) -> Vec<(&'static str, String)> {
    let mut calls = Vec::new();
    for e in entries(token) {
        let valid: Vec<String> = e.args.iter().map(|(v, _)| v.clone()).collect();
        for (i, (_, bad)) in e.args.iter().enumerate() {
            for b in bad {
                let mut args = valid.clone();
                args[i] = b.clone();
                calls.push((
                    e.name,
                    format!("SELECT * FROM {s}.{}({})", e.name, args.join(", ")),
                ));
            }
        }
    }
    calls.extend(apply_calls(s, token).into_iter().map(|c| ("apply", c)));
    calls
}

/// `record_rejection` is best effort and answers false to a bad record.
fn bad_records(s: &str) -> Vec<String> {
    let valid = [
        lit(VICTIM),
        "'k'".into(),
        "'STALE_TOKEN'".into(),
        "1".into(),
        "NULL::bigint".into(),
        "NULL::text".into(),
        "0".into(),
    ];
    let bad: Vec<(usize, Vec<String>)> = vec![
        (0, bad_scopes()),
        (1, bad_names(MAX_KEY_BYTES, false)),
        (2, vec!["NULL".into(), "'VERSION_MISMATCH'".into()]),
        (3, bad_tokens()),
        (4, vec!["-1".into()]),
        (5, bad_names(MAX_HOLDER_BYTES, false)),
        (6, vec!["NULL".into(), "-1".into()]),
    ];
    let mut calls = Vec::new();
    for (i, values) in bad {
        for b in values {
            let mut args: Vec<String> = valid.to_vec();
            args[i] = b;
            calls.push(format!("SELECT {s}.record_rejection({})", args.join(", ")));
        }
    }
    calls
}

/// Every row of fencing's tables, as text.
fn snapshot(admin: &mut postgres::Client, s: &str) -> String {
    let tables = [
        "scopes",
        "entries",
        "history",
        "floors",
        "rejections",
        "meta",
    ];
    tables
        .iter()
        .map(|t| {
            let row = admin
                .query_one(
                    &format!(
                        "SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY to_jsonb(x)::text), '[]')::text \
                         FROM {s}.{t} x"
                    ),
                    &[],
                )
                .unwrap();
            format!("{t}: {}", row.get::<_, String>(0))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the owner's store says of a scope.
fn seen(store: &Store, scope: &str) -> String {
    format!(
        "{:?} {:?} {:?}",
        store.status(scope).unwrap(),
        store.get(scope, "k", None).unwrap(),
        store.list(scope, None, 10).unwrap().keys
    )
}

/// A call without its schema, or a message, short enough to read.
fn clip(text: &str) -> String {
    let text = text
        .strip_prefix("SELECT ")
        .and_then(|t| t.split_once('.'))
        .map_or(text, |(_, call)| call);
    text.chars().take(140).collect()
}

/// docs/postgres.md, "Grants": with a bad argument, every entry point a
/// library role (EXECUTE on every function) or a worker role (EXECUTE on
/// `check` only) can run refuses with FN008, and no state moves.
#[test]
fn every_entry_point_refuses_bad_arguments_as_the_client_does() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let s = fresh_schema("args");
    let owner = Store::open(&format!("{base}?schema={s}&clock=manual")).unwrap();
    let ttl = Duration::from_secs(60);
    let lease = owner.acquire(VICTIM, "owner", ttl).unwrap();
    owner
        .put(VICTIM, "k", b"v", &Fence::new(lease.token).with_seq(1))
        .unwrap();
    owner.next_token("other").unwrap();
    let token = lease.token.get();

    let app = format!("{s}_app");
    let worker = format!("{s}_worker");
    let mut admin = client(&base);
    admin
        .batch_execute(&format!(
            "CREATE ROLE {app} NOLOGIN;
             GRANT USAGE ON SCHEMA {s} TO {app};
             GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {s} TO {app};
             CREATE ROLE {worker} NOLOGIN;
             GRANT USAGE ON SCHEMA {s} TO {worker};
             GRANT EXECUTE ON FUNCTION {s}.check(text, bigint), {s}.check(text, bigint, bigint)
                TO {worker};"
        ))
        .unwrap();
    let before = snapshot(&mut admin, &s);
    let seen_before = [VICTIM, FREE].map(|scope| seen(&owner, scope));

    let calls = hostile_calls(&s, token);
    let records = bad_records(&s);
    let mut failures = Vec::new();
    for role in [&app, &worker] {
        let mut c = client(&base);
        c.batch_execute(&format!("SET ROLE {role}")).unwrap();
        for (name, sql) in &calls {
            // The worker may run `check` only: everything else is 42501.
            let want = if role == &app || *name == "check" {
                "FN008"
            } else {
                "42501"
            };
            match c.query(sql.as_str(), &[]) {
                Ok(rows) => failures.push(format!(
                    "{role}: {} → accepted ({} rows), want {want}",
                    clip(sql),
                    rows.len()
                )),
                Err(e) => match e.as_db_error() {
                    Some(db) if db.code().code() == want => {}
                    Some(db) => failures.push(format!(
                        "{role}: {} → {} {}, want {want}",
                        clip(sql),
                        db.code().code(),
                        clip(db.message())
                    )),
                    None => failures.push(format!("{role}: {} → {e}, want {want}", clip(sql))),
                },
            }
        }
        for sql in &records {
            let want = if role == &app { "false" } else { "42501" };
            let got = match c.query_one(sql.as_str(), &[]) {
                Ok(row) => row.get::<_, bool>(0).to_string(),
                Err(e) => e
                    .as_db_error()
                    .map_or_else(|| e.to_string(), |d| d.code().code().to_owned()),
            };
            if got != want {
                failures.push(format!("{role}: {} → {got}, want {want}", clip(sql)));
            }
        }
    }
    let after = snapshot(&mut admin, &s);
    let seen_after = [VICTIM, FREE].map(|scope| seen(&owner, scope));
    assert!(
        failures.is_empty(),
        "{} of {} hostile calls were not refused:\n{}",
        failures.len(),
        2 * (calls.len() + records.len()),
        failures.join("\n")
    );
    assert_eq!(seen_after, seen_before, "the owner's store saw a change");
    assert_eq!(after, before, "a refused call changed the tables");

    // The victim's owner carries on as before.
    owner
        .put(VICTIM, "k", b"w", &Fence::new(lease.token).with_seq(2))
        .unwrap();
    owner.close();
    admin
        .batch_execute(&format!(
            "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA {s} FROM {app}, {worker};
             REVOKE ALL ON SCHEMA {s} FROM {app}, {worker};
             DROP ROLE {app}; DROP ROLE {worker};"
        ))
        .unwrap();
}

/// Whatever the functions return (here: replaced by the owner with ones
/// that answer NULLs where a value belongs), the library answers BACKEND,
/// never a panic.
#[test]
fn odd_rows_are_backend_errors_not_panics() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let s = fresh_schema("odd");
    let store = Store::open(&format!("{base}?schema={s}")).unwrap();
    let lease = store
        .acquire("job", "app", Duration::from_secs(30))
        .unwrap();
    let mut admin = client(&base);
    // Same signatures: the store's prepared statements stay valid, and a
    // later open finds the recorded hash unchanged and leaves them be.
    admin
        .batch_execute(&format!(
            "CREATE OR REPLACE FUNCTION {s}.next_token(p_scope text) RETURNS bigint
                LANGUAGE sql AS $$ SELECT NULL::bigint $$;
             CREATE OR REPLACE FUNCTION {s}.advance_counter(p_scope text, p_floor bigint) RETURNS bigint
                LANGUAGE sql AS $$ SELECT NULL::bigint $$;
             CREATE OR REPLACE FUNCTION {s}.acquire(p_scope text, p_holder text, p_ttl_ms bigint, p_eager boolean,
                OUT holder text, OUT token bigint, OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint)
                LANGUAGE sql AS $$ SELECT 'evil'::text, 7::bigint, NULL::bigint, NULL::bigint, NULL::bigint $$;
             CREATE OR REPLACE FUNCTION {s}.renew(p_scope text, p_token bigint, p_ttl_ms bigint,
                OUT holder text, OUT token bigint, OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint,
                OUT current_token bigint, OUT current_holder text)
                LANGUAGE sql AS $$ SELECT NULL::text, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint,
                                          9::bigint, NULL::text $$;
             CREATE OR REPLACE FUNCTION {s}.release(p_scope text, p_token bigint) RETURNS boolean
                LANGUAGE sql AS $$ SELECT NULL::boolean $$;
             CREATE OR REPLACE FUNCTION {s}.apply(p_scope text, p_token bigint, p_seq bigint, p_strict boolean,
                p_keys text[], p_values bytea[], p_expected bigint[], p_holder text) RETURNS bigint[]
                LANGUAGE sql AS $$ SELECT ARRAY[NULL::bigint] $$;
             CREATE OR REPLACE FUNCTION {s}.get(p_scope text, p_key text,
                OUT value bytea, OUT version bigint, OUT token bigint)
                LANGUAGE sql AS $$ SELECT 'v'::bytea, NULL::bigint, NULL::bigint $$;
             CREATE OR REPLACE FUNCTION {s}.list(p_scope text, p_after text, p_limit bigint) RETURNS SETOF text
                LANGUAGE sql AS $$ SELECT NULL::text $$;
             CREATE OR REPLACE FUNCTION {s}.status(p_scope text,
                OUT counter bigint, OUT fence bigint, OUT holder text, OUT token bigint,
                OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint, OUT entries bigint)
                LANGUAGE sql AS $$ SELECT 1::bigint, 1::bigint, 'evil'::text, 1::bigint,
                                          NULL::bigint, NULL::bigint, NULL::bigint, 0::bigint $$;
             CREATE OR REPLACE FUNCTION {s}.retire(p_scope text) RETURNS boolean
                LANGUAGE sql AS $$ SELECT NULL::boolean $$;
             CREATE OR REPLACE FUNCTION {s}.rejections(p_scope text, p_limit bigint)
                RETURNS SETOF {s}.rejections
                LANGUAGE sql AS $$ SELECT (NULL::{s}.rejections).* $$;
             CREATE OR REPLACE FUNCTION {s}.last_writes(p_scope text, p_limit bigint,
                OUT scope text, OUT holder text, OUT token bigint, OUT at_ms bigint) RETURNS SETOF record
                LANGUAGE sql AS $$ SELECT NULL::text, NULL::text, NULL::bigint, NULL::bigint $$;"
        ))
        .unwrap();
    let fence = Fence::new(lease.token);
    let ttl = Duration::from_secs(30);
    let answers = [
        ("next_token", store.next_token("job").map(drop)),
        (
            "advance_counter",
            store
                .advance_counter("job", Token::new(9).unwrap())
                .map(drop),
        ),
        ("acquire", store.acquire("free", "app", ttl).map(drop)),
        ("renew", store.renew("job", lease.token, ttl).map(drop)),
        ("release", store.release("job", lease.token).map(drop)),
        ("put", store.put("job", "k", b"v", &fence).map(drop)),
        (
            "apply",
            store
                .apply("job", &fence, vec![Op::put("k", b"v".to_vec())])
                .map(drop),
        ),
        ("get", store.get("job", "k", None).map(drop)),
        ("list", store.list("job", None, 10).map(drop)),
        ("status", store.status("job").map(drop)),
        ("retire", store.retire("job").map(drop)),
        ("events", store.events(None, 10).map(drop)),
        ("events of a scope", store.events(Some("job"), 10).map(drop)),
    ];
    for (what, answer) in answers {
        let err = answer.expect_err(what);
        assert_eq!(err.code(), ErrorCode::Backend, "{what}: {err}");
    }
    store.close();
}
