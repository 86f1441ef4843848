//! TLS with rustls, driven by libpq's URL options (docs/postgres.md, "TLS"):
//! `sslmode`, `sslrootcert`, `sslcert`, `sslkey`. The files are read once,
//! when the store opens; every connection of the pool shares the result.
//!
//! libpq's semantics kept here: `prefer` and `require` encrypt without
//! checking the server unless a root certificate is given (then the chain is
//! checked, as libpq does when its root certificate file exists);
//! `verify-ca` checks the chain but not the name; `verify-full` both.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres::config::{Host, SslMode as DriverMode};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{BackendErrorKind::Refused, Error, Result};
use crate::system_roots::system_roots;
use crate::url::{RootCert, SslMode, Tls};

/// The driver's mode: it only negotiates (disable, prefer, require); the
/// checks of `verify-*` are the verifier's. A server never offers TLS on a
/// Unix socket, so there, as libpq, `sslmode` is ignored.
pub(crate) fn driver_mode(mode: SslMode, hosts: &[Host]) -> DriverMode {
    let local_only = !hosts.is_empty() && hosts.iter().all(|h| !matches!(h, Host::Tcp(_)));
    if local_only {
        return DriverMode::Disable;
    }
    match mode {
        SslMode::Disable => DriverMode::Disable,
        SslMode::Prefer => DriverMode::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => DriverMode::Require,
    }
}

/// The connector for every connection of a pool; reads the files now, so a
/// missing or unreadable one fails the open with `BACKEND`.
pub(crate) fn connector(tls: &Tls) -> Result<MakeRustlsConnect> {
    // An explicit provider: nothing depends on which one the process
    // installed as its default (or on none being installed).
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::backend_from(Refused, format!("postgres: TLS setup: {e}"), e))?;
    let verifier: Arc<dyn ServerCertVerifier> = match (&tls.root_cert, tls.mode) {
        (_, SslMode::Disable) | (None, _) => Arc::new(Unverified(provider)),
        (Some(root), mode) => {
            let roots = Arc::new(root_store(root)?);
            let chain = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| {
                    Error::backend_from(Refused, format!("postgres: sslrootcert: {e}"), e)
                })?;
            if mode == SslMode::VerifyFull {
                chain
            } else {
                Arc::new(ChainOnly(chain))
            }
        }
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match &tls.client_cert {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(certificates("sslcert", cert)?, private_key(key)?)
            .map_err(|e| {
                Error::backend_from(Refused, format!("postgres: sslcert/sslkey: {e}"), e)
            })?,
    };
    Ok(MakeRustlsConnect::new(config))
}

fn root_store(root: &RootCert) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    match root {
        RootCert::File(path) => {
            for cert in certificates("sslrootcert", path)? {
                store.add(cert).map_err(|e| {
                    Error::backend_from(
                        Refused,
                        format!("postgres: sslrootcert {}: {e}", path.display()),
                        e,
                    )
                })?;
            }
        }
        RootCert::System => {
            // Unparsable certificates in the store are skipped, as libpq's
            // OpenSSL does; an empty result is an error.
            store = system_roots().map_err(|why| {
                Error::backend(Refused, format!(
                    "postgres: sslrootcert=system: no CA certificates found in the system's trust store{why}"
                ))
            })?;
        }
    }
    Ok(store)
}

/// Every certificate of a PEM file; at least one.
fn certificates(option: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let unreadable = |e: &dyn std::fmt::Display| {
        Error::backend(
            Refused,
            format!(
                "postgres: {option}: cannot read certificates from {}: {e}",
                path.display()
            ),
        )
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| unreadable(&e))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| unreadable(&e))?;
    if certs.is_empty() {
        return Err(unreadable(&"no PEM certificate in it"));
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        Error::backend(
            Refused,
            format!(
                "postgres: sslkey: cannot read a private key from {}: {e}",
                path.display()
            ),
        )
    })
}

/// `verify-ca`: the chain must lead to a trusted root; any name will do.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        // webpki checks the name only after the chain, validity and usage
        // passed, so a name error means everything else was fine.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer`/`require` without a root certificate: encrypted, but the server
/// is not authenticated (libpq does the same). The handshake signatures are
/// still checked, so the session key belongs to whoever holds the
/// certificate's key.
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A connect failure in words: which check failed, for the TLS ones.
pub(crate) fn explain(e: &tokio_postgres::Error) -> Option<String> {
    // The driver's Display names only the kind; the cause is its source.
    let source = std::error::Error::source(e)?;
    if source.to_string() == "server does not support TLS" {
        return Some(
            "postgres: the server does not support TLS, and sslmode requires it \
             (sslmode=require, verify-ca or verify-full)"
                .into(),
        );
    }
    let io = source.downcast_ref::<std::io::Error>()?;
    let tls = io.get_ref()?.downcast_ref::<rustls::Error>()?;
    let why = match tls {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "unknown CA: the server's certificate does not chain to sslrootcert"
        }
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => "host name mismatch: the server's certificate is not valid for the host name (sslmode=verify-full)",
        rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        ) => "the server's certificate has expired",
        rustls::Error::AlertReceived(_) => "the server refused the TLS handshake",
        _ => "TLS handshake failed",
    };
    Some(format!("postgres: {why} ({tls})"))
}

// Host::Unix exists only where Unix sockets do.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn sslmode_is_ignored_on_unix_sockets_only() {
        let unix = [Host::Unix("/run/postgresql".into())];
        let tcp = [Host::Tcp("db".into())];
        let mixed = [unix[0].clone(), tcp[0].clone()];
        assert_eq!(driver_mode(SslMode::VerifyFull, &unix), DriverMode::Disable);
        assert_eq!(driver_mode(SslMode::VerifyFull, &tcp), DriverMode::Require);
        assert_eq!(driver_mode(SslMode::Require, &mixed), DriverMode::Require);
        assert_eq!(driver_mode(SslMode::Prefer, &tcp), DriverMode::Prefer);
        assert_eq!(driver_mode(SslMode::Disable, &tcp), DriverMode::Disable);
    }
}
