//! `s3://BUCKET[/PREFIX]`: S3 and the stores that speak its API, through
//! `object_store`'s client. Credentials, region and endpoint come from the
//! standard `AWS_*` variables, as `object_store` reads them
//! (`AmazonS3Builder::from_env`); URL options override them: `endpoint`,
//! `region`, `allow_http` (docs/objects.md). Credentials never come from
//! the URL, and messages show the URL without its options.

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::client::{HttpClient, HttpConnector};
use object_store::path::Path;
use object_store::{ClientConfigKey, ClientOptions};

use super::{check_path, Opened};
use crate::error::{Error, Result};

pub(super) fn open(rest: &str) -> Result<Opened> {
    let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (bucket, prefix) = location.split_once('/').unwrap_or((location, ""));
    // Shown without its options (a value may be anything) nor more than a
    // bucket name can hold (a stray user:secret@ never is one).
    let shown = if bucket_name(bucket) {
        format!("s3://{location}")
    } else {
        "s3://...".to_owned()
    };
    let bad = |why: &str| Error::invalid(format!("objects URL {shown:?}: {why}"));
    if !bucket_name(bucket) {
        return Err(bad(
            "expected s3://BUCKET[/PREFIX], a bucket name of 3 to 63 lowercase letters, digits, \
             dots and hyphens",
        ));
    }
    let prefix = prefix.trim_end_matches('/');
    if !prefix.is_empty() {
        check_path(prefix)?;
    }
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_http_connector(Connector);
    let mut seen = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !["endpoint", "region", "allow_http"].contains(&key) {
            return Err(bad(
                "an unknown option: the options are endpoint, region and allow_http",
            ));
        }
        if value.is_empty() || seen.contains(&key) {
            return Err(bad(&format!("option {key} is empty or given twice")));
        }
        seen.push(key);
        builder = match key {
            // Over AWS_ENDPOINT_URL_S3 too, which object_store prefers.
            "endpoint" => {
                if value.starts_with("http://") && !query.contains("allow_http=true") {
                    return Err(bad("an http:// endpoint needs allow_http=true"));
                }
                builder
                    .with_endpoint(value)
                    .with_config(AmazonS3ConfigKey::S3Endpoint, value)
            }
            "region" => builder.with_region(value),
            _ => match value {
                "true" | "false" => builder.with_allow_http(value == "true"),
                _ => return Err(bad("allow_http is true or false")),
            },
        };
    }
    let store = builder.build().map_err(|e| {
        bad(&format!(
            "{e}; set the AWS_* variables or the URL's options"
        ))
    })?;
    Ok(Opened {
        store: Arc::new(store),
        prefix: if prefix.is_empty() {
            Path::default()
        } else {
            Path::from(prefix)
        },
        local_root: None,
        probe: true,
    })
}

/// S3's rule for a bucket's name.
fn bucket_name(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
}

/// The HTTP client: reqwest over rustls with *ring*, as the PostgreSQL
/// backend's TLS (one crypto library in the build), trusting the system's
/// certificates (or those `SSL_CERT_FILE` and `SSL_CERT_DIR` name). Of the
/// client options `object_store` reads from `AWS_*`, it takes `allow_http`,
/// the timeouts, the user agent and the proxy URL and exclusions; it never
/// skips certificate checks.
#[derive(Debug)]
struct Connector;

impl HttpConnector for Connector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let failed = |e: Box<dyn std::error::Error + Send + Sync>| object_store::Error::Generic {
            store: "S3",
            source: e,
        };
        let found = rustls_native_certs::load_native_certs();
        let mut roots = rustls::RootCertStore::empty();
        roots.add_parsable_certificates(found.certs);
        if roots.is_empty() {
            let why = found
                .errors
                .first()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            return Err(failed(
                format!(
                    "no CA certificates in the system's trust store{why} (install \
                     ca-certificates, or name a file in SSL_CERT_FILE)"
                )
                .into(),
            ));
        }
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

    #[test]
    fn durations_and_yeses_as_object_store_writes_them() {
        assert_eq!(duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(duration("1m 30s"), Some(Duration::from_secs(90)));
        assert_eq!(duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(duration("soon"), None);
        assert!(truthy("YES") && truthy("1") && !truthy("false") && !truthy(""));
    }

    #[test]
    fn bucket_names_follow_s3() {
        assert!(bucket_name("fencing-test") && bucket_name("a.b.c"));
        for bad in ["", "ab", "AB", "key:secret@bucket", "a_b", &"a".repeat(64)] {
            assert!(!bucket_name(bad), "{bad}");
        }
    }
}
