//! etcd's v3 key-value API on the store: etcd keys kept beside objects, under the store's one
//! revision counter and change log (layout in `engine/STORAGE.md`, "etcd keys").
//!
//! - [`Store::etcd_range`] reads keys at a revision (etcd's `Range`);
//! - [`Store::etcd_txn`] (and [`Store::etcd_put`], [`Store::etcd_delete`]) run on the committer
//!   thread, ordered with every other write: compares, then one branch, at one revision;
//! - [`Store::etcd_watch`] replays the change log from a revision, then follows new ones;
//! - leases ([`Store::etcd_lease_grant`], …) are held in memory, granted durably, and revoked
//!   (or expired, [`Store::etcd_expire_leases`]) by the committer with their keys.
//!
//! Only on the RocksDB backend: a store on etcd answers [`EtcdApiError::Unsupported`].

mod layout;
mod lease;
mod objects;
mod read;
mod registry_value;
mod txn;
mod watch;

pub use super::etcd_state::{KeyEvent, KeyValue};
pub use crate::error::EtcdApiError;
pub use lease::LeaseInfo;
pub use objects::REGISTRY;
pub use registry_value::{kind_name, object_of_value, Undecoded};
pub use watch::{EtcdWatch, WatchRequest};

pub(crate) use lease::load as load_leases;
pub(crate) use read::sweep;
pub(super) use txn::commit_jobs;
pub(crate) use txn::Job;

use super::Store;
use crate::{Error, Result};
use std::sync::atomic::Ordering;

/// etcd's `--max-txn-ops` default: the most operations in one branch of a transaction.
pub const MAX_TXN_OPS: usize = 128;

/// How a range sorts (`RangeRequest.SortOrder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortOrder {
    /// Key order, unless a target other than the key is given (then ascending).
    #[default]
    None,
    /// Lowest first.
    Ascend,
    /// Highest first.
    Descend,
}

/// What a range sorts by (`RangeRequest.SortTarget`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortTarget {
    /// The key.
    #[default]
    Key,
    /// The version.
    Version,
    /// The create revision.
    Create,
    /// The mod revision.
    Mod,
    /// The value.
    Value,
}

/// etcd's `RangeRequest`: the keys in `[key, range_end)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeRequest {
    /// The first key.
    pub key: Vec<u8>,
    /// Empty: `key` alone; `"\0"`: every key from `key` on; otherwise the end (excluded).
    pub range_end: Vec<u8>,
    /// The most keys returned (0: no limit).
    pub limit: i64,
    /// Read at this revision (0 or less: the current one).
    pub revision: i64,
    /// Sort order.
    pub sort_order: SortOrder,
    /// Sort target.
    pub sort_target: SortTarget,
    /// Keys without values.
    pub keys_only: bool,
    /// Only the count.
    pub count_only: bool,
    /// Only keys changed at or after this revision (0: no bound).
    pub min_mod_revision: i64,
    /// Only keys changed at or before this revision (0: no bound).
    pub max_mod_revision: i64,
    /// Only keys created at or after this revision (0: no bound).
    pub min_create_revision: i64,
    /// Only keys created at or before this revision (0: no bound).
    pub max_create_revision: i64,
}

/// etcd's `RangeResponse` (without its header).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeResponse {
    /// The keys (none with `count_only`).
    pub kvs: Vec<KeyValue>,
    /// Whether the limit left keys out.
    pub more: bool,
    /// How many keys the range holds.
    pub count: i64,
}

/// etcd's `PutRequest`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PutRequest {
    /// The key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// The lease to attach the key to (0: none).
    pub lease: i64,
    /// Return the previous version.
    pub prev_kv: bool,
    /// Keep the current value (the key must exist).
    pub ignore_value: bool,
    /// Keep the current lease (the key must exist).
    pub ignore_lease: bool,
}

/// etcd's `PutResponse` (without its header).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PutResponse {
    /// The previous version, when asked for and present.
    pub prev_kv: Option<KeyValue>,
}

/// etcd's `DeleteRangeRequest`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteRequest {
    /// The first key.
    pub key: Vec<u8>,
    /// As [`RangeRequest::range_end`].
    pub range_end: Vec<u8>,
    /// Return the deleted versions.
    pub prev_kv: bool,
}

/// etcd's `DeleteRangeResponse` (without its header).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteResponse {
    /// How many keys were deleted.
    pub deleted: i64,
    /// The deleted versions, when asked for.
    pub prev_kvs: Vec<KeyValue>,
}

