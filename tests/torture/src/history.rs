//! The history format: one JSON object per line, appended with one `write`
//! per line to a file opened with `O_APPEND` (so lines from several processes
//! never interleave, and a killed process loses at most the line it had not
//! yet written). Timestamps (`ts`) are [`crate::now_ns`].
//!
//! | `ev` | written by | fields |
//! |---|---|---|
//! | `meta` | parent, first line | `url`, `eager` (eager fencing on), `ttl_ms` |
//! | `invoke` | a process, before a call | `p` (process), `n` (its op number), `ts`, `op`, `scope`, `key`?, `token`? (advance_counter: the floor asked for), `seq`?, `value`?, `outside`? (true: a write or claim with a token the store never issued) |
//! | `ok` | the same process, after the call returned | `p`, `n`, `ts`, `token`? (acquire, next_token: the token; advance_counter: the counter), `version`? (put, delete), `found`/`value`/`wtoken` (get), `released` (release), `retired` (retire: whether the scope had state to drop) |
//! | `fail` | the same, after the call failed | `p`, `n`, `ts`, `code`, `current`? (STALE_TOKEN), `token`? (LEASE_HELD) |
//! | `pause` / `resume` | nemesis | `p`, `ts`: `pause` is written once the process is stopped, `resume` just before `SIGCONT`, so the process was stopped for all of `[pause.ts, resume.ts]` |
//! | `kill` | nemesis | `p`, `ts` (after `SIGKILL`, once reaped) |
//! | `restart` | nemesis | `ts`, `end` (server crash + start; on etcd a member killed and restarted, or paused and resumed: nothing acknowledged lost) |
//! | `failover` | nemesis | `from` (every commit acknowledged before it is on the standby), `cut` (the standby cut off), `ts` (the old primary crashed), `end` (the new primary open to clients), `lossy` (asynchronous: commits acknowledged after `from` may be gone), `step` (the failover step ran before `end`) |
//!
//! An `invoke` without an `ok`/`fail` is indeterminate: the process died
//! during the call, which may or may not have taken effect.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use serde_json::{json, Map, Value};

/// The operations workers perform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    Acquire,
    Claim,
    Get,
    Put,
    /// Removes a key (the last step before a holder retires its scope).
    Delete,
    Renew,
    Release,
    NextToken,
    /// Ends the scope's life when it returns true (docs/semantics.md,
    /// "Retiring scopes").
    Retire,
    /// Raises the counter to at least the token asked for: a jump, which
    /// above the jump limit must be refused (docs/semantics.md, "Failover").
    AdvanceCounter,
}

impl OpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Acquire => "acquire",
            OpKind::Claim => "claim",
            OpKind::Get => "get",
            OpKind::Put => "put",
            OpKind::Delete => "delete",
            OpKind::Renew => "renew",
            OpKind::Release => "release",
            OpKind::NextToken => "next_token",
            OpKind::Retire => "retire",
            OpKind::AdvanceCounter => "advance_counter",
        }
    }

    fn parse(s: &str) -> Option<OpKind> {
        Some(match s {
            "acquire" => OpKind::Acquire,
            "claim" => OpKind::Claim,
            "get" => OpKind::Get,
            "put" => OpKind::Put,
            "delete" => OpKind::Delete,
            "renew" => OpKind::Renew,
            "release" => OpKind::Release,
            "next_token" => OpKind::NextToken,
            "retire" => OpKind::Retire,
            "advance_counter" => OpKind::AdvanceCounter,
            _ => return None,
        })
    }

    /// Raises the fence when accepted.
    pub fn is_write(self) -> bool {
        matches!(self, OpKind::Claim | OpKind::Put | OpKind::Delete)
    }

    /// Issues a token when it succeeds.
    pub fn issues(self) -> bool {
        matches!(self, OpKind::Acquire | OpKind::NextToken)
    }
}

