//! Accepting connections, for the gRPC and the HTTP listeners: TCP with `TCP_NODELAY`, at most
//! [`ConnLimits::max_per_client`] open connections per client address, TLS handshakes with a
//! deadline, and connections closed when they go without a request too long ([`Conn`]).
//!
//! A connection has a request in flight from the moment its service is called until the
//! response's body is dropped ([`InFlightService`]): a streaming watch is in flight as long as
//! it streams. A connection with none in flight is closed (its socket reads end of stream)
//! [`ConnLimits::header_read_timeout`] after it was accepted when it has not yet sent a request
//! (a silent connection, a slow first request head, an HTTP/2 preface that never comes), and
//! [`ConnLimits::idle_timeout`] after its last request ended otherwise. hyper adds its own
//! header read timeout to every later HTTP/1.1 request head (the HTTP listener sets it), which
//! also bounds the wait of an idle HTTP/1.1 connection for its next request.
//!
//! hyper has no idle timeout of its own (hyperium/hyper#1628, #2355), hence [`Conn`].

use hyper::body::{Body, Frame, SizeHint};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep};
use tokio_rustls::{rustls, server::TlsStream, TlsAcceptor};

/// How long a client has to complete its TLS handshake.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The limits on a server's connections (`fieldstore serve` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// How long a new connection has to send its first request's head, and (hyper) an HTTP/1.1
    /// connection each later one's. kube-apiserver: 32 s.
    pub header_read_timeout: Duration,
    /// How long a connection may stay without a request in flight after its last one.
    /// kube-apiserver: 90 s.
    pub idle_timeout: Duration,
    /// Open connections of one client IP address, on the gRPC and HTTP listeners together;
    /// beyond it a new connection is closed at once.
    pub max_per_client: usize,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits { header_read_timeout: Duration::from_secs(32), idle_timeout: Duration::from_secs(90), max_per_client: 1000 }
    }
}

