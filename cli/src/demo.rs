//! `fencing demo`: the paused-worker story with real processes.
//!
//! The demo re-executes this binary twice as hidden `demo-worker`s. Worker A
//! acquires a short lease and starts its update; the demo freezes it with
//! SIGSTOP (on Windows, every thread suspended) until its lease has expired;
//! worker B acquires a newer token and writes the report; A is resumed
//! (SIGCONT) and writes with its old token.
//! Each worker reports what it did as lines on its stdout; the demo stamps
//! and prints them as they arrive.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fencing::{Error, Fence, Store};

use crate::cli::{DemoArgs, DemoWorkerArgs};
use crate::exit::{self, Failure};
use crate::run::sys;
use crate::verbs;

const KEY: &str = "body";
/// How long the demo waits for any one step before giving up.
const STEP_LIMIT: Duration = Duration::from_secs(30);

fn body(name: &str, token: impl std::fmt::Display) -> String {
    format!("report written by worker {name} with token {token}")
}

// ----- the worker -----

pub fn worker(url_arg: Option<&str>, args: DemoWorkerArgs) -> Result<u8, Failure> {
    let url = verbs::url(url_arg)?;
    let report = |line: String| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    };
    let run = || -> Result<(), Error> {
        let store = Store::open(&url)?;
        let holder = format!("worker-{}@pid:{}", args.name, std::process::id());
        // A lease left by an interrupted earlier demo expires within its TTL.
        let lease = store.acquire_wait(&args.scope, &holder, args.ttl, STEP_LIMIT)?;
        let token = lease.token;
        report(format!("acquired {token}"));
        if args.pause_point {
            report("started".into());
            // The update's input; the demo sends it once A is resumed.
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
        }
        let text = body(&args.name, token);
        match &args.unfenced_file {
            Some(path) => match std::fs::write(path, &text) {
                Ok(()) => report("wrote-file".into()),
                Err(e) => report(format!("error OTHER cannot write {}: {e}", path.display())),
            },
            None => {
                let fence = Fence::new(token).with_holder(holder.as_str());
                match store.put(&args.scope, KEY, text.as_bytes(), &fence) {
                    Ok(r) => report(format!("wrote {}", r.version)),
                    Err(Error::StaleToken { current, .. }) => report(format!("stale {current}")),
                    Err(e) => return Err(e),
                }
            }
        }
        store.release(&args.scope, token)?;
        Ok(())
    };
    if let Err(e) = run() {
        report(format!("error {} {}", e.code(), exit::message(&e)));
        return Err(Failure::Store(e));
    }
    Ok(0)
}

// ----- the narrator -----

/// A worker process that is resumed and killed if the demo stops early.
struct Worker {
    name: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    done: bool,
}

