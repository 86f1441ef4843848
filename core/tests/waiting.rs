//! Waiting for a lease costs the server next to nothing (docs/semantics.md,
//! "Waiting"): on PostgreSQL a waiter is woken by the release, announced by
//! the server to one listening connection per handle, and otherwise sleeps
//! until the lease's end; where releases are not pushed (another SQLite
//! handle), it asks again after a bounded back-off. Nothing here times a
//! call: what is counted is the acquire attempts a waiter makes
//! (`acquire_conflicts`), and whether it gets the lease before its timeout,
//! which is shorter than the lease's TTL, so that only a wake-up can
//! explain it.

use std::time::{Duration, Instant};

use fencing::Store;

mod support;
use support::{fresh_schema, pgbouncer_test_url, postgres_test_url, sqlite_url, OwnCluster};

const TTL: Duration = Duration::from_secs(120);
/// Shorter than the TTL: a waiter that gets the lease was woken.
const TIMEOUT: Duration = Duration::from_secs(60);

fn conflicts(store: &Store) -> u64 {
    store.metrics().acquire_conflicts
}

/// Waits until `store`'s waiters stop asking: no attempt for `quiet`.
/// Returns false if they still ask after `give_up`.
fn settles(store: &Store, quiet: Duration, give_up: Duration) -> bool {
    let start = Instant::now();
    let mut seen = conflicts(store);
    while start.elapsed() < give_up {
        std::thread::sleep(quiet);
        let now = conflicts(store);
        if now == seen {
            return true;
        }
        seen = now;
    }
    false
}

fn waiters(
    store: &Store,
    scope: &str,
    n: usize,
) -> Vec<std::thread::JoinHandle<fencing::Result<fencing::Lease>>> {
    (0..n)
        .map(|i| {
            let (store, scope) = (store.clone(), scope.to_owned());
            std::thread::spawn(move || {
                let lease = store.acquire_wait(&scope, &format!("w{i}"), TTL, TIMEOUT)?;
                // Hands it on to the next waiter at once.
                store.release(&scope, lease.token)?;
                Ok(lease)
            })
        })
        .collect()
}

/// Two handles on one fresh schema, and its name.
fn pg_pair(url: &str, tag: &str) -> (Store, Store, String) {
    let schema = fresh_schema(tag);
    let url = format!("{url}?schema={schema}");
    (
        Store::open(&url).unwrap(),
        Store::open(&url).unwrap(),
        schema,
    )
}

/// A waiter on PostgreSQL stops asking once it listens, and is woken by a
/// release made through another handle (another process, as far as the
/// server knows).
#[test]
fn postgres_waiters_sleep_until_woken_by_another_handles_release() {
    let Some(url) = postgres_test_url() else {
        return;
    };
    let (holder, waiting, _) = pg_pair(&url, "wake");
    let held = holder.acquire("s", "h", TTL).unwrap();
    let threads = waiters(&waiting, "s", 5);
    // With a fixed 10 ms poll, or the back-off, they would never go quiet
    // for a second.
    assert!(
        settles(&waiting, Duration::from_secs(1), Duration::from_secs(20)),
        "the waiters kept asking: {} attempts",
        conflicts(&waiting)
    );
    let asked = conflicts(&waiting);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        conflicts(&waiting),
        asked,
        "a woken waiter asked without a release"
    );
    assert!(holder.release("s", held.token).unwrap());
    let mut tokens: Vec<u64> = threads
        .into_iter()
        .map(|t| t.join().unwrap().unwrap().token.get())
        .collect();
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens.len(), 5, "every waiter got the lease once");
    assert!(tokens[0] > held.token.get());
}

/// The listening connection killed under waiting callers: none is lost,
/// whether the release's announcement went out before or after it died.
#[test]
fn postgres_waiters_survive_their_listening_connection_being_killed() {
    let Some(url) = postgres_test_url() else {
        return;
    };
    let (holder, waiting, schema) = pg_pair(&url, "killed");
    let held = holder.acquire("s", "h", TTL).unwrap();
    let threads = waiters(&waiting, "s", 3);
    assert!(settles(
        &waiting,
        Duration::from_secs(1),
        Duration::from_secs(20)
    ));
    let killed: i64 = {
        let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        admin
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE application_name = left('fencing listener ' || $1, 63)",
                &[&schema],
            )
            .unwrap()
            .get(0)
    };
    assert!(killed >= 1, "no listening connection to kill");
    assert!(holder.release("s", held.token).unwrap());
    for t in threads {
        t.join().unwrap().unwrap();
    }
}

