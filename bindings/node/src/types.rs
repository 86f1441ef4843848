//! The values that go out to JavaScript. Every 64-bit number of the token
//! domain (tokens, fences, counters, versions, seq) and every counter is a
//! `bigint`; durations are milliseconds as plain numbers; times are `Date`s.

use std::ptr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use napi::bindgen_prelude::{ToNapiValue, TypeName};
use napi::{check_status, sys, ValueType};
use napi_derive::napi;

/// Milliseconds as a JavaScript number (exact up to 2^53 ms, far beyond any
/// TTL or timeout the core accepts).
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A point in time, handed to JavaScript as a `Date`.
pub struct Timestamp(f64);

impl From<SystemTime> for Timestamp {
    fn from(t: SystemTime) -> Timestamp {
        let ms = match t.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_millis() as f64,
            Err(before) => -(before.duration().as_millis() as f64),
        };
        Timestamp(ms)
    }
}

impl TypeName for Timestamp {
    fn type_name() -> &'static str {
        "Date"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for Timestamp {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        check_status!(unsafe { sys::napi_create_date(env, val.0, &mut out) })?;
        Ok(out)
    }
}

/// Bytes handed to JavaScript as a `Buffer` (copied: values are small, and a
/// copy is cheaper than an external buffer with a finalizer).
pub struct Bytes(pub Vec<u8>);

impl TypeName for Bytes {
    fn type_name() -> &'static str {
        "Buffer"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for Bytes {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        let mut data = ptr::null_mut();
        check_status!(unsafe {
            sys::napi_create_buffer_copy(
                env,
                val.0.len(),
                val.0.as_ptr().cast(),
                &mut data,
                &mut out,
            )
        })?;
        Ok(out)
    }
}

/// A lease: permission with a deadline.
#[napi(object, object_from_js = false)]
pub struct Lease {
    pub scope: String,
    pub holder: String,
    /// The lease's fencing token: present it with every protected write.
    pub token: u64,
    pub ttl_ms: i64,
    /// On the store's clock, as wall-clock time.
    #[napi(ts_type = "Date")]
    pub expires_at: Timestamp,
    /// Time left when the store produced this value, on the store's clock.
    pub remaining_ms: i64,
}

impl From<fencing::Lease> for Lease {
    fn from(l: fencing::Lease) -> Lease {
        Lease {
            token: l.token.get(),
            ttl_ms: millis(l.ttl),
            expires_at: l.expires_at.into(),
            remaining_ms: millis(l.remaining),
            scope: l.scope,
            holder: l.holder,
        }
    }
}

/// The outcome of one accepted put or delete.
#[napi(object, object_from_js = false)]
pub struct Receipt {
    /// The entry's version after the write; 0 after a delete.
    pub version: u64,
    /// The token the write was accepted with.
    pub token: u64,
}

impl From<fencing::Receipt> for Receipt {
    fn from(r: fencing::Receipt) -> Receipt {
        Receipt {
            version: r.version,
            token: r.token.get(),
        }
    }
}

/// A stored value and the generation that wrote it.
#[napi(object, object_from_js = false)]
pub struct Entry {
    pub key: String,
    #[napi(ts_type = "Buffer")]
    pub value: Bytes,
    /// 1 on create, +1 on every accepted write.
    pub version: u64,
    /// The token of the write that stored this version.
    pub token: u64,
}

impl From<fencing::Entry> for Entry {
    fn from(e: fencing::Entry) -> Entry {
        Entry {
            key: e.key,
            value: Bytes(e.value),
            version: e.version,
            token: e.token.get(),
        }
    }
}

/// What a caller's own etcd transaction compares and puts so that it
/// commits only while its token is current (`store.etcdCheck`;
/// docs/etcd.md, "Fence your own etcd keys").
#[napi(object, object_from_js = false)]
pub struct EtcdCheck {
    /// Each key and the mod revision it must still have (a decimal string:
    /// revisions are 64-bit).
    pub unchanged: Vec<EtcdRevision>,
    /// Keys and values to put in the same transaction.
    pub puts: Vec<EtcdPut>,
    /// The same as a body for etcd's JSON gateway (`POST /v3/kv/txn`).
    pub gateway_json: String,
}

