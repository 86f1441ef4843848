//! Per-handle counters, call-duration histograms, the last rejections and
//! pause indicators. Never any values or payloads; no per-scope labels
//! (scopes are unbounded): the only labels are the store's location and,
//! for call durations, the operation, a fixed set.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use crate::error::ErrorCode;
use crate::token::Token;

/// How many rejections a handle remembers.
pub const REJECTION_HISTORY: usize = 64;

const STRIPES: usize = 8;

#[repr(align(128))]
#[derive(Default)]
struct Padded(AtomicU64);

/// A counter that threads bump without sharing a cache line, so that two
/// threads writing to different scopes do not contend on the metrics.
#[derive(Default)]
struct Counter([Padded; STRIPES]);

fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local!(static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES);
    STRIPE.with(|s| *s)
}

impl Counter {
    fn add(&self, n: u64) {
        self.0[stripe()].0.fetch_add(n, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.iter().map(|p| p.0.load(Ordering::Relaxed)).sum()
    }
}

/// One rejected fenced operation, as an operator needs to see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// `STALE_TOKEN` or `SEQUENCE_OUT_OF_ORDER`.
    pub code: ErrorCode,
    pub scope: String,
    /// The key written, when the operation named exactly one.
    pub key: Option<String>,
    pub presented: Token,
    /// The scope's fence at the time.
    pub current: u64,
    pub seq: Option<u64>,
    /// The presenting holder, when the fence named one.
    pub holder: Option<String>,
    pub at: SystemTime,
}

