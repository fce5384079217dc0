//! `fieldstore serve`: the store over gRPC (health, reflection) and over the Kubernetes HTTP
//! API (`--http`, see [`crate::http`]), with authentication, authorization, limits and graceful
//! shutdown.

use crate::api::auth::Auth;
use crate::api::{Api, Limits};
use crate::coalesce::Coalesced;
use crate::listen::{Conn, ConnLimits, Connections, InFlightLayer};
use crate::location::Location;
use crate::metrics::{Metrics, MetricsLayer};
use crate::proto::FILE_DESCRIPTOR_SET;
use crate::service::watch::StoreApi;
use crate::service::StoreService;
use clap::Args;
use fieldstore_engine::store::{Options, Store, TypeSpec};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The default listen address: loopback, port 7700.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7700";
/// The default address of the Kubernetes HTTP API: loopback, port 7701.
pub const DEFAULT_HTTP: &str = "127.0.0.1:7701";
/// The largest `--header-read-timeout-seconds` and `--idle-timeout-seconds`: a year (hyper adds
/// them to the clock).
const MAX_TIMEOUT_SECONDS: u64 = 365 * 24 * 3600;

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (`127.0.0.1:0` picks a free port; the address is printed).
    #[arg(long, default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// Address of the Kubernetes HTTP API (kubectl, client libraries); `127.0.0.1:0` picks a
    /// free port. Same auth, TLS, limits and metrics as gRPC.
    #[arg(long, default_value = DEFAULT_HTTP, conflicts_with = "no_http")]
    http: SocketAddr,
    /// Do not serve the Kubernetes HTTP API.
    #[arg(long)]
    no_http: bool,
    /// Serve the web view of history at `/ui/` on the HTTP API's listener (default: on when that
    /// listener is loopback; `--ui=false` turns it off).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    ui: Option<bool>,
    /// More types: CustomResourceDefinitions (YAML, several documents allowed, or JSON), or an
    /// API server's OpenAPI document (v2 or v3).
    #[arg(long = "types")]
    types: Vec<PathBuf>,
    /// Bearer tokens, kube-apiserver's static token file format (`token,user,uid[,"groups"]`).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Authorization rules (YAML; see the README).
    #[arg(long)]
    authz_file: Option<PathBuf>,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = 3 << 20)]
    max_request_bytes: usize,
    /// Deepest nesting of an object.
    #[arg(long, default_value_t = fieldstore_engine::store::DEFAULT_MAX_DEPTH)]
    max_depth: usize,
    /// Open watches per identity.
    #[arg(long, default_value_t = 100)]
    max_watches_per_client: usize,
    /// Deadline of a unary request, in seconds.
    #[arg(long, default_value_t = 60)]
    request_deadline_seconds: u64,
    /// Seconds a new connection has to send its first request's headers, and an HTTP/1.1
    /// connection each later request's (slow or silent clients are disconnected).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT_SECONDS))]
    header_read_timeout_seconds: u64,
    /// Seconds a connection may stay open without a request in flight (a streaming watch is
    /// one); HTTP/2 connections are pinged after as long without traffic.
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT_SECONDS))]
    idle_timeout_seconds: u64,
    /// Open connections of one client IP address, gRPC and HTTP together; more are closed at
    /// once.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections_per_client: u64,
    /// Serve Prometheus metrics on `http://ADDR/metrics`.
    #[arg(long)]
    metrics: Option<SocketAddr>,
    /// Store built-in objects in their Kubernetes protobuf encoding, as kube-apiserver does in
    /// etcd (about half the bytes; reads 1.15-1.6x slower; engine/STORAGE.md).
    #[arg(long)]
    protobuf_storage: bool,
    /// Serve TLS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve etcd's v3 gRPC API (KV, Watch, Lease, Maintenance) on this address, over the
    /// store's own revisions (RocksDB data directories only); `127.0.0.1:0` picks a free port.
    /// Off by default.
    #[arg(long)]
    etcd_api: Option<SocketAddr>,
    /// The etcd API's server certificate (PEM), as etcd's --cert-file; needs --etcd-keyfile.
    #[arg(long, requires_all = ["etcd_keyfile", "etcd_api"])]
    etcd_certfile: Option<PathBuf>,
    /// The private key of --etcd-certfile (PEM), as etcd's --key-file.
    #[arg(long, requires = "etcd_certfile")]
    etcd_keyfile: Option<PathBuf>,
    /// Client certificates of the etcd API must be signed by this CA (PEM), as etcd's
    /// --trusted-ca-file with --client-cert-auth; needs --etcd-certfile.
    #[arg(long, requires = "etcd_certfile")]
    etcd_cafile: Option<PathBuf>,
    /// Seconds between the etcd API's progress notifications to idle watches that asked for
    /// them (etcd's --experimental-watch-progress-notify-interval; default 600, etcd's).
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..), requires = "etcd_api")]
    etcd_progress_notify_seconds: u64,
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] fieldstore_engine::Error),
    /// An auth file is unusable.
    #[error(transparent)]
    AuthFile(#[from] crate::api::auth::AuthFileError),
    /// A types file is unusable.
    #[error("{path}: {message}")]
    TypesFile {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Listening beyond loopback without authentication.
    #[error("refusing to listen on {0} without --token-file: only loopback addresses may serve unauthenticated clients")]
    Unauthenticated(SocketAddr),
    /// The network or runtime failed.
    #[error("{0}")]
    Io(String),
}

/// Runs the server until SIGINT or SIGTERM.
pub fn run(location: &Location, args: &ServeArgs) -> Result<(), ServeError> {
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    without_huge_pages();
    let mut auth = Auth::open();
    if let Some(f) = &args.token_file {
        auth = auth.with_token_file(f)?;
    }
    if let Some(f) = &args.authz_file {
        auth = auth.with_authz_file(f)?;
    }
    if !args.listen.ip().is_loopback() && !auth.requires_tokens() {
        return Err(ServeError::Unauthenticated(args.listen));
    }
    let http = (!args.no_http).then_some(args.http);
    if let Some(addr) = http.filter(|a| !a.ip().is_loopback() && !auth.requires_tokens()) {
        return Err(ServeError::Unauthenticated(addr));
    }
    if args.etcd_api.is_some() && matches!(location, Location::Etcd { .. }) {
        return Err(ServeError::Io("--etcd-api needs a RocksDB data directory: a store kept in etcd does not serve the etcd API".into()));
    }
    if let Some(addr) = args.etcd_api.filter(|a| !a.ip().is_loopback() && args.etcd_cafile.is_none()) {
        return Err(ServeError::Io(format!(
            "refusing to serve the etcd API on {addr} without --etcd-cafile: only loopback addresses may serve clients without certificates"
        )));
    }
    let store = location.open(
        Options::default()
            .max_depth(args.max_depth)
            .max_object_bytes(fieldstore_engine::store::DEFAULT_MAX_OBJECT_BYTES)
            .max_patch_bytes(args.max_request_bytes)
            .namespace_lifecycle(!args.no_http)
            .protobuf_storage(args.protobuf_storage),
    )?;
    for file in &args.types {
        for spec in types_file(file)? {
            store.register(spec)?;
        }
    }
    // The namespaces every Kubernetes cluster has (`default`, `kube-system`, …), for the
    // Kubernetes API's clients; a store that refuses them (a tiny --max-depth) still serves.
    if !args.no_http {
        if let Err(e) = store.ensure_namespaces() {
            tracing::warn!(error = %e, "cannot create the default namespaces");
        }
    }
    let limits = Limits {
        max_request_bytes: args.max_request_bytes,
        max_watches_per_client: args.max_watches_per_client,
        request_deadline: Duration::from_secs(args.request_deadline_seconds.max(1)),
    };
    // Store calls block (the commit waits for its group's fsync), so they run on the blocking
    // pool; its threads are kept for an hour rather than tokio's 10 s, because a thread that
    // ends is started again by the next burst of requests, and a new thread costs more than the
    // request (its stack, the allocator's per-thread heap on fresh pages).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_keep_alive(Duration::from_secs(3600))
        .build()
        .map_err(|e| ServeError::Io(e.to_string()))?;
    // One TLS configuration for both listeners (HTTP/2 and HTTP/1.1 by ALPN; gRPC takes the
    // HTTP/2 connections).
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            let read = |p: &PathBuf| std::fs::read(p).map_err(|e| ServeError::Io(format!("reading {}: {e}", p.display())));
            Some(crate::http::listener::tls_config(&read(cert)?, &read(key)?).map_err(ServeError::Io)?)
        }
        _ => None,
    };
    let ui = args.ui.unwrap_or_else(|| http.is_some_and(|a| a.ip().is_loopback()));
    let addrs = Addrs { listen: args.listen, http, metrics: args.metrics, ui };
    let conn_limits = ConnLimits {
        header_read_timeout: Duration::from_secs(args.header_read_timeout_seconds),
        idle_timeout: Duration::from_secs(args.idle_timeout_seconds),
        max_per_client: usize::try_from(args.max_connections_per_client).unwrap_or(usize::MAX),
    };
    let etcd = match args.etcd_api {
        Some(addr) => Some(EtcdDoor {
            addr,
            tls: etcd_tls(args)?,
            progress_interval: Duration::from_secs(args.etcd_progress_notify_seconds),
            data: match location {
                Location::Data(dir) => Some(dir.clone()),
                Location::Etcd { .. } => None,
            },
        }),
        None => None,
    };
    let server = Server { limits, conn_limits, addrs, tls, etcd };
    runtime.block_on(serve(store.clone(), Arc::new(auth), server, location))?;
    drop(runtime);
    // The last handle: joins the store's threads and closes RocksDB (the WAL is synced on every
    // acknowledged write).
    drop(store);
    tracing::info!("stopped");
    Ok(())
}

