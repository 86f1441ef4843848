//! Logs (docs/operations.md, "Logs"): what the core tells a `tracing`
//! subscriber. One process-wide capturing subscriber, since the keep-alive
//! logs from its own threads; each test looks only at its own scope (or
//! store). Some need `FENCING_TEST_PG_URL`.

mod support;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use fencing::{Error, Fence, Store};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

#[derive(Clone, Debug)]
struct Captured {
    level: Level,
    target: String,
    fields: BTreeMap<String, String>,
    /// The span the event was emitted in, if any.
    span: Option<Span>,
}

impl Captured {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

#[derive(Clone, Debug)]
struct Span {
    name: String,
    level: Level,
    target: String,
    fields: BTreeMap<String, String>,
}

static EVENTS: Mutex<Vec<Captured>> = Mutex::new(Vec::new());
static SPANS: Mutex<BTreeMap<u64, Span>> = Mutex::new(BTreeMap::new());

thread_local! {
    /// The spans entered on this thread, innermost last.
    static ENTERED: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

struct Capture;

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut fields = BTreeMap::new();
        span.record(&mut Fields(&mut fields));
        let meta = span.metadata();
        SPANS.lock().unwrap().insert(
            id,
            Span {
                name: meta.name().to_owned(),
                level: *meta.level(),
                target: meta.target().to_owned(),
                fields,
            },
        );
        Id::from_u64(id)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let meta = event.metadata();
        let span = ENTERED
            .with(|e| e.borrow().last().copied())
            .and_then(|id| SPANS.lock().unwrap().get(&id).cloned());
        EVENTS.lock().unwrap().push(Captured {
            level: *meta.level(),
            target: meta.target().to_owned(),
            fields,
            span,
        });
    }
    fn enter(&self, id: &Id) {
        ENTERED.with(|e| e.borrow_mut().push(id.into_u64()));
    }
    fn exit(&self, id: &Id) {
        ENTERED.with(|e| {
            let mut e = e.borrow_mut();
            if let Some(at) = e.iter().rposition(|x| *x == id.into_u64()) {
                e.remove(at);
            }
        });
    }
}

fn capture() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| tracing::subscriber::set_global_default(Capture).unwrap());
}

/// The events whose `scope` field is `scope`.
fn events_of(scope: &str) -> Vec<Captured> {
    events_with("scope", scope)
}

/// The events whose field `name` is `value`.
fn events_with(name: &str, value: &str) -> Vec<Captured> {
    EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.field(name) == Some(value))
        .cloned()
        .collect()
}

const TTL: Duration = Duration::from_secs(30);

#[test]
fn a_stale_put_is_one_warning_naming_scope_and_tokens_never_the_value() {
    capture();
    let store = Store::open("memory:").unwrap();
    let scope = "log-stale";
    let old = store.acquire(scope, "worker-a", TTL).unwrap();
    store.release(scope, old.token).unwrap();
    let new = store.acquire(scope, "worker-b", TTL).unwrap();
    store
        .put(scope, "k", b"fresh", &Fence::new(new.token))
        .unwrap();

    let secret = b"value-bytes-never-logged";
    let stale = Fence::new(old.token).with_holder("worker-a");
    let err = store.put(scope, "k", secret, &stale).unwrap_err();
    assert!(matches!(err, Error::StaleToken { .. }), "{err:?}");

    let warnings: Vec<_> = events_of(scope)
        .into_iter()
        .filter(|e| e.level <= Level::INFO)
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    let w = &warnings[0];
    assert_eq!((w.level, w.target.as_str()), (Level::WARN, "fencing"));
    assert_eq!(w.field("code"), Some("STALE_TOKEN"));
    assert_eq!(w.field("presented"), Some(&*old.token.get().to_string()));
    assert_eq!(w.field("current"), Some(&*new.token.get().to_string()));
    assert_eq!(w.field("holder"), Some("worker-a"));
    assert_eq!(w.field("key"), Some("k"));
    let all = format!("{w:?}");
    assert!(!all.contains("value-bytes"), "a value was logged: {all}");
    assert!(!all.contains("fresh"), "a value was logged: {all}");

    // Emitted inside the call's span, which names the operation and scope.
    let span = w
        .span
        .as_ref()
        .expect("the warning is inside the put's span");
    assert_eq!(
        (span.name.as_str(), span.target.as_str()),
        ("call", "fencing")
    );
    assert_eq!(span.level, Level::TRACE, "quiet at DEBUG");
    assert_eq!(span.fields.get("op").map(String::as_str), Some("put"));
    assert_eq!(span.fields.get("scope").map(String::as_str), Some(scope));
    assert_eq!(
        span.fields.get("otel.name").map(String::as_str),
        Some("put")
    );
}