#[napi(object, object_from_js = false)]
pub struct EtcdRevision {
    #[napi(ts_type = "Buffer")]
    pub key: Bytes,
    pub mod_revision: String,
}

#[napi(object, object_from_js = false)]
pub struct EtcdPut {
    #[napi(ts_type = "Buffer")]
    pub key: Bytes,
    #[napi(ts_type = "Buffer")]
    pub value: Bytes,
}

impl From<fencing::EtcdCheck> for EtcdCheck {
    fn from(c: fencing::EtcdCheck) -> EtcdCheck {
        EtcdCheck {
            gateway_json: c.to_gateway_json().to_string(),
            unchanged: c
                .unchanged
                .into_iter()
                .map(|(key, rev)| EtcdRevision {
                    key: Bytes(key),
                    mod_revision: rev.to_string(),
                })
                .collect(),
            puts: c
                .puts
                .into_iter()
                .map(|(key, value)| EtcdPut {
                    key: Bytes(key),
                    value: Bytes(value),
                })
                .collect(),
        }
    }
}

/// A fenced object as read (`objects.get(path)`): its bytes and the write
/// that stored them.
#[napi(object, object_from_js = false)]
pub struct StoredObject {
    #[napi(ts_type = "Buffer")]
    pub value: Bytes,
    /// Grows with every write of the path, deletes included; never reused.
    pub version: u64,
    /// The token of the write that stored this version.
    pub token: u64,
}

impl From<fencing::objects::Object> for StoredObject {
    fn from(o: fencing::objects::Object) -> StoredObject {
        StoredObject {
            value: Bytes(o.bytes),
            version: o.version,
            token: o.token.get(),
        }
    }
}

/// One page of a scope's keys, in byte order.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct Page {
    pub keys: Vec<String>,
    /// Pass as `after` to read the next page; `null` on the last page.
    pub next: Option<String>,
}

impl From<fencing::Page> for Page {
    fn from(p: fencing::Page) -> Page {
        Page {
            keys: p.keys,
            next: p.next,
        }
    }
}

/// A scope's lease as a watch saw it (`store.watch(scope)`).
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct Holding {
    /// The scope watched.
    pub scope: String,
    /// The live lease; null while nobody holds it (never taken, released,
    /// expired, or ended by a failover step).
    pub lease: Option<Lease>,
}

impl From<fencing::Holding> for Holding {
    fn from(h: fencing::Holding) -> Holding {
        Holding {
            scope: h.scope,
            lease: h.lease.map(Lease::from),
        }
    }
}

/// Everything known about one scope, for operators.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct ScopeStatus {
    /// The greatest token issued (0 = none).
    pub counter: u64,
    /// The greatest token accepted (0 = none).
    pub fence: u64,
    /// The current, unexpired lease.
    pub lease: Option<Lease>,
    pub entries: u64,
}

impl From<fencing::ScopeStatus> for ScopeStatus {
    fn from(s: fencing::ScopeStatus) -> ScopeStatus {
        ScopeStatus {
            counter: s.counter,
            fence: s.fence,
            lease: s.lease.map(Lease::from),
            entries: s.entries,
        }
    }
}

/// One rejected fenced operation.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct Rejection {
    /// `'STALE_TOKEN'` or `'SEQUENCE_OUT_OF_ORDER'`.
    pub code: String,
    pub scope: String,
    /// The key written, when the operation named exactly one.
    pub key: Option<String>,
    pub presented: u64,
    /// The scope's fence at the time.
    pub current: u64,
    pub seq: Option<u64>,
    /// The presenting holder, when the fence named one.
    pub holder: Option<String>,
    #[napi(ts_type = "Date")]
    pub at: Timestamp,
}

