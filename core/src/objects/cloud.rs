//! What the cloud stores' clients share (`s3://`, `az://`): the URL's
//! options, read one way, and the HTTP client they send requests through.

use std::sync::Arc;
use std::time::Duration;

use object_store::client::{HttpClient, HttpConnector};
use object_store::path::Path;
use object_store::{ClientConfigKey, ClientOptions, ObjectStore};

use super::{check_path, Opened};
use crate::error::{BackendErrorKind, Error, Result};
use crate::system_roots::system_roots;

/// What differs between the clouds' URLs, `SCHEME://NAME[/PREFIX][?OPTIONS]`.
pub(super) struct Scheme {
    /// `s3`, `az`.
    pub scheme: &'static str,
    /// The store's rule for NAME (a bucket, a container).
    pub valid_name: fn(&str) -> bool,
    /// What a bad NAME is told.
    pub expected: &'static str,
    /// The URL options it takes.
    pub options: &'static [&'static str],
}

/// A cloud URL split and checked: NAME by its store's rule, PREFIX as an
/// object path, each option known, not empty and given once. Messages show
/// the scheme and location (or only the scheme when NAME is not one: a
/// stray user:secret@ never is), never an option's value.
pub(super) struct CloudUrl<'a> {
    scheme: &'static Scheme,
    location: &'a str,
    /// The bucket or container.
    pub name: &'a str,
    prefix: &'a str,
    options: Vec<(&'a str, &'a str)>,
}

impl<'a> CloudUrl<'a> {
    /// `rest`: the URL after `SCHEME://`.
    pub(super) fn parse(rest: &'a str, scheme: &'static Scheme) -> Result<CloudUrl<'a>> {
        let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (name, prefix) = location.split_once('/').unwrap_or((location, ""));
        let mut url = CloudUrl {
            scheme,
            location,
            name,
            prefix: prefix.trim_end_matches('/'),
            options: Vec::new(),
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if !scheme.options.contains(&key) {
                return Err(url.invalid(&format!(
                    "an unknown option: the options are {}",
                    scheme.options.join(", ")
                )));
            }
            if value.is_empty() || url.option(key).is_some() {
                return Err(url.invalid(&format!("option {key} is empty or given twice")));
            }
            url.options.push((key, value));
        }
        if url
            .option("endpoint")
            .is_some_and(|e| e.starts_with("http://"))
            && url.option("allow_http") != Some("true")
        {
            return Err(url.invalid("an http:// endpoint needs allow_http=true"));
        }
        if url
            .option("allow_http")
            .is_some_and(|v| !["true", "false"].contains(&v))
        {
            return Err(url.invalid("allow_http is true or false"));
        }
        if !(scheme.valid_name)(name) {
            return Err(url.invalid(scheme.expected));
        }
        if !url.prefix.is_empty() {
            check_path(url.prefix)?;
        }
        Ok(url)
    }

    pub(super) fn option(&self, key: &str) -> Option<&'a str> {
        self.options
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    /// `INVALID_ARGUMENT` about this URL, shown as the type comment says.
    pub(super) fn invalid(&self, why: &str) -> Error {
        let scheme = self.scheme.scheme;
        let shown = if (self.scheme.valid_name)(self.name) {
            format!("{scheme}://{}", self.location)
        } else {
            format!("{scheme}://...")
        };
        Error::invalid(format!("objects URL {shown:?}: {why}"))
    }

    /// The store built for this URL, under its prefix; its first write
    /// checks that it refuses a second create-only write.
    pub(super) fn opened(&self, store: Arc<dyn ObjectStore>) -> Opened {
        Opened {
            store,
            prefix: if self.prefix.is_empty() {
                Path::default()
            } else {
                Path::from(self.prefix)
            },
            local_root: None,
            probe: true,
        }
    }
}

/// The HTTP client: reqwest over rustls with *ring*, as the PostgreSQL
/// backend's TLS (one crypto library in the build), trusting the system's
/// certificates (or those `SSL_CERT_FILE` and `SSL_CERT_DIR` name). Of the
/// client options `object_store` reads from `AWS_*`, it takes `allow_http`,
/// the timeouts, the user agent and the proxy URL and exclusions; it never
/// skips certificate checks.
#[derive(Debug)]
pub(super) struct Connector {
    /// The store's name in messages (`S3`, `Azure`).
    store: &'static str,
    roots: rustls::RootCertStore,
}

