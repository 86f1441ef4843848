//! The owner's recovery of a scope wedged before the jump limit existed
//! (docs/semantics.md, "Lowering a wedged scope"): a fence that an old
//! `fencing.check` pushed to the largest token exhausts the scope for good.
//! Only the owner may lower it, to a bound it names, and never below a token
//! the store can show was handed out. Needs `FENCING_TEST_PG_URL`.

use std::time::Duration;

use fencing::{ErrorCode, Fence, Store, Token};

mod support;
use support::{fresh_schema, postgres_test_url};

fn client(url: &str) -> postgres::Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

const WEDGE: i64 = i64::MAX;

#[test]
fn only_the_owner_lowers_a_wedged_scope_and_never_below_a_token_handed_out() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let s = fresh_schema("wedge");
    let store = Store::open(&format!("{base}?schema={s}")).unwrap();
    // A holder writes with token 3; then a check from before the jump limit
    // (here: the owner's plain SQL, as the old rules allowed) pushes the
    // fence to the largest token.
    for _ in 0..2 {
        store.next_token("victim:1").unwrap();
    }
    let lease = store
        .acquire("victim:1", "worker", Duration::from_secs(1))
        .unwrap();
    assert_eq!(lease.token.get(), 3);
    store
        .put("victim:1", "k", b"v", &Fence::new(lease.token))
        .unwrap();
    store.release("victim:1", lease.token).unwrap();
    let mut owner = client(&base);
    owner
        .execute(
            &format!("UPDATE {s}.scopes SET fence = $1, sealed = false WHERE scope = 'victim:1'"),
            &[&WEDGE],
        )
        .unwrap();
    let wedged = store
        .acquire("victim:1", "worker", Duration::from_secs(30))
        .unwrap_err();
    assert_eq!(wedged.code(), ErrorCode::TokenExhausted, "{wedged}");

    // A library role (EXECUTE on every function) may not lower it.
    let app = format!("{s}_app");
    owner
        .batch_execute(&format!(
            "CREATE ROLE {app} LOGIN;
             GRANT USAGE ON SCHEMA {s} TO {app};
             GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {s} TO {app};"
        ))
        .unwrap();
    let mut lib = client(&format!(
        "postgres://{app}@{}",
        base.split_once('@').unwrap().1
    ));
    let lower = |c: &mut postgres::Client, bound: i64| {
        c.query_one(
            &format!("SELECT {s}.lower_wedged('victim:1', $1)"),
            &[&bound],
        )
        .map(|r| r.get::<_, i64>(0))
        .map_err(|e| e.code().map(|c| c.code().to_owned()).unwrap_or_default())
    };
    assert_eq!(lower(&mut lib, 1000), Err("42501".to_owned()));

    // The owner: not below the greatest token the store saw handed out (3,
    // the lease and the write), not above the jump limit.
    assert_eq!(lower(&mut owner, 2), Err("FN008".to_owned()));
    assert_eq!(lower(&mut owner, 1 << 49), Err("FN008".to_owned()));
    assert_eq!(lower(&mut owner, 1000), Ok(1000));
    // Not wedged any more: a second call is refused.
    assert_eq!(lower(&mut owner, 1000), Err("FN008".to_owned()));

    // Every token up to the bound is stale; the next one is above it.
    let stale = store
        .put(
            "victim:1",
            "k",
            b"old",
            &Fence::new(Token::new(1000).unwrap()),
        )
        .unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleToken);
    let next = store
        .acquire("victim:1", "worker", Duration::from_secs(30))
        .unwrap();
    assert_eq!(next.token.get(), 1001);
    store.close();
    drop(lib);
    owner
        .batch_execute(&format!(
            "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA {s} FROM {app};
             REVOKE ALL ON SCHEMA {s} FROM {app}; DROP ROLE {app};"
        ))
        .unwrap();
}

/// A fence a little above the jump limit is what callers of the release
/// before this one could reach by stepping one past the greatest token at
/// a time, each step accepted: no bound at or below the limit covers those
/// tokens, so the owner's recovery refuses it as not a wedge. Only a value
/// further up than any count of such steps (2^40, the failover step's own
/// bound on lost commits) came in one call, before the limit.
#[test]
fn a_fence_stepped_just_past_the_limit_is_not_taken_for_a_wedge() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let s = fresh_schema("stepped");
    let store = Store::open(&format!("{base}?schema={s}")).unwrap();
    store.next_token("stepped:1").unwrap();
    let limit: i64 = 1 << 48;
    let mut owner = client(&base);
    let lower = |c: &mut postgres::Client, fence: i64| {
        c.execute(
            &format!("UPDATE {s}.scopes SET fence = $1 WHERE scope = 'stepped:1'"),
            &[&fence],
        )
        .unwrap();
        c.query_one(&format!("SELECT {s}.lower_wedged('stepped:1', 5)"), &[])
            .map(|r| r.get::<_, i64>(0))
            .map_err(|e| e.code().map(|c| c.code().to_owned()).unwrap_or_default())
    };
    // As a previous release's callers could leave it: J + 3.
    assert_eq!(lower(&mut owner, limit + 3), Err("FN008".to_owned()));
    assert_eq!(
        lower(&mut owner, limit + (1 << 40)),
        Err("FN008".to_owned())
    );
    assert_eq!(lower(&mut owner, limit + (1 << 40) + 1), Ok(5));
    store.close();
}
