//! One verb per store operation, for shell scripts.

use std::ffi::{OsStr, OsString};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fencing::{parse_token_value, Error, Fence, Lease, Op, Store, Token};
use serde_json::{json, Value};

use crate::cli::{Command, FenceArgs, DEFAULT_URL};
use crate::exit::Failure;
use crate::output;

/// The store URL the command line or the environment gives, if any:
/// `--url URL` or `--url-file PATH` (clap refuses both), else
/// `$FENCING_URL` or `$FENCING_URL_FILE` (both set is `INVALID_ARGUMENT`:
/// which store was meant?); empty variables count as unset. A file's
/// contents are trimmed, and never shown: they may hold a password.
pub fn given_url(url: Option<OsString>, file: Option<PathBuf>) -> Result<Option<String>, Failure> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let (url, file) = match (url, file) {
        (None, None) => match (set("FENCING_URL"), set("FENCING_URL_FILE")) {
            (Some(_), Some(_)) => {
                return Err(Failure::invalid(
                    "both $FENCING_URL and $FENCING_URL_FILE are set: unset one",
                ))
            }
            (url, file) => (url, file.map(PathBuf::from)),
        },
        given => given,
    };
    if let Some(url) = url {
        return Ok(Some(text("the store URL", &url)?.to_owned()));
    }
    let Some(path) = file else { return Ok(None) };
    let cannot = |e: String| Failure::invalid(format!("the URL file {path:?}: {e}"));
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| {
            // Far more than any URL the core accepts (it refuses the rest).
            f.take(64 * 1024).read_to_end(&mut bytes)
        })
        .map_err(|e| cannot(e.to_string()))?;
    let url = std::str::from_utf8(&bytes)
        .map_err(|_| cannot("not valid UTF-8".into()))?
        .trim();
    if url.is_empty() {
        return Err(cannot("empty".into()));
    }
    Ok(Some(url.to_owned()))
}

/// The URL given, else the embedded default.
pub fn url(url: Option<&str>) -> Result<String, Failure> {
    Ok(url.unwrap_or(DEFAULT_URL).to_owned())
}

/// [`url`] for the commands that take a lease (`run`, `acquire`, `renew`,
/// `release`) or watch one (`watch`: on the wrong store it shows a free
/// lease forever), which say once on stderr which store they use: always as a
/// warning when no URL was given (the default is relative to the working
/// directory, so commands started from different directories would use
/// different stores and exclude nothing), and on a terminal otherwise (a
/// script's stderr stays quiet). The password never appears.
pub fn announced_url(url_arg: Option<&str>) -> Result<String, Failure> {
    let chosen = url(url_arg)?;
    let notice = match url_arg {
        None => Some(default_warning()),
        Some(_) if std::io::stderr().is_terminal() => {
            Some(format!("fencing: store {}", without_password(&chosen)))
        }
        Some(_) => None,
    };
    if let Some(notice) = notice {
        let _ = writeln!(std::io::stderr().lock(), "{notice}");
    }
    Ok(chosen)
}

fn default_warning() -> String {
    let file = DEFAULT_URL.trim_start_matches("sqlite:");
    let here = std::env::current_dir()
        .map(|d| d.join(file).display().to_string())
        .unwrap_or_else(|_| file.to_owned());
    format!(
        "fencing: warning: no --url, --url-file, $FENCING_URL or $FENCING_URL_FILE, so the \
         store is the default \
         {DEFAULT_URL} in the working directory ({here}); commands started elsewhere use \
         another store and do not exclude this one: set FENCING_URL=sqlite:{here}"
    )
}

/// The URL as it may be shown: a password in the user part or in the query
/// (`password=`) becomes `***`.
pub fn without_password(url: &str) -> String {
    replace_password(url, Some("***"))
}

/// The URL with no password at all, for `fencing run`'s CMD: the user part
/// keeps only the name, a `password=` query option is dropped.
pub fn stripped_of_password(url: &str) -> String {
    replace_password(url, None)
}

