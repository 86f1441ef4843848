//! The system's trust store as rustls roots, for every TLS client of the
//! library (PostgreSQL's `sslrootcert=system`, the object stores' HTTPS):
//! read one way, so that both trust, skip and refuse the same certificates.

use rustls::pki_types::CertificateDer;
#[cfg(any(feature = "postgres", feature = "s3", feature = "azure"))]
use rustls::RootCertStore;

/// The system's CA certificates (or those `SSL_CERT_FILE` and
/// `SSL_CERT_DIR` name). Unparsable ones are skipped, as OpenSSL does; none
/// at all is `Err`, with the first reason the store gave (`": ..."`, or
/// empty), for the caller's message.
#[cfg(any(feature = "postgres", feature = "s3", feature = "azure"))]
pub(crate) fn system_roots() -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(system_certs()?);
    if roots.is_empty() {
        return Err(String::new());
    }
    Ok(roots)
}

/// The certificates [`system_roots`] trusts, as they were found, for a
/// client that takes certificates rather than rustls's roots (etcd's).
pub(crate) fn system_certs() -> Result<Vec<CertificateDer<'static>>, String> {
    let found = rustls_native_certs::load_native_certs();
    if found.certs.is_empty() {
        return Err(found
            .errors
            .first()
            .map(|e| format!(": {e}"))
            .unwrap_or_default());
    }
    Ok(found.certs)
}