#[test]
fn every_call_runs_in_a_span_named_by_its_operation() {
    capture();
    let store = Store::open("memory:").unwrap();
    let scope = "log-spans";
    let lease = store.acquire(scope, "worker", TTL).unwrap();
    store.renew(scope, lease.token, TTL).unwrap();
    store.release(scope, lease.token).unwrap();
    // Each DEBUG event of a call is inside that call's span.
    let ops: Vec<(String, String)> = events_of(scope)
        .iter()
        .map(|e| {
            let span = e.span.as_ref().expect("inside a span");
            (
                e.field("message").unwrap_or_default().to_owned(),
                span.fields["op"].clone(),
            )
        })
        .collect();
    let want = [
        ("lease acquired", "acquire"),
        ("lease renewed", "renew"),
        ("lease release", "release"),
    ];
    for (message, op) in want {
        assert!(
            ops.contains(&(message.to_owned(), op.to_owned())),
            "{message} in {op}: {ops:?}"
        );
    }
    // A call with no scope (the record of every scope) has no scope field.
    store.events(None, 1).unwrap();
    let spans = SPANS.lock().unwrap();
    assert!(spans
        .values()
        .any(|s| s.fields.get("op").map(String::as_str) == Some("events")
            && !s.fields.contains_key("scope")));
}

#[test]
fn normal_operation_is_quiet_at_info() {
    capture();
    let store = Store::open("memory:").unwrap();
    let scope = "log-quiet";
    let lease = store.acquire(scope, "worker", TTL).unwrap();
    let fence = Fence::new(lease.token).with_holder("worker");
    store.put(scope, "k", b"v", &fence).unwrap();
    store.get(scope, "k", Some(&fence)).unwrap();
    store.renew(scope, lease.token, TTL).unwrap();
    assert!(store.release(scope, lease.token).unwrap());

    let events = events_of(scope);
    let loud: Vec<_> = events.iter().filter(|e| e.level <= Level::INFO).collect();
    assert!(loud.is_empty(), "{loud:#?}");
    // The capture works: the same operations are there at DEBUG.
    let messages: Vec<_> = events.iter().filter_map(|e| e.field("message")).collect();
    for expected in ["lease acquired", "lease renewed", "lease release"] {
        assert!(messages.contains(&expected), "{messages:?}");
    }
    assert!(events.iter().all(|e| e.target == "fencing"));
}

#[test]
fn a_keep_alive_losing_its_lease_warns() {
    capture();
    let store = Store::open("memory:?clock=manual").unwrap();
    let scope = "log-lost";
    let guard = store
        .lease(scope, "worker-a", Duration::from_millis(300))
        .unwrap();
    let token = guard.token();
    // The lease expires on the store's clock and another holder takes it:
    // the keep-alive's next renewal is refused.
    store.advance_clock(Duration::from_secs(10)).unwrap();
    store.acquire(scope, "worker-b", TTL).unwrap();

    let deadline = Instant::now() + Duration::from_secs(10);
    let warning = loop {
        let found = events_of(scope)
            .into_iter()
            .find(|e| e.level == Level::WARN && e.field("reason").is_some());
        if let Some(w) = found {
            break w;
        }
        assert!(
            Instant::now() < deadline,
            "no warning: {:#?}",
            events_of(scope)
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(guard.is_lost());
    assert_eq!(warning.target, "fencing");
    assert_eq!(warning.field("reason"), Some("LEASE_LOST"));
    assert_eq!(warning.field("token"), Some(&*token.get().to_string()));
    assert_eq!(warning.field("holder"), Some("worker-a"));
    drop(guard);
    // Logged once, not again when the guard ends.
    let lost = events_of(scope)
        .into_iter()
        .filter(|e| e.field("reason").is_some())
        .count();
    assert_eq!(lost, 1);
}

#[test]
fn a_sqlite_file_found_restored_warns_once_with_its_step() {
    capture();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let url = support::sqlite_url(&path);
    let scope = "log-restored";
    let backup = dir.path().join("backup.db");
    {
        let store = Store::open(&url).unwrap();
        store.next_token(scope).unwrap();
        store.close();
    }
    // A copy of the closed file (checkpointed, no WAL), then more history.
    std::fs::copy(&path, &backup).unwrap();
    {
        let store = Store::open(&url).unwrap();
        store.next_token(scope).unwrap();
        store.close();
    }
    std::fs::copy(&backup, &path).unwrap();

    let store = Store::open(&url).unwrap();
    let token = store.next_token(scope).unwrap();
    store.next_token(scope).unwrap();
    let location = store.location().to_owned();
    let steps = events_with("store", &path.display().to_string());
    assert_eq!(steps.len(), 1, "one warning, for one step: {steps:#?}");
    let w = &steps[0];
    assert_eq!((w.level, w.target.as_str()), (Level::WARN, "fencing"));
    let base: u64 = w.field("base").unwrap().parse().unwrap();
    assert_eq!(
        token.get(),
        base + 1,
        "the step the warning names ({location})"
    );
    assert!(w.field("message").unwrap().contains("failover step taken"));
    let span = w.span.as_ref().expect("inside the call that stepped");
    assert_eq!(span.fields["op"], "next_token");
}

/// A PostgreSQL store of its own schema, and a client to the same server.
fn postgres_store(tag: &str, extra: &str) -> Option<(Store, String, postgres::Client)> {
    let base = support::postgres_test_url()?;
    let schema = support::fresh_schema(tag);
    let store = Store::open(&format!("{base}?schema={schema}{extra}")).unwrap();
    let client = base
        .parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap();
    Some((store, schema, client))
}

#[test]
fn a_lost_postgres_connection_warns_and_its_reconnect_is_info() {
    capture();
    let app = format!("fencing_log_{}", std::process::id());
    let Some((store, _, mut admin)) =
        postgres_store("logreconnect", &format!("&application_name={app}"))
    else {
        return;
    };
    let scope = "log-reconnect";
    store.next_token(scope).unwrap();
    let killed = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .unwrap()
        .get::<_, i64>(0);
    assert!(killed >= 1, "the store's connection was not found");

    // The first call after the kill meets the dead connection; one of the
    // next ones connects again (a call may be retried by the caller).
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        outcomes.push(store.next_token(scope).map(|t| t.get()));
    }
    assert!(outcomes.last().unwrap().is_ok(), "{outcomes:?}");
    let server_events: Vec<_> = EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|e| {
            e.span
                .as_ref()
                .and_then(|s| s.fields.get("scope"))
                .map(String::as_str)
                == Some(scope)
        })
        .cloned()
        .collect();
    let lost = server_events.iter().find(|e| {
        e.level == Level::WARN
            && e.field("message")
                .is_some_and(|m| m.contains("connection lost"))
    });
    let back = server_events
        .iter()
        .find(|e| e.level == Level::INFO && e.field("message") == Some("postgres: reconnected"));
    let lost =
        lost.unwrap_or_else(|| panic!("no WARN for the lost connection: {server_events:#?}"));
    let back = back.unwrap_or_else(|| panic!("no INFO for the reconnect: {server_events:#?}"));
    for e in [lost, back] {
        let server = e.field("server").unwrap();
        assert!(
            server.contains("127.0.0.1") || server.contains('/'),
            "{server}"
        );
        assert!(!format!("{e:?}").contains("password"), "{e:?}");
    }
    store.close();
}