fn replace_password(url: &str, mask: Option<&str>) -> String {
    let (mut shown, rest) = match user_info(url) {
        Some((scheme, name, after)) => match mask {
            Some(mask) => (format!("{scheme}://{name}:{mask}@"), after),
            None => (format!("{scheme}://{name}@"), after),
        },
        None => (String::new(), url),
    };
    let (base, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    shown.push_str(base);
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .filter_map(|pair| match (pair.split_once('='), mask) {
                (Some((k, _)), Some(mask)) if k == "password" => Some(format!("{k}={mask}")),
                (Some(("password", _)), None) => None,
                _ => Some(pair.to_owned()),
            })
            .collect();
        if !pairs.is_empty() {
            shown.push('?');
            shown.push_str(&pairs.join("&"));
        }
    }
    shown
}

/// `(scheme, user name, what follows the user info's '@')` of a
/// `scheme://user:password@...` URL; `None` when it has no password.
///
/// The user info ends at the last '@' before the query: a password may
/// hold a raw '/' or '@' (it should be percent-encoded, but must not be
/// shown or passed on either way), and a query value may hold an '@' of
/// its own. A query option whose name holds an '@' is the rest of a
/// password with a raw '?' (which the core refuses to open); its text is
/// the password's up to that '@'. (The core's rule for the URLs it shows,
/// `url::without_password`, which is not public; here also stripping the
/// password and `password=` in the query.)
fn user_info(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let query = rest.find('?').unwrap_or(rest.len());
    let at = match rest[..query].rfind('@') {
        Some(at) => at,
        None => {
            let first = rest.get(query + 1..)?.split('&').next()?;
            let name = first.split('=').next()?;
            query + 1 + name.rfind('@')?
        }
    };
    let (name, _) = rest[..at].split_once(':')?;
    Some((scheme, name, &rest[at + 1..]))
}

/// The bytes to write: `--value V`, else the file `--file PATH`, else
/// stdin to its end. With a limit, at most one byte more is read, so that a
/// huge input is refused without being held in memory.
pub fn input(
    value: Option<&OsStr>,
    file: Option<&Path>,
    limit: Option<usize>,
) -> Result<Vec<u8>, Failure> {
    match (value, file) {
        (Some(v), _) => value_bytes(v),
        (None, Some(path)) => {
            let file = std::fs::File::open(path)
                .map_err(|e| Failure::Other(format!("cannot read the value from {path:?}: {e}")))?;
            read_value(file, &format!("{path:?}"), limit)
        }
        (None, None) => read_value(std::io::stdin().lock(), "stdin", limit),
    }
}

fn read_value(from: impl Read, what: &str, limit: Option<usize>) -> Result<Vec<u8>, Failure> {
    let cannot =
        |e: std::io::Error| Failure::Other(format!("cannot read the value from {what}: {e}"));
    let mut buf = Vec::new();
    let Some(limit) = limit else {
        let mut from = from;
        from.read_to_end(&mut buf).map_err(cannot)?;
        return Ok(buf);
    };
    from.take(limit as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(cannot)?;
    if buf.len() > limit {
        return Err(Failure::invalid(format!(
            "value is more than {limit} bytes, the limit (stopped reading {what} at {} bytes)",
            buf.len()
        )));
    }
    Ok(buf)
}

pub fn open(url: &str) -> Result<Store, Failure> {
    Ok(Store::open(url)?)
}

/// A text argument; not UTF-8 is `INVALID_ARGUMENT` like any other bad name.
pub fn text<'a>(what: &str, raw: &'a OsStr) -> Result<&'a str, Failure> {
    raw.to_str()
        .ok_or_else(|| Failure::invalid(format!("{what} is not valid UTF-8: {raw:?}")))
}

pub fn token(raw: &OsStr) -> Result<Token, Failure> {
    token_named("--token", raw)
}

fn token_named(what: &str, raw: &OsStr) -> Result<Token, Failure> {
    text(what, raw)?
        .parse::<Token>()
        .map_err(|e| Failure::invalid(format!("{what}: {}", crate::exit::message(&e))))
}

