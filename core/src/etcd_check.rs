//! Fencing a caller's own etcd keys (docs/etcd.md, "Fence your own etcd
//! keys"): what `fencing.check` is to PostgreSQL. The store checks the
//! token against the scope's fence now and says what the caller's own etcd
//! transaction must compare and put so that it commits only if nothing the
//! check read has changed, raising the fence with it.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Value};

/// The comparisons and puts to add to one's own etcd transaction
/// ([`crate::Store::etcd_check`]). If that transaction fails on these
/// comparisons, the scope changed meanwhile: check again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdCheck {
    /// Each key with the mod revision it must still have (0: still
    /// absent): `Compare { target: MOD, result: EQUAL }`.
    pub unchanged: Vec<(Vec<u8>, i64)>,
    /// Keys and values to put in the same transaction: the scope's record
    /// with the fence raised to the token.
    pub puts: Vec<(Vec<u8>, Vec<u8>)>,
}

impl EtcdCheck {
    /// The same as a request body for etcd's JSON gateway
    /// (`POST /v3/kv/txn`): `{"compare": [...], "success": [...]}`, keys and
    /// values in base64; add the caller's own comparisons and requests to
    /// the two lists.
    pub fn to_gateway_json(&self) -> Value {
        let compare: Vec<Value> = self
            .unchanged
            .iter()
            .map(|(key, rev)| {
                json!({ "key": B64.encode(key), "target": "MOD", "result": "EQUAL",
                        "mod_revision": rev.to_string() })
            })
            .collect();
        let success: Vec<Value> = self
            .puts
            .iter()
            .map(|(key, value)| {
                json!({ "request_put": { "key": B64.encode(key), "value": B64.encode(value) } })
            })
            .collect();
        json!({ "compare": compare, "success": success })
    }
}