/// One operation of a transaction branch (`RequestOp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestOp {
    /// A read.
    Range(RangeRequest),
    /// A put.
    Put(PutRequest),
    /// A delete.
    Delete(DeleteRequest),
    /// A nested transaction.
    Txn(TxnRequest),
}

/// The answer to one operation (`ResponseOp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponseOp {
    /// A read's.
    Range(RangeResponse),
    /// A put's.
    Put(PutResponse),
    /// A delete's.
    Delete(DeleteResponse),
    /// A nested transaction's.
    Txn(TxnResponse),
}

/// How a compare compares (`Compare.CompareResult`): the key's field against the given value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareResult {
    /// Equal.
    Equal,
    /// Greater.
    Greater,
    /// Less.
    Less,
    /// Not equal.
    NotEqual,
}

/// What a compare reads of the key, and the value it compares with (`Compare.target_union`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompareTarget {
    /// The version (0 for an absent key).
    Version(i64),
    /// The create revision (0 for an absent key).
    Create(i64),
    /// The mod revision (0 for an absent key).
    Mod(i64),
    /// The value (an absent key fails every value compare).
    Value(Vec<u8>),
    /// The lease (0 for an absent key).
    Lease(i64),
}

/// etcd's `Compare`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compare {
    /// How.
    pub result: CompareResult,
    /// What.
    pub target: CompareTarget,
    /// The key.
    pub key: Vec<u8>,
    /// A range of keys, each compared (as [`RangeRequest::range_end`]).
    pub range_end: Vec<u8>,
}

/// etcd's `TxnRequest`: when every compare holds, `success` runs, otherwise `failure`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnRequest {
    /// The conditions.
    pub compare: Vec<Compare>,
    /// The operations run when every condition holds.
    pub success: Vec<RequestOp>,
    /// The operations run otherwise.
    pub failure: Vec<RequestOp>,
}

/// etcd's `TxnResponse` (without its header).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnResponse {
    /// Whether the compares held.
    pub succeeded: bool,
    /// The answers of the branch's operations, in order.
    pub responses: Vec<ResponseOp>,
}

/// A reply and the revision of its header (the store's revision after the request).
pub type Answered<T> = (T, u64);

impl Store {
    /// Fails unless the store can serve the etcd API (RocksDB backend).
    fn etcd_supported(&self) -> Result<()> {
        if self.core().kv.shared() {
            return Err(Error::EtcdApi(EtcdApiError::Unsupported));
        }
        Ok(())
    }

    /// Reads the keys of a range at a revision (etcd's `Range`).
    ///
    /// # Errors
    /// [`EtcdApiError::EmptyKey`]; [`EtcdApiError::Compacted`] and
    /// [`EtcdApiError::FutureRevision`] for a revision the store does not hold.
    pub fn etcd_range(&self, req: &RangeRequest) -> Result<Answered<RangeResponse>> {
        self.etcd_supported()?;
        if req.key.is_empty() {
            return Err(Error::EtcdApi(EtcdApiError::EmptyKey));
        }
        let core = self.core();
        let current = core.visible.load(Ordering::SeqCst);
        let at = u64::try_from(req.revision).unwrap_or(0);
        let at = if at == 0 { current } else { at };
        if at > current {
            return Err(Error::EtcdApi(EtcdApiError::FutureRevision));
        }
        if at < core.compacted.load(Ordering::SeqCst) {
            return Err(Error::EtcdApi(EtcdApiError::Compacted));
        }
        let resp = read::range(core, req, at, &read::Overlay::default())?;
        Ok((resp, current))
    }

    /// Runs a transaction on the committer thread: compares, then one branch, at one revision
    /// when it writes.
    ///
    /// # Errors
    /// [`EtcdApiError`]s for requests etcd refuses (empty keys, too many operations, a key put
    /// twice, an unknown lease, `ignore_value` on an absent key, …), storage errors.
    pub async fn etcd_txn_async(&self, req: TxnRequest) -> Result<Answered<TxnResponse>> {
        txn::check(&req, MAX_TXN_OPS)?;
        match self.etcd_job(txn::Request::Txn(req)).await? {
            (txn::Answer::Txn(t), rev) => Ok((t, rev)),
            _ => Err(Error::Corrupt("unexpected answer to a transaction".into())),
        }
    }

