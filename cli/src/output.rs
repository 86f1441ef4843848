//! How results look: plain text for people and scripts, or one JSON object
//! per result with tokens, versions and counters as decimal strings (a
//! JavaScript reader would lose precision above 2^53 otherwise).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fencing::objects::Object;
use fencing::{
    Entry, Events, Holding, LastWrite, Lease, MetricsSnapshot, Page, Receipt, RecordedRejection,
    ScopeStatus,
};
use serde_json::{json, Map, Value};

use crate::exit::{message, Failure};

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map(ms).unwrap_or(0)
}

pub fn lease(l: &Lease) -> Value {
    json!({
        "scope": l.scope,
        "holder": l.holder,
        "token": l.token.to_string(),
        "ttl_ms": ms(l.ttl),
        "remaining_ms": ms(l.remaining),
        "expires_at_ms": unix_ms(l.expires_at),
    })
}

/// A state `fencing watch` saw: the lease as `lease` prints it, or the
/// same keys with nulls but the scope while nobody holds it.
pub fn holding(h: &Holding) -> Value {
    match &h.lease {
        Some(l) => lease(l),
        None => json!({
            "scope": h.scope,
            "holder": null,
            "token": null,
            "ttl_ms": null,
            "remaining_ms": null,
            "expires_at_ms": null,
        }),
    }
}

/// `report:7  held by "worker-a" with token 42, 29s 998ms left (ttl 30s)`,
/// or `report:7  free`.
pub fn holding_text(h: &Holding) -> String {
    match &h.lease {
        None => format!("{}  free", h.scope),
        Some(l) => format!(
            "{}  held by {:?} with token {}, {} left (ttl {})",
            h.scope,
            l.holder,
            l.token,
            humantime::format_duration(Duration::from_millis(ms(l.remaining))),
            humantime::format_duration(l.ttl),
        ),
    }
}

pub fn receipt(r: &Receipt) -> Value {
    json!({ "version": r.version.to_string(), "token": r.token.to_string() })
}

/// A write's receipt as its text line says it: `deleted` for a delete,
/// `version=N token=T` for a put.
pub fn receipt_text(r: &Receipt, deleted: bool) -> String {
    match deleted {
        true => "deleted".to_owned(),
        false => format!("version={} token={}", r.version, r.token),
    }
}

pub fn entry(e: &Entry) -> Value {
    let mut v = json!({ "found": true, "key": e.key });
    value(&mut v, &e.value);
    v["version"] = json!(e.version.to_string());
    v["token"] = json!(e.token.to_string());
    v
}

/// `fencing object get --json`: as `get --json` prints an entry, with the
/// object's URL (as it may be shown) in place of the key.
pub fn object(url: &str, o: &Object) -> Value {
    let mut v = json!({ "found": true, "url": url });
    value(&mut v, &o.bytes);
    v["version"] = json!(o.version.to_string());
    v["token"] = json!(o.token.to_string());
    v
}

