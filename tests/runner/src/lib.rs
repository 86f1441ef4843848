//! Replays the language-neutral scenario files in `tests/scenarios/`
//! against a store. The format is documented in `tests/scenarios/README.md`;
//! the C, Python and Node runners follow the same rules.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fencing::objects::Objects;
use fencing::{Entry, Error, Fence, Lease, LeaseGuard, Op, Receipt, Store, Token, WorkOutcome};
use serde_json::{json, Map, Value};

/// One scenario file.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub path: PathBuf,
    /// Store options (`clock`, `strict`, `eager_fencing`), as URL query text.
    pub query: String,
    pub steps: Vec<Value>,
}

/// The directory holding the shared scenario files.
pub fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// Every `*.json` scenario in `dir`, sorted by file name.
pub fn load_all(dir: &Path) -> Result<Vec<Scenario>, String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths.iter().map(|p| load(p)).collect()
}

pub fn load(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&doc, path)
}

pub fn parse(doc: &Value, path: &Path) -> Result<Scenario, String> {
    let name = doc["name"]
        .as_str()
        .ok_or("scenario needs a \"name\"")?
        .to_owned();
    let steps = doc["steps"]
        .as_array()
        .ok_or("scenario needs \"steps\"")?
        .clone();
    let mut query = String::new();
    if let Some(options) = doc.get("options") {
        let options = options.as_object().ok_or("\"options\" must be an object")?;
        for (k, v) in options {
            let v = match v {
                Value::String(s) => s.clone(),
                Value::Bool(b) => b.to_string(),
                other => return Err(format!("option {k}: unsupported value {other}")),
            };
            let sep = if query.is_empty() { "" } else { "&" };
            let _ = write!(query, "{sep}{k}={v}");
        }
    }
    Ok(Scenario {
        name,
        path: path.to_owned(),
        query,
        steps,
    })
}

impl Scenario {
    /// The URL for this scenario on a backend whose base URL is `base`
    /// (`memory:`, `sqlite:/tmp/x.db`, ...).
    pub fn url(&self, base: &str) -> String {
        if self.query.is_empty() {
            base.to_owned()
        } else if base.contains('?') {
            format!("{base}&{}", self.query)
        } else {
            format!("{base}?{}", self.query)
        }
    }

    /// Opens a store at `base` and replays every step; the first mismatch is
    /// the error, naming the step.
    pub fn run(&self, base: &str) -> Result<(), String> {
        let mut store = Store::open(&self.url(base)).map_err(|e| format!("open: {e}"))?;
        let mut session = Session::default();
        let result = self.steps.iter().enumerate().try_for_each(|(i, step)| {
            run_session_step(&mut store, &mut session, step)
                .map_err(|e| format!("step {} ({}): {e}", i + 1, step))
        });
        drop(session);
        store.close();
        result
    }
}

/// The throwaway PostgreSQL server's URL (`FENCING_TEST_PG_URL`, set by
/// `scripts/pg-cluster run`), or `None` when there is none. With
/// `FENCING_REQUIRE_PG=1` (CI) a missing server is a failure, not a skip.
pub fn postgres_test_url() -> Option<String> {
    match std::env::var("FENCING_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("FENCING_REQUIRE_PG").as_deref() == Ok("1") => {
            panic!("FENCING_REQUIRE_PG=1 but FENCING_TEST_PG_URL is not set: run under scripts/pg-cluster run")
        }
        _ => {
            eprintln!(
                "skipped: no PostgreSQL (run the tests under `scripts/pg-cluster run -- ...`)"
            );
            None
        }
    }
}

/// The throwaway etcd cluster's members (`FENCING_TEST_ETCD_CLUSTER`, set
/// by `scripts/etcd-cluster run`) as an `etcd://` URL's host list, or
/// `None` when there is none. With `FENCING_REQUIRE_ETCD=1` (CI) a missing
/// cluster is a failure, not a skip.
pub fn etcd_test_members() -> Option<String> {
    match std::env::var("FENCING_TEST_ETCD_CLUSTER") {
        Ok(members) if !members.is_empty() => Some(members),
        _ if std::env::var("FENCING_REQUIRE_ETCD").as_deref() == Ok("1") => {
            panic!("FENCING_REQUIRE_ETCD=1 but FENCING_TEST_ETCD_CLUSTER is not set: run under scripts/etcd-cluster run")
        }
        _ => {
            eprintln!("skipped: no etcd (run the tests under `scripts/etcd-cluster run -- ...`)");
            None
        }
    }
}