/// Turns transparent huge pages off for this process. Memory handed back to the kernel and
/// touched again by a list or watch burst was faulted in 2 MiB pages, each zeroed whole, when the
/// allocator (mimalloc) still advised huge pages for its arenas (it is built with `no_thp` now;
/// this covers every other mapping, and kernels set to use them always). Measured in
/// `benches/SERVED_RESULTS.md` (session 15): 37 % of the server's CPU during a paged list went to
/// zeroing huge pages, and the server's CPU per listed object fell by a third without them. A
/// failure (another kernel) only leaves the default. Every command of the CLI starts with it (a
/// large `replay` peaked 16 MiB higher with them).
pub(crate) fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        tracing::debug!(error = %e, "cannot turn transparent huge pages off");
    }
}

/// Where the server listens: gRPC, the HTTP API (when on), metrics (when on).
struct Addrs {
    listen: SocketAddr,
    http: Option<SocketAddr>,
    metrics: Option<SocketAddr>,
    /// Whether the HTTP listener serves the web view.
    ui: bool,
}

/// How the server serves: request limits, connection limits, addresses, TLS, the etcd API.
struct Server {
    limits: Limits,
    conn_limits: ConnLimits,
    addrs: Addrs,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    etcd: Option<EtcdDoor>,
}

/// The etcd API's listener: its address, TLS, and the data directory (for `Status`).
struct EtcdDoor {
    addr: SocketAddr,
    tls: Option<tonic::transport::ServerTlsConfig>,
    progress_interval: Duration,
    data: Option<PathBuf>,
}

