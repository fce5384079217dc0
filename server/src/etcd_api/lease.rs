//! The `Lease` service, and the task that revokes expired leases.

use super::{rpc, status, EtcdApi};
use fieldstore_engine::store::Store;
use futures_util::StreamExt;
use std::pin::Pin;
use std::time::Duration;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

/// How often expired leases are looked for (etcd checks every 500 ms).
const EXPIRY_CHECK: Duration = Duration::from_millis(500);

/// Revokes expired leases (deleting their keys) until `shutdown` turns true.
pub(super) async fn expire_loop(store: Store, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(EXPIRY_CHECK);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if let Err(e) = store.etcd_expire_leases_async().await {
                    tracing::warn!(error = %e, "cannot revoke expired leases");
                }
            }
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() {
                    return;
                }
            }
        }
    }
}

type KeepAliveStream = Pin<Box<dyn futures_util::Stream<Item = Result<rpc::LeaseKeepAliveResponse, Status>> + Send>>;

#[tonic::async_trait]
impl rpc::lease_server::Lease for EtcdApi {
    async fn lease_grant(&self, request: Request<rpc::LeaseGrantRequest>) -> Result<Response<rpc::LeaseGrantResponse>, Status> {
        let r = request.into_inner();
        let (id, ttl) = self.store.etcd_lease_grant_async(r.ttl, r.id).await.map_err(|e| status(&e))?;
        Ok(Response::new(rpc::LeaseGrantResponse { header: self.current(), id, ttl, error: String::new() }))
    }

    async fn lease_revoke(&self, request: Request<rpc::LeaseRevokeRequest>) -> Result<Response<rpc::LeaseRevokeResponse>, Status> {
        let rev = self.store.etcd_lease_revoke_async(request.into_inner().id).await.map_err(|e| status(&e))?;
        Ok(Response::new(rpc::LeaseRevokeResponse { header: EtcdApi::header(rev) }))
    }

    type LeaseKeepAliveStream = KeepAliveStream;

    async fn lease_keep_alive(
        &self,
        request: Request<Streaming<rpc::LeaseKeepAliveRequest>>,
    ) -> Result<Response<Self::LeaseKeepAliveStream>, Status> {
        let mut inbound = request.into_inner();
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let api = self.clone();
        tokio::spawn(async move {
            while let Some(Ok(req)) = inbound.next().await {
                let ttl = api.store.etcd_lease_keep_alive(req.id);
                let resp = rpc::LeaseKeepAliveResponse { header: api.current(), id: req.id, ttl };
                if tx.send(Ok(resp)).await.is_err() {
                    break;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn lease_time_to_live(
        &self,
        request: Request<rpc::LeaseTimeToLiveRequest>,
    ) -> Result<Response<rpc::LeaseTimeToLiveResponse>, Status> {
        let r = request.into_inner();
        Ok(Response::new(match self.store.etcd_lease_time_to_live(r.id, r.keys) {
            Ok(info) => rpc::LeaseTimeToLiveResponse {
                header: self.current(),
                id: info.id,
                ttl: info.ttl,
                granted_ttl: info.granted_ttl,
                keys: info.keys,
            },
            // etcd answers an unknown lease with TTL -1 ("already expired"), not an error.
            Err(fieldstore_engine::Error::EtcdApi(fieldstore_engine::store::etcd_api::EtcdApiError::LeaseNotFound)) => {
                rpc::LeaseTimeToLiveResponse { header: self.current(), id: r.id, ttl: -1, granted_ttl: 0, keys: Vec::new() }
            }
            Err(e) => return Err(status(&e)),
        }))
    }

    async fn lease_leases(&self, _request: Request<rpc::LeaseLeasesRequest>) -> Result<Response<rpc::LeaseLeasesResponse>, Status> {
        let leases = self.store.etcd_leases().into_iter().map(|id| rpc::LeaseStatus { id }).collect();
        Ok(Response::new(rpc::LeaseLeasesResponse { header: self.current(), leases }))
    }
}