macro_rules! counters {
    ($($name:ident: $help:literal,)*) => {
        #[derive(Default)]
        struct Counters { $($name: Counter,)* }

        /// A point-in-time copy of one handle's metrics.
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct MetricsSnapshot {
            $(#[doc = $help] pub $name: u64,)*
            /// Keep-alive renewals that ran more than a third of the TTL late.
            pub pauses_detected: u64,
            /// The longest such lateness, in milliseconds (the Prometheus
            /// text gives it in seconds: `fencing_longest_pause_seconds`).
            pub longest_pause_ms: u64,
            /// How long the Store API operations took: one entry per
            /// [`CALL_OPS`] name that was called, in that order (an
            /// operation never called is left out, so that a snapshot kept
            /// by a closed handle stays small; the text shows it as zeros).
            pub calls: Vec<CallDurations>,
            /// The most recent rejections, oldest first.
            pub rejections: Vec<Rejection>,
        }

        impl MetricsSnapshot {
            /// Every numeric metric as `(name, help, value)`, in a fixed order.
            pub fn counters(&self) -> Vec<(&'static str, &'static str, u64)> {
                vec![
                    $((stringify!($name), $help, self.$name),)*
                    ("pauses_detected", "Keep-alive renewals late by more than a third of the TTL", self.pauses_detected),
                    ("longest_pause_ms", "Longest keep-alive lateness seen, in milliseconds", self.longest_pause_ms),
                ]
            }
        }

        /// The `metrics` facade's handles on one store's metrics (feature
        /// `metrics`): the names, units and labels of [`prometheus_text`].
        #[cfg(feature = "metrics")]
        struct Exported {
            $($name: ::metrics::Counter,)*
            pauses_detected: ::metrics::Counter,
            longest_pause: ::metrics::Gauge,
            /// One per [`CALL_OPS`] name, in that order.
            calls: Vec<::metrics::Histogram>,
        }

        #[cfg(feature = "metrics")]
        impl Exported {
            /// Registers with the recorder installed now (so install it
            /// before opening stores).
            fn register(location: &str) -> Exported {
                let store = location.to_owned();
                Exported {
                    $($name: ::metrics::counter!(
                        concat!("fencing_", stringify!($name), "_total"),
                        "store" => store.clone()
                    ),)*
                    pauses_detected: ::metrics::counter!(
                        "fencing_pauses_detected_total", "store" => store.clone()
                    ),
                    longest_pause: ::metrics::gauge!(
                        "fencing_longest_pause_seconds", "store" => store.clone()
                    ),
                    calls: CALL_OPS
                        .iter()
                        .map(|&op| ::metrics::histogram!(
                            "fencing_call_duration_seconds", "store" => store.clone(), "op" => op
                        ))
                        .collect(),
                }
            }
        }

        impl Metrics {
            pub fn snapshot(&self) -> MetricsSnapshot {
                MetricsSnapshot {
                    $($name: self.counters.$name.get(),)*
                    pauses_detected: self.pauses_detected.load(Ordering::Relaxed),
                    longest_pause_ms: self.longest_pause_ms.load(Ordering::Relaxed),
                    calls: self.calls.snapshot(),
                    rejections: self.rejections.lock().map(|r| r.iter().cloned().collect()).unwrap_or_default(),
                }
            }
        }
    };
}

counters! {
    tokens_issued: "Tokens issued by next_token and acquire",
    leases_acquired: "Leases acquired",
    acquire_conflicts: "Acquisitions refused because a lease was held",
    renewals: "Leases renewed",
    renewal_failures: "Renewals that failed",
    releases: "Leases released early",
    writes_accepted: "Fenced writes accepted (a batch counts once)",
    stale_rejections: "Operations rejected with STALE_TOKEN",
    sequence_rejections: "Operations rejected with SEQUENCE_OUT_OF_ORDER",
    version_conflicts: "Writes rejected with VERSION_MISMATCH",
}

/// The Store API operations whose duration is recorded, as the `op` label
/// names them: a fixed set, so the label stays bounded. Named by what the
/// call does, not by the entry point: `Store::execute` of a put is a `put`
/// (the faces write through `execute`), and `fence_of` is a `status`.
pub const CALL_OPS: [&str; 15] = [
    "next_token",
    "advance_counter",
    "acquire",
    "acquire_wait",
    "renew",
    "release",
    "put",
    "delete",
    "apply",
    "claim",
    "get",
    "list",
    "status",
    "retire",
    "events",
];

/// An operation of [`CALL_OPS`], by its index there.
#[derive(Clone, Copy, Debug)]
#[repr(usize)]
pub(crate) enum Call {
    NextToken,
    AdvanceCounter,
    Acquire,
    AcquireWait,
    Renew,
    Release,
    Put,
    Delete,
    Apply,
    Claim,
    Get,
    List,
    Status,
    Retire,
    Events,
}

impl Call {
    /// How a single operation is timed (`execute`): as a put or a delete.
    pub fn of(op: &crate::types::OpRef<'_>) -> Call {
        if op.value.is_some() {
            Call::Put
        } else {
            Call::Delete
        }
    }
}

// One Call per CALL_OPS name (their order is checked by a test).
const _: () = assert!(Call::Events as usize + 1 == CALL_OPS.len());

/// Upper bounds of the call-duration buckets, in nanoseconds: 10 µs to
/// 10 s in 1-2.5-5 steps (a memory call takes microseconds, a PostgreSQL
/// call milliseconds, a waiting acquire up to its timeout). Beyond the last
/// is the `+Inf` bucket.
pub const CALL_BUCKETS_NS: [u64; 19] = [
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// Per bucket (and `+Inf`) one count, then the sum of durations in ns.
const SLOTS: usize = CALL_BUCKETS_NS.len() + 2;
const SUM: usize = SLOTS - 1;

/// One operation's call durations, as Prometheus histograms count them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallDurations {
    /// A [`CALL_OPS`] name.
    pub op: &'static str,
    /// Calls that took at most each [`CALL_BUCKETS_NS`] bound (cumulative).
    pub buckets: [u64; CALL_BUCKETS_NS.len()],
    /// Every call, the `+Inf` bucket.
    pub count: u64,
    /// Their durations added up, in nanoseconds.
    pub sum_ns: u64,
}

/// One thread stripe of every operation's slots, on its own cache lines,
/// as with [`Counter`]: threads timing calls do not share a line.
#[repr(align(128))]
#[derive(Default)]
struct CallStripe([[AtomicU64; SLOTS]; CALL_OPS.len()]);

/// Lock-free histograms of call durations: a call adds to one bucket and
/// to the sum of its thread's stripe; a snapshot adds the stripes up. A
/// stripe (2.5 KiB) is allocated the first time a thread of its number
/// times a call, so that a handle used by one thread carries one: the Node
/// leak test (10,000 handles opened and closed in a tight loop) grew past
/// its bound with eight per handle.
#[derive(Default)]
struct Calls([OnceLock<Box<CallStripe>>; STRIPES]);

impl Calls {
    fn record(&self, call: Call, took: Duration) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let bucket = CALL_BUCKETS_NS
            .iter()
            .position(|&bound| ns <= bound)
            .unwrap_or(CALL_BUCKETS_NS.len());
        let stripe = self.0[stripe()].get_or_init(Box::default);
        let slots = &stripe.0[call as usize];
        slots[bucket].fetch_add(1, Ordering::Relaxed);
        slots[SUM].fetch_add(ns, Ordering::Relaxed);
    }

    /// Not one atomic read: a call recorded meanwhile may be in its bucket
    /// and not yet in the sum, which a scrape tolerates.
    fn snapshot(&self) -> Vec<CallDurations> {
        CALL_OPS
            .iter()
            .enumerate()
            .filter_map(|(i, &op)| {
                let mut slots = [0u64; SLOTS];
                for stripe in self.0.iter().filter_map(OnceLock::get) {
                    for (total, slot) in slots.iter_mut().zip(&stripe.0[i]) {
                        *total = total.wrapping_add(slot.load(Ordering::Relaxed));
                    }
                }
                let mut d = CallDurations {
                    op,
                    sum_ns: slots[SUM],
                    ..CallDurations::default()
                };
                let mut running = 0u64;
                for (b, &n) in slots[..SUM].iter().enumerate() {
                    running = running.wrapping_add(n);
                    match d.buckets.get_mut(b) {
                        Some(cumulative) => *cumulative = running,
                        None => d.count = running,
                    }
                }
                (d.count > 0).then_some(d)
            })
            .collect()
    }
}

