//! The command line, as clap reads it. Values the core validates (scopes,
//! keys, holders, tokens, URLs) are taken as raw `OsString`s, so that a bad
//! one (not UTF-8, empty, too long, `-1`) reaches the core's checks and gets
//! `INVALID_ARGUMENT`, the same answer every other face gives.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::exit;

pub const DEFAULT_URL: &str = "sqlite:fencing.db";

/// Printed after clap's error when a write has no token.
pub const MISSING_TOKEN: &str = "\
tip: a write needs the token of a lease: pass --token T (T as `fencing acquire SCOPE` printed it), \
or set $FENCING_TOKEN, which `fencing run SCOPE -- CMD` does for CMD";

#[derive(Parser, Debug)]
#[command(
    name = "fencing",
    version,
    about = "Fencing tokens, leases and a fenced store, from the shell",
    long_about = "Fencing tokens, leases and a fenced store, from the shell.\n\n\
        Start with `fencing demo`: two real worker processes, one paused past its lease, and the \
        store rejecting its stale write.",
    after_help = exit::TABLE,
    max_term_width = 100
)]
pub struct Cli {
    /// Store URL: sqlite:PATH, memory:, postgres://... or etcd://HOST:PORT,.../PREFIX
    /// [default: $FENCING_URL, else $FENCING_URL_FILE, else sqlite:fencing.db]. Anyone on this
    /// machine can read a password given here (ps): use --url-file, PGPASSWORD or ~/.pgpass
    /// instead
    #[arg(long, global = true, value_name = "URL")]
    pub url: Option<OsString>,

    /// Read the store URL from this file (surrounding whitespace trimmed), so that no password
    /// is on the command line [default: $FENCING_URL_FILE]
    #[arg(long, global = true, value_name = "PATH", conflicts_with = "url")]
    pub url_file: Option<PathBuf>,