/// A schema name no earlier run used: the tests share one server.
pub fn fresh_schema(tag: &str) -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("t_{tag}_{}_{nanos}", std::process::id())
}

/// Replays every shared scenario, each on the store `base_url(i)` names
/// (a fresh one per scenario), and fails with every scenario that failed.
pub fn run_all(base_url: impl Fn(usize) -> String) -> Result<usize, String> {
    let scenarios = load_all(&scenario_dir())?;
    let failures: Vec<String> = scenarios
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            s.run(&base_url(i))
                .err()
                .map(|e| format!("{}: {e}", s.path.display()))
        })
        .collect();
    if failures.is_empty() {
        Ok(scenarios.len())
    } else {
        Err(format!(
            "{} of {} scenario(s) failed:\n{}",
            failures.len(),
            scenarios.len(),
            failures.join("\n")
        ))
    }
}

/// What a scenario keeps between its steps: the leases it holds with
/// `hold`, by scope, until `finish`; its objects handle (`memory:`), opened
/// by its first `object_*` step.
#[derive(Default)]
pub struct Session {
    holds: HashMap<String, LeaseGuard>,
    objects: Option<Objects>,
}

impl Session {
    fn objects(&mut self) -> Result<&Objects, Error> {
        if self.objects.is_none() {
            self.objects = Some(Objects::open("memory:")?);
        }
        Ok(self.objects.as_ref().expect("opened above"))
    }
}

/// Runs one step against the store and compares the outcome with the
/// step's `expect` (success, subset match) or `error` (code and details).
/// A `hold` here ends with the step (see [`run_session_step`]).
pub fn run_step(store: &mut Store, step: &Value) -> Result<(), String> {
    run_session_step(store, &mut Session::default(), step)
}

/// [`run_step`], keeping what a step leaves for later ones (a `hold`'s
/// lease, the objects handle) in `session`.
pub fn run_session_step(
    store: &mut Store,
    session: &mut Session,
    step: &Value,
) -> Result<(), String> {
    let op = step["op"].as_str();
    let outcome = match op {
        Some("hold") => hold(store, &mut session.holds, step)?.map_err(|e| render_error(&e)),
        Some("finish") => finish(&mut session.holds, step)?,
        Some(op) if op.starts_with("object_") => {
            objects_step(session, op, step)?.map_err(|e| render_error(&e))
        }
        _ => execute(store, step)?.map_err(|e| render_error(&e)),
    };
    match (step.get("error"), outcome) {
        (Some(want), Err(got)) => subset(want, &got).map_err(|m| format!("error {got}: {m}")),
        (Some(want), Ok(got)) => Err(format!("expected error {want}, got success {got}")),
        (None, Err(got)) => Err(format!("unexpected error {got}")),
        (None, Ok(got)) => match step.get("expect") {
            Some(want) => subset(want, &got).map_err(|m| format!("result {got}: {m}")),
            None => Ok(()),
        },
    }
}

/// Decoding problems in the file are the runner's failure (`Err` outside),
/// outcomes of the operation are the step's result (`Ok(Err)` inside).
type Outcome = Result<Value, Error>;

