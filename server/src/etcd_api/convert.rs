//! Between the wire messages (`pb`) and the engine's etcd types.

use super::pb::mvccpb;
use super::rpc;
use fieldstore_engine::store::etcd_api as e;

/// A key on the wire.
pub(super) fn kv(k: e::KeyValue) -> mvccpb::KeyValue {
    mvccpb::KeyValue {
        key: k.key,
        create_revision: k.create_revision,
        mod_revision: k.mod_revision,
        version: k.version,
        value: k.value,
        lease: k.lease,
    }
}

/// An event on the wire.
pub(super) fn event(ev: e::KeyEvent) -> mvccpb::Event {
    mvccpb::Event {
        r#type: if ev.deleted { mvccpb::event::EventType::Delete } else { mvccpb::event::EventType::Put } as i32,
        kv: Some(kv(ev.kv)),
        prev_kv: ev.prev.map(kv),
    }
}

pub(super) fn range_request(r: rpc::RangeRequest) -> e::RangeRequest {
    use rpc::range_request::{SortOrder, SortTarget};
    e::RangeRequest {
        key: r.key,
        range_end: r.range_end,
        limit: r.limit,
        revision: r.revision,
        sort_order: match SortOrder::try_from(r.sort_order) {
            Ok(SortOrder::Ascend) => e::SortOrder::Ascend,
            Ok(SortOrder::Descend) => e::SortOrder::Descend,
            _ => e::SortOrder::None,
        },
        sort_target: match SortTarget::try_from(r.sort_target) {
            Ok(SortTarget::Version) => e::SortTarget::Version,
            Ok(SortTarget::Create) => e::SortTarget::Create,
            Ok(SortTarget::Mod) => e::SortTarget::Mod,
            Ok(SortTarget::Value) => e::SortTarget::Value,
            _ => e::SortTarget::Key,
        },
        keys_only: r.keys_only,
        count_only: r.count_only,
        min_mod_revision: r.min_mod_revision,
        max_mod_revision: r.max_mod_revision,
        min_create_revision: r.min_create_revision,
        max_create_revision: r.max_create_revision,
    }
}

/// Whether a sort order or target is one etcd knows (etcd refuses others).
pub(super) fn sort_known(r: &rpc::RangeRequest) -> bool {
    rpc::range_request::SortOrder::try_from(r.sort_order).is_ok() && rpc::range_request::SortTarget::try_from(r.sort_target).is_ok()
}

pub(super) fn range_response(r: e::RangeResponse, header: Option<rpc::ResponseHeader>) -> rpc::RangeResponse {
    rpc::RangeResponse { header, kvs: r.kvs.into_iter().map(kv).collect(), more: r.more, count: r.count }
}

pub(super) fn put_request(p: rpc::PutRequest) -> e::PutRequest {
    e::PutRequest {
        key: p.key,
        value: p.value,
        lease: p.lease,
        prev_kv: p.prev_kv,
        ignore_value: p.ignore_value,
        ignore_lease: p.ignore_lease,
    }
}

pub(super) fn put_response(p: e::PutResponse, header: Option<rpc::ResponseHeader>) -> rpc::PutResponse {
    rpc::PutResponse { header, prev_kv: p.prev_kv.map(kv) }
}

pub(super) fn delete_request(d: rpc::DeleteRangeRequest) -> e::DeleteRequest {
    e::DeleteRequest { key: d.key, range_end: d.range_end, prev_kv: d.prev_kv }
}

pub(super) fn delete_response(d: e::DeleteResponse, header: Option<rpc::ResponseHeader>) -> rpc::DeleteRangeResponse {
    rpc::DeleteRangeResponse { header, deleted: d.deleted, prev_kvs: d.prev_kvs.into_iter().map(kv).collect() }
}

fn compare(c: rpc::Compare) -> e::Compare {
    use rpc::compare::{CompareResult, CompareTarget, TargetUnion};
    let int = |u: &Option<TargetUnion>| match u {
        Some(TargetUnion::Version(x) | TargetUnion::CreateRevision(x) | TargetUnion::ModRevision(x) | TargetUnion::Lease(x)) => *x,
        _ => 0,
    };
    let target = match CompareTarget::try_from(c.target) {
        Ok(CompareTarget::Create) => e::CompareTarget::Create(int(&c.target_union)),
        Ok(CompareTarget::Mod) => e::CompareTarget::Mod(int(&c.target_union)),
        Ok(CompareTarget::Value) => e::CompareTarget::Value(match c.target_union {
            Some(TargetUnion::Value(v)) => v,
            _ => Vec::new(),
        }),
        Ok(CompareTarget::Lease) => e::CompareTarget::Lease(int(&c.target_union)),
        _ => e::CompareTarget::Version(int(&c.target_union)),
    };
    let result = match CompareResult::try_from(c.result) {
        Ok(CompareResult::Greater) => e::CompareResult::Greater,
        Ok(CompareResult::Less) => e::CompareResult::Less,
        Ok(CompareResult::NotEqual) => e::CompareResult::NotEqual,
        _ => e::CompareResult::Equal,
    };
    e::Compare { result, target, key: c.key, range_end: c.range_end }
}

fn request_op(op: rpc::RequestOp) -> Option<e::RequestOp> {
    use rpc::request_op::Request;
    Some(match op.request? {
        Request::RequestRange(r) => e::RequestOp::Range(range_request(r)),
        Request::RequestPut(p) => e::RequestOp::Put(put_request(p)),
        Request::RequestDeleteRange(d) => e::RequestOp::Delete(delete_request(d)),
        Request::RequestTxn(t) => e::RequestOp::Txn(txn_request(t)),
    })
}

pub(super) fn txn_request(t: rpc::TxnRequest) -> e::TxnRequest {
    e::TxnRequest {
        compare: t.compare.into_iter().map(compare).collect(),
        success: t.success.into_iter().filter_map(request_op).collect(),
        failure: t.failure.into_iter().filter_map(request_op).collect(),
    }
}

pub(super) fn txn_response(t: e::TxnResponse, header: Option<rpc::ResponseHeader>) -> rpc::TxnResponse {
    use rpc::response_op::Response;
    // etcd's answers inside a transaction carry the revision alone in their header.
    let revision = header.as_ref().map_or(0, |h| h.revision);
    let inner = Some(rpc::ResponseHeader { revision, ..rpc::ResponseHeader::default() });
    let responses = t
        .responses
        .into_iter()
        .map(|r| rpc::ResponseOp {
            response: Some(match r {
                e::ResponseOp::Range(r) => Response::ResponseRange(range_response(r, inner)),
                e::ResponseOp::Put(p) => Response::ResponsePut(put_response(p, inner)),
                e::ResponseOp::Delete(d) => Response::ResponseDeleteRange(delete_response(d, inner)),
                e::ResponseOp::Txn(t) => Response::ResponseTxn(txn_response(t, inner)),
            }),
        })
        .collect();
    rpc::TxnResponse { header, succeeded: t.succeeded, responses }
}