    /// Print each result as one JSON object (tokens as decimal strings); errors as {"error": {...}}
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// The paused-worker story with real processes: worker A is paused (SIGSTOP) past its lease,
    /// worker B takes over, A wakes and writes with its old token
    Demo(DemoArgs),
    /// Hold SCOPE's lease while CMD runs (renewing it), then release it; pass on CMD's status
    Run(RunArgs),
    /// Acquire SCOPE's lease; prints the token
    Acquire(AcquireArgs),
    /// Extend a lease that is still current; prints the token
    Renew(RenewArgs),
    /// End a lease early if it is still current; prints `released` or `not released`
    Release(ReleaseArgs),
    /// Issue the scope's next token without a lease; prints it
    NextToken(ScopeArg),
    /// Raise the scope's token counter to at least FLOOR (migrations); prints the counter
    AdvanceCounter(AdvanceArgs),
    /// Fenced write of KEY; the value comes from --value, --file or stdin; prints `version=N
    /// token=T`
    Put(PutArgs),
    /// Read KEY's value to stdout (raw bytes); with --token, a checked read
    Get(GetArgs),
    /// Fenced delete of KEY
    Delete(DeleteArgs),
    /// Fenced batch on SCOPE, all or nothing under one check: the ops are a JSON array from --file
    /// or stdin, [{"put": KEY, "value": TEXT}, {"delete": KEY}, ...], each with an optional
    /// "expected_version"; prints one line per op (`version=N token=T`, or `deleted`)
    Apply(ApplyArgs),
    /// Raise the fence to the token without writing (shut out older holders before reading)
    Claim(ClaimArgs),
    /// On an etcd store: check the token against SCOPE's fence and print, as the body of a POST to
    /// etcd's /v3/kv/txn, the compares and puts that let your own etcd transaction commit only
    /// while the token is current; add your requests to its "success" list (docs/etcd.md,
    /// "Fence your own etcd keys")
    EtcdCheck(ClaimArgs),
    /// Print the scope's fence (the greatest accepted token, 0 = none)
    Fence(ScopeArg),
    /// Show the scope's lease (holder, token, time left), counter, fence, entry count, last writer
    /// and recent rejections
    Status(ScopeArg),
    /// The store's record of recent stale-token rejections and of who last wrote each scope
    /// (newest first; never values)
    Events(EventsArgs),
    /// Who holds SCOPE's lease, live: one line for the lease as it is, then one per change
    /// (taken, renewed, released, expired; with --json one JSON object per line, the lease as
    /// `acquire --json` prints it), until stopped (Ctrl-C) or the store fails
    Watch(ScopeArg),
    /// List the scope's keys in byte order, one per line
    List(ListArgs),
    /// Drop the state of a scope with no live lease and no entries
    Retire(ScopeArg),
    /// Fenced objects and files: put, get or delete the object at URL (file:///ABS/PATH, kept in
    /// /ABS/PATH.fenced/ beside where a plain reader looks, s3://BUCKET/KEY or az://CONTAINER/BLOB). URL is an
    /// argument: --url and --url-file name the lease store, which `object` does not use
    Object(ObjectArgs),
    /// The failover step, explicit (a PostgreSQL store takes it by itself on a promoted standby):
    /// run it on a restored backup before anything else uses it; every counter, fence and floor moves to
    /// 2^40 above the store's ceiling (above every value the store held) and every lease ends, so
    /// no earlier token is accepted or issued again; prints that base (JSON: stale_through)
    Failover,
    /// The owner's recovery of a scope wedged before the jump limit existed (its fence pushed near
    /// 2^63-1 by an old fencing.check): counter and fence go down to BOUND, sealed, the lease ends;
    /// refused unless the scope is wedged and BOUND is within the jump limit and at least every
    /// token the store saw handed out for it (docs/semantics.md, "Lowering a wedged scope")
    LowerWedged(LowerWedgedArgs),
    /// Create or upgrade the store's schema (deploy time) without opening a store, so that
    /// fencing.check / fencing_check work before any process opened it; idempotent
    Migrate(MigrateArgs),
    /// Check that the store answers and its schema is this build's, without opening it (nothing
    /// is created or migrated); prints `ok`. Exit 0, or 19 (BACKEND: unreachable, not a store,
    /// schema older (run `fencing migrate`) or newer than this build's), 17 (INVALID_ARGUMENT:
    /// a bad URL)
    Health(HealthArgs),
    /// Print a shell completion script for SHELL to stdout (e.g. `fencing completions bash >
    /// /etc/bash_completion.d/fencing`)
    Completions(CompletionsArgs),
    /// Print the manual page (roff) to stdout (e.g. `fencing man | man -l -`)
    Man,
    /// Print this process's store metrics as Prometheus text (they count what this process did:
    /// for what other processes did, see `fencing events`), or serve them over HTTP
    Metrics(MetricsArgs),
    /// Internal: one worker of `fencing demo`
    #[command(hide = true)]
    DemoWorker(DemoWorkerArgs),
}

/// `fencing completions SHELL`: the script clap_complete writes for the
/// command as clap knows it, so it never lags behind a new verb.
pub fn completions(args: &CompletionsArgs, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    use clap::CommandFactory;
    let mut command = Cli::command();
    let name = command.get_name().to_owned();
    // clap_complete panics on a write error; write to memory first.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, name, &mut script);
    out.write_all(&script)
}

/// `fencing man`: fencing(1), one page that documents every verb: clap_mangen
/// renders one command per page, so each visible subcommand's synopsis,
/// description and options follow as a section of their own, their headings
/// turned into subsections (instead of a list of fencing-VERB(1) pages that
/// nothing installs).
pub fn man(out: &mut dyn std::io::Write) -> std::io::Result<()> {
    use clap::CommandFactory;
    let command = Cli::command();
    let page = clap_mangen::Man::new(command.clone());
    page.render_title(out)?;
    page.render_name_section(out)?;
    page.render_synopsis_section(out)?;
    page.render_description_section(out)?;
    page.render_options_section(out)?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        man_section(out, sub, &format!("fencing {}", sub.get_name()), None)?;
    }
    // The top command's after_help is the exit status table.
    let mut extra = Vec::new();
    page.render_extra_section(&mut extra)?;
    let extra = String::from_utf8_lossy(&extra).replace(".SH EXTRA", ".SH \"EXIT STATUS\"");
    out.write_all(extra.as_bytes())?;
    page.render_version_section(out)
}

