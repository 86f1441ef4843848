//! etcd's v3 API the way an etcd user without a gRPC client calls it: JSON
//! over HTTP/1.1 to the members' JSON gateway (`POST /v3/kv/txn`,
//! `/v3/lease/grant`, `/v3/lock/lock`, ... on the client port), with a plain
//! blocking client (ureq), keys and values in base64. No protoc: nothing is
//! generated from etcd's `.proto` files. The baselines of
//! `benches/etcd.rs` and `benches/waiting.rs` go through it.
//!
//! Every call goes to one member (the first of the list, as the fencing
//! store's client starts with the first member of its URL); a failure
//! panics, since a bench has no faults to ride out.

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Value};

/// The members of the cluster to run against, from the environment:
/// `FENCING_TEST_ETCD_CLUSTER` (`HOST:PORT,...`, `scripts/etcd-cluster`),
/// else `FENCING_TEST_ETCD_URL` (`http://HOST:PORT`, `scripts/etcd-server`,
/// one member). `None` when neither is set.
pub fn members_from_env() -> Option<Vec<String>> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let list = var("FENCING_TEST_ETCD_CLUSTER").or_else(|| var("FENCING_TEST_ETCD_URL"))?;
    Some(
        list.split(',')
            .map(|m| {
                let m = m.trim();
                m.strip_prefix("http://").unwrap_or(m).to_owned()
            })
            .collect(),
    )
}

/// A gateway client on one member; cheap to clone (one connection pool).
#[derive(Clone)]
pub struct Gateway {
    agent: ureq::Agent,
    /// `http://HOST:PORT` of every member; calls go to the first.
    members: Vec<String>,
}

impl Gateway {
    /// `members` as `HOST:PORT`. The pool keeps enough idle connections for
    /// every caller of a bench (ureq's default keeps 3 per host).
    pub fn new(members: &[String]) -> Gateway {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_idle_connections(256)
            .max_idle_connections_per_host(256)
            .user_agent("fencing-bench")
            .build()
            .new_agent();
        Gateway {
            agent,
            members: members.iter().map(|m| format!("http://{m}")).collect(),
        }
    }

    /// `POST /v3/{path}` on the first member; the answer's JSON.
    pub fn call(&self, path: &str, body: &Value) -> Value {
        self.try_call(path, body).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The same, a failure told rather than a panic.
    pub fn try_call(&self, path: &str, body: &Value) -> Result<Value, String> {
        let url = format!("{}/v3/{path}", self.members[0]);
        let mut response = self
            .agent
            .post(&url)
            .send_json(body)
            .map_err(|e| format!("etcd gateway {url}: {e}"))?;
        let status = response.status().as_u16();
        let answer: Value = response
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_json()
            .map_err(|e| format!("etcd gateway {url}: answer not JSON ({status}): {e}"))?;
        if status != 200 {
            return Err(format!("etcd gateway {url} refused ({status}): {answer}"));
        }
        Ok(answer)
    }

    /// A new lease of `ttl` (whole seconds); its id.
    pub fn grant(&self, ttl: Duration) -> i64 {
        let answer = self.call(
            "lease/grant",
            &json!({ "TTL": ttl.as_secs().max(1).to_string() }),
        );
        let id = int(&answer["ID"]);
        assert!(id != 0, "etcd: lease grant answered {answer}");
        id
    }

    /// Ends a lease and deletes the keys attached to it.
    pub fn revoke(&self, lease: i64) {
        self.call("lease/revoke", &json!({ "ID": lease.to_string() }));
    }

    pub fn txn(&self, body: &Value) -> Value {
        self.call("kv/txn", body)
    }

    /// Deletes every key starting with `prefix`, a few thousand keys per
    /// request (one deletion of 10^5 keys outlasts etcd's request timeout
    /// on a busy machine).
    pub fn delete_prefix(&self, prefix: &[u8]) -> Result<(), String> {
        let end = b64(&prefix_end(prefix));
        loop {
            let page = self.try_call(
                "kv/range",
                &json!({ "key": b64(prefix), "range_end": end, "keys_only": true,
                         "limit": "5000" }),
            )?;
            let Some(last) = page["kvs"].as_array().and_then(|kvs| kvs.last()) else {
                return Ok(());
            };
            let mut upto = bytes(&last["key"]);
            upto.push(0);
            self.try_call(
                "kv/deleterange",
                &json!({ "key": b64(prefix), "range_end": b64(&upto) }),
            )?;
        }
    }

    /// How many keys start with `prefix`.
    pub fn count_prefix(&self, prefix: &[u8]) -> u64 {
        let answer = self.call(
            "kv/range",
            &json!({ "key": b64(prefix), "range_end": b64(&prefix_end(prefix)), "count_only": true }),
        );
        u64::try_from(int(&answer["count"])).unwrap_or(0)
    }

    /// etcd's own lock (`v3lock`'s `Lock`, the recipe of its `concurrency`
    /// package on the server: a key `NAME/LEASE` under the lease, then a
    /// wait until every key of `NAME/` created before it is gone); blocks
    /// until held and returns the lock's key.
    pub fn lock(&self, name: &str, lease: i64) -> Vec<u8> {
        let answer = self.call(
            "lock/lock",
            &json!({ "name": b64(name.as_bytes()), "lease": lease.to_string() }),
        );
        bytes(&answer["key"])
    }

    pub fn unlock(&self, key: &[u8]) {
        self.call("lock/unlock", &json!({ "key": b64(key) }));
    }

    /// The sum over every member of a counter of etcd's Prometheus
    /// endpoint (`/metrics` on the client port); `None` if a member did not
    /// say.
    pub fn metric_sum(&self, name: &str) -> Option<f64> {
        let mut sum = 0.0;
        for m in &self.members {
            let text = self
                .agent
                .get(&format!("{m}/metrics"))
                .call()
                .ok()?
                .body_mut()
                .with_config()
                .limit(64 << 20)
                .read_to_string()
                .ok()?;
            sum += text
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                .and_then(|v| v.trim().parse::<f64>().ok())?;
        }
        Some(sum)
    }
}

/// The end of the range of every key starting with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte 0xff: to the end of the keyspace.
    vec![0]
}

/// Bytes as the gateway carries them.
pub fn b64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// A `bytes` field of an answer (absent when empty).
pub fn bytes(field: &Value) -> Vec<u8> {
    field.as_str().map_or_else(Vec::new, |s| {
        B64.decode(s)
            .unwrap_or_else(|e| panic!("etcd: bytes not base64 ({e}): {s}"))
    })
}

/// An `int64` field of an answer (a string in JSON; absent when 0).
pub fn int(field: &Value) -> i64 {
    match field {
        Value::Null => 0,
        Value::String(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("etcd: not an integer: {s}")),
        Value::Number(n) => n
            .as_i64()
            .unwrap_or_else(|| panic!("etcd: not an i64: {n}")),
        other => panic!("etcd: not an integer: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_and_fields() {
        assert_eq!(prefix_end(b"ab/"), b"ab0".to_vec());
        assert_eq!(prefix_end(&[b'a', 0xff]), b"b".to_vec());
        assert_eq!(prefix_end(&[0xff]), vec![0]);
        assert_eq!(int(&json!("42")), 42);
        assert_eq!(int(&Value::Null), 0);
        assert_eq!(bytes(&json!(b64(b"k\0v"))), b"k\0v".to_vec());
        assert_eq!(bytes(&Value::Null), Vec::<u8>::new());
    }
}
