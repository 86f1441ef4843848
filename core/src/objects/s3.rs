//! `s3://BUCKET[/PREFIX]`: S3 and the stores that speak its API, through
//! `object_store`'s client. Credentials, region and endpoint come from the
//! standard `AWS_*` variables, as `object_store` reads them
//! (`AmazonS3Builder::from_env`); URL options override them: `endpoint`,
//! `region`, `allow_http` (docs/objects.md). Credentials never come from
//! the URL, so no URL shown in a message carries a secret.

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::client::{HttpClient, HttpConnector};
use object_store::path::Path;
use object_store::{ClientConfigKey, ClientOptions};

use super::{check_path, Opened};
use crate::error::{Error, Result};

pub(super) fn open(url: &str, rest: &str) -> Result<Opened> {
    let bad = |why: &str| Error::invalid(format!("objects URL {url:?}: {why}"));
    let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (bucket, prefix) = location.split_once('/').unwrap_or((location, ""));
    if bucket.is_empty() {
        return Err(bad("it names no bucket: s3://BUCKET[/PREFIX]"));
    }
    let prefix = prefix.trim_end_matches('/');
    if !prefix.is_empty() {
        check_path(prefix)?;
    }
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_http_connector(Connector);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        builder = match key {
            "endpoint" => builder.with_endpoint(value),
            "region" => builder.with_region(value),
            "allow_http" => match value {
                "true" | "false" => builder.with_allow_http(value == "true"),
                _ => return Err(bad("allow_http is true or false")),
            },
            _ => {
                return Err(bad(&format!(
                    "unknown option {key:?}: endpoint, region or allow_http"
                )))
            }
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

/// The HTTP client: reqwest over rustls with *ring*, as the PostgreSQL
/// backend's TLS (one crypto library in the build), trusting the system's
/// certificates; plain HTTP only when `allow_http` says so.
#[derive(Debug)]
struct Connector;

impl HttpConnector for Connector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let failed = |e: Box<dyn std::error::Error + Send + Sync>| object_store::Error::Generic {
            store: "S3",
            source: e,
        };
        let mut roots = rustls::RootCertStore::empty();
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| failed(Box::new(e)))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let allow_http = options
            .get_config_value(&ClientConfigKey::AllowHttp)
            .is_some_and(|v| v == "true");
        // Bounds on silence, not on transfers: a server that stops
        // answering fails the request (and object_store retries it).
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .https_only(!allow_http)
            .connect_timeout(std::time::Duration::from_secs(10))
            .read_timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| failed(Box::new(e)))?;
        Ok(HttpClient::new(client))
    }
}