fn execute(store: &mut Store, step: &Value) -> Result<Outcome, String> {
    let op = step["op"].as_str().ok_or("step needs an \"op\"")?;
    let a = Args(step);
    let scope = || a.string("scope");
    Ok(match op {
        "open" => Store::open(&a.string("url")?).map(|s| {
            s.close();
            json!({})
        }),
        "close" => {
            store.close();
            Ok(json!({}))
        }
        "next_token" => store
            .next_token(&scope()?)
            .map(|t| json!({ "token": t.to_string() })),
        "advance_counter" => {
            let scope = scope()?;
            a.token("floor")
                .and_then(|floor| store.advance_counter(&scope, floor))
                .map(|c| json!({ "counter": c.to_string() }))
        }
        "acquire" => {
            let (scope, holder) = (scope()?, a.string("holder")?);
            a.ms("ttl_ms")
                .and_then(|ttl| store.acquire(&scope, &holder, ttl))
                .map(|l| render_lease(&l))
        }
        "acquire_wait" => {
            let (scope, holder) = (scope()?, a.string("holder")?);
            a.ms("ttl_ms")
                .and_then(|ttl| Ok((ttl, a.ms("timeout_ms")?)))
                .and_then(|(ttl, timeout)| store.acquire_wait(&scope, &holder, ttl, timeout))
                .map(|l| render_lease(&l))
        }
        "renew" => {
            let scope = scope()?;
            a.token("token")
                .and_then(|token| Ok((token, a.ms("ttl_ms")?)))
                .and_then(|(token, ttl)| store.renew(&scope, token, ttl))
                .map(|l| render_lease(&l))
        }
        "release" => {
            let scope = scope()?;
            a.token("token")
                .and_then(|token| store.release(&scope, token))
                .map(|r| json!({ "released": r }))
        }
        "put" | "delete" => {
            let (scope, key) = (scope()?, a.string("key")?);
            let op = || -> Result<Op, Error> {
                let op = if op == "put" {
                    Op::put(key, a.value()?)
                } else {
                    Op::delete(key)
                };
                a.with_version(op)
            };
            a.fence()
                .and_then(|fence| store.execute(&scope, &fence, op()?))
                .map(|r| render_receipt(&r))
        }
        "apply" => {
            let scope = scope()?;
            a.fence()
                .and_then(|fence| store.apply(&scope, &fence, a.ops()?))
                .map(|rs| json!({ "receipts": rs.iter().map(render_receipt).collect::<Vec<_>>() }))
        }
        "claim" => {
            let scope = scope()?;
            a.fence()
                .and_then(|fence| store.claim(&scope, &fence))
                .map(|()| json!({}))
        }
        "get" => {
            let (scope, key) = (scope()?, a.string("key")?);
            a.optional_fence()
                .and_then(|fence| store.get(&scope, &key, fence.as_ref()))
                .map(|e| render_entry(e.as_ref()))
        }
        "list" => {
            let scope = scope()?;
            let page = || -> Result<Value, Error> {
                let after = a.optional_string("after")?;
                let limit = a.optional_u64("limit")?.unwrap_or(100);
                let limit = usize::try_from(limit).unwrap_or(usize::MAX);
                let p = store.list(&scope, after.as_deref(), limit)?;
                Ok(json!({ "keys": p.keys, "next": p.next }))
            };
            page()
        }
        "fence_of" => store
            .fence_of(&scope()?)
            .map(|f| json!({ "fence": f.to_string() })),
        "status" => store.status(&scope()?).map(|s| {
            json!({
                "counter": s.counter.to_string(),
                "fence": s.fence.to_string(),
                "lease": s.lease.as_ref().map(render_lease),
                "entries": s.entries.to_string(),
            })
        }),
        "retire" => store.retire(&scope()?).map(|r| json!({ "retired": r })),
        "advance_clock" => a
            .ms("ms")
            .and_then(|by| store.advance_clock(by))
            .map(|()| json!({})),
        "metrics" => Ok(render_metrics(store)),
        other => return Err(format!("unknown op {other:?}")),
    })
}

/// The fenced objects' steps, on the scenario's own `memory:` handle.
fn objects_step(session: &mut Session, op: &str, step: &Value) -> Result<Outcome, String> {
    let a = Args(step);
    if op == "object_open" {
        return Ok(Objects::open(&a.string("url")?).map(|_| json!({})));
    }
    let path = a.string("path")?;
    let objects = match session.objects() {
        Ok(objects) => objects,
        Err(e) => return Ok(Err(e)),
    };
    Ok(match op {
        "object_put" => a
            .fence()
            .and_then(|fence| {
                let version = a.decimal("expected_version")?;
                objects.put(&path, &fence, &a.value()?, version)
            })
            .map(|r| render_receipt(&r)),
        "object_delete" => a
            .fence()
            .and_then(|fence| objects.delete(&path, &fence, a.decimal("expected_version")?))
            .map(|r| render_receipt(&r)),
        "object_get" => objects.get(&path).map(|o| match o {
            None => render_found(None),
            Some(o) => render_found(Some((&o.bytes[..], o.version, o.token))),
        }),
        other => return Err(format!("unknown op {other:?}")),
    })
}