/// What a process asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Call {
    pub scope: String,
    pub key: Option<String>,
    pub token: Option<u64>,
    pub seq: Option<u64>,
    pub value: Option<String>,
    /// A write or claim with a token from outside the store (a timestamp,
    /// a token seen plus a jump), not one it issued.
    pub outside: bool,
}

/// What a call returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Returned {
    /// acquire, next_token: the new token; advance_counter: the counter.
    pub token: Option<u64>,
    /// put: the entry's new version (delete: 0).
    pub version: Option<u64>,
    /// get: the value read (None: no entry) and the token that wrote it.
    pub value: Option<String>,
    pub wtoken: Option<u64>,
    /// release: whether it ended the lease.
    pub released: Option<bool>,
    /// retire: whether the scope had state to drop (false: no life ended).
    pub retired: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    Meta {
        url: String,
        eager: bool,
        ttl_ms: u64,
    },
    Invoke {
        p: String,
        n: u64,
        ts: u64,
        op: OpKind,
        call: Call,
    },
    Ok {
        p: String,
        n: u64,
        ts: u64,
        ret: Returned,
    },
    Fail {
        p: String,
        n: u64,
        ts: u64,
        code: String,
        /// STALE_TOKEN: the fence. LEASE_HELD: the live lease's token.
        current: Option<u64>,
    },
    Pause {
        p: String,
        ts: u64,
    },
    Resume {
        p: String,
        ts: u64,
    },
    Kill {
        p: String,
        ts: u64,
    },
    Restart {
        ts: u64,
        end: u64,
    },
    /// A standby promoted after the primary crashed (`--replicas`).
    Failover {
        from: u64,
        cut: u64,
        ts: u64,
        end: u64,
        lossy: bool,
        step: bool,
    },
}

fn put_opt<T: Into<Value>>(m: &mut Map<String, Value>, k: &str, v: Option<T>) {
    if let Some(v) = v {
        m.insert(k.to_owned(), v.into());
    }
}

impl Record {
    pub fn to_json(&self) -> Value {
        match self {
            Record::Meta { url, eager, ttl_ms } => {
                json!({"ev": "meta", "url": url, "eager": eager, "ttl_ms": ttl_ms})
            }
            Record::Invoke { p, n, ts, op, call } => {
                let mut m = Map::new();
                m.insert("ev".into(), "invoke".into());
                m.insert("p".into(), p.clone().into());
                m.insert("n".into(), (*n).into());
                m.insert("ts".into(), (*ts).into());
                m.insert("op".into(), op.as_str().into());
                m.insert("scope".into(), call.scope.clone().into());
                put_opt(&mut m, "key", call.key.clone());
                put_opt(&mut m, "token", call.token);
                put_opt(&mut m, "seq", call.seq);
                put_opt(&mut m, "value", call.value.clone());
                put_opt(&mut m, "outside", call.outside.then_some(true));
                Value::Object(m)
            }
            Record::Ok { p, n, ts, ret } => {
                let mut m = Map::new();
                m.insert("ev".into(), "ok".into());
                m.insert("p".into(), p.clone().into());
                m.insert("n".into(), (*n).into());
                m.insert("ts".into(), (*ts).into());
                put_opt(&mut m, "token", ret.token);
                put_opt(&mut m, "version", ret.version);
                put_opt(&mut m, "value", ret.value.clone());
                put_opt(&mut m, "wtoken", ret.wtoken);
                put_opt(&mut m, "released", ret.released);
                put_opt(&mut m, "retired", ret.retired);
                Value::Object(m)
            }
            Record::Fail {
                p,
                n,
                ts,
                code,
                current,
            } => {
                let mut m = Map::new();
                m.insert("ev".into(), "fail".into());
                m.insert("p".into(), p.clone().into());
                m.insert("n".into(), (*n).into());
                m.insert("ts".into(), (*ts).into());
                m.insert("code".into(), code.clone().into());
                put_opt(&mut m, "current", *current);
                Value::Object(m)
            }
            Record::Pause { p, ts } => json!({"ev": "pause", "p": p, "ts": ts}),
            Record::Resume { p, ts } => json!({"ev": "resume", "p": p, "ts": ts}),
            Record::Kill { p, ts } => json!({"ev": "kill", "p": p, "ts": ts}),
            Record::Restart { ts, end } => json!({"ev": "restart", "ts": ts, "end": end}),
            Record::Failover {
                from,
                cut,
                ts,
                end,
                lossy,
                step,
            } => json!({"ev": "failover", "from": from, "cut": cut, "ts": ts, "end": end,
                         "lossy": lossy, "step": step}),
        }
    }