/// One verb's section of fencing(1), its notes (after_help) unless its
/// parent's section already has them, then one for each of its own verbs
/// (`fencing object put`, ...).
fn man_section(
    out: &mut dyn std::io::Write,
    sub: &clap::Command,
    name: &str,
    parent_notes: Option<String>,
) -> std::io::Result<()> {
    writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
    let page = clap_mangen::Man::new(sub.clone().bin_name(name));
    let mut section = Vec::new();
    page.render_synopsis_section(&mut section)?;
    page.render_description_section(&mut section)?;
    page.render_options_section(&mut section)?;
    let notes = sub.get_after_help().map(|n| n.to_string());
    if notes.is_some() && notes != parent_notes {
        page.render_extra_section(&mut section)?;
    }
    for line in String::from_utf8_lossy(&section).lines() {
        match line.strip_prefix(".SH ") {
            Some("EXTRA") => writeln!(out, ".SS NOTES")?,
            Some(heading) => writeln!(out, ".SS {heading}")?,
            None => writeln!(out, "{line}")?,
        }
    }
    for nested in sub
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let nested_name = format!("{name} {}", nested.get_name());
        man_section(out, nested, &nested_name, notes.clone())?;
    }
    Ok(())
}

/// Durations like `30s`, `500ms`, `2m`, `1h 30m`.
pub fn duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text)
        .map_err(|e| format!("{e} (expected a duration like 30s, 500ms or 2m)"))
}

/// A `--wait`: a duration, or `forever` (also `inf`): until the lease is
/// free or fencing is told to stop, as `flock` and `etcdctl lock` wait.
pub fn wait(text: &str) -> Result<Duration, String> {
    match text {
        "forever" | "inf" => Ok(FOREVER),
        _ => duration(text).map_err(|e| format!("{e}, or forever")),
    }
}

/// `--wait forever`: no deadline (the core waits without one).
pub const FOREVER: Duration = Duration::MAX;

#[derive(Args, Debug)]
pub struct ScopeArg {
    /// The protected domain, e.g. report:7
    pub scope: OsString,
}

#[derive(Args, Debug)]
pub struct TokenArg {
    /// The fencing token (canonical decimal) [default: $FENCING_TOKEN]
    #[arg(
        long,
        short = 't',
        env = "FENCING_TOKEN",
        hide_env = true,
        allow_hyphen_values = true
    )]
    pub token: OsString,
}

#[derive(Args, Debug)]
pub struct FenceArgs {
    #[command(flatten)]
    pub token: TokenArg,
    /// Operation number inside this token's generation (rejects reordered writes)
    #[arg(long, allow_hyphen_values = true)]
    pub seq: Option<OsString>,
    /// Who writes, recorded with rejections [default: $FENCING_HOLDER]
    #[arg(long, env = "FENCING_HOLDER", hide_env = true)]
    pub holder: Option<OsString>,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Write through a plain unfenced file instead, and watch the stale write win
    #[arg(long)]
    pub without_fencing: bool,
    /// Worker A's lease TTL (A is paused for longer than this)
    #[arg(long, value_parser = duration, default_value = "1s")]
    pub ttl: Duration,
    /// The scope the demo uses
    #[arg(long, default_value = "demo:report")]
    pub scope: String,
}