/// A value's fields: `value_hex`, `value_len`, and `value` when it is UTF-8.
fn value(v: &mut Value, bytes: &[u8]) {
    v["value_hex"] = json!(bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
    v["value_len"] = json!(bytes.len());
    if let Ok(text) = std::str::from_utf8(bytes) {
        v["value"] = json!(text);
    }
}

pub fn page(p: &Page) -> Value {
    json!({ "keys": p.keys, "next": p.next })
}

pub fn status(scope: &str, s: &ScopeStatus, ev: &Events) -> Value {
    json!({
        "scope": scope,
        "counter": s.counter.to_string(),
        "fence": s.fence.to_string(),
        "lease": s.lease.as_ref().map(lease),
        "entries": s.entries.to_string(),
        "last_write": ev.last_writes.first().map(last_write),
        "rejections": ev.rejections.iter().map(rejection).collect::<Vec<_>>(),
    })
}

pub fn status_text(scope: &str, s: &ScopeStatus, ev: &Events) -> String {
    let lease = match &s.lease {
        None => "none".to_owned(),
        Some(l) => format!(
            "held by {:?} with token {}, {} left (ttl {})",
            l.holder,
            l.token,
            humantime::format_duration(Duration::from_millis(ms(l.remaining))),
            humantime::format_duration(l.ttl),
        ),
    };
    let written = match ev.last_writes.first() {
        None => "none recorded".to_owned(),
        Some(w) => format!(
            "token {} by {} at {}",
            w.token,
            holder_text(w.holder.as_deref()),
            when(w.at)
        ),
    };
    let mut out = format!(
        "scope    {scope}\nlease    {lease}\ncounter  {}\nfence    {}\nentries  {}\nwritten  {written}\n",
        s.counter, s.fence, s.entries
    );
    if ev.rejections.is_empty() {
        out.push_str("rejected none recorded\n");
    } else {
        out.push_str("rejected (newest first)\n");
        for r in &ev.rejections {
            out.push_str(&format!("  {}\n", rejection_text(r)));
        }
    }
    out
}

fn when(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

fn holder_text(holder: Option<&str>) -> String {
    holder.map_or_else(|| "an unnamed holder".to_owned(), |h| format!("{h:?}"))
}

pub fn rejection(r: &RecordedRejection) -> Value {
    json!({
        "id": r.id.to_string(),
        "code": r.code.as_str(),
        "scope": r.scope,
        "key": r.key,
        "presented": r.presented.to_string(),
        "current": r.current.to_string(),
        "seq": r.seq.map(|s| s.to_string()),
        "holder": r.holder,
        "at_ms": unix_ms(r.at),
        "suppressed": r.suppressed.to_string(),
    })
}

pub fn last_write(w: &LastWrite) -> Value {
    json!({
        "scope": w.scope,
        "holder": w.holder,
        "token": w.token.to_string(),
        "at_ms": unix_ms(w.at),
    })
}

pub fn rejection_text(r: &RecordedRejection) -> String {
    let mut line = format!(
        "{}  {}  {}  token {} (fence {}) from {}",
        when(r.at),
        r.scope,
        r.code.as_str(),
        r.presented,
        r.current,
        holder_text(r.holder.as_deref()),
    );
    if let Some(k) = &r.key {
        line.push_str(&format!(", key {k:?}"));
    }
    if let Some(seq) = r.seq {
        line.push_str(&format!(", seq {seq}"));
    }
    if r.suppressed > 0 {
        line.push_str(&format!(
            " (+{} more not recorded one by one)",
            r.suppressed
        ));
    }
    line
}

pub fn events(scope: Option<&str>, ev: &Events) -> Value {
    json!({
        "scope": scope,
        "rejections": ev.rejections.iter().map(rejection).collect::<Vec<_>>(),
        "last_writes": ev.last_writes.iter().map(last_write).collect::<Vec<_>>(),
    })
}

pub fn events_text(ev: &Events) -> String {
    let mut out = String::from("rejections (newest first)\n");
    if ev.rejections.is_empty() {
        out.push_str("  none recorded\n");
    }
    for r in &ev.rejections {
        out.push_str(&format!("  {}\n", rejection_text(r)));
    }
    out.push_str("last writes (newest first)\n");
    if ev.last_writes.is_empty() {
        out.push_str("  none recorded\n");
    }
    for w in &ev.last_writes {
        out.push_str(&format!(
            "  {}  {}  token {} by {}\n",
            when(w.at),
            w.scope,
            w.token,
            holder_text(w.holder.as_deref())
        ));
    }
    out
}

pub fn metrics(m: &MetricsSnapshot) -> Value {
    let mut out = Map::new();
    for (name, _, value) in m.counters() {
        out.insert(name.to_owned(), json!(value.to_string()));
    }
    let rejections: Vec<Value> = m
        .rejections
        .iter()
        .map(|r| {
            json!({
                "code": r.code.as_str(),
                "scope": r.scope,
                "key": r.key,
                "presented": r.presented.to_string(),
                "current": r.current.to_string(),
                "seq": r.seq.map(|s| s.to_string()),
                "holder": r.holder,
                "at_ms": unix_ms(r.at),
            })
        })
        .collect();
    out.insert("rejections".into(), json!(rejections));
    Value::Object(out)
}

/// `{"error": {"code": "STALE_TOKEN", "message": ..., <details>}}`, the
/// details named and spelled by the core (`Error::details_json`).
pub fn error_json(failure: &Failure) -> Value {
    let e = match failure {
        Failure::Store(e) => e,
        Failure::Other(m) => return json!({ "error": { "code": "OTHER", "message": m } }),
    };
    let mut v = e.details_json();
    v.insert("code".into(), json!(e.code().as_str()));
    v.insert("message".into(), json!(message(e)));
    json!({ "error": v })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fencing::{Error, ErrorCode, Field};

    #[test]
    fn every_code_reports_every_field_of_the_core() {
        for code in ErrorCode::ALL {
            let out = error_json(&Failure::Store(Error::example(code)));
            let error = &out["error"];
            assert_eq!(error["code"], code.as_str());
            for field in code.fields() {
                let value = &error[field.json_name()];
                assert!(
                    !value.is_null(),
                    "{code}: {} missing in {out}",
                    field.json_name()
                );
            }
        }
        let lease_lost = error_json(&Failure::Store(Error::example(ErrorCode::LeaseLost)));
        assert!(lease_lost["error"][Field::CurrentHolder.json_name()].is_string());
    }
}