    pub fn parse(line: &str) -> Result<Record, String> {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("{e}: {line}"))?;
        let s = |k: &str| -> Result<String, String> {
            v[k].as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("missing string {k:?}: {line}"))
        };
        let u = |k: &str| -> Result<u64, String> {
            v[k].as_u64()
                .ok_or_else(|| format!("missing number {k:?}: {line}"))
        };
        let ou = |k: &str| v[k].as_u64();
        let os = |k: &str| v[k].as_str().map(str::to_owned);
        Ok(match s("ev")?.as_str() {
            "meta" => Record::Meta {
                url: s("url")?,
                eager: v["eager"].as_bool().ok_or("meta needs eager")?,
                ttl_ms: u("ttl_ms")?,
            },
            "invoke" => Record::Invoke {
                p: s("p")?,
                n: u("n")?,
                ts: u("ts")?,
                op: OpKind::parse(&s("op")?).ok_or_else(|| format!("bad op: {line}"))?,
                call: Call {
                    scope: s("scope")?,
                    key: os("key"),
                    token: ou("token"),
                    seq: ou("seq"),
                    value: os("value"),
                    outside: v["outside"].as_bool().unwrap_or(false),
                },
            },
            "ok" => Record::Ok {
                p: s("p")?,
                n: u("n")?,
                ts: u("ts")?,
                ret: Returned {
                    token: ou("token"),
                    version: ou("version"),
                    value: os("value"),
                    wtoken: ou("wtoken"),
                    released: v["released"].as_bool(),
                    retired: v["retired"].as_bool(),
                },
            },
            "fail" => Record::Fail {
                p: s("p")?,
                n: u("n")?,
                ts: u("ts")?,
                code: s("code")?,
                current: ou("current"),
            },
            "pause" => Record::Pause {
                p: s("p")?,
                ts: u("ts")?,
            },
            "resume" => Record::Resume {
                p: s("p")?,
                ts: u("ts")?,
            },
            "kill" => Record::Kill {
                p: s("p")?,
                ts: u("ts")?,
            },
            "restart" => Record::Restart {
                ts: u("ts")?,
                end: u("end")?,
            },
            "failover" => Record::Failover {
                from: u("from")?,
                cut: u("cut")?,
                ts: u("ts")?,
                end: u("end")?,
                lossy: v["lossy"].as_bool().ok_or("failover needs lossy")?,
                step: v["step"].as_bool().ok_or("failover needs step")?,
            },
            other => return Err(format!("unknown event {other:?}: {line}")),
        })
    }
}

/// Parses a whole history. A last line without its newline is a record a
/// killed process was writing: it is dropped. Any other bad line is an error.
pub fn parse(text: &str) -> Result<Vec<Record>, String> {
    let complete = text.ends_with('\n') || text.is_empty();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match Record::parse(line) {
            Ok(r) => out.push(r),
            Err(_) if !complete && i + 1 == lines.len() => {}
            Err(e) => return Err(format!("line {}: {e}", i + 1)),
        }
    }
    Ok(out)
}

/// An append-only history file shared by processes.
pub struct Writer {
    file: File,
}

impl Writer {
    pub fn open(path: &Path) -> std::io::Result<Writer> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Writer { file })
    }

    /// One `write` of one line: in the kernel's page cache (which outlives
    /// a killed process) before this returns.
    pub fn append(&mut self, record: &Record) -> std::io::Result<()> {
        let mut line = record.to_json().to_string();
        line.push('\n');
        self.file.write_all(line.as_bytes())
    }
}