/// The etcd API's TLS, from --etcd-certfile, --etcd-keyfile and --etcd-cafile.
fn etcd_tls(args: &ServeArgs) -> Result<Option<tonic::transport::ServerTlsConfig>, ServeError> {
    let read = |p: &PathBuf| std::fs::read(p).map_err(|e| ServeError::Io(format!("reading {}: {e}", p.display())));
    let (Some(cert), Some(key)) = (&args.etcd_certfile, &args.etcd_keyfile) else { return Ok(None) };
    let mut tls = tonic::transport::ServerTlsConfig::new().identity(tonic::transport::Identity::from_pem(read(cert)?, read(key)?));
    if let Some(ca) = &args.etcd_cafile {
        tls = tls.client_ca_root(tonic::transport::Certificate::from_pem(read(ca)?));
    }
    Ok(Some(tls))
}

async fn serve(store: Store, auth: Arc<Auth>, server: Server, location: &Location) -> Result<(), ServeError> {
    let Server { limits, conn_limits, addrs, tls, etcd } = server;
    // Listened for before any listener is up: a harness that stops the server as soon as it
    // answers must find SIGTERM handled, not the process killed by its default action.
    let signals = StopSignals::listen();
    // One count of connections per client address for both listeners.
    let conns = Connections::new(conn_limits);
    let (listen, metrics_addr) = (addrs.listen, addrs.metrics);
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| ServeError::Io(format!("cannot listen on {listen}: {e}")))?;
    let local = listener.local_addr().map_err(|e| ServeError::Io(e.to_string()))?;
    let metrics = Arc::new(Metrics::default());
    let metrics_local = match metrics_addr {
        Some(addr) => {
            let l = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| ServeError::Io(format!("cannot listen on {addr} for metrics: {e}")))?;
            let a = l.local_addr().map_err(|e| ServeError::Io(e.to_string()))?;
            tokio::spawn(crate::metrics::serve(l, metrics.clone(), store.clone(), conn_limits.header_read_timeout));
            Some(a)
        }
        None => None,
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let etcd_local = match etcd {
        Some(door) => {
            let l = tokio::net::TcpListener::bind(door.addr)
                .await
                .map_err(|e| ServeError::Io(format!("cannot listen on {} for the etcd API: {e}", door.addr)))?;
            let a = l.local_addr().map_err(|e| ServeError::Io(e.to_string()))?;
            let scheme = if door.tls.is_some() { "https" } else { "http" };
            let api = crate::etcd_api::EtcdApi::new(store.clone(), door.data, &format!("{scheme}://{a}"))
                .progress_interval(door.progress_interval);
            let shared = crate::etcd_api::Shared { metrics: metrics.clone(), conns: conns.clone(), deadline: limits.request_deadline };
            let stop = stop_rx.clone();
            tokio::spawn(async move {
                if let Err(e) = api.serve(l, door.tls, shared, stop).await {
                    tracing::error!(error = %e, "the etcd API stopped");
                }
            });
            Some(format!("{scheme}://{a}"))
        }
        None => None,
    };
    let max_message = limits.max_request_bytes.saturating_add(64 << 10);
    let api = Api::new(store, auth.clone(), limits, metrics.clone());
    let service = StoreService::new(api.clone(), stop_rx.clone());
    let http_local = match addrs.http {
        Some(addr) => {
            let l = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| ServeError::Io(format!("cannot listen on {addr} for the HTTP API: {e}")))?;
            let a = l.local_addr().map_err(|e| ServeError::Io(e.to_string()))?;
            let mut router = crate::http::Http::new(api.clone(), stop_rx.clone(), service.encodings.clone()).router();
            if addrs.ui {
                router = router.merge(crate::http::ui::router());
            }
            tokio::spawn(crate::http::listener::serve(l, router, tls.clone(), conns.clone(), stop_rx));
            Some(a)
        }
        None => None,
    };
    let api = StoreApi::new(service, max_message);
    let api = tonic::service::interceptor::InterceptedService::new(api, move |mut req: tonic::Request<()>| {
        let header = req.metadata().get("authorization").and_then(|v| v.to_str().ok());
        let id = auth.authenticate_header(header).map_err(|s| crate::service::status::from_k8s(&s))?;
        req.extensions_mut().insert(id);
        Ok(req)
    });
    let (mut health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<StoreApi>().await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|e| ServeError::Io(e.to_string()))?;
    // The first line on stdout is the address, for scripts and tests that listen on port 0.
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mut extra = String::new();
    if let Some(h) = http_local {
        extra.push_str(&format!(", kubernetes API {scheme}://{h}"));
        if addrs.ui {
            extra.push_str(&format!(", web view {scheme}://{h}/ui/"));
        }
    }
    if let Some(m) = metrics_local {
        extra.push_str(&format!(", metrics http://{m}/metrics"));
    }
    if let Some(e) = etcd_local {
        extra.push_str(&format!(", etcd API {e}"));
    }
    println!("fieldstore: serving on {local} ({scheme}; {location}{extra})");
    // Built on first use otherwise: not on the way to ready, but before clients need it.
    std::thread::spawn(fieldstore_codec::k8s_protobuf::prepare);
    tracing::info!(%local, %location, "serving");
    let watches = metrics.clone();
    let shutdown = async move {
        signals.wait().await;
        tracing::info!("shutting down: ending watches with a bookmark");
        let _ = stop_tx.send(true);
        // Give open watches a moment to send their last bookmark; with none open, stop at once
        // (a test harness stopping a server per test waits for nothing).
        if watches.open_watches.load(std::sync::atomic::Ordering::Relaxed) > 0 {
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    };
    // Connections are closed when they go without a request too long (`crate::listen`); a peer
    // that does not answer a ping within 20 s (tonic's default) is gone.
    let router = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(conn_limits.idle_timeout))
        .layer(MetricsLayer(metrics))
        .layer(InFlightLayer)
        .add_service(health_service)
        .add_service(reflection)
        .add_service(api);
    // Each connection's writes coalesced (`crate::coalesce`): the frames of the streams one
    // change wakes leave in one system call (and, with TLS, in few records). Connections are
    // accepted as the HTTP listener's (`crate::listen`: TCP_NODELAY, errors waited out).
    let served = match tls {
        None => {
            let incoming = futures_util::stream::unfold((listener, conns), |(l, conns)| async move {
                let conn = crate::listen::accept(&l, "grpc", &conns).await.into_conn();
                Some((Ok::<_, std::io::Error>(Coalesced::new(conn)), (l, conns)))
            });
            router.serve_with_incoming_shutdown(incoming, shutdown).await
        }
        Some(config) => router.serve_with_incoming_shutdown(tls_incoming(listener, config, conns), shutdown).await,
    };
    served.map_err(|e| ServeError::Io(e.to_string()))
}

