//! How connections are made: plain TCP, or TLS behind the `tls` feature.
//!
//! The pool and the LISTEN connection both connect through [`Connector`],
//! so they always agree. Without the feature a DSN asking for TLS
//! (`sslmode=require`) fails to connect with a clear error; `sslmode=prefer`
//! (the default) quietly uses plain TCP.

use cairnq_core::Result;

use crate::options::PostgresOptions;

/// The connector type of this build.
#[cfg(not(feature = "tls"))]
pub(crate) type Connector = tokio_postgres::NoTls;

/// The connector type of this build.
#[cfg(feature = "tls")]
pub(crate) type Connector = postgres_native_tls::MakeTlsConnector;

/// The connector for `options`.
#[cfg(not(feature = "tls"))]
pub(crate) fn connector(_options: &PostgresOptions) -> Result<Connector> {
    Ok(tokio_postgres::NoTls)
}

/// The connector for `options`: the platform's trusted roots plus any
/// root certificates the options add; server names are verified.
#[cfg(feature = "tls")]
pub(crate) fn connector(options: &PostgresOptions) -> Result<Connector> {
    use cairnq_core::Error;
    let mut builder = native_tls::TlsConnector::builder();
    for pem in &options.tls_root_certificates {
        let certificate = native_tls::Certificate::from_pem(pem)
            .map_err(|e| Error::validation("tls_root_certificates", format!("not a PEM certificate: {e}")))?;
        builder.add_root_certificate(certificate);
    }
    let connector = builder.build().map_err(|e| Error::storage("cannot set up TLS", e))?;
    Ok(postgres_native_tls::MakeTlsConnector::new(connector))
}
