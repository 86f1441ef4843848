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
use support::{
    fresh_schema, pgbouncer_test_url, postgres_test_url, role_granted_before, sqlite_url,
    OwnCluster,
};

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

/// A release is announced only when a waiter has a place in its scope's
/// line, to the first of them: announcing serializes commits across the
/// database, so a store nobody waits on pays nothing for it.
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
    // The holder's release, announced to the waiter's place; the waiter's
    // own, after it took the lease and left the line, to nobody.
    let seen = announced(&mut listener);
    assert_eq!(seen.len(), 1, "{seen:?}");
    let place = seen[0]
        .strip_prefix(&format!("{schema} "))
        .and_then(|rest| rest.strip_suffix(" busy"))
        .unwrap();
    assert!(place.parse::<u64>().unwrap() >= 1);
    // Nobody waits on "quiet": still not announced.
    let lease = holder.acquire("quiet", "h", TTL).unwrap();
    assert!(holder.release("quiet", lease.token).unwrap());
    assert_eq!(announced(&mut listener), Vec::<String>::new());
}

// ----- in order -----

const ORDER: usize = 8;

/// Eight waiters, each starting once the one before it has its place (and
/// 100 ms later), are served in that order as each hands the lease on.
/// `open` gives each waiter a handle of its own; `shared` waiters use one
/// (the memory store: separate opens are separate stores).
fn served_in_arrival_order(holder: &Store, open: impl Fn() -> Store, shared: bool) {
    let held = holder.acquire("q", "h", TTL).unwrap();
    let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut threads = Vec::new();
    for i in 0..ORDER {
        let store = if shared { holder.clone() } else { open() };
        let before = conflicts(&store);
        let (order, mine) = (order.clone(), store.clone());
        threads.push(std::thread::spawn(move || {
            let lease = mine
                .acquire_wait("q", &format!("w{i}"), TTL, TIMEOUT)
                .unwrap();
            order.lock().unwrap().push(i);
            mine.release("q", lease.token).unwrap();
        }));
        // Queued: its first attempt found the scope taken.
        let start = Instant::now();
        while conflicts(&store) == before && start.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(conflicts(&store) > before, "waiter {i} never asked");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(holder.release("q", held.token).unwrap());
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..ORDER).collect::<Vec<_>>());
}

#[test]
fn memory_waiters_are_served_in_arrival_order() {
    let store = Store::open("memory:").unwrap();
    served_in_arrival_order(&store, || unreachable!(), true);
}

#[test]
fn sqlite_waiters_are_served_in_arrival_order() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir.path().join("q.db"));
    let holder = Store::open(&url).unwrap();
    served_in_arrival_order(&holder, || Store::open(&url).unwrap(), false);
}

#[test]
fn postgres_waiters_are_served_in_arrival_order() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let url = format!("{base}?schema={}", fresh_schema("order"));
    let holder = Store::open(&url).unwrap();
    served_in_arrival_order(&holder, || Store::open(&url).unwrap(), false);
}

/// A waiter that gives up (its timeout) leaves its place at once: the one
/// behind it is not held up until the place would have run out (a minute,
/// for the TTL asked here), longer than that waiter's own timeout.
fn one_who_gives_up_leaves_the_line(store: &Store) {
    let long = Duration::from_secs(300);
    let held = store.acquire("g", "h", long).unwrap();
    let quitter = {
        let s = store.clone();
        std::thread::spawn(move || s.acquire_wait("g", "quitter", long, Duration::from_millis(300)))
    };
    std::thread::sleep(Duration::from_millis(100));
    let patient = {
        let s = store.clone();
        std::thread::spawn(move || s.acquire_wait("g", "patient", long, Duration::from_secs(30)))
    };
    assert_eq!(
        quitter.join().unwrap().unwrap_err(),
        fencing::Error::Timeout
    );
    assert!(store.release("g", held.token).unwrap());
    assert_eq!(patient.join().unwrap().unwrap().holder, "patient");
}

#[test]
fn a_waiter_that_gives_up_leaves_the_line_on_every_backend() {
    one_who_gives_up_leaves_the_line(&Store::open("memory:").unwrap());
    let dir = tempfile::tempdir().unwrap();
    one_who_gives_up_leaves_the_line(&Store::open(&sqlite_url(&dir.path().join("g.db"))).unwrap());
    if let Some(base) = postgres_test_url() {
        let url = format!("{base}?schema={}", fresh_schema("giveup"));
        one_who_gives_up_leaves_the_line(&Store::open(&url).unwrap());
    }
}

