//! etcd's v3 API through its JSON gateway (`POST /v3/kv/txn` and so on, on
//! the members' client port): blocking HTTP/1.1 on the workspace's rustls,
//! so that no build needs protoc (docs/etcd.md, "The client").
//!
//! Every member of the URL is tried in turn. A request that surely never
//! reached a member (no connection, no leader there) moves on to the next
//! one; so does a read that failed any way, since reading again changes
//! nothing. A write whose answer was lost is `OutcomeUnknown`, never
//! retried: whether it applied is not known.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Value};
use ureq::unversioned::transport::DefaultConnector;

use super::resolve::LiteralFirst;
use crate::error::{BackendErrorKind as Kind, Error, Result};
use crate::url::{EtcdOptions, EtcdRoots, EtcdTls};

/// Whether a request may be sent again after a failure that may have come
/// after it arrived.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Repeat {
    /// Reads: sending twice changes nothing.
    Safe,
    /// Writes: only a request that surely never arrived is sent again.
    Once,
}

pub(crate) struct Client {
    agent: ureq::Agent,
    /// `http://HOST:PORT` or `https://HOST:PORT`, one per member.
    members: Vec<String>,
    /// The member the last request succeeded on: tried first.
    current: AtomicUsize,
    user: Option<(String, String)>,
    /// The token from `/v3/auth/authenticate`, when the URL names a user.
    auth_token: Mutex<Option<String>>,
    call_timeout: Duration,
    /// Whether the members are reached over TLS.
    tls: bool,
}

/// How one request to one member failed.
enum Failed {
    /// It surely never reached the member's etcd (no connection; the member
    /// had no leader to propose to): another member may take it.
    NotSent(Error),
    /// It may have been applied.
    Unknown(Error),
    /// The cluster answered and refused: the same request fails anywhere.
    Refused(Error),
    /// Something answered an HTTP error without etcd's JSON: not an etcd
    /// client port, or a proxy in front of one (which may have passed the
    /// request on before it failed). Its HTTP status.
    Foreign(u16),
}

impl Client {
    pub fn new(options: &EtcdOptions) -> Result<Client> {
        let scheme = if options.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_idle_connections_per_host(64)
            .user_agent("fencing");
        if let Some(tls) = &options.tls {
            config = config.tls_config(tls_config(tls)?);
        }
        Ok(Client {
            agent: ureq::Agent::with_parts(
                config.build(),
                DefaultConnector::default(),
                LiteralFirst::default(),
            ),
            members: options
                .members
                .iter()
                .map(|m| format!("{scheme}://{m}"))
                .collect(),
            current: AtomicUsize::new(0),
            user: options.user.clone(),
            auth_token: Mutex::new(None),
            call_timeout: options.call_timeout,
            tls: options.tls.is_some(),
        })
    }

