//! `Maintenance` (what `etcdctl endpoint status` and `endpoint health` call) and `Cluster`
//! (`etcdctl member list`): one member, always the leader, with no alarms.

use super::{rpc, EtcdApi, MEMBER_ID, VERSION};
use std::path::Path;
use tonic::{Request, Response, Status};

/// The bytes of the files under `dir` (the database's size on disk).
fn size_of(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => size_of(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

#[tonic::async_trait]
impl rpc::maintenance_server::Maintenance for EtcdApi {
    async fn alarm(&self, _request: Request<rpc::AlarmRequest>) -> Result<Response<rpc::AlarmResponse>, Status> {
        Ok(Response::new(rpc::AlarmResponse { header: self.current(), alarms: Vec::new() }))
    }

    async fn status(&self, _request: Request<rpc::StatusRequest>) -> Result<Response<rpc::StatusResponse>, Status> {
        let revision = self.store.revision().0;
        let size = self.data.as_deref().map_or(0, size_of);
        let size = i64::try_from(size).unwrap_or(i64::MAX);
        Ok(Response::new(rpc::StatusResponse {
            header: EtcdApi::header(revision),
            version: VERSION.into(),
            db_size: size,
            leader: MEMBER_ID,
            raft_index: revision,
            raft_term: 1,
            raft_applied_index: revision,
            errors: Vec::new(),
            db_size_in_use: size,
            is_learner: false,
        }))
    }
}

#[tonic::async_trait]
impl rpc::cluster_server::Cluster for EtcdApi {
    async fn member_list(&self, _request: Request<rpc::MemberListRequest>) -> Result<Response<rpc::MemberListResponse>, Status> {
        let member = rpc::Member {
            id: MEMBER_ID,
            name: "fieldstore".into(),
            peer_ur_ls: Vec::new(),
            client_ur_ls: vec![self.client_url.to_string()],
            is_learner: false,
        };
        Ok(Response::new(rpc::MemberListResponse { header: self.current(), members: vec![member] }))
    }
}