/// One rejection as the store recorded it (docs/operations.md).
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct RecordedRejection {
    /// Increases with every row the store recorded.
    pub id: u64,
    /// `'STALE_TOKEN'` or `'SEQUENCE_OUT_OF_ORDER'`.
    pub code: String,
    pub scope: String,
    /// The key, when the operation named exactly one.
    pub key: Option<String>,
    pub presented: u64,
    /// The scope's fence when it was recorded.
    pub current: u64,
    pub seq: Option<u64>,
    /// The presenting holder, when its fence named one.
    pub holder: Option<String>,
    #[napi(ts_type = "Date")]
    pub at: Timestamp,
    /// Rejections of the scope counted here instead of recorded one by one.
    pub suppressed: u64,
}

/// The last accepted write of a scope.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct LastWrite {
    pub scope: String,
    /// The writer's holder label, when its fence named one.
    pub holder: Option<String>,
    pub token: u64,
    #[napi(ts_type = "Date")]
    pub at: Timestamp,
}

/// The store's own record, newest first; never any values.
#[napi(object, object_from_js = false)]
pub struct Events {
    pub rejections: Vec<RecordedRejection>,
    pub last_writes: Vec<LastWrite>,
}

impl From<fencing::RecordedRejection> for RecordedRejection {
    fn from(r: fencing::RecordedRejection) -> RecordedRejection {
        RecordedRejection {
            id: r.id,
            code: r.code.as_str().to_owned(),
            scope: r.scope,
            key: r.key,
            presented: r.presented.get(),
            current: r.current,
            seq: r.seq,
            holder: r.holder,
            at: r.at.into(),
            suppressed: r.suppressed,
        }
    }
}

impl From<fencing::Events> for Events {
    fn from(e: fencing::Events) -> Events {
        Events {
            rejections: e.rejections.into_iter().map(Into::into).collect(),
            last_writes: e
                .last_writes
                .into_iter()
                .map(|w| LastWrite {
                    scope: w.scope,
                    holder: w.holder,
                    token: w.token.get(),
                    at: w.at.into(),
                })
                .collect(),
        }
    }
}

/// A point-in-time copy of one store handle's metrics.
#[napi(object, object_from_js = false)]
pub struct MetricsSnapshot {
    pub tokens_issued: u64,
    pub leases_acquired: u64,
    pub acquire_conflicts: u64,
    pub renewals: u64,
    pub renewal_failures: u64,
    pub releases: u64,
    pub writes_accepted: u64,
    pub stale_rejections: u64,
    pub sequence_rejections: u64,
    pub version_conflicts: u64,
    /// Keep-alive renewals that ran more than a third of the TTL late.
    pub pauses_detected: u64,
    /// The longest such lateness, in milliseconds.
    pub longest_pause_ms: u64,
    /// The most recent rejections, oldest first.
    pub rejections: Vec<Rejection>,
}

impl MetricsSnapshot {
    /// The property of the core's counter `name`, if this object has one (a
    /// test checks that it has one for each).
    fn slot(&mut self, name: &str) -> Option<&mut u64> {
        Some(match name {
            "tokens_issued" => &mut self.tokens_issued,
            "leases_acquired" => &mut self.leases_acquired,
            "acquire_conflicts" => &mut self.acquire_conflicts,
            "renewals" => &mut self.renewals,
            "renewal_failures" => &mut self.renewal_failures,
            "releases" => &mut self.releases,
            "writes_accepted" => &mut self.writes_accepted,
            "stale_rejections" => &mut self.stale_rejections,
            "sequence_rejections" => &mut self.sequence_rejections,
            "version_conflicts" => &mut self.version_conflicts,
            "pauses_detected" => &mut self.pauses_detected,
            "longest_pause_ms" => &mut self.longest_pause_ms,
            _ => return None,
        })
    }
}