/// The server restarted while 20 callers wait: every one of them gets the
/// lease in turn, each woken by the release before it.
#[test]
fn postgres_twenty_waiters_survive_a_server_restart() {
    let Some((cluster, url)) = OwnCluster::start() else {
        return;
    };
    let (holder, waiting, _) = pg_pair(&url, "restart");
    let held = holder.acquire("s", "h", TTL).unwrap();
    let threads = waiters(&waiting, "s", 20);
    assert!(settles(
        &waiting,
        Duration::from_secs(1),
        Duration::from_secs(30)
    ));
    cluster.run("restart");
    // The holder's pool reconnects; its release is announced to the
    // waiters' listener, which reconnected too (or they ask again).
    let released = (0..100).find_map(|_| match holder.release("s", held.token) {
        Ok(released) => Some(released),
        Err(_) => {
            std::thread::sleep(Duration::from_millis(100));
            None
        }
    });
    assert_eq!(released, Some(true));
    let mut tokens: Vec<u64> = threads
        .into_iter()
        .map(|t| t.join().unwrap().unwrap().token.get())
        .collect();
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens.len(), 20);
}

/// Behind a transaction pooler, where `LISTEN` cannot work, a waiter backs
/// off (at most five attempts a second), and still gets the lease another
/// handle releases.
#[test]
fn postgres_waiters_behind_a_transaction_pooler_back_off() {
    let Some(base) = pgbouncer_test_url() else {
        return;
    };
    let url = format!(
        "{base}?schema={}&pooler=transaction",
        fresh_schema("pooled_wait")
    );
    let (holder, waiting) = (Store::open(&url).unwrap(), Store::open(&url).unwrap());
    let held = holder.acquire("s", "h", TTL).unwrap();
    let threads = waiters(&waiting, "s", 2);
    std::thread::sleep(Duration::from_secs(1));
    let (before, start) = (conflicts(&waiting), Instant::now());
    std::thread::sleep(Duration::from_secs(2));
    let asked = conflicts(&waiting) - before;
    // Two waiters, each at most every 200 ms.
    let bound = 2 * ((start.elapsed().as_millis() / 200) as u64 + 2);
    assert!(asked <= bound, "{asked} attempts in {:?}", start.elapsed());
    assert!(asked >= 1, "a waiter that is not woken must ask again");
    assert!(holder.release("s", held.token).unwrap());
    for t in threads {
        t.join().unwrap().unwrap();
    }
}

/// On SQLite a waiter asks again at most every 200 ms once it has waited a
/// while (another process's release cannot wake it), and still gets the
/// lease whichever handle releases it.
#[test]
fn sqlite_waiters_back_off() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir.path().join("w.db"));
    let (holder, other) = (Store::open(&url).unwrap(), Store::open(&url).unwrap());
    let held = holder.acquire("s", "h", TTL).unwrap();
    let same = waiters(&holder, "s", 1);
    let elsewhere = waiters(&other, "s", 1);
    std::thread::sleep(Duration::from_secs(1));
    let (before, start) = (conflicts(&other), Instant::now());
    std::thread::sleep(Duration::from_secs(2));
    let asked = conflicts(&other) - before;
    let bound = (start.elapsed().as_millis() / 200) as u64 + 2;
    assert!(asked <= bound, "{asked} attempts in {:?}", start.elapsed());
    assert!(asked >= 1, "a waiter that is not woken must ask again");
    assert!(holder.release("s", held.token).unwrap());
    for t in same.into_iter().chain(elsewhere) {
        t.join().unwrap().unwrap();
    }
}

/// A release is announced only while a waiter's mark on its scope lasts:
/// announcing serializes commits across the database, so a store nobody
/// waits on pays nothing for it.
#[test]
fn postgres_a_release_is_announced_only_when_someone_waits() {
    let Some(url) = postgres_test_url() else {
        return;
    };
    let (holder, waiting, schema) = pg_pair(&url, "announce");
    let mut listener = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    listener.batch_execute("LISTEN fencing").unwrap();
    let announced = |listener: &mut postgres::Client| -> Vec<String> {
        use postgres::fallible_iterator::FallibleIterator;
        let mut seen = Vec::new();
        let mut n = listener.notifications();
        let mut it = n.timeout_iter(Duration::from_millis(500));
        while let Some(note) = it.next().unwrap() {
            if note.payload().starts_with(&schema) {
                seen.push(note.payload().to_owned());
            }
        }
        seen
    };

    let lease = holder.acquire("quiet", "h", TTL).unwrap();
    assert!(holder.release("quiet", lease.token).unwrap());
    assert_eq!(announced(&mut listener), Vec::<String>::new());

    let held = holder.acquire("busy", "h", TTL).unwrap();
    let threads = waiters(&waiting, "busy", 1);
    assert!(settles(
        &waiting,
        Duration::from_secs(1),
        Duration::from_secs(20)
    ));
    assert!(holder.release("busy", held.token).unwrap());
    for t in threads {
        t.join().unwrap().unwrap();
    }
    // The holder's release, announced, and the waiter's own: a release
    // while the scope's last mark lasts is announced, waiter or not.
    let seen = announced(&mut listener);
    assert!(
        !seen.is_empty() && seen.iter().all(|p| *p == format!("{schema} busy")),
        "{seen:?}"
    );
    // Marks are made only by waiting, and last a minute: "quiet" is still
    // not announced.
    let lease = holder.acquire("quiet", "h", TTL).unwrap();
    assert!(holder.release("quiet", lease.token).unwrap());
    assert_eq!(announced(&mut listener), Vec::<String>::new());
}