    /// `POST /v3/{path}` with `body` on the first member that takes it,
    /// within the call's deadline; the answer's JSON.
    pub fn call(&self, path: &str, body: &Value, repeat: Repeat) -> Result<Value> {
        let deadline = Instant::now() + self.call_timeout;
        let n = self.members.len();
        let first = self.current.load(Ordering::Relaxed);
        let mut last = None;
        for i in 0..n {
            let member = (first + i) % n;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            // A member that hangs (paused, partitioned) must leave the
            // others time: each try gets its share of what is left.
            let share = if repeat == Repeat::Safe {
                (left / (n - i) as u32).max(Duration::from_millis(50))
            } else {
                left
            };
            match self.send(member, path, body, share) {
                Ok(answer) => {
                    self.current.store(member, Ordering::Relaxed);
                    return Ok(answer);
                }
                Err(Failed::Refused(e)) => return Err(e),
                Err(Failed::Foreign(status)) => return Err(self.foreign(member, status, repeat)),
                Err(Failed::NotSent(e)) => last = Some(e),
                // A read has no outcome to be unsure of: it just failed.
                Err(Failed::Unknown(e)) if repeat == Repeat::Safe => {
                    last = Some(self.unread(member, &e))
                }
                Err(Failed::Unknown(e)) => {
                    self.current.store((member + 1) % n, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        self.current.store((first + 1) % n, Ordering::Relaxed);
        Err(last.unwrap_or_else(|| {
            Error::backend(
                Kind::Timeout,
                format!(
                    "etcd: no member answered within call_timeout_ms={} (docs/etcd.md, \
                     \"Failures\")",
                    self.call_timeout.as_millis()
                ),
            )
        }))
    }

    fn send(
        &self,
        member: usize,
        path: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, Failed> {
        let token = self.token(member, timeout)?;
        match self.post(member, path, body, timeout, token.as_deref()) {
            // An expired token (the cluster restarted, or revoked it), or a
            // JWT from before the auth store last changed (a user or role
            // added: "revision of auth store is old"), was refused before
            // anything applied: once more with a new one, as etcd's own
            // client does.
            Err(Failed::Refused(e)) if self.user.is_some() && is_bad_token(&e) => {
                *self.auth_token.lock().unwrap_or_else(|p| p.into_inner()) = None;
                let token = self.token(member, timeout)?;
                self.post(member, path, body, timeout, token.as_deref())
            }
            other => other,
        }
    }

    /// The authentication token, fetched from `member` if there is none yet.
    fn token(&self, member: usize, timeout: Duration) -> Result<Option<String>, Failed> {
        let Some((name, password)) = &self.user else {
            return Ok(None);
        };
        if let Some(token) = self
            .auth_token
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            return Ok(Some(token));
        }
        let answer = self.post(
            member,
            "auth/authenticate",
            &json!({ "name": name, "password": password }),
            timeout,
            None,
        );
        let answer = match answer {
            // Authentication changes nothing: any failure may try elsewhere.
            Err(Failed::Unknown(e)) => return Err(Failed::NotSent(e)),
            Err(Failed::Foreign(status)) => {
                return Err(Failed::Refused(self.foreign(member, status, Repeat::Safe)))
            }
            other => other?,
        };
        let token = answer["token"].as_str().map(str::to_owned).ok_or_else(|| {
            Failed::Refused(Error::backend(
                Kind::Corrupt,
                "etcd: authenticate answered no token",
            ))
        })?;
        *self.auth_token.lock().unwrap_or_else(|p| p.into_inner()) = Some(token.clone());
        Ok(Some(token))
    }

    fn post(
        &self,
        member: usize,
        path: &str,
        body: &Value,
        timeout: Duration,
        token: Option<&str>,
    ) -> Result<Value, Failed> {
        let url = format!("{}/v3/{path}", self.members[member]);
        let mut request = self
            .agent
            .post(&url)
            .config()
            .timeout_global(Some(timeout))
            .build();
        if let Some(token) = token {
            request = request.header("Authorization", token);
        }
        let mut response = request
            .send_json(body)
            .map_err(|e| self.transport(member, e))?;
        let status = response.status().as_u16();
        // The whole body first: an answer cut short is a lost answer (the
        // gateway sends large ones in chunks), never a refusal.
        let body = response
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_vec()
            .map_err(|e| self.transport(member, e))?;
        match (status, serde_json::from_slice::<Value>(&body)) {
            (200, Ok(answer)) => Ok(answer),
            (200, Err(_)) => Err(Failed::Unknown(Error::backend(
                Kind::OutcomeUnknown,
                format!(
                    "etcd: the answer of member {} was lost (it came garbled): the call may or \
                     may not have taken effect; read before redoing it",
                    self.name(member)
                ),
            ))),
            (_, Ok(answer)) => Err(self.refusal(member, status, &answer)),
            (_, Err(_)) => Err(Failed::Foreign(status)),
        }
    }

    /// An HTTP error without etcd's JSON ([`Failed::Foreign`]): a read
    /// changed nothing wherever it went; a write answered 5xx may have been
    /// passed on by a proxy before it failed, so its outcome is unknown.
    fn foreign(&self, member: usize, status: u16, repeat: Repeat) -> Error {
        let what = format!(
            "etcd: member {} answered HTTP {status} without etcd's JSON (is it an etcd member's \
             client port, or a proxy in front of one?)",
            self.name(member)
        );
        match repeat {
            // A proxy answers 5xx when its upstream failed, perhaps after it
            // passed the request on; a 4xx of its own it sends instead.
            Repeat::Safe => Error::backend(Kind::Refused, what),
            Repeat::Once if status < 500 => Error::backend(Kind::Refused, what),
            Repeat::Once => Error::backend(
                Kind::OutcomeUnknown,
                format!(
                    "{what}: the call may or may not have taken effect; read before redoing it"
                ),
            ),
        }
    }

    /// A read whose answer was lost, said as what it is: nothing was read,
    /// nothing changed.
    fn unread(&self, member: usize, lost: &Error) -> Error {
        let why = lost.to_string();
        let why = why
            .split_once("was lost (")
            .and_then(|(_, rest)| rest.split_once("):"))
            .map_or(why.as_str(), |(cause, _)| cause);
        let hint = if self.tls {
            " (a member that wants a client certificate closes the connection: check \
             sslrootcert, sslcert and sslkey)"
        } else {
            " (a member that serves TLS closes plain connections: set sslrootcert)"
        };
        Error::backend(
            Kind::Unreachable,
            format!(
                "etcd: member {} did not answer: {why}{hint}",
                self.name(member)
            ),
        )
    }

    fn name(&self, member: usize) -> &str {
        let m = &self.members[member];
        m.split_once("://").map_or(m.as_str(), |(_, rest)| rest)
    }

    /// A failure below HTTP: whether the request can have arrived.
    fn transport(&self, member: usize, e: ureq::Error) -> Failed {
        let member = self.name(member);
        let refused = |e: &ureq::Error| {
            matches!(
                e,
                ureq::Error::ConnectionFailed
                    | ureq::Error::HostNotFound
                    | ureq::Error::Timeout(ureq::Timeout::Connect | ureq::Timeout::Resolve)
            ) || matches!(e, ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused)
        };
        if refused(&e) {
            return Failed::NotSent(Error::backend(
                Kind::Unreachable,
                format!("etcd: cannot reach member {member}: {e} (is it running?)"),
            ));
        }
        let tls_refused = match &e {
            ureq::Error::Tls(_) | ureq::Error::Rustls(_) => true,
            // rustls's refusals of the handshake arrive as I/O errors.
            ureq::Error::Io(io) => io
                .get_ref()
                .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some()),
            _ => false,
        };
        if tls_refused {
            return Failed::NotSent(Error::backend(
                Kind::Refused,
                format!("etcd: TLS with member {member} failed: {e} (check sslrootcert, sslcert, sslkey)"),
            ));
        }
        Failed::Unknown(Error::backend(
            Kind::OutcomeUnknown,
            format!(
                "etcd: the answer of member {member} was lost ({e}): the call may or may not \
                 have taken effect; read before redoing it"
            ),
        ))
    }

    /// An answer other than 200: etcd's gRPC status in JSON.
    fn refusal(&self, member: usize, status: u16, answer: &Value) -> Failed {
        let message = answer["message"]
            .as_str()
            .or_else(|| answer["error"].as_str())
            .unwrap_or("no message");
        let code = answer["code"].as_u64().unwrap_or(0);
        let text = format!(
            "etcd: member {} refused ({status}): {message}",
            self.name(member)
        );
        let unknown = || {
            Failed::Unknown(Error::backend(
                Kind::OutcomeUnknown,
                format!("{text}: the call may or may not have taken effect"),
            ))
        };
        match (code, message) {
            // Said by a member before it proposes anything: another member
            // may serve. Nothing else is taken for "not sent": a member
            // that stops after proposing answers UNAVAILABLE ("server
            // stopped") although the write may still commit.
            (_, m) if m.contains("no leader") || m.contains("not capable") => {
                Failed::NotSent(Error::backend(Kind::Unreachable, text))
            }
            (16, _) | (7, _) => Failed::Refused(Error::backend(
                Kind::Refused,
                format!("{text} (check the user and password in the URL, and the role's keys)"),
            )),
            (8, _) => Failed::Refused(Error::backend(Kind::Busy, text)),
            // Refused as asked, before anything applied.
            (3 | 5 | 6 | 9 | 11 | 12, _) => Failed::Refused(Error::backend(Kind::Refused, text)),
            // UNAVAILABLE, DEADLINE_EXCEEDED, CANCELED, ABORTED, INTERNAL,
            // UNKNOWN and anything new: it may have applied.
            _ => unknown(),
        }
    }
}

fn is_bad_token(e: &Error) -> bool {
    let text = e.to_string();
    text.contains("invalid auth token")
        || text.contains("user name is empty")
        || text.contains("revision of auth store is old")
}

fn tls_config(tls: &EtcdTls) -> Result<ureq::tls::TlsConfig> {
    use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};
    let refused = |what: String| Error::backend(Kind::Refused, format!("etcd: {what}"));
    let read = |name: &str, path: &std::path::Path| {
        std::fs::read(path).map_err(|e| refused(format!("cannot read {name} {path:?}: {e}")))
    };
    let certs = |name: &str, pem: &[u8]| -> Result<Vec<Certificate<'static>>> {
        let found: Vec<Certificate<'static>> = ureq::tls::parse_pem(pem)
            .filter_map(|item| match item {
                Ok(PemItem::Certificate(c)) => Some(c.to_owned()),
                _ => None,
            })
            .collect();
        if found.is_empty() {
            return Err(refused(format!("{name} holds no PEM certificate")));
        }
        Ok(found)
    };
    let roots: Vec<Certificate<'static>> = match &tls.roots {
        EtcdRoots::File(path) => certs("sslrootcert", &read("sslrootcert", path)?)?,
        EtcdRoots::System => crate::system_roots::system_certs()
            .map_err(|why| {
                refused(format!(
                    "no CA certificates in the system's trust store{why} (install \
                     ca-certificates, or name a file in sslrootcert)"
                ))
            })?
            .iter()
            .map(|der| Certificate::from_der(der.as_ref()).to_owned())
            .collect(),
    };
    let mut config = TlsConfig::builder()
        .provider(ureq::tls::TlsProvider::Rustls)
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .root_certs(RootCerts::new_with_certs(&roots));
    if let Some((cert, key)) = &tls.identity {
        let (cert_pem, key_pem) = (read("sslcert", cert)?, read("sslkey", key)?);
        let chain = certs("sslcert", &cert_pem)?;
        let key = PrivateKey::from_pem(&key_pem)
            .map_err(|e| refused(format!("sslkey holds no usable PEM private key: {e}")))?
            .to_owned();
        usable_identity(&cert_pem, &key_pem).map_err(|e| {
            refused(format!(
                "sslcert and sslkey are not a usable client certificate and key: {e}"
            ))
        })?;
        config = config.client_cert(Some(ClientCert::new_with_certs(&chain, key)));
    }
    Ok(config.build())
}

/// Whether rustls takes the certificates of `cert_pem` and the key of
/// `key_pem` as a client identity, asked here because ureq asks only when it
/// connects, and panics on a refusal (an X.509 v1 certificate, a key that
/// does not match).
fn usable_identity(cert_pem: &[u8], key_pem: &[u8]) -> std::result::Result<(), String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| e.to_string())?;
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .and_then(|b| {
            b.with_root_certificates(rustls::RootCertStore::empty())
                .with_client_auth_cert(chain, key)
        })
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Bytes as the gateway carries them.
pub(crate) fn b64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// A `bytes` field of an answer (absent when empty).
pub(crate) fn bytes(field: &Value) -> Result<Vec<u8>> {
    match field.as_str() {
        None => Ok(Vec::new()),
        Some(text) => B64
            .decode(text)
            .map_err(|_| Error::backend(Kind::Corrupt, "etcd: an answer's bytes are not base64")),
    }
}

/// An `int64` field of an answer (a string in JSON; absent when 0).
pub(crate) fn int(field: &Value) -> Result<i64> {
    let parsed = match field {
        Value::Null => Some(0),
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    };
    parsed
        .ok_or_else(|| Error::backend(Kind::Corrupt, "etcd: an answer's number is not an integer"))
}
