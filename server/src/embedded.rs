//! The Kubernetes HTTP API in process, for applications that embed the store: the same router
//! `fieldstore serve` puts on its `--http` listener ([`crate::http`]), as a
//! [`tower::Service`] that a client calls directly, without a socket. Kubernetes client
//! libraries that take a service (kube-rs: `kube::Client::new(InProcess::new(store), "default")`)
//! then run unchanged on the embedded store: every verb, watches (streamed response bodies),
//! discovery, the OpenAPI documents, `metav1.Status` errors.
//!
//! An embedder is trusted: [`InProcess::new`] authenticates no one and authorizes everything
//! (the caller is `anonymous`, as with `fieldstore serve` without `--token-file`);
//! [`InProcess::with_api`] takes a request layer of the application's own (rules, limits).
//!
//! Watches end when their client drops the response body, and all of them, each with a last
//! bookmark as on a server's shutdown, when the last clone of the [`InProcess`] is dropped.
//! [`InProcess::serve`] also serves the same API on a listener (tests, tools that need a URL).

use crate::api::auth::Auth;
use crate::api::{Api, EventEncodings, Limits};
use crate::listen::{ConnLimits, Connections};
use crate::metrics::Metrics;
use axum::body::HttpBody;
use axum::Router;
use bytes::Bytes;
use fieldstore_engine::store::Store;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The Kubernetes HTTP API over a store, as a [`tower::Service`] (cheap to clone; every clone
/// serves the same API).
#[derive(Clone)]
pub struct InProcess {
    router: Router,
    stop: Arc<Stop>,
}

/// Ends the watches (and a listener's accept loop) when the last [`InProcess`] goes.
struct Stop {
    tx: tokio::sync::watch::Sender<bool>,
}

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = self.tx.send(true);
    }
}

impl InProcess {
    /// The API over `store`, every request allowed, with the default limits (3 MiB bodies, 100
    /// watches, 60 s per request).
    #[must_use]
    pub fn new(store: Store) -> Self {
        InProcess::with_api(Api::new(store, Arc::new(Auth::open()), Limits::default(), Arc::new(Metrics::default())))
    }

    /// The API over a request layer of the caller's own: its authentication and authorization
    /// rules (a client then sends `Authorization: Bearer` headers), limits and metrics.
    #[must_use]
    pub fn with_api(api: Api) -> Self {
        let (tx, rx) = tokio::sync::watch::channel(false);
        let router = crate::http::Http::new(api, rx, Arc::new(EventEncodings::default())).router();
        InProcess { router, stop: Arc::new(Stop { tx }) }
    }

    /// Serves the same API on `listener` (plain HTTP/1.1 and HTTP/2, the default connection
    /// limits) until the last clone of this `InProcess` is dropped: spawn the future on the
    /// runtime (it holds no clone). The listener's clients and the in-process ones see the same
    /// store and the same watches.
    pub fn serve(&self, listener: tokio::net::TcpListener) -> impl std::future::Future<Output = ()> + Send + 'static {
        let stop = self.stop.tx.subscribe();
        let router = self.router.clone();
        async move {
            let conns = Connections::new(ConnLimits::default());
            crate::http::listener::serve(listener, router, None, conns, stop).await;
        }
    }
}

impl<B> tower::Service<http::Request<B>> for InProcess
where
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = http::Response<axum::body::Body>;
    type Error = Infallible;
    type Future = axum::routing::future::RouteFuture<Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        tower::Service::<http::Request<B>>::poll_ready(&mut self.router, cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        self.router.call(req)
    }
}
