//! The operator's record cannot be forged away (docs/operations.md, "The
//! store's record"; docs/postgres.md, "Grants"): a library role may call
//! `record_rejection` directly, with any holder it likes, but each record
//! carries the role of the session that made it, and one role's records
//! never push another role's out of the ring. Needs `FENCING_TEST_PG_URL`.

use std::time::Duration;

use fencing::{ErrorCode, Fence, Store, MAX_EVENTS_LIMIT, REJECTION_LOG};

mod support;
use support::{fresh_schema, postgres_test_url};

fn client(url: &str) -> postgres::Client {
    url.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

/// The reproduction: 300 calls of `record_rejection` with holder
/// "ops-admin" by a library role, after one genuine rejection recorded by
/// the library of another role. `fencing events` must still show it.
#[test]
fn forged_records_do_not_evict_a_genuine_one() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let s = fresh_schema("forge");
    let store = Store::open(&format!("{base}?schema={s}")).unwrap();
    let app = format!("{s}_app");
    let mut admin = client(&base);
    admin
        .batch_execute(&format!(
            "CREATE ROLE {app} LOGIN;
             GRANT USAGE ON SCHEMA {s} TO {app};
             GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {s} TO {app};"
        ))
        .unwrap();

    // A genuine rejection: a stale write, recorded by the library.
    let old = store
        .acquire("genuine", "worker-a", Duration::from_secs(1))
        .unwrap();
    store.release("genuine", old.token).unwrap();
    let new = store
        .acquire("genuine", "worker-b", Duration::from_secs(30))
        .unwrap();
    store
        .put("genuine", "k", b"v", &Fence::new(new.token))
        .unwrap();
    let stale = store
        .put(
            "genuine",
            "k",
            b"old",
            &Fence::new(old.token).with_holder("worker-a"),
        )
        .unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleToken);
    let genuine = |store: &Store| {
        store
            .events(None, MAX_EVENTS_LIMIT)
            .unwrap()
            .rejections
            .iter()
            .any(|r| r.scope == "genuine" && r.holder.as_deref() == Some("worker-a"))
    };
    assert!(genuine(&store), "the genuine rejection is recorded");

    // The forger: 300 scopes of its own, each refusing token 1, and one
    // forged record of each.
    let mut forger = client(&format!(
        "postgres://{app}@{}",
        base.split_once('@').unwrap().1
    ));
    let forged = 300;
    assert!(forged > REJECTION_LOG);
    let mut accepted = 0;
    for i in 0..forged {
        let scope = format!("forged:{i}");
        forger
            .execute(&format!("SELECT {s}.advance_counter($1, 5)"), &[&scope])
            .unwrap();
        forger
            .execute(&format!("SELECT {s}.claim($1, 5, NULL)"), &[&scope])
            .unwrap();
        let row = forger
            .query_one(
                &format!(
                    "SELECT {s}.record_rejection($1, 'k', 'STALE_TOKEN', 1, NULL, 'ops-admin', 0)"
                ),
                &[&scope],
            )
            .unwrap();
        accepted += i32::from(row.get::<_, bool>(0));
    }
    println!("record_rejection accepted {accepted} of {forged} forged records");
    let shown = store.events(None, MAX_EVENTS_LIMIT).unwrap().rejections;
    let by_ops_admin = shown
        .iter()
        .filter(|r| r.holder.as_deref() == Some("ops-admin"))
        .count();
    println!(
        "events shows {} rejections, {by_ops_admin} by \"ops-admin\"",
        shown.len()
    );
    assert!(
        genuine(&store),
        "the genuine rejection was pushed out of the record"
    );

    // Each record names the role that made it: the forged ones the forger's,
    // whatever holder they claim.
    let roles: Vec<(String, String)> = admin
        .query(
            &format!("SELECT DISTINCT holder, role FROM {s}.rejections ORDER BY 1"),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        roles,
        [
            ("ops-admin".to_owned(), app.clone()),
            ("worker-a".to_owned(), "postgres".to_owned())
        ]
    );
    store.close();
    drop(forger);
    admin
        .batch_execute(&format!(
            "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA {s} FROM {app};
             REVOKE ALL ON SCHEMA {s} FROM {app}; DROP ROLE {app};"
        ))
        .unwrap();
}
