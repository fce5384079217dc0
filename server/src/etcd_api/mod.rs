//! The etcd door: etcd's v3 gRPC API (`KV`, `Watch`, `Lease`, `Maintenance`, `Cluster`) on a
//! listener of its own (`fieldstore serve --etcd-api ADDR`), over the store's etcd keys
//! (`fieldstore_engine::store::etcd_api`): an etcd client — `etcdctl`, kube-apiserver — keeps
//! its keys in fieldstore, under the store's revisions.
//!
//! Requests are bounded as etcd bounds them: a request of more than etcd's default
//! `--max-request-bytes` (1.5 MiB) is refused with etcd's "request is too large", and gRPC
//! messages above that plus etcd's 512 KiB allowance are refused by the transport. Errors carry
//! etcd's gRPC codes and messages ([`status`]).

mod convert;
mod kv;
mod lease;
mod maintenance;
mod watch;

use crate::listen::{Connections, InFlightLayer};
use crate::metrics::{Metrics, MetricsLayer};
use fieldstore_engine::store::etcd_api::EtcdApiError;
use fieldstore_engine::store::Store;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The generated code of `proto/etcd/` (kept apart from ours).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    /// `mvccpb`: keys and events.
    pub mod mvccpb {
        tonic::include_proto!("mvccpb");
    }
    /// `etcdserverpb`: the services.
    pub mod etcdserverpb {
        tonic::include_proto!("etcdserverpb");
    }
}

use pb::etcdserverpb as rpc;

/// etcd's default `--max-request-bytes`.
pub const MAX_REQUEST_BYTES: usize = 3 << 19;
/// What etcd's gRPC server accepts beyond it (`grpcOverheadBytes`).
const GRPC_OVERHEAD_BYTES: usize = 512 << 10;
/// The cluster id every header carries.
const CLUSTER_ID: u64 = 0x6669_656c_6473_746f;
/// The member id of this server (the one member, always the leader).
const MEMBER_ID: u64 = 0x7265_0000_0000_0001;
/// The version reported by `Status` (the etcd API level served): the first 3.5 release whose
/// progress notifications kube-apiserver trusts (it asks for them, `RequestProgress`, to serve
/// consistent LISTs from its watch cache; fieldstore's are in order with the events, as
/// `reference/storagetests` checks).
pub const VERSION: &str = "3.5.13";
/// etcd's default interval of progress notifications to idle watches that asked for them.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(600);

/// The state every service shares.
#[derive(Clone)]
pub struct EtcdApi {
    store: Store,
    /// The data directory (for `Status`'s database size), when local.
    data: Option<PathBuf>,
    /// The client URL `MemberList` advertises.
    client_url: Arc<str>,
    progress_interval: Duration,
}

impl EtcdApi {
    /// The API over `store`, advertised at `client_url`; `data` is the store's directory.
    #[must_use]
    pub fn new(store: Store, data: Option<PathBuf>, client_url: &str) -> EtcdApi {
        EtcdApi { store, data, client_url: client_url.into(), progress_interval: PROGRESS_INTERVAL }
    }

    /// Sends progress notifications to idle watches every `interval` (etcd's default: 10
    /// minutes; `--experimental-watch-progress-notify-interval`).
    #[must_use]
    pub fn progress_interval(mut self, interval: Duration) -> EtcdApi {
        self.progress_interval = interval;
        self
    }

    /// A response header at `revision`.
    fn header(revision: u64) -> Option<rpc::ResponseHeader> {
        Some(rpc::ResponseHeader {
            cluster_id: CLUSTER_ID,
            member_id: MEMBER_ID,
            revision: i64::try_from(revision).unwrap_or(i64::MAX),
            raft_term: 1,
        })
    }

    /// A header at the store's current revision.
    fn current(&self) -> Option<rpc::ResponseHeader> {
        Self::header(self.store.revision().0)
    }

    /// Serves the API on `listener` (TLS when `tls` is given) until `shutdown` turns true;
    /// revokes expired leases meanwhile.
    ///
    /// # Errors
    /// When the transport fails.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        tls: Option<tonic::transport::ServerTlsConfig>,
        shared: Shared,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> Result<(), String> {
        // etcd's first revision is 1; its clients take 0 for "none".
        self.store.etcd_start_async().await.map_err(|e| format!("etcd API: {e}"))?;
        let expiry = tokio::spawn(lease::expire_loop(self.store.clone(), shutdown.clone()));
        let max = MAX_REQUEST_BYTES + GRPC_OVERHEAD_BYTES;
        // The other doors' request metrics (labelled `etcdserverpb.KV/Range` …), their in-flight
        // tracking, which keeps a connection with a request or stream open from being closed
        // as idle, and their request deadline (a unary call; a stream's is its first answer).
        let mut builder =
            tonic::transport::Server::builder().timeout(shared.deadline).layer(MetricsLayer(shared.metrics)).layer(InFlightLayer);
        if let Some(tls) = tls {
            builder = builder.tls_config(tls).map_err(|e| format!("etcd API TLS: {e}"))?;
        }
        let router = builder
            .add_service(rpc::kv_server::KvServer::new(self.clone()).max_decoding_message_size(max))
            .add_service(rpc::watch_server::WatchServer::new(self.clone()).max_decoding_message_size(max))
            .add_service(rpc::lease_server::LeaseServer::new(self.clone()).max_decoding_message_size(max))
            .add_service(rpc::maintenance_server::MaintenanceServer::new(self.clone()).max_decoding_message_size(max))
            .add_service(rpc::cluster_server::ClusterServer::new(self).max_decoding_message_size(max));
        // Connections as the other listeners accept them: at most so many per client address,
        // closed after the idle timeout with no request in flight.
        let incoming = futures_util::stream::unfold((listener, shared.conns), |(l, conns)| async move {
            let conn = crate::listen::accept(&l, "etcd", &conns).await.into_conn();
            Some((Ok::<_, std::io::Error>(conn), (l, conns)))
        });
        let stop = async move {
            while !*shutdown.borrow() {
                if shutdown.changed().await.is_err() {
                    break;
                }
            }
        };
        let served = router.serve_with_incoming_shutdown(incoming, stop).await.map_err(|e| e.to_string());
        expiry.abort();
        served
    }
}

/// What the etcd door shares with the server's other doors.
pub struct Shared {
    /// The request metrics.
    pub metrics: Arc<Metrics>,
    /// The connection limits (per client address; idle connections).
    pub conns: Arc<Connections>,
    /// The deadline of a request.
    pub deadline: Duration,
}

/// The gRPC status of an engine error: etcd's code and message for what etcd refuses.
pub fn status(e: &fieldstore_engine::Error) -> tonic::Status {
    use tonic::Code;
    match e {
        fieldstore_engine::Error::EtcdApi(api) => {
            let code = match api {
                EtcdApiError::Compacted | EtcdApiError::FutureRevision | EtcdApiError::LeaseTtlTooLarge => Code::OutOfRange,
                EtcdApiError::LeaseNotFound => Code::NotFound,
                EtcdApiError::LeaseExists => Code::FailedPrecondition,
                EtcdApiError::Unsupported => Code::Unimplemented,
                _ => Code::InvalidArgument,
            };
            tonic::Status::new(code, api.to_string())
        }
        fieldstore_engine::Error::Closed => tonic::Status::unavailable("etcdserver: server stopped"),
        other => tonic::Status::internal(other.to_string()),
    }
}

/// etcd's answer to a request over `--max-request-bytes`.
fn too_large() -> tonic::Status {
    tonic::Status::invalid_argument("etcdserver: request is too large")
}