/// The gRPC listener's connections with TLS: each handshake on a task of its own (a slow client
/// holds up no one), offering HTTP/2 alone, then the stream's writes coalesced.
fn tls_incoming(
    listener: tokio::net::TcpListener,
    config: Arc<tokio_rustls::rustls::ServerConfig>,
    conns: Arc<Connections>,
) -> impl futures_util::Stream<Item = Result<Coalesced<tokio_rustls::server::TlsStream<Conn<tokio::net::TcpStream>>>, std::io::Error>> {
    let acceptor = crate::listen::acceptor(&config, &[b"h2"]);
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                c = crate::listen::accept(&listener, "grpc", &conns) => c,
                () = tx.closed() => return,
            };
            let peer = accepted.peer;
            let socket = accepted.into_conn();
            let (acceptor, tx) = (acceptor.clone(), tx.clone());
            tokio::spawn(async move {
                if let Some(stream) = crate::listen::tls_handshake(&acceptor, socket, peer).await {
                    let _ = tx.send(Ok(Coalesced::new(stream))).await;
                }
            });
        }
    });
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) })
}

/// SIGINT and SIGTERM (Ctrl-C elsewhere), handled from the moment they are listened for.
struct StopSignals {
    #[cfg(unix)]
    unix: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl StopSignals {
    /// Installs the handlers now (within the runtime).
    fn listen() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let unix = signal(SignalKind::interrupt()).and_then(|int| Ok((int, signal(SignalKind::terminate())?))).ok();
            StopSignals { unix }
        }
        #[cfg(not(unix))]
        StopSignals {}
    }

    /// Until the first signal.
    async fn wait(self) {
        #[cfg(unix)]
        if let Some((mut int, mut term)) = self.unix {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The types of a `--types` file: CustomResourceDefinitions (YAML, several documents allowed, or
/// JSON), or an API server's OpenAPI document (v2 or v3, JSON or YAML).
fn types_file(path: &Path) -> Result<Vec<TypeSpec>, ServeError> {
    let err = |message: String| ServeError::TypesFile { path: path.display().to_string(), message };
    let text = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    let mut out = Vec::new();
    // An administrator's file: nesting bounded only by what the parsers allow (128 levels).
    for doc in fieldstore_codec::document::parse_stream(&text, 128).map_err(|e| err(e.to_string()))? {
        let v = doc.value;
        if v.get("paths").is_some() && (v.get("swagger").is_some() || v.get("openapi").is_some()) {
            out.extend(TypeSpec::from_openapi(&v).map_err(|e| err(e.to_string()))?);
        } else {
            out.push(TypeSpec::from_crd(&v).map_err(|e| err(e.to_string()))?);
        }
    }
    Ok(out)
}