impl Worker {
    fn finish(&mut self) -> Result<(), Failure> {
        self.stdin = None;
        let status = self
            .child
            .wait()
            .map_err(|e| Failure::Other(format!("cannot wait for worker {}: {e}", self.name)))?;
        self.done = true;
        if status.success() {
            Ok(())
        } else {
            Err(Failure::Other(format!(
                "worker {} failed: {status}",
                self.name
            )))
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if !self.done {
            let _ = sys::resume(&self.child);
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

struct Story {
    start: Instant,
    events: mpsc::Receiver<(&'static str, String)>,
    sender: mpsc::Sender<(&'static str, String)>,
}

impl Story {
    fn say(&self, who: &str, token: Option<&str>, what: &str) {
        let ms = self.start.elapsed().as_millis();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "{ms:>7} ms  {who:<9} {:>6}  {what}",
            token.unwrap_or("")
        );
        let _ = out.flush();
    }

    fn spawn(
        &self,
        url: &str,
        name: &'static str,
        args: &DemoArgs,
        file: Option<&PathBuf>,
    ) -> Result<Worker, Failure> {
        let exe = std::env::current_exe()
            .map_err(|e| Failure::Other(format!("cannot find the fencing binary: {e}")))?;
        let mut cmd = Command::new(exe);
        // In the environment, not on the command line, where anyone could
        // read a password in it.
        cmd.env("FENCING_URL", url)
            .env_remove("FENCING_URL_FILE")
            .arg("demo-worker")
            .arg("--name")
            .arg(name)
            .arg("--scope")
            .arg(&args.scope)
            .arg("--ttl")
            .arg(humantime::format_duration(args.ttl).to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if name == "A" {
            cmd.arg("--pause-point");
        }
        if let Some(f) = file {
            cmd.arg("--unfenced-file").arg(f);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| Failure::Other(format!("cannot start worker {name}: {e}")))?;
        let stdout = child.stdout.take();
        let stdin = child.stdin.take();
        let sender = self.sender.clone();
        if let Some(stdout) = stdout {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if sender.send((name, line)).is_err() {
                        return;
                    }
                }
                let _ = sender.send((name, "eof".into()));
            });
        }
        Ok(Worker {
            name,
            child,
            stdin,
            done: false,
        })
    }

    /// The next line from `who`; a worker's error becomes the demo's.
    fn next(&self, who: &str) -> Result<Vec<String>, Failure> {
        let deadline = Instant::now() + STEP_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (name, line) = self.events.recv_timeout(left).map_err(|_| {
                Failure::Other(format!("worker {who} did not answer within {STEP_LIMIT:?}"))
            })?;
            if name != who {
                continue;
            }
            let words: Vec<String> = line.split(' ').map(str::to_owned).collect();
            match words[0].as_str() {
                "eof" => return Err(Failure::Other(format!("worker {who} exited early"))),
                "error" => {
                    let code = words.get(1).map_or("", String::as_str);
                    let message = words.get(2..).map(|w| w.join(" ")).unwrap_or_default();
                    return Err(match fencing::ErrorCode::from_name(code) {
                        Some(c) => Failure::Store(rebuild(c, message)),
                        None => Failure::Other(format!("worker {who}: {message}")),
                    });
                }
                _ => return Ok(words),
            }
        }
    }

    fn expect(&self, who: &str, what: &str) -> Result<Vec<String>, Failure> {
        let words = self.next(who)?;
        if words[0] == what {
            Ok(words)
        } else {
            Err(Failure::Other(format!(
                "worker {who} said {:?}, expected {what}",
                words.join(" ")
            )))
        }
    }
}

/// A worker's error, for the demo's own exit status and line.
fn rebuild(code: fencing::ErrorCode, message: String) -> Error {
    use fencing::ErrorCode as C;
    match code {
        C::InvalidArgument => Error::InvalidArgument(message),
        C::Timeout => Error::Timeout,
        C::Closed => Error::Closed,
        C::TokenExhausted => Error::TokenExhausted,
        _ => Error::backend(fencing::BackendErrorKind::Other, message),
    }
}

pub fn main(url_arg: Option<&str>, args: DemoArgs) -> Result<u8, Failure> {
    let url = verbs::url(url_arg)?;
    let store = verbs::open(&url)?;
    if store.backend_kind() == fencing::BackendKind::Memory {
        return Err(Failure::invalid(
            "the demo runs its workers as separate processes, and a memory: store lives in one \
             process; use sqlite:PATH (the default) or postgres://...",
        ));
    }
    // A file for the unfenced write: a resource with no fence in front of it.
    let file = args
        .without_fencing
        .then(|| std::env::temp_dir().join(format!("fencing-demo-{}.txt", std::process::id())));
    let result = story(&store, &url, &args, file.as_ref());
    if let Some(f) = &file {
        let _ = std::fs::remove_file(f);
    }
    result
}

fn story(store: &Store, url: &str, args: &DemoArgs, file: Option<&PathBuf>) -> Result<u8, Failure> {
    let (sender, events) = mpsc::channel();
    let story = Story {
        start: Instant::now(),
        events,
        sender,
    };
    let ttl = humantime::format_duration(args.ttl).to_string();
    let fenced = file.is_none();
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "fencing demo: two worker processes, one report, a {ttl} lease"
        );
        let _ = writeln!(
            out,
            "store {}, scope {:?}",
            verbs::without_password(url),
            args.scope
        );
        match file {
            None => {
                let _ = writeln!(
                    out,
                    "writes go through the fenced store (every write carries its token)"
                );
            }
            Some(f) => {
                let _ = writeln!(
                    out,
                    "WITHOUT FENCING: writes go to a plain file, {}, that checks nothing",
                    f.display()
                );
            }
        }
        let _ = writeln!(out, "\n{:>10}  {:<9} {:>6}  what", "time", "who", "token");
    }

    let mut a = story.spawn(url, "A", args, file)?;
    let a_token = story.expect("A", "acquired")?[1].clone();
    story.say(
        "worker A",
        Some(&a_token),
        &format!("acquired the lease ({ttl})"),
    );
    story.expect("A", "started")?;
    story.say("worker A", Some(&a_token), "started the update");
    sys::pause(&a.child).map_err(|e| Failure::Other(format!("cannot pause worker A: {e}")))?;
    story.say(
        "demo",
        None,
        &format!(
            "paused worker A with {} (think: a GC pause, a VM suspend)",
            sys::PAUSED_WITH
        ),
    );