// ----- a waiter killed -9 while queued -----

const CHILD_URL: &str = "FENCING_QUEUED_CHILD_URL";
const CHILD_TTL_MS: &str = "FENCING_QUEUED_CHILD_TTL_MS";

/// Runs only inside the child of the test below: waits in line, forever.
#[test]
fn queued_child() {
    let Ok(url) = std::env::var(CHILD_URL) else {
        return;
    };
    let ttl: u64 = std::env::var(CHILD_TTL_MS).unwrap().parse().unwrap();
    let store = Store::open(&url).unwrap();
    let _ = store.acquire_wait(
        "k",
        "child",
        Duration::from_millis(ttl),
        Duration::from_secs(600),
    );
}

/// A waiter killed while first in line: the lease stays the line's (a plain
/// acquire may still take it, as it may at any time), and the waiter behind
/// gets it once the dead one's place runs out: at most its TTL, kept within
/// one second and one minute.
fn a_dead_waiter_holds_the_line_only_until_its_place_runs_out(url: &str, queued: impl Fn() -> i64) {
    let store = Store::open(url).unwrap();
    let held = store.acquire("k", "h", TTL).unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "queued_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_URL, url)
        .env(CHILD_TTL_MS, "5000")
        .spawn()
        .unwrap();
    let start = Instant::now();
    while queued() < 1 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(queued(), 1, "the child never took its place");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(store.release("k", held.token).unwrap());
    // Behind the dead waiter's place, for a while: not served at once ...
    let behind = store.acquire_wait("k", "behind", TTL, Duration::from_millis(200));
    assert_eq!(behind.unwrap_err(), fencing::Error::Timeout);
    // ... but once its place (5 s) runs out.
    let lease = store.acquire_wait("k", "behind", TTL, TIMEOUT).unwrap();
    assert_eq!(lease.holder, "behind");
}

#[test]
fn sqlite_a_dead_waiter_holds_the_line_only_until_its_place_runs_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.db");
    let url = sqlite_url(&path);
    let queued = || {
        rusqlite::Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM fencing_waiters WHERE scope = 'k'",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    a_dead_waiter_holds_the_line_only_until_its_place_runs_out(&url, queued);
}

#[test]
fn postgres_a_dead_waiter_holds_the_line_only_until_its_place_runs_out() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("dead");
    let url = format!("{base}?schema={schema}");
    let queued = || {
        let mut c = postgres::Client::connect(&base, postgres::NoTls).unwrap();
        c.query_one(
            &format!("SELECT count(*) FROM \"{schema}\".waiting WHERE scope = 'k'"),
            &[],
        )
        .unwrap()
        .get(0)
    };
    a_dead_waiter_holds_the_line_only_until_its_place_runs_out(&url, queued);
}

/// A library role granted before `acquire_waiting` existed (docs/postgres.md,
/// "Waiting": run the grant again after an upgrade) still waits: out of
/// line, polling with the back-off, as before places.
#[test]
fn postgres_a_role_granted_before_places_existed_still_waits() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("oldgrant");
    let url = format!("{base}?schema={schema}");
    let holder = Store::open(&url).unwrap();
    let (role, as_role) = role_granted_before(
        &base,
        &schema,
        &[
            "acquire_waiting(text, text, bigint, boolean, bigint)",
            "leave_queue(text, bigint)",
        ],
    );
    let waiting = Store::open(&as_role).unwrap();
    let held = holder.acquire("s", "h", TTL).unwrap();
    let threads = waiters(&waiting, "s", 1);
    // Until it asked twice (bounded: a hang, not a speed claim).
    let start = Instant::now();
    while conflicts(&waiting) < 2 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(conflicts(&waiting) >= 2, "it polls");
    assert!(holder.release("s", held.token).unwrap());
    for t in threads {
        assert_eq!(t.join().unwrap().unwrap().holder, "w0");
    }
    drop(waiting);
    postgres::Client::connect(&base, postgres::NoTls)
        .unwrap()
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE; DROP ROLE {role};"))
        .unwrap();
}

