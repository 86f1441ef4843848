//! `etcd://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]/PREFIX[?OPTIONS]`: an
//! etcd v3 cluster, every member listed (docs/etcd.md, "URLs").

use std::path::PathBuf;
use std::time::Duration;

use super::{bad_value, clip, Options, Query};
use crate::error::{Error, Result};

pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// `call_timeout_ms` bounds, as PostgreSQL's.
const CALL_TIMEOUT_MS: std::ops::RangeInclusive<u64> = 10..=3_600_000;
const MAX_PREFIX_BYTES: usize = 128;
const MAX_MEMBERS: usize = 16;

/// `sslrootcert`: the CAs a member's certificate must chain to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtcdRoots {
    /// CA certificates (PEM) in a file.
    File(PathBuf),
    /// The operating system's trust store.
    System,
}

/// TLS to every member: the server's chain and name checked against
/// `roots`; a client certificate when the cluster asks for one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EtcdTls {
    pub roots: EtcdRoots,
    /// `sslcert` and `sslkey`, PEM files.
    pub identity: Option<(PathBuf, PathBuf)>,
}

/// The options of an etcd store, as its URL says them. `Debug` shows no
/// password.
#[derive(Clone, PartialEq, Eq)]
pub struct EtcdOptions {
    /// `host:port` of every member, as written.
    pub(crate) members: Vec<String>,
    /// Every key of the store starts with it (docs/etcd.md, "Keys").
    pub(crate) prefix: String,
    pub(crate) user: Option<(String, String)>,
    pub(crate) tls: Option<EtcdTls>,
    pub(crate) call_timeout: Duration,
    pub(crate) options: Options,
}

impl std::fmt::Debug for EtcdOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdOptions")
            .field("location", &self.location())
            .field("tls", &self.tls)
            .field("call_timeout", &self.call_timeout)
            .field("options", &self.options)
            .finish()
    }
}

impl EtcdOptions {
    /// The URL without its options, the password shown as `***`.
    pub(crate) fn location(&self) -> String {
        let user = match &self.user {
            Some((name, _)) => format!("{name}:***@"),
            None => String::new(),
        };
        format!("etcd://{user}{}/{}", self.members.join(","), self.prefix)
    }

    pub(crate) fn get_options(&self) -> Options {
        self.options
    }
}

/// The rest of `etcd://...?...` after the options every backend takes.
pub(super) fn parse(base: &str, query: &mut Query<'_>, options: Options) -> Result<EtcdOptions> {
    let rest = base.strip_prefix("etcd://").unwrap_or(base);
    // The user info ends at the last '@' (neither hosts nor the prefix hold
    // one), so a password with a raw '/' is read, not shown as a host.
    let (user, rest) = match rest.rsplit_once('@') {
        Some((info, rest)) => (Some(user_info(info)?), rest),
        None => (None, rest),
    };
    let (hosts, prefix) = rest.split_once('/').ok_or_else(|| {
        Error::invalid("etcd: needs a key prefix after the members, e.g. etcd://127.0.0.1:2379/app")
    })?;
    let members = hosts
        .split(',')
        .map(member)
        .collect::<Result<Vec<String>>>()?;
    if members.len() > MAX_MEMBERS {
        return Err(Error::invalid(format!(
            "etcd: {} members listed, the limit is {MAX_MEMBERS}",
            members.len()
        )));
    }
    check_prefix(prefix)?;
    let roots = match query.take("sslrootcert") {
        None => None,
        Some("system") => Some(EtcdRoots::System),
        Some(path) => Some(EtcdRoots::File(file("sslrootcert", path)?)),
    };
    let identity = match (query.take("sslcert"), query.take("sslkey")) {
        (None, None) => None,
        (Some(cert), Some(key)) => Some((file("sslcert", cert)?, file("sslkey", key)?)),
        _ => {
            return Err(Error::invalid(
                "etcd: sslcert and sslkey go together (a client certificate and its key)",
            ))
        }
    };
    let tls = match (roots, identity) {
        (Some(roots), identity) => Some(EtcdTls { roots, identity }),
        (None, None) => None,
        (None, Some(_)) => {
            return Err(Error::invalid(
                "etcd: a client certificate needs sslrootcert=FILE|system (TLS to the members)",
            ))
        }
    };
    let call_timeout = match query.take("call_timeout_ms") {
        None => DEFAULT_CALL_TIMEOUT,
        Some(v) => match v.parse::<u64>() {
            Ok(ms) if CALL_TIMEOUT_MS.contains(&ms) => Duration::from_millis(ms),
            _ => {
                return Err(bad_value(
                    "call_timeout_ms",
                    v,
                    "milliseconds, 10..=3600000",
                ))
            }
        },
    };
    Ok(EtcdOptions {
        members,
        prefix: prefix.to_owned(),
        user,
        tls,
        call_timeout,
        options,
    })
}

