//! The HTTP API's listener: plain TCP, or TLS (HTTP/2 and HTTP/1.1 by ALPN) with the
//! certificate of `--tls-cert`; connections are served by hyper until shutdown, those of HTTP/2
//! with their writes coalesced ([`crate::coalesce`]), all under the connection limits of
//! [`crate::listen`].

use crate::listen::{Connections, InFlightService};
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
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

/// Serves `router` on `listener` until `shutdown` turns true, under the limits of `conns`
/// ([`crate::listen`]): hyper's header read timeout on every HTTP/1.1 request head, HTTP/2
/// keep-alive pings, and connections closed when they go without a request too long.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    conns: Arc<Connections>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let limits = conns.limits();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    // A peer that does not answer a ping within 20 s (hyper's default) is gone: its streams end.
    builder.http2().timer(TokioTimer::new()).keep_alive_interval(limits.idle_timeout);
    loop {
        let accepted = tokio::select! {
            c = crate::listen::accept(&listener, "http", &conns) => c,
            _ = shutdown.changed() => return,
        };
        let peer = accepted.peer;
        let conn = accepted.into_conn();
        let service = TowerToHyperService::new(InFlightService::new(router.clone(), conn.activity().clone()));
        let acceptor = acceptor.clone();
        let builder = builder.clone();
        tokio::spawn(async move {
            let served = match acceptor {
                Some(a) => match crate::listen::tls_handshake(&a, conn, peer).await {
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
                None => builder.serve_connection(TokioIo::new(conn), service).await,
            };
            if let Err(e) = served {
                tracing::debug!(%peer, error = %e, "http connection");
            }
        });
    }
}
