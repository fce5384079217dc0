//! The HTTP API's listener: plain TCP, or TLS (HTTP/2 and HTTP/1.1 by ALPN) with the
//! certificate of `--tls-cert`; connections are served by hyper until shutdown, those of HTTP/2
//! with their writes coalesced ([`crate::coalesce`]).

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_rustls::rustls;

/// A TLS configuration from a PEM certificate chain and private key.
///
/// # Errors
/// A message saying what is wrong with the files.
pub fn tls_config(cert_pem: &[u8], key_pem: &[u8]) -> Result<Arc<rustls::ServerConfig>, String> {
    let certs = rustls_pemfile::certs(&mut &cert_pem[..]).collect::<Result<Vec<_>, _>>().map_err(|e| format!("certificate: {e}"))?;
    let key = rustls_pemfile::private_key(&mut &key_pem[..]).map_err(|e| format!("private key: {e}"))?.ok_or("no private key found")?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Serves `router` on `listener` until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    loop {
        let (socket, peer) = tokio::select! {
            c = crate::listen::accept(&listener, "http") => c,
            _ = shutdown.changed() => return,
        };
        let service = TowerToHyperService::new(router.clone());
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let builder = auto::Builder::new(TokioExecutor::new());
            let served = match acceptor {
                Some(a) => match crate::listen::tls_handshake(&a, socket, peer).await {
                    // HTTP/2 (what client-go speaks over TLS, every watch of a client on one
                    // connection) with its writes coalesced, as gRPC's; HTTP/1.1 as it is.
                    Some(s) if s.get_ref().1.alpn_protocol() == Some(b"h2") => {
                        // HTTP/2 only: the coalescing's contract holds for HTTP/2's connection.
                        let builder = builder.http2_only();
                        builder.serve_connection(TokioIo::new(crate::coalesce::Coalesced::new(s)), service).await
                    }
                    Some(s) => builder.serve_connection(TokioIo::new(s), service).await,
                    None => return,
                },
                None => builder.serve_connection(TokioIo::new(socket), service).await,
            };
            if let Err(e) = served {
                tracing::debug!(%peer, error = %e, "http connection");
            }
        });
    }
}