#[derive(Args, Debug)]
pub struct DemoWorkerArgs {
    #[arg(long)]
    pub name: String,
    #[arg(long)]
    pub scope: String,
    #[arg(long, value_parser = duration)]
    pub ttl: Duration,
    /// Write the report to this plain file instead of the fenced store
    #[arg(long)]
    pub unfenced_file: Option<std::path::PathBuf>,
    /// Wait for a line on stdin between starting the update and writing
    #[arg(long)]
    pub pause_point: bool,
}

#[derive(Args, Debug)]
#[command(after_help = "\
CMD gets FENCING_SCOPE, FENCING_TOKEN, FENCING_HOLDER and FENCING_URL in its environment, so \
`fencing put \"$FENCING_SCOPE\" KEY --value V` inside it is fenced with the run's token. \
FENCING_URL never holds the password: CMD authenticates as libpq does, with the PGPASSWORD or \
PGPASSFILE it inherits, or ~/.pgpass (FENCING_URL_FILE is not passed on).\n\n\
Exit status: CMD's own (128+N when a signal N killed it; 126 when it cannot be executed, 127 when \
it is not found). If the lease is lost while CMD runs, CMD's process group gets SIGTERM, then \
SIGKILL after --grace, and fencing exits 15 (LEASE_LOST). SIGTERM, SIGHUP, SIGINT and SIGQUIT sent \
to fencing are passed on to CMD's process group (with --foreground, SIGINT and SIGQUIT are not: the \
terminal sends them to CMD itself); the lease is released when CMD ends. During the acquisition they \
stop the acquire (a waiting one leaves its place in line) and fencing exits 128+N. 14 (LEASE_HELD) or 18 (TIMEOUT) when the lease \
could not be had; CMD did not run.")]
pub struct RunArgs {
    /// The protected domain, e.g. report:7
    pub scope: OsString,
    /// Lease TTL; renewed about every ttl/3 while CMD runs
    #[arg(long, value_parser = duration)]
    pub ttl: Duration,
    /// Wait up to this long for the lease instead of failing with LEASE_HELD (`forever`: until
    /// it is free or fencing is interrupted)
    #[arg(long, value_parser = wait)]
    pub wait: Option<Duration>,
    /// After the lease is lost: how long CMD has between SIGTERM and SIGKILL
    #[arg(long, value_parser = duration, default_value = "5s")]
    pub grace: Duration,
    /// Who holds the lease [default: $FENCING_HOLDER, else USER@HOST:PID]
    #[arg(long, env = "FENCING_HOLDER", hide_env = true)]
    pub holder: Option<OsString>,
    /// Keep CMD in fencing's process group, for interactive commands (reading the terminal,
    /// job control); then a lost lease signals CMD only, not its children
    #[arg(long)]
    pub foreground: bool,
    /// The command and its arguments (after --)
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<OsString>,
}

#[derive(Args, Debug)]
pub struct AcquireArgs {
    /// The protected domain, e.g. report:7
    pub scope: OsString,
    /// Lease TTL (the lease is not renewed; use `renew` or `fencing run`)
    #[arg(long, value_parser = duration)]
    pub ttl: Duration,
    /// Wait up to this long for the lease instead of failing with LEASE_HELD (`forever`: until
    /// it is free or fencing is interrupted)
    #[arg(long, value_parser = wait)]
    pub wait: Option<Duration>,
    /// Who holds the lease [default: $FENCING_HOLDER, else USER@HOST:PID]
    #[arg(long, env = "FENCING_HOLDER", hide_env = true)]
    pub holder: Option<OsString>,
}

#[derive(Args, Debug)]
pub struct RenewArgs {
    /// The protected domain, e.g. report:7
    pub scope: OsString,
    #[command(flatten)]
    pub token: TokenArg,
    /// The new TTL, from now
    #[arg(long, value_parser = duration)]
    pub ttl: Duration,
}

#[derive(Args, Debug)]
pub struct ReleaseArgs {
    /// The protected domain, e.g. report:7
    pub scope: OsString,
    #[command(flatten)]
    pub token: TokenArg,
}

