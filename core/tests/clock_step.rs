//! A clock stepped backwards never revives an expired lease
//! (docs/semantics.md, "Leases"): the time a store uses for a scope is the
//! greatest it has seen for that scope. Clocks are ones the test controls:
//! two `sqlite:` handles with manual clocks apart (processes on one host
//! whose clock stepped between their calls), and a PostgreSQL schema's
//! manual clock stepped back with plain SQL.

use std::time::Duration;

use fencing::{Error, Store};

mod support;
use support::{fresh_schema, postgres_test_url, sqlite_url};

const TTL: Duration = Duration::from_millis(1000);

/// `late` runs 2 s after `early`; the lease was taken on `early`'s clock.
fn expired_lease_stays_expired(early: &Store, late: &Store, back: impl Fn()) {
    let lease = early.acquire("job", "a", TTL).unwrap();
    // The store sees the lease expire: the holder's renewal is refused.
    let lost = late.renew("job", lease.token, TTL).unwrap_err();
    assert!(
        matches!(lost, Error::LeaseLost { current: None, .. }),
        "{lost:?}"
    );
    back();
    // The clock is back before the expiry: the lease must stay expired.
    let again = early.renew("job", lease.token, TTL);
    assert!(
        matches!(again, Err(Error::LeaseLost { current: None, .. })),
        "an expired lease was revived by a clock stepped back: {again:?}"
    );
    assert_eq!(early.status("job").unwrap().lease, None);
    assert!(!early.release("job", lease.token).unwrap());
    // Nobody holds it: another holder gets it at once, with a newer token.
    let next = early.acquire("job", "b", TTL).unwrap();
    assert!(next.token > lease.token);
}

#[test]
fn sqlite_clock_stepped_back_does_not_revive_a_lease() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}?clock=manual", sqlite_url(&dir.path().join("c.db")));
    let early = Store::open(&url).unwrap();
    let late = Store::open(&url).unwrap();
    late.advance_clock(Duration::from_secs(2)).unwrap();
    expired_lease_stays_expired(&early, &late, || {});
}

#[test]
fn postgres_clock_stepped_back_does_not_revive_a_lease() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("clockstep");
    let store = Store::open(&format!("{base}?schema={schema}&clock=manual")).unwrap();
    let step = |ms: i64| {
        let mut c = base
            .parse::<postgres::Config>()
            .unwrap()
            .connect(postgres::NoTls)
            .unwrap();
        c.execute(
            &format!("UPDATE {schema}.meta SET manual_now_ms = manual_now_ms + $1"),
            &[&ms],
        )
        .unwrap();
    };
    // One handle, one clock: forward 2 s for the refused renewal, then
    // back 1.5 s, to half a second before the expiry.
    let lease = store.acquire("job", "a", TTL).unwrap();
    step(2000);
    let lost = store.renew("job", lease.token, TTL).unwrap_err();
    assert!(
        matches!(lost, Error::LeaseLost { current: None, .. }),
        "{lost:?}"
    );
    step(-1500);
    let again = store.renew("job", lease.token, TTL);
    assert!(
        matches!(again, Err(Error::LeaseLost { current: None, .. })),
        "an expired lease was revived by a clock stepped back: {again:?}"
    );
    assert_eq!(store.status("job").unwrap().lease, None);
    assert!(!store.release("job", lease.token).unwrap());
    let next = store.acquire("job", "b", TTL).unwrap();
    assert!(next.token > lease.token);
    // Liveness on the stepped-back clock: the new lease runs from the
    // greatest time seen, so it is live now and its remaining time is whole.
    assert_eq!(next.remaining, TTL);
}
