//! How results look: plain text for people and scripts, or one JSON object
//! per result with tokens, versions and counters as decimal strings (a
//! JavaScript reader would lose precision above 2^53 otherwise).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fencing::{Entry, Lease, MetricsSnapshot, Page, Receipt, ScopeStatus};
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

pub fn receipt(r: &Receipt) -> Value {
    json!({ "version": r.version.to_string(), "token": r.token.to_string() })
}

pub fn entry(e: &Entry) -> Value {
    let mut v = json!({
        "found": true,
        "key": e.key,
        "value_hex": e.value.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        "value_len": e.value.len(),
        "version": e.version.to_string(),
        "token": e.token.to_string(),
    });
    if let Ok(text) = std::str::from_utf8(&e.value) {
        v["value"] = json!(text);
    }
    v
}

pub fn page(p: &Page) -> Value {
    json!({ "keys": p.keys, "next": p.next })
}

pub fn status(scope: &str, s: &ScopeStatus) -> Value {
    json!({
        "scope": scope,
        "counter": s.counter.to_string(),
        "fence": s.fence.to_string(),
        "lease": s.lease.as_ref().map(lease),
        "entries": s.entries.to_string(),
    })
}

pub fn status_text(scope: &str, s: &ScopeStatus) -> String {
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
    format!(
        "scope    {scope}\nlease    {lease}\ncounter  {}\nfence    {}\nentries  {}\n",
        s.counter, s.fence, s.entries
    )
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