/// `hold`: acquires and keeps the lease alive until `finish`.
fn hold(
    store: &Store,
    holds: &mut HashMap<String, LeaseGuard>,
    step: &Value,
) -> Result<Outcome, String> {
    let a = Args(step);
    let (scope, holder) = (a.string("scope")?, a.string("holder")?);
    if holds.contains_key(&scope) {
        return Err(format!("{scope:?} is already held by an earlier hold step"));
    }
    Ok(a.ms("ttl_ms")
        .and_then(|ttl| store.lease(&scope, &holder, ttl))
        .map(|guard| {
            let lease = render_lease(&guard.lease());
            holds.insert(scope, guard);
            lease
        }))
}

/// `finish`: ends the held lease with the work's outcome; the verdict is
/// `{released: true}` or the loss, with `cause: "work"` when the work's
/// error is attached to it (docs/semantics.md, "Ending a held lease").
fn finish(
    holds: &mut HashMap<String, LeaseGuard>,
    step: &Value,
) -> Result<Result<Value, Value>, String> {
    let scope = Args(step).string("scope")?;
    let work = match step["work"].as_str() {
        Some("ok") => WorkOutcome::Ok,
        Some("failed") => WorkOutcome::Failed,
        other => {
            return Err(format!(
                "\"work\" must be \"ok\" or \"failed\", not {other:?}"
            ))
        }
    };
    let guard = holds
        .remove(&scope)
        .ok_or_else(|| format!("no hold step holds {scope:?}"))?;
    let end = guard.finish(work);
    Ok(match end.verdict() {
        Ok(()) => Ok(json!({ "released": true })),
        Err(e) => {
            let mut got = render_error(&e);
            got["cause"] = json!(end.attach_work_error().then_some("work"));
            Err(got)
        }
    })
}

/// Reads a step's arguments. A malformed file is the runner's error
/// (`String`); a value the API must refuse (a negative ttl, a token outside
/// the domain) becomes the operation's `INVALID_ARGUMENT`, as it would at
/// any binding's boundary.
struct Args<'a>(&'a Value);

impl Args<'_> {
    fn string(&self, name: &str) -> Result<String, String> {
        text(&self.0[name]).ok_or_else(|| format!("missing string {name:?}"))
    }

    fn optional_string(&self, name: &str) -> Result<Option<String>, Error> {
        match &self.0[name] {
            Value::Null => Ok(None),
            v => text(v)
                .map(Some)
                .ok_or_else(|| Error::InvalidArgument(format!("{name} must be a string"))),
        }
    }

    /// A token-domain number, written as canonical decimal text.
    fn decimal(&self, name: &str) -> Result<Option<u64>, Error> {
        match &self.0[name] {
            Value::Null => Ok(None),
            Value::String(s) => fencing::parse_token_value(s).map(Some),
            other => Err(Error::InvalidArgument(format!(
                "{name} must be decimal text, got {other}"
            ))),
        }
    }

    fn token(&self, name: &str) -> Result<Token, Error> {
        match &self.0[name] {
            Value::String(s) => s.parse(),
            other => Err(Error::InvalidArgument(format!(
                "{name} must be a token, got {other}"
            ))),
        }
    }

    fn optional_u64(&self, name: &str) -> Result<Option<u64>, Error> {
        match &self.0[name] {
            Value::Null => Ok(None),
            v => v.as_u64().map(Some).ok_or_else(|| {
                Error::InvalidArgument(format!("{name} must be a non-negative integer, got {v}"))
            }),
        }
    }

    fn ms(&self, name: &str) -> Result<Duration, Error> {
        match self.optional_u64(name)? {
            Some(ms) => Ok(Duration::from_millis(ms)),
            None => Err(Error::InvalidArgument(format!("missing {name}"))),
        }
    }

    fn fence(&self) -> Result<Fence, Error> {
        let mut fence = Fence::new(self.token("token")?);
        fence.seq = self.decimal("seq")?;
        fence.holder = self.optional_string("holder")?;
        Ok(fence)
    }

    fn optional_fence(&self) -> Result<Option<Fence>, Error> {
        match self.0.get("token") {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.fence().map(Some),
        }
    }

    fn value(&self) -> Result<Vec<u8>, Error> {
        value_of(self.0)
    }

    fn with_version(&self, op: Op) -> Result<Op, Error> {
        Ok(match self.decimal("expected_version")? {
            Some(v) => op.if_version(v),
            None => op,
        })
    }

    fn ops(&self) -> Result<Vec<Op>, Error> {
        let list = self.0["ops"]
            .as_array()
            .ok_or_else(|| Error::InvalidArgument("ops must be a list".into()))?;
        list.iter()
            .map(|item| {
                let a = Args(item);
                let op = if let Some(key) = text(&item["put"]) {
                    Op::put(key, a.value()?)
                } else if let Some(key) = text(&item["delete"]) {
                    Op::delete(key)
                } else {
                    return Err(Error::InvalidArgument(format!("bad batch item {item}")));
                };
                a.with_version(op)
            })
            .collect()
    }
}