/// A server's open connections by client address, shared by its listeners, and their limits.
#[derive(Debug, Default)]
pub struct Connections {
    limits: ConnLimits,
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl Connections {
    /// No connection yet, under `limits`.
    pub fn new(limits: ConnLimits) -> Arc<Self> {
        Arc::new(Connections { limits, open: Mutex::default() })
    }

    /// The limits.
    pub fn limits(&self) -> ConnLimits {
        self.limits
    }

    /// A slot for one more connection of `ip`; `None` when it has its maximum open.
    fn take(self: &Arc<Self>, ip: IpAddr) -> Option<ClientSlot> {
        let mut open = self.open.lock();
        let n = open.entry(ip).or_default();
        if *n >= self.limits.max_per_client {
            return None;
        }
        *n += 1;
        Some(ClientSlot { conns: self.clone(), ip })
    }
}

/// One open connection of a client address, counted until dropped.
#[derive(Debug)]
pub struct ClientSlot {
    conns: Arc<Connections>,
    ip: IpAddr,
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self.conns.open.lock();
        if let Some(n) = open.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// An accepted connection within its client's limit: the socket (with `TCP_NODELAY`), the
/// client's address, and the slot it holds.
#[derive(Debug)]
pub struct Accepted {
    /// The socket.
    pub socket: TcpStream,
    /// The client's address.
    pub peer: SocketAddr,
    /// The connection's place in its client's count.
    pub slot: ClientSlot,
}

impl Accepted {
    /// The socket as a [`Conn`]: closed when it goes without a request too long.
    pub fn into_conn(self) -> Conn<TcpStream> {
        Conn::new(self.socket, self.peer, self.slot)
    }
}

/// The next connection of `listener` (`what` names the listener in logs) whose client has fewer
/// than [`ConnLimits::max_per_client`] open; others are closed at once. `TCP_NODELAY` is set:
/// without it every reply would wait for the client's delayed ACK (~40 ms). Errors (out of
/// descriptors and the like) are logged and waited out rather than spun on.
pub async fn accept(listener: &TcpListener, what: &str, conns: &Arc<Connections>) -> Accepted {
    loop {
        match listener.accept().await {
            Ok((socket, peer)) => {
                let Some(slot) = conns.take(peer.ip()) else {
                    tracing::debug!(%peer, listener = what, limit = conns.limits.max_per_client, "too many connections from this address: closed");
                    drop(socket);
                    continue;
                };
                let _ = socket.set_nodelay(true);
                return Accepted { socket, peer, slot };
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
pub async fn tls_handshake<IO: AsyncRead + AsyncWrite + Unpin>(
    acceptor: &TlsAcceptor,
    socket: IO,
    peer: SocketAddr,
) -> Option<TlsStream<IO>> {
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

/// Whether a connection has requests in flight, and since when it has had none (module docs).
#[derive(Debug)]
pub struct Activity {
    limits: ConnLimits,
    peer: SocketAddr,
    state: Mutex<Idle>,
}

#[derive(Debug)]
struct Idle {
    /// Requests whose response body is still alive.
    in_flight: usize,
    /// When the last request ended (or the connection was accepted).
    since: Instant,
    /// Whether a request has started on the connection.
    served: bool,
}

/// When a connection without requests in flight is to be closed.
enum Deadline {
    /// A request is in flight: not while it is.
    InFlight,
    /// At this instant.
    At(Instant),
    /// Never (a timeout beyond the clock's range).
    Never,
}

impl Activity {
    fn new(limits: ConnLimits, peer: SocketAddr) -> Self {
        Activity { limits, peer, state: Mutex::new(Idle { in_flight: 0, since: Instant::now(), served: false }) }
    }

    /// Marks a request in flight until the guard is dropped.
    pub fn start(self: &Arc<Self>) -> InFlight {
        let mut s = self.state.lock();
        s.in_flight += 1;
        s.served = true;
        InFlight(self.clone())
    }

    fn deadline(&self) -> Deadline {
        let s = self.state.lock();
        if s.in_flight > 0 {
            return Deadline::InFlight;
        }
        let limit = if s.served { self.limits.idle_timeout } else { self.limits.header_read_timeout };
        s.since.checked_add(limit).map_or(Deadline::Never, Deadline::At)
    }
}

/// A request in flight on its connection ([`Activity::start`]) until dropped.
#[derive(Debug)]
pub struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut s = self.0.state.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.in_flight == 0 {
            s.since = Instant::now();
        }
    }
}

/// What gRPC requests carry in their extensions about their connection (tonic's
/// [`Connected`](tonic::transport::server::Connected)): the client's address and the
/// connection's [`Activity`].
#[derive(Debug, Clone)]
pub struct ConnInfo {
    /// The client's address.
    pub peer: SocketAddr,
    /// The connection's requests in flight.
    pub activity: Arc<Activity>,
}

/// A connection's socket that reads end of stream once the connection has gone without a
/// request in flight too long (module docs); it holds the connection's [`ClientSlot`].
#[derive(Debug)]
pub struct Conn<IO> {
    io: IO,
    activity: Arc<Activity>,
    timer: Pin<Box<Sleep>>,
    /// The instant `timer` is set to, if set.
    armed: Option<Instant>,
    _slot: ClientSlot,
}

impl<IO> Conn<IO> {
    /// `io`, a connection of `peer` holding `slot`, under its listener's limits.
    pub fn new(io: IO, peer: SocketAddr, slot: ClientSlot) -> Self {
        let activity = Arc::new(Activity::new(slot.conns.limits, peer));
        Conn { io, activity, timer: Box::pin(tokio::time::sleep(Duration::ZERO)), armed: None, _slot: slot }
    }

    /// The connection's requests in flight, for the service that serves it.
    pub fn activity(&self) -> &Arc<Activity> {
        &self.activity
    }

    /// Whether the connection is past its time without requests; else arms the timer (with
    /// `cx`) for the moment it will be, or for a check after a while when a request is in
    /// flight.
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            let now = Instant::now();
            let target = match self.activity.deadline() {
                Deadline::At(d) if now >= d => return true,
                Deadline::At(d) => d,
                Deadline::InFlight => match self.armed {
                    Some(a) if a > now => a,
                    _ => match now.checked_add(self.activity.limits.idle_timeout) {
                        Some(t) => t,
                        None => return false,
                    },
                },
                Deadline::Never => return false,
            };
            if self.armed != Some(target) {
                self.timer.as_mut().reset(target);
                self.armed = Some(target);
            }
            if self.timer.as_mut().poll(cx).is_pending() {
                return false;
            }
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Conn<IO> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Poll::Ready(r) = Pin::new(&mut this.io).poll_read(cx, buf) {
            return Poll::Ready(r);
        }
        if this.poll_expired(cx) {
            // End of stream: the protocol above closes the connection.
            tracing::debug!(peer = %this.activity.peer, "closing a connection without requests");
            return Poll::Ready(Ok(()));
        }
        Poll::Pending
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Conn<IO> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, data)
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl<IO> tonic::transport::server::Connected for Conn<IO> {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> ConnInfo {
        ConnInfo { peer: self.activity.peer, activity: self.activity.clone() }
    }
}

/// The tower layer of the gRPC server that marks each request in flight on its connection (the
/// [`ConnInfo`] tonic puts in its extensions) until its response body is dropped.
#[derive(Debug, Clone, Copy, Default)]
pub struct InFlightLayer;

impl<S> tower::Layer<S> for InFlightLayer {
    type Service = InFlightService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        InFlightService { inner, activity: None }
    }
}

/// A service whose requests are marked in flight on their connection until their response body
/// is dropped: the connection's given [`Activity`] (the HTTP listener), else the one in the
/// request's [`ConnInfo`] (gRPC, [`InFlightLayer`]).
#[derive(Debug, Clone)]
pub struct InFlightService<S> {
    inner: S,
    activity: Option<Arc<Activity>>,
}

impl<S> InFlightService<S> {
    /// `inner`, serving the connection of `activity`.
    pub fn new(inner: S, activity: Arc<Activity>) -> Self {
        InFlightService { inner, activity: Some(activity) }
    }
}

impl<S, B, R> tower::Service<http::Request<B>> for InFlightService<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<InFlightBody<R>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let activity = self.activity.clone().or_else(|| {
            let ext = req.extensions();
            let info =
                ext.get::<ConnInfo>().or_else(|| ext.get::<tonic::transport::server::TlsConnectInfo<ConnInfo>>().map(|t| t.get_ref()));
            info.map(|i| i.activity.clone())
        });
        let guard = activity.map(|a| a.start());
        let fut = self.inner.call(req);
        Box::pin(async move {
            let res = fut.await?;
            Ok(res.map(|body| InFlightBody { body, _guard: guard }))
        })
    }
}

/// A response body that keeps its request in flight ([`InFlight`]) until dropped.
#[derive(Debug)]
pub struct InFlightBody<B> {
    body: B,
    _guard: Option<InFlight>,
}

impl<B: Body + Unpin> Body for InFlightBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conns(max: usize) -> Arc<Connections> {
        Connections::new(ConnLimits { max_per_client: max, ..ConnLimits::default() })
    }