impl Connector {
    /// With the system's trust store read now: none is `BACKEND` /
    /// `refused` at open, as PostgreSQL's `sslrootcert=system` is, not a
    /// fault of the URL.
    pub(super) fn new(store: &'static str) -> Result<Connector> {
        let roots = system_roots().map_err(|why| {
            Error::backend(
                BackendErrorKind::Refused,
                format!(
                    "objects: {store}: no CA certificates in the system's trust store{why} \
                     (install ca-certificates, or name a file in SSL_CERT_FILE)"
                ),
            )
        })?;
        Ok(Connector { store, roots })
    }
}

impl HttpConnector for Connector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let failed = |e: Box<dyn std::error::Error + Send + Sync>| object_store::Error::Generic {
            store: self.store,
            source: e,
        };
        let roots = self.roots.clone();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| failed(Box::new(e)))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let option = |key| options.get_config_value(&key);
        let or = |key, default| option(key).and_then(|v| duration(&v)).unwrap_or(default);
        // Bounds on silence, not on transfers, unless a timeout is set: a
        // server that stops answering fails the request, which object_store
        // then retries.
        let mut client =
            reqwest::Client::builder()
                .tls_backend_preconfigured(tls)
                .https_only(!option(ClientConfigKey::AllowHttp).is_some_and(|v| truthy(&v)))
                .connect_timeout(or(ClientConfigKey::ConnectTimeout, Duration::from_secs(10)))
                .read_timeout(or(ClientConfigKey::ReadTimeout, Duration::from_secs(30)))
                .user_agent(option(ClientConfigKey::UserAgent).unwrap_or_else(|| {
                    format!("fencing/{} object_store", env!("CARGO_PKG_VERSION"))
                }));
        if let Some(total) = option(ClientConfigKey::Timeout).and_then(|v| duration(&v)) {
            client = client.timeout(total);
        }
        if let Some(url) = option(ClientConfigKey::ProxyUrl) {
            let excludes = option(ClientConfigKey::ProxyExcludes);
            let proxy = reqwest::Proxy::all(url.as_str())
                .map_err(|e| failed(Box::new(e)))?
                .no_proxy(excludes.as_deref().and_then(reqwest::NoProxy::from_string));
            client = client.proxy(proxy);
        }
        Ok(HttpClient::new(
            client.build().map_err(|e| failed(Box::new(e)))?,
        ))
    }
}

/// object_store's reading of a yes.
fn truthy(value: &str) -> bool {
    ["1", "true", "on", "yes", "y"].contains(&value.to_ascii_lowercase().as_str())
}

/// A duration as object_store writes one (`1s`, `500ms`, `1m 30s`).
fn duration(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    for part in text.split_whitespace() {
        let at = part.find(|c: char| !c.is_ascii_digit())?;
        let n: u64 = part[..at].parse().ok()?;
        total += match &part[at..] {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" | "min" => Duration::from_secs(n * 60),
            "h" => Duration::from_secs(n * 3600),
            _ => return None,
        };
    }
    (total > Duration::ZERO).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any name is one, so that messages show the location.
    static ANY: Scheme = Scheme {
        scheme: "s3",
        valid_name: |_| true,
        expected: "",
        options: &["endpoint", "region", "allow_http"],
    };

    fn parse(rest: &str) -> Result<CloudUrl<'_>> {
        CloudUrl::parse(rest, &ANY)
    }

    #[test]
    fn options_are_known_set_once_and_never_shown() {
        let url = parse("b/p/?region=r&endpoint=https://e").unwrap();
        assert_eq!((url.location, url.option("region")), ("b/p/", Some("r")));
        assert_eq!((url.name, url.prefix), ("b", "p"));
        assert_eq!(url.option("allow_http"), None);
        for bad in [
            "b?key=secret",
            "b?region=",
            "b?region=a&region=b",
            "b?endpoint=http://e",
            "b?endpoint=http://e&allow_http=yes",
        ] {
            let message = parse(bad).err().unwrap().to_string();
            assert!(message.contains("\"s3://b\""), "{message}");
            assert!(!message.contains("secret"), "{message}");
        }
        assert!(parse("b?endpoint=http://e&allow_http=true").is_ok());
    }

    #[test]
    fn durations_and_yeses_as_object_store_writes_them() {
        assert_eq!(duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(duration("1m 30s"), Some(Duration::from_secs(90)));
        assert_eq!(duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(duration("soon"), None);
        assert!(truthy("YES") && truthy("1") && !truthy("false") && !truthy(""));
    }
}