/// A seq, version or floor: canonical decimal in `0..=2^63-1`, like tokens.
pub fn number(flag: &str, raw: &OsStr) -> Result<u64, Failure> {
    let t = text(flag, raw)?;
    parse_token_value(t).map_err(|_| {
        Failure::invalid(format!(
            "{flag} must be canonical decimal in 0..={}, got {:?}",
            Token::MAX,
            t
        ))
    })
}

/// USER@HOST:PID, the holder label when none is given (on Windows from
/// USERNAME and COMPUTERNAME).
pub fn default_holder() -> String {
    #[cfg(unix)]
    let (user, host) = (
        std::env::var("USER").ok(),
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok()),
    );
    #[cfg(not(unix))]
    let (user, host) = (
        std::env::var("USERNAME").ok(),
        std::env::var("COMPUTERNAME").ok(),
    );
    let user = user.unwrap_or_else(|| "fencing".to_owned());
    let host = host.unwrap_or_else(|| "localhost".to_owned());
    format!("{user}@{host}:{}", std::process::id())
}

/// `--value V` as bytes: any bytes on unix; on Windows, where arguments are
/// UTF-16, text (its UTF-8).
fn value_bytes(v: &OsStr) -> Result<Vec<u8>, Failure> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(v.as_bytes().to_vec())
    }
    #[cfg(not(unix))]
    {
        Ok(text("the value", v)?.as_bytes().to_vec())
    }
}

pub fn holder(raw: Option<&OsStr>) -> Result<String, Failure> {
    match raw {
        None => Ok(default_holder()),
        Some(h) => Ok(text("the holder", h)?.to_owned()),
    }
}

pub fn fence(args: &FenceArgs) -> Result<Fence, Failure> {
    let mut f = Fence::new(token(&args.token.token)?);
    if let Some(seq) = &args.seq {
        f = f.with_seq(number("--seq", seq)?);
    }
    if let Some(h) = &args.holder {
        f = f.with_holder(text("the holder", h)?);
    }
    Ok(f)
}

/// `acquire`, or `acquire_wait` with a progress line on a terminal when the
/// wait may last more than a second.
pub fn acquire(
    store: &Store,
    scope: &str,
    holder: &str,
    ttl: Duration,
    wait: Option<Duration>,
) -> Result<Lease, Error> {
    let Some(timeout) = wait else {
        return store.acquire(scope, holder, ttl);
    };
    with_progress(scope, timeout, || {
        store.acquire_wait(scope, holder, ttl, timeout)
    })
}

/// Runs `wait`, a wait of up to `timeout` for the lease on `scope`, with a
/// progress line on stderr when it is a terminal and the wait lasts more
/// than a second.
pub fn with_progress<T>(scope: &str, timeout: Duration, wait: impl FnOnce() -> T) -> T {
    if timeout <= Duration::from_secs(1) || !std::io::stderr().is_terminal() {
        return wait();
    }
    let (done, ticks) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || progress(scope, timeout, &ticks));
        let result = wait();
        drop(done);
        result
    })
}

fn progress(scope: &str, timeout: Duration, done: &mpsc::Receiver<()>) {
    let start = Instant::now();
    // Quiet for the first second: most waits end sooner.
    if done.recv_timeout(Duration::from_secs(1)) != Err(mpsc::RecvTimeoutError::Timeout) {
        return;
    }
    let mut err = std::io::stderr();
    loop {
        let _ = write!(
            err,
            "\r\x1b[2Kfencing: waiting for the lease on {scope:?}: {}s of {}",
            start.elapsed().as_secs(),
            if timeout == crate::cli::FOREVER {
                "forever".to_owned()
            } else {
                humantime::format_duration(timeout).to_string()
            }
        );
        let _ = err.flush();
        if done.recv_timeout(Duration::from_millis(250)) != Err(mpsc::RecvTimeoutError::Timeout) {
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            return;
        }
    }
}

/// How many recent rejections `fencing status` shows.
const STATUS_REJECTIONS: usize = 5;

