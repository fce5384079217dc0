//! Accepting connections, for the gRPC and the HTTP listeners: TCP with `TCP_NODELAY`, and TLS
//! handshakes with a deadline.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{rustls, server::TlsStream, TlsAcceptor};

/// How long a client has to complete its TLS handshake.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The next connection of `listener` (`what` names the listener in logs), with `TCP_NODELAY`:
/// without it every reply would wait for the client's delayed ACK (~40 ms). Errors (out of
/// descriptors and the like) are logged and waited out rather than spun on.
pub async fn accept(listener: &TcpListener, what: &str) -> (TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok((socket, peer)) => {
                let _ = socket.set_nodelay(true);
                return (socket, peer);
            }
            Err(e) => {
                tracing::warn!(error = %e, listener = what, "accept");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The TLS side of `socket`, or `None` (logged) when the handshake fails or takes longer than
/// [`TLS_HANDSHAKE_TIMEOUT`].
pub async fn tls_handshake(acceptor: &TlsAcceptor, socket: TcpStream, peer: SocketAddr) -> Option<TlsStream<TcpStream>> {
    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(socket)).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "TLS handshake");
            None
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            None
        }
    }
}

/// An acceptor of `config` offering only the application protocols `alpn` (e.g. `h2`).
pub fn acceptor(config: &Arc<rustls::ServerConfig>, alpn: &[&[u8]]) -> TlsAcceptor {
    let mut config = (**config).clone();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    TlsAcceptor::from(Arc::new(config))
}
