//! What an etcd store's values hold: a scope's record (JSON, the fields of
//! `rules::ScopeCore`) and an entry (token, version, bytes).

use serde_json::{json, Value};

use crate::error::{BackendErrorKind::Corrupt, Error, Result};
use crate::rules::{LeaseRecord, ScopeCore, WriteMark};
use crate::token::Token;

/// A scope's record as stored: the core, and the etcd lease its lease key
/// is attached to while the lease is live.
pub(crate) struct Record {
    pub core: ScopeCore,
    pub lease_id: Option<i64>,
    /// The failover step's base this record was last moved to (the store's
    /// base key moves first; each record follows when next read).
    pub base: u64,
}

fn corrupt(what: &str) -> Error {
    Error::backend(
        Corrupt,
        format!("etcd: a scope record's {what} is not what fencing writes"),
    )
}

fn number(v: &Value, what: &str) -> Result<u64> {
    v.as_u64().ok_or_else(|| corrupt(what))
}

fn token(v: &Value, what: &str) -> Result<Token> {
    Token::new(number(v, what)?).ok_or_else(|| corrupt(what))
}

fn text(v: &Value, what: &str) -> Result<Option<String>> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        _ => Err(corrupt(what)),
    }
}

impl Record {
    pub fn encode(&self) -> Vec<u8> {
        let c = &self.core;
        let lease = c.lease.as_ref().map(|l| {
            json!({ "holder": l.holder, "token": l.token.get(), "ttl_ms": l.ttl_ms,
                    "expires_at_ms": l.expires_at_ms, "id": self.lease_id.unwrap_or(0) })
        });
        let last_write = c
            .last_write
            .as_ref()
            .map(|w| json!({ "holder": w.holder, "token": w.token.get(), "at_ms": w.at_ms }));
        json!({
            "counter": c.counter,
            "fence": c.fence,
            "sealed": c.sealed,
            "last_seq": c.last_seq,
            "lease": lease,
            "last_write": last_write,
            "base": self.base,
        })
        .to_string()
        .into_bytes()
    }

    pub fn decode(bytes: &[u8]) -> Result<Record> {
        let v: Value = serde_json::from_slice(bytes).map_err(|_| corrupt("JSON"))?;
        let mut lease_id = None;
        let lease = match &v["lease"] {
            Value::Null => None,
            l => {
                // 0: a lease a manual-clock handle took, on no etcd lease.
                lease_id = Some(l["id"].as_i64().ok_or_else(|| corrupt("lease id"))?)
                    .filter(|id| *id != 0);
                Some(LeaseRecord {
                    holder: text(&l["holder"], "holder")?.ok_or_else(|| corrupt("holder"))?,
                    token: token(&l["token"], "lease token")?,
                    ttl_ms: number(&l["ttl_ms"], "ttl")?,
                    // On the manual clock; with etcd's time, the lease is
                    // live while its lease key exists (`super::Etcd::load`).
                    expires_at_ms: number(&l["expires_at_ms"], "expiry")?,
                })
            }
        };
        let last_write = match &v["last_write"] {
            Value::Null => None,
            w => Some(WriteMark {
                holder: text(&w["holder"], "writer")?,
                token: token(&w["token"], "writer's token")?,
                at_ms: number(&w["at_ms"], "write time")?,
            }),
        };
        let last_seq = match &v["last_seq"] {
            Value::Null => None,
            s => Some(number(s, "seq")?),
        };
        Ok(Record {
            core: ScopeCore {
                counter: number(&v["counter"], "counter")?,
                fence: number(&v["fence"], "fence")?,
                sealed: v["sealed"].as_bool().ok_or_else(|| corrupt("seal"))?,
                last_seq,
                lease,
                seen_ms: 0,
                last_write,
            },
            lease_id,
            base: number(&v["base"], "base")?,
        })
    }
}

/// An entry as stored.
pub(crate) struct StoredEntry {
    pub token: Token,
    pub version: u64,
    pub value: Vec<u8>,
}

impl StoredEntry {
    pub fn encode(token: Token, version: u64, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + value.len());
        out.extend_from_slice(&token.get().to_be_bytes());
        out.extend_from_slice(&version.to_be_bytes());
        out.extend_from_slice(value);
        out
    }

    pub fn decode(mut bytes: Vec<u8>) -> Result<StoredEntry> {
        let bad = || Error::backend(Corrupt, "etcd: an entry is not what fencing writes");
        if bytes.len() < 16 {
            return Err(bad());
        }
        let word = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
        let token = Token::new(word(0)).ok_or_else(bad)?;
        let version = word(8);
        if version == 0 {
            return Err(bad());
        }
        bytes.drain(..16);
        Ok(StoredEntry {
            token,
            version,
            value: bytes,
        })
    }
}
