//! `fencing`: the paused-worker demo, fenced runs of shell commands, and one
//! verb per store operation. Thin over the `fencing` crate: every check is
//! the core's; this binary parses arguments, prints results and maps error
//! codes to exit statuses.

mod batch;
mod cli;
mod demo;
mod exit;
mod object;
mod output;
mod run;
mod serve;
mod verbs;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::exit::Failure;

fn main() -> ExitCode {
    #[cfg(unix)]
    restore_sigpipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let json = cli.json;
    // Neither needs a store: answered before the URL is looked for.
    match &cli.command {
        Command::Completions(args) => return print_to_stdout(|out| cli::completions(args, out)),
        Command::Man => return print_to_stdout(cli::man),
        _ => {}
    }
    // The object's URL is its argument: the lease store's URL (--url,
    // --url-file, $FENCING_URL, $FENCING_URL_FILE) is not looked for.
    let command = match cli.command {
        Command::Object(args) => return finish(object::main(json, args), json),
        command => command,
    };
    // STORE names the store: neither --url nor the environment is read (a
    // URL file that is missing then fails nothing). Both given: which one?
    // (clap cannot tie a subcommand's argument to a global option.)
    if let Command::Health(args) = &command {
        if args.store.is_some() {
            let result = if cli.url.is_some() || cli.url_file.is_some() {
                Err(Failure::invalid(
                    "give the store once: as STORE or with --url/--url-file",
                ))
            } else {
                verbs::main(None, json, command)
            };
            return finish(result, json);
        }
    }
    let result = verbs::given_url(cli.url, cli.url_file).and_then(|url| match command {
        Command::Demo(args) => demo::main(url.as_deref(), args),
        Command::DemoWorker(args) => demo::worker(url.as_deref(), args),
        Command::Run(args) => run::main(url.as_deref(), args),
        Command::Metrics(cli::MetricsArgs { serve: Some(addr) }) => {
            serve::main(url.as_deref(), &addr)
        }
        verb => verbs::main(url.as_deref(), json, verb),
    });
    finish(result, json)
}

/// The command's status, or its failure reported and turned into one.
fn finish(result: Result<u8, Failure>, json: bool) -> ExitCode {
    match result {
        Ok(status) => ExitCode::from(status),
        Err(failure) => {
            report(&failure, json);
            ExitCode::from(failure.exit_status())
        }
    }
}

/// `fencing completions` and `fencing man`: 0, or 1 when stdout fails.
fn print_to_stdout(print: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match print(&mut out).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report(
                &Failure::Other(format!("cannot write the result: {e}")),
                false,
            );
            ExitCode::from(exit::OTHER)
        }
    }
}

/// clap's own report (help, version, or a usage error: status 2), with the
/// way out when the missing argument is the token.
fn usage_error(e: clap::Error) -> ExitCode {
    let missing_token = e.kind() == clap::error::ErrorKind::MissingRequiredArgument
        && e.to_string().contains("--token");
    let _ = e.print();
    if missing_token {
        let _ = writeln!(std::io::stderr().lock(), "{}", cli::MISSING_TOKEN);
    }
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
}

/// One line on stderr (and, with `--json`, one error object on stdout).
fn report(failure: &Failure, json: bool) {
    if json {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", output::error_json(failure));
        let _ = out.flush();
    }
    let _ = writeln!(std::io::stderr().lock(), "fencing: {}", failure.line());
}

/// Rust ignores SIGPIPE; a command-line tool should die quietly when its
/// reader goes away (`fencing list s | head -1`), like `cat` does. (Windows
/// has no SIGPIPE: a write to a closed pipe fails, and is reported.)
#[cfg(unix)]
fn restore_sigpipe() {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: setting a signal to its default disposition installs no
    // handler code, and runs before any other thread exists.
    unsafe {
        let _ = signal(Signal::SIGPIPE, SigHandler::SigDfl);
    }
}