/// A string field: literal text, or `{"repeat": "ab", "count": 3}` for
/// inputs too long to write out.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => {
            let unit = o.get("repeat")?.as_str()?;
            let count = usize::try_from(o.get("count")?.as_u64()?).ok()?;
            Some(unit.repeat(count))
        }
        _ => None,
    }
}

fn value_of(step: &Value) -> Result<Vec<u8>, Error> {
    if let Some(s) = text(&step["value"]) {
        return Ok(s.into_bytes());
    }
    if let Some(hex) = step["value_hex"].as_str() {
        return decode_hex(hex).ok_or_else(|| Error::InvalidArgument("bad value_hex".into()));
    }
    Err(Error::InvalidArgument("missing value".into()))
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn render_lease(l: &Lease) -> Value {
    json!({
        "scope": l.scope,
        "holder": l.holder,
        "token": l.token.to_string(),
        "ttl_ms": l.ttl.as_millis() as u64,
        "remaining_ms": l.remaining.as_millis() as u64,
    })
}

fn render_receipt(r: &Receipt) -> Value {
    json!({ "version": r.version.to_string(), "token": r.token.to_string() })
}

fn render_entry(e: Option<&Entry>) -> Value {
    render_found(e.map(|e| (&e.value[..], e.version, e.token)))
}

/// What `get` and `object_get` answer: the bytes, version and token found.
fn render_found(found: Option<(&[u8], u64, Token)>) -> Value {
    match found {
        None => json!({ "found": false }),
        Some((bytes, version, token)) => {
            let mut v = json!({
                "found": true,
                "value_hex": encode_hex(bytes),
                "value_len": bytes.len(),
                "version": version.to_string(),
                "token": token.to_string(),
            });
            if let Ok(s) = std::str::from_utf8(bytes) {
                v["value"] = json!(s);
            }
            v
        }
    }
}

fn render_metrics(store: &Store) -> Value {
    let snap = store.metrics();
    let mut out = Map::new();
    for (name, _, value) in snap.counters() {
        out.insert(name.to_owned(), json!(value.to_string()));
    }
    let rejections: Vec<Value> = snap
        .rejections
        .iter()
        .map(|r| {
            json!({
                "code": r.code.as_str(),
                "scope": r.scope,
                "key": r.key,
                "presented": r.presented.to_string(),
                "current": r.current.to_string(),
                "holder": r.holder,
            })
        })
        .collect();
    out.insert("rejections".into(), json!(rejections));
    Value::Object(out)
}

/// An error as the scenario files spell it: the code and the core's details
/// (`Error::details_json`).
pub fn render_error(err: &Error) -> Value {
    let mut v = err.details_json();
    v.insert("code".into(), json!(err.code().as_str()));
    Value::Object(v)
}

/// `want` matches `got` when every field of `want` is in `got` with a
/// matching value; arrays must have the same length and match item by item.
pub fn subset(want: &Value, got: &Value) -> Result<(), String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => w.iter().try_for_each(|(k, wv)| match g.get(k) {
            Some(gv) => subset(wv, gv).map_err(|m| format!("{k}: {m}")),
            None if wv.is_null() => Ok(()),
            None => Err(format!("{k}: missing, expected {wv}")),
        }),
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => w
            .iter()
            .zip(g)
            .enumerate()
            .try_for_each(|(i, (wv, gv))| subset(wv, gv).map_err(|m| format!("[{i}]: {m}"))),
        _ if want == got => Ok(()),
        _ => Err(format!("expected {want}, got {got}")),
    }
}