/// A waiter that may give up (every face's cancellable wait: Python's
/// Ctrl-C and `fencing.aio`, Node's `signal`, C's cancel handle) asks its
/// caller every 20 ms, and the store no more often than any waiter.
#[test]
fn a_cancellable_waiter_does_not_ask_the_store_every_time_it_asks_its_caller() {
    let check = |holder: &Store, waiting: &Store| {
        let held = holder.acquire("c", "h", TTL).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let t = {
            let (s, stop) = (waiting.clone(), stop.clone());
            std::thread::spawn(move || {
                let quit = || stop.load(std::sync::atomic::Ordering::Relaxed);
                s.acquire_wait_unless("c", "w", TTL, TIMEOUT, &quit)
            })
        };
        assert!(
            settles(waiting, Duration::from_secs(1), Duration::from_secs(20)),
            "{} attempts",
            conflicts(waiting)
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(t.join().unwrap().unwrap_err(), fencing::Error::Timeout);
        holder.release("c", held.token).unwrap();
    };
    let memory = Store::open("memory:").unwrap();
    check(&memory, &memory);
    if let Some(url) = postgres_test_url() {
        let (holder, waiting, _) = pg_pair(&url, "cancellable");
        check(&holder, &waiting);
    }
}

/// A place in one scope's line is that scope's: an acquire of another
/// scope that names it (any role allowed to wait can name any number) takes
/// it from nobody's line.
#[test]
fn postgres_a_waiting_acquire_never_takes_another_scopes_place() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let (holder, _, schema) = pg_pair(&base, "place");
    holder.acquire("held", "holder", TTL).unwrap();
    let mut c = base
        .parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap();
    let waiting = |c: &mut postgres::Client| -> i64 {
        c.query_one(
            &format!("SELECT count(*) FROM {schema}.waiting WHERE scope = 'held'"),
            &[],
        )
        .unwrap()
        .get(0)
    };
    let place: i64 = c
        .query_one(
            &format!("SELECT place FROM {schema}.acquire_waiting('held', 'w', 30000, true, NULL)"),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(waiting(&mut c), 1);
    let token: i64 = c
        .query_one(
            &format!("SELECT token FROM {schema}.acquire_waiting('free', 'x', 30000, true, $1)"),
            &[&place],
        )
        .unwrap()
        .get(0);
    assert!(token > 0, "the free scope is acquired");
    assert_eq!(waiting(&mut c), 1, "the held scope's waiter lost its place");
    holder.close();
}

/// A place its waiter left behind (killed: the row stays) has run out by
/// the scope's time, the time every lease of the scope is judged by, which
/// never goes back (docs/semantics.md, "Leases"): a handle whose clock is
/// behind it (another process's clock, or this one's stepped back) must not
/// see the place live again and queue behind it while the lease is free.
/// And such places are cleared when the next waiter queues, so a scope's
/// dead places do not pile up in the file.
#[test]
fn sqlite_a_dead_waiters_place_never_comes_back_with_a_clock_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let url = format!("{}?clock=manual", sqlite_url(&path));
    // Where both manual clocks start, give or take the opens.
    let start_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let ahead = Store::open(&url).unwrap();
    let behind = Store::open(&url).unwrap();
    ahead.advance_clock(Duration::from_secs(1200)).unwrap();
    // The scope's time is now 20 minutes past `behind`'s clock.
    let lease = ahead.acquire("k", "h", TTL).unwrap();
    assert!(ahead.release("k", lease.token).unwrap());
    let file = rusqlite::Connection::open(&path).unwrap();
    // Left by a waiter killed ten minutes before the scope's time.
    file.execute(
        "INSERT INTO fencing_waiters (scope, until_ms) VALUES ('k', ?1)",
        [start_ms + 600_000],
    )
    .unwrap();
    let got = behind.acquire_wait("k", "w", TTL, Duration::from_secs(2));
    assert_eq!(got.unwrap().holder, "w", "queued behind a dead place");

    // The next waiter that queues clears the scope's dead places.
    let places = |file: &rusqlite::Connection| -> i64 {
        file.query_row(
            "SELECT count(*) FROM fencing_waiters WHERE scope = 'k'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(places(&file), 1);
    let waited = behind.acquire_wait("k", "x", TTL, Duration::from_millis(100));
    assert!(matches!(waited, Err(fencing::Error::Timeout)), "{waited:?}");
    assert_eq!(places(&file), 0, "a dead place outlived the next waiter");
}

/// PostgreSQL: a release tells the earliest place that is live by the
/// scope's time, as the waiters' attempts judge places. A server whose
/// clock is behind the scope's time (stepped back, or a promoted standby
/// behind the old primary) must not name a place that ran out by it (a
/// killed waiter's), leaving the live waiter behind it asleep while the
/// lease is free.
#[test]
fn postgres_a_release_wakes_the_live_waiter_behind_a_dead_place() {
    let Some(base) = postgres_test_url() else {
        return;
    };
    let schema = fresh_schema("deadplace");
    let url = format!("{base}?schema={schema}&clock=manual");
    let holder = Store::open(&url).unwrap();
    let waiter = Store::open(&url).unwrap();
    let mut sql = postgres::Client::connect(&base, postgres::NoTls).unwrap();
    // Place 1 is the dead one's, below: the live waiter takes 2.
    let taken: i64 = sql
        .query_one(
            &format!("SELECT nextval('{schema}.waiting_place_seq')"),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(taken, 1);
    holder.next_token("k").unwrap();
    // The scope's time 20 minutes past the server's clock.
    let clock: i64 = sql
        .query_one(&format!("SELECT {schema}.now_ms()"), &[])
        .unwrap()
        .get(0);
    sql.execute(
        &format!("UPDATE {schema}.scopes SET seen_ms = $1 WHERE scope = 'k'"),
        &[&(clock + 1_200_000)],
    )
    .unwrap();
    let lease = holder.acquire("k", "h", TTL).unwrap();
    let before = conflicts(&waiter);
    let queued = waiter.clone();
    let w = std::thread::spawn(move || {
        let lease = queued.acquire_wait("k", "w", TTL, TIMEOUT);
        (lease, Instant::now())
    });
    let start = Instant::now();
    while conflicts(&waiter) == before && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(conflicts(&waiter) > before, "the waiter never asked");
    // Its handle learns its place (2) as its attempt returns: else any
    // release would wake it.
    std::thread::sleep(Duration::from_millis(300));
    // A waiter killed ten minutes before the scope's time left place 1.
    sql.execute(
        &format!("INSERT INTO {schema}.waiting (place, scope, until_ms) VALUES (1, 'k', $1)"),
        &[&(clock + 600_000)],
    )
    .unwrap();
    assert!(holder.release("k", lease.token).unwrap());
    let released = Instant::now();
    let (got, at) = w.join().unwrap();
    assert_eq!(got.unwrap().holder, "w");
    // Woken, it takes the lease at once; not woken, it sleeps half its
    // place's life (60 s) or until its timeout, whichever is first, and
    // takes it then.
    let late = at.duration_since(released);
    assert!(
        late < TIMEOUT / 2,
        "the live waiter was not woken ({late:?})"
    );
}

/// A manual clock pushed to the end of time (`advance_clock` saturates at
/// the largest millisecond count): a waiter's place there saturates too,
/// instead of overflowing under the scope's lock (a panic that poisoned a
/// memory store's shard for every scope in it).
#[test]
fn a_waiter_at_the_end_of_a_manual_clock_neither_panics_nor_poisons() {
    let dir = tempfile::tempdir().unwrap();
    let mut urls = vec![
        "memory:?clock=manual".to_owned(),
        format!("{}?clock=manual", sqlite_url(&dir.path().join("end.db"))),
    ];
    if let Some(base) = postgres_test_url() {
        urls.push(format!(
            "{base}?schema={}&clock=manual",
            fresh_schema("end")
        ));
    }
    for url in urls {
        let store = Store::open(&url).unwrap();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        store
            .advance_clock(Duration::from_millis(u64::MAX - now_ms - 10_000))
            .unwrap();
        let held = store.acquire("k", "h", TTL).unwrap();
        assert!(held.expires_at > std::time::SystemTime::now(), "{url}");
        let waited = store.acquire_wait("k", "w", TTL, Duration::from_millis(50));
        assert!(
            matches!(waited, Err(fencing::Error::Timeout)),
            "{url}: {waited:?}"
        );
        assert_eq!(
            store.status("k").unwrap().lease.unwrap().holder,
            "h",
            "{url}"
        );
        assert!(store.next_token("other").is_ok(), "{url}");
    }
}
