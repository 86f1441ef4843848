//! Exit statuses: 0 success, one status per contract error code, and a few
//! of the command's own. 2 is left to usage errors (clap), and 126 and up to
//! the shell's meanings (cannot execute, not found, killed by a signal).

use fencing::{Error, ErrorCode};

/// A failure outside the store (reading stdin, writing output, starting a
/// demo worker).
pub const OTHER: u8 = 1;
/// `fencing demo`: the stale write overwrote worker B's report.
pub const DEMO_REPORT_LOST: u8 = 3;

/// The exit status of each contract error code. These never change meaning.
pub const fn status_of(code: ErrorCode) -> u8 {
    match code {
        ErrorCode::StaleToken => 10,
        ErrorCode::SequenceOutOfOrder => 11,
        ErrorCode::VersionMismatch => 12,
        ErrorCode::NotFound => 13,
        ErrorCode::LeaseHeld => 14,
        ErrorCode::LeaseLost => 15,
        ErrorCode::TokenExhausted => 16,
        ErrorCode::InvalidArgument => 17,
        ErrorCode::Timeout => 18,
        ErrorCode::Backend => 19,
        ErrorCode::Closed => 20,
        // A code this command has no status for yet (a test checks that
        // every code has its own).
        _ => OTHER,
    }
}

/// The table `fencing --help` prints (checked against `status_of` by a test).
pub const TABLE: &str = "\
Exit status:
   0  success
   1  failure outside the store (reading stdin, writing output, starting a process)
   2  usage error (unknown option, missing argument)
   3  demo: the stale write overwrote the report (what --without-fencing shows)
  10  STALE_TOKEN            token older than the fence
  11  SEQUENCE_OUT_OF_ORDER  seq not after the last accepted seq of this token
  12  VERSION_MISMATCH       --if-version differs from the entry's version
  13  NOT_FOUND              no such entry (get, delete)
  14  LEASE_HELD             another holder has a live lease
  15  LEASE_LOST             the lease is no longer current (renew; run: lost while CMD ran)
  16  TOKEN_EXHAUSTED        the scope's counter is at 9223372036854775807
  17  INVALID_ARGUMENT       bad token, scope, key, holder, TTL, URL or size
  18  TIMEOUT                --wait ran out
  19  BACKEND                I/O, database or connection failure
  20  CLOSED                 the store was closed
  run: CMD's own status; 126 CMD cannot be executed, 127 CMD not found, 128+N CMD killed by signal N";

#[derive(Debug)]
pub enum Failure {
    Store(Error),
    Other(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Store(e)
    }
}

impl Failure {
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::Store(Error::InvalidArgument(message.into()))
    }

    pub fn exit_status(&self) -> u8 {
        match self {
            Failure::Store(e) => status_of(e.code()),
            Failure::Other(_) => OTHER,
        }
    }

    /// `STALE_TOKEN: stale token for scope "s": presented 41, fence is at 42`
    pub fn line(&self) -> String {
        match self {
            Failure::Store(e) => format!("{}: {}", e.code(), message(e)),
            Failure::Other(m) => m.clone(),
        }
    }
}

/// The error's message without the code's own words repeated.
pub fn message(e: &Error) -> String {
    match e {
        Error::InvalidArgument(m) | Error::Rejected { message: m, .. } => m.clone(),
        Error::Backend(b) => b.message().to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_own_status_and_the_help_table_agrees() {
        let mut seen = Vec::new();
        for code in ErrorCode::ALL {
            let status = status_of(code);
            assert!(!seen.contains(&status), "{code} reuses {status}");
            assert!(![0, 1, 2, DEMO_REPORT_LOST].contains(&status) && status < 126);
            seen.push(status);
            let row = format!("{status:>4}  {}", code.as_str());
            assert!(TABLE.lines().any(|l| l.starts_with(&row)), "{row}");
        }
    }
}
