//! The `KV` service.

use super::{convert, rpc, status, too_large, EtcdApi, MAX_REQUEST_BYTES};
use prost::Message;
use tonic::{Request, Response, Status};

/// Refuses a write larger than etcd's `--max-request-bytes`.
fn bounded<M: Message>(m: &M) -> Result<(), Status> {
    if m.encoded_len() > MAX_REQUEST_BYTES {
        return Err(too_large());
    }
    Ok(())
}

#[tonic::async_trait]
impl rpc::kv_server::Kv for EtcdApi {
    async fn range(&self, request: Request<rpc::RangeRequest>) -> Result<Response<rpc::RangeResponse>, Status> {
        let r = request.into_inner();
        if !convert::sort_known(&r) {
            return Err(Status::invalid_argument("etcdserver: invalid sort option"));
        }
        let req = convert::range_request(r);
        let store = self.store.clone();
        // A range reads RocksDB on this thread: off the runtime's workers.
        let (resp, rev) = tokio::task::spawn_blocking(move || store.etcd_range(&req))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| status(&e))?;
        Ok(Response::new(convert::range_response(resp, EtcdApi::header(rev))))
    }

    async fn put(&self, request: Request<rpc::PutRequest>) -> Result<Response<rpc::PutResponse>, Status> {
        let p = request.into_inner();
        bounded(&p)?;
        let (resp, rev) = self.store.etcd_put_async(convert::put_request(p)).await.map_err(|e| status(&e))?;
        Ok(Response::new(convert::put_response(resp, EtcdApi::header(rev))))
    }

    async fn delete_range(&self, request: Request<rpc::DeleteRangeRequest>) -> Result<Response<rpc::DeleteRangeResponse>, Status> {
        let d = request.into_inner();
        let (resp, rev) = self.store.etcd_delete_async(convert::delete_request(d)).await.map_err(|e| status(&e))?;
        Ok(Response::new(convert::delete_response(resp, EtcdApi::header(rev))))
    }

    async fn txn(&self, request: Request<rpc::TxnRequest>) -> Result<Response<rpc::TxnResponse>, Status> {
        let t = request.into_inner();
        bounded(&t)?;
        let (resp, rev) = self.store.etcd_txn_async(convert::txn_request(t)).await.map_err(|e| status(&e))?;
        Ok(Response::new(convert::txn_response(resp, EtcdApi::header(rev))))
    }

    async fn compact(&self, request: Request<rpc::CompactionRequest>) -> Result<Response<rpc::CompactionResponse>, Status> {
        let rev = request.into_inner().revision;
        let store = self.store.clone();
        let current = tokio::task::spawn_blocking(move || store.etcd_compact(rev))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| status(&e))?;
        Ok(Response::new(rpc::CompactionResponse { header: EtcdApi::header(current) }))
    }
}