/// One Store API call while it runs: a TRACE span around it (target
/// `fencing`, fields `op` and `scope`; docs/operations.md, "Logs"), and its
/// duration recorded when dropped, whatever the call returned.
pub(crate) struct CallTimer<'a> {
    metrics: &'a Metrics,
    call: Call,
    start: Instant,
    _span: tracing::span::EnteredSpan,
}

impl CallTimer<'_> {
    /// When the call began.
    pub fn started(&self) -> Instant {
        self.start
    }
}

impl Drop for CallTimer<'_> {
    fn drop(&mut self) {
        self.metrics.record_call(self.call, self.start.elapsed());
    }
}

/// A [`CallTimer`] for a call on a task (the async store), without the
/// span. One that gave its call up to the blocking store is `forgotten`:
/// the call is timed there.
pub(crate) struct TaskTimer<'a> {
    metrics: &'a Metrics,
    call: Call,
    start: Instant,
    counts: bool,
}

impl TaskTimer<'_> {
    pub fn forget(mut self) {
        self.counts = false;
    }
}

impl Drop for TaskTimer<'_> {
    fn drop(&mut self) {
        if self.counts {
            self.metrics.record_call(self.call, self.start.elapsed());
        }
    }
}

/// A call's span (target `fencing`, fields `op` and `scope`). A span no
/// subscriber wants costs one load; `otel.name` names it by its operation
/// for OpenTelemetry. TRACE, not DEBUG: without a subscriber `tracing`
/// sends a span's creation to `log` as a record of its own, which the
/// faces' log bridges would pass on at DEBUG, once per call.
fn call_span(call: Call, scope: Option<&str>) -> tracing::Span {
    let op = CALL_OPS[call as usize];
    if span_can_reach_anyone() {
        tracing::trace_span!(target: "fencing", "call", op, scope, otel.name = op)
    } else {
        tracing::Span::none()
    }
}

#[derive(Default)]
pub(crate) struct Metrics {
    counters: Counters,
    calls: Calls,
    pauses_detected: AtomicU64,
    longest_pause_ms: AtomicU64,
    rejections: Mutex<VecDeque<Rejection>>,
    #[cfg(feature = "metrics")]
    exported: Option<Exported>,
}

/// Whether a call's span can reach anyone: a `tracing` subscriber, or,
/// with none set, `log` at TRACE (where `tracing` sends a span's records).
/// Else the span macro still builds a disabled span and offers its
/// creation, entry and exit to `log`, four calls that find no one: about
/// 10 ns of a 240 ns put from Node.
fn span_can_reach_anyone() -> bool {
    tracing::dispatcher::has_been_set() || log::max_level() >= log::LevelFilter::Trace
}

/// Adds one to a counter, and to its `metrics` facade twin (feature
/// `metrics`).
macro_rules! bump {
    ($m:expr, $name:ident) => {{
        $m.counters.$name.add(1);
        #[cfg(feature = "metrics")]
        if let Some(e) = &$m.exported {
            e.$name.increment(1);
        }
    }};
}

