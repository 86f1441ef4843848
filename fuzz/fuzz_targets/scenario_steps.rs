//! The scenario runner's op decoder (`fencing_scenarios::run_step`, the same
//! code that replays tests/scenarios) driving a `memory:` store with
//! arbitrary steps, checking after every step:
//!
//! - a scope's counter and fence never decrease (retire included: a scope
//!   seen again starts at the floor, which is above both);
//! - a successful `next_token`/`acquire`/`acquire_wait` strictly raises the
//!   counter (tokens strictly increase, never repeat), and with eager
//!   fencing leaves the fence at or above the new token;
//! - a successful write or claim leaves the fence at the presented token,
//!   which was not below the fence before;
//! - a step that failed changed nothing: counter, fence, entry count (and,
//!   on a manual clock, the live lease) are as they were.
//!
//! Input: a scenario document (`{"options": {...}, "steps": [...]}`, the
//! shared format) or a bare array of steps. `expect`/`error` are removed so
//! that `run_step`'s result says whether the operation succeeded.
#![no_main]

use fencing::{ScopeStatus, Store};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const MAX_STEPS: usize = 64;

/// `{"repeat": unit, "count": n}` builds `unit * n` in the runner: keep the
/// product small, so that a run measures the store, not the allocator.
fn too_big(v: &Value) -> bool {
    match v {
        Value::Object(o) => {
            let unit = o.get("repeat").and_then(Value::as_str).map_or(0, str::len);
            let count = o.get("count").and_then(Value::as_u64).unwrap_or(0);
            unit.max(1)
                .saturating_mul(usize::try_from(count).unwrap_or(usize::MAX))
                > 2 << 20
                || o.values().any(too_big)
        }
        Value::Array(a) => a.iter().any(too_big),
        _ => false,
    }
}

/// Steps that would leave the process (a file, a connection) or block.
fn allowed(step: &Value) -> bool {
    match step["op"].as_str() {
        Some("open") => match &step["url"] {
            Value::String(u) => !u.starts_with("sqlite:") && !u.starts_with("postgres"),
            _ => false,
        },
        Some("acquire_wait") => step["timeout_ms"].as_u64().is_none_or(|t| t <= 20),
        _ => true,
    }
}

fn snapshot(store: &Store, scope: Option<&str>) -> Option<ScopeStatus> {
    store.status(scope?).ok()
}

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let (query, steps) = match &doc {
        Value::Array(steps) => (String::new(), steps.clone()),
        Value::Object(_) => {
            let mut doc = doc.clone();
            if doc.get("name").is_none() {
                doc["name"] = Value::from("fuzz");
            }
            match fencing_scenarios::parse(&doc, std::path::Path::new("fuzz")) {
                Ok(s) => (s.query, s.steps),
                Err(_) => return,
            }
        }
        _ => return,
    };
    if steps.len() > MAX_STEPS || too_big(&Value::Array(steps.clone())) {
        return;
    }
    let url = if query.is_empty() {
        "memory:".to_owned()
    } else {
        format!("memory:?{query}")
    };
    let Ok(mut store) = Store::open(&url) else {
        return;
    };
    let manual = query.contains("clock=manual");
    let eager = !query.contains("eager_fencing=false");
    for step in steps {
        if !step.is_object() || !allowed(&step) {
            continue;
        }
        let mut step = step;
        if let Value::Object(o) = &mut step {
            o.remove("expect");
            o.remove("error");
        }
        let scope = step["scope"].as_str().map(str::to_owned);
        let before = snapshot(&store, scope.as_deref());
        let result = fencing_scenarios::run_step(&mut store, &step);
        let after = snapshot(&store, scope.as_deref());
        let (Some(b), Some(a)) = (before, after) else {
            continue;
        };
        let op = step["op"].as_str().unwrap_or("");
        assert!(
            a.counter >= b.counter,
            "counter went down: {step} {b:?} -> {a:?}"
        );
        assert!(a.fence >= b.fence, "fence went down: {step} {b:?} -> {a:?}");
        match result {
            Err(_) => {
                assert_eq!(
                    (a.counter, a.fence, a.entries),
                    (b.counter, b.fence, b.entries),
                    "a failed step changed the scope: {step}"
                );
                if manual {
                    let lease = |s: &ScopeStatus| {
                        s.lease
                            .as_ref()
                            .map(|l| (l.token, l.holder.clone(), l.expires_at))
                    };
                    assert_eq!(
                        lease(&a),
                        lease(&b),
                        "a failed step changed the lease: {step}"
                    );
                }
            }
            Ok(()) => match op {
                "next_token" | "acquire" | "acquire_wait" => {
                    assert!(a.counter > b.counter, "no new token: {step} {b:?} -> {a:?}");
                    if op != "next_token" {
                        let lease = a.lease.as_ref();
                        if manual {
                            assert_eq!(lease.map(|l| l.token.get()), Some(a.counter), "{step}");
                        }
                        if eager {
                            assert!(a.fence >= a.counter, "eager fencing: {step} {a:?}");
                        }
                    }
                }
                "put" | "delete" | "apply" | "claim" => {
                    let token: u64 = step["token"].as_str().unwrap().parse().unwrap();
                    assert!(token >= b.fence, "accepted below the fence: {step} {b:?}");
                    assert_eq!(a.fence, token, "fence is not the token: {step} {a:?}");
                }
                _ => {}
            },
        }
    }
    store.close();
});