#[test]
fn a_postgres_automatic_failover_step_is_a_warning() {
    capture();
    let Some((store, schema, mut admin)) = postgres_store("logstep", "") else {
        return;
    };
    let scope = "log-pg-step";
    store.next_token(scope).unwrap();
    // As a standby promoted from the recorded timeline (core/tests/promotion.rs).
    admin
        .batch_execute(&format!(
            "UPDATE {schema}.history SET timeline = timeline - 1"
        ))
        .unwrap();
    let token = store.next_token(scope).unwrap();
    store.next_token(scope).unwrap();

    let steps = events_with("schema", &schema);
    assert_eq!(
        steps.len(),
        1,
        "once, not again on the next call: {steps:#?}"
    );
    let w = &steps[0];
    assert_eq!((w.level, w.target.as_str()), (Level::WARN, "fencing"));
    assert_eq!(w.field("steps"), Some("2"));
    let base: u64 = w.field("base").unwrap().parse().unwrap();
    assert_eq!(token.get(), base + 1);
    assert!(
        w.field("message").unwrap().contains("automatic failover"),
        "{w:?}"
    );
    store.close();
}

#[test]
fn a_stale_worker_retrying_in_a_loop_warns_once_a_second_and_counts_the_rest() {
    capture();
    let store = Store::open("memory:?clock=manual").unwrap();
    let scope = "log-flood";
    let old = store.acquire(scope, "worker-a", TTL).unwrap();
    store.release(scope, old.token).unwrap();
    store.acquire(scope, "worker-b", TTL).unwrap();
    let stale = Fence::new(old.token).with_holder("worker-a");
    let put_stale = || {
        let err = store.put(scope, "k", b"v", &stale).unwrap_err();
        assert!(matches!(err, Error::StaleToken { .. }), "{err:?}");
    };
    for _ in 0..50 {
        put_stale();
    }
    let rejected = || -> Vec<Captured> {
        events_of(scope)
            .into_iter()
            .filter(|e| e.field("message") == Some("fenced operation rejected"))
            .collect()
    };
    let warnings = |all: &[Captured]| -> Vec<Captured> {
        all.iter()
            .filter(|e| e.level == Level::WARN)
            .cloned()
            .collect()
    };
    let all = rejected();
    assert_eq!(all.len(), 50, "every rejection is logged, at some level");
    let warned = warnings(&all);
    assert_eq!(warned.len(), 1, "{warned:#?}");
    assert_eq!(warned[0].field("suppressed"), Some("0"));
    assert!(all.iter().filter(|e| e.level == Level::DEBUG).count() == 49);

    // A second later (the store's clock), the next one warns again and
    // counts the ones only logged at DEBUG.
    store.advance_clock(Duration::from_millis(1_001)).unwrap();
    put_stale();
    let warned = warnings(&rejected());
    assert_eq!(warned.len(), 2, "{warned:#?}");
    assert_eq!(warned[1].field("suppressed"), Some("49"));
}
