//! Per-handle counters, the last rejections and pause indicators. Never any
//! values or payloads; no per-scope labels (scopes are unbounded).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

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
            /// The longest such lateness, in milliseconds.
            pub longest_pause_ms: u64,
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

        impl Metrics {
            pub fn snapshot(&self) -> MetricsSnapshot {
                MetricsSnapshot {
                    $($name: self.counters.$name.get(),)*
                    pauses_detected: self.pauses_detected.load(Ordering::Relaxed),
                    longest_pause_ms: self.longest_pause_ms.load(Ordering::Relaxed),
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

#[derive(Default)]
pub(crate) struct Metrics {
    counters: Counters,
    pauses_detected: AtomicU64,
    longest_pause_ms: AtomicU64,
    rejections: Mutex<VecDeque<Rejection>>,
}

impl Metrics {
    pub fn token_issued(&self) {
        self.counters.tokens_issued.add(1);
    }
    pub fn lease_acquired(&self) {
        self.counters.tokens_issued.add(1);
        self.counters.leases_acquired.add(1);
    }
    pub fn acquire_conflict(&self) {
        self.counters.acquire_conflicts.add(1);
    }
    pub fn renewal(&self, ok: bool) {
        if ok {
            self.counters.renewals.add(1);
        } else {
            self.counters.renewal_failures.add(1);
        }
    }
    pub fn release(&self) {
        self.counters.releases.add(1);
    }
    pub fn write_accepted(&self) {
        self.counters.writes_accepted.add(1);
    }
    pub fn version_conflict(&self) {
        self.counters.version_conflicts.add(1);
    }

    pub fn reject(&self, rejection: Rejection) {
        match rejection.code {
            ErrorCode::SequenceOutOfOrder => self.counters.sequence_rejections.add(1),
            _ => self.counters.stale_rejections.add(1),
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
            self.longest_pause_ms
                .fetch_max(lateness_ms, Ordering::Relaxed);
        }
    }
}

/// Prometheus text exposition format, names prefixed `fencing_`.
pub fn prometheus_text(snapshot: &MetricsSnapshot) -> String {
    let mut out = String::new();
    for (name, help, value) in snapshot.counters() {
        let (metric, kind) = match name {
            "longest_pause_ms" => ("fencing_longest_pause_ms".to_owned(), "gauge"),
            _ => (format!("fencing_{name}_total"), "counter"),
        };
        let _ = writeln!(out, "# HELP {metric} {help}.");
        let _ = writeln!(out, "# TYPE {metric} {kind}");
        let _ = writeln!(out, "{metric} {value}");
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

    #[test]
    fn prometheus_text_names_every_counter() {
        let m = Metrics::default();
        m.write_accepted();
        let text = prometheus_text(&m.snapshot());
        assert!(text.contains(
            "# TYPE fencing_writes_accepted_total counter\nfencing_writes_accepted_total 1\n"
        ));
        assert!(text.contains("fencing_longest_pause_ms 0\n"));
        assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 12);
    }
}