/// Filled from the core's list of counters (`MetricsSnapshot::counters`).
impl From<fencing::MetricsSnapshot> for MetricsSnapshot {
    fn from(m: fencing::MetricsSnapshot) -> MetricsSnapshot {
        let mut out = MetricsSnapshot {
            tokens_issued: 0,
            leases_acquired: 0,
            acquire_conflicts: 0,
            renewals: 0,
            renewal_failures: 0,
            releases: 0,
            writes_accepted: 0,
            stale_rejections: 0,
            sequence_rejections: 0,
            version_conflicts: 0,
            pauses_detected: 0,
            longest_pause_ms: 0,
            rejections: Vec::new(),
        };
        for (name, _, value) in m.counters() {
            if let Some(slot) = out.slot(name) {
                *slot = value;
            }
        }
        out.rejections = m
            .rejections
            .into_iter()
            .map(|r| Rejection {
                code: r.code.as_str().to_owned(),
                scope: r.scope,
                key: r.key,
                presented: r.presented.get(),
                current: r.current,
                seq: r.seq,
                holder: r.holder,
                at: r.at.into(),
            })
            .collect();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_of_the_core_has_its_property() {
        let core = fencing::MetricsSnapshot::default().counters();
        let mut m = MetricsSnapshot::from(fencing::MetricsSnapshot::default());
        for (name, _, _) in &core {
            assert!(m.slot(name).is_some(), "MetricsSnapshot lacks {name}");
        }
    }
}

// ----- what goes in: TypeScript declarations only -----
//
// The methods take `unknown` and convert by hand (see convert.rs); these
// items only name the accepted shapes in index.d.ts. They are never built.

/// A token going in: a `bigint`, canonical decimal text (`'42'`), or a
/// `number` only when `Number.isSafeInteger`. Tokens coming out are always
/// `bigint`.
#[napi]
#[allow(dead_code)]
pub type TokenLike = napi::bindgen_prelude::Either3<napi::bindgen_prelude::BigInt, String, f64>;

/// What a write (or a checked read) presents.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct FenceOptions {
    pub token: TokenLike,
    /// Operation number inside this token's generation.
    pub seq: Option<TokenLike>,
    /// Who presents it; recorded with rejections, never trusted.
    pub holder: Option<String>,
}

/// A fence plus the entry's expected version (0: must not exist).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct WriteOptions {
    pub token: TokenLike,
    pub seq: Option<TokenLike>,
    pub holder: Option<String>,
    pub expected_version: Option<TokenLike>,
}

/// A put inside `apply`.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct BatchPut {
    pub put: String,
    #[napi(ts_type = "Buffer | Uint8Array | string")]
    pub value: String,
    pub expected_version: Option<TokenLike>,
}

/// A delete inside `apply`.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct BatchDelete {
    pub delete: String,
    pub expected_version: Option<TokenLike>,
}

/// One operation of a batch.
#[napi]
#[allow(dead_code)]
pub type BatchOp = napi::bindgen_prelude::Either<BatchPut, BatchDelete>;

/// What renew and release need of a lease (a `Lease` will do).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct LeaseRef {
    pub scope: String,
    pub token: TokenLike,
}

/// `acquire`'s options. Durations are milliseconds.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct AcquireOptions {
    pub holder: String,
    pub ttl_ms: f64,
}

/// `acquireWait`'s options.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct AcquireWaitOptions {
    pub holder: String,
    pub ttl_ms: f64,
    pub timeout_ms: f64,
}

/// `lease`'s options: `timeoutMs` waits like `acquireWait`.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct LeaseOptions {
    pub holder: String,
    pub ttl_ms: f64,
    pub timeout_ms: Option<f64>,
}

/// `renew`'s options (default: the lease's own `ttlMs`).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct RenewOptions {
    pub ttl_ms: Option<f64>,
}

/// `events`' options: one scope's record (default: every scope's), at most
/// `limit` (1..=256, default 20) rejections and last writes.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct EventsOptions {
    pub scope: Option<String>,
    pub limit: Option<f64>,
}

/// `list`'s options: keys after `after`, at most `limit` (default 100).
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)]
pub struct ListOptions {
    pub after: Option<String>,
    pub limit: Option<f64>,
}