    #[test]
    fn slots_are_counted_per_address_until_dropped() {
        let c = conns(2);
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "10.0.0.1".parse().unwrap());
        let (s1, _s2) = (c.take(a).unwrap(), c.take(a).unwrap());
        assert!(c.take(a).is_none(), "a third connection of one address");
        let _other = c.take(b).unwrap();
        drop(s1);
        let _s3 = c.take(a).unwrap();
        assert!(c.take(a).is_none());
    }

    #[test]
    fn a_connection_without_requests_expires_unless_one_is_in_flight() {
        let limits = ConnLimits { header_read_timeout: Duration::from_secs(5), idle_timeout: Duration::from_secs(10), max_per_client: 1 };
        let peer: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let at = |a: &Activity| match a.deadline() {
            Deadline::At(d) => Some(d),
            _ => None,
        };
        let before = Instant::now();
        let a = Arc::new(Activity::new(limits, peer));
        let first = at(&a).unwrap();
        assert!(first >= before + Duration::from_secs(5) && first <= Instant::now() + Duration::from_secs(5), "the first request's head");
        let guard = a.start();
        assert!(matches!(a.deadline(), Deadline::InFlight));
        let (g2, ended) = (a.start(), Instant::now());
        drop(guard);
        assert!(matches!(a.deadline(), Deadline::InFlight), "one request still in flight");
        drop(g2);
        let idle = at(&a).unwrap();
        assert!(idle >= ended + Duration::from_secs(10) && idle <= Instant::now() + Duration::from_secs(10), "idle after the last request");
        let huge = ConnLimits { idle_timeout: Duration::MAX, header_read_timeout: Duration::MAX, max_per_client: 1 };
        assert!(matches!(Activity::new(huge, peer).deadline(), Deadline::Never));
    }
}