    /// [`Store::etcd_txn_async`], waiting on this thread.
    ///
    /// # Errors
    /// As [`Store::etcd_txn_async`].
    pub fn etcd_txn(&self, req: TxnRequest) -> Result<Answered<TxnResponse>> {
        super::wait::block_on(self.etcd_txn_async(req))
    }

    /// A put (a transaction of one operation).
    ///
    /// # Errors
    /// As [`Store::etcd_txn_async`].
    pub async fn etcd_put_async(&self, req: PutRequest) -> Result<Answered<PutResponse>> {
        let (mut t, rev) = self.etcd_txn_async(TxnRequest { success: vec![RequestOp::Put(req)], ..TxnRequest::default() }).await?;
        match t.responses.pop() {
            Some(ResponseOp::Put(p)) => Ok((p, rev)),
            _ => Err(Error::Corrupt("unexpected answer to a put".into())),
        }
    }

    /// [`Store::etcd_put_async`], waiting on this thread.
    ///
    /// # Errors
    /// As [`Store::etcd_txn_async`].
    pub fn etcd_put(&self, req: PutRequest) -> Result<Answered<PutResponse>> {
        super::wait::block_on(self.etcd_put_async(req))
    }

    /// A delete of a range (a transaction of one operation).
    ///
    /// # Errors
    /// As [`Store::etcd_txn_async`].
    pub async fn etcd_delete_async(&self, req: DeleteRequest) -> Result<Answered<DeleteResponse>> {
        let (mut t, rev) = self.etcd_txn_async(TxnRequest { success: vec![RequestOp::Delete(req)], ..TxnRequest::default() }).await?;
        match t.responses.pop() {
            Some(ResponseOp::Delete(d)) => Ok((d, rev)),
            _ => Err(Error::Corrupt("unexpected answer to a delete".into())),
        }
    }

    /// [`Store::etcd_delete_async`], waiting on this thread.
    ///
    /// # Errors
    /// As [`Store::etcd_txn_async`].
    pub fn etcd_delete(&self, req: DeleteRequest) -> Result<Answered<DeleteResponse>> {
        super::wait::block_on(self.etcd_delete_async(req))
    }

    /// Compacts the store (objects and etcd keys) to `revision` (etcd's `Compact`): reads before
    /// it fail with [`EtcdApiError::Compacted`]. Returns the current revision.
    ///
    /// # Errors
    /// [`EtcdApiError::Compacted`] when the store is compacted at or after `revision`,
    /// [`EtcdApiError::FutureRevision`] when `revision` is after the current one.
    pub fn etcd_compact(&self, revision: i64) -> Result<u64> {
        self.etcd_supported()?;
        let core = self.core();
        let rev = u64::try_from(revision).unwrap_or(0);
        if rev <= core.compacted.load(Ordering::SeqCst) {
            return Err(Error::EtcdApi(EtcdApiError::Compacted));
        }
        if rev > core.visible.load(Ordering::SeqCst) {
            return Err(Error::EtcdApi(EtcdApiError::FutureRevision));
        }
        self.compact(super::Revision(rev))?;
        Ok(core.visible.load(Ordering::SeqCst))
    }

    /// Gives a new store its first revision, 1, as a new etcd cluster starts at revision 1:
    /// etcd's clients take revision 0 for "none" (kube-apiserver refuses a list at revision 0).
    /// The revision names no key; a store with a revision is left as it is. Returns the current
    /// revision.
    ///
    /// # Errors
    /// Storage errors.
    pub async fn etcd_start_async(&self) -> Result<u64> {
        if self.core().visible.load(Ordering::SeqCst) > 0 {
            return Ok(self.core().visible.load(Ordering::SeqCst));
        }
        self.etcd_job(txn::Request::Start).await.map(|(_, rev)| rev)
    }

    /// [`Store::etcd_start_async`], waiting on this thread.
    ///
    /// # Errors
    /// As [`Store::etcd_start_async`].
    pub fn etcd_start(&self) -> Result<u64> {
        super::wait::block_on(self.etcd_start_async())
    }

    /// Hands a job to the committer and waits for its answer.
    async fn etcd_job(&self, request: txn::Request) -> Result<(txn::Answer, u64)> {
        self.etcd_supported()?;
        let (reply, answer) = flume::bounded(1);
        let tx = self.inner.commits.lock().clone().ok_or(Error::Closed)?;
        tx.send(super::Job::Etcd(Job { request, reply })).map_err(|_| Error::Closed)?;
        answer.recv_async().await.map_err(|_| Error::Closed)?
    }
}