    // Wait until the store itself no longer counts A's lease as live.
    let deadline = Instant::now() + args.ttl + STEP_LIMIT;
    loop {
        let status = store.status(&args.scope)?;
        let live = status.lease.is_some_and(|l| l.token.to_string() == a_token);
        if !live {
            break;
        }
        if Instant::now() > deadline {
            return Err(Failure::Other("worker A's lease did not expire".into()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    story.say(
        "demo",
        None,
        "worker A's lease expired; A is still paused and still believes it holds it",
    );

    let mut b = story.spawn(url, "B", args, file)?;
    let b_token = story.expect("B", "acquired")?[1].clone();
    story.say("worker B", Some(&b_token), "acquired the lease");
    if fenced {
        let v = story.expect("B", "wrote")?[1].clone();
        story.say(
            "worker B",
            Some(&b_token),
            &format!("wrote the report: accepted (version {v})"),
        );
    } else {
        story.expect("B", "wrote-file")?;
        story.say("worker B", Some(&b_token), "wrote the report file");
    }
    b.finish()?;
    story.say("worker B", Some(&b_token), "released the lease and exited");

    sys::resume(&a.child).map_err(|e| Failure::Other(format!("cannot resume worker A: {e}")))?;
    story.say(
        "demo",
        None,
        &format!("resumed worker A with {}", sys::RESUMED_WITH),
    );
    if let Some(stdin) = a.stdin.as_mut() {
        let _ = writeln!(stdin, "go");
    }
    let words = story.next("A")?;
    let a_rejected = match words[0].as_str() {
        "stale" => {
            let what = format!(
                "wrote the report: REJECTED, STALE_TOKEN (fence is at {})",
                words[1]
            );
            story.say("worker A", Some(&a_token), &what);
            true
        }
        "wrote" => {
            let what = format!("wrote the report: accepted (version {})", words[1]);
            story.say("worker A", Some(&a_token), &what);
            false
        }
        "wrote-file" => {
            story.say(
                "worker A",
                Some(&a_token),
                "wrote the report file: nothing checked its token",
            );
            false
        }
        other => return Err(Failure::Other(format!("worker A said {other:?}"))),
    };
    a.finish()?;

    let report = match file {
        None => store
            .get(&args.scope, KEY, None)?
            .map(|e| String::from_utf8_lossy(&e.value).into_owned())
            .unwrap_or_default(),
        Some(f) => std::fs::read_to_string(f)
            .map_err(|e| Failure::Other(format!("cannot read {}: {e}", f.display())))?,
    };
    let intact = report == body("B", &b_token);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "\nthe report now reads: {report:?}");
    if intact != a_rejected {
        return Err(Failure::Other(format!(
            "unexpected ending: worker A's write {} but the report reads {report:?}",
            if a_rejected {
                "was rejected"
            } else {
                "was accepted"
            }
        )));
    }
    if intact {
        let _ = writeln!(out, "\nOUTCOME: the fence held. Worker B's report is intact; worker A's stale write was rejected.\n");
        let _ = writeln!(
            out,
            "{}",
            wrap(&format!(
                "\
             Worker A acquired the lease with token {a_token} and was paused past its expiry. A \
             lease alone cannot stop it: when A woke up it still believed it held the lease, and \
             nothing on A's side could tell otherwise in time. Worker B had meanwhile acquired \
             the lease with the newer token {b_token}, and acquiring raised the scope's fence to \
             {b_token}. Every write carries its token, and the store compares it with the fence \
             in the same atomic step as the write: A's token {a_token} is older than the fence, \
             so its write was rejected with STALE_TOKEN and B's report stayed. Run `fencing demo \
             --without-fencing` to see the same pause without the fence."
            ))
        );
        Ok(0)
    } else {
        let _ = writeln!(out, "\nOUTCOME: the report was lost. Worker A's stale write (token {a_token}) overwrote worker B's report (token {b_token}).\n");
        let _ = writeln!(
            out,
            "{}",
            wrap(&format!(
                "\
             Both workers took the lease correctly; the lease still failed to protect the \
             report. Worker A was paused past its lease's expiry and, when it woke, wrote as if \
             it still held the lease: the file accepts any write, so the last writer won, and \
             the last writer was the stale one. No lease timeout fixes this, because the pause \
             can always be longer. A fenced write fixes it: run `fencing demo` to see the store \
             reject A's token {a_token} once it has seen {b_token}."
            ))
        );
        Ok(exit::DEMO_REPORT_LOST)
    }
}

/// Breaks a paragraph into lines of at most 90 columns.
fn wrap(text: &str) -> String {
    let mut out = String::new();
    let mut width = 0;
    for word in text.split_whitespace() {
        if width > 0 && width + 1 + word.len() > 90 {
            out.push('\n');
            width = 0;
        } else if width > 0 {
            out.push(' ');
            width += 1;
        }
        out.push_str(word);
        width += word.len();
    }
    out
}