impl Metrics {
    /// A store's metrics; with the `metrics` feature, also sent to the
    /// `metrics` facade's recorder, labelled `store` with `location`.
    pub fn for_store(location: &str) -> Metrics {
        #[cfg(not(feature = "metrics"))]
        let _ = location;
        Metrics {
            #[cfg(feature = "metrics")]
            exported: Some(Exported::register(location)),
            ..Metrics::default()
        }
    }

    /// Times a Store API call on `scope` (`None`: every scope) until the
    /// returned guard is dropped, inside its span.
    pub fn time(&self, call: Call, scope: Option<&str>) -> CallTimer<'_> {
        CallTimer {
            metrics: self,
            call,
            start: Instant::now(),
            _span: call_span(call, scope).entered(),
        }
    }

    /// [`Metrics::time`] for a call on a task, which cannot hold an
    /// entered span across its awaits: the span is the caller's to
    /// instrument its future with.
    pub fn time_on_task(&self, call: Call, scope: Option<&str>) -> (TaskTimer<'_>, tracing::Span) {
        let timer = TaskTimer {
            metrics: self,
            call,
            start: Instant::now(),
            counts: true,
        };
        (timer, call_span(call, scope))
    }

    fn record_call(&self, call: Call, took: Duration) {
        self.calls.record(call, took);
        #[cfg(feature = "metrics")]
        if let Some(e) = &self.exported {
            e.calls[call as usize].record(took.as_secs_f64());
        }
    }

    pub fn token_issued(&self) {
        bump!(self, tokens_issued);
    }
    pub fn lease_acquired(&self) {
        bump!(self, tokens_issued);
        bump!(self, leases_acquired);
    }
    pub fn acquire_conflict(&self) {
        bump!(self, acquire_conflicts);
    }
    pub fn renewal(&self, ok: bool) {
        if ok {
            bump!(self, renewals);
        } else {
            bump!(self, renewal_failures);
        }
    }
    pub fn release(&self) {
        bump!(self, releases);
    }
    pub fn write_accepted(&self) {
        bump!(self, writes_accepted);
    }
    pub fn version_conflict(&self) {
        bump!(self, version_conflicts);
    }

    pub fn reject(&self, rejection: Rejection) {
        match rejection.code {
            ErrorCode::SequenceOutOfOrder => bump!(self, sequence_rejections),
            _ => bump!(self, stale_rejections),
        }
        if let Ok(mut history) = self.rejections.lock() {
            if history.len() == REJECTION_HISTORY {
                history.pop_front();
            }
            history.push_back(rejection);
        }
    }

    /// A keep-alive renewal ran `lateness_ms` behind its schedule.
    pub fn renewal_lateness(&self, lateness_ms: u64, ttl_ms: u64) {
        let ms = Duration::from_millis;
        if crate::defaults::is_pause(ms(lateness_ms), ms(ttl_ms)) {
            self.pauses_detected.fetch_add(1, Ordering::Relaxed);
            let longest = self
                .longest_pause_ms
                .fetch_max(lateness_ms, Ordering::Relaxed)
                .max(lateness_ms);
            #[cfg(feature = "metrics")]
            if let Some(e) = &self.exported {
                e.pauses_detected.increment(1);
                e.longest_pause.set(longest as f64 / 1e3);
            }
            #[cfg(not(feature = "metrics"))]
            let _ = longest;
        }
    }
}