/// What a verb prints on success: JSON, or the plain text.
pub struct Out {
    json: Value,
    plain: Vec<u8>,
}

impl Out {
    pub fn new(json: Value, plain: impl Into<Vec<u8>>) -> Out {
        Out {
            json,
            plain: plain.into(),
        }
    }
}

pub fn main(url_arg: Option<&str>, json: bool, command: Command) -> Result<u8, Failure> {
    let url = match command {
        Command::Acquire(_)
        | Command::Renew(_)
        | Command::Release(_)
        | Command::Migrate(_)
        | Command::Watch(_) => announced_url(url_arg)?,
        _ => url(url_arg)?,
    };
    if let Command::Events(a) = &command {
        if a.follow {
            return follow(&url, json, a);
        }
    }
    if let Command::Watch(a) = &command {
        return watch(&url, json, text("the scope", &a.scope)?);
    }
    emit(json, &verb(&url, json, command)?)?;
    Ok(0)
}

/// Prints what a verb printed, at once (a followed record prints more).
pub fn emit(json: bool, out: &Out) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    let written = if json {
        writeln!(stdout, "{}", out.json)
    } else {
        stdout.write_all(&out.plain)
    };
    written
        .and_then(|()| stdout.flush())
        .map_err(|e| Failure::Other(format!("cannot write the result: {e}")))
}

/// `fencing events --follow`: the record as `events` shows it, then each
/// rejection as the store records it, until a signal or a failure ends it.
fn follow(url: &str, json: bool, a: &crate::cli::EventsArgs) -> Result<u8, Failure> {
    let (scope, limit) = events_args(a)?;
    let store = open(url)?;
    // The watch begins before the snapshot is read, so that nothing recorded
    // in between is missed; what the snapshot shows is not printed twice.
    let watch = store.watch_rejections(scope)?;
    let ev = store.events(scope, limit)?;
    let shown = ev.rejections.first().map_or(0, |r| r.id);
    emit(
        json,
        &Out::new(output::events(scope, &ev), output::events_text(&ev)),
    )?;
    for r in watch {
        let r = r?;
        if r.id > shown {
            emit(
                json,
                &Out::new(output::rejection(&r), line(output::rejection_text(&r))),
            )?;
        }
    }
    Ok(0)
}

/// `fencing watch SCOPE`: the scope's lease as it is, then after each
/// change, one line each, until a signal or a failure ends it (as `events
/// --follow`). A store out of reach for a while does not end it.
fn watch(url: &str, json: bool, scope: &str) -> Result<u8, Failure> {
    let store = open(url)?;
    for h in store.watch(scope)? {
        let h = h?;
        emit(
            json,
            &Out::new(output::holding(&h), line(output::holding_text(&h))),
        )?;
    }
    Ok(0)
}

/// The scope and limit `fencing events` reads.
fn events_args(a: &crate::cli::EventsArgs) -> Result<(Option<&str>, usize), Failure> {
    let scope = a
        .scope
        .as_deref()
        .map(|s| text("the scope", s))
        .transpose()?;
    let limit = match &a.limit {
        None => fencing::defaults::EVENTS_LIMIT,
        Some(raw) => usize::try_from(number("--limit", raw)?).unwrap_or(usize::MAX),
    };
    Ok((scope, limit))
}

pub fn line(text: impl std::fmt::Display) -> Vec<u8> {
    format!("{text}\n").into_bytes()
}

