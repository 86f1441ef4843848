//! The `metrics` feature (docs/operations.md, "Metrics"): a store's
//! counters and call durations reach the recorder the application
//! installed, with the names and labels of the Prometheus text.
//! `cargo nextest run -p fencing --features metrics --test metrics_facade`.
#![cfg(feature = "metrics")]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};

use fencing::{ErrorCode, Fence, Store};

/// Every series a store registered, by name and labels.
#[derive(Default)]
struct Seen {
    counters: Mutex<BTreeMap<String, Arc<AtomicU64>>>,
    gauges: Mutex<BTreeMap<String, Arc<AtomicU64>>>,
    histograms: Mutex<BTreeMap<String, Arc<Samples>>>,
}

#[derive(Default)]
struct Samples(Mutex<Vec<f64>>);

impl HistogramFn for Samples {
    fn record(&self, value: f64) {
        self.0.lock().unwrap().push(value);
    }
}

fn series(key: &Key) -> String {
    let labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={:?}", l.key(), l.value()))
        .collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Recorder for Seen {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let mut all = self.counters.lock().unwrap();
        Counter::from_arc(all.entry(series(key)).or_default().clone())
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let mut all = self.gauges.lock().unwrap();
        Gauge::from_arc(all.entry(series(key)).or_default().clone())
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let mut all = self.histograms.lock().unwrap();
        Histogram::from_arc(all.entry(series(key)).or_default().clone())
    }
}

impl Seen {
    fn counter(&self, series: &str) -> u64 {
        let all = self.counters.lock().unwrap();
        let c = all
            .get(series)
            .unwrap_or_else(|| panic!("{series} in {:?}", all.keys()));
        c.load(Ordering::Relaxed)
    }

    fn calls(&self, op: &str) -> Vec<f64> {
        let name = format!("fencing_call_duration_seconds{{store=\"memory:\",op=\"{op}\"}}");
        let samples = self.histograms.lock().unwrap()[&name].clone();
        let recorded = samples.0.lock().unwrap().clone();
        recorded
    }
}

#[test]
fn a_stores_counters_and_call_durations_reach_the_installed_recorder() {
    let seen = Arc::new(Seen::default());
    // Registered at open: the handles keep reporting to this recorder from
    // any thread afterwards.
    let store = metrics::with_local_recorder(&*seen, || Store::open("memory:").unwrap());
    let lease = store.acquire("s", "a", Duration::from_secs(30)).unwrap();
    store.put("s", "k", b"v", &Fence::from(&lease)).unwrap();
    std::thread::scope(|t| {
        t.spawn(|| store.put("s", "k", b"w", &Fence::from(&lease)).unwrap());
    });
    store.acquire("t", "b", Duration::from_secs(30)).unwrap();
    let newer = store.next_token("s").unwrap();
    store.put("s", "k", b"x", &Fence::new(newer)).unwrap();
    let stale = store
        .put("s", "k", b"late", &Fence::from(&lease))
        .unwrap_err();
    assert_eq!(stale.code(), ErrorCode::StaleToken);

    let label = "{store=\"memory:\"}";
    assert_eq!(
        seen.counter(&format!("fencing_tokens_issued_total{label}")),
        3
    );
    assert_eq!(
        seen.counter(&format!("fencing_leases_acquired_total{label}")),
        2
    );
    assert_eq!(
        seen.counter(&format!("fencing_writes_accepted_total{label}")),
        3
    );
    assert_eq!(
        seen.counter(&format!("fencing_stale_rejections_total{label}")),
        1
    );
    // The same numbers as the handle's own snapshot.
    let snapshot = store.metrics();
    assert_eq!(snapshot.writes_accepted, 3);
    let puts = seen.calls("put");
    assert_eq!(puts.len(), 4, "{puts:?}");
    assert!(
        puts.iter().all(|s| (0.0..10.0).contains(s)),
        "seconds: {puts:?}"
    );
    assert_eq!(seen.calls("acquire").len(), 2);
    assert!(seen.calls("retire").is_empty());
    // Every fixed series was registered, called or not.
    let gauges = seen.gauges.lock().unwrap();
    assert!(gauges.contains_key(&format!("fencing_longest_pause_seconds{label}")));
}

#[test]
fn without_a_recorder_nothing_is_sent_and_nothing_fails() {
    let store = Store::open("memory:").unwrap();
    let lease = store.acquire("s", "a", Duration::from_secs(30)).unwrap();
    store.put("s", "k", b"v", &Fence::from(&lease)).unwrap();
    assert_eq!(store.metrics().writes_accepted, 1);
}