/// A label value as the Prometheus text format needs it: backslash, double
/// quote and newline escaped.
fn label_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Nanoseconds as seconds, the unit Prometheus expects.
fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Prometheus text exposition format (0.0.4), names prefixed `fencing_`,
/// base units (seconds), every sample labelled `store` with `location`
/// ([`crate::Store::location`], which never holds a password) so that
/// two stores' metrics stay apart in one scrape.
pub fn prometheus_text(location: &str, snapshot: &MetricsSnapshot) -> String {
    let mut out = String::new();
    let store = format!("store=\"{}\"", label_value(location));
    for (name, help, value) in snapshot.counters() {
        if name == "longest_pause_ms" {
            let metric = "fencing_longest_pause_seconds";
            let _ = writeln!(
                out,
                "# HELP {metric} Longest keep-alive lateness seen, in seconds."
            );
            let _ = writeln!(out, "# TYPE {metric} gauge");
            let _ = writeln!(out, "{metric}{{{store}}} {}", value as f64 / 1e3);
            continue;
        }
        let metric = format!("fencing_{name}_total");
        let _ = writeln!(out, "# HELP {metric} {help}.");
        let _ = writeln!(out, "# TYPE {metric} counter");
        let _ = writeln!(out, "{metric}{{{store}}} {value}");
    }
    let metric = "fencing_call_duration_seconds";
    let _ = writeln!(
        out,
        "# HELP {metric} Time taken by Store API calls, by operation."
    );
    let _ = writeln!(out, "# TYPE {metric} histogram");
    // Every operation, called or not: a series that appears only once a call
    // was made would make rates over it start late.
    for op in CALL_OPS {
        let call = snapshot
            .calls
            .iter()
            .find(|c| c.op == op)
            .cloned()
            .unwrap_or_default();
        let labels = format!("{store},op=\"{op}\"");
        for (bound, n) in CALL_BUCKETS_NS.iter().zip(call.buckets) {
            let le = seconds(*bound);
            let _ = writeln!(out, "{metric}_bucket{{{labels},le=\"{le}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "{metric}_bucket{{{labels},le=\"+Inf\"}} {}",
            call.count
        );
        let _ = writeln!(out, "{metric}_sum{{{labels}}} {}", seconds(call.sum_ns));
        let _ = writeln!(out, "{metric}_count{{{labels}}} {}", call.count);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_64_rejections() {
        let m = Metrics::default();
        for i in 1..=70u64 {
            m.reject(Rejection {
                code: ErrorCode::StaleToken,
                scope: "s".into(),
                key: None,
                presented: Token::new(i).unwrap(),
                current: i + 1,
                seq: None,
                holder: None,
                at: SystemTime::now(),
            });
        }
        let snap = m.snapshot();
        assert_eq!(snap.stale_rejections, 70);
        assert_eq!(snap.rejections.len(), REJECTION_HISTORY);
        assert_eq!(snap.rejections[0].presented.get(), 7);
        assert_eq!(snap.rejections[63].presented.get(), 70);
    }

    /// With no `tracing` subscriber, a call's span goes to `log` at TRACE
    /// (`span_can_reach_anyone`'s second case), and nowhere below it.
    #[test]
    fn without_a_subscriber_a_calls_span_goes_to_log_at_trace_only() {
        static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
        struct Keep;
        impl log::Log for Keep {
            fn enabled(&self, _: &log::Metadata<'_>) -> bool {
                true
            }
            fn log(&self, record: &log::Record<'_>) {
                let text = record.args().to_string();
                if text.contains("span-to-log") {
                    let seen = format!("{} {text}", record.target());
                    SEEN.lock().unwrap().push(seen);
                }
            }
            fn flush(&self) {}
        }
        assert!(!tracing::dispatcher::has_been_set());
        log::set_logger(&Keep).unwrap();
        let m = Metrics::default();
        log::set_max_level(log::LevelFilter::Debug);
        drop(m.time(Call::Put, Some("span-to-log")));
        assert_eq!(*SEEN.lock().unwrap(), Vec::<String>::new());
        log::set_max_level(log::LevelFilter::Trace);
        drop(m.time(Call::Put, Some("span-to-log")));
        log::set_max_level(log::LevelFilter::Off);
        let seen = SEEN.lock().unwrap();
        assert!(
            seen.iter()
                .any(|r| r.starts_with("fencing call; ") && r.contains("op=\"put\"")),
            "{seen:?}"
        );
    }

    #[test]
    fn pause_threshold_is_a_third_of_the_ttl() {
        let m = Metrics::default();
        m.renewal_lateness(100, 300);
        assert_eq!(m.snapshot().pauses_detected, 0);
        m.renewal_lateness(101, 300);
        m.renewal_lateness(250, 300);
        let s = m.snapshot();
        assert_eq!((s.pauses_detected, s.longest_pause_ms), (2, 250));
    }

    /// One line of the Prometheus text format (0.0.4), strictly: a `# HELP`
    /// or `# TYPE` comment, or `name{label="value",...} number`, where a
    /// value escapes only backslash, double quote and newline.
    fn check_line(line: &str) -> Result<(), String> {
        let bad = |why: &str| Err(format!("{why}: {line:?}"));
        let is_name = |n: &str| {
            let mut cs = n.chars();
            cs.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
                && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        };
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (kind, name, tail) = (parts.next(), parts.next(), parts.next());
            return match (kind, name, tail) {
                (Some("HELP"), Some(n), Some(_)) if is_name(n) => Ok(()),
                (Some("TYPE"), Some(n), Some("counter" | "gauge" | "histogram")) if is_name(n) => {
                    Ok(())
                }
                _ => bad("bad comment"),
            };
        }
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        if !is_name(&line[..name_end]) {
            return bad("bad metric name");
        }
        let mut rest = &line[name_end..];
        if let Some(labels) = rest.strip_prefix('{') {
            rest = labels;
            loop {
                let eq = rest.find("=\"").ok_or("label without =\"")?;
                if !is_name(&rest[..eq]) {
                    return bad("bad label name");
                }
                rest = &rest[eq + 2..];
                let mut chars = rest.char_indices();
                let end = loop {
                    match chars.next() {
                        Some((_, '\\')) => match chars.next() {
                            Some((_, '\\' | '"' | 'n')) => {}
                            _ => return bad("bad escape"),
                        },
                        Some((i, '"')) => break i,
                        Some((_, '\n')) | None => return bad("unterminated label value"),
                        Some(_) => {}
                    }
                };
                rest = &rest[end + 1..];
                if let Some(r) = rest.strip_prefix(',') {
                    rest = r;
                } else if let Some(r) = rest.strip_prefix('}') {
                    rest = r;
                    break;
                } else {
                    return bad("label not followed by , or }");
                }
            }
        }
        let value = rest.strip_prefix(' ').ok_or("no space before the value")?;
        match value.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(()),
            _ => bad("bad value"),
        }
    }

    #[test]
    fn the_line_checker_refuses_what_prometheus_refuses() {
        for good in [
            "a_b{store=\"x\\\\y\\\"z\\n\"} 1",
            "a 0.25",
            "# TYPE a histogram",
        ] {
            assert_eq!(check_line(good), Ok(()));
        }
        for bad in [
            "a{store=\"x\"y\"} 1",
            "a{store=\"x\\q\"} 1",
            "a{store=\"x\"} ",
            "1a 1",
            "a{store=\"x\" 1",
            "# TYPE a summary-ish",
        ] {
            assert!(check_line(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn calls_are_named_in_call_ops_order() {
        let m = Metrics::default();
        drop(m.time(Call::Events, None));
        drop(m.time(Call::NextToken, Some("s")));
        let calls = m.snapshot().calls;
        // Only the operations called, in CALL_OPS order.
        let timed: Vec<(&str, u64)> = calls.iter().map(|c| (c.op, c.count)).collect();
        assert_eq!(timed, [("next_token", 1), ("events", 1)]);
        let text = prometheus_text("memory:", &m.snapshot());
        for op in CALL_OPS {
            let want = if matches!(op, "next_token" | "events") {
                1
            } else {
                0
            };
            let line = format!(
                "fencing_call_duration_seconds_count{{store=\"memory:\",op=\"{op}\"}} {want}\n"
            );
            assert!(text.contains(&line), "{line}");
        }
    }

    #[test]
    fn call_durations_fill_buckets_sum_and_count() {
        let m = Metrics::default();
        // Recorded directly, so the buckets are known without timing anything.
        for took in [5_000, 10_000, 10_001, 3_000_000, 20_000_000_000] {
            m.calls.record(Call::Put, Duration::from_nanos(took));
        }
        let snap = m.snapshot();
        let put = snap.calls.iter().find(|c| c.op == "put").unwrap();
        assert_eq!(put.count, 5);
        assert_eq!(put.sum_ns, 20_003_025_001);
        // le=10µs holds 5µs and exactly 10µs; le=25µs adds 10.001µs; the 3 ms
        // call lands in le=5ms; 20 s is only in +Inf.
        assert_eq!(put.buckets[0], 2);
        assert_eq!(put.buckets[1], 3);
        assert_eq!(put.buckets[7], 3);
        assert_eq!(put.buckets[8], 4);
        assert_eq!(put.buckets[18], 4);
        let text = prometheus_text("memory:", &snap);
        let put_line = |tail: &str| format!("fencing_call_duration_seconds{tail} ");
        let lines: Vec<&str> = text.lines().collect();
        for (series, value) in [
            ("_bucket{store=\"memory:\",op=\"put\",le=\"0.00001\"}", "2"),
            ("_bucket{store=\"memory:\",op=\"put\",le=\"0.005\"}", "4"),
            ("_bucket{store=\"memory:\",op=\"put\",le=\"10\"}", "4"),
            ("_bucket{store=\"memory:\",op=\"put\",le=\"+Inf\"}", "5"),
            ("_sum{store=\"memory:\",op=\"put\"}", "20.003025001"),
            ("_count{store=\"memory:\",op=\"put\"}", "5"),
            ("_count{store=\"memory:\",op=\"get\"}", "0"),
        ] {
            let want = format!("{}{value}", put_line(series));
            assert!(lines.contains(&want.as_str()), "{want} not in\n{text}");
        }
        assert_eq!(
            text.matches("# TYPE fencing_call_duration_seconds histogram\n")
                .count(),
            1
        );
        for line in text.lines() {
            assert_eq!(check_line(line), Ok(()));
        }
    }

    #[test]
    fn calls_from_many_threads_add_up() {
        let m = Metrics::default();
        std::thread::scope(|s| {
            for _ in 0..2 * STRIPES {
                s.spawn(|| {
                    for _ in 0..10 {
                        m.calls.record(Call::Get, Duration::from_micros(1));
                    }
                });
            }
        });
        let snap = m.snapshot();
        let get = snap.calls.iter().find(|c| c.op == "get").unwrap();
        let n = 2 * STRIPES as u64 * 10;
        assert_eq!((get.count, get.buckets[0], get.sum_ns), (n, n, n * 1000));
    }

    #[test]
    fn the_store_label_is_escaped() {
        let text = prometheus_text("sqlite:/tmp/a\"b\\c\nd", &Metrics::default().snapshot());
        assert!(text
            .contains("fencing_writes_accepted_total{store=\"sqlite:/tmp/a\\\"b\\\\c\\nd\"} 0\n"));
        for line in text.lines() {
            assert_eq!(check_line(line), Ok(()));
        }
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn the_store_label_never_holds_a_password() {
        let url = "postgres://worker:s3cret@db/app?password=s3cret2";
        let location = crate::url::parse(url).unwrap().location();
        let text = prometheus_text(&location, &Metrics::default().snapshot());
        assert!(text.contains("{store=\"postgres://worker:***@db/app\"}"));
        assert!(!text.contains("s3cret"));
    }

    #[test]
    fn a_store_times_its_calls() {
        let store = crate::Store::open("memory:?clock=manual").unwrap();
        store.next_token("s").unwrap();
        let fence = crate::Fence::new(store.next_token("s").unwrap());
        let _ = store.status("");
        // Named by what they do: the faces write through execute.
        store
            .execute("s", &fence, crate::Op::put("k", "v"))
            .unwrap();
        store.execute("s", &fence, crate::Op::delete("k")).unwrap();
        store.put("s", "k", b"v", &fence).unwrap();
        let calls = store.metrics().calls;
        let count = |op: &str| calls.iter().find(|c| c.op == op).map_or(0, |c| c.count);
        // A refused call is timed too: it is still a call the caller waited on.
        assert_eq!(
            (count("next_token"), count("status"), count("get")),
            (2, 1, 0)
        );
        assert_eq!((count("put"), count("delete"), count("apply")), (2, 1, 0));
        let text = store.metrics_text();
        assert!(text.contains(
            "fencing_call_duration_seconds_count{store=\"memory:\",op=\"next_token\"} 2\n"
        ));
    }

    #[test]
    fn prometheus_text_names_every_counter() {
        let m = Metrics::default();
        m.write_accepted();
        let text = prometheus_text("memory:", &m.snapshot());
        assert!(text.contains(
            "# TYPE fencing_writes_accepted_total counter\n\
             fencing_writes_accepted_total{store=\"memory:\"} 1\n"
        ));
        let counters = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("fencing_call_duration"));
        assert_eq!(counters.count(), 12);
        for line in text.lines() {
            assert_eq!(check_line(line), Ok(()));
        }
    }

    #[test]
    fn the_longest_pause_is_in_seconds() {
        let m = Metrics::default();
        m.renewal_lateness(250, 300);
        let text = prometheus_text("memory:", &m.snapshot());
        assert!(text.contains(
            "# TYPE fencing_longest_pause_seconds gauge\n\
             fencing_longest_pause_seconds{store=\"memory:\"} 0.25\n"
        ));
        assert!(!text.contains("_ms"));
    }
}