fn verb(url: &str, json: bool, command: Command) -> Result<Out, Failure> {
    // Arguments are parsed before the store opens, so a bad token never
    // creates a database file.
    Ok(match command {
        Command::Acquire(a) => {
            let scope = text("the scope", &a.scope)?;
            let holder = holder(a.holder.as_deref())?;
            let store = open(url)?;
            let lease = acquire(&store, scope, &holder, a.ttl, a.wait)?;
            Out::new(output::lease(&lease), line(lease.token))
        }
        Command::Renew(a) => {
            let scope = text("the scope", &a.scope)?;
            let token = token(&a.token.token)?;
            let lease = open(url)?.renew(scope, token, a.ttl)?;
            Out::new(output::lease(&lease), line(lease.token))
        }
        Command::Release(a) => {
            let scope = text("the scope", &a.scope)?;
            let token = token(&a.token.token)?;
            let released = open(url)?.release(scope, token)?;
            let plain = if released { "released" } else { "not released" };
            Out::new(json!({ "released": released }), line(plain))
        }
        Command::NextToken(a) => {
            let scope = text("the scope", &a.scope)?;
            let t = open(url)?.next_token(scope)?;
            Out::new(json!({ "token": t.to_string() }), line(t))
        }
        Command::AdvanceCounter(a) => {
            let scope = text("the scope", &a.scope)?;
            let floor = token_named("FLOOR", &a.floor)?;
            let counter = open(url)?.advance_counter(scope, floor)?;
            Out::new(json!({ "counter": counter.to_string() }), line(counter))
        }
        Command::Put(a) => {
            let scope = text("the scope", &a.scope)?;
            let key = text("the key", &a.key)?;
            let fence = fence(&a.fence)?;
            let if_version = a
                .if_version
                .as_deref()
                .map(|v| number("--if-version", v))
                .transpose()?;
            let limit = Some(fencing::limits::MAX_VALUE_BYTES);
            let value = input(a.value.as_deref(), a.file.as_deref(), limit)?;
            let store = open(url)?;
            let receipt = match if_version {
                None => store.put(scope, key, &value, &fence)?,
                Some(v) => store.execute(scope, &fence, Op::put(key, value).if_version(v))?,
            };
            Out::new(
                output::receipt(&receipt),
                line(output::receipt_text(&receipt, false)),
            )
        }
        Command::Delete(a) => {
            let scope = text("the scope", &a.scope)?;
            let key = text("the key", &a.key)?;
            let fence = fence(&a.fence)?;
            let if_version = a
                .if_version
                .as_deref()
                .map(|v| number("--if-version", v))
                .transpose()?;
            let store = open(url)?;
            let receipt = match if_version {
                None => store.delete(scope, key, &fence)?,
                Some(v) => store.execute(scope, &fence, Op::delete(key).if_version(v))?,
            };
            Out::new(
                output::receipt(&receipt),
                line(output::receipt_text(&receipt, true)),
            )
        }
        Command::Get(a) => {
            let scope = text("the scope", &a.scope)?;
            let key = text("the key", &a.key)?;
            let fence = a.token.as_deref().map(token).transpose()?.map(Fence::new);
            match open(url)?.get(scope, key, fence.as_ref())? {
                Some(e) => Out::new(output::entry(&e), e.value),
                None => {
                    return Err(Failure::Store(Error::NotFound {
                        scope: scope.to_owned(),
                        key: key.to_owned(),
                    }))
                }
            }
        }
        Command::Apply(a) => {
            let scope = text("the scope", &a.scope)?;
            let fence = fence(&a.fence)?;
            let ops = crate::batch::ops(&input(None, a.file.as_deref(), None)?)?;
            let deletes: Vec<bool> = ops
                .iter()
                .map(|op| matches!(op, Op::Delete { .. }))
                .collect();
            let receipts = open(url)?.apply(scope, &fence, ops)?;
            let plain: String = receipts
                .iter()
                .zip(deletes)
                .map(|(r, deleted)| output::receipt_text(r, deleted) + "\n")
                .collect();
            let receipts: Vec<Value> = receipts.iter().map(output::receipt).collect();
            Out::new(json!({ "receipts": receipts }), plain.into_bytes())
        }
        Command::EtcdCheck(a) => {
            let scope = text("the scope", &a.scope)?;
            let fence = fence(&a.fence)?;
            let txn = open(url)?.etcd_check(scope, &fence)?.to_gateway_json();
            Out::new(txn.clone(), line(txn))
        }
        Command::Claim(a) => {
            let scope = text("the scope", &a.scope)?;
            let fence = fence(&a.fence)?;
            open(url)?.claim(scope, &fence)?;
            Out::new(
                json!({ "claimed": true, "token": fence.token.to_string() }),
                line(format_args!("claimed with token {}", fence.token)),
            )
        }
        Command::Fence(a) => {
            let scope = text("the scope", &a.scope)?;
            let f = open(url)?.fence_of(scope)?;
            Out::new(json!({ "scope": scope, "fence": f.to_string() }), line(f))
        }
        Command::Status(a) => {
            let scope = text("the scope", &a.scope)?;
            let store = open(url)?;
            let s = store.status(scope)?;
            let ev = store.events(Some(scope), STATUS_REJECTIONS)?;
            Out::new(
                output::status(scope, &s, &ev),
                output::status_text(scope, &s, &ev),
            )
        }
        Command::Events(a) => {
            let (scope, limit) = events_args(&a)?;
            let ev = open(url)?.events(scope, limit)?;
            Out::new(output::events(scope, &ev), output::events_text(&ev))
        }
        Command::List(a) => {
            let scope = text("the scope", &a.scope)?;
            let mut after = a
                .after
                .as_deref()
                .map(|k| text("--after", k).map(str::to_owned))
                .transpose()?;
            let limit = match &a.limit {
                None => fencing::defaults::LIST_LIMIT,
                Some(raw) => {
                    let n = number("--limit", raw)?;
                    usize::try_from(n).map_err(|_| Failure::invalid("--limit is too large"))?
                }
            };
            let store = open(url)?;
            let mut keys = Vec::new();
            let next = loop {
                let page = store.list(scope, after.as_deref(), limit)?;
                keys.extend(page.keys);
                match page.next {
                    Some(n) if a.all => after = Some(n),
                    other => break other,
                }
            };
            let page = fencing::Page { keys, next };
            let mut plain = String::new();
            for k in &page.keys {
                plain.push_str(k);
                plain.push('\n');
            }
            if let (Some(n), false) = (&page.next, json) {
                // Scripts read stdout; the hint goes to stderr (JSON has `next`).
                eprintln!("fencing: more keys follow: pass --after {n:?} (or --all)");
            }
            Out::new(output::page(&page), plain)
        }
        Command::Retire(a) => {
            let scope = text("the scope", &a.scope)?;
            let retired = open(url)?.retire(scope)?;
            let plain = if retired {
                "retired"
            } else {
                "nothing to retire"
            };
            Out::new(json!({ "retired": retired }), line(plain))
        }
        Command::LowerWedged(a) => {
            let scope = text("the scope", &a.scope)?;
            let bound = token(&a.bound)?;
            let lowered = open(url)?.lower_wedged(scope, bound)?;
            let plain = format!(
                "lowered: counter and fence of {scope} now stand at {lowered} (sealed: every token \
                 up to it is stale; the next issued is {})",
                lowered.saturating_add(1)
            );
            Out::new(
                json!({ "scope": scope, "lowered_to": lowered.to_string() }),
                line(&plain),
            )
        }
        Command::Failover => {
            let base = open(url)?.failover()?;
            let plain = format!(
                "failed over: every counter, fence and floor now stands at {base} or above \
                 (every earlier token is stale)"
            );
            Out::new(json!({ "stale_through": base.to_string() }), line(&plain))
        }
        Command::Migrate(args) => {
            fencing::migrate(url)?;
            let shown = without_password(url);
            let mut plain = format!("schema ready: {shown}\n");
            let mut bounded = Vec::new();
            for role in &args.worker_timeouts {
                let t = fencing::bound_worker_role(url, role)?;
                let (idle, lock) = (t.idle_in_transaction.as_millis(), t.lock.as_millis());
                plain.push_str(&format!(
                    "worker role {role}: idle_in_transaction_session_timeout = {idle} ms, \
                     lock_timeout = {lock} ms (its sessions from now on)\n"
                ));
                bounded.push(json!({
                    "role": role,
                    "idle_in_transaction_session_timeout_ms": idle as u64,
                    "lock_timeout_ms": lock as u64,
                }));
            }
            let mut out = json!({ "migrated": true, "url": shown });
            if !bounded.is_empty() {
                out["worker_timeouts"] = json!(bounded);
            }
            Out::new(out, plain)
        }
        Command::Health(args) => {
            let url = match &args.store {
                Some(store) => text("the store URL", store)?,
                None => url,
            };
            // Without opening: an open would migrate an older schema, and
            // create a missing SQLite file, instead of reporting them.
            fencing::ping(url)?;
            Out::new(
                json!({ "ok": true, "url": without_password(url) }),
                line("ok"),
            )
        }
        Command::Metrics(_) => {
            let store = open(url)?;
            let m = store.metrics();
            Out::new(output::metrics(&m), store.metrics_text())
        }
        Command::Demo(_)
        | Command::Watch(_)
        | Command::Run(_)
        | Command::DemoWorker(_)
        | Command::Object(_)
        | Command::Completions(_)
        | Command::Man => {
            unreachable!("dispatched in main")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{stripped_of_password, without_password};

    #[test]
    fn a_shown_url_never_has_the_password() {
        for (url, shown) in [
            ("sqlite:fencing.db", "sqlite:fencing.db"),
            ("postgres://u@h/db", "postgres://u@h/db"),
            (
                "postgres://u:s3cret@h:5432/db",
                "postgres://u:***@h:5432/db",
            ),
            ("postgres://u:p@ss@h/db?x=1", "postgres://u:***@h/db?x=1"),
            (
                "postgresql://h/db?password=s3cret&sslmode=require",
                "postgresql://h/db?password=***&sslmode=require",
            ),
        ] {
            assert_eq!(without_password(url), shown);
        }
    }

    #[test]
    fn a_stripped_url_has_no_password_at_all() {
        for (url, stripped) in [
            ("sqlite:fencing.db", "sqlite:fencing.db"),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("postgres://u:s3cret@h:5432/db", "postgres://u@h:5432/db"),
            ("postgres://u:p@ss@h/db?x=1", "postgres://u@h/db?x=1"),
            (
                "postgresql://h/db?password=s3cret&sslmode=require",
                "postgresql://h/db?sslmode=require",
            ),
            ("postgresql://h/db?password=s3cret", "postgresql://h/db"),
        ] {
            assert_eq!(stripped_of_password(url), stripped);
        }
    }

    /// A password may hold a raw '/' (it should be percent-encoded): the
    /// user info still ends at the last '@', as in the core's own rule.
    #[test]
    fn a_password_with_a_raw_slash_is_hidden_and_stripped() {
        for (url, shown, stripped) in [
            (
                "postgres://app:se/cret@db/fencing",
                "postgres://app:***@db/fencing",
                "postgres://app@db/fencing",
            ),
            (
                "etcd://root:hun/t@er@h:1/p",
                "etcd://root:***@h:1/p",
                "etcd://root@h:1/p",
            ),
            (
                "postgresql://u:a/b@h:5432/db?sslmode=require&password=x",
                "postgresql://u:***@h:5432/db?sslmode=require&password=***",
                "postgresql://u@h:5432/db?sslmode=require",
            ),
            // Or a raw '?'.
            (
                "postgres://u:a?b@h/db?x=1",
                "postgres://u:***@h/db?x=1",
                "postgres://u@h/db?x=1",
            ),
            // A '@' in a query value is no user info's.
            (
                "postgres://u@h:5432/db?application_name=a@b",
                "postgres://u@h:5432/db?application_name=a@b",
                "postgres://u@h:5432/db?application_name=a@b",
            ),
            (
                "postgres://u:pw@h/db?application_name=x@replica",
                "postgres://u:***@h/db?application_name=x@replica",
                "postgres://u@h/db?application_name=x@replica",
            ),
            (
                "postgres://h:5432/db?application_name=a@b&password=secret",
                "postgres://h:5432/db?application_name=a@b&password=***",
                "postgres://h:5432/db?application_name=a@b",
            ),
        ] {
            assert_eq!(without_password(url), shown, "{url}");
            assert_eq!(stripped_of_password(url), stripped, "{url}");
        }
    }
}