/// `USER[:PASSWORD]`, percent-decoded; a message never shows the password.
fn user_info(info: &str) -> Result<(String, String)> {
    let (name, password) = info.split_once(':').unwrap_or((info, ""));
    let name = decode(name).filter(|n| !n.is_empty()).ok_or_else(|| {
        Error::invalid("etcd: the user name before '@' is empty or badly percent-encoded")
    })?;
    let password = decode(password)
        .ok_or_else(|| Error::invalid("etcd: the password is badly percent-encoded"))?;
    Ok((name, password))
}

fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().filter(|s| !s.contains('\0'))
}

/// `HOST:PORT`: a name or IPv4 address, or `[IPv6]`, and a port.
fn member(text: &str) -> Result<String> {
    let bad = || {
        Error::invalid(format!(
            "etcd: member {:?} is not HOST:PORT (every member listed, comma-separated)",
            clip(text)
        ))
    };
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host.len() <= 253
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        }
    };
    match port.parse::<u16>() {
        Ok(p) if p > 0 && host_ok => Ok(text.to_owned()),
        _ => Err(bad()),
    }
}

fn check_prefix(prefix: &str) -> Result<()> {
    let ok = !prefix.is_empty()
        && prefix.len() <= MAX_PREFIX_BYTES
        && prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b));
    if ok {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "etcd: key prefix {:?}: expected 1 to {MAX_PREFIX_BYTES} bytes of letters, digits, \
         '.', '_', '-' and '/'",
        clip(prefix)
    )))
}

fn file(name: &str, path: &str) -> Result<PathBuf> {
    if path.is_empty() {
        return Err(Error::invalid(format!(
            "etcd: {name}: expected a file path"
        )));
    }
    Ok(PathBuf::from(path))
}

#[cfg(test)]
mod tests {
    use crate::url::{parse, StoreOptions};

    fn etcd(url: &str) -> super::EtcdOptions {
        match parse(url).unwrap() {
            StoreOptions::Etcd(e) => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn members_prefix_and_options_are_read() {
        let e = etcd("etcd://a:1,127.0.0.1:2379,[::1]:2380/app/x?call_timeout_ms=250");
        assert_eq!(e.members, ["a:1", "127.0.0.1:2379", "[::1]:2380"]);
        assert_eq!(e.prefix, "app/x");
        assert_eq!(e.call_timeout.as_millis(), 250);
        assert!(e.tls.is_none() && e.user.is_none());
    }

    #[test]
    fn a_password_is_decoded_and_never_shown() {
        let e = etcd("etcd://root:hunter%322@h:1/p");
        assert_eq!(e.user, Some(("root".into(), "hunter22".into())));
        // A raw '/' or '@' in it: read, never taken for a host or shown.
        let e = etcd("etcd://root:hun/t@er@h:1/p");
        assert_eq!(e.user, Some(("root".into(), "hun/t@er".into())));
        assert_eq!(
            (e.members.as_slice(), e.prefix.as_str()),
            (&["h:1".to_owned()][..], "p")
        );
        assert_eq!(e.location(), "etcd://root:***@h:1/p");
        assert!(!format!("{e:?}").contains("hunter"));
    }

    #[test]
    fn bad_urls_are_refused_without_echoing_a_password() {
        for url in [
            "etcd://h:1",
            "etcd://h/p",
            "etcd://h:0/p",
            "etcd://h:99999/p",
            "etcd://:1/p",
            "etcd://h:1,/p",
            "etcd://h:1/",
            "etcd://h:1/a b",
            "etcd://u:hunter2@h/p",
            "etcd://u:hunter2%zz@h:1/p",
            "etcd://h:1/p?sslcert=c",
            "etcd://h:1/p?sslcert=c&sslkey=k",
            "etcd://h:1/p?call_timeout_ms=1",
            "etcd://h:1/p?pool_size=2",
        ] {
            let err = parse(url).unwrap_err();
            assert_eq!(err.code(), crate::ErrorCode::InvalidArgument, "{url}");
            assert!(!err.to_string().contains("hunter2"), "{url}: {err}");
        }
    }
}
