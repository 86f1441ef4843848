//! Logs (docs/operations.md, "Logs"): what the core tells a `tracing`
//! subscriber. One process-wide capturing subscriber, since the keep-alive
//! logs from its own threads; each test looks only at its own scope.

use std::collections::BTreeMap;
use std::fmt;
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
}

impl Captured {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

static EVENTS: Mutex<Vec<Captured>> = Mutex::new(Vec::new());

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
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let meta = event.metadata();
        EVENTS.lock().unwrap().push(Captured {
            level: *meta.level(),
            target: meta.target().to_owned(),
            fields,
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn capture() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| tracing::subscriber::set_global_default(Capture).unwrap());
}

/// The events whose `scope` field is `scope`.
fn events_of(scope: &str) -> Vec<Captured> {
    EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.field("scope") == Some(scope))
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