#[derive(Args, Debug)]
pub struct AdvanceArgs {
    /// The protected domain, e.g. report:7
    pub scope: OsString,
    /// The counter's new minimum (a token)
    #[arg(allow_hyphen_values = true)]
    pub floor: OsString,
}

#[derive(Args, Debug)]
pub struct PutArgs {
    /// The protected domain, e.g. report:7
    pub scope: OsString,
    /// The entry's key inside the scope
    pub key: OsString,
    #[command(flatten)]
    pub fence: FenceArgs,
    /// The value (bytes); without it or --file, stdin is read to its end
    #[arg(long, conflicts_with = "file")]
    pub value: Option<OsString>,
    /// Read the value (bytes) from this file
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Only write when the entry is at this version (0: must not exist)
    #[arg(long, allow_hyphen_values = true)]
    pub if_version: Option<OsString>,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// The protected domain, e.g. report:7
    pub scope: OsString,
    /// The entry's key inside the scope
    pub key: OsString,
    /// Check the read like a write: STALE_TOKEN if the token is older than the fence
    #[arg(long, short = 't', allow_hyphen_values = true)]
    pub token: Option<OsString>,
}

#[derive(Args, Debug)]
pub struct DeleteArgs {
    /// The protected domain, e.g. report:7
    pub scope: OsString,
    /// The entry's key inside the scope
    pub key: OsString,
    #[command(flatten)]
    pub fence: FenceArgs,
    /// Only delete when the entry is at this version
    #[arg(long, allow_hyphen_values = true)]
    pub if_version: Option<OsString>,
}

#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// The protected domain, e.g. report:7
    pub scope: OsString,
    #[command(flatten)]
    pub fence: FenceArgs,
    /// Read the ops from this file instead of stdin
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ClaimArgs {
    /// The protected domain, e.g. report:7
    pub scope: OsString,
    #[command(flatten)]
    pub fence: FenceArgs,
}

#[derive(Args, Debug)]
pub struct EventsArgs {
    /// Only this scope's record [default: every scope's]
    pub scope: Option<OsString>,
    /// Rejections and last writes to show, each (1..=256) [default: 20, as in every face]
    #[arg(long, allow_hyphen_values = true)]
    pub limit: Option<OsString>,
    /// Then print each rejection as the store records it (oldest first; with --json one JSON
    /// object per line), until stopped (Ctrl-C) or the store fails
    #[arg(long, short = 'f')]
    pub follow: bool,
}

#[derive(Args, Debug)]
pub struct LowerWedgedArgs {
    /// The wedged scope, e.g. report:7
    pub scope: OsString,
    /// The new counter and fence: at least every token handed out for the scope, including
    /// tokens from outside the store that it cannot see
    #[arg(long = "to", value_name = "BOUND", allow_hyphen_values = true)]
    pub bound: OsString,
}

#[derive(Args, Debug)]
pub struct MetricsArgs {
    /// Serve GET /metrics on ADDR (127.0.0.1:9464 when given without a value; port 0 picks a
    /// free one) until killed, printing the bound address on stderr. What it serves is this
    /// process's own handle on the store, so it answers scrapes and shows the metrics' shape;
    /// the numbers of a worker come from that worker's process (docs/operations.md, "Metrics")
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:9464")]
    pub serve: Option<String>,
}

#[derive(Args, Debug)]
pub struct MigrateArgs {
    /// Also set the recommended time limits on this PostgreSQL worker role (one that runs
    /// fencing.check in its own transactions): idle_in_transaction_session_timeout and
    /// lock_timeout, for its sessions that start afterwards (docs/postgres.md, "Lock waits");
    /// repeat for several roles
    #[arg(long, value_name = "ROLE")]
    pub worker_timeouts: Vec<String>,
}

