//! TLS with rustls (the `ring` provider, chosen explicitly so that no
//! process-wide default provider is needed), as libpq's `sslmode` asks.

use std::fmt;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::location::{PgLocation, RootCerts, SslMode};
use cronslot_core::coord::StoreError;

/// What the store connects with.
#[derive(Clone)]
pub(crate) enum Tls {
    /// No TLS (`sslmode=disable`, a Unix socket).
    Off,
    /// rustls, with the verifier `sslmode` asks for.
    Rustls(MakeRustlsConnect),
}

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Nothing,
    Chain,
    ChainAndName,
}

pub(crate) fn tls_for(
    location: &PgLocation,
) -> Result<(Tls, tokio_postgres::config::SslMode), StoreError> {
    use tokio_postgres::config::SslMode as Mode;
    let (mode, check) = match location.sslmode() {
        SslMode::Disable => return Ok((Tls::Off, Mode::Disable)),
        SslMode::Prefer => (Mode::Prefer, Check::Nothing),
        SslMode::Require if location.root_certs_given() => (Mode::Require, Check::Chain),
        SslMode::Require => (Mode::Require, Check::Nothing),
        SslMode::VerifyCa => (Mode::Require, Check::Chain),
        // A mode added later checks the most.
        _ => (Mode::Require, Check::ChainAndName),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let store = location.to_string();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::other(format!("PostgreSQL store {store}: setting up TLS: {e}")))?;
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        Check::Nothing => Arc::new(NoCheck(provider.signature_verification_algorithms)),
        Check::Chain | Check::ChainAndName => {
            let roots = Arc::new(roots(location, &store)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| {
                    StoreError::other(format!("PostgreSQL store {store}: setting up TLS: {e}"))
                })?;
            if check == Check::Chain {
                Arc::new(ChainOnly(webpki))
            } else {
                webpki
            }
        }
    };
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok((Tls::Rustls(MakeRustlsConnect::new(config)), mode))
}

fn roots(location: &PgLocation, store: &str) -> Result<RootCertStore, StoreError> {
    match location.root_certs() {
        RootCerts::File(path) => {
            let mut roots = RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(path).map_err(|e| {
                StoreError::other(format!(
                    "PostgreSQL store {store}: cannot read the root certificates {}: {e}: check sslrootcert (or PGSSLROOTCERT)",
                    path.display()
                ))
            })?;
            for cert in certs {
                let cert = cert.map_err(|e| {
                    StoreError::other(format!(
                        "PostgreSQL store {store}: the root certificates {} are not valid PEM: {e}: check sslrootcert (or PGSSLROOTCERT)",
                        path.display()
                    ))
                })?;
                roots.add(cert).map_err(|e| {
                    StoreError::other(format!(
                        "PostgreSQL store {store}: a root certificate in {} is refused: {e}",
                        path.display()
                    ))
                })?;
            }
            if roots.is_empty() {
                return Err(StoreError::other(format!(
                    "PostgreSQL store {store}: {} holds no certificate: check sslrootcert (or PGSSLROOTCERT)",
                    path.display()
                )));
            }
            Ok(roots)
        }
        _ => Ok(RootCertStore::from_iter(
            webpki_roots::TLS_SERVER_ROOTS.iter().cloned(),
        )),
    }
}

/// `prefer`, and `require` without roots: encrypted, but the certificate
/// is not checked (libpq's behaviour). Handshake signatures are still
/// verified.
struct NoCheck(WebPkiSupportedAlgorithms);

impl fmt::Debug for NoCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NoCheck")
    }
}

impl ServerCertVerifier for NoCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a trusted root; the name is not
/// compared.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
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
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