#[derive(Args, Debug)]
pub struct HealthArgs {
    /// The store to check [default: --url, $FENCING_URL, $FENCING_URL_FILE, else
    /// sqlite:fencing.db]
    #[arg(value_name = "STORE")]
    pub store: Option<OsString>,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, powershell or elvish
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// The protected domain, e.g. report:7
    pub scope: OsString,
    /// Start after this key (the `next` of the previous page)
    #[arg(long)]
    pub after: Option<OsString>,
    /// Keys per page (1..=1000) [default: 100, as in every face]
    #[arg(long, allow_hyphen_values = true)]
    pub limit: Option<OsString>,
    /// Read every page, not only the first
    #[arg(long)]
    pub all: bool,
}

/// How `fencing object` reads its URL, after every `object` verb's options.
const OBJECT_URL_HELP: &str = "\
URL is the object's whole location: file:///ABS/PATH/TO/OBJECT is the object ABS/PATH/TO/OBJECT \
of the store file:/// (the absolute path without its leading slash, taken as written: no \
percent-decoding), kept in the folder /ABS/PATH/TO/OBJECT.fenced/ (docs/objects.md, \"Layout\"). \
No segment of the path may be empty, . or .., or end in .fenced, and it has no trailing /. \
s3://BUCKET/KEY[?OPTIONS] is the object KEY of the store s3://BUCKET[?OPTIONS], with \
credentials from the AWS_* variables (OPTIONS: endpoint=URL, region=R, allow_http=true); \
az://CONTAINER/BLOB[?OPTIONS] is the object BLOB of the store az://CONTAINER[?OPTIONS], with the \
account from the AZURE_* variables (OPTIONS: endpoint=URL, allow_http=true). \
Anything else (memory:, a relative file://DIR/...) is INVALID_ARGUMENT (17). The global \
--url and --url-file (and $FENCING_URL, $FENCING_URL_FILE) name the lease store, which `object` \
does not read.";

#[derive(Args, Debug)]
#[command(after_help = OBJECT_URL_HELP)]
pub struct ObjectArgs {
    #[command(subcommand)]
    pub command: ObjectCommand,
}

#[derive(Subcommand, Debug)]
pub enum ObjectCommand {
    /// Fenced write of the object at URL; the bytes come from --value, --file or stdin; prints
    /// `version=N token=T`
    #[command(after_help = OBJECT_URL_HELP)]
    Put(ObjectPutArgs),
    /// Read the object at URL to stdout (raw bytes); NOT_FOUND (13) when there is none
    #[command(after_help = OBJECT_URL_HELP)]
    Get(ObjectUrlArg),
    /// Fenced delete of the object at URL (the path keeps its fence); prints `deleted`
    #[command(after_help = OBJECT_URL_HELP)]
    Delete(ObjectDeleteArgs),
}

#[derive(Args, Debug)]
pub struct ObjectUrlArg {
    /// The object's whole location: file:///ABS/PATH/TO/OBJECT, s3://BUCKET/KEY or az://CONTAINER/BLOB
    #[arg(value_name = "URL")]
    pub url: OsString,
}

#[derive(Args, Debug)]
pub struct ObjectPutArgs {
    #[command(flatten)]
    pub url: ObjectUrlArg,
    #[command(flatten)]
    pub fence: FenceArgs,
    /// The object's bytes; without it or --file, stdin is read to its end
    #[arg(long, conflicts_with = "file")]
    pub value: Option<OsString>,
    /// Read the object's bytes from this file
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Only write when the object is at this version (0: must not exist)
    #[arg(long, allow_hyphen_values = true)]
    pub if_version: Option<OsString>,
}

#[derive(Args, Debug)]
pub struct ObjectDeleteArgs {
    #[command(flatten)]
    pub url: ObjectUrlArg,
    #[command(flatten)]
    pub fence: FenceArgs,
    /// Only delete when the object is at this version
    #[arg(long, allow_hyphen_values = true)]
    pub if_version: Option<OsString>,
}
